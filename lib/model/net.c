/*
 * net.c — Transformer sublayers and stacks, forward and backward. See net.h.
 */
#include "model/net.h"
#include "nn/gemv.h"
#include "base/err.h"
#include "base/prof.h"
#include "nn/act.h"
#include "nn/gemm.h"
#include "nn/norm.h"
#include "nn/relpos.h"
#include "nn/rope.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nlp_lref nlp_net_linear(nlp_params *p, const char *name, int in, int out, enum nlp_wlayout layout, int bias)
{
    char buf[256];
    nlp_lref r = {.w = -1, .b = -1, .in = in, .out = out, .layout = layout};
    int64_t shape[2] = {layout == NLP_W_OUT_IN ? out : in, layout == NLP_W_OUT_IN ? in : out};
    snprintf(buf, sizeof buf, "%s.weight", name);
    int w = nlp_params_add(p, buf, 2, shape, 0);
    if (w < 0) return r;
    if (bias) {
        int64_t bs[1] = {out};
        snprintf(buf, sizeof buf, "%s.bias", name);
        int b = nlp_params_add(p, buf, 1, bs, 1);
        if (b < 0) return r;
        r.b = b;
    }
    r.w = w;
    return r;
}

int nlp_net_linears(nlp_params *p, const char *const *names, int n, int in, int out, int bias, nlp_lref **dst)
{
    char buf[256];
    int64_t shape[2] = {out, in}, bs[1] = {out};
    for (int i = 0; i < n; i++) {
        *dst[i] = (nlp_lref){.w = -1, .b = -1, .in = in, .out = out, .layout = NLP_W_OUT_IN};
        snprintf(buf, sizeof buf, "%s.weight", names[i]);
        if ((dst[i]->w = nlp_params_add(p, buf, 2, shape, 0)) < 0) return dst[i]->w;
    }
    for (int i = 0; i < n && bias; i++) {
        snprintf(buf, sizeof buf, "%s.bias", names[i]);
        if ((dst[i]->b = nlp_params_add(p, buf, 1, bs, 1)) < 0) return dst[i]->b;
    }
    return NLP_OK;
}

int nlp_net_layernorm(nlp_params *p, const char *name, int C, int *g, int *b)
{
    char buf[256];
    int64_t s[1] = {C};
    snprintf(buf, sizeof buf, "%s.weight", name);
    if ((*g = nlp_params_add(p, buf, 1, s, 1)) < 0) return *g;
    snprintf(buf, sizeof buf, "%s.bias", name);
    if ((*b = nlp_params_add(p, buf, 1, s, 1)) < 0) return *b;
    return NLP_OK;
}

int nlp_net_rmsnorm(nlp_params *p, const char *name, int C, int *g)
{
    char buf[256];
    int64_t s[1] = {C};
    snprintf(buf, sizeof buf, "%s.weight", name);
    if ((*g = nlp_params_add(p, buf, 1, s, 1)) < 0) return *g;
    return NLP_OK;
}

void nlp_net_rope_table(nlp_model *m, int p0, int T)
{
    if (m->cfg.positions != NLP_POS_ROPE || !m->rope_cs) return;
    nlp_rope_table(m->rope_cs, p0, T, m->cfg.d_model / m->cfg.heads, m->cfg.rope_theta);
}

/* *buf of at least n floats, grown on the heap. */
static int grow(float **buf, size_t *cap, size_t n)
{
    if (n <= *cap) return NLP_OK;
    float *p = realloc(*buf, n * sizeof(float));
    if (!p) return nlp_error(NLP_ENOMEM, "out of memory (relative position bias, %zu floats)", n);
    *buf = p, *cap = n;
    return NLP_OK;
}

int nlp_net_relbias(nlp_model *m, nlp_stack *st, int q0, int T, int S, int grad)
{
    const nlp_model_config *c = &m->cfg;
    const size_t n = (size_t)c->heads * T * S;
    int rc = grow(&st->pb, &st->pb_cap, n);
    if (!rc && grad && !(rc = grow(&st->dpb, &st->dpb_cap, n))) memset(st->dpb, 0, n * sizeof(float));
    if (rc) return rc;
    NLP_PROF("relative bias fwd", 0, 4.0 * n,
             nlp_relpos_forward(st->pb, nlp_net_w(m, st->rel), c->heads, T, S, q0, st->rel_bidir, c->rel_buckets,
                                c->rel_max_distance));
    return NLP_OK;
}

void nlp_net_relbias_backward(nlp_model *m, nlp_stack *st, int T, int S)
{
    const nlp_model_config *c = &m->cfg;
    float *g = nlp_net_g(m, st->rel);
    if (g)
        NLP_PROF("relative bias bwd", 0, 8.0 * c->heads * T * S,
                 nlp_relpos_backward(g, st->dpb, c->heads, T, S, st->rel_bidir, c->rel_buckets, c->rel_max_distance));
}

float *nlp_net_w(const nlp_model *m, int i) { return i < 0 ? NULL : nlp_params_at(m->params, (size_t)i); }

float *nlp_net_g(const nlp_model *m, int i)
{
    return i < 0 || !nlp_params_grad(m->params) ? NULL : nlp_params_grad_at(m->params, (size_t)i);
}

