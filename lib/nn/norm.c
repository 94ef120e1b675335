/*
 * norm.c — LayerNorm. See norm.h.
 */
#include "nn/norm.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PAR_MIN (1L << 15) /* elements below which one thread does it all */
/* Parallel loops hand out chunks as threads become free (schedule dynamic):
 * on a machine where a neighbour slows one core, a fixed half each would
 * wait for the slower. Each element or row is computed the same either way. */

static inline void ln_row(float *y, float *mean, float *rstd, const float *x, const float *gamma, const float *beta,
                          int i, int C, float eps)
{
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

void nlp_layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma, const float *beta,
                           int N, int C, float eps)
{
    /* a few rows (decoding) without entering OpenMP at all: even a region
     * whose if() is false costs a few microseconds in libgomp (a futex wake
     * of its idle threads), more than a row */
    if ((long)N * C <= PAR_MIN) {
        for (int i = 0; i < N; i++) ln_row(y, mean, rstd, x, gamma, beta, i, C, eps);
        return;
    }
#pragma omp parallel for schedule(dynamic, 16)
    for (int i = 0; i < N; i++) ln_row(y, mean, rstd, x, gamma, beta, i, C, eps);
}

/* Rows per block of the γ/β gradient sums: each block's sums are made by one
 * thread and the blocks are added in order, so that they do not depend on
 * the thread count. */
#define LN_ROWS 32

