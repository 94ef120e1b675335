/*
 * loss.c — cross-entropy with label smoothing. See loss.h.
 */
#include "nn/loss.h"
#include "nn/vmath.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* The row's maximum, and Σ_v x_v in double when `sum` (the smoothing term). */
static float row_max(const float *r, int V, double *sum)
{
    float mx = -FLT_MAX;
#pragma omp simd reduction(max : mx)
    for (int v = 0; v < V; v++) mx = r[v] > mx ? r[v] : mx;
    if (sum) {
        double s = 0;
#pragma omp simd reduction(+ : s)
        for (int v = 0; v < V; v++) s += r[v];
        *sum = s;
    }
    return mx;
}

/* Σ_v exp(x_v − mx), each exponential also written to e[v] when e is not
 * NULL (it may be r itself). Sixteen partial sums in a fixed order, then a
 * fixed tree: the same bits with or without e, however the loop is
 * vectorised, so that the fused pass and the forward pass agree exactly. */
static float row_expsum(const float *r, int V, float mx, float *e)
{
    float acc[16] = {0};
    int v = 0;
    for (; v + 16 <= V; v += 16) {
        float t[16];
#pragma omp simd
        for (int l = 0; l < 16; l++) t[l] = nlp_expf(r[v + l] - mx);
        if (e)
            for (int l = 0; l < 16; l++) e[v + l] = t[l];
#pragma omp simd
        for (int l = 0; l < 16; l++) acc[l] += t[l];
    }
    for (int l = 0; v < V; v++, l++) {
        float t = nlp_expf(r[v] - mx);
        if (e) e[v] = t;
        acc[l] += t;
    }
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) acc[l] += acc[l + w];
    return acc[0];
}

/* lse[0] = the row maximum, lse[1] = log Σ exp(x − max): kept apart, so that
 * lse − x_v = (max − x_v) + lse[1] loses nothing to the rounding of a large
 * max. *sum (when asked) = Σ_v x_v. */
static void row_lse(const float *r, int V, float *lse, double *sum)
{
    const float mx = row_max(r, V, sum);
    lse[0] = mx;
    lse[1] = logf(row_expsum(r, V, mx, NULL));
}

/* 1 / Σ exp(x − max) from lse[1]: the factor that turns exp(x − max) into
 * the softmax in both backward paths (one exponential per logit). */
static inline float inv_sum(const float *lse) { return nlp_expf(-lse[1]); }

/* The loss and nll of a row (not ignored) whose target logit is xy;
 * sx = Σ_v x_v (smoothing only). */
static void row_loss(const nlp_xent *x, float xy, const float *l, double sx, double *loss, double *nll)
{
    const int V = x->V;
    const float eps = x->smoothing;
    const double mx = l[0];
    double n1 = (mx - xy) + l[1];
    *nll = *loss = n1;
    if (eps > 0) {
        double all = ((double)V * mx - sx) + (double)V * l[1]; /* Σ_v (lse − x_v) */
        *loss = x->mode == NLP_SMOOTH_UNIFORM ? (1 - eps) * n1 + eps / V * all
                                              : (1 - eps) * n1 + eps / (V - 1) * (all - n1);
    }
}

void nlp_xent_forward(const nlp_xent *x, float *lse, nlp_xent_result *out)
{
    const int N = x->N, V = x->V;
    /* per-row terms in parallel (rows taken eight at a time as threads
     * become free), then summed in row order: the result does not depend on
     * threads */
    double *part = malloc((size_t)(N ? N : 1) * 2 * sizeof(double));
    double loss = 0, nll = 0;
    int count = 0;
    for (int i = 0; i < N; i++) count += x->target[i] != x->ignore_index;
    if (part) {
#pragma omp parallel for schedule(dynamic, 8) if ((long)N * V > (1L << 15))
        for (int i = 0; i < N; i++) {
            float l[2];
            double sx = 0;
            row_lse(x->logits + (size_t)i * x->ld, V, l, x->smoothing > 0 ? &sx : NULL);
            if (lse) lse[2 * i] = l[0], lse[2 * i + 1] = l[1];
            part[2 * i] = part[2 * i + 1] = 0;
            if (x->target[i] != x->ignore_index)
                row_loss(x, x->logits[(size_t)i * x->ld + x->target[i]], l, sx, &part[2 * i], &part[2 * i + 1]);
        }
        for (int i = 0; i < N; i++) loss += part[2 * i], nll += part[2 * i + 1];
        free(part);
    } else { /* the same sums, one row at a time */
        for (int i = 0; i < N; i++) {
            float l[2];
            double sx = 0;
            row_lse(x->logits + (size_t)i * x->ld, V, l, x->smoothing > 0 ? &sx : NULL);
            if (lse) lse[2 * i] = l[0], lse[2 * i + 1] = l[1];
            double a = 0, b = 0;
            if (x->target[i] != x->ignore_index) row_loss(x, x->logits[(size_t)i * x->ld + x->target[i]], l, sx, &a, &b);
            loss += a, nll += b;
        }
    }
    out->count = count;
    const double d = x->norm > 0 ? x->norm : count;
    out->loss = count ? loss / d : 0;
    out->nll = count ? nll / d : 0;
}

