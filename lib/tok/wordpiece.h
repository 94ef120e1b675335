/*
 * wordpiece.h — the WordPiece model (BERT's): one word to token ids by
 * greedy longest-match-first, as HF tokenizers' WordPiece does it.
 *
 * Encoding a word: from its first character, take the longest piece that is
 * a token, then continue after it with the longest piece that, spelled with
 * continuing_subword_prefix ("##") in front, is a token, and so on. If some
 * position has no matching piece, or the word has more than
 * max_input_chars_per_word characters (code points), the whole word becomes
 * the one unk_token. With the lecture's vocabulary "bugs" -> b ##u ##gs,
 * "hug" -> hu ##g (not hug: only "hu" is a token), "bum" -> [UNK] (no ##m).
 *
 * Lookups: two open-addressing tables built once, one over every token
 * (word starts) and one over the tokens that start with the prefix, keyed
 * without it (continuations); candidate pieces are never longer than the
 * longest token of the table, so a word costs a handful of probes per piece.
 *
 * Not here: splitting text into words (pretok.h), caching (wordcache.h),
 * training (wordpiece_train.h), file formats (tokjson.h, tokfiles.h).
 */
#ifndef NLP_TOK_WORDPIECE_H
#define NLP_TOK_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

#include "tok/encoding.h"
#include "tok/vocab.h"

#define NLP_WORDPIECE_UNK "[UNK]"
#define NLP_WORDPIECE_PREFIX "##"
#define NLP_WORDPIECE_MAX_CHARS 100

/* The model's options, as HF's WordPiece fields. Strings are owned by
 * whoever owns the struct; NULL (or 0) means HF's default: "[UNK]", "##",
 * 100. */
typedef struct nlp_wordpiece_opts {
    char *unk_token;
    char *continuing_subword_prefix;
    size_t max_input_chars_per_word;
} nlp_wordpiece_opts;

typedef struct nlp_wordpiece nlp_wordpiece;

/* Builds a model over `vocab` (kept by pointer: it must outlive the model).
 * The unk_token must be in the vocabulary: HF loads a model without it and
 * fails at the first word that needs it, nlpipe refuses it here. Returns 0,
 * NLP_EFORMAT (an empty vocabulary, or no unk_token in it) or NLP_ENOMEM.
 * Free with nlp_wordpiece_free. */
int nlp_wordpiece_new(nlp_wordpiece **out, const nlp_vocab *vocab, const nlp_wordpiece_opts *opts);
void nlp_wordpiece_free(nlp_wordpiece *m);

/* Appends the ids of word w[0..n) (well-formed UTF-8) to out. Returns 0,
 * NLP_EDATA when the word needs the unknown token and the vocabulary has
 * none ("the word 'x' needs the unknown token '[UNK]', which is not in the
 * vocabulary"), or NLP_ENOMEM. Thread safe. */
int nlp_wordpiece_encode_word(const nlp_wordpiece *m, const char *w, size_t n, nlp_ids *out);

/* Id of the unknown token, or -1 if the vocabulary lacks it. */
int32_t nlp_wordpiece_unk_id(const nlp_wordpiece *m);

#endif
