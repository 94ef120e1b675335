/*
 * score.h — how likely a causal language model (GPT, LLaMA) finds a
 * continuation after a context: the per-token log-probabilities of the
 * continuation's tokens, the primitive of every likelihood evaluation
 * (`generate --score`, the choices of in-context learning, icl.h).
 *
 * A continuation token's log-probability is −nll with nll the term the
 * training loss computes for that position (nn/loss.h nlp_xent_rows:
 * lse − x_y, natural log): the same per-token terms that perplexity sums
 * (train/lm.h), so that scoring a text's tokens after its first one gives
 * −(loss × tokens) of its perplexity.
 *
 * Two ways to the logits:
 *  - nlp_score_batch: full forward passes (nlp_model_forward, perplexity's
 *    own pass) over context + continuation, several items a pass, each row
 *    padded on the right to the longest (the model is causal: what follows
 *    a row's end changes nothing before it);
 *  - nlp_scorer (nlp_score_choices): several continuations of one context,
 *    the context decoded once into the KV cache and shared by every
 *    continuation's row (model.h nlp_cache_share); the continuations then
 *    run as the rows of one decoding pass. Equal to nlp_score_batch's up to
 *    rounding (nlp_model_decode's products sum in another order).
 *
 * Not here: tokenization, templates and choosing (icl.h), reading input.
 */
#ifndef NLP_DECODE_SCORE_H
#define NLP_DECODE_SCORE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "tok/encoding.h"
#include "tok/tokenizer.h"

/* One context and its continuation (ids; not copied). */
typedef struct nlp_score_item {
    const int32_t *ctx;  /* nctx >= 1 tokens */
    size_t nctx;
    const int32_t *cont; /* ncont >= 1 tokens */
    size_t ncont;
} nlp_score_item;

/* Scores n items with full forward passes of at most max_rows rows and
 * max_tokens padded positions each (one row at least; <= 0: 8 rows, 4096
 * positions). logp gets the log-probabilities of every continuation token,
 * item after item (item i's at the sum of the ncont before it); greedy
 * (may be NULL) the same places 1 when the token is the most probable one
 * there. Every nctx + ncont must fit the model (nlp_model_config_max_len).
 * Errors: NLP_EINVAL (an empty context or continuation, naming the item,
 * counted from 0), NLP_EDATA (ids outside the vocabulary, too long: the
 * model's messages), NLP_ENAN naming the item when a log-probability is not
 * finite (the model's scores are NaN), NLP_ENOMEM. */
int nlp_score_batch(nlp_model *m, const nlp_score_item *it, size_t n, int max_rows, size_t max_tokens, double *logp,
                    uint8_t *greedy);

/* The caches of nlp_score_choices, kept from one context to the next. */
typedef struct nlp_scorer nlp_scorer;

/* A scorer for model m (gpt or llama) whose contexts and continuations
 * together take at most max_len positions, max_rows continuations a pass
 * (more are scored in several passes over the same shared context).
 * Free with nlp_scorer_free. NLP_EINVAL (another architecture), NLP_ENOMEM. */
int nlp_scorer_new(nlp_scorer **out, nlp_model *m, int max_rows, int max_len);
void nlp_scorer_free(nlp_scorer *s);

/* The log-probabilities of k continuations cont[0..k) (each >= 1 token)
 * of one context ctx[0..nctx) (nctx >= 1): logp and greedy (may be NULL)
 * as nlp_score_batch's, continuation after continuation. The context but
 * its last token is decoded once; each row then decodes that last token
 * and its continuation. nctx + the longest continuation must fit max_len.
 * Errors as nlp_score_batch's (items named as continuations). */
int nlp_score_choices(nlp_scorer *s, const int32_t *ctx, size_t nctx, const nlp_ids *cont, int k, double *logp,
                      uint8_t *greedy);

/* Encodes text for scoring with model m: a context (context = 1) as
 * `generate` encodes a prompt (with a LLaMA-family model the tokenizer's
 * template adds its <s> first, as the model was trained to see), a
 * continuation (context = 0) as plain text, special tokens' text being
 * special tokens. out is cleared first. The tokenizer's errors. */
int nlp_score_encode(const nlp_tokenizer *tk, nlp_tok_state *st, const nlp_model *m, const char *s, size_t n,
                     int context, nlp_ids *out);

#endif
