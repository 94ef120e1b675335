/*
 * gemm.c — matrix products through OpenBLAS, split over OpenMP threads. See gemm.h.
 */
#include "nn/gemm.h"
#include "nn/gemv.h"
#include "base/err.h"
#include "nn/safetensors.h"

#include <cblas.h>
#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void openblas_set_num_threads(int num_threads);

static enum nlp_gemm_mode g_mode = NLP_GEMM_F32;
static int g_row_invariant;

int nlp_gemm_set_row_invariant(int on)
{
    int old = g_row_invariant;
    g_row_invariant = on != 0;
    nlp_gemv_set_k_split(!g_row_invariant);
    return old;
}
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* OpenBLAS's OpenMP build implements openblas_set_num_threads with
 * omp_set_num_threads: keep the caller's OpenMP thread count. */
static void init_once(void)
{
    int nt = omp_get_max_threads();
    openblas_set_num_threads(1);
    omp_set_num_threads(nt);
}

void nlp_gemm_init(void) { pthread_once(&g_once, init_once); }

// --- CPU features

static int xcr0_has(unsigned bits)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & bits) == bits;
}

int nlp_cpu_has_avx512f(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    /* XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM state enabled by the OS */
    return (b & (1u << 16)) && xcr0_has(0xe6);
}

int nlp_cpu_has_avx512bf16(void)
{
    unsigned a, b, c, d;
    if (!nlp_cpu_has_avx512f()) return 0;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (a >> 5) & 1; /* CPUID.(EAX=7,ECX=1):EAX bit 5 = AVX512_BF16 */
}

int nlp_gemm_set_mode(enum nlp_gemm_mode mode)
{
    if (mode == NLP_GEMM_BF16 && !nlp_cpu_has_avx512bf16()) {
        g_mode = NLP_GEMM_F32;
        return nlp_error(NLP_EINVAL, "bf16 matrix products need a CPU with AVX-512 BF16; this one has none");
    }
    g_mode = mode;
    return NLP_OK;
}

enum nlp_gemm_mode nlp_gemm_get_mode(void) { return g_mode; }

// --- fp32

static void sgemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                   int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0 : beta * C[(size_t)i * ldc + j];
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
                lda, B, ldb, beta, C, ldc);
}

// --- bf16: BLIS-style blocking around a 12×32 vdpbf16ps micro-kernel
//
// op(A) and op(B) are rounded to bf16 while packed. A k-pair (two adjacent k)
// of a row of A is one 32-bit unit; the micro-kernel broadcasts it and
// multiplies it with the same k-pair of 32 columns of B (two zmm of 16
// interleaved pairs), accumulating 12×32 fp32 sums in 24 registers. K is
// padded to even with zeros. Panels: A [MC×KC] in L2, B [KC×NC] in L2/L3,
// one micro-panel of B (KC×32) in L1.

#define MR 12
#define NR 32
#define KC 256
#define MC 96
#define NC 1536
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* Element (r, k) of op(X) for the panel dimension r: X[r·ld + k] when the
 * k-pairs are adjacent in memory (`adj`), else X[k·ld + r]. */
typedef struct src2d {
    const float *x;
    long ld;
    int adj;
} src2d;

/* 16×16 transpose of 32-bit elements: v[j] gets element j of every v[i]. */
BF16_TARGET static inline void transpose16(__m512 v[16])
{
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* u[4i+e]: element e of each 4-group, rows 4i..4i+3 */
        u[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
        u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    for (int e = 0; e < 4; e++) { /* t[e], t[e+4]: rows 0-7, t[8+e], t[12+e]: rows 8-15 */
        t[e] = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x88);
        t[e + 4] = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xdd);
        t[8 + e] = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x88);
        t[12 + e] = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xdd);
    }
    for (int e = 0; e < 4; e++) {
        v[e] = _mm512_shuffle_f32x4(t[e], t[8 + e], 0x88);
        v[e + 8] = _mm512_shuffle_f32x4(t[e], t[8 + e], 0xdd);
        v[e + 4] = _mm512_shuffle_f32x4(t[e + 4], t[12 + e], 0x88);
        v[e + 12] = _mm512_shuffle_f32x4(t[e + 4], t[12 + e], 0xdd);
    }
}

