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

static inline uint64_t rd_tail(const unsigned char *p, size_t n)
{
    /* n in 1..7 */
    uint64_t v = 0;
    memcpy(&v, p, n);
    return v;
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
    uint32_t hash32;
    int64_t val;
};

struct nlp_strmap {
    struct entry *ents; /* insertion order */
    size_t n, cap;
    int32_t *slots;     /* index into ents, -1 empty */
    size_t nslots;      /* power of two */
    nlp_arena keys;
};

static int rehash(nlp_strmap *m, size_t nslots)
{
    int32_t *s = nlp_malloc(nslots * sizeof *s);
    if (!s) return NLP_ENOMEM;
    memset(s, 0xff, nslots * sizeof *s);
    for (size_t i = 0; i < m->n; i++) {
        size_t j = m->ents[i].hash32 & (nslots - 1);
        while (s[j] >= 0) j = (j + 1) & (nslots - 1);
        s[j] = (int32_t)i;
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
    if (rehash(m, ns)) {
        free(m);
        return NULL;
    }
    return m;
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
        int32_t e = m->slots[j];
        if (e < 0) break;
        const struct entry *en = &m->ents[e];
        if (en->hash32 == (uint32_t)h && en->len == n && memcmp(en->key, key, n) == 0) {
            *slot = j;
            return e;
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

int64_t *nlp_strmap_slot(nlp_strmap *m, const char *key, size_t n, int *is_new)
{
    if (n > UINT32_MAX || m->n >= INT32_MAX) {
        nlp_error(NLP_ENOMEM, "string map: key or table too large");
        return NULL;
    }
    uint64_t h = nlp_hash(key, n, 0);
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
    en->hash32 = (uint32_t)h;
    en->val = 0;
    m->slots[slot] = (int32_t)m->n++;
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
