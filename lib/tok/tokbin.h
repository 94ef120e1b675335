/*
 * tokbin.h — binary token streams: nlpipe's own format (what `tokenize
 * --output-format bin` writes and the training tools read) and llm.c's
 * .bin token shards (read only).
 *
 * nlpipe token stream, version 1. All integers little-endian. A 32-byte
 * header, then the ids until the end of the stream; no token count, so the
 * stream can be written to and read from a pipe.
 *
 *   offset  size  field
 *   0       4     magic: the bytes 'N' 'L' 'T' 'K' (4E 4C 54 4B)
 *   4       4     version: uint32 = 1
 *   8       4     id width in bytes: uint32 = 2 (vocabulary < 65536) or 4
 *   12      4     vocabulary size: uint32; every id is smaller
 *   16      4     end-of-text id: uint32 (0xFFFFFFFF = none)
 *   20      8     tokenizer fingerprint: uint64 (nlp_tokbin_fingerprint of the
 *                 tokenizer that made the ids; 0 = not recorded, as in
 *                 streams written before it was)
 *   28      4     reserved: zero
 *   32      ...   ids: unsigned integers of the id width
 *
 * Documents (input lines) are separated by one end-of-text id: between two
 * documents, not before the first or after the last. So N documents give
 * N - 1 separators, and an empty stream holds no documents (a stream of one
 * empty document is indistinguishable from it). A file whose length is not
 * 32 + a multiple of the width is truncated.
 *
 * The last line of a text need not end with a line terminator. A stream
 * records that it did not with one more value after the last document: the
 * width's all-ones value (FFFF or FFFFFFFF), never an id since every id is
 * below the vocabulary size (hence width 4 from 65536 tokens on). So a text
 * comes back byte for byte. (nlpipe 0.1 readers before this marker refuse
 * such a stream: id 65535 is not below the vocabulary size.)
 *
 * llm.c shards (dev/data/data_common.py): a header of 256 int32 — [0]
 * magic 20240520 (GPT-2, version 1, uint16 ids) or 20240801 (Llama 3,
 * version 7, uint32 ids), [1] version, [2] number of tokens — then the
 * tokens. Each document is preceded by the end-of-text token (50256 for
 * GPT-2); the shard header does not name it, the reader is told.
 *
 * Not here: turning text into ids (tokenizer.h).
 */
#ifndef NLP_TOK_TOKBIN_H
#define NLP_TOK_TOKBIN_H

#include <stddef.h>
#include <stdint.h>

#include "base/io.h"
#include "tok/encoding.h"
#include "tok/tokenizer.h"

#define NLP_TOKBIN_MAGIC "NLTK"
#define NLP_TOKBIN_VERSION 1
#define NLP_TOKBIN_HEADER 32
#define NLP_TOKBIN_NO_EOT 0xFFFFFFFFu
#define NLP_TOKBIN_UNTERMINATED_2 0xFFFFu     /* the marker, width 2 */
#define NLP_TOKBIN_UNTERMINATED_4 0xFFFFFFFFu /* the marker, width 4 */
#define NLP_LLMC_MAGIC_GPT2 20240520
#define NLP_LLMC_MAGIC_LLAMA3 20240801
#define NLP_LLMC_HEADER 1024

// --- writing (nlpipe format)

typedef struct nlp_tokbin_writer nlp_tokbin_writer;

/* Starts a stream on w (borrowed: the caller closes it) and writes the
 * header. vocab_size > 0; eot < vocab_size, or -1 for none (then documents
 * cannot be separated and nlp_tokbin_write_doc refuses a second one).
 * Returns 0, NLP_EINVAL, NLP_EIO or NLP_ENOMEM. Free with
 * nlp_tokbin_writer_free. */
int nlp_tokbin_writer_new(nlp_tokbin_writer **out, nlp_writer *w, uint32_t vocab_size, int32_t eot);

/* The same, recording the fingerprint of the tokenizer that made the ids
 * (0 = none) in the header. */
int nlp_tokbin_writer_new_fp(nlp_tokbin_writer **out, nlp_writer *w, uint32_t vocab_size, int32_t eot,
                             uint64_t fingerprint);

