/*
 * icl.c — in-context learning: data, templates, shots, choosing. See icl.h.
 */
#include "decode/icl.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "text/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *nlp_icl_shape_name(int shape)
{
    return shape == NLP_ICL_CLASSIFY ? "classify" : shape == NLP_ICL_PAIR ? "pair" : shape == NLP_ICL_CHOICE ? "choice" : "unknown";
}

// --- labels

static int32_t label_find(const nlp_icl_labels *l, const char *s, size_t n)
{
    for (int i = 0; i < l->n; i++)
        if (strlen(l->name[i]) == n && memcmp(l->name[i], s, n) == 0) return i;
    return -1;
}

static int label_add(nlp_icl_labels *l, const char *s, size_t n, int32_t *index)
{
    char **nm = nlp_realloc(l->name, (size_t)(l->n + 1) * sizeof *nm);
    if (!nm) return NLP_ENOMEM;
    l->name = nm;
    char **w = nlp_realloc(l->word, (size_t)(l->n + 1) * sizeof *w);
    if (!w) return NLP_ENOMEM;
    l->word = w;
    char *c = nlp_malloc(n + 1);
    if (!c) return NLP_ENOMEM;
    memcpy(c, s, n);
    c[n] = 0;
    l->name[l->n] = l->word[l->n] = c;
    *index = l->n++;
    return 0;
}

void nlp_icl_labels_free(nlp_icl_labels *l)
{
    for (int i = 0; i < l->n; i++) {
        if (l->word[i] != l->name[i]) free(l->word[i]);
        free(l->name[i]);
    }
    free(l->name), free(l->word);
    memset(l, 0, sizeof *l);
}

int nlp_icl_labels_words(nlp_icl_labels *l, const char *list)
{
    const char *p = list;
    char *named = nlp_calloc((size_t)(l->n ? l->n : 1), 1);
    if (!named) return NLP_ENOMEM;
    int rc = 0;
    while (*p && !rc) {
        const char *e = strchr(p, ','), *end = e ? e : p + strlen(p), *eq = memchr(p, '=', (size_t)(end - p));
        const int en = (int)(end - p);
        if (!eq) rc = nlp_error(NLP_EINVAL, "'%.*s': not LABEL=WORD", en, p);
        else if (eq + 1 == end) rc = nlp_error(NLP_EINVAL, "'%.*s': an empty word", en, p);
        else {
            const int32_t i = label_find(l, p, (size_t)(eq - p));
            if (i < 0) rc = nlp_error(NLP_EINVAL, "'%.*s': no label '%.*s' in the data", en, p, (int)(eq - p), p);
            else if (named[i]) rc = nlp_error(NLP_EINVAL, "'%.*s': label '%s' is given a word twice", en, p, l->name[i]);
            else {
                char *w = nlp_malloc((size_t)(end - eq));
                if (!w) rc = NLP_ENOMEM;
                else {
                    memcpy(w, eq + 1, (size_t)(end - eq - 1));
                    w[end - eq - 1] = 0;
                    if (l->word[i] != l->name[i]) free(l->word[i]);
                    l->word[i] = w;
                    named[i] = 1;
                }
            }
        }
        p = e ? e + 1 : end;
    }
    free(named);
    for (int i = 0; i < l->n && !rc; i++)
        for (int j = 0; j < i && !rc; j++)
            if (strcmp(l->word[i], l->word[j]) == 0)
                rc = nlp_error(NLP_EINVAL, "labels '%s' and '%s' have the same word '%s': the choice between them "
                               "would be void", l->name[j], l->name[i], l->word[i]);
    return rc;
}

// --- data

void nlp_icl_data_free(nlp_icl_data *d)
{
    free(d->path), free(d->buf), free(d->field), free(d->flen), free(d->line), free(d->label);
    memset(d, 0, sizeof *d);
}

static int shape_of(int fields) { return fields == 2 ? NLP_ICL_CLASSIFY : fields == 3 ? NLP_ICL_PAIR : NLP_ICL_CHOICE; }

/* "the label", "the text", "choice 2" ... for messages about field j. */
static const char *field_name(int shape, int j, char *buf, size_t cap)
{
    if (j == 0) return "the label";
    if (shape == NLP_ICL_CLASSIFY) return "the text";
    if (shape == NLP_ICL_PAIR) return j == 1 ? "text a" : "text b";
    if (j == 1) return "the context";
    snprintf(buf, cap, "choice %d", j - 2);
    return buf;
}

