/*
 * pretok.c — pre-tokenizers, GPT-2's pattern matched by hand. See pretok.h.
 */
#include "tok/pretok.h"
#include "base/err.h"
#include "text/uclass.h"
#include "text/utf8.h"

#include <stdlib.h>
#include <string.h>

const char nlp_pretok_gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

void nlp_pieces_free(nlp_pieces *p)
{
    free(p->v);
    memset(p, 0, sizeof *p);
}

static inline int push(nlp_pieces *o, const char *p, size_t n)
{
    if (o->n == o->cap && nlp_grow(&o->v, &o->cap, o->n + 1, sizeof *o->v)) return NLP_ENOMEM;
    o->v[o->n].p = p;
    o->v[o->n].n = (uint32_t)n;
    o->n++;
    return NLP_OK;
}

// --- GPT-2 pattern

/* The three classes the pattern cares about; everything else is "other". */
enum { C_OTHER = 0, C_L = 1, C_N = 2, C_S = 3 };

static const uint8_t ascii_cls[128] = {
    [9 ... 13] = C_S, [' '] = C_S, ['0' ... '9'] = C_N, ['A' ... 'Z'] = C_L, ['a' ... 'z'] = C_L,
};

/* Class of the character at s[i] and its length in *len. */
static inline int cls_at(const char *s, size_t n, size_t i, size_t *len)
{
    unsigned char c = (unsigned char)s[i];
    if (c < 0x80) {
        *len = 1;
        return ascii_cls[c];
    }
    size_t j = i;
    int32_t cp = nlp_utf8_next(s, n, &j);
    *len = j - i;
    uint8_t u = cp < 0 ? 0 : nlp_uclass(cp);
    if (u & NLP_UCL_LETTER) return C_L;
    if (u & NLP_UCL_NUMBER) return C_N;
    if (u & NLP_UCL_SPACE) return C_S;
    return C_OTHER;
}

/* End of the run of characters of class k starting at s[i]. */
static inline size_t run_of(const char *s, size_t n, size_t i, int k)
{
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            if (ascii_cls[c] != k) break;
            i++;
            continue;
        }
        size_t len;
        if (cls_at(s, n, i, &len) != k) break;
        i += len;
    }
    return i;
}

size_t nlp_pretok_gpt2_next(const char *s, size_t n, size_t i)
{
    unsigned char c = (unsigned char)s[i];
    /* 's 't 're 've 'm 'll 'd (case-sensitive) */
    if (c == '\'' && i + 1 < n) {
        char d = s[i + 1];
        if (d == 's' || d == 't' || d == 'm' || d == 'd') return i + 2;
        if (i + 2 < n) {
            char e = s[i + 2];
            if ((d == 'r' && e == 'e') || (d == 'v' && e == 'e') || (d == 'l' && e == 'l')) return i + 3;
        }
    }
    /* ' ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+': the optional space, then a run */
    size_t k = (c == ' ' && i + 1 < n) ? i + 1 : i;
    size_t len;
    int cl = cls_at(s, n, k, &len);
    if (cl != C_S) return run_of(s, n, k + len, cl);
    /* \s+(?!\S) | \s+ : a white-space run; if a non-space follows it, the
     * first alternative backs off one character (leaving it to prefix the
     * next word), which needs a run of two or more */
    size_t j = i, last = i;
    while (j < n) {
        size_t l;
        if (cls_at(s, n, j, &l) != C_S) break;
        last = j;
        j += l;
    }
    if (j == n || last == i) return j;
    return last;
}

// --- other splitters

static int split_gpt2(const char *p, size_t n, nlp_pieces *o)
{
    size_t i = 0;
    while (i < n) {
        size_t e = nlp_pretok_gpt2_next(p, n, i);
        if (push(o, p + i, e - i)) return NLP_ENOMEM;
        i = e;
    }
    return NLP_OK;
}

static inline uint8_t ucl_at(const char *s, size_t n, size_t i, size_t *len)
{
    size_t j = i;
    int32_t cp = nlp_utf8_next(s, n, &j);
    *len = j - i;
    return cp < 0 ? 0 : nlp_uclass(cp);
}

