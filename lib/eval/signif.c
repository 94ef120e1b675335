/*
 * signif.c — numpy's PCG64 and sacreBLEU's tests. See signif.h.
 */
#include "eval/signif.h"
#include "base/err.h"
#include "base/mem.h"
#include "eval/ngram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// --- numpy SeedSequence + PCG64

#define SS_INIT_A 0x43b0d7e5u
#define SS_MULT_A 0x931e8875u
#define SS_INIT_B 0x8b51f9ddu
#define SS_MULT_B 0x58f38dedu
#define SS_MIX_L 0xca01f9ddu
#define SS_MIX_R 0x4973f715u

static uint32_t hashmix(uint32_t v, uint32_t *hc)
{
    v ^= *hc;
    *hc *= SS_MULT_A;
    v *= *hc;
    return v ^ (v >> 16);
}

static uint32_t mix(uint32_t x, uint32_t y)
{
    uint32_t r = SS_MIX_L * x - SS_MIX_R * y;
    return r ^ (r >> 16);
}

#define PCG_MULT ((((unsigned __int128)2549297995355413924ULL) << 64) | 4865540595714422341ULL)

static void pcg_step(nlp_pcg64 *r) { r->state = r->state * PCG_MULT + r->inc; }

void nlp_pcg64_seed(nlp_pcg64 *r, uint64_t seed)
{
    /* SeedSequence(seed): entropy as 32-bit words, pool of 4 */
    uint32_t ent[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    int nent = seed >> 32 ? 2 : 1;
    uint32_t pool[4], hc = SS_INIT_A;
    for (int i = 0; i < 4; i++) pool[i] = hashmix(i < nent ? ent[i] : 0, &hc);
    for (int s = 0; s < 4; s++)
        for (int d = 0; d < 4; d++)
            if (s != d) pool[d] = mix(pool[d], hashmix(pool[s], &hc));
    /* generate_state(4, uint64) */
    uint32_t w[8];
    hc = SS_INIT_B;
    for (int i = 0; i < 8; i++) {
        uint32_t v = pool[i % 4];
        v ^= hc;
        hc *= SS_MULT_B;
        v *= hc;
        w[i] = v ^ (v >> 16);
    }
    uint64_t v64[4];
    for (int i = 0; i < 4; i++) v64[i] = (uint64_t)w[2 * i] | (uint64_t)w[2 * i + 1] << 32;
    unsigned __int128 initstate = ((unsigned __int128)v64[0] << 64) | v64[1];
    unsigned __int128 initseq = ((unsigned __int128)v64[2] << 64) | v64[3];
    r->state = 0;
    r->inc = (initseq << 1) | 1;
    pcg_step(r);
    r->state += initstate;
    pcg_step(r);
    r->has32 = 0;
    r->u32 = 0;
}

uint64_t nlp_pcg64_next64(nlp_pcg64 *r)
{
    pcg_step(r);
    uint64_t x = (uint64_t)(r->state >> 64) ^ (uint64_t)r->state;
    unsigned rot = (unsigned)(r->state >> 122);
    return (x >> rot) | (x << ((64 - rot) & 63));
}

uint32_t nlp_pcg64_next32(nlp_pcg64 *r)
{
    if (r->has32) {
        r->has32 = 0;
        return r->u32;
    }
    uint64_t x = nlp_pcg64_next64(r);
    r->has32 = 1;
    r->u32 = (uint32_t)(x >> 32);
    return (uint32_t)x;
}

void nlp_pcg64_choice(nlp_pcg64 *r, uint64_t n, size_t count, uint32_t *out)
{
    uint64_t rng = n - 1;
    if (rng == 0) {
        memset(out, 0, count * sizeof *out);
        return;
    }
    if (rng == 0xFFFFFFFFull) {
        for (size_t i = 0; i < count; i++) out[i] = nlp_pcg64_next32(r);
        return;
    }
    if (rng < 0xFFFFFFFFull) { /* buffered_bounded_lemire_uint32 */
        uint32_t excl = (uint32_t)rng + 1;
        for (size_t i = 0; i < count; i++) {
            uint64_t m = (uint64_t)nlp_pcg64_next32(r) * excl;
            uint32_t left = (uint32_t)m;
            if (left < excl) {
                uint32_t thr = (uint32_t)(UINT32_MAX - (uint32_t)rng) % excl;
                while (left < thr) {
                    m = (uint64_t)nlp_pcg64_next32(r) * excl;
                    left = (uint32_t)m;
                }
            }
            out[i] = (uint32_t)(m >> 32);
        }
        return;
    }
    for (size_t i = 0; i < count; i++) { /* bounded_lemire_uint64; indices fit our 32-bit output only below 2^32 */
        uint64_t excl = rng + 1;
        unsigned __int128 m = (unsigned __int128)nlp_pcg64_next64(r) * excl;
        uint64_t left = (uint64_t)m;
        if (left < excl) {
            uint64_t thr = (UINT64_MAX - rng) % excl;
            while (left < thr) {
                m = (unsigned __int128)nlp_pcg64_next64(r) * excl;
                left = (uint64_t)m;
            }
        }
        out[i] = (uint32_t)(m >> 64);
    }
}

void nlp_pcg64_bools(nlp_pcg64 *r, size_t count, unsigned char *out)
{
    uint32_t buf = 0;
    int bcnt = 0;
    for (size_t i = 0; i < count; i++) {
        if (!bcnt) {
            buf = nlp_pcg64_next32(r);
            bcnt = 31;
        } else {
            buf >>= 1;
            bcnt--;
        }
        out[i] = buf & 1;
    }
}

// --- means

static double pairwise(const double *a, size_t n)
{
    if (n < 8) {
        double res = 0.;
        for (size_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8], res;
        size_t i;
        for (i = 0; i < 8; i++) r[i] = a[i];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + (size_t)j];
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

double nlp_np_mean(const double *x, size_t n) { return pairwise(x, n) / (double)n; }

double nlp_py_mean(const double *x, size_t n)
{
    /* Shewchuk's exact partials (Python's math.fsum), then one division */
    double part[64];
    int np_ = 0;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        int k = 0;
        for (int j = 0; j < np_; j++) {
            double y = part[j];
            if (fabs(v) < fabs(y)) {
                double t = v;
                v = y;
                y = t;
            }
            double hi = v + y, lo = y - (hi - v);
            if (lo != 0.0) part[k++] = lo;
            v = hi;
        }
        if (k < 64) part[k++] = v;
        np_ = k;
    }
    double s = 0;
    for (int j = np_ - 1; j >= 0; j--) s += part[j];
    return s / (double)n;
}

// --- scores of resampled statistics

double nlp_signif_score_f32(const nlp_metric *m, const float *st)
{
    const nlp_metric_params *p = nlp_metric_params_of(m);
    int ns = nlp_metric_nstats(m);
    double d[3 * 2 * NLP_NGRAM_MAX_ORDER + 2];
    for (int k = 0; k < ns; k++) d[k] = st[k];
    switch (p->kind) {
    case NLP_METRIC_BLEU: {
        nlp_bleu_result r;
        nlp_bleu_compute_f32(&p->bleu, d, &r);
        return r.score;
    }
    case NLP_METRIC_CHRF: return nlp_chrf_compute_f32(&p->chrf, d);
    case NLP_METRIC_TER:
        if (st[1] > 0) return 100 * (double)(st[0] / st[1]);
        return st[0] > 0 ? 100.0 : 0.0;
    case NLP_METRIC_EXACT: return st[1] > 0 ? 100 * (double)(st[0] / st[1]) : 0.0;
    }
    return 0;
}

/* float32 copy of the statistics (np.array(stats, dtype='float32')) */
static float *as_f32(const nlp_segstats *st)
{
    size_t n = st->nseg * (size_t)st->nstats;
    float *f = nlp_malloc((n ? n : 1) * sizeof *f);
    if (f)
        for (size_t i = 0; i < n; i++) f[i] = (float)st->v[i];
    return f;
}

/* Scores of n_samples resamples of each of the given systems (same draws). */
static int resample(const nlp_metric *m, const nlp_segstats *const *sys, int nsys, long n_samples, uint64_t seed,
                    double **scores)
{
    size_t N = sys[0]->nseg;
    int ns = sys[0]->nstats, rc = NLP_OK;
    uint32_t *idx = nlp_malloc((N ? N : 1) * sizeof *idx);
    float *acc = nlp_malloc((size_t)ns * sizeof *acc);
    float *f[2] = {NULL, NULL};
    for (int s = 0; s < nsys; s++) f[s] = as_f32(sys[s]);
    if (!idx || !acc || !f[0] || (nsys > 1 && !f[1])) rc = NLP_ENOMEM;
    nlp_pcg64 r;
    nlp_pcg64_seed(&r, seed);
    for (long b = 0; b < n_samples && !rc; b++) {
        nlp_pcg64_choice(&r, N, N, idx);
        for (int s = 0; s < nsys; s++) {
            memset(acc, 0, (size_t)ns * sizeof *acc);
            for (size_t i = 0; i < N; i++) {
                const float *row = f[s] + (size_t)idx[i] * (size_t)ns;
                for (int k = 0; k < ns; k++) acc[k] += row[k];
            }
            scores[s][b] = nlp_signif_score_f32(m, acc);
        }
    }
    free(idx);
    free(acc);
    free(f[0]);
    free(f[1]);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* estimate_ci: sort, mean, half the central 95% range */
static void estimate_ci(double *s, size_t n, int py_mean, double *mean, double *ci)
{
    qsort(s, n, sizeof *s, cmp_double);
    size_t lo = n / 40, hi = n - lo - 1;
    *ci = 0.5 * (s[hi] - s[lo]);
    *mean = py_mean ? nlp_py_mean(s, n) : nlp_np_mean(s, n);
}

int nlp_signif_bootstrap(const nlp_metric *m, const nlp_segstats *st, long n_samples, uint64_t seed, int py_mean,
                         double *mean, double *ci)
{
    double *s = nlp_malloc((size_t)n_samples * sizeof *s);
    if (!s) return NLP_ENOMEM;
    const nlp_segstats *one[1] = {st};
    int rc = resample(m, one, 1, n_samples, seed, &s);
    if (!rc) estimate_ci(s, (size_t)n_samples, py_mean, mean, ci);
    free(s);
    return rc;
}

/* the corpus score from exact sums */
static double corpus_score(const nlp_metric *m, const nlp_segstats *st)
{
    double sum[3 * 2 * NLP_NGRAM_MAX_ORDER + 2] = {0};
    for (size_t i = 0; i < st->nseg; i++)
        for (int k = 0; k < st->nstats; k++) sum[k] += st->v[i * (size_t)st->nstats + (size_t)k];
    nlp_score sc;
    nlp_metric_score(m, sum, &sc);
    return sc.score;
}

int nlp_signif_paired_bs(const nlp_metric *m, const nlp_segstats *bl, const nlp_segstats *sys, long n_samples,
                         uint64_t seed, double *p, double *mean, double *ci)
{
    double *s[2], *d;
    s[0] = nlp_malloc((size_t)n_samples * sizeof(double));
    s[1] = nlp_malloc((size_t)n_samples * sizeof(double));
    d = nlp_malloc((size_t)n_samples * sizeof(double));
    const nlp_segstats *both[2] = {bl, sys};
    int rc = s[0] && s[1] && d ? resample(m, both, 2, n_samples, seed, s) : NLP_ENOMEM;
    if (!rc) {
        double diff = fabs(corpus_score(m, bl) - corpus_score(m, sys));
        for (long b = 0; b < n_samples; b++) d[b] = fabs(s[1][b] - s[0][b]);
        double dm = nlp_np_mean(d, (size_t)n_samples);
        long c = 0;
        for (long b = 0; b < n_samples; b++) c += d[b] - dm > diff;
        *p = (double)(c + 1) / (double)(n_samples + 1);
        estimate_ci(s[1], (size_t)n_samples, 0, mean, ci);
    }
    free(s[0]);
    free(s[1]);
    free(d);
    return rc;
}

int nlp_signif_paired_ar(const nlp_metric *m, const nlp_segstats *bl, const nlp_segstats *sys, long n_trials,
                         uint64_t seed, double *p)
{
    size_t N = bl->nseg;
    int ns = bl->nstats;
    unsigned char *sel = nlp_malloc(N ? N : 1);
    double *a = nlp_malloc((size_t)ns * sizeof *a), *b = nlp_malloc((size_t)ns * sizeof *b);
    if (!sel || !a || !b) {
        free(sel), free(a), free(b);
        return NLP_ENOMEM;
    }
    double diff = fabs(corpus_score(m, bl) - corpus_score(m, sys));
    nlp_pcg64 r;
    nlp_pcg64_seed(&r, seed);
    /* integers(2, size=(n_trials, N), dtype=bool): one buffered stream */
    uint32_t buf = 0;
    int bcnt = 0;
    long c = 0;
    for (long t = 0; t < n_trials; t++) {
        for (size_t i = 0; i < N; i++) {
            if (!bcnt) {
                buf = nlp_pcg64_next32(&r);
                bcnt = 31;
            } else {
                buf >>= 1;
                bcnt--;
            }
            sel[i] = buf & 1;
        }
        memset(a, 0, (size_t)ns * sizeof *a);
        memset(b, 0, (size_t)ns * sizeof *b);
        for (size_t i = 0; i < N; i++) {
            const double *x = bl->v + i * (size_t)ns, *y = sys->v + i * (size_t)ns;
            const double *pa = sel[i] ? x : y, *pb = sel[i] ? y : x;
            for (int k = 0; k < ns; k++) a[k] += pa[k], b[k] += pb[k];
        }
        nlp_score sa, sb;
        nlp_metric_score(m, a, &sa);
        nlp_metric_score(m, b, &sb);
        c += fabs(sa.score - sb.score) > diff;
    }
    *p = (double)(c + 1) / (double)(n_trials + 1);
    free(sel), free(a), free(b);
    return NLP_OK;
}