/* Gradient of parameters w..w+n-1 (adjacent: one product writes them all),
 * claimed (nlp_params_grad_claim): *set is 1 when the product is to write
 * it (it was lazily zero), 0 when to add to it. NULL for -1 or no gradients. */
static float *claim_g(const nlp_model *m, int w, int n, int *set)
{
    float *g = nlp_params_grad(m->params);
    *set = 0;
    if (w < 0 || !g) return NULL;
    *set = nlp_params_grad_claim(m->params, (size_t)w, (size_t)n);
    return g + nlp_params_info(m->params, (size_t)w)->off;
}

const uint16_t *nlp_net_wbf(const nlp_model *m, int i)
{
    return i < 0 || !m->wbf || m->training ? NULL : m->wbf + nlp_params_info(m->params, (size_t)i)->off;
}

const nlp_sgemm_b *nlp_net_wpk(const nlp_model *m, int i, int out)
{
    if (i < 0 || !m->wpk || m->training || !m->wpk[i].p || m->wpk[i].N != out) return NULL;
    return &m->wpk[i];
}

const nlp_q8 *nlp_net_wq8(const nlp_model *m, int i, int out)
{
    if (i < 0 || !m->wq8 || m->training || !m->wq8[i].q || m->wq8[i].N != out) return NULL;
    return &m->wq8[i];
}

void nlp_net_logits(nlp_model *m, int N, const float *h, int table)
{
    const int C = m->cfg.d_model, V = m->cfg.vocab_size;
    const uint16_t *wb = nlp_net_wbf(m, table);
    const nlp_sgemm_b *wp = nlp_net_wpk(m, table, V);
    const nlp_q8 *wq = nlp_net_wq8(m, table, V);
    if (wq && wq->K == C && nlp_q8_gemm(N, h, C, wq, NULL, 0.0f, m->logits, V) == 0) return;
    if (wp)
        NLP_PROF("logits fwd", 2.0 * N * V * C, 0, nlp_gemm_packed(N, 1.0f, h, C, wp, NULL, 0.0f, m->logits, V));
    else if (wb && N <= NLP_LINEAR_BF16_ROWS) nlp_gemv(N, V, C, 1.0f, h, C, wb, C, 1, 1, 0.0f, m->logits, V);
    else NLP_PROF("logits fwd", 2.0 * N * V * C, 0, nlp_gemm(0, 1, N, V, C, 1.0f, h, C, nlp_net_w(m, table), C, 0.0f, m->logits, V));
}

nlp_linear nlp_net_lin(const nlp_model *m, const nlp_lref *r)
{
    return (nlp_linear){.w = nlp_net_w(m, r->w), .wbf = nlp_net_wbf(m, r->w), .wp = nlp_net_wpk(m, r->w, r->out),
                        .wq = nlp_net_wq8(m, r->w, r->out), .b = nlp_net_w(m, r->b), .in = r->in, .out = r->out,
                        .layout = r->layout};
}

nlp_linear nlp_net_lin_bwd_n(const nlp_model *m, const nlp_lref *const *l, int n)
{
    nlp_linear lin = nlp_net_lin(m, l[0]);
    for (int i = 1; i < n; i++) lin.out += l[i]->out;
    /* weights adjacent in the arena were declared one after another: their
     * indices are l[0]->w .. l[0]->w + n - 1 */
    lin.dw = claim_g(m, l[0]->w, n, &lin.dw_set);
    lin.db = nlp_net_g(m, l[0]->b); /* biases: added to (adjacent, as the weights) */
    for (int i = 1; i < n; i++) (void)nlp_net_g(m, l[i]->b);
    return lin;
}

nlp_linear nlp_net_lin_bwd(const nlp_model *m, const nlp_lref *r) { return nlp_net_lin_bwd_n(m, &r, 1); }

float nlp_net_dropout(const nlp_model *m) { return m->training ? (float)m->cfg.dropout : 0.0f; }
float nlp_net_attn_dropout(const nlp_model *m) { return m->training ? (float)m->cfg.attention_dropout : 0.0f; }

uint64_t nlp_net_seed(const nlp_model *m, int site) { return nlp_dropout_site(m->pass_seed, (uint64_t)site); }

void nlp_net_normal(float *w, size_t n, double std, nlp_rng *r)
{
    /* Box-Muller, both values of each pair */
    for (size_t i = 0; i < n; i += 2) {
        double u1 = 1.0 - nlp_rng_double(r), u2 = nlp_rng_double(r);
        double rad = std * sqrt(-2.0 * log(u1)), a = 2.0 * M_PI * u2;
        w[i] = (float)(rad * cos(a));
        if (i + 1 < n) w[i + 1] = (float)(rad * sin(a));
    }
}

