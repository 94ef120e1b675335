/*
 * bert.h — the BERT pretraining task: documents of text (or of a token
 * stream) split into sentences, turned into "[CLS] A [SEP] B [SEP]"
 * examples with next-sentence prediction (NSP) and masked-language-model
 * (MLM) targets, in micro-batches for the training loop (loop.h); and the
 * validation of a model on a fixed set of such examples.
 *
 * Documents. Text: when the file has a blank line (white space only)
 * between two non-blank lines, a document is a block of consecutive
 * non-blank lines (BERT's create_pretraining_data input); otherwise every
 * non-empty line is a document (one paragraph per line). A token stream
 * (tok/tokbin.h): its documents, as separated by its end-of-text id.
 * Documents without a token are dropped.
 *
 * Sentences. A document is split after sentence-final punctuation — '.',
 * '!', '?', '…' and the full-width forms 。！？．｡ — with any closing
 * brackets and quotes that follow it, when more text follows; in text with
 * blank-line blocks every line ends a sentence too. Where:
 *   text    on the text, before tokenizing: an ASCII mark ends a sentence
 *           only when white space follows it, so "3.5", "example.org" and
 *           "foo.c" stay whole (a full-width mark needs none: CJK text has
 *           no spaces). Each sentence is then tokenized on its own; the cut
 *           falls before the white space, where the BERT, byte-level and
 *           white-space pre-tokenizers cut words anyway, so the ids are
 *           those of the whole line.
 *   stream  on the tokens, as there is no text: after a token whose text
 *           (the tokenizer's decoding of it alone) is such a mark. When the
 *           vocabulary's pieces carry their white space (byte-level 'Ġ',
 *           metaspace '▁') the next token must begin with white space, as
 *           for text; WordPiece pieces do not say, so there "3.5" and
 *           "example.org" are cut too. Give text rather than a stream when
 *           you can.
 * Abbreviations ("e.g. foo") end a sentence either way. Sentences matter
 * only as the places where A may end and B begin, so a wrong cut costs
 * little. Special tokens in a stream's documents (a template's [CLS] and
 * [SEP]) are dropped; text is tokenized with special-token text as plain
 * text ("[SEP]" in a description is three tokens), never the template.
 *
 * Examples (Devlin et al. 2019; Google's create_pretraining_data.py, one
 * example at a time instead of a file of them). Each document's sentences
 * are grouped, in order, into chunks of about T-3 tokens (sentences added
 * until the chunk holds T-3 tokens or the document ends). An example is
 * drawn from a chunk:
 *   - with probability short_prob the target length is uniform in
 *     [2, T-3] instead of T-3, and the chunk is cut to the sentences that
 *     first reach it (BERT's short_seq_prob);
 *   - NSP label 0 ("B continues A", HuggingFace's next_sentence_label
 *     convention: 0 = is next, 1 = random) with probability exactly 1/2:
 *     A and B are the chunk's sentences cut at a uniform sentence
 *     boundary, so B starts where A ends in the same document. A chunk of
 *     one sentence takes the next sentence of its document (the previous
 *     one at the end); a chunk of a one-sentence document is replaced by a
 *     uniformly drawn chunk of a document with two sentences or more (in
 *     ../shared/data/lm, one paragraph per line, 35% of the documents:
 *     they give every real-next pair);
 *   - NSP label 1 otherwise: A is the chunk's first sentences (cut at a
 *     uniform boundary when it has two or more), B the sentences from a
 *     uniform start in a uniformly drawn other document, up to the target
 *     length less A's. (BERT puts the chunk's unused sentences back for
 *     the next example; here the next example is the next chunk.)
 *   - the pair is cut to T-3 tokens as BERT's truncate_seq_pair does: one
 *     token at a time from the longer side (B on a tie), from its front or
 *     back with probability 1/2 each;
 *   - row: [CLS] A [SEP] B [SEP], segment 0 up to the first [SEP], 1 after;
 *     mask 1 on these tokens; the rest [PAD] with mask 0, segment 0;
 *   - MLM: round(mlm_prob · n) (halves up, C's lround; Python's round takes
 *     halves to even) of the example's n non-special tokens (at least 1),
 *     uniformly without replacement, are predicted (label = the original
 *     id; -100 elsewhere); each becomes [MASK] with probability
 *     0.8, a uniform non-special id with probability 0.1, and stays with
 *     probability 0.1. Special means [CLS], [SEP], [PAD], [MASK], [UNK],
 *     every added token and every id without a token.
 * Every draw comes from the generator passed in, in a fixed order, so the
 * same generator state gives the same example.
 *
 * Training order: an epoch is one example from each training chunk, the
 * chunks in an order shuffled by a seed drawn from the loop's generator at
 * the epoch's start. The task's state (get_state) is {epoch (1-based, 0 =
 * none started), examples drawn in it, its shuffle seed, the number of
 * chunks}: with the generator the loop saves, a resumed run draws the same
 * batches. A micro-batch is B examples padded to the longest of them (at
 * most T positions), so short examples cost less.
 *
 * Validation: min(valid_max, chunks) examples from chunks spread evenly
 * over the validation documents, drawn as above from a generator seeded
 * with valid_seed at every evaluation, so every evaluation sees the same
 * examples; B at a time, with the model's training mode (dropout) switched
 * off. Figures: loss (mlm_loss + NSP loss), mlm_loss (mean cross-entropy
 * over the predicted tokens), mlm_acc (argmax = label over them), nsp_acc;
 * best = lowest loss.
 *
 * Memory. Read into memory (nlp_bert_docs_add): 4 bytes per token, 8 per
 * sentence and per document; a 21 MB corpus of English text
 * (../shared/data/lm/train.txt: 4.9M bert-base-uncased tokens, 230k
 * sentences, 147k documents) is 23 MB, and reading text holds the text and
 * a second copy of the ids for a moment (69 MB at the peak for that
 * corpus, tokenizer included). Through a cache (nlp_bert_docs_add_cached):
 * the documents are built once into a file, a block of text at a time
 * (train/data.h: 16 MiB of whole lines, tokenized in parallel; the ids go
 * to the file as each block is done, so memory holds one block and the
 * sentence and document offsets, 8 bytes each), then mapped: the ids and
 * offsets are read where examples need them, their pages let go after each
 * batch, and the memory that stays is the task's chunks (32 bytes a
 * chunk, about one per document of fewer than T tokens).
 *
 * The cache (in a directory: pretrain's RUN/data), named
 * NAME.PATHKEY.KEY.docs after the first input, where KEY covers every
 * input's path, size, modification time and inode and the tokenizer's
 * fingerprint; written atomically (a temporary renamed into place), all
 * integers little-endian:
 *
 *   offset  size     field
 *   0       4        magic "NLBD"
 *   4       4        version: uint32 = 1
 *   8       8        the tokenizer's fingerprint (tok/tokbin.h)
 *   16      4·n      ids: int32 (n tokens)
 *   ...     0 or 4   padding to a multiple of 8
 *   A       8·(S+1)  sentence offsets: uint64 (sent[] below)
 *   ...     8·(D+1)  document offsets: uint64 (doc[] below)
 *   end-56  56       n, S, D, lines, repaired, dropped: uint64; "NLBE"; version: uint32 = 1
 *
 * The offsets are checked when it is mapped (increasing, within the ids), so
 * a damaged cache is refused, never read past; one that does not fit is made
 * anew.
 *
 * Not here: the model and its losses (model/bert.c), the loop (loop.h),
 * the tokenizer (lib/tok).
 */
