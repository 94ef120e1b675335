/*
 * test_nn.c — lib/nn: every layer's backward pass against central finite
 * differences of its forward pass (linear in both layouts and with strides,
 * LayerNorm, RMSNorm, the activations and gated units, dropout, embeddings
 * and positions, rotary positions, attention — self, causal, padded, cross,
 * with dropout, grouped-query — and cross-entropy with both
 * smoothing modes and an ignore index); nlp_gemm against a plain triple loop;
 * Adam/AdamW against a double-precision transcription of torch's update;
 * clipping and schedules; the sinusoidal table; determinism across thread
 * counts.
 *
 * The finite-difference losses are L = Σ out·R for a fixed random R, summed in
 * double; a check passes when |numeric − analytic| <= 2e-2·max(|a|, |n|) + 2e-3.
 */
#include "nn/act.h"
#include "nn/attn.h"
#include "nn/embed.h"
#include "nn/gemm.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/norm.h"
#include "nn/optim.h"
#include "nn/params.h"
#include "nn/rope.h"
#include "nn/safetensors.h"
#include "nn/vmath.h"
#include "base/err.h"
#include "base/rng.h"
#include "test.h"

#include <float.h>
#include <omp.h>

static nlp_rng R;

static float *randv(size_t n, double scale)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = (float)(scale * nlp_rng_normal(&R));
    return v;
}

static float *zerov(size_t n) { return calloc(n, sizeof(float)); }

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* Compares analytic gradient g of x (n elements) with central differences of
 * loss(); checks `samples` elements spread over x. */
typedef double (*loss_fn)(void *ctx);

static int fd_check(const char *what, float *x, const float *g, size_t n, loss_fn loss, void *ctx, int samples,
                    float h)
{
    int bad = 0;
    double worst = 0;
    for (int s = 0; s < samples; s++) {
        size_t i = samples >= (int)n ? (size_t)s : nlp_rng_below(&R, n);
        if (i >= n) break;
        float v = x[i];
        x[i] = v + h;
        double lp = loss(ctx);
        x[i] = v - h;
        double lm = loss(ctx);
        x[i] = v;
        double num = (lp - lm) / (2.0 * (double)h), ana = g[i];
        double err = fabs(num - ana), tol = 2e-2 * fmax(fabs(num), fabs(ana)) + 2e-3;
        if (err / tol > worst) worst = err / tol;
        if (err > tol && bad++ < 3) printf("    %s[%zu]: numeric %.6g analytic %.6g\n", what, i, num, ana);
    }
    CHECK_MSG(bad == 0, "%s: %d of %d elements off (worst ratio %.2f)", what, bad, samples, worst);
    return bad == 0;
}

// --- gemm

static void test_gemm(void)
{
    const int M = 37, N = 53, K = 29;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            float *A = randv((size_t)M * K, 1), *B = randv((size_t)K * N, 1), *C = randv((size_t)M * (N + 3), 1);
            float *C0 = malloc((size_t)M * (N + 3) * sizeof *C0);
            memcpy(C0, C, (size_t)M * (N + 3) * sizeof *C0);
            int lda = ta ? M : K, ldb = tb ? K : N;
            nlp_gemm(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 2.0f, C, N + 3);
            double worst = 0;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int k = 0; k < K; k++)
                        s += (double)(ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
                    double want = 0.5 * s + 2.0 * C0[i * (N + 3) + j];
                    worst = fmax(worst, fabs(want - C[i * (N + 3) + j]));
                }
            CHECK_MSG(worst < 1e-4, "gemm ta=%d tb=%d: max error %g", ta, tb, worst);
            /* padding columns untouched */
            int untouched = 1;
            for (int i = 0; i < M; i++)
                for (int j = N; j < N + 3; j++) untouched &= C[i * (N + 3) + j] == C0[i * (N + 3) + j];
            CHECK(untouched);
            free(A), free(B), free(C), free(C0);
        }
    /* beta 0 ignores NaN in C; a big product split over threads equals the single-thread one */
    const int M2 = 300, N2 = 260, K2 = 70;
    float *A = randv((size_t)M2 * K2, 1), *B = randv((size_t)K2 * N2, 1), *C1 = malloc((size_t)M2 * N2 * 4),
          *C2 = malloc((size_t)M2 * N2 * 4);
    for (int i = 0; i < M2 * N2; i++) C1[i] = NAN;
    nlp_gemm(0, 0, M2, N2, K2, 1, A, K2, B, N2, 0, C1, N2);
    int fin = 1;
    for (int i = 0; i < M2 * N2; i++) fin &= isfinite(C1[i]);
    CHECK(fin);
    int nt = omp_get_max_threads();
    omp_set_num_threads(2);
    nlp_gemm(0, 0, M2, N2, K2, 1, A, K2, B, N2, 0, C2, N2);
    omp_set_num_threads(nt);
    double d = 0;
    for (int i = 0; i < M2 * N2; i++) d = fmax(d, fabs(C1[i] - C2[i]));
    CHECK_MSG(d < 1e-4, "threaded gemm differs by %g", d);
    free(A), free(B), free(C1), free(C2);
}

/* bf16 mode: the products of bf16-rounded operands, summed in fp32. Against a
 * double sum of the rounded operands the error is rounding of the fp32 sums.
 * (Products with M or N < 16 or K < 32 stay fp32; these shapes are above.)
 * The shapes cover edge tiles, odd K, several blocks of K (256) and of N
 * (1536), and enough rows for the threads to take blocks of them as they
 * become free (nlp_bgemm_bias_threads); the same bits on 1 and 2 threads. */
static void test_gemm_bf16(void)
{
    if (!nlp_cpu_has_avx512bf16()) {
        CHECK_EQ_INT(nlp_gemm_set_mode(NLP_GEMM_BF16), NLP_EINVAL);
        CHECK(nlp_gemm_get_mode() == NLP_GEMM_F32);
        test_skip("no AVX-512 BF16 on this CPU");
        return;
    }
    CHECK_EQ_INT(nlp_gemm_set_mode(NLP_GEMM_BF16), 0);
    const int nt0 = omp_get_max_threads();
    int dims[][3] = {{37, 53, 45}, {16, 32, 64}, {300, 260, 70}, {97, 40, 600}, {16, 1000, 33}, {20, 1600, 300},
                     {1700, 40, 65}};
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
        int M = dims[d][0], N = dims[d][1], K = dims[d][2];
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                float *A = randv((size_t)M * K, 1), *B = randv((size_t)K * N, 1);
                const int lda = ta ? M : K, ldb = tb ? K : N;
                double *ref = malloc((size_t)M * N * sizeof *ref), *mag = malloc((size_t)M * N * sizeof *mag);
                /* op(A) as [M][K] and op(B) as [N][K], rounded */
                double *ar = malloc((size_t)M * K * sizeof *ar), *br = malloc((size_t)N * K * sizeof *br);
                for (int i = 0; i < M; i++)
                    for (int k = 0; k < K; k++)
                        ar[(size_t)i * K + k] = nlp_bf16_to_f32(nlp_f32_to_bf16(ta ? A[k * lda + i] : A[i * lda + k]));
                for (int j = 0; j < N; j++)
                    for (int k = 0; k < K; k++)
                        br[(size_t)j * K + k] = nlp_bf16_to_f32(nlp_f32_to_bf16(tb ? B[j * ldb + k] : B[k * ldb + j]));
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++) {
                        double sum = 0, m = 0;
                        const double *x = ar + (size_t)i * K, *y = br + (size_t)j * K;
                        for (int k = 0; k < K; k++) sum += x[k] * y[k], m += fabs(x[k] * y[k]);
                        ref[(size_t)i * N + j] = sum, mag[(size_t)i * N + j] = m;
                    }
                free(ar), free(br);
                for (int bz = 0; bz < 3; bz++) { /* beta 2, beta 0, a bias row */
                    float *C = randv((size_t)M * (N + 5), 1), *C0 = malloc((size_t)M * (N + 5) * 4),
                          *C1 = malloc((size_t)M * (N + 5) * 4), *bias = bz == 2 ? randv((size_t)N, 1) : NULL;
                    memcpy(C0, C, (size_t)M * (N + 5) * 4);
                    memcpy(C1, C, (size_t)M * (N + 5) * 4);
                    const float beta = bz ? 0.0f : 2.0f;
                    omp_set_num_threads(2);
                    nlp_gemm_bias(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, bias, beta, C, N + 5);
                    omp_set_num_threads(1);
                    nlp_gemm_bias(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, bias, beta, C1, N + 5);
                    omp_set_num_threads(nt0);
                    double worst = 0;
                    int pad = 1;
                    for (int i = 0; i < M; i++) {
                        for (int j = 0; j < N; j++) {
                            const double add = bias ? bias[j] : beta * C0[i * (N + 5) + j];
                            const double want = 0.5 * ref[(size_t)i * N + j] + add;
                            const double err =
                                fabs(want - C[i * (N + 5) + j]) / (0.5 * mag[(size_t)i * N + j] + fabs(add) + 1e-30);
                            worst = fmax(worst, err);
                        }
                        for (int j = N; j < N + 5; j++) pad &= C[i * (N + 5) + j] == C0[i * (N + 5) + j];
                    }
                    CHECK_MSG(worst < 2e-6 && pad, "bf16 gemm %dx%dx%d ta=%d tb=%d %s: relative error %g%s", M, N, K,
                              ta, tb, bz == 2 ? "bias" : bz ? "beta 0" : "beta 2", worst,
                              pad ? "" : ", wrote outside C");
                    CHECK_MSG(!memcmp(C, C1, (size_t)M * (N + 5) * 4),
                              "bf16 gemm %dx%dx%d ta=%d tb=%d: 2 threads differ from 1", M, N, K, ta, tb);
                    free(C), free(C0), free(C1), free(bias);
                }
                free(A), free(B), free(ref), free(mag);
            }
    }
    CHECK_EQ_INT(nlp_gemm_set_mode(NLP_GEMM_F32), 0);
}

