/*
 * loss.c — cross-entropy with label smoothing. See loss.h.
 */
#include "nn/loss.h"
#include "nn/vmath.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* lse[0] = the row maximum, lse[1] = log Σ exp(x − max): kept apart, so that
 * lse − x_v = (max − x_v) + lse[1] loses nothing to the rounding of a large max. */
static void row_lse(const float *r, int V, float *lse)
{
    float mx = -FLT_MAX, s = 0;
#pragma omp simd reduction(max : mx)
    for (int v = 0; v < V; v++) mx = r[v] > mx ? r[v] : mx;
#pragma omp simd reduction(+ : s)
    for (int v = 0; v < V; v++) s += nlp_expf(r[v] - mx);
    lse[0] = mx;
    lse[1] = logf(s);
}

/* The loss and nll of row i (not ignored). */
static void row_loss(const nlp_xent *x, int i, const float *l, double *loss, double *nll)
{
    const float *r = x->logits + (size_t)i * x->ld;
    const int V = x->V, y = x->target[i];
    const float eps = x->smoothing;
    const double mx = l[0];
    double n1 = (mx - r[y]) + l[1];
    *nll = *loss = n1;
    if (eps > 0) {
        double sx = 0;
#pragma omp simd reduction(+ : sx)
        for (int v = 0; v < V; v++) sx += mx - r[v];
        double all = sx + (double)V * l[1]; /* Σ_v (lse − x_v) */
        *loss = x->mode == NLP_SMOOTH_UNIFORM ? (1 - eps) * n1 + eps / V * all
                                              : (1 - eps) * n1 + eps / (V - 1) * (all - n1);
    }
}

void nlp_xent_forward(const nlp_xent *x, float *lse, nlp_xent_result *out)
{
    const int N = x->N, V = x->V;
    /* per-row terms in parallel, then summed in row order: the result does not depend on threads */
    double *part = malloc((size_t)(N ? N : 1) * 2 * sizeof(double));
    double loss = 0, nll = 0;
    int count = 0;
    for (int i = 0; i < N; i++) count += x->target[i] != x->ignore_index;
    if (part) {
#pragma omp parallel for schedule(static) if ((long)N * V > (1L << 15))
        for (int i = 0; i < N; i++) {
            float l[2];
            row_lse(x->logits + (size_t)i * x->ld, V, l);
            if (lse) lse[2 * i] = l[0], lse[2 * i + 1] = l[1];
            part[2 * i] = part[2 * i + 1] = 0;
            if (x->target[i] != x->ignore_index) row_loss(x, i, l, &part[2 * i], &part[2 * i + 1]);
        }
        for (int i = 0; i < N; i++) loss += part[2 * i], nll += part[2 * i + 1];
        free(part);
    } else { /* the same sums, one row at a time */
        for (int i = 0; i < N; i++) {
            float l[2];
            row_lse(x->logits + (size_t)i * x->ld, V, l);
            if (lse) lse[2 * i] = l[0], lse[2 * i + 1] = l[1];
            double a = 0, b = 0;
            if (x->target[i] != x->ignore_index) row_loss(x, i, l, &a, &b);
            loss += a, nll += b;
        }
    }
    out->count = count;
    const double d = x->norm > 0 ? x->norm : count;
    out->loss = count ? loss / d : 0;
    out->nll = count ? nll / d : 0;
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
#pragma omp parallel for schedule(static) if ((long)N * V > (1L << 15))
    for (int i = 0; i < N; i++) {
        const float *r = x->logits + (size_t)i * x->ld;
        float *d = dlogits + (size_t)i * ld_d;
        int y = x->target[i];
        if (y == x->ignore_index) {
            for (int v = 0; v < V; v++) d[v] = 0;
            continue;
        }
        float mx = lse[2 * i], ls = lse[2 * i + 1];
        float py = nlp_expf((r[y] - mx) - ls); /* read before d (which may be r) is written */
#pragma omp simd
        for (int v = 0; v < V; v++) d[v] = (nlp_expf((r[v] - mx) - ls) - q_off) * s;
        d[y] = (py - q_on) * s;
    }
}

/* One row of nlp_xent_fused: its loss terms into *loss and *nll (0 when
 * ignored), the row overwritten by its gradient. */
static void fused_row(const nlp_xent *x, int i, float *lse, float s, float q_off, float q_on, double *loss, double *nll)
{
    float *r = (float *)x->logits + (size_t)i * x->ld;
    const int V = x->V, y = x->target[i];
    float l[2];
    row_lse(r, V, l);
    if (lse) lse[2 * i] = l[0], lse[2 * i + 1] = l[1];
    *loss = *nll = 0;
    if (y == x->ignore_index) {
        for (int v = 0; v < V; v++) r[v] = 0;
        return;
    }
    row_loss(x, i, l, loss, nll);
    const float mx = l[0], ls = l[1];
    const float py = nlp_expf((r[y] - mx) - ls);
#pragma omp simd
    for (int v = 0; v < V; v++) r[v] = (nlp_expf((r[v] - mx) - ls) - q_off) * s;
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
#pragma omp parallel for schedule(static) if ((long)N * V > (1L << 15))
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
