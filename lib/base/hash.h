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
 * Not here: specialised tables (n-gram counts, pair counts) that hot loops
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

size_t nlp_strmap_size(const nlp_strmap *m);

/* 1 and *val set if the key is present, 0 if not. */
int nlp_strmap_get(const nlp_strmap *m, const char *key, size_t n, int64_t *val);

/* Inserts or overwrites. Returns 0 or NLP_ENOMEM. */
int nlp_strmap_put(nlp_strmap *m, const char *key, size_t n, int64_t val);

/* Get-or-insert: returns a pointer to the value (new keys start at 0, with
 * *is_new = 1), or NULL on ENOMEM. The pointer is valid until the next insert. */
int64_t *nlp_strmap_slot(nlp_strmap *m, const char *key, size_t n, int *is_new);

/* The i-th key in insertion order, 0 <= i < size. The key is NUL-terminated
 * and owned by the map. */
const char *nlp_strmap_key(const nlp_strmap *m, size_t i, size_t *n);
int64_t nlp_strmap_value(const nlp_strmap *m, size_t i);

#endif
