/*
 * norm.c — LayerNorm. See norm.h.
 */
#include "nn/norm.h"

#include <math.h>
#include <stddef.h>

#define PAR_MIN (1L << 15) /* elements below which one thread does it all */

void nlp_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma, const float *beta,
                           int N, int C, float eps)
{
#pragma omp parallel for schedule(static) if ((long)N * C > PAR_MIN)
    for (int i = 0; i < N; i++) {
        const float *xi = x + (size_t)i * C;
        float *yi = y + (size_t)i * C;
        float s = 0;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += xi[c];
        float m = s / C, v = 0;
#pragma omp simd reduction(+ : v)
        for (int c = 0; c < C; c++) v += (xi[c] - m) * (xi[c] - m);
        float r = 1.0f / sqrtf(v / C + eps);
#pragma omp simd
        for (int c = 0; c < C; c++) yi[c] = (xi[c] - m) * r * gamma[c] + beta[c];
        if (mean) mean[i] = m;
        if (rstd) rstd[i] = r;
    }
}

void nlp_layernorm_backward(float *dx, float beta_dx, float *dgamma, float *dbeta, const float *dy, const float *x,
                            const float *mean, const float *rstd, const float *gamma, int N, int C)
{
    if (dx) {
#pragma omp parallel for schedule(static) if ((long)N * C > PAR_MIN)
        for (int i = 0; i < N; i++) {
            const float *xi = x + (size_t)i * C, *dyi = dy + (size_t)i * C;
            float *dxi = dx + (size_t)i * C;
            float m = mean[i], r = rstd[i], a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
            for (int c = 0; c < C; c++) {
                float dn = dyi[c] * gamma[c];
                a += dn;
                b += dn * (xi[c] - m) * r;
            }
            a /= C;
            b /= C;
            if (beta_dx == 0) {
#pragma omp simd
                for (int c = 0; c < C; c++) dxi[c] = (dyi[c] * gamma[c] - a - (xi[c] - m) * r * b) * r;
            } else {
#pragma omp simd
                for (int c = 0; c < C; c++) dxi[c] = beta_dx * dxi[c] + (dyi[c] * gamma[c] - a - (xi[c] - m) * r * b) * r;
            }
        }
    }
    if (!dgamma && !dbeta) return;
    int blocks = (C + 63) / 64;
#pragma omp parallel for schedule(static) if ((long)N * C > PAR_MIN)
    for (int bk = 0; bk < blocks; bk++) {
        int c0 = bk * 64, c1 = c0 + 64 < C ? c0 + 64 : C;
        float g[64] = {0}, bb[64] = {0};
        for (int i = 0; i < N; i++) {
            const float *xi = x + (size_t)i * C, *dyi = dy + (size_t)i * C;
            float m = mean[i], r = rstd[i];
#pragma omp simd
            for (int c = c0; c < c1; c++) {
                g[c - c0] += dyi[c] * (xi[c] - m) * r;
                bb[c - c0] += dyi[c];
            }
        }
        for (int c = c0; c < c1; c++) {
            if (dgamma) dgamma[c] += g[c - c0];
            if (dbeta) dbeta[c] += bb[c - c0];
        }
    }
}
