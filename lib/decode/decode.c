/*
 * decode.c — greedy, sampling and beam search over the KV cache. See decode.h.
 */
#include "decode/decode.h"
#include "nn/params.h"
#include "nn/vmath.h"
#include "base/err.h"
#include "base/mem.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

nlp_sampler nlp_sampler_greedy(void)
{
    nlp_sampler s = {.temperature = 0, .top_k = 0, .top_p = 1, .repetition_penalty = 1};
    nlp_rng_seed(&s.rng, 0);
    return s;
}

int32_t nlp_argmax(const float *x, int n)
{
    int32_t best = 0;
    float bv = -INFINITY;
    int found = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i]) && (!found || x[i] > bv)) bv = x[i], best = i, found = 1;
    return best;
}

void nlp_log_softmax(const float *x, float *out, int n)
{
    float mx = -INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] > mx) mx = x[i];
    /* fp32 exponentials (within 2 ulp) in a vectorised fp32 sum, as the loss does */
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < n; i++) sum += nlp_expf(x[i] - mx);
    float lse = logf(sum);
#pragma omp simd
    for (int j = 0; j < n; j++) out[j] = (x[j] - mx) - lse;
}

static int by_value_desc(const void *a, const void *b, void *ctx)
{
    const float *v = ctx;
    float x = v[*(const int32_t *)a], y = v[*(const int32_t *)b];
    if (x > y) return -1;
    if (x < y) return 1;
    return *(const int32_t *)a - *(const int32_t *)b;
}

/* A draw from the first n ids of idx, in proportion to p. */
static int32_t draw(nlp_sampler *s, const float *p, const int32_t *idx, int n)
{
    double sum = 0;
    for (int i = 0; i < n; i++) sum += p[idx[i]];
    double r = nlp_rng_double(&s->rng) * sum, acc = 0;
    for (int i = 0; i < n; i++) {
        acc += p[idx[i]];
        if (r < acc) return idx[i];
    }
    return idx[n - 1];
}

/* How many of the ids idx[0, n) (most probable first) top-p keeps: the
 * fewest whose probabilities, p / kept summed in order, reach top_p; -1 if
 * all n do not. */
static int top_p_count(const float *p, const int32_t *idx, int n, double kept, double top_p)
{
    double acc = 0;
    for (int m = 0; m < n;) {
        acc += p[idx[m++]] / kept;
        if (acc >= top_p) return m;
    }
    return -1;
}

/* The k-th largest (1 <= k <= n) of n non-negative floats given by their
 * bit patterns v (as int32 they order as the floats do); v is permuted.
 * Quickselect, median of three; a range that shrinks too slowly is sorted. */
static int cmp_desc_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x < y) - (x > y);
}

