/*
 * gemm.h — the one matrix product of libnlpipe, and what the CPU can do.
 *
 * Every matrix product of the neural engine goes through nlp_gemm(): row-major
 * C = alpha * op(A) op(B) + beta * C, as cblas_sgemm. fp32 products run on
 * nlpipe's own kernels (sgemm.h), chosen from what CPUID reports: AVX-512F,
 * AVX2 + FMA, or plain C. An opt-in bf16 path (nlp_gemm_set_mode(NLP_GEMM_BF16),
 * for the whole process) rounds op(A) and op(B) to bfloat16 (nearest even)
 * and multiplies them with the AVX-512 BF16 dot-product instruction
 * (vdpbf16ps) or AMX tiles, accumulating in fp32; it can be selected only
 * where the CPU reports avx512_bf16 at run time (nlp_cpu_has_avx512bf16()),
 * and products with M or N below 16 or K below 32 stay fp32 (in row-invariant
 * mode every product is bf16, see below). fp32 is the default and the only
 * mode the fixtures' parity tests use. NLPIPE_GEMM=openblas in the
 * environment sends fp32 products to OpenBLAS instead (for comparison): it
 * is not linked, but opened (dlopen) on the first product under that
 * setting, with OPENBLAS_NUM_THREADS=1, so that no tool starts OpenBLAS's
 * thread pool (linked, its pthread build starts one at load, whose workers
 * each allocate 128 MiB and, under ulimit -v, retry for ever and keep the
 * process from exiting).
 *
 * Threads. nlp_gemm() called outside an OpenMP parallel region runs on all
 * OpenMP threads: on our fp32 kernels each thread packs the blocks of op(B)
 * and takes blocks of 48 rows of C (96 for Aᵀ) as it becomes free
 * (nlp_sgemm_bias_threads), so that a core slowed by a neighbour (common on
 * shared VMs) does less of the work instead of holding the others up, and
 * so do the AVX-512 BF16 kernels (nlp_bgemm_bias_threads); AMX and OpenBLAS
 * products get one contiguous block of rows or columns (the longer side,
 * whole micro-tiles) per thread, as does nlp_gemm_packed.
 * Called inside a parallel region (attention heads) it runs on the calling
 * thread. Each element of C is computed by one thread with the whole
 * K sum, in the same order whatever the split (sgemm.h), so results do not
 * depend on the thread count. OpenBLAS's own threading is off (one thread
 * a call, nlp_gemm_init): its workers would busy-wait beside our OpenMP threads.
 *
 * Why our own kernels. Debian's OpenBLAS picks its kernels from its own guess
 * about the CPU, which the environment can override: this workplace's AMD
 * machines set OPENBLAS_CORETYPE=Haswell (older OpenBLAS builds fail on them),
 * and OpenBLAS then runs AVX2 kernels at half the AVX-512 rate. Ours are
 * chosen from CPUID alone, are row-invariant by construction (translation
 * needs it), and take packed weights for decoding. tools/gemm-compare times
 * the candidates on the products of the GPT small, GPT-2 124M and
 * encoder-decoder training steps, interleaved rep by rep. On a 2-core Intel
 * Xeon (Sapphire Rapids class, AVX-512 and AMX; FMA peak 463 GFLOP/s,
 * OpenBLAS 0.3.21 choosing its SkylakeX kernels), 2 threads, GFLOP/s over each
 * step's products, one run on 2026-11-24:
 *
 *                           GPT small   GPT-2 124M   encoder-decoder
 *   nlpipe (ours)             292.8       299.1          325.8
 *   OpenBLAS, our split       276.6       297.6          300.0
 *   OpenBLAS, its own pool    274.6       304.8          296.4
 *   oneDNN 2.7 dnnl_sgemm     265.8       326.6          316.2
 *   BLIS 0.9.0 (OpenMP)       193.3       203.4          208.3
 *   our bf16 kernel           175.9       187.2          183.7
 *
 * Our micro-kernel runs at 88% of one core's FMA peak on data in L1 (12×32
 * fp32 block, 24 zmm accumulators); what is lost on whole products is lost
 * to memory (packing Bᵀ, reading A). The bf16 row of that table predates
 * the bf16 kernels' rewrite (sgemm.h): on a 2-core AMD EPYC Zen 5 (AVX-512
 * BF16, no AMX), one thread, thread CPU time, best of 9, a shared machine,
 * the 12×32 vdpbf16ps kernel runs at 420 GFLOP/s on data in L1 (2.0× the
 * fp32 kernel's 208) and the GPT small step's 15 product shapes at 281
 * against fp32's 166 GFLOP/s (1.69×); what is lost is mostly the rounding of
 * the activations (A) on every call.
 *
 * Not here: anything but matrix products (layers live in their own modules).
 */
