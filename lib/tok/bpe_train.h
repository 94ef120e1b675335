/*
 * bpe_train.h — learning BPE merges from word counts, exactly as HF
 * tokenizers' BpeTrainer does where HF is deterministic.
 *
 * Vocabulary: the special tokens first (in the order given), then the
 * alphabet sorted by code point (byte-level: the GPT-2 characters of the
 * bytes; with byte_alphabet all 256 of them, else only those seen), then —
 * when continuing_subword_prefix or end_of_word_suffix is set — the
 * prefixed/suffixed spellings of characters that words need, sorted by
 * (code point, kind: prefix, suffix, both) (HF adds these in hash order,
 * which is why its WordPiece ids vary from run to run), then one token per
 * merge, in creation order. limit_alphabet keeps the most frequent
 * characters (ties: the smaller code point is kept); characters dropped are
 * skipped in words, as in HF.
 *
 * Merging: the pair with the highest count wins; among equal counts the
 * smaller (id_a, id_b). The new token is a + b (b's prefix removed); if
 * that string is already a token its id is reused. Training stops when the
 * vocabulary has vocab_size tokens, when no pair is left, or when the best
 * count is below max(1, min_frequency). Pair counts are updated
 * incrementally: a merge visits only the words that contain its pair (a
 * per-pair word list), and a binary heap with lazy invalidation finds the
 * next best pair — HF's algorithm, without its hash sets. The accounting
 * follows HF's Word::merge to the letter (an overlapping pair such as
 * "a a" in "aaa" is counted as HF counts it).
 *
 * With threads > 1 the words of a large merge are rewritten in parallel;
 * results do not depend on the thread count.
 *
 * Not here: counting the words (wordcount.h), the tokenizer's pipeline
 * (tokenizer.h: nlp_tok_spec_pipeline), writing files (tokfiles.h).
 */
#ifndef NLP_TOK_BPE_TRAIN_H
#define NLP_TOK_BPE_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "tok/tokenizer.h"
#include "tok/wordcount.h"

typedef struct nlp_bpe_train_opts {
    size_t vocab_size;
    uint64_t min_frequency;
    const char *const *specials;
    size_t n_specials;
    size_t limit_alphabet; /* 0 = no limit */
    int byte_level;        /* words are raw bytes (GPT-2 characters) */
    int byte_alphabet;     /* byte_level: start from all 256 bytes */
    const char *continuing_subword_prefix, *end_of_word_suffix;
    const char *unk_token; /* the model's unknown token; must be one of the specials */
    int threads;           /* <= 0: the OpenMP default */
    /* progress: called every few hundred merges */
    void (*progress)(void *ctx, size_t merges, size_t vocab, size_t vocab_size);
    void *progress_ctx;
} nlp_bpe_train_opts;

typedef struct nlp_bpe_train_stats {
    size_t alphabet;     /* characters in the initial vocabulary */
    size_t merges;       /* merges learned */
    uint64_t last_count; /* count of the last merge */
} nlp_bpe_train_stats;

/* Trains on the counted words. Fills in spec's model part: vocab, merges,
 * bpe options (prefix, suffix, unk_token) and the special tokens as added
 * tokens; the pipeline (normalizer, pre-tokenizer, decoder...) is left as
 * it is. Any model part already in spec is replaced. Returns 0;
 * NLP_EDATA when there are no words ("no words to learn from") or
 * vocab_size is smaller than the special tokens plus the data's alphabet
 * (the message gives the size needed); NLP_EINVAL when unk_token is not a
 * special token; NLP_ENOMEM. stats may be NULL. */
int nlp_bpe_train(const nlp_wordcount *wc, const nlp_bpe_train_opts *opts, nlp_tok_spec *spec,
                  nlp_bpe_train_stats *stats);

#endif
