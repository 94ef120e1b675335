/*
 * vocab.h — a tokenizer vocabulary: token strings <-> integer ids.
 *
 * Ids are 0..size-1; a vocabulary read from a file may have holes (an id
 * with no token), which nlp_vocab_token() reports as NULL. Token strings are
 * byte strings (normally UTF-8, as the file spells them: GPT-2's mapped
 * characters 'Ġ' and all), copied into the vocabulary's own storage.
 *
 * Not here: what the tokens mean (models), special-token flags (added.h).
 */
#ifndef NLP_TOK_VOCAB_H
#define NLP_TOK_VOCAB_H

#include "base/hash.h"

#include <stddef.h>
#include <stdint.h>

typedef struct nlp_vocab nlp_vocab;

/* File readers refuse an id that leaves more than this many ids without a
 * token: the tables are indexed by id, so one far-off id in a corrupt file
 * would cost memory (and time) for every id below it. */
#define NLP_VOCAB_MAX_HOLES ((size_t)1 << 20)

/* New empty vocabulary sized for about `hint` tokens; NULL on ENOMEM.
 * Free with nlp_vocab_free. */
nlp_vocab *nlp_vocab_new(size_t hint);
void nlp_vocab_free(nlp_vocab *v);

/* A deep copy, or NULL on ENOMEM. */
nlp_vocab *nlp_vocab_clone(const nlp_vocab *v);

/* Appends token s[0..n) with id = size. If the token is already present,
 * nothing is added and *id gets the existing id (return 0 either way; *id may
 * be NULL). Returns 0 or NLP_ENOMEM. */
int nlp_vocab_add(nlp_vocab *v, const char *s, size_t n, int32_t *id);

/* Puts token s[0..n) at a given id (0 <= id < 2^31-1), growing the
 * vocabulary with holes as needed. Returns 0, NLP_EFORMAT if the id already
 * holds a token or the token already has another id (the message names both),
 * or NLP_ENOMEM. */
int nlp_vocab_set(nlp_vocab *v, int32_t id, const char *s, size_t n);

/* Id of token s[0..n), or -1. */
int32_t nlp_vocab_find(const nlp_vocab *v, const char *s, size_t n);
/* nlp_vocab_set of toks[i] at ids[i] for i < n, in order, faster (the next
 * tokens' slots are fetched ahead); on an error, *failed is the index. */
int nlp_vocab_set_many(nlp_vocab *v, const int32_t *ids, const nlp_span *toks, size_t n, size_t *failed);
/* ids[i] = nlp_vocab_find of keys[i], for i < n: faster than one by one
 * (the lookups overlap their cache misses). */
void nlp_vocab_find_many(const nlp_vocab *v, const nlp_span *keys, size_t n, int32_t *ids);

/* Token of id (NUL-terminated, owned by v) and its length, or NULL for an id
 * out of range or a hole. */
const char *nlp_vocab_token(const nlp_vocab *v, int32_t id, size_t *n);

/* 1 + the largest id holding a token (0 when empty). */
size_t nlp_vocab_size(const nlp_vocab *v);
/* The tables behind nlp_vocab_token, for loops over many ids: tok[id]
 * (NULL for a hole) and len[id], id < nlp_vocab_size; valid until the
 * vocabulary changes. */
void nlp_vocab_arrays(const nlp_vocab *v, const char *const **tok, const uint32_t **len);

/* Number of tokens (size minus holes). */
size_t nlp_vocab_count(const nlp_vocab *v);

#endif
