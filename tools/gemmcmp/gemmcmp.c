/*
 * gemmcmp — compares matrix-product libraries on the products of one
 * training step (the shapes of nlp_gemm calls for GPT small, GPT-2 124M and
 * the encoder-decoder), for the choice recorded in lib/nn/gemm.h. Built and
 * run by tools/gemm-compare (it needs libblis-dev and libdnnl-dev, which
 * nlpipe itself does not).
 *
 * Candidates, all fp32, THREADS threads:
 *   nlpipe          nlp_gemm: our kernels (sgemm.h), C split over OpenMP threads
 *   openblas        OpenBLAS single-threaded kernels, C split the same way
 *                   (nlp_gemm under NLPIPE_GEMM=openblas)
 *   openblas-own    cblas_sgemm with OpenBLAS's own (pthread) thread pool
 *   blis            bli_sgemm, BLIS's OpenMP threading
 *   onednn          dnnl_sgemm (row-major), oneDNN's OpenMP threading
 *   nlpipe-bf16     nlp_gemm in NLP_GEMM_BF16 mode (operands rounded to bf16
 *                   while packed; shown only where the CPU has AVX-512 BF16)
 * With LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp (Debian
 * libopenblas0-openmp), "openblas-own" is OpenBLAS's OpenMP build instead.
 * Each shape: 2 warm-up calls each, then REPS rounds calling every candidate
 * once (interleaved; OpenBLAS's own pool separately, see below), the median
 * per candidate; per workload the step
 * figure is Σ count·flops / Σ count·time over its shapes.
 */
#include "nn/gemm.h"

#include <blis.h>
#include <cblas.h>
#include <dnnl.h>
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void openblas_set_num_threads(int);
int openblas_get_parallel(void);
char *openblas_get_corename(void);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct shape {
    const char *what;
    int M, N, K, ta, tb, count;
};

/* GPT small: N=B·T=2048, C=256, F=1024, V=8192, 4 layers */
static const struct shape SMALL[] = {
    {"qkv", 2048, 768, 256, 0, 0, 4},     {"attn.proj", 2048, 256, 256, 0, 0, 4},
    {"fc", 2048, 1024, 256, 0, 0, 4},     {"fc.proj", 2048, 256, 1024, 0, 0, 4},
    {"lm_head", 2048, 8192, 256, 0, 1, 1}, {"dx qkv", 2048, 256, 768, 0, 1, 4},
    {"dx proj", 2048, 256, 256, 0, 1, 4}, {"dx fc", 2048, 256, 1024, 0, 1, 4},
    {"dx fc.proj", 2048, 1024, 256, 0, 1, 4}, {"dh lm", 2048, 256, 8192, 0, 0, 1},
    {"dW qkv", 256, 768, 2048, 1, 0, 4},  {"dW proj", 256, 256, 2048, 1, 0, 4},
    {"dW fc", 256, 1024, 2048, 1, 0, 4},  {"dW fc.proj", 1024, 256, 2048, 1, 0, 4},
    {"dW lm", 8192, 256, 2048, 1, 0, 1},  {0},
};
/* encoder-decoder small: N=B·T=2048 (32 × 64, source and target), C=256,
 * F=1024, V=8000, 3+3 layers: q|k|v as one product, cross-attention k|v as one */
