/*
 * gemv.c — few-row products streaming the weights once. See gemv.h.
 */
#include "nn/gemv.h"
#include "base/mem.h"
#include "base/pool.h"
#include "nn/safetensors.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef float v16 __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));
typedef uint16_t v16h __attribute__((vector_size(32)));

/* The build is ISO C (-std=c11), where GCC does not fuse a·b + c into one
 * FMA; these kernels want the fused form (it is what bounds their speed and
 * what a BLAS does). */
#pragma GCC optimize("fp-contract=fast")

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
 * W is read row after row, start to end (one sequential stream); the rows of
 * acc stay in L1. */
ALWAYS_INLINE void kn_rows(int M, int N, int k0, int k1, const float *x, int ldx, const void *W, int ldw, int bf,
                           float *acc)
{
    for (int k = k0; k < k1; k++) {
        float a[NLP_GEMV_MAX_M];
        for (int m = 0; m < M; m++) a[m] = x[(size_t)m * ldx + k];
        const size_t r0 = (size_t)k * ldw;
        int n = 0;
        for (; n + 64 <= N; n += 64) {
            v16 w0 = ldwv(W, r0 + n, bf), w1 = ldwv(W, r0 + n + 16, bf), w2 = ldwv(W, r0 + n + 32, bf),
                w3 = ldwv(W, r0 + n + 48, bf);
            for (int m = 0; m < M; m++) {
                float *y = acc + (size_t)m * N + n;
                st(y, ld(y) + a[m] * w0), st(y + 16, ld(y + 16) + a[m] * w1), st(y + 32, ld(y + 32) + a[m] * w2),
                    st(y + 48, ld(y + 48) + a[m] * w3);
            }
        }
        for (; n + 16 <= N; n += 16) {
            v16 w0 = ldwv(W, r0 + n, bf);
            for (int m = 0; m < M; m++) {
                float *y = acc + (size_t)m * N + n;
                st(y, ld(y) + a[m] * w0);
            }
        }
        for (; n < N; n++) {
            const float w = ldw1(W, r0 + n, bf);
            for (int m = 0; m < M; m++) acc[(size_t)m * N + n] += a[m] * w;
        }
    }
}

typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));

/* The sum of 16 lanes as a fixed halving tree (8 + 8, 4 + 4, 2 + 2, 1 + 1):
 * the order every W[N,K] output is summed in, whatever the path. */
ALWAYS_INLINE float hsum_tree(v16 v)
{
    v8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
           __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    v4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
    return (b[0] + b[2]) + (b[1] + b[3]);
}

/* W[N,K]: y[m, n] = alpha · x[m,:]·W[n,:] for n in [n0,n0+NC), m < M <= 4.
 * Every output has one accumulator, fed 16 products at a time along K
 * (fused; bf16 weights 32 at a time, the 16 even k then the 16 odd k),
 * summed by hsum_tree, then the K % 16 products left one by one:
 * the same operations for an output whichever M and NC compute it, so a row
 * of y does not depend on the other rows (gemm.h's row invariance). In bf16
 * each line of W read also prefetches the same line of the next tile (NC rows
 * on): a tile's rows are NC short streams (about 1 KiB each) that the
 * hardware prefetcher does not ramp up on in time. On one Zen 5 core that
 * took SmolLM-135M's shape from 55 to 70-80 tokens/s (GPT-2 124M 64 to 84);
 * on two it is within the noise, and in fp32 (rows twice as long) it cost a
 * third of the speed on two threads, so fp32 goes without. */
