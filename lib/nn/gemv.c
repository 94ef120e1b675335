/*
 * gemv.c — few-row products streaming the weights once. See gemv.h.
 */
#include "nn/gemv.h"
#include "base/mem.h"
#include "nn/safetensors.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef float v16 __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));
typedef uint16_t v16h __attribute__((vector_size(32)));

#define ALWAYS_INLINE static inline __attribute__((always_inline))

ALWAYS_INLINE v16 ld(const float *p)
{
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

ALWAYS_INLINE void st(float *p, v16 v) { memcpy(p, &v, sizeof v); }

/* 16 weights at element i of W, widened to fp32 */
ALWAYS_INLINE v16 ldwv(const void *W, size_t i, int bf)
{
    if (!bf) return ld((const float *)W + i);
    v16h h;
    memcpy(&h, (const uint16_t *)W + i, sizeof h);
    v16u u = __builtin_convertvector(h, v16u) << 16;
    return (v16)u;
}

ALWAYS_INLINE float ldw1(const void *W, size_t i, int bf)
{
    if (!bf) return ((const float *)W)[i];
    uint32_t u = (uint32_t)((const uint16_t *)W)[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

ALWAYS_INLINE float hsum(v16 v)
{
    float s = 0;
    for (int i = 0; i < 16; i++) s += v[i];
    return s;
}

/* W[K,N]: acc[m, 0..N) += Σ_{k in [k0,k1)} x[m,k]·W[k,:], for m < M <= 4.
 * Four rows of W at a time, each read sequentially. */
ALWAYS_INLINE void kn_rows(int M, int N, int k0, int k1, const float *x, int ldx, const void *W, int ldw, int bf,
                           float *acc)
{
    int k = k0;
    for (; k + 4 <= k1; k += 4) {
        float a[NLP_GEMV_MAX_M][4];
        for (int m = 0; m < M; m++)
            for (int j = 0; j < 4; j++) a[m][j] = x[(size_t)m * ldx + k + j];
        const size_t r0 = (size_t)k * ldw;
        int n = 0;
        for (; n + 16 <= N; n += 16) {
            v16 w0 = ldwv(W, r0 + n, bf), w1 = ldwv(W, r0 + ldw + n, bf), w2 = ldwv(W, r0 + 2 * (size_t)ldw + n, bf),
                w3 = ldwv(W, r0 + 3 * (size_t)ldw + n, bf);
            for (int m = 0; m < M; m++) {
                float *y = acc + (size_t)m * N + n;
                st(y, ld(y) + a[m][0] * w0 + a[m][1] * w1 + a[m][2] * w2 + a[m][3] * w3);
            }
        }
        for (; n < N; n++)
            for (int m = 0; m < M; m++)
                acc[(size_t)m * N + n] += a[m][0] * ldw1(W, r0 + n, bf) + a[m][1] * ldw1(W, r0 + ldw + n, bf) +
                                          a[m][2] * ldw1(W, r0 + 2 * (size_t)ldw + n, bf) +
                                          a[m][3] * ldw1(W, r0 + 3 * (size_t)ldw + n, bf);
    }
    for (; k < k1; k++) {
        const size_t r0 = (size_t)k * ldw;
        for (int m = 0; m < M; m++) {
            const float a = x[(size_t)m * ldx + k];
            for (int n = 0; n < N; n++) acc[(size_t)m * N + n] += a * ldw1(W, r0 + n, bf);
        }
    }
}

/* W[N,K]: y[m, n] = x[m,:]·W[n,:] for n in [n0,n1), m < M <= 4; four rows of W at a time. */
ALWAYS_INLINE void nk_rows(int M, int n0, int n1, int K, const float *x, int ldx, const void *W, int ldw, int bf,
                           float *out, int ldo)
{
    int n = n0;
    for (; n + 4 <= n1; n += 4) {
        v16 acc[NLP_GEMV_MAX_M][4];
        for (int m = 0; m < M; m++)
            for (int j = 0; j < 4; j++) acc[m][j] = (v16){0};
        const size_t r = (size_t)n * ldw;
        int k = 0;
        for (; k + 16 <= K; k += 16) {
            v16 w0 = ldwv(W, r + k, bf), w1 = ldwv(W, r + ldw + k, bf), w2 = ldwv(W, r + 2 * (size_t)ldw + k, bf),
                w3 = ldwv(W, r + 3 * (size_t)ldw + k, bf);
            for (int m = 0; m < M; m++) {
                v16 xv = ld(x + (size_t)m * ldx + k);
                acc[m][0] += xv * w0, acc[m][1] += xv * w1, acc[m][2] += xv * w2, acc[m][3] += xv * w3;
            }
        }
        for (int m = 0; m < M; m++)
            for (int j = 0; j < 4; j++) {
                float s = hsum(acc[m][j]);
                for (int kk = k; kk < K; kk++) s += x[(size_t)m * ldx + kk] * ldw1(W, r + (size_t)j * ldw + kk, bf);
                out[(size_t)m * ldo + n + j] = s;
            }
    }
    for (; n < n1; n++)
        for (int m = 0; m < M; m++) {
            float s = 0;
            for (int k = 0; k < K; k++) s += x[(size_t)m * ldx + k] * ldw1(W, (size_t)n * ldw + k, bf);
            out[(size_t)m * ldo + n] = s;
        }
}

static void gemv_kn(int M, int N, int K, const float *x, int ldx, const void *W, int ldw, int bf, float beta, float *y,
                    int ldy)
{
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    /* below ~64K weights a split is not worth waking threads */
    if ((size_t)K * N < 65536) nt = 1;
    if (nt > K / 4) nt = K / 4 > 0 ? K / 4 : 1;
    float *part = nlp_malloc((size_t)nt * M * N * sizeof *part);
    if (!part) nt = 0; /* no memory: compute in place, one thread */
    if (nt == 0) {
        if (beta == 0)
            for (int m = 0; m < M; m++) memset(y + (size_t)m * ldy, 0, (size_t)N * sizeof *y);
        for (int m = 0; m < M; m++) { /* acc = y row by row (y may be strided) */
            if (bf) kn_rows(1, N, 0, K, x + (size_t)m * ldx, ldx, W, ldw, 1, y + (size_t)m * ldy);
            else kn_rows(1, N, 0, K, x + (size_t)m * ldx, ldx, W, ldw, 0, y + (size_t)m * ldy);
        }
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static, 1) if (nt > 1)
    for (int t = 0; t < nt; t++) {
        /* contiguous ranges of rows, multiples of 4 */
        int per = ((K + 3) / 4 + nt - 1) / nt * 4;
        int k0 = t * per, k1 = t == nt - 1 || k0 + per > K ? K : k0 + per;
        float *acc = part + (size_t)t * M * N;
        memset(acc, 0, (size_t)M * N * sizeof *acc);
        if (k0 < k1) {
            if (bf) kn_rows(M, N, k0, k1, x, ldx, W, ldw, 1, acc);
            else kn_rows(M, N, k0, k1, x, ldx, W, ldw, 0, acc);
        }
    }
    for (int m = 0; m < M; m++) {
        float *yr = y + (size_t)m * ldy;
        for (int n = 0; n < N; n++) {
            float s = beta != 0 ? yr[n] : 0.0f;
            for (int t = 0; t < nt; t++) s += part[((size_t)t * M + m) * N + n];
            yr[n] = s;
        }
    }
    free(part);
}

static void gemv_nk(int M, int N, int K, const float *x, int ldx, const void *W, int ldw, int bf, float beta, float *y,
                    int ldy)
{
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if ((size_t)K * N < 65536) nt = 1;
    if (beta != 0) { /* y += x·Wᵀ: compute into a scratch row block, then add */
        float *tmp = nlp_malloc((size_t)M * N * sizeof *tmp);
        if (tmp) {
            gemv_nk(M, N, K, x, ldx, W, ldw, bf, 0.0f, tmp, N);
            for (int m = 0; m < M; m++)
                for (int n = 0; n < N; n++) y[(size_t)m * ldy + n] += tmp[(size_t)m * N + n];
            free(tmp);
            return;
        }
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float s = 0;
                for (int k = 0; k < K; k++) s += x[(size_t)m * ldx + k] * ldw1(W, (size_t)n * ldw + k, bf);
                y[(size_t)m * ldy + n] += s;
            }
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static, 1) if (nt > 1)
    for (int t = 0; t < nt; t++) {
        int per = (N / 4 + nt - 1) / nt * 4;
        int n0 = t * per, n1 = t == nt - 1 ? N : (n0 + per < N ? n0 + per : N);
        if (n0 < n1) {
            if (bf) nk_rows(M, n0, n1, K, x, ldx, W, ldw, 1, y, ldy);
            else nk_rows(M, n0, n1, K, x, ldx, W, ldw, 0, y, ldy);
        }
    }
}

void nlp_gemv(int M, int N, int K, const float *x, int ldx, const void *W, int ldw, int trans_w, int w_bf16,
              float beta, float *y, int ldy)
{
    for (int m0 = 0; m0 < M; m0 += NLP_GEMV_MAX_M) {
        int mm = M - m0 < NLP_GEMV_MAX_M ? M - m0 : NLP_GEMV_MAX_M;
        const float *xm = x + (size_t)m0 * ldx;
        float *ym = y + (size_t)m0 * ldy;
        if (trans_w) gemv_nk(mm, N, K, xm, ldx, W, ldw, w_bf16, beta, ym, ldy);
        else gemv_kn(mm, N, K, xm, ldx, W, ldw, w_bf16, beta, ym, ldy);
    }
}

void nlp_to_bf16(const float *src, uint16_t *dst, size_t n)
{
#pragma omp parallel for schedule(static) if (n > 1 << 20)
    for (size_t i = 0; i < n; i++) dst[i] = nlp_f32_to_bf16(src[i]);
}
