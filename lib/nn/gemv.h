/*
 * gemv.h — products with few rows: y[M,N] = x[M,K]·op(W) for M up to a few
 * dozen, the shape of incremental decoding (one new token per row), where
 * the time goes into reading W once from memory, not into arithmetic.
 *
 * A BLAS gemm packs W into its blocked layout on every call, which at M = 1
 * reads and writes W twice more than the product needs; these kernels
 * stream W once per 4 rows of x, in the order it lies in memory:
 *
 *   W[K,N] (y = x·W, GPT-2 Conv1D): the K rows of W are split into one
 *     contiguous range per thread; each thread accumulates a partial y over
 *     its rows, and the partial sums are added in thread order.
 *   W[N,K] (y = x·Wᵀ, nn.Linear and the tied output embedding): the N rows
 *     are split per thread; each output is one dot product.
 *
 * W may be fp32 or bfloat16 (the upper 16 bits of an fp32, widened by a
 * shift: no special instruction needed), so bf16 weights halve the bytes a
 * token reads. Arithmetic is fp32 (16-lane GCC vectors: AVX-512 where the
 * build targets it, two AVX2 halves otherwise). Results depend on the thread
 * count (the K split of W[K,N]) but not on anything else.
 *
 * Not here: large products (gemm.h), the choice between the two (the caller:
 * nlp_gemm sends M <= NLP_GEMV_MAX_M here).
 */
#ifndef NLP_NN_GEMV_H
#define NLP_NN_GEMV_H

#include <stddef.h>
#include <stdint.h>

#define NLP_GEMV_MAX_M 4

/* y[M,N] (row stride ldy) = beta·y + alpha · x[M,K] (row stride ldx) · op(W), where
 * op(W) = W[K,N] (trans_w = 0) or W[N,K]ᵀ (trans_w = 1), W's rows ldw
 * elements apart, fp32 (w_bf16 = 0) or bfloat16 stored as uint16 (1).
 * beta is 0 (y not read) or 1. Threads: OpenMP outside a parallel region. */
void nlp_gemv(int M, int N, int K, float alpha, const float *x, int ldx, const void *W, int ldw, int trans_w,
              int w_bf16, float beta, float *y, int ldy);

/* With on = 0, W[K,N] products are never split between threads (their
 * partial sums would depend on the thread count); 1 (the default) allows it. */
void nlp_gemv_set_k_split(int on);

/* Rounds n floats to bfloat16 (nearest even; NaN stays NaN). */
void nlp_to_bf16(const float *src, uint16_t *dst, size_t n);

#endif
