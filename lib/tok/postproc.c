/*
 * postproc.c — templates, truncation, padding. See postproc.h.
 */
#include "tok/postproc.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

static void free_pieces(nlp_tmpl_piece *p, size_t n)
{
    for (size_t i = 0; i < n; i++) free(p[i].name);
    free(p);
}

static void free_specials(nlp_tmpl_special *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].name);
        free(s[i].ids);
        for (size_t k = 0; k < s[i].n; k++) free(s[i].tokens[k]);
        free(s[i].tokens);
    }
    free(s);
}

static void free_template(nlp_postproc *p)
{
    free_pieces(p->single, p->n_single);
    free_pieces(p->pair, p->n_pair);
    free_specials(p->specials, p->n_specials);
    free(p->cls);
    free(p->sep);
    p->single = p->pair = NULL;
    p->specials = NULL;
    p->cls = p->sep = NULL;
    p->n_single = p->n_pair = p->n_specials = 0;
}

void nlp_postproc_free(nlp_postproc *p)
{
    free_template(p);
    memset(p, 0, sizeof *p);
}

static char *dupn(const char *s) { return s ? nlp_strdup(s) : NULL; }

static int copy_pieces(nlp_tmpl_piece **dst, const nlp_tmpl_piece *src, size_t n)
{
    *dst = NULL;
    if (!n) return NLP_OK;
    nlp_tmpl_piece *d = nlp_calloc(n, sizeof *d);
    if (!d) return NLP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        d[i] = src[i];
        d[i].name = dupn(src[i].name);
        if (src[i].name && !d[i].name) {
            free_pieces(d, i);
            return NLP_ENOMEM;
        }
    }
    *dst = d;
    return NLP_OK;
}

int nlp_postproc_copy(nlp_postproc *dst, const nlp_postproc *src)
{
    *dst = *src;
    dst->single = dst->pair = NULL;
    dst->specials = NULL;
    dst->n_specials = 0;
    dst->cls = dupn(src->cls);
    dst->sep = dupn(src->sep);
    if ((src->cls && !dst->cls) || (src->sep && !dst->sep)) goto oom;
    if (copy_pieces(&dst->single, src->single, src->n_single)) goto oom;
    if (copy_pieces(&dst->pair, src->pair, src->n_pair)) goto oom;
    if (src->n_specials) {
        dst->specials = nlp_calloc(src->n_specials, sizeof *dst->specials);
        if (!dst->specials) goto oom;
        for (size_t i = 0; i < src->n_specials; i++) {
            const nlp_tmpl_special *s = &src->specials[i];
            nlp_tmpl_special *d = &dst->specials[i];
            dst->n_specials = i + 1;
            d->name = dupn(s->name);
            d->ids = nlp_calloc(s->n ? s->n : 1, sizeof *d->ids);
            d->tokens = nlp_calloc(s->n ? s->n : 1, sizeof *d->tokens);
            if (!d->name || !d->ids || !d->tokens) goto oom;
            d->n = s->n;
            for (size_t k = 0; k < s->n; k++) {
                d->ids[k] = s->ids[k];
                if (!(d->tokens[k] = dupn(s->tokens[k]))) goto oom;
            }
        }
    }
    return NLP_OK;
oom:
    nlp_postproc_free(dst);
    return NLP_ENOMEM;
}

static int add_special(nlp_postproc *p, const char *name, int32_t id)
{
    for (size_t i = 0; i < p->n_specials; i++)
        if (strcmp(p->specials[i].name, name) == 0) return NLP_OK;
    nlp_tmpl_special *s = nlp_reallocarray(p->specials, p->n_specials + 1, sizeof *s);
    if (!s) return NLP_ENOMEM;
    p->specials = s;
    nlp_tmpl_special *d = &s[p->n_specials];
    memset(d, 0, sizeof *d);
    d->name = nlp_strdup(name);
    d->ids = nlp_malloc(sizeof *d->ids);
    d->tokens = nlp_calloc(1, sizeof *d->tokens);
    if (d->tokens) d->tokens[0] = nlp_strdup(name);
    p->n_specials++;
    if (!d->name || !d->ids || !d->tokens || !d->tokens[0]) return NLP_ENOMEM;
    d->ids[0] = id;
    d->n = 1;
    return NLP_OK;
}

static int set_pieces(nlp_tmpl_piece **dst, size_t *n, const char *const *names, const int *seq, const int *type,
                      size_t k)
{
    nlp_tmpl_piece *p = nlp_calloc(k, sizeof *p);
    if (!p) return NLP_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        p[i].special = names[i] != NULL;
        p[i].seq = seq[i];
        p[i].type_id = type[i];
        if (names[i] && !(p[i].name = nlp_strdup(names[i]))) {
            free_pieces(p, i);
            return NLP_ENOMEM;
        }
    }
    *dst = p;
    *n = k;
    return NLP_OK;
}

int nlp_postproc_set_cls_sep(nlp_postproc *p, int roberta, const char *cls, int32_t cls_id, const char *sep,
                             int32_t sep_id)
{
    free_template(p);
    p->type = roberta ? NLP_POST_ROBERTA : NLP_POST_BERT;
    p->cls = nlp_strdup(cls);
    p->sep = nlp_strdup(sep);
    p->cls_id = cls_id;
    p->sep_id = sep_id;
    if (!p->cls || !p->sep || add_special(p, cls, cls_id) || add_special(p, sep, sep_id)) return NLP_ENOMEM;
    const char *s1[] = {cls, NULL, sep};
    int q1[] = {0, 0, 0}, t1[] = {0, 0, 0};
    if (set_pieces(&p->single, &p->n_single, s1, q1, t1, 3)) return NLP_ENOMEM;
    if (roberta) {
        const char *s2[] = {cls, NULL, sep, sep, NULL, sep};
        int q2[] = {0, 0, 0, 0, 1, 0}, t2[] = {0, 0, 0, 0, 0, 0};
        return set_pieces(&p->pair, &p->n_pair, s2, q2, t2, 6);
    }
    const char *s2[] = {cls, NULL, sep, NULL, sep};
    int q2[] = {0, 0, 0, 1, 0}, t2[] = {0, 0, 0, 1, 1};
    return set_pieces(&p->pair, &p->n_pair, s2, q2, t2, 5);
}

