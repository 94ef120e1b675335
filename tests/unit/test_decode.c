/*
 * test_decode.c — lib/decode and nn/gemv: few-row products against a
 * straightforward double-precision product (fp32 and bf16 weights, every
 * layout and stride), the sampler's distributions and limits, and beam search
 * against an exhaustive search on a tiny model; continuation scores (full
 * passes and the shared-context cache) against log-softmax of one forward
 * pass per item.
 */
#include "base/err.h"
#include "base/rng.h"
#include "decode/decode.h"
#include "decode/score.h"
#include "model/config.h"
#include "model/model.h"
#include "nn/gemv.h"
#include "nn/safetensors.h"
#include "test.h"

#include <omp.h>

static float bf16_value(float f)
{
    uint32_t u = (uint32_t)nlp_f32_to_bf16(f) << 16;
    float r;
    memcpy(&r, &u, sizeof r);
    return r;
}

static void test_gemv(void)
{
    nlp_rng r;
    nlp_rng_seed(&r, 7);
    int bad = 0, runs = 0;
    for (int threads = 1; threads <= 3; threads++) {
        omp_set_num_threads(threads);
        for (int it = 0; it < 150; it++) {
            int M = 1 + (int)nlp_rng_below(&r, 6), N = 1 + (int)nlp_rng_below(&r, 90),
                K = 1 + (int)nlp_rng_below(&r, 90), tw = (int)nlp_rng_below(&r, 2), bf = (int)nlp_rng_below(&r, 2);
            if (it % 10 == 0) N = 300 + (int)nlp_rng_below(&r, 200), K = 250 + (int)nlp_rng_below(&r, 100);
            float beta = (float)nlp_rng_below(&r, 2), alpha = nlp_rng_below(&r, 2) ? 1.0f : 0.375f;
            int ldx = K + (int)nlp_rng_below(&r, 3), ldw = (tw ? K : N) + (int)nlp_rng_below(&r, 3),
                ldy = N + (int)nlp_rng_below(&r, 3), rows = tw ? N : K;
            float *x = malloc(sizeof(float) * M * ldx), *W = malloc(sizeof(float) * rows * ldw),
                  *y = malloc(sizeof(float) * M * ldy);
            uint16_t *Wb = malloc(sizeof(uint16_t) * rows * ldw);
            double *ref = malloc(sizeof(double) * M * ldy);
            for (int i = 0; i < M * ldx; i++) x[i] = (float)(nlp_rng_double(&r) - 0.5);
            for (int i = 0; i < rows * ldw; i++) W[i] = (float)(nlp_rng_double(&r) - 0.5);
            nlp_to_bf16(W, Wb, (size_t)rows * ldw);
            for (int i = 0; i < M * ldy; i++) ref[i] = y[i] = (float)(nlp_rng_double(&r) - 0.5);
            double tol = 0;
            for (int m = 0; m < M; m++)
                for (int n = 0; n < N; n++) {
                    double s = 0, a = 0;
                    for (int k = 0; k < K; k++) {
                        float w = tw ? W[n * ldw + k] : W[k * ldw + n];
                        if (bf) w = bf16_value(w);
                        s += (double)x[m * ldx + k] * w;
                        a += fabs((double)x[m * ldx + k] * w);
                    }
                    ref[m * ldy + n] = (beta != 0 ? ref[m * ldy + n] : 0) + alpha * s;
                    if (a > tol) tol = a;
                }
            nlp_gemv(M, N, K, alpha, x, ldx, bf ? (const void *)Wb : W, ldw, tw, bf, beta, y, ldy);
            for (int m = 0; m < M; m++)
                for (int n = 0; n < N; n++)
                    if (fabs(y[m * ldy + n] - ref[m * ldy + n]) > 1e-6 * (tol + 1)) bad++;
            runs++;
            free(x), free(W), free(y), free(Wb), free(ref);
        }
    }
    omp_set_num_threads(2);
    CHECK(runs == 450);
    CHECK(bad == 0);
    /* bf16 rounding: nearest even, NaN stays NaN */
    float v[4] = {1.0f, 1.00390625f, 1.01171875f, NAN};
    uint16_t h[4];
    nlp_to_bf16(v, h, 4);
    CHECK(h[0] == 0x3F80 && h[1] == 0x3F80 && h[2] == 0x3F82 && (h[3] & 0x7F80) == 0x7F80 && (h[3] & 0x7F));
}

