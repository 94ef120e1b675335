/*
 * test_q8.c — int8 weights (nn/q8.h) and the decoding pool (base/pool.h):
 * quantization against its definition (scale max|w|/127 as fp16, rounding to
 * nearest), products against a double-precision sum of the quantized
 * operands and against fp32 within the error int8 allows, the same bits on
 * every kernel set the CPU has, alone or among other rows, on one or two
 * threads; edges (N not a multiple of 16, K of 32, bias, beta 1), a NaN row,
 * a non-finite weight; and the pool running every iteration exactly once.
 */
#include "test.h"

#include "base/err.h"
#include "base/pool.h"
#include "nn/q8.h"
#include "nn/safetensors.h"

#include <omp.h>

static uint64_t seed = 777;

static float frand(void)
{
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((seed >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
}

static float *randv(size_t n, float scale)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = scale * frand();
    return v;
}

/* x's row quantized as q8.c defines it (blocks of 32, d = max|x|/127 in fp32) */
static void quant_row(const float *x, int K, float *deq)
{
    for (int k0 = 0; k0 < K; k0 += 32) {
        float amax = 0;
        for (int k = k0; k < K && k < k0 + 32; k++) amax = fmaxf(amax, fabsf(x[k]));
        const float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0;
        for (int k = k0; k < K && k < k0 + 32; k++) deq[k] = nearbyintf(x[k] * id) * d;
    }
}

static void test_quantize(void)
{
    const int N = 37, K = 70;
    float *W = randv((size_t)N * K, 0.1f);
    W[5 * K + 40] = 3.0f; /* one block with a large weight: its own scale */
    nlp_q8 w;
    CHECK_EQ_INT(nlp_q8_quantize(&w, W, N, K, K), 0);
    CHECK(w.nb == 3 && w.ng == 3);
    CHECK(nlp_q8_bytes(&w) == (size_t)3 * 3 * (16 * 32 + 32));
    double worst = 0;
    int exact = 1;
    for (int n = 0; n < N; n++)
        for (int k0 = 0; k0 < K; k0 += 32) {
            float amax = 0;
            for (int k = k0; k < K && k < k0 + 32; k++) amax = fmaxf(amax, fabsf(W[n * K + k]));
            for (int k = k0; k < K && k < k0 + 32; k++) {
                const float got = nlp_q8_weight(&w, n, k), d = amax / 127;
                worst = fmax(worst, fabs(got - W[n * K + k]) / d);
                /* the largest weight of a block comes back to fp16 precision */
                if (fabsf(W[n * K + k]) == amax) exact &= fabsf(got - W[n * K + k]) <= amax * 1e-3f;
            }
        }
    CHECK_MSG(worst <= 0.5 + 1e-3, "a weight off by %g of its block's step", worst);
    CHECK(exact);
    CHECK(nlp_q8_weight(&w, 5, 40) > 2.99f && nlp_q8_weight(&w, 5, 39) != 0);
    nlp_q8_free(&w);
    W[7 * K + 3] = NAN;
    CHECK_EQ_INT(nlp_q8_quantize(&w, W, N, K, K), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "row 7, column 3") != NULL);
    CHECK(w.q == NULL);
    free(W);
}

/* y of every kernel set, rows alone and together, 1 and 2 threads: the same
 * bits; against the double sum of the quantized operands (rounding of the
 * fp32 sums only) and against fp32 (the error of int8). */
static void test_products(void)
{
    const int shapes[][3] = {{1, 16, 32}, {3, 37, 70}, {4, 100, 256}, {9, 64, 300}, {2, 1000, 768}};
    const int nt0 = omp_get_max_threads();
    const enum nlp_q8_isa best = nlp_q8_isa();
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ldy = N + 3;
        float *W = randv((size_t)N * K, 0.05f), *x = randv((size_t)M * (K + 1), 1.0f), *bias = randv((size_t)N, 1.0f);
        nlp_q8 w;
        CHECK_EQ_INT(nlp_q8_quantize(&w, W, N, K, K), 0);
        for (int bz = 0; bz < 3; bz++) { /* plain, bias, beta 1 */
            float *ref = NULL;
            for (int isa = NLP_Q8_GENERIC; isa <= (int)best; isa++) {
                if ((int)nlp_q8_set_isa((enum nlp_q8_isa)isa) != isa) continue;
                for (int nt = 1; nt <= 2; nt++) {
                    omp_set_num_threads(nt);
                    float *y = malloc((size_t)M * ldy * sizeof *y);
                    for (int i = 0; i < M * ldy; i++) y[i] = 0.25f * (float)(i % 7);
                    CHECK_EQ_INT(nlp_q8_gemm(M, x, K + 1, &w, bz == 1 ? bias : NULL, bz == 2 ? 1.0f : 0.0f, y, ldy), 0);
                    /* each row alone */
                    float *y1 = malloc((size_t)M * ldy * sizeof *y1);
                    for (int i = 0; i < M * ldy; i++) y1[i] = 0.25f * (float)(i % 7);
                    for (int m = 0; m < M; m++)
                        nlp_q8_gemm(1, x + (size_t)m * (K + 1), K + 1, &w, bz == 1 ? bias : NULL, bz == 2 ? 1.0f : 0.0f,
                                    y1 + (size_t)m * ldy, ldy);
                    CHECK_MSG(!memcmp(y, y1, (size_t)M * ldy * sizeof *y), "%dx%dx%d %s: a row alone differs", M, N, K,
                              nlp_q8_isa_name((enum nlp_q8_isa)isa));
                    free(y1);
                    if (!ref) {
                        ref = y;
                        continue;
                    }
                    CHECK_MSG(!memcmp(y, ref, (size_t)M * ldy * sizeof *y), "%dx%dx%d %s, %d threads: not the bits of the first",
                              M, N, K, nlp_q8_isa_name((enum nlp_q8_isa)isa), nt);
                    free(y);
                }
            }
            omp_set_num_threads(nt0);
            nlp_q8_set_isa(best);
            /* against double sums: of the quantized operands, and of fp32 */
            float *xq = malloc((size_t)K * sizeof *xq);
            double worst_q = 0, worst_f = 0;
            int pad = 1;
            for (int m = 0; m < M; m++) {
                quant_row(x + (size_t)m * (K + 1), K, xq);
                for (int n = 0; n < N; n++) {
                    double sq = 0, sf = 0, mag = 0, magf = 0;
                    for (int k = 0; k < K; k++) {
                        sq += (double)xq[k] * nlp_q8_weight(&w, n, k);
                        mag += fabs((double)xq[k] * nlp_q8_weight(&w, n, k));
                        sf += (double)x[(size_t)m * (K + 1) + k] * W[(size_t)n * K + k];
                        magf += fabs((double)x[(size_t)m * (K + 1) + k] * W[(size_t)n * K + k]);
                    }
                    const double add = bz == 1 ? bias[n] : bz == 2 ? 0.25 * ((m * ldy + n) % 7) : 0;
                    const double got = ref[(size_t)m * ldy + n];
                    worst_q = fmax(worst_q, fabs(got - (sq + add)) / (mag + fabs(add)));
                    worst_f = fmax(worst_f, fabs(got - (sf + add)) / (magf + fabs(add)));
                }
                for (int n = N; n < ldy; n++) pad &= ref[(size_t)m * ldy + n] == 0.25f * (float)((m * ldy + n) % 7);
            }
            CHECK_MSG(worst_q < 1e-5, "%dx%dx%d: %g from the double sum of the quantized operands", M, N, K, worst_q);
            CHECK_MSG(worst_f < 1e-2, "%dx%dx%d: %g from the fp32 product", M, N, K, worst_f);
            CHECK_MSG(pad, "%dx%dx%d: wrote past N", M, N, K);
            free(xq), free(ref);
        }
        nlp_q8_free(&w);
        free(W), free(x), free(bias);
    }
}

