/*
 * wordcount.h — counting the words of a training corpus, the first step of
 * every subword trainer.
 *
 * Text is read line by line *with* its line terminator, as HF tokenizers'
 * trainers read files (under a byte-level pre-tokenizer the newline becomes
 * a word of its own, 'Ċ'). Each line: invalid UTF-8 repaired (maximal
 * subparts to U+FFFD, counted) or refused (strict), special tokens cut out
 * (they are never part of a word), then the normalizer and pre-tokenizer of
 * the tokenizer being trained split it into words, which are counted.
 * Words are byte strings: raw bytes under a byte-level pre-tokenizer (the
 * trainer maps them), UTF-8 text otherwise.
 *
 * Lines are read in batches and split on several threads, each counting
 * into its own table; the tables are merged at the end, so the result does
 * not depend on the thread count. Memory is the distinct words, not the
 * corpus, plus a batch of 4 MB of lines (or one line, at most
 * max_line_bytes); max_lines bounds the number of lines read.
 *
 * Not here: what the counts are used for (bpe_train.h).
 */
#ifndef NLP_TOK_WORDCOUNT_H
#define NLP_TOK_WORDCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include "tok/normalize.h"
#include "tok/pretok.h"

typedef struct nlp_wordcount nlp_wordcount;

typedef struct nlp_wordcount_opts {
    const nlp_norm_step *norm;
    size_t n_norm;
    const nlp_pretok_step *pretok;
    size_t n_pretok;
    const char *const *specials; /* cut out of the text */
    size_t n_specials;
    int strict;         /* invalid UTF-8 is an error */
    /* non-NULL: a NUL byte in the text is an error, found as the line is
     * read ("'file' line L byte B: a NUL byte: <nul_error>"), for a
     * vocabulary that could not hold it (JSON strings) */
    const char *nul_error;
    uint64_t max_lines; /* 0 = no limit */
    size_t max_line_bytes;      /* a longer line is NLP_EDATA naming file and line (0 = no limit) */
    const char *long_line_hint; /* appended to that message, e.g. "(--max-line-bytes raises it)" */
    int threads;        /* <= 0: the OpenMP default */
    /* progress: called now and then from the reading thread */
    void (*progress)(void *ctx, uint64_t lines, uint64_t bytes);
    void *progress_ctx;
} nlp_wordcount_opts;

typedef struct nlp_wordcount_stats {
    uint64_t lines, bytes, words; /* words counted with repetition */
    uint64_t replaced;            /* invalid UTF-8 sequences replaced */
    char first_bad[512];          /* "'file' line L byte B" of the first one */
} nlp_wordcount_stats;

/* New empty count table; NULL on ENOMEM. Free with nlp_wordcount_free. */
nlp_wordcount *nlp_wordcount_new(void);
void nlp_wordcount_free(nlp_wordcount *wc);

/* Counts the words of the files (path "-" = standard input) into wc and
 * adds to *stats (zero it first). Stops after opts->max_lines lines in all.
 * Returns 0; NLP_EIO (cannot open or read); NLP_EDATA (strict and invalid
 * UTF-8: "'file' line L byte B: invalid UTF-8"; a line longer than
 * max_line_bytes: "'file' line L: longer than N bytes ..."; a NUL byte with
 * nul_error); NLP_ENOMEM. */
int nlp_wordcount_files(nlp_wordcount *wc, const char *const *paths, size_t npaths, const nlp_wordcount_opts *opts,
                        nlp_wordcount_stats *stats);

/* Adds `count` occurrences of word w[0..n). Returns 0 or NLP_ENOMEM. */
int nlp_wordcount_add(nlp_wordcount *wc, const char *w, size_t n, uint64_t count);

/* Number of distinct words; word i (0 <= i < size) and its count. Order is
 * unspecified but fixed for a given table. */
size_t nlp_wordcount_size(const nlp_wordcount *wc);
const char *nlp_wordcount_word(const nlp_wordcount *wc, size_t i, size_t *n, uint64_t *count);

#endif
