/*
 * encoding.h — the result of tokenizing one input: token ids with their
 * token type ids (segment A = 0, B = 1, or what a template says), attention
 * mask (1 = real token, 0 = padding) and special-token mask (1 = added by
 * the post-processor or padding).
 *
 * Plain growable arrays; zero-initialize, reuse with nlp_encoding_reset,
 * free with nlp_encoding_free.
 *
 * Not here: how they are produced (tokenizer.h) or printed (bin/).
 */
#ifndef NLP_TOK_ENCODING_H
#define NLP_TOK_ENCODING_H

#include <stddef.h>
#include <stdint.h>

/* A growable array of ids. */
typedef struct nlp_ids {
    int32_t *v;
    size_t n, cap;
} nlp_ids;

int nlp_ids_push(nlp_ids *a, int32_t id);
int nlp_ids_append(nlp_ids *a, const int32_t *ids, size_t n);
void nlp_ids_free(nlp_ids *a);

typedef struct nlp_encoding {
    int32_t *ids;
    uint8_t *type_ids, *attention, *special;
    size_t n, cap;
} nlp_encoding;

/* Makes room for `extra` more tokens. Returns 0 or NLP_ENOMEM. */
int nlp_encoding_reserve(nlp_encoding *e, size_t extra);

/* Appends n ids with the given type id; `special` marks them as added
 * tokens. attention is 1. Returns 0 or NLP_ENOMEM. */
int nlp_encoding_append(nlp_encoding *e, const int32_t *ids, size_t n, int type_id, int special);

/* Appends all of src. Returns 0 or NLP_ENOMEM. */
int nlp_encoding_concat(nlp_encoding *e, const nlp_encoding *src);

/* Keeps n tokens: the first n (from_left = 0) or the last n (from_left = 1). */
void nlp_encoding_truncate(nlp_encoding *e, size_t n, int from_left);

/* Pads to length n with pad_id/pad_type_id (attention 0, special 1), on the
 * right or (left = 1) on the left. No-op when already n or longer. */
int nlp_encoding_pad(nlp_encoding *e, size_t n, int32_t pad_id, int pad_type_id, int left);

void nlp_encoding_reset(nlp_encoding *e);
void nlp_encoding_free(nlp_encoding *e);

/* A character passed through instead of the unknown token
 * (nlp_encode_opts.unk_passthrough, tokenizer.h), as the negative id
 * NLP_TOK_PASSTHROUGH(cp, final), so that a writer of pieces can show it:
 *   - classic, unfused BPE: apply-bpe's spelling ("Übung" -> "Ü b ung</w>",
 *     not "<unk> b ung</w>"); final = the character ends its word;
 *   - sentencepiece: spm_encode's pieces show an unknown run's characters
 *     as one piece ("▁ 龍龍"); final = the character ends its run (a writer
 *     joins a non-final character to the next without a space).
 * Such ids are not token ids: only for printing pieces
 * (nlp_tok_passthrough_char tells them apart); every other model and
 * character is encoded as without the option. */
#define NLP_TOK_PASSTHROUGH(cp, final) ((int32_t)(-2 - (2 * (int32_t)(cp) + ((final) ? 1 : 0))))

/* 1 and the code point and word-final flag if id is a passed-through
 * character, else 0. */
static inline int nlp_tok_passthrough_char(int32_t id, int32_t *cp, int *word_final)
{
    if (id > -2) return 0;
    int32_t v = -2 - id;
    *cp = v >> 1;
    *word_final = v & 1;
    return 1;
}

#endif
