/*
 * attn.c — multi-head attention over nlp_gemm, one head per task. See attn.h.
 */
#include "nn/attn.h"
#include "nn/act.h"
#include "nn/gemm.h"
#include "nn/vmath.h"
#include "base/err.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

/* The batch whose keys, values and mask batch b's queries use. */
static inline int kb(const nlp_attn *a, int b) { return a->kv_group > 1 ? b / a->kv_group : b; }

/* Query heads per key/value head (grouped-query attention), and the
 * key/value head query head h reads. */
static inline int heads_per_kv(const nlp_attn *a) { return a->kv_heads > 0 ? a->H / a->kv_heads : 1; }
static inline int kvh(const nlp_attn *a, int h) { return h / heads_per_kv(a); }

/* Number of keys row t may see before masking by key_mask: all S, or the causal prefix. */
static inline int row_limit(const nlp_attn *a, int t)
{
    if (!a->causal) return a->S;
    int n = a->q_offset + t + 1;
    return n < a->S ? n : a->S;
}

/* 1 when query t of batch b may attend no key at all. */
static int row_all_masked(const nlp_attn *a, int b, int t)
{
    if (!a->key_mask) return row_limit(a, t) <= 0;
    const uint8_t *km = a->key_mask + (size_t)kb(a, b) * a->bsm;
    int lim = row_limit(a, t);
    for (int j = 0; j < lim; j++)
        if (km[j]) return 0;
    return 1;
}

// --- rows of scores, 16 lanes at a time

typedef float v16 __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));

static inline v16 ld16(const float *p)
{
    v16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void st16(float *p, v16 v) { memcpy(p, &v, sizeof v); }

static inline v16 sel16(v16i m, v16 a, v16 b) { return (v16)(((v16i)a & m) | ((v16i)b & ~m)); }

/* The first k (< 16) floats at p in lanes, the others `fill`; and the
 * first k lanes of v stored at p (masked moves where there is AVX-512). */
static inline v16 ld_part(const float *p, int k, float fill)
{
#ifdef __AVX512F__
    return (v16)_mm512_mask_loadu_ps(_mm512_set1_ps(fill), (__mmask16)((1u << k) - 1), p);
#else
    float t[16];
    for (int i = 0; i < 16; i++) t[i] = i < k ? p[i] : fill;
    return ld16(t);
#endif
}

static inline void st_part(float *p, int k, v16 v)
{
#ifdef __AVX512F__
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << k) - 1), (__m512)v);
#else
    float t[16];
    st16(t, v);
    memcpy(p, t, (size_t)k * sizeof(float));
#endif
}

/* nlp_expf in 16 lanes: the same operations in the same order (this file is
 * compiled without contraction into fused multiply-adds, as vmath.h is), so
 * each lane has nlp_expf's bits. */
static inline v16 exp16(v16 x)
{
    const v16 lo = (v16){0} - 87.3f, hi = (v16){0} + 88.37f;
    const v16i below = x < lo;
    const v16 xc = sel16(below, lo, sel16(x > hi, hi, x));
    const v16 t = xc * 1.44269504088896341f + 12582912.0f;
    const v16 n = t - 12582912.0f;
    v16 r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    v16 p = (v16){0} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const v16 y = p * r * r + r + 1.0f;
    const v16u e = ((v16u)t - 0x4b400000u + 127u) << 23;
    return sel16(below, (v16){0}, y * (v16)e);
}

typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));

/* The sum of 16 lanes by a fixed tree: lane l + lane l+8, then +4, +2, +1. */
static inline float hsum16(v16 a)
{
    const v8 b = __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
    const v4 c = __builtin_shufflevector(b, b, 0, 1, 2, 3) + __builtin_shufflevector(b, b, 4, 5, 6, 7);
    return (c[0] + c[2]) + (c[1] + c[3]);
}

/* The largest of 16 lanes (the same whatever the order). */
static inline float hmax16(v16 a)
{
    const v8 lo = __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7),
             hi = __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
    const v8 b = (v8)(((__typeof__(lo > hi))lo & (hi < lo)) | ((__typeof__(lo > hi))hi & ~(hi < lo)));
    const v4 l4 = __builtin_shufflevector(b, b, 0, 1, 2, 3), h4 = __builtin_shufflevector(b, b, 4, 5, 6, 7);
    const v4 c = (v4)(((__typeof__(l4 > h4))l4 & (h4 < l4)) | ((__typeof__(l4 > h4))h4 & ~(h4 < l4)));
    float m = c[0];
    for (int i = 1; i < 4; i++) m = c[i] > m ? c[i] : m;
    return m;
}

