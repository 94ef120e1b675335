/*
 * trainbench — throughput of one training step of the engine, next to what
 * the CPU can do, for tools/bench/train.sh.
 *
 *   trainbench kernels
 *       one line: the fp32 kernels nlp_gemm runs and the bf16 path the CPU
 *       offers (amx, avx512bf16 or none), for the header of saved results
 *   trainbench peak  [-t THREADS] [-r REPS]
 *       fp32_fma_peak    FMA throughput, best of at least 10 runs: every thread runs independent
 *                        vfmadd chains (AVX-512 when the CPU has it, else AVX2)
 *       fp32_sgemm_peak  nlp_gemm (our kernels, sgemm.h) on 2048² and 3072² squares, the best median
 *       fp32_kernels     which kernels nlp_gemm runs: avx512, avx2 or generic (ours), or
 *                        "openblas (CORE)" under NLPIPE_GEMM=openblas
 *   trainbench train NAME [-t THREADS] [-r REPS] [--bf16] [-s KEY=VALUE]...
 *       NAME is gpt_small (GPT L4 C256 H4, T256 B8, V8192) or gpt2_124m
 *       (GPT-2 124M, T64 B4), as in shared/peers/pytorch_bench.py (same
 *       1024-row position table, dropout 0). One step = forward with loss,
 *       backward into gradients marked zero (nlp_params_zero_grad_lazy: each
 *       layer's product writes its weight gradient), AdamW (lr 3e-4, weight
 *       decay 0.1), as the training loop does (and as the peer's
 *       zero_grad(set_to_none=True)).
 *       Prints NAME_train (tokens/s), NAME_train_gflops (GFLOP/s, model FLOPs:
 *       6·params·tokens + attention, see nlp_model_train_flops) and the median
 *       step time on stderr; with --bf16 (bf16 matrix products, as pretrain
 *       --bf16) the names end in _bf16: NAME_train_bf16, NAME_train_bf16_gflops.
 *
 *   trainbench train encdec [-t THREADS] [-r REPS] [--bf16]
 *       the encoder-decoder of shared/peers/pytorch_bench.py: 3+3 layers,
 *       d 256, 4 heads, ff 1024, V 8000 shared, B 32, S = T = 64, label
 *       smoothing 0.1, dropout 0; Adam β (0.9, 0.98) ε 1e-9. Prints
 *       encdec_train (target tokens/s) and encdec_train_gflops.
 *   trainbench train bert_small [-t THREADS] [-r REPS] [--bf16]
 *       BERT L4 C256 H4 FF1024, T128 B16, V8192 (512 positions, dropout 0.1):
 *       MLM with 15% of the positions labelled + NSP, AdamW (weight decay
 *       0.01), as the peer's bert_small_train. Prints bert_small_train
 *       (tokens/s) and bert_small_train_gflops.
 *   trainbench beam encdec [-t THREADS] [-r REPS]
 *       beam 4 (length penalty 0.6) over 32 random source sentences of 64
 *       tokens, 64 decode steps, as the peer's encdec_beam: one batch through
 *       nlp_translate (lib/decode), the path `translate` takes. Prints
 *       encdec_beam (sentences/s).
 *
 * Output lines: name<TAB>value<TAB>unit, medians of REPS timed runs after one
 * untimed warm-up.
 */
#include "common/cli.h"
#include "base/err.h"
#include "base/prof.h"
#include "base/thread.h"
#include "decode/translate.h"
#include "model/model.h"
#include "nn/gemm.h"
#include "nn/optim.h"

#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// --- FMA peak

#define CHAINS 12

/* Twelve independent chains in named registers (an array would live in memory). */
#define FMA12(T, fmadd, m, c)                                                                          \
    a0 = fmadd(a0, m, c), a1 = fmadd(a1, m, c), a2 = fmadd(a2, m, c), a3 = fmadd(a3, m, c),             \
    a4 = fmadd(a4, m, c), a5 = fmadd(a5, m, c), a6 = fmadd(a6, m, c), a7 = fmadd(a7, m, c),             \
    a8 = fmadd(a8, m, c), a9 = fmadd(a9, m, c), a10 = fmadd(a10, m, c), a11 = fmadd(a11, m, c)