void nlp_net_output_backward(nlp_model *m, const nlp_xent *x, const float *lse, float scale, int w, const float *h,
                             float *dh)
{
    const int N = x->N, V = x->V, C = m->cfg.d_model;
    float *dl = (float *)x->logits;
    if (!m->logits_grad) NLP_PROF("loss bwd", 0, 8.0 * N * V, nlp_xent_backward(x, lse, scale, dl, x->ld));
    m->logits_grad = 0;
    int set;
    float *dw = claim_g(m, w, 1, &set); /* a tied table's embedding gradient is added after it */
    NLP_PROF("logits bwd", 4.0 * N * V * C, 0, {
        nlp_gemm(0, 0, N, C, V, 1.0f, dl, (int)x->ld, nlp_net_w(m, w), C, 0.0f, dh, C);
        nlp_gemm(1, 0, V, C, N, 1.0f, dl, (int)x->ld, h, C, set ? 0.0f : 1.0f, dw, C);
    });
}

int nlp_net_check_ids(const int32_t *ids, int B, int T, int V, int32_t allow, const char *what)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int32_t v = ids[(size_t)b * T + t];
            if ((v < 0 || v >= V) && v != allow)
                return nlp_error(NLP_EDATA, "%s row %d, position %d: id %d outside [0, %d)", what, b, t, v, V);
        }
    return NLP_OK;
}

// --- layout

void nlp_net_layout_stack(nlp_model *m, nlp_stack *st, nlp_bump *b, int B, int T, int S)
{
    const size_t C = (size_t)m->cfg.d_model, F = (size_t)m->cfg.d_ff, H = (size_t)m->cfg.heads;
    const size_t N = (size_t)B * T, M = (size_t)B * S;
    st->x0 = nlp_bump_take(b, N * C);
    for (int i = 0; i < st->n; i++) {
        nlp_sub *s = &st->sub[i];
        s->ln = s->sum = s->qkv_a = s->kv_a = s->P = s->att = s->h1 = s->h2 = NULL;
        if (m->cfg.pre_ln) s->ln = nlp_bump_take(b, N * C);
        else s->sum = nlp_bump_take(b, N * C);
        s->mean = nlp_bump_take(b, N);
        s->rstd = nlp_bump_take(b, N);
        s->out = nlp_bump_take(b, N * C);
        switch (s->kind) {
        case NLP_SUB_SELF:
            s->qkv_a = nlp_bump_take(b, N * (C + 2 * (size_t)nlp_net_kv_dim(m)));
            if (!m->infer) s->P = nlp_bump_take(b, (size_t)B * H * T * T);
            s->att = nlp_bump_take(b, N * C);
            break;
        case NLP_SUB_CROSS: /* in inference k|v and the mask live in the cache */
            s->qkv_a = nlp_bump_take(b, N * C);
            if (!m->infer) {
                s->kv_a = nlp_bump_take(b, M * 2 * C);
                s->P = nlp_bump_take(b, (size_t)B * H * T * S);
            }
            s->att = nlp_bump_take(b, N * C);
            break;
        case NLP_SUB_FFN:
            s->h1 = nlp_bump_take(b, N * F * (s->gated ? 2 : 1));
            s->h2 = nlp_bump_take(b, N * F);
            break;
        }
    }
    st->lnf = st->lnf_mean = st->lnf_rstd = NULL;
    if (st->lnf_g >= 0) {
        st->lnf = nlp_bump_take(b, N * C);
        st->lnf_mean = nlp_bump_take(b, N);
        st->lnf_rstd = nlp_bump_take(b, N);
    }
}

void nlp_net_layout_scratch(nlp_model *m, nlp_bump *b, int rows, int mrows, int T, int S)
{
    /* rotary positions: the angles of the longest sequence of the pass */
    m->rope_cs = m->cfg.positions == NLP_POS_ROPE
                     ? nlp_bump_take(b, (size_t)(T > S ? T : S) * (m->cfg.d_model / m->cfg.heads))
                     : NULL;
    if (m->infer) { /* the forward pass needs one [N,C] scratch only */
        m->tmp[0] = nlp_bump_take(b, (size_t)rows * m->cfg.d_model);
        m->tmp[1] = m->tmp[2] = m->tmp[3] = m->dbig = m->dres = m->dres2 = m->dmem = NULL;
        return;
    }
    const size_t C = (size_t)m->cfg.d_model, F = (size_t)m->cfg.d_ff, N = (size_t)rows, M = (size_t)mrows;
    for (int i = 0; i < 4; i++) m->tmp[i] = nlp_bump_take(b, N * C);
    size_t big = N * (C + 2 * (size_t)nlp_net_kv_dim(m)); /* d(q|k|v) */
    if (N * C + 2 * M * C > big) big = N * C + 2 * M * C;
    if (N * F * (nlp_net_gated(m) ? 3 : 1) > big) big = N * F * (nlp_net_gated(m) ? 3 : 1); /* dh2, then d(gate|up) */
    m->dbig = nlp_bump_take(b, big);
    m->dres = nlp_bump_take(b, N * C);
    m->dres2 = nlp_bump_take(b, N * C);
    m->dmem = mrows ? nlp_bump_take(b, M * C) : NULL;
}

// --- sublayers

float *nlp_cache_self(const struct nlp_cache *c, int slot)
{
    return c->self + (size_t)slot * c->B * c->max_len * 2 * c->Ckv;
}