/* dx row i (dx may be dy: the row's dy is read before it is written). */
static inline void ln_dx_row(float *dxi, float beta_dx, const float *dyi, const float *xi, float m, float r,
                             const float *gamma, int C)
{
    float a = 0, b = 0;
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

/* The γ/β gradient terms of rows [i0, i1) added into g and bb. */
static inline void ln_dgb_rows(float *g, float *bb, const float *dy, const float *x, const float *mean,
                               const float *rstd, int i0, int i1, int C)
{
    for (int i = i0; i < i1; i++) {
        const float *xi = x + (size_t)i * C, *dyi = dy + (size_t)i * C;
        const float m = mean[i], r = rstd[i];
#pragma omp simd
        for (int c = 0; c < C; c++) {
            g[c] += dyi[c] * (xi[c] - m) * r;
            bb[c] += dyi[c];
        }
    }
}

void nlp_layernorm_backward(float *dx, float beta_dx, float *dgamma, float *dbeta, const float *dy, const float *x,
                            const float *mean, const float *rstd, const float *gamma, int N, int C)
{
    const int want_gb = dgamma || dbeta, nb = (N + LN_ROWS - 1) / LN_ROWS;
    float *part = want_gb ? calloc((size_t)nb * 2 * C, sizeof *part) : NULL;
    if (!want_gb || part) { /* one pass: each block of rows adds its γ/β terms, then its dx */
#pragma omp parallel for schedule(dynamic, 1) if ((long)N * C > PAR_MIN)
        for (int k = 0; k < nb; k++) {
            const int i0 = k * LN_ROWS, i1 = i0 + LN_ROWS < N ? i0 + LN_ROWS : N;
            if (part) ln_dgb_rows(part + (size_t)k * 2 * C, part + (size_t)k * 2 * C + C, dy, x, mean, rstd, i0, i1, C);
            if (dx)
                for (int i = i0; i < i1; i++)
                    ln_dx_row(dx + (size_t)i * C, beta_dx, dy + (size_t)i * C, x + (size_t)i * C, mean[i], rstd[i],
                              gamma, C);
        }
        if (!part) return;
        for (int c = 0; c < C; c++) {
            float g = 0, bb = 0;
            for (int k = 0; k < nb; k++) g += part[(size_t)k * 2 * C + c], bb += part[(size_t)k * 2 * C + C + c];
            if (dgamma) dgamma[c] += g;
            if (dbeta) dbeta[c] += bb;
        }
        free(part);
        return;
    }
    /* no memory for the block sums: γ/β first, a block of rows at a time in
     * order (the same sums), then dx (which may overwrite dy) */
    float *g = calloc((size_t)4 * C, sizeof *g);
    if (g) {
        float *blk = g + 2 * C;
        for (int k = 0; k < nb; k++) {
            const int i0 = k * LN_ROWS, i1 = i0 + LN_ROWS < N ? i0 + LN_ROWS : N;
            memset(blk, 0, (size_t)2 * C * sizeof *blk);
            ln_dgb_rows(blk, blk + C, dy, x, mean, rstd, i0, i1, C);
            for (int c = 0; c < 2 * C; c++) g[c] += blk[c];
        }
        for (int c = 0; c < C; c++) {
            if (dgamma) dgamma[c] += g[c];
            if (dbeta) dbeta[c] += g[C + c];
        }
        free(g);
    } else { /* not even 2C floats: column by column */
        for (int c = 0; c < C; c++)
            for (int i = 0; i < N; i++) {
                const float d = dy[(size_t)i * C + c];
                if (dgamma) dgamma[c] += d * (x[(size_t)i * C + c] - mean[i]) * rstd[i];
                if (dbeta) dbeta[c] += d;
            }
    }
    if (dx)
#pragma omp parallel for schedule(dynamic, 16) if ((long)N * C > PAR_MIN)
        for (int i = 0; i < N; i++)
            ln_dx_row(dx + (size_t)i * C, beta_dx, dy + (size_t)i * C, x + (size_t)i * C, mean[i], rstd[i], gamma, C);
}

// --- RMSNorm

void nlp_rmsnorm_forward(float *y, float *rstd, const float *x, const float *gamma, int N, int C, float eps)
{
#pragma omp parallel for schedule(dynamic, 16) if ((long)N * C > PAR_MIN)
    for (int i = 0; i < N; i++) {
        const float *xi = x + (size_t)i * C;
        float *yi = y + (size_t)i * C;
        float s = 0;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += xi[c] * xi[c];
        const float r = 1.0f / sqrtf(s / C + eps);
#pragma omp simd
        for (int c = 0; c < C; c++) yi[c] = xi[c] * r * gamma[c];
        if (rstd) rstd[i] = r;
    }
}

/* dx row i: with x̂ = x·r and dn = dy·γ, dx = r·(dn − x̂·mean(dn·x̂)) (dx may be dy). */
static inline void rms_dx_row(float *dxi, float beta_dx, const float *dyi, const float *xi, float r, const float *gamma,
                              int C)
{
    float a = 0;
#pragma omp simd reduction(+ : a)
    for (int c = 0; c < C; c++) a += dyi[c] * gamma[c] * xi[c] * r;
    a /= C;
    if (beta_dx == 0) {
#pragma omp simd
        for (int c = 0; c < C; c++) dxi[c] = (dyi[c] * gamma[c] - xi[c] * r * a) * r;
    } else {
#pragma omp simd
        for (int c = 0; c < C; c++) dxi[c] = beta_dx * dxi[c] + (dyi[c] * gamma[c] - xi[c] * r * a) * r;
    }
}

static inline void rms_dg_rows(float *g, const float *dy, const float *x, const float *rstd, int i0, int i1, int C)
{
    for (int i = i0; i < i1; i++) {
        const float *xi = x + (size_t)i * C, *dyi = dy + (size_t)i * C;
        const float r = rstd[i];
#pragma omp simd
        for (int c = 0; c < C; c++) g[c] += dyi[c] * xi[c] * r;
    }
}

void nlp_rmsnorm_backward(float *dx, float beta_dx, float *dgamma, const float *dy, const float *x, const float *rstd,
                          const float *gamma, int N, int C)
{
    const int nb = (N + LN_ROWS - 1) / LN_ROWS;
    float *part = dgamma ? calloc((size_t)nb * C, sizeof *part) : NULL;
    if (!dgamma || part) { /* one pass: each block of rows adds its γ terms, then its dx */
#pragma omp parallel for schedule(dynamic, 1) if ((long)N * C > PAR_MIN)
        for (int k = 0; k < nb; k++) {
            const int i0 = k * LN_ROWS, i1 = i0 + LN_ROWS < N ? i0 + LN_ROWS : N;
            if (part) rms_dg_rows(part + (size_t)k * C, dy, x, rstd, i0, i1, C);
            if (dx)
                for (int i = i0; i < i1; i++)
                    rms_dx_row(dx + (size_t)i * C, beta_dx, dy + (size_t)i * C, x + (size_t)i * C, rstd[i], gamma, C);
        }
        if (!part) return;
        for (int c = 0; c < C; c++) {
            float g = 0;
            for (int k = 0; k < nb; k++) g += part[(size_t)k * C + c];
            dgamma[c] += g;
        }
        free(part);
        return;
    }
    /* no memory for the block sums: the same sums, a block at a time in order */
    float *g = calloc((size_t)2 * C, sizeof *g);
    if (g) {
        for (int k = 0; k < nb; k++) {
            const int i0 = k * LN_ROWS, i1 = i0 + LN_ROWS < N ? i0 + LN_ROWS : N;
            memset(g + C, 0, (size_t)C * sizeof *g);
            rms_dg_rows(g + C, dy, x, rstd, i0, i1, C);
            for (int c = 0; c < C; c++) g[c] += g[C + c];
        }
        for (int c = 0; c < C; c++) dgamma[c] += g[c];
        free(g);
    } else {
        for (int c = 0; c < C; c++)
            for (int i = 0; i < N; i++) dgamma[c] += dy[(size_t)i * C + c] * x[(size_t)i * C + c] * rstd[i];
    }
    if (dx)
#pragma omp parallel for schedule(dynamic, 16) if ((long)N * C > PAR_MIN)
        for (int i = 0; i < N; i++)
            rms_dx_row(dx + (size_t)i * C, beta_dx, dy + (size_t)i * C, x + (size_t)i * C, rstd[i], gamma, C);
}