// --- linear

struct lin_ctx {
    nlp_linear l;
    int N, ldx, ldy;
    float *x, *y, *r;
};

static double lin_loss(void *c)
{
    struct lin_ctx *k = c;
    nlp_linear_forward(&k->l, k->N, k->x, k->ldx, k->y, k->ldy);
    double s = 0;
    for (int i = 0; i < k->N; i++) s += dot(k->y + (size_t)i * k->ldy, k->r + (size_t)i * k->l.out, (size_t)k->l.out);
    return s;
}

static void test_linear(void)
{
    for (int layout = 0; layout < 2; layout++) {
        const int N = 6, in = 7, out = 5, ldx = 9, ldy = 8;
        struct lin_ctx k = {.N = N, .ldx = ldx, .ldy = ldy};
        float *w = randv((size_t)in * out, 0.5), *b = randv((size_t)out, 0.5);
        float *dw = zerov((size_t)in * out), *db = zerov((size_t)out);
        k.l = (nlp_linear){.w = w, .b = b, .dw = dw, .db = db, .in = in, .out = out, .layout = (enum nlp_wlayout)layout};
        k.x = randv((size_t)N * ldx, 1);
        k.y = zerov((size_t)N * ldy);
        k.r = randv((size_t)N * out, 1);
        float *dx = randv((size_t)N * ldx, 1), *dx0 = malloc((size_t)N * ldx * 4);
        memcpy(dx0, dx, (size_t)N * ldx * 4);
        lin_loss(&k);
        /* dy with stride `out` (the r matrix), accumulate into dx (beta 1) */
        nlp_linear_backward(&k.l, N, k.x, ldx, k.r, out, dx, ldx, 1.0f);
        float *gx = zerov((size_t)N * ldx);
        for (int i = 0; i < N * ldx; i++) gx[i] = dx[i] - dx0[i];
        /* only the first `in` columns of each row belong to x */
        int pad_ok = 1;
        for (int i = 0; i < N; i++)
            for (int c = in; c < ldx; c++) pad_ok &= gx[i * ldx + c] == 0;
        CHECK(pad_ok);
        char what[64];
        snprintf(what, sizeof what, "linear layout %d dx", layout);
        fd_check(what, k.x, gx, (size_t)N * ldx, lin_loss, &k, 30, 1e-2f);
        snprintf(what, sizeof what, "linear layout %d dW", layout);
        fd_check(what, w, dw, (size_t)in * out, lin_loss, &k, 35, 1e-2f);
        snprintf(what, sizeof what, "linear layout %d db", layout);
        fd_check(what, b, db, (size_t)out, lin_loss, &k, out, 1e-2f);
        /* dw_set: the product writes dW, the stale values there unread */
        float *dw2 = malloc((size_t)in * out * 4);
        for (int i = 0; i < in * out; i++) dw2[i] = NAN;
        nlp_linear l2 = k.l;
        l2.dw = dw2, l2.db = NULL, l2.dw_set = 1;
        nlp_linear_backward(&l2, N, k.x, ldx, k.r, out, NULL, 0, 0.0f);
        int same = 1;
        for (int i = 0; i < in * out; i++) same &= dw2[i] == dw[i];
        CHECK_MSG(same, "linear layout %d: dW written (dw_set) differs from dW added to zeros", layout);
        free(dw2);
        free(w), free(b), free(dw), free(db), free(k.x), free(k.y), free(k.r), free(dx), free(dx0), free(gx);
    }
}

// --- layernorm

struct ln_ctx {
    int N, C;
    float *x, *y, *g, *b, *r, *mean, *rstd;
};

static double ln_loss(void *c)
{
    struct ln_ctx *k = c;
    nlp_layernorm_forward(k->y, k->mean, k->rstd, k->x, k->g, k->b, k->N, k->C, 1e-5f);
    return dot(k->y, k->r, (size_t)k->N * k->C);
}

static void test_layernorm(void)
{
    struct ln_ctx k = {.N = 5, .C = 70};
    size_t n = (size_t)k.N * k.C;
    k.x = randv(n, 2);
    for (int i = 0; i < k.N; i++) k.x[i * k.C] += 3; /* a non-zero mean */
    k.g = randv((size_t)k.C, 1), k.b = randv((size_t)k.C, 1), k.r = randv(n, 1), k.y = zerov(n);
    k.mean = zerov((size_t)k.N), k.rstd = zerov((size_t)k.N);
    ln_loss(&k);
    /* forward: each row of (y-b)/g has mean 0 and variance 1 */
    double m = 0, v = 0;
    for (int c = 0; c < k.C; c++) m += (k.y[c] - k.b[c]) / k.g[c];
    m /= k.C;
    for (int c = 0; c < k.C; c++) v += pow((k.y[c] - k.b[c]) / k.g[c] - m, 2);
    CHECK_NEAR(m, 0, 1e-5);
    CHECK_NEAR(v / k.C, 1, 1e-3);
    float *dx = zerov(n), *dg = zerov((size_t)k.C), *db = zerov((size_t)k.C);
    nlp_layernorm_backward(dx, 0, dg, db, k.r, k.x, k.mean, k.rstd, k.g, k.N, k.C);
    fd_check("layernorm dx", k.x, dx, n, ln_loss, &k, 40, 1e-2f);
    fd_check("layernorm dgamma", k.g, dg, (size_t)k.C, ln_loss, &k, 20, 1e-2f);
    fd_check("layernorm dbeta", k.b, db, (size_t)k.C, ln_loss, &k, 20, 1e-2f);
    /* beta_dx = 1 accumulates */
    float *dx2 = malloc(n * 4);
    for (size_t i = 0; i < n; i++) dx2[i] = 1;
    nlp_layernorm_backward(dx2, 1, NULL, NULL, k.r, k.x, k.mean, k.rstd, k.g, k.N, k.C);
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs(dx2[i] - 1 - dx[i]));
    CHECK(d < 1e-6);
    free(k.x), free(k.g), free(k.b), free(k.r), free(k.y), free(k.mean), free(k.rstd), free(dx), free(dg), free(db), free(dx2);
}

// --- activations, dropout

struct act_ctx {
    enum nlp_act a;
    size_t n;
    float *x, *y, *r;
};