static const struct shape ENCDEC[] = {
    {"qkv", 2048, 768, 256, 0, 1, 6},     {"q (cross)", 2048, 256, 256, 0, 1, 3},
    {"kv (cross)", 2048, 512, 256, 0, 1, 3}, {"out", 2048, 256, 256, 0, 1, 9},
    {"fc1", 2048, 1024, 256, 0, 1, 6},    {"fc2", 2048, 256, 1024, 0, 1, 6},
    {"logits", 2048, 8000, 256, 0, 1, 1}, {"dx qkv", 2048, 256, 768, 0, 0, 6},
    {"dx kv", 2048, 256, 512, 0, 0, 3},   {"dx q/out", 2048, 256, 256, 0, 0, 12},
    {"dx fc1", 2048, 256, 1024, 0, 0, 6}, {"dx fc2", 2048, 1024, 256, 0, 0, 6},
    {"dh logits", 2048, 256, 8000, 0, 0, 1}, {"dW qkv", 768, 256, 2048, 1, 0, 6},
    {"dW kv", 512, 256, 2048, 1, 0, 3},   {"dW q/out", 256, 256, 2048, 1, 0, 12},
    {"dW fc1", 1024, 256, 2048, 1, 0, 6}, {"dW fc2", 256, 1024, 2048, 1, 0, 6},
    {"dW logits", 8000, 256, 2048, 1, 0, 1}, {0},
};
/* GPT-2 124M: N=B·T=256, C=768, F=3072, V=50257, 12 layers */
static const struct shape G124[] = {
    {"qkv", 256, 2304, 768, 0, 0, 12},    {"attn.proj", 256, 768, 768, 0, 0, 12},
    {"fc", 256, 3072, 768, 0, 0, 12},     {"fc.proj", 256, 768, 3072, 0, 0, 12},
    {"lm_head", 256, 50257, 768, 0, 1, 1}, {"dx qkv", 256, 768, 2304, 0, 1, 12},
    {"dx proj", 256, 768, 768, 0, 1, 12}, {"dx fc", 256, 768, 3072, 0, 1, 12},
    {"dx fc.proj", 256, 3072, 768, 0, 1, 12}, {"dh lm", 256, 768, 50257, 0, 0, 1},
    {"dW qkv", 768, 2304, 256, 1, 0, 12}, {"dW proj", 768, 768, 256, 1, 0, 12},
    {"dW fc", 768, 3072, 256, 1, 0, 12},  {"dW fc.proj", 3072, 768, 256, 1, 0, 12},
    {"dW lm", 50257, 768, 256, 1, 0, 1},  {0},
};

enum { SPLIT, SPLIT_BLAS, OWN, BLIS, DNNL, BF16, NLIB };
static const char *LIB[NLIB] = {"nlpipe", "openblas", "openblas-own", "blis", "onednn", "nlpipe-bf16"};

/* C split into one block of rows or columns (the longer side, as nlp_gemm)
 * per thread, single-threaded OpenBLAS on each. */
static void split(const struct shape *s, const float *A, int lda, const float *B, int ldb, float *C)
{
    int by_m = s->M > s->N;
    int nt = omp_get_max_threads(), len = by_m ? s->M : s->N, chunk = ((len + nt - 1) / nt + 31) & ~31;
#pragma omp parallel for schedule(static, 1)
    for (int p = 0; p < nt; p++) {
        int o = p * chunk, n = len - o < chunk ? len - o : chunk;
        if (n <= 0) continue;
        enum CBLAS_TRANSPOSE ta = s->ta ? CblasTrans : CblasNoTrans, tb = s->tb ? CblasTrans : CblasNoTrans;
        if (by_m)
            cblas_sgemm(CblasRowMajor, ta, tb, n, s->N, s->K, 1, s->ta ? A + o : A + (size_t)o * lda, lda, B, ldb, 0,
                        C + (size_t)o * s->N, s->N);
        else
            cblas_sgemm(CblasRowMajor, ta, tb, s->M, n, s->K, 1, A, lda, s->tb ? B + (size_t)o * ldb : B + o, ldb, 0,
                        C + o, s->N);
    }
}

/* OpenBLAS's OpenMP build implements openblas_set_num_threads with
 * omp_set_num_threads: restore the OpenMP count after every change. */
static void blas_threads(int n, int threads)
{
    openblas_set_num_threads(n);
    omp_set_num_threads(threads);
}

static void run(int lib, const struct shape *s, const float *A, const float *B, float *C)
{
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    switch (lib) {
    case SPLIT: nlp_gemm(s->ta, s->tb, s->M, s->N, s->K, 1, A, lda, B, ldb, 0, C, s->N); break;
    case SPLIT_BLAS: split(s, A, lda, B, ldb, C); break;
    case OWN:
        cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, s->M, s->N,
                    s->K, 1, A, lda, B, ldb, 0, C, s->N);
        break;
    case BLIS: {
        float one = 1, zero = 0;
        /* row-major: element (i,j) at i·ld + j, i.e. row stride ld, column stride 1 */
        bli_sgemm(s->ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s->tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s->M, s->N,
                  s->K, &one, (float *)A, lda, 1, (float *)B, ldb, 1, &zero, C, s->N, 1);
        break;
    }
    case DNNL:
        dnnl_sgemm(s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->M, s->N, s->K, 1, A, lda, B, ldb, 0, C, s->N);
        break;
    case BF16:
        nlp_gemm_set_mode(NLP_GEMM_BF16);
        nlp_gemm(s->ta, s->tb, s->M, s->N, s->K, 1, A, lda, B, ldb, 0, C, s->N);
        nlp_gemm_set_mode(NLP_GEMM_F32);
        break;
    }
}

