/*
 * data.h — token corpora for language-model training and evaluation: token
 * streams (nlpipe's or llm.c's) mapped from their files, text tokenized
 * here (once, into a token-stream cache that is then mapped, or into
 * memory), or a pipe read through a shuffle buffer; random training
 * windows and the evaluation's fixed windows over them. Also what the data
 * tools share: text read in blocks and tokenized in parallel, the check
 * that a file given as text is text, and mapped files that notice being
 * changed under them.
 *
 * A corpus is a sequence of documents joined by the end-of-text id (as a
 * token stream holds them). Several inputs are appended in order, each
 * input's first document separated from the previous input's last one by
 * an end-of-text id too, so the concatenation of two streams reads as the
 * stream of both. Its ids come in parts, read as one sequence:
 *
 *   mapped  a token stream file, mapped read-only (ids of 2 or 4 bytes as
 *           its header says; an llm.c shard's uint16 or uint32): nothing
 *           is read before a window needs it, pages come from the page
 *           cache and are let go after each window is copied, so the
 *           resident memory does not grow with the corpus. Ids are checked
 *           as windows are read (below the header's vocabulary and the
 *           limit), and so is the file: one that shrank or was rewritten
 *           in place while mapped is NLP_EDATA naming it (a file replaced
 *           by rename keeps its old contents mapped: safe; one that grows
 *           is read to the length it had).
 *   memory  ids held as int32: text tokenized without a cache, a stream
 *           read from a pipe whole (validation, evaluation), separators
 *           between inputs. 4 bytes per token.
 *   pipe    training from standard input (nlp_corpus_open_pipe): a
 *           shuffle buffer of at most `buffer` tokens filled from the pipe
 *           before the first window, windows drawn from it, and after each
 *           micro-batch the oldest B·T tokens replaced by the next ones
 *           from the pipe, so every token is drawn about once while it is
 *           in the buffer (one pass over the pipe = one epoch) and the
 *           memory is the buffer's. A pipe shorter than the buffer is read
 *           whole before the first window: its windows are then those of
 *           the same ids in a file, bit for bit. When a longer pipe ends,
 *           the rest of the run draws from the last buffer.
 *
 * Text is tokenized in blocks of lines (NLP_TEXT_BLOCK bytes and whole
 * lines), each block in parallel (OpenMP, one tokenizer state per thread),
 * one document per line; empty lines are empty documents and dropped.
 * Invalid UTF-8 is repaired (U+FFFD, as `tokenize` does) and counted; the
 * byte count is that of the text as read. Memory: one block and its ids.
 *
 * The cache (nlp_corpus_add_cached): a text file is tokenized once into an
 * nlpipe token stream in a directory (pretrain's RUN/data), named after the
 * file and a key over its absolute path, size and modification time, the
 * tokenizer's fingerprint and the end-of-text id; written atomically (a
 * temporary file renamed into place, as checkpoints are), so a crash, a
 * full disk or a signal leaves no half-written cache to be used; then
 * mapped. A later run on the same text with the same tokenizer finds the
 * same name and maps it at once; a changed text or another tokenizer gives
 * another key and a new cache (the stale one of the same file is removed).
 * A cache's header is checked against the tokenizer before use too.
 *
 * Not here: what the ids mean (lib/tok), the model's batch (model.h).
 */
#ifndef NLP_TRAIN_DATA_H
#define NLP_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "tok/encoding.h"
#include "tok/tokenizer.h"

#define NLP_CORPUS_INIT {.eot = -1}
#define NLP_TEXT_BLOCK ((size_t)16 << 20)               /* text tokenized at a time (bytes) */
#define NLP_CORPUS_BUFFER_DEFAULT ((size_t)1 << 26)   /* shuffle buffer of a pipe (tokens: 256 MiB) */

/* A file mapped read-only, with what it was when mapped, to notice a
 * change (nlp_mapped_check). */
typedef struct nlp_mapped {
    char *path;
    int fd;
    const unsigned char *data;
    size_t len;
    int64_t mtime_ns;
    uint64_t ino;
} nlp_mapped;

/* Maps `path` whole (a regular file; NLP_EIO otherwise, naming it). Empty
 * files map to data NULL, len 0. */