float *nlp_cache_cross(const struct nlp_cache *c, int slot)
{
    return c->cross + (size_t)slot * (c->B / c->group) * c->S * 2 * c->C;
}

static nlp_attn attn_of(const nlp_run *r, const nlp_sub *s)
{
    const nlp_model *m = r->m;
    const int C = m->cfg.d_model, H = m->cfg.heads;
    nlp_attn a = {.B = r->B, .H = H, .T = r->T, .D = C / H, .out = s->att, .ldo = C, .bso = (long)r->T * C,
                  .dropout = nlp_net_attn_dropout(m), .seed = nlp_net_seed(m, s->site + 1), .incremental = !!r->cache,
                  .b0 = m->row0};
    if (s->kind == NLP_SUB_SELF) {
        const int Ckv = nlp_net_kv_dim(m), W = C + 2 * Ckv;
        a.kv_heads = m->cfg.kv_heads;
        a.S = r->T;
        a.q = s->qkv_a;
        a.k = s->qkv_a + C;
        a.v = s->qkv_a + C + Ckv;
        a.ldq = a.ldk = a.ldv = W;
        a.bsq = a.bsk = a.bsv = (long)r->T * W;
        a.key_mask = r->self_mask;
        a.bsm = r->T;
        a.causal = s->causal;
        a.bias = r->pbias;
        if (r->cache) { /* keys and values of every position so far, this pass's appended */
            const struct nlp_cache *c = r->cache;
            a.S = c->len + r->T;
            a.q_offset = c->len;
            a.k = nlp_cache_self(c, s->slot);
            a.v = a.k + Ckv;
            a.ldk = a.ldv = 2 * Ckv;
            a.bsk = a.bsv = (long)c->max_len * 2 * Ckv;
            a.key_mask = NULL;
            if (c->moved) a.kv_rows = c->rows, a.bs_rows = c->max_len;
        }
        a.ldb = a.S, a.bsb = (long)a.T * a.S; /* the bias of this pass's queries over all its keys */
    } else if (r->cache) {
        const struct nlp_cache *c = r->cache;
        a.S = c->S;
        a.q = s->qkv_a;
        a.ldq = C;
        a.bsq = (long)r->T * C;
        a.k = nlp_cache_cross(c, s->slot);
        a.v = a.k + C;
        a.ldk = a.ldv = 2 * C;
        a.bsk = a.bsv = (long)c->S * 2 * C;
        a.key_mask = c->src_mask;
        a.bsm = c->S;
        a.kv_group = c->group;
    } else {
        a.S = r->S;
        a.q = s->qkv_a;
        a.ldq = C;
        a.bsq = (long)r->T * C;
        a.k = s->kv_a;
        a.v = s->kv_a + C;
        a.ldk = a.ldv = 2 * C;
        a.bsk = a.bsv = (long)r->S * 2 * C;
        a.key_mask = r->cross_mask;
        a.bsm = r->S;
    }
    return a;
}

/* Flops of the attention products, forward (passes 1) or backward (2):
 * Q·Kᵀ and P·V per (batch, head), each 2·T·S·D (causal: about half). */
static double attn_flops(const nlp_attn *a, int passes)
{
    double f = 4.0 * a->B * a->H * (double)a->T * a->S * a->D * passes;
    return a->causal && !a->q_offset && a->T == a->S ? f / 2 : f;
}

int nlp_net_adjacent(const nlp_model *m, const nlp_lref *const *l, int n)
{
    for (int i = 0; i < n; i++)
        if (l[i]->layout != NLP_W_OUT_IN || l[i]->in != l[0]->in || l[i]->w < 0 || (l[i]->b < 0) != (l[0]->b < 0))
            return 0;
    for (int i = 1; i < n; i++)
        if (nlp_net_w(m, l[i]->w) != nlp_net_w(m, l[i - 1]->w) + (size_t)l[i - 1]->in * l[i - 1]->out ||
            (l[0]->b >= 0 && nlp_net_w(m, l[i]->b) != nlp_net_w(m, l[i - 1]->b) + l[i - 1]->out))
            return 0;
    return 1;
}

/* n adjacent layers as one [Σ out, in] layer, for the forward pass. */
static nlp_linear joined(const nlp_model *m, const nlp_lref *const *l, int n)
{
    nlp_linear lin = nlp_net_lin(m, l[0]);
    for (int i = 1; i < n; i++) lin.out += l[i]->out;
    lin.wp = nlp_net_wpk(m, l[0]->w, lin.out);
    lin.wq = nlp_net_wq8(m, l[0]->w, lin.out);
    return lin;
}

/* q|k|v of self-attention into s->qkv_a [N, C+2Ckv]: one product where the
 * three weights lie together (every element the same chain of operations
 * as three products: sgemm.h). */
static void qkv_forward(nlp_model *m, nlp_sub *s, int N, const float *h)
{
    const int C = m->cfg.d_model, Ckv = nlp_net_kv_dim(m), W = C + 2 * Ckv, off[3] = {0, C, C + Ckv};
    const nlp_lref *p[3] = {&s->q, &s->k, &s->v};
    if (s->fused || nlp_net_adjacent(m, p, 3)) {
        nlp_linear l = s->fused ? nlp_net_lin(m, &s->qkv) : joined(m, p, 3);
        nlp_linear_forward(&l, N, h, C, s->qkv_a, W);
        return;
    }
    for (int i = 0; i < 3; i++) {
        nlp_linear l = nlp_net_lin(m, p[i]);
        nlp_linear_forward(&l, N, h, C, s->qkv_a + off[i], W);
    }
}

