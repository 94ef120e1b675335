/*
 * genbench — generation speed of the decoder (lib/decode over the KV cache),
 * the workloads of shared/peers/pytorch_bench.py, and the machine's memory
 * read bandwidth that bounds them.
 *
 *   genbench gen NAME [-t THREADS] [-r REPS] [--bf16]
 *       NAME_gen   new tokens/s: greedy, batch 1, a 16-token random prompt, new
 *                  tokens up to the context (gpt_small: T 256; gpt2_124m, smollm_135m: 64), the
 *                  prompt's forward pass included, model creation excluded (as the
 *                  peer); median of REPS runs
 *       NAME_gen_gbs  the weight bytes one new token reads (every matrix, the tied
 *                  output embedding counted once) × tokens/s
 *   genbench bw [-t THREADS] [-r REPS]
 *       mem_read_bw   GB/s summing a 1 GiB array with THREADS threads, best of REPS
 *   genbench sample [-r REPS]
 *       sample_gpt2_defaults  µs to draw one token from 50,257 logits (N(0, 3²),
 *                  a fixed seed) with generate's defaults: temperature 0.8,
 *                  top-k 40, top-p 0.95; median over REPS runs of 200 draws
 *       sample_gpt2_top_p     the same with top-p 0.9 alone (top-k 0)
 *
 * Models: gpt_small (L4 C256 H4 V8192) and gpt2_124m (L12 C768 H12 V50257),
 * N(0, 0.02) weights from a fixed seed (the peer's shapes and init);
 * smollm_135m, the LLaMA block of SmolLM-135M's shape (L30 C576 H9, 3 KV
 * heads, d-ff 1536, V49152, tied), random N(0, 0.02) weights, like
 * gpt2_124m: 16 prompt tokens, 48 new.
 */
#include "common/cli.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/rng.h"
#include "base/thread.h"
#include "decode/decode.h"
#include "model/config.h"
#include "model/model.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what)
{
    fprintf(stderr, "genbench: %s: %s\n", what, nlp_errmsg());
    exit(1);
}

static int gen(const char *name, int reps, int bf16, int int8)
{
    const char *ov_small[] = {"arch=gpt", "layers=4", "d-model=256", "heads=4", "d-ff=1024", "vocab-size=8192",
                              "max-positions=1024", NULL};
    const char *ov_124m[] = {"arch=gpt", "max-positions=1024", NULL}, *ov_none[] = {NULL};
    int T;
    const char **ov;
    const char *preset;
    if (!strcmp(name, "gpt_small")) ov = ov_small, preset = NULL, T = 256;
    else if (!strcmp(name, "gpt2_124m")) ov = ov_124m, preset = "gpt2", T = 64;
    else if (!strcmp(name, "smollm_135m")) ov = ov_none, preset = "smollm-135m", T = 64;
    else {
        fprintf(stderr, "genbench: unknown workload '%s' (gpt_small, gpt2_124m, smollm_135m)\n", name);
        return 2;
    }
    nlp_model_config cfg;
    nlp_model *m;
    if (nlp_model_config_build(&cfg, preset, NULL, 0, ov) || nlp_model_new(&m, &cfg, 0)) die("model");
    if (nlp_model_set_inference_layout(m) || (bf16 && nlp_model_set_inference_bf16(m)) ||
        (int8 && nlp_model_set_inference_int8(m)))
        die("inference layout");
    const int P = 16, n = T - P;
    nlp_rng r;
    nlp_rng_seed(&r, 1);
    int32_t prompt[16];
    for (int i = 0; i < P; i++) prompt[i] = (int32_t)nlp_rng_below(&r, (uint64_t)cfg.vocab_size);
    double *ts = malloc((size_t)(reps + 1) * sizeof *ts);
    nlp_cache *c;
    if (!ts || nlp_cache_new(&c, m, 1, T)) die("cache");
    for (int rep = -1; rep < reps; rep++) { /* one warm-up */
        nlp_cache_reset(c);
        nlp_ids hist = {0};
        nlp_ids_append(&hist, prompt, P);
        nlp_gen_opts g = {.max_new = n, .eos = -1, .sampler = nlp_sampler_greedy()};
        double t0 = now();
        if (nlp_decode_feed(m, c, 1, P, prompt) || nlp_generate_rows(m, c, 1, &g, &hist)) die("generate");
        double t = now() - t0;
        if (hist.n != (size_t)T) {
            fprintf(stderr, "genbench: generated %zu tokens, expected %d\n", hist.n - P, n);
            return 1;
        }
        nlp_ids_free(&hist);
        if (rep >= 0) ts[rep] = t;
    }
    qsort(ts, (size_t)reps, sizeof *ts, cmp_d);
    double med = reps % 2 ? ts[reps / 2] : (ts[reps / 2 - 1] + ts[reps / 2]) / 2, tps = n / med;
    /* bytes per new token: every parameter but a position table, once (the
     * tied output embedding once; the keys and values of the cache, a few
     * hundred KB at these lengths, not counted); int8: the quantized copy */
    const int table = cfg.arch == NLP_ARCH_GPT && cfg.positions == NLP_POS_LEARNED;
    double params = (double)nlp_model_param_count(m) - (table ? (double)cfg.max_positions * cfg.d_model : 0);
    double bytes = int8 ? (double)nlp_model_int8_bytes(m) : params * (bf16 ? 2 : 4);
    const char *sfx = int8 ? "_int8" : bf16 ? "_bf16" : "";
    printf("%s_gen%s\t%.1f\ttokens/s\n", name, sfx, tps);
    printf("%s_gen%s_gbs\t%.1f\tGB/s\n", name, sfx, bytes * tps / 1e9);
    nlp_cache_free(c);
    nlp_model_free(m);
    free(ts);
    return 0;
}

