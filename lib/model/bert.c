/*
 * bert.c — BERT: parameters, initialisation, forward and backward. See bert.h.
 */
#include "model/bert.h"
#include "base/prof.h"
#include "base/err.h"
#include "base/mem.h"
#include "nn/act.h"
#include "nn/embed.h"
#include "nn/gemm.h"
#include "nn/loss.h"
#include "nn/norm.h"

#include <stdio.h>
#include <string.h>

#define IGNORE (-100)

static int bert_build(nlp_model *m)
{
    const nlp_model_config *c = &m->cfg;
    nlp_params *p = m->params;
    const int C = c->d_model, F = c->d_ff, L = c->layers;
    char name[160];
    int64_t s[2] = {c->vocab_size, C};
    if ((m->tok_emb = nlp_params_add(p, "bert.embeddings.word_embeddings.weight", 2, s, 0)) < 0) return m->tok_emb;
    s[0] = c->max_positions;
    if ((m->pos_emb = nlp_params_add(p, "bert.embeddings.position_embeddings.weight", 2, s, 0)) < 0) return m->pos_emb;
    s[0] = c->type_vocab_size;
    if ((m->type_emb = nlp_params_add(p, "bert.embeddings.token_type_embeddings.weight", 2, s, 0)) < 0)
        return m->type_emb;
    int rc = nlp_net_layernorm(p, "bert.embeddings.LayerNorm", C, &m->emb_ln_g, &m->emb_ln_b);
    if (rc) return rc;
    nlp_stack *st = &m->stack[0];
    if (!(st->sub = nlp_calloc((size_t)2 * L, sizeof *st->sub))) return NLP_ENOMEM;
    st->n = 2 * L;
    for (int l = 0; l < L; l++) {
        nlp_sub *a = &st->sub[2 * l], *f = &st->sub[2 * l + 1];
        a->kind = NLP_SUB_SELF;
        a->site = 10 + 4 * l;
        f->kind = NLP_SUB_FFN;
        f->site = 12 + 4 * l;
        const char *qkv[3] = {"query", "key", "value"};
        char names[3][160];
        const char *np[3] = {names[0], names[1], names[2]};
        nlp_lref *dst[3] = {&a->q, &a->k, &a->v};
        for (int i = 0; i < 3; i++)
            snprintf(names[i], sizeof names[i], "bert.encoder.layer.%d.attention.self.%s", l, qkv[i]);
        rc = nlp_net_linears(p, np, 3, C, C, 1, dst);
        if (rc) return rc;
        snprintf(name, sizeof name, "bert.encoder.layer.%d.attention.output.dense", l);
        if ((a->o = nlp_net_linear(p, name, C, C, NLP_W_OUT_IN, 1)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "bert.encoder.layer.%d.attention.output.LayerNorm", l);
        if ((rc = nlp_net_layernorm(p, name, C, &a->ln_g, &a->ln_b))) return rc;
        snprintf(name, sizeof name, "bert.encoder.layer.%d.intermediate.dense", l);
        if ((f->fc1 = nlp_net_linear(p, name, C, F, NLP_W_OUT_IN, 1)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "bert.encoder.layer.%d.output.dense", l);
        if ((f->fc2 = nlp_net_linear(p, name, F, C, NLP_W_OUT_IN, 1)).w < 0) return nlp_errcode();
        snprintf(name, sizeof name, "bert.encoder.layer.%d.output.LayerNorm", l);
        if ((rc = nlp_net_layernorm(p, name, C, &f->ln_g, &f->ln_b))) return rc;
    }
    if ((m->pool = nlp_net_linear(p, "bert.pooler.dense", C, C, NLP_W_OUT_IN, 1)).w < 0) return nlp_errcode();
    int64_t vb[1] = {c->vocab_size};
    if ((m->mlm_bias = nlp_params_add(p, "cls.predictions.bias", 1, vb, 1)) < 0) return m->mlm_bias;
    if ((m->mlm_dense = nlp_net_linear(p, "cls.predictions.transform.dense", C, C, NLP_W_OUT_IN, 1)).w < 0)
        return nlp_errcode();
    if ((rc = nlp_net_layernorm(p, "cls.predictions.transform.LayerNorm", C, &m->mlm_ln_g, &m->mlm_ln_b))) return rc;
    if ((m->nsp = nlp_net_linear(p, "cls.seq_relationship", C, 2, NLP_W_OUT_IN, 1)).w < 0) return nlp_errcode();
    /* finetune: BertForSequenceClassification's (and BertForMultipleChoice's)
     * head on the pooled [CLS], or BertForQuestionAnswering's at every position */
    const char *head = c->head == NLP_HEAD_SPAN ? "qa_outputs" : "classifier";
    if (c->num_labels > 0 && (m->cls = nlp_net_linear(p, head, C, c->num_labels, NLP_W_OUT_IN, 1)).w < 0)
        return nlp_errcode();
    return NLP_OK;
}

/* HF BERT init: N(0, σ) weights and embeddings, zero biases, LayerNorm (1, 0). */
static void bert_init(nlp_model *m, nlp_rng *r)
{
    for (size_t i = 0; i < nlp_params_count(m->params); i++) {
        const nlp_param_info *t = nlp_params_info(m->params, i);
        float *w = nlp_params_at(m->params, i);
        size_t n = strlen(t->name);
        int is_bias = n > 5 && strcmp(t->name + n - 5, ".bias") == 0;
        if (strstr(t->name, "LayerNorm") && !is_bias)
            for (size_t j = 0; j < t->numel; j++) w[j] = 1;
        else if (is_bias) memset(w, 0, t->numel * sizeof(float));
        else nlp_net_normal(w, t->numel, m->cfg.init_std, r);
    }
}

static size_t bert_layout(nlp_model *m, float *base, int B, int T, int S)
{
    (void)S;
    nlp_bump b = {base, 0};
    const size_t N = (size_t)B * T, C = (size_t)m->cfg.d_model;
    nlp_net_layout_stack(m, &m->stack[0], &b, B, T, 0);
    m->emb_sum = nlp_bump_take(&b, N * C);
    m->emb_mean = nlp_bump_take(&b, N);
    m->emb_rstd = nlp_bump_take(&b, N);
    m->mask_a = (uint8_t *)nlp_bump_take(&b, (N + 3) / 4);
    m->pool_pre = nlp_bump_take(&b, (size_t)B * C);
    m->pooled = nlp_bump_take(&b, (size_t)B * C);
    m->nsp_logits = nlp_bump_take(&b, (size_t)B * 2);
    m->nsp_lse = nlp_bump_take(&b, 2 * (size_t)B);
    m->nsp_target = (int32_t *)nlp_bump_take(&b, (size_t)B);
    m->mlm_x = nlp_bump_take(&b, N * C);
    m->mlm_rows = (int32_t *)nlp_bump_take(&b, N);
    m->mlm_h1 = nlp_bump_take(&b, N * C);
    m->mlm_h2 = nlp_bump_take(&b, N * C);
    m->mlm_ln = nlp_bump_take(&b, N * C);
    m->mlm_mean = nlp_bump_take(&b, N);
    m->mlm_rstd = nlp_bump_take(&b, N);
    m->logits = nlp_bump_take(&b, N * (size_t)m->cfg.vocab_size);
    m->lse = nlp_bump_take(&b, 2 * N);
    m->target = (int32_t *)nlp_bump_take(&b, N);
    m->cls_logits = m->cls_lse = NULL;
    m->cls_target = NULL;
    m->span_out = m->span_logits = m->span_lse = NULL;
    m->span_target = NULL;
    if (m->cfg.head == NLP_HEAD_SPAN) {
        m->span_out = nlp_bump_take(&b, 2 * N);
        m->span_logits = nlp_bump_take(&b, 2 * N);
        m->span_lse = nlp_bump_take(&b, 4 * (size_t)B);
        m->span_target = (int32_t *)nlp_bump_take(&b, 2 * (size_t)B);
    } else if (m->cfg.num_labels > 0) {
        m->cls_logits = nlp_bump_take(&b, (size_t)B * m->cfg.num_labels);
        m->cls_lse = nlp_bump_take(&b, 2 * (size_t)B);
        m->cls_target = (int32_t *)nlp_bump_take(&b, (size_t)B);
    }
    nlp_net_layout_scratch(m, &b, (int)N, 0, T, 0);
    return b.used;
}

static int bert_check(const nlp_model *m, const nlp_batch *b)
{
    if (!b->ids) return nlp_error(NLP_EINVAL, "bert batch without ids");
    if (b->T > m->cfg.max_positions)
        return nlp_error(NLP_EDATA, "sequence of %d positions is longer than max-positions %d", b->T, m->cfg.max_positions);
    int rc = nlp_net_check_ids(b->ids, b->B, b->T, m->cfg.vocab_size, INT32_MIN, "input");
    if (!rc && b->type_ids) rc = nlp_net_check_ids(b->type_ids, b->B, b->T, m->cfg.type_vocab_size, INT32_MIN, "segment");
    if (!rc && b->labels) rc = nlp_net_check_ids(b->labels, b->B, b->T, m->cfg.vocab_size, IGNORE, "MLM label");
    if (!rc && b->nsp_labels) rc = nlp_net_check_ids(b->nsp_labels, b->B, 1, 2, IGNORE, "NSP label");
    if (!rc && b->cls_labels && m->cfg.num_labels <= 0) rc = nlp_error(NLP_EINVAL, "class labels for a model without a classification head");
    const int g = nlp_batch_group(b), K = b->choices > 1 ? b->choices : m->cfg.num_labels;
    if (!rc && b->cls_labels) rc = nlp_net_check_ids(b->cls_labels, b->B / g, 1, K, INT32_MIN, b->choices > 1 ? "choice" : "class label");
    if (!rc && b->pair_sum) rc = nlp_error(NLP_EINVAL, "pair sums are gpt's similarity head, not bert's");
    if (!rc && b->span_start) rc = nlp_net_check_ids(b->span_start, b->B, 1, b->T, IGNORE, "span start");
    if (!rc && b->span_end) rc = nlp_net_check_ids(b->span_end, b->B, 1, b->T, IGNORE, "span end");
    for (int i = 0; !rc && b->span_start && b->span_mask && i < b->B; i++) /* a gold position the mask allows */
        for (int k = 0; k < 2 && !rc; k++) {
            const int32_t p = (k ? b->span_end : b->span_start)[i];
            if (p != IGNORE && !b->span_mask[(size_t)i * b->T + p])
                rc = nlp_error(NLP_EDATA, "row %d: the span %s %d is at a position the mask excludes", i,
                               k ? "end" : "start", (int)p);
        }
    return rc;
}

static nlp_xent mlm_xent(const nlp_model *m)
{
    return (nlp_xent){.N = m->mlm_R, .V = m->cfg.vocab_size, .logits = m->logits, .ld = m->cfg.vocab_size,
                      .target = m->target, .ignore_index = IGNORE, .norm = m->loss_norm[0]};
}

static nlp_xent nsp_xent(const nlp_model *m)
{
    return (nlp_xent){.N = m->B, .V = 2, .logits = m->nsp_logits, .ld = 2, .target = m->nsp_target,
                      .ignore_index = IGNORE, .norm = m->loss_norm[1]};
}

/* The classification loss over B rows: one row of logits each, or with
 * choices the examples' groups of one-unit scores (model.h). */
static nlp_xent cls_xent(const nlp_model *m, int B)
{
    const int g = m->choices > 1 ? m->choices : 1, L = g > 1 ? g : m->cfg.num_labels;
    return (nlp_xent){.N = B / g, .V = L, .logits = m->cls_logits, .ld = L, .target = m->cls_target,
                      .ignore_index = IGNORE, .norm = m->loss_norm[1]};
}

/* The span head's loss k (0 start, 1 end): a softmax over each row's T positions. */
static nlp_xent span_xent(const nlp_model *m, int k)
{
    const size_t BT = (size_t)m->B * m->T;
    return (nlp_xent){.N = m->B, .V = m->T, .logits = m->span_logits + k * BT, .ld = m->T,
                      .target = m->span_target + k * m->B, .ignore_index = IGNORE, .norm = m->loss_norm[1]};
}

#define SPAN_MASKED (-10000.0f)

/* Extractive QA (HF BertForQuestionAnswering): qa_outputs at every position,
 * its two columns laid out as start and end logits, masked; with gold
 * positions, the mean of the two cross-entropies. */
static void bert_span(nlp_model *m, const nlp_batch *b, const float *seq, nlp_losses *out)
{
    const int B = b->B, T = b->T, C = m->cfg.d_model, N = B * T;
    nlp_linear qa = nlp_net_lin(m, &m->cls);
    nlp_linear_forward(&qa, N, seq, C, m->span_out, 2);
    for (int i = 0; i < N; i++) {
        const int ok = !b->span_mask || b->span_mask[i];
        m->span_logits[i] = ok ? m->span_out[2 * i] : SPAN_MASKED;
        m->span_logits[(size_t)N + i] = ok ? m->span_out[2 * i + 1] : SPAN_MASKED;
    }
    m->in_span_mask = b->span_mask;
    m->span_count = 0;
    if (!b->span_start) return;
    memcpy(m->span_target, b->span_start, (size_t)B * sizeof(int32_t));
    memcpy(m->span_target + B, b->span_end, (size_t)B * sizeof(int32_t));
    double loss = 0;
    for (int k = 0; k < 2; k++) {
        nlp_xent x = span_xent(m, k);
        nlp_xent_result res;
        nlp_xent_forward(&x, m->span_lse + 2 * (size_t)k * B, &res);
        loss += 0.5 * res.loss;
        m->span_count = res.count;
    }
    out->loss = out->nll = out->cls_loss = loss;
    out->tokens = 0;
    for (int i = 0; i < N; i++) out->tokens += m->mask_a[i];
    m->have_loss = m->span_count > 0;
}

static int bert_forward(nlp_model *m, const nlp_batch *b, nlp_losses *out)
{
    const int B = b->B, T = b->T, C = m->cfg.d_model, V = m->cfg.vocab_size, N = B * T;
    const float eps = (float)m->cfg.ln_eps;
    nlp_stack *st = &m->stack[0];
    nlp_embed_forward(m->emb_sum, nlp_net_w(m, m->tok_emb), b->ids, N, C, 1.0f, 0);
    nlp_pos_forward(m->emb_sum, nlp_net_w(m, m->pos_emb), B, T, C, 0);
    if (b->type_ids) nlp_embed_forward(m->emb_sum, nlp_net_w(m, m->type_emb), b->type_ids, N, C, 1.0f, 1);
    else {
        const float *t0 = nlp_net_w(m, m->type_emb);
        for (int i = 0; i < N; i++)
            for (int c = 0; c < C; c++) m->emb_sum[(size_t)i * C + c] += t0[c];
    }
    nlp_layernorm_forward(st->x0, m->emb_mean, m->emb_rstd, m->emb_sum, nlp_net_w(m, m->emb_ln_g),
                          nlp_net_w(m, m->emb_ln_b), N, C, eps);
    nlp_dropout(st->x0, st->x0, (size_t)N * C, nlp_net_dropout(m), nlp_net_seed(m, 0), nlp_net_i0(m, T, C));
    for (int i = 0; i < N; i++) m->mask_a[i] = b->mask ? b->mask[i] != 0 : 1;
    m->in_ids = b->ids;
    m->in_types = b->type_ids;
    nlp_run r = {.m = m, .B = B, .T = T, .self_mask = m->mask_a};
    const float *seq;
    int rc = nlp_net_stack_forward(&r, st, &seq);
    if (rc) return rc;
    /* pooler and NSP head on the first position of each row */
    nlp_linear pool = nlp_net_lin(m, &m->pool), nsp = nlp_net_lin(m, &m->nsp);
    nlp_linear_forward(&pool, B, seq, T * C, m->pool_pre, C);
    nlp_act_forward(NLP_ACT_TANH, m->pooled, m->pool_pre, (size_t)B * C);
    nlp_linear_forward(&nsp, B, m->pooled, C, m->nsp_logits, 2);
    m->mlm_count = m->nsp_count = m->cls_count = m->span_count = 0;
    m->choices = b->choices > 1 ? b->choices : 0, m->pair_sum = 0;
    if (m->cfg.head == NLP_HEAD_SPAN) {
        bert_span(m, b, seq, out); /* no MLM or NSP beside it */
        return NLP_OK;
    } else if (m->cfg.num_labels > 0) { /* the classifier on the pooled [CLS] */
        nlp_linear cls = nlp_net_lin(m, &m->cls);
        nlp_linear_forward(&cls, B, m->pooled, C, m->cls_logits, m->cfg.num_labels);
        if (!b->labels) { /* a classifier needs the MLM head only for an MLM loss */
            if (b->cls_labels) {
                memcpy(m->cls_target, b->cls_labels, (size_t)(B / nlp_batch_group(b)) * sizeof(int32_t));
                nlp_xent x = cls_xent(m, B);
                nlp_xent_result res;
                nlp_xent_forward(&x, m->cls_lse, &res);
                out->loss = out->nll = out->cls_loss = res.loss;
                m->cls_count = res.count;
                out->tokens = 0; /* the tokens trained on: unpadded positions */
                for (int i = 0; i < N; i++) out->tokens += m->mask_a[i];
                m->have_loss = m->cls_count > 0;
            }
            return NLP_OK;
        }
    }
    /* MLM head: in training only on the rows that have a label (15%: the
     * others' logits would be computed to be ignored); the same loss */
    const float *hin = seq;
    int R = N;
    m->mlm_gathered = 0;
    if (m->training && b->labels) {
        R = 0;
        for (int i = 0; i < N; i++)
            if (b->labels[i] != IGNORE) {
                memcpy(m->mlm_x + (size_t)R * C, seq + (size_t)i * C, (size_t)C * sizeof(float));
                m->mlm_rows[R] = i;
                m->target[R++] = b->labels[i];
            }
        hin = m->mlm_x;
        m->mlm_gathered = 1;
    } else if (b->labels) {
        memcpy(m->target, b->labels, (size_t)N * sizeof(int32_t));
    }
    m->mlm_R = R;
    nlp_linear dense = nlp_net_lin(m, &m->mlm_dense);
    nlp_linear_forward(&dense, R, hin, C, m->mlm_h1, C);
    nlp_act_forward(m->cfg.activation, m->mlm_h2, m->mlm_h1, (size_t)R * C);
    nlp_layernorm_forward(m->mlm_ln, m->mlm_mean, m->mlm_rstd, m->mlm_h2, nlp_net_w(m, m->mlm_ln_g),
                          nlp_net_w(m, m->mlm_ln_b), R, C, eps);
    NLP_PROF("logits fwd", 2.0 * R * V * C, 0,
             nlp_gemm_bias(0, 1, R, V, C, 1.0f, m->mlm_ln, C, nlp_net_w(m, m->tok_emb), C, nlp_net_w(m, m->mlm_bias), 0.0f,
                           m->logits, V));
    if (!b->labels && !b->nsp_labels) return NLP_OK;
    nlp_xent_result res = {0};
    if (b->labels) {
        nlp_xent x = mlm_xent(m);
        if (m->training) { /* backward follows: the gradient now, while each row is in cache */
            NLP_PROF("loss fwd+bwd", 0, 8.0 * R * V, nlp_xent_fused(&x, m->lse, &res));
            m->logits_grad = 1;
        } else {
            NLP_PROF("loss fwd", 0, 4.0 * R * V, nlp_xent_forward(&x, m->lse, &res));
        }
        out->mlm_loss = res.loss;
        m->mlm_count = res.count;
    }
    if (b->nsp_labels) {
        memcpy(m->nsp_target, b->nsp_labels, (size_t)B * sizeof(int32_t));
        nlp_xent x = nsp_xent(m);
        nlp_xent_result nr;
        nlp_xent_forward(&x, m->nsp_lse, &nr);
        out->nsp_loss = nr.loss;
        m->nsp_count = nr.count;
    }
    out->loss = out->mlm_loss + out->nsp_loss;
    out->nll = out->mlm_loss;
    /* the tokens trained on: the batch's real (unpadded) positions */
    out->tokens = 0;
    for (int i = 0; i < N; i++) out->tokens += m->mask_a[i];
    m->have_loss = 1;
    return NLP_OK;
}

static int bert_backward(nlp_model *m)
{
    const int B = m->B, T = m->T, C = m->cfg.d_model, V = m->cfg.vocab_size, N = B * T;
    nlp_stack *st = &m->stack[0];
    const float *seq = st->sub[st->n - 1].out;
    float *dres = m->dres, *t1 = m->tmp[1], *t2 = m->tmp[2];
    memset(dres, 0, (size_t)N * C * sizeof(float));
    if (m->mlm_count) { /* over the rows the head ran on, back into theirs */
        const int R = m->mlm_R;
        nlp_xent x = mlm_xent(m);
        nlp_net_output_backward(m, &x, m->lse, 1.0f, m->tok_emb, m->mlm_ln, t2);
        nlp_colsum_add(nlp_net_g(m, m->mlm_bias), m->logits, R, V, V);
        nlp_layernorm_backward(t1, 0, nlp_net_g(m, m->mlm_ln_g), nlp_net_g(m, m->mlm_ln_b), t2, m->mlm_h2, m->mlm_mean,
                               m->mlm_rstd, nlp_net_w(m, m->mlm_ln_g), R, C);
        nlp_act_backward(m->cfg.activation, t1, t1, m->mlm_h1, (size_t)R * C, 0);
        nlp_linear dense = nlp_net_lin_bwd(m, &m->mlm_dense);
        if (m->mlm_gathered) {
            float *dx = m->tmp[3];
            nlp_linear_backward(&dense, R, m->mlm_x, C, t1, C, dx, C, 0);
            for (int r = 0; r < R; r++) {
                float *d = dres + (size_t)m->mlm_rows[r] * C;
                for (int c = 0; c < C; c++) d[c] += dx[(size_t)r * C + c];
            }
        } else {
            nlp_linear_backward(&dense, N, seq, C, t1, C, dres, C, 0);
        }
    }
    if (m->nsp_count || m->cls_count) { /* NSP and the classifier meet at the pooler */
        if (m->nsp_count) {
            nlp_xent x = nsp_xent(m);
            nlp_xent_backward(&x, m->nsp_lse, 1.0f, m->nsp_logits, 2);
            nlp_linear nsp = nlp_net_lin_bwd(m, &m->nsp);
            nlp_linear_backward(&nsp, B, m->pooled, C, m->nsp_logits, 2, t1, C, 0);
        }
        if (m->cls_count) {
            const int L = m->cfg.num_labels;
            nlp_xent x = cls_xent(m, B);
            nlp_xent_backward(&x, m->cls_lse, 1.0f, m->cls_logits, x.ld);
            nlp_linear cls = nlp_net_lin_bwd(m, &m->cls);
            nlp_linear_backward(&cls, B, m->pooled, C, m->cls_logits, L, t1, C, m->nsp_count ? 1.0f : 0.0f);
        }
        nlp_linear pool = nlp_net_lin_bwd(m, &m->pool);
        nlp_act_backward(NLP_ACT_TANH, t1, t1, m->pool_pre, (size_t)B * C, 0);
        nlp_linear_backward(&pool, B, seq, T * C, t1, C, dres, T * C, 1);
    }
    if (m->span_count) { /* the span head at every position; masked logits were constants */
        float *dqa = m->span_out;
        for (int k = 0; k < 2; k++) {
            nlp_xent x = span_xent(m, k);
            nlp_xent_backward(&x, m->span_lse + 2 * (size_t)k * B, 0.5f, m->span_logits + (size_t)k * N, T);
        }
        for (int i = 0; i < N; i++) {
            const int ok = !m->in_span_mask || m->in_span_mask[i];
            dqa[2 * i] = ok ? m->span_logits[i] : 0.0f;
            dqa[2 * i + 1] = ok ? m->span_logits[(size_t)N + i] : 0.0f;
        }
        nlp_linear qa = nlp_net_lin_bwd(m, &m->cls);
        nlp_linear_backward(&qa, N, seq, C, dqa, 2, dres, C, 1.0f);
    }
    nlp_run r = {.m = m, .B = B, .T = T, .self_mask = m->mask_a};
    int rc = nlp_net_stack_backward(&r, st, dres);
    if (rc) return rc;
    nlp_dropout(dres, dres, (size_t)N * C, nlp_net_dropout(m), nlp_net_seed(m, 0), nlp_net_i0(m, T, C));
    nlp_layernorm_backward(t1, 0, nlp_net_g(m, m->emb_ln_g), nlp_net_g(m, m->emb_ln_b), dres, m->emb_sum, m->emb_mean,
                           m->emb_rstd, nlp_net_w(m, m->emb_ln_g), N, C);
    nlp_embed_backward(nlp_net_g(m, m->tok_emb), t1, m->in_ids, N, C, 1.0f);
    nlp_pos_backward(nlp_net_g(m, m->pos_emb), t1, B, T, C, 0);
    float *gt = nlp_net_g(m, m->type_emb);
    if (m->in_types) nlp_embed_backward(gt, t1, m->in_types, N, C, 1.0f);
    else
        for (int i = 0; i < N; i++)
            for (int c = 0; c < C; c++) gt[c] += t1[(size_t)i * C + c];
    return NLP_OK;
}

/* As bert_forward counts them: MLM labels; NSP labels, or a classifier's labels. */
static void bert_counts(const nlp_model *m, const nlp_batch *b, double n[2])
{
    const size_t N = (size_t)b->B * b->T;
    n[0] = n[1] = 0;
    if (m->cfg.head == NLP_HEAD_SPAN) {
        for (int i = 0; b->span_start && i < b->B; i++) n[1] += b->span_start[i] != IGNORE;
        return;
    }
    if (m->cfg.num_labels > 0 && !b->labels) {
        if (b->cls_labels)
            for (int i = 0; i < b->B / nlp_batch_group(b); i++) n[1] += b->cls_labels[i] != IGNORE;
        return;
    }
    if (b->labels)
        for (size_t i = 0; i < N; i++) n[0] += b->labels[i] != IGNORE;
    if (b->nsp_labels)
        for (int i = 0; i < b->B; i++) n[1] += b->nsp_labels[i] != IGNORE;
}

const nlp_arch_ops nlp_bert_ops = {bert_build, bert_init,     bert_layout, bert_check, bert_forward,
                                    bert_backward, bert_counts, NULL,        NULL};
