/*
 * train.h — what the subword training tools (train-bpe, train-wordpiece)
 * share: their input list, the special-token list, progress lines, and
 * counting the words with its messages.
 *
 * Like cli.h this lives in bin/: it prints and exits.
 */
#ifndef NLP_BIN_TRAIN_H
#define NLP_BIN_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "common/cli.h"
#include "tok/tokenizer.h"
#include "tok/wordcount.h"

/* Starts the clock the progress lines and debug messages show. */
void train_start(void);

/* Seconds since train_start(). */
double train_elapsed(void);

/* The entries of a comma- or white-space-separated list (NULL = none),
 * with room for one more; exits on ENOMEM. Free the strings and the array. */
char **train_split_list(const char *s, size_t *n);

/* Usage error ("--NAME: invalid UTF-8 at byte B") unless the value s of
 * option NAME is valid UTF-8 (NULL is): special tokens and affixes become
 * vocabulary entries, which the tokenizer files hold as UTF-8. */
void train_check_utf8(const char *name, const char *s);

/* The inputs: the -i values (if any), then argv[first..argc), else "-".
 * Exits on ENOMEM. Free the array (not the strings). */
const char **train_inputs(const struct cli_list *input, int argc, char **argv, int first, size_t *n);

/* Progress callbacks for nlp_wordcount_opts (ctx: train_count_words's) and
 * the trainers (progress.h's lines: share done, rate, time left). */
void train_count_progress(void *ctx, uint64_t lines, uint64_t bytes);
void train_merge_progress(void *ctx, size_t merges, size_t vocab, size_t vocab_size);
/* Ends the merging progress line (with --progress): its last state when the
 * training succeeded (ok), the vocabulary and merges it came to. */
void train_merge_done(int ok, size_t merges, size_t vocab);

/* Word-counting options for the pipeline of spec (its normalizer and
 * pre-tokenizer, kept by pointer), cutting out the special tokens; lines
 * longer than max_line_bytes are refused (--max-line-bytes). */
nlp_wordcount_opts train_count_opts(const nlp_tok_spec *spec, char *const *specials, size_t n_specials, int strict,
                                    long max_lines, long max_line_bytes, int threads);

/* Counts the words of the inputs into wc (opts->progress is set when
 * `progress`), warns about repaired UTF-8, logs the counts with -v, and
 * exits: with the library's status on failure, with status 1 and "no words
 * to learn from: the input is empty" or "...: the input has only
 * <what_else>" when nothing was counted. */
void train_count_words(nlp_wordcount *wc, const char *const *inputs, size_t n, nlp_wordcount_opts *opts, int progress,
                       const char *what_else);

#endif
