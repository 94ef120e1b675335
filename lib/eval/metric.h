/*
 * metric.h — BLEU, chrF, TER and exact match behind one interface: per-segment
 * sufficient statistics, a score from summed statistics, and sacreBLEU's
 * signature. Corpus scores, bootstrap intervals and paired tests
 * (eval/signif.h) are all sums of segment statistics fed to
 * nlp_metric_score.
 *
 * Not here: the metrics themselves (eval/bleu.h, eval/chrf.h, eval/ter.h),
 * formatting (eval/report.h).
 */
#ifndef NLP_EVAL_METRIC_H
#define NLP_EVAL_METRIC_H

#include <stddef.h>

#include "base/mem.h"
#include "eval/bleu.h"
#include "eval/chrf.h"
#include "eval/ter.h"

/* The version sacreBLEU's signatures carry for our numbers: sacreBLEU 2.5.1's
 * definitions, computed by nlpipe (see man bleu, SIGNATURE). */
#define NLP_SACREBLEU_VERSION "2.5.1+nlpipe"

typedef enum nlp_metric_kind {
    NLP_METRIC_BLEU,
    NLP_METRIC_CHRF,
    NLP_METRIC_TER,
    NLP_METRIC_EXACT,
} nlp_metric_kind;

/* Exact match (the accuracy of text-to-text classifiers, T5's way): a
 * hypothesis line is correct when it equals a reference line of the same
 * segment (any of several), both with surrounding Python whitespace
 * stripped (str.strip()), and with `lowercase` both lowercased as Python's
 * str.lower() does. Two empty lines match. Statistics per segment:
 * correct (0 or 1) and lines (1); the score is 100 * correct / lines, the
 * percentage of lines matched. */
typedef struct nlp_exact_params {
    int lowercase;
} nlp_exact_params;
#define NLP_EXACT_NSTATS 2

typedef struct nlp_metric_params {
    nlp_metric_kind kind;
    nlp_bleu_params bleu;
    nlp_chrf_params chrf;
    nlp_ter_params ter;
    nlp_exact_params exact;
} nlp_metric_params;

/* A score as sacreBLEU's Score objects hold it. */
typedef struct nlp_score {
    char name[32];      /* "BLEU", "chrF2", "chrF2++", "TER" */
    double score;
    char verbose[400];  /* BLEU's "p1/p2/p3/p4 (BP = ...)"; "" otherwise */
    double mean, ci;    /* bootstrap estimate; shown when mean > 0 (-1 = none) */
    nlp_bleu_result bleu; /* BLEU's details */
    int counted;           /* exact match: 1, with the lines matched and scored */
    double correct, lines;
} nlp_score;

/* A signature: ordered key/value pairs with short names. */
#define NLP_SIG_MAX 16
typedef struct nlp_sig {
    int n;
    struct {
        const char *key, *abbr;
        char value[40];
    } kv[NLP_SIG_MAX];
} nlp_sig;

/* Appends a pair (value printf-formatted, truncated to 39 bytes). */
void nlp_sig_add(nlp_sig *s, const char *key, const char *abbr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "key:value|..." (abbreviated keys with short_form) appended to out. */
int nlp_sig_format(const nlp_sig *s, int short_form, nlp_buf *out);

/* Resampling information for a signature: bs/ar counts and the seed as
 * sacreBLEU prints it; 0 or NULL leave the key out. */
typedef struct nlp_sig_test {
    long bs, ar;
    const char *seed;
} nlp_sig_test;

typedef struct nlp_metric nlp_metric;

/* A new metric (params copied); NULL on ENOMEM. Free with nlp_metric_free. */
nlp_metric *nlp_metric_new(const nlp_metric_params *p);
void nlp_metric_free(nlp_metric *m);

const nlp_metric_params *nlp_metric_params_of(const nlp_metric *m);

/* Statistics per segment. */
int nlp_metric_nstats(const nlp_metric *m);

/* The metric's display name ("BLEU", "chrF2++", "TER", "Exact"). */
const char *nlp_metric_name(const nlp_metric *m);

/* Statistics of one segment into stats[0..nstats). Returns 0 or NLP_ENOMEM. */
int nlp_metric_segment(nlp_metric *m, const char *hyp, size_t hyp_len, const char *const *refs,
                       const size_t *ref_lens, int nrefs, double *stats);

/* The score from summed statistics (mean/ci set to -1). */
void nlp_metric_score(const nlp_metric *m, const double *stats, nlp_score *out);

/* sacreBLEU's signature for this metric with nrefs references and optional
 * resampling information (test may be NULL). */
void nlp_metric_signature(const nlp_metric *m, int nrefs, const nlp_sig_test *test, nlp_sig *out);

#endif
