/*
 * test_sgemm.c — nlpipe's own fp32 kernels (nn/sgemm.h) on every kernel set
 * the CPU can run: products against a double-precision triple loop for all
 * four transpositions, edge tiles, K across several blocks, alpha and beta;
 * the row invariance the translator relies on (a row of C has the same bits
 * alone, among other rows, split over threads, and through packed weights);
 * and nlp_gemm's paths (row-invariant mode, threads) over them.
 */
#include "test.h"

#include "nn/gemm.h"
#include "nn/sgemm.h"

#include <omp.h>

static uint64_t seed = 12345;

static float frand(void)
{
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((seed >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
}

static float *randv(size_t n)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = frand();
    return v;
}

static float at(const float *X, int t, int r, int c, int ld) { return t ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c]; }

/* max |C - (alpha op(A) op(B) + beta C0)| relative to the sum of |terms| */
static double err_vs_double(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                            int ldb, float beta, const float *C0, const float *C, int ldc)
{
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double p = (double)at(A, ta, i, k, lda) * at(B, tb, k, j, ldb);
                s += p, mag += fabs(p);
            }
            double want = alpha * s + (beta != 0 ? beta * (double)C0[(size_t)i * ldc + j] : 0);
            mag = fabs(alpha) * mag + fabs(beta * (double)C0[(size_t)i * ldc + j]) + 1e-30;
            worst = fmax(worst, fabs(want - C[(size_t)i * ldc + j]) / mag);
        }
    return worst;
}

static void test_products(void)
{
    /* shapes with edge tiles in M and N, K below, at and across KC */
    const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {13, 33, 17}, {37, 53, 29}, {8, 32, 256}, {25, 70, 257}, {50, 40, 600}};
    const float ab[][2] = {{1, 0}, {0.5f, 2}, {-1.5f, 1}};
    for (int isa = NLP_SGEMM_GENERIC; isa <= NLP_SGEMM_AVX512; isa++) {
        if ((int)nlp_sgemm_set_isa((enum nlp_sgemm_isa)isa) != isa) continue; /* the CPU has no such kernels */
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++)
                    for (size_t q = 0; q < sizeof ab / sizeof *ab; q++) {
                        const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ldc = N + 3;
                        const int lda = (ta ? M : K) + 2, ldb = (tb ? K : N) + 1;
                        float *A = randv((size_t)(ta ? K : M) * lda), *B = randv((size_t)(tb ? N : K) * ldb);
                        float *C = randv((size_t)M * ldc), *C0 = malloc((size_t)M * ldc * sizeof *C0);
                        memcpy(C0, C, (size_t)M * ldc * sizeof *C0);
                        if (ab[q][1] == 0)
                            for (int i = 0; i < M * ldc; i++) C[i] = NAN; /* beta 0: C not read */
                        CHECK_EQ_INT(nlp_sgemm(ta, tb, M, N, K, ab[q][0], A, lda, B, ldb, ab[q][1], C, ldc), 0);
                        double e = err_vs_double(ta, tb, M, N, K, ab[q][0], A, lda, B, ldb, ab[q][1], C0, C, ldc);
                        CHECK_MSG(e < 1e-6, "%s %dx%dx%d ta=%d tb=%d alpha=%g beta=%g: relative error %g",
                                  nlp_sgemm_isa_name((enum nlp_sgemm_isa)isa), M, N, K, ta, tb, ab[q][0], ab[q][1], e);
                        int pad = 1; /* the columns past N are not written */
                        for (int i = 0; i < M; i++)
                            for (int j = N; j < ldc; j++)
                                pad &= ab[q][1] == 0 ? isnan(C[(size_t)i * ldc + j]) : C[(size_t)i * ldc + j] == C0[(size_t)i * ldc + j];
                        CHECK_MSG(pad, "%s %dx%dx%d: wrote past column N", nlp_sgemm_isa_name((enum nlp_sgemm_isa)isa),
                                  M, N, K);
                        free(A), free(B), free(C), free(C0);
                    }
    }
    nlp_sgemm_set_isa(NLP_SGEMM_AVX512);
    /* K == 0: C = beta C */
    float c[4] = {1, 2, 3, 4};
    CHECK_EQ_INT(nlp_sgemm(0, 0, 2, 2, 0, 1, NULL, 1, NULL, 1, 0.5f, c, 2), 0);
    CHECK(c[0] == 0.5f && c[3] == 2.0f);
}

/* A row of C computed alone, among many rows, at any offset, on any number
 * of threads and through packed B: the same bits. */
