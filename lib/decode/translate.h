/*
 * translate.h — translating a list of source sentences with an
 * encoder-decoder: greedy or beam search over batches of sentences, each
 * batch encoded once and decoded over one KV cache.
 *
 * Sources are given as they are fed to the encoder (the caller appends EOS
 * to tokenized text; the parity fixtures give complete sources). Sentences
 * are decoded in order of length, `batch` at a time, and each one's result
 * is what it would be translated alone: its maximum length is its own
 * (a·len + b), a batch's other rows never reach it (padding is masked), and
 * with batch_invariant the matrix products take the same path whatever the
 * number of rows (nn/gemm.h), so the same sentence gets the same tokens
 * whatever the batch size or thread count.
 *
 * Greedy is beam search with one beam (the argmax of the log-probabilities).
 *
 * Not here: tokenization and text (the tools), the search itself (decode.h).
 */
#ifndef NLP_DECODE_TRANSLATE_H
#define NLP_DECODE_TRANSLATE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "tok/encoding.h"

typedef struct nlp_translate_opts {
    int beams;          /* 1 = greedy */
    double alpha;       /* GNMT length penalty ((5 + len)/6)^alpha; 0 = none */
    double len_a;       /* at most len_a · source length + len_b new tokens... */
    int len_b;
    int max_len;        /* ...or exactly this many at most, when > 0 */
    int nbest;          /* hypotheses per sentence (<= beams; 0 = 1) */
    int batch;          /* sentences decoded together */
    int vocab_limit;    /* > 0: only target ids below it are produced (nlp_beam_opts); 0 = all */
} nlp_translate_opts;

nlp_translate_opts nlp_translate_defaults(void);

/* Translates src[0..n): hyp[i·nb + j] (nb = max(1, nbest)) gets sentence
 * i's j-th best hypothesis (no BOS, no EOS); score[i·nb + j] its summed
 * log-probability (EOS included) divided by the length penalty (may be
 * NULL). An empty source gets an empty hypothesis and score 0, undecoded.
 * Errors: NLP_EINVAL (not an encoder-decoder), NLP_EDATA (an id outside the
 * source vocabulary, a source longer than the model's positions),
 * NLP_ENOMEM. */
int nlp_translate(nlp_model *m, const nlp_ids *src, size_t n, const nlp_translate_opts *o, nlp_ids *hyp,
                  float *score);

#endif