int nlp_icl_read(nlp_icl_data *d, const char *path, const nlp_icl_data *like, nlp_icl_labels *labels,
                 size_t max_line)
{
    memset(d, 0, sizeof *d);
    const char *name = strcmp(path, "-") ? path : "standard input";
    if (!(d->path = nlp_malloc(strlen(name) + 1))) return NLP_ENOMEM;
    strcpy(d->path, name);
    size_t len;
    int rc = nlp_read_file_lines(path, max_line, &d->buf, &len);
    if (rc) {
        d->buf = NULL;
        return rc;
    }
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += d->buf[i] == '\n';
    if (!(d->line = nlp_malloc(lines * sizeof *d->line)) || !(d->label = nlp_malloc(lines * sizeof *d->label)))
        return NLP_ENOMEM;
    const int add = !like; /* the shots' file (or the only one) makes the label set */
    uint64_t first = 0;    /* the line that set the fields */
    size_t cap = 0;
    char *p = d->buf, *end = d->buf + len;
    char nb[32];
    for (uint64_t ln = 1; p < end; ln++) {
        char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
        char *next = nl ? nl + 1 : end;
        if (e > p && e[-1] == '\r') e--;
        if (e == p) {
            p = next;
            continue;
        }
        int f = 1;
        for (char *q = p; q < e; q++) f += *q == '\t';
        size_t bad;
        if (!nlp_utf8_valid(p, (size_t)(e - p), &bad))
            return nlp_error(NLP_EDATA, "'%s' line %llu: invalid UTF-8 at byte %zu", d->path, (unsigned long long)ln,
                             bad + 1);
        if (!d->nf) {
            if (f < 2)
                return nlp_error(NLP_EDATA, "'%s' line %llu: no tab: 'label<TAB>text', 'label<TAB>a<TAB>b' or "
                                 "'label<TAB>context<TAB>choice_0<TAB>...' lines are expected", d->path,
                                 (unsigned long long)ln);
            if (like && like->nf && f != like->nf)
                return nlp_error(NLP_EDATA, "'%s' line %llu has %d fields (%s data) where '%s' has %d (%s data): the "
                                 "shots and the items must be the same kind of data", d->path, (unsigned long long)ln,
                                 f, nlp_icl_shape_name(shape_of(f)), like->path, like->nf,
                                 nlp_icl_shape_name(like->shape));
            d->nf = f, d->shape = shape_of(f), first = ln;
        } else if (f != d->nf) {
            if (d->shape == NLP_ICL_CHOICE && f >= 4)
                return nlp_error(NLP_EDATA, "'%s' line %llu has %d choices where line %llu has %d", d->path,
                                 (unsigned long long)ln, f - 2, (unsigned long long)first, d->nf - 2);
            return nlp_error(NLP_EDATA, "'%s' line %llu has %d fields where line %llu has %d (%s data)", d->path,
                             (unsigned long long)ln, f, (unsigned long long)first, d->nf,
                             nlp_icl_shape_name(d->shape));
        }
        if ((d->n + 1) * (size_t)d->nf > cap) {
            size_t nc = cap ? 2 * cap : 64 * (size_t)d->nf;
            const char **fl = nlp_realloc(d->field, nc * sizeof *fl);
            if (!fl) return NLP_ENOMEM;
            d->field = fl;
            size_t *ll = nlp_realloc(d->flen, nc * sizeof *ll);
            if (!ll) return NLP_ENOMEM;
            d->flen = ll;
            cap = nc;
        }
        const char **fl = d->field + d->n * (size_t)d->nf;
        size_t *ll = d->flen + d->n * (size_t)d->nf;
        char *q = p;
        for (int j = 0; j < f; j++) {
            char *t = memchr(q, '\t', (size_t)(e - q));
            char *fe = t ? t : e;
            *fe = 0;
            fl[j] = q, ll[j] = (size_t)(fe - q);
            if (!ll[j])
                return nlp_error(NLP_EDATA, "'%s' line %llu: %s is empty", d->path, (unsigned long long)ln,
                                 field_name(d->shape, j, nb, sizeof nb));
            q = fe + 1;
        }
        int32_t lab;
        if (d->shape == NLP_ICL_CHOICE) {
            long v = -1;
            if (ll[0] <= 9 && strspn(fl[0], "0123456789") == ll[0]) v = strtol(fl[0], NULL, 10);
            if (v < 0 || v >= d->nf - 2)
                return nlp_error(NLP_EDATA, "'%s' line %llu: label '%.40s' is not the index of a choice (0 to %d, the "
                                 "first choice being 0)", d->path, (unsigned long long)ln, fl[0], d->nf - 3);
            lab = (int32_t)v;
        } else if ((lab = label_find(labels, fl[0], ll[0])) < 0) {
            if (!add)
                return nlp_error(NLP_EDATA, "'%s' line %llu: label '%.40s' is not among the %d labels of '%s'",
                                 d->path, (unsigned long long)ln, fl[0], labels->n, like->path);
            if ((rc = label_add(labels, fl[0], ll[0], &lab))) return rc;
        }
        d->label[d->n] = lab;
        d->line[d->n++] = ln;
        p = next;
    }
    return 0;
}