static void qkv_backward(nlp_model *m, nlp_sub *s, int N, const float *h, const float *dqkv, float *dh, float beta)
{
    const int C = m->cfg.d_model, Ckv = nlp_net_kv_dim(m), W = C + 2 * Ckv, off[3] = {0, C, C + Ckv};
    const nlp_lref *p[3] = {&s->q, &s->k, &s->v};
    if (s->fused || nlp_net_adjacent(m, p, 3)) {
        nlp_linear l = s->fused ? nlp_net_lin_bwd(m, &s->qkv) : nlp_net_lin_bwd_n(m, p, 3);
        nlp_linear_backward(&l, N, h, C, dqkv, W, dh, C, beta);
        return;
    }
    for (int i = 0; i < 3; i++) {
        nlp_linear l = nlp_net_lin_bwd(m, p[i]);
        nlp_linear_backward(&l, N, h, C, dqkv + off[i], W, dh, C, i ? 1.0f : beta);
    }
}

/* The gated unit's gate|up into s->h1 [N, 2F]: one product where the two
 * weights lie together. */
static void gate_up_forward(nlp_model *m, nlp_sub *s, int N, const float *h)
{
    const int C = m->cfg.d_model, F = m->cfg.d_ff;
    const nlp_lref *p[2] = {&s->fc1, &s->up};
    if (nlp_net_adjacent(m, p, 2)) {
        nlp_linear l = joined(m, p, 2);
        nlp_linear_forward(&l, N, h, C, s->h1, 2 * F);
        return;
    }
    for (int i = 0; i < 2; i++) {
        nlp_linear l = nlp_net_lin(m, p[i]);
        nlp_linear_forward(&l, N, h, C, s->h1 + (size_t)i * F, 2 * F);
    }
}

static void gate_up_backward(nlp_model *m, nlp_sub *s, int N, const float *h, const float *dgu, float *dh, float beta)
{
    const int C = m->cfg.d_model, F = m->cfg.d_ff;
    const nlp_lref *p[2] = {&s->fc1, &s->up};
    if (nlp_net_adjacent(m, p, 2)) {
        nlp_linear l = nlp_net_lin_bwd_n(m, p, 2);
        nlp_linear_backward(&l, N, h, C, dgu, 2 * F, dh, C, beta);
        return;
    }
    for (int i = 0; i < 2; i++) {
        nlp_linear l = nlp_net_lin_bwd(m, p[i]);
        nlp_linear_backward(&l, N, h, C, dgu + (size_t)i * F, 2 * F, dh, C, i ? 1.0f : beta);
    }
}

/* Rotary positions on the q and k of rows [B, T] laid out as s->qkv_a
 * (or their gradients: inverse), at the angles of m->rope_cs. */
static void rope_qk(nlp_model *m, float *qkv, int B, int T, int inverse)
{
    const int C = m->cfg.d_model, H = m->cfg.heads, D = C / H, W = C + 2 * nlp_net_kv_dim(m);
    const enum nlp_rope_layout lay = (enum nlp_rope_layout)m->cfg.rope_layout;
    nlp_rope_apply(qkv, B, T, W, (long)T * W, H, D, m->rope_cs, lay, inverse);
    nlp_rope_apply(qkv + C, B, T, W, (long)T * W, m->cfg.kv_heads, D, m->rope_cs, lay, inverse);
}

/* The sublayer's norm of x into y (pre-LN: its input; post-LN: the sum). */
static void norm_forward(nlp_model *m, const nlp_sub *s, float *y, const float *x, int N)
{
    const int C = m->cfg.d_model;
    const float eps = (float)m->cfg.ln_eps;
    if (s->rms)
        NLP_PROF("rmsnorm fwd", 0, 8.0 * N * C, nlp_rmsnorm_forward(y, s->rstd, x, nlp_net_w(m, s->ln_g), N, C, eps));
    else
        NLP_PROF("layernorm fwd", 0, 8.0 * N * C,
                 nlp_layernorm_forward(y, s->mean, s->rstd, x, nlp_net_w(m, s->ln_g), nlp_net_w(m, s->ln_b), N, C, eps));
}

static void norm_backward(nlp_model *m, const nlp_sub *s, float *dx, float beta_dx, const float *dy, const float *x,
                          int N)
{
    const int C = m->cfg.d_model;
    if (s->rms)
        NLP_PROF("rmsnorm bwd", 0, 12.0 * N * C,
                 nlp_rmsnorm_backward(dx, beta_dx, nlp_net_g(m, s->ln_g), dy, x, s->rstd, nlp_net_w(m, s->ln_g), N, C));
    else
        NLP_PROF("layernorm bwd", 0, 12.0 * N * C,
                 nlp_layernorm_backward(dx, beta_dx, nlp_net_g(m, s->ln_g), nlp_net_g(m, s->ln_b), dy, x, s->mean,
                                        s->rstd, nlp_net_w(m, s->ln_g), N, C));
}

