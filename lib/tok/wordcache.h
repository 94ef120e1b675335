/*
 * wordcache.h — a bounded memo of word -> token ids, one per thread.
 *
 * Text repeats its words, so a tokenizer asks its model once per distinct
 * word and remembers the answer. The cache is an open-addressing index over
 * entries in the order words first came, with two pools for long words and
 * long id lists (wordcache.c); when it holds `max_words` words it is
 * emptied and starts again, so memory stays bounded on any input (room for
 * max_words entries is reserved at once, its pages made as entries come).
 * Words longer than NLP_WORDCACHE_MAX_LEN bytes are not cached.
 *
 * Not thread safe: give each thread its own.
 *
 * Not here: the model that computes the ids.
 */
#ifndef NLP_TOK_WORDCACHE_H
#define NLP_TOK_WORDCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/hash.h"

#define NLP_WORDCACHE_MAX_LEN 256

typedef struct nlp_wordcache nlp_wordcache;

/* a[0..n) == b[0..n): words of up to 16 bytes with two overlapping loads of
 * each (no call), longer ones with memcmp. */
static inline int nlp_word_eq(const char *a, const char *b, size_t n)
{
    if (n > 16) return memcmp(a, b, n) == 0;
    if (n >= 8) {
        uint64_t x, y, z, w;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        memcpy(&z, a + n - 8, 8);
        memcpy(&w, b + n - 8, 8);
        return x == y && z == w;
    }
    if (n >= 4) {
        uint32_t x, y, z, w;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        memcpy(&z, a + n - 4, 4);
        memcpy(&w, b + n - 4, 4);
        return x == y && z == w;
    }
    return n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
}

/* Hash of a word for word tables: two overlapping loads and one multiply
 * for the usual short word, nlp_hash for longer ones. Never 0. */
static inline uint64_t nlp_wordcache_hash(const char *w, size_t n)
{
    if (n > 16) return nlp_hash(w, n, 0) | 1;
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        memcpy(&a, w, 8);
        memcpy(&b, w + n - 8, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, w, 4);
        memcpy(&y, w + n - 4, 4);
        a = x;
        b = y;
    } else if (n > 0) {
        a = (uint64_t)(uint8_t)w[0] | (uint64_t)(uint8_t)w[n / 2] << 8 | (uint64_t)(uint8_t)w[n - 1] << 16;
    }
    __uint128_t r = (__uint128_t)(a ^ 0xa0761d6478bd642full) * (b ^ n ^ 0xe7037ed1a0b428dbull);
    return ((uint64_t)r ^ (uint64_t)(r >> 64)) | 1;
}

/* New cache for up to max_words words (0 = a default of 131072); NULL on
 * ENOMEM. Free with nlp_wordcache_free. */
nlp_wordcache *nlp_wordcache_new(size_t max_words);
void nlp_wordcache_free(nlp_wordcache *c);

/* The ids cached for word w[0..n) (h = nlp_wordcache_hash(w, n)), with *nids set,
 * or NULL. The pointer is valid until the next put. */
const int32_t *nlp_wordcache_get(const nlp_wordcache *c, const char *w, size_t n, uint64_t h, size_t *nids);

/* Remembers ids[0..nids) for word w (no-op for long words). Returns 0 or
 * NLP_ENOMEM. */
int nlp_wordcache_put(nlp_wordcache *c, const char *w, size_t n, uint64_t h, const int32_t *ids, size_t nids);

#endif
