/*
 * q8.c — int8 (Q8_0) weights and their products. See q8.h.
 */
#include "nn/q8.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/pool.h"
#include "nn/safetensors.h"

#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define T_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")))
#define T_AVX2 __attribute__((target("avx2,fma,f16c")))

#define QB 32 /* weights a block */
#define GR 16 /* rows a group */
#define MR 4  /* rows of x a kernel call */

// --- fp16

/* fp32 to fp16, nearest even; past the largest half, infinity. */
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to 65520 or more */
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half, in units of 2^-24 (exact scaling, then nearest even) */
        float v;
        memcpy(&v, &ax, sizeof v);
        return (uint16_t)(sign | (uint16_t)nearbyintf(v * 16777216.0f));
    }
    const uint32_t r = (ax + 0x0fffu + ((ax >> 13) & 1)) >> 13;
    return (uint16_t)(sign | (r - ((127 - 15) << 10)));
}

// --- the kernel set

static int xcr0_has(unsigned bits)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & bits) == bits;
}

static enum nlp_q8_isa cpu_isa(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return NLP_Q8_GENERIC;
    const int fma = (c >> 12) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return NLP_Q8_GENERIC;
    const int avx2 = (b >> 5) & 1, f512 = (b >> 16) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1, vnni = (c >> 11) & 1;
    if (f512 && bw && vl && vnni && fma && f16c && xcr0_has(0xe6)) return NLP_Q8_AVX512VNNI;
    if (avx2 && avx && fma && f16c && xcr0_has(0x6)) return NLP_Q8_AVX2;
    return NLP_Q8_GENERIC;
}

static int g_isa = -1;

enum nlp_q8_isa nlp_q8_isa(void)
{
    int isa = __atomic_load_n(&g_isa, __ATOMIC_RELAXED);
    if (isa < 0) {
        isa = cpu_isa();
        __atomic_store_n(&g_isa, isa, __ATOMIC_RELAXED);
    }
    return (enum nlp_q8_isa)isa;
}

enum nlp_q8_isa nlp_q8_set_isa(enum nlp_q8_isa isa)
{
    const enum nlp_q8_isa max = cpu_isa();
    if (isa > max) isa = max;
    if (isa < NLP_Q8_GENERIC) isa = NLP_Q8_GENERIC;
    __atomic_store_n(&g_isa, (int)isa, __ATOMIC_RELAXED);
    return isa;
}

const char *nlp_q8_isa_name(enum nlp_q8_isa isa)
{
    switch (isa) {
    case NLP_Q8_AVX512VNNI: return "avx512-vnni";
    case NLP_Q8_AVX2: return "avx2";
    default: return "generic";
    }
}

// --- weights

void nlp_q8_free(nlp_q8 *w)
{
    free(w->mem);
    free(w->d);
    memset(w, 0, sizeof *w);
}

size_t nlp_q8_bytes(const nlp_q8 *w) { return (size_t)w->ng * w->nb * (GR * QB + GR * sizeof(uint16_t)); }

/* One block (16 rows of group g, k [k0, k0 + kn)) as the scalar loop of
 * nlp_q8_quantize lays it out, with the same bytes (the same scale, and q
 * rounded to nearest even as lrintf does): 1 when done, 0 when a weight is
 * not finite (the scalar loop then finds and reports it). */
T_VNNI static int q8_block_512(const float *W, int N, int ldw, int g, int k0, int kn, uint8_t *dst, uint16_t *ds)
{
    const __mmask16 m0 = kn >= 16 ? 0xffff : (__mmask16)((1u << kn) - 1),
                    m1 = kn >= 32 ? 0xffff : kn <= 16 ? 0 : (__mmask16)((1u << (kn - 16)) - 1);
    const __m512 zero = _mm512_setzero_ps();
    const __m256i quads = _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112); /* dword j of a row: k 4j..4j+3 */
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127), off = _mm512_set1_epi32(128);
    for (int r = 0; r < GR; r++) {
        const int n = g * GR + r;
        __m512 x0 = zero, x1 = zero;
        if (n < N) {
            const float *row = W + (size_t)n * ldw + k0;
            x0 = _mm512_maskz_loadu_ps(m0, row), x1 = _mm512_maskz_loadu_ps(m1, row + 16);
        }
        /* x - x is 0 for a finite x, NaN for an infinity or a NaN */
        if (_mm512_cmp_ps_mask(_mm512_sub_ps(x0, x0), zero, _CMP_NEQ_UQ) |
            _mm512_cmp_ps_mask(_mm512_sub_ps(x1, x1), zero, _CMP_NEQ_UQ))
            return 0;
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
        const uint16_t h = f32_to_f16(amax / 127.0f);
        const float df = nlp_f16_to_f32(h), id = df > 0 ? 1.0f / df : 0.0f;
        ds[r] = h;
        const __m512 vid = _mm512_set1_ps(id);
        __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, vid)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, vid));
        q0 = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q0, lo), hi), off);
        q1 = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q1, lo), hi), off);
        const __m256i bytes = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(q0)),
                                                      _mm512_cvtepi32_epi8(q1), 1);
        _mm256_i32scatter_epi32(dst + r * 4, quads, bytes, 4);
    }
    return 1;
}

