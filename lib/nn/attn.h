/*
 * attn.h — scaled dot-product multi-head attention, forward and backward:
 * self, cross and causal attention with key padding masks, computed one
 * (batch, head) pair at a time.
 *
 * For each batch b and head h, with Q_bh [T,D], K_bh [S,D], V_bh [S,D]:
 *
 *   A = Q Kᵀ / √D (+ bias[h,t,j]);  A[t,j] = −FLT_MAX where key j is masked for query t;
 *   P = softmax_rows(A);  O_bh = dropout(P) V_bh
 *
 * Key j is masked for query t when key_mask[b, j] == 0 (padding) or, with
 * `causal`, when j > q_offset + t (q_offset = number of earlier positions: 0 in
 * training, the cache length in incremental decoding). A row whose keys are
 * all masked becomes uniform, exactly as torch's masked_fill(−FLT_MAX) +
 * softmax (and HF BERT's additive (1−mask)·finfo.min) behave.
 *
 * Grouped-query attention (Ainslie et al. 2023): with kv_heads = G < H, the
 * keys and values have G heads and query head h uses key/value head
 * h / (H/G) (H a multiple of G); G = 1 is multi-query attention. The
 * backward pass sums the gradients of the H/G query heads that share a
 * key/value head, in head order.
 *
 * Q, K, V and O are read and written in place inside wider buffers through
 * row strides and batch strides (head h is the column block h·D .. h·D+D−1), so
 * a fused q|k|v projection or a KV cache is used without copies or transposes.
 * Nothing of size [B,H,T,S] is made except P itself, which training keeps for
 * the backward pass; without P (inference) each thread scores one [T,S] block.
 * Heads run in parallel (each head's products on one thread, heads taken as
 * threads become free), so results do not depend on the thread count.
 *
 * Not here: the q/k/v/o projections (linear.h) and KV-cache management (model).
 */
#ifndef NLP_NN_ATTN_H
#define NLP_NN_ATTN_H

#include <stdint.h>

/* Query rows up to which incremental attention takes dot products. */
#define NLP_ATTN_SMALL_ROWS 4

typedef struct nlp_attn {
    int B, H, T, S, D;        /* batch, heads, queries, keys, head size */
    int kv_heads;             /* heads of k and v (grouped-query attention): 0 or H = one per query head */
    const float *q;           /* query (b,t,h) at q + b·bsq + t·ldq + h·D */
    long ldq, bsq;
    const float *k;           /* key (b,j,g) at k + b·bsk + j·ldk + g·D, g = h / (H/kv_heads) */
    long ldk, bsk;
    const float *v;
    long ldv, bsv;
    float *out;               /* output (b,t,h) at out + b·bso + t·ldo + h·D */
    long ldo, bso;
    int kv_group;             /* queries of batches b share the keys, values and mask of b / kv_group
                                 (the beams of one source); 0 or 1: their own (forward only) */
    const uint8_t *key_mask;  /* [b·bsm + j] != 0: key may be attended; NULL: all keys */
    long bsm;
    int causal, q_offset;
    int incremental;          /* decoding over a cache: few query rows (T <= NLP_ATTN_SMALL_ROWS) take dot
                                 products, not matrix products (the same path for a row whatever the batch) */
    const int32_t *kv_rows;   /* incremental, few rows: key and value j of batch b are batch
                                 kv_rows[b·bs_rows + j]'s (a beam's history, reordered by index instead of
                                 copying); NULL: b's own */
    long bs_rows;
    float dropout;            /* on the probabilities, training only */
    uint64_t seed;
    int b0;                   /* batches of a larger batch before this one: the mask of element
                                 (b, h, t, j) is that of (b0 + b, h, t, j) (a rank's share) */
    const float *bias;        /* added to the scaled scores, the same for every batch: (h, t, j) at
                                 bias + h·bsb + t·ldb + j, t the query row of this call (T5's relative
                                 positions, nn/relpos.h); NULL: none */
    long ldb, bsb;
    float *dbias;             /* backward: ∂L/∂A of (b, h, t, j) written at dbias + ((b·H + h)·T + t)·S + j
                                 (the gradient of the bias before the sum over batches); it may be the
                                 forward's P, which the backward no longer needs after it; NULL: none */
} nlp_attn;

/* Computes a->out. P [B,H,T,S] receives the probabilities (before dropout) for
 * the backward pass, or is NULL in inference. Returns 0 or NLP_ENOMEM. */
int nlp_attn_forward(const nlp_attn *a, float *P);

/* Given dout (strides ldo/bso of a->out, at `dout`) and the forward's P, writes
 * dq, dk and dv (overwriting; strides of q, k and v respectively). dk and dv
 * may point into one buffer (fused k|v), as may dq/dk/dv into a fused dqkv.
 * Returns 0 or NLP_ENOMEM. */
int nlp_attn_backward(const nlp_attn *a, const float *P, const float *dout, float *dq, float *dk, float *dv);

#endif