/* Packs rows 0..R-1 (R <= panel; missing rows zero) and k0..k0+kc-1 of X
 * into dst as [kc/2 pairs][panel] 32-bit units. */
BF16_TARGET static void pack(uint32_t *dst, src2d s, int R, int panel, int k0, int kc)
{
    const int kp = (kc + 1) / 2;
    if (!s.adj) { /* rows 2p and 2p+1 of X hold k and k+1 for consecutive r: interleave them */
        const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                             21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
        for (int p = 0; p < kp; p++) {
            int k = k0 + 2 * p;
            const float *x0 = s.x + (long)k * s.ld, *x1 = x0 + s.ld;
            int have1 = 2 * p + 1 < kc;
            uint32_t *d = dst + (size_t)p * panel;
            int r = 0;
            for (; r + 16 <= R; r += 16) {
                __m512 a = _mm512_loadu_ps(x0 + r), b = have1 ? _mm512_loadu_ps(x1 + r) : _mm512_setzero_ps();
                __m512i w = (__m512i)_mm512_cvtne2ps_pbh(b, a); /* a in words 0-15, b in 16-31 */
                _mm512_storeu_si512(d + r, _mm512_permutexvar_epi16(idx, w));
            }
            for (; r < R; r++) {
                uint32_t lo = nlp_f32_to_bf16(x0[r]), hi = have1 ? nlp_f32_to_bf16(x1[r]) : 0;
                d[r] = lo | hi << 16;
            }
            for (; r < panel; r++) d[r] = 0;
        }
        return;
    }
    /* k and k+1 adjacent in each row: 16 rows × 16 pairs converted, transposed
     * in registers, stored as 16 pairs × 16 rows */
    const int kp16 = kc / 32 * 16; /* pairs done 16 at a time */
    for (int r0 = 0; r0 < panel; r0 += 16) {
        int rows = panel - r0 < 16 ? panel - r0 : 16;
        __mmask16 keep = (__mmask16)((1u << rows) - 1);
        for (int p = 0; p < kp16; p += 16) {
            __m512 v[16];
            for (int i = 0; i < 16; i++) {
                if (r0 + i < R) {
                    const float *x = s.x + (long)(r0 + i) * s.ld + k0 + 2 * p;
                    v[i] = (__m512)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 16), _mm512_loadu_ps(x));
                } else {
                    v[i] = _mm512_setzero_ps();
                }
            }
            transpose16(v);
            for (int j = 0; j < 16; j++) _mm512_mask_storeu_epi32(dst + (size_t)(p + j) * panel + r0, keep, (__m512i)v[j]);
        }
        for (int r = r0; r < r0 + rows; r++) /* the pairs left over */
            for (int p = kp16; p < kp; p++) {
                const float *x = s.x + (long)r * s.ld + k0;
                uint32_t lo = 0, hi = 0;
                if (r < R) {
                    lo = nlp_f32_to_bf16(x[2 * p]);
                    hi = 2 * p + 1 < kc ? nlp_f32_to_bf16(x[2 * p + 1]) : 0;
                }
                dst[(size_t)p * panel + r] = lo | hi << 16;
            }
    }
}

