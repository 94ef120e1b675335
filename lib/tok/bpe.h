/*
 * bpe.h — the BPE model: ordered merge rules applied to one word.
 *
 * Encoding a word (HF tokenizers' BPE::merge_word + Word::merge_all, which
 * tiktoken and GPT-2's encoder agree with):
 *   1. Split the word into initial symbols. Byte-level models (the
 *      pre-tokenizer maps bytes, GPT-2) take one symbol per byte: the id of
 *      that byte's GPT-2 character. Classic models take one symbol per UTF-8
 *      character, spelled with continuing_subword_prefix when not first and
 *      end_of_word_suffix when last; a character outside the vocabulary
 *      becomes byte-fallback tokens <0xHH> (if enabled and present), else
 *      unk_token (consecutive ones fused into one if fuse_unk), else is
 *      dropped.
 *   2. Repeatedly merge the adjacent pair with the lowest rank, the
 *      leftmost among equals, into the id the merge produces. Words of up to
 *      32 symbols scan for the minimum (fast for the common case); longer
 *      words use a binary heap of (rank, position), O(n log n). Both give
 *      the same result.
 * With ignore_merges, a word that is itself in the vocabulary is that one
 * token (HF's option, used by Llama 3 style models).
 *
 * Not here: splitting text into words (pretok.h), caching (wordcache.h),
 * training (bpe_train.h), file formats (tokjson.h, tokfiles.h).
 */
#ifndef NLP_TOK_BPE_H
#define NLP_TOK_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "tok/encoding.h"
#include "tok/vocab.h"

/* The model's options, as HF's BPE fields. Strings are owned by whoever
 * owns the struct (nlp_bpe_new copies them). NULL = none. */
typedef struct nlp_bpe_opts {
    char *unk_token;
    char *continuing_subword_prefix;
    char *end_of_word_suffix;
    int fuse_unk, byte_fallback, ignore_merges;
} nlp_bpe_opts;

typedef struct nlp_bpe nlp_bpe;

/* Per-thread scratch for encoding; zero-initialize, free with
 * nlp_bpe_scratch_free. */
typedef struct nlp_bpe_scratch {
    int32_t *sym, *prev, *next;
    uint64_t *heap;
    size_t cap, hcap;
    char *tmp;
    size_t tmpcap;
} nlp_bpe_scratch;

void nlp_bpe_scratch_free(nlp_bpe_scratch *s);

/* Builds a model over `vocab` (kept by pointer: it must outlive the model)
 * from merges[2*i], merges[2*i+1] = the ids of merge i's parts, in rank
 * order. The id a merge produces is that of the concatenated token (the
 * second part's continuing_subword_prefix removed); a later duplicate of a
 * pair replaces the earlier one, as in HF. byte_level: words are raw bytes
 * (see above). Returns 0; NLP_EFORMAT when a merged token, a part or the
 * unk_token is missing from the vocabulary (message names it and the merge's
 * rank); NLP_ENOMEM. Free with nlp_bpe_free. */
int nlp_bpe_new(nlp_bpe **out, const nlp_vocab *vocab, const int32_t *merges, size_t nmerges,
                const nlp_bpe_opts *opts, int byte_level);
void nlp_bpe_free(nlp_bpe *m);

/* Appends the ids of word w[0..n) to out. Returns 0 or NLP_ENOMEM. */
int nlp_bpe_encode_word(const nlp_bpe *m, nlp_bpe_scratch *sc, const char *w, size_t n, nlp_ids *out);

/* Id that byte b stands for in a byte-level model (-1 if its character is
 * not in the vocabulary). */
int32_t nlp_bpe_byte_id(const nlp_bpe *m, uint8_t b);

/* Rank of the merge (a, b) and the id it makes, or -1. */
int64_t nlp_bpe_merge_rank(const nlp_bpe *m, int32_t a, int32_t b, int32_t *new_id);

#endif
