/*
 * uclass.h — fast character classes for tokenizers, and per-character full
 * lowercasing.
 *
 * Tokenizer hot loops ask "is this a letter / number / white space /
 * punctuation?" for every character. nlp_uclass() answers with one table
 * load: a 64 KiB table for the Basic Multilingual Plane, built once (thread
 * safe) from utf8proc's categories; characters above U+FFFF are looked up in
 * utf8proc directly. The classes are bit flags so one load answers several
 * questions:
 *
 *   LETTER  L* (Lu Ll Lt Lm Lo)            regex \p{L}
 *   NUMBER  N* (Nd Nl No)                  regex \p{N}
 *   SPACE   Unicode White_Space            regex \s (HF tokenizers, tiktoken)
 *   PUNCT   P* (Pc Pd Ps Pe Pi Pf Po)
 *   MARK    M* (Mn Mc Me)
 *   MN      Mn alone (what HF's StripAccents removes)
 *   OTHER   C* (Cc Cf Cs Co Cn)
 *   WORD    regex \w as HF's Whitespace pre-tokenizer sees it (Alphabetic,
 *           M, Nd, Pc, Join_Control): L, M, Nd, Nl, Pc, U+200C/U+200D, and
 *           the symbols Alphabetic adds (circled and squared Latin letters,
 *           U+24B6-24E9, U+1F130-1F149, U+1F150-1F169, U+1F170-1F189)
 *
 * Not here: UTF-8 decoding (utf8.h), normalization and simple case mapping
 * (unicode.h), tokenizer rules built on these classes (lib/tok).
 */
#ifndef NLP_TEXT_UCLASS_H
#define NLP_TEXT_UCLASS_H

#include <stdint.h>

#include "base/mem.h"

enum {
    NLP_UCL_LETTER = 1 << 0,
    NLP_UCL_NUMBER = 1 << 1,
    NLP_UCL_SPACE = 1 << 2,
    NLP_UCL_PUNCT = 1 << 3,
    NLP_UCL_MARK = 1 << 4,
    NLP_UCL_MN = 1 << 5,
    NLP_UCL_OTHER = 1 << 6,
    NLP_UCL_WORD = 1 << 7,
};

/* The table for U+0000..U+FFFF; built on first use. Never NULL. */
const uint8_t *nlp_uclass_bmp(void);

/* Class bits of code point cp (0 for values outside 0..0x10FFFF). */
uint8_t nlp_uclass_slow(int32_t cp);

static inline uint8_t nlp_uclass(int32_t cp)
{
    if ((uint32_t)cp < 0x10000) return nlp_uclass_bmp()[cp];
    return nlp_uclass_slow(cp);
}

/* Appends the full lowercase mapping of one character (Unicode's
 * per-character mapping, as Rust's char::to_lowercase: U+0130 becomes
 * "i\u0307"; no context rules such as the final sigma). Returns 0 or
 * NLP_ENOMEM. */
int nlp_uclass_lower_append(nlp_buf *out, int32_t cp);

#endif
