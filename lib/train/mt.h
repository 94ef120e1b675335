/*
 * mt.h — parallel text for the encoder-decoder: sentence pairs read from two
 * aligned files or a TSV, tokenized in parallel, filtered by length; the
 * translation task's batches (bucketed by length, sized in tokens, shuffled
 * per epoch) and its validation (loss and perplexity, and BLEU through a
 * caller's hook).
 *
 * Pairs: line i of the source file goes with line i of the target file (or
 * the two fields of TSV line i). A pair with an empty side is dropped and
 * counted; so is one whose source or target, with its end-of-sentence id,
 * is longer than max_len. The model sees
 *
 *   src     x1 ... xn EOS
 *   tgt_in  BOS y1 ... ym
 *   tgt_out y1 ... ym EOS
 *
 * padded with the pad id (the reference's convention and the PyTorch twin's).
 *
 * Batches (as fairseq and the twin cut them): every epoch the pairs are
 * sorted by (target length, source length, a random tie-break), cut in order
 * into batches whose cost — sentences × the longer padded side — stays within
 * max_tokens, and the batches shuffled. Epoch e's order comes from the seed
 * and e alone, so the task's state is one number (the batches drawn), saved
 * in checkpoints and restored on resume.
 *
 * Memory. Read into memory (nlp_pairs_read): the text whole, then 4 bytes
 * per token and 24 per pair. Through a cache (nlp_pairs_read_cached): each
 * side is tokenized a block of lines at a time (train/data.h) into an
 * unnamed scratch file, with 4 bytes per line of each side in memory (the
 * lengths, for the filter); the pairs kept are then written to the cache,
 * which is mapped: the ids and the index (offsets, lines) are read where
 * batches and the epoch's length sort need them and let go after, so the
 * memory that stays is the epoch's order (4 bytes a pair), with 28 bytes a
 * pair for a moment while an epoch's batches are made.
 *
 * The cache (in a directory: pretrain's RUN/data), named
 * NAME.PATHKEY.KEY.pairs after the source file (or the TSV), where KEY
 * covers both files' paths, sizes, modification times and inodes, both
 * tokenizers' fingerprints and max_len; written atomically (a temporary
 * renamed into place); all integers little-endian:
 *
 *   offset  size      field
 *   0       4         magic "NLPR"
 *   4       4         version: uint32 = 1
 *   8       8         the source tokenizer's fingerprint (tok/tokbin.h)
 *   16      8         the target tokenizer's
 *   24      4·s       source ids: int32 (s tokens), then 0 or 4 bytes of padding
 *   ...     4·t       target ids: int32 (t tokens), then 0 or 4 bytes of padding
 *   ...     8·(n+1)   source offsets: uint64 (src_off), then target offsets (tgt_off)
 *   ...     8·n       input lines: uint64 (line)
 *   end-72  72        n, s, t, lines, empty, too_long, repaired: uint64; src_max,
 *                     tgt_max: uint32; "NLPE"; version: uint32 = 1
 *
 * Mapping it checks it through (offsets increasing to the ids' counts, the
 * longest pair as recorded): a damaged cache, or one of other tokenizers, is
 * made anew, never read past.
 *
 * Not here: the model (model.h), decoding for BLEU (the caller's hook: the
 * training layer knows nothing of lib/decode or lib/eval).
 */
#ifndef NLP_TRAIN_MT_H
#define NLP_TRAIN_MT_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "tok/tokenizer.h"
#include "train/data.h"
#include "train/loop.h"

/* Sentence pairs as ids (no BOS/EOS added), concatenated. */
typedef struct nlp_pairs {
    size_t n;                  /* pairs kept */
    int32_t *src, *tgt;        /* ids of every kept pair, in order */
    size_t *src_off, *tgt_off; /* [n + 1]: pair i is src[src_off[i] .. src_off[i+1]) */
    uint64_t *line;            /* [n]: the 1-based input line of pair i */
    char **ref;                /* [n] target text of each pair (only when asked for) */
    uint64_t lines;            /* pairs read */
    uint64_t empty;            /* dropped: a side is empty */
    uint64_t too_long;         /* dropped: a side longer than max_len with EOS */
    uint64_t repaired;         /* lines whose invalid UTF-8 was replaced */
    size_t src_tokens, tgt_tokens;
    int src_max, tgt_max;      /* longest kept side, ids */
    nlp_mapped map;            /* from a cache: src, tgt, src_off, tgt_off and line point into it */
} nlp_pairs;

typedef struct nlp_pairs_opts {
    const nlp_tokenizer *src_tk, *tgt_tk;
    int max_len;          /* with EOS, per side; 0 = no limit */
    int keep_empty;       /* keep pairs with an empty side (validation: a line is a line) */
    int keep_text;        /* keep each target line in ref[] (BLEU references) */
    int threads;          /* <= 0: all CPUs */
    size_t max_line;      /* a longer line is NLP_EDATA naming file and line (0 = no limit) */
    const char *src_prefix; /* text put before each non-empty source line, tokenized with it (T5's task
                             * prefix; NULL or "" = none); the cache's key covers it */
} nlp_pairs_opts;