static void test_row_invariance(void)
{
    const int M = 45, N = 300, K = 600; /* K spans three blocks of KC */
    for (int isa = NLP_SGEMM_GENERIC; isa <= NLP_SGEMM_AVX512; isa++) {
        if ((int)nlp_sgemm_set_isa((enum nlp_sgemm_isa)isa) != isa) continue;
        const char *nm = nlp_sgemm_isa_name((enum nlp_sgemm_isa)isa);
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                const int lda = ta ? M : K, ldb = tb ? K : N;
                float *A = randv((size_t)M * K), *B = randv((size_t)K * N), *bias = randv(N);
                float *all = malloc((size_t)M * N * 4), *one = malloc((size_t)N * 4), *pk = malloc((size_t)M * N * 4);
                for (int i = 0; i < M; i++) memcpy(all + (size_t)i * N, bias, (size_t)N * 4);
                nlp_sgemm(ta, tb, M, N, K, 1, A, lda, B, ldb, 1, all, N);
                int same = 1;
                for (int r = 0; r < M; r += 11) { /* row r alone: M = 1 from its own row of op(A) */
                    float *a1 = malloc((size_t)K * 4);
                    for (int k = 0; k < K; k++) a1[k] = at(A, ta, r, k, lda);
                    memcpy(one, bias, (size_t)N * 4);
                    nlp_sgemm(0, tb, 1, N, K, 1, a1, K, B, ldb, 1, one, N);
                    same &= !memcmp(one, all + (size_t)r * N, (size_t)N * 4);
                    /* the columns in two halves at an odd split */
                    memcpy(one, bias, (size_t)N * 4);
                    nlp_sgemm(0, tb, 1, 77, K, 1, a1, K, B, ldb, 1, one, N);
                    nlp_sgemm(0, tb, 1, N - 77, K, 1, a1, K, tb ? B + (size_t)77 * ldb : B + 77, ldb, 1, one + 77, N);
                    same &= !memcmp(one, all + (size_t)r * N, (size_t)N * 4);
                    free(a1);
                }
                CHECK_MSG(same, "%s ta=%d tb=%d: a row alone differs from the same row among others", nm, ta, tb);
                /* the bias epilogue: the same bits as C filled with the bias and beta 1 */
                float *wb = malloc((size_t)M * N * 4);
                for (int i = 0; i < M * N; i++) wb[i] = NAN;
                CHECK_EQ_INT(nlp_sgemm_bias(ta, tb, M, N, K, 1, A, lda, B, ldb, bias, 0, wb, N), 0);
                CHECK_MSG(!memcmp(wb, all, (size_t)M * N * 4), "%s ta=%d tb=%d: bias epilogue differs", nm, ta, tb);
                for (int i = 0; i < M * N; i++) wb[i] = NAN;
                nlp_gemm_bias(ta, tb, M, N, K, 1, A, lda, B, ldb, bias, 0, wb, N);
                CHECK_MSG(!memcmp(wb, all, (size_t)M * N * 4), "%s ta=%d tb=%d: nlp_gemm_bias differs", nm, ta, tb);
                free(wb);
                /* packed B, columns in two parts */
                nlp_sgemm_b pb;
                CHECK_EQ_INT(nlp_sgemm_pack_b(&pb, tb, K, N, B, ldb), 0);
                for (int i = 0; i < M; i++) memcpy(pk + (size_t)i * N, bias, (size_t)N * 4);
                int cut = pb.nr * 3;
                nlp_sgemm_packed(ta, M, 0, cut, 1, A, lda, &pb, NULL, 1, pk, N);
                nlp_sgemm_packed(ta, M, cut, N, 1, A, lda, &pb, NULL, 1, pk, N);
                CHECK_MSG(!memcmp(pk, all, (size_t)M * N * 4), "%s ta=%d tb=%d: packed B differs", nm, ta, tb);
                if (!ta) { /* packed, with the bias epilogue */
                    for (int i = 0; i < M * N; i++) pk[i] = NAN;
                    nlp_gemm_packed(M, 1, A, lda, &pb, bias, 0, pk, N);
                    CHECK_MSG(!memcmp(pk, all, (size_t)M * N * 4), "%s tb=%d: packed B with bias differs", nm, tb);
                }
                nlp_sgemm_b_free(&pb);
                free(A), free(B), free(bias), free(all), free(one), free(pk);
            }
    }
    nlp_sgemm_set_isa(NLP_SGEMM_AVX512);
}

/* nlp_gemm in row-invariant mode: any M, any thread count, the same rows. */
static void test_gemm_row_invariant(void)
{
    const int M = 70, N = 8000 / 16, K = 256;
    float *A = randv((size_t)M * K), *W = randv((size_t)N * K);
    float *c1 = malloc((size_t)M * N * 4), *c2 = malloc((size_t)M * N * 4);
    int prev = nlp_gemm_set_row_invariant(1);
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    nlp_gemm(0, 1, M, N, K, 1, A, K, W, K, 0, c1, N);
    omp_set_num_threads(2);
    int same = 1;
    for (int m = 1; m <= M; m += 23) { /* the first m rows, 2 threads */
        nlp_gemm(0, 1, m, N, K, 1, A, K, W, K, 0, c2, N);
        same &= !memcmp(c1, c2, (size_t)m * N * 4);
    }
    CHECK_MSG(same, "row-invariant nlp_gemm: rows depend on M or threads");
    omp_set_num_threads(nt);
    nlp_gemm_set_row_invariant(prev);
    free(A), free(W), free(c1), free(c2);
    CHECK(strlen(nlp_gemm_kernel_name()) > 0);
}

