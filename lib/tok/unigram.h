/*
 * unigram.h — HF tokenizers' Unigram model (tokenizer.json "type":
 * "Unigram", what HF's converters make of sentencepiece unigram models):
 * one word to ids by the best path over the pieces' scores.
 *
 * Encoding a word (HF's Unigram::encode_optimized and tokenize):
 *   1. every vocabulary token is a piece (tokens such as <unk>, <s> and
 *      <0x41> included, as HF's trie holds them); from each character
 *      position, every piece that starts there extends the best path to
 *      where it ends by its score (f64); a position from which no piece of
 *      exactly one character starts also gets the unknown piece, scored the
 *      lowest score of the vocabulary minus 10. A tie keeps the path found
 *      first (the earlier start).
 *   2. consecutive unknown pieces (and the unknown token's own piece) are
 *      fused into one string; a string that is not a token is the unknown
 *      id, or with byte_fallback the <0xNN> ids of its UTF-8 bytes when all
 *      256 are tokens.
 * Without an unk_id, a word that needs it is an error (HF's "Encountered an
 * unknown token but `unk_id` is missing").
 *
 * Not here: splitting text into words (pretok.h), sentencepiece's own
 * .model files (spm.h), file formats (tokjson.h).
 */
#ifndef NLP_TOK_UNIGRAM_H
#define NLP_TOK_UNIGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "tok/encoding.h"
#include "tok/vocab.h"

typedef struct nlp_unigram_opts {
    int32_t unk_id; /* -1: none */
    int byte_fallback;
} nlp_unigram_opts;

typedef struct nlp_unigram nlp_unigram;

/* Per-thread scratch; zero-initialize, free with nlp_unigram_scratch_free. */
typedef struct nlp_unigram_scratch {
    void *best;
    size_t cap;
} nlp_unigram_scratch;
void nlp_unigram_scratch_free(nlp_unigram_scratch *s);

/* Builds the model over `vocab` (ids 0..size, no holes; kept by pointer) and
 * scores[id]. Returns 0, NLP_EFORMAT (an empty vocabulary, a hole, unk_id
 * out of range: the message says which) or NLP_ENOMEM. */
int nlp_unigram_new(nlp_unigram **out, const nlp_vocab *vocab, const double *scores, const nlp_unigram_opts *o);
void nlp_unigram_free(nlp_unigram *m);

/* Appends the ids of word w[0..n) to out. Returns 0, NLP_EDATA (a word that
 * needs the unknown id, which the model has not) or NLP_ENOMEM. */
int nlp_unigram_encode_word(const nlp_unigram *m, nlp_unigram_scratch *sc, const char *w, size_t n, nlp_ids *out);

#endif
