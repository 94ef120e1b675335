/*
 * tokenize.h — the BLEU tokenizers by name, and sacreBLEU's segment
 * preprocessing for BLEU: optional Python lowercasing, rstrip, tokenizer.
 *
 *   13a   mteval-v13a (eval/tok13a.h)        the default
 *   intl  mteval-v14 international (eval/tokintl.h)
 *   zh    Chinese characters split, then 13a's passes (eval/tok13a.h)
 *   char  every character is a token
 *   none  the line as it is
 *
 * A tokenizer writes a "spaced" string; its Python whitespace split gives
 * the tokens (eval/ngram.h turns it into n-gram units).
 *
 * Not here: ja-mecab, ko-mecab and spm, which need external models.
 */
#ifndef NLP_EVAL_TOKENIZE_H
#define NLP_EVAL_TOKENIZE_H

#include <stddef.h>

#include "base/mem.h"

typedef enum nlp_evtok {
    NLP_EVTOK_13A,
    NLP_EVTOK_INTL,
    NLP_EVTOK_ZH,
    NLP_EVTOK_CHAR,
    NLP_EVTOK_NONE,
} nlp_evtok;

/* NULL-terminated names in enum order, for option parsing and signatures. */
extern const char *const nlp_evtok_names[];

/* Scratch space reused from line to line; zero-initialize, free with
 * nlp_evtok_buf_free. */
typedef struct nlp_evtok_buf {
    nlp_buf low, tmp;
} nlp_evtok_buf;

void nlp_evtok_buf_free(nlp_evtok_buf *b);

/* Tokenizer `kind` applied to well-formed UTF-8 s, the spaced result in out
 * (reset first). Exactly sacreBLEU's tokenizer(s), up to whitespace. */
int nlp_evtok_apply(nlp_evtok kind, const char *s, size_t n, nlp_buf *out, nlp_evtok_buf *sb);

/* BLEU's _preprocess_segment: tokenizer(rstrip(lower(s) if lowercase else s))
 * into out (reset first). Returns 0 or NLP_ENOMEM. */
int nlp_evtok_segment(nlp_evtok kind, int lowercase, const char *s, size_t n, nlp_buf *out,
                      nlp_evtok_buf *sb);

/* sacreBLEU's exact string for tokenizer `kind` of s: ' '.join(split) for
 * 13a/intl/zh, ' '.join(characters) for char, s itself for none. Appends to
 * out. For tests and for users who want to see the tokens. */
int nlp_evtok_string(nlp_evtok kind, const char *s, size_t n, nlp_buf *out, nlp_evtok_buf *sb);

#endif
