/*
 * bleu.h — BLEU exactly as sacreBLEU 2.5 computes it (metrics/bleu.py).
 *
 * Per segment: tokenize hypothesis and references (eval/tokenize.h), count
 * n-grams of orders 1..N (default 4) and clip each hypothesis n-gram count by
 * its largest count in any one reference; the reference length is the one
 * closest to the hypothesis length (the shorter on a tie). The segment's
 * sufficient statistics are
 *   [hyp_len, ref_len, correct_1..correct_N, total_1..total_N].
 * The score comes from the summed statistics (nlp_bleu_compute): the
 * geometric mean of the n-gram precisions times the brevity penalty
 * exp(1 - r/c) (1 when c >= r, 0 when c == 0), with sacreBLEU's smoothing:
 *   exp    a zero precision at order n becomes 100 / (2^k * total_n), k
 *          counting the zero orders so far (NIST, mteval-v13a)
 *   floor  a zero precision becomes 100 * value / total_n (default 0.1)
 *   add-k  orders >= 2 get value added to correct and total (default 1)
 *   none   a zero precision gives log(0) = -9999999999, i.e. a score of 0
 * If no n-gram matches at all, the score is 0 whatever the smoothing. With
 * effective order, the mean runs over the orders up to the last one with a
 * non-zero total (sentence-level BLEU turns it on).
 *
 * Not here: reading files, output formats (eval/report.h).
 */
#ifndef NLP_EVAL_BLEU_H
#define NLP_EVAL_BLEU_H

#include <stddef.h>
#include <stdint.h>

#include "eval/tokenize.h"

#define NLP_BLEU_MAX_ORDER 32

typedef enum nlp_bleu_smooth {
    NLP_BLEU_SMOOTH_EXP,
    NLP_BLEU_SMOOTH_FLOOR,
    NLP_BLEU_SMOOTH_ADDK,
    NLP_BLEU_SMOOTH_NONE,
} nlp_bleu_smooth;

/* NULL-terminated names in enum order: "exp", "floor", "add-k", "none". */
extern const char *const nlp_bleu_smooth_names[];

/* The default smoothing value of a method (0.1 floor, 1 add-k, NAN else). */
double nlp_bleu_smooth_default(nlp_bleu_smooth m);

typedef struct nlp_bleu_params {
    nlp_evtok tokenize;
    int lowercase;
    nlp_bleu_smooth smooth;
    double smooth_value; /* NAN: the method's default */
    int max_order;       /* 1..NLP_BLEU_MAX_ORDER; sacreBLEU's default is 4 */
    int effective_order;
} nlp_bleu_params;

/* sacreBLEU's defaults: 13a, mixed case, exp, order 4, no effective order. */
nlp_bleu_params nlp_bleu_defaults(void);

/* Number of statistics per segment: 2 + 2 * max_order. */
static inline int nlp_bleu_nstats(const nlp_bleu_params *p) { return 2 + 2 * p->max_order; }

typedef struct nlp_bleu_result {
    double score, bp, ratio;
    double sys_len, ref_len;
    int order;
    double counts[NLP_BLEU_MAX_ORDER];     /* after add-k smoothing, as sacreBLEU reports them */
    double totals[NLP_BLEU_MAX_ORDER];
    double precisions[NLP_BLEU_MAX_ORDER]; /* percent */
} nlp_bleu_result;

/* sacreBLEU's BLEU.compute_bleu from summed statistics `stats` (layout as
 * above, p->max_order orders). Never fails. */
void nlp_bleu_compute(const nlp_bleu_params *p, const double *stats, nlp_bleu_result *out);

/* The same for statistics that are float32 sums (eval/signif.h), following
 * numpy 1.x: add-k's additions are rounded to float32. */
void nlp_bleu_compute_f32(const nlp_bleu_params *p, const double *stats, nlp_bleu_result *out);

/* The segment extractor: tokenizer scratch and n-gram counter. */
typedef struct nlp_bleu nlp_bleu;

/* New extractor for params p (copied); NULL on ENOMEM. Free with nlp_bleu_free. */
nlp_bleu *nlp_bleu_new(const nlp_bleu_params *p);
void nlp_bleu_free(nlp_bleu *b);

/* Statistics of one segment (well-formed UTF-8 lines, already stripped of
 * their newline) into stats[0..nstats). Returns 0 or NLP_ENOMEM. */
int nlp_bleu_segment(nlp_bleu *b, const char *hyp, size_t hyp_len, const char *const *refs,
                     const size_t *ref_lens, int nrefs, double *stats);

#endif
