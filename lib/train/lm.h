/*
 * lm.h — the causal language-modelling task (GPT): random windows of a
 * training corpus, and validation as loss per token, perplexity and bits
 * per byte.
 *
 * Training: each micro-batch is B windows of T tokens at random starts
 * (data.h); the model shifts them into inputs and targets (T-1 targets a
 * window). Validation: the corpus cut into windows of T tokens overlapping
 * by one (every token after the first predicted once, with up to T-1
 * tokens of context), in batches of B, with dropout off.
 *
 *   loss  mean -ln p over the predicted tokens (nats per token)
 *   ppl   exp(loss)
 *   bpb   Σ -log2 p / (bytes · predicted/tokens): bits per UTF-8 byte of
 *         the validation text, independent of the tokenizer (the byte
 *         count scaled to the tokens scored, as the PyTorch twin does);
 *         NaN when the byte count is unknown
 *
 * Not here: reading the corpora (data.h), the loop (loop.h).
 */
#ifndef NLP_TRAIN_LM_H
#define NLP_TRAIN_LM_H

#include "model/model.h"
#include "train/data.h"
#include "train/loop.h"

typedef struct nlp_lm_task {
    nlp_corpus *train;
    const nlp_corpus *valid;
    int B, T;
    int32_t *ids;  /* [B,T] scratch */
} nlp_lm_task;

/* Sets up t and the nlp_task that drives it (valid may be NULL). The
 * training corpus must hold at least T tokens: otherwise NLP_EDATA. */
int nlp_lm_task_init(nlp_lm_task *t, nlp_task *task, nlp_corpus *train, const nlp_corpus *valid, int B,
                     int T);
void nlp_lm_task_free(nlp_lm_task *t);

/* Scores a whole corpus with model m in windows of T tokens, B at a time:
 * out->v = {loss, ppl, bpb}; *ntok gets the tokens predicted (may be NULL). */
int nlp_lm_score(nlp_model *m, const nlp_corpus *c, int B, int T, nlp_eval *out, uint64_t *ntok);

#endif