static float kth_largest(int32_t *v, int n, int k)
{
    int lo = 0, hi = n - 1, want = k - 1, rounds = 0;
    while (lo < hi) {
        if (++rounds > 64) {
            qsort(v + lo, (size_t)(hi - lo + 1), sizeof *v, cmp_desc_i32);
            break;
        }
        const int32_t a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];
        const int32_t piv = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
        int i = lo, j = hi;
        while (i <= j) { /* [lo, j] >= piv, [i, hi] <= piv */
            while (v[i] > piv) i++;
            while (v[j] < piv) j--;
            if (i <= j) {
                const int32_t t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else break; /* between the two parts: equal to the pivot */
    }
    float f;
    memcpy(&f, &v[want], sizeof f);
    return f;
}

/* The k-th largest of p[V] (probabilities: >= 0, no NaN). A small k in
 * one pass, keeping the k largest seen in a sorted buffer (few of V enter
 * it); a large one by quickselect over the bit patterns, in work. */
static float kth_largest_p(const float *p, int V, int k, int32_t *work)
{
    if (k <= 256) {
        float top[256];
        int nb = 0;
        for (int i = 0; i < V; i++) {
            const float x = p[i];
            if (nb == k && !(x > top[k - 1])) continue;
            int j = nb < k ? nb++ : k - 1;
            while (j > 0 && x > top[j - 1]) top[j] = top[j - 1], j--;
            top[j] = x;
        }
        return top[k - 1];
    }
    memcpy(work, p, (size_t)V * sizeof *work); /* p >= 0: as int32, in order */
    return kth_largest(work, V, k);
}

/* A threshold below which p[V] (probabilities, no NaN) holds at most its
 * mass minus `need`: the probabilities by binary exponent, summed from the
 * largest down until they pass need (with a margin for rounding); the
 * smallest value of that exponent. 0 when only all of them do. */
static float mass_threshold(const float *p, int V, double need)
{
    double mass[256] = {0};
    for (int i = 0; i < V; i++) {
        uint32_t b;
        memcpy(&b, &p[i], sizeof b);
        mass[b >> 23 & 255] += p[i];
    }
    double acc = 0;
    for (int e = 255; e > 0; e--) {
        acc += mass[e];
        if (acc > need * (1 + 1e-6)) {
            const uint32_t b = (uint32_t)e << 23;
            float t;
            memcpy(&t, &b, sizeof t);
            return t;
        }
    }
    return 0;
}

/* Ids of p[V] at or above t, in id order, into idx; their count. For
 * t = 0, the ids above it: a probability of 0 (a masked or underflowed
 * logit) adds nothing to any sum below and is never drawn, so leaving
 * those out changes no draw, and a low temperature, which underflows most
 * of a vocabulary, does not sort all of it. */
static int at_least(const float *p, int V, float t, int32_t *idx)
{
    int n = 0;
    for (int i = 0; i < V; i++)
        if (p[i] >= t && p[i] > 0) idx[n++] = i;
    return n;
}

int32_t nlp_sample(nlp_sampler *s, float *logits, int V, const int32_t *seen, size_t nseen, int32_t *work)
{
    if (s->repetition_penalty != 1.0 && s->repetition_penalty > 0) {
        /* once per distinct token: work[t] marks the ones not yet penalised */
        for (size_t i = 0; i < nseen; i++)
            if (seen[i] >= 0 && seen[i] < V) work[seen[i]] = 1;
        for (size_t i = 0; i < nseen; i++) {
            int32_t t = seen[i];
            if (t < 0 || t >= V || !work[t]) continue;
            work[t] = 0;
            logits[t] = logits[t] > 0 ? (float)(logits[t] / s->repetition_penalty)
                                      : (float)(logits[t] * s->repetition_penalty);
        }
    }
    if (s->temperature <= 0) return nlp_argmax(logits, V);
    const float inv = (float)(1.0 / s->temperature);
    float mx = -INFINITY;
    for (int i = 0; i < V; i++) {
        logits[i] *= inv;
        if (logits[i] > mx) mx = logits[i];
    }
    double sum = 0;
    int nan = 0;
    for (int i = 0; i < V; i++) {
        sum += (logits[i] = expf(logits[i] - mx));
        nan |= isnan(logits[i]);
    }
    const float *p = logits;
    const int limit_k = s->top_k > 0 && s->top_k < V, limit_p = s->top_p < 1.0;
    if (!limit_k && !limit_p) {
        double r = nlp_rng_double(&s->rng) * sum, acc = 0;
        int32_t last = 0;
        for (int i = 0; i < V; i++) {
            if (p[i] <= 0) continue;
            acc += p[i];
            last = i;
            if (r < acc) return i;
        }
        return last;
    }
    /* The most probable ids first (ties: the lower id first). Only the head
     * of that order matters, so only a head is sorted: the ids at or above
     * the k-th largest probability (top-k), or at or above a threshold
     * lowered until the head reaches top-p. Every id outside the head is
     * less probable than every id in it, so the head is the order's own
     * first part, and each step below sees what sorting all V would show
     * it. Sorting all of GPT-2's 50,257 took 6.7 ms a token, where GPT-2
     * 124M's whole step with the cache takes about 23 ms on 2 threads. */
    int nc, n;
    if (nan) { /* no order to speak of: all of it, as it comes */
        for (int i = 0; i < V; i++) work[i] = i;
        nc = V;
        qsort_r(work, (size_t)nc, sizeof *work, by_value_desc, logits);
    } else if (limit_k) {
        nc = at_least(p, V, kth_largest_p(p, V, s->top_k, work), work);
        qsort_r(work, (size_t)nc, sizeof *work, by_value_desc, logits);
    } else { /* top-p alone: of the probabilities summed in id order */
        for (float t = mass_threshold(p, V, s->top_p * sum);; t = t > 0x1p-100f ? t * 0x1p-8f : 0) {
            nc = at_least(p, V, t, work);
            qsort_r(work, (size_t)nc, sizeof *work, by_value_desc, logits);
            if ((n = top_p_count(p, work, nc, sum, s->top_p)) > 0 || t == 0) break;
        }
        return draw(s, p, work, n > 0 ? n : nc);
    }
    n = limit_k && s->top_k < nc ? s->top_k : nc;
    if (limit_p) {
        double kept = 0;
        for (int i = 0; i < n; i++) kept += p[work[i]];
        int m = top_p_count(p, work, n, kept, s->top_p);
        if (m > 0) n = m;
    }
    return draw(s, p, work, n);
}

int nlp_decode_feed(nlp_model *m, nlp_cache *c, int B, int T, const int32_t *ids)
{
    nlp_batch b = {.B = B, .T = T};
    if (nlp_model_cfg(m)->arch == NLP_ARCH_TRANSFORMER) b.tgt_in = ids;
    else b.ids = ids;
    return nlp_model_decode(m, &b, c);
}

/* Row r's last-position logits of the last forward. */
static const float *last_logits(const nlp_model *m, int B, int r, int *V)
{
    int rows;
    const float *lg = nlp_model_logits(m, &rows, V);
    int T = rows / B;
    return lg + ((size_t)r * T + (size_t)(T - 1)) * (size_t)*V;
}

/* A model's scores that are not numbers: no token can be ranked or drawn
 * from them (an overflow in the weights: the weights themselves are
 * checked at load). */
static int nonfinite(int step, int row, int32_t tok, float v)
{
    return nlp_error(NLP_ENAN, "decoding step %d, row %d: the model's score of token %d is %s; its weights give no "
                     "finite scores for this input (are they corrupt?)", step, row, tok,
                     isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf");
}

int nlp_generate_rows(nlp_model *m, nlp_cache *c, int B, const nlp_gen_opts *o, nlp_ids *hist)
{
    int V;
    nlp_model_logits(m, NULL, &V);
    float *row = nlp_malloc((size_t)V * sizeof *row);
    int32_t *work = nlp_malloc((size_t)V * sizeof *work), *next = nlp_malloc((size_t)B * sizeof *next);
    char *live = nlp_malloc((size_t)B);
    int rc = 0;
    if (!row || !work || !next || !live) {
        rc = NLP_ENOMEM;
        goto out;
    }
    memset(live, 1, (size_t)B);
    nlp_sampler s = o->sampler;
    const int Vd = o->vocab_limit > 0 && o->vocab_limit < V ? o->vocab_limit : V; /* the ids chosen from */
    for (int step = 0; step < o->max_new; step++) {
        int any = 0;
        for (int r = 0; r < B; r++) {
            if (!live[r]) {
                next[r] = o->eos >= 0 ? o->eos : 0;
                continue;
            }
            int v;
            memcpy(row, last_logits(m, B, r, &v), (size_t)V * sizeof *row);
            const size_t bad = nlp_nonfinite_index(row, (size_t)V);
            if (bad < (size_t)V) {
                rc = nonfinite(step + 1, r, (int32_t)bad, row[bad]);
                goto out;
            }
            int32_t t = nlp_sample(&s, row, Vd, hist[r].v, hist[r].n, work);
            next[r] = t;
            if (t == o->eos) {
                live[r] = 0;
                continue;
            }
            if ((rc = nlp_ids_push(&hist[r], t))) goto out;
            if (o->on_token && o->on_token(o->ctx, r, t)) live[r] = 0;
            any |= live[r];
        }
        if (!any || step == o->max_new - 1) break;
        if ((rc = nlp_decode_feed(m, c, B, 1, next))) goto out;
    }
out:
    free(row), free(work), free(next), free(live);
    return rc;
}

typedef struct cand {
    float key, score;
    int32_t beam, tok;
} cand;

typedef float v16f __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

typedef int32_t v8i __attribute__((vector_size(32)));
typedef int32_t v4i __attribute__((vector_size(16)));

/* The largest of x[0..16) (for NaN-free input; NaN lanes may be dropped). */
static inline float max16(const float *x)
{
    v16f v;
    memcpy(&v, x, sizeof v);
    v8f a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7), b = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    v8i m8 = a > b;
    a = (v8f)(((v8i)a & m8) | ((v8i)b & ~m8));
    v4f c = __builtin_shufflevector(a, a, 0, 1, 2, 3), d = __builtin_shufflevector(a, a, 4, 5, 6, 7);
    v4i m4 = c > d;
    c = (v4f)(((v4i)c & m4) | ((v4i)d & ~m4));
    float mx = c[0];
    for (int i = 1; i < 4; i++) mx = c[i] > mx ? c[i] : mx;
    return mx;
}

/* At most this many candidates per row are kept by preselect(); a row with
 * more near-ties is ranked over its whole vocabulary instead. */
#define CAND_CAP 64

typedef struct rcand {
    int32_t tok;
    float logp;
} rcand;

/* The tokens of one row of logits x[V] that can be among its K best
 * log-probabilities, with those log-probabilities as nlp_log_softmax
 * computes them: every token whose logit is within a rounding margin of the
 * K-th largest (log_softmax, and adding the row's score, keep the order of
 * the logits up to rounding, so the margin, far above that rounding, makes
 * sure no token that could tie or win is left out). Returns
 * their number in increasing token order, or -1 when more than CAND_CAP
 * qualify (the caller then ranks the whole row), or -2 when the row has
 * no finite log-probabilities (a NaN or +inf logit). */
static int preselect(const float *x, int V, int K, float score, rcand *out)
{
    if (K > 16) return -1;
    /* the K largest logits: a sorted list, updated only from the rare chunk
     * of 16 whose maximum is above its last; best[0] is the row maximum */
    float best[16];
    int nb = 0, i = 0;
    for (; i + 16 <= V; i += 16) {
        if (nb == K && !(max16(x + i) > best[K - 1])) continue;
        for (int l = i; l < i + 16; l++) {
            if (nb == K && !(x[l] > best[K - 1])) continue;
            int j = nb < K ? nb++ : K - 1;
            while (j > 0 && x[l] > best[j - 1]) best[j] = best[j - 1], j--;
            best[j] = x[l];
        }
    }
    for (; i < V; i++) {
        if (nb == K && !(x[i] > best[K - 1])) continue;
        int j = nb < K ? nb++ : K - 1;
        while (j > 0 && x[i] > best[j - 1]) best[j] = best[j - 1], j--;
        best[j] = x[i];
    }
    if (nb < K) return -1; /* fewer than K comparable logits (NaN), or V < K */
    const float mx = best[0];
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int v = 0; v < V; v++) sum += nlp_expf(x[v] - mx);
    const float lse = logf(sum);
    if (!isfinite(lse)) return -2; /* a NaN or +inf among the logits, or every one -inf */
    const float thr = best[K - 1];
    const float margin = 1e-4f * (fabsf(thr) + fabsf(mx) + fabsf(lse) + fabsf(score) + 1.0f), lo = thr - margin;
    int n = 0;
    for (i = 0; i < V; i += 16) {
        const int e = i + 16 < V ? i + 16 : V;
        if (e - i == 16 && !(max16(x + i) >= lo)) continue;
        for (int l = i; l < e; l++)
            if (x[l] >= lo) {
                if (n == CAND_CAP) return -1;
                out[n++] = (rcand){l, (x[l] - mx) - lse};
            }
    }
    return n;
}

