/*
 * norm.h — LayerNorm and RMSNorm over the last dimension, forward and backward.
 *
 * y = (x − mean) · rstd · γ + β with mean and the biased variance of each row
 * and rstd = 1/sqrt(var + eps), as torch.nn.LayerNorm. The forward pass keeps
 * mean and rstd per row for the backward pass. Rows are handled in parallel;
 * γ/β gradients are summed one column block per thread over all rows in order,
 * so every result is independent of the thread count.
 *
 * RMSNorm (Zhang & Sennrich 2019; LLaMA, T5): y = x · rstd · γ with
 * rstd = 1/sqrt(mean(x²) + eps): no mean subtracted, no β, as HF's
 * LlamaRMSNorm and T5LayerNorm compute it in fp32. The forward pass keeps
 * rstd per row; the γ gradient is summed as LayerNorm's, independent of the
 * thread count.
 *
 * Not here: other normalisations (batch, group).
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

/* RMSNorm: y[N,C] from x[N,C] (y may equal x); rstd [N] (may be NULL in
 * inference). */
void nlp_rmsnorm_forward(float *y, float *rstd, const float *x, const float *gamma, int N, int C, float eps);

/* dx = beta_dx·dx + ∂L/∂x (dx may be dy: replaced in place); dgamma += (skipped
 * when NULL), summed in blocks of rows added in order. x and rstd are the
 * forward pass's. */
void nlp_rmsnorm_backward(float *dx, float beta_dx, float *dgamma, const float *dy, const float *x, const float *rstd,
                          const float *gamma, int N, int C);

#endif
