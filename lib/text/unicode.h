/*
 * unicode.h — Unicode character properties and normalization, through
 * utf8proc.
 *
 * Categories come from utf8proc's tables (the Unicode version of the
 * installed libutf8proc). Two whitespace notions are provided because the
 * peers differ: the Unicode White_Space property (regex `\s`, HF tokenizers)
 * and Python's str.isspace() (sacreBLEU's str.split()), which adds
 * U+001C..U+001F.
 *
 * Not here: byte-level UTF-8 handling (utf8.h), tokenizer-specific rules.
 */
#ifndef NLP_TEXT_UNICODE_H
#define NLP_TEXT_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"

/* General categories, in utf8proc's numbering (UTF8PROC_CATEGORY_*). */
typedef enum nlp_uc_cat {
    NLP_UC_CN = 0, NLP_UC_LU, NLP_UC_LL, NLP_UC_LT, NLP_UC_LM, NLP_UC_LO,
    NLP_UC_MN, NLP_UC_MC, NLP_UC_ME, NLP_UC_ND, NLP_UC_NL, NLP_UC_NO,
    NLP_UC_PC, NLP_UC_PD, NLP_UC_PS, NLP_UC_PE, NLP_UC_PI, NLP_UC_PF, NLP_UC_PO,
    NLP_UC_SM, NLP_UC_SC, NLP_UC_SK, NLP_UC_SO, NLP_UC_ZS, NLP_UC_ZL, NLP_UC_ZP,
    NLP_UC_CC, NLP_UC_CF, NLP_UC_CS, NLP_UC_CO,
} nlp_uc_cat;

nlp_uc_cat nlp_uc_category(int32_t cp);
/* Two-letter name, e.g. "Lu". */
const char *nlp_uc_category_name(nlp_uc_cat c);

static inline int nlp_uc_cat_is_letter(nlp_uc_cat c) { return c >= NLP_UC_LU && c <= NLP_UC_LO; }
static inline int nlp_uc_cat_is_mark(nlp_uc_cat c) { return c >= NLP_UC_MN && c <= NLP_UC_ME; }
static inline int nlp_uc_cat_is_number(nlp_uc_cat c) { return c >= NLP_UC_ND && c <= NLP_UC_NO; }
static inline int nlp_uc_cat_is_punct(nlp_uc_cat c) { return c >= NLP_UC_PC && c <= NLP_UC_PO; }
static inline int nlp_uc_cat_is_symbol(nlp_uc_cat c) { return c >= NLP_UC_SM && c <= NLP_UC_SO; }
static inline int nlp_uc_cat_is_separator(nlp_uc_cat c) { return c >= NLP_UC_ZS && c <= NLP_UC_ZP; }
/* C*: Cc, Cf, Cs, Co and Cn (unassigned). */
static inline int nlp_uc_cat_is_other(nlp_uc_cat c) { return c == NLP_UC_CN || c >= NLP_UC_CC; }

int nlp_uc_is_letter(int32_t cp); /* L* */
int nlp_uc_is_number(int32_t cp); /* N* */
int nlp_uc_is_punct(int32_t cp);  /* P* */

/* Unicode White_Space property: 0009-000D 0020 0085 00A0 1680 2000-200A
 * 2028 2029 202F 205F 3000. */
int nlp_uc_is_white_space(int32_t cp);

/* Python's str.isspace(): White_Space plus 001C-001F. */
int nlp_uc_is_py_space(int32_t cp);

/* Simple (1:1) case mappings. */
int32_t nlp_uc_tolower(int32_t cp);
int32_t nlp_uc_toupper(int32_t cp);

typedef enum nlp_norm_form {
    NLP_NORM_NFC,
    NLP_NORM_NFD,
    NLP_NORM_NFKC,
    NLP_NORM_NFKD,
} nlp_norm_form;

/* Appends the normalization of well-formed UTF-8 s to out. Returns 0,
 * NLP_EDATA for ill-formed input, or NLP_ENOMEM. */
int nlp_uc_normalize(const char *s, size_t n, nlp_norm_form form, nlp_buf *out);

/* The NFD of well-formed UTF-8 s[0..n) as code points (canonical order
 * included) in buf[0..cap), without allocating. Returns the number of code
 * points; when that is more than cap, buf holds nothing useful and the
 * caller retries with a buffer that large. NLP_EDATA for ill-formed input. */
long nlp_uc_nfd_cps(const char *s, size_t n, int32_t *buf, size_t cap);

/* Extended grapheme clusters (UAX #29, utf8proc's rules): 1 if there is a
 * boundary between code points a and b, which follow each other in a text.
 * *state carries what the rules need to remember (emoji and regional
 * indicator runs): 0 at the start of the text, then passed to each call in
 * order. */
int nlp_uc_grapheme_break(int32_t *state, int32_t a, int32_t b);

#endif
