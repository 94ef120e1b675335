/*
 * loss.c — cross-entropy with label smoothing. See loss.h.
 */
#include "nn/loss.h"

#include <float.h>
#include <math.h>
#include <stddef.h>

static float row_lse(const float *r, int V)
{
    float mx = -FLT_MAX;
    for (int v = 0; v < V; v++) mx = r[v] > mx ? r[v] : mx;
    float s = 0;
    for (int v = 0; v < V; v++) s += expf(r[v] - mx);
    return mx + logf(s);
}

void nlp_xent_forward(const nlp_xent *x, float *lse, nlp_xent_result *out)
{
    const int N = x->N, V = x->V;
    double loss = 0, nll = 0;
    int count = 0;
    float eps = x->smoothing;
#pragma omp parallel for schedule(static) reduction(+ : count) if ((long)N * V > (1L << 15))
    for (int i = 0; i < N; i++) {
        const float *r = x->logits + (size_t)i * x->ld;
        float l = row_lse(r, V);
        if (lse) lse[i] = l;
        if (x->target[i] != x->ignore_index) count++;
    }
    /* per-row terms summed in row order: the result does not depend on threads */
    for (int i = 0; i < N; i++) {
        int y = x->target[i];
        if (y == x->ignore_index) continue;
        const float *r = x->logits + (size_t)i * x->ld;
        float l = lse ? lse[i] : row_lse(r, V);
        double n1 = (double)l - r[y];
        double rowloss = n1;
        if (eps > 0) {
            double sx = 0;
            for (int v = 0; v < V; v++) sx += r[v];
            double all = (double)V * l - sx; /* Σ_v (lse − x_v) */
            rowloss = x->mode == NLP_SMOOTH_UNIFORM ? (1 - eps) * n1 + eps / V * all
                                                    : (1 - eps) * n1 + eps / (V - 1) * (all - n1);
        }
        loss += rowloss;
        nll += n1;
    }
    out->count = count;
    out->loss = count ? loss / count : 0;
    out->nll = count ? nll / count : 0;
}

void nlp_xent_backward(const nlp_xent *x, const float *lse, float scale, float *dlogits, long ld_d)
{
    const int N = x->N, V = x->V;
    int count = 0;
    for (int i = 0; i < N; i++) count += x->target[i] != x->ignore_index;
    float s = count ? scale / count : 0;
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
        float l = lse[i], py = expf(r[y] - l); /* read before d (which may be r) is written */
        for (int v = 0; v < V; v++) d[v] = (expf(r[v] - l) - q_off) * s;
        d[y] = (py - q_on) * s;
    }
}
