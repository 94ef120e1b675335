/*
 * chrf.c — chrF/chrF++ statistics and score. See chrf.h.
 */
#include "eval/chrf.h"
#include "base/err.h"
#include "base/mem.h"
#include "eval/ngram.h"
#include "eval/pystr.h"
#include "text/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nlp_chrf_params nlp_chrf_defaults(void) { return (nlp_chrf_params){6, 0, 2, 0, 0, 0}; }

void nlp_chrf_name(const nlp_chrf_params *p, char *name, size_t size)
{
    int k = snprintf(name, size, "chrF%d", p->beta);
    for (int i = 0; i < p->word_order && k > 0 && (size_t)k + 1 < size; i++) name[k++] = '+';
    if (k > 0 && (size_t)k < size) name[k] = 0;
}

/* CHRF._compute_f_score, operation for operation. f32: the statistics are
 * numpy float32 values, so each division is a float32 one (numpy 1.x). */
static double compute(const nlp_chrf_params *p, const double *st, int f32)
{
    const double eps = 1e-16;
    int order = p->char_order + p->word_order, eff = 0;
    double factor = (double)p->beta * p->beta, score = 0, avg_prec = 0, avg_rec = 0;
    for (int i = 0; i < order; i++) {
        double n_hyp = st[3 * i], n_ref = st[3 * i + 1], n_match = st[3 * i + 2];
        double prec = n_hyp > 0 ? (f32 ? (double)((float)n_match / (float)n_hyp) : n_match / n_hyp) : eps;
        double rec = n_ref > 0 ? (f32 ? (double)((float)n_match / (float)n_ref) : n_match / n_ref) : eps;
        double denom = factor * prec + rec;
        score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
        if (n_hyp > 0 && n_ref > 0) {
            avg_prec += prec;
            avg_rec += rec;
            eff++;
        }
    }
    if (p->eps_smoothing) return 100 * score / order;
    if (eff == 0) {
        avg_prec = avg_rec = 0;
    } else {
        avg_prec /= eff;
        avg_rec /= eff;
    }
    if (avg_prec + avg_rec != 0) {
        score = (1 + factor) * avg_prec * avg_rec;
        score /= (factor * avg_prec) + avg_rec;
        return 100 * score;
    }
    return 0.0;
}

double nlp_chrf_compute(const nlp_chrf_params *p, const double *stats) { return compute(p, stats, 0); }
double nlp_chrf_compute_f32(const nlp_chrf_params *p, const double *stats) { return compute(p, stats, 1); }

struct nlp_chrf {
    nlp_chrf_params p;
    nlp_buf low;
    nlp_units hc, hw, rc, rw;
    nlp_ngrams *gc, *gw;
    double *best, *cur;
};

nlp_chrf *nlp_chrf_new(const nlp_chrf_params *p)
{
    NLP_ASSERT(p->char_order >= 0 && p->char_order <= NLP_NGRAM_MAX_ORDER);
    NLP_ASSERT(p->word_order >= 0 && p->word_order <= NLP_NGRAM_MAX_ORDER);
    nlp_chrf *c = nlp_calloc(1, sizeof *c);
    if (!c) return NULL;
    c->p = *p;
    int ns = nlp_chrf_nstats(p);
    c->gc = nlp_ngrams_new();
    c->gw = nlp_ngrams_new();
    c->best = nlp_calloc((size_t)ns + 1, sizeof *c->best);
    c->cur = nlp_calloc((size_t)ns + 1, sizeof *c->cur);
    if (!c->gc || !c->gw || !c->best || !c->cur) {
        nlp_chrf_free(c);
        return NULL;
    }
    return c;
}

void nlp_chrf_free(nlp_chrf *c)
{
    if (!c) return;
    nlp_buf_free(&c->low);
    nlp_units_free(&c->hc);
    nlp_units_free(&c->hw);
    nlp_units_free(&c->rc);
    nlp_units_free(&c->rw);
    nlp_ngrams_free(c->gc);
    nlp_ngrams_free(c->gw);
    free(c->best);
    free(c->cur);
    free(c);
}

