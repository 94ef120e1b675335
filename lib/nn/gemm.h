/*
 * gemm.h — the one matrix product of libnlpipe, and what the CPU can do.
 *
 * Every matrix product of the neural engine goes through nlp_gemm(): row-major
 * C = alpha * op(A) op(B) + beta * C, as cblas_sgemm. The fp32 path is OpenBLAS
 * cblas_sgemm. An opt-in bf16 path (nlp_gemm_set_mode(NLP_GEMM_BF16), for the
 * whole process) rounds op(A) and op(B) to bfloat16 (nearest even) and
 * multiplies them with the AVX-512 BF16 dot-product instruction (vdpbf16ps),
 * accumulating in fp32; it can be selected only where the CPU reports
 * avx512_bf16 at run time (nlp_cpu_has_avx512bf16()), and products with M or N
 * below 16 or K below 32 stay fp32. fp32 is the default and the only mode the
 * parity tests use.
 *
 * Threads. nlp_gemm() called outside an OpenMP parallel region splits C into
 * one contiguous block of rows or columns (the longer side) per OpenMP thread,
 * and each thread calls the single-threaded OpenBLAS kernel on its block;
 * called inside a parallel region (attention heads) it runs on the calling
 * thread. OpenBLAS's own threading is switched off (nlp_gemm_init): the
 * workers of Debian's default pthread build busy-wait, which collapses on a
 * shared machine and oversubscribes the cores beside our OpenMP threads,
 * while OpenMP with OMP_WAIT_POLICY=PASSIVE sleeps. The OpenMP build of
 * OpenBLAS (libopenblas0-openmp) would compose with our regions, but it was
 * not faster and implements openblas_set_num_threads() with
 * omp_set_num_threads(), so nlp_gemm_init restores OpenMP's count after it.
 * Each element of C is computed by one thread with the whole K sum, so results
 * are identical from run to run for a given thread count.
 *
 * Why OpenBLAS. tools/gemm-compare times the candidates on the products of one
 * GPT training step (forward, dgrad and wgrad shapes of GPT small and GPT-2
 * 124M), interleaved rep by rep (OpenBLAS's own pool apart: its workers spin
 * after each call and slow whatever runs next). On the development machine
 * (AMD EPYC Zen 4, 2 vCPUs shared with other jobs; FMA peak 223 GFLOP/s,
 * OpenBLAS sgemm 180 on 2048² squares), 2 threads, GFLOP/s over the step's
 * products, range of four runs (two with each OpenBLAS build):
 *
 *                                     GPT small      GPT-2 124M
 *   OpenBLAS 0.3.21, our split        178 – 192      150 – 180
 *   OpenBLAS, its own thread pool     165 – 187      162 – 185
 *   oneDNN 2.6.3 dnnl_sgemm           185 – 198      155 – 191
 *   BLIS 0.9.0 (OpenMP)               160 – 189       81 – 150
 *   our bf16 kernel (opt-in)          258 – 297      257 – 303
 *
 * Single shapes vary by up to 2× between runs on this shared machine; the
 * step figures much less. BLIS falls behind on the skinny products of small
 * batches (GPT-2 124M at 256 tokens). oneDNN's sgemm is 3–7% ahead of
 * OpenBLAS here, which would be 2–5% of a training step: not worth a second
 * BLAS dependency (libdnnl) for fp32. OpenBLAS's own pool is within noise of
 * our split but spins. For bf16, Debian's OpenBLAS has no sbgemm and oneDNN
 * 2.6 offers bf16 only through its matmul primitive (a primitive per shape),
 * so the bf16 kernel is ours: 1.45–1.8× our fp32 products, limited by the
 * rounding and packing of both operands on every call (the micro-kernel
 * itself runs at the bf16 peak, 64 flops per cycle per core).
 *
 * Not here: anything but matrix products (layers live in their own modules).
 */
#ifndef NLP_NN_GEMM_H
#define NLP_NN_GEMM_H

#include <stddef.h>
#include <stdint.h>

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

/* One-time set-up (idempotent; nlp_gemm calls it itself): switches OpenBLAS to
 * one thread per call. */
void nlp_gemm_init(void);

/* CPU features, from CPUID and XGETBV (the OS must save the AVX-512 state). */
int nlp_cpu_has_avx512f(void);
int nlp_cpu_has_avx512bf16(void);

/* Flop count of one product, 2*M*N*K, as a double. */
static inline double nlp_gemm_flops(int M, int N, int K) { return 2.0 * M * (double)N * K; }

#endif
