/*
 * sgemm.c — fp32 matrix products with nlpipe's own kernels. See sgemm.h.
 */
#include "nn/sgemm.h"
#include "base/err.h"
#include "nn/safetensors.h"

#include <cpuid.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define T512 __attribute__((target("avx512f")))
#define T256 __attribute__((target("avx2,fma")))

/* Blocking: KC rows of K per packed block of B (sgemm.h: fixed, it is part
 * of every element's chain of operations); NC columns of B per block (KC×NC
 * floats, 1 MiB, in L2 while every MC-row block of A passes over it); MC rows
 * of A per block (an MC×KC slice of A, 48 KiB, in L1/L2 while the
 * micro-panels of B pass over it; measured best among 32–128 on the shapes
 * of tools/gemm-compare), MCT rows of a packed Aᵀ block (256 KiB, in L2). */
#define KC NLP_SGEMM_KC
#define NC 1024
#define MC 48
#define MCT 256

/* How the micro-kernel writes its tile: C = alpha·acc; C = alpha·acc + beta·C;
 * C = C + alpha·acc (blocks of K after the first); C = alpha·acc + bias
 * (a row vector; the same bits as beta = 1 over C filled with the bias). */
enum { UPD_SET = 0, UPD_BETA = 1, UPD_ADD = 2, UPD_BIAS = 3 };

/* The MR×NR micro-kernel: op(A) element (i, k) at a[i·rs + k] (ta == 0) or
 * a[k·cs + i] (ta == 1); B a packed panel [kc][NR]; C tile rows ldc apart, of
 * which mr rows and nr columns are written. */
typedef void kern_fn(int ta, int mr, int nr, int kc, const float *a, long rs, long cs, const float *b, float *c,
                     long ldc, float alpha, float beta, int upd, const float *bias);

typedef struct kset {
    int mr, nr;
    kern_fn *kern;
} kset;

// --- AVX-512: 8 × 32

T512 ALWAYS_INLINE void k512_body(const int MR_, const int TA, int nr, int kc, const float *a, long rs, long cs,
                                  const float *b, float *c, long ldc, float alpha, float beta, int upd,
                                  const float *bias)
{
    __m512 c0[12], c1[12];
#pragma GCC unroll 12
    for (int i = 0; i < MR_; i++) c0[i] = c1[i] = _mm512_setzero_ps();
    if (!TA) {
        const float *p[12];
#pragma GCC unroll 12
        for (int i = 0; i < MR_; i++) p[i] = a + i * rs;
#pragma GCC unroll 2
        for (int k = 0; k < kc; k++) {
            const __m512 b0 = _mm512_load_ps(b + (size_t)k * 32), b1 = _mm512_load_ps(b + (size_t)k * 32 + 16);
#pragma GCC unroll 12
            for (int i = 0; i < MR_; i++) {
                const __m512 x = _mm512_set1_ps(p[i][k]);
                c0[i] = _mm512_fmadd_ps(x, b0, c0[i]);
                c1[i] = _mm512_fmadd_ps(x, b1, c1[i]);
            }
        }
    } else {
#pragma GCC unroll 2
        for (int k = 0; k < kc; k++) {
            const float *ak = a + k * cs;
            const __m512 b0 = _mm512_load_ps(b + (size_t)k * 32), b1 = _mm512_load_ps(b + (size_t)k * 32 + 16);
#pragma GCC unroll 12
            for (int i = 0; i < MR_; i++) {
                const __m512 x = _mm512_set1_ps(ak[i]);
                c0[i] = _mm512_fmadd_ps(x, b0, c0[i]);
                c1[i] = _mm512_fmadd_ps(x, b1, c1[i]);
            }
        }
    }
    const __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    __m512 bi0 = _mm512_setzero_ps(), bi1 = _mm512_setzero_ps();
    if (upd == UPD_BIAS) bi0 = _mm512_maskz_loadu_ps(m0, bias), bi1 = _mm512_maskz_loadu_ps(m1, bias + 16);
#pragma GCC unroll 12
    for (int i = 0; i < MR_; i++) {
        float *ci = c + i * ldc;
        __m512 r0 = _mm512_mul_ps(va, c0[i]), r1 = _mm512_mul_ps(va, c1[i]);
        if (upd == UPD_BIAS) {
            r0 = _mm512_add_ps(bi0, r0);
            r1 = _mm512_add_ps(bi1, r1);
        } else if (upd == UPD_BETA) {
            r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci), r0);
            r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), r1);
        } else if (upd == UPD_ADD) {
            r0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, ci), r0);
            r1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, ci + 16), r1);
        }
        _mm512_mask_storeu_ps(ci, m0, r0);
        _mm512_mask_storeu_ps(ci + 16, m1, r1);
    }
}

T512 static void k512(int ta, int mr, int nr, int kc, const float *a, long rs, long cs, const float *b, float *c,
                      long ldc, float alpha, float beta, int upd, const float *bias)
{
#define K512(m) \
    case m: \
        if (ta) k512_body(m, 1, nr, kc, a, rs, cs, b, c, ldc, alpha, beta, upd, bias); \
        else k512_body(m, 0, nr, kc, a, rs, cs, b, c, ldc, alpha, beta, upd, bias); \
        break;
    switch (mr) {
        K512(12) K512(11) K512(10) K512(9) K512(8) K512(7) K512(6) K512(5) K512(4) K512(3) K512(2) K512(1)
    }
#undef K512
}

// --- AVX2 + FMA: 6 × 16

T256 ALWAYS_INLINE void k256_body(const int MR_, const int TA, int nr, int kc, const float *a, long rs, long cs,
                                  const float *b, float *c, long ldc, float alpha, float beta, int upd,
                                  const float *bias)
{
    __m256 c0[6], c1[6];
#pragma GCC unroll 6
    for (int i = 0; i < MR_; i++) c0[i] = c1[i] = _mm256_setzero_ps();
#pragma GCC unroll 2
    for (int k = 0; k < kc; k++) {
        const __m256 b0 = _mm256_load_ps(b + (size_t)k * 16), b1 = _mm256_load_ps(b + (size_t)k * 16 + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR_; i++) {
            const __m256 x = _mm256_broadcast_ss(TA ? a + k * cs + i : a + i * rs + k);
            c0[i] = _mm256_fmadd_ps(x, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(x, b1, c1[i]);
        }
    }
    /* edges through a full-width row buffer: the same vector operations */
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int i = 0; i < MR_; i++) {
        float *ci = c + i * ldc, row[16], brow[16];
        float *dst = nr == 16 ? ci : row;
        if (nr < 16 && upd != UPD_SET && upd != UPD_BIAS) {
            memcpy(row, ci, (size_t)nr * sizeof *row);
            memset(row + nr, 0, (size_t)(16 - nr) * sizeof *row);
        }
        __m256 r0 = _mm256_mul_ps(va, c0[i]), r1 = _mm256_mul_ps(va, c1[i]);
        if (upd == UPD_BIAS) {
            const float *bv = bias;
            if (nr < 16) {
                memcpy(brow, bias, (size_t)nr * sizeof *brow);
                memset(brow + nr, 0, (size_t)(16 - nr) * sizeof *brow);
                bv = brow;
            }
            r0 = _mm256_add_ps(_mm256_loadu_ps(bv), r0);
            r1 = _mm256_add_ps(_mm256_loadu_ps(bv + 8), r1);
        } else if (upd == UPD_BETA) {
            r0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(dst), r0);
            r1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(dst + 8), r1);
        } else if (upd == UPD_ADD) {
            r0 = _mm256_add_ps(_mm256_loadu_ps(dst), r0);
            r1 = _mm256_add_ps(_mm256_loadu_ps(dst + 8), r1);
        }
        _mm256_storeu_ps(dst, r0);
        _mm256_storeu_ps(dst + 8, r1);
        if (nr < 16) memcpy(ci, row, (size_t)nr * sizeof *row);
    }
}