/* Reads src_path and tgt_path (aligned text files, "-" = standard input for
 * one of them), or, with tgt_path NULL, a TSV of "source<TAB>target" lines.
 * Errors: NLP_EDATA "'a' has N lines, 'b' has M" for files that do not
 * align, "'f' line N: no tab" for a TSV line without one, the tokenizer's
 * error naming file and line; NLP_EIO; NLP_ENOMEM. */
int nlp_pairs_read(nlp_pairs *p, const char *src_path, const char *tgt_path, const nlp_pairs_opts *o);

/* The same through a cache in `dir` (created; see above): an existing one
 * of the same files, tokenizers and max_len is mapped (*built 0), else it is
 * made and mapped (*built 1), or with `dry` not made (*built -1, p empty).
 * Standard input or a pipe, keep_empty, keep_text or dir NULL: read into
 * memory as nlp_pairs_read (*built 0). Errors as nlp_pairs_read's, and
 * NLP_EIO for a cache that cannot be written (nothing is left behind). */
int nlp_pairs_read_cached(nlp_pairs *p, const char *src_path, const char *tgt_path, const nlp_pairs_opts *o,
                          const char *dir, int dry, int *built);

/* Bytes of p held in memory (0 when mapped). */
uint64_t nlp_pairs_memory(const nlp_pairs *p);

void nlp_pairs_free(nlp_pairs *p);

/* Tokenizes text lines in parallel (one tokenizer state per thread): ids of
 * line i at ids[off[i] .. off[i+1]). Invalid UTF-8 is repaired and counted
 * in *repaired. `path` names the input in messages (line numbers from 1). */
int nlp_tokenize_lines(const nlp_tokenizer *tk, const char *const *line, const size_t *len, size_t n,
                       const char *path, int threads, int32_t **ids, size_t **off, uint64_t *repaired);
/* The same for lines that start at line first + 1 of `path` (messages). */
int nlp_tokenize_lines_at(const nlp_tokenizer *tk, const char *const *line, const size_t *len, size_t n,
                          const char *path, uint64_t first, int threads, int32_t **ids, size_t **off,
                          uint64_t *repaired);

typedef struct nlp_mt_task {
    const nlp_pairs *train, *valid;
    int32_t pad, bos, eos;
    long max_tokens;           /* batch cost limit */
    uint64_t seed;
    /* batches of the current epoch: pair indices, cut at cut[k] */
    uint32_t *order;
    size_t *cut, nbatch;
    uint64_t epoch;            /* the epoch `order` holds (0 = none yet) */
    uint64_t drawn;            /* batches drawn since the start of the run */
    int32_t *buf;              /* src, tgt_in, tgt_out of a batch */
    size_t buf_cap;
    /* validation: BLEU of the model on `valid` (NULL = loss only) */
    int (*bleu)(void *ctx, nlp_model *m, double *bleu);
    void *bleu_ctx;
    /* training pairs made afresh each epoch (nlp_mt_task_refresh) */
    int (*refresh)(void *ctx, uint64_t epoch);
    void *refresh_ctx;
    int accuracy;              /* validation reports the target token accuracy */
} nlp_mt_task;

/* Sets up t and the nlp_task that drives it (valid may be NULL). The
 * token budget must hold the longest pair: otherwise NLP_EINVAL naming
 * both. */
int nlp_mt_task_init(nlp_mt_task *t, nlp_task *task, const nlp_pairs *train, const nlp_pairs *valid,
                     const nlp_model_config *cfg, long max_tokens, uint64_t seed);
void nlp_mt_task_free(nlp_mt_task *t);

/* Pretraining on pairs drawn from monolingual text (train/denoise.h): before
 * epoch e's batches are made (when they are first drawn, and when a resumed
 * task restores its state), refresh(ctx, e) remakes the training pairs in
 * place, as a function of e alone, so the task's state (the epoch and the
 * batches drawn) still gives the same batches; validation reports the loss,
 * the perplexity and the target token accuracy (figures "loss", "ppl",
 * "acc": the share of target tokens, EOS included, that are the argmax of
 * the decoder's logits under teacher forcing). The longest pair of any
 * epoch must fit the token budget and the positions, as the first one's
 * does at nlp_mt_task_init. Call after nlp_mt_task_init, before the first
 * batch. */
void nlp_mt_task_refresh(nlp_mt_task *t, nlp_task *task, int (*refresh)(void *ctx, uint64_t epoch), void *ctx);

/* Batches in an epoch, and target tokens (EOS included) of one epoch. */
size_t nlp_mt_epoch_batches(nlp_mt_task *t);

/* Teacher-forced validation of m on pairs p: out->v = {loss (nats per
 * target token, no smoothing), ppl}, and with t->accuracy v[2] the target
 * token accuracy; batched by tokens, dropout off. Pairs longer than the
 * model's positions are skipped (*skipped, may be NULL). */
int nlp_mt_score(nlp_mt_task *t, nlp_model *m, const nlp_pairs *p, nlp_eval *out, size_t *skipped);

#endif
