/*
 * decoder.h — decoders: token strings back to text, as HF tokenizers'
 * "decoder" (one step, or a Sequence).
 *
 * Steps:
 *   BYTELEVEL  each token's characters stand for bytes (text/bytelevel.h);
 *              a token with a character outside the 256 is its own UTF-8.
 *              The bytes are output as they are (byte-exact: no U+FFFD
 *              repair of partial characters, unlike HF).
 *   BPE        HF BPEDecoder: every occurrence of `suffix` (</w>) becomes a
 *              space, except in the last token where it is removed.
 *   WORDPIECE  HF WordPiece decoder: every token but the first loses its
 *              leading `prefix` (##) or, without one, gets a space before
 *              it; with `cleanup`, each token then has " ." " ?" " !" " ,"
 *              " ' " " n't" " 'm" " 's" " 've" " 're" turned into the text
 *              without the space and " do not" into " don't" (HF's
 *              cleanup, token by token, in that order).
 *   METASPACE  HF Metaspace: each `replacement` character (U+2581) becomes a
 *              space, except in the first token, where they all vanish
 *              (unless the prepend scheme is "never").
 *   BYTE_FALLBACK  HF ByteFallback: a run of <0xNN> tokens becomes the
 *              string of those bytes when they are UTF-8, else one U+FFFD
 *              per token.
 *   FUSE       HF Fuse: all tokens joined into one.
 *   STRIP      HF Strip: each token loses up to `start` leading and `stop`
 *              trailing `content` characters.
 *   REPLACE    HF Replace: in each token, a pattern replaced (as the Replace
 *              normalizer, normalize.h).
 * With no steps, tokens are joined with single spaces (HF's behaviour
 * without a decoder).
 *
 * Not here: id -> token lookup (tokenizer.h).
 */
#ifndef NLP_TOK_DECODER_H
#define NLP_TOK_DECODER_H

#include <stddef.h>

#include "base/mem.h"
#include "tok/normalize.h"

typedef enum nlp_dec_type {
    NLP_DEC_BYTELEVEL,
    NLP_DEC_BPE,
    NLP_DEC_WORDPIECE,
    NLP_DEC_METASPACE,
    NLP_DEC_BYTE_FALLBACK,
    NLP_DEC_FUSE,
    NLP_DEC_STRIP,
    NLP_DEC_REPLACE,
} nlp_dec_type;

typedef struct nlp_dec_step {
    nlp_dec_type type;
    char *suffix; /* BPE: the suffix; WORDPIECE: the prefix; owned */
    int cleanup;  /* WORDPIECE */
    /* BYTELEVEL fields as HF writes them (no effect on decoding) */
    int add_prefix_space, trim_offsets, use_regex;
    /* METASPACE: replacement (UTF-8), prepend scheme (pretok.h), split (kept
     * for writing); STRIP: content (UTF-8 of one character), start, stop */
    char replacement[8];
    int prepend_scheme, split;
    size_t start, stop;
    /* REPLACE: the normalizer step it applies (its strings owned) */
    nlp_norm_step replace;
} nlp_dec_step;

void nlp_dec_steps_free(nlp_dec_step *d, size_t n);
int nlp_dec_steps_copy(const nlp_dec_step *d, size_t n, nlp_dec_step **out);

/* One token of a sequence. */
typedef struct nlp_dec_token {
    const char *s;
    size_t n;
} nlp_dec_token;

/* Appends the text of tokens t[0..n) to out. Returns 0 or NLP_ENOMEM. */
int nlp_decode_tokens(const nlp_dec_step *steps, size_t nsteps, const nlp_dec_token *t, size_t n, nlp_buf *out);

#endif