/* C[mr×nr] (= beta·C when `first`, else C) + alpha·(12×32 block of A·B over kp pairs). */
BF16_TARGET static void kernel(const uint32_t *a, const uint32_t *b, int kp, float *C, long ldc, int mr, int nr,
                               float alpha, float beta, int first)
{
    __m512 c[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = _mm512_setzero_ps();
    for (int p = 0; p < kp; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + (size_t)p * NR),
                 b1 = (__m512bh)_mm512_loadu_si512(b + (size_t)p * NR + 16);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[(size_t)p * MR + i]);
            c[i][0] = _mm512_dpbf16_ps(c[i][0], x, b0);
            c[i][1] = _mm512_dpbf16_ps(c[i][1], x, b1);
        }
    }
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++) {
        if (i >= mr) break;
        float *ci = C + (long)i * ldc;
        __m512 r0 = _mm512_mul_ps(va, c[i][0]), r1 = _mm512_mul_ps(va, c[i][1]);
        if (!first || beta != 0) {
            __m512 o0 = _mm512_maskz_loadu_ps(m0, ci), o1 = _mm512_maskz_loadu_ps(m1, ci + 16);
            if (first) o0 = _mm512_mul_ps(vb, o0), o1 = _mm512_mul_ps(vb, o1);
            r0 = _mm512_add_ps(r0, o0), r1 = _mm512_add_ps(r1, o1);
        }
        _mm512_mask_storeu_ps(ci, m0, r0);
        _mm512_mask_storeu_ps(ci + 16, m1, r1);
    }
}

/* One thread's bf16 product (the caller splits C between threads). */
BF16_TARGET static void bgemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                               const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    uint32_t *ap = aligned_alloc(64, (size_t)MC * KC / 2 * 4 + 64), *bp = aligned_alloc(64, (size_t)NC * KC / 2 * 4 + 64);
    if (!ap || !bp) { /* no memory for panels: fp32 is always possible */
        free(ap), free(bp);
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
                    lda, B, ldb, beta, C, ldc);
        return;
    }
    src2d sa = {A, lda, !ta}, sb = {B, ldb, tb};
    for (int jc = 0; jc < N; jc += NC) {
        int nc = N - jc < NC ? N - jc : NC;
        int ncp = (nc + NR - 1) / NR;
        for (int pc = 0; pc < K; pc += KC) {
            int kc = K - pc < KC ? K - pc : KC, kp = (kc + 1) / 2;
            for (int j = 0; j < ncp; j++) {
                int r = nc - j * NR < NR ? nc - j * NR : NR;
                src2d s = sb;
                /* B's panel dimension is n: element (k, n) */
                s.x = sb.adj ? B + (long)(jc + j * NR) * ldb : B + jc + j * NR;
                pack(bp + (size_t)j * kp * NR, s, r, NR, pc, kc);
            }
            for (int ic = 0; ic < M; ic += MC) {
                int mc = M - ic < MC ? M - ic : MC;
                int mcp = (mc + MR - 1) / MR;
                for (int i = 0; i < mcp; i++) {
                    int r = mc - i * MR < MR ? mc - i * MR : MR;
                    src2d s = sa;
                    s.x = sa.adj ? A + (long)(ic + i * MR) * lda : A + ic + i * MR;
                    pack(ap + (size_t)i * kp * MR, s, r, MR, pc, kc);
                }
                for (int j = 0; j < ncp; j++)
                    for (int i = 0; i < mcp; i++) {
                        int mr = mc - i * MR < MR ? mc - i * MR : MR, nr = nc - j * NR < NR ? nc - j * NR : NR;
                        kernel(ap + (size_t)i * kp * MR, bp + (size_t)j * kp * NR, kp,
                               C + (long)(ic + i * MR) * ldc + jc + j * NR, ldc, mr, nr, alpha, beta, pc == 0);
                    }
            }
        }
    }
    free(ap);
    free(bp);
}

/* Products below this many flops are not worth waking a second thread for. */
#define SPLIT_MIN_FLOPS (1.0 * (1 << 21))

