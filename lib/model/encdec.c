/*
 * encdec.c — the encoder-decoder Transformer: parameters, initialisation,
 * forward and backward. See encdec.h.
 */
#include "model/encdec.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/prof.h"
#include "nn/act.h"
#include "nn/embed.h"
#include "nn/gemm.h"
#include "nn/loss.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int attn_block(nlp_params *p, const char *prefix, nlp_sub *s, int C, int bias)
{
    char names[3][160], name[160];
    const char *nm[3] = {"q_proj", "k_proj", "v_proj"}, *np[3] = {names[0], names[1], names[2]};
    nlp_lref *dst[3] = {&s->q, &s->k, &s->v};
    for (int i = 0; i < 3; i++) snprintf(names[i], sizeof names[i], "%s.%s", prefix, nm[i]);
    int rc = nlp_net_linears(p, np, 3, C, C, bias, dst); /* q|k|v weights together: one product */
    if (rc) return rc;
    snprintf(name, sizeof name, "%s.o_proj", prefix);
    if ((s->o = nlp_net_linear(p, name, C, C, NLP_W_OUT_IN, bias)).w < 0) return nlp_errcode();
    return NLP_OK;
}

/* fc1, fc2; gated (T5 v1.1): gate (in fc1) and up together, then fc2. */
static int ffn_block(nlp_params *p, const char *prefix, nlp_sub *s, int C, int F, int bias, int gated)
{
    char name[160];
    if (gated) {
        char names[2][160];
        const char *np[2] = {names[0], names[1]};
        nlp_lref *dst[2] = {&s->fc1, &s->up};
        snprintf(names[0], sizeof names[0], "%s.gate", prefix);
        snprintf(names[1], sizeof names[1], "%s.up", prefix);
        int rc = nlp_net_linears(p, np, 2, C, F, bias, dst); /* gate|up: one product */
        if (rc) return rc;
        s->gated = 1;
    } else {
        snprintf(name, sizeof name, "%s.fc1", prefix);
        if ((s->fc1 = nlp_net_linear(p, name, C, F, NLP_W_OUT_IN, bias)).w < 0) return nlp_errcode();
    }
    snprintf(name, sizeof name, "%s.fc2", prefix);
    if ((s->fc2 = nlp_net_linear(p, name, F, C, NLP_W_OUT_IN, bias)).w < 0) return nlp_errcode();
    return NLP_OK;
}

/* The norm of a sublayer or a stack's end: LayerNorm, or RMSNorm (norm rms: no bias). */
static int norm_block(nlp_params *p, const nlp_model_config *c, const char *name, int *g, int *b, int *rms)
{
    if (c->pre_ln == 2) {
        *rms = 1, *b = -1;
        return nlp_net_rmsnorm(p, name, c->d_model, g);
    }
    return nlp_net_layernorm(p, name, c->d_model, g, b);
}

