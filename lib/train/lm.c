/*
 * lm.c — the causal language-modelling task. See lm.h.
 */
#include "train/lm.h"
#include "base/err.h"
#include "base/mem.h"
#include "train/dist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int lm_next(void *ctx, nlp_rng *r, nlp_batch *b)
{
    nlp_lm_task *t = ctx;
    int rc = nlp_corpus_windows(t->train, r, t->B, t->T, t->ids);
    if (rc) return rc;
    memset(b, 0, sizeof *b);
    b->B = t->B, b->T = t->T;
    b->ids = b->labels = t->ids;
    return 0;
}

static int lm_eval(void *ctx, nlp_model *m, nlp_eval *out)
{
    nlp_lm_task *t = ctx;
    return nlp_lm_score(m, t->valid, t->B, t->T, out, NULL);
}

static const char *const lm_names[] = {"loss", "ppl", "bpb", NULL};

int nlp_lm_task_init(nlp_lm_task *t, nlp_task *task, nlp_corpus *train, const nlp_corpus *valid, int B, int T)
{
    memset(t, 0, sizeof *t);
    if (train->n < (size_t)T)
        return nlp_error(NLP_EDATA, "the training data holds %zu tokens, fewer than one window of %d", train->n, T);
    if (valid && valid->n < 2)
        return nlp_error(NLP_EDATA, "the validation data holds %zu tokens: nothing to predict", valid->n);
    t->train = train, t->valid = valid, t->B = B, t->T = T;
    if (!(t->ids = nlp_malloc((size_t)B * T * sizeof *t->ids))) return NLP_ENOMEM;
    memset(task, 0, sizeof *task);
    task->ctx = t;
    task->next_batch = lm_next;
    task->evaluate = valid ? lm_eval : NULL;
    task->eval_names = lm_names;
    return 0;
}

void nlp_lm_task_free(nlp_lm_task *t)
{
    free(t->ids);
    t->ids = NULL;
}

int nlp_lm_score(nlp_model *m, const nlp_corpus *c, int B, int T, nlp_eval *out, uint64_t *ntok)
{
    size_t nw = nlp_corpus_eval_windows(c, T);
    int32_t *buf = nlp_malloc((size_t)B * T * sizeof *buf);
    if (!buf) return NLP_ENOMEM;
    double nll = 0, n = 0;
    int rc = 0;
    const int R = nlp_dist_size(), me = nlp_dist_rank();
    for (size_t k = 0, batch = 0; k < nw && !rc; batch++) {
        int len = 0, rows = 0;
        /* windows of the same length go together (only the last one is shorter, so rows of
         * stride T are packed) */
        while (rows < B && k + rows < nw) {
            int l2;
            if ((rc = nlp_corpus_eval_window(c, T, k + rows, buf + (size_t)rows * T, &l2))) break;
            if (!rows) len = l2;
            else if (l2 != len) break;
            rows++;
        }
        if (rc) break;
        k += (size_t)rows;
        if (!nlp_dist_mine(batch, me, R)) continue; /* another rank's share of the validation */
        nlp_batch b = {.B = rows, .T = len, .ids = buf, .labels = buf};
        nlp_losses l;
        if ((rc = nlp_model_forward(m, &b, &l))) break;
        nll += l.loss * l.tokens;
        n += l.tokens;
    }
    free(buf);
    double sums[2] = {nll, n};
    if (!rc) rc = nlp_dist_sum_f64(sums, 2);
    if (rc) return rc;
    nll = sums[0], n = sums[1];
    double loss = n ? nll / n : NAN;
    out->v[0] = loss;
    out->v[1] = exp(loss);
    out->v[2] = c->bytes && c->n ? nll / log(2.0) / ((double)c->bytes * n / (double)c->n) : NAN;
    if (ntok) *ntok = (uint64_t)n;
    return 0;
}
