/*
 * signif.h — sacreBLEU's statistical tests, with its random draws: a
 * bootstrap confidence interval for one system (--confidence) and paired
 * bootstrap resampling and approximate randomization between a baseline
 * and other systems (--paired-bs, --paired-ar).
 *
 * sacreBLEU draws with numpy.random.default_rng(seed): a PCG64 generator
 * (XSL-RR 128/64) seeded through numpy's SeedSequence. The same generator
 * is implemented here, with numpy's Generator.choice(n, size) (32-bit
 * Lemire rejection on the generator's buffered 32-bit outputs when n <=
 * 2^32, 64-bit Lemire above) and Generator.integers(2, size, dtype=bool)
 * (one bit of a buffered 32-bit output per draw), so the resamples are the
 * ones sacreBLEU makes for the same seed (SACREBLEU_SEED, default 12345).
 *
 * Resampled statistics are summed in float32, as numpy sums sacreBLEU's
 * float32 arrays, and scored with numpy 1.x's promotion rules (chrF's
 * per-order precision and recall and TER's ratio rounded to float32); numpy
 * 2 keeps more of that arithmetic in float32, so with numpy 2 the last
 * digits of means and intervals can differ.
 *
 * Not here: the metrics (eval/metric.h).
 */
#ifndef NLP_EVAL_SIGNIF_H
#define NLP_EVAL_SIGNIF_H

#include <stddef.h>
#include <stdint.h>

#include "eval/metric.h"

typedef struct nlp_pcg64 {
    unsigned __int128 state, inc;
    int has32;
    uint32_t u32;
} nlp_pcg64;

/* numpy.random.default_rng(seed) for 0 <= seed < 2^64. */
void nlp_pcg64_seed(nlp_pcg64 *r, uint64_t seed);
uint64_t nlp_pcg64_next64(nlp_pcg64 *r);
uint32_t nlp_pcg64_next32(nlp_pcg64 *r);

/* Generator.choice(n, size=count) (n >= 1): count indices in [0, n). */
void nlp_pcg64_choice(nlp_pcg64 *r, uint64_t n, size_t count, uint32_t *out);

/* Generator.integers(2, size=count, dtype=bool). */
void nlp_pcg64_bools(nlp_pcg64 *r, size_t count, unsigned char *out);

/* The score of summed float32 statistics under numpy 1.x's rules. */
double nlp_signif_score_f32(const nlp_metric *m, const float *stats);

/* numpy's mean of x[0..n) (pairwise summation) and Python's
 * statistics.mean (correctly rounded). */
double nlp_np_mean(const double *x, size_t n);
double nlp_py_mean(const double *x, size_t n);

/* Segment statistics of one system: nseg x nstats, row-major. */
typedef struct nlp_segstats {
    size_t nseg;
    int nstats;
    const double *v;
} nlp_segstats;

/* sacreBLEU's _bootstrap_resample + estimate_ci: n_samples resamples drawn
 * with `seed`; *mean and *ci (half the width of the central 95%) of their
 * scores, with Python's statistics.mean (py_mean) or numpy's mean.
 * Returns 0 or NLP_ENOMEM. */
int nlp_signif_bootstrap(const nlp_metric *m, const nlp_segstats *st, long n_samples, uint64_t seed, int py_mean,
                         double *mean, double *ci);

/* Paired bootstrap resampling of system `sys` against baseline `bl` (same
 * segments): the p-value, and the system's mean and ci. */
int nlp_signif_paired_bs(const nlp_metric *m, const nlp_segstats *bl, const nlp_segstats *sys, long n_samples,
                         uint64_t seed, double *p, double *mean, double *ci);

/* Paired approximate randomization: the p-value. */
int nlp_signif_paired_ar(const nlp_metric *m, const nlp_segstats *bl, const nlp_segstats *sys, long n_trials,
                         uint64_t seed, double *p);

#endif