int nlp_q8_quantize(nlp_q8 *w, const float *W, int N, int K, int ldw)
{
    memset(w, 0, sizeof *w);
    const int nb = (K + QB - 1) / QB, ng = (N + GR - 1) / GR;
    const size_t nq = (size_t)ng * nb * GR * QB, nd = (size_t)ng * nb * GR;
    /* written all over at once: its pages made in one call, not faulted
     * in one at a time (a quarter of the time on this workplace's VMs) */
    void *mem = nlp_malloc_dense(nq + 64);
    uint16_t *d = nlp_malloc_dense((nd ? nd : 1) * sizeof *d);
    if (!mem || !d) {
        free(mem), free(d);
        return nlp_error(NLP_ENOMEM, "out of memory (int8 weights, %zu MiB)", nq >> 20);
    }
    uint8_t *q = (uint8_t *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
    uint8_t *qb = q;
    size_t bad = SIZE_MAX; /* the first non-finite weight, row-major */
    const int vec = nlp_q8_isa() == NLP_Q8_AVX512VNNI;
#pragma omp parallel for schedule(dynamic, 1) if ((size_t)N * K > (1u << 18))
    for (int g = 0; g < ng; g++)
        for (int b = 0; b < nb; b++) {
            uint8_t *dst = qb + ((size_t)g * nb + b) * GR * QB;
            uint16_t *ds = d + ((size_t)g * nb + b) * GR;
            const int k0 = b * QB, kn = K - k0 < QB ? K - k0 : QB;
            if (vec && q8_block_512(W, N, ldw, g, k0, kn, dst, ds)) continue;
            for (int r = 0; r < GR; r++) {
                const int n = g * GR + r;
                const float *row = n < N ? W + (size_t)n * ldw + k0 : NULL;
                float amax = 0;
                for (int k = 0; row && k < kn; k++) {
                    if (!isfinite(row[k])) {
#pragma omp critical(q8_bad)
                        if ((size_t)n * K + k0 + k < bad) bad = (size_t)n * K + k0 + k;
                    }
                    const float a = fabsf(row[k]);
                    amax = a > amax ? a : amax; /* not fmaxf: a call each (NaN is checked above) */
                }
                const uint16_t h = f32_to_f16(amax / 127.0f);
                const float df = nlp_f16_to_f32(h), id = df > 0 ? 1.0f / df : 0.0f;
                ds[r] = h;
                for (int k = 0; k < QB; k++) {
                    float v = row && k < kn && isfinite(row[k]) ? (float)lrintf(row[k] * id) : 0.0f;
                    v = v > 127 ? 127 : v < -127 ? -127 : v;
                    dst[(k / 4) * GR * 4 + r * 4 + k % 4] = (uint8_t)((int)v + 128);
                }
            }
        }
    if (bad != SIZE_MAX) {
        free(mem), free(d);
        return nlp_error(NLP_EDATA, "weight at row %zu, column %zu is not finite", bad / (size_t)K, bad % (size_t)K);
    }
    *w = (nlp_q8){.N = N, .K = K, .nb = nb, .ng = ng, .q = q, .d = d, .mem = mem};
    return NLP_OK;
}

float nlp_q8_weight(const nlp_q8 *w, int n, int k)
{
    const int g = n / GR, r = n % GR, b = k / QB, kk = k % QB;
    const uint8_t v = w->q[((size_t)g * w->nb + b) * GR * QB + (kk / 4) * GR * 4 + r * 4 + kk % 4];
    return (float)((int)v - 128) * nlp_f16_to_f32(w->d[((size_t)g * w->nb + b) * GR + r]);
}

// --- activations

/* One row of x quantized: q [nb·32] (zero past K), d [nb], c [nb] = 128·Σq
 * (what the +128 of the weights adds to a VNNI sum). A block with a NaN or
 * an infinity gets q = 0 and d NaN or infinity, so the outputs are not
 * finite. The scalar and the AVX-512 paths give the same bytes. */
static void qrow_generic(const float *x, int K, int nb, int8_t *q, float *d, int32_t *c)
{
    for (int b = 0; b < nb; b++) {
        const int k0 = b * QB, kn = K - k0 < QB ? K - k0 : QB;
        float amax = 0;
        int nan = 0;
        for (int k = 0; k < kn; k++) {
            const float a = fabsf(x[k0 + k]);
            nan |= isnan(a);
            amax = a > amax ? a : amax; /* not fmaxf: a call each (NaN is flagged) */
        }
        const float db = nan ? NAN : amax / 127.0f, id = db > 0 && isfinite(db) ? 1.0f / db : 0.0f;
        const int live = isfinite(db); /* else every q 0 (no lrintf of NaN) */
        int32_t s = 0;
        for (int k = 0; k < QB; k++) {
            const int v = live && k < kn ? (int)lrintf(x[k0 + k] * id) : 0;
            q[k0 + k] = (int8_t)v;
            s += v;
        }
        d[b] = db;
        c[b] = 128 * s;
    }
}

T_VNNI static void qrow_512(const float *x, int K, int nb, int8_t *q, float *d, int32_t *c)
{
    for (int b = 0; b < nb; b++) {
        const int k0 = b * QB, kn = K - k0 < QB ? K - k0 : QB;
        const __mmask16 m0 = kn >= 16 ? 0xffff : (__mmask16)((1u << kn) - 1),
                        m1 = kn >= 32 ? 0xffff : kn <= 16 ? 0 : (__mmask16)((1u << (kn - 16)) - 1);
        const __m512 x0 = _mm512_maskz_loadu_ps(m0, x + k0), x1 = _mm512_maskz_loadu_ps(m1, x + k0 + 16);
        const int nan = _mm512_cmp_ps_mask(x0, x0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(x1, x1, _CMP_UNORD_Q);
        const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
        const float db = nan ? NAN : amax / 127.0f, id = db > 0 && isfinite(db) ? 1.0f / db : 0.0f;
        const __m512 vid = _mm512_set1_ps(id);
        /* a block that is not finite: every q 0, as the scalar path (cvtps of
         * NaN is INT_MIN, whose sum below would overflow) */
        const __mmask16 live = isfinite(db) ? 0xffff : 0;
        const __m512i q0 = _mm512_maskz_cvtps_epi32(live, _mm512_mul_ps(x0, vid)),
                      q1 = _mm512_maskz_cvtps_epi32(live, _mm512_mul_ps(x1, vid));
        _mm_storeu_si128((__m128i *)(q + k0), _mm512_cvtepi32_epi8(q0));
        _mm_storeu_si128((__m128i *)(q + k0 + 16), _mm512_cvtepi32_epi8(q1));
        d[b] = db;
        c[b] = 128 * _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    }
}

// --- kernels: one group of 16 rows of W against mm <= 4 rows of x

typedef struct xrows {
    const int8_t *q[MR];
    const float *d[MR];
    const int32_t *c[MR];
} xrows;

T_VNNI ALWAYS_INLINE void grp_vnni_m(const int M, int nb, const uint8_t *q, const uint16_t *d, const xrows *x,
                                     float out[MR][GR])
{
    __m512 acc[MR];
#pragma GCC unroll 4
    for (int m = 0; m < M; m++) acc[m] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *qb = q + (size_t)b * GR * QB;
        __m512i s[MR];
#pragma GCC unroll 4
        for (int m = 0; m < M; m++) s[m] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            const __m512i w = _mm512_load_si512(qb + 64 * j);
#pragma GCC unroll 4
            for (int m = 0; m < M; m++) {
                int32_t quad;
                memcpy(&quad, x->q[m] + b * QB + 4 * j, sizeof quad);
                s[m] = _mm512_dpbusd_epi32(s[m], w, _mm512_set1_epi32(quad));
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(d + (size_t)b * GR)));
#pragma GCC unroll 4
        for (int m = 0; m < M; m++) {
            const __m512 t = _mm512_cvtepi32_ps(_mm512_sub_epi32(s[m], _mm512_set1_epi32(x->c[m][b])));
            acc[m] = _mm512_fmadd_ps(t, _mm512_mul_ps(dw, _mm512_set1_ps(x->d[m][b])), acc[m]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < M; m++) _mm512_storeu_ps(out[m], acc[m]);
}

T_VNNI static void grp_vnni(int M, int nb, const uint8_t *q, const uint16_t *d, const xrows *x, float out[MR][GR])
{
    switch (M) {
    case 1: grp_vnni_m(1, nb, q, d, x, out); break;
    case 2: grp_vnni_m(2, nb, q, d, x, out); break;
    case 3: grp_vnni_m(3, nb, q, d, x, out); break;
    default: grp_vnni_m(4, nb, q, d, x, out); break;
    }
}

T_AVX2 ALWAYS_INLINE void grp_avx2_m(const int M, int nb, const uint8_t *q, const uint16_t *d, const xrows *x,
                                     float out[MR][GR])
{
    __m256 acc[MR][2];
    const __m256i flip = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
#pragma GCC unroll 4
    for (int m = 0; m < M; m++) acc[m][0] = acc[m][1] = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *qb = q + (size_t)b * GR * QB;
        __m256i s[MR][2];
#pragma GCC unroll 4
        for (int m = 0; m < M; m++) s[m][0] = s[m][1] = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
            /* the stored q + 128 back to signed q */
            const __m256i w0 = _mm256_xor_si256(_mm256_load_si256((const __m256i *)(qb + 64 * j)), flip),
                          w1 = _mm256_xor_si256(_mm256_load_si256((const __m256i *)(qb + 64 * j + 32)), flip);
#pragma GCC unroll 4
            for (int m = 0; m < M; m++) {
                int32_t quad;
                memcpy(&quad, x->q[m] + b * QB + 4 * j, sizeof quad);
                const __m256i xb = _mm256_set1_epi32(quad), xa = _mm256_abs_epi8(xb);
                s[m][0] = _mm256_add_epi32(s[m][0], _mm256_madd_epi16(_mm256_maddubs_epi16(xa, _mm256_sign_epi8(w0, xb)), ones));
                s[m][1] = _mm256_add_epi32(s[m][1], _mm256_madd_epi16(_mm256_maddubs_epi16(xa, _mm256_sign_epi8(w1, xb)), ones));
            }
        }
        const __m256 dw0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(d + (size_t)b * GR))),
                     dw1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(d + (size_t)b * GR + 8)));
