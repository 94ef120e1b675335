/*
 * act.h — elementwise activations and dropout, forward and backward.
 *
 *   NLP_ACT_RELU       max(x, 0)                                    (Vaswani FFN)
 *   NLP_ACT_GELU       x·Φ(x) = ½x(1 + erf(x/√2))                    (BERT "gelu")
 *   NLP_ACT_GELU_TANH  ½x(1 + tanh(√(2/π)(x + 0.044715x³)))          (GPT-2 "gelu_new")
 *   NLP_ACT_SILU       x·σ(x) = x/(1 + e^−x)                         (LLaMA's SwiGLU gate)
 *   NLP_ACT_TANH       tanh(x)                                       (BERT pooler)
 *
 * Gated linear units (Shazeer 2020, "GLU variants"): y = f(gate) ⊙ up over
 * the two halves of one [N, 2F] product, SwiGLU with SiLU (LLaMA), GeGLU
 * with GELU (T5 v1.1).
 *
 * Dropout keeps an element with probability 1−p and scales it by 1/(1−p).
 * Whether element i is kept is a pure function of (seed, i) — a splitmix64
 * hash — so the backward pass recomputes the mask instead of storing it, and
 * the mask does not depend on the thread count. The per-call seed comes from
 * the caller's nlp_rng (one draw per forward pass, then one per site).
 *
 * Not here: softmax (attn.h, loss.h).
 */
#ifndef NLP_NN_ACT_H
#define NLP_NN_ACT_H

#include <stddef.h>
#include <stdint.h>

enum nlp_act {
    NLP_ACT_RELU = 0,
    NLP_ACT_GELU = 1,
    NLP_ACT_GELU_TANH = 2,
    NLP_ACT_SILU = 3,
    NLP_ACT_TANH = 4,
};

/* y = f(x), n elements; y may equal x. */
void nlp_act_forward(enum nlp_act a, float *y, const float *x, size_t n);

/* dx = f'(x)·dy (+ dx when accumulate), n elements; x is the forward input;
 * dx may equal dy when not accumulating. */
void nlp_act_backward(enum nlp_act a, float *dx, const float *dy, const float *x, size_t n, int accumulate);

/* Gated unit: y[i, f] = f(gu[i, f]) · gu[i, F + f] for i < N, f < F: each
 * row of gu holds the gate's F values, then the up projection's. */
void nlp_glu_forward(enum nlp_act a, float *y, const float *gu, int N, int F);

/* Its backward: dgu[i, f] = dy[i, f]·up·f'(gate), dgu[i, F + f] =
 * dy[i, f]·f(gate) (dgu overwritten; it may not overlap dy). */
void nlp_glu_backward(enum nlp_act a, float *dgu, const float *dy, const float *gu, int N, int F);

/* 1 if element i survives dropout with probability p under `seed`. */
static inline int nlp_dropout_keep(uint64_t seed, uint64_t i, uint32_t threshold)
{
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (uint32_t)(z >> 40) >= threshold;
}
/* The threshold nlp_dropout_keep compares against for probability p in [0, 1). */
static inline uint32_t nlp_dropout_threshold(float p) { return (uint32_t)((double)p * 16777216.0); }

/* y = x·mask/(1−p) for n elements, the mask of element i from (seed, i0 + i):
 * i0 places the block in a larger tensor (a share of a batch split across
 * ranks draws the whole batch's masks). y may equal x. The same call is the
 * backward pass (dx from dy). p == 0 copies. */
void nlp_dropout(float *y, const float *x, size_t n, float p, uint64_t seed, uint64_t i0);

/* y = a + b, n elements (y may equal a or b). */
void nlp_add(float *y, const float *a, const float *b, size_t n);

/* A site seed for dropout: mixes the per-pass seed with a site number. */
uint64_t nlp_dropout_site(uint64_t pass_seed, uint64_t site);

#endif