static void test_sampler(void)
{
    enum { V = 5 };
    int32_t work[V];
    float base[V] = {1.0f, 2.0f, 0.5f, 2.0f, -1.0f}, l[V];
    nlp_sampler s = nlp_sampler_greedy();
    memcpy(l, base, sizeof l);
    CHECK(nlp_sample(&s, l, V, NULL, 0, work) == 1); /* the first of the ties, as torch.argmax */
    float nanrow[3] = {NAN, 1.0f, 0.5f};
    CHECK(nlp_argmax(nanrow, 3) == 1);

    /* temperature 1, no limits: frequencies follow softmax */
    s.temperature = 1.0, s.top_k = 0, s.top_p = 1.0;
    nlp_rng_seed(&s.rng, 3);
    int count[V] = {0};
    const int draws = 200000;
    for (int i = 0; i < draws; i++) {
        memcpy(l, base, sizeof l);
        count[nlp_sample(&s, l, V, NULL, 0, work)]++;
    }
    double z = 0, p[V];
    for (int i = 0; i < V; i++) z += exp(base[i]);
    int ok = 1;
    for (int i = 0; i < V; i++) {
        p[i] = exp(base[i]) / z;
        double sd = sqrt(p[i] * (1 - p[i]) / draws);
        if (fabs((double)count[i] / draws - p[i]) > 5 * sd) ok = 0;
    }
    CHECK(ok);

    /* top-k 2: only ids 1 and 3, each half of the time */
    s.top_k = 2;
    memset(count, 0, sizeof count);
    for (int i = 0; i < 20000; i++) {
        memcpy(l, base, sizeof l);
        count[nlp_sample(&s, l, V, NULL, 0, work)]++;
    }
    CHECK(count[0] == 0 && count[2] == 0 && count[4] == 0);
    CHECK(abs(count[1] - count[3]) < 600);

    /* top-p: p = (0.237, 0.064, 0.644·½ ...): the smallest set reaching 0.5 is {1, 3} */
    s.top_k = 0, s.top_p = 0.5;
    memset(count, 0, sizeof count);
    for (int i = 0; i < 20000; i++) {
        memcpy(l, base, sizeof l);
        count[nlp_sample(&s, l, V, NULL, 0, work)]++;
    }
    CHECK(count[0] == 0 && count[2] == 0 && count[4] == 0 && count[1] > 0 && count[3] > 0);
    /* a tiny top-p keeps the most probable token only */
    s.top_p = 1e-9;
    memset(count, 0, sizeof count);
    for (int i = 0; i < 1000; i++) {
        memcpy(l, base, sizeof l);
        count[nlp_sample(&s, l, V, NULL, 0, work)]++;
    }
    CHECK(count[1] == 1000);

    /* repetition penalty: a seen positive logit is divided, a negative one multiplied */
    nlp_sampler g = nlp_sampler_greedy();
    g.repetition_penalty = 4.0;
    memcpy(l, base, sizeof l);
    int32_t seen[3] = {1, 3, 1};
    CHECK(nlp_sample(&g, l, V, seen, 3, work) == 0);
    CHECK(l[1] == 0.5f && l[3] == 0.5f && l[0] == 1.0f);
    float neg[2] = {-1.0f, -2.0f};
    int32_t seen0 = 0;
    CHECK(nlp_sample(&g, neg, 2, &seen0, 1, work) == 1 && neg[0] == -4.0f);
}

/* Exhaustive search over every continuation of n tokens (no EOS): the best
 * summed log-probability, by full forward passes. */