// --- templates

void nlp_icl_template_free(nlp_icl_template *t)
{
    free(t->text), free(t->part);
    memset(t, 0, sizeof *t);
}

const char *nlp_icl_template_default(int shape)
{
    switch (shape) {
    case NLP_ICL_PAIR: return "Summary: {a}\\nSentence: {b}\\nSame package: {answer}\\n\\n";
    case NLP_ICL_CHOICE: return "Summary: {context}\\nDescription: {answer}\\n\\n";
    default: return "Description: {context}\\nSection: {answer}\\n\\n";
    }
}

int nlp_icl_template_parse(nlp_icl_template *t, const char *s, int shape)
{
    memset(t, 0, sizeof *t);
    const char *known = shape == NLP_ICL_PAIR ? "{a}, {b} and {answer}" : "{context} and {answer}";
    nlp_buf text = {0};
    /* parts as offsets into text until it stops moving */
    size_t np = 0, *off = nlp_malloc((strlen(s) + 2) * 2 * sizeof *off);
    int *kind = nlp_malloc((strlen(s) + 2) * sizeof *kind);
    int rc = !off || !kind ? NLP_ENOMEM : 0, answers = 0, fields[3] = {0};
    size_t lit = 0; /* where the literal text being read began */
    for (const char *p = s; *p && !rc; p++) {
        if (*p == '\\') {
            const char c = p[1];
            if (c == 'n' || c == 't' || c == '\\') rc = nlp_buf_putc(&text, c == 'n' ? '\n' : c == 't' ? '\t' : '\\'), p++;
            else if (!c) rc = nlp_error(NLP_EINVAL, "a lone '\\' at its end (\\\\ is a backslash)");
            else rc = nlp_error(NLP_EINVAL, "'\\%c' is not an escape it knows (\\n, \\t, \\\\)", c);
        } else if (*p == '}') {
            if (p[1] == '}') rc = nlp_buf_putc(&text, '}'), p++;
            else rc = nlp_error(NLP_EINVAL, "a '}' without its '{' (}} is a brace)");
        } else if (*p == '{') {
            if (p[1] == '{') {
                rc = nlp_buf_putc(&text, '{'), p++;
                continue;
            }
            const char *e = strchr(p, '}');
            if (!e) {
                rc = nlp_error(NLP_EINVAL, "a '{' not closed ({{ is a brace)");
                break;
            }
            const size_t n = (size_t)(e - p - 1);
            int k = -2;
            if (n == 6 && !memcmp(p + 1, "answer", 6)) k = -1;
            else if (shape != NLP_ICL_PAIR && n == 7 && !memcmp(p + 1, "context", 7)) k = 1;
            else if (shape == NLP_ICL_PAIR && n == 1 && p[1] == 'a') k = 1;
            else if (shape == NLP_ICL_PAIR && n == 1 && p[1] == 'b') k = 2;
            if (k == -2) {
                rc = nlp_error(NLP_EINVAL, "{%.*s} is not a placeholder of %s data: %s are", (int)(n > 40 ? 40 : n), p + 1,
                               nlp_icl_shape_name(shape), known);
                break;
            }
            if (k > 0 && answers) {
                rc = nlp_error(NLP_EINVAL, "{%.*s} after {answer}: the item's fields come before its answer", (int)n,
                               p + 1);
                break;
            }
            if (text.len > lit) off[2 * np] = lit, off[2 * np + 1] = text.len - lit, kind[np++] = 0;
            off[2 * np] = off[2 * np + 1] = 0, kind[np++] = k;
            if (k < 0) answers++;
            else fields[k]++;
            lit = text.len;
            p = e;
        } else rc = nlp_buf_putc(&text, *p);
    }
    if (!rc && text.len > lit) off[2 * np] = lit, off[2 * np + 1] = text.len - lit, kind[np++] = 0;
    if (!rc && answers > 1) rc = nlp_error(NLP_EINVAL, "{answer} %d times: once is the candidates' place", answers);
    if (!rc && !answers)
        rc = nlp_error(NLP_EINVAL, "no {answer}: the candidates' place (%s data: %s)", nlp_icl_shape_name(shape), known);
    if (!rc && shape == NLP_ICL_PAIR && (!fields[1] || !fields[2]))
        rc = nlp_error(NLP_EINVAL, "no {%s}: pair data fills {a} and {b}", fields[1] ? "b" : "a");
    if (!rc && shape != NLP_ICL_PAIR && !fields[1])
        rc = nlp_error(NLP_EINVAL, "no {context}: the place of the %s", shape == NLP_ICL_CHOICE ? "context" : "text");
    if (!rc && !(t->part = nlp_calloc(np, sizeof *t->part))) rc = NLP_ENOMEM;
    if (!rc && nlp_buf_putc(&text, 0)) rc = NLP_ENOMEM;
    if (rc) {
        free(off), free(kind), nlp_buf_free(&text);
        free(t->part);
        t->part = NULL;
        return rc;
    }
    t->text = text.data;
    t->n = (int)np;
    for (size_t i = 0; i < np; i++) {
        t->part[i] = (nlp_icl_part){kind[i], t->text + off[2 * i], off[2 * i + 1]};
        if (kind[i] == -1) t->answer = (int)i;
    }
    /* spaces and tabs right before {answer} go with the candidates */
    if (t->answer > 0 && t->part[t->answer - 1].kind == 0) {
        const nlp_icl_part *q = &t->part[t->answer - 1];
        while (t->lead < q->n && (q->s[q->n - 1 - t->lead] == ' ' || q->s[q->n - 1 - t->lead] == '\t')) t->lead++;
    }
    free(off), free(kind);
    return 0;
}

