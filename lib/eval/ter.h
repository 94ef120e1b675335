/*
 * ter.h — TER (translation edit rate) exactly as sacreBLEU 2.5 computes it
 * (metrics/ter.py, metrics/lib_ter.py, tokenizers/tokenizer_ter.py), which
 * reimplements Tercom.
 *
 * Tokenization ("tercom"): lowercase unless case_sensitive; with
 * `normalized`, the 13a entity and punctuation passes plus Tercom's
 * possessive rule ("'s" split off), and with asian_support also spaces
 * around CJK ideographs, strokes, radicals, compatibility forms, U+3200..
 * U+3F22 and CJK/full-width punctuation; with no_punct, the characters
 * .,?:;!"() are removed (and CJK/full-width punctuation with
 * asian_support); then a split on whitespace.
 *
 * Edit distance with shifts: greedily apply the block shift (at most 10
 * words, moved at most 50 positions) that lowers the word-level Levenshtein
 * distance most, ranking candidates as Tercom does (gain, then longer, then
 * earlier start, then earlier target), until no shift helps or 1,000
 * candidates have been tried in total; edits = shifts + final distance.
 * The Levenshtein distance is sacreBLEU's beam version: only cells within
 * 25 (or more for very unequal lengths) of the length-scaled diagonal are
 * computed (and stored: memory grows with the words, not their square),
 * with its preference order on ties, which decides the alignment that
 * picks shift candidates.
 *
 * Segment statistics are [edits with the best reference, mean reference
 * length]; the score is 100 * sum(edits) / sum(lengths) (100 if the
 * references are empty and there are edits, 0 if both are empty).
 *
 * Not here: reading files, output formats (eval/report.h).
 */
#ifndef NLP_EVAL_TER_H
#define NLP_EVAL_TER_H

#include <stddef.h>

#include "base/mem.h"

typedef struct nlp_ter_params {
    int normalized;
    int no_punct;
    int asian_support;
    int case_sensitive;
} nlp_ter_params;

#define NLP_TER_NSTATS 2

/* The most words a hypothesis or reference may have for TER (after its
 * tokenization). Memory is O(words x beam), but the time is about words x
 * beam x 1,000 shift candidates: 10,000 words take seconds, 20,000 half a
 * minute. A longer segment is NLP_EDATA. */
#define NLP_TER_MAX_WORDS 10000

/* The score from summed statistics [edits, ref length]. */
double nlp_ter_compute(const double *stats);

/* The tercom tokenizer: the tokens of s joined by single spaces, appended
 * to out. tmp is scratch. Returns 0 or NLP_ENOMEM. */
int nlp_ter_tokenize(const nlp_ter_params *p, const char *s, size_t n, nlp_buf *out, nlp_buf *tmp);

typedef struct nlp_ter nlp_ter;

/* New extractor for params p (copied); NULL on ENOMEM. Free with nlp_ter_free. */
nlp_ter *nlp_ter_new(const nlp_ter_params *p);
void nlp_ter_free(nlp_ter *t);

/* Statistics of one segment into stats[0..2). Returns 0, NLP_EDATA (more
 * than NLP_TER_MAX_WORDS words; the message says which side) or NLP_ENOMEM. */
int nlp_ter_segment(nlp_ter *t, const char *hyp, size_t hyp_len, const char *const *refs,
                    const size_t *ref_lens, int nrefs, double *stats);

/* Edits (shifts + distance) turning word ids hyp[0..nh) into ref[0..nr),
 * sacreBLEU's translation_edit_rate. Returns the count, or -1 on ENOMEM. */
long nlp_ter_edits(nlp_ter *t, const int *hyp, int nh, const int *ref, int nr);

#endif
