/*
 * utf8.h — UTF-8 decoding, validation, repair and encoding.
 *
 * Decoding follows the Unicode Standard's "maximal subpart" practice
 * (chapter 3, U+FFFD substitution): each maximal subpart of an ill-formed
 * sequence becomes one U+FFFD. This is what Python's errors="replace", HF
 * tokenizers and tiktoken see, so repaired text tokenizes as theirs does.
 * Overlong forms, surrogates (ED A0..BF) and values above U+10FFFF are
 * ill-formed.
 *
 * Not here: Unicode properties and normalization (unicode.h).
 */
#ifndef NLP_TEXT_UTF8_H
#define NLP_TEXT_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"
#include "base/utf8.h"

#define NLP_UTF8_REPLACEMENT 0xFFFD


/* Appends s to out with every maximal ill-formed subpart replaced by U+FFFD;
 * *replaced (if not NULL) gets the number of replacements. Returns 0 or NLP_ENOMEM. */
int nlp_utf8_repair(const char *s, size_t n, nlp_buf *out, size_t *replaced);

/* Writes the UTF-8 form of cp (0..0x10FFFF, not a surrogate) to out and
 * returns its length 1..4; returns 0 for an invalid cp. */
int nlp_utf8_encode(int32_t cp, char out[4]);

/* Appends the UTF-8 form of cp; invalid cp appends U+FFFD. */
int nlp_utf8_append(nlp_buf *b, int32_t cp);

/* Number of code points in well-formed s. */
size_t nlp_utf8_count(const char *s, size_t n);

#endif
