/*
 * tokenizer.h — a whole tokenizer: added tokens -> normalizer ->
 * pre-tokenizer -> model -> post-processor (template, truncation, padding),
 * and decoder back, as HF tokenizers' tokenizer.json describes it.
 *
 * Two levels:
 *   nlp_tok_spec   the declarative description (what tokenizer.json says):
 *                  plain structs the file readers fill in and the writers
 *                  read (tokjson.h, tokfiles.h), and the trainers produce.
 *   nlp_tokenizer  the compiled, immutable handle built from a spec: merge
 *                  tables, byte maps, added-token matchers. Safe to share
 *                  between threads; each thread encodes with its own
 *                  nlp_tok_state (scratch buffers and a word cache).
 *
 * Encoding one text:
 *   1. added tokens with normalized = false (special tokens) are cut out of
 *      the raw text (unless split_special: then special ones are plain text)
 *   2. each piece between them is normalized, normalized added tokens cut
 *      out, the rest pre-tokenized into words
 *   3. each word goes through the model (BPE or WordPiece), memoized per word
 *   4. nlp_tokenizer_encode then truncates (budget minus the template's
 *      tokens) and applies the template (type ids, [CLS]/[SEP]); padding is
 *      for the caller, who knows the batch (postproc.h).
 * Text should be well-formed UTF-8: repair it first (text/utf8.h) to get
 * the peers' results; ill-formed bytes never crash, they are just symbols.
 *
 * Model types: BPE (bpe.h), WordPiece (wordpiece.h), HF's Unigram
 * (unigram.h), and sentencepiece's own models (spm.h). The model is a
 * tagged union: a model adds a type, its fields in the spec, and one case
 * in compile/encode, without touching the rest of the pipeline.
 *
 * A sentencepiece model (NLP_MODEL_SPM, read from a .model file) is a whole
 * tokenizer by itself: its own normalizer, white-space rules and model,
 * applied to the whole text as spm_encode does, and its own decoder; the
 * spec then has no normalizer, pre-tokenizer, decoder or added tokens, its
 * vocabulary is the model's pieces, and its control pieces (<s>, </s>,
 * <pad>...) are the special ids. The text of a control or user-defined
 * piece is matched only as the model matches it (user-defined pieces are;
 * control pieces are not: "<s>" in a text is three characters, as in
 * sentencepiece).
 *
 * Not here: reading and writing files (tokjson.h, tokfiles.h), training
 * (bpe_train.h, wordpiece_train.h), binary token streams (tokbin.h).
 */
#ifndef NLP_TOK_TOKENIZER_H
#define NLP_TOK_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"
#include "tok/added.h"
#include "tok/bpe.h"
#include "tok/decoder.h"
#include "tok/encoding.h"
#include "tok/normalize.h"
#include "tok/postproc.h"
#include "tok/pretok.h"
#include "tok/spm.h"
#include "tok/unigram.h"
#include "tok/vocab.h"
#include "tok/wordpiece.h"

typedef enum nlp_model_type {
    NLP_MODEL_BPE,
    NLP_MODEL_WORDPIECE,
    NLP_MODEL_UNIGRAM, /* HF's Unigram (tokenizer.json) */
    NLP_MODEL_SPM,     /* a sentencepiece .model, run as sentencepiece does */
} nlp_model_type;

/* Everything a tokenizer is. Every pointer is owned by the spec and freed
 * by nlp_tok_spec_free; zero-initialize before filling in. */
typedef struct nlp_tok_spec {
    nlp_model_type model;
    nlp_vocab *vocab; /* the model's vocabulary */
    /* BPE */
    int32_t *merges; /* 2 * n_merges ids, in rank order */
    size_t n_merges;
    nlp_bpe_opts bpe;
    /* WordPiece */
    nlp_wordpiece_opts wp;
    /* Unigram: a score per vocabulary id (n_scores of them) */
    double *scores;
    size_t n_scores;
    nlp_unigram_opts uni;
    /* sentencepiece: the bytes of the .model file (they are the model) */
    uint8_t *spm_data;
    size_t spm_len;
    /* pipeline */
    nlp_norm_step *norm;
    size_t n_norm;
    nlp_pretok_step *pretok;
    size_t n_pretok;
    nlp_postproc post;
    nlp_dec_step *dec;
    size_t n_dec;
    nlp_added_token *added;
    size_t n_added;
    nlp_truncation trunc;
    nlp_padding pad;
} nlp_tok_spec;

