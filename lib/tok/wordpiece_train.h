/*
 * wordpiece_train.h — learning a WordPiece vocabulary from word counts.
 *
 * Two scores rank the candidate merges:
 *
 *   LIKELIHOOD (the lecture's WordPiece)
 *     Words start as characters, every character but the first spelled
 *     with the prefix ("abc" -> a ##b ##c). The pair with the highest
 *         score(a, b) = freq(ab) / (freq(a) * freq(b))
 *     is merged, where freq(ab) is how often b follows a and freq(t) how
 *     often token t occurs, both in the current segmentation of the corpus
 *     (weighted by word counts; one-character words count in freq(t)). The
 *     new token is a followed by b without its prefix ("##g" + "##s" =
 *     "##gs", "h" + "##u" = "hu"). Pairs that occur fewer than
 *     min_frequency times are never merged. Scores are compared exactly
 *     (128-bit cross products, no floating point).
 *     Ties, in order: the higher freq(ab); then the merged token that is
 *     smaller as bytes; then the smaller (id of a, id of b). So the result
 *     depends only on the word counts, never on their order or the thread
 *     count.
 *     Vocabulary: the special tokens (in the order given), then the
 *     spellings the words start with (no prefix) sorted by code point, then
 *     the prefixed spellings that occur, sorted by code point (the lecture's
 *     example: b h p ##g ##n ##s ##u), then one token per merge in creation
 *     order (a merge whose string is already a token reuses its id).
 *     limit_alphabet keeps the most frequent characters (ties: the smaller
 *     code point); the others are dropped from the words.
 *
 *   FREQUENCY (HF tokenizers' WordPieceTrainer)
 *     BPE with the prefix, the most frequent pair first (bpe_train.h, whose
 *     vocabulary and tie rules apply: every character unprefixed, then the
 *     prefixed spellings), training stops when the best count is below
 *     min_frequency. The same token set as HF (whose ids for the prefixed
 *     spellings vary from run to run).
 *
 * Cost of LIKELIHOOD. Per merge of (a, b) into c, only the words holding
 * the pair are rewritten (each pair record lists the words that gained
 * it), and pair and token counts change by the difference. Every score
 * with a or b in it rises (their freq fell), so every pair in a's and b's
 * adjacency lists is pushed again into a lazy max-heap: each entry carries
 * the pair's version, bumped at every push, and the counts it was scored
 * with; a popped entry of an old version is dropped, one whose counts have
 * changed since (scores that fell: freq(c) grew, or the pair was partly
 * consumed) is re-pushed with the current ones. So a merge costs
 * O(occurrences rewritten + (deg(a) + deg(b)) log H), deg = distinct pairs
 * a token is in, H = heap entries; the heap is rebuilt from the live pairs
 * when stale entries outnumber them, which bounds memory to O(pairs).
 * Pair records with a zero count leave the adjacency lists lazily, when a
 * list is scanned.
 *
 * Not here: counting words (wordcount.h), the BERT pipeline the trainer's
 * caller puts around the model (tokenizer.h: NLP_PIPE_BERT), files.
 */
#ifndef NLP_TOK_WORDPIECE_TRAIN_H
#define NLP_TOK_WORDPIECE_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "tok/tokenizer.h"
#include "tok/wordcount.h"

typedef enum nlp_wp_score {
    NLP_WP_SCORE_LIKELIHOOD,
    NLP_WP_SCORE_FREQUENCY,
} nlp_wp_score;

typedef struct nlp_wordpiece_train_opts {
    nlp_wp_score score;
    size_t vocab_size;
    uint64_t min_frequency;
    const char *const *specials;
    size_t n_specials;
    size_t limit_alphabet; /* 0 = no limit */
    const char *prefix;    /* continuing-subword prefix; NULL = "##" */
    const char *unk_token; /* the model's unknown token; NULL = "[UNK]" (need not be special) */
    int threads;           /* FREQUENCY: the BPE trainer's threads; <= 0 = the OpenMP default */
    /* progress: called every few hundred merges */
    void (*progress)(void *ctx, size_t merges, size_t vocab, size_t vocab_size);
    void *progress_ctx;
    /* LIKELIHOOD: called for every merge, in order, with the growing
     * vocabulary (to look the ids up in) and the counts that scored it
     * (score = count / (freq_a * freq_b)) */
    void (*on_merge)(void *ctx, const nlp_vocab *vocab, int32_t a, int32_t b, int32_t c, uint64_t count,
                     uint64_t freq_a, uint64_t freq_b);
    void *merge_ctx;
} nlp_wordpiece_train_opts;

typedef struct nlp_wordpiece_train_stats {
    size_t alphabet; /* spellings in the initial vocabulary */
    size_t merges;   /* merges made */
} nlp_wordpiece_train_stats;

/* Trains on the counted words. Fills in spec's model part: the WordPiece
 * model (vocabulary, unk_token, prefix, 100 characters per word) and the
 * special tokens as added tokens; the pipeline is left as it is, any model
 * part already in spec is replaced. Returns 0; NLP_EDATA when there are no
 * words or vocab_size is smaller than the special tokens plus the data's
 * initial alphabet (the message gives the size needed); NLP_EINVAL when
 * the prefix is empty; NLP_ENOMEM. stats may be NULL. */
int nlp_wordpiece_train(const nlp_wordcount *wc, const nlp_wordpiece_train_opts *opts, nlp_tok_spec *spec,
                        nlp_wordpiece_train_stats *stats);

#endif
