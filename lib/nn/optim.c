/*
 * optim.c — Adam/AdamW, clipping and schedules. See optim.h.
 */
#include "nn/optim.h"
#include "base/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

nlp_optim_config nlp_optim_default(void)
{
    return (nlp_optim_config){.kind = NLP_OPTIM_ADAMW, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
}

nlp_optim_config nlp_optim_paper(void)
{
    return (nlp_optim_config){.kind = NLP_OPTIM_ADAM, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-9, .weight_decay = 0};
}

static float *zalloc(size_t n)
{
    void *m = NULL;
    size_t bytes = ((n ? n : 1) * sizeof(float) + 63) & ~(size_t)63;
    if (posix_memalign(&m, 64, bytes) != 0) return NULL;
    memset(m, 0, bytes);
    return m;
}

int nlp_optim_init(nlp_optim *o, const nlp_optim_config *cfg, size_t n)
{
    memset(o, 0, sizeof *o);
    o->cfg = *cfg;
    o->n = n;
    o->m = zalloc(n);
    o->v = zalloc(n);
    if (!o->m || !o->v) {
        nlp_optim_free(o);
        return nlp_error(NLP_ENOMEM, "out of memory (optimizer state, %zu floats)", 2 * n);
    }
    return NLP_OK;
}

void nlp_optim_free(nlp_optim *o)
{
    free(o->m);
    free(o->v);
    o->m = o->v = NULL;
}

/* The update of one element: the same operations in the same order in
 * every variant, vectorised or not (sqrt and division are correctly rounded
 * in either, so the bits agree). The Makefile compiles with -fno-math-errno:
 * with errno, sqrtf is a call where v could be negative, which kept these
 * loops scalar (2.5x slower on GPT-2 124M: 270 against ~100 ms a step). */
#define ADAM_ELEM(DECOUPLED, L2) \
    { \
        float gi = g[i] * s1, pi = p[i]; \
        gi *= s2; \
        if (DECOUPLED) pi *= decay; \
        if (L2) gi += l2 * pi; \
        const float mi = m[i] * b1 + a1 * gi; \
        const float vi = v[i] * b2 + a2 * gi * gi; \
        m[i] = mi; \
        v[i] = vi; \
        const float denom = sqrtf(vi) / bc2_sqrt + eps; \
        p[i] = pi - step_size * (mi / denom); \
    }

/* The Adam/AdamW update of elements [0, n) of one tensor, shared by the team
 * of the enclosing parallel region (chunks as threads become free, no
 * barrier at the end). One loop per combination of the flags, each without
 * a branch, so that each is vectorised. (The gradients are not zeroed here:
 * the training loop marks them zero, nlp_params_zero_grad_lazy, and the
 * backward pass writes them.) */
static void adam_range(float *p, const float *g, float *m, float *v, long n, const nlp_optim_config *c, long step,
                       double lr, double wd, float s1, float s2)
{
    const float b1 = (float)c->beta1, b2 = (float)c->beta2;
    const float a1 = (float)(1 - c->beta1), a2 = (float)(1 - c->beta2);
    const double bc1 = 1 - pow(c->beta1, (double)step), bc2 = 1 - pow(c->beta2, (double)step);
    const float step_size = (float)(lr / bc1), bc2_sqrt = (float)sqrt(bc2), eps = (float)c->eps;
    const float decay = (float)(1 - lr * wd), l2 = (float)wd;
    const int decoupled = c->kind == NLP_OPTIM_ADAMW, coupled = !decoupled && l2 != 0;
#define ADAM_LOOP(D, L) \
    do { \
        _Pragma("omp for simd schedule(dynamic, 16384) nowait") for (long i = 0; i < n; i++) ADAM_ELEM(D, L) \
    } while (0)
    if (decoupled) ADAM_LOOP(1, 0);
    else if (coupled) ADAM_LOOP(0, 1);
    else ADAM_LOOP(0, 0);
#undef ADAM_LOOP
}

void nlp_adam_update(float *p, const float *g, float *m, float *v, size_t n, const nlp_optim_config *c, long step,
                     double lr, double wd)
{
    long N = (long)n;
#pragma omp parallel if (N > (1L << 15))
    adam_range(p, g, m, v, N, c, step, lr, wd, 1.0f, 1.0f);
}

/* Every tensor in one parallel region, each split between the threads
 * without a barrier between tensors (an element's update depends on no
 * other element). */
void nlp_optim_step(nlp_optim *o, nlp_params *p, const float *grad, double lr)
{
    nlp_optim_step_scaled(o, p, grad, 1.0f, 1.0f, lr);
}

void nlp_optim_step_scaled(nlp_optim *o, nlp_params *p, const float *grad, float s1, float s2, double lr)
{
    o->step++;
    float *data = nlp_params_data(p);
    const size_t nt = nlp_params_count(p);
#pragma omp parallel if (nlp_params_numel(p) > (1L << 15))
    for (size_t i = 0; i < nt; i++) {
        const nlp_param_info *t = nlp_params_info(p, i);
        double wd = t->no_decay ? 0 : o->cfg.weight_decay;
        adam_range(data + t->off, grad + t->off, o->m + t->off, o->v + t->off, (long)t->numel, &o->cfg, o->step, lr, wd,
                   s1, s2);
    }
}

#define NORM_BLOCK 4096

/* Sum of squares of g[a, e) in double: sixteen interleaved sums (element
 * i goes to sum (i - a) % 16), folded in halves, then the tail in order.
 * The order is the source's, so every ISA and thread count gives the same
 * bits; independent chains run as vectors of doubles rather than one chain
 * of dependent additions. */
static double sumsq(const float *g, size_t a, size_t e, float sc)
{
    double acc[16] = {0};
    size_t i = a;
    for (; i + 16 <= e; i += 16)
#pragma omp simd
        for (int j = 0; j < 16; j++) {
            const float x = g[i + j] * sc;
            acc[j] += (double)x * x;
        }
    for (int w = 8; w >= 1; w /= 2) /* pairwise: acc[j] += acc[j + w] */
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    double s = acc[0];
    for (; i < e; i++) {
        const float x = g[i] * sc;
        s += (double)x * x;
    }
    return s;
}

double nlp_grad_norm(const float *g, size_t n) { return nlp_grad_norm_scaled(g, n, 1.0f); }

double nlp_grad_norm_scaled(const float *g, size_t n, float sc)
{
    long nb = (long)((n + NORM_BLOCK - 1) / NORM_BLOCK);
    double *part = malloc((size_t)(nb ? nb : 1) * sizeof(double));
    double total = 0;
    if (!part) { /* no memory for partial sums: one sequential pass gives the same blocks */
        for (long b = 0; b < nb; b++) {
            size_t e = (size_t)(b + 1) * NORM_BLOCK < n ? (size_t)(b + 1) * NORM_BLOCK : n;
            total += sumsq(g, (size_t)b * NORM_BLOCK, e, sc);
        }
        return sqrt(total);
    }
#pragma omp parallel for schedule(dynamic, 16) if (nb > 8)
    for (long b = 0; b < nb; b++) {
        size_t e = (size_t)(b + 1) * NORM_BLOCK < n ? (size_t)(b + 1) * NORM_BLOCK : n;
        part[b] = sumsq(g, (size_t)b * NORM_BLOCK, e, sc);
    }
    for (long b = 0; b < nb; b++) total += part[b];
    free(part);
    return sqrt(total);
}

float nlp_clip_factor(double norm, double max_norm)
{
    double coef = max_norm / (norm + 1e-6);
    return coef < 1 ? (float)coef : 1.0f;
}

double nlp_clip_grad_norm(float *g, size_t n, double max_norm)
{
    double norm = nlp_grad_norm(g, n);
    const float c = nlp_clip_factor(norm, max_norm);
    if (c < 1) {
        long N = (long)n;
#pragma omp parallel for simd schedule(dynamic, 16384) if (N > (1L << 15))
        for (long i = 0; i < N; i++) g[i] *= c;
    }
    return norm;
}

double nlp_lr_noam(long step, int d_model, long warmup, double factor)
{
    double s = step < 1 ? 1 : (double)step;
    double a = 1 / sqrt(s), b = s * pow((double)warmup, -1.5);
    return factor / sqrt((double)d_model) * (a < b ? a : b);
}

static double warm(long step, long warmup, double lr)
{
    return warmup > 0 && step < warmup ? lr * (double)step / (double)warmup : -1;
}

double nlp_lr_cosine(long step, long warmup, long total, double lr, double lr_min)
{
    double w = warm(step, warmup, lr);
    if (w >= 0) return w;
    if (step >= total) return lr_min;
    double frac = (double)(step - warmup) / (double)(total - warmup > 0 ? total - warmup : 1);
    return lr_min + 0.5 * (lr - lr_min) * (1 + cos(M_PI * frac));
}

double nlp_lr_linear(long step, long warmup, long total, double lr, double lr_min)
{
    double w = warm(step, warmup, lr);
    if (w >= 0) return w;
    if (step >= total) return lr_min;
    double frac = (double)(step - warmup) / (double)(total - warmup > 0 ? total - warmup : 1);
    return lr + (lr_min - lr) * frac;
}

double nlp_lr_constant(long step, long warmup, double lr)
{
    double w = warm(step, warmup, lr);
    return w >= 0 ? w : lr;
}