static double best_sequence(nlp_model *m, const int32_t *prompt, int P, int n, int V, int32_t *best)
{
    int total = 1;
    for (int i = 0; i < n; i++) total *= V;
    double bestlp = -INFINITY;
    int32_t ids[16];
    for (int c = 0; c < total; c++) {
        memcpy(ids, prompt, (size_t)P * sizeof *ids);
        for (int i = 0, v = c; i < n; i++, v /= V) ids[P + i] = v % V;
        nlp_batch b = {.B = 1, .T = P + n, .ids = ids};
        if (nlp_model_forward(m, &b, NULL)) return NAN;
        int rows, cols;
        const float *lg = nlp_model_logits(m, &rows, &cols);
        double lp = 0;
        float row[64];
        for (int i = 0; i < n; i++) {
            nlp_log_softmax(lg + (size_t)(P - 1 + i) * cols, row, cols);
            lp += row[ids[P + i]];
        }
        if (lp > bestlp) {
            bestlp = lp;
            memcpy(best, ids + P, (size_t)n * sizeof *best);
        }
    }
    return bestlp;
}

/* The sampler's limits as they read, the slow way: every id sorted by
 * probability (ties: the lower id first), top-k's head, its top-p prefix,
 * a draw from it. Top-p alone sums the probabilities in id order. */
static const float *ref_p;
static int ref_cmp(const void *a, const void *b)
{
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (ref_p[i] > ref_p[j]) return -1;
    if (ref_p[i] < ref_p[j]) return 1;
    return i - j;
}

static int32_t ref_sample(nlp_sampler *s, float *l, int V, int32_t *idx)
{
    const float inv = (float)(1.0 / s->temperature);
    float mx = -INFINITY;
    for (int i = 0; i < V; i++) {
        l[i] *= inv;
        if (l[i] > mx) mx = l[i];
    }
    double total = 0;
    for (int i = 0; i < V; i++) total += (l[i] = expf(l[i] - mx));
    if (!(s->top_k > 0 && s->top_k < V) && s->top_p >= 1.0) { /* no limit: in id order */
        double r = nlp_rng_double(&s->rng) * total, acc = 0;
        int32_t last = 0;
        for (int i = 0; i < V; i++) {
            if (l[i] <= 0) continue;
            acc += l[i];
            last = i;
            if (r < acc) return i;
        }
        return last;
    }
    for (int i = 0; i < V; i++) idx[i] = i;
    ref_p = l;
    qsort(idx, (size_t)V, sizeof *idx, ref_cmp);
    int n = s->top_k > 0 && s->top_k < V ? s->top_k : V;
    double kept = 0;
    for (int i = 0; i < n; i++) kept += l[idx[i]];
    if (n == V) kept = total;
    if (s->top_p < 1.0) {
        double acc = 0;
        int m = 0;
        while (m < n) {
            acc += l[idx[m++]] / kept;
            if (acc >= s->top_p) break;
        }
        n = m;
    }
    double sum = 0;
    for (int i = 0; i < n; i++) sum += l[idx[i]];
    double r = nlp_rng_double(&s->rng) * sum, acc = 0;
    for (int i = 0; i < n; i++) {
        acc += l[idx[i]];
        if (r < acc) return idx[i];
    }
    return idx[n - 1];
}

/* nlp_sample sorts only the head of the order it needs (the k-th largest
 * found by a pass or by quickselect, top-p's head by a threshold on the
 * mass): the same ids as sorting everything, over flat and peaked rows,
 * rows of many ties, rows of mostly zero probabilities (underflow, masked
 * logits), top-k below and above 256, top-p alone and with top-k. */
static void test_sampler_head(void)
{
    enum { V = 6000 };
    static float base[V], a[V], b[V];
    static int32_t work[V], idx[V];
    const int ks[] = {0, 1, 2, 40, 255, 256, 257, 1000, V - 1, V};
    const double ps[] = {1.0, 0.999, 0.95, 0.5, 0.1, 1e-9};
    nlp_rng r;
    nlp_rng_seed(&r, 11);
    int same = 0, runs = 0;
    for (int shape = 0; shape < 6; shape++) {
        for (int i = 0; i < V; i++) {
            double u = nlp_rng_double(&r);
            base[i] = shape == 0   ? (float)(u * 4)                /* flat */
                      : shape == 1 ? (float)(u * u * u * 30 - 10)  /* a few far ahead */
                      : shape == 2 ? (float)floor(u * 6)           /* six values: ties everywhere */
                      : shape == 4 ? (float)(nlp_rng_normal(&r) * 300) /* most probabilities underflow to 0 */
                      : shape == 5 && u < 0.7 ? -INFINITY           /* masked logits */
                                   : (float)(nlp_rng_normal(&r) * 3); /* normal */
        }
        for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
            for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++) {
                nlp_sampler x = {.temperature = 0.7, .top_k = ks[ki], .top_p = ps[pi], .repetition_penalty = 1};
                nlp_sampler y = x;
                nlp_rng_seed(&x.rng, 100 + ki * 10 + pi);
                nlp_rng_seed(&y.rng, 100 + ki * 10 + pi);
                for (int d = 0; d < 5; d++) {
                    memcpy(a, base, sizeof a);
                    memcpy(b, base, sizeof b);
                    runs++;
                    same += nlp_sample(&x, a, V, NULL, 0, work) == ref_sample(&y, b, V, idx);
                }
            }
    }
    CHECK(same == runs);
}

