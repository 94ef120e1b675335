/*
 * choice.c — multiple-choice data, layout, scoring and the training task.
 * See choice.h.
 */
#include "train/choice.h"
#include "base/err.h"
#include "base/mem.h"
#include "train/data.h"
#include "train/dist.h"
#include "train/mt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define IGNORE (-100)

// --- reading

static int count_fields(const char *s, size_t n)
{
    int f = 1;
    for (size_t i = 0; i < n; i++) f += s[i] == '\t';
    return f;
}

static const char *form(int labelled)
{
    return labelled ? "label<TAB>context<TAB>choice_0<TAB>choice_1..." : "context<TAB>choice_0<TAB>choice_1...";
}

/* The label: a choice's index in decimal, 0 .. k-1. */
static int parse_label(const char *s, size_t n, int k, int32_t *out)
{
    long v = 0;
    if (!n || n > 9) return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (s[i] - '0');
    }
    if (v >= k) return 0;
    *out = (int32_t)v;
    return 1;
}

int nlp_choice_parse(nlp_choice_data *d, const char *const *line, const size_t *llen, size_t n, const char *path,
                     uint64_t line0, int *k, const nlp_choice_read_opts *o)
{
    memset(d, 0, sizeof *d);
    const int lab = o->labelled ? 1 : 0;
    int want = o->k ? o->k : *k; /* choices per line */
    if (o->k == 1 || o->k < 0) return nlp_error(NLP_EINVAL, "a multiple-choice example needs 2 or more choices, not %d", o->k);
    const char **fld = NULL;
    size_t *fl = NULL;
    int rc = 0;
    /* the choices of every line: those of line 1, or the caller's */
    for (size_t i = 0; i < n && !want; i++) {
        int f = count_fields(line[i], llen[i]);
        if (f - lab - 1 < 2) {
            rc = nlp_error(NLP_EDATA, "'%s' line %llu: %d field%s: expected %s (2 choices or more)", path,
                           (unsigned long long)(line0 + i + 1), f, f == 1 ? "" : "s", form(lab));
            return rc;
        }
        want = f - lab - 1;
    }
    if (!n) {
        d->k = want, d->labelled = lab;
        if (!(d->off = nlp_calloc(1, sizeof *d->off)) || !(d->ids = nlp_malloc(sizeof *d->ids))) rc = NLP_ENOMEM;
        if (rc) nlp_choice_data_free(d);
        return rc;
    }
    const size_t K1 = (size_t)want + 1;
    d->k = want, d->labelled = lab;
    if (!(fld = nlp_malloc(n * K1 * sizeof *fld)) || !(fl = nlp_malloc(n * K1 * sizeof *fl)) ||
        (lab && !(d->label = nlp_malloc(n * sizeof *d->label)))) {
        rc = NLP_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const char *s = line[i], *e = s + llen[i];
        const unsigned long long ln = (unsigned long long)(line0 + i + 1);
        if (!llen[i]) {
            rc = nlp_error(NLP_EDATA, "'%s' line %llu: empty line: every line is an example (%s)", path, ln, form(lab));
            goto out;
        }
        const int f = count_fields(s, llen[i]);
        if (f - lab - 1 != want) {
            if (f - lab - 1 < 1)
                rc = nlp_error(NLP_EDATA, "'%s' line %llu: %d field%s: expected %s", path, ln, f, f == 1 ? "" : "s",
                               form(lab));
            else if (o->k)
                rc = nlp_error(NLP_EDATA, "'%s' line %llu has %d choice%s where %d are expected (%s)", path, ln,
                               f - lab - 1, f - lab - 1 == 1 ? "" : "s", want, form(lab));
            else
                rc = nlp_error(NLP_EDATA, "'%s' line %llu has %d choice%s but line %llu has %d: every line must have "
                               "the same number of choices (%s)", path, ln, f - lab - 1, f - lab - 1 == 1 ? "" : "s",
                               (unsigned long long)(*k ? 1 : line0 + 1), want, form(lab));
            goto out;
        }
        const char *p = s, *lf = s;
        size_t lfl = 0;
        for (int j = 0; j < f; j++) {
            const char *tab = j + 1 < f ? memchr(p, '\t', (size_t)(e - p)) : e;
            const size_t m = (size_t)(tab - p);
            if (!m) {
                if (j < lab) rc = nlp_error(NLP_EDATA, "'%s' line %llu: empty label", path, ln);
                else if (j == lab) rc = nlp_error(NLP_EDATA, "'%s' line %llu: empty context", path, ln);
                else rc = nlp_error(NLP_EDATA, "'%s' line %llu: empty choice %d", path, ln, j - lab - 1);
                goto out;
            }
            if (j < lab) lf = p, lfl = m;
            else fld[(size_t)(j - lab) * n + i] = p, fl[(size_t)(j - lab) * n + i] = m; /* column-major */
            p = tab + 1;
        }
        if (lab && !parse_label(lf, lfl, want, &d->label[i])) {
            rc = nlp_error(NLP_EDATA, "'%s' line %llu: label '%.*s' is not the index of a choice (0 to %d)", path, ln,
                           (int)(lfl > 40 ? 40 : lfl), lf, want - 1);
            goto out;
        }
    }
    /* each column tokenized (messages name the file's line), then the
     * texts interleaved example by example */
    int32_t *col[64] = {0}, **cols = K1 <= 64 ? col : nlp_calloc(K1, sizeof *cols);
    size_t *cof[64] = {0}, **coffs = K1 <= 64 ? cof : nlp_calloc(K1, sizeof *coffs);
    if (!cols || !coffs) rc = NLP_ENOMEM;
    size_t total = 0;
    for (size_t j = 0; j < K1 && !rc; j++) {
        rc = nlp_tokenize_lines_at(o->tk, fld + j * n, fl + j * n, n, path, line0, o->threads, &cols[j], &coffs[j],
                                   &d->repaired);
        if (!rc) total += coffs[j][n];
    }
    if (!rc && (!(d->ids = nlp_malloc((total ? total : 1) * sizeof *d->ids)) ||
                !(d->off = nlp_malloc((n * K1 + 1) * sizeof *d->off))))
        rc = NLP_ENOMEM;
    if (!rc) {
        size_t at = 0;
        d->off[0] = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < K1; j++) {
                const size_t a = coffs[j][i], b = coffs[j][i + 1];
                memcpy(d->ids + at, cols[j] + a, (b - a) * sizeof *d->ids);
                at += b - a;
                d->off[i * K1 + j + 1] = at;
            }
        d->n = n;
        d->tokens = total;
        *k = want;
    }
    for (size_t j = 0; cols && coffs && j < K1; j++) free(cols[j]), free(coffs[j]);
    if (cols != col) free(cols);
    if (coffs != cof) free(coffs);
