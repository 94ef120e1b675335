/*
 * metric.c — the common metric interface. See metric.h.
 */
#include "eval/metric.h"
#include "base/err.h"
#include "eval/pystr.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nlp_sig_add(nlp_sig *s, const char *key, const char *abbr, const char *fmt, ...)
{
    NLP_ASSERT(s->n < NLP_SIG_MAX);
    s->kv[s->n].key = key;
    s->kv[s->n].abbr = abbr;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->kv[s->n].value, sizeof s->kv[s->n].value, fmt, ap);
    va_end(ap);
    s->n++;
}

int nlp_sig_format(const nlp_sig *s, int short_form, nlp_buf *out)
{
    for (int i = 0; i < s->n; i++)
        if (nlp_buf_printf(out, "%s%s:%s", i ? "|" : "", short_form ? s->kv[i].abbr : s->kv[i].key, s->kv[i].value))
            return NLP_ENOMEM;
    return nlp_buf_reserve(out, 1);
}

struct nlp_metric {
    nlp_metric_params p;
    char name[32];
    int nstats;
    nlp_bleu *bleu;
    nlp_chrf *chrf;
    nlp_ter *ter;
    nlp_buf h, r; /* exact match: the lowercased hypothesis and reference */
};

nlp_metric *nlp_metric_new(const nlp_metric_params *p)
{
    nlp_metric *m = nlp_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->p = *p;
    switch (p->kind) {
    case NLP_METRIC_BLEU:
        m->bleu = nlp_bleu_new(&p->bleu);
        m->nstats = nlp_bleu_nstats(&p->bleu);
        strcpy(m->name, "BLEU");
        if (!m->bleu) goto fail;
        break;
    case NLP_METRIC_CHRF:
        m->chrf = nlp_chrf_new(&p->chrf);
        m->nstats = nlp_chrf_nstats(&p->chrf);
        nlp_chrf_name(&p->chrf, m->name, sizeof m->name);
        if (!m->chrf) goto fail;
        break;
    case NLP_METRIC_TER:
        m->ter = nlp_ter_new(&p->ter);
        m->nstats = NLP_TER_NSTATS;
        strcpy(m->name, "TER");
        if (!m->ter) goto fail;
        break;
    case NLP_METRIC_EXACT:
        m->nstats = NLP_EXACT_NSTATS;
        strcpy(m->name, "Exact");
        break;
    }
    return m;
fail:
    nlp_metric_free(m);
    return NULL;
}

void nlp_metric_free(nlp_metric *m)
{
    if (!m) return;
    nlp_bleu_free(m->bleu);
    nlp_chrf_free(m->chrf);
    nlp_ter_free(m->ter);
    nlp_buf_free(&m->h);
    nlp_buf_free(&m->r);
    free(m);
}

const nlp_metric_params *nlp_metric_params_of(const nlp_metric *m) { return &m->p; }
int nlp_metric_nstats(const nlp_metric *m) { return m->nstats; }
const char *nlp_metric_name(const nlp_metric *m) { return m->name; }

/* s[0..n) stripped of Python whitespace on both sides, lowercased into b
 * with `lower`: *out, *out_len */
static int exact_norm(const char *s, size_t n, int lower, nlp_buf *b, const char **out, size_t *out_len)
{
    n = nlp_py_rstrip(s, n);
    size_t a = nlp_py_lstrip(s, n);
    s += a, n -= a;
    if (lower) {
        nlp_buf_reset(b);
        if (nlp_py_lower(s, n, b) || nlp_buf_reserve(b, 1)) return NLP_ENOMEM;
        s = b->data, n = b->len;
    }
    *out = s, *out_len = n;
    return NLP_OK;
}

static int exact_segment(nlp_metric *m, const char *hyp, size_t hyp_len, const char *const *refs,
                         const size_t *ref_lens, int nrefs, double *stats)
{
    const int lower = m->p.exact.lowercase;
    const char *h, *r;
    size_t hn, rn;
    stats[0] = 0, stats[1] = 1;
    if (exact_norm(hyp, hyp_len, lower, &m->h, &h, &hn)) return NLP_ENOMEM;
    for (int k = 0; k < nrefs; k++) {
        if (exact_norm(refs[k], ref_lens[k], lower, &m->r, &r, &rn)) return NLP_ENOMEM;
        if (rn == hn && (hn == 0 || memcmp(r, h, hn) == 0)) {
            stats[0] = 1;
            break;
        }
    }
    return NLP_OK;
}

int nlp_metric_segment(nlp_metric *m, const char *hyp, size_t hyp_len, const char *const *refs,
                       const size_t *ref_lens, int nrefs, double *stats)
{
    switch (m->p.kind) {
    case NLP_METRIC_EXACT: return exact_segment(m, hyp, hyp_len, refs, ref_lens, nrefs, stats);
    case NLP_METRIC_BLEU: return nlp_bleu_segment(m->bleu, hyp, hyp_len, refs, ref_lens, nrefs, stats);
    case NLP_METRIC_CHRF: return nlp_chrf_segment(m->chrf, hyp, hyp_len, refs, ref_lens, nrefs, stats);
    case NLP_METRIC_TER: return nlp_ter_segment(m->ter, hyp, hyp_len, refs, ref_lens, nrefs, stats);
    }
    return NLP_EINVAL;
}