/* row[0..n) -> softmax of it. The maximum (the same whatever the order),
 * then e^(x - max) with its sum: 16 lane sums, added by a fixed tree, then
 * the n % 16 left in order; so a row's result depends on n and its values
 * only, not on where it sits or what is beside it. */
static void softmax_lanes(float *row, int n)
{
    float mx = -FLT_MAX;
    int j = 0;
    if (n >= 16) {
        v16 m = ld16(row);
        for (j = 16; j + 16 <= n; j += 16) {
            const v16 x = ld16(row + j);
            m = sel16(x > m, x, m);
        }
        mx = hmax16(m);
    }
    if (j < n) { /* the maximum of the rest too in lanes (any order gives it) */
        const v16 x = ld_part(row + j, n - j, mx);
        mx = hmax16(sel16(x > mx, x, (v16){0} + mx));
    }
    v16 acc = {0};
    for (j = 0; j + 16 <= n; j += 16) {
        const v16 e = exp16(ld16(row + j) - mx);
        st16(row + j, e);
        acc += e;
    }
    float sum = hsum16(acc);
    if (j < n) { /* the n % 16 left: their exponentials in lanes too (a
                  * lane's bits are nlp_expf's), added to the sum in order */
        const v16 e = exp16(ld_part(row + j, n - j, 0.0f) - mx);
        st_part(row + j, n - j, e);
        for (int i = 0; j < n; i++, j++) sum += e[i];
    }
    const float inv = 1.0f / sum;
    for (j = 0; j + 16 <= n; j += 16) st16(row + j, ld16(row + j) * inv);
    if (j < n) st_part(row + j, n - j, ld_part(row + j, n - j, 0.0f) * inv);
}

/* Σ a[j]·b[j] over n: 16 lane sums by a fixed tree, then the rest in order. */
static float dot_lanes(const float *a, const float *b, int n)
{
    v16 acc = {0};
    int j = 0;
    for (; j + 16 <= n; j += 16) acc += ld16(a + j) * ld16(b + j);
    float s = hsum16(acc);
    for (; j < n; j++) s += a[j] * b[j];
    return s;
}

/* In place: scores row -> probabilities, with the masks of attn.h. */
static void softmax_row(const nlp_attn *a, int b, int t, float *row)
{
    int S = a->S, lim = row_limit(a, t);
    if (a->key_mask) {
        const uint8_t *km = a->key_mask + (size_t)kb(a, b) * a->bsm;
        int last = -1;
        for (int j = 0; j < lim; j++) {
            if (km[j]) last = j;
            else row[j] = -FLT_MAX; /* exp() of it is 0 */
        }
        if (last < 0) { /* every key masked: all scores equal, uniform */
            for (int j = 0; j < S; j++) row[j] = 1.0f / S;
            return;
        }
        /* the sums stop at the last key that counts: a row padded with
         * more masked keys (a longer sentence in its batch) gives the same
         * bits as alone */
        lim = last + 1;
    }
    softmax_lanes(row, lim);
    for (int j = lim; j < S; j++) row[j] = 0;
}

/* Causal attention is done in blocks of query rows, each with only the keys
 * it can see: about half the products of the full square for long sequences. */
#define ROW_BLOCK 64

static int block_rows(const nlp_attn *a) { return a->causal && a->T > ROW_BLOCK ? ROW_BLOCK : a->T; }

/* Keys that queries [0, t1) may see. */
static int key_extent(const nlp_attn *a, int t1)
{
    if (!a->causal) return a->S;
    int n = a->q_offset + t1;
    return n < a->S ? n : a->S;
}

/* Keys that rows [t0, t0 + rows) of batch b use: the causal extent, or all
 * S when one of them has every key masked (that row is uniform over all S). */
static int block_keys(const nlp_attn *a, int b, int t0, int rows)
{
    int kn = key_extent(a, t0 + rows);
    if (kn < a->S && a->key_mask)
        for (int t = t0; t < t0 + rows; t++)
            if (row_all_masked(a, b, t)) return a->S;
    return kn;
}