#ifndef NLP_TRAIN_BERT_H
#define NLP_TRAIN_BERT_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "model/model.h"
#include "tok/tokenizer.h"
#include "train/data.h"
#include "train/loop.h"

// --- documents

/* Documents as sentences of token ids, everything back to back: sentence s
 * is ids[sent[s] .. sent[s+1]) (never empty), document k is sentences
 * doc[k] .. doc[k+1] - 1 (at least one). Zero-initialize; fill with
 * nlp_bert_docs_add*; free with nlp_bert_docs_free. */
typedef struct nlp_bert_docs {
    int32_t *ids;
    size_t n;            /* tokens */
    size_t *sent;        /* [nsent + 1] (NULL while empty) */
    size_t nsent;
    size_t *doc;         /* [ndoc + 1] (NULL while empty) */
    size_t ndoc;
    uint64_t lines;      /* text lines read */
    uint64_t repaired;   /* text lines whose invalid UTF-8 was replaced (U+FFFD) */
    uint64_t dropped;    /* special tokens dropped from streams */
    size_t ids_cap, sent_cap, doc_cap;
    /* building a cache: ids before ids_base went to `sink` already */
    size_t ids_base;
    void *sink;
    /* mapped from a cache: ids, sent and doc point into it */
    nlp_mapped map;
    size_t max_line;     /* text: a longer line is NLP_EDATA naming file and line (0 = no limit) */
} nlp_bert_docs;

/* Appends the documents of a file ("-" = standard input): a token stream
 * when it starts with a stream magic (tok/tokbin.h), else text tokenized
 * with tk, in parallel on `threads` threads (<= 0: all CPUs). tk is needed
 * for streams too (sentence marks, special tokens). Errors: NLP_EIO,
 * NLP_EFORMAT (a corrupt stream, an id its header does not admit),
 * NLP_EDATA (a stream of a larger vocabulary than tk's; an llm.c shard id
 * not below it, naming file and token; the tokenizer's error naming file
 * and line), NLP_ENOMEM. On error d keeps the documents it had before the
 * call. */
int nlp_bert_docs_add(nlp_bert_docs *d, const char *path, const nlp_tokenizer *tk, int threads);

/* The same for text in memory (text[0..len), not kept); `name` names it
 * in messages. */
int nlp_bert_docs_add_text(nlp_bert_docs *d, const char *text, size_t len, const char *name,
                           const nlp_tokenizer *tk, int threads);

