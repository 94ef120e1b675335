/*
 * data.h — token corpora for language-model training and evaluation: one
 * flat id array built from binary token streams (nlpipe's or llm.c's) or
 * from text tokenized here, with the byte count of the text it came from;
 * random training windows and the evaluation's fixed windows over it.
 *
 * A corpus is a sequence of documents joined by the end-of-text id (as a
 * token stream holds them). Several inputs are appended in order, each
 * input's first document separated from the previous input's last one by
 * an end-of-text id too, so the concatenation of two streams reads as the
 * stream of both.
 *
 * Text is read whole and tokenized in parallel (OpenMP, one tokenizer state
 * per thread), one document per line, before training starts: random
 * windows need the whole corpus, and at 30+ MB/s a thread tokenizing is a
 * small part of any run. Invalid UTF-8 is repaired (U+FFFD, as `tokenize`
 * does) and counted; the byte count is that of the text as read.
 *
 * Memory: 4 bytes per token (a 1 GB corpus of English BPE tokens is about
 * 1 GB of ids).
 *
 * Not here: what the ids mean (lib/tok), the model's batch (model.h).
 */
#ifndef NLP_TRAIN_DATA_H
#define NLP_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "tok/tokenizer.h"

#define NLP_CORPUS_INIT {.eot = -1}

typedef struct nlp_corpus {
    int32_t *ids;
    size_t n, cap;
    uint64_t docs;      /* documents read */
    uint64_t bytes;     /* UTF-8 bytes of the text (newlines included); 0 = unknown */
    uint64_t repaired;  /* text lines whose invalid UTF-8 was replaced */
    int32_t eot;        /* end-of-text id between documents (-1 = none) */
    uint32_t max_id;    /* largest id seen + 1 (0 when empty) */
    uint32_t vocab;     /* the largest vocabulary size a stream header gave (0 = none) */
    size_t max_line;    /* text: a longer line is NLP_EDATA "'f' line N: longer than M bytes ...",
                           found before more of it is read (0 = no limit) */
} nlp_corpus;

/* Appends a binary token stream (nlpipe or llm.c format, "-" = standard
 * input). Every id must be below `vocab` (when > 0): otherwise NLP_EDATA
 * "'path': token N (byte B) is id X, not below the model's vocabulary size
 * V". A stream whose end-of-text id differs from c->eot (once set) is
 * NLP_EDATA too. NLP_EFORMAT for a corrupt stream, NLP_EIO, NLP_ENOMEM. */
int nlp_corpus_add_stream(nlp_corpus *c, const char *path, uint32_t vocab);

/* Appends a text file ("-" = standard input) tokenized with tk, one
 * document per line (empty lines are empty documents and are dropped),
 * documents separated by `eot` (>= 0). `threads` <= 0 means all CPUs.
 * Errors: NLP_EIO, NLP_ENOMEM, NLP_EDATA (the tokenizer's, naming the
 * line). */
int nlp_corpus_add_text(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, int threads);

/* Appends a file of either kind: a token stream when it starts with one of
 * the stream magics, else text for tk (NLP_EDATA "... is not a token
 * stream ..." when tk is NULL). Arguments as above. */
int nlp_corpus_add(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, uint32_t vocab,
                   int threads);

/* Adds the UTF-8 byte count of a stream's text: each document decoded with
 * tk (special tokens dropped) plus one newline (for bits per byte of a
 * corpus read as ids). */
int nlp_corpus_count_bytes(nlp_corpus *c, const nlp_tokenizer *tk);

void nlp_corpus_free(nlp_corpus *c);

/* Fills ids[B, T] with B windows of T consecutive tokens at uniformly
 * random starts in [0, n - T] drawn from r (T <= n). Labels for a causal LM
 * are the same windows (the model shifts them). */
void nlp_corpus_windows(const nlp_corpus *c, nlp_rng *r, int B, int T, int32_t *ids);

/* Evaluation windows: the k-th window holds tokens [k·(T-1), k·(T-1) + T)
 * (the last one shorter), so consecutive windows overlap by one token and
 * every token after the first is predicted exactly once. Returns the
 * number of windows; *len gets window k's length (>= 2) when k is valid. */
size_t nlp_corpus_eval_windows(const nlp_corpus *c, int T);
const int32_t *nlp_corpus_eval_window(const nlp_corpus *c, int T, size_t k, int *len);

#endif