/* The forward pass's keys: block_keys without the masked keys after the
 * last one that counts (padding), so that a padded row takes the same
 * products as alone (the backward keeps block_keys: it writes every key's
 * gradient). */
static int block_keys_fwd(const nlp_attn *a, int b, int t0, int rows)
{
    int kn = block_keys(a, b, t0, rows);
    if (!a->key_mask || kn < 1) return kn;
    const uint8_t *km = a->key_mask + (size_t)kb(a, b) * a->bsm;
    int last = kn - 1;
    while (last >= 0 && !km[last]) last--;
    return last < 0 ? kn : last + 1;
}

/* rows × D block of a strided matrix set to 0. */
static void zero_rows(float *x, long ld, int rows, int D)
{
    for (int i = 0; i < rows; i++) memset(x + (size_t)i * ld, 0, (size_t)D * sizeof(float));
}

/* dst[t, j] = dropout(src[t, j]) for rows t0..t1-1, keys j < kn, of head
 * (b, h): the mask of element (b, h, t, j) comes from the pass's seed. */
static void drop_rows(const nlp_attn *a, float *dst, const float *src, int b, int h, int t0, int t1, int kn)
{
    const uint32_t th = nlp_dropout_threshold(a->dropout);
    const float scale = 1.0f / (1.0f - a->dropout);
    const uint64_t base = ((uint64_t)(a->b0 + b) * a->H + h) * a->T * a->S;
    for (int t = t0; t < t1; t++)
        for (int j = 0; j < kn; j++) {
            size_t i = (size_t)t * a->S + j;
            dst[i] = nlp_dropout_keep(a->seed, base + i, th) ? src[i] * scale : 0.0f;
        }
}

/* row[0..kn) += the bias of head h, query row t (nothing without one). */
static void add_bias(const nlp_attn *a, int h, int t, float *row, int kn)
{
    if (!a->bias) return;
    const float *bb = a->bias + h * a->bsb + t * a->ldb;
    for (int j = 0; j < kn; j++) row[j] += bb[j];
}

// --- few query rows (incremental decoding)


/* Sixteen dot products q·kp[j] over D, times alpha, into out[0..16): each
 * an accumulator of 16 lanes along D, the 16 accumulators then reduced
 * together by a fixed tree (lanes l and l+8, then l+4, l+2, l+1: the same
 * sums for every key wherever it sits among the 16), then the D % 16
 * products left, in order. */