int nlp_mapped_open(nlp_mapped *m, const char *path);
/* NLP_EDATA "'f' changed while it was being read (...)" when the file is
 * shorter than when mapped, or was rewritten in place (its time changed). */
int nlp_mapped_check(const nlp_mapped *m);
/* Lets the pages of bytes [off, off + n) go, in whole 2 MiB blocks (they
 * stay in the page cache): the resident memory of a mapping read at random
 * stays small. */
void nlp_mapped_release(const nlp_mapped *m, size_t off, size_t n);
void nlp_mapped_close(nlp_mapped *m);

/* One part of a corpus (see above). */
typedef struct nlp_corpus_part {
    size_t start, n;      /* its ids are the corpus's [start, start + n) */
    int32_t *ids;         /* memory: the ids (owned); NULL when mapped */
    size_t cap;
    nlp_mapped map;       /* mapped: the file */
    size_t off;           /* mapped: the byte offset of the first id */
    uint32_t width;       /* mapped: 2 or 4 bytes an id */
    uint32_t limit;       /* its ids must be below it too (0: no limit of its own) */
    /* the stream's header (token streams; vocab 0 = unknown, eot -1 = none);
     * a stream read into memory is a part of no ids that only holds it */
    int is_stream, llmc;
    uint32_t vocab;
    int64_t eot;
    uint64_t tokenizer;   /* fingerprint (0 = not recorded) */
    char *name;           /* the input it came from */
} nlp_corpus_part;

typedef struct nlp_corpus_pipe nlp_corpus_pipe;

typedef struct nlp_corpus {
    nlp_corpus_part *part;
    size_t nparts, parts_cap;
    size_t n;           /* ids */
    uint64_t docs;      /* documents read into memory (not those of mapped streams) */
    uint64_t bytes;     /* UTF-8 bytes of the text (newlines included); 0 = unknown */
    uint64_t repaired;  /* text lines whose invalid UTF-8 was replaced */
    int32_t eot;        /* end-of-text id between documents (-1 = none) */
    uint32_t max_id;    /* largest id held in memory + 1 (0 when none) */
    uint32_t vocab;     /* the largest vocabulary size a stream header gave (0 = none) */
    uint32_t limit;     /* ids must be below it (0: the headers' limits only), checked as read */
    uint64_t mapped;    /* bytes of ids in mapped files */
    uint64_t held;      /* bytes of ids in memory */
    nlp_corpus_pipe *pipe;
    size_t max_line;    /* text: a longer line is NLP_EDATA "'f' line N: longer than M bytes ...",
                           found before more of it is read (0 = no limit) */
} nlp_corpus;

/* Appends a binary token stream (nlpipe or llm.c format): a file is mapped,
 * "-" (standard input) read into memory. Every id must be below `vocab`
 * (when > 0): a header of a larger vocabulary is NLP_EDATA at once, an id
 * is checked where it is read ("'path' byte B: id X is not below ...").
 * A stream whose end-of-text id differs from c->eot (once set) is NLP_EDATA
 * too. NLP_EFORMAT for a corrupt stream (a bad header, a length that is not
 * a whole number of ids, an llm.c shard shorter than its count), NLP_EIO,
 * NLP_ENOMEM. */
int nlp_corpus_add_stream(nlp_corpus *c, const char *path, uint32_t vocab);

/* Appends a text file ("-" = standard input) tokenized with tk into memory,
 * one document per line (empty lines are empty documents and are dropped),
 * documents separated by `eot` (>= 0; -1: joined). `threads` <= 0 means all
 * CPUs. The file must look like text (nlp_text_check). Errors: NLP_EIO,
 * NLP_ENOMEM, NLP_EDATA (the tokenizer's, naming the line; not text). */
int nlp_corpus_add_text(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, int threads);

/* Appends a file of either kind: a token stream when it starts with one of
 * the stream magics, else text for tk. Without tk: NLP_EINVAL "'path' is
 * text, not a token stream ..." when its first KiB is text (no NUL, UTF-8:
 * the caller did not give the tokenizer it needs), else NLP_EDATA "... is
 * not a token stream ...". Arguments as above. */
