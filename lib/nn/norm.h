/*
 * norm.h — LayerNorm over the last dimension, forward and backward.
 *
 * y = (x − mean) · rstd · γ + β with mean and the biased variance of each row
 * and rstd = 1/sqrt(var + eps), as torch.nn.LayerNorm. The forward pass keeps
 * mean and rstd per row for the backward pass. Rows are handled in parallel;
 * γ/β gradients are summed one column block per thread over all rows in order,
 * so every result is independent of the thread count.
 *
 * Not here: RMSNorm or other normalisations.
 */
#ifndef NLP_NN_NORM_H
#define NLP_NN_NORM_H

/* y[N,C] from x[N,C] (both contiguous; y may equal x); mean/rstd [N] (may be
 * NULL in inference). */
void nlp_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma, const float *beta,
                           int N, int C, float eps);

/* dx = beta_dx·dx + ∂L/∂x (dx may be dy itself: the gradient replaces it in
 * place); dgamma/dbeta += (skipped when NULL), summed in blocks of rows added
 * in order, whatever the thread count. x, mean and rstd are those of the
 * forward pass. */
void nlp_layernorm_backward(float *dx, float beta_dx, float *dgamma, float *dbeta, const float *dy, const float *x,
                            const float *mean, const float *rstd, const float *gamma, int N, int C);

#endif