static double act_loss(void *c)
{
    struct act_ctx *k = c;
    nlp_act_forward(k->a, k->y, k->x, k->n);
    return dot(k->y, k->r, k->n);
}

static void test_activations(void)
{
    const char *names[] = {"relu", "gelu", "gelu_tanh", "silu", "tanh"};
    for (int a = 0; a < 5; a++) {
        struct act_ctx k = {.a = (enum nlp_act)a, .n = 200};
        k.x = randv(k.n, 2), k.y = zerov(k.n), k.r = randv(k.n, 1);
        for (size_t i = 0; i < k.n; i++)
            if (fabsf(k.x[i]) < 0.05f) k.x[i] += 0.1f; /* keep ReLU's kink out of reach */
        float *dx = zerov(k.n);
        nlp_act_backward(k.a, dx, k.r, k.x, k.n, 0);
        char what[64];
        snprintf(what, sizeof what, "%s dx", names[a]);
        fd_check(what, k.x, dx, k.n, act_loss, &k, 60, 1e-2f);
        free(k.x), free(k.y), free(k.r), free(dx);
    }
    /* values against the formulas in double */
    float x[5] = {-3, -0.5f, 0, 0.7f, 2.5f}, y[5];
    nlp_act_forward(NLP_ACT_GELU, y, x, 5);
    for (int i = 0; i < 5; i++) CHECK_NEAR(y[i], 0.5 * x[i] * (1 + erf(x[i] / sqrt(2.0))), 4e-7);
    nlp_act_forward(NLP_ACT_GELU_TANH, y, x, 5);
    for (int i = 0; i < 5; i++)
        CHECK_NEAR(y[i], 0.5 * x[i] * (1 + tanh(sqrt(2 / M_PI) * (x[i] + 0.044715 * pow(x[i], 3)))), 2e-7);
    nlp_act_forward(NLP_ACT_SILU, y, x, 5);
    for (int i = 0; i < 5; i++) CHECK_NEAR(y[i], x[i] / (1 + exp(-(double)x[i])), 3e-7);
    /* vmath.h's accuracy claims, and a finite result at the top of its range */
    double eu, ta, ea;
    nlp_vmath_selftest(&eu, &ta, &ea);
    CHECK_MSG(eu <= 2 && ta < 2e-7 && ea < 3e-7, "nlp_expf %.2f ulp, nlp_tanhf %.3g, nlp_erff %.3g", eu, ta, ea);
    int finite = 1;
    for (float v = 88.0f; v <= 100.0f; v += 0.01f) finite &= isfinite(nlp_expf(v)) && nlp_expf(v) >= nlp_expf(88.0f);
    CHECK_MSG(finite, "nlp_expf overflows below its documented clamp");
    /* a NaN (diverged training) comes through as NaN, without undefined
     * behaviour on the way (make asan stops at the first) */
    volatile float nan = NAN;
    CHECK(isnan(nlp_expf(nan)) && isnan(nlp_tanhf(nan)));
    float xn[3] = {1, NAN, -1}, yn[3];
    nlp_act_forward(NLP_ACT_GELU_TANH, yn, xn, 3);
    CHECK(isnan(yn[1]) && isfinite(yn[0]) && isfinite(yn[2]));
}

// --- gated units, RMSNorm, rotary positions

struct glu_ctx {
    enum nlp_act a;
    int N, F;
    float *gu, *y, *r;
};

static double glu_loss(void *c)
{
    struct glu_ctx *k = c;
    nlp_glu_forward(k->a, k->y, k->gu, k->N, k->F);
    return dot(k->y, k->r, (size_t)k->N * k->F);
}

static void test_glu(void)
{
    const enum nlp_act acts[] = {NLP_ACT_SILU, NLP_ACT_GELU_TANH, NLP_ACT_GELU};
    const char *names[] = {"SwiGLU", "GeGLU (tanh)", "GeGLU (erf)"};
    for (int a = 0; a < 3; a++) {
        struct glu_ctx k = {.a = acts[a], .N = 5, .F = 37};
        const size_t n = (size_t)k.N * k.F;
        k.gu = randv(2 * n, 2), k.y = zerov(n), k.r = randv(n, 1);
        glu_loss(&k);
        /* values: f(gate) · up, the gate first in each row */
        double worst = 0;
        for (int i = 0; i < k.N; i++)
            for (int f = 0; f < k.F; f++) {
                double g = k.gu[(size_t)i * 2 * k.F + f], u = k.gu[(size_t)i * 2 * k.F + k.F + f];
                double fg = a == 0 ? g / (1 + exp(-g)) : a == 1 ? 0.5 * g * (1 + tanh(sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)))
                                                                : 0.5 * g * (1 + erf(g / sqrt(2.0)));
                worst = fmax(worst, fabs(k.y[(size_t)i * k.F + f] - fg * u));
            }
        CHECK_MSG(worst < 1e-5, "%s: values off by %g", names[a], worst);
        float *dgu = zerov(2 * n);
        nlp_glu_backward(k.a, dgu, k.r, k.gu, k.N, k.F);
        char what[64];
        snprintf(what, sizeof what, "%s d(gate|up)", names[a]);
        fd_check(what, k.gu, dgu, 2 * n, glu_loss, &k, 80, 1e-2f);
        free(k.gu), free(k.y), free(k.r), free(dgu);
    }
}

struct rms_ctx {
    int N, C;
    float *x, *g, *y, *rstd, *r;
};

static double rms_loss(void *c)
{
    struct rms_ctx *k = c;
    nlp_rmsnorm_forward(k->y, k->rstd, k->x, k->g, k->N, k->C, 1e-5f);
    return dot(k->y, k->r, (size_t)k->N * k->C);
}

static void test_rmsnorm(void)
{
    /* 70 rows: more than one block of the γ sums (norm.c's LN_ROWS) */
    struct rms_ctx k = {.N = 70, .C = 45};
    size_t n = (size_t)k.N * k.C;
    k.x = randv(n, 2), k.g = randv((size_t)k.C, 1), k.r = randv(n, 1), k.y = zerov(n), k.rstd = zerov((size_t)k.N);
    for (int i = 0; i < k.N; i++) k.x[i * k.C] += 3; /* a mean that RMSNorm keeps */
    rms_loss(&k);
    /* forward: x / sqrt(mean(x²) + eps) · γ, in double */
    double worst = 0;
    for (int i = 0; i < k.N; i++) {
        double ms = 0;
        for (int c = 0; c < k.C; c++) ms += (double)k.x[i * k.C + c] * k.x[i * k.C + c];
        double r = 1 / sqrt(ms / k.C + 1e-5);
        for (int c = 0; c < k.C; c++) worst = fmax(worst, fabs(k.y[i * k.C + c] - k.x[i * k.C + c] * r * k.g[c]));
    }
    CHECK_MSG(worst < 2e-6, "rmsnorm values off by %g", worst);
    float *dx = zerov(n), *dg = zerov((size_t)k.C);
    nlp_rmsnorm_backward(dx, 0, dg, k.r, k.x, k.rstd, k.g, k.N, k.C);
    fd_check("rmsnorm dx", k.x, dx, n, rms_loss, &k, 60, 1e-2f);
    fd_check("rmsnorm dgamma", k.g, dg, (size_t)k.C, rms_loss, &k, 30, 1e-2f);
    /* beta_dx = 1 accumulates; in place (dx = dy) gives the same */
    float *dx2 = malloc(n * 4), *dy = malloc(n * 4);
    for (size_t i = 0; i < n; i++) dx2[i] = 1;
    nlp_rmsnorm_backward(dx2, 1, NULL, k.r, k.x, k.rstd, k.g, k.N, k.C);
    memcpy(dy, k.r, n * 4);
    nlp_rmsnorm_backward(dy, 0, NULL, dy, k.x, k.rstd, k.g, k.N, k.C);
    double d = 0, d2 = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs(dx2[i] - 1 - dx[i])), d2 = fmax(d2, fabs(dy[i] - dx[i]));
    CHECK(d < 1e-6 && d2 == 0);
    free(k.x), free(k.g), free(k.r), free(k.y), free(k.rstd), free(dx), free(dg), free(dx2), free(dy);
}