out:
    free(fld), free(fl);
    if (rc) nlp_choice_data_free(d);
    return rc;
}

/* dst += src (the next block's examples), src emptied. */
static int append(nlp_choice_data *dst, nlp_choice_data *src, size_t *icap, size_t *ocap, size_t *lcap)
{
    const size_t K1 = (size_t)src->k + 1, base = dst->n * K1, at = base ? dst->off[base] : 0, add = src->off[src->n * K1];
    if (nlp_grow(&dst->ids, icap, at + add + 1, sizeof *dst->ids) ||
        nlp_grow(&dst->off, ocap, base + src->n * K1 + 1, sizeof *dst->off) ||
        (src->labelled && nlp_grow(&dst->label, lcap, dst->n + src->n + 1, sizeof *dst->label)))
        return NLP_ENOMEM;
    if (add) memcpy(dst->ids + at, src->ids, add * sizeof *dst->ids);
    dst->off[0] = 0;
    for (size_t j = 1; j <= src->n * K1; j++) dst->off[base + j] = at + src->off[j];
    if (src->labelled && src->n) memcpy(dst->label + dst->n, src->label, src->n * sizeof *dst->label);
    dst->n += src->n, dst->k = src->k;
    dst->repaired += src->repaired, dst->tokens += src->tokens;
    return 0;
}

