/*
 * pystr.h — the Python str semantics that sacreBLEU's numbers depend on:
 * str.lower(), str.split() with no argument, str.strip()/rstrip().
 *
 * sacreBLEU lowercases with Python's str.lower(), which is full Unicode
 * lowercasing: U+0130 LATIN CAPITAL LETTER I WITH DOT ABOVE becomes "i̇"
 * (U+0069 U+0307) and U+03A3 GREEK CAPITAL LETTER SIGMA becomes final ς
 * (U+03C2) in the Final_Sigma context (preceded by a cased letter, skipping
 * case-ignorable characters, and not followed by one), σ otherwise. Every
 * other character takes its simple lowercase mapping (utf8proc's tables).
 *
 * Whitespace is Python's str.isspace(): Unicode White_Space plus
 * U+001C..U+001F (see text/unicode.h). The split and strip helpers work on
 * well-formed UTF-8 byte strings and never allocate.
 *
 * Not here: tokenization (eval/tok13a, eval/tokintl, eval/tokenize).
 */
#ifndef NLP_EVAL_PYSTR_H
#define NLP_EVAL_PYSTR_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"

/* Length in bytes of the Python whitespace character at s[i] (1..3), or 0
 * if s[i] does not start one. i < n. */
size_t nlp_py_space_len(const char *s, size_t n, size_t i);

/* Length of s without trailing Python whitespace (s.rstrip()). */
size_t nlp_py_rstrip(const char *s, size_t n);

/* Number of leading bytes that are Python whitespace (s.lstrip()). */
size_t nlp_py_lstrip(const char *s, size_t n);

/* Finds the next whitespace-separated token of s at or after *pos, as
 * str.split() would. Returns 1 with the token in [*tb, *te) and *pos past
 * it, or 0 when no token is left. */
int nlp_py_next_token(const char *s, size_t n, size_t *pos, size_t *tb, size_t *te);

/* Appends Python's s.lower() of well-formed UTF-8 s to out. Returns 0 or
 * NLP_ENOMEM. ASCII-only input takes a fast path. */
int nlp_py_lower(const char *s, size_t n, nlp_buf *out);

/* Unicode properties used by the Final_Sigma rule, exposed for tests. */
int nlp_py_is_cased(int32_t cp);
int nlp_py_is_case_ignorable(int32_t cp);

#endif