struct rope_ctx {
    int B, T, H, D;
    long ld, bs;
    enum nlp_rope_layout lay;
    float *x, *y, *cs, *r;
    size_t n;
};

static double rope_loss(void *c)
{
    struct rope_ctx *k = c;
    memcpy(k->y, k->x, k->n * sizeof(float));
    nlp_rope_apply(k->y, k->B, k->T, k->ld, k->bs, k->H, k->D, k->cs, k->lay, 0);
    return dot(k->y, k->r, k->n);
}

/* Rotates one head vector v (D) at position p, a copy. */
static void rope_one(float *out, const float *v, int p, int D, enum nlp_rope_layout lay, double theta)
{
    float cs[64];
    nlp_rope_table(cs, p, 1, D, theta);
    memcpy(out, v, (size_t)D * sizeof *out);
    nlp_rope_apply(out, 1, 1, D, D, 1, D, cs, lay, 0);
}

static void test_rope(void)
{
    const int D = 16;
    /* the table: cos and sin of p·θ^(−2i/D) */
    float cs[40 * 16];
    nlp_rope_table(cs, 3, 40, D, 10000);
    double worst = 0;
    for (int t = 0; t < 40; t++)
        for (int i = 0; i < D / 2; i++) {
            double a = (3 + t) * pow(10000, -2.0 * i / D);
            worst = fmax(worst, fabs(cs[t * D + i] - cos(a)) + fabs(cs[t * D + D / 2 + i] - sin(a)));
        }
    CHECK_MSG(worst < 2e-5, "rope table off by %g", worst);
    for (int lay = 0; lay < 2; lay++) {
        const char *ln = lay ? "interleaved" : "half";
        /* q·k depends on the positions only through their difference, and
         * rotation keeps lengths */
        float q[16], k[16], a[16], b[16];
        for (int i = 0; i < D; i++) q[i] = (float)nlp_rng_normal(&R), k[i] = (float)nlp_rng_normal(&R);
        double ref = 0, off = 0, len = 0;
        const int pairs[][2] = {{5, 2}, {8, 5}, {103, 100}, {1003, 1000}, {3, 0}};
        for (int c = 0; c < 5; c++) {
            rope_one(a, q, pairs[c][0], D, (enum nlp_rope_layout)lay, 10000);
            rope_one(b, k, pairs[c][1], D, (enum nlp_rope_layout)lay, 10000);
            double dq = dot(a, b, D);
            if (c == 0) ref = dq;
            off = fmax(off, fabs(dq - ref));
            len = fmax(len, fabs(dot(a, a, D) - dot(q, q, D)));
        }
        CHECK_MSG(off < 1e-4 * fmax(1, fabs(ref)), "rope %s: q·k at the same distance differs by %g", ln, off);
        CHECK_MSG(len < 1e-4, "rope %s: a rotation changed a squared length by %g", ln, len);
        /* ... and does change with the distance */
        rope_one(a, q, 7, D, (enum nlp_rope_layout)lay, 10000);
        rope_one(b, k, 2, D, (enum nlp_rope_layout)lay, 10000);
        CHECK_MSG(fabs(dot(a, b, D) - ref) > 1e-3, "rope %s: q·k does not depend on the distance", ln);
        /* position 0 is the identity */
        rope_one(a, q, 0, D, (enum nlp_rope_layout)lay, 10000);
        CHECK(memcmp(a, q, sizeof q) == 0);
        /* backward: the transpose, against finite differences, over strided rows */
        struct rope_ctx c = {.B = 2, .T = 9, .H = 3, .D = D, .lay = (enum nlp_rope_layout)lay};
        c.ld = c.H * D + 5, c.bs = c.T * c.ld + 3;
        c.n = (size_t)c.B * c.bs;
        c.x = randv(c.n, 1), c.y = zerov(c.n), c.r = randv(c.n, 1), c.cs = zerov((size_t)c.T * D);
        nlp_rope_table(c.cs, 11, c.T, D, 500);
        float *g = malloc(c.n * sizeof *g);
        memcpy(g, c.r, c.n * sizeof *g);
        nlp_rope_apply(g, c.B, c.T, c.ld, c.bs, c.H, D, c.cs, c.lay, 1);
        /* what is not a head's is not rotated: its gradient is r itself */
        char what[64];
        snprintf(what, sizeof what, "rope %s dx", ln);
        fd_check(what, c.x, g, c.n, rope_loss, &c, 80, 1e-2f);
        free(c.x), free(c.y), free(c.r), free(c.cs), free(g);
    }
    /* the two layouts are one rotation with the pairs in other places: the
     * interleaved rotation of v is the half rotation of v with its even
     * elements first, then its odd ones (what HF's conversion does to the
     * q and k weight rows) */
    float v[16], p[16], a[16], b[16];
    for (int i = 0; i < D; i++) v[i] = (float)nlp_rng_normal(&R);
    for (int i = 0; i < D / 2; i++) p[i] = v[2 * i], p[D / 2 + i] = v[2 * i + 1];
    rope_one(a, v, 37, D, NLP_ROPE_INTERLEAVED, 10000);
    rope_one(b, p, 37, D, NLP_ROPE_HALF, 10000);
    int same = 1;
    for (int i = 0; i < D / 2; i++) same &= a[2 * i] == b[i] && a[2 * i + 1] == b[D / 2 + i];
    CHECK_MSG(same, "interleaved rotation != half rotation of the permuted vector");
}

static void test_dropout(void)
{
    const size_t n = 100000;
    float *x = malloc(n * 4), *y = malloc(n * 4), *y2 = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = 1;
    nlp_dropout(y, x, n, 0.3f, 1234, 0);
    size_t kept = 0;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        kept += y[i] != 0;
        sum += y[i];
    }
    CHECK_NEAR((double)kept / n, 0.7, 0.01);
    CHECK_NEAR(sum / n, 1.0, 0.02);
    /* same seed → same mask, whatever the thread count; backward = the same call */
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    nlp_dropout(y2, x, n, 0.3f, 1234, 0);
    omp_set_num_threads(nt);
    CHECK(memcmp(y, y2, n * 4) == 0);
    nlp_dropout(y2, x, n, 0.3f, 1235, 0);
    CHECK(memcmp(y, y2, n * 4) != 0);
    nlp_dropout(y2, x, n, 0.0f, 1, 0);
    CHECK(memcmp(x, y2, n * 4) == 0);
    /* a block placed at i0 draws the whole tensor's masks there (a rank's share of a batch) */
    nlp_dropout(y2, x, n - 777, 0.3f, 1234, 777);
    CHECK(memcmp(y + 777, y2, (n - 777) * 4) == 0);
    free(x), free(y), free(y2);
}

// --- embeddings

struct emb_ctx {
    int N, C, V, B, T;
    int32_t *ids;
    float *table, *pos, *y, *r;
};

static double emb_loss(void *c)
{
    struct emb_ctx *k = c;
    nlp_embed_forward(k->y, k->table, k->ids, k->N, k->C, 1.5f, 0);
    nlp_pos_forward(k->y, k->pos, k->B, k->T, k->C, 2);
    return dot(k->y, k->r, (size_t)k->N * k->C);
}