typedef float v16 __attribute__((vector_size(64)));

static int bw(int reps)
{
    const size_t n = (size_t)1 << 28; /* 1 GiB of floats */
    float *a = nlp_malloc(n * sizeof *a);
    if (!a) die("memory");
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) a[i] = (float)(i & 7);
    double best = 0;
    volatile float sink = 0;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now();
        float total = 0;
#pragma omp parallel reduction(+ : total)
        {
            /* four independent 16-lane sums per thread over its contiguous share */
            int t = omp_get_thread_num(), nt = omp_get_num_threads();
            size_t lo = n / 64 * t / nt * 64, hi = n / 64 * (t + 1) / nt * 64;
            v16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
            for (size_t i = lo; i < hi; i += 64) {
                v16 x0, x1, x2, x3;
                memcpy(&x0, a + i, 64), memcpy(&x1, a + i + 16, 64), memcpy(&x2, a + i + 32, 64), memcpy(&x3, a + i + 48, 64);
                s0 += x0, s1 += x1, s2 += x2, s3 += x3;
            }
            v16 s = s0 + s1 + s2 + s3;
            for (int j = 0; j < 16; j++) total += s[j];
        }
        double gbs = (double)n * sizeof *a / (now() - t0) / 1e9;
        sink += total;
        if (gbs > best) best = gbs;
    }
    (void)sink;
    printf("mem_read_bw\t%.1f\tGB/s\n", best);
    free(a);
    return 0;
}

/* µs a draw of nlp_sample with the given limits over V logits, the median
 * of reps runs of 200 draws (each draw on a fresh copy of the row). */
static double sample_us(const float *row, int V, int top_k, double top_p, int reps)
{
    float *l = nlp_malloc((size_t)V * sizeof *l);
    int32_t *work = nlp_malloc((size_t)V * sizeof *work);
    double *t = nlp_malloc((size_t)reps * sizeof *t);
    if (!l || !work || !t) cli_fail(NLP_ENOMEM);
    nlp_sampler s = {.temperature = 0.8, .top_k = top_k, .top_p = top_p, .repetition_penalty = 1};
    nlp_rng_seed(&s.rng, 1);
    long sink = 0;
    for (int r = 0; r < reps; r++) {
        double el = 0;
        for (int d = 0; d < 200; d++) {
            memcpy(l, row, (size_t)V * sizeof *l);
            double t0 = now();
            sink += nlp_sample(&s, l, V, NULL, 0, work);
            el += now() - t0;
        }
        t[r] = el / 200 * 1e6;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    double med = t[reps / 2];
    free(l), free(work), free(t);
    return sink < 0 ? -1 : med;
}

static int sample(int reps)
{
    enum { V = 50257 };
    float *row = nlp_malloc(V * sizeof *row);
    if (!row) cli_fail(NLP_ENOMEM);
    nlp_rng r;
    nlp_rng_seed(&r, 7);
    for (int i = 0; i < V; i++) row[i] = (float)(3 * nlp_rng_normal(&r));
    printf("sample_gpt2_defaults\t%.1f\tus\n", sample_us(row, V, 40, 0.95, reps));
    printf("sample_gpt2_top_p\t%.1f\tus\n", sample_us(row, V, 0, 0.9, reps));
    free(row);
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
    cli_prog = "genbench";
    int threads = 2, reps = 5, bf16 = 0, int8 = 0;
    const char *cmd = argc > 1 ? argv[1] : NULL, *name = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = int_arg("-t", argv[++i], 1, 4096);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = int_arg("-r", argv[++i], 1, 1000000);
        else if (!strcmp(argv[i], "--bf16")) bf16 = 1;
        else if (!strcmp(argv[i], "--int8")) int8 = 1;
        else if (!name) name = argv[i];
    }
    if (reps < 1) reps = 1;
    /* as generate: libgomp's default bounded spinning, not nlp_threads_passive (thread.h) */
    nlp_threads_set(threads);
    if (cmd && !strcmp(cmd, "gen") && name) return gen(name, reps, bf16, int8);
    if (cmd && !strcmp(cmd, "bw")) return bw(reps < 5 ? 5 : reps);
    if (cmd && !strcmp(cmd, "sample")) return sample(reps);
    fprintf(stderr, "usage: genbench gen gpt_small|gpt2_124m [-t THREADS] [-r REPS] [--bf16|--int8]\n"
                    "       genbench bw [-t THREADS] [-r REPS]\n"
                    "       genbench sample [-r REPS]\n");
    return 2;
}
