/*
 * optim.h — Adam and AdamW over a parameter arena, global-norm gradient
 * clipping, and learning-rate schedules.
 *
 * AdamW (Loshchilov & Hutter; torch.optim.AdamW) at step t (1-based):
 *   p ← p·(1 − lr·wd)                           (decoupled weight decay)
 *   m ← β1·m + (1−β1)·g;   v ← β2·v + (1−β2)·g²
 *   p ← p − lr/(1−β1ᵗ) · m / (√v/√(1−β2ᵗ) + ε)
 * Adam (Kingma & Ba; torch.optim.Adam) adds wd·p to g instead (L2 decay) and
 * does not decay p directly. The paper's Transformer setting is Adam with
 * β = (0.9, 0.98), ε = 1e-9. The order of operations and the rounding are
 * torch's (fp32 tensors, scalars in double), so one step agrees with
 * torch.optim to a few ulp. Parameters marked no_decay (nlp_param_info) get no
 * weight decay. Moments live in two arenas of the parameters' layout (a
 * checkpoint writes each in one piece).
 *
 * Schedules return the learning rate for a 1-based step:
 *   Noam        factor · d^−0.5 · min(step^−0.5, step · warmup^−1.5)
 *   cosine      linear warm-up to lr over `warmup` steps, then cosine to lr_min at `total`
 *   linear      linear warm-up, then linear decay to lr_min at `total`
 *   constant    linear warm-up, then lr
 *
 * Not here: the training loop, loss scaling, gradient accumulation (lib/train).
 */
#ifndef NLP_NN_OPTIM_H
#define NLP_NN_OPTIM_H

#include <stddef.h>

#include "nn/params.h"

enum nlp_optim_kind {
    NLP_OPTIM_ADAMW = 0,
    NLP_OPTIM_ADAM = 1,
};

typedef struct nlp_optim_config {
    enum nlp_optim_kind kind;
    double beta1, beta2, eps, weight_decay;
} nlp_optim_config;

/* AdamW with torch's defaults: β (0.9, 0.999), ε 1e-8, weight decay 0.01. */
nlp_optim_config nlp_optim_default(void);
/* Adam as in Vaswani et al.: β (0.9, 0.98), ε 1e-9, no weight decay. */
nlp_optim_config nlp_optim_paper(void);

typedef struct nlp_optim {
    nlp_optim_config cfg;
    long step;   /* steps taken */
    size_t n;    /* floats per moment arena */
    float *m, *v;
} nlp_optim;

/* Allocates zeroed moments for n parameters. 0 or NLP_ENOMEM; free with nlp_optim_free. */
int nlp_optim_init(nlp_optim *o, const nlp_optim_config *cfg, size_t n);
void nlp_optim_free(nlp_optim *o);

/* One step on every tensor of `p` with gradients `grad` (p's layout) and
 * learning rate lr; increments o->step first. */
void nlp_optim_step(nlp_optim *o, nlp_params *p, const float *grad, double lr);

/* nlp_optim_step with each gradient read as (g·s1)·s2, each product rounded
 * to float: the same bits as scaling the arena by s1, then by s2, then
 * stepping (a factor of 1 changes nothing), without the two passes over it.
 * The training loop's s1 is 1/accumulation steps, s2 the clipping factor. */
void nlp_optim_step_scaled(nlp_optim *o, nlp_params *p, const float *grad, float s1, float s2, double lr);

/* The update on one flat range (used by nlp_optim_step): `step` is the 1-based
 * step number for bias correction. */
void nlp_adam_update(float *p, const float *g, float *m, float *v, size_t n, const nlp_optim_config *c, long step,
                     double lr, double wd);

/* √(Σ g²) over n floats, summed in fixed blocks in double: independent of threads. */
double nlp_grad_norm(const float *g, size_t n);

/* nlp_grad_norm of g·s (each product rounded to float), g left as it is. */
double nlp_grad_norm_scaled(const float *g, size_t n, float s);

/* The factor clipping to max_norm applies to gradients of norm `norm`
 * (torch clip_grad_norm_: max_norm/(norm + 1e-6)), or 1 where that is not below 1. */
float nlp_clip_factor(double norm, double max_norm);

/* Scales g so that its global norm is at most max_norm (torch clip_grad_norm_:
 * factor max_norm/(norm + 1e-6) when below 1). Returns the norm before clipping. */
double nlp_clip_grad_norm(float *g, size_t n, double max_norm);

double nlp_lr_noam(long step, int d_model, long warmup, double factor);
double nlp_lr_cosine(long step, long warmup, long total, double lr, double lr_min);
double nlp_lr_linear(long step, long warmup, long total, double lr, double lr_min);
double nlp_lr_constant(long step, long warmup, double lr);

#endif