static int encdec_build(nlp_model *m)
{
    const nlp_model_config *c = &m->cfg;
    nlp_params *p = m->params;
    const int C = c->d_model, F = c->d_ff, bias = c->bias, gated = c->ffn == NLP_FFN_GATED_GELU;
    char name[160];
    int64_t s[2] = {c->vocab_size, C};
    if ((m->tok_emb = nlp_params_add(p, "tgt_emb.weight", 2, s, 0)) < 0) return m->tok_emb;
    if (!c->shared_vocab) {
        s[0] = c->src_vocab_size;
        if ((m->src_emb = nlp_params_add(p, "src_emb.weight", 2, s, 0)) < 0) return m->src_emb;
    }
    if (c->positions == NLP_POS_LEARNED) {
        s[0] = c->max_positions;
        if ((m->src_pos = nlp_params_add(p, "src_pos.weight", 2, s, 0)) < 0) return m->src_pos;
        if ((m->pos_emb = nlp_params_add(p, "tgt_pos.weight", 2, s, 0)) < 0) return m->pos_emb;
    }
    int rc, site = 10;
    nlp_stack *enc = &m->stack[0], *dec = &m->stack[1];
    if (c->positions == NLP_POS_RELATIVE) { /* T5's relative_attention_bias of each stack's first layer */
        int64_t r[2] = {c->rel_buckets, c->heads};
        if ((enc->rel = nlp_params_add(p, "encoder.rel_bias.weight", 2, r, 0)) < 0) return enc->rel;
        enc->rel_bidir = 1;
    }
    if (!(enc->sub = nlp_calloc((size_t)2 * c->encoder_layers, sizeof *enc->sub))) return NLP_ENOMEM;
    enc->n = 2 * c->encoder_layers;
    for (int l = 0; l < c->encoder_layers; l++) {
        nlp_sub *a = &enc->sub[2 * l], *f = &enc->sub[2 * l + 1];
        a->kind = NLP_SUB_SELF;
        a->rope = c->positions == NLP_POS_ROPE;
        f->kind = NLP_SUB_FFN;
        a->site = site, f->site = site + 2, site += 4;
        snprintf(name, sizeof name, "encoder.layers.%d.self_attn", l);
        if ((rc = attn_block(p, name, a, C, bias))) return rc;
        snprintf(name, sizeof name, "encoder.layers.%d.ln1", l);
        if ((rc = norm_block(p, c, name, &a->ln_g, &a->ln_b, &a->rms))) return rc;
        snprintf(name, sizeof name, "encoder.layers.%d.ffn", l);
        if ((rc = ffn_block(p, name, f, C, F, bias, gated))) return rc;
        snprintf(name, sizeof name, "encoder.layers.%d.ln2", l);
        if ((rc = norm_block(p, c, name, &f->ln_g, &f->ln_b, &f->rms))) return rc;
    }
    if (c->pre_ln && (rc = norm_block(p, c, "encoder.ln_f", &enc->lnf_g, &enc->lnf_b, &enc->lnf_rms))) return rc;
    if (c->positions == NLP_POS_RELATIVE) {
        int64_t r[2] = {c->rel_buckets, c->heads};
        if ((dec->rel = nlp_params_add(p, "decoder.rel_bias.weight", 2, r, 0)) < 0) return dec->rel;
        dec->rel_bidir = 0;
    }
    if (!(dec->sub = nlp_calloc((size_t)3 * c->decoder_layers, sizeof *dec->sub))) return NLP_ENOMEM;
    dec->n = 3 * c->decoder_layers;
    for (int l = 0; l < c->decoder_layers; l++) {
        nlp_sub *a = &dec->sub[3 * l], *x = &dec->sub[3 * l + 1], *f = &dec->sub[3 * l + 2];
        a->kind = NLP_SUB_SELF;
        a->causal = 1;
        a->rope = c->positions == NLP_POS_ROPE; /* self-attention only: a target and a source position are not comparable */
        x->kind = NLP_SUB_CROSS;
        f->kind = NLP_SUB_FFN;
        a->site = site, x->site = site + 2, f->site = site + 4, site += 6;
        a->slot = x->slot = l;
        snprintf(name, sizeof name, "decoder.layers.%d.self_attn", l);
        if ((rc = attn_block(p, name, a, C, bias))) return rc;
        snprintf(name, sizeof name, "decoder.layers.%d.ln1", l);
        if ((rc = norm_block(p, c, name, &a->ln_g, &a->ln_b, &a->rms))) return rc;
        snprintf(name, sizeof name, "decoder.layers.%d.cross_attn", l);
        if ((rc = attn_block(p, name, x, C, bias))) return rc;
        snprintf(name, sizeof name, "decoder.layers.%d.ln2", l);
        if ((rc = norm_block(p, c, name, &x->ln_g, &x->ln_b, &x->rms))) return rc;
        snprintf(name, sizeof name, "decoder.layers.%d.ffn", l);
        if ((rc = ffn_block(p, name, f, C, F, bias, gated))) return rc;
        snprintf(name, sizeof name, "decoder.layers.%d.ln3", l);
        if ((rc = norm_block(p, c, name, &f->ln_g, &f->ln_b, &f->rms))) return rc;
    }
    if (c->pre_ln && (rc = norm_block(p, c, "decoder.ln_f", &dec->lnf_g, &dec->lnf_b, &dec->lnf_rms))) return rc;
    if (!c->shared_vocab && !c->tie_output) {
        s[0] = c->vocab_size;
        if ((m->out_w = nlp_params_add(p, "out_proj.weight", 2, s, 0)) < 0) return m->out_w;
    }
    return NLP_OK;
}

