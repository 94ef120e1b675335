/*
 * alphabet.h — the initial alphabet of the subword trainers: the characters
 * of the counted words, weighted by the word counts, cut to the most
 * frequent ones as HF's limit_alphabet does.
 *
 * Words are read as the trainers read them: UTF-8 characters (an ill-formed
 * byte counts as U+FFFD; counted words are repaired already), or under
 * byte_level one GPT-2 character per byte (text/bytelevel.h).
 *
 * Not here: the spellings built on the characters (prefixes, suffixes) and
 * their ids, which differ per trainer (bpe_train.c, wordpiece_train.c).
 */
#ifndef NLP_TOK_ALPHABET_H
#define NLP_TOK_ALPHABET_H

#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"
#include "text/bytelevel.h"
#include "text/utf8.h"
#include "tok/wordcount.h"

typedef struct nlp_alphabet {
    int32_t *cp;      /* the kept characters, sorted by code point */
    size_t n;
    size_t symbols;   /* characters in the distinct words, all of them */
    nlp_idmap kept;   /* code point -> 1 for the kept ones */
} nlp_alphabet;

/* Counts the characters of wc's words and keeps all of them, or with
 * limit > 0 the `limit` most frequent (among equal counts the smaller code
 * point). byte_alphabet (with byte_level): all 256 byte characters are kept,
 * before any other. Returns 0 or NLP_ENOMEM; free with nlp_alphabet_free
 * either way. */
int nlp_alphabet_build(nlp_alphabet *a, const nlp_wordcount *wc, int byte_level, int byte_alphabet, size_t limit);
void nlp_alphabet_free(nlp_alphabet *a);

static inline int nlp_alphabet_has(const nlp_alphabet *a, int32_t cp)
{
    return nlp_idmap_find(&a->kept, (uint32_t)cp) >= 0;
}

/* The next character of word w[0..n) at *i (advanced). */
static inline int32_t nlp_alphabet_next(const char *w, size_t n, size_t *i, int byte_level)
{
    if (byte_level) return nlp_bytelevel_cp((uint8_t)w[(*i)++]);
    int32_t cp = nlp_utf8_next(w, n, i);
    return cp < 0 ? NLP_UTF8_REPLACEMENT : cp;
}

#endif
