/*
 * bleu.c — BLEU statistics and score. See bleu.h.
 */
#include "eval/bleu.h"
#include "base/err.h"
#include "base/mem.h"
#include "eval/ngram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const nlp_bleu_smooth_names[] = {"exp", "floor", "add-k", "none", NULL};

double nlp_bleu_smooth_default(nlp_bleu_smooth m)
{
    return m == NLP_BLEU_SMOOTH_FLOOR ? 0.1 : m == NLP_BLEU_SMOOTH_ADDK ? 1.0 : NAN;
}

nlp_bleu_params nlp_bleu_defaults(void)
{
    return (nlp_bleu_params){NLP_EVTOK_13A, 0, NLP_BLEU_SMOOTH_EXP, NAN, 4, 0};
}

/* utils.my_log: log with log(0) floored to -9999999999 */
static double my_log(double x) { return x == 0.0 ? -9999999999.0 : log(x); }

/* f32: the statistics are numpy float32 values (sacreBLEU's resampling):
 * add-k's in-place additions round to float32 */
static void compute(const nlp_bleu_params *p, const double *stats, nlp_bleu_result *r, int f32)
{
    int N = p->max_order;
    double sv = isnan(p->smooth_value) ? nlp_bleu_smooth_default(p->smooth) : p->smooth_value;
    memset(r, 0, sizeof *r);
    r->order = N;
    r->sys_len = floor(stats[0]);
    r->ref_len = floor(stats[1]);
    for (int n = 0; n < N; n++) {
        r->counts[n] = stats[2 + n];
        r->totals[n] = stats[2 + N + n];
    }
    double c = r->sys_len, rl = r->ref_len;
    r->bp = c < rl ? (c > 0 ? exp(1.0 - rl / c) : 0.0) : 1.0;
    r->ratio = rl != 0 ? c / rl : 0.0;

    int any = 0;
    for (int n = 0; n < N; n++) any |= r->counts[n] != 0;
    if (!any) return; /* score 0, precisions 0 (sacreBLEU #141) */

    double smooth_mteval = 1.0;
    int eff = N;
    for (int n = 1; n <= N; n++) {
        if (p->smooth == NLP_BLEU_SMOOTH_ADDK && n > 1) {
            r->counts[n - 1] += sv;
            r->totals[n - 1] += sv;
            if (f32) {
                r->counts[n - 1] = (float)r->counts[n - 1];
                r->totals[n - 1] = (float)r->totals[n - 1];
            }
        }
        if (r->totals[n - 1] == 0) break;
        if (p->effective_order) eff = n;
        if (r->counts[n - 1] == 0) {
            if (p->smooth == NLP_BLEU_SMOOTH_EXP) {
                smooth_mteval *= 2;
                r->precisions[n - 1] = 100.0 / (smooth_mteval * r->totals[n - 1]);
            } else if (p->smooth == NLP_BLEU_SMOOTH_FLOOR) {
                r->precisions[n - 1] = 100.0 * sv / r->totals[n - 1];
            }
        } else {
            r->precisions[n - 1] = 100.0 * r->counts[n - 1] / r->totals[n - 1];
        }
    }
    /* Python's sum() of a list of floats, left to right (CPython up to
     * 3.11; the vectors were made that way: bit-exact on all of them, where
     * 3.12's compensated sum is not) */
    double sum = 0;
    for (int n = 0; n < eff; n++) sum += my_log(r->precisions[n]);
    r->score = r->bp * exp(sum / eff);
}

void nlp_bleu_compute(const nlp_bleu_params *p, const double *stats, nlp_bleu_result *r) { compute(p, stats, r, 0); }

void nlp_bleu_compute_f32(const nlp_bleu_params *p, const double *stats, nlp_bleu_result *r)
{
    compute(p, stats, r, 1);
}

// --- segment statistics

struct nlp_bleu {
    nlp_bleu_params p;
    nlp_evtok_buf sb;
    nlp_buf htext, rtext;
    nlp_units hu, ru;
    nlp_ngrams *g;
    int64_t match[NLP_BLEU_MAX_ORDER];
};

nlp_bleu *nlp_bleu_new(const nlp_bleu_params *p)
{
    NLP_ASSERT(p->max_order >= 1 && p->max_order <= NLP_BLEU_MAX_ORDER);
    nlp_bleu *b = nlp_calloc(1, sizeof *b);
    if (!b) return NULL;
    b->p = *p;
    if (!(b->g = nlp_ngrams_new())) {
        free(b);
        return NULL;
    }
    return b;
}

void nlp_bleu_free(nlp_bleu *b)
{
    if (!b) return;
    nlp_evtok_buf_free(&b->sb);
    nlp_buf_free(&b->htext);
    nlp_buf_free(&b->rtext);
    nlp_units_free(&b->hu);
    nlp_units_free(&b->ru);
    nlp_ngrams_free(b->g);
    free(b);
}

int nlp_bleu_segment(nlp_bleu *b, const char *hyp, size_t hyp_len, const char *const *refs,
                     const size_t *ref_lens, int nrefs, double *stats)
{
    const nlp_bleu_params *p = &b->p;
    int N = p->max_order;
    if (nlp_evtok_segment(p->tokenize, p->lowercase, hyp, hyp_len, &b->htext, &b->sb) ||
        nlp_units_words(&b->hu, b->htext.data, b->htext.len) || nlp_ngrams_load(b->g, &b->hu, N))
        return NLP_ENOMEM;
    size_t hl = b->hu.n;
    long closest = -1, closest_diff = -1;
    for (int r = 0; r < nrefs; r++) {
        if (nlp_evtok_segment(p->tokenize, p->lowercase, refs[r], ref_lens[r], &b->rtext, &b->sb) ||
            nlp_units_words(&b->ru, b->rtext.data, b->rtext.len))
            return NLP_ENOMEM;
        nlp_ngrams_probe(b->g, &b->ru, b->match);
        long rl = (long)b->ru.n, diff = labs((long)hl - rl);
        if (closest_diff < 0 || diff < closest_diff || (diff == closest_diff && rl < closest)) {
            closest_diff = diff;
            closest = rl;
        }
    }
    int64_t correct[NLP_BLEU_MAX_ORDER];
    nlp_ngrams_clipped(b->g, correct);
    stats[0] = (double)hl;
    stats[1] = (double)(closest < 0 ? 0 : closest);
    for (int n = 0; n < N; n++) {
        stats[2 + n] = (double)correct[n];
        stats[2 + N + n] = hl >= (size_t)(n + 1) ? (double)(hl - (size_t)n) : 0.0;
    }
    return NLP_OK;
}