/* Reference init: Xavier-uniform matrices, N(0, d^-1/2) embeddings, zero biases, LN (1, 0). */
static void encdec_init(nlp_model *m, nlp_rng *r)
{
    const double sd = 1.0 / sqrt((double)m->cfg.d_model);
    for (size_t i = 0; i < nlp_params_count(m->params); i++) {
        const nlp_param_info *t = nlp_params_info(m->params, i);
        float *w = nlp_params_at(m->params, i);
        size_t n = strlen(t->name);
        int is_bias = n > 5 && strcmp(t->name + n - 5, ".bias") == 0;
        if (strstr(t->name, "emb") || strstr(t->name, "_pos.weight") || strstr(t->name, "rel_bias"))
            nlp_net_normal(w, t->numel, sd, r); /* T5's relative bias too: N(0, d^-1/2) */
        else if (strstr(t->name, ".ln")) {
            for (size_t j = 0; j < t->numel; j++) w[j] = is_bias ? 0.0f : 1.0f;
        } else if (is_bias) memset(w, 0, t->numel * sizeof(float));
        else {
            double a = sqrt(6.0 / (double)(t->shape[0] + t->shape[1]));
            for (size_t j = 0; j < t->numel; j++) w[j] = (float)(a * (2 * nlp_rng_double(r) - 1));
        }
    }
}

static size_t encdec_layout(nlp_model *m, float *base, int B, int T, int S)
{
    nlp_bump b = {base, 0};
    const size_t N = (size_t)B * T, M = (size_t)B * S;
    nlp_net_layout_stack(m, &m->stack[0], &b, B, S, 0);
    nlp_net_layout_stack(m, &m->stack[1], &b, B, T, S);
    m->mask_a = (uint8_t *)nlp_bump_take(&b, (M + 3) / 4);
    m->mask_b = (uint8_t *)nlp_bump_take(&b, (N + 3) / 4);
    m->logits = nlp_bump_take(&b, N * (size_t)m->cfg.vocab_size);
    m->lse = nlp_bump_take(&b, 2 * N);
    m->target = (int32_t *)nlp_bump_take(&b, N);
    nlp_net_layout_scratch(m, &b, (int)(N > M ? N : M), (int)M, T, S);
    return b.used;
}

static int encdec_check(const nlp_model *m, const nlp_batch *b)
{
    const nlp_model_config *c = &m->cfg;
    if (!b->src || !b->tgt_in) return nlp_error(NLP_EINVAL, "transformer batch without src or tgt_in");
    if (b->T > nlp_model_config_max_len(c) || b->S > nlp_model_config_max_len(c))
        return nlp_error(NLP_EDATA, "sequence of %d positions is longer than max-positions %d",
                         b->T > b->S ? b->T : b->S, c->max_positions);
    int rc = nlp_net_check_ids(b->src, b->B, b->S, c->src_vocab_size, INT32_MIN, "source");
    if (!rc) rc = nlp_net_check_ids(b->tgt_in, b->B, b->T, c->vocab_size, INT32_MIN, "target input");
    if (!rc && b->tgt_out) rc = nlp_net_check_ids(b->tgt_out, b->B, b->T, c->vocab_size, INT32_MIN, "target");
    return rc;
}

static nlp_xent encdec_xent(const nlp_model *m)
{
    return (nlp_xent){.N = m->B * m->T, .V = m->cfg.vocab_size, .logits = m->logits, .ld = m->cfg.vocab_size,
                      .target = m->target, .ignore_index = m->cfg.pad_id,
                      .smoothing = (float)m->cfg.label_smoothing, .mode = m->cfg.smoothing_mode,
                      .norm = m->loss_norm[0]};
}

/* x = emb(ids)·√d + positions from `offset` (none with rotary positions),
 * then dropout at `site`. */
static void embed(nlp_model *m, float *x, const int32_t *ids, int B, int T, int table, int pos, int site, int offset)
{
    const int C = m->cfg.d_model;
    NLP_PROF("embedding fwd", 0, 12.0 * B * T * C, {
        nlp_embed_forward(x, nlp_net_w(m, table), ids, B * T, C, sqrtf((float)C), 0);
        if (pos >= 0 || m->pe) nlp_pos_forward(x, pos >= 0 ? nlp_net_w(m, pos) : m->pe, B, T, C, offset);
        nlp_dropout(x, x, (size_t)B * T * C, nlp_net_dropout(m), nlp_net_seed(m, site), nlp_net_i0(m, T, C));
    });
}

