/*
 * wordcache.c — bounded word -> ids memo. See wordcache.h.
 *
 * An index of 8-byte slots (32 bits of the word's hash and the number of
 * its entry) over entries appended in the order the words first come. A
 * lookup reads one slot and, when the hash bits agree, one entry. The index
 * is small (512 KiB for 65,536 slots) and stays in L2 where a table of whole
 * entries would not (3 MiB), and the entries of the words that come early,
 * the frequent ones, sit together. An entry keeps a word of up to 16 bytes
 * and up to 4 ids in itself; longer ones spill into two pools.
 */
#include "tok/wordcache.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

#define INLINE_KEY 16
#define INLINE_IDS 4

struct entry {
    uint64_t h;
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
    uint64_t *idx; /* 0 empty, else (hash >> 32) << 32 | entry + 1 */
    size_t mask, full; /* full: the most slots */
    struct entry *e;
    size_t used, max;
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
    /* the index starts small and grows as words come (at most half full),
     * up to room for max words: fresh memory is a page fault per page */
    size_t ns = 16;
    while (ns < c->max * 2) ns *= 2;
    c->full = ns;
    ns = ns < 4096 ? ns : 4096;
    c->idx = nlp_calloc(ns, sizeof *c->idx);
    /* room for every entry at once: its pages are made only as entries
     * come, and growing it would copy them */
    c->e = nlp_malloc(c->max * sizeof *c->e);
    if (!c->idx || !c->e) {
        free(c->idx);
        free(c->e);
        free(c);
        return NULL;
    }
    c->mask = ns - 1;
    return c;
}

void nlp_wordcache_free(nlp_wordcache *c)
{
    if (!c) return;
    free(c->idx);
    free(c->e);
    free(c->keys);
    free(c->idpool);
    free(c);
}

static void clear(nlp_wordcache *c)
{
    memset(c->idx, 0, (c->mask + 1) * sizeof *c->idx);
    c->used = c->klen = c->ilen = 0;
}

const int32_t *nlp_wordcache_get(const nlp_wordcache *c, const char *w, size_t n, uint64_t h, size_t *nids)
{
    if (!h) h = 1;
    const uint64_t tag = h >> 32 << 32;
    for (size_t j = h & c->mask;; j = (j + 1) & c->mask) {
        const uint64_t x = c->idx[j];
        if (!x) return NULL;
        if ((x & ~(uint64_t)UINT32_MAX) != tag) continue;
        const struct entry *s = &c->e[(uint32_t)x - 1];
        if (s->h != h || s->kn != n) continue;
        if (!nlp_word_eq(n <= INLINE_KEY ? s->key.k : c->keys + s->key.off, w, n)) continue;
        *nids = s->ni;
        return s->ni <= INLINE_IDS ? s->ids.v : c->idpool + s->ids.off;
    }
}

/* Slot of entry i (hash h) in an index of mask + 1 slots. */
static void place(uint64_t *idx, size_t mask, uint64_t h, size_t i)
{
    size_t j = h & mask;
    while (idx[j]) j = (j + 1) & mask;
    idx[j] = (h >> 32 << 32) | (uint64_t)(i + 1);
}

/* Four times the slots while small (each new index is fresh memory to
 * touch, so few steps), then twice, at most `full`; 0, or NLP_ENOMEM (the
 * index is kept). */
static int grow(nlp_wordcache *c)
{
    size_t ns = (c->mask + 1) * (c->mask + 1 < 65536 ? 4 : 2);
    if (ns > c->full) ns = c->full;
    uint64_t *t = nlp_calloc_dense(ns, sizeof *t);
    if (!t) return NLP_ENOMEM;
    for (size_t i = 0; i < c->used; i++) place(t, ns - 1, c->e[i].h, i);
    free(c->idx);
    c->idx = t;
    c->mask = ns - 1;
    return NLP_OK;
}

int nlp_wordcache_put(nlp_wordcache *c, const char *w, size_t n, uint64_t h, const int32_t *ids, size_t nids)
{
    if (n > NLP_WORDCACHE_MAX_LEN || nids > NLP_WORDCACHE_MAX_LEN) return NLP_OK;
    if (c->used >= c->max) clear(c);
    else if ((c->used + 1) * 2 > c->mask + 1 && (c->mask + 1 >= c->full || grow(c))) clear(c);
    if (!h) h = 1;
    struct entry *s = &c->e[c->used];
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
    place(c->idx, c->mask, h, c->used);
    c->used++;
    return NLP_OK;
}