int nlp_choice_read(nlp_choice_data *d, const char *path, const nlp_choice_read_opts *o)
{
    memset(d, 0, sizeof *d);
    nlp_choice_data part = {0};
    nlp_text_blocks blk;
    const char *text;
    char **line = NULL;
    size_t *llen = NULL, len, nl, icap = 0, ocap = 0, lcap = 0;
    uint64_t first;
    int k = 0, rc;
    if ((rc = nlp_text_blocks_open(&blk, path))) return rc;
    blk.max_line = o->max_line;
    blk.checked = 1; /* the fields say what is wrong with a file */
    d->labelled = o->labelled != 0, d->k = o->k;
    while ((rc = nlp_text_blocks_next(&blk, &text, &len, &first)) == 1) {
        free(line), free(llen);
        line = NULL, llen = NULL;
        if ((rc = nlp_split_lines((char *)text, len, &line, &llen, &nl)) ||
            (rc = nlp_choice_parse(&part, (const char *const *)line, llen, nl, path, first, &k, o)) ||
            (rc = append(d, &part, &icap, &ocap, &lcap)))
            goto out;
        nlp_choice_data_free(&part);
    }
    if (rc < 0) goto out;
    rc = 0;
    if ((!d->off && !(d->off = nlp_calloc(1, sizeof *d->off))) || (!d->ids && !(d->ids = nlp_malloc(sizeof *d->ids))))
        rc = NLP_ENOMEM;
out:
    nlp_text_blocks_close(&blk);
    nlp_choice_data_free(&part);
    free(line), free(llen);
    if (rc) nlp_choice_data_free(d);
    return rc;
}

void nlp_choice_data_free(nlp_choice_data *d)
{
    free(d->label), free(d->ids), free(d->off);
    memset(d, 0, sizeof *d);
}

// --- layout

static inline const int32_t *text(const nlp_choice_data *d, size_t i, int j, size_t *n)
{
    const size_t at = i * ((size_t)d->k + 1) + (size_t)j;
    *n = d->off[at + 1] - d->off[at];
    return d->ids + d->off[at];
}

size_t nlp_choice_truncated(const nlp_cls_encoder *e, const nlp_choice_data *d)
{
    size_t cut = 0, nc, nx;
    for (size_t i = 0; i < d->n; i++) {
        text(d, i, 0, &nc);
        int any = 0;
        for (int c = 0; c < d->k && !any; c++) {
            text(d, i, 1 + c, &nx);
            any = (size_t)nlp_cls_encoded_len(e, nc, nx, 1) < nc + nx + 3;
        }
        cut += (size_t)any;
    }
    return cut;
}

/* Batch arrays for B examples of k rows of T positions. */
static int32_t *batch_buf(int B, int k, int T)
{
    const size_t R = (size_t)B * k;
    return nlp_malloc(((size_t)4 * R * T + R + (size_t)B) * sizeof(int32_t));
}

/* Fills b with examples ex[0..n) of d (ex NULL: first, first+1, ...), k
 * rows each, padded to the longest row; lm: GPT's LM labels. */
static int fill(int32_t *buf, const nlp_cls_encoder *e, const nlp_choice_data *d, const uint32_t *ex, size_t first,
                int n, int lm, nlp_batch *b)
{
    const int k = d->k, R = n * k;
    int W = 0;
    size_t nc, nx;
    for (int j = 0; j < n; j++) {
        const size_t i = ex ? ex[j] : first + (size_t)j;
        text(d, i, 0, &nc);
        for (int c = 0; c < k; c++) {
            text(d, i, 1 + c, &nx);
            int l = nlp_cls_encoded_len(e, nc, nx, 1);
            if (l > W) W = l;
        }
    }
    const size_t nw = (size_t)R * W;
    int32_t *ids = buf, *type = ids + nw, *mask = type + nw, *lab = mask + nw, *cp = lab + nw, *cl = cp + R;
    for (int j = 0; j < n; j++) {
        const size_t i = ex ? ex[j] : first + (size_t)j;
        const int32_t *ctx = text(d, i, 0, &nc);
        for (int c = 0; c < k; c++) {
            const int32_t *x = text(d, i, 1 + c, &nx);
            const size_t r = (size_t)j * k + (size_t)c, o = r * W;
            int rc = nlp_cls_encode(e, ctx, nc, x, nx, W, ids + o, type + o, mask + o, lab + o, cp + r);
            if (rc < 0) return rc;
        }
        if (d->labelled) cl[j] = d->label[i];
    }
    memset(b, 0, sizeof *b);
    b->B = R, b->T = W;
    b->choices = k;
    b->ids = ids;
    if (e->kind == NLP_CLS_BERT) {
        b->type_ids = type, b->mask = mask;
    } else {
        b->cls_pos = cp;
        if (lm) b->labels = lab;
    }
    if (d->labelled) b->cls_labels = cl;
    return 0;
}