T256 static void k256(int ta, int mr, int nr, int kc, const float *a, long rs, long cs, const float *b, float *c,
                      long ldc, float alpha, float beta, int upd, const float *bias)
{
#define K256(m) \
    case m: \
        if (ta) k256_body(m, 1, nr, kc, a, rs, cs, b, c, ldc, alpha, beta, upd, bias); \
        else k256_body(m, 0, nr, kc, a, rs, cs, b, c, ldc, alpha, beta, upd, bias); \
        break;
    switch (mr) {
        K256(6) K256(5) K256(4) K256(3) K256(2) K256(1)
    }
#undef K256
}

// --- plain C: 4 × 16

static void kgen(int ta, int mr, int nr, int kc, const float *a, long rs, long cs, const float *b, float *c, long ldc,
                 float alpha, float beta, int upd, const float *bias)
{
    float acc[4][16];
    memset(acc, 0, sizeof acc);
    for (int k = 0; k < kc; k++)
        for (int i = 0; i < mr; i++) {
            const float x = ta ? a[k * cs + i] : a[i * rs + k];
            for (int j = 0; j < 16; j++) acc[i][j] += x * b[(size_t)k * 16 + j];
        }
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            float *cij = c + i * ldc + j, r = alpha * acc[i][j];
            *cij = upd == UPD_SET ? r : upd == UPD_BIAS ? bias[j] + r : upd == UPD_BETA ? beta * *cij + r : *cij + r;
        }
}

// --- dispatch

static const kset KSETS[] = {
    [NLP_SGEMM_GENERIC] = {4, 16, kgen},
    [NLP_SGEMM_AVX2] = {6, 16, k256},
    [NLP_SGEMM_AVX512] = {12, 32, k512},
};

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

static enum nlp_sgemm_isa cpu_isa(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return NLP_SGEMM_GENERIC;
    const int fma = (c >> 12) & 1, avx = (c >> 28) & 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return NLP_SGEMM_GENERIC;
    const int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1;
    if (avx512f && fma && xcr0_has(0xe6)) return NLP_SGEMM_AVX512; /* XMM, YMM, opmask, ZMM state */
    if (avx2 && avx && fma && xcr0_has(0x6)) return NLP_SGEMM_AVX2;
    return NLP_SGEMM_GENERIC;
}

static int g_isa = -1;

enum nlp_sgemm_isa nlp_sgemm_isa(void)
{
    int isa = __atomic_load_n(&g_isa, __ATOMIC_RELAXED);
    if (isa < 0) {
        isa = cpu_isa();
        __atomic_store_n(&g_isa, isa, __ATOMIC_RELAXED);
    }
    return (enum nlp_sgemm_isa)isa;
}

enum nlp_sgemm_isa nlp_sgemm_set_isa(enum nlp_sgemm_isa isa)
{
    enum nlp_sgemm_isa max = cpu_isa();
    if (isa > max) isa = max;
    if (isa < NLP_SGEMM_GENERIC) isa = NLP_SGEMM_GENERIC;
    __atomic_store_n(&g_isa, (int)isa, __ATOMIC_RELAXED);
    return isa;
}

const char *nlp_sgemm_isa_name(enum nlp_sgemm_isa isa)
{
    switch (isa) {
    case NLP_SGEMM_AVX512: return "avx512";
    case NLP_SGEMM_AVX2: return "avx2";
    default: return "generic";
    }
}

// --- packing op(B)

/* 16×16 transpose of 32-bit elements: v[j] gets element j of every v[i]. */
T512 static inline void transpose16(__m512 v[16])
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

/* A panel of 32 columns of Bᵀ (B[j][k]: w <= 32 rows of B, k0.. k0+kc-1)
 * into [kc][32]: 16×16 blocks transposed in registers. */
T512 static void pack_bt32(float *d, int w, int kc, const float *B, long ldb)
{
    int k = 0;
    for (; k + 16 <= kc; k += 16)
        for (int g = 0; g < 2; g++) {
            __m512 v[16];
            for (int i = 0; i < 16; i++)
                v[i] = g * 16 + i < w ? _mm512_loadu_ps(B + (size_t)(g * 16 + i) * ldb + k) : _mm512_setzero_ps();
            transpose16(v);
            for (int q = 0; q < 16; q++) _mm512_store_ps(d + (size_t)(k + q) * 32 + g * 16, v[q]);
        }
    for (; k < kc; k++)
        for (int j = 0; j < 32; j++) d[(size_t)k * 32 + j] = j < w ? B[(size_t)j * ldb + k] : 0.0f;
}

ALWAYS_INLINE void pack_b_nr(const int NR, float *dst, int tb, int k0, int kc, int j0, int nc, const float *B, long ldb)
{
    for (int jp = 0; jp < nc; jp += NR) {
        const int w = nc - jp < NR ? nc - jp : NR;
        float *d = dst + (size_t)jp * kc;
        if (!tb) {
            const float *s = B + (size_t)k0 * ldb + j0 + jp;
            if (w == NR)
                for (int k = 0; k < kc; k++) memcpy(d + (size_t)k * NR, s + (size_t)k * ldb, NR * sizeof *d);
            else
                for (int k = 0; k < kc; k++) {
                    memcpy(d + (size_t)k * NR, s + (size_t)k * ldb, (size_t)w * sizeof *d);
                    memset(d + (size_t)k * NR + w, 0, (size_t)(NR - w) * sizeof *d);
                }
        } else if (NR == 32 && nlp_sgemm_isa() == NLP_SGEMM_AVX512) {
            pack_bt32(d, w, kc, B + (size_t)(j0 + jp) * ldb + k0, ldb);
        } else {
            for (int j = 0; j < NR; j++) {
                const float *s = B + (size_t)(j0 + jp + j) * ldb + k0;
                if (j < w)
                    for (int k = 0; k < kc; k++) d[(size_t)k * NR + j] = s[k];
                else
                    for (int k = 0; k < kc; k++) d[(size_t)k * NR + j] = 0.0f;
            }
        }
    }
}