#pragma GCC unroll 4
        for (int m = 0; m < M; m++) {
            const __m256 dx = _mm256_set1_ps(x->d[m][b]);
            acc[m][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[m][0]), _mm256_mul_ps(dw0, dx), acc[m][0]);
            acc[m][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[m][1]), _mm256_mul_ps(dw1, dx), acc[m][1]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < M; m++) {
        _mm256_storeu_ps(out[m], acc[m][0]);
        _mm256_storeu_ps(out[m] + 8, acc[m][1]);
    }
}

T_AVX2 static void grp_avx2(int M, int nb, const uint8_t *q, const uint16_t *d, const xrows *x, float out[MR][GR])
{
    switch (M) {
    case 1: grp_avx2_m(1, nb, q, d, x, out); break;
    case 2: grp_avx2_m(2, nb, q, d, x, out); break;
    case 3: grp_avx2_m(3, nb, q, d, x, out); break;
    default: grp_avx2_m(4, nb, q, d, x, out); break;
    }
}

static void grp_generic(int M, int nb, const uint8_t *q, const uint16_t *d, const xrows *x, float out[MR][GR])
{
    for (int m = 0; m < M; m++)
        for (int r = 0; r < GR; r++) {
            float acc = 0;
            for (int b = 0; b < nb; b++) {
                const uint8_t *qb = q + (size_t)b * GR * QB + r * 4;
                const int8_t *xq = x->q[m] + b * QB;
                int32_t dot = 0;
                for (int j = 0; j < 8; j++)
                    for (int i = 0; i < 4; i++) dot += ((int32_t)qb[64 * j + i] - 128) * xq[4 * j + i];
                acc = fmaf((float)dot, nlp_f16_to_f32(d[(size_t)b * GR + r]) * x->d[m][b], acc);
            }
            out[m][r] = acc;
        }
}