__attribute__((target("avx512f"))) static float fma512(long iters)
{
    __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    __m512 a0 = _mm512_set1_ps(0), a1 = _mm512_set1_ps(1), a2 = _mm512_set1_ps(2), a3 = _mm512_set1_ps(3),
           a4 = _mm512_set1_ps(4), a5 = _mm512_set1_ps(5), a6 = _mm512_set1_ps(6), a7 = _mm512_set1_ps(7),
           a8 = _mm512_set1_ps(8), a9 = _mm512_set1_ps(9), a10 = _mm512_set1_ps(10), a11 = _mm512_set1_ps(11);
    for (long k = 0; k < iters; k++) FMA12(__m512, _mm512_fmadd_ps, m, c);
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float fma256(long iters)
{
    __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2), a3 = _mm256_set1_ps(3),
           a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5), a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7),
           a8 = _mm256_set1_ps(8), a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10), a11 = _mm256_set1_ps(11);
    for (long k = 0; k < iters; k++) FMA12(__m256, _mm256_fmadd_ps, m, c);
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    float o[8];
    _mm256_storeu_ps(o, s);
    return o[0] + o[7];
}

static double fma_peak(int reps)
{
    int wide = nlp_cpu_has_avx512f();
    const long iters = 20000000;
    const double flops_per_thread = (double)iters * CHAINS * (wide ? 16 : 8) * 2;
    double t[64];
    volatile float sink = 0;
    for (int r = 0; r < reps && r < 64; r++) {
        int nt = omp_get_max_threads();
        double t0 = now();
#pragma omp parallel
        {
            float s = wide ? fma512(iters) : fma256(iters);
#pragma omp atomic
            sink += s;
        }
        t[r] = nt * flops_per_thread / (now() - t0) / 1e9;
    }
    (void)sink;
    /* A peak is the best the hardware showed, not a typical run: on a shared
     * machine a median is pulled down by whoever else holds a core, and a
     * training step then appears to run above "peak". */
    double best = 0;
    for (int r = 0; r < reps && r < 64; r++)
        if (t[r] > best) best = t[r];
    return best;
}

static double sgemm_peak(int reps)
{
    double best = 0;
    int sizes[2] = {2048, 3072};
    for (int s = 0; s < 2; s++) {
        int n = sizes[s];
        float *A = malloc((size_t)n * n * 4), *B = malloc((size_t)n * n * 4), *C = malloc((size_t)n * n * 4);
        if (!A || !B || !C) {
            free(A), free(B), free(C);
            continue;
        }
        for (size_t i = 0; i < (size_t)n * n; i++) A[i] = B[i] = (float)((i % 17) - 8) * 0.01f;
        nlp_gemm(0, 0, n, n, n, 1, A, n, B, n, 0, C, n);
        double t[64];
        for (int r = 0; r < reps && r < 64; r++) {
            double t0 = now();
            nlp_gemm(0, 0, n, n, n, 1, A, n, B, n, 0, C, n);
            t[r] = nlp_gemm_flops(n, n, n) / (now() - t0) / 1e9;
        }
        double m = median(t, reps < 64 ? reps : 64);
        if (m > best) best = m;
        free(A), free(B), free(C);
    }
    return best;
}

// --- training step

static void fail(int rc)
{
    fprintf(stderr, "trainbench: %s\n", nlp_errmsg());
    exit(nlp_exit_code(rc));
}

/* The per-phase table of --profile: each phase's milliseconds per step, its
 * share of the step, and its rate (GFLOP/s for products, GB/s for passes
 * over memory, from the bytes each phase must read and write at least). */
static void profile_report(double step_s, int steps, double peak)
{
    const nlp_prof_row *r;
    int n = nlp_prof_rows(&r);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += r[i].sec;
    fprintf(stderr, "%-22s %9s %7s %12s %8s\n", "phase", "ms/step", "% step", "rate", "% peak");
    for (int i = 0; i < n; i++) {
        double ms = r[i].sec / steps * 1e3, pc = 100 * r[i].sec / steps / step_s;
        char rate[32] = "", pk[16] = "";
        if (r[i].flops > 0) {
            double g = r[i].flops / r[i].sec / 1e9;
            snprintf(rate, sizeof rate, "%.1f GFLOP/s", g);
            if (peak > 0) snprintf(pk, sizeof pk, "%.1f", 100 * g / peak);
        } else if (r[i].bytes > 0) {
            snprintf(rate, sizeof rate, "%.1f GB/s", r[i].bytes / r[i].sec / 1e9);
        }
        fprintf(stderr, "%-22s %9.2f %7.1f %12s %8s\n", r[i].name, ms, pc, rate, pk);
    }
    double other = step_s - sum / steps;
    fprintf(stderr, "%-22s %9.2f %7.1f\n", "(not in a phase)", other * 1e3, 100 * other / step_s);
    fprintf(stderr, "%-22s %9.2f %7.1f\n", "step", step_s * 1e3, 100.0);
}

