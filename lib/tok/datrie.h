/*
 * datrie.h — a double-array trie over byte strings with an int32 value per
 * key: the dictionary behind the sentencepiece and Unigram models, walked one
 * byte at a time while a lattice is built (every piece that starts at a
 * position is found in one walk, without allocating).
 *
 * Layout: node s has children at base[s] + c for each byte c; a cell t is a
 * child of s when check[t] == s. The root is cell 0. A node that ends a key
 * holds that key's value (else -1). Built once from a sorted copy of the
 * keys (the classic first-fit placement over a list of free cells), then
 * read-only: safe to share between threads.
 *
 * Not here: the Darts-clone arrays that sentencepiece stores in its files
 * (tok/charsmap.h reads those).
 */
#ifndef NLP_TOK_DATRIE_H
#define NLP_TOK_DATRIE_H

#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"

typedef struct nlp_da_cell {
    int32_t base, check, value;
} nlp_da_cell;

typedef struct nlp_datrie {
    nlp_da_cell *c; /* owned; cells 0..n) */
    size_t n;
} nlp_datrie;

/* Builds a trie of keys[i] -> vals[i] (i < n; keys non-empty byte strings,
 * vals anything but -1, which marks no key). A key given twice keeps its first value. Returns 0 or
 * NLP_ENOMEM (also for more than 2^30 cells). Free with nlp_datrie_free. */
int nlp_datrie_build(nlp_datrie *t, const nlp_span *keys, const int32_t *vals, size_t n);
void nlp_datrie_free(nlp_datrie *t);

/* One step from node *s along byte b: 1 and *s moved, or 0 (no such edge).
 * No bounds check: every base + byte is a cell (the array ends 256 cells
 * past the last one used, free cells never match). */
static inline int nlp_datrie_step(const nlp_datrie *t, int32_t *s, uint8_t b)
{
    int32_t x = t->c[*s].base + b;
    if (t->c[x].check != *s) return 0;
    *s = x;
    return 1;
}

/* The value at node s (-1 when no key ends there). */
static inline int32_t nlp_datrie_value(const nlp_datrie *t, int32_t s) { return t->c[s].value; }

/* The value of key s[0..n), or -1. */
int32_t nlp_datrie_find(const nlp_datrie *t, const char *s, size_t n);

#endif