/* Columns [j0, j0 + nc) of rows [k0, k0 + kc) of op(B) into panels of NR
 * columns, [kc][NR] each (64-byte aligned), the last panel padded with zero
 * columns. NR a constant in each copy. */
static void pack_b(float *dst, int NR, int tb, int k0, int kc, int j0, int nc, const float *B, long ldb)
{
    if (NR == 32) pack_b_nr(32, dst, tb, k0, kc, j0, nc, B, ldb);
    else pack_b_nr(16, dst, tb, k0, kc, j0, nc, B, ldb);
}

/* Per thread, kept between calls: one block of packed B, one of packed Aᵀ.
 * Freed when the thread ends (an OpenMP team that shrinks ends threads):
 * a key's destructor runs while the thread's own variables still exist. */
static _Thread_local float *tl_bp, *tl_ap;
static _Thread_local size_t tl_bcap, tl_acap;
/* the bf16 products': a packed block of B and a block of A, in 32-bit words */
static _Thread_local uint32_t *tl_bb, *tl_ba;
static _Thread_local size_t tl_bbcap, tl_bacap;
static pthread_key_t tl_key;
static pthread_once_t tl_once = PTHREAD_ONCE_INIT;

static void tl_free(void *unused)
{
    (void)unused;
    free(tl_bp);
    free(tl_ap);
    free(tl_bb);
    free(tl_ba);
    tl_bp = tl_ap = NULL;
    tl_bb = tl_ba = NULL;
    tl_bcap = tl_acap = tl_bbcap = tl_bacap = 0;
}

static void tl_make_key(void) { pthread_key_create(&tl_key, tl_free); }

static float *scratch(float **buf, size_t *cap, size_t n)
{
    if (n <= *cap) return *buf;
    void *p = NULL;
    if (posix_memalign(&p, 64, n * sizeof(float)) != 0) return NULL;
    free(*buf);
    *buf = p;
    *cap = n;
    pthread_once(&tl_once, tl_make_key);
    pthread_setspecific(tl_key, &tl_key); /* any non-NULL value: the destructor runs */
    return p;
}

/* Rows [i0, i0 + mc) and K rows [k0, k0 + kc) of op(A) = Aᵀ (A[k][i]) into
 * micro-panels of MR rows, [kc][MR] each: contiguous copies. The kernel
 * would otherwise touch kc pages of a wide A for every panel of B. */
ALWAYS_INLINE void pack_at_mr(const int MR, float *dst, int k0, int kc, int i0, int mc, const float *A, long lda)
{
    for (int ip = 0; ip < mc; ip += MR) {
        const float *s = A + (size_t)k0 * lda + i0 + ip;
        float *d = dst + (size_t)ip * kc;
        if (mc - ip >= MR)
            for (int k = 0; k < kc; k++) memcpy(d + (size_t)k * MR, s + (size_t)k * lda, (size_t)MR * sizeof *s);
        else
            for (int k = 0; k < kc; k++) memcpy(d + (size_t)k * MR, s + (size_t)k * lda, (size_t)(mc - ip) * sizeof *s);
    }
}

/* MR a constant in each copy, so that a row of a micro-panel is one move */
static void pack_at(float *dst, int MR, int k0, int kc, int i0, int mc, const float *A, long lda)
{
    switch (MR) {
    case 12: pack_at_mr(12, dst, k0, kc, i0, mc, A, lda); break;
    case 8: pack_at_mr(8, dst, k0, kc, i0, mc, A, lda); break;
    case 6: pack_at_mr(6, dst, k0, kc, i0, mc, A, lda); break;
    default: pack_at_mr(4, dst, k0, kc, i0, mc, A, lda); break;
    }
}

// --- the blocked product

/* C[M, nc] (columns starting at C) += the product of op(A) rows [0, M), K
 * rows [k0, k0 + kc) and a packed block of B whose panels start at bp. */
static void macro(const kset *ks, int ta, int M, int nc, int k0, int kc, float alpha, const float *A, long lda,
                  const float *bp, float *ap, float beta, int upd, const float *bias, float *C, long ldc)
{
    const int MR = ks->mr, NR = ks->nr, MCB = ta && ap ? MCT : MC;
    for (int ic = 0; ic < M; ic += MCB) {
        const int mc = M - ic < MCB ? M - ic : MCB;
        if (ta && ap) pack_at(ap, MR, k0, kc, ic, mc, A, lda);
        for (int jr = 0; jr < nc; jr += NR) {
            const int nr = nc - jr < NR ? nc - jr : NR;
            const float *b = bp + (size_t)jr * kc;
            for (int ir = 0; ir < mc; ir += MR) {
                const int mr = mc - ir < MR ? mc - ir : MR, i = ic + ir;
                float *c = C + (size_t)i * ldc + jr;
                const float *bj = bias ? bias + jr : NULL;
                if (ta && ap) ks->kern(1, mr, nr, kc, ap + (size_t)ir * kc, 1, MR, b, c, ldc, alpha, beta, upd, bj);
                else if (ta) ks->kern(1, mr, nr, kc, A + (size_t)k0 * lda + i, 1, lda, b, c, ldc, alpha, beta, upd, bj);
                else ks->kern(0, mr, nr, kc, A + (size_t)i * lda + k0, lda, 1, b, c, ldc, alpha, beta, upd, bj);
            }
        }
    }
}

/* Scratch of this thread for packing Aᵀ (NULL without memory: the kernel
 * then reads Aᵀ in place, the same operations more slowly). */
static float *scratch_at(const kset *ks, int K)
{
    return scratch(&tl_ap, &tl_acap, (size_t)(K < KC ? K : KC) * ((MCT + ks->mr - 1) / ks->mr * ks->mr));
}

static void scale_c(int M, int N, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0 : beta * C[(size_t)i * ldc + j];
}

int nlp_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    return nlp_sgemm_bias(ta, tb, M, N, K, alpha, A, lda, B, ldb, NULL, beta, C, ldc);
}

/* The first block's update: with a bias, C = alpha·acc + bias (beta is 0). */
static int first_upd(const float *bias, float beta) { return bias ? UPD_BIAS : beta == 0 ? UPD_SET : UPD_BETA; }