static double profile_peak; /* the FMA peak measured before a profiled run */

static int train(const char *name, int reps, const char *const *sets, int profile)
{
    const char *preset;
    int B, T, S = 0, mt = 0;
    if (!strcmp(name, "gpt_small")) preset = "small", B = 8, T = 256;
    else if (!strcmp(name, "gpt2_124m")) preset = "gpt2", B = 4, T = 64;
    else if (!strcmp(name, "encdec")) preset = "small", B = 32, T = 64, S = 64, mt = 1;
    else if (!strcmp(name, "bert_small")) preset = "small", B = 16, T = 128, mt = 2;
    else {
        fprintf(stderr, "trainbench: unknown workload '%s' (gpt_small, gpt2_124m, encdec, bert_small)\n", name);
        return 2;
    }
    /* as the peer: a 1024-row position table (gpt), 256 (encdec), no dropout */
    const char *gbase[] = {"arch=gpt", "max-positions=1024", "dropout=0", "attention-dropout=0"};
    const char *ebase[] = {"arch=transformer", "vocab-size=8000", "max-positions=256", "dropout=0"};
    /* bert: the peer's BertConfig (L4 C256 H4 FF1024, 512 positions, dropout 0.1) */
    const char *bbase[] = {"arch=bert", "vocab-size=8192", "max-positions=512", "type-vocab-size=2"};
    const char *const *base = mt == 1 ? ebase : mt == 2 ? bbase : gbase;
    const char *ov[64];
    int n = 0;
    for (int i = 0; i < 4; i++) ov[n++] = base[i];
    for (int i = 0; sets[i] && n < 63; i++) ov[n++] = sets[i];
    ov[n] = NULL;
    nlp_model_config cfg;
    int rc = nlp_model_config_build(&cfg, preset, NULL, 0, ov);
    if (rc) fail(rc);
    nlp_model *m;
    if ((rc = nlp_model_new(&m, &cfg, 0))) fail(rc);
    nlp_model_set_training(m, 1);
    nlp_params *p = nlp_model_params(m);
    if ((rc = nlp_params_enable_grad(p))) fail(rc);
    nlp_optim_config oc = nlp_optim_default();
    oc.weight_decay = 0.1;
    if (mt == 1) oc.kind = NLP_OPTIM_ADAM, oc.weight_decay = 0, oc.beta2 = 0.98, oc.eps = 1e-9;
    if (mt == 2) oc.weight_decay = 0.01, oc.beta2 = 0.999; /* torch AdamW's defaults, as the peer */
    nlp_optim opt;
    if ((rc = nlp_optim_init(&opt, &oc, nlp_params_numel(p)))) fail(rc);
    int32_t *ids = malloc((size_t)B * (T + 1 + S) * sizeof *ids);
    nlp_rng r;
    nlp_rng_seed(&r, 1);
    for (int i = 0; i < B * (T + 1 + S); i++) ids[i] = 3 + (int32_t)nlp_rng_below(&r, (uint64_t)cfg.vocab_size - 3);
    nlp_batch b = {.B = B, .T = T, .ids = ids, .labels = ids};
    int32_t *tin = ids + (size_t)B * S, *tout = NULL, *btype = NULL, *bmlm = NULL, *bnsp = NULL;
    if (mt == 2) { /* the peer's batch: segments half and half, 15% of positions labelled, NSP 0/1 */
        btype = malloc((size_t)B * T * sizeof *btype), bmlm = malloc((size_t)B * T * sizeof *bmlm);
        bnsp = malloc((size_t)B * sizeof *bnsp);
        for (int i = 0; i < B * T; i++) {
            ids[i] = 5 + (int32_t)nlp_rng_below(&r, (uint64_t)cfg.vocab_size - 5);
            btype[i] = i % T >= T / 2;
            bmlm[i] = nlp_rng_double(&r) < 0.15 ? ids[i] : -100;
        }
        for (int i = 0; i < B; i++) bnsp[i] = (int32_t)nlp_rng_below(&r, 2);
        b = (nlp_batch){.B = B, .T = T, .ids = ids, .labels = bmlm, .type_ids = btype, .nsp_labels = bnsp};
    }
    if (mt == 1) { /* src [B,S]; decoder input BOS y and targets y shifted, from one [B,T+1] block */
        tout = malloc((size_t)B * T * sizeof *tout);
        for (int i = 0; i < B; i++) {
            int32_t *row = tin + (size_t)i * (T + 1);
            row[0] = cfg.bos_id;
            memcpy(tout + (size_t)i * T, row + 1, (size_t)T * sizeof *tout);
        }
        int32_t *in = malloc((size_t)B * T * sizeof *in);
        for (int i = 0; i < B; i++) memcpy(in + (size_t)i * T, tin + (size_t)i * (T + 1), (size_t)T * sizeof *in);
        tin = in;
        b = (nlp_batch){.B = B, .T = T, .S = S, .src = ids, .tgt_in = tin, .tgt_out = tout};
    }
    double t[256], total = 0;
    double loss = 0;
    const size_t np = nlp_params_numel(p);
    for (int k = -1; k < reps && k < 256; k++) {
        if (k == 0 && profile) nlp_prof_enable(1); /* after the warm-up step */
        double t0 = now();
        /* as the training loop */
        nlp_losses L;
        nlp_params_zero_grad_lazy(p);
        if ((rc = nlp_model_forward(m, &b, &L)) || (rc = nlp_model_backward(m))) fail(rc);
        NLP_PROF("optimizer", 0, 28.0 * np, nlp_optim_step(&opt, p, nlp_params_grad(p), 3e-4));
        if (k >= 0) t[k] = now() - t0, total += t[k];
        loss = L.loss;
    }
    nlp_prof_enable(0);
    double s = median(t, reps < 256 ? reps : 256);
    double flops = nlp_model_train_flops(m, B, T);
    fprintf(stderr, "trainbench: %s: %zu parameters, %.1f GFLOP per step, median step %.4f s of %d (loss %.3f), %d threads%s\n",
            name, nlp_model_param_count(m), flops / 1e9, s, reps, loss, omp_get_max_threads(),
            nlp_gemm_get_mode() == NLP_GEMM_BF16 ? ", bf16 products" : "");
    const char *sfx = nlp_gemm_get_mode() == NLP_GEMM_BF16 ? "_bf16" : "";
    printf("%s_train%s\t%.1f\t%s\n", name, sfx, B * T / s, mt == 1 ? "tgt tokens/s" : "tokens/s");
    printf("%s_train%s_gflops\t%.1f\tGFLOP/s\n", name, sfx, flops / s / 1e9);
    if (profile) {
        fprintf(stderr, "trainbench: %s per phase, mean of %d steps (%.4f s), products on %s:\n", name, reps,
                total / reps, nlp_gemm_kernel_name());
        profile_report(total / reps, reps, profile_peak);
    }
    nlp_optim_free(&opt);
    nlp_model_free(m);
    if (mt == 1) free(tin), free(tout);
    free(btype), free(bmlm), free(bnsp);
    free(ids);
    return 0;
}

