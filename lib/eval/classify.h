/*
 * classify.h — metrics of a classifier from its confusion matrix: accuracy,
 * per-label precision, recall, F1 and support, macro-F1, and a JSON report.
 *
 * A confusion matrix over L labels is a plain array of L·L counts,
 * cm[g·L + p] = examples of gold label g predicted as p (rows gold, columns
 * predicted, scikit-learn's confusion_matrix layout). It is a plain array,
 * not a type of this module, so that the training layer (train/cls.h),
 * which lies below this one, can fill it.
 *
 * Definitions (scikit-learn's, zero_division=0: a quotient whose
 * denominator is 0 is 0):
 *   accuracy   Σ_k cm[k,k] / Σ cm (NaN for an empty matrix)
 *   precision  tp / (tp + fp)   (tp = cm[k,k], fp = column k minus tp)
 *   recall     tp / (tp + fn)   (fn = row k minus tp)
 *   f1         2·tp / (2·tp + fp + fn), which equals 2·P·R / (P + R)
 *   support    the row sum: gold examples of the label
 *   macro-F1   the mean of the per-label F1 over the labels present in the
 *              gold labels or the predictions (nonzero row or column): what
 *              f1_score(y_true, y_pred, average='macro') computes without a
 *              `labels` argument, since sklearn takes the labels from
 *              unique_labels(y_true, y_pred). A label of the label set that
 *              is neither gold nor predicted anywhere does not count (its F1
 *              would be 0 and would drag the mean down); a label predicted
 *              but never gold counts with F1 0, as in sklearn.
 *
 * Not here: running a model (train/cls.h), reading files.
 */
#ifndef NLP_EVAL_CLASSIFY_H
#define NLP_EVAL_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"

/* One label's figures. */
typedef struct nlp_label_stats {
    double precision, recall, f1;
    uint64_t support;   /* gold examples (row sum) */
    uint64_t predicted; /* predictions of the label (column sum) */
    uint64_t tp;        /* cm[k,k] */
} nlp_label_stats;

/* Counts n (gold, predicted) pairs into cm [L·L] (added to what it holds:
 * zero it first for a fresh matrix). Returns 0, or NLP_EINVAL naming the
 * first index outside [0, L) (cm is then unchanged). */
int nlp_classify_count(uint64_t *cm, int L, const int32_t *gold, const int32_t *pred, size_t n);

/* Σ cm: the examples counted. */
uint64_t nlp_classify_total(const uint64_t *cm, int L);

/* Correct / total; NaN when the matrix is empty. */
double nlp_classify_accuracy(const uint64_t *cm, int L);

/* Figures of label k (0 <= k < L). */
void nlp_classify_label(const uint64_t *cm, int L, int k, nlp_label_stats *out);

/* Macro-F1 over the labels present in gold or predictions (see above);
 * *used (may be NULL) gets how many labels that is. NaN when none is. */
double nlp_classify_macro_f1(const uint64_t *cm, int L, int *used);

/* Appends the report as JSON (two-space indentation, final newline):
 *
 *   {
 *     "examples": 6,
 *     "accuracy": 0.5,
 *     "macro_f1": 0.4444444444444444,
 *     "labels": {
 *       "neg": {"precision": 0.5, "recall": 1.0, "f1": 0.6666666666666666, "support": 2},
 *       ...
 *     },
 *     "confusion": [[2, 0], [2, 2]]
 *   }
 *
 * "labels" lists every label of the set in index order, keyed by
 * names[k] (NULL names: the index as text), including a label neither
 * gold nor predicted (all zeros, left out of macro_f1). "confusion" is cm,
 * rows gold, columns predicted, in the same order. Numbers are Python's
 * repr() of the double (the shortest that reads back the same); NaN
 * (an empty matrix) is null. Label names are escaped, UTF-8 kept. Returns
 * 0 or NLP_ENOMEM. */
int nlp_classify_json(const uint64_t *cm, int L, const char *const *names, nlp_buf *out);

#endif