/* BLEUScore's verbose part: "p1/.../pN (BP = b ratio = r hyp_len = c ref_len = l)" */
static void bleu_verbose(const nlp_bleu_result *r, char *out, size_t size)
{
    size_t k = 0;
    for (int n = 0; n < r->order && k < size; n++)
        k += (size_t)snprintf(out + k, size - k, "%s%.1f", n ? "/" : "", r->precisions[n]);
    if (k < size)
        snprintf(out + k, size - k, " (BP = %.3f ratio = %.3f hyp_len = %.0f ref_len = %.0f)", r->bp, r->ratio,
                 r->sys_len, r->ref_len);
}

void nlp_metric_score(const nlp_metric *m, const double *stats, nlp_score *out)
{
    memset(out, 0, sizeof *out);
    strcpy(out->name, m->name);
    out->mean = out->ci = -1.0;
    switch (m->p.kind) {
    case NLP_METRIC_BLEU:
        nlp_bleu_compute(&m->p.bleu, stats, &out->bleu);
        out->score = out->bleu.score;
        bleu_verbose(&out->bleu, out->verbose, sizeof out->verbose);
        break;
    case NLP_METRIC_CHRF: out->score = nlp_chrf_compute(&m->p.chrf, stats); break;
    case NLP_METRIC_TER: out->score = nlp_ter_compute(stats); break;
    case NLP_METRIC_EXACT:
        out->counted = 1, out->correct = stats[0], out->lines = stats[1];
        out->score = stats[1] > 0 ? 100.0 * stats[0] / stats[1] : 0.0;
        snprintf(out->verbose, sizeof out->verbose, "(correct = %.0f lines = %.0f)", stats[0], stats[1]);
        break;
    }
}

void nlp_metric_signature(const nlp_metric *m, int nrefs, const nlp_sig_test *test, nlp_sig *s)
{
    const nlp_metric_params *p = &m->p;
    s->n = 0;
    nlp_sig_add(s, "nrefs", "#", "%d", nrefs);
    if (test && test->bs > 0) nlp_sig_add(s, "bs", "bs", "%ld", test->bs);
    if (test && test->ar > 0) nlp_sig_add(s, "ar", "ar", "%ld", test->ar);
    if (test && test->seed) nlp_sig_add(s, "seed", "rs", "%s", test->seed);
    switch (p->kind) {
    case NLP_METRIC_BLEU: {
        const nlp_bleu_params *b = &p->bleu;
        nlp_sig_add(s, "case", "c", "%s", b->lowercase ? "lc" : "mixed");
        nlp_sig_add(s, "eff", "e", "%s", b->effective_order ? "yes" : "no");
        nlp_sig_add(s, "tok", "tok", "%s", nlp_evtok_names[b->tokenize]);
        double sv = isnan(b->smooth_value) ? nlp_bleu_smooth_default(b->smooth) : b->smooth_value;
        if (b->smooth == NLP_BLEU_SMOOTH_FLOOR || b->smooth == NLP_BLEU_SMOOTH_ADDK)
            nlp_sig_add(s, "smooth", "s", "%s[%.2f]", nlp_bleu_smooth_names[b->smooth], sv);
        else
            nlp_sig_add(s, "smooth", "s", "%s", nlp_bleu_smooth_names[b->smooth]);
        break;
    }
    case NLP_METRIC_CHRF: {
        const nlp_chrf_params *c = &p->chrf;
        nlp_sig_add(s, "case", "c", "%s", c->lowercase ? "lc" : "mixed");
        nlp_sig_add(s, "eff", "e", "%s", c->eps_smoothing ? "no" : "yes");
        nlp_sig_add(s, "nc", "nc", "%d", c->char_order);
        nlp_sig_add(s, "nw", "nw", "%d", c->word_order);
        nlp_sig_add(s, "space", "s", "%s", c->whitespace ? "yes" : "no");
        break;
    }
    case NLP_METRIC_TER: {
        const nlp_ter_params *t = &p->ter;
        nlp_sig_add(s, "case", "c", "%s", t->case_sensitive ? "mixed" : "lc");
        nlp_sig_add(s, "tok", "t", "tercom");
        nlp_sig_add(s, "norm", "nr", "%s", t->normalized ? "yes" : "no");
        nlp_sig_add(s, "punct", "pn", "%s", t->no_punct ? "no" : "yes");
        nlp_sig_add(s, "asian", "as", "%s", t->asian_support ? "yes" : "no");
        break;
    }
    case NLP_METRIC_EXACT:
        nlp_sig_add(s, "case", "c", "%s", p->exact.lowercase ? "lc" : "mixed");
        break;
    }
    nlp_sig_add(s, "version", "v", "%s", NLP_SACREBLEU_VERSION);
}