// --- products

typedef struct q8job {
    const nlp_q8 *w;
    int M, isa, per; /* rows of x, kernel set, groups a task */
    const int8_t *xq;
    const float *xd;
    const int32_t *xc;
    const float *bias;
    float beta;
    float *y;
    int ldy;
} q8job;

static void q8_task(void *ctx, int t)
{
    const q8job *j = ctx;
    const nlp_q8 *w = j->w;
    const int nb = w->nb, g1 = (t + 1) * j->per < w->ng ? (t + 1) * j->per : w->ng;
    float out[MR][GR] __attribute__((aligned(64)));
    for (int g = t * j->per; g < g1; g++) {
        const uint8_t *q = w->q + (size_t)g * nb * GR * QB;
        const uint16_t *d = w->d + (size_t)g * nb * GR;
        const int r1 = w->N - g * GR < GR ? w->N - g * GR : GR;
        for (int m0 = 0; m0 < j->M; m0 += MR) {
            const int mm = j->M - m0 < MR ? j->M - m0 : MR;
            xrows x;
            for (int m = 0; m < mm; m++) {
                x.q[m] = j->xq + (size_t)(m0 + m) * nb * QB;
                x.d[m] = j->xd + (size_t)(m0 + m) * nb;
                x.c[m] = j->xc + (size_t)(m0 + m) * nb;
            }
            if (j->isa == NLP_Q8_AVX512VNNI) grp_vnni(mm, nb, q, d, &x, out);
            else if (j->isa == NLP_Q8_AVX2) grp_avx2(mm, nb, q, d, &x, out);
            else grp_generic(mm, nb, q, d, &x, out);
            for (int m = 0; m < mm; m++) {
                float *yr = j->y + (size_t)(m0 + m) * j->ldy + g * GR;
                const float *br = j->bias ? j->bias + g * GR : NULL;
                for (int r = 0; r < r1; r++) {
                    const float v = br ? br[r] + out[m][r] : out[m][r];
                    yr[r] = j->beta != 0 ? yr[r] + v : v;
                }
            }
        }
    }
}

