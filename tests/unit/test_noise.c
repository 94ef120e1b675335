/*
 * test_noise.c — the corruptions of denoising pretraining (train/noise.h):
 * T5's noise mask (its counts, rounded half to even as T5 rounds, kept run
 * first, noise last, every segmentation equally likely), span corruption by
 * hand and as a round trip back to the text, the Poisson draws' moments,
 * BART's text infilling (exactly ceil(n * ratio) tokens masked, the kept
 * ones in order, one mask a span) and sentence permutation (every order
 * equally likely), and bad parameters.
 */
#include "base/err.h"
#include "base/rng.h"
#include "train/noise.h"
#include "test.h"

#include <math.h>
#include <string.h>

/* T5's counts for n tokens: k noise in s spans. */
static void t5_counts(size_t n, double density, double mean, size_t *k, size_t *s)
{
    double kd = nearbyint((double)n * density);
    *k = kd < 1 ? 1 : (size_t)kd;
    if (*k > n - 1) *k = n - 1;
    double sd = nearbyint((double)*k / mean);
    *s = sd < 1 ? 1 : (size_t)sd;
    if (*s > *k) *s = *k;
    if (*s > n - *k) *s = n - *k;
}

static void test_t5_mask(void)
{
    /* half to even: 10 x 0.15 = 1.5 -> 2, 30 x 0.15 = 4.5 -> 4; 512 -> 77 in 26 spans */
    size_t k, s;
    t5_counts(10, 0.15, 3, &k, &s);
    CHECK(k == 2 && s == 1);
    t5_counts(30, 0.15, 3, &k, &s);
    CHECK(k == 4 && s == 1);
    t5_counts(512, 0.15, 3, &k, &s);
    CHECK(k == 77 && s == 26);
    nlp_rng r;
    nlp_rng_seed(&r, 7);
    uint8_t mask[600];
    int ok = 1;
    for (size_t n = 0; n <= 600; n += n < 40 ? 1 : 37)
        for (int rep = 0; rep < 20; rep++) {
            const double density = rep < 10 ? 0.15 : 0.5, mean = rep < 10 ? 3 : 1.5;
            size_t spans = 99;
            memset(mask, 7, sizeof mask);
            ok &= nlp_noise_t5_mask(&r, n, density, mean, mask, &spans) == 0;
            size_t noise = 0, runs = 0, kept_runs = 0;
            for (size_t i = 0; i < n; i++) {
                ok &= mask[i] <= 1;
                noise += mask[i];
                runs += mask[i] && (i == 0 || !mask[i - 1]);
                kept_runs += !mask[i] && (i == 0 || mask[i - 1]);
            }
            if (n < 2) {
                ok &= noise == 0 && spans == 0;
                continue;
            }
            t5_counts(n, density, mean, &k, &s);
            ok &= noise == k && runs == s && spans == s && kept_runs == s && !mask[0] && mask[n - 1];
            if (!ok) {
                printf("    n %zu rep %d: noise %zu runs %zu kept runs %zu spans %zu, want %zu in %zu\n", n, rep, noise,
                       runs, kept_runs, spans, k, s);
                goto counted;
            }
        }
counted:
    CHECK_MSG(ok, "the noise masks' counts are not T5's");
    /* 12 tokens at density 0.5, mean 2: 6 kept and 6 noise, each cut in 3
     * runs, C(5, 2) ways each: 100 masks, all equally likely */
    static int count[1 << 12];
    memset(count, 0, sizeof count);
    const int draws = 100000;
    for (int d = 0; d < draws; d++) {
        size_t spans;
        nlp_noise_t5_mask(&r, 12, 0.5, 2, mask, &spans);
        int key = 0;
        for (int i = 0; i < 12; i++) key = key << 1 | mask[i];
        count[key]++;
    }
    int distinct = 0, lo = draws, hi = 0;
    for (int key = 0; key < 1 << 12; key++)
        if (count[key]) {
            distinct++;
            if (count[key] < lo) lo = count[key];
            if (count[key] > hi) hi = count[key];
        }
    CHECK_EQ_INT(distinct, 100);
    CHECK_MSG(lo > 850 && hi < 1150, "masks drawn %d to %d times, 1000 expected", lo, hi);
    /* bad parameters */
    size_t sp;
    CHECK_EQ_INT(nlp_noise_t5_mask(&r, 10, 0, 3, mask, &sp), NLP_EINVAL);
    CHECK_EQ_INT(nlp_noise_t5_mask(&r, 10, 1, 3, mask, &sp), NLP_EINVAL);
    CHECK_EQ_INT(nlp_noise_t5_mask(&r, 10, 0.15, 0.5, mask, &sp), NLP_EINVAL);
    CHECK_EQ_INT(nlp_noise_t5_mask(&r, 10, NAN, 3, mask, &sp), NLP_EINVAL);
}