/* Cross-attention k|v of the memory [M, C] into kv [M, 2C]. */
void nlp_net_kv_forward(const nlp_model *m, const nlp_sub *s, int M, const float *mem, float *kv)
{
    const int C = m->cfg.d_model;
    const nlp_lref *p[2] = {&s->k, &s->v};
    if (nlp_net_adjacent(m, p, 2)) {
        nlp_linear l = joined(m, p, 2);
        nlp_linear_forward(&l, M, mem, C, kv, 2 * C);
        return;
    }
    nlp_linear k = nlp_net_lin(m, &s->k), v = nlp_net_lin(m, &s->v);
    nlp_linear_forward(&k, M, mem, C, kv, 2 * C);
    nlp_linear_forward(&v, M, mem, C, kv + C, 2 * C);
}

static void kv_forward(nlp_model *m, nlp_sub *s, int M, const float *mem, float *kv)
{
    nlp_net_kv_forward(m, s, M, mem, kv);
}

static void kv_backward(nlp_model *m, nlp_sub *s, int M, const float *mem, const float *dkv, float *dmem)
{
    const int C = m->cfg.d_model;
    const nlp_lref *p[2] = {&s->k, &s->v};
    if (nlp_net_adjacent(m, p, 2)) {
        nlp_linear l = nlp_net_lin_bwd_n(m, p, 2);
        nlp_linear_backward(&l, M, mem, C, dkv, 2 * C, dmem, C, 1);
        return;
    }
    nlp_linear k = nlp_net_lin_bwd(m, &s->k);
    nlp_linear_backward(&k, M, mem, C, dkv, 2 * C, dmem, C, 1);
    nlp_linear v = nlp_net_lin_bwd(m, &s->v);
    nlp_linear_backward(&v, M, mem, C, dkv + C, 2 * C, dmem, C, 1);
}

static int sub_forward(const nlp_run *r, nlp_sub *s, const float *x)
{
    nlp_model *m = r->m;
    const int C = m->cfg.d_model, F = m->cfg.d_ff, N = r->B * r->T, M = r->B * r->S;
    const size_t NC = (size_t)N * C;
    const float *h = x;
    int rc = NLP_OK;
    if (m->cfg.pre_ln) {
        norm_forward(m, s, s->ln, x, N);
        h = s->ln;
    }
    float *f = m->tmp[0];
    switch (s->kind) {
    case NLP_SUB_SELF: {
        const int Ckv = nlp_net_kv_dim(m), W = C + 2 * Ckv;
        NLP_PROF("linear qkv fwd", 2.0 * N * C * W, 0, qkv_forward(m, s, N, h));
        if (s->rope) NLP_PROF("rope fwd", 0, 8.0 * N * (C + Ckv), rope_qk(m, s->qkv_a, r->B, r->T, 0));
        if (r->cache) { /* append this pass's k|v to the cache */
            const struct nlp_cache *c = r->cache;
            float *kv = nlp_cache_self(c, s->slot);
            for (int b = 0; b < r->B; b++)
                for (int t = 0; t < r->T; t++) {
                    memcpy(kv + ((size_t)b * c->max_len + c->len + t) * 2 * Ckv, s->qkv_a + ((size_t)b * r->T + t) * W + C,
                           2 * (size_t)Ckv * sizeof(float));
                    c->rows[(size_t)b * c->max_len + c->len + t] = b;
                }
        }
        nlp_attn a = attn_of(r, s);
        NLP_PROF("attention fwd", attn_flops(&a, 1), 0, rc = nlp_attn_forward(&a, s->P));
        if (rc) return rc;
        nlp_linear o = nlp_net_lin(m, &s->o);
        NLP_PROF("linear out fwd", 2.0 * N * C * C, 0, nlp_linear_forward(&o, N, s->att, C, f, C));
        break;
    }
    case NLP_SUB_CROSS: {
        nlp_linear q = nlp_net_lin(m, &s->q);
        NLP_PROF("linear qkv fwd", 2.0 * N * C * C + (r->cache ? 0 : 4.0 * M * C * C), 0, {
            nlp_linear_forward(&q, N, h, C, s->qkv_a, C);
            if (!r->cache) kv_forward(m, s, M, r->mem, s->kv_a);
        });
        nlp_attn a = attn_of(r, s);
        NLP_PROF("attention fwd", attn_flops(&a, 1), 0, rc = nlp_attn_forward(&a, s->P));
        if (rc) return rc;
        nlp_linear o = nlp_net_lin(m, &s->o);
        NLP_PROF("linear out fwd", 2.0 * N * C * C, 0, nlp_linear_forward(&o, N, s->att, C, f, C));
        break;
    }
    case NLP_SUB_FFN: {
        nlp_linear fc2 = nlp_net_lin(m, &s->fc2);
        if (s->gated) {
            NLP_PROF("linear ffn fwd", 4.0 * N * C * F, 0, gate_up_forward(m, s, N, h));
            NLP_PROF("activation fwd", 0, 12.0 * N * F, nlp_glu_forward(m->cfg.activation, s->h2, s->h1, N, F));
        } else {
            nlp_linear fc1 = nlp_net_lin(m, &s->fc1);
            NLP_PROF("linear ffn fwd", 2.0 * N * C * F, 0, nlp_linear_forward(&fc1, N, h, C, s->h1, F));
            NLP_PROF("activation fwd", 0, 8.0 * N * F, nlp_act_forward(m->cfg.activation, s->h2, s->h1, (size_t)N * F));
        }
        if (m->cfg.arch == NLP_ARCH_TRANSFORMER)
            NLP_PROF("dropout", 0, 8.0 * N * F, nlp_dropout(s->h2, s->h2, (size_t)N * F, nlp_net_dropout(m), nlp_net_seed(m, s->site + 1), nlp_net_i0(m, r->T, F)));
        NLP_PROF("linear ffn fwd", 2.0 * N * C * F, 0, nlp_linear_forward(&fc2, N, s->h2, F, f, C));
        break;
    }
    }
    NLP_PROF("dropout", 0, 8.0 * NC, nlp_dropout(f, f, NC, nlp_net_dropout(m), nlp_net_seed(m, s->site), nlp_net_i0(m, r->T, C)));
    if (m->cfg.pre_ln) {
        NLP_PROF("residual add", 0, 12.0 * NC, nlp_add(s->out, x, f, NC));
    } else {
        NLP_PROF("residual add", 0, 12.0 * NC, nlp_add(s->sum, x, f, NC));
        norm_forward(m, s, s->out, s->sum, N);
    }
    return NLP_OK;
}

