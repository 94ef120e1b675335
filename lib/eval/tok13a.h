/*
 * tok13a.h — sacreBLEU's mteval-v13a tokenizer ("13a"), its Chinese variant
 * ("zh") and the Western normalization they share with TER.
 *
 * Written by hand, with no regex engine, to give exactly what sacreBLEU's
 * Python regular expressions give. 13a is, in order:
 *   1. remove "<skipped>"; replace "&quot;" "&amp;" "&lt;" "&gt;" by
 *      " & < > — each as one left-to-right pass, in that order, so
 *      "&amp;lt;" becomes "<" but "&amp;quot;" stays "&quot;";
 *   2. pad the line with one space on each side;
 *   3. the Western passes, each a non-overlapping left-to-right rewrite:
 *      A. every ASCII punctuation except ' , - . gets spaces around it
 *      B. ([^0-9])([.,])  ->  "\1 \2 "
 *      C. ([.,])([^0-9])  ->  " \1 \2"
 *      D. ([0-9])(-)      ->  "\1 \2 "
 *   4. split on Python whitespace.
 * [^0-9] is one whole code point in Python; on UTF-8 bytes the same rule is
 * reached by looking at single bytes, because a continuation byte is never a
 * digit, '.', ',' or '-' (see tok13a.c).
 *
 * zh strips the line, puts spaces around every "Chinese" character (the
 * ranges of sacreBLEU's tokenizer_zh.py as Python compares them: its
 * '\u20000' is U+2000 followed by '0', so the range is really U+2001..U+2A6D,
 * and '\u2f800'..'\u2fa1d' is U+2F81..U+2FA1), then runs passes A-D.
 *
 * Outputs are "spaced" strings: splitting them on Python whitespace
 * (eval/pystr.h) gives the tokens; nlp_tok_join() gives sacreBLEU's string.
 *
 * Not here: lowercasing and the tokenizer registry (eval/tokenize.h), intl
 * (eval/tokintl.h).
 */
#ifndef NLP_EVAL_TOK13A_H
#define NLP_EVAL_TOK13A_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"

/* 13a of s (well-formed UTF-8) into out (reset first). tmp is scratch.
 * Returns 0 or NLP_ENOMEM. */
int nlp_tok13a(const char *s, size_t n, nlp_buf *out, nlp_buf *tmp);

/* zh of s into out (reset first). tmp is scratch. Returns 0 or NLP_ENOMEM. */
int nlp_tokzh(const char *s, size_t n, nlp_buf *out, nlp_buf *tmp);

/* 1 if cp is in sacreBLEU's zh "Chinese character" ranges. */
int nlp_tokzh_is_chinese(int32_t cp);

/* Step 1 without "<skipped>": the four entity replacements, in order.
 * Appends to out. */
int nlp_tok13a_unescape(const char *s, size_t n, nlp_buf *out);

/* Passes A-D over buf in place (tmp is scratch). With `possessive`, TER's
 * extra rewrites run between A and B: "'s " -> " 's " and a final "'s" ->
 * " 's" (tercom's Normalizer). Returns 0 or NLP_ENOMEM. */
int nlp_tok13a_western(nlp_buf *buf, nlp_buf *tmp, int possessive);

/* sacreBLEU's ' '.join(s.split()): the tokens of s joined by single spaces,
 * appended to out. */
int nlp_tok_join(const char *s, size_t n, nlp_buf *out);

#endif
