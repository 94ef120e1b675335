/*
 * score.c — log-probabilities of continuations. See score.h.
 */
#include "decode/score.h"
#include "base/err.h"
#include "base/mem.h"
#include "nn/loss.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define IGNORE (-1)

/* Rows [0, rows) of width T hold their tokens at ids, the targets they are
 * scored on at target; the terms of the last pass's logits into nll, top. */
static void row_terms(const nlp_model *m, int N, const int32_t *target, double *nll, uint8_t *top)
{
    int rows, V;
    const float *lg = nlp_model_logits(m, &rows, &V);
    nlp_xent x = {.N = N, .V = V, .logits = lg, .ld = V, .target = target, .ignore_index = IGNORE};
    nlp_xent_rows(&x, nll, top);
}

/* The log-probability -nll of the continuation token at `pos` into logp[o]
 * (and greedy[o]); NLP_ENAN when it is not a number. */
static int take(const double *nll, const uint8_t *top, size_t pos, double *logp, uint8_t *greedy, size_t o,
                const char *what, size_t item)
{
    if (isnan(nll[pos]))
        return nlp_error(NLP_ENAN, "%s %zu: the model's scores are not numbers (are its weights corrupt?)", what, item);
    logp[o] = -nll[pos];
    if (greedy) greedy[o] = top[pos];
    return 0;
}

int nlp_score_batch(nlp_model *m, const nlp_score_item *it, size_t n, int max_rows, size_t max_tokens, double *logp,
                    uint8_t *greedy)
{
    if (max_rows <= 0) max_rows = 8;
    if (!max_tokens) max_tokens = 4096;
    size_t maxT = 1;
    for (size_t i = 0; i < n; i++) {
        if (!it[i].nctx) return nlp_error(NLP_EINVAL, "item %zu: an empty context (a token at least)", i);
        if (!it[i].ncont) return nlp_error(NLP_EINVAL, "item %zu: an empty continuation: nothing to score", i);
        if (it[i].nctx + it[i].ncont > maxT) maxT = it[i].nctx + it[i].ncont;
    }
    if (maxT > (size_t)nlp_model_config_max_len(nlp_model_cfg(m)))
        return nlp_error(NLP_EDATA, "%zu positions: longer than the model's %d", maxT,
                         nlp_model_config_max_len(nlp_model_cfg(m)));
    const size_t cap = (size_t)max_rows * maxT;
    int32_t *ids = nlp_malloc(cap * sizeof *ids), *target = nlp_malloc(cap * sizeof *target);
    double *nll = nlp_malloc(cap * sizeof *nll);
    uint8_t *top = nlp_malloc(cap);
    int rc = 0;
    if (!ids || !target || !nll || !top) {
        rc = NLP_ENOMEM;
        goto out;
    }
    size_t o = 0;
    for (size_t i = 0; i < n && !rc;) {
        /* consecutive items while the padded pass stays within max_tokens */
        size_t T = it[i].nctx + it[i].ncont;
        int rows = 1;
        while (rows < max_rows && i + (size_t)rows < n) {
            size_t l = it[i + rows].nctx + it[i + rows].ncont, T2 = l > T ? l : T;
            if (T2 * (size_t)(rows + 1) > max_tokens) break;
            T = T2;
            rows++;
        }
        for (int r = 0; r < rows; r++) {
            const nlp_score_item *x = &it[i + r];
            int32_t *row = ids + (size_t)r * T, *tg = target + (size_t)r * T;
            memcpy(row, x->ctx, x->nctx * sizeof *row);
            memcpy(row + x->nctx, x->cont, x->ncont * sizeof *row);
            const size_t len = x->nctx + x->ncont;
            for (size_t t = len; t < T; t++) row[t] = row[len - 1]; /* padding: never scored */
            /* position t predicts token t + 1: the continuation's from the context's last */
            for (size_t t = 0; t < T; t++) tg[t] = t + 1 >= x->nctx && t + 1 < len ? row[t + 1] : IGNORE;
        }
        nlp_batch b = {.B = rows, .T = (int)T, .ids = ids};
        if ((rc = nlp_model_forward(m, &b, NULL))) break;
        row_terms(m, rows * (int)T, target, nll, top);
        for (int r = 0; r < rows && !rc; r++)
            for (size_t j = 0; j < it[i + r].ncont && !rc; j++, o++)
                rc = take(nll, top, (size_t)r * T + it[i + r].nctx - 1 + j, logp, greedy, o, "item", i + r);
        i += (size_t)rows;
    }
out:
    free(ids), free(target), free(nll), free(top);
    return rc;
}

// --- one context, several continuations

struct nlp_scorer {
    nlp_model *m;
    nlp_cache *one;  /* the context, one row */
    nlp_cache *rows; /* the continuations of a pass, nrows rows sharing it (made for the first k seen) */
    int nrows, max_rows, max_len;
    int32_t *ids, *target;
    double *nll;
    uint8_t *top;
};

void nlp_scorer_free(nlp_scorer *s)
{
    if (!s) return;
    nlp_cache_free(s->one);
    nlp_cache_free(s->rows);
    free(s->ids), free(s->target), free(s->nll), free(s->top);
    free(s);
}