void nlp_xent_rows(const nlp_xent *x, double *nll, uint8_t *top)
{
    const int N = x->N, V = x->V;
#pragma omp parallel for schedule(dynamic, 8) if ((long)N * V > (1L << 15))
    for (int i = 0; i < N; i++) {
        nll[i] = 0;
        if (top) top[i] = 0;
        if (x->target[i] == x->ignore_index) continue;
        const float *r = x->logits + (size_t)i * x->ld;
        float l[2];
        double loss;
        row_lse(r, V, l, NULL);
        row_loss(x, r[x->target[i]], l, 0, &loss, &nll[i]);
        if (top) top[i] = r[x->target[i]] >= l[0];
    }
}

void nlp_xent_backward(const nlp_xent *x, const float *lse, float scale, float *dlogits, long ld_d)
{
    const int N = x->N, V = x->V;
    int count = 0;
    for (int i = 0; i < N; i++) count += x->target[i] != x->ignore_index;
    float s = count ? (float)(scale / (x->norm > 0 ? x->norm : count)) : 0;
    float eps = x->smoothing;
    float q_off = x->mode == NLP_SMOOTH_UNIFORM ? eps / V : (V > 1 ? eps / (V - 1) : 0);
    float q_on = x->mode == NLP_SMOOTH_UNIFORM ? 1 - eps + eps / V : 1 - eps;
#pragma omp parallel for schedule(dynamic, 8) if ((long)N * V > (1L << 15))
    for (int i = 0; i < N; i++) {
        const float *r = x->logits + (size_t)i * x->ld;
        float *d = dlogits + (size_t)i * ld_d;
        int y = x->target[i];
        if (y == x->ignore_index) {
            for (int v = 0; v < V; v++) d[v] = 0;
            continue;
        }
        const float mx = lse[2 * i], inv = inv_sum(lse + 2 * i);
        const float py = nlp_expf(r[y] - mx) * inv; /* read before d (which may be r) is written */
#pragma omp simd
        for (int v = 0; v < V; v++) d[v] = (nlp_expf(r[v] - mx) * inv - q_off) * s;
        d[y] = (py - q_on) * s;
    }
}

/* One row of nlp_xent_fused: its loss terms into *loss and *nll (0 when
 * ignored), the row overwritten by its gradient. */
static void fused_row(const nlp_xent *x, int i, float *lse, float s, float q_off, float q_on, double *loss, double *nll)
{
    float *r = (float *)x->logits + (size_t)i * x->ld;
    const int V = x->V, y = x->target[i];
    *loss = *nll = 0;
    double sx = 0;
    const float mx = row_max(r, V, x->smoothing > 0 ? &sx : NULL);
    const float ry = y == x->ignore_index ? 0 : r[y];
    /* the exponentials replace the logits: one per logit (row_lse's sum) */
    float l[2] = {mx, logf(row_expsum(r, V, mx, r))};
    if (lse) lse[2 * i] = l[0], lse[2 * i + 1] = l[1];
    if (y == x->ignore_index) {
        for (int v = 0; v < V; v++) r[v] = 0;
        return;
    }
    row_loss(x, ry, l, sx, loss, nll);
    const float inv = inv_sum(l), py = r[y] * inv;
#pragma omp simd
    for (int v = 0; v < V; v++) r[v] = (r[v] * inv - q_off) * s;
    r[y] = (py - q_on) * s;
}

void nlp_xent_fused(const nlp_xent *x, float *lse, nlp_xent_result *out)
{
    const int N = x->N, V = x->V;
    int count = 0;
    for (int i = 0; i < N; i++) count += x->target[i] != x->ignore_index;
    const float s = count ? (float)(1.0 / (x->norm > 0 ? x->norm : count)) : 0;
    const float eps = x->smoothing;
    const float q_off = x->mode == NLP_SMOOTH_UNIFORM ? eps / V : (V > 1 ? eps / (V - 1) : 0);
    const float q_on = x->mode == NLP_SMOOTH_UNIFORM ? 1 - eps + eps / V : 1 - eps;
    /* per-row terms in parallel, then summed in row order (or, without
     * memory for them, row by row: the same sums) */
    double *part = malloc((size_t)(N ? N : 1) * 2 * sizeof(double));
    double loss = 0, nll = 0;
    if (part) {
#pragma omp parallel for schedule(dynamic, 8) if ((long)N * V > (1L << 15))
        for (int i = 0; i < N; i++) fused_row(x, i, lse, s, q_off, q_on, &part[2 * i], &part[2 * i + 1]);
        for (int i = 0; i < N; i++) loss += part[2 * i], nll += part[2 * i + 1];
        free(part);
    } else {
        for (int i = 0; i < N; i++) {
            double a, b;
            fused_row(x, i, lse, s, q_off, q_on, &a, &b);
            loss += a, nll += b;
        }
    }
    out->count = count;
    const double d = x->norm > 0 ? x->norm : count;
    out->loss = count ? loss / d : 0;
    out->nll = count ? nll / d : 0;
}
