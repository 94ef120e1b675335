/*
 * bytelevel.h — GPT-2's byte-to-character mapping ("bytes_to_unicode").
 *
 * Byte-level BPE works on bytes but stores its vocabulary as printable text:
 * bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF stand for the code point of the
 * same value; the other 68 bytes, in increasing order, for U+0100 + n (so a
 * space is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A). Every mapped character is
 * 2 bytes or fewer in UTF-8.
 *
 * Not here: the pre-tokenizer that splits text before the mapping (lib/tok).
 */
#ifndef NLP_TEXT_BYTELEVEL_H
#define NLP_TEXT_BYTELEVEL_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"

/* The code point byte b stands for. */
int32_t nlp_bytelevel_cp(uint8_t b);

/* The byte that code point cp stands for, or -1 if cp is not one of the 256. */
int nlp_bytelevel_byte(int32_t cp);

/* UTF-8 of the character byte b stands for (1 or 2 bytes, static storage). */
const char *nlp_bytelevel_utf8(uint8_t b, size_t *len);

/* Appends the mapped text of bytes s[0..n) to out. Returns 0 or NLP_ENOMEM. */
int nlp_bytelevel_encode(const char *s, size_t n, nlp_buf *out);

/* Appends the bytes that mapped text s[0..n) stands for. Returns 1 if every
 * character of s is one of the 256 (then out holds the bytes), 0 if not (out
 * is left as it was), or NLP_ENOMEM. */
int nlp_bytelevel_decode(const char *s, size_t n, nlp_buf *out);

#endif
