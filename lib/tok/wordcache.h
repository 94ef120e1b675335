/*
 * wordcache.h — a bounded memo of word -> token ids, one per thread.
 *
 * Text repeats its words, so a tokenizer asks its model once per distinct
 * word and remembers the answer. The cache is an open-addressing table over
 * two pools (word bytes, ids); when it holds `max_words` words it is
 * emptied and starts again, so memory stays bounded on any input. Words
 * longer than NLP_WORDCACHE_MAX_LEN bytes are not cached.
 *
 * Not thread safe: give each thread its own.
 *
 * Not here: the model that computes the ids.
 */
#ifndef NLP_TOK_WORDCACHE_H
#define NLP_TOK_WORDCACHE_H

#include <stddef.h>
#include <stdint.h>

#define NLP_WORDCACHE_MAX_LEN 256

typedef struct nlp_wordcache nlp_wordcache;

/* New cache for up to max_words words (0 = a default of 131072); NULL on
 * ENOMEM. Free with nlp_wordcache_free. */
nlp_wordcache *nlp_wordcache_new(size_t max_words);
void nlp_wordcache_free(nlp_wordcache *c);

/* The ids cached for word w[0..n) (h = nlp_hash(w, n, 0)), with *nids set,
 * or NULL. The pointer is valid until the next put. */
const int32_t *nlp_wordcache_get(const nlp_wordcache *c, const char *w, size_t n, uint64_t h, size_t *nids);

/* Remembers ids[0..nids) for word w (no-op for long words). Returns 0 or
 * NLP_ENOMEM. */
int nlp_wordcache_put(nlp_wordcache *c, const char *w, size_t n, uint64_t h, const int32_t *ids, size_t nids);

#endif