/* A row with a NaN (or an infinity) gives non-finite outputs in that row only. */
static void test_nonfinite(void)
{
    const int M = 3, N = 20, K = 64;
    float *W = randv((size_t)N * K, 0.05f), *x = randv((size_t)M * K, 1.0f), *y = malloc((size_t)M * N * sizeof *y);
    x[K + 40] = NAN;
    x[2 * K + 3] = INFINITY;
    nlp_q8 w;
    CHECK_EQ_INT(nlp_q8_quantize(&w, W, N, K, K), 0);
    const enum nlp_q8_isa best = nlp_q8_isa();
    for (int isa = NLP_Q8_GENERIC; isa <= (int)best; isa++) {
        if ((int)nlp_q8_set_isa((enum nlp_q8_isa)isa) != isa) continue;
        nlp_q8_gemm(M, x, K, &w, NULL, 0, y, N);
        int ok = 1;
        for (int n = 0; n < N; n++) ok &= isfinite(y[n]) && !isfinite(y[N + n]) && !isfinite(y[2 * N + n]);
        CHECK_MSG(ok, "%s: a non-finite row", nlp_q8_isa_name((enum nlp_q8_isa)isa));
    }
    nlp_q8_set_isa(best);
    nlp_q8_free(&w);
    free(W), free(x), free(y);
}

// --- the pool

static void count_fn(void *ctx, int i) { __atomic_add_fetch((int *)ctx + i, 1, __ATOMIC_RELAXED); }

struct nest {
    int *hits;
    int inner_ok;
};

static void nest_fn(void *ctx, int i)
{
    struct nest *n = ctx;
    int local[4] = {0};
    nlp_pool_for(4, 2, count_fn, local); /* nested: runs on this thread */
    if (local[0] != 1 || local[3] != 1 || !nlp_pool_inside()) __atomic_store_n(&n->inner_ok, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(n->hits + i, 1, __ATOMIC_RELAXED);
}

static void test_pool(void)
{
    enum { N = 1000 };
    int *hits = calloc(N, sizeof *hits);
    int ok = 1;
    for (int round = 0; round < 200; round++) { /* many short loops: late helpers must not take a later loop's work */
        const int n = 1 + (round * 37) % N;
        memset(hits, 0, N * sizeof *hits);
        nlp_pool_for(n, 2 + round % 3, count_fn, hits);
        for (int i = 0; i < N; i++) ok &= hits[i] == (i < n);
    }
    CHECK_MSG(ok, "an iteration ran other than once");
    CHECK(!nlp_pool_inside());
    struct nest ns = {hits, 1};
    memset(hits, 0, N * sizeof *hits);
    nlp_pool_for(50, 2, nest_fn, &ns);
    ok = ns.inner_ok;
    for (int i = 0; i < 50; i++) ok &= hits[i] == 1;
    CHECK(ok);
    /* inside an OpenMP region the loop runs on the calling thread */
    memset(hits, 0, N * sizeof *hits);
#pragma omp parallel num_threads(2)
    {
        int mine[8] = {0};
        nlp_pool_for(8, 2, count_fn, mine);
        int good = 1;
        for (int i = 0; i < 8; i++) good &= mine[i] == 1;
        if (!good) __atomic_store_n(&hits[0], 99, __ATOMIC_RELAXED);
    }
    CHECK(hits[0] == 0);
    free(hits);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    if (t_verbose) printf("# int8 kernels: %s\n", nlp_q8_isa_name(nlp_q8_isa()));
    RUN(test_quantize);
    RUN(test_products);
    RUN(test_nonfinite);
    RUN(test_pool);
    return TEST_END();
}
