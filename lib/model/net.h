/*
 * net.h — internal to lib/model: the layout of an nlp_model shared by
 * model.c and the architecture files (gpt.c, bert.c, encdec.c), and the
 * Transformer sublayers they are built from.
 *
 * A sublayer is one residual branch: self-attention, cross-attention or the
 * feed-forward network, wrapped either post-LN, out = LN(x + drop(f(x))) (the
 * paper, BERT), or pre-LN, out = x + drop(f(LN(x))) (GPT-2, pre-LN
 * transformer, LLaMA). A stack is a list of sublayers over one stream, with a
 * final LayerNorm in pre-LN stacks. The norm may be RMSNorm (LLaMA), the
 * feed-forward network a gated unit (SwiGLU: down(f(gate(x)) ⊙ up(x))),
 * self-attention may rotate its queries and keys (RoPE) and read fewer
 * key/value heads than query heads (grouped-query attention). Parameters are referred to by index into the
 * model's nlp_params, so the same description works whether the arena is
 * owned, mapped from a file, or replaced.
 *
 * Activations of a forward pass live in one arena (model->act), laid out by
 * the architecture's layout function for the batch shape (B, T, S): every
 * buffer the backward pass needs, plus the scratch it uses. The backward
 * pass keeps the gradient of the residual stream in one buffer (dres) that
 * each sublayer turns from ∂L/∂out into ∂L/∂x in place.
 *
 * Not for use outside lib/model: tools and later layers see model.h only.
 */
#ifndef NLP_MODEL_NET_H
#define NLP_MODEL_NET_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "model/config.h"
#include "model/model.h"
#include "nn/attn.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/params.h"
#include "nn/q8.h"

/* A linear layer by parameter index (b = -1: no bias). */
typedef struct nlp_lref {
    int w, b, in, out;
    enum nlp_wlayout layout;
} nlp_lref;

enum nlp_sub_kind {
    NLP_SUB_SELF,
    NLP_SUB_CROSS,
    NLP_SUB_FFN,
};

typedef struct nlp_sub {
    enum nlp_sub_kind kind;
    int causal;            /* self-attention over earlier positions only */
    int ln_g, ln_b;        /* this sublayer's LayerNorm (before f in pre-LN, after the sum in post-LN) */
    int rms;               /* the norm is RMSNorm (ln_b -1) */
    int fused;             /* self-attention: q|k|v from one [C, C+2Ckv] projection (GPT-2 c_attn) */
    int rope;              /* self-attention: queries and keys rotated at their positions (nn/rope.h) */
    int gated;             /* FFN: fc1 is the gate and `up` the up projection of a gated unit */
    nlp_lref qkv, q, k, v, o;
    nlp_lref fc1, up, fc2;
    int site;              /* dropout sites: site (residual branch), site+1 (probabilities / FFN inner) */
    int slot;              /* attention: its layer's place in an nlp_cache */
    /* forward activations */
    float *ln, *mean, *rstd; /* pre-LN: LN(x); post-LN: mean/rstd of the sum */
    float *sum;              /* post-LN: x + drop(f) */
    float *out;              /* the sublayer's output, [N,C] */
    float *qkv_a;            /* self: [N, C+2Ckv] (q|k|v); cross: q [N,C] */
    float *kv_a;             /* cross: [M,2C] from the memory */
    float *P;                /* attention probabilities [B,H,T,S] */
    float *att;              /* attention output before o, [N,C] */
    float *h1, *h2;          /* FFN: fc1 output [N,F] (gated: gate|up [N,2F]), activation (after inner dropout) [N,F] */
} nlp_sub;

typedef struct nlp_stack {
    nlp_sub *sub;
    int n;
    int lnf_g, lnf_b;        /* final LayerNorm, -1 when none */
    int lnf_rms;             /* it is RMSNorm */
    float *lnf, *lnf_mean, *lnf_rstd;
    float *x0;               /* input of the first sublayer (embeddings after dropout) */
    int rel;                 /* T5's relative position bias: its table [buckets, H] (-1: none), shared by
                                the stack's self-attention layers */
    int rel_bidir;           /* its buckets are bidirectional (encoder) or causal (decoder) */
    float *pb, *dpb;         /* the pass's bias [H, T, S] and its gradient (heap, grown as needed) */
    size_t pb_cap, dpb_cap;
} nlp_stack;

