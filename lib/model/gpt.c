/*
 * gpt.c — GPT-2: parameters, initialisation, forward and backward. See gpt.h.
 */
#include "model/gpt.h"
#include "base/prof.h"
#include "base/err.h"
#include "base/mem.h"
#include "nn/act.h"
#include "nn/embed.h"
#include "nn/gemm.h"
#include "nn/loss.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IGNORE (-100)

/* The LLaMA block (HF LlamaForCausalLM names): RMSNorm, q/k/v/o without
 * biases (k and v of kv-heads), the SwiGLU feed-forward gate|up|down, the
 * final model.norm, lm_head unless tied. */
static int llama_build(nlp_model *m)
{
    const nlp_model_config *c = &m->cfg;
    nlp_params *p = m->params;
    const int C = c->d_model, F = c->d_ff, L = c->layers, Ckv = nlp_net_kv_dim(m);
    char name[128];
    int64_t s[2] = {c->vocab_size, C};
    if ((m->tok_emb = nlp_params_add(p, "model.embed_tokens.weight", 2, s, 0)) < 0) return m->tok_emb;
    nlp_stack *st = &m->stack[0];
    st->sub = nlp_calloc((size_t)2 * L, sizeof *st->sub);
    if (!st->sub) return NLP_ENOMEM;
    st->n = 2 * L;
    int rc;
    for (int l = 0; l < L; l++) {
        nlp_sub *a = &st->sub[2 * l], *f = &st->sub[2 * l + 1];
        a->kind = NLP_SUB_SELF;
        a->causal = a->rope = a->rms = 1;
        a->site = 10 + 4 * l;
        a->slot = l;
        f->kind = NLP_SUB_FFN;
        f->gated = f->rms = 1;
        f->site = 12 + 4 * l;
        a->ln_b = f->ln_b = -1;
        snprintf(name, sizeof name, "model.layers.%d.input_layernorm", l);
        if ((rc = nlp_net_rmsnorm(p, name, C, &a->ln_g))) return rc;
        static const char *const proj[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
        nlp_lref *dst[] = {&a->q, &a->k, &a->v, &a->o};
        for (int i = 0; i < 4; i++) { /* q, k, v declared together: one product */
            snprintf(name, sizeof name, "model.layers.%d.self_attn.%s", l, proj[i]);
            const int out = i == 1 || i == 2 ? Ckv : C;
            if ((*dst[i] = nlp_net_linear(p, name, C, out, NLP_W_OUT_IN, 0)).w < 0) return nlp_errcode();
        }
        snprintf(name, sizeof name, "model.layers.%d.post_attention_layernorm", l);
        if ((rc = nlp_net_rmsnorm(p, name, C, &f->ln_g))) return rc;
        snprintf(name, sizeof name, "model.layers.%d.mlp.gate_proj", l);
        if ((f->fc1 = nlp_net_linear(p, name, C, F, NLP_W_OUT_IN, 0)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "model.layers.%d.mlp.up_proj", l);
        if ((f->up = nlp_net_linear(p, name, C, F, NLP_W_OUT_IN, 0)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "model.layers.%d.mlp.down_proj", l);
        if ((f->fc2 = nlp_net_linear(p, name, F, C, NLP_W_OUT_IN, 0)).w < 0) return nlp_errcode();
    }
    st->lnf_rms = 1;
    if ((rc = nlp_net_rmsnorm(p, "model.norm", C, &st->lnf_g))) return rc;
    if (!c->tie_output && (m->out_w = nlp_params_add(p, "lm_head.weight", 2, s, 0)) < 0) return m->out_w;
    /* finetune: HF LlamaForSequenceClassification's "score", without a bias */
    if (c->num_labels > 0 && (m->cls = nlp_net_linear(p, "score", C, c->num_labels, NLP_W_OUT_IN, 0)).w < 0)
        return nlp_errcode();
    return NLP_OK;
}

static int gpt_build(nlp_model *m)
{
    const nlp_model_config *c = &m->cfg;
    if (c->arch == NLP_ARCH_LLAMA) return llama_build(m);
    nlp_params *p = m->params;
    const int C = c->d_model, F = c->d_ff, L = c->layers, Ckv = nlp_net_kv_dim(m);
    const int rope = c->positions == NLP_POS_ROPE;
    char name[128];
    int64_t s[2] = {c->vocab_size, C};
    if ((m->tok_emb = nlp_params_add(p, "wte.weight", 2, s, 0)) < 0) return m->tok_emb;
    s[0] = c->max_positions;
    if (!rope && (m->pos_emb = nlp_params_add(p, "wpe.weight", 2, s, 0)) < 0) return m->pos_emb;
    nlp_stack *st = &m->stack[0];
    st->sub = nlp_calloc((size_t)2 * L, sizeof *st->sub);
    if (!st->sub) return NLP_ENOMEM;
    st->n = 2 * L;
    int rc;
    for (int l = 0; l < L; l++) {
        nlp_sub *a = &st->sub[2 * l], *f = &st->sub[2 * l + 1];
        a->kind = NLP_SUB_SELF;
        a->causal = a->fused = 1;
        a->rope = rope;
        a->site = 10 + 4 * l;
        a->slot = l;
        f->kind = NLP_SUB_FFN;
        f->site = 12 + 4 * l;
        snprintf(name, sizeof name, "h.%d.ln_1", l);
        if ((rc = nlp_net_layernorm(p, name, C, &a->ln_g, &a->ln_b))) return rc;
        snprintf(name, sizeof name, "h.%d.attn.c_attn", l);
        if ((a->qkv = nlp_net_linear(p, name, C, C + 2 * Ckv, NLP_W_IN_OUT, 1)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "h.%d.attn.c_proj", l);
        if ((a->o = nlp_net_linear(p, name, C, C, NLP_W_IN_OUT, 1)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "h.%d.ln_2", l);
        if ((rc = nlp_net_layernorm(p, name, C, &f->ln_g, &f->ln_b))) return rc;
        snprintf(name, sizeof name, "h.%d.mlp.c_fc", l);
        if ((f->fc1 = nlp_net_linear(p, name, C, F, NLP_W_IN_OUT, 1)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "h.%d.mlp.c_proj", l);
        if ((f->fc2 = nlp_net_linear(p, name, F, C, NLP_W_IN_OUT, 1)).w < 0) return nlp_errcode();
    }
    if ((rc = nlp_net_layernorm(p, "ln_f", C, &st->lnf_g, &st->lnf_b))) return rc;
    /* finetune: a linear classifier of the final state at the [EXTRACT] position */
    if (c->num_labels > 0 && (m->cls = nlp_net_linear(p, "score", C, c->num_labels, NLP_W_OUT_IN, 1)).w < 0)
        return nlp_errcode();
    return NLP_OK;
}

/* HF GPT-2 init: N(0, σ) weights and embeddings, c_proj weights N(0, σ/√(2L)),
 * zero biases, LayerNorm weights 1. LLaMA (HF LlamaPreTrainedModel): N(0, σ)
 * matrices and embeddings, RMSNorm weights 1. */
static void gpt_init(nlp_model *m, nlp_rng *r)
{
    const double sd = m->cfg.init_std;
    if (m->cfg.arch == NLP_ARCH_LLAMA) {
        for (size_t i = 0; i < nlp_params_count(m->params); i++) {
            const nlp_param_info *t = nlp_params_info(m->params, i);
            float *w = nlp_params_at(m->params, i);
            size_t n = strlen(t->name);
            if (n > 11 && strcmp(t->name + n - 11, "norm.weight") == 0)
                for (size_t j = 0; j < t->numel; j++) w[j] = 1;
            else nlp_net_normal(w, t->numel, sd, r);
        }
        return;
    }
    for (size_t i = 0; i < nlp_params_count(m->params); i++) {
        const nlp_param_info *t = nlp_params_info(m->params, i);
        float *w = nlp_params_at(m->params, i);
        size_t n = strlen(t->name);
        if (n > 5 && strcmp(t->name + n - 5, ".bias") == 0) memset(w, 0, t->numel * sizeof(float));
        else if (strstr(t->name, ".ln_") || strncmp(t->name, "ln_f", 4) == 0)
            for (size_t j = 0; j < t->numel; j++) w[j] = 1;
        else if (n > 14 && strcmp(t->name + n - 14, "c_proj.weight") == 0)
            nlp_net_normal(w, t->numel, sd / sqrt(2.0 * m->cfg.layers), r);
        else nlp_net_normal(w, t->numel, sd, r);
    }
}

static size_t gpt_layout(nlp_model *m, float *base, int B, int T, int S)
{
    (void)S;
    nlp_bump b = {base, 0};
    const size_t N = (size_t)B * T;
    nlp_net_layout_stack(m, &m->stack[0], &b, B, T, 0);
    m->logits = nlp_bump_take(&b, N * (size_t)m->cfg.vocab_size);
    m->lse = nlp_bump_take(&b, 2 * N);
    m->target = (int32_t *)nlp_bump_take(&b, N);
    m->cls_logits = m->cls_h = m->cls_lse = NULL;
    m->cls_target = NULL;
    if (m->cfg.num_labels > 0) {
        m->cls_h = nlp_bump_take(&b, (size_t)B * m->cfg.d_model);
        m->cls_logits = nlp_bump_take(&b, (size_t)B * m->cfg.num_labels);
        m->cls_lse = nlp_bump_take(&b, 2 * (size_t)B);
        m->cls_target = (int32_t *)nlp_bump_take(&b, (size_t)B);
    }
    nlp_net_layout_scratch(m, &b, (int)N, 0, T, 0);
    return b.used;
}

static int gpt_check(const nlp_model *m, const nlp_batch *b)
{
    if (!b->ids) return nlp_error(NLP_EINVAL, "%s batch without ids", nlp_arch_name(m->cfg.arch));
    if (b->T > nlp_model_config_max_len(&m->cfg))
        return nlp_error(NLP_EDATA, "sequence of %d positions is longer than %s %d", b->T,
                         m->cfg.sliding_window ? "the sliding window" : "max-positions", nlp_model_config_max_len(&m->cfg));
    int rc = nlp_net_check_ids(b->ids, b->B, b->T, m->cfg.vocab_size, INT32_MIN, "input");
    if (!rc && b->labels) rc = nlp_net_check_ids(b->labels, b->B, b->T, m->cfg.vocab_size, IGNORE, "label");
    if (!rc && b->cls_labels && m->cfg.num_labels <= 0) rc = nlp_error(NLP_EINVAL, "class labels for a model without a classification head");
    const int g = nlp_batch_group(b), K = b->choices > 1 ? b->choices : m->cfg.num_labels;
    if (!rc && b->cls_labels) rc = nlp_net_check_ids(b->cls_labels, b->B / g, 1, K, INT32_MIN, b->choices > 1 ? "choice" : "class label");
    if (!rc && m->cfg.num_labels > 0 && !b->cls_pos) rc = nlp_error(NLP_EINVAL, "gpt classification needs the [EXTRACT] positions");
    if (!rc && b->cls_pos) rc = nlp_net_check_ids(b->cls_pos, b->B, 1, b->T, INT32_MIN, "[EXTRACT] position");
    return rc;
}

static nlp_xent gpt_xent(const nlp_model *m)
{
    return (nlp_xent){.N = m->B * m->T, .V = m->cfg.vocab_size, .logits = m->logits, .ld = m->cfg.vocab_size,
                      .target = m->target, .ignore_index = IGNORE, .norm = m->loss_norm[0]};
}

/* The classification loss over B rows: one row of logits each, or with
 * choices the examples' groups of one-unit scores (model.h). */
static nlp_xent cls_xent(const nlp_model *m, int B)
{
    const int g = m->choices > 1 ? m->choices : m->pair_sum ? 2 : 1;
    const int L = m->choices > 1 ? m->choices : m->cfg.num_labels;
    return (nlp_xent){.N = B / g, .V = L, .logits = m->cls_logits, .ld = L, .target = m->cls_target,
                      .ignore_index = IGNORE, .norm = m->loss_norm[1]};
}

/* The output projection: the tied embedding, or llama's lm_head. */
static int out_table(const nlp_model *m) { return m->out_w >= 0 ? m->out_w : m->tok_emb; }

/* Embeddings at positions offset.. (learned, or the rotary angles of those
 * positions), the stack and the final norm; *h gets the final states [B·T, C]. */
static int gpt_hidden(nlp_model *m, const int32_t *ids, int B, int T, int offset, struct nlp_cache *c, const float **h)
{
    const int C = m->cfg.d_model, N = B * T;
    nlp_stack *st = &m->stack[0];
    NLP_PROF("embedding fwd", 0, 12.0 * N * C, {
        nlp_embed_forward(st->x0, nlp_net_w(m, m->tok_emb), ids, N, C, 1.0f, 0);
        if (m->pos_emb >= 0) nlp_pos_forward(st->x0, nlp_net_w(m, m->pos_emb), B, T, C, offset);
        nlp_dropout(st->x0, st->x0, (size_t)N * C, nlp_net_dropout(m), nlp_net_seed(m, 0), nlp_net_i0(m, T, C));
    });
    nlp_net_rope_table(m, offset, T);
    nlp_run r = {.m = m, .B = B, .T = T, .cache = c};
    return nlp_net_stack_forward(&r, st, h);
}

/* The same, then the logits. */
static int gpt_logits(nlp_model *m, const int32_t *ids, int B, int T, int offset, struct nlp_cache *c)
{
    const float *h;
    int rc = gpt_hidden(m, ids, B, T, offset, c, &h);
    if (rc) return rc;
    nlp_net_logits(m, B * T, h, out_table(m));
    return NLP_OK;
}

/* Classification: the final states at the [EXTRACT] positions, their logits,
 * and with labels the mean cross-entropy (L2). */
static void gpt_classify(nlp_model *m, const nlp_batch *b, const float *h, nlp_losses *out)
{
    const int B = b->B, T = b->T, C = m->cfg.d_model, L = m->cfg.num_labels;
    int R = B; /* rows the head reads */
    if (b->pair_sum) { /* similarity: the two orders' states added (a + b = b + a, bit for bit) */
        R = B / 2;
        for (int i = 0; i < R; i++) {
            const float *x = h + ((size_t)(2 * i) * T + b->cls_pos[2 * i]) * C;
            const float *y = h + ((size_t)(2 * i + 1) * T + b->cls_pos[2 * i + 1]) * C;
            float *d = m->cls_h + (size_t)i * C;
            for (int c = 0; c < C; c++) d[c] = x[c] + y[c];
        }
    } else {
        for (int i = 0; i < B; i++)
            memcpy(m->cls_h + (size_t)i * C, h + ((size_t)i * T + b->cls_pos[i]) * C, (size_t)C * sizeof(float));
    }
    nlp_linear l = nlp_net_lin(m, &m->cls);
    nlp_linear_forward(&l, R, m->cls_h, C, m->cls_logits, L);
    m->cls_count = 0;
    if (!b->cls_labels) return;
    memcpy(m->cls_target, b->cls_labels, (size_t)(B / nlp_batch_group(b)) * sizeof(int32_t));
    nlp_xent x = cls_xent(m, B);
    nlp_xent_result res;
    nlp_xent_forward(&x, m->cls_lse, &res);
    out->cls_loss = res.loss;
    m->cls_count = res.count;
}

static int gpt_forward(nlp_model *m, const nlp_batch *b, nlp_losses *out)
{
    const int B = b->B, T = b->T;
    m->in_ids = b->ids;
    m->in_cls_pos = b->cls_pos;
    m->cls_count = m->lm_count = 0;
    m->choices = b->choices > 1 ? b->choices : 0, m->pair_sum = b->pair_sum != 0;
    const int classify = m->cfg.num_labels > 0;
    /* a classifier computes the vocabulary's logits only for its auxiliary LM loss */
    const int lm = !classify || (b->labels && m->lm_weight > 0);
    const float *h;
    int rc = gpt_hidden(m, b->ids, B, T, 0, NULL, &h);
    if (rc) return rc;
    if (lm) nlp_net_logits(m, B * T, h, out_table(m));
    if (classify) gpt_classify(m, b, h, out);
    if (lm && b->labels) {
        for (int i = 0; i < B; i++)
            for (int t = 0; t < T; t++)
                m->target[(size_t)i * T + t] = t + 1 < T ? b->labels[(size_t)i * T + t + 1] : IGNORE;
        nlp_xent x = gpt_xent(m);
        nlp_xent_result res;
        if (m->training && !classify) { /* backward follows: the gradient now, while each row is in cache */
            NLP_PROF("loss fwd+bwd", 0, 8.0 * x.N * x.V, nlp_xent_fused(&x, m->lse, &res));
            m->logits_grad = 1;
        } else {
            NLP_PROF("loss fwd", 0, 4.0 * x.N * x.V, nlp_xent_forward(&x, m->lse, &res));
        }
        out->tokens = m->lm_count = res.count;
        if (classify) out->lm_loss = res.loss;
        else out->loss = out->nll = res.loss;
    }
    if (classify) {
        out->loss = out->cls_loss + (m->lm_count ? m->lm_weight * out->lm_loss : 0);
        out->nll = out->cls_loss;
        out->tokens = 0; /* the tokens trained on: each row up to its [EXTRACT] */
        for (int i = 0; i < B; i++) out->tokens += b->cls_pos[i] + 1;
    }
    m->have_loss = m->cls_count > 0 || m->lm_count > 0;
    return NLP_OK;
}

static int gpt_decode(nlp_model *m, const nlp_batch *b, struct nlp_cache *c)
{
    return gpt_logits(m, b->ids, b->B, b->T, c->len, c);
}

static int gpt_backward(nlp_model *m)
{
    const int B = m->B, T = m->T, C = m->cfg.d_model, N = B * T;
    nlp_stack *st = &m->stack[0];
    if (m->lm_count) { /* the LM loss (λ-weighted beside a classifier) through the tied output layer */
        nlp_xent x = gpt_xent(m);
        const float scale = m->cfg.num_labels > 0 ? (float)m->lm_weight : 1.0f;
        nlp_net_output_backward(m, &x, m->lse, scale, out_table(m), st->lnf, m->dres);
    } else {
        memset(m->dres, 0, (size_t)N * C * sizeof(float));
    }
    if (m->cls_count) { /* the classifier, into the rows it read */
        const int L = m->cfg.num_labels, R = m->pair_sum ? B / 2 : B;
        nlp_xent x = cls_xent(m, B);
        nlp_xent_backward(&x, m->cls_lse, 1.0f, m->cls_logits, x.ld);
        float *dh = m->tmp[0];
        nlp_linear l = nlp_net_lin_bwd(m, &m->cls);
        nlp_linear_backward(&l, R, m->cls_h, C, m->cls_logits, L, dh, C, 0);
        for (int i = 0; i < B; i++) { /* a pair sum's gradient goes to both of its rows */
            float *d = m->dres + ((size_t)i * T + m->in_cls_pos[i]) * C;
            const float *s = dh + (size_t)(m->pair_sum ? i / 2 : i) * C;
            for (int c = 0; c < C; c++) d[c] += s[c];
        }
    }
    nlp_run r = {.m = m, .B = B, .T = T};
    int rc = nlp_net_stack_backward(&r, st, m->dres);
    if (rc) return rc;
    NLP_PROF("embedding bwd", 0, 12.0 * N * C, {
        nlp_dropout(m->dres, m->dres, (size_t)N * C, nlp_net_dropout(m), nlp_net_seed(m, 0), nlp_net_i0(m, T, C));
        nlp_embed_backward(nlp_net_g(m, m->tok_emb), m->dres, m->in_ids, N, C, 1.0f);
        if (m->pos_emb >= 0) nlp_pos_backward(nlp_net_g(m, m->pos_emb), m->dres, B, T, C, 0);
    });
    return NLP_OK;
}

/* As gpt_forward counts them: LM targets (the next token's label), classified rows. */
static void gpt_counts(const nlp_model *m, const nlp_batch *b, double n[2])
{
    const int B = b->B, T = b->T, classify = m->cfg.num_labels > 0;
    n[0] = n[1] = 0;
    if (b->labels && (!classify || m->lm_weight > 0))
        for (int i = 0; i < B; i++)
            for (int t = 0; t + 1 < T; t++) n[0] += b->labels[(size_t)i * T + t + 1] != IGNORE;
    if (classify && b->cls_labels)
        for (int i = 0; i < B / nlp_batch_group(b); i++) n[1] += b->cls_labels[i] != IGNORE;
}

const nlp_arch_ops nlp_gpt_ops = {gpt_build, gpt_init, gpt_layout, gpt_check, gpt_forward, gpt_backward, gpt_counts,
                                   gpt_decode, NULL};
