/*
 * squad.h — the metrics of SQuAD v1.1 (Rajpurkar et al. 2016) for
 * extractive question answering, with the official evaluation script's
 * definitions (shared/data/qa/squad_eval.py):
 *
 *   normalize(s)   Python's s.lower() (full Unicode lowercasing, pystr.h),
 *                  every character of string.punctuation (ASCII
 *                  !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~) deleted, the words
 *                  "a", "an", "the" replaced by a space (re's \b(a|an|the)\b:
 *                  a maximal run of word characters, Unicode letters and
 *                  numbers and "_", that is one of them), white space
 *                  collapsed (" ".join(s.split()))
 *   exact match    normalize(prediction) == normalize(gold): 1 or 0
 *   F1             over the normalized strings' space-separated tokens: the
 *                  multiset overlap c; 0 when c = 0, else 2PR/(P+R) with
 *                  P = c/|prediction tokens|, R = c/|gold tokens|
 *   per question   the maximum over its gold answers, for each figure apart
 *
 * so a gold answer that normalizes to nothing ("A", ".") gives exact match
 * 1 and F1 0 against a prediction that does too. Inputs are well-formed
 * UTF-8. Means over questions (and percentages) are the caller's.
 *
 * Not here: finding the predictions (train/span.h).
 */
#ifndef NLP_EVAL_SQUAD_H
#define NLP_EVAL_SQUAD_H

#include <stddef.h>

#include "base/mem.h"

/* normalize(s[0..n)) into out (reset first). 0 or NLP_ENOMEM. */
int nlp_squad_normalize(const char *s, size_t n, nlp_buf *out);

/* Exact match and F1 of a prediction against one gold answer. 0 or
 * NLP_ENOMEM. */
int nlp_squad_score(const char *pred, size_t np, const char *gold, size_t ng, double *em, double *f1);

/* The same, each the maximum over k >= 1 gold answers gold[i] (glen[i]
 * bytes); k = 0 gives 0 and 0. */
int nlp_squad_score_max(const char *pred, size_t np, const char *const *gold, const size_t *glen, int k, double *em,
                        double *f1);

#endif