/* C = beta·C, or the bias in every row, for K == 0. */
static void no_k(int M, int N, const float *bias, float beta, float *C, int ldc)
{
    if (!bias) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    for (int i = 0; i < M; i++) memcpy(C + (size_t)i * ldc, bias, (size_t)N * sizeof *C);
}

int nlp_sgemm_bias(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                   const float *bias, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return NLP_OK;
    if (K <= 0) {
        no_k(M, N, bias, beta, C, ldc);
        return NLP_OK;
    }
    const kset *ks = &KSETS[nlp_sgemm_isa()];
    const int NR = ks->nr;
    const int ncmax = N < NC ? (N + NR - 1) / NR * NR : NC;
    float *bp = scratch(&tl_bp, &tl_bcap, (size_t)(K < KC ? K : KC) * ncmax), *ap = ta ? scratch_at(ks, K) : NULL;
    if (!bp) return nlp_error(NLP_ENOMEM, "out of memory (matrix product scratch)");
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = K - pc < KC ? K - pc : KC;
            pack_b(bp, NR, tb, pc, kc, jc, nc, B, ldb);
            const int upd = pc > 0 ? UPD_ADD : first_upd(bias, beta);
            macro(ks, ta, M, nc, pc, kc, alpha, A, lda, bp, ap, beta, upd, bias ? bias + jc : NULL, C + jc, ldc);
        }
    }
    return NLP_OK;
}

/* Row blocks a team hands out: small enough that a core slowed by a
 * neighbour takes fewer of them, large enough to amortize a task. */
#define TEAM_ROWS 48
#define TEAM_ROWS_T 96 /* op(A) = Aᵀ: each task packs its rows of Aᵀ */

int nlp_sgemm_threads_suits(int ta, int M, int nt)
{
    const int RB = ta ? TEAM_ROWS_T : TEAM_ROWS;
    return nt > 1 && (M + RB - 1) / RB >= 8 * nt;
}

/* Task t of a team: rows [t·RB, t·RB + RB) of the block (jc, pc). */
static void team_task(const kset *ks, int ta, int t, int RB, int M, int nc, int jc, int pc, int kc, float alpha,
                      const float *A, long lda, const float *bp, float *ap, float beta, int upd, const float *bias,
                      float *C, long ldc)
{
    const int i0 = t * RB, m = M - i0 < RB ? M - i0 : RB;
    macro(ks, ta, m, nc, pc, kc, alpha, ta ? A + i0 : A + (size_t)i0 * lda, lda, bp, ap, beta, upd,
          bias ? bias + jc : NULL, C + (size_t)i0 * ldc + jc, ldc);
}

int nlp_sgemm_bias_threads(int nt, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, const float *bias, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return NLP_OK;
    if (K <= 0 || nt <= 1) return nlp_sgemm_bias(ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, beta, C, ldc);
    const kset *ks = &KSETS[nlp_sgemm_isa()];
    const int NR = ks->nr, RB = ta ? TEAM_ROWS_T : TEAM_ROWS, tasks = (M + RB - 1) / RB;
    const int ncmax = N < NC ? (N + NR - 1) / NR * NR : NC;
    int fail = 0;
#pragma omp parallel num_threads(nt)
    {
        float *bp = scratch(&tl_bp, &tl_bcap, (size_t)(K < KC ? K : KC) * ncmax), *ap = ta ? scratch_at(ks, K) : NULL;
        if (!bp) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp barrier
        int failed;
#pragma omp atomic read
        failed = fail;
        for (int jc = 0; jc < N && !failed; jc += NC) {
            const int nc = N - jc < NC ? N - jc : NC;
            for (int pc = 0; pc < K; pc += KC) {
                const int kc = K - pc < KC ? K - pc : KC;
                pack_b(bp, NR, tb, pc, kc, jc, nc, B, ldb); /* each thread its own copy */
                const int upd = pc > 0 ? UPD_ADD : first_upd(bias, beta);
                /* rows as threads become free. The K blocks of a row in
                 * order: a barrier after each but the last of a block of
                 * columns (the next block's columns are others: a thread
                 * that is done goes on to them) */
                if (pc + KC < K) {
#pragma omp for schedule(dynamic, 1)
                    for (int t = 0; t < tasks; t++)
                        team_task(ks, ta, t, RB, M, nc, jc, pc, kc, alpha, A, lda, bp, ap, beta, upd, bias, C, ldc);
                } else {
#pragma omp for schedule(dynamic, 1) nowait
                    for (int t = 0; t < tasks; t++)
                        team_task(ks, ta, t, RB, M, nc, jc, pc, kc, alpha, A, lda, bp, ap, beta, upd, bias, C, ldc);
                }
            }
        }
    }
    return fail ? nlp_error(NLP_ENOMEM, "out of memory (matrix product scratch)") : NLP_OK;
}

// --- packed B

/* Layout: for each block of KC rows of K (pc), the panels of all N columns,
 * [kc][NR] each: block pc starts at pc·Npad, panel j of it at pc·Npad + j·kc. */
int nlp_sgemm_pack_b(nlp_sgemm_b *pb, int tb, int K, int N, const float *B, int ldb)
{
    memset(pb, 0, sizeof *pb);
    const kset *ks = &KSETS[nlp_sgemm_isa()];
    const size_t npad = (size_t)(N + ks->nr - 1) / ks->nr * ks->nr;
    void *p = NULL;
    if (posix_memalign(&p, 64, (npad * (size_t)(K > 0 ? K : 1)) * sizeof(float)) != 0)
        return nlp_error(NLP_ENOMEM, "out of memory (packed weights, %zu MiB)", npad * K * sizeof(float) >> 20);
    pb->p = p;
    pb->K = K;
    pb->N = N;
    pb->nr = ks->nr;
    pb->isa = nlp_sgemm_isa();
    for (int pc = 0; pc < K; pc += KC) {
        const int kc = K - pc < KC ? K - pc : KC;
        pack_b(pb->p + (size_t)pc * npad, ks->nr, tb, pc, kc, 0, N, B, ldb);
    }
    return NLP_OK;
}

void nlp_sgemm_b_free(nlp_sgemm_b *pb)
{
    free(pb->p);
    memset(pb, 0, sizeof *pb);
}

void nlp_sgemm_packed(int ta, int M, int n0, int n1, float alpha, const float *A, int lda, const nlp_sgemm_b *pb,
                      const float *bias, float beta, float *C, int ldc)
{
    if (M <= 0 || n1 <= n0) return;
    const int K = pb->K;
    if (K <= 0) {
        no_k(M, n1 - n0, bias ? bias + n0 : NULL, beta, C + n0, ldc);
        return;
    }
    const kset *ks = &KSETS[pb->isa];
    float *ap = ta ? scratch_at(ks, K) : NULL;
    const size_t npad = (size_t)(pb->N + pb->nr - 1) / pb->nr * pb->nr;
    for (int pc = 0; pc < K; pc += KC) {
        const int kc = K - pc < KC ? K - pc : KC;
        const int upd = pc > 0 ? UPD_ADD : first_upd(bias, beta);
        macro(ks, ta, M, n1 - n0, pc, kc, alpha, A, lda, pb->p + (size_t)pc * npad + (size_t)n0 * kc, ap, beta, upd,
              bias ? bias + n0 : NULL, C + n0, ldc);
    }
}

