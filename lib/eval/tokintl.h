/*
 * tokintl.h — sacreBLEU's "intl" tokenizer (mteval-v14 international
 * tokenization), on Unicode general categories.
 *
 * Three non-overlapping left-to-right rewrites over code points, as the
 * Python `regex` module does them, then a split on whitespace:
 *   1. (\P{N})(\p{P})  ->  "\1 \2 "
 *   2. (\p{P})(\P{N})  ->  " \1 \2"
 *   3. (\p{S})         ->  " \1 "
 * No padding and no entity handling, unlike 13a. Categories come from
 * utf8proc (text/unicode.h), so characters assigned after its Unicode
 * version may differ from a newer `regex` module.
 *
 * Not here: 13a/zh (eval/tok13a.h).
 */
#ifndef NLP_EVAL_TOKINTL_H
#define NLP_EVAL_TOKINTL_H

#include <stddef.h>

#include "base/mem.h"

/* intl of well-formed UTF-8 s into out (reset first), a spaced string whose
 * Python split gives the tokens. tmp is scratch. Returns 0 or NLP_ENOMEM. */
int nlp_tokintl(const char *s, size_t n, nlp_buf *out, nlp_buf *tmp);

#endif