static void test_embeddings(void)
{
    struct emb_ctx k = {.B = 3, .T = 4, .C = 16, .V = 5};
    k.N = k.B * k.T;
    k.ids = malloc((size_t)k.N * 4);
    for (int i = 0; i < k.N; i++) k.ids[i] = (int32_t)nlp_rng_below(&R, (uint64_t)k.V); /* repeats */
    k.table = randv((size_t)k.V * k.C, 1), k.pos = randv((size_t)8 * k.C, 1);
    k.y = zerov((size_t)k.N * k.C), k.r = randv((size_t)k.N * k.C, 1);
    float *dt = zerov((size_t)k.V * k.C), *dp = zerov((size_t)8 * k.C);
    nlp_embed_backward(dt, k.r, k.ids, k.N, k.C, 1.5f);
    nlp_pos_backward(dp, k.r, k.B, k.T, k.C, 2);
    fd_check("embedding dtable", k.table, dt, (size_t)k.V * k.C, emb_loss, &k, 40, 1e-2f);
    fd_check("position dtable", k.pos, dp, (size_t)8 * k.C, emb_loss, &k, 40, 1e-2f);
    /* rows outside offset..offset+T-1 get nothing */
    CHECK(dp[0] == 0 && dp[k.C + 3] == 0 && dp[7 * k.C] == 0);
    free(k.ids), free(k.table), free(k.pos), free(k.y), free(k.r), free(dt), free(dp);

    float pe[6 * 8];
    nlp_sinusoid_table(pe, 6, 8);
    for (int p = 0; p < 6; p++)
        for (int i = 0; i < 4; i++) {
            double w = pow(10000.0, -2.0 * i / 8);
            CHECK_NEAR(pe[p * 8 + 2 * i], sin(p * w), 1e-6);
            CHECK_NEAR(pe[p * 8 + 2 * i + 1], cos(p * w), 1e-6);
        }
}

// --- attention

struct attn_ctx {
    nlp_attn a;
    float *qkv, *kv, *out, *r, *P;
    size_t nout;
};

static double attn_loss(void *c)
{
    struct attn_ctx *k = c;
    nlp_attn_forward(&k->a, k->P);
    return dot(k->out, k->r, k->nout);
}

static void attn_case(const char *name, int cross, int causal, int masked, float drop, int T, int D)
{
    const int B = 2, H = 3, C = H * D, S = cross ? T + 2 : T;
    struct attn_ctx k = {0};
    k.qkv = randv((size_t)B * T * 3 * C, 1);
    k.kv = cross ? randv((size_t)B * S * 2 * C, 1) : NULL;
    k.nout = (size_t)B * T * C;
    k.out = zerov(k.nout), k.r = randv(k.nout, 1), k.P = zerov((size_t)B * H * T * S);
    uint8_t mask[2 * 200];
    for (int i = 0; i < B * S; i++) mask[i] = 1;
    if (masked) mask[S - 1] = mask[S - 2] = mask[S + 1] = 0; /* row 0: last two keys; row 1: key 1 */
    nlp_attn a = {.B = B, .H = H, .T = T, .S = S, .D = D, .out = k.out, .ldo = C, .bso = (long)T * C,
                  .key_mask = masked ? mask : NULL, .bsm = S, .causal = causal, .dropout = drop, .seed = 99};
    a.q = k.qkv;
    a.ldq = 3 * C;
    a.bsq = (long)T * 3 * C;
    if (cross) {
        a.k = k.kv, a.v = k.kv + C, a.ldk = a.ldv = 2 * C, a.bsk = a.bsv = (long)S * 2 * C;
    } else {
        a.k = k.qkv + C, a.v = k.qkv + 2 * C, a.ldk = a.ldv = 3 * C, a.bsk = a.bsv = (long)T * 3 * C;
    }
    k.a = a;
    attn_loss(&k);
    /* probabilities: rows sum to 1, masked and future keys get 0 */
    int ok = 1;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                const float *p = k.P + (((size_t)b * H + h) * T + t) * S;
                double s = 0;
                for (int j = 0; j < S; j++) {
                    s += p[j];
                    if ((causal && j > t) || (masked && !mask[b * S + j])) ok &= p[j] == 0;
                }
                ok &= fabs(s - 1) < 1e-5;
            }
    CHECK_MSG(ok, "%s: probabilities", name);
    float *dqkv = zerov((size_t)B * T * 3 * C), *dkv = cross ? zerov((size_t)B * S * 2 * C) : NULL;
    if (cross) nlp_attn_backward(&a, k.P, k.r, dqkv, dkv, dkv + C);
    else nlp_attn_backward(&a, k.P, k.r, dqkv, dqkv + C, dqkv + 2 * C);
    char what[96];
    snprintf(what, sizeof what, "%s d(q%s)", name, cross ? "" : "|k|v");
    fd_check(what, k.qkv, dqkv, (size_t)B * T * 3 * C, attn_loss, &k, 60, 1e-2f);
    if (cross) {
        snprintf(what, sizeof what, "%s d(k|v)", name);
        fd_check(what, k.kv, dkv, (size_t)B * S * 2 * C, attn_loss, &k, 60, 1e-2f);
    }
    free(k.qkv), free(k.kv), free(k.out), free(k.r), free(k.P), free(dqkv), free(dkv);
}

/* Grouped-query attention: H = 4 query heads over G key/value heads in a
 * fused q|k|v of (H + 2G)·D columns. Each head computes what multi-head
 * attention computes with the keys and values copied to every head of the
 * group (bit for bit); dK and dV sum over the group (finite differences). */
static void attn_gqa_case(const char *name, int causal, int masked, int G, int T, int D)
{
    const int B = 2, H = 4, W = (H + 2 * G) * D, C = H * D;
    struct attn_ctx k = {0};
    k.qkv = randv((size_t)B * T * W, 1);
    k.nout = (size_t)B * T * C;
    k.out = zerov(k.nout), k.r = randv(k.nout, 1), k.P = zerov((size_t)B * H * T * T);
    uint8_t mask[2 * 200];
    for (int i = 0; i < B * T; i++) mask[i] = 1;
    if (masked) mask[T - 1] = mask[T + 1] = 0;
    nlp_attn a = {.B = B, .H = H, .T = T, .S = T, .D = D, .kv_heads = G, .q = k.qkv, .ldq = W, .bsq = (long)T * W,
                  .k = k.qkv + C, .ldk = W, .bsk = (long)T * W, .v = k.qkv + C + G * D, .ldv = W, .bsv = (long)T * W,
                  .out = k.out, .ldo = C, .bso = (long)T * C, .key_mask = masked ? mask : NULL, .bsm = T,
                  .causal = causal};
    k.a = a;
    attn_loss(&k);
    /* multi-head over copies */
    float *full = zerov((size_t)B * T * 3 * C), *out2 = zerov(k.nout);
    for (int r = 0; r < B * T; r++)
        for (int h = 0; h < H; h++) {
            const int g = h / (H / G);
            memcpy(full + (size_t)r * 3 * C + h * D, k.qkv + (size_t)r * W + h * D, (size_t)D * 4);
            memcpy(full + (size_t)r * 3 * C + C + h * D, k.qkv + (size_t)r * W + C + g * D, (size_t)D * 4);
            memcpy(full + (size_t)r * 3 * C + 2 * C + h * D, k.qkv + (size_t)r * W + C + G * D + g * D, (size_t)D * 4);
        }
    nlp_attn m = {.B = B, .H = H, .T = T, .S = T, .D = D, .q = full, .ldq = 3 * C, .bsq = (long)T * 3 * C,
                  .k = full + C, .ldk = 3 * C, .bsk = (long)T * 3 * C, .v = full + 2 * C, .ldv = 3 * C,
                  .bsv = (long)T * 3 * C, .out = out2, .ldo = C, .bso = (long)T * C,
                  .key_mask = masked ? mask : NULL, .bsm = T, .causal = causal};
    nlp_attn_forward(&m, NULL);
    CHECK_MSG(memcmp(out2, k.out, k.nout * 4) == 0, "%s: grouped heads differ from copies", name);
    float *g = zerov((size_t)B * T * W);
    nlp_attn_backward(&a, k.P, k.r, g, g + C, g + C + G * D);
    char what[96];
    snprintf(what, sizeof what, "%s d(q|k|v)", name);
    fd_check(what, k.qkv, g, (size_t)B * T * W, attn_loss, &k, 80, 1e-2f);
    snprintf(what, sizeof what, "%s d(k|v)", name);
    fd_check(what, k.qkv + C, g + C, (size_t)2 * G * D, attn_loss, &k, 2 * G * D, 1e-2f);
    free(k.qkv), free(k.out), free(k.r), free(k.P), free(full), free(out2), free(g);
}