/* One thread's share: bf16 when selected and the product is big enough to pay for packing. */
static void gemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc)
{
    if (g_mode == NLP_GEMM_BF16 && M >= 16 && N >= 16 && K >= 32) bgemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else sgemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* Row-invariant products with a large W[N,K] (nn.Linear weights, an output
 * embedding): the BLAS, but every call of the same shape — 32 rows (the last
 * block padded with zero rows in scratch) by a fixed 512-column slice — so
 * that a row's result depends on neither the number of rows nor the
 * threads: within one call shape OpenBLAS computes every row and column
 * position with the same operations (checked by tests/unit/test_mt.c). */
#define RI_ROWS 32
#define RI_COLS 512

static void ri_sgemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                     float *C, int ldc)
{
    const int nrb = (M + RI_ROWS - 1) / RI_ROWS, ncb = (N + RI_COLS - 1) / RI_COLS;
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (nt > nrb * ncb) nt = nrb * ncb;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        float *a = NULL, *c = NULL;
#pragma omp for schedule(dynamic, 1)
        for (int t = 0; t < nrb * ncb; t++) {
            const int i0 = t / ncb * RI_ROWS, j0 = t % ncb * RI_COLS;
            const int rows = M - i0 < RI_ROWS ? M - i0 : RI_ROWS, cols = N - j0 < RI_COLS ? N - j0 : RI_COLS;
            const float *bj = B + (size_t)j0 * ldb;
            if (rows == RI_ROWS) {
                sgemm1(0, 1, RI_ROWS, cols, K, alpha, A + (size_t)i0 * lda, lda, bj, ldb, beta, C + (size_t)i0 * ldc + j0,
                       ldc);
                continue;
            }
            if (!a) { /* a partial block: through zero-padded scratch */
                a = calloc((size_t)RI_ROWS * K, sizeof *a);
                c = malloc((size_t)RI_ROWS * RI_COLS * sizeof *c);
            }
            if (!a || !c) { /* no memory for a few hundred KB: right, if not row-invariant */
                sgemm1(0, 1, rows, cols, K, alpha, A + (size_t)i0 * lda, lda, bj, ldb, beta, C + (size_t)i0 * ldc + j0,
                       ldc);
                continue;
            }
            for (int r = 0; r < rows; r++) {
                memcpy(a + (size_t)r * K, A + (size_t)(i0 + r) * lda, (size_t)K * sizeof *a);
                if (beta != 0) memcpy(c + (size_t)r * cols, C + (size_t)(i0 + r) * ldc + j0, (size_t)cols * sizeof *c);
            }
            for (int r = rows; r < RI_ROWS; r++) memset(a + (size_t)r * K, 0, (size_t)K * sizeof *a);
            sgemm1(0, 1, RI_ROWS, cols, K, alpha, a, K, bj, ldb, beta, c, cols);
            for (int r = 0; r < rows; r++)
                memcpy(C + (size_t)(i0 + r) * ldc + j0, c + (size_t)r * cols, (size_t)cols * sizeof *c);
        }
        free(a), free(c);
    }
}

void nlp_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    nlp_gemm_init();
    /* a few rows (incremental decoding): stream B once instead of packing it (gemv.h) */
    if (g_row_invariant && !ta && tb && M > 0 && (size_t)N * K >= 65536 && K > 0) {
        ri_sgemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if ((M <= NLP_GEMV_MAX_M || g_row_invariant) && M > 0 && !ta && alpha != 0.0f && (beta == 0.0f || beta == 1.0f) && N > 0 && K > 0) {
        nlp_gemv(M, N, K, alpha, A, lda, B, ldb, tb, 0, beta, C, ldc);
        return;
    }
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (nt <= 1 || nlp_gemm_flops(M, N, K) < SPLIT_MIN_FLOPS) {
        gemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    /* one contiguous block of the longer side of C per thread, in multiples of 16 */
    int split_n = N >= M;
    int len = split_n ? N : M;
    int chunk = (len + nt - 1) / nt;
    chunk = (chunk + 15) & ~15;
    int parts = (len + chunk - 1) / chunk;
#pragma omp parallel for num_threads(parts) schedule(static, 1)
    for (int p = 0; p < parts; p++) {
        int o = p * chunk, n = len - o < chunk ? len - o : chunk;
        if (split_n)
            gemm1(ta, tb, M, n, K, alpha, A, lda, tb ? B + (size_t)o * ldb : B + o, ldb, beta, C + o, ldc);
        else
            gemm1(ta, tb, n, N, K, alpha, ta ? A + o : A + (size_t)o * lda, lda, B, ldb, beta, C + (size_t)o * ldc, ldc);
    }
}