/* The documents of paths[0..n) (in order, as nlp_bert_docs_add appends
 * them) through a cache in `dir` (created), d empty: an existing cache of
 * the same inputs and tokenizer is mapped (*built 0), else it is made and
 * mapped (*built 1), or with `dry` not made (*built -1, d stays empty).
 * Standard input or a pipe among the inputs, or dir NULL: read into memory
 * (*built 0). Errors as nlp_bert_docs_add, and NLP_EIO for a cache that
 * cannot be written (nothing is left behind). */
int nlp_bert_docs_add_cached(nlp_bert_docs *d, const char *const *paths, size_t n, const nlp_tokenizer *tk,
                             int threads, const char *dir, int dry, int *built);

/* Bytes of d held in memory (0 when mapped). */
uint64_t nlp_bert_docs_memory(const nlp_bert_docs *d);

/* Lets the pages of mapped documents go (they stay in the page cache):
 * the task does after every batch. */
void nlp_bert_docs_release(const nlp_bert_docs *d);

void nlp_bert_docs_free(nlp_bert_docs *d);

// --- the task

typedef struct nlp_bert_opts {
    int B, T;                   /* examples per micro-batch; positions per example (>= 5) */
    double mlm_prob;            /* share of the non-special tokens predicted, (0, 1] */
    double short_prob;          /* probability of a shorter target length, [0, 1] */
    int valid_max;              /* validation examples at most (>= 1) */
    uint64_t valid_seed;        /* the validation examples' generator */
    const char *tokenizer_path; /* names the tokenizer in messages (NULL: "the tokenizer") */
} nlp_bert_opts;

#define NLP_BERT_OPTS_INIT \
    {.B = 8, .T = 128, .mlm_prob = 0.15, .short_prob = 0.1, .valid_max = 2000, .valid_seed = 12345}

/* A chunk: sentences first .. end - 1 of document doc. */
typedef struct nlp_bert_chunk {
    size_t doc, first, end;
} nlp_bert_chunk;

/* The chunks of one set of documents, and those of documents with two
 * sentences or more (multi: indices into c). */
typedef struct nlp_bert_chunks {
    const nlp_bert_docs *docs;
    nlp_bert_chunk *c;
    size_t n;
    size_t *multi;
    size_t nmulti;
} nlp_bert_chunks;

typedef struct nlp_bert_task {
    nlp_bert_opts o;
    nlp_bert_chunks train, valid;   /* valid.n = 0: no validation */
    int32_t cls, sep, mask, pad;
    size_t V;                       /* the tokenizer's vocabulary size */
    uint8_t *special;               /* [V] 1 = never predicted nor drawn as a replacement */
    int32_t *normal;                /* the other ids, the random replacements */
    size_t nnormal;
    /* training position */
    size_t *order;                  /* the epoch's chunk order */
    uint64_t epoch, drawn, epoch_seed;
    uint64_t batches;               /* drawn by this process */
    /* scratch: one micro-batch (ids, labels, type ids, mask [B,T]; nsp [B]) */
    int32_t *buf;
    int *pos;                       /* [T] */
} nlp_bert_task;

/* What nlp_bert_task_example made (for tests and diagnostics). Sentence
 * ranges are before truncation; cut_* count the tokens truncated from each
 * end of A and B. */
typedef struct nlp_bert_example {
    int len;                    /* positions used: len_a + len_b + 3 */
    int len_a, len_b;
    int nsp;                    /* 0 = B continues A, 1 = B random */
    int predicted;              /* MLM positions */
    size_t chunk;               /* the chunk used (another one when it was replaced) */
    size_t doc_a, a_first, a_end, doc_b, b_first, b_end;
    int cut_a_front, cut_a_back, cut_b_front, cut_b_back;
} nlp_bert_example;

/* Sets up t and the nlp_task that drives it, for documents `train` and
 * `valid` (NULL or without documents: no validation), both kept by pointer
 * (they must outlive t), with tokenizer tk (only read during the call).
 * Errors: NLP_EFORMAT when tk has no [CLS], [SEP], [MASK] or [PAD] (naming
 * it and o->tokenizer_path: not a BERT tokenizer), NLP_EDATA when a set of
 * documents has fewer than two
 * documents or none with two sentences (NSP needs both), when a document
 * id exceeds the vocabulary; NLP_EINVAL for options out of range;
 * NLP_ENOMEM. Free with nlp_bert_task_free. */
int nlp_bert_task_init(nlp_bert_task *t, nlp_task *task, const nlp_bert_docs *train, const nlp_bert_docs *valid,
                       const nlp_tokenizer *tk, const nlp_bert_opts *o);
void nlp_bert_task_free(nlp_bert_task *t);

/* Builds the example of training chunk `chunk` (< t->train.n) drawing from
 * r, as the header describes, into rows of T entries each: ids, labels
 * (-100 = not predicted), type_ids, mask, and *nsp; positions past
 * info->len are padding. info may be NULL. Returns the example's length. */
int nlp_bert_task_example(nlp_bert_task *t, size_t chunk, nlp_rng *r, int32_t *ids, int32_t *labels,
                          int32_t *type_ids, int32_t *mask, int32_t *nsp, nlp_bert_example *info);

#endif