// --- bf16: BLIS-style blocking around a 12×32 vdpbf16ps micro-kernel
//
// op(A) and op(B) are rounded to bf16 while packed. A k-pair (two adjacent k)
// of a row of A is one 32-bit unit; the micro-kernel broadcasts it and
// multiplies it with the same k-pair of 32 columns of B (two zmm of 16
// interleaved pairs), accumulating 12×32 fp32 sums in 24 registers. K is
// padded to even with zeros. Panels: A [BMC×BKC] in L2, B [BKC×BNC] in L2/L3,
// one micro-panel of B (BKC×32) in L1.

#define BMR 12
#define BNR 32
#ifndef BKC
#define BKC 256
#endif
#ifndef BMC
#define BMC 96
#endif
#ifndef BNC
#define BNC 1536
#endif
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* Element (r, k) of op(X) for the panel dimension r: X[r·ld + k] when the
 * k-pairs are adjacent in memory (`adj`), else X[k·ld + r]. */
typedef struct src2d {
    const float *x;
    long ld;
    int adj;
} src2d;

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

// --- bf16 on AMX: 32×32 blocks of C in four tiles
//
// Sapphire Rapids and later multiply bf16 tiles: TDPBF16PS adds A[16×32]·B[32×16]
// (bf16, pairs of k in a dword) into a 16×16 fp32 tile, 8192 multiply-adds an
// instruction. Tiles 0–3 hold a 32×32 block of C, 4–5 two 16-row tiles of A
// (row m: 16 k-pairs, 64 bytes), 6–7 two 16-column tiles of B (row: a k-pair of
// 16 columns); K is padded to whole tiles of 32 with zeros. The operands are
// rounded and packed as for the AVX-512 kernel (the same pairs), A's 16×16
// blocks of pairs transposed into tile rows.

#define AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))
#define AKC 512 /* k per packed block: 16 tiles of 32 */
#define AMC 128 /* rows of A per packed block */
#define ANC 1024

static int amx_state = -1; /* -1 unknown, 0 no, 1 yes */

static int amx_probe(void)
{
    unsigned a, b, c, d;
    if (!nlp_cpu_has_avx512bf16() || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    if (!((d >> 22) & 1) || !((d >> 24) & 1)) return 0; /* AMX-BF16, AMX-TILE */
    if (!xcr0_has(0x60000)) return 0;                   /* XTILECFG, XTILEDATA enabled by the OS */
    /* Linux hands out the tile data state on request (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) */
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
}

int nlp_cpu_has_amx_bf16(void)
{
    int s = __atomic_load_n(&amx_state, __ATOMIC_ACQUIRE);
    if (s < 0) {
        const char *e = getenv("NLPIPE_BF16");
        s = e && !strcmp(e, "avx512") ? 0 : amx_probe();
        __atomic_store_n(&amx_state, s, __ATOMIC_RELEASE);
    }
    return s;
}

typedef struct __attribute__((packed)) tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

/* Rows [0, R) (R <= 16, the rest zero) of a 16-row panel of op(A) and k
 * [k0, k0 + kc) into nkb tiles of 16 rows × 16 pairs: via the pair-major
 * pack (scratch: nkb·16 pairs × 16 rows), each 16×16 block transposed. */
AMX_TARGET static void amx_pack_a(uint32_t *dst, uint32_t *scratch, src2d s, int R, int k0, int kc, int nkb)
{
    const int kp = (kc + 1) / 2;
    pack(scratch, s, R, 16, k0, kc);
    memset(scratch + (size_t)kp * 16, 0, (size_t)(nkb * 16 - kp) * 16 * sizeof *scratch);
    for (int t = 0; t < nkb; t++) {
        __m512 v[16];
        for (int j = 0; j < 16; j++) v[j] = _mm512_loadu_ps((const float *)(scratch + (size_t)(t * 16 + j) * 16));
        transpose16(v);
        for (int i = 0; i < 16; i++) _mm512_storeu_ps((float *)(dst + (size_t)(t * 16 + i) * 16), v[i]);
    }
}

/* A 32-column panel of op(B), k [k0, k0 + kc), as nkb·16 pair rows of 32
 * (the pair-major pack, zero rows after kc). */
AMX_TARGET static void amx_pack_b(uint32_t *dst, src2d s, int R, int k0, int kc, int nkb)
{
    const int kp = (kc + 1) / 2;
    pack(dst, s, R, 32, k0, kc);
    memset(dst + (size_t)kp * 32, 0, (size_t)(nkb * 16 - kp) * 32 * sizeof *dst);
}

/* C[mr×nr] (mr, nr <= 32) (= beta·C when first, else C) + alpha·(the 32×32
 * block of two A panels times one B panel over nkb tiles of k). */
AMX_TARGET static void amx_block(const uint32_t *a0, const uint32_t *a1, const uint32_t *b, int nkb, float *C, long ldc,
                                 int mr, int nr, float alpha, float beta, int first)
{
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int t = 0; t < nkb; t++) {
        _tile_loadd(4, a0 + (size_t)t * 256, 64);
        _tile_loadd(5, a1 + (size_t)t * 256, 64);
        _tile_loadd(6, b + (size_t)t * 16 * 32, 128);
        _tile_loadd(7, b + (size_t)t * 16 * 32 + 16, 128);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    float acc[32][32] __attribute__((aligned(64)));
    _tile_stored(0, &acc[0][0], 128);
    _tile_stored(1, &acc[0][16], 128);
    _tile_stored(2, &acc[16][0], 128);
    _tile_stored(3, &acc[16][16], 128);
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    const __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    for (int i = 0; i < mr; i++) {
        float *ci = C + (long)i * ldc;
        __m512 r0 = _mm512_mul_ps(va, _mm512_load_ps(acc[i])), r1 = _mm512_mul_ps(va, _mm512_load_ps(acc[i] + 16));
        if (!first || beta != 0) {
            __m512 o0 = _mm512_maskz_loadu_ps(m0, ci), o1 = _mm512_maskz_loadu_ps(m1, ci + 16);
            if (first) o0 = _mm512_mul_ps(vb, o0), o1 = _mm512_mul_ps(vb, o1);
            r0 = _mm512_add_ps(r0, o0), r1 = _mm512_add_ps(r1, o1);
        }
        _mm512_mask_storeu_ps(ci, m0, r0);
        _mm512_mask_storeu_ps(ci + 16, m1, r1);
    }
}

/* One thread's bf16 product on AMX. */
AMX_TARGET static int amx_bgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                                const float *B, int ldb, float beta, float *C, int ldc)
{
    const int mpan = (AMC + 15) / 16, kt = AKC / 32;
    uint32_t *ap = aligned_alloc(64, (size_t)mpan * kt * 256 * 4 + 64),
             *bp = aligned_alloc(64, (size_t)(ANC / 32) * kt * 16 * 32 * 4 + 64),
             *sc = aligned_alloc(64, (size_t)kt * 16 * 16 * 4 + 64), *zero = aligned_alloc(64, (size_t)kt * 256 * 4);
    if (!ap || !bp || !sc || !zero) {
        free(ap), free(bp), free(sc), free(zero);
        return nlp_error(NLP_ENOMEM, "out of memory (bf16 product panels)");
    }
    memset(zero, 0, (size_t)kt * 256 * 4);
    tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    _tile_loadconfig(&cfg);
    src2d sa = {A, lda, !ta}, sb = {B, ldb, tb};
    for (int jc = 0; jc < N; jc += ANC) {
        const int nc = N - jc < ANC ? N - jc : ANC, ncp = (nc + 31) / 32;
        for (int pc = 0; pc < K; pc += AKC) {
            const int kc = K - pc < AKC ? K - pc : AKC, nkb = (kc + 31) / 32;
            for (int j = 0; j < ncp; j++) {
                const int r = nc - j * 32 < 32 ? nc - j * 32 : 32;
                src2d s = sb;
                s.x = sb.adj ? B + (long)(jc + j * 32) * ldb : B + jc + j * 32;
                amx_pack_b(bp + (size_t)j * nkb * 16 * 32, s, r, pc, kc, nkb);
            }
            for (int ic = 0; ic < M; ic += AMC) {
                const int mc = M - ic < AMC ? M - ic : AMC, mcp = (mc + 15) / 16;
                for (int i = 0; i < mcp; i++) {
                    const int r = mc - i * 16 < 16 ? mc - i * 16 : 16;
                    src2d s = sa;
                    s.x = sa.adj ? A + (long)(ic + i * 16) * lda : A + ic + i * 16;
                    amx_pack_a(ap + (size_t)i * nkb * 256, sc, s, r, pc, kc, nkb);
                }
                for (int j = 0; j < ncp; j++)
                    for (int i = 0; i < mcp; i += 2) {
                        const int mr = mc - i * 16 < 32 ? mc - i * 16 : 32, nr = nc - j * 32 < 32 ? nc - j * 32 : 32;
                        const uint32_t *a1 = i + 1 < mcp ? ap + (size_t)(i + 1) * nkb * 256 : zero;
                        amx_block(ap + (size_t)i * nkb * 256, a1, bp + (size_t)j * nkb * 16 * 32, nkb,
                                  C + (long)(ic + i * 16) * ldc + jc + j * 32, ldc, mr, nr, alpha, beta, pc == 0);
                    }
            }
        }
    }
    _tile_release();
    free(ap), free(bp), free(sc), free(zero);
    return NLP_OK;
}