/* Everything one pass over a stack needs besides the sublayers. */
typedef struct nlp_run {
    nlp_model *m;
    float *w, *g;            /* parameter and gradient arenas (g NULL: no gradients) */
    int B, T, S;             /* queries per row (T) and memory length (S) of this stack */
    const uint8_t *self_mask;  /* [B,T] keys that may be attended (NULL: all) */
    const uint8_t *cross_mask; /* [B,S] */
    const float *mem;        /* cross-attention memory [B·S, C] */
    float *dmem;             /* its gradient, accumulated */
    struct nlp_cache *cache; /* incremental decoding: keys/values of earlier positions (NULL: training) */
    const float *pbias;      /* self-attention's score bias [H, T, keys] (relative positions; NULL: none) */
    float *dpbias;           /* backward: its gradient, summed over batches and layers (NULL: none) */
} nlp_run;

/* The KV cache of model.h: per self-attention layer, k|v of every position
 * so far, [B, max_len, 2Ckv] (Ckv = key/value heads × head size; rotated
 * keys with RoPE); per cross-attention layer, k|v of the source,
 * [B, S, 2C], and the source key mask [B, S]. */
struct nlp_cache {
    const nlp_model *m;
    int B, max_len, len, C, Ckv;
    int group;               /* cache rows per encoded source (beam search: the beams); >= 1 */
    int n_self, n_cross;
    float *self;             /* n_self × [B, max_len, 2C] */
    int32_t *rows;           /* [B, max_len]: the row of `self` holding row b's position p (beam search
                                reorders this table, not the keys and values) */
    int moved;               /* rows is not the identity */
    float *cross;            /* n_cross × [B/group, S, 2C], allocated by the encoder pass */
    uint8_t *src_mask;       /* [B/group, S] */
    int S;
    float *tmp;              /* reordering scratch */
    size_t tmp_cap;
};

/* The cache block of self-attention layer `slot`, and of cross-attention layer `slot`. */
float *nlp_cache_self(const struct nlp_cache *c, int slot);
float *nlp_cache_cross(const struct nlp_cache *c, int slot);

struct nlp_arch_ops;

struct nlp_model {
    nlp_model_config cfg;
    const struct nlp_arch_ops *ops;
    nlp_params *params;
    nlp_rng rng;             /* dropout */
    int training;
    int row0;                /* the batch's first row in a larger batch (dropout masks; nlp_batch.row0) */
    double loss_norm[2];     /* divisors of the token-level and sequence-level loss means; 0 = own count */
    void (*grad_hook)(void *ctx, size_t off); /* nlp_model_set_grad_hook */
    void *grad_hook_ctx;
    uint64_t pass_seed;      /* of the last forward pass */
    int have_loss;           /* the last forward computed a loss: backward may run */
    int infer;               /* the activation layout is for incremental decoding (no P, no cross k/v) */

    /* parameter indices (-1 when absent) */
    int tok_emb, pos_emb, type_emb, src_emb, src_pos, out_w;
    int emb_ln_g, emb_ln_b;  /* bert */
    nlp_lref pool, mlm_dense, nsp; /* bert heads */
    int mlm_ln_g, mlm_ln_b, mlm_bias;
    nlp_stack stack[2];      /* [0]: the encoder (gpt: the decoder-only stack), [1]: the decoder */
    float *pe;               /* sinusoidal table [max_positions, C] */
    float *rope_cs;          /* rotary positions: cos|sin of the pass's positions [T, D] (nn/rope.h) */