/* A positional integer in [lo, hi], or exit 2 (a bare conversion took
 * "abc" for 0). */
static int int_arg(const char *what, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "gemmcmp: %s '%s' is not an integer from %ld to %ld\n", what, s, lo, hi);
        exit(2);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? int_arg("THREADS", argv[1], 1, 4096) : 2;
    int reps = argc > 2 ? int_arg("REPS", argv[2], 1, 1000000) : 5;
    omp_set_num_threads(threads);
    nlp_gemm_init();
    bli_thread_set_num_threads(threads);
    const struct shape *sets[3] = {SMALL, G124, ENCDEC};
    const char *names[3] = {"gpt_small", "gpt2_124m", "encdec"};
    int par = openblas_get_parallel();
    printf("threads %d, reps %d, our kernels: %s, OpenBLAS %s build, core %s; GFLOP/s per product and for the step's "
           "products\n",
           threads, reps, nlp_gemm_kernel_name(), par == 2 ? "OpenMP" : par == 1 ? "pthread" : "serial",
           openblas_get_corename());
    for (int w = 0; w < 3; w++) {
        double total[NLIB] = {0}, flops = 0;
        printf("\n%-12s %6s %6s %6s", names[w], "M", "N", "K");
        for (int l = 0; l < NLIB; l++) printf(" %11s", LIB[l]);
        printf("\n");
        for (const struct shape *s = sets[w]; s->what; s++) {
            size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
            float *A = malloc(na * 4), *B = malloc(nb * 4), *C = malloc(nc * 4);
            for (size_t i = 0; i < na; i++) A[i] = (float)((i * 7) % 13) * 0.01f;
            for (size_t i = 0; i < nb; i++) B[i] = (float)((i * 5) % 11) * 0.01f;
            double f = nlp_gemm_flops(s->M, s->N, s->K);
            flops += f * s->count;
            printf("%-12s %6d %6d %6d", s->what, s->M, s->N, s->K);
            /* candidates interleaved rep by rep, so that a busy moment on a
             * shared machine hits them all alike; OpenBLAS's own pool last and
             * alone: its pthread workers spin after each call (about 0.1 s),
             * which would slow whatever runs next */
            double t[NLIB][64];
            int nlib = nlp_cpu_has_avx512bf16() ? NLIB : NLIB - 1;
            blas_threads(1, threads);
            for (int l = 0; l < nlib; l++)
                if (l != OWN) run(l, s, A, B, C), run(l, s, A, B, C);
            for (int r = 0; r < reps && r < 64; r++)
                for (int l = 0; l < nlib; l++) {
                    if (l == OWN) continue;
                    double t0 = now();
                    run(l, s, A, B, C);
                    t[l][r] = now() - t0;
                }
            blas_threads(threads, threads);
            run(OWN, s, A, B, C);
            for (int r = 0; r < reps && r < 64; r++) {
                double t0 = now();
                run(OWN, s, A, B, C);
                t[OWN][r] = now() - t0;
            }
            blas_threads(1, threads);
            struct timespec pause = {0, 300000000};
            nanosleep(&pause, NULL);
            for (int l = 0; l < nlib; l++) {
                qsort(t[l], (size_t)reps, sizeof t[l][0], cmpd);
                double m = t[l][reps / 2];
                total[l] += m * s->count;
                printf(" %11.1f", f / m / 1e9);
            }
            printf("\n");
            free(A), free(B), free(C);
        }
        blas_threads(1, threads);
        printf("%-33s", "step, GFLOP/s");
        for (int l = 0; l < NLIB; l++)
            printf(" %11.1f", total[l] > 0 ? flops / total[l] / 1e9 : 0);
        printf("\n");
    }
    return 0;
}