// --- bf16 on AVX-512 BF16: the blocked product
//
// The loops of the fp32 product (jc over NC columns, pc over KC rows of K:
// op(B)'s block packed into [kp][32] panels of k-pairs; rows of C in blocks,
// a 12×32 tile at a time) with the operands rounded to bf16 while they are
// laid out. op(A) = A is converted row by row into a bf16 copy of the block
// (rows 64-byte aligned, zero-padded to whole 32-element chunks): a k-pair of
// a row is then one 32-bit word, which the micro-kernel broadcasts straight
// from twelve row streams, as the fp32 kernel does, so A is never transposed.
// op(A) = Aᵀ (the weight gradients) is laid out pair-major, [kp][rows]: row k
// and k+1 of A interleaved, 16 columns at a time, no transposition either.
// Scratch is per thread and kept between calls (as the fp32 kernels').

/* One block of rows of A converted: [mc][lda2] bf16 (ta 0, lda2 = kc rounded
 * up to 32) or [kp][cs] k-pairs (ta 1, cs = mc rounded up to 48). */
static size_t ba_words(int kc, int mc, int ta)
{
    const size_t kp = (size_t)(kc + 1) / 2;
    return ta ? kp * (size_t)((mc + 47) / 48 * 48) : (size_t)mc * (size_t)((kc + 31) / 32 * 16);
}

/* Rows [0, mc) and k [k0, k0 + kc) of op(A) = A (rows lda floats apart) into
 * dst: [mc][lda2] bf16, each row zero-padded to lda2 = kc rounded up to 32. */
BF16_TARGET static void ba_rows(uint32_t *dst, const float *A, long lda, int mc, int k0, int kc)
{
    const int chunks = (kc + 31) / 32;
    for (int i = 0; i < mc; i++) {
        const float *a = A + (size_t)i * lda + k0;
        uint32_t *d = dst + (size_t)i * chunks * 16;
        int k = 0;
        for (; k + 32 <= kc; k += 32)
            _mm512_store_si512(d + k / 2, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(a + k + 16), _mm512_loadu_ps(a + k)));
        if (k < kc) {
            const int r = kc - k;
            const __mmask16 m0 = r >= 16 ? 0xffff : (__mmask16)((1u << r) - 1),
                            m1 = r <= 16 ? 0 : (__mmask16)((1u << (r - 16)) - 1);
            _mm512_store_si512(d + k / 2, (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, a + k + 16),
                                                                        _mm512_maskz_loadu_ps(m0, a + k)));
        }
    }
}

/* Rows 2p and 2p+1 of X (k and k + 1, the first w of 16 columns each, x1 NULL
 * past the end of K) as 16 k-pairs. */
BF16_TARGET ALWAYS_INLINE __m512i pairs16(const float *x0, const float *x1, __mmask16 m)
{
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512 a = _mm512_maskz_loadu_ps(m, x0), b = x1 ? _mm512_maskz_loadu_ps(m, x1) : _mm512_setzero_ps();
    return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(b, a)); /* a in words 0-15, b in 16-31 */
}

/* Columns [0, mc) and k [k0, k0 + kc) of op(A) = Aᵀ (A[k][i], rows lda
 * apart, A pointing at column 0) into dst: [kp][cs] k-pairs, cs = mc rounded
 * up to 48, zero beyond mc. */