static void test_attention(void)
{
    attn_gqa_case("gqa causal+padding, 2 kv heads", 1, 1, 2, 6, 4);
    attn_gqa_case("mqa self, 1 kv head, D 16", 0, 0, 1, 9, 16);
    attn_gqa_case("gqa causal, 2 kv heads, 130 positions", 1, 0, 2, 130, 4);
    attn_case("self", 0, 0, 0, 0, 5, 4);
    attn_case("causal", 0, 1, 0, 0, 5, 4);
    attn_case("causal+padding", 0, 1, 1, 0, 5, 4);
    attn_case("padding", 0, 0, 1, 0, 5, 4);
    attn_case("cross+padding", 1, 0, 1, 0, 5, 4);
    attn_case("self+dropout", 0, 0, 1, 0.3f, 5, 4);
    attn_case("cross+dropout", 1, 0, 0, 0.25f, 5, 4);
    /* longer than one block of query rows: the causal path works block by block */
    attn_case("causal, 150 positions", 0, 1, 0, 0, 150, 4);
    attn_case("causal+padding+dropout, 130 positions", 0, 1, 1, 0.2f, 130, 4);
    /* heads of 16·k dimensions take the direct kernels (attn.c), one block
     * of rows and several, with every mask */
    attn_case("self+padding, D 16", 0, 0, 1, 0, 7, 16);
    attn_case("cross+padding+dropout, D 32", 1, 0, 1, 0.25f, 21, 32);
    attn_case("causal+padding+dropout, 130 positions, D 16", 0, 1, 1, 0.2f, 130, 16);
    attn_case("cross, 140 positions, D 64", 1, 0, 0, 0, 140, 64);

    /* incremental decoding: queries at positions 3..4 of a causal cache of 5
     * keys give the last two rows of the full pass */
    const int H = 2, D = 4, C = H * D, T = 5;
    float *qkv = randv((size_t)T * 3 * C, 1), *full = zerov((size_t)T * C), *inc = zerov((size_t)2 * C);
    nlp_attn a = {.B = 1, .H = H, .T = T, .S = T, .D = D, .q = qkv, .ldq = 3 * C, .k = qkv + C, .ldk = 3 * C,
                  .v = qkv + 2 * C, .ldv = 3 * C, .out = full, .ldo = C, .causal = 1};
    nlp_attn_forward(&a, NULL);
    nlp_attn b = a;
    b.T = 2, b.q = qkv + 3 * 3 * C, b.out = inc, b.q_offset = 3;
    nlp_attn_forward(&b, NULL);
    double d = 0;
    for (int i = 0; i < 2 * C; i++) d = fmax(d, fabs(inc[i] - full[3 * C + i]));
    /* the same up to rounding: few-row products (gemv.h) sum in another order */
    CHECK_MSG(d < 1e-6, "cached attention differs by %g", d);
    free(qkv), free(full), free(inc);

    /* the probabilities' bits, as attn.c states them: e^(x - max) with
     * nlp_expf's bits in every lane, 16 lane sums added by the tree l + l+8,
     * +4, +2, +1, then the keys past the last 16 in order (rows of 16 to 63
     * keys, scores spread over about 80) */
    for (int S = 16; S <= 63; S++) {
        const int Dq = 1;
        float *kq = randv((size_t)(S + 1), 1), *vv = zerov((size_t)S), ob[1], *Pp = zerov((size_t)S);
        kq[0] = 40.0f; /* the query: scores 40·k_j over a wide range */
        nlp_attn e = {.B = 1, .H = 1, .T = 1, .S = S, .D = Dq, .q = kq, .ldq = 1, .k = kq + 1, .ldk = 1, .v = vv,
                      .ldv = 1, .out = ob, .ldo = 1};
        nlp_attn_forward(&e, Pp);
        float sc[64], mx = -FLT_MAX, lane[16] = {0};
        for (int j = 0; j < S; j++) {
            sc[j] = 1.0f * (kq[0] * kq[1 + j]); /* alpha = 1/sqrt(1) times the one-term chain */
            mx = sc[j] > mx ? sc[j] : mx;
        }
        for (int j = 0; j < S; j++) sc[j] = nlp_expf(sc[j] - mx);
        for (int j = 0; j < S / 16 * 16; j++) lane[j % 16] += sc[j];
        for (int w = 8; w >= 1; w /= 2)
            for (int i = 0; i < w; i++) lane[i] += lane[i + w];
        float sum = lane[0];
        for (int j = S / 16 * 16; j < S; j++) sum += sc[j];
        const float inv = 1.0f / sum;
        int same = 1;
        for (int j = 0; j < S; j++) same &= Pp[j] == sc[j] * inv;
        CHECK_MSG(same, "probabilities of a row of %d keys", S);
        free(kq), free(vv), free(Pp);
    }

    /* a row with every key masked is uniform and passes no gradient */
    float q[3 * 4] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, o[4], P[2];
    uint8_t none[2] = {0, 0};
    nlp_attn z = {.B = 1, .H = 1, .T = 1, .S = 2, .D = 2, .q = q, .ldq = 2, .k = q + 2, .ldk = 2, .v = q + 6,
                  .ldv = 2, .out = o, .ldo = 2, .key_mask = none, .bsm = 2};
    nlp_attn_forward(&z, P);
    CHECK(P[0] == 0.5f && P[1] == 0.5f);

    /* causal + padding where the first keys are padding (a decoder input
     * starting with pad): the first queries see no key at all. As torch's
     * masked_fill(~(causal & keep), min) + softmax, such a row is uniform over
     * all S keys, whether or not the sequence is longer than one block of
     * query rows; the gradients agree with finite differences. */
    for (int len = 20; len <= 130; len += 110) {
        const int Hh = 2, Dd = len > 64 ? 16 : 4, Cc = Hh * Dd;
        struct attn_ctx k = {0};
        k.qkv = randv((size_t)len * 3 * Cc, 1);
        k.nout = (size_t)len * Cc;
        k.out = zerov(k.nout), k.r = randv(k.nout, 1), k.P = zerov((size_t)Hh * len * len);
        uint8_t *keep = malloc((size_t)len);
        for (int j = 0; j < len; j++) keep[j] = j >= 3 && j != 70;
        k.a = (nlp_attn){.B = 1, .H = Hh, .T = len, .S = len, .D = Dd, .q = k.qkv, .ldq = 3 * Cc, .k = k.qkv + Cc,
                         .ldk = 3 * Cc, .v = k.qkv + 2 * Cc, .ldv = 3 * Cc, .out = k.out, .ldo = Cc, .bso = (long)len * Cc,
                         .bsq = (long)len * 3 * Cc, .bsk = (long)len * 3 * Cc, .bsv = (long)len * 3 * Cc,
                         .key_mask = keep, .bsm = len, .causal = 1};
        attn_loss(&k);
        double worst = 0;
        for (int h = 0; h < Hh; h++)
            for (int t = 0; t < len; t++) {
                double sc[130], mx = -1e300, sum = 0;
                int any = 0;
                for (int j = 0; j <= t; j++) any |= keep[j];
                for (int j = 0; j < len; j++) {
                    int ok = j <= t && keep[j];
                    double s = 0;
                    for (int e = 0; e < Dd; e++) s += (double)k.qkv[t * 3 * Cc + h * Dd + e] * k.qkv[j * 3 * Cc + Cc + h * Dd + e];
                    sc[j] = !any ? 0 : ok ? s / sqrt((double)Dd) : -1e300;
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int j = 0; j < len; j++) sum += sc[j] > -1e299 ? exp(sc[j] - mx) : 0;
                for (int e = 0; e < Dd; e++) {
                    double acc = 0;
                    for (int j = 0; j < len; j++)
                        acc += (sc[j] > -1e299 ? exp(sc[j] - mx) / sum : 0) * k.qkv[j * 3 * Cc + 2 * Cc + h * Dd + e];
                    worst = fmax(worst, fabs(acc - k.out[t * Cc + h * Dd + e]));
                }
            }
        CHECK_MSG(worst < 1e-5, "causal attention over %d positions, leading padding: off by %g", len, worst);
        float *dqkv = zerov((size_t)len * 3 * Cc);
        nlp_attn_backward(&k.a, k.P, k.r, dqkv, dqkv + Cc, dqkv + 2 * Cc);
        char what[96];
        snprintf(what, sizeof what, "causal, leading padding, %d positions: d(q|k|v)", len);
        fd_check(what, k.qkv, dqkv, (size_t)len * 3 * Cc, attn_loss, &k, 80, 1e-2f);
        /* the values of the first three keys reach only the uniform rows */
        snprintf(what, sizeof what, "causal, leading padding, %d positions: d(v) of padded keys", len);
        fd_check(what, k.qkv + 2 * Cc, dqkv + 2 * Cc, (size_t)Cc, attn_loss, &k, Cc, 1e-2f);
        free(keep), free(k.qkv), free(k.out), free(k.r), free(k.P), free(dqkv);
    }
}