int nlp_corpus_add(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, uint32_t vocab,
                   int threads);

/* The same, but text (a regular file) goes through a cache in directory
 * `dir` (created; see above) and is mapped from it: *built (may be NULL)
 * gets 1 when the cache was made now, 0 when an existing one was used or
 * the input was a stream. With `dry`, a missing cache is not made:
 * *built gets -1 and nothing is appended (the caller estimates). "-" is
 * read as nlp_corpus_add does. Errors as above, and NLP_EIO for a cache
 * that cannot be written (a full disk: the message says so; nothing is
 * left behind). */
int nlp_corpus_add_cached(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, uint32_t vocab,
                          int threads, const char *dir, int dry, int *built);

/* Training from a pipe (path "-" or a FIFO): a token stream, or text for tk
 * (tk NULL: a stream is required), through a shuffle buffer of `buffer`
 * tokens (see above). It must be the corpus's only input. The buffer is
 * filled before this returns (c->n = the tokens in it). Errors as
 * nlp_corpus_add's. */
int nlp_corpus_open_pipe(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, uint32_t vocab,
                         size_t buffer, int threads);
/* 1 when c reads a pipe; *total gets the tokens read from it so far,
 * *ended whether it has ended, *text whether it is text (any may be NULL). */
int nlp_corpus_is_pipe(const nlp_corpus *c, uint64_t *total, int *ended, int *text);

/* Checks every token stream of c against the tokenizer that will read its
 * ids (tk_name names it): a recorded tokenizer fingerprint must be tk's;
 * a stream without one must have tk's vocabulary size; a stream's
 * end-of-text id must be `eot` when both have one. NLP_EDATA naming the
 * stream and what differs ("... was made by another tokenizer ..."). */
int nlp_corpus_check_tokenizer(const nlp_corpus *c, const nlp_tokenizer *tk, const char *tk_name, int32_t eot);

/* Adds the UTF-8 byte count of a stream's text: each document decoded with
 * tk (special tokens dropped) plus one newline (for bits per byte of a
 * corpus read as ids). */
int nlp_corpus_count_bytes(nlp_corpus *c, const nlp_tokenizer *tk);

/* Copies ids [at, at + n) of c (at + n <= c->n) into dst, checking each
 * (see limit) and the mapped files. 0, NLP_EDATA, NLP_EFORMAT. */
int nlp_corpus_read(const nlp_corpus *c, size_t at, size_t n, int32_t *dst);

/* FNV-1a over the ids (all of them up to 2^24 ids; beyond, the count and
 * 256 blocks of 4096 ids spread evenly): tells a resumed run whether it has
 * its data back without reading a large corpus whole. */
int nlp_corpus_fingerprint(const nlp_corpus *c, uint64_t *out);

/* Bytes of ids held in memory (in-memory parts and a pipe's buffer). */
uint64_t nlp_corpus_memory(const nlp_corpus *c);

void nlp_corpus_free(nlp_corpus *c);

/* Fills ids[B, T] with B windows of T consecutive tokens at uniformly
 * random starts in [0, n - T] drawn from r (T <= n); a pipe's buffer then
 * takes in the next B·T tokens. Labels for a causal LM are the same windows
 * (the model shifts them). Errors of nlp_corpus_read, and the pipe's. */
int nlp_corpus_windows(nlp_corpus *c, nlp_rng *r, int B, int T, int32_t *ids);

/* Evaluation windows: the k-th window holds tokens [k·(T-1), k·(T-1) + T)
 * (the last one shorter), so consecutive windows overlap by one token and
 * every token after the first is predicted exactly once. Returns the
 * number of windows; nlp_corpus_eval_window copies window k (valid) into
 * dst[T] and *len gets its length (>= 2). */
size_t nlp_corpus_eval_windows(const nlp_corpus *c, int T);
int nlp_corpus_eval_window(const nlp_corpus *c, int T, size_t k, int32_t *dst, int *len);

// --- text: checked, read in blocks, tokenized in parallel