/* Beam search over the cache (rows reordered by index) against an exact
 * search by full passes, and against greedy; with learned positions, rotary
 * ones (the cache holds keys rotated at their positions: a reordered row's
 * history keeps its angles) and the LLaMA block with grouped keys. */
static void beam_check(const char *name, const char *const *ov)
{
    nlp_model_config cfg;
    nlp_model *m = NULL;
    if (!CHECK(nlp_model_config_build(&cfg, NULL, NULL, 0, ov) == 0)) return;
    if (!CHECK(nlp_model_new(&m, &cfg, 11) == 0)) return;
    const int V = 6, n = 4, P = 3;
    int agree = 0, better = 0;
    for (int trial = 0; trial < 6; trial++) {
        int32_t prompt[3] = {trial % V, (trial * 5 + 1) % V, (trial * 7 + 2) % V}, exact[8];
        double best = best_sequence(m, prompt, P, n, V, exact);
        /* a beam as wide as V^(n-1) keeps every prefix: beam search is exact */
        const int K = 216;
        nlp_cache *c = NULL;
        if (!CHECK(nlp_cache_new(&c, m, K, P + n) == 0)) break;
        int32_t *rows = malloc(sizeof(int32_t) * K * P);
        for (int k = 0; k < K; k++) memcpy(rows + k * P, prompt, sizeof prompt);
        CHECK(nlp_decode_feed(m, c, K, P, rows) == 0);
        nlp_beam_opts bo = {.beams = K, .max_new = n, .alpha = 0, .eos = -1, .early_stop = 1};
        nlp_ids out = {0};
        float score;
        CHECK(nlp_beam_search(m, c, 1, &bo, &out, &score, NULL) == 0);
        agree += out.n == (size_t)n && memcmp(out.v, exact, sizeof(int32_t) * n) == 0 && fabs(score - best) < 1e-4;
        /* a beam of 3 is never worse than greedy */
        nlp_cache_free(c);
        nlp_cache *g = NULL, *b3 = NULL;
        nlp_cache_new(&g, m, 1, P + n);
        nlp_cache_new(&b3, m, 3, P + n);
        nlp_decode_feed(m, g, 1, P, prompt);
        nlp_ids hist = {0}, o3 = {0};
        nlp_ids_append(&hist, prompt, P);
        nlp_gen_opts go = {.max_new = n, .eos = -1, .sampler = nlp_sampler_greedy()};
        nlp_generate_rows(m, g, 1, &go, &hist);
        int32_t seq[8];
        memcpy(seq, prompt, sizeof prompt);
        memcpy(seq + P, hist.v + P, sizeof(int32_t) * n);
        nlp_batch fb = {.B = 1, .T = P + n, .ids = seq};
        nlp_model_forward(m, &fb, NULL);
        int rws, cols;
        const float *lg = nlp_model_logits(m, &rws, &cols);
        double glp = 0;
        float row[64];
        for (int i = 0; i < n; i++) {
            nlp_log_softmax(lg + (size_t)(P - 1 + i) * cols, row, cols);
            glp += row[seq[P + i]];
        }
        for (int k = 0; k < 3; k++) memcpy(rows + k * P, prompt, sizeof prompt);
        nlp_decode_feed(m, b3, 3, P, rows);
        nlp_beam_opts b3o = {.beams = 3, .max_new = n, .alpha = 0, .eos = -1, .early_stop = 1};
        nlp_beam_search(m, b3, 1, &b3o, &o3, &score, NULL);
        better += score >= glp - 1e-4;
        nlp_ids_free(&hist), nlp_ids_free(&o3), nlp_ids_free(&out);
        nlp_cache_free(g), nlp_cache_free(b3);
        free(rows);
    }
    CHECK_MSG(agree == 6, "%s: beam search exact in %d of 6", name, agree);
    CHECK_MSG(better == 6, "%s: beam 3 at least greedy in %d of 6", name, better);

    /* EOS freezes a hypothesis and is not part of the result */
    nlp_cache *c = NULL;
    nlp_cache_new(&c, m, 2, 12);
    int32_t pr[4] = {1, 2, 1, 2};
    nlp_decode_feed(m, c, 2, 2, pr);
    /* the eos is whatever greedy picks first: the result then stops at once */
    int rows, cols;
    const float *lg = nlp_model_logits(m, &rows, &cols);
    int32_t first = nlp_argmax(lg + (size_t)(rows / 2 - 1) * cols, cols);
    nlp_beam_opts eo = {.beams = 1, .max_new = 8, .alpha = 0.6, .eos = first, .early_stop = 1};
    nlp_cache *c1 = NULL;
    nlp_cache_new(&c1, m, 1, 12);
    nlp_decode_feed(m, c1, 1, 2, pr);
    nlp_ids o1 = {0};
    CHECK(nlp_beam_search(m, c1, 1, &eo, &o1, NULL, NULL) == 0);
    CHECK(o1.n == 0);
    nlp_ids_free(&o1);
    nlp_cache_free(c1);
    nlp_cache_free(c);
    nlp_model_free(m);
}