// --- cross-entropy

struct ce_ctx {
    nlp_xent x;
    float *logits, *lse;
};

static double ce_loss(void *c)
{
    struct ce_ctx *k = c;
    nlp_xent_result r;
    nlp_xent_forward(&k->x, NULL, &r);
    return r.loss;
}

/* The fused pass: the same loss and the same gradient bits as forward then
 * backward, with smoothing of both kinds and ignored rows. */
static void test_xent_fused(void)
{
    const int N = 37, V = 1000;
    int32_t tg[37];
    for (int i = 0; i < N; i++) tg[i] = i % 7 == 3 ? -100 : (i * 131) % V;
    for (int mode = 0; mode < 2; mode++)
        for (int e = 0; e < 2; e++) {
            float *x = randv((size_t)N * V, 3.0), *y = malloc((size_t)N * V * sizeof *y), lse1[74], lse2[74];
            memcpy(y, x, (size_t)N * V * sizeof *y);
            nlp_xent a = {.N = N, .V = V, .logits = x, .ld = V, .target = tg, .ignore_index = -100,
                          .smoothing = e ? 0.1f : 0.0f, .mode = mode ? NLP_SMOOTH_OTHERS : NLP_SMOOTH_UNIFORM};
            nlp_xent b = a;
            b.logits = y;
            nlp_xent_result r1, r2;
            nlp_xent_forward(&a, lse1, &r1);
            nlp_xent_backward(&a, lse1, 1.0f, x, V);
            nlp_xent_fused(&b, lse2, &r2);
            CHECK(r1.loss == r2.loss && r1.nll == r2.nll && r1.count == r2.count);
            CHECK(!memcmp(lse1, lse2, sizeof lse1));
            CHECK_MSG(!memcmp(x, y, (size_t)N * V * sizeof *x), "fused gradient differs (mode %d, eps %d)", mode, e);
            free(x), free(y);
        }
}

static void test_xent(void)
{
    const int N = 6, V = 11;
    int32_t t[6] = {3, -100, 0, 10, 5, 3};
    for (int mode = 0; mode < 2; mode++)
        for (int sm = 0; sm < 2; sm++) {
            struct ce_ctx k;
            k.logits = randv((size_t)N * V, 2);
            k.lse = zerov(2 * (size_t)N); /* [N, 2]: max and log-sum-exp */
            k.x = (nlp_xent){.N = N, .V = V, .logits = k.logits, .ld = V, .target = t, .ignore_index = -100,
                             .smoothing = sm ? 0.1f : 0.0f, .mode = (enum nlp_smoothing)mode};
            nlp_xent_result r;
            nlp_xent_forward(&k.x, k.lse, &r);
            CHECK_EQ_INT(r.count, 5);
            /* against a direct double computation */
            double want = 0, nll = 0;
            for (int i = 0; i < N; i++) {
                if (t[i] == -100) continue;
                double mx = -1e30, s = 0, sx = 0;
                for (int v = 0; v < V; v++) mx = fmax(mx, k.logits[i * V + v]);
                for (int v = 0; v < V; v++) s += exp(k.logits[i * V + v] - mx), sx += k.logits[i * V + v];
                double lse = mx + log(s), n1 = lse - k.logits[i * V + t[i]], all = V * lse - sx, e = sm ? 0.1 : 0;
                want += mode == 0 ? (1 - e) * n1 + e / V * all : (1 - e) * n1 + e / (V - 1) * (all - n1);
                nll += n1;
            }
            CHECK_NEAR(r.loss, want / 5, 1e-5);
            CHECK_NEAR(r.nll, nll / 5, 1e-5);
            float *d = zerov((size_t)N * V);
            nlp_xent_backward(&k.x, k.lse, 1.0f, d, V);
            char what[64];
            snprintf(what, sizeof what, "xent mode %d smoothing %d dlogits", mode, sm);
            fd_check(what, k.logits, d, (size_t)N * V, ce_loss, &k, 66, 1e-2f);
            int zero = 1;
            for (int v = 0; v < V; v++) zero &= d[V + v] == 0; /* the ignored row */
            CHECK(zero);
            /* in place: dlogits into the logits buffer */
            float *inplace = malloc((size_t)N * V * 4);
            memcpy(inplace, k.logits, (size_t)N * V * 4);
            nlp_xent xi = k.x;
            xi.logits = inplace;
            nlp_xent_backward(&xi, k.lse, 1.0f, inplace, V);
            CHECK(memcmp(inplace, d, (size_t)N * V * 4) == 0);
            free(k.logits), free(k.lse), free(d), free(inplace);
        }
    /* softmax is shift-invariant: logits around 2000 (a bias that drifted)
     * lose nothing in fp32 when computed as (x − max) − log Σ exp(x − max),
     * as torch does; a rounded log-sum-exp would cost ulp(2000) = 1.2e-4 */
    enum { NB = 8, VB = 1000 };
    float *big = malloc((size_t)NB * VB * 4), *dbig = malloc((size_t)NB * VB * 4), *lbig = malloc(2 * NB * 4);
    int32_t tb[NB];
    for (int sm = 0; sm < 2; sm++) {
        for (int i = 0; i < NB * VB; i++) big[i] = (float)(2000 + 3 * nlp_rng_normal(&R));
        for (int i = 0; i < NB; i++) tb[i] = (int32_t)nlp_rng_below(&R, VB);
        nlp_xent x = {.N = NB, .V = VB, .logits = big, .ld = VB, .target = tb, .ignore_index = -100,
                      .smoothing = sm ? 0.1f : 0.0f};
        nlp_xent_result r;
        nlp_xent_forward(&x, lbig, &r);
        nlp_xent_backward(&x, lbig, 1.0f, dbig, VB);
        double want = 0, gerr = 0, e = sm ? 0.1 : 0;
        for (int i = 0; i < NB; i++) {
            const float *row = big + (size_t)i * VB;
            double mx = -1e300, s = 0, sx = 0;
            for (int v = 0; v < VB; v++) mx = fmax(mx, row[v]);
            for (int v = 0; v < VB; v++) s += exp(row[v] - mx), sx += mx - row[v];
            double ls = log(s);
            want += (1 - e) * (mx - row[tb[i]] + ls) + e / VB * (sx + VB * ls);
            for (int v = 0; v < VB; v++) {
                double g = (exp(row[v] - mx - ls) - (v == tb[i] ? 1 - e + e / VB : e / VB)) / NB;
                gerr = fmax(gerr, fabs(g - dbig[(size_t)i * VB + v]));
            }
        }
        want /= NB;
        CHECK_MSG(fabs(r.loss - want) <= 1e-7 * want, "logits near 2000, smoothing %d: loss %.9g, want %.9g", sm,
                  r.loss, want);
        CHECK_MSG(gerr <= 2e-7, "logits near 2000, smoothing %d: dlogits off by %.3g (largest 0.125)", sm, gerr);
    }
    free(big), free(dbig), free(lbig);
}

// --- optimizers, clipping, schedules

// --- lazily zeroed gradients (params.h)

