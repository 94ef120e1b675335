/*
 * hash.c — byte hash and insertion-ordered string map. See hash.h.
 */
#include "base/hash.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

static inline uint64_t mum(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* n in 1..7 bytes as one word, without a call to memcpy: two overlapping
 * reads of 4, or the first, middle and last byte (as wyhash reads them) */
static inline uint64_t rd_tail(const unsigned char *p, size_t n)
{
    if (n >= 4) return rd32(p) << 32 | rd32(p + n - 4);
    return (uint64_t)p[0] << 16 | (uint64_t)p[n >> 1] << 8 | p[n - 1];
}

uint64_t nlp_hash(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    const uint64_t K0 = 0xa0761d6478bd642full, K1 = 0xe7037ed1a0b428dbull, K2 = 0x8ebc6af09c88c6e3ull;
    uint64_t h = seed ^ mum(n ^ K0, K1);
    while (n >= 16) {
        h = mum(rd64(p) ^ K1 ^ h, rd64(p + 8) ^ K2);
        p += 16;
        n -= 16;
    }
    if (n >= 8) {
        h = mum(rd64(p) ^ K1, h ^ K2);
        p += 8;
        n -= 8;
    }
    if (n) h = mum(rd_tail(p, n) ^ K2, h ^ K0);
    return mum(h ^ K0, K1 ^ (h >> 29));
}

// --- nlp_strmap

struct entry {
    const char *key;
    uint32_t len;
    int64_t val;
};

/* A slot holds the key's hash beside its entry's index, so that a probe
 * touches the entry (and its key) only when the hashes agree. */
struct slot {
    uint32_t hash;
    int32_t ent; /* index into ents, -1 empty */
};

struct nlp_strmap {
    struct entry *ents; /* insertion order */
    size_t n, cap;
    struct slot *slots;
    size_t nslots;      /* power of two */
    nlp_arena keys;
};

static int rehash(nlp_strmap *m, size_t nslots)
{
    struct slot *s = nlp_malloc_dense(nslots * sizeof *s);
    if (!s) return NLP_ENOMEM;
    memset(s, 0xff, nslots * sizeof *s);
    for (size_t i = 0; i < m->nslots; i++) {
        if (m->slots[i].ent < 0) continue;
        size_t j = m->slots[i].hash & (nslots - 1);
        while (s[j].ent >= 0) j = (j + 1) & (nslots - 1);
        s[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = s;
    m->nslots = nslots;
    return NLP_OK;
}

nlp_strmap *nlp_strmap_new(size_t hint)
{
    nlp_strmap *m = nlp_calloc(1, sizeof *m);
    if (!m) return NULL;
    size_t ns = 16;
    while (ns < hint * 2) ns *= 2;
    /* the entries made in one call (nlp_malloc_dense), not a page fault each
     * as they are first written: a vocabulary's 50,257 are 300 pages */
    m->cap = hint ? hint : 1;
    if (rehash(m, ns) || !(m->ents = nlp_malloc_dense(m->cap * sizeof *m->ents))) {
        nlp_strmap_free(m);
        return NULL;
    }
    return m;
}

nlp_strmap *nlp_strmap_clone(const nlp_strmap *m)
{
    nlp_strmap *c = nlp_calloc(1, sizeof *c);
    if (!c) return NULL;
    size_t bytes = 0;
    for (size_t i = 0; i < m->n; i++) bytes += m->ents[i].len + 1;
    char *k = m->n ? nlp_arena_alloc(&c->keys, bytes) : NULL;
    c->slots = nlp_malloc(m->nslots * sizeof *c->slots);
    c->ents = nlp_malloc((m->n ? m->n : 1) * sizeof *c->ents);
    if ((m->n && !k) || !c->slots || !c->ents) {
        nlp_strmap_free(c);
        return NULL;
    }
    memcpy(c->slots, m->slots, m->nslots * sizeof *c->slots);
    c->nslots = m->nslots;
    for (size_t i = 0; i < m->n; i++) {
        c->ents[i] = m->ents[i];
        memcpy(k, m->ents[i].key, m->ents[i].len + 1);
        c->ents[i].key = k;
        k += m->ents[i].len + 1;
    }
    c->n = c->cap = m->n;
    if (!m->n) c->cap = 1;
    return c;
}

void nlp_strmap_free(nlp_strmap *m)
{
    if (!m) return;
    free(m->ents);
    free(m->slots);
    nlp_arena_free(&m->keys);
    free(m);
}

size_t nlp_strmap_size(const nlp_strmap *m) { return m->n; }

static int64_t find(const nlp_strmap *m, const char *key, size_t n, uint64_t h, size_t *slot)
{
    size_t j = h & (m->nslots - 1);
    for (;;) {
        struct slot s = m->slots[j];
        if (s.ent < 0) break;
        if (s.hash == (uint32_t)h) {
            const struct entry *en = &m->ents[s.ent];
            if (en->len == n && memcmp(en->key, key, n) == 0) {
                *slot = j;
                return s.ent;
            }
        }
        j = (j + 1) & (m->nslots - 1);
    }
    *slot = j;
    return -1;
}

int nlp_strmap_get(const nlp_strmap *m, const char *key, size_t n, int64_t *val)
{
    size_t slot;
    int64_t e = find(m, key, n, nlp_hash(key, n, 0), &slot);
    if (e < 0) return 0;
    *val = m->ents[e].val;
    return 1;
}

/*
 * Many lookups at once, each a chain of three dependent memory reads (slot,
 * entry, key bytes) that mostly miss the cache in a map of tens of
 * thousands of keys. Done one after another they wait for each miss in
 * turn; here the reads of key i + 3P, i + 2P and i + P are started
 * (prefetched) while key i is compared, so that the waits overlap.
 */
#define PIPE 8
void nlp_strmap_get_many(const nlp_strmap *m, const nlp_span *keys, size_t n, int64_t *vals, int64_t absent)
{
    uint64_t h[4 * PIPE];
    size_t mask = m->nslots - 1;
    for (size_t i = 0; i < n + 3 * PIPE; i++) {
        if (i < n) { /* stage 1: hash, fetch the home slot */
            h[i % (4 * PIPE)] = nlp_hash(keys[i].s, keys[i].n, 0);
            __builtin_prefetch(&m->slots[h[i % (4 * PIPE)] & mask]);
        }
        if (i >= PIPE && i - PIPE < n) { /* stage 2: fetch the entry the slot names */
            size_t k = i - PIPE;
            struct slot sl = m->slots[h[k % (4 * PIPE)] & mask];
            if (sl.ent >= 0) __builtin_prefetch(&m->ents[sl.ent]);
        }
        if (i >= 2 * PIPE && i - 2 * PIPE < n) { /* stage 3: fetch its key */
            size_t k = i - 2 * PIPE;
            struct slot sl = m->slots[h[k % (4 * PIPE)] & mask];
            if (sl.ent >= 0) __builtin_prefetch(m->ents[sl.ent].key);
        }
        if (i >= 3 * PIPE) { /* compare */
            size_t k = i - 3 * PIPE, slot;
            int64_t e = find(m, keys[k].s, keys[k].n, h[k % (4 * PIPE)], &slot);
            vals[k] = e < 0 ? absent : m->ents[e].val;
        }
    }
}

uint64_t nlp_strmap_hash(const char *key, size_t n) { return nlp_hash(key, n, 0); }

void nlp_strmap_prefetch(const nlp_strmap *m, uint64_t h) { __builtin_prefetch(&m->slots[h & (m->nslots - 1)], 1); }

int64_t *nlp_strmap_slot(nlp_strmap *m, const char *key, size_t n, int *is_new)
{
    return nlp_strmap_slot_h(m, key, n, nlp_hash(key, n, 0), is_new);
}

int64_t *nlp_strmap_slot_h(nlp_strmap *m, const char *key, size_t n, uint64_t h, int *is_new)
{
    if (n > UINT32_MAX || m->n >= INT32_MAX) {
        nlp_error(NLP_ENOMEM, "string map: key or table too large");
        return NULL;
    }
    size_t slot;
    int64_t e = find(m, key, n, h, &slot);
    if (is_new) *is_new = e < 0;
    if (e >= 0) return &m->ents[e].val;
    if ((m->n + 1) * 4 > m->nslots * 3) {
        if (rehash(m, m->nslots * 2)) return NULL;
        find(m, key, n, h, &slot);
    }
    if (nlp_grow(&m->ents, &m->cap, m->n + 1, sizeof *m->ents)) return NULL;
    char *k = nlp_arena_strndup(&m->keys, key, n);
    if (!k) return NULL;
    struct entry *en = &m->ents[m->n];
    en->key = k;
    en->len = (uint32_t)n;
    en->val = 0;
    m->slots[slot] = (struct slot){(uint32_t)h, (int32_t)m->n++};
    return &en->val;
}

int nlp_strmap_put(nlp_strmap *m, const char *key, size_t n, int64_t val)
{
    int64_t *v = nlp_strmap_slot(m, key, n, NULL);
    if (!v) return NLP_ENOMEM;
    *v = val;
    return NLP_OK;
}

const char *nlp_strmap_key(const nlp_strmap *m, size_t i, size_t *n)
{
    if (n) *n = m->ents[i].len;
    return m->ents[i].key;
}

int64_t nlp_strmap_value(const nlp_strmap *m, size_t i) { return m->ents[i].val; }

// --- nlp_idmap

int nlp_idmap_init(nlp_idmap *m, size_t hint)
{
    size_t ns = 1024;
    while (ns < hint * 2) ns *= 2;
    m->keys = nlp_calloc(ns, sizeof *m->keys);
    m->val = nlp_malloc(ns * sizeof *m->val);
    m->mask = ns - 1;
    m->n = 0;
    return m->keys && m->val ? NLP_OK : NLP_ENOMEM;
}

void nlp_idmap_free(nlp_idmap *m)
{
    free(m->keys);
    free(m->val);
    memset(m, 0, sizeof *m);
}

int nlp_idmap_put(nlp_idmap *m, uint64_t key, uint32_t val)
{
    size_t j = nlp_idmap_slot(key + 1, m->mask);
    for (; m->keys[j]; j = (j + 1) & m->mask)
        if (m->keys[j] == key + 1) {
            m->val[j] = val;
            return NLP_OK;
        }
    if ((m->n + 1) * 2 > m->mask + 1) {
        nlp_idmap g;
        if (nlp_idmap_init(&g, m->mask + 1)) {
            nlp_idmap_free(&g);
            return NLP_ENOMEM;
        }
        for (size_t i = 0; i <= m->mask; i++)
            if (m->keys[i]) {
                size_t q = nlp_idmap_slot(m->keys[i], g.mask);
                while (g.keys[q]) q = (q + 1) & g.mask;
                g.keys[q] = m->keys[i];
                g.val[q] = m->val[i];
            }
        g.n = m->n;
        nlp_idmap_free(m);
        *m = g;
        j = nlp_idmap_slot(key + 1, m->mask);
        while (m->keys[j]) j = (j + 1) & m->mask;
    }
    m->keys[j] = key + 1;
    m->val[j] = val;
    m->n++;
    return NLP_OK;
}