#ifndef NLP_NN_GEMM_H
#define NLP_NN_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "nn/sgemm.h"

enum nlp_gemm_mode {
    NLP_GEMM_F32 = 0,  /* fp32 everywhere (default) */
    NLP_GEMM_BF16 = 1, /* bf16 operands, fp32 accumulation and output (needs avx512_bf16) */
};

/* Row-major C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C; op(X) is X or
 * X^T when trans_x is nonzero. lda/ldb/ldc are row strides in floats (of the
 * stored matrices, as in cblas). With beta == 0, C is not read (NaNs in it do
 * not propagate). M, N or K == 0 is valid (C = beta*C, or untouched for M/N 0). */
void nlp_gemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);

/* nlp_gemm with a bias row: C = alpha·op(A)·op(B) + bias (bias[N] added to
 * every row; beta must be 0 when bias is set; NULL is nlp_gemm). The same
 * bits as C filled with the bias and beta = 1, without that pass over C. */
void nlp_gemm_bias(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, int ldb, const float *bias, float beta, float *C, int ldc);

/* C[M, pb->N] = alpha · A[M,K] · op(B) (+ bias) + beta · C with op(B) packed
 * by nlp_sgemm_pack_b (K = pb->K): the same bits as nlp_gemm_bias on the
 * unpacked weights (row-invariant), without packing them again. Threads as
 * nlp_gemm. */
void nlp_gemm_packed(int M, float alpha, const float *A, int lda, const nlp_sgemm_b *pb, const float *bias, float beta,
                     float *C, int ldc);

/* Selects the precision of later nlp_gemm calls on this process. Asking for
 * NLP_GEMM_BF16 on a CPU without avx512_bf16 keeps fp32 and returns
 * NLP_EINVAL with a message; otherwise returns 0. */
int nlp_gemm_set_mode(enum nlp_gemm_mode mode);
enum nlp_gemm_mode nlp_gemm_get_mode(void);

/* Row invariance: with on != 0, later products with op(A) = A go to the
 * gemv.h kernels whatever M (4 rows at a time, each output a sum in a fixed
 * order, K never split between threads), so a row of C comes out the same
 * bits whether it is computed alone or among others and on any number of
 * threads — what makes a translation independent of the batch it was
 * decoded in. A BLAS is not row-invariant: OpenBLAS's small-matrix kernels
 * and edge tiles sum in other orders as M changes. Off (the default), only
 * products of up to NLP_GEMV_MAX_M rows go there; larger ones are faster in
 * the BLAS. Returns the previous setting. */
int nlp_gemm_set_row_invariant(int on);

/* Which kernels products run on: "avx512", "avx2" or "generic" (ours,
 * sgemm.h), "openblas (CORE)" under NLPIPE_GEMM=openblas, or in bf16 mode
 * "bf16 on amx (small products: fp32 avx512)" (or avx512-bf16). For figures
 * that must say what they measured. */
const char *nlp_gemm_kernel_name(void);

/* One-time set-up (idempotent; nlp_gemm calls it itself): under
 * NLPIPE_GEMM=openblas, opens OpenBLAS with one thread per call. */
void nlp_gemm_init(void);


/* Flop count of one product, 2*M*N*K, as a double. */
static inline double nlp_gemm_flops(int M, int N, int K) { return 2.0 * M * (double)N * K; }

#endif
