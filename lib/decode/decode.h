/*
 * decode.h — turning a model's next-token distributions into text: greedy,
 * sampling (temperature, top-k, top-p, repetition penalty) and beam search,
 * over the model's KV cache (model.h: nlp_cache, nlp_model_decode). One
 * decoder for GPT continuation (`generate`) and encoder-decoder
 * translation (`translate`).
 *
 * A search runs over a primed cache: for GPT the prompt has been fed; for
 * the encoder-decoder the source encoded and BOS fed. Each search step
 * feeds the tokens just chosen (one per row) and reads the logits of that
 * position.
 *
 * Sampling (HF generate's order): repetition penalty (CTRL: a seen token's
 * logit is divided by p when positive, multiplied when negative), then
 * temperature, then top-k, then top-p (the smallest set of most probable
 * tokens whose probability reaches p, at least one), then one draw from
 * the renormalised distribution. Temperature 0 is greedy (argmax, the
 * lowest id on ties, as torch.argmax).
 *
 * Beam search (the reference's encdec_beam_search, GNMT length penalty
 * lp = ((5 + len)/6)^α): `beams` hypotheses per group, one live at the
 * first step; a hypothesis that produced EOS is frozen (it may only extend
 * with EOS at no cost); the best `beams` of beams×V candidates by score/lp
 * survive; the cache rows are reordered to follow them. The result is the
 * hypothesis with the best score/lp, EOS not included. Scores are fp32 as
 * in the reference.
 *
 * Not here: tokenization and prompts (the tools), the model (model.h).
 */
#ifndef NLP_DECODE_DECODE_H
#define NLP_DECODE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "model/model.h"
#include "tok/encoding.h"

typedef struct nlp_sampler {
    double temperature;        /* 0 = greedy */
    int top_k;                 /* 0 = no limit */
    double top_p;              /* 1 = no limit */
    double repetition_penalty; /* 1 = none */
    nlp_rng rng;
} nlp_sampler;

/* Greedy: temperature 0, no limits, no penalty. */
nlp_sampler nlp_sampler_greedy(void);

/* Chooses the next token from logits[V] (modified in place: penalties,
 * temperature, then probabilities), given the ids seen so far (prompt and
 * generated, for the repetition penalty). `work` holds V ints. */
int32_t nlp_sample(nlp_sampler *s, float *logits, int V, const int32_t *seen, size_t nseen, int32_t *work);

/* Index of the largest value (the lowest index on ties); NaN never wins. */
int32_t nlp_argmax(const float *x, int n);

/* log-softmax of x[n] into out[n] (fp32, max-subtracted). */
void nlp_log_softmax(const float *x, float *out, int n);

/* Feeds one token per row of the cache's B rows and computes their logits. */
int nlp_decode_feed(nlp_model *m, nlp_cache *c, int B, int T, const int32_t *ids);

/* Callback per generated token of row `row`; return non-zero to stop that
 * row (e.g. a stop string was reached). */
typedef int (*nlp_token_cb)(void *ctx, int row, int32_t id);

typedef struct nlp_gen_opts {
    int max_new;          /* tokens to generate at most */
    int32_t eos;          /* stops a row (not passed to on_token); -1 = none */
    nlp_sampler sampler;
    nlp_token_cb on_token;
    void *ctx;
    int vocab_limit;      /* > 0: only ids below it are chosen (a tokenizer with fewer ids than the
                             model's vocabulary cannot write the others); 0 = all */
} nlp_gen_opts;

/* Greedy or sampled continuation of B rows of a primed cache whose last
 * logits (nlp_model_logits: the last position of each row) are current.
 * `hist[r]` holds row r's ids so far (prompt) and gets the new ones
 * appended. Rows stop at EOS, when on_token says so, or after max_new
 * tokens. Returns 0 or an error status: NLP_ENAN naming the step, row and
 * token when a row's scores hold a NaN or an infinity (nothing can be drawn
 * from them). */
int nlp_generate_rows(nlp_model *m, nlp_cache *c, int B, const nlp_gen_opts *o, nlp_ids *hist);

typedef struct nlp_beam_opts {
    int beams;              /* hypotheses per group (>= 1) */
    int max_new;            /* steps at most */
    double alpha;           /* length penalty α (0 = none: plain log-probability) */
    int32_t eos;            /* -1 = none: every hypothesis runs max_new steps */
    int early_stop;         /* stop when every hypothesis of every group has ended */
    int nbest;              /* hypotheses returned per group, best first (<= beams; 0 = 1) */
    const int *group_max;   /* [G] steps at most for group g (<= max_new), or NULL: a group
                               stops where it would stop searched alone */
    int vocab_limit;        /* > 0: only ids below it are searched (log-probabilities normalised
                               over them), as nlp_gen_opts's; 0 = all */
} nlp_beam_opts;

/* Beam search over G groups of o->beams rows each (the cache has
 * G·beams rows, every row of a group primed identically, the last logits
 * current). out[g·nb + j] (nb = max(1, nbest)) gets group g's j-th best
 * hypothesis (EOS excluded), scores[g·nb + j] (may be NULL) its summed
 * log-probability (EOS included) and norm[g·nb + j] (may be NULL) that
 * divided by the length penalty, the figure it was ranked by. NLP_ENAN
 * naming the step, row and token when a live row's scores have no finite
 * log-probabilities (a NaN or +inf logit): nothing can be ranked. */
int nlp_beam_search(nlp_model *m, nlp_cache *c, int G, const nlp_beam_opts *o, nlp_ids *out, float *scores,
                    float *norm);

#endif
