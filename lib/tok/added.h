/*
 * added.h — added tokens (HF's "added_tokens"): strings such as
 * <|endoftext|> or [CLS] that are cut out of the input whole, before the
 * normalizer and pre-tokenizer see it, and become one id each.
 *
 * Matching follows HF's AddedVocabulary: leftmost-longest over all tokens;
 * single_word tokens only match when not glued to word characters (\w) on
 * either side; lstrip/rstrip tokens also swallow the white space on their
 * left/right. Tokens with normalized = 0 (special tokens, normally) are
 * matched on the raw input; normalized ones on each normalized piece of text
 * between those. With split_special (tokenize --special-tokens split) the
 * special ones are not matched at all: their text is tokenized as ordinary
 * text.
 *
 * Not here: where their ids come from (the tokenizer's vocabulary), the
 * template that adds [CLS]/[SEP] (postproc.h).
 */
#ifndef NLP_TOK_ADDED_H
#define NLP_TOK_ADDED_H

#include <stddef.h>
#include <stdint.h>

typedef struct nlp_added_token {
    int32_t id;
    char *content; /* owned */
    int single_word, lstrip, rstrip, normalized, special;
} nlp_added_token;

/* Frees the contents of t[0..n) and the array. */
void nlp_added_free(nlp_added_token *t, size_t n);

/* Deep copy. Returns 0 or NLP_ENOMEM. */
int nlp_added_copy(const nlp_added_token *t, size_t n, nlp_added_token **out);

/* A compiled matcher over a list of added tokens (kept by pointer: the list
 * must outlive it). */
typedef struct nlp_added_matcher nlp_added_matcher;

/* Builds a matcher for the tokens with normalized == `normalized`. NULL on
 * ENOMEM. Free with nlp_added_matcher_free. */
nlp_added_matcher *nlp_added_matcher_new(const nlp_added_token *t, size_t n, int normalized);
void nlp_added_matcher_free(nlp_added_matcher *m);

/* 1 if the matcher has no tokens (or only special ones and split_special). */
int nlp_added_matcher_empty(const nlp_added_matcher *m, int split_special);

/* Finds the next match in s[0..n) at or after `from`, not starting before
 * `floor` (the end of the previous match, which lstrip may not cross).
 * Returns 1 with *start and *end (the span replaced by the token, strip
 * included) and *id set, or 0 if there is none. */
int nlp_added_next(const nlp_added_matcher *m, const char *s, size_t n, size_t from, size_t floor,
                   int split_special, size_t *start, size_t *end, int32_t *id);

#endif