BF16_TARGET static void ba_pairs(uint32_t *dst, const float *A, long lda, int mc, int k0, int kc)
{
    const int kp = (kc + 1) / 2, cs = (mc + 47) / 48 * 48;
    for (int p = 0; p < kp; p++) {
        const float *x0 = A + (size_t)(k0 + 2 * p) * lda, *x1 = 2 * p + 1 < kc ? x0 + lda : NULL;
        uint32_t *d = dst + (size_t)p * cs;
        for (int i = 0; i < cs; i += 16) {
            const int r = mc - i;
            const __mmask16 m = r >= 16 ? 0xffff : r <= 0 ? 0 : (__mmask16)((1u << r) - 1);
            _mm512_storeu_si512(d + i, m ? pairs16(x0 + i, x1 ? x1 + i : NULL, m) : _mm512_setzero_si512());
        }
    }
}

/* Columns [j0, j0 + nc) and k [k0, k0 + kc) of op(B) into panels of 32
 * columns, [kp][32] k-pairs each (64-byte aligned), zero past nc and kc. */
BF16_TARGET static void bb_pack(uint32_t *dst, int tb, const float *B, long ldb, int k0, int kc, int j0, int nc)
{
    const int kp = (kc + 1) / 2, np = (nc + BNR - 1) / BNR;
    if (!tb) { /* B[k][n]: rows k and k+1 interleaved, 16 columns at a time */
        for (int p = 0; p < kp; p++) {
            const float *x0 = B + (size_t)(k0 + 2 * p) * ldb + j0, *x1 = 2 * p + 1 < kc ? x0 + ldb : NULL;
            for (int j = 0; j < np * BNR; j += 16) {
                const int r = nc - j;
                const __mmask16 m = r >= 16 ? 0xffff : r <= 0 ? 0 : (__mmask16)((1u << r) - 1);
                uint32_t *d = dst + (size_t)(j / BNR) * kp * BNR + (size_t)p * BNR + j % BNR;
                _mm512_store_si512(d, m ? pairs16(x0 + j, x1 ? x1 + j : NULL, m) : _mm512_setzero_si512());
            }
        }
        return;
    }
    /* Bᵀ: B[n][k], k-pairs adjacent in each row: 16 rows × 16 pairs
     * converted, transposed in registers, stored as 16 pairs × 16 columns */
    for (int j = 0; j < np * BNR; j += 16) {
        uint32_t *d = dst + (size_t)(j / BNR) * kp * BNR + j % BNR;
        const int rows = nc - j;
        for (int p = 0; p < kp; p += 16) {
            const int k = 2 * p, r = kc - k; /* k left in this group of 16 pairs */
            const __mmask16 m0 = r >= 16 ? 0xffff : (__mmask16)((1u << r) - 1),
                            m1 = r >= 32 ? 0xffff : r <= 16 ? 0 : (__mmask16)((1u << (r - 16)) - 1);
            __m512 v[16];
            for (int i = 0; i < 16; i++) {
                if (i < rows) {
                    const float *x = B + (size_t)(j0 + j + i) * ldb + k0 + k;
                    v[i] = (__m512)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, x + 16), _mm512_maskz_loadu_ps(m0, x));
                } else {
                    v[i] = _mm512_setzero_ps();
                }
            }
            transpose16(v);
            const int q = kp - p < 16 ? kp - p : 16;
            for (int i = 0; i < q; i++) _mm512_store_si512(d + (size_t)(p + i) * BNR, (__m512i)v[i]);
        }
    }
}

/* The 12×32 micro-kernel: C[mr×nr] = upd(alpha · Σ_p a-pairs · b-pairs), op(A)
 * pair p of row i at a[i·rs + p] (ta 0: rows of a bf16 copy) or a[p·cs + i]
 * (ta 1), b a packed panel [kp][32]. Rows past mr read row mr-1 and are not
 * written. */
BF16_TARGET ALWAYS_INLINE void bk_body(const int TA, int mr, int nr, int kp, const uint32_t *a, long rs, long cs,
                                       const uint32_t *b, float *c, long ldc, float alpha, float beta, int upd,
                                       const float *bias)
{
    __m512 c0[BMR], c1[BMR];
#pragma GCC unroll 12
    for (int i = 0; i < BMR; i++) c0[i] = c1[i] = _mm512_setzero_ps();
    if (!TA) {
        const uint32_t *q[BMR];
#pragma GCC unroll 12
        for (int i = 0; i < BMR; i++) q[i] = a + (i < mr ? i : mr - 1) * rs;
#pragma GCC unroll 2
        for (int p = 0; p < kp; p++) {
            const __m512bh b0 = (__m512bh)_mm512_load_si512(b + (size_t)p * BNR),
                           b1 = (__m512bh)_mm512_load_si512(b + (size_t)p * BNR + 16);
#pragma GCC unroll 12
            for (int i = 0; i < BMR; i++) {
                const __m512bh x = (__m512bh)_mm512_set1_epi32((int)q[i][p]);
                c0[i] = _mm512_dpbf16_ps(c0[i], x, b0);
                c1[i] = _mm512_dpbf16_ps(c1[i], x, b1);
            }
        }
    } else {
#pragma GCC unroll 2
        for (int p = 0; p < kp; p++) {
            const uint32_t *ap = a + (size_t)p * cs;
            const __m512bh b0 = (__m512bh)_mm512_load_si512(b + (size_t)p * BNR),
                           b1 = (__m512bh)_mm512_load_si512(b + (size_t)p * BNR + 16);
#pragma GCC unroll 12
            for (int i = 0; i < BMR; i++) {
                const __m512bh x = (__m512bh)_mm512_set1_epi32((int)ap[i]);
                c0[i] = _mm512_dpbf16_ps(c0[i], x, b0);
                c1[i] = _mm512_dpbf16_ps(c1[i], x, b1);
            }
        }
    }
    const __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    __m512 bi0 = _mm512_setzero_ps(), bi1 = _mm512_setzero_ps();
    if (upd == UPD_BIAS) bi0 = _mm512_maskz_loadu_ps(m0, bias), bi1 = _mm512_maskz_loadu_ps(m1, bias + 16);
#pragma GCC unroll 12
    for (int i = 0; i < BMR; i++) {
        if (i >= mr) break;
        float *ci = c + i * ldc;
        __m512 r0 = _mm512_mul_ps(va, c0[i]), r1 = _mm512_mul_ps(va, c1[i]);
        if (upd == UPD_BIAS) {
            r0 = _mm512_add_ps(bi0, r0);
            r1 = _mm512_add_ps(bi1, r1);
        } else if (upd == UPD_BETA) {
            r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci), r0);
            r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), r1);
        } else if (upd == UPD_ADD) {
            r0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, ci), r0);
            r1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, ci + 16), r1);
        }
        _mm512_mask_storeu_ps(ci, m0, r0);
        _mm512_mask_storeu_ps(ci + 16, m1, r1);
    }
}

