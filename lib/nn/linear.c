/*
 * linear.c — fully connected layers over nlp_gemm. See linear.h.
 */
#include "nn/linear.h"
#include "nn/gemm.h"
#include "nn/gemv.h"
#include "nn/q8.h"

#include <string.h>

void nlp_linear_forward(const nlp_linear *l, int N, const float *x, int ldx, float *y, int ldy)
{
    if (l->wq && l->wq->N == l->out && l->wq->K == l->in && nlp_q8_gemm(N, x, ldx, l->wq, l->b, 0.0f, y, ldy) == 0)
        return; /* else (no memory for the quantized rows) fp32 */
    if (l->wp && l->wp->N == l->out && l->wp->K == l->in) {
        nlp_gemm_packed(N, 1.0f, x, ldx, l->wp, l->b, 0.0f, y, ldy);
        return;
    }
    if (l->wbf && N <= NLP_LINEAR_BF16_ROWS) {
        float beta = 0;
        if (l->b) { /* no OpenMP region: a few rows (even a false if() costs more) */
            for (int i = 0; i < N; i++) memcpy(y + (size_t)i * ldy, l->b, (size_t)l->out * sizeof(float));
            beta = 1;
        }
        nlp_gemv(N, l->out, l->in, 1.0f, x, ldx, l->wbf, l->layout == NLP_W_IN_OUT ? l->out : l->in,
                 l->layout == NLP_W_OUT_IN, 1, beta, y, ldy);
    } else if (l->layout == NLP_W_IN_OUT) {
        nlp_gemm_bias(0, 0, N, l->out, l->in, 1.0f, x, ldx, l->w, l->out, l->b, 0.0f, y, ldy);
    } else {
        nlp_gemm_bias(0, 1, N, l->out, l->in, 1.0f, x, ldx, l->w, l->in, l->b, 0.0f, y, ldy);
    }
}

void nlp_colsum_add(float *db, const float *dy, int N, int C, int lddy)
{
    int blocks = (C + 63) / 64;
#pragma omp parallel for schedule(static) if ((long)N * C > (1 << 15))
    for (int bk = 0; bk < blocks; bk++) {
        int c0 = bk * 64, c1 = c0 + 64 < C ? c0 + 64 : C;
        float acc[64] = {0};
        for (int i = 0; i < N; i++) {
            const float *r = dy + (size_t)i * lddy;
#pragma omp simd
            for (int c = c0; c < c1; c++) acc[c - c0] += r[c];
        }
        for (int c = c0; c < c1; c++) db[c] += acc[c - c0];
    }
}

void nlp_linear_backward(const nlp_linear *l, int N, const float *x, int ldx, const float *dy, int lddy, float *dx,
                         int lddx, float beta_dx)
{
    if (l->dw) {
        const float beta = l->dw_set ? 0.0f : 1.0f; /* the same values as adding to zeros */
        if (l->layout == NLP_W_IN_OUT) /* dW[in,out] += xᵀ dy */
            nlp_gemm(1, 0, l->in, l->out, N, 1.0f, x, ldx, dy, lddy, beta, l->dw, l->out);
        else /* dW[out,in] += dyᵀ x */
            nlp_gemm(1, 0, l->out, l->in, N, 1.0f, dy, lddy, x, ldx, beta, l->dw, l->in);
    }
    if (l->db) nlp_colsum_add(l->db, dy, N, l->out, lddy);
    if (dx) {
        if (l->layout == NLP_W_IN_OUT) /* dx = dy Wᵀ, W[in,out] */
            nlp_gemm(0, 1, N, l->in, l->out, 1.0f, dy, lddy, l->w, l->out, beta_dx, dx, lddx);
        else /* dx = dy W, W[out,in] */
            nlp_gemm(0, 0, N, l->in, l->out, 1.0f, dy, lddy, l->w, l->in, beta_dx, dx, lddx);
    }
}