void nlp_tok_spec_free(nlp_tok_spec *s);

/* Deep copy. Returns 0 or NLP_ENOMEM (dst is then empty). */
int nlp_tok_spec_copy(nlp_tok_spec *dst, const nlp_tok_spec *src);

/* The two standard BPE pipelines. */
typedef enum nlp_tok_pipeline {
    NLP_PIPE_BYTELEVEL,  /* GPT-2: ByteLevel pre-tokenizer (no prefix space, GPT-2 pattern),
                            ByteLevel post-processor and decoder */
    NLP_PIPE_WHITESPACE, /* classic: WhitespaceSplit pre-tokenizer; BPEDecoder when the
                            model has an end-of-word suffix, else no decoder */
    NLP_PIPE_BERT,       /* BERT: BertNormalizer, BertPreTokenizer, WordPiece decoder
                            (prefix = the suffix argument, default ##; cleanup on) */
} nlp_tok_pipeline;

/* Replaces spec's normalizer, pre-tokenizer, post-processor and decoder
 * with a standard pipeline (suffix: the end-of-word suffix for the BPE
 * decoder, the WordPiece prefix for BERT, or NULL). Returns 0 or NLP_ENOMEM. */
int nlp_tok_spec_pipeline(nlp_tok_spec *s, nlp_tok_pipeline kind, const char *suffix);

/* The BERT normalizer's settings of a BERT pipeline (after
 * nlp_tok_spec_pipeline(NLP_PIPE_BERT)): lowercase, and strip_accents
 * (-1 = follow lowercase, as HF's null). */
void nlp_tok_spec_bert_case(nlp_tok_spec *s, int lowercase, int strip_accents);

/* The post-processor BERT uses, when the spec's vocabulary or added tokens
 * have both cls and sep: [CLS] $A [SEP], pair [CLS] $A [SEP] $B [SEP]
 * (type ids 0 for A, 1 for B; HF's BertProcessing). Returns 1 when set, 0
 * when a token is missing (the post-processor is left as it was), or
 * NLP_ENOMEM. */
int nlp_tok_spec_bert_post(nlp_tok_spec *s, const char *cls, const char *sep);

typedef struct nlp_tokenizer nlp_tokenizer;

/* Compiles a spec. On success the tokenizer owns the spec's contents and
 * *spec is zeroed; on failure the spec is left intact for the caller to
 * free. Errors: NLP_EFORMAT (inconsistent spec: merges or template tokens
 * missing from the vocabulary, an added token's id taken by another token
 * — the message says which), NLP_ENOMEM. Free with nlp_tokenizer_free. */
int nlp_tokenizer_new(nlp_tokenizer **out, nlp_tok_spec *spec);
void nlp_tokenizer_free(nlp_tokenizer *tk);

/* A new tokenizer: tk with the tokens names[0..n) that it lacks added as
 * special tokens (cut out of raw text whole, not normalized, dropped by a
 * decoding that skips special tokens), the first one it lacks with id
 * `first`, the next with first + 1, and so on (first at least tk's
 * vocabulary size: a model may have rows past the tokenizer's ids); those
 * it has keep their ids. *added (may be NULL) gets how many were added (0:
 * *out is tk's copy). For the tokens a model gains before training (GPT's
 * [START]/[DELIM]/[EXTRACT] of fine-tuning, T5's sentinels, BART's
 * <mask>). Errors: NLP_EINVAL (first below the vocabulary size, an empty
 * name), NLP_EFORMAT (a sentencepiece model: it takes no added tokens),
 * NLP_ENOMEM. Free *out with nlp_tokenizer_free. */
int nlp_tokenizer_add_special(nlp_tokenizer **out, const nlp_tokenizer *tk, const char *const *names, size_t n,
                              int32_t first, size_t *added);

/* The spec the tokenizer was built from (for writing it out). */
const nlp_tok_spec *nlp_tokenizer_spec(const nlp_tokenizer *tk);

/* 1 if a long text may be cut where nlp_tokenizer_cut says and its pieces
 * encoded one by one (nlp_tokenizer_encode_ids) with the same ids as the
 * whole text: the pre-tokenizer splits at white space (GPT-2's pattern,
 * Whitespace, WhitespaceSplit, BertPreTokenizer), the normalizers work
 * character by character, and no added token holds or strips white space
 * (tokenizer.c says why each step qualifies). Then memory for a line need
 * not grow with the line. */
int nlp_tokenizer_cuttable(const nlp_tokenizer *tk);

