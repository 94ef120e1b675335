/*
 * rng.h — the one random number generator of libnlpipe: xoshiro256**
 * seeded through splitmix64.
 *
 * Every random choice in nlpipe (initialisation, dropout, masking, sampling,
 * shuffling, bootstrap resampling) flows from an nlp_rng seeded from --seed,
 * so the same seed gives the same bytes. The state is four 64-bit words and
 * can be saved into a checkpoint and restored bit-exactly. Streams for
 * parallel workers are split off with nlp_rng_jump() or nlp_rng_split().
 *
 * Not here: cryptographic randomness.
 */
#ifndef NLP_BASE_RNG_H
#define NLP_BASE_RNG_H

#include <stdint.h>

typedef struct nlp_rng {
    uint64_t s[4];
} nlp_rng;

void nlp_rng_seed(nlp_rng *r, uint64_t seed);
uint64_t nlp_rng_u64(nlp_rng *r);
uint32_t nlp_rng_u32(nlp_rng *r);
/* Uniform integer in [0, n) without modulo bias; n > 0. */
uint64_t nlp_rng_below(nlp_rng *r, uint64_t n);
/* Uniform in [0, 1) with 53 (double) or 24 (float) random bits. */
double nlp_rng_double(nlp_rng *r);
float nlp_rng_float(nlp_rng *r);
/* Standard normal (Box-Muller, no cached second value so the state alone
 * determines the stream). */
double nlp_rng_normal(nlp_rng *r);
/* Advances by 2^128 calls: gives non-overlapping streams for workers. */
void nlp_rng_jump(nlp_rng *r);
/* A new generator derived from r and a stream index (r is not advanced). */
nlp_rng nlp_rng_split(const nlp_rng *r, uint64_t stream);

/* splitmix64 step, also useful as an integer mixer. */
uint64_t nlp_splitmix64(uint64_t *state);

#endif
