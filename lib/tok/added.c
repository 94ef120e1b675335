/*
 * added.c — matching added tokens in text. See added.h.
 *
 * A first-byte table narrows the candidates at each position to the tokens
 * starting with that byte, longest first; added-token lists are short, so
 * this beats building an automaton.
 */
#include "tok/added.h"
#include "base/err.h"
#include "base/mem.h"
#include "text/uclass.h"
#include "text/utf8.h"

#include <stdlib.h>
#include <string.h>

void nlp_added_free(nlp_added_token *t, size_t n)
{
    if (!t) return;
    for (size_t i = 0; i < n; i++) free(t[i].content);
    free(t);
}

int nlp_added_copy(const nlp_added_token *t, size_t n, nlp_added_token **out)
{
    *out = NULL;
    if (!n) return NLP_OK;
    nlp_added_token *c = nlp_calloc(n, sizeof *c);
    if (!c) return NLP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        c[i] = t[i];
        c[i].content = nlp_strdup(t[i].content);
        if (!c[i].content) {
            nlp_added_free(c, i);
            return NLP_ENOMEM;
        }
    }
    *out = c;
    return NLP_OK;
}

struct cand {
    const nlp_added_token *t;
    size_t len;
};

struct nlp_added_matcher {
    struct cand *c;     /* grouped by first byte, longest first within a group */
    uint32_t start[257]; /* group of byte b is c[start[b] .. start[b+1]) */
    size_t n, nspecial;
    int nfirst;           /* distinct first bytes */
    unsigned char first;  /* the first byte when nfirst == 1 */
};

static int by_byte_then_len(const void *x, const void *y)
{
    const struct cand *a = x, *b = y;
    unsigned char fa = (unsigned char)a->t->content[0], fb = (unsigned char)b->t->content[0];
    if (fa != fb) return fa < fb ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->t->id < b->t->id ? -1 : a->t->id > b->t->id;
}

nlp_added_matcher *nlp_added_matcher_new(const nlp_added_token *t, size_t n, int normalized)
{
    nlp_added_matcher *m = nlp_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->c = nlp_calloc(n ? n : 1, sizeof *m->c);
    if (!m->c) {
        free(m);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!!t[i].normalized != !!normalized || !t[i].content[0]) continue;
        m->c[m->n].t = &t[i];
        m->c[m->n].len = strlen(t[i].content);
        m->nspecial += t[i].special != 0;
        m->n++;
    }
    qsort(m->c, m->n, sizeof *m->c, by_byte_then_len);
    size_t k = 0;
    for (int b = 0; b < 256; b++) {
        m->start[b] = (uint32_t)k;
        while (k < m->n && (unsigned char)m->c[k].t->content[0] == b) k++;
    }
    m->start[256] = (uint32_t)m->n;
    for (int b = 0; b < 256; b++)
        if (m->start[b + 1] > m->start[b]) {
            m->nfirst++;
            m->first = (unsigned char)b;
        }
    return m;
}

void nlp_added_matcher_free(nlp_added_matcher *m)
{
    if (!m) return;
    free(m->c);
    free(m);
}

int nlp_added_matcher_empty(const nlp_added_matcher *m, int split_special)
{
    return !m || m->n == 0 || (split_special && m->nspecial == m->n);
}

/* Is the character ending at s[e) (e > 0) a word character? */
static int word_before(const char *s, size_t e)
{
    size_t b = e - 1;
    while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
    size_t j = b;
    int32_t cp = nlp_utf8_next(s, e, &j);
    return cp >= 0 && (nlp_uclass(cp) & NLP_UCL_WORD);
}

static int word_after(const char *s, size_t n, size_t b)
{
    size_t j = b;
    int32_t cp = nlp_utf8_next(s, n, &j);
    return cp >= 0 && (nlp_uclass(cp) & NLP_UCL_WORD);
}

int nlp_added_next(const nlp_added_matcher *m, const char *s, size_t n, size_t from, size_t floor,
                   int split_special, size_t *start, size_t *end, int32_t *id)
{
    if (nlp_added_matcher_empty(m, split_special)) return 0;
    size_t i = from;
    while (i < n) {
        if (m->nfirst == 1) {
            /* the usual case (<|endoftext|>...): let memchr find candidates */
            const char *q = memchr(s + i, m->first, n - i);
            if (!q) return 0;
            i = (size_t)(q - s);
        }
        unsigned char b = (unsigned char)s[i];
        uint32_t g0 = m->start[b], g1 = m->start[b + 1];
        const struct cand *hit = NULL;
        for (uint32_t k = g0; k < g1; k++) {
            const struct cand *c = &m->c[k];
            if (c->len <= n - i && memcmp(s + i, c->t->content, c->len) == 0) {
                hit = c;
                break;
            }
        }
        if (!hit) {
            i++;
            continue;
        }
        size_t ms = i, me = i + hit->len;
        const nlp_added_token *t = hit->t;
        /* a rejected match is skipped whole, as HF's match iterator does */
        if (split_special && t->special) {
            i = me;
            continue;
        }
        if (t->single_word && ((ms > 0 && word_before(s, ms)) || (me < n && word_after(s, n, me)))) {
            i = me;
            continue;
        }
        if (t->lstrip) {
            while (ms > floor) {
                size_t b0 = ms - 1;
                while (b0 > floor && ((unsigned char)s[b0] & 0xC0) == 0x80) b0--;
                size_t j = b0;
                int32_t cp = nlp_utf8_next(s, ms, &j);
                if (cp < 0 || !(nlp_uclass(cp) & NLP_UCL_SPACE)) break;
                ms = b0;
            }
        }
        if (t->rstrip) {
            while (me < n) {
                size_t j = me;
                int32_t cp = nlp_utf8_next(s, n, &j);
                if (cp < 0 || !(nlp_uclass(cp) & NLP_UCL_SPACE)) break;
                me = j;
            }
        }
        *start = ms;
        *end = me;
        *id = t->id;
        return 1;
    }
    return 0;
}
