/*
 * charsmap.h — sentencepiece's precompiled character map: the normalization
 * rules of nmt_nfkc, nfkc, nfkc_cf and the others, as a .model file's
 * normalizer_spec.precompiled_charsmap holds them (and HF tokenizers'
 * Precompiled normalizer, base64 in tokenizer.json).
 *
 * The blob, little-endian:
 *   uint32 T          size in bytes of the trie that follows (a multiple of 4)
 *   uint32 unit[T/4]  a Darts-clone double array whose keys are UTF-8
 *                     strings (one character or a short sequence) and whose
 *                     values are offsets into the strings below
 *   char   norm[]     the replacement strings, each ended by a NUL byte
 *
 * A Darts-clone unit u: has_leaf = bit 8, value = u & 0x7FFFFFFF (in the
 * unit that the leaf edge leads to), label = u & 0x800000FF (a value unit's
 * bit 31 keeps it from matching a byte), offset = (u >> 10) << (8 if bit 9
 * else 0). From node p, byte c leads to p ^ offset(unit[p]) ^ c when that
 * unit's label is c.
 *
 * Two ways to read it:
 *   sentencepiece  at each position, the longest key (among the first 32
 *                  that are prefixes of the text, as spm's normalizer.cc
 *                  looks) is replaced by its string (tok/spm.h)
 *   HF tokenizers  the text is cut into extended grapheme clusters; a
 *                  cluster under 6 bytes is replaced by the string of the
 *                  first (shortest) key that is a prefix of it, if any
 *                  (the rest of the cluster is then dropped, as HF does);
 *                  otherwise each of its characters is, the same way
 *                  (spm_precompiled's transform, under HF's Precompiled)
 *
 * The arrays come from a file: every index and offset is checked, so a
 * corrupt map gives no match where it points outside, never a bad read.
 *
 * Not here: white space handling and the dummy prefix (tok/spm.h, Metaspace).
 */
#ifndef NLP_TOK_CHARSMAP_H
#define NLP_TOK_CHARSMAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"

typedef struct nlp_charsmap {
    uint32_t *unit; /* owned */
    size_t nunit;
    char *norm; /* owned; the strings, plus one NUL past the end */
    size_t nnorm;
    uint8_t first[32]; /* bit c: the root has an edge for byte c */
} nlp_charsmap;

/* Reads blob[0..n) into *m (copied). Returns 0, or NLP_EFORMAT with a
 * message saying what is wrong (the caller prefixes the file and field), or
 * NLP_ENOMEM. Free with nlp_charsmap_free. */
int nlp_charsmap_init(nlp_charsmap *m, const void *blob, size_t n);
void nlp_charsmap_free(nlp_charsmap *m);

/* 1 if some key starts with byte c. */
static inline int nlp_charsmap_starts(const nlp_charsmap *m, uint8_t c) { return m->first[c >> 3] >> (c & 7) & 1; }

/* For an ASCII byte c: bit 0, c alone is a key; bit 1, some key goes on
 * from c with an ASCII byte. Neither: c followed by an ASCII byte (or the
 * end) starts no match, whatever follows (the fast path of plain text). */
int nlp_charsmap_ascii_tail(const nlp_charsmap *m, uint8_t c);

/* sentencepiece: the longest of the first 32 keys that are prefixes of
 * s[0..n): its length (0: none), and *out, *outn its replacement. */
size_t nlp_charsmap_longest(const nlp_charsmap *m, const char *s, size_t n, const char **out, size_t *outn);

/* HF: the shortest key that is a prefix of s[0..n) (a NUL byte ends the
 * search): 1 and its replacement, or 0. */
int nlp_charsmap_first(const nlp_charsmap *m, const char *s, size_t n, const char **out, size_t *outn);

/* HF's Precompiled normalizer on well-formed UTF-8 s[0..n) (see above),
 * appended to out. Returns 0 or NLP_ENOMEM. */
int nlp_charsmap_normalize_hf(const nlp_charsmap *m, const char *s, size_t n, nlp_buf *out);

#endif