// --- shots

int nlp_icl_draw(uint64_t seed, uint64_t item, size_t n, int K, int (*skip)(void *ctx, size_t j), void *ctx,
                 size_t *out)
{
    nlp_rng base;
    nlp_rng_seed(&base, seed);
    nlp_rng r = nlp_rng_split(&base, item);
    int got = 0, misses = 0;
    if (!n) return 0;
    /* uniform draws, rejecting repeats and skipped ones; after many misses in a row (few left:
     * a small TRAIN) one draw among those that remain, counted out */
    while (got < K && misses < 256) {
        const size_t j = (size_t)nlp_rng_below(&r, n);
        int seen = skip && skip(ctx, j);
        for (int i = 0; i < got && !seen; i++) seen = out[i] == j;
        if (seen) {
            misses++;
            continue;
        }
        out[got++] = j, misses = 0;
    }
    while (got < K) {
        size_t left = 0;
        for (size_t j = 0; j < n; j++) {
            int seen = skip && skip(ctx, j);
            for (int i = 0; i < got && !seen; i++) seen = out[i] == j;
            left += !seen;
        }
        if (!left) break;
        size_t pick = (size_t)nlp_rng_below(&r, left);
        for (size_t j = 0; j < n; j++) {
            int seen = skip && skip(ctx, j);
            for (int i = 0; i < got && !seen; i++) seen = out[i] == j;
            if (!seen && pick-- == 0) {
                out[got++] = j;
                break;
            }
        }
    }
    return got;
}

// --- evaluation

struct nlp_icl {
    nlp_model *m;
    const nlp_tokenizer *tk;
    nlp_tok_state *st;
    const nlp_icl_data *train, *eval;
    const nlp_icl_labels *labels;
    const nlp_icl_template *tpl;
    nlp_icl_opts o;
    nlp_scorer *sc;
    int k;
    nlp_ids *cand;       /* [k] the candidates' ids (classify, pair: made once) */
    double *logprob, *score, *uncond;
    size_t *tokens, *bytes;
    nlp_ids answer_ctx;  /* unconditional: the answer prompt alone */
    double *lp;          /* per-token log-probabilities of every candidate */
    size_t lp_cap;
    size_t *shot;        /* [shots] */
    int32_t *shot_len;   /* [train n] each shot's tokens alone, -1 until counted */
    nlp_buf text;
    nlp_ids prompt, tmp;
    size_t cur;          /* the item being scored (skip) */
};

void nlp_icl_free(nlp_icl *e)
{
    if (!e) return;
    for (int c = 0; c < e->k && e->cand; c++) nlp_ids_free(&e->cand[c]);
    free(e->cand), free(e->logprob), free(e->score), free(e->uncond), free(e->tokens), free(e->bytes), free(e->lp);
    nlp_ids_free(&e->answer_ctx);
    free(e->shot), free(e->shot_len);
    nlp_buf_free(&e->text);
    nlp_ids_free(&e->prompt), nlp_ids_free(&e->tmp);
    nlp_scorer_free(e->sc);
    nlp_tok_state_free(e->st);
    free(e);
}