/* nlp_gemm on 1, 2 and 3 threads for shapes that split K (a long K, a small
 * C: weight gradients), M or N: every transposition, beta 0 and 1. */
static void test_gemm_threads(void)
{
    const int shapes[][3] = {{40, 70, 1000}, {256, 64, 4500}, {300, 200, 100}, {33, 900, 300}};
    int nt = omp_get_max_threads();
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int th = 1; th <= 3; th++) {
                    const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                    const int lda = ta ? M : K, ldb = tb ? K : N;
                    float *A = randv((size_t)M * K), *B = randv((size_t)K * N), *C0 = randv((size_t)M * N);
                    float *C = malloc((size_t)M * N * sizeof *C);
                    for (int bi = 0; bi < 2; bi++) {
                        const float beta = (float)bi;
                        memcpy(C, C0, (size_t)M * N * sizeof *C);
                        omp_set_num_threads(th);
                        nlp_gemm(ta, tb, M, N, K, 0.75f, A, lda, B, ldb, beta, C, N);
                        omp_set_num_threads(nt);
                        double e = err_vs_double(ta, tb, M, N, K, 0.75f, A, lda, B, ldb, beta, C0, C, N);
                        CHECK_MSG(e < 1e-5, "nlp_gemm %dx%dx%d ta %d tb %d beta %g, %d threads: error %.3g", M, N, K, ta,
                                  tb, beta, th, e);
                    }
                    free(A), free(B), free(C0), free(C);
                }
}

/* Rows split between threads that pack each block of B once, together
 * (gemm.c): the same bits on 1, 2 and 3 threads, for a C wider than one
 * block of columns and a K of several blocks, with and without a bias. */
static void test_gemm_team_bits(void)
{
    const int M = 2100, N = 1026, K = 300; /* 2 threads take rows as they come for both op(A) */
    int nt = omp_get_max_threads();
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int bi = 0; bi < 2; bi++) {
                const int lda = ta ? M : K, ldb = tb ? K : N;
                float *A = randv((size_t)M * K), *B = randv((size_t)K * N), *bias = randv(N);
                float *C[3];
                for (int th = 1; th <= 3; th++) {
                    C[th - 1] = malloc((size_t)M * N * sizeof(float));
                    omp_set_num_threads(th);
                    nlp_gemm_bias(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, bi ? bias : NULL, 0, C[th - 1], N);
                    omp_set_num_threads(nt);
                }
                CHECK_MSG(!memcmp(C[0], C[1], (size_t)M * N * 4) && !memcmp(C[0], C[2], (size_t)M * N * 4),
                          "nlp_gemm ta %d tb %d bias %d: 2 or 3 threads differ from 1", ta, tb, bi);
                free(A), free(B), free(bias), free(C[0]), free(C[1]), free(C[2]);
            }
}

/* nlp_sgemm_bias_threads against the one-thread kernel: the same bits on 2,
 * 3 and 4 threads, for shapes with several K blocks (a barrier between
 * them), several blocks of columns, a last block of rows cut short, beta
 * 0, 1 and 0.5 and a bias; and every element written, once. */
static void test_sgemm_threads_bits(void)
{
    const int shapes[][3] = {{1000, 70, 600}, {491, 1100, 257}, {100, 33, 40}, {97, 2050, 513}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int v = 0; v < 4; v++) {
                    const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                    const int lda = ta ? M : K, ldb = tb ? K : N;
                    const float beta = v == 0 ? 0.0f : v == 1 ? 1.0f : 0.5f;
                    float *A = randv((size_t)M * K), *B = randv((size_t)K * N), *C0 = randv((size_t)M * N),
                          *bias = v == 3 ? randv(N) : NULL;
                    float *want = malloc((size_t)M * N * sizeof(float)), *got = malloc((size_t)M * N * sizeof(float));
                    memcpy(want, C0, (size_t)M * N * sizeof(float));
                    CHECK(nlp_sgemm_bias(ta, tb, M, N, K, 0.75f, A, lda, B, ldb, bias, v == 3 ? 0.0f : beta, want, N) ==
                          0);
                    for (int th = 2; th <= 4; th++) {
                        memcpy(got, C0, (size_t)M * N * sizeof(float));
                        CHECK(nlp_sgemm_bias_threads(th, ta, tb, M, N, K, 0.75f, A, lda, B, ldb, bias,
                                                     v == 3 ? 0.0f : beta, got, N) == 0);
                        CHECK_MSG(!memcmp(want, got, (size_t)M * N * sizeof(float)),
                                  "%dx%dx%d ta %d tb %d variant %d, %d threads: not the one-thread bits", M, N, K, ta,
                                  tb, v, th);
                    }
                    free(A), free(B), free(C0), free(bias), free(want), free(got);
                }
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_products);
    RUN(test_row_invariance);
    RUN(test_gemm_row_invariant);
    RUN(test_gemm_threads);
    RUN(test_gemm_team_bits);
    RUN(test_sgemm_threads_bits);
    return TEST_END();
}
