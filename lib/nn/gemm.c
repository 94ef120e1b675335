/*
 * gemm.c — matrix products on our kernels (sgemm.h), split over OpenMP
 * threads; OpenBLAS only when NLPIPE_GEMM=openblas asks for it. See gemm.h.
 */
#include "nn/gemm.h"
#include "nn/gemv.h"
#include "nn/sgemm.h"
#include "base/err.h"
#include "nn/safetensors.h"

#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum nlp_gemm_mode g_mode = NLP_GEMM_F32;
static int g_row_invariant;

int nlp_gemm_set_row_invariant(int on)
{
    int old = g_row_invariant;
    g_row_invariant = on != 0;
    nlp_gemv_set_k_split(!g_row_invariant);
    return old;
}

// --- OpenBLAS, for comparison only

/* NLPIPE_GEMM=openblas sends fp32 products to OpenBLAS instead of our
 * kernels (for comparison; never in row-invariant mode). OpenBLAS is not
 * linked: it is opened here, on first use, and only then. Linked, its
 * pthread build starts a pool of worker threads when the program loads,
 * each of which allocates a buffer of 128 MiB, whether or not a product
 * ever goes to it; under a memory limit (ulimit -v) a worker retries that
 * allocation for ever and exit() waits for it, so a tool refusing a run
 * that does not fit never ended. Opened here with OPENBLAS_NUM_THREADS=1,
 * it starts no pool (our threads split the products). */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };
typedef void (*cblas_sgemm_fn)(int order, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                               const float *B, int ldb, float beta, float *C, int ldc);
static struct {
    cblas_sgemm_fn sgemm;
    char *(*corename)(void);
    void (*set_threads)(int);
} g_blas;
static int g_openblas; /* 1: NLPIPE_GEMM=openblas and OpenBLAS opened */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_once(void)
{
    const char *e = getenv("NLPIPE_GEMM");
    if (!e || strcmp(e, "openblas") != 0) return;
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libopenblas.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) return; /* not installed: our kernels (nlp_gemm_kernel_name says which ran) */
    *(void **)&g_blas.sgemm = dlsym(h, "cblas_sgemm");
    *(void **)&g_blas.corename = dlsym(h, "openblas_get_corename");
    *(void **)&g_blas.set_threads = dlsym(h, "openblas_set_num_threads");
    if (!g_blas.sgemm) return;
    /* OpenBLAS's OpenMP build implements openblas_set_num_threads with
     * omp_set_num_threads: keep the caller's OpenMP thread count */
    if (g_blas.set_threads) {
        int nt = omp_get_max_threads();
        g_blas.set_threads(1);
        omp_set_num_threads(nt);
    }
    g_openblas = 1;
}

void nlp_gemm_init(void) { pthread_once(&g_once, init_once); }

static int use_openblas(void)
{
    nlp_gemm_init();
    return g_openblas;
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

/* One thread's product without our kernels' scratch: OpenBLAS's (under
 * NLPIPE_GEMM=openblas), else a plain loop (no memory for a block of packed
 * B: rare, slow, but the product is done). */
static void other_sgemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                         int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0 : beta * C[(size_t)i * ldc + j];
        return;
    }
    if (use_openblas()) {
        g_blas.sgemm(CBLAS_ROW_MAJOR, ta ? CBLAS_TRANS : CBLAS_NO_TRANS, tb ? CBLAS_TRANS : CBLAS_NO_TRANS, M, N, K,
                     alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = 0;
            for (int k = 0; k < K; k++)
                acc += (ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
                       (tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
            float *c = &C[(size_t)i * ldc + j];
            *c = beta == 0 ? alpha * acc : alpha * acc + beta * *c;
        }
}

/* Do fp32 products run on our kernels (not OpenBLAS, which
 * NLPIPE_GEMM=openblas asks for, except in row-invariant mode)? */
static int own_fp32(void) { return !use_openblas() || g_row_invariant; }

/* Does a product of this shape go to the bf16 kernels? Small ones stay
 * fp32 (not worth the rounding), except in row-invariant mode, where every
 * product is bf16: which kernel a product takes must not depend on the
 * rows beside it, nor on keys padded to the longest sentence of a batch
 * (the bf16 kernels are row-invariant by construction too, sgemm.h). */
static int bf16_product(int M, int N, int K)
{
    return g_mode == NLP_GEMM_BF16 && (g_row_invariant || (M >= 16 && N >= 16 && K >= 32));
}

/* C rows [0, M) of width N set to the bias row (for paths without a bias
 * epilogue: they then add with beta = 1, the same bits). */
static void fill_bias(int M, int N, const float *bias, float *C, int ldc)
{
    for (int i = 0; i < M; i++) memcpy(C + (size_t)i * ldc, bias, (size_t)N * sizeof *C);
}

/* One thread's fp32 product: our kernels (sgemm.h), or OpenBLAS when asked
 * for, or when there is no memory for a block of packed B (1 MiB). */
static void sgemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                   const float *bias, float beta, float *C, int ldc)
{
    if (own_fp32() && nlp_sgemm_bias(ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, beta, C, ldc) == 0)
        return;
    if (bias) fill_bias(M, N, bias, C, ldc), beta = 1;
    other_sgemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

const char *nlp_gemm_kernel_name(void)
{
    static char name[64];
    if (use_openblas()) {
        snprintf(name, sizeof name, "openblas (%s)", g_blas.corename ? g_blas.corename() : "?");
        return name;
    }
    if (g_mode == NLP_GEMM_BF16) {
        snprintf(name, sizeof name, "bf16 on %s (small products: fp32 %s)",
                 nlp_cpu_has_amx_bf16() ? "amx" : "avx512-bf16", nlp_sgemm_isa_name(nlp_sgemm_isa()));
        return name;
    }
    return nlp_sgemm_isa_name(nlp_sgemm_isa());
}

/* Products below this many flops are not worth waking a second thread for. */
#define SPLIT_MIN_FLOPS (1.0 * (1 << 21))

/* One thread's share: bf16 when selected and the product is big enough to pay for packing. */
static void gemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                  const float *bias, float beta, float *C, int ldc)
{
    if (bf16_product(M, N, K) && nlp_bgemm_bias(ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, beta, C, ldc) == 0)
        return; /* else nothing written: fp32 */
    sgemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, beta, C, ldc);
}

