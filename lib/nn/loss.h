/*
 * loss.h — softmax cross-entropy with label smoothing and an ignore index,
 * forward and backward, over rows of logits.
 *
 * For a row with logits x (V classes) and target y, with lse = log Σ exp x:
 *   nll  = lse − x_y
 *   uniform smoothing (torch label_smoothing, the default):
 *        loss = (1−ε)·nll + ε/V · Σ_v (lse − x_v)
 *   "others" smoothing (fairseq, tensor2tensor):
 *        loss = (1−ε)·nll + ε/(V−1) · Σ_{v≠y} (lse − x_v)
 * Rows whose target equals ignore_index contribute nothing; the reported loss
 * and nll are means over the remaining rows (torch reduction "mean").
 * The gradient of loss·scale with respect to x is (softmax(x) − q)·scale with
 * q the smoothed target distribution.
 *
 * Not here: the shift of causal LM labels and the summing of several losses
 * (lib/model).
 */
#ifndef NLP_NN_LOSS_H
#define NLP_NN_LOSS_H

#include <stdint.h>

enum nlp_smoothing {
    NLP_SMOOTH_UNIFORM = 0,
    NLP_SMOOTH_OTHERS = 1,
};

typedef struct nlp_xent {
    int N, V;                 /* rows, classes */
    const float *logits;      /* [N, V], row stride ld */
    long ld;
    const int32_t *target;    /* [N] */
    int ignore_index;
    float smoothing;          /* ε in [0, 1) */
    enum nlp_smoothing mode;
    double norm;              /* the divisor of the means: 0 = the rows counted here; data-parallel
                                 training gives each share of a batch the whole batch's count, so
                                 the shares' losses and gradients sum to the whole's */
} nlp_xent;

typedef struct nlp_xent_result {
    double loss, nll; /* means over counted rows (0 when none) */
    int count;        /* rows not ignored */
} nlp_xent_result;

/* Computes the losses; lse [N, 2] receives each row's log-sum-exp for the
 * backward pass as two floats, the row maximum and log Σ exp(x − max) (so
 * that a large common offset of the logits costs no precision); may be NULL
 * when no backward follows. Targets outside [0, V) that are not
 * ignore_index are the caller's to reject beforehand. */
void nlp_xent_forward(const nlp_xent *x, float *lse, nlp_xent_result *out);

/* Each row's own term as nlp_xent_forward counts it, without smoothing:
 * nll[i] = lse_i − x_{i,y}, the negative natural log-probability of the
 * row's target (the same bits as the forward pass's per-row term, which
 * nlp_xent_forward sums into its nll), and top[i] (top may be NULL) = 1
 * when the target's logit is the row's largest (greedy decoding would have
 * chosen it, ties included), else 0. Rows whose target is ignore_index are
 * not read: nll 0, top 0. A row holding a NaN gives a NaN nll. norm and
 * smoothing are not used. */
void nlp_xent_rows(const nlp_xent *x, double *nll, uint8_t *top);

/* dlogits [N, V] (row stride ld_d; may be the logits buffer itself) =
 * ∂(scale·mean loss)/∂logits, i.e. (softmax − q)·scale/count per counted row and
 * 0 on ignored rows; lse [N, 2] from the forward pass. */
void nlp_xent_backward(const nlp_xent *x, const float *lse, float scale, float *dlogits, long ld_d);

/* Forward and backward in one pass over the logits (training): the losses
 * as nlp_xent_forward, and the logits overwritten in place by the gradient
 * of nlp_xent_backward with scale 1, each row read once while it is in
 * cache. lse as nlp_xent_forward (may be NULL). The same values as the two
 * calls, bit for bit. */
void nlp_xent_fused(const nlp_xent *x, float *lse, nlp_xent_result *out);

#endif