BF16_TARGET static void bk_rows(int mr, int nr, int kp, const uint32_t *a, long rs, const uint32_t *b, float *c,
                                long ldc, float alpha, float beta, int upd, const float *bias)
{
    bk_body(0, mr, nr, kp, a, rs, 0, b, c, ldc, alpha, beta, upd, bias);
}

BF16_TARGET static void bk_pairs(int mr, int nr, int kp, const uint32_t *a, long cs, const uint32_t *b, float *c,
                                 long ldc, float alpha, float beta, int upd, const float *bias)
{
    bk_body(1, mr, nr, kp, a, 0, cs, b, c, ldc, alpha, beta, upd, bias);
}

/* Rows [0, M) of C (C, A and bias at the block's first row and column) for
 * the block of columns nc and K rows [k0, k0 + kc) whose op(B) is packed in
 * bp: op(A) laid out BMC rows at a time into ap (ba_words(kc, BMC, ta)). */
BF16_TARGET static void bmacro(int ta, int M, int nc, int k0, int kc, float alpha, const float *A, long lda,
                               const uint32_t *bp, uint32_t *ap, float beta, int upd, const float *bias, float *C,
                               long ldc)
{
    const int kp = (kc + 1) / 2;
    for (int ic = 0; ic < M; ic += BMC) {
        const int mc = M - ic < BMC ? M - ic : BMC;
        long stride;
        if (ta) ba_pairs(ap, A + ic, lda, mc, k0, kc), stride = (mc + 47) / 48 * 48;
        else ba_rows(ap, A + (size_t)ic * lda, lda, mc, k0, kc), stride = (kc + 31) / 32 * 16;
        for (int jr = 0; jr < nc; jr += BNR) {
            const int nr = nc - jr < BNR ? nc - jr : BNR;
            const uint32_t *b = bp + (size_t)(jr / BNR) * kp * BNR;
            for (int ir = 0; ir < mc; ir += BMR) {
                const int mr = mc - ir < BMR ? mc - ir : BMR;
                float *c = C + (size_t)(ic + ir) * ldc + jr;
                const float *bj = bias ? bias + jr : NULL;
                if (ta) bk_pairs(mr, nr, kp, ap + ir, stride, b, c, ldc, alpha, beta, upd, bj);
                else bk_rows(mr, nr, kp, ap + (size_t)ir * stride, stride, b, c, ldc, alpha, beta, upd, bj);
            }
        }
    }
}

static uint32_t *bscratch(uint32_t **buf, size_t *cap, size_t n)
{
    return (uint32_t *)scratch((float **)buf, cap, n);
}

static int bf16_scratch(int ta, int N, int K, uint32_t **bp, uint32_t **ap)
{
    const int kc = K < BKC ? K : BKC, nc = N < BNC ? N : BNC;
    *bp = bscratch(&tl_bb, &tl_bbcap, (size_t)(kc + 1) / 2 * (size_t)((nc + BNR - 1) / BNR * BNR));
    *ap = bscratch(&tl_ba, &tl_bacap, ba_words(kc, BMC, ta));
    return *bp && *ap ? 0 : NLP_ENOMEM;
}

BF16_TARGET int nlp_bgemm_bias(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                               const float *B, int ldb, const float *bias, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return NLP_OK;
    if (K <= 0) {
        no_k(M, N, bias, beta, C, ldc);
        return NLP_OK;
    }
    if (nlp_cpu_has_amx_bf16()) {
        if (bias) {
            for (int i = 0; i < M; i++) memcpy(C + (size_t)i * ldc, bias, (size_t)N * sizeof *C);
            beta = 1;
        }
        return amx_bgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
    uint32_t *bp, *ap;
    if (bf16_scratch(ta, N, K, &bp, &ap)) return nlp_error(NLP_ENOMEM, "out of memory (bf16 product scratch)");
    for (int jc = 0; jc < N; jc += BNC) {
        const int nc = N - jc < BNC ? N - jc : BNC;
        for (int pc = 0; pc < K; pc += BKC) {
            const int kc = K - pc < BKC ? K - pc : BKC;
            bb_pack(bp, tb, B, ldb, pc, kc, jc, nc);
            const int upd = pc > 0 ? UPD_ADD : first_upd(bias, beta);
            bmacro(ta, M, nc, pc, kc, alpha, A, lda, bp, ap, beta, upd, bias ? bias + jc : NULL, C + jc, ldc);
        }
    }
    return NLP_OK;
}

int nlp_bgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    return nlp_bgemm_bias(ta, tb, M, N, K, alpha, A, lda, B, ldb, NULL, beta, C, ldc);
}

/* As nlp_sgemm_bias_threads: every thread packs each block of op(B) itself
 * and takes blocks of rows of C as it becomes free. */
BF16_TARGET int nlp_bgemm_bias_threads(int nt, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                                       int lda, const float *B, int ldb, const float *bias, float beta, float *C,
                                       int ldc)
{
    if (M <= 0 || N <= 0) return NLP_OK;
    if (K <= 0 || nt <= 1 || nlp_cpu_has_amx_bf16())
        return nlp_bgemm_bias(ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, beta, C, ldc);
    const int RB = ta ? TEAM_ROWS_T : TEAM_ROWS, tasks = (M + RB - 1) / RB;
    int fail = 0;
#pragma omp parallel num_threads(nt)
    {
        uint32_t *bp, *ap;
        if (bf16_scratch(ta, N, K, &bp, &ap)) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp barrier
        int failed;
#pragma omp atomic read
        failed = fail;
        for (int jc = 0; jc < N && !failed; jc += BNC) {
            const int nc = N - jc < BNC ? N - jc : BNC;
            for (int pc = 0; pc < K; pc += BKC) {
                const int kc = K - pc < BKC ? K - pc : BKC;
                bb_pack(bp, tb, B, ldb, pc, kc, jc, nc);
                const int upd = pc > 0 ? UPD_ADD : first_upd(bias, beta);
#define BTASK(t) \
    do { \
        const int i0 = (t) * RB, m = M - i0 < RB ? M - i0 : RB; \
        bmacro(ta, m, nc, pc, kc, alpha, ta ? A + i0 : A + (size_t)i0 * lda, lda, bp, ap, beta, upd, \
               bias ? bias + jc : NULL, C + (size_t)i0 * ldc + jc, ldc); \
    } while (0)
                if (pc + BKC < K) {
#pragma omp for schedule(dynamic, 1)
                    for (int t = 0; t < tasks; t++) BTASK(t);
                } else {
#pragma omp for schedule(dynamic, 1) nowait
                    for (int t = 0; t < tasks; t++) BTASK(t);
                }
#undef BTASK
            }
        }
    }
    return fail ? nlp_error(NLP_ENOMEM, "out of memory (bf16 product scratch)") : NLP_OK;
}
