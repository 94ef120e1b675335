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

static int gpt_build(nlp_model *m)
{
    const nlp_model_config *c = &m->cfg;
    nlp_params *p = m->params;
    const int C = c->d_model, F = c->d_ff, L = c->layers;
    char name[128];
    int64_t s[2] = {c->vocab_size, C};
    if ((m->tok_emb = nlp_params_add(p, "wte.weight", 2, s, 0)) < 0) return m->tok_emb;
    s[0] = c->max_positions;
    if ((m->pos_emb = nlp_params_add(p, "wpe.weight", 2, s, 0)) < 0) return m->pos_emb;
    nlp_stack *st = &m->stack[0];
    st->sub = nlp_calloc((size_t)2 * L, sizeof *st->sub);
    if (!st->sub) return NLP_ENOMEM;
    st->n = 2 * L;
    int rc;
    for (int l = 0; l < L; l++) {
        nlp_sub *a = &st->sub[2 * l], *f = &st->sub[2 * l + 1];
        a->kind = NLP_SUB_SELF;
        a->causal = a->fused = 1;
        a->site = 10 + 4 * l;
        a->slot = l;
        f->kind = NLP_SUB_FFN;
        f->site = 12 + 4 * l;
        snprintf(name, sizeof name, "h.%d.ln_1", l);
        if ((rc = nlp_net_layernorm(p, name, C, &a->ln_g, &a->ln_b))) return rc;
        snprintf(name, sizeof name, "h.%d.attn.c_attn", l);
        if ((a->qkv = nlp_net_linear(p, name, C, 3 * C, NLP_W_IN_OUT, 1)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "h.%d.attn.c_proj", l);
        if ((a->o = nlp_net_linear(p, name, C, C, NLP_W_IN_OUT, 1)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "h.%d.ln_2", l);
        if ((rc = nlp_net_layernorm(p, name, C, &f->ln_g, &f->ln_b))) return rc;
        snprintf(name, sizeof name, "h.%d.mlp.c_fc", l);
        if ((f->fc1 = nlp_net_linear(p, name, C, F, NLP_W_IN_OUT, 1)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "h.%d.mlp.c_proj", l);
        if ((f->fc2 = nlp_net_linear(p, name, F, C, NLP_W_IN_OUT, 1)).w < 0) return nlp_errcode();
    }
    return nlp_net_layernorm(p, "ln_f", C, &st->lnf_g, &st->lnf_b);
}

/* HF GPT-2 init: N(0, σ) weights and embeddings, c_proj weights N(0, σ/√(2L)),
 * zero biases, LayerNorm weights 1. */
static void gpt_init(nlp_model *m, nlp_rng *r)
{
    const double sd = m->cfg.init_std;
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
    nlp_net_layout_scratch(m, &b, (int)N, 0, T, 0);
    return b.used;
}

static int gpt_check(const nlp_model *m, const nlp_batch *b)
{
    if (!b->ids) return nlp_error(NLP_EINVAL, "gpt batch without ids");
    if (b->T > m->cfg.max_positions)
        return nlp_error(NLP_EDATA, "sequence of %d positions is longer than max-positions %d", b->T, m->cfg.max_positions);
    int rc = nlp_net_check_ids(b->ids, b->B, b->T, m->cfg.vocab_size, INT32_MIN, "input");
    if (!rc && b->labels) rc = nlp_net_check_ids(b->labels, b->B, b->T, m->cfg.vocab_size, IGNORE, "label");
    return rc;
}

static nlp_xent gpt_xent(const nlp_model *m)
{
    return (nlp_xent){.N = m->B * m->T, .V = m->cfg.vocab_size, .logits = m->logits, .ld = m->cfg.vocab_size,
                      .target = m->target, .ignore_index = IGNORE};
}

/* Embeddings at positions offset.., the stack, ln_f and the tied logits. */
static int gpt_logits(nlp_model *m, const int32_t *ids, int B, int T, int offset, struct nlp_cache *c)
{
    const int C = m->cfg.d_model, V = m->cfg.vocab_size, N = B * T;
    nlp_stack *st = &m->stack[0];
    NLP_PROF("embedding fwd", 0, 12.0 * N * C, {
        nlp_embed_forward(st->x0, nlp_net_w(m, m->tok_emb), ids, N, C, 1.0f, 0);
        nlp_pos_forward(st->x0, nlp_net_w(m, m->pos_emb), B, T, C, offset);
        nlp_dropout(st->x0, st->x0, (size_t)N * C, nlp_net_dropout(m), nlp_net_seed(m, 0));
    });
    nlp_run r = {.m = m, .B = B, .T = T, .cache = c};
    const float *h;
    int rc = nlp_net_stack_forward(&r, st, &h);
    if (rc) return rc;
    (void)V;
    nlp_net_logits(m, N, h, m->tok_emb);
    return NLP_OK;
}

static int gpt_forward(nlp_model *m, const nlp_batch *b, nlp_losses *out)
{
    const int B = b->B, T = b->T;
    m->in_ids = b->ids;
    int rc = gpt_logits(m, b->ids, B, T, 0, NULL);
    if (rc || !b->labels) return rc;
    for (int i = 0; i < B; i++)
        for (int t = 0; t < T; t++)
            m->target[(size_t)i * T + t] = t + 1 < T ? b->labels[(size_t)i * T + t + 1] : IGNORE;
    nlp_xent x = gpt_xent(m);
    nlp_xent_result res;
    if (m->training) { /* backward follows: the gradient now, while each row is in cache */
        NLP_PROF("loss fwd+bwd", 0, 8.0 * x.N * x.V, nlp_xent_fused(&x, m->lse, &res));
        m->logits_grad = 1;
    } else {
        NLP_PROF("loss fwd", 0, 4.0 * x.N * x.V, nlp_xent_forward(&x, m->lse, &res));
    }
    out->loss = out->nll = res.loss;
    out->tokens = res.count;
    m->have_loss = 1;
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
    nlp_xent x = gpt_xent(m);
    nlp_net_output_backward(m, &x, m->lse, m->tok_emb, st->lnf, m->dres);
    nlp_run r = {.m = m, .B = B, .T = T};
    int rc = nlp_net_stack_backward(&r, st, m->dres);
    if (rc) return rc;
    NLP_PROF("embedding bwd", 0, 12.0 * N * C, {
        nlp_dropout(m->dres, m->dres, (size_t)N * C, nlp_net_dropout(m), nlp_net_seed(m, 0));
        nlp_embed_backward(nlp_net_g(m, m->tok_emb), m->dres, m->in_ids, N, C, 1.0f);
        nlp_pos_backward(nlp_net_g(m, m->pos_emb), m->dres, B, T, C, 0);
    });
    return NLP_OK;
}

const nlp_arch_ops nlp_gpt_ops = {gpt_build, gpt_init, gpt_layout, gpt_check, gpt_forward, gpt_backward,
                                   gpt_decode, NULL};