int nlp_beam_search(nlp_model *m, nlp_cache *c, int G, const nlp_beam_opts *o, nlp_ids *out, float *scores_out,
                    float *norm_out)
{
    const int K = o->beams, R = G * K, N = o->max_new;
    int V;
    nlp_model_logits(m, NULL, &V);
    if (o->vocab_limit > 0 && o->vocab_limit < V) V = o->vocab_limit; /* the ids searched: each row's first V */
    const float NEG = -FLT_MAX;
    float *logp = nlp_malloc((size_t)V * sizeof *logp), *score = nlp_malloc((size_t)R * sizeof *score),
          *nscore = nlp_malloc((size_t)R * sizeof *nscore), *len = nlp_malloc((size_t)R * sizeof *len),
          *nlen = nlp_malloc((size_t)R * sizeof *nlen);
    int32_t *ys = nlp_malloc(((size_t)R * (N > 0 ? N : 1)) * sizeof *ys),
            *nys = nlp_malloc(((size_t)R * (N > 0 ? N : 1)) * sizeof *nys), *src = nlp_malloc((size_t)R * sizeof *src),
            *tok = nlp_malloc((size_t)R * sizeof *tok);
    char *done = nlp_calloc((size_t)R, 1), *ndone = nlp_calloc((size_t)R, 1);
    cand *top = nlp_malloc((size_t)K * sizeof *top);
    rcand *cands = nlp_malloc((size_t)R * CAND_CAP * sizeof *cands);
    int *ncand = nlp_malloc((size_t)R * sizeof *ncand);
    int rc = 0, steps = 0;
    if (!logp || !score || !nscore || !len || !nlen || !ys || !nys || !src || !tok || !done || !ndone || !top || !cands ||
        !ncand) {
        rc = NLP_ENOMEM;
        goto out;
    }
    for (int r = 0; r < R; r++) score[r] = r % K ? NEG : 0.0f, len[r] = 0;
    for (int t = 0; t < N; t++) {
        /* each live row's candidates, rows in parallel */
#pragma omp parallel for schedule(dynamic, 4) if (R > 1)
        for (int r = 0; r < R; r++) {
            int v;
            ncand[r] = done[r] ? 0 : preselect(last_logits(m, R, r, &v), V, K, score[r], cands + (size_t)r * CAND_CAP);
        }
        for (int r = 0; r < R; r++)
            if (ncand[r] == -2) {
                int v;
                const float *x = last_logits(m, R, r, &v);
                const size_t bad = nlp_nonfinite_index(x, (size_t)V);
                rc = nonfinite(t + 1, r, bad < (size_t)V ? (int32_t)bad : 0, bad < (size_t)V ? x[bad] : -INFINITY);
                goto out;
            }
        for (int g = 0; g < G; g++) {
            int ntop = 0;
            for (int k = 0; k < K; k++) {
                const int r = g * K + k;
                const float l = len[r] + (done[r] ? 0.0f : 1.0f);
                const float lp = o->alpha != 0 ? (float)pow((5.0 + l) / 6.0, o->alpha) : 1.0f;
                /* keep the K best keys, the earlier candidate first on ties (torch.topk) */
#define OFFER(i_, logp_) \
    do { \
        const float sc = score[r] + (logp_), key = sc / lp; \
        if (ntop == K && !(key > top[K - 1].key)) break; \
        int j = ntop < K ? ntop++ : K - 1; \
        while (j > 0 && key > top[j - 1].key) { \
            top[j] = top[j - 1]; \
            j--; \
        } \
        top[j] = (cand){key, sc, k, (i_)}; \
    } while (0)
                if (done[r]) { /* a finished row continues with EOS only */
                    for (int i = 0; i < V; i++) OFFER(i, i == o->eos ? 0.0f : NEG);
                } else if (ncand[r] >= 0) {
                    const rcand *cr = cands + (size_t)r * CAND_CAP;
                    for (int q = 0; q < ncand[r]; q++) OFFER(cr[q].tok, cr[q].logp);
                } else {
                    int v;
                    const float *x = last_logits(m, R, r, &v);
                    nlp_log_softmax(x, logp, V);
                    if (isnan(logp[0])) { /* NaN exactly when the log-sum-exp is not finite */
                        const size_t bad = nlp_nonfinite_index(x, (size_t)V);
                        rc = nonfinite(t + 1, r, bad < (size_t)V ? (int32_t)bad : 0,
                                       bad < (size_t)V ? x[bad] : -INFINITY);
                        goto out;
                    }
                    for (int i = 0; i < V; i++) OFFER(i, logp[i]);
                }
#undef OFFER
            }
            /* fewer than K candidates (none is expected: each live row
             * offers at least its K best, each finished one its EOS among V):
             * the rest are dead ends, never read uninitialised */
            for (int k = ntop; k < K; k++) top[k] = (cand){-INFINITY, NEG, 0, o->eos >= 0 ? o->eos : 0};
            for (int k = 0; k < K; k++) {
                const int r = g * K + k, from = g * K + top[k].beam;
                src[r] = from;
                tok[r] = top[k].tok;
                nscore[r] = top[k].score;
                nlen[r] = len[from] + (done[from] ? 0.0f : 1.0f);
                ndone[r] = done[from] || (o->eos >= 0 && top[k].tok == o->eos);
                memcpy(nys + (size_t)r * N, ys + (size_t)from * N, (size_t)t * sizeof *ys);
                nys[(size_t)r * N + t] = top[k].tok;
            }
        }
        memcpy(score, nscore, (size_t)R * sizeof *score);
        memcpy(len, nlen, (size_t)R * sizeof *len);
        memcpy(done, ndone, (size_t)R);
        if (o->group_max && o->eos >= 0) /* a group at its own limit ends as it would alone */
            for (int g = 0; g < G; g++)
                if (t + 1 >= o->group_max[g]) memset(done + (size_t)g * K, 1, (size_t)K);
        int32_t *sw = ys;
        ys = nys, nys = sw;
        steps = t + 1;
        int all = 1;
        for (int r = 0; r < R; r++) all &= done[r];
        if ((o->early_stop && all) || t == N - 1) break;
        if ((rc = nlp_cache_reorder_self(c, src))) goto out; /* a group's rows share their source */
        if ((rc = nlp_decode_feed(m, c, R, 1, tok))) goto out;
    }
    const int NB = o->nbest > 1 ? (o->nbest < K ? o->nbest : K) : 1;
    for (int g = 0; g < G; g++) {
        /* the group's rows by key, best first (the lower row on ties) */
        int rank[K];
        float key[K];
        for (int k = 0; k < K; k++) {
            const int r = g * K + k;
            const float lp = o->alpha != 0 ? (float)pow((5.0 + len[r]) / 6.0, o->alpha) : 1.0f;
            key[k] = score[r] / lp;
            int j = k;
            while (j > 0 && key[k] > key[rank[j - 1]]) {
                rank[j] = rank[j - 1];
                j--;
            }
            rank[j] = k;
        }
        for (int j = 0; j < NB; j++) {
            const int best = g * K + rank[j];
            nlp_ids *h = &out[(size_t)g * NB + j];
            h->n = 0;
            for (int t = 0; t < steps; t++) {
                int32_t id = ys[(size_t)best * N + t];
                if (o->eos >= 0 && id == o->eos) break;
                if ((rc = nlp_ids_push(h, id))) goto out;
            }
            if (scores_out) scores_out[(size_t)g * NB + j] = score[best];
            if (norm_out) norm_out[(size_t)g * NB + j] = key[rank[j]];
        }
    }
out:
    free(logp), free(score), free(nscore), free(len), free(nlen), free(ys), free(nys), free(src), free(tok);
    free(done), free(ndone), free(top), free(cands), free(ncand);
    return rc;
}