// --- beam search

static int beam(const char *name, int reps, int profile)
{
    if (strcmp(name, "encdec") != 0) {
        fprintf(stderr, "trainbench: unknown beam workload '%s' (encdec)\n", name);
        return 2;
    }
    const int B = 32, S = 64;
    const char *ov[] = {"arch=transformer", "vocab-size=8000", "max-positions=256", "dropout=0", NULL};
    nlp_model_config cfg;
    int rc = nlp_model_config_build(&cfg, "small", NULL, 0, ov);
    if (rc) fail(rc);
    nlp_model *m;
    if ((rc = nlp_model_new(&m, &cfg, 0))) fail(rc);
    nlp_rng r;
    nlp_rng_seed(&r, 1);
    nlp_ids src[32] = {{0}}, hyp[32] = {{0}};
    for (int i = 0; i < B; i++)
        for (int k = 0; k < S; k++) nlp_ids_push(&src[i], 3 + (int32_t)nlp_rng_below(&r, (uint64_t)cfg.vocab_size - 3));
    nlp_translate_opts o = nlp_translate_defaults();
    o.beams = 4, o.alpha = 0.6, o.max_len = 64, o.batch = B;
    double t[256];
    size_t out = 0;
    double total = 0;
    for (int k = -1; k < reps && k < 256; k++) {
        if (k == 0 && profile) nlp_prof_enable(1);
        double t0 = now();
        if ((rc = nlp_translate(m, src, B, &o, hyp, NULL))) fail(rc);
        if (k >= 0) total += now() - t0;
        if (k >= 0) t[k] = now() - t0;
        out = 0;
        for (int i = 0; i < B; i++) out += hyp[i].n;
    }
    double s = median(t, reps < 256 ? reps : 256);
    fprintf(stderr, "trainbench: encdec beam 4: %d sentences of %d tokens, %.1f output tokens each, median %.4f s of %d, "
            "%d threads\n", B, S, (double)out / B, s, reps, omp_get_max_threads());
    printf("encdec_beam\t%.2f\tsentences/s\n", B / s);
    if (profile) {
        nlp_prof_enable(0);
        fprintf(stderr, "trainbench: encdec beam per phase, mean of %d runs (%.4f s), products on %s:\n", reps,
                total / reps, nlp_gemm_kernel_name());
        profile_report(total / reps, reps, profile_peak);
    }
    for (int i = 0; i < B; i++) nlp_ids_free(&src[i]), nlp_ids_free(&hyp[i]);
    nlp_model_free(m);
    return 0;
}