static const nlp_tmpl_special *find_special(const nlp_postproc *p, const char *name)
{
    for (size_t i = 0; i < p->n_specials; i++)
        if (strcmp(p->specials[i].name, name) == 0) return &p->specials[i];
    return NULL;
}

int nlp_postproc_check(const nlp_postproc *p)
{
    for (int w = 0; w < 2; w++) {
        const nlp_tmpl_piece *t = w ? p->pair : p->single;
        size_t n = w ? p->n_pair : p->n_single;
        for (size_t i = 0; i < n; i++)
            if (t[i].special && !find_special(p, t[i].name))
                return nlp_error(NLP_EFORMAT, "template names the special token '%s' but does not define it",
                                 t[i].name);
    }
    return NLP_OK;
}

size_t nlp_postproc_added(const nlp_postproc *p, int pair)
{
    if (p->type == NLP_POST_NONE) return 0;
    const nlp_tmpl_piece *t = pair ? p->pair : p->single;
    size_t n = pair ? p->n_pair : p->n_single, k = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i].special) {
            const nlp_tmpl_special *s = find_special(p, t[i].name);
            k += s ? s->n : 0;
        }
    return k;
}

static int append_seq(nlp_encoding *out, const nlp_encoding *e, int type_id)
{
    size_t at = out->n;
    if (!e->n) return NLP_OK;
    if (nlp_encoding_concat(out, e)) return NLP_ENOMEM;
    memset(out->type_ids + at, type_id, e->n);
    return NLP_OK;
}

int nlp_postproc_apply(const nlp_postproc *p, const nlp_encoding *a, const nlp_encoding *b, int add_special,
                       nlp_encoding *out)
{
    nlp_encoding_reset(out);
    if (p->type == NLP_POST_NONE) {
        if (append_seq(out, a, 0)) return NLP_ENOMEM;
        return b ? append_seq(out, b, 1) : NLP_OK;
    }
    const nlp_tmpl_piece *t = b ? p->pair : p->single;
    size_t n = b ? p->n_pair : p->n_single;
    for (size_t i = 0; i < n; i++) {
        if (!t[i].special) {
            const nlp_encoding *e = t[i].seq ? b : a;
            if (e && append_seq(out, e, t[i].type_id)) return NLP_ENOMEM;
            continue;
        }
        if (!add_special) continue;
        const nlp_tmpl_special *s = find_special(p, t[i].name);
        if (s && nlp_encoding_append(out, s->ids, s->n, t[i].type_id, 1)) return NLP_ENOMEM;
    }
    return NLP_OK;
}

int nlp_truncate(const nlp_truncation *t, size_t added, nlp_encoding *a, nlp_encoding *b)
{
    if (!t->enabled) return NLP_OK;
    if (t->max_length < added)
        return nlp_error(NLP_EINVAL, "the maximum length %zu is smaller than the %zu special tokens the template adds",
                         t->max_length, added);
    size_t max = t->max_length - added;
    if (max == 0) {
        /* HF: nothing fits beside the template, so both sequences are
         * emptied, whatever the strategy */
        nlp_encoding_truncate(a, 0, t->left);
        if (b) nlp_encoding_truncate(b, 0, t->left);
        return NLP_OK;
    }
    size_t n1 = a->n, n2 = b ? b->n : 0;
    if (n1 + n2 <= max) return NLP_OK;
    size_t remove = n1 + n2 - max;
    switch (t->strategy) {
    case NLP_TRUNC_LONGEST_FIRST:
        if (!b) {
            nlp_encoding_truncate(a, max, t->left);
            return NLP_OK;
        } else {
            /* HF: with s the shorter, l the longer: s keeps its length if it
             * fits, l gets the rest; if that is not enough both get half */
            int swap = n1 > n2;
            size_t s = swap ? n2 : n1, l;
            l = s > max ? s : (max - s > s ? max - s : s);
            if (s + l > max) {
                s = max / 2;
                l = s + max % 2;
            }
            nlp_encoding_truncate(a, swap ? l : s, t->left);
            nlp_encoding_truncate(b, swap ? s : l, t->left);
            return NLP_OK;
        }
    case NLP_TRUNC_ONLY_FIRST:
    case NLP_TRUNC_ONLY_SECOND: {
        nlp_encoding *e = t->strategy == NLP_TRUNC_ONLY_FIRST ? a : b;
        if (!e) return nlp_error(NLP_EINVAL, "truncation only-second needs a pair of sequences");
        if (e->n <= remove)
            return nlp_error(NLP_EINVAL, "cannot truncate to %zu tokens: the %s sequence has only %zu", t->max_length,
                             e == a ? "first" : "second", e->n);
        nlp_encoding_truncate(e, e->n - remove, t->left);
        return NLP_OK;
    }
    }
    return NLP_OK;
}

size_t nlp_padding_target(const nlp_padding *p, size_t batch_longest)
{
    size_t n = p->length ? p->length : batch_longest;
    if (p->multiple_of && n % p->multiple_of) n += p->multiple_of - n % p->multiple_of;
    return n;
}