static void test_t5_corrupt(void)
{
    const int32_t ids[10] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
    const uint8_t mask[10] = {0, 0, 1, 1, 0, 0, 0, 1, 0, 1};
    const int32_t sent[4] = {100, 101, 102, 103};
    nlp_ids in = {0}, tgt = {0};
    CHECK_EQ_INT(nlp_noise_t5_corrupt(ids, 10, mask, sent, 4, 2, &in, &tgt), 0);
    const int32_t want_in[] = {10, 11, 100, 14, 15, 16, 101, 18, 102, 2};
    const int32_t want_tgt[] = {100, 12, 13, 101, 17, 102, 19, 103, 2};
    CHECK(in.n == 10 && memcmp(in.v, want_in, sizeof want_in) == 0);
    CHECK(tgt.n == 9 && memcmp(tgt.v, want_tgt, sizeof want_tgt) == 0);
    /* eos < 0: the same without EOS on either side (pairs whose batches add it) */
    in.n = tgt.n = 0;
    CHECK_EQ_INT(nlp_noise_t5_corrupt(ids, 10, mask, sent, 4, -1, &in, &tgt), 0);
    CHECK(in.n == 9 && memcmp(in.v, want_in, 9 * sizeof *in.v) == 0);
    CHECK(tgt.n == 8 && memcmp(tgt.v, want_tgt, 8 * sizeof *tgt.v) == 0);
    /* three spans and the closing sentinel need four */
    in.n = tgt.n = 0;
    CHECK_EQ_INT(nlp_noise_t5_corrupt(ids, 10, mask, sent, 3, 2, &in, &tgt), NLP_EINVAL);
    CHECK(strstr(nlp_errmsg(), "3 noise spans need 4 sentinels, there are 3") != NULL);

    /* round trip: each sentinel of the input replaced by its run of the
     * target gives the text back */
    int32_t text[300], sentinel[100];
    for (int i = 0; i < 100; i++) sentinel[i] = 1000 + i;
    uint8_t m[300];
    nlp_rng r;
    nlp_rng_seed(&r, 3);
    int ok = 1;
    for (size_t n = 1; n <= 300 && ok; n += 13) {
        for (size_t i = 0; i < n; i++) text[i] = 10 + (int32_t)nlp_rng_below(&r, 50); /* never EOS (2) */
        size_t spans;
        nlp_noise_t5_mask(&r, n, 0.15, 3, m, &spans);
        in.n = tgt.n = 0;
        ok &= nlp_noise_t5_corrupt(text, n, m, sentinel, 100, 2, &in, &tgt) == 0;
        ok &= in.n + tgt.n == n + 2 * spans + 3 && in.v[in.n - 1] == 2 &&
              tgt.v[tgt.n - 1] == 2 && tgt.v[tgt.n - 2] == sentinel[spans] && tgt.v[0] == sentinel[0];
        size_t back = 0;
        for (size_t i = 0; i + 1 < in.n && ok; i++) {
            if (in.v[i] < 1000) {
                ok &= back < n && text[back++] == in.v[i];
                continue;
            }
            size_t t = 0;
            while (t < tgt.n && tgt.v[t] != in.v[i]) t++;
            for (t++; t < tgt.n && tgt.v[t] < 1000 && tgt.v[t] != 2; t++) ok &= back < n && text[back++] == tgt.v[t];
        }
        ok &= back == n;
        if (!ok) printf("    n %zu: the text does not come back\n", n);
    }
    CHECK(ok);
    free(in.v), free(tgt.v);
}

static void test_poisson(void)
{
    nlp_rng r;
    nlp_rng_seed(&r, 11);
    const int draws = 200000;
    for (int li = 0; li < 3; li++) {
        const double lambda = li == 0 ? 3 : li == 1 ? 0.5 : 12;
        double sum = 0, sq = 0;
        int zeros = 0;
        for (int d = 0; d < draws; d++) {
            const double x = nlp_noise_poisson(&r, lambda);
            sum += x, sq += x * x, zeros += x == 0;
        }
        const double mean = sum / draws, var = sq / draws - mean * mean;
        CHECK_MSG(fabs(mean - lambda) < 0.02 * lambda, "lambda %g: mean %g", lambda, mean);
        CHECK_MSG(fabs(var - lambda) < 0.04 * lambda, "lambda %g: variance %g", lambda, var);
        CHECK_MSG(fabs((double)zeros / draws - exp(-lambda)) < 0.005, "lambda %g: P(0) %g, want %g", lambda,
                  (double)zeros / draws, exp(-lambda));
    }
}

