/*
 * ngram.c — units and the per-segment n-gram counter. See ngram.h.
 *
 * The counter is an open-addressing table (linear probing, power-of-two
 * size, at most half full) of the hypothesis's distinct n-grams. An n-gram
 * is identified by its order, a rolling hash of its units and the position
 * of its first occurrence in the hypothesis, which is where equality checks
 * read its units. Each entry keeps the hypothesis count, the count in the
 * reference being probed (reset lazily through a probe stamp) and the best
 * count over the references probed so far. Probing a reference walks each
 * start position through increasing orders and stops at the first order
 * that is not in the hypothesis: no longer n-gram from there can be.
 */
#include "eval/ngram.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/mem.h"
#include "eval/pystr.h"
#include "text/utf8.h"

#include <stdlib.h>
#include <string.h>

void nlp_units_free(nlp_units *u)
{
    free(u->u);
    memset(u, 0, sizeof *u);
}

static inline uint64_t unit_hash(const char *p, size_t n)
{
    if (n <= 8) {
        uint64_t x = 0;
        memcpy(&x, p, n);
        return nlp_hash_u64(x ^ ((uint64_t)n << 59) ^ 0x9E3779B97F4A7C15ull);
    }
    return nlp_hash(p, n, 0x51ED270B27ull);
}

int nlp_units_push(nlp_units *u, const char *p, size_t len)
{
    if (u->n == u->cap && nlp_grow(&u->u, &u->cap, u->n + 1, sizeof *u->u)) return NLP_ENOMEM;
    u->u[u->n++] = (nlp_unit){unit_hash(p, len), p, (uint32_t)len};
    return NLP_OK;
}

int nlp_units_words(nlp_units *u, const char *s, size_t n)
{
    size_t pos = 0, tb, te;
    u->n = 0;
    while (nlp_py_next_token(s, n, &pos, &tb, &te))
        if (nlp_units_push(u, s + tb, te - tb)) return NLP_ENOMEM;
    return NLP_OK;
}

int nlp_units_chars(nlp_units *u, const char *s, size_t n, int skip_space)
{
    u->n = 0;
    if (u->cap < n && nlp_grow(&u->u, &u->cap, n, sizeof *u->u)) return NLP_ENOMEM;
    size_t i = 0;
    while (i < n) {
        size_t k = skip_space ? nlp_py_space_len(s, n, i) : 0;
        if (k) {
            i += k;
            continue;
        }
        size_t j = i;
        nlp_utf8_next(s, n, &j);
        u->u[u->n++] = (nlp_unit){unit_hash(s + i, j - i), s + i, (uint32_t)(j - i)};
        i = j;
    }
    return NLP_OK;
}

// --- counter

typedef struct entry {
    uint64_t hash;
    uint32_t start, order;
    uint32_t hc, rc, best, stamp;
    uint32_t slot;
} entry;

struct nlp_ngrams {
    const nlp_units *hyp;
    int max_order;
    entry *ent;
    size_t nent, ent_cap;
    uint32_t *table; /* entry index + 1, 0 = empty */
    size_t mask;     /* table size - 1 */
    uint32_t stamp;
};

nlp_ngrams *nlp_ngrams_new(void)
{
    nlp_ngrams *g = nlp_calloc(1, sizeof *g);
    return g;
}

void nlp_ngrams_free(nlp_ngrams *g)
{
    if (!g) return;
    free(g->ent);
    free(g->table);
    free(g);
}

static inline uint64_t extend(uint64_t h, uint64_t unit)
{
    h = (h << 23 | h >> 41) ^ unit;
    return h * 0x9E3779B97F4A7C15ull;
}

static inline size_t slot_of(uint64_t h, uint32_t order, size_t mask)
{
    return (size_t)nlp_hash_u64(h + order) & mask;
}

/* Do units a[0..k) equal b[0..k)? */
static inline int same(const nlp_unit *a, const nlp_unit *b, uint32_t k)
{
    for (uint32_t i = 0; i < k; i++)
        if (!nlp_unit_eq(&a[i], &b[i])) return 0;
    return 1;
}

int nlp_ngrams_load(nlp_ngrams *g, const nlp_units *hyp, int max_order)
{
    NLP_ASSERT(max_order >= 1 && max_order <= NLP_NGRAM_MAX_ORDER);
    /* forget the previous hypothesis */
    for (size_t i = 0; i < g->nent; i++) g->table[g->ent[i].slot] = 0;
    g->nent = 0;
    g->hyp = hyp;
    g->max_order = max_order;
    g->stamp = 0;

    size_t n = hyp->n, need = 0;
    for (int k = 1; k <= max_order && (size_t)k <= n; k++) need += n - (size_t)k + 1;
    if (need > g->ent_cap && nlp_grow(&g->ent, &g->ent_cap, need, sizeof *g->ent)) return NLP_ENOMEM;
    size_t size = 16;
    while (size < 2 * need) size *= 2;
    if (!g->table || size > g->mask + 1) {
        uint32_t *t = nlp_calloc(size, sizeof *t);
        if (!t) return NLP_ENOMEM;
        free(g->table);
        g->table = t;
        g->mask = size - 1;
    }

    const nlp_unit *u = hyp->u;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = 0;
        for (uint32_t k = 1; k <= (uint32_t)max_order && i + k <= n; k++) {
            h = extend(h, u[i + k - 1].hash);
            size_t s = slot_of(h, k, g->mask);
            for (;;) {
                uint32_t e = g->table[s];
                if (!e) {
                    g->ent[g->nent] = (entry){h, (uint32_t)i, k, 1, 0, 0, 0, (uint32_t)s};
                    g->table[s] = (uint32_t)++g->nent;
                    break;
                }
                entry *x = &g->ent[e - 1];
                if (x->hash == h && x->order == k && same(&u[x->start], &u[i], k)) {
                    x->hc++;
                    break;
                }
                s = (s + 1) & g->mask;
            }
        }
    }
    return NLP_OK;
}

void nlp_ngrams_probe(nlp_ngrams *g, const nlp_units *ref, int64_t *match)
{
    uint32_t stamp = ++g->stamp;
    const nlp_unit *hu = g->hyp->u, *u = ref->u;
    size_t n = ref->n;
    if (g->nent == 0) return;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = 0;
        for (uint32_t k = 1; k <= (uint32_t)g->max_order && i + k <= n; k++) {
            h = extend(h, u[i + k - 1].hash);
            size_t s = slot_of(h, k, g->mask);
            entry *hit = NULL;
            for (;;) {
                uint32_t e = g->table[s];
                if (!e) break;
                entry *x = &g->ent[e - 1];
                if (x->hash == h && x->order == k && same(&hu[x->start], &u[i], k)) {
                    hit = x;
                    break;
                }
                s = (s + 1) & g->mask;
            }
            if (!hit) break; /* no longer n-gram from i is in the hypothesis */
            if (hit->stamp != stamp) {
                hit->stamp = stamp;
                hit->rc = 0;
            }
            hit->rc++;
            if (hit->rc <= hit->hc) match[k - 1]++;
            if (hit->rc > hit->best) hit->best = hit->rc;
        }
    }
}

void nlp_ngrams_clipped(const nlp_ngrams *g, int64_t *correct)
{
    for (int k = 0; k < g->max_order; k++) correct[k] = 0;
    for (size_t i = 0; i < g->nent; i++) {
        const entry *x = &g->ent[i];
        correct[x->order - 1] += x->hc < x->best ? x->hc : x->best;
    }
}
