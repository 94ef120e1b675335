/*
 * hash.h — a fast 64-bit byte-string hash and a byte-string → int64 map.
 *
 * nlp_hash() folds 64-bit words with a 128-bit multiply (the "mum" idea);
 * it is for hash tables, not for security or on-disk formats.
 *
 * nlp_strmap: open addressing with linear probing, keys copied into an
 * arena, insertion order kept (iteration visits keys in the order they were
 * first inserted, which makes outputs deterministic). Keys are byte strings
 * (may contain NUL).
 *
 * nlp_idmap: open addressing from a 64-bit integer key (any value but
 * UINT64_MAX) to a 32-bit value, no deletion: the index behind the subword
 * trainers' pair records and alphabets. A plain struct, so that lookups
 * inline into hot loops.
 *
 * Not here: specialised tables (n-gram counts, pair records) that hot loops
 * need; those live beside their users.
 */
#ifndef NLP_BASE_HASH_H
#define NLP_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t nlp_hash(const void *p, size_t n, uint64_t seed);
/* Mixes one 64-bit integer (for integer keys). */
static inline uint64_t nlp_hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

typedef struct nlp_strmap nlp_strmap;

/* New empty map sized for about `hint` keys; NULL on ENOMEM. Free with
 * nlp_strmap_free. */
nlp_strmap *nlp_strmap_new(size_t hint);
void nlp_strmap_free(nlp_strmap *m);
/* A copy with the same keys, values and order; NULL on ENOMEM. */
nlp_strmap *nlp_strmap_clone(const nlp_strmap *m);

size_t nlp_strmap_size(const nlp_strmap *m);

/* 1 and *val set if the key is present, 0 if not. */
int nlp_strmap_get(const nlp_strmap *m, const char *key, size_t n, int64_t *val);

/* A string that is not NUL-terminated */
typedef struct nlp_span {
    const char *s;
    size_t n;
} nlp_span;

/* vals[i] = the value of keys[i], or `absent`, for i < n: the same as n
 * calls of nlp_strmap_get, several times faster on a large map. */
void nlp_strmap_get_many(const nlp_strmap *m, const nlp_span *keys, size_t n, int64_t *vals, int64_t absent);

/* Inserts or overwrites. Returns 0 or NLP_ENOMEM. */
int nlp_strmap_put(nlp_strmap *m, const char *key, size_t n, int64_t val);

/* Get-or-insert: returns a pointer to the value (new keys start at 0, with
 * *is_new = 1), or NULL on ENOMEM. The pointer is valid until the next insert. */
int64_t *nlp_strmap_slot(nlp_strmap *m, const char *key, size_t n, int *is_new);

/* The same with the key's hash given: nlp_strmap_hash(key, n). With
 * nlp_strmap_prefetch(m, hash) a caller that knows its next keys starts
 * fetching their slots early (a large map's slots are not in cache). */
int64_t *nlp_strmap_slot_h(nlp_strmap *m, const char *key, size_t n, uint64_t hash, int *is_new);
uint64_t nlp_strmap_hash(const char *key, size_t n);
void nlp_strmap_prefetch(const nlp_strmap *m, uint64_t hash);

/* The i-th key in insertion order, 0 <= i < size. The key is NUL-terminated
 * and owned by the map. */
const char *nlp_strmap_key(const nlp_strmap *m, size_t i, size_t *n);
int64_t nlp_strmap_value(const nlp_strmap *m, size_t i);

typedef struct nlp_idmap {
    uint64_t *keys; /* key + 1; 0 = empty */
    uint32_t *val;
    size_t mask, n;
} nlp_idmap;

/* Empty map sized for about `hint` keys (m's old contents are not freed).
 * Returns 0 or NLP_ENOMEM (m is then safe to free). */
int nlp_idmap_init(nlp_idmap *m, size_t hint);
void nlp_idmap_free(nlp_idmap *m);

static inline size_t nlp_idmap_slot(uint64_t k, size_t mask)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

/* Value of key, or -1. */
static inline long nlp_idmap_find(const nlp_idmap *m, uint64_t key)
{
    for (size_t j = nlp_idmap_slot(key + 1, m->mask); m->keys[j]; j = (j + 1) & m->mask)
        if (m->keys[j] == key + 1) return m->val[j];
    return -1;
}

/* Sets key to val (inserting it if new). Returns 0 or NLP_ENOMEM. */
int nlp_idmap_put(nlp_idmap *m, uint64_t key, uint32_t val);

#endif
