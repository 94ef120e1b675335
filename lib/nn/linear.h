/*
 * linear.h — fully connected layer y = x·W + b, forward and backward, in both
 * weight layouts real checkpoints use.
 *
 *   NLP_W_OUT_IN  W[out,in], y = x·Wᵀ + b   (torch nn.Linear: BERT, Vaswani)
 *   NLP_W_IN_OUT  W[in,out], y = x·W + b    (HF GPT-2 Conv1D)
 *
 * Rows of x and y may be strided (ldx/ldy floats apart), so one call can write
 * a column block of a wider buffer (the q, k and v thirds of a fused [N,3C]
 * projection) or read every T-th row (BERT's [CLS] rows). Products go through
 * nlp_gemm; the bias gradient is a column sum computed one column block per
 * thread over all rows in order, so it does not depend on the thread count.
 *
 * Not here: activations (act.h), attention (attn.h).
 */
#ifndef NLP_NN_LINEAR_H
#define NLP_NN_LINEAR_H

#include <stdint.h>

#include "nn/sgemm.h"

/* Rows up to which a layer with bf16 weights streams them (gemv.h); longer
 * inputs (a long prompt) multiply with the fp32 weights through nlp_gemm. */
#define NLP_LINEAR_BF16_ROWS 16

enum nlp_wlayout {
    NLP_W_OUT_IN = 0,
    NLP_W_IN_OUT = 1,
};

typedef struct nlp_linear {
    const float *w, *b; /* b may be NULL (no bias) */
    const uint16_t *wbf; /* inference: W rounded to bfloat16 (same layout), used for up to
                            NLP_LINEAR_BF16_ROWS rows (gemv.h); NULL = none */
    const nlp_sgemm_b *wp; /* inference: op(W) packed for the matrix kernels (same results as w); NULL = none */
    const struct nlp_q8 *wq; /* inference: W[out,in] in int8 (q8.h), used for every product; NULL = none */
    float *dw, *db;     /* gradients, accumulated (+=); NULL when not training */
    int dw_set;         /* backward writes dw (=) instead of adding to it (the gradient was zero) */
    int in, out;
    enum nlp_wlayout layout;
} nlp_linear;

/* y[N, out] (row stride ldy) = x[N, in] (row stride ldx) · W + b. */
void nlp_linear_forward(const nlp_linear *l, int N, const float *x, int ldx, float *y, int ldy);

/* Given dy[N, out] (stride lddy): dW += xᵀ·dy (layout-aware; dW = xᵀ·dy with
 * dw_set), db += Σ rows of dy (when l->dw / l->db are set), and dx = dy·Wᵀ + beta_dx·dx when dx != NULL
 * (beta_dx 0 overwrites, 1 accumulates into a residual gradient). */
void nlp_linear_backward(const nlp_linear *l, int N, const float *x, int ldx, const float *dy, int lddy, float *dx,
                         int lddx, float beta_dx);

/* db[c] += Σ_i dy[i, c] for c < C (rows lddy apart); deterministic. */
void nlp_colsum_add(float *db, const float *dy, int N, int C, int lddy);

#endif