static void test_lazy_grad(void)
{
    nlp_params *p = nlp_params_new();
    const int64_t s3[1] = {3}, s5[1] = {5}, s2[1] = {2};
    CHECK_EQ_INT(nlp_params_add(p, "a", 1, s3, 0), 0);
    CHECK_EQ_INT(nlp_params_add(p, "b", 1, s5, 0), 1);
    CHECK_EQ_INT(nlp_params_add(p, "c", 1, s2, 0), 2);
    CHECK_EQ_INT(nlp_params_alloc(p), 0);
    CHECK_EQ_INT(nlp_params_enable_grad(p), 0);
    float *g = nlp_params_grad(p);
    const size_t n = nlp_params_numel(p);
    /* not marked: a claim says add, nothing is touched */
    for (size_t i = 0; i < n; i++) g[i] = 7;
    CHECK_EQ_INT(nlp_params_grad_claim(p, 0, 2), 0);
    CHECK(g[0] == 7 && g[3] == 7);
    /* marked: the arena keeps its stale values until a tensor is claimed,
     * asked for, or settled */
    nlp_params_zero_grad_lazy(p);
    CHECK(g[0] == 7 && g[9] == 7);
    CHECK_EQ_INT(nlp_params_grad_claim(p, 0, 2), 1); /* both marked: written by the claimant */
    CHECK(g[0] == 7 && g[3] == 7);                    /* (not zeroed for it) */
    for (int i = 0; i < 8; i++) g[i] = 1;             /* the claimant's product */
    CHECK_EQ_INT(nlp_params_grad_claim(p, 1, 2), 0); /* b written, c marked: c zeroed, add to both */
    CHECK(g[3] == 1 && g[8] == 0 && g[9] == 0);
    nlp_params_zero_grad_lazy(p);
    for (size_t i = 0; i < n; i++) g[i] = 7;
    float *b = nlp_params_grad_at(p, 1); /* asked for: zeroed, then added to */
    CHECK(b == g + 3 && b[0] == 0 && b[4] == 0 && g[0] == 7);
    b[0] = 2;
    CHECK(nlp_params_grad_at(p, 1)[0] == 2); /* once */
    nlp_params_grad_settle(p, 8);            /* c (offset 8) only */
    CHECK(g[8] == 0 && g[9] == 0 && g[0] == 7);
    nlp_params_grad_settle(p, 0);
    CHECK(g[0] == 0 && g[2] == 0 && g[3] == 2);
    CHECK_EQ_INT(nlp_params_grad_claim(p, 0, 2), 0); /* nothing marked any more */
    nlp_params_zero_grad(p); /* eager: zeros now, no marks */
    CHECK(g[3] == 0);
    g[3] = 4;
    CHECK(nlp_params_grad_at(p, 1)[0] == 4);
    nlp_params_free(p);
}

/* nlp_nonfinite_index: the first NaN or ±inf, in each lane position of the
 * vectorised pass and at the ends; n when there is none (huge values are
 * finite) */
static void test_nonfinite(void)
{
    float x[67];
    for (int i = 0; i < 67; i++) x[i] = i % 2 ? 3.0e38f : -1.5f * (float)i;
    CHECK(nlp_nonfinite_index(x, 67) == 67);
    CHECK(nlp_nonfinite_index(x, 0) == 0);
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; b++)
        for (int at = 0; at < 67; at++) {
            float keep = x[at];
            x[at] = bad[b];
            CHECK(nlp_nonfinite_index(x, 67) == (size_t)at);
            CHECK(nlp_nonfinite_index(x, (size_t)at) == (size_t)at);
            x[66 - at] = bad[b]; /* a second one later: the first is found */
            CHECK(nlp_nonfinite_index(x, 67) == (size_t)(at < 66 - at ? at : 66 - at));
            x[66 - at] = 66 - at == at ? bad[b] : (66 - at) % 2 ? 3.0e38f : -1.5f * (float)(66 - at);
            x[at] = keep;
        }
}

static void test_optim(void)
{
    const size_t n = 1000;
    float *p = randv(n, 1), *g1 = randv(n, 0.1), *g2 = randv(n, 0.1), *m = zerov(n), *v = zerov(n);
    double *pd = malloc(n * 8), *md = calloc(n, 8), *vd = calloc(n, 8);
    for (size_t i = 0; i < n; i++) pd[i] = p[i];
    for (int kind = 0; kind < 2; kind++) {
        nlp_optim_config c = kind ? nlp_optim_paper() : nlp_optim_default();
        if (kind) c.weight_decay = 0.05;
        for (size_t i = 0; i < n; i++) pd[i] = p[i], md[i] = vd[i] = 0, m[i] = v[i] = 0;
        float *q = malloc(n * 4);
        memcpy(q, p, n * 4);
        double lr = 1e-3;
        for (long step = 1; step <= 2; step++) {
            const float *g = step == 1 ? g1 : g2;
            nlp_adam_update(q, g, m, v, n, &c, step, lr, c.weight_decay);
            /* torch.optim.Adam(W) transcribed in double */
            for (size_t i = 0; i < n; i++) {
                double gi = g[i];
                if (kind == 0) pd[i] *= 1 - lr * c.weight_decay;
                else gi += c.weight_decay * pd[i];
                md[i] = c.beta1 * md[i] + (1 - c.beta1) * gi;
                vd[i] = c.beta2 * vd[i] + (1 - c.beta2) * gi * gi;
                double bc1 = 1 - pow(c.beta1, step), bc2 = 1 - pow(c.beta2, step);
                pd[i] -= lr / bc1 * md[i] / (sqrt(vd[i]) / sqrt(bc2) + c.eps);
            }
        }
        double d = 0;
        for (size_t i = 0; i < n; i++) d = fmax(d, fabs(q[i] - pd[i]));
        CHECK_MSG(d < 1e-6, "%s: max difference %g from the double transcription", kind ? "Adam" : "AdamW", d);
        free(q);
    }
    /* clipping */
    float *g = randv(n, 1);
    double norm = nlp_grad_norm(g, n), want = sqrt(dot(g, g, n));
    CHECK_REL(norm, want, 1e-9);
    double before = nlp_clip_grad_norm(g, n, 1.0);
    CHECK_REL(before, want, 1e-9);
    CHECK_NEAR(nlp_grad_norm(g, n), 1.0, 1e-5);
    nlp_clip_grad_norm(g, n, 10.0);
    CHECK_NEAR(nlp_grad_norm(g, n), 1.0, 1e-5); /* below the limit: untouched */
    /* schedules */
    CHECK_NEAR(nlp_lr_noam(4000, 512, 4000, 1.0), pow(512, -0.5) * pow(4000, -0.5), 1e-12);
    CHECK(nlp_lr_noam(3999, 512, 4000, 1) < nlp_lr_noam(4000, 512, 4000, 1));
    CHECK(nlp_lr_noam(4001, 512, 4000, 1) < nlp_lr_noam(4000, 512, 4000, 1));
    CHECK_NEAR(nlp_lr_noam(100, 512, 4000, 1), pow(512, -0.5) * 100 * pow(4000, -1.5), 1e-12);
    CHECK_NEAR(nlp_lr_cosine(50, 100, 1000, 1e-3, 1e-5), 5e-4, 1e-12);
    CHECK_NEAR(nlp_lr_cosine(100, 100, 1000, 1e-3, 1e-5), 1e-3, 1e-12);
    CHECK_NEAR(nlp_lr_cosine(550, 100, 1000, 1e-3, 1e-5), (1e-3 + 1e-5) / 2, 1e-12);
    CHECK_NEAR(nlp_lr_cosine(1000, 100, 1000, 1e-3, 1e-5), 1e-5, 1e-12);
    CHECK_NEAR(nlp_lr_linear(550, 100, 1000, 1e-3, 0), 5e-4, 1e-12);
    CHECK_NEAR(nlp_lr_constant(10, 0, 3e-4), 3e-4, 1e-15);
    free(p), free(g1), free(g2), free(m), free(v), free(pd), free(md), free(vd), free(g);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    nlp_rng_seed(&R, 42);
    RUN(test_gemm);
    RUN(test_gemm_bf16);
    RUN(test_linear);
    RUN(test_layernorm);
    RUN(test_activations);
    RUN(test_glu);
    RUN(test_rmsnorm);
    RUN(test_rope);
    RUN(test_dropout);
    RUN(test_embeddings);
    RUN(test_attention);
    RUN(test_xent);
    RUN(test_xent_fused);
    RUN(test_lazy_grad);
    RUN(test_optim);
    RUN(test_nonfinite);
    return TEST_END();
}
