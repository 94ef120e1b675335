/*
 * squad.c — SQuAD v1.1's exact match and F1. See squad.h.
 */
#include "eval/squad.h"
#include "base/err.h"
#include "eval/pystr.h"
#include "text/unicode.h"
#include "text/utf8.h"

#include <stdlib.h>
#include <string.h>

/* string.punctuation */
static int ascii_punct(int c) { return c > 0 && c < 128 && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) != NULL; }

/* re's \w on a str pattern: alphanumeric (Unicode letters and numbers) or "_". */
static int word_char(int32_t cp) { return cp == '_' || nlp_uc_is_letter(cp) || nlp_uc_is_number(cp); }

static int is_article(const char *s, size_t n)
{
    return (n == 1 && s[0] == 'a') || (n == 2 && memcmp(s, "an", 2) == 0) || (n == 3 && memcmp(s, "the", 3) == 0);
}

int nlp_squad_normalize(const char *s, size_t n, nlp_buf *out)
{
    nlp_buf low = {0}, t = {0};
    nlp_buf_reset(out);
    int rc = nlp_py_lower(s, n, &low);
    /* punctuation out */
    for (size_t i = 0; !rc && i < low.len; i++)
        if (!ascii_punct((unsigned char)low.data[i])) rc = nlp_buf_putc(&t, low.data[i]);
    /* articles: a maximal run of word characters that is one becomes a space */
    nlp_buf_reset(&low);
    for (size_t i = 0; !rc && i < t.len;) {
        size_t j = i;
        int32_t cp = nlp_utf8_next(t.data, t.len, &j);
        if (!word_char(cp)) {
            rc = nlp_buf_append(&low, t.data + i, j - i);
            i = j;
            continue;
        }
        size_t e = j;
        while (e < t.len) {
            size_t q = e;
            if (!word_char(nlp_utf8_next(t.data, t.len, &q))) break;
            e = q;
        }
        rc = is_article(t.data + i, e - i) ? nlp_buf_putc(&low, ' ') : nlp_buf_append(&low, t.data + i, e - i);
        i = e;
    }
    /* " ".join(s.split()) */
    size_t pos = 0, tb, te;
    int first = 1;
    while (!rc && nlp_py_next_token(low.data ? low.data : "", low.len, &pos, &tb, &te)) {
        if (!first) rc = nlp_buf_putc(out, ' ');
        if (!rc) rc = nlp_buf_append(out, low.data + tb, te - tb);
        first = 0;
    }
    if (!rc && !out->data) rc = nlp_buf_append(out, "", 0);
    nlp_buf_free(&low), nlp_buf_free(&t);
    return rc;
}

typedef struct tok {
    const char *p;
    size_t n;
} tok;

static int tok_cmp(const void *a, const void *b)
{
    const tok *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, m);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* The space-separated tokens of a normalized string, sorted. */
static tok *tokens(const nlp_buf *b, size_t *k)
{
    size_t cap = 1;
    for (size_t i = 0; i < b->len; i++) cap += b->data[i] == ' ';
    tok *t = nlp_malloc(cap * sizeof *t);
    if (!t) return NULL;
    *k = 0;
    for (size_t i = 0; i < b->len;) {
        const char *e = memchr(b->data + i, ' ', b->len - i);
        size_t j = e ? (size_t)(e - b->data) : b->len;
        t[(*k)++] = (tok){b->data + i, j - i};
        i = j + 1;
    }
    qsort(t, *k, sizeof *t, tok_cmp);
    return t;
}

int nlp_squad_score(const char *pred, size_t np, const char *gold, size_t ng, double *em, double *f1)
{
    nlp_buf p = {0}, g = {0};
    int rc = nlp_squad_normalize(pred, np, &p);
    if (!rc) rc = nlp_squad_normalize(gold, ng, &g);
    *em = *f1 = 0;
    tok *tp = NULL, *tg = NULL;
    size_t kp = 0, kg = 0;
    if (!rc) {
        *em = p.len == g.len && memcmp(p.data, g.data, p.len) == 0;
        if (!(tp = tokens(&p, &kp)) || !(tg = tokens(&g, &kg))) rc = NLP_ENOMEM;
    }
    if (!rc) { /* the multiset intersection of two sorted lists */
        size_t c = 0;
        for (size_t i = 0, j = 0; i < kp && j < kg;) {
            int d = tok_cmp(tp + i, tg + j);
            if (d == 0) c++, i++, j++;
            else if (d < 0) i++;
            else j++;
        }
        if (c) {
            const double P = (double)c / (double)kp, R = (double)c / (double)kg;
            *f1 = 2 * P * R / (P + R);
        }
    }
    free(tp), free(tg);
    nlp_buf_free(&p), nlp_buf_free(&g);
    return rc;
}

int nlp_squad_score_max(const char *pred, size_t np, const char *const *gold, const size_t *glen, int k, double *em,
                        double *f1)
{
    *em = *f1 = 0;
    for (int i = 0; i < k; i++) {
        double e, f;
        int rc = nlp_squad_score(pred, np, gold[i], glen[i], &e, &f);
        if (rc) return rc;
        if (e > *em) *em = e;
        if (f > *f1) *f1 = f;
    }
    return 0;
}