void nlp_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    nlp_gemm_bias(ta, tb, M, N, K, alpha, A, lda, B, ldb, NULL, beta, C, ldc);
}

void nlp_gemm_bias(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                   const float *bias, float beta, float *C, int ldc)
{
    nlp_gemm_init();
    if (M <= 0 || N <= 0) return;
    /* a few rows (incremental decoding): stream B once instead of packing it
     * (gemv.h); not row-invariant, so not in that mode */
    if (!g_row_invariant && M <= NLP_GEMV_MAX_M && !ta && alpha != 0.0f && (beta == 0.0f || beta == 1.0f) && K > 0) {
        if (bias) fill_bias(M, N, bias, C, ldc), beta = 1;
        nlp_gemv(M, N, K, alpha, A, lda, B, ldb, tb, 0, beta, C, ldc);
        return;
    }
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (nt <= 1 || nlp_gemm_flops(M, N, K) < SPLIT_MIN_FLOPS) {
        gemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, beta, C, ldc);
        return;
    }
    /* fp32 on our kernels, enough rows: blocks of rows taken by the threads
     * as they become free (sgemm.h). On this workplace's 2-core VMs one core often
     * runs at two thirds of the other's speed (a neighbour on it), and a
     * fixed half each waits for the slower: the step's products, 12 shapes
     * of the GPT small step, 2 threads, alternating, 147.5 -> 187.0 GFLOP/s */
    const int bf = bf16_product(M, N, K), ours = !bf && own_fp32();
    if (ours && nlp_sgemm_threads_suits(ta, M, nt) &&
        nlp_sgemm_bias_threads(nt, ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, beta, C, ldc) == 0)
        return;
    if (bf && !nlp_cpu_has_amx_bf16() && nlp_sgemm_threads_suits(ta, M, nt) &&
        nlp_bgemm_bias_threads(nt, ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, beta, C, ldc) == 0)
        return;
    /* else blocks of the longer side of C, in multiples of 32 (a whole
     * number of micro-tiles), each packing only its share of op(B); each
     * element is still computed by one thread with the whole K sum. One
     * block a thread, or on our fp32 kernels for a wide C (few rows: the
     * output layer of a small batch) four a thread where that leaves at
     * least 256 columns in each, taken as threads become free */
    const int split_n = N >= M, len = split_n ? N : M;
    int chunk = (len + nt - 1) / nt;
    if (split_n && ours) {
        const int quarter = (len + 4 * nt - 1) / (4 * nt);
        if (quarter >= 256) chunk = quarter; /* else one a thread: 3 blocks for 2 threads balance worse */
    }
    chunk = (chunk + 31) & ~31;
    const int parts = (len + chunk - 1) / chunk;
#pragma omp parallel for num_threads(parts < nt ? parts : nt) schedule(dynamic, 1)
    for (int p = 0; p < parts; p++) {
        int o = p * chunk, n = len - o < chunk ? len - o : chunk;
        if (split_n)
            gemm1(ta, tb, M, n, K, alpha, A, lda, tb ? B + (size_t)o * ldb : B + o, ldb, bias ? bias + o : NULL, beta,
                  C + o, ldc);
        else
            gemm1(ta, tb, n, N, K, alpha, ta ? A + o : A + (size_t)o * lda, lda, B, ldb, bias, beta,
                  C + (size_t)o * ldc, ldc);
    }
}

void nlp_gemm_packed(int M, float alpha, const float *A, int lda, const nlp_sgemm_b *pb, const float *bias, float beta,
                     float *C, int ldc)
{
    const int N = pb->N, nr = pb->nr;
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (nt <= 1 || nlp_gemm_flops(M, N, pb->K) < SPLIT_MIN_FLOPS) {
        nlp_sgemm_packed(0, M, 0, N, alpha, A, lda, pb, bias, beta, C, ldc);
        return;
    }
    /* as nlp_gemm: the longer side, whole micro-tiles (columns in panels of nr) */
    const int split_n = N >= M, len = split_n ? N : M, unit = split_n ? nr : 32;
    int chunk = (len + nt - 1) / nt;
    chunk = (chunk + unit - 1) / unit * unit;
    const int parts = (len + chunk - 1) / chunk;
#pragma omp parallel for num_threads(parts) schedule(static, 1)
    for (int p = 0; p < parts; p++) {
        const int o = p * chunk, n = len - o < chunk ? len - o : chunk;
        if (split_n) nlp_sgemm_packed(0, M, o, o + n, alpha, A, lda, pb, bias, beta, C, ldc);
        else nlp_sgemm_packed(0, n, 0, N, alpha, A + (size_t)o * lda, lda, pb, bias, beta, C + (size_t)o * ldc, ldc);
    }
}