    /* activation arena, laid out for (B, T, S) */
    float *act;
    size_t act_cap;
    int B, T, S;
    float *emb_sum, *emb_mean, *emb_rstd; /* bert: embeddings before their LayerNorm */
    float *y0;                /* transformer: decoder input embeddings */
    float *logits;            /* [N, V], becomes the gradient in backward */
    int logits_grad;          /* the forward (training) already turned logits into the loss gradient */
    uint16_t *wbf;            /* inference: the parameters in bf16 (NULL = none) */
    nlp_sgemm_b *wpk;         /* inference: per parameter index, its matrix (or the q|k|v or k|v
                                 it starts) packed for the kernels; NULL = none (nlp_model_pack_weights) */
    nlp_q8 *wq8;              /* inference: per parameter index, its matrix (or the q|k|v or k|v it
                                 starts) quantized to int8; NULL = none (nlp_model_set_inference_int8) */
    int inference_layout;     /* W[in,out] weights transposed for decoding: never saved or trained */
    float *lse;               /* [N, 2]: nlp_xent_forward's max and log-sum-exp per row */
    int32_t *target;          /* [N] loss targets (shifted for gpt) */
    float *pool_pre, *pooled, *nsp_logits, *nsp_lse; /* bert */
    float *cls_logits;        /* classification head [B, num_labels] (NULL: none) */
    float *cls_h, *cls_lse;   /* gpt: the classified rows' final states [B, C]; [B, 2] log-sum-exps */
    int32_t *cls_target;
    int cls_count, lm_count;  /* rows in the classification loss, tokens in gpt's LM loss */
    nlp_lref cls;             /* the head: bert "classifier", gpt "score" [num_labels, C] + bias; w -1 = none */
    double lm_weight;         /* gpt classification: λ of L3 = L2 + λ·L1 */
    char *label_names;        /* the head's labels, '\n'-joined (NULL: unnamed) */
    int input_length;         /* positions per example it was trained on (0: not recorded) */
    int input_texts;          /* texts per example it was trained on: 1 or 2 (a pair; 0: not recorded) */
    int ft_task;              /* enum nlp_ft_task it was fine-tuned for (0: not recorded) */
    char *prefix;             /* transformer: the task prefix of its sources (NULL: none) */
    int choices, pair_sum;    /* of the last forward (nlp_batch) */
    float *span_out;          /* bert span head: qa_outputs [N, 2] of the last forward */
    float *span_logits;       /* [2, B, T]: start, then end logits (masked), their gradient in backward */
    float *span_lse;          /* [2, B, 2] */
    int32_t *span_target;     /* [2, B] */
    const int32_t *in_span_mask;
    int span_count;           /* rows in the span loss */
    const int32_t *in_cls_pos;
    int32_t *nsp_target;
    float *mlm_h1, *mlm_h2, *mlm_ln, *mlm_mean, *mlm_rstd;
    float *mlm_x;             /* bert training: the labelled rows of the encoder's output, gathered [R, C] */
    int32_t *mlm_rows;        /* their positions in the batch */
    int mlm_R, mlm_gathered;  /* rows the MLM head ran on (all B·T, or the labelled ones) */
    uint8_t *mask_a, *mask_b;  /* key masks: self (or source) and target */
    const int32_t *in_ids, *in_types, *in_src, *in_tgt; /* inputs of the last forward (caller's memory) */
    float *dres, *dres2, *dmem, *tmp[4], *dbig; /* backward scratch */
    int nsp_count, mlm_count;
};

typedef struct nlp_arch_ops {
    int (*build)(nlp_model *m);                 /* declares parameters, fills the sublayer descriptions */
    void (*init)(nlp_model *m, nlp_rng *r);     /* random initialisation as the reference does it */
    size_t (*layout)(nlp_model *m, float *base, int B, int T, int S); /* floats needed; assigns when base != NULL */
    int (*check)(const nlp_model *m, const nlp_batch *b);             /* input ids in range */
    int (*forward)(nlp_model *m, const nlp_batch *b, nlp_losses *out);
    int (*backward)(nlp_model *m);
    /* the targets a batch has in the token-level and sequence-level losses */
    void (*counts)(const nlp_model *m, const nlp_batch *b, double n[2]);
    /* incremental decoding (NULL for bert): T new positions after c->len */
    int (*decode)(nlp_model *m, const nlp_batch *b, struct nlp_cache *c);
    /* transformer: the encoder pass of decoding, filling the cross-attention cache */
    int (*encode)(nlp_model *m, const nlp_batch *b, struct nlp_cache *c);
} nlp_arch_ops;