/* keep_other: 1 = HF Whitespace (\w+|[^\w\s]+), 0 = WhitespaceSplit */
static int split_ws(const char *p, size_t n, int keep_other, nlp_pieces *o)
{
    size_t i = 0;
    while (i < n) {
        size_t l;
        uint8_t u = ucl_at(p, n, i, &l);
        if (u & NLP_UCL_SPACE) {
            i += l;
            continue;
        }
        int word = keep_other && (u & NLP_UCL_WORD);
        size_t j = i + l;
        while (j < n) {
            uint8_t v = ucl_at(p, n, j, &l);
            if (v & NLP_UCL_SPACE) break;
            if (keep_other && !!(v & NLP_UCL_WORD) != word) break;
            j += l;
        }
        if (push(o, p + i, j - i)) return NLP_ENOMEM;
        i = j;
    }
    return NLP_OK;
}

/* HF BertPreTokenizer: 0 = part of a word, 1 = white space, 2 = punctuation */
static const uint8_t bert_ascii[128] = {
    [9 ... 13] = 1, [' '] = 1, ['!' ... '/'] = 2, [':' ... '@'] = 2, ['[' ... '`'] = 2, ['{' ... '~'] = 2,
};

int nlp_pretok_bert_class(int32_t cp)
{
    if (cp < 0) return 0;
    if (cp < 0x80) return bert_ascii[cp];
    const uint8_t u = nlp_uclass(cp);
    return (u & NLP_UCL_SPACE) ? 1 : (u & NLP_UCL_PUNCT) ? 2 : 0;
}

static int split_bert(const char *p, size_t n, nlp_pieces *o)
{
    size_t i = 0, w = 0; /* w: start of the current word */
    while (i < n) {
        unsigned char c = (unsigned char)p[i];
        size_t l = 1;
        int k;
        if (c < 0x80) {
            k = bert_ascii[c];
        } else {
            uint8_t u = ucl_at(p, n, i, &l);
            k = (u & NLP_UCL_SPACE) ? 1 : (u & NLP_UCL_PUNCT) ? 2 : 0;
        }
        if (k == 0) {
            i += l;
            continue;
        }
        if (i > w && push(o, p + w, i - w)) return NLP_ENOMEM;
        if (k == 2 && push(o, p + i, l)) return NLP_ENOMEM;
        i += l;
        w = i;
    }
    if (i > w && push(o, p + w, i - w)) return NLP_ENOMEM;
    return NLP_OK;
}

int nlp_pretok_is_byte_level(const nlp_pretok_step *steps, size_t nsteps)
{
    for (size_t i = 0; i < nsteps; i++)
        if (steps[i].type == NLP_PRETOK_BYTELEVEL) return 1;
    return 0;
}

int nlp_pretok_is_gpt2_only(const nlp_pretok_step *steps, size_t nsteps)
{
    return nsteps == 1 && !steps[0].add_prefix_space &&
           (steps[0].type == NLP_PRETOK_GPT2_SPLIT || (steps[0].type == NLP_PRETOK_BYTELEVEL && steps[0].use_regex));
}

/* HF Metaspace on one piece p[0..len): written into w (room for 4 bytes a
 * byte plus one replacement), the pieces pushed. first: this piece is at the
 * start of the text. */