static void embed_backward(nlp_model *m, float *d, const int32_t *ids, int B, int T, int table, int pos, int site)
{
    const int C = m->cfg.d_model;
    NLP_PROF("embedding bwd", 0, 12.0 * B * T * C, {
        nlp_dropout(d, d, (size_t)B * T * C, nlp_net_dropout(m), nlp_net_seed(m, site), nlp_net_i0(m, T, C));
        nlp_embed_backward(nlp_net_g(m, table), d, ids, B * T, C, sqrtf((float)C));
        if (pos >= 0) nlp_pos_backward(nlp_net_g(m, pos), d, B, T, C, 0);
    });
}

static int src_table(const nlp_model *m) { return m->src_emb >= 0 ? m->src_emb : m->tok_emb; }
static int out_table(const nlp_model *m) { return m->out_w >= 0 ? m->out_w : m->tok_emb; }

/* The relative position bias of a stack and its gradient, for a run (NULL without one). */
static const float *pbias(const nlp_stack *st) { return st->rel >= 0 ? st->pb : NULL; }
static float *dpbias(const nlp_stack *st) { return st->rel >= 0 ? st->dpb : NULL; }

static void runs(nlp_model *m, nlp_run *enc, nlp_run *dec, const float *mem)
{
    *enc = (nlp_run){.m = m, .B = m->B, .T = m->S, .self_mask = m->mask_a, .pbias = pbias(&m->stack[0]),
                     .dpbias = dpbias(&m->stack[0])};
    *dec = (nlp_run){.m = m, .B = m->B, .T = m->T, .S = m->S, .self_mask = m->mask_b, .cross_mask = m->mask_a,
                     .mem = mem, .dmem = m->dmem, .pbias = pbias(&m->stack[1]), .dpbias = dpbias(&m->stack[1])};
}

/* Relative positions: each stack's bias for the pass, once (both from position 0). */
static int relbias(nlp_model *m, int B, int T, int S, int grad)
{
    (void)B;
    int rc = NLP_OK;
    if (m->stack[0].rel >= 0) rc = nlp_net_relbias(m, &m->stack[0], 0, S, S, grad);
    if (!rc && m->stack[1].rel >= 0) rc = nlp_net_relbias(m, &m->stack[1], 0, T, T, grad);
    return rc;
}

static const float *memory_of(const nlp_model *m)
{
    const nlp_stack *e = &m->stack[0];
    return e->lnf_g >= 0 ? e->lnf : e->n ? e->sub[e->n - 1].out : e->x0;
}

static int encdec_forward(nlp_model *m, const nlp_batch *b, nlp_losses *out)
{
    const int B = b->B, T = b->T, S = b->S, N = B * T;
    const int pad = m->cfg.pad_id;
    for (int i = 0; i < B * S; i++) m->mask_a[i] = b->src[i] != pad;
    for (int i = 0; i < N; i++) m->mask_b[i] = b->tgt_in[i] != pad;
    m->in_src = b->src;
    m->in_tgt = b->tgt_in;
    nlp_net_rope_table(m, 0, T > S ? T : S); /* both sides from position 0 */
    int rc = relbias(m, B, T, S, b->tgt_out != NULL);
    if (rc) return rc;
    embed(m, m->stack[0].x0, b->src, B, S, src_table(m), m->src_pos, 0, 0);
    nlp_run enc, dec;
    runs(m, &enc, &dec, NULL);
    const float *mem, *y;
    rc = nlp_net_stack_forward(&enc, &m->stack[0], &mem);
    if (rc) return rc;
    embed(m, m->stack[1].x0, b->tgt_in, B, T, m->tok_emb, m->pos_emb, 1, 0);
    runs(m, &enc, &dec, mem);
    if ((rc = nlp_net_stack_forward(&dec, &m->stack[1], &y))) return rc;
    nlp_net_logits(m, N, y, out_table(m));
    if (!b->tgt_out) return NLP_OK;
    memcpy(m->target, b->tgt_out, (size_t)N * sizeof(int32_t));
    nlp_xent x = encdec_xent(m);
    nlp_xent_result res;
    if (m->training) { /* backward follows: the gradient now, while each row is in cache */
        NLP_PROF("loss fwd+bwd", 0, 8.0 * N * x.V, nlp_xent_fused(&x, m->lse, &res));
        m->logits_grad = 1;
    } else {
        NLP_PROF("loss fwd", 0, 4.0 * N * x.V, nlp_xent_forward(&x, m->lse, &res));
    }
    out->loss = res.loss;
    out->nll = res.nll;
    out->tokens = res.count;
    m->have_loss = 1;
    return NLP_OK;
}