// --- scoring

/* That a model of cfg reads e's inputs as multiple choice. */
static int check_model(const nlp_model_config *cfg, const nlp_cls_encoder *e, const nlp_choice_data *d)
{
    if (cfg->num_labels != 1 || cfg->head != NLP_HEAD_SEQUENCE)
        return nlp_error(NLP_EINVAL, "multiple choice needs a head of one unit (num-labels 1), the model has %d",
                         cfg->num_labels);
    if ((e->kind == NLP_CLS_BERT) != (cfg->arch == NLP_ARCH_BERT) ||
        (e->kind == NLP_CLS_GPT) != nlp_arch_is_lm(cfg->arch))
        return nlp_error(NLP_EINVAL, "%s inputs for a %s model", e->kind == NLP_CLS_BERT ? "BERT" : "GPT",
                         nlp_arch_name(cfg->arch));
    if (e->T > nlp_model_config_max_len(cfg))
        return nlp_error(NLP_EINVAL, "inputs of %d positions for a model of %d", e->T, cfg->max_positions);
    if (e->kind == NLP_CLS_BERT && cfg->type_vocab_size < 2)
        return nlp_error(NLP_EINVAL, "a context and a choice need 2 token types, the model has %d", cfg->type_vocab_size);
    if (d && d->k < 2) return nlp_error(NLP_EDATA, "examples of %d choice%s", d->k, d->k == 1 ? "" : "s");
    return 0;
}

int nlp_choice_predict(nlp_model *m, const nlp_cls_encoder *e, const nlp_choice_data *d, int B, int32_t *pred,
                       float *prob, float *probs, uint64_t *correct, double *loss)
{
    if (loss) *loss = NAN;
    if (B < 1) return nlp_error(NLP_EINVAL, "a batch needs at least 1 example, not %d", B);
    int rc = check_model(nlp_model_cfg(m), e, d);
    if (rc) return rc;
    const int k = d->k;
    int32_t *buf = batch_buf(B, k, e->T), *best = nlp_malloc((size_t)B * sizeof *best);
    if (!buf || !best) {
        free(buf), free(best);
        return NLP_ENOMEM;
    }
    nlp_model_set_training(m, 0);
    const int shared = !pred && !prob && !probs && nlp_dist_size() > 1;
    const int R = shared ? nlp_dist_size() : 1, me = shared ? nlp_dist_rank() : 0;
    double nll = 0, ok = 0;
    for (size_t i = 0, batch = 0; i < d->n && !rc; i += (size_t)B, batch++) {
        int n = d->n - i < (size_t)B ? (int)(d->n - i) : B;
        if (!nlp_dist_mine(batch, me, R)) continue;
        nlp_batch b;
        if ((rc = fill(buf, e, d, NULL, i, n, 0, &b))) break;
        b.cls_labels = NULL; /* the loss comes from the scores: no backward follows */
        if ((rc = nlp_model_forward(m, &b, NULL))) break;
        const float *scores = nlp_model_cls_logits(m); /* [n, k]: one per row */
        if (!scores) {
            rc = nlp_error(NLP_EINVAL, "the model gave no scores");
            break;
        }
        uint64_t cm_ok = 0;
        rc = nlp_cls_score_logits(scores, n, k, d->labelled ? d->label + i : NULL, best, prob ? prob + i : NULL,
                                  probs ? probs + i * (size_t)k : NULL, NULL, &nll);
        for (int j = 0; !rc && j < n; j++) {
            if (pred) pred[i + (size_t)j] = best[j];
            if (d->labelled) cm_ok += best[j] == d->label[i + (size_t)j];
        }
        ok += (double)cm_ok;
    }
    free(buf), free(best);
    if (!rc && shared) {
        double v[2] = {nll, ok};
        if (!(rc = nlp_dist_sum_f64(v, 2))) nll = v[0], ok = v[1];
    }
    if (!rc && correct) *correct = (uint64_t)ok;
    if (!rc && loss && d->labelled && d->n) *loss = nll / (double)d->n;
    return rc;
}