static int is_punct(char ch) { return ch > 0x20 && ch < 0x7F && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", ch); }

/* CHRF._remove_punctuation: words of s, a final (else leading) ASCII
 * punctuation mark split off words longer than one character. */
static int words_of(nlp_units *u, const char *s, size_t n)
{
    size_t pos = 0, tb, te;
    u->n = 0;
    while (nlp_py_next_token(s, n, &pos, &tb, &te)) {
        const char *w = s + tb;
        size_t len = te - tb;
        int one_char = nlp_utf8_seq_len(w, len, 0) == len; /* Python's len(w) == 1 */
        int rc;
        if (one_char) rc = nlp_units_push(u, w, len);
        else if (is_punct(w[len - 1])) rc = nlp_units_push(u, w, len - 1) || nlp_units_push(u, w + len - 1, 1);
        else if (is_punct(w[0])) rc = nlp_units_push(u, w, 1) || nlp_units_push(u, w + 1, len - 1);
        else rc = nlp_units_push(u, w, len);
        if (rc) return NLP_ENOMEM;
    }
    return NLP_OK;
}

/* Copies (lowercased if asked) text into a stable buffer region: hypothesis
 * units must stay valid while references are processed, so the hypothesis
 * text lives at the start of c->low and each reference after it. */
static int prepare(nlp_chrf *c, const char *s, size_t n, size_t at, const char **out, size_t *outn)
{
    c->low.len = at;
    if (c->p.lowercase) {
        if (nlp_py_lower(s, n, &c->low)) return NLP_ENOMEM;
    } else if (nlp_buf_append(&c->low, s, n) || nlp_buf_reserve(&c->low, 1)) {
        return NLP_ENOMEM;
    }
    *out = c->low.data + at;
    *outn = c->low.len - at;
    return NLP_OK;
}

static int units_of(nlp_chrf *c, const char *s, size_t n, nlp_units *cu, nlp_units *wu)
{
    if (nlp_units_chars(cu, s, n, !c->p.whitespace)) return NLP_ENOMEM;
    if (c->p.word_order > 0 && words_of(wu, s, n)) return NLP_ENOMEM;
    return NLP_OK;
}

/* [hyp, ref, match] for orders 1..K of one unit kind */
static void order_stats(nlp_ngrams *g, const nlp_units *h, const nlp_units *r, int K, double *out)
{
    int64_t match[NLP_NGRAM_MAX_ORDER] = {0};
    if (K == 0) return;
    nlp_ngrams_probe(g, r, match);
    for (int k = 1; k <= K; k++) {
        size_t hn = h->n >= (size_t)k ? h->n - (size_t)k + 1 : 0;
        size_t rn = r->n >= (size_t)k ? r->n - (size_t)k + 1 : 0;
        out[3 * (k - 1)] = rn > 0 ? (double)hn : 0.0;
        out[3 * (k - 1) + 1] = (double)rn;
        out[3 * (k - 1) + 2] = (double)match[k - 1];
    }
}

int nlp_chrf_segment(nlp_chrf *c, const char *hyp, size_t hyp_len, const char *const *refs,
                     const size_t *ref_lens, int nrefs, double *stats)
{
    const nlp_chrf_params *p = &c->p;
    int ns = nlp_chrf_nstats(p), C = p->char_order, W = p->word_order;
    const char *s;
    size_t n;
    /* the hypothesis text must not move: reserve room for it and every ref */
    size_t room = hyp_len + 1;
    for (int r = 0; r < nrefs; r++) room += ref_lens[r] + 1;
    nlp_buf_reset(&c->low);
    if (nlp_buf_reserve(&c->low, 3 * room + 16)) return NLP_ENOMEM;
    if (prepare(c, hyp, hyp_len, 0, &s, &n) || units_of(c, s, n, &c->hc, &c->hw)) return NLP_ENOMEM;
    size_t at = c->low.len + 1;
    if (C > 0 && nlp_ngrams_load(c->gc, &c->hc, C)) return NLP_ENOMEM;
    if (W > 0 && nlp_ngrams_load(c->gw, &c->hw, W)) return NLP_ENOMEM;

    double best_f = -1.0;
    memset(stats, 0, (size_t)ns * sizeof *stats);
    for (int r = 0; r < nrefs; r++) {
        if (prepare(c, refs[r], ref_lens[r], at, &s, &n) || units_of(c, s, n, &c->rc, &c->rw))
            return NLP_ENOMEM;
        order_stats(c->gc, &c->hc, &c->rc, C, c->cur);
        order_stats(c->gw, &c->hw, &c->rw, W, c->cur + 3 * C);
        double f = nlp_chrf_compute(p, c->cur);
        if (f > best_f) {
            best_f = f;
            memcpy(stats, c->cur, (size_t)ns * sizeof *stats);
        }
    }
    return NLP_OK;
}