/* Bump allocation inside the activation arena (64-byte steps). With base NULL
 * it only counts. */
typedef struct nlp_bump {
    float *base;
    size_t used;
} nlp_bump;

static inline float *nlp_bump_take(nlp_bump *b, size_t n)
{
    float *p = b->base ? b->base + b->used : NULL;
    b->used += (n + 15) & ~(size_t)15;
    return p;
}

/* Declares a linear layer's parameters ("<name>.weight", "<name>.bias") and
 * returns its reference; on failure returns w = -1 with the error set. */
nlp_lref nlp_net_linear(nlp_params *p, const char *name, int in, int out, enum nlp_wlayout layout, int bias);
/* n linear layers W[out,in] with biases, named names[i], into *dst[i]: the n
 * weights first, one after another, then the n biases (none without
 * `bias`), so that the layers
 * also act as one [n·out, in] layer (q|k|v in one product). Returns 0 or the
 * error of nlp_params_add. */
int nlp_net_linears(nlp_params *p, const char *const *names, int n, int in, int out, int bias, nlp_lref **dst);
/* Whether the weights and biases of linear layers l[0..n) (W[out,in], the
 * same `in`) lie one after another in the arena, so that they act as one
 * [Σ out, in] layer (the bf16 copy of the arena keeps the same layout). */
int nlp_net_adjacent(const nlp_model *m, const nlp_lref *const *l, int n);
/* Cross-attention k|v of s for the memory mem [M, C] into kv [M, 2C]. */
void nlp_net_kv_forward(const nlp_model *m, const nlp_sub *s, int M, const float *mem, float *kv);
/* Declares "<name>.weight" and "<name>.bias" of a LayerNorm of size C; 0 or an error. */
int nlp_net_layernorm(nlp_params *p, const char *name, int C, int *g, int *b);
/* Declares "<name>.weight" of an RMSNorm of size C; 0 or an error. */
int nlp_net_rmsnorm(nlp_params *p, const char *name, int C, int *g);

/* Key/value width of self-attention: kv-heads × head size (= d-model
 * without grouped-query attention). */
static inline int nlp_net_kv_dim(const nlp_model *m) { return m->cfg.kv_heads * (m->cfg.d_model / m->cfg.heads); }
/* Whether the feed-forward sublayers are gated units (llama's SwiGLU, T5 v1.1's gated GELU). */
static inline int nlp_net_gated(const nlp_model *m)
{
    return m->cfg.arch == NLP_ARCH_LLAMA || (m->cfg.arch == NLP_ARCH_TRANSFORMER && m->cfg.ffn == NLP_FFN_GATED_GELU);
}
/* The cos|sin table of rotary positions p0 .. p0+T−1 into m->rope_cs (laid
 * out by nlp_net_layout_scratch for T rows); nothing without rotary positions. */
void nlp_net_rope_table(nlp_model *m, int p0, int T);

/* Relative positions: the bias of stack st for T queries from position q0
 * over S keys into st->pb (nlp_relpos_forward); with `grad`, st->dpb of the
 * same size zeroed for the backward pass. 0 or NLP_ENOMEM. */
int nlp_net_relbias(nlp_model *m, nlp_stack *st, int q0, int T, int S, int grad);
/* Adds st->dpb [H, T, S] (queries from 0) to the gradient of st's table. */
void nlp_net_relbias_backward(nlp_model *m, nlp_stack *st, int T, int S);

/* The nlp_linear for a reference in the current arenas, for the forward
 * pass (no gradients). */