/* Example i of d's field j (1 = the text, context or a; 2 = b). */
static const char *fld(const nlp_icl_data *d, size_t i, int j, size_t *n)
{
    *n = d->flen[i * (size_t)d->nf + (size_t)j];
    return d->field[i * (size_t)d->nf + (size_t)j];
}

/* The answer text of solved example i of d. */
static const char *answer_of(const nlp_icl *e, const nlp_icl_data *d, size_t i, size_t *n)
{
    if (d->shape == NLP_ICL_CHOICE) return fld(d, i, 2 + d->label[i], n);
    const char *w = e->labels->word[d->label[i]];
    *n = strlen(w);
    return w;
}

/* Appends example i of d formatted by the template: whole (a shot), or up
 * to {answer} without the candidates' leading spaces (the item); each field
 * at most cap bytes (SIZE_MAX: all), cut after a word (before a space) when
 * it can be. */
static int format(nlp_icl *e, nlp_buf *b, const nlp_icl_data *d, size_t i, int whole, size_t cap)
{
    const nlp_icl_template *t = e->tpl;
    for (int p = 0; p < t->n; p++) {
        const nlp_icl_part *q = &t->part[p];
        size_t n = q->n;
        const char *s = q->s;
        if (q->kind > 0) {
            s = fld(d, i, q->kind, &n);
            if (n > cap) { /* its first cap bytes: whole words where there is a space, else whole characters */
                size_t k = cap;
                while (k && s[k] != ' ' && s[k - 1] != ' ') k--;
                if (k) n = s[k] == ' ' ? k : k - 1;
                else
                    for (n = cap; n && ((unsigned char)s[n] & 0xC0) == 0x80; n--) {}
            }
        } else if (q->kind < 0) {
            if (!whole) break;
            s = answer_of(e, d, i, &n);
        } else if (!whole && p == t->answer - 1) n -= t->lead;
        if (nlp_buf_append(b, s, n)) return NLP_ENOMEM;
    }
    return 0;
}

/* Is TRAIN's example j the item being scored (the same fields but its answer)? */
static int same_item(void *ctx, size_t j)
{
    const nlp_icl *e = ctx;
    const int nq = e->eval->shape == NLP_ICL_PAIR ? 2 : 1;
    for (int f = 1; f <= nq; f++) {
        size_t a, b;
        const char *x = fld(e->train, j, f, &a), *y = fld(e->eval, e->cur, f, &b);
        if (a != b || memcmp(x, y, a)) return 0;
    }
    return 1;
}

/* Candidate c's text: the template's lead and the answer. */
static int cand_text(nlp_icl *e, size_t item, int c, nlp_buf *b)
{
    const nlp_icl_part *q = e->tpl->answer > 0 ? &e->tpl->part[e->tpl->answer - 1] : NULL;
    nlp_buf_reset(b);
    if (e->tpl->lead && nlp_buf_append(b, q->s + q->n - e->tpl->lead, e->tpl->lead)) return NLP_ENOMEM;
    size_t n;
    const char *s;
    if (e->eval->shape == NLP_ICL_CHOICE) s = fld(e->eval, item, 2 + c, &n);
    else s = e->labels->word[c], n = strlen(s);
    return nlp_buf_append(b, s, n) ? NLP_ENOMEM : 0;
}

static int encode_cands(nlp_icl *e, size_t item)
{
    for (int c = 0; c < e->k; c++) {
        int rc = cand_text(e, item, c, &e->text);
        if (!rc) rc = nlp_score_encode(e->tk, e->st, e->m, e->text.data, e->text.len, 0, &e->cand[c]);
        if (rc) return rc;
        e->bytes[c] = e->text.len;
        if (!e->cand[c].n) {
            if (e->eval->shape == NLP_ICL_CHOICE)
                return nlp_error(NLP_EDATA, "'%s' line %llu: choice %d encodes to no token", e->eval->path,
                                 (unsigned long long)e->eval->line[item], c);
            return nlp_error(NLP_EDATA, "label '%s': its word '%s' encodes to no token", e->labels->name[c],
                             e->labels->word[c]);
        }
    }
    return 0;
}