/* An integer option value in [lo, hi], or a usage error (a bare conversion
 * took "-t abc" for 0 threads, and "-t 100000" overflowed OpenMP's stacks). */
static int int_arg(const char *flag, const char *s, long lo, long hi)
{
    long v;
    if (cli_parse_long(s, &v)) cli_die(NLP_EXIT_USAGE, "invalid value for %s: %s", flag, nlp_errmsg());
    if (v < lo || v > hi) cli_die(NLP_EXIT_USAGE, "invalid value for %s: %ld is out of range (%ld to %ld)", flag, v, lo, hi);
    return (int)v;
}

int main(int argc, char **argv)
{
    cli_prog = "trainbench";
    /* training as pretrain runs it, with passive OpenMP threads; beam search
     * as translate runs it, with libgomp's default bounded spinning (thread.h) */
    if (argc < 2 || strcmp(argv[1], "beam") != 0) nlp_threads_passive(argc, argv);
    int threads = 2, reps = 5, bf16 = 0, profile = 0;
    const char *sets[64] = {0};
    int nsets = 0;
    const char *cmd = NULL, *what = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = int_arg("-t", argv[++i], 1, 4096);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = int_arg("-r", argv[++i], 1, 1000000);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc && nsets < 63) sets[nsets++] = argv[++i];
        else if (!strcmp(argv[i], "--bf16")) bf16 = 1;
        else if (!strcmp(argv[i], "--profile")) profile = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("Usage: trainbench peak|train|beam [NAME] [-t THREADS] [-r REPS] [--bf16] [--profile] [-s KEY=VALUE]...\n");
            return 0;
        } else if (!cmd) cmd = argv[i];
        else if (!what) what = argv[i];
        else {
            fprintf(stderr, "trainbench: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    nlp_threads_set(threads);
    if (bf16) {
        int rc = nlp_gemm_set_mode(NLP_GEMM_BF16);
        if (rc) fail(rc);
    }
    if (cmd && !strcmp(cmd, "kernels")) {
        /* one line for the header of saved benchmark results */
        printf("fp32 %s%s, bf16 %s\n", nlp_gemm_kernel_name(), getenv("NLPIPE_GEMM") ? " (NLPIPE_GEMM)" : "",
               nlp_cpu_has_amx_bf16() ? "amx" : nlp_cpu_has_avx512bf16() ? "avx512bf16" : "none");
        return 0;
    }
    if (cmd && !strcmp(cmd, "peak")) {
        printf("fp32_fma_peak\t%.1f\tGFLOP/s\n", fma_peak(reps < 10 ? 10 : reps));
        printf("fp32_sgemm_peak\t%.1f\tGFLOP/s\n", sgemm_peak(reps));
        /* which kernels those figures (and every product) ran on */
        printf("fp32_kernels\t%s\t%s\n", nlp_gemm_kernel_name(), getenv("NLPIPE_GEMM") ? "(NLPIPE_GEMM)" : "(ours)");
        return 0;
    }
    if (cmd && !strcmp(cmd, "train") && what) {
        if (profile) profile_peak = fma_peak(10);
        return train(what, reps, sets, profile);
    }
    if (cmd && !strcmp(cmd, "beam") && what) {
        if (profile) profile_peak = fma_peak(10);
        return beam(what, reps, profile);
    }
    fprintf(stderr, "trainbench: expected 'kernels', 'peak', 'train NAME' or 'beam NAME'\n");
    return 2;
}