static void test_bart_infill(void)
{
    nlp_rng r;
    nlp_rng_seed(&r, 5);
    int32_t text[400];
    nlp_ids out = {0};
    int ok = 1;
    double spans_sum = 0, masked_sum = 0;
    for (size_t n = 0; n <= 400 && ok; n += n < 20 ? 1 : 23)
        for (int rep = 0; rep < 30 && ok; rep++) {
            for (size_t i = 0; i < n; i++) text[i] = (int32_t)i; /* distinct: a mask is -1 */
            size_t masked = 99, spans = 99;
            out.n = 0;
            ok &= nlp_noise_bart_infill(&r, text, n, 0.3, 3, -1, &out, &masked, &spans) == 0;
            ok &= masked == (size_t)ceil(n * 0.3) && out.n == n - masked + spans;
            size_t masks = 0, kept = 0;
            int32_t last = -1;
            for (size_t i = 0; i < out.n; i++) {
                if (out.v[i] == -1) {
                    masks++;
                    continue;
                }
                ok &= out.v[i] > last; /* the kept tokens in order */
                last = out.v[i], kept++;
            }
            ok &= masks == spans && kept == n - masked;
            if (n >= 100) spans_sum += (double)spans, masked_sum += (double)masked;
            if (!ok) printf("    n %zu: masked %zu spans %zu, %zu out\n", n, masked, spans, out.n);
        }
    CHECK(ok);
    /* spans of Poisson(3) lengths: about masked / 3 of them (zero-length
     * spans and the last one cut add a little) */
    const double per_span = masked_sum / spans_sum;
    CHECK_MSG(per_span > 2.6 && per_span < 3.1, "%g masked tokens a span", per_span);
    /* nothing to mask: the text as it is */
    out.n = 0;
    CHECK_EQ_INT(nlp_noise_bart_infill(&r, text, 50, 0, 3, -1, &out, NULL, NULL), 0);
    CHECK(out.n == 50 && memcmp(out.v, text, 50 * sizeof *text) == 0);
    /* everything masked: masks only */
    out.n = 0;
    size_t masked, spans;
    CHECK_EQ_INT(nlp_noise_bart_infill(&r, text, 50, 1, 3, -1, &out, &masked, &spans), 0);
    ok = masked == 50 && out.n == spans;
    for (size_t i = 0; i < out.n; i++) ok &= out.v[i] == -1;
    CHECK(ok);
    CHECK_EQ_INT(nlp_noise_bart_infill(&r, text, 50, 1.5, 3, -1, &out, NULL, NULL), NLP_EINVAL);
    CHECK_EQ_INT(nlp_noise_bart_infill(&r, text, 50, 0.3, 0, -1, &out, NULL, NULL), NLP_EINVAL);
    free(out.v);
}

static void test_permute(void)
{
    const int32_t ids[6] = {1, 2, 3, 4, 5, 6};
    const size_t start[4] = {0, 1, 3, 6}; /* [1] [2 3] [4 5 6] */
    nlp_rng r;
    nlp_rng_seed(&r, 9);
    nlp_ids out = {0};
    int count[6] = {0}, ok = 1;
    const int draws = 60000;
    for (int d = 0; d < draws && ok; d++) {
        out.n = 0;
        ok &= nlp_noise_permute(&r, ids, start, 3, &out) == 0 && out.n == 6;
        /* which order: the first id of each sentence says */
        int order[3], k = 0;
        for (size_t i = 0; i < 6 && k < 3; i++)
            if (out.v[i] == 1) order[k++] = 0;
            else if (out.v[i] == 2) order[k++] = 1, ok &= i + 1 < 6 && out.v[i + 1] == 3;
            else if (out.v[i] == 4) order[k++] = 2, ok &= i + 2 < 6 && out.v[i + 1] == 5 && out.v[i + 2] == 6;
        ok &= k == 3;
        static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
        for (int p = 0; p < 6; p++)
            if (!memcmp(order, perms[p], sizeof order)) count[p]++;
    }
    CHECK(ok);
    for (int p = 0; p < 6; p++) CHECK_MSG(abs(count[p] - draws / 6) < 500, "order %d drawn %d times", p, count[p]);
    const size_t bad[3] = {1, 3, 6};
    CHECK_EQ_INT(nlp_noise_permute(&r, ids, bad, 2, &out), NLP_EINVAL);
    const size_t back[3] = {0, 4, 2};
    CHECK_EQ_INT(nlp_noise_permute(&r, ids, back, 2, &out), NLP_EINVAL);
    free(out.v);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_t5_mask);
    RUN(test_t5_corrupt);
    RUN(test_poisson);
    RUN(test_bart_infill);
    RUN(test_permute);
    return TEST_END();
}