/* dres: ∂L/∂out on entry, ∂L/∂x on return. */
static int sub_backward(const nlp_run *r, nlp_sub *s, const float *x, float *dres)
{
    nlp_model *m = r->m;
    const int C = m->cfg.d_model, F = m->cfg.d_ff, N = r->B * r->T, M = r->B * r->S;
    const size_t NC = (size_t)N * C;
    const int pre = m->cfg.pre_ln;
    const float p = nlp_net_dropout(m);
    float *t0 = m->tmp[0], *t2 = m->tmp[2], *t3 = m->tmp[3], *big = m->dbig;
    const float *df;
    if (pre) {
        df = dres;
    } else {
        norm_backward(m, s, dres, 0, dres, s->sum, N); /* in place */
        df = dres;
    }
    if (p > 0) {
        NLP_PROF("dropout", 0, 8.0 * NC, nlp_dropout(t0, df, NC, p, nlp_net_seed(m, s->site), nlp_net_i0(m, r->T, C)));
        df = t0;
    }
    const float *h = pre ? s->ln : x;
    float *dh = pre ? t2 : dres;
    const float beta = pre ? 0.0f : 1.0f;
    int rc = NLP_OK;
    switch (s->kind) {
    case NLP_SUB_SELF: {
        const int Ckv = nlp_net_kv_dim(m), W = C + 2 * Ckv;
        nlp_linear o = nlp_net_lin_bwd(m, &s->o);
        NLP_PROF("linear out bwd", 4.0 * N * C * C, 0, nlp_linear_backward(&o, N, s->att, C, df, C, t3, C, 0));
        nlp_attn a = attn_of(r, s);
        if (r->dpbias) a.dbias = s->P; /* ∂L/∂scores over P, which is done with after this */
        NLP_PROF("attention bwd", attn_flops(&a, 2), 0, rc = nlp_attn_backward(&a, s->P, t3, big, big + C, big + C + Ckv));
        if (rc) return rc;
        if (r->dpbias) { /* the bias is every batch's and every layer's: their gradients add up */
            const size_t HTS = (size_t)m->cfg.heads * r->T * a.S;
            NLP_PROF("relative bias bwd", 0, 8.0 * r->B * HTS, {
                for (int b = 0; b < r->B; b++) nlp_add(r->dpbias, r->dpbias, s->P + b * HTS, HTS);
            });
        }
        /* the rotation's transpose takes the gradients of the rotated q and k to the projections' */
        if (s->rope) NLP_PROF("rope bwd", 0, 8.0 * N * (C + Ckv), rope_qk(m, big, r->B, r->T, 1));
        NLP_PROF("linear qkv bwd", 4.0 * N * C * W, 0, qkv_backward(m, s, N, h, big, dh, beta));
        break;
    }
    case NLP_SUB_CROSS: {
        nlp_linear o = nlp_net_lin_bwd(m, &s->o);
        NLP_PROF("linear out bwd", 4.0 * N * C * C, 0, nlp_linear_backward(&o, N, s->att, C, df, C, t3, C, 0));
        nlp_attn a = attn_of(r, s);
        float *dq = big, *dkv = big + NC;
        NLP_PROF("attention bwd", attn_flops(&a, 2), 0, rc = nlp_attn_backward(&a, s->P, t3, dq, dkv, dkv + C));
        if (rc) return rc;
        nlp_linear q = nlp_net_lin_bwd(m, &s->q);
        NLP_PROF("linear qkv bwd", 4.0 * N * C * C + 8.0 * M * C * C, 0, {
            nlp_linear_backward(&q, N, h, C, dq, C, dh, C, beta);
            kv_backward(m, s, M, r->mem, dkv, r->dmem);
        });
        break;
    }
    case NLP_SUB_FFN: {
        nlp_linear fc2 = nlp_net_lin_bwd(m, &s->fc2);
        size_t NF = (size_t)N * F;
        NLP_PROF("linear ffn bwd", 4.0 * N * C * F, 0, nlp_linear_backward(&fc2, N, s->h2, F, df, C, big, F, 0));
        if (m->cfg.arch == NLP_ARCH_TRANSFORMER)
            NLP_PROF("dropout", 0, 8.0 * NF, nlp_dropout(big, big, NF, p, nlp_net_seed(m, s->site + 1), nlp_net_i0(m, r->T, F)));
        if (s->gated) { /* d(gate|up) [N, 2F] after dh2 [N, F] in the scratch */
            float *dgu = big + NF;
            NLP_PROF("activation bwd", 0, 16.0 * NF, nlp_glu_backward(m->cfg.activation, dgu, big, s->h1, N, F));
            NLP_PROF("linear ffn bwd", 8.0 * N * C * F, 0, gate_up_backward(m, s, N, h, dgu, dh, beta));
        } else {
            NLP_PROF("activation bwd", 0, 12.0 * NF, nlp_act_backward(m->cfg.activation, big, big, s->h1, NF, 0));
            nlp_linear fc1 = nlp_net_lin_bwd(m, &s->fc1);
            NLP_PROF("linear ffn bwd", 4.0 * N * C * F, 0, nlp_linear_backward(&fc1, N, h, C, big, F, dh, C, beta));
        }
        break;
    }
    }
    if (pre) norm_backward(m, s, dres, 1, t2, x, N);
    return NLP_OK;
}

