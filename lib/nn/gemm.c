/*
 * gemm.c — matrix products through OpenBLAS, split over OpenMP threads. See gemm.h.
 */
#include "nn/gemm.h"
#include "base/err.h"

#include <cblas.h>
#include <cpuid.h>
#include <omp.h>
#include <pthread.h>

void openblas_set_num_threads(int num_threads);

static enum nlp_gemm_mode g_mode = NLP_GEMM_F32;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* OpenBLAS's OpenMP build implements openblas_set_num_threads with
 * omp_set_num_threads: keep the caller's OpenMP thread count. */
static void init_once(void)
{
    int nt = omp_get_max_threads();
    openblas_set_num_threads(1);
    omp_set_num_threads(nt);
}

void nlp_gemm_init(void) { pthread_once(&g_once, init_once); }

// --- CPU features

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

static void sgemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                   int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0 ? 0 : beta * C[(size_t)i * ldc + j];
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
                lda, B, ldb, beta, C, ldc);
}

/* Products below this many flops are not worth waking a second thread for. */
#define SPLIT_MIN_FLOPS (1.0 * (1 << 21))

void nlp_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    nlp_gemm_init();
    int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (nt <= 1 || nlp_gemm_flops(M, N, K) < SPLIT_MIN_FLOPS) {
        sgemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    /* one contiguous block of the longer side of C per thread, in multiples of 16 */
    int split_n = N >= M;
    int len = split_n ? N : M;
    int chunk = (len + nt - 1) / nt;
    chunk = (chunk + 15) & ~15;
    int parts = (len + chunk - 1) / chunk;
#pragma omp parallel for num_threads(parts) schedule(static, 1)
    for (int p = 0; p < parts; p++) {
        int o = p * chunk, n = len - o < chunk ? len - o : chunk;
        if (split_n)
            sgemm1(ta, tb, M, n, K, alpha, A, lda, tb ? B + (size_t)o * ldb : B + o, ldb, beta, C + o, ldc);
        else
            sgemm1(ta, tb, n, N, K, alpha, ta ? A + o : A + (size_t)o * lda, lda, B, ldb, beta,
                   C + (size_t)o * ldc, ldc);
    }
}
