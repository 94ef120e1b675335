/*
 * wordcache.c — bounded word -> ids memo. See wordcache.h.
 *
 * One 48-byte slot per word, so that a lookup of a common (short) word
 * touches one cache line: words of up to 16 bytes and up to 4 ids are kept
 * in the slot itself; longer ones spill into two pools.
 */
#include "tok/wordcache.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

#define INLINE_KEY 16
#define INLINE_IDS 4

struct slot {
    uint64_t h;   /* 0 = empty (a real hash of 0 is stored as 1) */
    uint32_t kn;  /* key length */
    uint32_t ni;  /* number of ids */
    union {
        char k[INLINE_KEY];
        uint32_t off; /* in keys, when kn > INLINE_KEY */
    } key;
    union {
        int32_t v[INLINE_IDS];
        uint32_t off; /* in idpool, when ni > INLINE_IDS */
    } ids;
};

struct nlp_wordcache {
    struct slot *t;
    size_t mask, used, max, full; /* full: the most slots */
    char *keys;
    size_t klen, kcap;
    int32_t *idpool;
    size_t ilen, icap;
};

nlp_wordcache *nlp_wordcache_new(size_t max_words)
{
    nlp_wordcache *c = nlp_calloc(1, sizeof *c);
    if (!c) return NULL;
    c->max = max_words ? max_words : 131072;
    /* the table starts small and grows as words come (at most half full),
     * up to room for max words: a table of its full size (12 MB) would be
     * touched all over by the first thousands of words, a page fault each,
     * which cost more than encoding a megabyte of text */
    size_t ns = 16;
    while (ns < c->max * 2) ns *= 2;
    c->full = ns;
    ns = ns < 4096 ? ns : 4096;
    c->t = nlp_calloc(ns, sizeof *c->t);
    if (!c->t) {
        free(c);
        return NULL;
    }
    c->mask = ns - 1;
    return c;
}

void nlp_wordcache_free(nlp_wordcache *c)
{
    if (!c) return;
    free(c->t);
    free(c->keys);
    free(c->idpool);
    free(c);
}

static void clear(nlp_wordcache *c)
{
    memset(c->t, 0, (c->mask + 1) * sizeof *c->t);
    c->used = c->klen = c->ilen = 0;
}

const int32_t *nlp_wordcache_get(const nlp_wordcache *c, const char *w, size_t n, uint64_t h, size_t *nids)
{
    if (!h) h = 1;
    for (size_t j = h & c->mask;; j = (j + 1) & c->mask) {
        const struct slot *s = &c->t[j];
        if (!s->h) return NULL;
        if (s->h != h || s->kn != n) continue;
        if (!nlp_word_eq(n <= INLINE_KEY ? s->key.k : c->keys + s->key.off, w, n)) continue;
        *nids = s->ni;
        return s->ni <= INLINE_IDS ? s->ids.v : c->idpool + s->ids.off;
    }
}

/* Four times the slots while small (each new table is fresh memory to
 * touch, so few steps), then twice, at most `full`; 0, or NLP_ENOMEM (the
 * table is kept). */
static int grow(nlp_wordcache *c)
{
    size_t ns = (c->mask + 1) * (c->mask + 1 < 65536 ? 4 : 2);
    if (ns > c->full) ns = c->full;
    struct slot *t = nlp_calloc_dense(ns, sizeof *t);
    if (!t) return NLP_ENOMEM;
    for (size_t i = 0; i <= c->mask; i++) {
        if (!c->t[i].h) continue;
        size_t j = c->t[i].h & (ns - 1);
        while (t[j].h) j = (j + 1) & (ns - 1);
        t[j] = c->t[i];
    }
    free(c->t);
    c->t = t;
    c->mask = ns - 1;
    return NLP_OK;
}

int nlp_wordcache_put(nlp_wordcache *c, const char *w, size_t n, uint64_t h, const int32_t *ids, size_t nids)
{
    if (n > NLP_WORDCACHE_MAX_LEN || nids > NLP_WORDCACHE_MAX_LEN) return NLP_OK;
    if (c->used >= c->max) clear(c);
    else if ((c->used + 1) * 2 > c->mask + 1 && (c->mask + 1 >= c->full || grow(c))) clear(c);
    if (!h) h = 1;
    size_t j = h & c->mask;
    while (c->t[j].h) j = (j + 1) & c->mask;
    struct slot *s = &c->t[j];
    if (n > INLINE_KEY) {
        if (c->klen + n > c->kcap && nlp_grow(&c->keys, &c->kcap, c->klen + n, 1)) return NLP_ENOMEM;
        memcpy(c->keys + c->klen, w, n);
        s->key.off = (uint32_t)c->klen;
        c->klen += n;
    } else {
        memcpy(s->key.k, w, n);
    }
    if (nids > INLINE_IDS) {
        if (c->ilen + nids > c->icap && nlp_grow(&c->idpool, &c->icap, c->ilen + nids, sizeof *c->idpool))
            return NLP_ENOMEM;
        memcpy(c->idpool + c->ilen, ids, nids * sizeof *ids);
        s->ids.off = (uint32_t)c->ilen;
        c->ilen += nids;
    } else if (nids) {
        memcpy(s->ids.v, ids, nids * sizeof *ids);
    }
    s->h = h;
    s->kn = (uint32_t)n;
    s->ni = (uint32_t)nids;
    c->used++;
    return NLP_OK;
}