ALWAYS_INLINE void nk_tile(int M, int NC, int n0, int K, const float *x, int ldx, const void *W, int ldw, int bf,
                           float alpha, float *out, int ldo)
{
    v16 acc[NLP_GEMV_MAX_M][8];
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 8
        for (int j = 0; j < NC; j++) acc[m][j] = (v16){0};
    int k = 0;
    if (bf) { /* 32 bf16 weights a load, even k and odd k widened by a shift and a mask */
        for (; k + 32 <= K; k += 32) {
            v16u p[8];
#pragma GCC unroll 8
            for (int j = 0; j < NC; j++) {
                const uint16_t *w = (const uint16_t *)W + (size_t)(n0 + j) * ldw + k;
                memcpy(&p[j], w, sizeof p[j]);
                __builtin_prefetch(w + (size_t)NC * ldw, 0, 0); /* the next tile's line */
            }
#pragma GCC unroll 4
            for (int m = 0; m < M; m++) {
                const v16 x0 = ld(x + (size_t)m * ldx + k), x1 = ld(x + (size_t)m * ldx + k + 16);
                const v16 xe = __builtin_shufflevector(x0, x1, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),
                          xo = __builtin_shufflevector(x0, x1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
#pragma GCC unroll 8
                for (int j = 0; j < NC; j++) {
                    acc[m][j] += xe * (v16)(p[j] << 16);
                    acc[m][j] += xo * (v16)(p[j] & 0xffff0000u);
                }
            }
        }
    }
    for (; k + 16 <= K; k += 16) {
        v16 w[8];
#pragma GCC unroll 8
        for (int j = 0; j < NC; j++) w[j] = ldwv(W, (size_t)(n0 + j) * ldw + k, bf);
#pragma GCC unroll 4
        for (int m = 0; m < M; m++) {
            v16 xv = ld(x + (size_t)m * ldx + k);
#pragma GCC unroll 8
            for (int j = 0; j < NC; j++) acc[m][j] += xv * w[j];
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 8
        for (int j = 0; j < NC; j++) {
            float s = hsum_tree(acc[m][j]);
            const size_t r = (size_t)(n0 + j) * ldw;
            for (int kk = k; kk < K; kk++) s += x[(size_t)m * ldx + kk] * ldw1(W, r + kk, bf);
            out[(size_t)m * ldo + n0 + j] = alpha * s;
        }
}

/* Columns [n0, n1) in tiles of NC (8 for one row, so that eight sums are in
 * flight; 4 otherwise), the rest one at a time. */
ALWAYS_INLINE void nk_rows(int M, int n0, int n1, int K, const float *x, int ldx, const void *W, int ldw, int bf,
                           float alpha, float *out, int ldo)
{
    const int NC = M == 1 ? 8 : 4;
    int n = n0;
    for (; n + NC <= n1; n += NC) nk_tile(M, NC, n, K, x, ldx, W, ldw, bf, alpha, out, ldo);
    for (; n < n1; n++) nk_tile(M, 1, n, K, x, ldx, W, ldw, bf, alpha, out, ldo);
}

static void kn_any(int M, int N, int k0, int k1, const float *x, int ldx, const void *W, int ldw, int bf, float *acc)
{
#define KN(m, b) kn_rows(m, N, k0, k1, x, ldx, W, ldw, b, acc)
    switch (M * 2 + bf) {
    case 2: KN(1, 0); break;
    case 3: KN(1, 1); break;
    case 4: KN(2, 0); break;
    case 5: KN(2, 1); break;
    case 6: KN(3, 0); break;
    case 7: KN(3, 1); break;
    case 8: KN(4, 0); break;
    default: KN(4, 1); break;
    }
#undef KN
}

static int k_split = 1;

void nlp_gemv_set_k_split(int on) { k_split = on != 0; }

typedef struct kn_job {
    int M, N, K, nt;
    const float *x;
    int ldx;
    const void *W;
    int ldw, bf;
    float *part;
} kn_job;

/* Part t of nt: contiguous ranges of rows of W, multiples of 4, each summed
 * into its own partial y (added in part order by the caller). */
static void kn_task(void *ctx, int t)
{
    const kn_job *j = ctx;
    const int nt = j->nt, K = j->K, per = ((K + 3) / 4 + nt - 1) / nt * 4;
    const int k0 = t * per, k1 = t == nt - 1 || k0 + per > K ? K : k0 + per;
    float *acc = j->part + (size_t)t * j->M * j->N;
    memset(acc, 0, (size_t)j->M * j->N * sizeof *acc);
    if (k0 < k1) kn_any(j->M, j->N, k0, k1, j->x, j->ldx, j->W, j->ldw, j->bf, acc);
}

static void gemv_kn(int M, int N, int K, const float *x, int ldx, const void *W, int ldw, int bf, float alpha,
                    float beta, float *y, int ldy)
{
    int nt = omp_in_parallel() || !k_split ? 1 : omp_get_max_threads();
    /* below ~64K weights a split is not worth waking threads */
    if ((size_t)K * N < 65536) nt = 1;
    if (nt > K / 4) nt = K / 4 > 0 ? K / 4 : 1;
    if (nt == 1 && alpha == 1.0f && (M == 1 || ldy == N)) { /* straight into y */
        if (beta == 0)
            for (int m = 0; m < M; m++) memset(y + (size_t)m * ldy, 0, (size_t)N * sizeof *y);
        kn_any(M, N, 0, K, x, ldx, W, ldw, bf, y);
        return;
    }
    float stack[4096], *part = (size_t)nt * M * N <= 4096 ? stack : nlp_malloc((size_t)nt * M * N * sizeof *part);
    if (!part) { /* no memory: one row of x at a time, in place, one thread */
        for (int m = 0; m < M; m++) {
            float *yr = y + (size_t)m * ldy;
            for (int n = 0; n < N; n++) yr[n] = beta != 0 ? yr[n] / alpha : 0.0f;
            kn_any(1, N, 0, K, x + (size_t)m * ldx, ldx, W, ldw, bf, yr);
            for (int n = 0; n < N; n++) yr[n] *= alpha;
        }
        return;
    }
    kn_job j = {M, N, K, nt, x, ldx, W, ldw, bf, part};
    nlp_pool_for(nt, nt, kn_task, &j); /* the decoding pool: no OpenMP region per product (pool.h) */
    for (int m = 0; m < M; m++) {
        float *yr = y + (size_t)m * ldy;
        for (int n = 0; n < N; n++) {
            float s = 0.0f;
            for (int t = 0; t < nt; t++) s += part[((size_t)t * M + m) * N + n];
            yr[n] = beta != 0 ? yr[n] + alpha * s : alpha * s;
        }
    }
    if (part != stack) free(part);
}

/* nk_rows with M and bf constant, so the accumulators live in registers */
static void nk_any(int M, int n0, int n1, int K, const float *x, int ldx, const void *W, int ldw, int bf, float alpha,
                   float *out, int ldo)
{
#define NK(m, b) nk_rows(m, n0, n1, K, x, ldx, W, ldw, b, alpha, out, ldo)
    switch (M * 2 + bf) {
    case 2: NK(1, 0); break;
    case 3: NK(1, 1); break;
    case 4: NK(2, 0); break;
    case 5: NK(2, 1); break;
    case 6: NK(3, 0); break;
    case 7: NK(3, 1); break;
    case 8: NK(4, 0); break;
    default: NK(4, 1); break;
    }
#undef NK
}

typedef struct nk_job {
    int M, N, K, per;
    const float *x;
    int ldx;
    const void *W;
    int ldw, bf;
    float alpha;
    float *y;
    int ldy;
} nk_job;

/* Columns a task: about 128 KiB of weights, a multiple of 8. Fewer, longer
 * tasks than 32 KiB ones: each is one sequential stream long enough for the
 * prefetchers, and there are fewer hand-offs per token. On a 2-core Zen 5,
 * SmolLM-135M's shape in bf16 (matrices of 0.2-1.8 MB) went from 83-99 to
 * 104-124 tokens/s (GPT-2 124M 111 to 118-141) between 32 and 128 KiB, in
 * interleaved runs; 16 KiB was slower, 256 KiB and 1 MiB no better. */
static int nk_cols(int K, int bf)
{
    const int c = K > 0 ? (131072 / (bf ? 2 : 4)) / K / 8 * 8 : 64;
    return c < 8 ? 8 : c;
}

static void nk_task(void *ctx, int t)
{
    const nk_job *j = ctx;
    const int n0 = t * j->per, n1 = n0 + j->per < j->N ? n0 + j->per : j->N;
    nk_any(j->M, n0, n1, j->K, j->x, j->ldx, j->W, j->ldw, j->bf, j->alpha, j->y, j->ldy);
}

static void gemv_nk(int M, int N, int K, const float *x, int ldx, const void *W, int ldw, int bf, float alpha,
                    float beta, float *y, int ldy)
{
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if ((size_t)K * N < 65536) nt = 1;
    if (beta != 0) { /* y += x·Wᵀ: compute into a scratch row block, then add */
        float *tmp = nlp_malloc((size_t)M * N * sizeof *tmp);
        if (tmp) {
            gemv_nk(M, N, K, x, ldx, W, ldw, bf, alpha, 0.0f, tmp, N);
            for (int m = 0; m < M; m++)
                for (int n = 0; n < N; n++) y[(size_t)m * ldy + n] += tmp[(size_t)m * N + n];
            free(tmp);
            return;
        }
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float s = 0;
                for (int k = 0; k < K; k++) s += x[(size_t)m * ldx + k] * ldw1(W, (size_t)n * ldw + k, bf);
                y[(size_t)m * ldy + n] += alpha * s;
            }
        return;
    }
    /* columns in blocks of about 128 KiB of weights, taken as threads become
     * free (each output is the same dot product whichever block holds it) */
    nk_job j = {M, N, K, nk_cols(K, bf), x, ldx, W, ldw, bf, alpha, y, ldy};
    nlp_pool_for((N + j.per - 1) / j.per, nt, nk_task, &j);
}

/* W[N,K] with many rows of x: the same dot products as gemv_nk (each output
 * summed in the same order, so the same bits), with the columns in blocks
 * whose rows of W stay in L2 while every row of x passes over them, instead
 * of W streamed from memory once per 4 rows. One parallel region, the
 * columns split between threads. */
static void gemv_nk_many(int M, int N, int K, const float *x, int ldx, const void *W, int ldw, int bf, float alpha,
                         float beta, float *y, int ldy)
{
    if (beta != 0) {
        float *tmp = nlp_malloc((size_t)M * N * sizeof *tmp);
        if (!tmp) { /* no scratch: four rows at a time */
            for (int m0 = 0; m0 < M; m0 += NLP_GEMV_MAX_M)
                gemv_nk(M - m0 < NLP_GEMV_MAX_M ? M - m0 : NLP_GEMV_MAX_M, N, K, x + (size_t)m0 * ldx, ldx, W, ldw, bf,
                        alpha, beta, y + (size_t)m0 * ldy, ldy);
            return;
        }
        gemv_nk_many(M, N, K, x, ldx, W, ldw, bf, alpha, 0.0f, tmp, N);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) y[(size_t)m * ldy + n] += tmp[(size_t)m * N + n];
        free(tmp);
        return;
    }
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if ((double)M * N * K < 262144.0) nt = 1;
    const int NB = K > 0 && 8192 / K >= 4 ? 8192 / K : 4; /* 32 KB of fp32 weights per block */
#pragma omp parallel for num_threads(nt) schedule(static, 1) if (nt > 1)
    for (int t = 0; t < nt; t++) {
        int per = (N / 4 + nt - 1) / nt * 4;
        int n0 = t * per, n1 = t == nt - 1 ? N : (n0 + per < N ? n0 + per : N);
        for (int b0 = n0; b0 < n1; b0 += NB) {
            int b1 = b0 + NB < n1 ? b0 + NB : n1;
            for (int m0 = 0; m0 < M; m0 += NLP_GEMV_MAX_M)
                nk_any(M - m0 < NLP_GEMV_MAX_M ? M - m0 : NLP_GEMV_MAX_M, b0, b1, K, x + (size_t)m0 * ldx, ldx, W, ldw,
                       bf, alpha, y + (size_t)m0 * ldy, ldy);
        }
    }
}

void nlp_gemv(int M, int N, int K, float alpha, const float *x, int ldx, const void *W, int ldw, int trans_w,
              int w_bf16, float beta, float *y, int ldy)
{
    if (trans_w && M > NLP_GEMV_MAX_M) {
        gemv_nk_many(M, N, K, x, ldx, W, ldw, w_bf16, alpha, beta, y, ldy);
        return;
    }
    for (int m0 = 0; m0 < M; m0 += NLP_GEMV_MAX_M) {
        int mm = M - m0 < NLP_GEMV_MAX_M ? M - m0 : NLP_GEMV_MAX_M;
        const float *xm = x + (size_t)m0 * ldx;
        float *ym = y + (size_t)m0 * ldy;
        if (trans_w) gemv_nk(mm, N, K, xm, ldx, W, ldw, w_bf16, alpha, beta, ym, ldy);
        else gemv_kn(mm, N, K, xm, ldx, W, ldw, w_bf16, alpha, beta, ym, ldy);
    }
}

void nlp_to_bf16(const float *src, uint16_t *dst, size_t n)
{
#pragma omp parallel for schedule(static) if (n > 1 << 20)
    for (size_t i = 0; i < n; i++) dst[i] = nlp_f32_to_bf16(src[i]);
}
