/*
 * gemm.h — the one matrix product of libnlpipe, and what the CPU can do.
 *
 * Every matrix product of the neural engine goes through nlp_gemm(): row-major
 * C = alpha * op(A) op(B) + beta * C, as cblas_sgemm. The fp32 path is OpenBLAS
 * cblas_sgemm. An opt-in bf16 path (nlp_gemm_set_mode(NLP_GEMM_BF16)) rounds A
 * and B to bfloat16 and multiplies them with the AVX-512 BF16 dot-product
 * instruction (vdpbf16ps), accumulating in fp32; it is used only where the CPU
 * reports avx512_bf16 at run time (nlp_cpu_has_avx512bf16()), and falls back to
 * fp32 otherwise. fp32 is the default and the only mode the parity tests use.
 *
 * Threads. nlp_gemm() called outside an OpenMP parallel region splits C into
 * one contiguous block of rows or columns per OpenMP thread, and each thread
 * calls the single-threaded OpenBLAS kernel on its block; called inside a
 * parallel region it runs on the calling thread. OpenBLAS's own thread pool is
 * switched off (nlp_gemm_init sets it to one thread): the Debian pthread build
 * of OpenBLAS busy-waits in its workers, which collapses on a shared machine
 * and oversubscribes the cores next to our OpenMP threads, while OpenMP with
 * OMP_WAIT_POLICY=PASSIVE sleeps. Each element of C is computed by exactly one
 * thread with the whole K sum, so results are identical from run to run for a
 * given thread count.
 *
 * Why OpenBLAS: measured on the shapes of our models (tools/gemmbench, AMD
 * Zen 4, 2 threads, see the table in gemm.c), OpenBLAS 0.3.21 (Debian,
 * Cooperlake kernels) was the fastest fp32 library: BLIS 0.9.0 (Debian
 * libblis-dev) and oneDNN 2.6.3 (libdnnl-dev) were slower on the skinny
 * products of small batches, and neither beats it on the large squares. For bf16
 * neither Debian's OpenBLAS (built without sbgemm) nor a library call was
 * needed: the bf16 kernel here packs both operands and runs vdpbf16ps directly.
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

/* One-time set-up (idempotent; nlp_gemm calls it itself): switches OpenBLAS to
 * one thread per call. */
void nlp_gemm_init(void);

/* CPU features, from CPUID and XGETBV (the OS must save the AVX-512 state). */
int nlp_cpu_has_avx512f(void);
int nlp_cpu_has_avx512bf16(void);

/* Flop count of one product, 2*M*N*K, as a double. */
static inline double nlp_gemm_flops(int M, int N, int K) { return 2.0 * M * (double)N * K; }

#endif