/* The per-token log-probabilities' room for the candidates, total tokens. */
static int lp_room(nlp_icl *e, size_t total)
{
    if (total <= e->lp_cap) return 0;
    double *lp = nlp_realloc(e->lp, total * sizeof *lp);
    if (!lp) return NLP_ENOMEM;
    e->lp = lp, e->lp_cap = total;
    return 0;
}

/* The answer prompt of unconditional normalization: the template's text
 * after the item's last field up to {answer}, without its leading white
 * space and the candidates' lead; or the start token. */
static int answer_prompt(nlp_icl *e)
{
    const nlp_icl_template *t = e->tpl;
    const char *s = "";
    size_t n = 0;
    if (t->answer > 0 && t->part[t->answer - 1].kind == 0)
        s = t->part[t->answer - 1].s, n = t->part[t->answer - 1].n - t->lead;
    while (n && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++, n--;
    int rc = nlp_score_encode(e->tk, e->st, e->m, s, n, 1, &e->answer_ctx);
    if (rc) return rc;
    if (!e->answer_ctx.n) {
        if (e->o.start < 0)
            return nlp_error(NLP_EINVAL, "unconditional normalization scores the candidates after the template's text "
                             "before {answer}: there is none, and no start token to take its place");
        if (nlp_ids_push(&e->answer_ctx, e->o.start)) return NLP_ENOMEM;
    }
    return 0;
}

/* Each candidate's log-likelihood after the answer prompt alone into e->uncond. */
static int score_uncond(nlp_icl *e, size_t item)
{
    size_t total = 0, longest = 0;
    for (int c = 0; c < e->k; c++) {
        total += e->cand[c].n;
        if (e->cand[c].n > longest) longest = e->cand[c].n;
    }
    int rc = lp_room(e, total);
    if (rc) return rc;
    const nlp_ids *a = &e->answer_ctx;
    size_t keep = a->n; /* a long answer prompt keeps its end, as a long item does */
    if (keep + longest > (size_t)e->o.max_len) keep = (size_t)e->o.max_len - longest;
    if ((rc = nlp_score_choices(e->sc, a->v + (a->n - keep), keep, e->cand, e->k, e->lp, NULL))) {
        if (rc == NLP_ENAN)
            return nlp_error(NLP_ENAN, "'%s' line %llu: the model's scores are not numbers (are its weights "
                             "corrupt?)", e->eval->path, (unsigned long long)e->eval->line[item]);
        return rc;
    }
    size_t o = 0;
    for (int c = 0; c < e->k; c++) {
        double s = 0;
        for (size_t j = 0; j < e->cand[c].n; j++) s += e->lp[o++];
        e->uncond[c] = s;
    }
    return 0;
}

int nlp_icl_new(nlp_icl **out, nlp_model *m, const nlp_tokenizer *tk, const nlp_icl_data *train,
                const nlp_icl_data *eval, const nlp_icl_labels *labels, const nlp_icl_template *tpl,
                const nlp_icl_opts *opts)
{
    *out = NULL;
    if (!eval->n) return nlp_error(NLP_EINVAL, "'%s' holds no examples: nothing to evaluate", eval->path);
    if (opts->shots < 0) return nlp_error(NLP_EINVAL, "%d shots", opts->shots);
    if (opts->shots > 0 && !train) return nlp_error(NLP_EINVAL, "%d shots and no file to draw them from", opts->shots);
    if (opts->shots > 0 && !train->n)
        return nlp_error(NLP_EINVAL, "'%s' holds no examples: no shots to draw", train->path);
    if (train && train->n && (train->shape != eval->shape || train->nf != eval->nf))
        return nlp_error(NLP_EINVAL, "'%s' and '%s' are not the same kind of data", train->path, eval->path);
    if (eval->shape != NLP_ICL_CHOICE && labels->n < 1) return nlp_error(NLP_EINVAL, "no labels");
    if (opts->max_len < 2) return nlp_error(NLP_EINVAL, "a context of %d positions", opts->max_len);
    nlp_icl *e = nlp_calloc(1, sizeof *e);
    if (!e) return NLP_ENOMEM;
    e->m = m, e->tk = tk, e->train = train, e->eval = eval, e->labels = labels, e->tpl = tpl, e->o = *opts;
    e->k = eval->shape == NLP_ICL_CHOICE ? eval->nf - 2 : labels->n;
    const int k = e->k, rows = opts->max_rows > 0 ? opts->max_rows : 16;
    int rc = (e->st = nlp_tok_state_new(tk)) ? 0 : NLP_ENOMEM;
    if (!rc && (!(e->cand = nlp_calloc((size_t)k, sizeof *e->cand)) ||
                !(e->logprob = nlp_malloc((size_t)k * sizeof *e->logprob)) ||
                !(e->score = nlp_malloc((size_t)k * sizeof *e->score)) ||
                !(e->uncond = nlp_malloc((size_t)k * sizeof *e->uncond)) ||
                !(e->tokens = nlp_malloc((size_t)k * sizeof *e->tokens)) ||
                !(e->bytes = nlp_malloc((size_t)k * sizeof *e->bytes)) ||
                !(e->shot = nlp_malloc((size_t)(opts->shots ? opts->shots : 1) * sizeof *e->shot))))
        rc = NLP_ENOMEM;
    if (!rc && train && train->n) {
        if (!(e->shot_len = nlp_malloc(train->n * sizeof *e->shot_len))) rc = NLP_ENOMEM;
        else memset(e->shot_len, 0xff, train->n * sizeof *e->shot_len);
    }
    if (!rc) rc = nlp_scorer_new(&e->sc, m, k < rows ? k : rows, opts->max_len);
    if (!rc && opts->norm == NLP_ICL_NORM_UNCOND) rc = answer_prompt(e);
    if (!rc && eval->shape != NLP_ICL_CHOICE) rc = encode_cands(e, 0); /* the label words, once */
    if (!rc && eval->shape != NLP_ICL_CHOICE && opts->norm == NLP_ICL_NORM_UNCOND) rc = score_uncond(e, 0);
    if (rc) {
        nlp_icl_free(e);
        return rc;
    }
    *out = e;
    return 0;
}

int nlp_icl_best(const double *score, int k)
{
    int best = 0, found = 0;
    for (int c = 0; c < k; c++)
        if (!isnan(score[c]) && (!found || score[c] > score[best])) best = c, found = 1;
    return best;
}

/* Shot j's tokens alone (counted once). */
static int shot_tokens(nlp_icl *e, size_t j, size_t *n)
{
    if (e->shot_len[j] < 0) {
        nlp_buf_reset(&e->text);
        int rc = format(e, &e->text, e->train, j, 1, SIZE_MAX);
        if (!rc) rc = nlp_score_encode(e->tk, e->st, e->m, e->text.data, e->text.len, 0, &e->tmp);
        if (rc) return rc;
        e->shot_len[j] = e->tmp.n > INT32_MAX ? INT32_MAX : (int32_t)e->tmp.n;
    }
    *n = (size_t)e->shot_len[j];
    return 0;
}

/* The prompt of the first K shots and the item (its fields at most cap
 * bytes), encoded into e->prompt. */
static int build_prompt(nlp_icl *e, size_t item, int K, size_t cap)
{
    nlp_buf_reset(&e->text);
    int rc = 0;
    for (int s = 0; s < K && !rc; s++) rc = format(e, &e->text, e->train, e->shot[s], 1, SIZE_MAX);
    if (!rc) rc = format(e, &e->text, e->eval, item, 0, cap);
    if (!rc) rc = nlp_score_encode(e->tk, e->st, e->m, e->text.data ? e->text.data : "", e->text.len, 1, &e->prompt);
    return rc;
}

int nlp_icl_item(nlp_icl *e, size_t i, nlp_icl_result *r)
{
    const nlp_icl_data *d = e->eval;
    const unsigned long long ln = (unsigned long long)d->line[i];
    int rc;
    if (d->shape == NLP_ICL_CHOICE && (rc = encode_cands(e, i))) return rc;
    size_t longest = 0, total = 0;
    for (int c = 0; c < e->k; c++) {
        e->tokens[c] = e->cand[c].n;
        total += e->cand[c].n;
        if (e->cand[c].n > longest) longest = e->cand[c].n;
    }
    if (longest + 1 > (size_t)e->o.max_len)
        return nlp_error(NLP_EDATA, "'%s' line %llu: a candidate of %zu tokens leaves no room for a prompt in the "
                         "model's context of %d", d->path, ln, longest, e->o.max_len);
    const size_t budget = (size_t)e->o.max_len - longest; /* the prompt's positions */
    /* the shots */
    int K = 0, drawn = 0;
    if (e->o.shots > 0) {
        e->cur = i;
        K = nlp_icl_draw(e->o.seed, i, e->train->n, e->o.shots, same_item, e, e->shot);
        if (K < e->o.shots)
            return nlp_error(NLP_EDATA, "'%s' line %llu: '%s' holds %d examples other than this item, fewer than "
                             "the %d shots asked", d->path, ln, e->train->path, K, e->o.shots);
        /* as many as fit, from each one's tokens alone; then the prompt as one text, fewer
         * while it does not fit (a shot's tokens may change a little where it meets the next) */
        nlp_buf_reset(&e->text);
        if ((rc = format(e, &e->text, d, i, 0, SIZE_MAX)) ||
            (rc = nlp_score_encode(e->tk, e->st, e->m, e->text.data, e->text.len, 1, &e->tmp)))
            return rc;
        size_t need = e->tmp.n;
        int fit = 0;
        for (; fit < K; fit++) {
            size_t n;
            if ((rc = shot_tokens(e, e->shot[fit], &n))) return rc;
            if (need + n > budget) break;
            need += n;
        }
        drawn = K, K = fit;
    }
    for (;;) {
        if ((rc = build_prompt(e, i, K, SIZE_MAX))) return rc;
        if (e->prompt.n <= budget || K == 0) break;
        K--;
    }
    /* the estimate may be short by a shot (tokens merging where two pieces meet): one more while it fits */
    while (K < drawn && e->prompt.n <= budget) {
        if ((rc = build_prompt(e, i, K + 1, SIZE_MAX))) return rc;
        if (e->prompt.n > budget) {
            if ((rc = build_prompt(e, i, K, SIZE_MAX))) return rc;
            break;
        }
        K++;
    }
    size_t cut = 0;
    int cut_start = 0;
    if (e->prompt.n > budget) {
        /* the item alone does not fit: its fields lose their ends, the longest first (each at most
         * cap bytes, the largest cap that fits), so that its start and the template stay */
        const size_t full = e->prompt.n;
        size_t lo = 0, hi = 0;
        for (int f = 1; f < (d->shape == NLP_ICL_PAIR ? 3 : 2); f++)
            if (d->flen[i * (size_t)d->nf + (size_t)f] > hi) hi = d->flen[i * (size_t)d->nf + (size_t)f];
        if ((rc = build_prompt(e, i, 0, 0))) return rc;
        if (e->prompt.n <= budget) {
            while (hi - lo > 1) { /* lo fits, hi does not */
                const size_t mid = lo + (hi - lo) / 2;
                if ((rc = build_prompt(e, i, 0, mid))) return rc;
                if (e->prompt.n <= budget) lo = mid;
                else hi = mid;
            }
            if ((rc = build_prompt(e, i, 0, lo))) return rc;
        } else { /* the template alone does not fit: the prompt's start goes */
            cut_start = 1;
            memmove(e->prompt.v, e->prompt.v + (e->prompt.n - budget), budget * sizeof *e->prompt.v);
            e->prompt.n = budget;
        }
        cut = full - e->prompt.n;
    }
    if (!e->prompt.n)
        return nlp_error(NLP_EDATA, "'%s' line %llu: the prompt encodes to no token", d->path, ln);
    if ((rc = lp_room(e, total))) return rc;
    if ((rc = nlp_score_choices(e->sc, e->prompt.v, e->prompt.n, e->cand, e->k, e->lp, NULL))) {
        if (rc == NLP_ENAN)
            return nlp_error(NLP_ENAN, "'%s' line %llu: the model's scores are not numbers (are its weights "
                             "corrupt?)", d->path, ln);
        return rc;
    }
    size_t o = 0;
    for (int c = 0; c < e->k; c++) {
        double s = 0;
        for (size_t j = 0; j < e->cand[c].n; j++) s += e->lp[o++];
        e->logprob[c] = s;
        e->score[c] = e->o.norm == NLP_ICL_NORM_TOKENS ? s / (double)e->tokens[c]
                      : e->o.norm == NLP_ICL_NORM_BYTES ? s / (double)e->bytes[c] : s;
    }
    if (e->o.norm == NLP_ICL_NORM_UNCOND) {
        if (d->shape == NLP_ICL_CHOICE && (rc = score_uncond(e, i))) return rc; /* classify: once, at the start */
        for (int c = 0; c < e->k; c++) e->score[c] = e->logprob[c] - e->uncond[c];
    }
    *r = (nlp_icl_result){.k = e->k, .gold = d->label[i], .choice = nlp_icl_best(e->score, e->k), .shots = K,
                          .shot = e->shot, .prompt_tokens = e->prompt.n, .prompt = e->prompt.v, .cut = cut, .cut_start = cut_start,
                          .logprob = e->logprob, .score = e->score, .tokens = e->tokens, .bytes = e->bytes,
                          .uncond = e->o.norm == NLP_ICL_NORM_UNCOND ? e->uncond : NULL};
    return 0;
}