/* The last place p (0 < p < n) where s may be cut: s[p] is a space and the
 * character before it is not white space. 0 if there is none. */
size_t nlp_tokenizer_cut(const char *s, size_t n);

/* 1 + the largest id of the model's vocabulary and the added tokens. */
size_t nlp_tokenizer_vocab_size(const nlp_tokenizer *tk);

/* Token string of an id (model or added), or NULL if the id has none. */
const char *nlp_tokenizer_id_to_token(const nlp_tokenizer *tk, int32_t id, size_t *n);

/* Id of a token string (added tokens first, then the model), or -1. */
int32_t nlp_tokenizer_token_to_id(const nlp_tokenizer *tk, const char *s, size_t n);

/* The tokens that end a document in the tokenizers nlpipe meets, in the
 * order tools look for them when none is named: <|endoftext|> (GPT-2),
 * </s>, <eos>, [SEP] (BERT). NULL-terminated. */
extern const char *const nlp_eot_tokens[];

/* 1 if id is a special added token. */
int nlp_tokenizer_is_special(const nlp_tokenizer *tk, int32_t id);

/* Per-thread encoding state; NULL on ENOMEM. Free with nlp_tok_state_free. */
typedef struct nlp_tok_state nlp_tok_state;
nlp_tok_state *nlp_tok_state_new(const nlp_tokenizer *tk);
void nlp_tok_state_free(nlp_tok_state *st);

/* Steps 1-3 for one text: appends its ids to out (no template). Returns 0,
 * NLP_EDATA (normalizer on ill-formed text) or NLP_ENOMEM. */
int nlp_tokenizer_encode_ids(const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n,
                             int split_special, nlp_ids *out);

/* The same ids as nlp_tokenizer_encode_ids with split_special (special
 * tokens' text is ordinary text), with the bytes of s each token comes
 * from: off gets two values per token, [start, end) in s, through the
 * normalizer (a token that comes from part of a character's normalized
 * form covers the whole character, and its combining marks), the
 * pre-tokenizer and the model (a WordPiece or BPE token covers the bytes
 * its text spells; an unknown token, which stands for a whole word, the
 * whole word). Exact for normalizers that work on a character and its
 * marks (BERT's, lowercase, strip accents, NFC/NFD/NFKC/NFKD); with
 * others, words (or the whole text) are the units. Errors: NLP_EINVAL for
 * sentencepiece and unigram models and byte-level or metaspace
 * pre-tokenizers (their pieces are not the text's bytes) and for texts
 * over 2 GiB; NLP_EDATA, NLP_ENOMEM as nlp_tokenizer_encode_ids. ids and
 * off are appended to. */
int nlp_tokenizer_encode_offsets(const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n, nlp_ids *ids,
                                 nlp_ids *off);

typedef struct nlp_encode_opts {
    int add_special;              /* apply the template's special tokens */
    int split_special;            /* special tokens' text is ordinary text */
    const nlp_truncation *trunc;  /* NULL: the spec's truncation */
    int unk_passthrough;          /* see NLP_TOK_PASSTHROUGH (encoding.h) */
} nlp_encode_opts;

/* unk_passthrough: a character a (classic, unfused) BPE model has no token
 * for, or a character sentencepiece calls unknown, comes out as the negative
 * id NLP_TOK_PASSTHROUGH(cp, final) instead of the unknown token, so that a
 * writer of pieces can show it (encoding.h). */

/* The whole encoding of a (and b, when b != NULL: a pair) into out (reset
 * first): ids, type ids, attention and special masks, truncated and with the
 * template applied (not padded). Returns 0, NLP_EINVAL from truncation (see
 * nlp_truncate), NLP_EDATA or NLP_ENOMEM. */
int nlp_tokenizer_encode(const nlp_tokenizer *tk, nlp_tok_state *st, const char *a, size_t na, const char *b,
                         size_t nb, const nlp_encode_opts *opt, nlp_encoding *out);

/* Appends the text of ids[0..n) to out (byte-exact for byte-level models).
 * skip_special drops special added tokens. Returns 0, NLP_EDATA for an id
 * out of range or without a token ("id N is out of range (vocabulary size
 * V)"; *bad gets its index when bad != NULL), or NLP_ENOMEM. Thread safe. */
int nlp_tokenizer_decode(const nlp_tokenizer *tk, const int32_t *ids, size_t n, int skip_special, nlp_buf *out,
                         size_t *bad);

#endif
