/*
 * normalize.h — normalizers: text -> text before pre-tokenization, as HF
 * tokenizers' "normalizer" (a Sequence of steps, or one step).
 *
 * Steps: NFC, NFD, NFKC, NFKD (utf8proc), LOWERCASE (per character, full
 * mapping, no final sigma — HF's Lowercase), STRIP_ACCENTS (delete Mn
 * characters; HF pairs it with NFD), STRIP (white space at the left and/or
 * right end), PREPEND (a string before non-empty text), REPLACE (every
 * occurrence of a literal string, HF's Replace with a String pattern; or of
 * a Regex pattern of the one form HF's converters write: one character
 * repeated, "X+", "X{n}", "X{n,}", "X{n,m}" with n >= 1, or a literal
 * without metacharacters; leftmost, greedy, as Oniguruma matches them),
 * PRECOMPILED (HF's Precompiled: sentencepiece's character map, read as
 * HF reads it, charsmap.h), BERT (HF's BertNormalizer, below).
 *
 * BERT, in HF's order, each part switchable:
 *   clean_text            delete U+0000, U+FFFD and every Cc, Cf and Co
 *                         character except tab, newline and carriage return
 *                         (so VT, FF, NEL, ZWSP, ZWJ, soft hyphen, BOM and
 *                         private-use characters vanish; unassigned Cn ones
 *                         stay), then map Unicode White_Space to a space
 *   handle_chinese_chars  a space before and after every CJK ideograph of
 *                         HF's ranges (4E00-9FFF 3400-4DBF 20000-2A6DF
 *                         2A700-2B73F 2B740-2B81F 2B920-2CEAF F900-FAFF
 *                         2F800-2FA1F; kana and Hangul are not among them)
 *   strip_accents         NFD, then delete Mn; -1 = HF's null: follow lowercase
 *   lowercase             per character, as LOWERCASE
 * ASCII text takes a table-driven path; a run of other characters is
 * decomposed as a whole (canonical reordering stays exact).
 *
 * Input must be well-formed UTF-8. Offsets are not tracked (nlpipe reports
 * ids and tokens, not character spans).
 *
 * Not here: regex patterns (unsupported: the readers reject them with a message).
 */
#ifndef NLP_TOK_NORMALIZE_H
#define NLP_TOK_NORMALIZE_H

#include <stddef.h>

#include "base/mem.h"
#include "tok/charsmap.h"

typedef enum nlp_norm_type {
    NLP_NORM_STEP_NFC,
    NLP_NORM_STEP_NFD,
    NLP_NORM_STEP_NFKC,
    NLP_NORM_STEP_NFKD,
    NLP_NORM_STEP_LOWERCASE,
    NLP_NORM_STEP_STRIP_ACCENTS,
    NLP_NORM_STEP_STRIP,
    NLP_NORM_STEP_PREPEND,
    NLP_NORM_STEP_REPLACE,
    NLP_NORM_STEP_BERT,
    NLP_NORM_STEP_PRECOMPILED,
} nlp_norm_type;

/* One step. Strings are owned by the struct's owner (nlp_norm_steps_free). */
typedef struct nlp_norm_step {
    nlp_norm_type type;
    char *a, *b;     /* PREPEND: a = prefix; REPLACE: a = pattern, b = content */
    int left, right; /* STRIP */
    /* BERT */
    int clean_text, handle_chinese_chars, strip_accents /* -1 = null */, lowercase;
    /* REPLACE with a Regex pattern (a holds its text): the repeated
     * character re_cp, re_min to re_max times (SIZE_MAX: no bound); or, with
     * re_cp = -1, the literal a */
    int regex;
    int32_t re_cp;
    size_t re_min, re_max;
    /* PRECOMPILED: the map's bytes (owned) and the map read from them (owned) */
    uint8_t *map;
    size_t map_len;
    nlp_charsmap *cm;
} nlp_norm_step;

/* Makes st a REPLACE of Regex pattern pat by content (both copied), or
 * returns NLP_EFORMAT ("only ... is supported") for a pattern outside the
 * forms above, or NLP_ENOMEM. */
int nlp_norm_replace_regex(nlp_norm_step *st, const char *pat, const char *content);

/* Makes st a PRECOMPILED step over map[0..n) (copied). Returns 0,
 * NLP_EFORMAT (a broken map; the message says why) or NLP_ENOMEM. */
int nlp_norm_precompiled(nlp_norm_step *st, const void *map, size_t n);

/* HF's BertNormalizer with its defaults: clean_text, handle_chinese_chars,
 * strip_accents null (= lowercase), and the given lowercase. */
nlp_norm_step nlp_norm_bert(int lowercase);

/* Frees the strings of steps[0..n) and the array. */
void nlp_norm_steps_free(nlp_norm_step *steps, size_t n);

/* Deep copy into *out. Returns 0 or NLP_ENOMEM. */
int nlp_norm_steps_copy(const nlp_norm_step *steps, size_t n, nlp_norm_step **out);

/* One step on s[0..n), appended to out (HF's Replace decoder is a Replace
 * normalizer applied to each token). Returns 0, NLP_EDATA, NLP_ENOMEM. */
int nlp_norm_step_apply(const nlp_norm_step *st, const char *s, size_t n, nlp_buf *out);

/* Applies the steps to s[0..n) and writes the result to out (reset first;
 * `tmp` is scratch). Returns 0, NLP_EDATA for ill-formed UTF-8, NLP_ENOMEM. */
int nlp_normalize(const nlp_norm_step *steps, size_t nsteps, const char *s, size_t n, nlp_buf *out, nlp_buf *tmp);

#endif
