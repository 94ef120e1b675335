/*
 * pretok.h — pre-tokenizers: split (normalized) text into words before the
 * model sees them, as HF tokenizers' pre_tokenizer does.
 *
 * A pre-tokenizer is a sequence of steps (HF's "Sequence"; a single step is
 * a sequence of one). Each step splits every piece the previous step left:
 *
 *   BYTELEVEL   HF ByteLevel: optionally prepends a space to each piece
 *               (add_prefix_space), optionally splits it with GPT-2's
 *               pattern (use_regex), and marks the words as byte-level: the
 *               model then sees raw bytes, each standing for its GPT-2
 *               character (text/bytelevel.h). The pieces stay raw bytes here.
 *   GPT2_SPLIT  HF Split with GPT-2's pattern, behavior Isolated (no byte
 *               mapping).
 *   WHITESPACE  HF Whitespace: \w+|[^\w\s]+ (white space dropped).
 *   WHITESPACE_SPLIT  HF WhitespaceSplit: split on white space, drop it.
 *   BERT        HF BertPreTokenizer: split on white space (dropped), then
 *               every punctuation character is a word of its own: ASCII
 *               punctuation (all 32 of !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~,
 *               symbols such as $ + < = > ^ ` | ~ included) and Unicode P*
 *               (other symbols such as the euro sign or emoji are not split).
 *   METASPACE   HF Metaspace (sentencepiece's white space as HF spells it):
 *               every U+0020 becomes `replacement` (U+2581); the replacement
 *               is put first when the piece does not start with it (scheme
 *               "always"; "first": only for the piece at the start of the
 *               text; "never"); with split, the piece is cut before every
 *               replacement character ("▁a▁▁b" -> "▁a" "▁" "▁b").
 *
 * GPT-2's pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * is matched by hand (nlp_pretok_gpt2_next), with an ASCII fast path and the
 * Unicode classes of text/uclass.h; no regex engine.
 *
 * Input must be well-formed UTF-8 (repair it first, text/utf8.h).
 *
 * Not here: normalization (normalize.h), added/special tokens (added.h),
 * the byte mapping of the vocabulary (bpe.h).
 */
#ifndef NLP_TOK_PRETOK_H
#define NLP_TOK_PRETOK_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"

typedef enum nlp_pretok_type {
    NLP_PRETOK_BYTELEVEL,
    NLP_PRETOK_GPT2_SPLIT,
    NLP_PRETOK_WHITESPACE,
    NLP_PRETOK_WHITESPACE_SPLIT,
    NLP_PRETOK_BERT,
    NLP_PRETOK_METASPACE,
} nlp_pretok_type;

/* Metaspace's prepend_scheme */
enum { NLP_PREPEND_ALWAYS, NLP_PREPEND_FIRST, NLP_PREPEND_NEVER };

typedef struct nlp_pretok_step {
    nlp_pretok_type type;
    /* BYTELEVEL (as HF's fields; trim_offsets only matters for offsets,
     * which nlpipe does not report, and is kept for writing back) */
    int add_prefix_space, trim_offsets, use_regex;
    /* METASPACE: the replacement character (UTF-8, NUL-terminated), the
     * prepend scheme, split */
    char replacement[8];
    int prepend_scheme, split;
} nlp_pretok_step;

/* GPT-2's pattern, as HF's Split pre-tokenizer spells it in tokenizer.json. */
extern const char nlp_pretok_gpt2_pattern[];

/* One word: bytes p[0..n). */
typedef struct nlp_piece {
    const char *p;
    uint32_t n;
} nlp_piece;

/* Growable list of pieces; zero-initialize, free with nlp_pieces_free. */
typedef struct nlp_pieces {
    nlp_piece *v;
    size_t n, cap;
} nlp_pieces;

void nlp_pieces_free(nlp_pieces *p);

/* End of the GPT-2 pattern's match that starts at s[i] (i < n): the next
 * word is s[i..end). Always > i. */
size_t nlp_pretok_gpt2_next(const char *s, size_t n, size_t i);

/* 1 if any step is BYTELEVEL (the model must map bytes), else 0. */
int nlp_pretok_is_byte_level(const nlp_pretok_step *steps, size_t nsteps);

/* 1 when nlp_pretok_run of these steps gives exactly the pieces of
 * nlp_pretok_gpt2_next over the text (one GPT-2 split, no prefix space): a
 * caller may then walk the text with it, piece by piece, and keep no list. */
int nlp_pretok_is_gpt2_only(const nlp_pretok_step *steps, size_t nsteps);

/* Splits s[0..n) into words and appends them to out (pieces point into s or
 * into `work`, which must stay alive and unchanged while they are used; the
 * function resets `work`). With no steps the whole text is one word (none if
 * n == 0). Returns 0 or NLP_ENOMEM. */
int nlp_pretok_run(const nlp_pretok_step *steps, size_t nsteps, const char *s, size_t n, nlp_buf *work,
                   nlp_pieces *out);

/* The same for a text that is (at_start = 1) or is not the start of the
 * whole input (a part after a special token): Metaspace's "first" scheme
 * prepends only at the start. nlp_pretok_run is at_start = 1. */
int nlp_pretok_run_at(const nlp_pretok_step *steps, size_t nsteps, const char *s, size_t n, nlp_buf *work,
                      nlp_pieces *out, int at_start);

/* How HF's BertPreTokenizer sees code point cp: 0 part of a word, 1 white
 * space, 2 punctuation (a word of its own). */
int nlp_pretok_bert_class(int32_t cp);

#endif