static void dots16(const float *q, const float *const kp[16], int D, float alpha, float *out)
{
    v16 a[16]; /* unrolled: the sixteen accumulators stay in registers */
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) a[j] = (v16){0};
    int d = 0;
    for (; d + 16 <= D; d += 16) {
        const v16 qv = ld16(q + d);
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) a[j] += qv * ld16(kp[j] + d);
    }
    v16 b[8], c[4], e[2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        b[i] = __builtin_shufflevector(a[2 * i], a[2 * i + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
               __builtin_shufflevector(a[2 * i], a[2 * i + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        c[i] = __builtin_shufflevector(b[2 * i], b[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
               __builtin_shufflevector(b[2 * i], b[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++)
        e[i] = __builtin_shufflevector(c[2 * i], c[2 * i + 1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
               __builtin_shufflevector(c[2 * i], c[2 * i + 1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
    const v16 f = __builtin_shufflevector(e[0], e[1], 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
                  __builtin_shufflevector(e[0], e[1], 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    float s[16];
    memcpy(s, &f, sizeof s);
    for (int j = 0; j < 16; j++) {
        for (int dd = d; dd < D; dd++) s[j] += q[dd] * kp[j][dd];
        out[j] = alpha * s[j];
    }
}

/* Scores of one query against kn keys (key j at k + row(j)·bs + j·ldk,
 * row(j) = rows[j] or 0 without rows), sixteen at a time; the last group is
 * padded with key 0 (those results dropped), so that every key takes the
 * same operations. */
static void scores(const float *q, const float *k, long ldk, long bs, const int32_t *rows, int D, int kn, float alpha,
                   float *out)
{
    for (int j0 = 0; j0 < kn; j0 += 16) {
        const float *kp[16];
        float tmp[16];
        const int n = kn - j0 < 16 ? kn - j0 : 16;
        for (int j = 0; j < 16; j++) {
            const int jj = j < n ? j0 + j : 0;
            kp[j] = k + (rows ? rows[jj] * bs : 0) + jj * ldk;
        }
        dots16(q, kp, D, alpha, n == 16 ? out + j0 : tmp);
        if (n < 16) memcpy(out + j0, tmp, (size_t)n * sizeof *tmp);
    }
}

/* rows × kn scores and rows × D outputs without matrix products: each score
 * a dot product, each output Σ_j p_j v_j in key order. A matrix product
 * would pack the keys and values of the cache for every token; this reads
 * them once. The same operations for a row whatever the batch. */
/* v_j of key j: at v + row(j)·bs + j·ld (row(j) = rows[j], or 0). */
static inline const float *vrow(const float *v, long ld, const int32_t *rows, long bs, int j)
{
    return v + (rows ? rows[j] * bs : 0) + (size_t)j * ld;
}

/* o[0..D) = Σ_j p_j v_j over kn keys: 64 columns at a time, even and odd
 * keys in two sets of four registers (eight chains of additions in flight),
 * the two sets added at the end; then 16 columns at a time, then one. The
 * same operations for a row whatever else is computed beside it. */
static void weighted_sum(const float *p, const float *v, long ld, const int32_t *rows, long bs, int kn, int D,
                         float *o)
{
    int d0 = 0;
    for (; d0 + 64 <= D; d0 += 64) {
        v16 x0 = {0}, x1 = {0}, x2 = {0}, x3 = {0}, y0 = {0}, y1 = {0}, y2 = {0}, y3 = {0};
        int j = 0;
        for (; j + 2 <= kn; j += 2) {
            const float *u = vrow(v, ld, rows, bs, j) + d0, *w = vrow(v, ld, rows, bs, j + 1) + d0;
            const float pu = p[j], pw = p[j + 1];
            x0 += pu * ld16(u), x1 += pu * ld16(u + 16), x2 += pu * ld16(u + 32), x3 += pu * ld16(u + 48);
            y0 += pw * ld16(w), y1 += pw * ld16(w + 16), y2 += pw * ld16(w + 32), y3 += pw * ld16(w + 48);
        }
        if (j < kn) {
            const float *u = vrow(v, ld, rows, bs, j) + d0;
            const float pu = p[j];
            x0 += pu * ld16(u), x1 += pu * ld16(u + 16), x2 += pu * ld16(u + 32), x3 += pu * ld16(u + 48);
        }
        x0 += y0, x1 += y1, x2 += y2, x3 += y3;
        memcpy(o + d0, &x0, 64), memcpy(o + d0 + 16, &x1, 64), memcpy(o + d0 + 32, &x2, 64), memcpy(o + d0 + 48, &x3, 64);
    }
    for (; d0 + 16 <= D; d0 += 16) {
        v16 x = {0};
        for (int j = 0; j < kn; j++) x += p[j] * ld16(vrow(v, ld, rows, bs, j) + d0);
        memcpy(o + d0, &x, sizeof x);
    }
    for (; d0 < D; d0++) {
        float x = 0;
        for (int j = 0; j < kn; j++) x += p[j] * vrow(v, ld, rows, bs, j)[d0];
        o[d0] = x;
    }
}

static void small_rows(const nlp_attn *a, int b, int h, const float *q, const float *k, const float *v, float *o, float *p,
                       int t0, int rows, int kn, float alpha)
{
    const int D = a->D, S = a->S;
    /* with kv_rows, k and v are batch 0's and each key names its batch */
    const int32_t *kr = a->kv_rows ? a->kv_rows + (size_t)b * a->bs_rows : NULL;
    for (int t = t0; t < t0 + rows; t++) {
        const float *qt = q + (size_t)t * a->ldq;
        float *pr = p + (size_t)t * S;
        scores(qt, k, a->ldk, a->bsk, kr, D, kn, alpha, pr);
        add_bias(a, h, t, pr, kn);
        softmax_row(a, b, t, pr);
        float *ot = o + (size_t)t * a->ldo;
        weighted_sum(pr, v, a->ldv, kr, a->bsv, kn, D, ot);
    }
}

/* Forward of (batch, head) task `task` (see nlp_attn_forward); scratch
 * holds T·S floats where P is NULL or dropout is on. */
static void fwd_task(const nlp_attn *a, float *P, float *scratch, int task, float alpha)
{
    const int H = a->H, T = a->T, S = a->S, D = a->D, RB = block_rows(a), drop = a->dropout > 0;
    const int G = a->kv_group > 1 ? a->kv_group : 1;
    const int b = task / (H * G) * G + task % G, h = task / G % H, g = kvh(a, h);
    const float *q = a->q + b * a->bsq + h * D, *k = a->k + kb(a, b) * a->bsk + g * D, *v = a->v + kb(a, b) * a->bsv + g * D;
    float *o = a->out + b * a->bso + h * D;
    float *p = P ? P + ((size_t)b * H + h) * T * S : scratch;
    float *pd = drop ? scratch : p;
    if (a->incremental && T <= NLP_ATTN_SMALL_ROWS && !drop) {
        if (a->kv_rows) k = a->k + g * D, v = a->v + g * D; /* each key names its batch */
        small_rows(a, b, h, q, k, v, o, p, 0, T, block_keys_fwd(a, b, 0, T), alpha);
        return;
    }
    for (int t0 = 0; t0 < T; t0 += RB) {
        int rows = T - t0 < RB ? T - t0 : RB, kn = block_keys_fwd(a, b, t0, rows);
        float *pr = p + (size_t)t0 * S;
        nlp_gemm(0, 1, rows, kn, D, alpha, q + (size_t)t0 * a->ldq, (int)a->ldq, k, (int)a->ldk, 0.0f, pr, S);
        for (int t = t0; t < t0 + rows; t++) {
            add_bias(a, h, t, p + (size_t)t * S, kn);
            softmax_row(a, b, t, p + (size_t)t * S);
        }
        if (drop) drop_rows(a, pd, p, b, h, t0, t0 + rows, S);
        nlp_gemm(0, 0, rows, D, kn, 1.0f, pd + (size_t)t0 * S, S, v, (int)a->ldv, 0.0f, o + (size_t)t0 * a->ldo,
                 (int)a->ldo);
    }
}

int nlp_attn_forward(const nlp_attn *a, float *P)
{
    const int B = a->B, H = a->H, T = a->T, S = a->S, D = a->D;
    const float alpha = 1.0f / sqrtf((float)D);
    const int need = !P || a->dropout > 0; /* scratch for the probabilities */
    /* a token of batch-1 decoding (a few hundred thousand multiply-adds at
     * most) on the calling thread, without entering OpenMP: waking threads,
     * even a region whose if() is false, costs more */
    if ((double)B * H * T * S * D <= (1 << 18)) {
        float *scratch = need ? malloc((size_t)T * S * sizeof(float) + 64) : NULL;
        if (need && !scratch) return nlp_error(NLP_ENOMEM, "out of memory (attention scratch)");
        for (int task = 0; task < B * H; task++) fwd_task(a, P, scratch, task, alpha);
        free(scratch);
        return NLP_OK;
    }
    int fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        float *scratch = NULL;
        if (need) {
            scratch = malloc((size_t)T * S * sizeof(float) + 64);
            if (!scratch) fail = 1;
        }
        /* (batch, head) tasks; batches sharing keys (kv_group) take a head
         * one after another, so that its keys are read from memory once.
         * A thread takes all heads of a batch (or of a group) at a time, as
         * it becomes free: a core slowed by a neighbour takes fewer, and
         * the heads' columns of a row (next to each other) stay with one
         * thread */
        const int G = a->kv_group > 1 ? a->kv_group : 1;
#pragma omp for schedule(dynamic, G * H)
        for (int task = 0; task < B * H; task++)
            if (!fail) fwd_task(a, P, scratch, task, alpha);
        free(scratch);
    }
    return fail ? nlp_error(NLP_ENOMEM, "out of memory (attention scratch)") : NLP_OK;
}

/* Query head h of batch b (key/value head kh): dQ written, dK and dV
 * (at gk, gv) written when `add` is 0, added to when 1. dp: the thread's
 * scratch of T·S (twice that with dropout). */
static void head_backward(const nlp_attn *a, const float *P, const float *dout, float *dq, float *gk, float *gv, int b,
                          int h, int kh, int add, float *dp)
{
    const int H = a->H, T = a->T, S = a->S, D = a->D, RB = block_rows(a);
    const float alpha = 1.0f / sqrtf((float)D);
    const int drop = a->dropout > 0;
    const float *q = a->q + b * a->bsq + h * D, *k = a->k + b * a->bsk + kh * D, *v = a->v + b * a->bsv + kh * D,
                *go = dout + b * a->bso + h * D;
    float *gq = dq + b * a->bsq + h * D;
    const float *p = P + ((size_t)b * H + h) * T * S;
    float *pdrop = dp + (size_t)T * S;
    const float beta = add ? 1.0f : 0.0f;
    for (int t0 = 0; t0 < T; t0 += RB) {
        int rows = T - t0 < RB ? T - t0 : RB, kn = block_keys(a, b, t0, rows);
        const float *pb = p + (size_t)t0 * S, *pdb = pb, *gob = go + (size_t)t0 * a->ldo;
        float *g0 = dp + (size_t)t0 * S;
        if (drop) {
            drop_rows(a, pdrop, p, b, h, t0, t0 + rows, kn);
            pdb = pdrop + (size_t)t0 * S;
        }
        /* dV = dropout(P)ᵀ dO */
        nlp_gemm(1, 0, kn, D, rows, 1.0f, pdb, S, gob, (int)a->ldo, beta, gv, (int)a->ldv);
        /* d(dropout(P)) = dO Vᵀ, then through dropout */
        nlp_gemm(0, 1, rows, kn, D, 1.0f, gob, (int)a->ldo, v, (int)a->ldv, 0.0f, g0, S);
        if (drop) drop_rows(a, dp, dp, b, h, t0, t0 + rows, kn);
        for (int t = t0; t < t0 + rows; t++) {
            float *g = dp + (size_t)t * S;
            const float *pr = p + (size_t)t * S;
            /* softmax backward: dA = P ⊙ (dP − Σ P dP); nothing flows
             * through a row whose keys are all masked (masked_fill) */
            if (row_all_masked(a, b, t)) {
                for (int j = 0; j < kn; j++) g[j] = 0;
                continue;
            }
            const float s = dot_lanes(pr, g, kn);
#pragma omp simd
            for (int j = 0; j < kn; j++) g[j] = pr[j] * (g[j] - s);
        }
        if (a->dbias) /* ∂L/∂A, the bias's gradient for this batch and head (0 past the keys in use) */
            for (int t = t0; t < t0 + rows; t++) {
                float *d = a->dbias + (((size_t)b * H + h) * T + t) * S;
                memcpy(d, dp + (size_t)t * S, (size_t)kn * sizeof(float));
                for (int j = kn; j < S; j++) d[j] = 0;
            }
        /* A = α Q Kᵀ: dQ = α dA K, dK = α dAᵀ Q */
        nlp_gemm(0, 0, rows, D, kn, alpha, g0, S, k, (int)a->ldk, 0.0f, gq + (size_t)t0 * a->ldq, (int)a->ldq);
        nlp_gemm(1, 0, kn, D, rows, alpha, g0, S, q + (size_t)t0 * a->ldq, (int)a->ldq, beta, gk, (int)a->ldk);
    }
}

int nlp_attn_backward(const nlp_attn *a, const float *P, const float *dout, float *dq, float *dk, float *dv)
{
    if (a->kv_group > 1) return nlp_error(NLP_EINVAL, "attention backward with shared keys");
    const int B = a->B, H = a->H, T = a->T, S = a->S, D = a->D;
    /* tasks are (batch, key/value head): the query heads sharing a key/value
     * head add their dK and dV in head order on one thread */
    const int R = heads_per_kv(a), G = H / R;
    /* dK and dV are sums over blocks of query rows and over heads: zeroed
     * first, then added to; otherwise written by the one product */
    const int add = block_rows(a) < T || R > 1;
    int fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        float *dp = malloc((size_t)T * S * sizeof(float) * (a->dropout > 0 ? 2 : 1) + 64);
        if (!dp) fail = 1;
#pragma omp for collapse(2) schedule(dynamic, G) /* a batch's heads at a time, as the forward */
        for (int b = 0; b < B; b++)
            for (int kh = 0; kh < G; kh++) {
                if (fail) continue;
                float *gk = dk + b * a->bsk + kh * D, *gv = dv + b * a->bsv + kh * D;
                if (add) {
                    zero_rows(gk, a->ldk, S, D);
                    zero_rows(gv, a->ldv, S, D);
                }
                for (int h = kh * R; h < kh * R + R; h++) head_backward(a, P, dout, dq, gk, gv, b, h, kh, add, dp);
            }
        free(dp);
    }
    return fail ? nlp_error(NLP_ENOMEM, "out of memory (attention scratch)") : NLP_OK;
}