static void test_beam(void)
{
    const char *gpt[] = {"arch=gpt", "vocab-size=6", "d-model=16", "heads=2", "d-ff=32", "layers=2",
                         "max-positions=16", "init-std=0.5", NULL};
    beam_check("gpt", gpt);
    const char *rope[] = {"arch=gpt", "vocab-size=6", "d-model=16", "heads=2", "kv-heads=1", "d-ff=32", "layers=2",
                          "max-positions=16", "init-std=0.5", "positions=rope", "rope-layout=interleaved",
                          "rope-theta=100", NULL};
    beam_check("gpt rope", rope);
    const char *llama[] = {"arch=llama", "vocab-size=6", "d-model=16", "heads=4", "kv-heads=2", "d-ff=32",
                           "layers=2", "max-positions=16", "init-std=0.5", NULL};
    beam_check("llama", llama);
}

/* Continuation scores: nlp_score_batch (rows of several items padded in
 * one pass) and nlp_score_choices (one context in the cache, shared by the
 * rows) against each item alone: one forward pass, log-softmax of the
 * position before each continuation token. */
static void score_check(const char *name, const char *const *ov)
{
    nlp_model_config cfg;
    nlp_model *m = NULL;
    if (!CHECK(nlp_model_config_build(&cfg, NULL, NULL, 0, ov) == 0)) return;
    if (!CHECK(nlp_model_new(&m, &cfg, 5) == 0)) return;
    const int V = cfg.vocab_size;
    nlp_rng r;
    nlp_rng_seed(&r, 3);
    int bad = 0, badg = 0, badc = 0, items = 0;
    for (int trial = 0; trial < 4; trial++) {
        /* one context, k continuations of 1..7 tokens (up to 4 new rows a pass take the
         * cache's few-row path, longer ones its block path) */
        const int k = 5;
        int32_t ctx[12];
        const size_t nctx = trial == 0 ? 1 : 2 + nlp_rng_below(&r, 9);
        for (size_t i = 0; i < nctx; i++) ctx[i] = (int32_t)nlp_rng_below(&r, (uint64_t)V);
        nlp_ids cont[5] = {{0}};
        nlp_score_item it[5];
        size_t total = 0;
        for (int c = 0; c < k; c++) {
            const size_t n = 1 + (size_t)((c * 3 + trial) % 7);
            for (size_t j = 0; j < n; j++) nlp_ids_push(&cont[c], (int32_t)nlp_rng_below(&r, (uint64_t)V));
            it[c] = (nlp_score_item){ctx, nctx, cont[c].v, cont[c].n};
            total += n;
        }
        double lb[40], lc[40], ref[40];
        uint8_t gb[40], gc[40], gref[40];
        /* two rows a pass, at most 24 positions: items split over passes of 1 and 2 rows */
        if (!CHECK(nlp_score_batch(m, it, (size_t)k, 2, 24, lb, gb) == 0)) break;
        size_t o = 0;
        for (int c = 0; c < k; c++) {
            int32_t ids[32];
            memcpy(ids, ctx, nctx * sizeof *ids);
            memcpy(ids + nctx, cont[c].v, cont[c].n * sizeof *ids);
            nlp_batch b = {.B = 1, .T = (int)(nctx + cont[c].n), .ids = ids};
            CHECK(nlp_model_forward(m, &b, NULL) == 0);
            int rows, cols;
            const float *lg = nlp_model_logits(m, &rows, &cols);
            float row[64];
            for (size_t j = 0; j < cont[c].n; j++, o++) {
                const float *x = lg + (nctx - 1 + j) * (size_t)cols;
                nlp_log_softmax(x, row, cols);
                ref[o] = row[cont[c].v[j]];
                gref[o] = nlp_argmax(x, cols) == cont[c].v[j];
            }
        }
        for (size_t i = 0; i < total; i++) {
            bad += fabs(lb[i] - ref[i]) > 1e-4;
            badg += gb[i] != gref[i];
        }
        /* the shared context, two rows a pass (passes of 2, 2 and 1 rows) */
        nlp_scorer *s = NULL;
        if (!CHECK(nlp_scorer_new(&s, m, 2, 32) == 0)) break;
        CHECK(nlp_score_choices(s, ctx, nctx, cont, k, lc, gc) == 0);
        /* again: the scorer's caches serve the next context as the first */
        CHECK(nlp_score_choices(s, ctx, nctx, cont, k, lc, gc) == 0);
        for (size_t i = 0; i < total; i++) badc += fabs(lc[i] - lb[i]) > 1e-4 || gc[i] != gb[i];
        nlp_scorer_free(s);
        items += k;
        for (int c = 0; c < k; c++) nlp_ids_free(&cont[c]);
    }
    CHECK_MSG(items == 20, "%s: %d items", name, items);
    CHECK_MSG(bad == 0, "%s: %d batch scores differ from one forward pass each", name, bad);
    CHECK_MSG(badg == 0, "%s: %d greedy flags differ", name, badg);
    CHECK_MSG(badc == 0, "%s: %d shared-context scores differ from the batch's", name, badc);
    /* misuse: an empty context or continuation, a context too long for the scorer */
    int32_t one = 1;
    nlp_score_item e = {&one, 0, &one, 1};
    CHECK(nlp_score_batch(m, &e, 1, 0, 0, NULL, NULL) == NLP_EINVAL);
    e = (nlp_score_item){&one, 1, &one, 0};
    CHECK(nlp_score_batch(m, &e, 1, 0, 0, NULL, NULL) == NLP_EINVAL);
    nlp_scorer *s = NULL;
    CHECK(nlp_scorer_new(&s, m, 4, 4) == 0);
    int32_t four[4] = {1, 2, 3, 4};
    nlp_ids c1 = {four, 1, 1};
    CHECK(nlp_score_choices(s, four, 4, &c1, 1, NULL, NULL) == NLP_EDATA);
    nlp_scorer_free(s);
    nlp_model_free(m);
}

static void test_score(void)
{
    const char *gpt[] = {"arch=gpt", "vocab-size=40", "d-model=16", "heads=2", "d-ff=32", "layers=2",
                         "max-positions=32", "init-std=0.5", NULL};
    score_check("gpt", gpt);
    const char *llama[] = {"arch=llama", "vocab-size=40", "d-model=16", "heads=4", "kv-heads=2", "d-ff=32",
                           "layers=2", "max-positions=32", "init-std=0.5", NULL};
    score_check("llama", llama);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_gemv);
    RUN(test_sampler);
    RUN(test_sampler_head);
    RUN(test_beam);
    RUN(test_score);
    return TEST_END();
}