int nlp_scorer_new(nlp_scorer **out, nlp_model *m, int max_rows, int max_len)
{
    *out = NULL;
    if (!nlp_arch_is_lm(nlp_model_cfg(m)->arch))
        return nlp_error(NLP_EINVAL, "a %s model does not score continuations: a GPT or LLaMA-family model does",
                         nlp_arch_name(nlp_model_cfg(m)->arch));
    if (max_rows < 1 || max_len < 2) return nlp_error(NLP_EINVAL, "scorer of %d rows x %d positions", max_rows, max_len);
    nlp_scorer *s = nlp_calloc(1, sizeof *s);
    if (!s) return NLP_ENOMEM;
    s->m = m, s->max_rows = max_rows, s->max_len = max_len;
    int rc = nlp_cache_new(&s->one, m, 1, max_len);
    const size_t cap = (size_t)max_rows * max_len;
    if (!rc && (!(s->ids = nlp_malloc(cap * sizeof *s->ids)) || !(s->target = nlp_malloc(cap * sizeof *s->target)) ||
                !(s->nll = nlp_malloc(cap * sizeof *s->nll)) || !(s->top = nlp_malloc(cap))))
        rc = NLP_ENOMEM;
    if (rc) {
        nlp_scorer_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int nlp_score_choices(nlp_scorer *s, const int32_t *ctx, size_t nctx, const nlp_ids *cont, int k, double *logp,
                      uint8_t *greedy)
{
    if (!nctx) return nlp_error(NLP_EINVAL, "an empty context (a token at least)");
    if (k < 1) return 0;
    size_t longest = 0;
    for (int c = 0; c < k; c++) {
        if (!cont[c].n) return nlp_error(NLP_EINVAL, "continuation %d: empty: nothing to score", c);
        if (cont[c].n > longest) longest = cont[c].n;
    }
    if (nctx + longest > (size_t)s->max_len)
        return nlp_error(NLP_EDATA, "a context of %zu tokens and a continuation of %zu: longer than %d positions", nctx,
                         longest, s->max_len);
    /* passes of R rows each, as even as they come (the last may repeat a row): a cache of R rows,
     * made again only when k changes */
    const int passes = (k + s->max_rows - 1) / s->max_rows, R = (k + passes - 1) / passes;
    if (R != s->nrows) {
        nlp_cache_free(s->rows);
        s->rows = NULL, s->nrows = 0;
        int rc = nlp_cache_new(&s->rows, s->m, R, s->max_len);
        if (rc) return rc;
        s->nrows = R;
    }
    /* the context but its last token, once */
    nlp_cache_reset(s->one);
    int rc = 0;
    if (nctx > 1) {
        nlp_batch b = {.B = 1, .T = (int)(nctx - 1), .ids = ctx};
        if ((rc = nlp_model_decode(s->m, &b, s->one))) return rc;
    }
    size_t o = 0;
    for (int c0 = 0; c0 < k; c0 += R) {
        const int n = k - c0 < R ? k - c0 : R; /* rows past n repeat the last, unscored */
        size_t T = 0;
        for (int r = 0; r < n; r++)
            if (cont[c0 + r].n + 1 > T) T = cont[c0 + r].n + 1;
        for (int r = 0; r < R; r++) {
            const nlp_ids *x = &cont[c0 + (r < n ? r : n - 1)];
            int32_t *row = s->ids + (size_t)r * T, *tg = s->target + (size_t)r * T;
            row[0] = ctx[nctx - 1];
            memcpy(row + 1, x->v, x->n * sizeof *row);
            for (size_t t = x->n + 1; t < T; t++) row[t] = row[x->n]; /* padding: never scored */
            for (size_t t = 0; t < T; t++) tg[t] = r < n && t < x->n ? row[t + 1] : IGNORE;
        }
        if ((rc = nlp_cache_share(s->rows, s->one, 0))) return rc;
        nlp_batch b = {.B = R, .T = (int)T, .ids = s->ids};
        if ((rc = nlp_model_decode(s->m, &b, s->rows))) return rc;
        row_terms(s->m, R * (int)T, s->target, s->nll, s->top);
        for (int r = 0; r < n && !rc; r++)
            for (size_t j = 0; j < cont[c0 + r].n && !rc; j++, o++)
                rc = take(s->nll, s->top, (size_t)r * T + j, logp, greedy, o, "continuation", (size_t)(c0 + r));
        if (rc) return rc;
    }
    return 0;
}

int nlp_score_encode(const nlp_tokenizer *tk, nlp_tok_state *st, const nlp_model *m, const char *s, size_t n,
                     int context, nlp_ids *out)
{
    out->n = 0;
    if (context && nlp_model_cfg(m)->arch == NLP_ARCH_LLAMA) {
        nlp_encoding e = {0};
        nlp_encode_opts eo = {.add_special = 1};
        int rc = nlp_tokenizer_encode(tk, st, s, n, NULL, 0, &eo, &e);
        if (!rc && nlp_ids_append(out, e.ids, e.n)) rc = NLP_ENOMEM;
        nlp_encoding_free(&e);
        return rc;
    }
    return nlp_tokenizer_encode_ids(tk, st, s, n, 0, out);
}
