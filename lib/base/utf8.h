/*
 * utf8.h — UTF-8 decoding and validation, the byte-level part of
 * text/utf8.h: "maximal subpart" decoding (Unicode chapter 3), overlong
 * forms, surrogates and values above U+10FFFF ill-formed. Here in base so
 * that a layer below text (a model's string metadata) can check its bytes;
 * repair, encoding and counting stay in text/utf8.h.
 */
#ifndef NLP_BASE_UTF8_H
#define NLP_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the code point at s[*i] (n = length of s) and advances *i.
 * Returns the code point, or -1 for an ill-formed sequence, in which case *i
 * advances past its maximal subpart (at least one byte). *i < n required. */
int32_t nlp_utf8_next(const char *s, size_t n, size_t *i);

/* Length in bytes of a well-formed sequence starting at s[i], or 0 if the
 * bytes there are ill-formed. */
size_t nlp_utf8_seq_len(const char *s, size_t n, size_t i);

/* 1 if all of s is well-formed; otherwise 0 and *bad = byte offset of the
 * first ill-formed sequence (if bad != NULL). Fast path for ASCII. */
int nlp_utf8_valid(const char *s, size_t n, size_t *bad);

#endif