static int metaspace(const nlp_pretok_step *st, const char *p, size_t len, int first, nlp_buf *w, nlp_pieces *o)
{
    const char *r = st->replacement;
    size_t rn = strlen(r);
    if (!rn) return push(o, p, len);
    char *d = w->data + w->len, *d0 = d;
    /* after the spaces are replaced: a leading space counts as the replacement */
    int starts = (len >= rn && memcmp(p, r, rn) == 0) || (len && p[0] == ' ');
    if (!starts && (st->prepend_scheme == NLP_PREPEND_ALWAYS || (st->prepend_scheme == NLP_PREPEND_FIRST && first))) {
        memcpy(d, r, rn);
        d += rn;
    }
    for (size_t i = 0; i < len; i++) {
        if (p[i] == ' ') {
            memcpy(d, r, rn);
            d += rn;
        } else {
            *d++ = p[i];
        }
    }
    size_t n = (size_t)(d - d0);
    w->len += n;
    if (!st->split) return n ? push(o, d0, n) : NLP_OK;
    /* cut before each replacement (MergedWithNext) */
    size_t a = 0;
    for (size_t i = 1; i + rn <= n; i++)
        if (memcmp(d0 + i, r, rn) == 0 && i > a) {
            if (push(o, d0 + a, i - a)) return NLP_ENOMEM;
            a = i;
            i += rn - 1;
        }
    return n > a ? push(o, d0 + a, n - a) : NLP_OK;
}

int nlp_pretok_run(const nlp_pretok_step *steps, size_t nsteps, const char *s, size_t n, nlp_buf *work,
                   nlp_pieces *out)
{
    return nlp_pretok_run_at(steps, nsteps, s, n, work, out, 1);
}

int nlp_pretok_run_at(const nlp_pretok_step *steps, size_t nsteps, const char *s, size_t n, nlp_buf *work,
                      nlp_pieces *out, int at_start)
{
    nlp_buf_reset(work);
    if (n == 0) return NLP_OK;
    if (nsteps == 0) return push(out, s, n);
    /* Fast path: one step that needs no copies. */
    if (nsteps == 1 && steps[0].type == NLP_PRETOK_BERT) return split_bert(s, n, out);
    if (nlp_pretok_is_gpt2_only(steps, nsteps)) return split_gpt2(s, n, out);

    /* Prefix spaces copy pieces into `work`; reserve enough up front so that
     * it never moves while pieces point into it (each such step at most
     * doubles the text). */
    size_t need = n + 1;
    for (size_t k = 0; k < nsteps; k++) {
        if (steps[k].type == NLP_PRETOK_BYTELEVEL && steps[k].add_prefix_space) need *= 2;
        if (steps[k].type == NLP_PRETOK_METASPACE) {
            /* a space becomes the replacement, and each piece may get one first */
            size_t rn = strlen(steps[k].replacement);
            need = 2 * need * (rn ? rn : 1) + 8;
        }
    }
    if (nlp_buf_reserve(work, need)) return NLP_ENOMEM;

    /* Steps work in place at the end of `out`: the current pieces are
     * out->v[base..n), each step appends its result and moves it down. */
    size_t base = out->n;
    if (push(out, s, n)) return NLP_ENOMEM;
    for (size_t k = 0; k < nsteps; k++) {
        const nlp_pretok_step *st = &steps[k];
        size_t end = out->n;
        for (size_t q = base; q < end; q++) {
            const char *p = out->v[q].p;
            size_t len = out->v[q].n;
            int rc = NLP_OK;
            switch (st->type) {
            case NLP_PRETOK_BYTELEVEL:
                if (st->add_prefix_space && len > 0 && p[0] != ' ') {
                    char *w = work->data + work->len;
                    w[0] = ' ';
                    memcpy(w + 1, p, len);
                    work->len += len + 1;
                    p = w;
                    len++;
                }
                rc = st->use_regex ? split_gpt2(p, len, out) : push(out, p, len);
                break;
            case NLP_PRETOK_GPT2_SPLIT: rc = split_gpt2(p, len, out); break;
            case NLP_PRETOK_WHITESPACE: rc = split_ws(p, len, 1, out); break;
            case NLP_PRETOK_WHITESPACE_SPLIT: rc = split_ws(p, len, 0, out); break;
            case NLP_PRETOK_BERT: rc = split_bert(p, len, out); break;
            case NLP_PRETOK_METASPACE: rc = metaspace(st, p, len, at_start && p == s, work, out); break;
            }
            if (rc) return rc;
        }
        memmove(out->v + base, out->v + end, (out->n - end) * sizeof *out->v);
        out->n -= end - base;
    }
    return NLP_OK;
}
