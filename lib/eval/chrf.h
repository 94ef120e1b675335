/*
 * chrf.h — chrF and chrF++ exactly as sacreBLEU 2.5 computes them
 * (metrics/chrf.py).
 *
 * Per segment and reference: character n-grams of orders 1..char_order
 * (whitespace removed unless `whitespace`), and with word_order > 0 word
 * n-grams of orders 1..word_order over the words of str.split() where a
 * word longer than one character loses a final ASCII punctuation mark into
 * a word of its own, or else a leading one. For each order the statistics
 * are [hyp n-grams, ref n-grams, matches] (hyp n-grams count 0 when the
 * reference has none of that order); of several references the one with
 * the best segment F-score wins (the first on a tie). The statistics are
 * summed over the corpus and the score is computed from them: by default
 * the F-beta of the precision and recall averaged over the orders where
 * both hyp and ref have n-grams ("effective order"); with eps_smoothing,
 * the mean over all orders of per-order F-beta with 1e-16 standing in for
 * undefined precisions, recalls and F-scores (chrF++.py, NLTK, Moses).
 *
 * Not here: reading files, output formats (eval/report.h).
 */
#ifndef NLP_EVAL_CHRF_H
#define NLP_EVAL_CHRF_H

#include <stddef.h>

typedef struct nlp_chrf_params {
    int char_order; /* default 6 */
    int word_order; /* default 0; 2 is chrF++ */
    int beta;       /* default 2 */
    int lowercase;
    int whitespace;
    int eps_smoothing;
} nlp_chrf_params;

nlp_chrf_params nlp_chrf_defaults(void);

/* Statistics per segment: 3 * (char_order + word_order). */
static inline int nlp_chrf_nstats(const nlp_chrf_params *p) { return 3 * (p->char_order + p->word_order); }

/* The metric's name: "chrF<beta>" followed by word_order '+' signs, into
 * name (at least 32 bytes). */
void nlp_chrf_name(const nlp_chrf_params *p, char *name, size_t size);

/* The score (0..100) from summed statistics. */
double nlp_chrf_compute(const nlp_chrf_params *p, const double *stats);

/* The same for float32 sums (eval/signif.h): divisions in float32, as numpy
 * 1.x does them. */
double nlp_chrf_compute_f32(const nlp_chrf_params *p, const double *stats);

typedef struct nlp_chrf nlp_chrf;

/* New extractor for params p (copied); NULL on ENOMEM. Free with nlp_chrf_free. */
nlp_chrf *nlp_chrf_new(const nlp_chrf_params *p);
void nlp_chrf_free(nlp_chrf *c);

/* Statistics of one segment into stats[0..nstats). Returns 0 or NLP_ENOMEM. */
int nlp_chrf_segment(nlp_chrf *c, const char *hyp, size_t hyp_len, const char *const *refs,
                     const size_t *ref_lens, int nrefs, double *stats);

#endif