static int encdec_backward(nlp_model *m)
{
    const int B = m->B, T = m->T, S = m->S, C = m->cfg.d_model;
    nlp_stack *dst = &m->stack[1];
    const float *y = dst->lnf_g >= 0 ? dst->lnf : dst->sub[dst->n - 1].out;
    nlp_xent x = encdec_xent(m);
    nlp_net_output_backward(m, &x, m->lse, 1.0f, out_table(m), y, m->dres);
    NLP_PROF("gradient zeroing", 0, 4.0 * B * S * C, memset(m->dmem, 0, (size_t)B * S * C * sizeof(float)));
    nlp_run enc, dec;
    runs(m, &enc, &dec, memory_of(m));
    int rc = nlp_net_stack_backward(&dec, dst, m->dres);
    if (rc) return rc;
    /* the tables' gradients before the lower parameters are reported final (grad_hook) */
    if (dst->rel >= 0) nlp_net_relbias_backward(m, dst, T, T);
    embed_backward(m, m->dres, m->in_tgt, B, T, m->tok_emb, m->pos_emb, 1);
    if ((rc = nlp_net_stack_backward(&enc, &m->stack[0], m->dmem))) return rc;
    if (m->stack[0].rel >= 0) nlp_net_relbias_backward(m, &m->stack[0], S, S);
    embed_backward(m, m->dmem, m->in_src, B, S, src_table(m), m->src_pos, 0);
    return NLP_OK;
}

/* Decoding, first pass: the encoder over the source, then every decoder
 * layer's cross-attention k|v of it into the cache. */
static int encdec_encode(nlp_model *m, const nlp_batch *b, struct nlp_cache *c)
{
    const int B = b->B, S = b->S;
    const int pad = m->cfg.pad_id;
    for (int i = 0; i < B * S; i++) c->src_mask[i] = b->src[i] != pad;
    nlp_net_rope_table(m, 0, S);
    nlp_stack *est = &m->stack[0];
    int rc = est->rel >= 0 ? nlp_net_relbias(m, est, 0, S, S, 0) : NLP_OK;
    if (rc) return rc;
    embed(m, est->x0, b->src, B, S, src_table(m), m->src_pos, 0, 0);
    nlp_run enc = {.m = m, .B = B, .T = S, .self_mask = c->src_mask, .pbias = pbias(est)};
    const float *mem;
    rc = nlp_net_stack_forward(&enc, est, &mem);
    if (rc) return rc;
    const nlp_stack *dec = &m->stack[1];
    for (int i = 0; i < dec->n; i++) {
        const nlp_sub *s = &dec->sub[i];
        if (s->kind != NLP_SUB_CROSS) continue;
        nlp_net_kv_forward(m, s, B * S, mem, nlp_cache_cross(c, s->slot));
    }
    return NLP_OK;
}

/* Decoding, each step: T new target positions of every row after c->len. */
static int encdec_decode(nlp_model *m, const nlp_batch *b, struct nlp_cache *c)
{
    const int B = b->B, T = b->T;
    embed(m, m->stack[1].x0, b->tgt_in, B, T, m->tok_emb, m->pos_emb, 1, c->len);
    nlp_net_rope_table(m, c->len, T);
    nlp_stack *dst = &m->stack[1];
    /* the new queries at c->len .. c->len+T−1 over every key so far */
    int rc = dst->rel >= 0 ? nlp_net_relbias(m, dst, c->len, T, c->len + T, 0) : NLP_OK;
    if (rc) return rc;
    nlp_run dec = {.m = m, .B = B, .T = T, .S = c->S, .cache = c, .pbias = pbias(dst)};
    const float *y;
    rc = nlp_net_stack_forward(&dec, dst, &y);
    if (rc) return rc;
    nlp_net_logits(m, B * T, y, out_table(m));
    return NLP_OK;
}

/* As encdec_forward counts them: target positions that are not padding. */
static void encdec_counts(const nlp_model *m, const nlp_batch *b, double n[2])
{
    const size_t N = (size_t)b->B * b->T;
    n[0] = n[1] = 0;
    if (b->tgt_out)
        for (size_t i = 0; i < N; i++) n[0] += b->tgt_out[i] != m->cfg.pad_id;
}

const nlp_arch_ops nlp_encdec_ops = {encdec_build,    encdec_init,   encdec_layout, encdec_check, encdec_forward,
                                     encdec_backward, encdec_counts, encdec_decode, encdec_encode};