// --- the training task

static int choice_next(void *ctx, nlp_rng *r, nlp_batch *b)
{
    nlp_choice_task *t = ctx;
    const uint32_t *ex;
    int n = nlp_epochs_next(&t->ep, r, t->B, &ex);
    return fill(t->buf, &t->enc, t->train, ex, 0, n, 1, b);
}

static void choice_get_state(void *ctx, uint64_t s[4])
{
    nlp_choice_task *t = ctx;
    nlp_epochs_get_state(&t->ep, s);
}

static int choice_set_state(void *ctx, const uint64_t s[4])
{
    nlp_choice_task *t = ctx;
    return nlp_epochs_set_state(&t->ep, s, "examples");
}

static int choice_eval(void *ctx, nlp_model *m, nlp_eval *out)
{
    nlp_choice_task *t = ctx;
    for (int i = 0; i < NLP_TRAIN_MAX_METRICS; i++) out->v[i] = NAN;
    uint64_t ok = 0;
    double loss;
    int rc = nlp_choice_predict(m, &t->enc, t->valid, t->B, NULL, NULL, NULL, &ok, &loss);
    if (rc) return rc;
    out->v[0] = loss;
    out->v[1] = (double)ok / (double)t->valid->n;
    return 0;
}

/* Figure 0 is the loss: the loop falls back on it when accuracy is NaN. */
static const char *const choice_names[] = {"loss", "accuracy", NULL};

int nlp_choice_task_init(nlp_choice_task *t, nlp_task *task, const nlp_choice_data *train,
                         const nlp_choice_data *valid, const nlp_cls_encoder *e, const nlp_model_config *cfg, int B)
{
    memset(t, 0, sizeof *t);
    int rc;
    if (B < 1) return nlp_error(NLP_EINVAL, "a batch needs at least 1 example, not %d", B);
    if (!train->labelled) return nlp_error(NLP_EDATA, "the training data has no labels");
    if (!train->n) return nlp_error(NLP_EDATA, "the training data holds no example");
    if (valid) {
        if (!valid->labelled) return nlp_error(NLP_EDATA, "the validation data has no labels");
        if (!valid->n) return nlp_error(NLP_EDATA, "the validation data holds no example");
        if (valid->k != train->k)
            return nlp_error(NLP_EDATA, "the training data has %d choices per example, the validation data %d",
                             train->k, valid->k);
    }
    if (e->T < 4) return nlp_error(NLP_EINVAL, "inputs of %d positions: a context and a choice need at least 4", e->T);
    if ((rc = check_model(cfg, e, train))) return rc;
    t->train = train, t->valid = valid, t->enc = *e, t->B = B;
    if ((rc = nlp_epochs_init(&t->ep, train->n, "training examples"))) return rc;
    if (!(t->buf = batch_buf(B, train->k, e->T))) {
        nlp_choice_task_free(t);
        return NLP_ENOMEM;
    }
    memset(task, 0, sizeof *task);
    task->ctx = t;
    task->next_batch = choice_next;
    task->evaluate = valid ? choice_eval : NULL;
    task->eval_names = choice_names;
    task->best_metric = 1, task->higher_is_better = 1;
    task->get_state = choice_get_state;
    task->set_state = choice_set_state;
    return 0;
}

void nlp_choice_task_free(nlp_choice_task *t)
{
    nlp_epochs_free(&t->ep);
    free(t->buf);
    memset(t, 0, sizeof *t);
}
