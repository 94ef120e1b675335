/*
 * q8.h — int8 weights for decoding: W[N,K] quantized once in blocks of 32
 * along K with one fp16 scale each (the Q8_0 format of llama.cpp: 8.5 bits
 * a weight), multiplied by activations quantized the same way, row by row,
 * as each product is called.
 *
 *   weights      d = max|w| / 127 over the block (rounded to fp16),
 *                q = round(w / d) in [-127, 127]
 *   activations  the same per block of 32 of a row, d kept in fp32
 *   y[m, n]      Σ over blocks b of (Σ_k qx·qw) · (dx_b · dw_b), the integer
 *                sums exact, the scaled sums added in block order with
 *                fused multiply-adds
 *
 * Every path computes the same integer sums and the same floating-point
 * operations in the same order, so results are bit-identical across them
 * (tests check it) and, each output being one row's dot product with one
 * row of W, independent of M, of the other rows and of the threads (the
 * row invariance translation needs, gemm.h).
 *
 * Layout: rows of W in groups of 16 (the last padded with zero rows), and
 * in each group, per block, eight 64-byte vectors: vector j holds k = 4j ..
 * 4j+3 of the block for the 16 rows (4 bytes a row), stored as q + 128.
 * An AVX-512 VNNI vpdpbusd multiplies such a vector (unsigned bytes) by a
 * row's four activations broadcast (signed bytes) and adds four products
 * into each row's 32-bit sum: 16 outputs at once, no horizontal sums; the
 * +128 comes back out as 128·Σ qx per block, a property of the activations
 * alone. The AVX2 path takes the same bytes with vpmaddubsw (sign trick:
 * |qx| times qw with qx's sign, no overflow as both are within ±127), the
 * generic path plain integer loops.
 *
 * Threads: products go through nlp_pool_for (base/pool.h), blocks of
 * groups taken as threads become free, so that decoding does not depend on
 * OpenMP's wait policy.
 *
 * Not here: which layers are quantized (lib/model), fp32 and bf16 products
 * (gemm.h, gemv.h).
 */
#ifndef NLP_NN_Q8_H
#define NLP_NN_Q8_H

#include <stddef.h>
#include <stdint.h>

enum nlp_q8_isa {
    NLP_Q8_GENERIC = 0,
    NLP_Q8_AVX2 = 1,       /* AVX2 + FMA + F16C */
    NLP_Q8_AVX512VNNI = 2, /* AVX-512 F, BW, VNNI */
};

typedef struct nlp_q8 {
    int N, K;    /* W[N,K]: y = x·Wᵀ */
    int nb, ng;  /* blocks of 32 along K (K rounded up), groups of 16 rows (N rounded up) */
    uint8_t *q;  /* [ng][nb][8][16][4] bytes, q + 128 (64-byte aligned) */
    uint16_t *d; /* [ng][nb][16] fp16 scales */
    void *mem;   /* the block q lies in (what nlp_q8_free frees) */
} nlp_q8;

/* Quantizes W (N rows of K floats, rows ldw apart) into *w, which owns the
 * new memory (nlp_q8_free). Returns 0, NLP_ENOMEM, or NLP_EDATA for a
 * weight that is not finite (naming its row and column); *w is then empty. */
int nlp_q8_quantize(nlp_q8 *w, const float *W, int N, int K, int ldw);
void nlp_q8_free(nlp_q8 *w);

/* Bytes of the quantized matrix (weights and scales). */
size_t nlp_q8_bytes(const nlp_q8 *w);

/* Weight (n, k) as the products see it: q·d. */
float nlp_q8_weight(const nlp_q8 *w, int n, int k);

/* y[M, N] (rows ldy apart) = x[M, K]·Wᵀ (rows of x ldx apart) + bias (a row
 * of N, or NULL) + beta·y (beta 0: y not read; or 1). Runs on the pool's
 * threads (threads as nlp_pool_for; a small product on the caller alone).
 * A row of x whose block is not finite gives NaN in that row of y. Returns
 * 0, or NLP_ENOMEM with y untouched. */
int nlp_q8_gemm(int M, const float *x, int ldx, const nlp_q8 *w, const float *bias, float beta, float *y, int ldy);

/* The kernel set in use (from CPUID), and for tests and benchmarks a way to
 * choose a lower one (clamped to what the CPU has); returns the set now in
 * use. */
enum nlp_q8_isa nlp_q8_isa(void);
enum nlp_q8_isa nlp_q8_set_isa(enum nlp_q8_isa isa);
const char *nlp_q8_isa_name(enum nlp_q8_isa isa);

#endif
