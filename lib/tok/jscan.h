/*
 * jscan.h — a fast path through the large, flat parts of tokenizer files.
 *
 * GPT-2's encoder.json is a megabyte of {"token": id} and a tokenizer.json
 * holds the same object plus an array of merges. jansson builds a tree of
 * a hundred thousand small allocations for them, which made loading GPT-2
 * take 50 ms. These functions read those shapes straight into a vocabulary
 * and a merge list.
 *
 * They are a fast path only: each either succeeds with the very result that
 * jansson and the readers over it (tokfiles.c, tokjson.c) would give, or
 * says "not handled" (0) and leaves the text to them, so that every error
 * message still comes from one place. They never report an error of the
 * input themselves; a return of NLP_ENOMEM (negative) is the only failure.
 */
#ifndef NLP_TOK_JSCAN_H
#define NLP_TOK_JSCAN_H

#include "tok/vocab.h"

#include <stddef.h>
#include <stdint.h>

/* Skips white space as JSON defines it. */
size_t nlp_jscan_ws(const char *s, size_t n, size_t i);

/* Skips one JSON value at s[*i] by its structure only (strings are not
 * decoded; inside arrays and objects only quotes and brackets are looked
 * at): 1 and *i past it, or 0 when the text breaks off, a bracket does not
 * match, or it nests deeper than jansson allows. */
int nlp_jscan_skip(const char *s, size_t n, size_t *i);

/* Scans the object at s[o0] (not past lim) for the members keys[0..nk):
 * the value of keys[k] spans [spans[k][0], spans[k][1]) (the last one where
 * a key repeats, as jansson keeps it; [0, 0) where it is absent). Keys are
 * compared decoded. 1 and *end past the object; -1: no object by the
 * structural scan (jansson will say what it is); NLP_ENOMEM. */
int nlp_jscan_members(const char *s, size_t o0, size_t lim, const char *const *keys, size_t nk, size_t (*spans)[2],
                      size_t *end);

/* The same for the object that makes up the whole text s[0, n) (with white
 * space around it); -1 also where anything else follows it. */
int nlp_jscan_doc_members(const char *s, size_t n, const char *const *keys, size_t nk, size_t (*spans)[2]);

/* What the fast path needs to know of a tokenizer.json, in one pass: where
 * the top-level "model" is an object (the last "model", as jansson keeps),
 * its span and those of its "vocab" and "merges"; [0, 0) where absent. */
typedef struct nlp_jscan_tok {
    size_t model[2], vocab[2], merges[2];
} nlp_jscan_tok;

/* 1: the text is one object (by the structural scan) and *t says what it
 * holds; -1: it is no object; NLP_ENOMEM. */
int nlp_jscan_tokenizer(const char *s, size_t n, nlp_jscan_tok *t);

/* Reads the object {"token": id, ...} at [o0, o1) into a new vocabulary, as
 * tokfiles.c's read_vocab_json and tokjson.c's read_vocab accept it: ids
 * non-negative integers below INT32_MAX - 1 and below the number of tokens
 * plus NLP_VOCAB_MAX_HOLES, no token twice, no id twice. 1 and *out, 0 (not
 * handled: anything else, including every error), or NLP_ENOMEM. With end
 * NULL the object must fill [o0, o1); else it ends anywhere before o1, at
 * *end. */
int nlp_jscan_vocab(const char *s, size_t o0, size_t o1, size_t *end, nlp_vocab **out);

/* Reads the array of merges at [a0, a1) — each "a b" or ["a", "b"] — as
 * pairs of ids of v, as tokjson.c's read_merge does. 1 and *out (2 ids a
 * merge, *count merges), 0 (not handled), or NLP_ENOMEM. */
int nlp_jscan_merges(const char *s, size_t a0, size_t a1, const nlp_vocab *v, int32_t **out, size_t *count);

#endif