typedef struct qxjob {
    const float *x;
    int ldx, K, nb, isa;
    int8_t *q;
    float *d;
    int32_t *c;
} qxjob;

static void qx_task(void *ctx, int m)
{
    const qxjob *j = ctx;
    const float *x = j->x + (size_t)m * j->ldx;
    int8_t *q = j->q + (size_t)m * j->nb * QB;
    float *d = j->d + (size_t)m * j->nb;
    int32_t *c = j->c + (size_t)m * j->nb;
    if (j->isa == NLP_Q8_AVX512VNNI) qrow_512(x, j->K, j->nb, q, d, c);
    else qrow_generic(x, j->K, j->nb, q, d, c);
}

/* Products below this many weight·rows run on the caller alone. */
#define Q8_SPLIT_MIN (1 << 16)

int nlp_q8_gemm(int M, const float *x, int ldx, const nlp_q8 *w, const float *bias, float beta, float *y, int ldy)
{
    if (M <= 0 || w->N <= 0) return NLP_OK;
    const int nb = w->nb, isa = nlp_q8_isa();
    const size_t xbytes = (size_t)M * nb * QB, sbytes = (size_t)M * (nb ? nb : 1) * sizeof(float);
    char *buf = nlp_malloc(xbytes + 2 * sbytes + 64);
    if (!buf) return NLP_ENOMEM;
    qxjob qj = {.x = x, .ldx = ldx, .K = w->K, .nb = nb, .isa = isa, .q = (int8_t *)buf};
    qj.d = (float *)(buf + (xbytes + 15) / 16 * 16);
    qj.c = (int32_t *)((char *)qj.d + sbytes);
    const double work = (double)w->N * w->K * M;
    nlp_pool_for(M, (double)M * w->K >= Q8_SPLIT_MIN ? 0 : 1, qx_task, &qj);
    /* tasks of about 64 KiB of weights: big enough to amortise taking one,
     * small enough to balance between a fast and a slowed core */
    int per = 128 / (nb ? nb : 1);
    if (per < 1) per = 1;
    const int tasks = (w->ng + per - 1) / per;
    q8job j = {.w = w, .M = M, .isa = isa, .per = per, .xq = qj.q, .xd = qj.d, .xc = qj.c, .bias = bias,
               .beta = beta, .y = y, .ldy = ldy};
    nlp_pool_for(tasks, work >= Q8_SPLIT_MIN ? 0 : 1, q8_task, &j);
    free(buf);
    return NLP_OK;
}