/* 0 when p[0..n) (the start of a file given as text) looks like text;
 * otherwise NLP_EDATA naming `name` and what it looks like: compressed
 * (xz, gzip, zstd, bzip2, zip), a known binary format (safetensors, a
 * PyTorch or NumPy file, ELF), binary (NUL bytes), mostly invalid UTF-8,
 * or lines of ids only (what `tokenize` prints by default), and what to do
 * about it. Skipped (always 0) after nlp_text_check_force(1): a user's
 * --force. */
int nlp_text_check(const char *name, const void *p, size_t n);
void nlp_text_check_force(int force);

/* Lines of text read from a reader a block at a time (NLP_TEXT_BLOCK bytes
 * and whole lines, a longer line whole). */
typedef struct nlp_text_blocks {
    void *r;            /* nlp_reader (borrowed or owned) */
    int own;
    char *buf;
    size_t len, cap, keep; /* buf[0..len) read; the current block is buf[0..keep) */
    uint64_t line;      /* 0-based number of the block's first line */
    uint64_t bytes;     /* bytes read */
    int eof;
    int checked;        /* nlp_text_check passed */
    size_t max_line;    /* a longer line is NLP_EDATA "'f' line N: longer than M bytes ...", found
                           before more of it is read (0 = no limit; set after opening) */
    size_t cur;         /* bytes of the last line read so far */
    uint64_t scanned;   /* that line's number, from 1 (nlp_lines_check) */
} nlp_text_blocks;

/* The block size of every nlp_text_blocks (default NLP_TEXT_BLOCK; tests
 * make it small to cross block boundaries in small files). */
void nlp_text_blocks_set_size(size_t bytes);

/* Opens path ("-" = standard input) for reading text in blocks; the start
 * of the file must pass nlp_text_check. */
int nlp_text_blocks_open(nlp_text_blocks *tb, const char *path);
/* The next block: *text, *len (whole lines; the last one may lack its
 * newline), *first_line its 0-based first line. Returns 1, 0 at the end,
 * or an error. The block stays valid until the next call. */
int nlp_text_blocks_next(nlp_text_blocks *tb, const char **text, size_t *len, uint64_t *first_line);
const char *nlp_text_blocks_name(const nlp_text_blocks *tb);
/* The lines of text[0..len) (a block): line[i] its start, llen[i] its
 * length without the newline and a CR before it; a last line without a
 * newline counts, an empty text has no line. *line and *llen are the
 * caller's to free (the lines point into text). 0 or NLP_ENOMEM. */
int nlp_split_lines(char *text, size_t len, char ***line, size_t **llen, size_t *n);
void nlp_text_blocks_close(nlp_text_blocks *tb);

/* Tokenizes the lines of text[0..len) with tk in parallel, one document per
 * non-empty line, into out (appended): documents separated by eot (>= 0;
 * -1: joined), none before the first. *docs gets the documents, *repaired
 * adds lines whose invalid UTF-8 was replaced. Errors name `name` and the
 * line (first_line + the line in the block, from 1). */
int nlp_tokenize_block(const nlp_tokenizer *tk, const char *text, size_t len, const char *name, uint64_t first_line,
                       int32_t eot, int threads, nlp_ids *out, uint64_t *docs, uint64_t *repaired);

/* A key for a cache of `path` made with tk and the given extra value:
 * FNV-1a over the absolute path, its size, modification time and inode,
 * tk's fingerprint and `extra`. Also the path's own hash (*path_key, the
 * part of the name that stays when the file changes). NLP_EIO when path
 * cannot be examined. */
int nlp_cache_key(const char *path, const nlp_tokenizer *tk, uint64_t extra, uint64_t *key, uint64_t *path_key);
/* Writes into buf the cache file name dir/BASENAME.PATHKEY.KEY.SUFFIX; and
 * removes the stale caches of the same path (other keys, same suffix). */
void nlp_cache_name(char *buf, size_t cap, const char *dir, const char *path, uint64_t path_key, uint64_t key,
                    const char *suffix);
void nlp_cache_remove_stale(const char *dir, const char *path, uint64_t path_key, uint64_t key, const char *suffix);
/* Creates dir (and its parents); NLP_EIO naming it. */
int nlp_cache_mkdir(const char *dir);

#endif