nlp_linear nlp_net_lin(const nlp_model *m, const nlp_lref *r);
/* For the backward pass: layer r with gradients. The weight gradient is
 * claimed (nlp_params_grad_claim): written by the product (dw_set) where it
 * is still lazily zero; the bias's is zeroed first when it is. Call it right
 * before the layer's backward, once per pass. _n: the n layers l[0..n) as
 * one, whose weights lie together (nlp_net_adjacent). */
nlp_linear nlp_net_lin_bwd(const nlp_model *m, const nlp_lref *r);
nlp_linear nlp_net_lin_bwd_n(const nlp_model *m, const nlp_lref *const *l, int n);

/* The packed copy of weight i for a product with `out` columns (the layer
 * alone, or the adjacent layers it starts), or NULL: none, or training. */
const nlp_sgemm_b *nlp_net_wpk(const nlp_model *m, int i, int out);

/* The int8 copy of weight i for a product with `out` columns, or NULL. */
const nlp_q8 *nlp_net_wq8(const nlp_model *m, int i, int out);

/* Parameter / gradient tensor by index (NULL for -1 or no gradients). */
float *nlp_net_w(const nlp_model *m, int i);
/* Parameter i rounded to bf16 (nlp_model_set_inference_bf16), or NULL when
 * there is none or the model is training. */
const uint16_t *nlp_net_wbf(const nlp_model *m, int i);
/* m->logits[N,V] = h[N,C] · table[V,C]ᵀ (the tied or separate output
 * matrix), from the bf16 copy for few rows when there is one. */
void nlp_net_logits(nlp_model *m, int N, const float *h, int table);
/* Gradient of parameter i (NULL for -1 or no gradients), for adding to:
 * zeroed first when it is lazily zero (nlp_params_grad_at). */
float *nlp_net_g(const nlp_model *m, int i);

/* Lays out the activations of one stack of sublayers: N = B·T rows, M = B·S
 * memory rows. Returns nothing; counts into b. */
void nlp_net_layout_stack(nlp_model *m, nlp_stack *st, nlp_bump *b, int B, int T, int S);

/* Scratch for the backward pass (rows = largest N, mrows = largest M). */
void nlp_net_layout_scratch(nlp_model *m, nlp_bump *b, int rows, int mrows, int T, int S);

/* Forward through a whole stack from st->x0; returns the stack's output
 * (the final LN output when there is one). */
int nlp_net_stack_forward(const nlp_run *r, nlp_stack *st, const float **out);

/* Backward through a stack: dres holds ∂L/∂(stack output) on entry and
 * ∂L/∂x0 on return. */
int nlp_net_stack_backward(const nlp_run *r, nlp_stack *st, float *dres);

/* The dropout seed of a site in the current pass (0 when dropout is off). */
uint64_t nlp_net_seed(const nlp_model *m, int site);
/* The dropout index of a tensor's first element, per_row = T·width floats
 * per batch row: row0 rows of the whole batch come before this share. */
static inline uint64_t nlp_net_i0(const nlp_model *m, int T, int width)
{
    return (uint64_t)m->row0 * (uint64_t)T * (uint64_t)width;
}
/* Dropout probabilities in effect (0 when not training). */
float nlp_net_dropout(const nlp_model *m);
float nlp_net_attn_dropout(const nlp_model *m);

/* Backward of the loss through logits = h·Wᵀ (W [V,C]: the output projection
 * or a tied embedding, parameter w): turns the logits buffer of x into its
 * gradient, writes dh = dlogits·W [N,C] and adds dlogitsᵀ·h to W's gradient. */
void nlp_net_output_backward(nlp_model *m, const nlp_xent *x, const float *lse, float scale, int w, const float *h,
                             float *dh);

/* NLP_EDATA naming the row and position of the first id outside [0, V) that
 * is not `allow` (INT32_MIN: none allowed); `what` names the array. */
int nlp_net_check_ids(const int32_t *ids, int B, int T, int V, int32_t allow, const char *what);

/* Fills w with N(0, std) from r. */
void nlp_net_normal(float *w, size_t n, double std, nlp_rng *r);

#endif
