/*
 * sgemm.h — nlpipe's own fp32 matrix-product kernels, chosen from what the
 * CPU reports (CPUID), not from what a BLAS guesses or is told.
 *
 * BLIS-style blocking around a register-blocked micro-kernel that computes an
 * MR×NR block of C with fused multiply-adds:
 *
 *   AVX-512F        MR 12, NR 32 (24 zmm accumulators, two zmm of B per k)
 *   AVX2 + FMA      MR 6, NR 16 (12 ymm accumulators)
 *   anything else   MR 4, NR 16 in plain C (no fused multiply-add)
 *
 * op(B) is packed into panels of NR columns ([kc][NR] floats each) per block
 * of KC = 256 rows of K. op(A) = A is not packed: the micro-kernel
 * broadcasts its elements straight from MR row streams, since an MR×KC slice
 * of A is read once per NR columns from L1 anyway and packing it would cost
 * as much as the product on our K = 256 shapes; op(A) = Aᵀ is copied into
 * [kc][MR] micro-panels (contiguous copies), so that a wide Aᵀ (the output
 * layer's gradient) does not cost a page walk per k.
 *
 * Every element of C is the same chain of operations whatever the shape it
 * is computed in: for each block of KC along K, a fused multiply-add chain in
 * k order from zero, then C = alpha·acc (+ beta·C on the first block, + C on
 * later ones). Neither M, N, the position of the element in its tile, nor the
 * thread that computes it changes that chain, so a row of C comes out with
 * the same bits alone or among others and on any number of threads: the
 * kernels are row-invariant by construction, which is what makes a
 * translation independent of its batch (gemm.h). The chain does depend on the
 * ISA path (vector FMA vs plain C), which is fixed for a given CPU.
 *
 * bf16 (nlp_bgemm*): the same blocking with a 12×32 vdpbf16ps micro-kernel
 * over k-pairs (two adjacent k in one 32-bit word): op(A) = A converted to a
 * bf16 copy of each block of rows, whose pairs the kernel broadcasts from
 * twelve row streams (no transposition), op(A) = Aᵀ laid out pair-major,
 * op(B) packed into [k-pairs][32] panels; every element again the same
 * chain whatever the split (row-invariant), on AMX tiles where the CPU has
 * them.
 *
 * Not here: threads (gemm.c splits C between them and calls these on each
 * part), few-row streaming products (gemv.h), int8 (q8.h).
 */
#ifndef NLP_NN_SGEMM_H
#define NLP_NN_SGEMM_H

#include <stddef.h>

#define NLP_SGEMM_KC 256

enum nlp_sgemm_isa {
    NLP_SGEMM_GENERIC = 0,
    NLP_SGEMM_AVX2 = 1,
    NLP_SGEMM_AVX512 = 2,
};

/* The kernel set this process uses (decided once from CPUID and XGETBV). */
enum nlp_sgemm_isa nlp_sgemm_isa(void);
const char *nlp_sgemm_isa_name(enum nlp_sgemm_isa isa);

/* For tests and benchmarks: use `isa` from now on (clamped to what the CPU
 * can run). Returns the kernel set now in use. */
enum nlp_sgemm_isa nlp_sgemm_set_isa(enum nlp_sgemm_isa isa);

/* CPU features, from CPUID and XGETBV (the OS must save the AVX-512 state). */
int nlp_cpu_has_avx512f(void);
int nlp_cpu_has_avx512bf16(void);
/* AMX with bf16 tiles (Sapphire Rapids and later), usable by this process
 * (asked of Linux once); NLPIPE_BF16=avx512 in the environment says no, to
 * compare the two bf16 kernels. */
int nlp_cpu_has_amx_bf16(void);

/* One thread: row-major C[M,N] = alpha·op(A)[M,K]·op(B)[K,N] + beta·C, as
 * cblas_sgemm. beta == 0 does not read C. M, N or K == 0 is valid. Needs
 * scratch for one block of packed B (at most 1 MiB, per thread, kept between
 * calls); returns 0, or NLP_ENOMEM with nothing written. */
int nlp_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc);

/* One thread, bf16: the same product with op(A) and op(B) rounded to
 * bfloat16 (nearest even) while laid out and multiplied with fp32
 * accumulation: on AMX tiles (32×32 blocks, tdpbf16ps) where
 * nlp_cpu_has_amx_bf16(), else with the AVX-512 BF16 dot-product
 * instruction (12×32 micro-kernel, vdpbf16ps). Only where
 * nlp_cpu_has_avx512bf16(). Scratch per thread, kept between calls, as
 * nlp_sgemm's. Every element is the same chain of operations whatever the
 * split of C (per block of 256 along K: pairs of products summed in k order
 * from zero, then added to C), so results do not depend on the thread
 * count. Returns 0, or NLP_ENOMEM with nothing written. */
int nlp_bgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
              int ldb, float beta, float *C, int ldc);
/* With a bias row, as nlp_sgemm_bias. */
int nlp_bgemm_bias(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, int ldb, const float *bias, float beta, float *C, int ldc);
/* On nt OpenMP threads taking blocks of rows as they become free, as
 * nlp_sgemm_bias_threads (AMX: one thread). */
int nlp_bgemm_bias_threads(int nt, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                           int lda, const float *B, int ldb, const float *bias, float beta, float *C, int ldc);

/* The same with a bias row: C = alpha·op(A)·op(B) + bias (bias[N] added to
 * every row; beta must be 0 when bias is set, and bias NULL is nlp_sgemm):
 * the same bits as C filled with the bias and beta = 1, one pass less. */
int nlp_sgemm_bias(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, int ldb, const float *bias, float beta, float *C, int ldc);

/* The same product on nt OpenMP threads (called outside a parallel
 * region): each thread packs the blocks of op(B) itself and takes blocks of
 * rows of C as it becomes free, so that a core slowed by a neighbour does
 * less of the work. The same bits as nlp_sgemm_bias. Returns 0, or
 * NLP_ENOMEM with nothing written. */
/* Whether nlp_sgemm_bias_threads suits a product of M rows on nt threads:
 * at least 8 blocks of rows a thread, so that the blocks balance and each
 * thread's packing of all of op(B) is a small part of its work (a few
 * hundred rows: one part of C per thread, each packing its own share of
 * op(B), costs less). */
int nlp_sgemm_threads_suits(int trans_a, int M, int nt);

int nlp_sgemm_bias_threads(int nt, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, const float *bias, float beta, float *C, int ldc);

/* op(B)[K,N] packed once for many products (inference weights). The packed
 * form belongs to the kernel set current when it was made. */
typedef struct nlp_sgemm_b {
    int K, N, nr, isa;
    float *p;
} nlp_sgemm_b;

/* Packs op(B) (B itself, or Bᵀ when trans_b) into *pb, which owns the new
 * memory (nlp_sgemm_b_free). Returns 0 or NLP_ENOMEM. */
int nlp_sgemm_pack_b(nlp_sgemm_b *pb, int trans_b, int K, int N, const float *B, int ldb);
void nlp_sgemm_b_free(nlp_sgemm_b *pb);

/* One thread: columns [n0, n1) of C[M, pb->N] = alpha·op(A)·op(B) + beta·C
 * (+ bias[n0..n1) in every row when bias is set, beta 0), with op(B) packed
 * by nlp_sgemm_pack_b; n0 must be a multiple of pb->nr. The same bits as
 * nlp_sgemm_bias on the unpacked B. */
void nlp_sgemm_packed(int trans_a, int M, int n0, int n1, float alpha, const float *A, int lda, const nlp_sgemm_b *pb,
                      const float *bias, float beta, float *C, int ldc);

#endif