/* A tokenizer's fingerprint: FNV-1a over its vocabulary size and the text
 * of every id (a missing id hashes as such), never 0. Two tokenizers with
 * the same fingerprint give their ids the same meaning, so a stream made
 * by one reads with the other. */
uint64_t nlp_tokbin_fingerprint(const nlp_tokenizer *tk);

/* Writes one document (the separator first when it is not the first).
 * Returns 0, NLP_EDATA for an id outside the vocabulary, NLP_EINVAL (second
 * document without an end-of-text id), NLP_EIO. */
int nlp_tokbin_write_doc(nlp_tokbin_writer *bw, const int32_t *ids, size_t n);

/* Appends ids to the document being written (the first document when none
 * was started), without a separator: a long document in pieces. Errors as
 * nlp_tokbin_write_doc. */
int nlp_tokbin_write_more(nlp_tokbin_writer *bw, const int32_t *ids, size_t n);

/* Ends the stream: when `unterminated` (the text's last line had no line
 * terminator) and a document was written, writes the marker after it.
 * Returns 0 or NLP_EIO. Call once, after the last document. */
int nlp_tokbin_write_end(nlp_tokbin_writer *bw, int unterminated);

void nlp_tokbin_writer_free(nlp_tokbin_writer *bw);

// --- reading (both formats)

typedef enum nlp_tokbin_kind {
    NLP_TOKBIN_NLPIPE,
    NLP_TOKBIN_LLMC,
} nlp_tokbin_kind;

typedef struct nlp_tokbin_info {
    nlp_tokbin_kind kind;
    uint32_t version, width, vocab_size; /* vocab_size 0 = unknown (llm.c) */
    int64_t eot;                          /* -1 = none or unknown */
    uint64_t count;                       /* llm.c: tokens in the shard */
    uint64_t tokenizer;                   /* nlpipe: the tokenizer's fingerprint (0 = not recorded) */
} nlp_tokbin_info;

/* 1 if the first four bytes p[0..4) are one of the magics above. */
int nlp_tokbin_sniff(const unsigned char *p);

typedef struct nlp_tokbin_reader nlp_tokbin_reader;

/* Reads the header from r (borrowed). For llm.c shards, `eot` is the
 * end-of-text id that starts each document (the shard does not say).
 * Returns 0; NLP_EFORMAT for a stream that is neither format, an unknown
 * version, a bad width, a vocabulary size of 0, an end-of-text id not
 * below the vocabulary size, or a truncated header (the message names the
 * stream, the byte and what was found); NLP_EIO; NLP_ENOMEM. Free with
 * nlp_tokbin_reader_free. */
int nlp_tokbin_reader_new(nlp_tokbin_reader **out, nlp_reader *r, int64_t eot);
const nlp_tokbin_info *nlp_tokbin_reader_info(const nlp_tokbin_reader *br);

/* Ids must also be below vocab_size (0: no limit beyond the header's and
 * INT32_MAX): a reader that knows its tokenizer checks each id where it is
 * read, so the message gives the byte. `of` names that vocabulary in
 * messages (kept by pointer; may be NULL). */
void nlp_tokbin_reader_limit(nlp_tokbin_reader *br, uint64_t vocab_size, const char *of);

/* Reads the next document into out (reset first). Returns 1, 0 at the end,
 * NLP_EFORMAT for a truncated stream (a partial id, or an llm.c shard
 * shorter than its count) or an id too large (past the header's vocabulary,
 * the limit above, or INT32_MAX); the message gives the byte offset; a
 * marker that is not the last value), or NLP_EIO. */
int nlp_tokbin_next_doc(nlp_tokbin_reader *br, nlp_ids *out);

/* 1 when the document nlp_tokbin_next_doc just returned is the last and its
 * line had no terminator (the stream ends with the marker), else 0. */
int nlp_tokbin_reader_unterminated(const nlp_tokbin_reader *br);

void nlp_tokbin_reader_free(nlp_tokbin_reader *br);

#endif
