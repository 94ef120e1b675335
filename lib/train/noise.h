/*
 * noise.h — the corruptions of denoising pretraining for the
 * encoder-decoder, on one example's ids: T5's span corruption, BART's text
 * infilling and sentence permutation.
 *
 * T5 (Raffel et al. 2020, section 3.1.4; random_spans_noise_mask of the T5
 * code). Of n tokens, k = round(n * density) are noise (at least 1, at most
 * n - 1); they form s = round(k / mean_span) spans (at least 1). The k noise
 * tokens and the n - k others are each cut into s runs of at least one token
 * by a random segmentation (the s - 1 cuts uniform among the k - 1, resp.
 * n - k - 1, places between tokens), and the runs alternate, kept first:
 *
 *     kept_0 noise_0 kept_1 noise_1 ... kept_s-1 noise_s-1
 *
 * (so the text ends in noise, as T5's does); s is at most k and n - k. A
 * text of fewer than 2 tokens has no noise (T5 pads it to 2 and cuts the
 * mask back, which leaves none).
 * The corrupted input is the kept runs with each noise run replaced by its
 * sentinel, then EOS; the target is each sentinel followed by its run, a
 * final sentinel, then EOS:
 *
 *     input   kept_0 <S0> kept_1 <S1> ... kept_s-1 <Ss-1> EOS
 *     target  <S0> noise_0 <S1> noise_1 ... <Ss-1> noise_s-1 <Ss> EOS
 *
 * (T5's sentinels are <extra_id_0>, <extra_id_1>, ...).
 *
 * BART (Lewis et al. 2020, section 2.2; fairseq's DenoisingDataset with
 * replace_length 1). Text infilling masks m = ceil(n * ratio) tokens: span
 * lengths are drawn from Poisson(lambda) until they sum to m or more (the
 * last is cut to fit); a span of length 0 inserts a mask. The spans are laid
 * out in a random order, separated by runs of the n - m kept tokens cut at
 * random (empty runs allowed: two spans may meet), and each span is replaced
 * by one mask token. Unlike fairseq, the spans never overlap, so exactly m
 * tokens are masked (fairseq's may merge and mask fewer), and a span may
 * start inside a word (fairseq masks whole words of GPT-2's BPE). Sentence
 * permutation shuffles the sentences of a text (all of them, as BART's
 * best model did). The target is the original text, then EOS.
 *
 * Everything random comes from the caller's generator, so an example's
 * corruption is a function of (generator state, ids): a data loader that
 * seeds a generator per (seed, epoch, example) draws the same corruptions
 * on resume.
 */
#ifndef NLP_TRAIN_NOISE_H
#define NLP_TRAIN_NOISE_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "tok/encoding.h"

/* T5's counts for a text of n tokens: *noise = k, *spans = s as above (0
 * and 0 for n < 2); density in (0, 1), mean_span >= 1. The corrupted input
 * is then n - k + s tokens and the target k + s + 1, each with EOS one
 * more. */
void nlp_noise_t5_counts(size_t n, double density, double mean_span, size_t *noise, size_t *spans);

/* T5's noise mask of n tokens: mask[i] = 1 for a noise token. *spans gets
 * the number of noise runs (0 for a text too short to have any). density in
 * (0, 1), mean_span >= 1. Returns 0, NLP_EINVAL (bad parameters) or
 * NLP_ENOMEM. */
int nlp_noise_t5_mask(nlp_rng *r, size_t n, double density, double mean_span, uint8_t *mask, size_t *spans);

/* T5's input and target from ids[0..n) and its noise mask: the i-th noise
 * run becomes sentinel[i]. The input and target are appended to *in and
 * *tgt; eos < 0 appends no EOS to either (for pairs whose EOS the batches
 * add: mt.h). NLP_EINVAL when the mask has more runs than n_sentinel - 1
 * (the target needs one more to close it); NLP_ENOMEM. */
int nlp_noise_t5_corrupt(const int32_t *ids, size_t n, const uint8_t *mask, const int32_t *sentinel,
                         size_t n_sentinel, int32_t eos, nlp_ids *in, nlp_ids *tgt);

/* A draw from Poisson(lambda), lambda in [0, 100] (Knuth's product of
 * uniforms, so it costs about lambda draws). */
unsigned nlp_noise_poisson(nlp_rng *r, double lambda);

/* BART's text infilling of ids[0..n), appended to *out (no EOS): ratio in
 * [0, 1], lambda in (0, 100]. *masked gets the number of tokens masked (m)
 * and *spans the number of mask tokens (both may be NULL). Returns 0,
 * NLP_EINVAL or NLP_ENOMEM. */
int nlp_noise_bart_infill(nlp_rng *r, const int32_t *ids, size_t n, double ratio, double lambda, int32_t mask_id,
                          nlp_ids *out, size_t *masked, size_t *spans);

/* BART's sentence permutation: the sentences of ids, sentence i being
 * ids[start[i] .. start[i+1]) (start[0] = 0, start[n_sent] = the length,
 * increasing), appended to *out in a uniformly random order (Fisher-Yates).
 * Returns 0, NLP_EINVAL (bad starts) or NLP_ENOMEM. */
int nlp_noise_permute(nlp_rng *r, const int32_t *ids, const size_t *start, size_t n_sent, nlp_ids *out);

#endif
