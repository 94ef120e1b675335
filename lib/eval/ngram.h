/*
 * ngram.h — n-gram statistics for BLEU and chrF: sequences of units (words
 * or characters) and clipped n-gram matches between a hypothesis and its
 * references, exact and without a per-token malloc.
 *
 * A unit is a byte span with a 64-bit hash; two units are equal when their
 * bytes are equal (the hash only speeds up the comparison, so collisions
 * never change a count). An n-gram of order k is k consecutive units.
 *
 * Use per segment:
 *   nlp_ngrams_load(g, hyp, K)     distinct n-grams of orders 1..K of hyp
 *   nlp_ngrams_probe(g, ref, m)    m[k-1] += sum over n-grams of order k of
 *                                  min(count in hyp, count in ref)  (chrF)
 *   ... once per reference ...
 *   nlp_ngrams_clipped(g, c)       c[k-1] = sum of min(count in hyp,
 *                                  max over the probed refs)        (BLEU)
 * The counter keeps pointers to hyp's units: hyp must stay alive and
 * unchanged until the next load.
 *
 * Not here: tokenization (eval/tokenize.h) and scores (eval/bleu.h,
 * eval/chrf.h).
 */
#ifndef NLP_EVAL_NGRAM_H
#define NLP_EVAL_NGRAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct nlp_unit {
    uint64_t hash;
    const char *p; /* not owned */
    uint32_t len;
} nlp_unit;

/* A growable array of units; zero-initialize, free with nlp_units_free. */
typedef struct nlp_units {
    nlp_unit *u;
    size_t n, cap;
} nlp_units;

void nlp_units_free(nlp_units *u);

/* Replaces u's content with the Python-whitespace-separated tokens of s.
 * Returns 0 or NLP_ENOMEM. */
int nlp_units_words(nlp_units *u, const char *s, size_t n);

/* Replaces u's content with the code points of well-formed UTF-8 s; with
 * skip_space, Python whitespace characters are left out (chrF's
 * ''.join(s.split())). Returns 0 or NLP_ENOMEM. */
int nlp_units_chars(nlp_units *u, const char *s, size_t n, int skip_space);

/* Appends one unit for the bytes [p, p+len). Returns 0 or NLP_ENOMEM. */
int nlp_units_push(nlp_units *u, const char *p, size_t len);

/* 1 if the units are equal (same bytes). */
static inline int nlp_unit_eq(const nlp_unit *a, const nlp_unit *b)
{
    return a->hash == b->hash && a->len == b->len && (a->p == b->p || memcmp(a->p, b->p, a->len) == 0);
}

/* Largest n-gram order the counter accepts. */
#define NLP_NGRAM_MAX_ORDER 64

typedef struct nlp_ngrams nlp_ngrams;

/* A new counter, NULL on ENOMEM. Free with nlp_ngrams_free. */
nlp_ngrams *nlp_ngrams_new(void);
void nlp_ngrams_free(nlp_ngrams *g);

/* Loads hyp's n-grams of orders 1..max_order (1 <= max_order <=
 * NLP_NGRAM_MAX_ORDER) and forgets earlier probes. Returns 0 or NLP_ENOMEM. */
int nlp_ngrams_load(nlp_ngrams *g, const nlp_units *hyp, int max_order);

/* Counts ref against the loaded hypothesis; adds the per-order matches
 * (sum of min(hyp count, ref count)) to match[0..max_order-1]. */
void nlp_ngrams_probe(nlp_ngrams *g, const nlp_units *ref, int64_t *match);

/* BLEU's clipped counts over all refs probed since the load:
 * correct[k-1] = sum over order-k n-grams of min(hyp count, max ref count). */
void nlp_ngrams_clipped(const nlp_ngrams *g, int64_t *correct);

#endif