int nlp_net_stack_forward(const nlp_run *r, nlp_stack *st, const float **out)
{
    const float *x = st->x0;
    for (int i = 0; i < st->n; i++) {
        int rc = sub_forward(r, &st->sub[i], x);
        if (rc) return rc;
        x = st->sub[i].out;
    }
    if (st->lnf_g >= 0) {
        nlp_model *m = r->m;
        const nlp_sub f = {.rms = st->lnf_rms, .ln_g = st->lnf_g, .ln_b = st->lnf_b, .mean = st->lnf_mean,
                           .rstd = st->lnf_rstd};
        norm_forward(m, &f, st->lnf, x, r->B * r->T);
        x = st->lnf;
    }
    *out = x;
    return NLP_OK;
}

/* The lowest arena offset of a sublayer's parameters. Parameters are
 * declared in forward order and the backward pass visits sublayers in
 * reverse, so once a sublayer is done every gradient from there up is final
 * (the tied embeddings at the bottom are finished last). */
static size_t sub_first_offset(const nlp_model *m, const nlp_sub *s)
{
    const nlp_lref *l[4] = {0};
    switch (s->kind) {
    case NLP_SUB_SELF:
        if (s->fused) l[0] = &s->qkv, l[1] = &s->o;
        else l[0] = &s->q, l[1] = &s->k, l[2] = &s->v, l[3] = &s->o;
        break;
    case NLP_SUB_CROSS: l[0] = &s->q, l[1] = &s->k, l[2] = &s->v, l[3] = &s->o; break;
    case NLP_SUB_FFN: l[0] = &s->fc1, l[1] = &s->fc2, l[2] = s->gated ? &s->up : NULL; break;
    }
    int idx[10] = {s->ln_g, s->ln_b};
    for (int i = 0; i < 4; i++) idx[2 + 2 * i] = l[i] ? l[i]->w : -1, idx[3 + 2 * i] = l[i] ? l[i]->b : -1;
    size_t lo = nlp_params_numel(m->params);
    for (size_t i = 0; i < sizeof idx / sizeof *idx; i++)
        if (idx[i] >= 0 && nlp_params_info(m->params, (size_t)idx[i])->off < lo)
            lo = nlp_params_info(m->params, (size_t)idx[i])->off;
    return lo;
}

int nlp_net_stack_backward(const nlp_run *r, nlp_stack *st, float *dres)
{
    nlp_model *m = r->m;
    const int N = r->B * r->T;
    if (st->lnf_g >= 0) {
        const float *x = st->n ? st->sub[st->n - 1].out : st->x0;
        const nlp_sub f = {.rms = st->lnf_rms, .ln_g = st->lnf_g, .ln_b = st->lnf_b, .mean = st->lnf_mean,
                           .rstd = st->lnf_rstd};
        norm_backward(m, &f, dres, 0, dres, x, N); /* in place */
    }
    for (int i = st->n - 1; i >= 0; i--) {
        int rc = sub_backward(r, &st->sub[i], i ? st->sub[i - 1].out : st->x0, dres);
        if (rc) return rc;
        if (m->grad_hook) {
            const size_t off = sub_first_offset(m, &st->sub[i]);
            nlp_params_grad_settle(m->params, off); /* what the hook reads holds the true gradients */
            m->grad_hook(m->grad_hook_ctx, off);
        }
    }
    return NLP_OK;
}
