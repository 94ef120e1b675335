/*
 * mt.c — parallel text and the translation task. See mt.h.
 */
#include "train/mt.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "text/utf8.h"
#include "train/dist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// --- reading

/* Line starts and lengths (without the newline and a CR before it); a
 * last line without a newline counts, an empty file has no line. */
static int split_lines(char *text, size_t len, char ***line, size_t **llen, size_t *n)
{
    size_t cap = 0, k = 0;
    char **l = NULL;
    size_t *ll = NULL, lcap = 0;
    for (size_t i = 0; i < len;) {
        if (nlp_grow(&l, &cap, k + 1, sizeof *l) || nlp_grow(&ll, &lcap, k + 1, sizeof *ll)) {
            free(l), free(ll);
            return NLP_ENOMEM;
        }
        const char *e = memchr(text + i, '\n', len - i);
        size_t end = e ? (size_t)(e - text) : len, m = end - i;
        if (m && text[i + m - 1] == '\r') m--;
        l[k] = text + i, ll[k] = m, k++;
        i = e ? end + 1 : len;
    }
    *line = l, *llen = ll, *n = k;
    return 0;
}

int nlp_tokenize_lines(const nlp_tokenizer *tk, const char *const *line, const size_t *len, size_t n,
                       const char *path, int threads, int32_t **ids_out, size_t **off_out, uint64_t *repaired)
{
    if (threads <= 0) threads = nlp_cpu_count();
    size_t nchunk = (size_t)threads * 8;
    if (nchunk > n) nchunk = n ? n : 1;
    int rc = 0;
    nlp_ids *out = nlp_calloc(nchunk, sizeof *out);
    size_t *off = nlp_malloc((n + 1) * sizeof *off); /* per line: length, then prefix sums */
    uint64_t *fixed = nlp_calloc(nchunk, sizeof *fixed);
    int *err = nlp_calloc(nchunk, sizeof *err);
    char **msg = nlp_calloc(nchunk, sizeof *msg);
    size_t *bad = nlp_calloc(nchunk, sizeof *bad);
    int32_t *ids = NULL;
    if (!out || !off || !fixed || !err || !msg || !bad) {
        rc = NLP_ENOMEM;
        goto done;
    }
#pragma omp parallel num_threads(threads)
    {
        nlp_tok_state *st = nlp_tok_state_new(tk);
        nlp_buf fix = {0};
#pragma omp for schedule(dynamic, 1)
        for (size_t k = 0; k < nchunk; k++) {
            if (!st) {
                err[k] = NLP_ENOMEM;
                continue;
            }
            size_t a = n * k / nchunk, b = n * (k + 1) / nchunk;
            for (size_t i = a; i < b && !err[k]; i++) {
                const char *s = line[i];
                size_t m = len[i];
                size_t before = out[k].n;
                if (m && !nlp_utf8_valid(s, m, NULL)) {
                    nlp_buf_reset(&fix);
                    if (nlp_utf8_repair(s, m, &fix, NULL)) {
                        err[k] = NLP_ENOMEM;
                        break;
                    }
                    s = fix.data, m = fix.len;
                    fixed[k]++;
                }
                int r = m ? nlp_tokenizer_encode_ids(tk, st, s, m, 0, &out[k]) : 0;
                if (r) {
                    err[k] = r, bad[k] = i;
                    msg[k] = nlp_strdup(nlp_errmsg());
                }
                off[i] = out[k].n - before;
            }
        }
        nlp_buf_free(&fix);
        nlp_tok_state_free(st);
    }
    size_t total = 0;
    for (size_t k = 0; k < nchunk; k++) {
        if (err[k]) {
            rc = msg[k] ? nlp_error(err[k], "'%s' line %zu: %s", path, bad[k] + 1, msg[k]) : err[k];
            goto done;
        }
        total += out[k].n;
    }
    if (!(ids = nlp_malloc((total ? total : 1) * sizeof *ids))) {
        rc = NLP_ENOMEM;
        goto done;
    }
    size_t pos = 0;
    for (size_t k = 0; k < nchunk; k++) {
        if (out[k].n) memcpy(ids + pos, out[k].v, out[k].n * sizeof *ids);
        pos += out[k].n;
        if (repaired) *repaired += fixed[k];
    }
    size_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = off[i];
        off[i] = acc;
        acc += l;
    }
    off[n] = acc;
done:
    for (size_t k = 0; out && k < nchunk; k++) nlp_ids_free(&out[k]);
    for (size_t k = 0; msg && k < nchunk; k++) free(msg[k]);
    free(out), free(fixed), free(err), free(msg), free(bad);
    if (rc) {
        free(off), free(ids);
        return rc;
    }
    *ids_out = ids, *off_out = off;
    return 0;
}

int nlp_pairs_read(nlp_pairs *p, const char *src_path, const char *tgt_path, const nlp_pairs_opts *o)
{
    memset(p, 0, sizeof *p);
    char *st = NULL, *tt = NULL;
    size_t sl, tl, ns = 0, nt = 0;
    char **sline = NULL, **tline = NULL;
    size_t *slen = NULL, *tlen = NULL;
    int32_t *sids = NULL, *tids = NULL;
    size_t *soff = NULL, *toff = NULL;
    const char *tname = tgt_path ? tgt_path : src_path;
    int rc;
    if ((rc = nlp_read_file_lines(src_path, o->max_line, &st, &sl)) ||
        (rc = split_lines(st, sl, &sline, &slen, &ns)))
        goto out;
    if (tgt_path) {
        if ((rc = nlp_read_file_lines(tgt_path, o->max_line, &tt, &tl)) ||
            (rc = split_lines(tt, tl, &tline, &tlen, &nt)))
            goto out;
        if (ns != nt) {
            rc = nlp_error(NLP_EDATA, "'%s' has %zu line%s and '%s' has %zu: the files of a parallel corpus must "
                           "align line by line", src_path, ns, ns == 1 ? "" : "s", tgt_path, nt);
            goto out;
        }
    } else { /* TSV: source<TAB>target */
        nt = ns;
        if (!(tline = nlp_malloc((ns ? ns : 1) * sizeof *tline)) || !(tlen = nlp_malloc((ns ? ns : 1) * sizeof *tlen))) {
            rc = NLP_ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < ns; i++) {
            const char *tab = memchr(sline[i], '\t', slen[i]);
            if (!tab) {
                if (!slen[i]) { /* an empty line: an empty pair */
                    tline[i] = sline[i], tlen[i] = 0;
                    continue;
                }
                rc = nlp_error(NLP_EDATA, "'%s' line %zu: no tab: a TSV of parallel text has 'source<TAB>target' "
                               "lines", src_path, i + 1);
                goto out;
            }
            size_t a = (size_t)(tab - sline[i]);
            tline[i] = (char *)tab + 1, tlen[i] = slen[i] - a - 1;
            if (memchr(tline[i], '\t', tlen[i])) {
                rc = nlp_error(NLP_EDATA, "'%s' line %zu: more than one tab: a TSV of parallel text has "
                               "'source<TAB>target' lines", src_path, i + 1);
                goto out;
            }
            slen[i] = a;
        }
    }
    if ((rc = nlp_tokenize_lines(o->src_tk, (const char *const *)sline, slen, ns, src_path, o->threads, &sids, &soff,
                                 &p->repaired)) ||
        (rc = nlp_tokenize_lines(o->tgt_tk, (const char *const *)tline, tlen, nt, tname, o->threads, &tids, &toff,
                                 &p->repaired)))
        goto out;
    /* filter, compacting in place */
    p->lines = ns;
    if (!(p->src_off = nlp_malloc((ns + 1) * sizeof *p->src_off)) ||
        !(p->tgt_off = nlp_malloc((ns + 1) * sizeof *p->tgt_off)) ||
        !(p->line = nlp_malloc((ns ? ns : 1) * sizeof *p->line)) ||
        (o->keep_text && !(p->ref = nlp_calloc(ns ? ns : 1, sizeof *p->ref)))) {
        rc = NLP_ENOMEM;
        goto out;
    }
    size_t k = 0, spos = 0, tpos = 0;
    p->src_off[0] = p->tgt_off[0] = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t a = soff[i + 1] - soff[i], b = toff[i + 1] - toff[i];
        if (!o->keep_empty && (!a || !b)) {
            p->empty++;
            continue;
        }
        if (o->max_len > 0 && (a + 1 > (size_t)o->max_len || b + 1 > (size_t)o->max_len)) {
            p->too_long++;
            continue;
        }
        memmove(sids + spos, sids + soff[i], a * sizeof *sids);
        memmove(tids + tpos, tids + toff[i], b * sizeof *tids);
        spos += a, tpos += b;
        if ((int)a > p->src_max) p->src_max = (int)a;
        if ((int)b > p->tgt_max) p->tgt_max = (int)b;
        p->line[k] = i + 1;
        if (o->keep_text) {
            char *s = nlp_malloc(tlen[i] + 1);
            if (!s) {
                rc = NLP_ENOMEM;
                goto out;
            }
            memcpy(s, tline[i], tlen[i]);
            s[tlen[i]] = 0;
            p->ref[k] = s;
        }
        k++;
        p->src_off[k] = spos, p->tgt_off[k] = tpos;
    }
    p->n = k;
    p->src = sids, p->tgt = tids, sids = tids = NULL;
    p->src_tokens = spos, p->tgt_tokens = tpos;
out:
    free(st), free(tt), free(sline), free(tline), free(slen), free(tlen);
    free(sids), free(tids), free(soff), free(toff);
    if (rc) nlp_pairs_free(p);
    return rc;
}

void nlp_pairs_free(nlp_pairs *p)
{
    if (p->ref)
        for (size_t i = 0; i < p->n; i++) free(p->ref[i]);
    free(p->ref), free(p->src), free(p->tgt), free(p->src_off), free(p->tgt_off), free(p->line);
    memset(p, 0, sizeof *p);
}

// --- batches

static inline int slen(const nlp_pairs *p, size_t i) { return (int)(p->src_off[i + 1] - p->src_off[i]) + 1; }
static inline int tlen(const nlp_pairs *p, size_t i) { return (int)(p->tgt_off[i + 1] - p->tgt_off[i]) + 1; }

typedef struct key {
    uint32_t t, s, r, i;
} key;

static int key_cmp(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->s != y->s) return x->s < y->s ? -1 : 1;
    if (x->r != y->r) return x->r < y->r ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Cuts pairs idx[0..n) (sorted) into batches within max_tokens: cut[k] is
 * where batch k starts, cut[nb] = n. */
static size_t cut_batches(const nlp_pairs *p, const uint32_t *idx, size_t n, long max_tokens, size_t *cut)
{
    size_t nb = 0, cur = 0;
    long ms = 0, mt = 0;
    for (size_t j = 0; j < n; j++) {
        long s = slen(p, idx[j]), t = tlen(p, idx[j]);
        long ms2 = ms > s ? ms : s, mt2 = mt > t ? mt : t;
        if (cur && (long)(cur + 1) * (ms2 > mt2 ? ms2 : mt2) > max_tokens) {
            cut[nb++] = j - cur;
            cur = 0, ms2 = s, mt2 = t;
        }
        cur++, ms = ms2, mt = mt2;
    }
    if (cur) cut[nb++] = n - cur;
    cut[nb] = n;
    return nb;
}

/* Builds epoch e's batches (1-based) into t->order / t->cut. */
static int build_epoch(nlp_mt_task *t, uint64_t e)
{
    const nlp_pairs *p = t->train;
    size_t n = p->n;
    key *k = nlp_malloc(n * sizeof *k);
    size_t *cut = nlp_malloc((n + 1) * sizeof *cut), *perm = nlp_malloc((n + 1) * sizeof *perm);
    uint32_t *order = nlp_malloc(n * sizeof *order);
    if (!k || !cut || !perm || !order) {
        free(k), free(cut), free(perm), free(order);
        return NLP_ENOMEM;
    }
    nlp_rng base, r;
    nlp_rng_seed(&base, t->seed);
    r = nlp_rng_split(&base, e);
    for (size_t i = 0; i < n; i++) k[i] = (key){(uint32_t)tlen(p, i), (uint32_t)slen(p, i), nlp_rng_u32(&r), (uint32_t)i};
    qsort(k, n, sizeof *k, key_cmp);
    uint32_t *sorted = (uint32_t *)perm; /* scratch: n uint32 fit in n+1 size_t */
    for (size_t i = 0; i < n; i++) sorted[i] = k[i].i;
    size_t nb = cut_batches(p, sorted, n, t->max_tokens, cut);
    /* shuffle the batches, then lay them out in their new order */
    size_t *bo = nlp_malloc(nb * sizeof *bo);
    if (!bo) {
        free(k), free(cut), free(perm), free(order);
        return NLP_ENOMEM;
    }
    for (size_t b = 0; b < nb; b++) bo[b] = b;
    for (size_t b = nb; b > 1; b--) {
        size_t j = (size_t)nlp_rng_below(&r, b), tmp = bo[b - 1];
        bo[b - 1] = bo[j], bo[j] = tmp;
    }
    size_t pos = 0;
    size_t *ncut = (size_t *)k; /* k is free now: n+1 size_t fit in n keys (n >= 1) */
    for (size_t b = 0; b < nb; b++) {
        ncut[b] = pos;
        for (size_t j = cut[bo[b]]; j < cut[bo[b] + 1]; j++) order[pos++] = sorted[j];
    }
    ncut[nb] = pos;
    free(t->order), free(t->cut);
    t->order = order;
    t->cut = nlp_malloc((nb + 1) * sizeof *t->cut);
    if (!t->cut) {
        free(k), free(cut), free(perm), free(bo);
        return NLP_ENOMEM;
    }
    memcpy(t->cut, ncut, (nb + 1) * sizeof *t->cut);
    t->nbatch = nb, t->epoch = e;
    free(k), free(cut), free(perm), free(bo);
    return 0;
}

/* Fills b with pairs idx[0..n) of p, padded. */
static int fill(nlp_mt_task *t, const nlp_pairs *p, const uint32_t *idx, size_t n, nlp_batch *b)
{
    int S = 0, T = 0;
    for (size_t j = 0; j < n; j++) {
        if (slen(p, idx[j]) > S) S = slen(p, idx[j]);
        if (tlen(p, idx[j]) > T) T = tlen(p, idx[j]);
    }
    size_t need = n * ((size_t)S + 2 * (size_t)T);
    if (need > t->buf_cap) {
        free(t->buf);
        if (!(t->buf = nlp_malloc(need * sizeof *t->buf))) {
            t->buf_cap = 0;
            return NLP_ENOMEM;
        }
        t->buf_cap = need;
    }
    int32_t *src = t->buf, *tin = src + n * S, *tout = tin + n * T;
    for (size_t j = 0; j < n; j++) {
        size_t i = idx[j];
        int a = slen(p, i) - 1, c = tlen(p, i) - 1;
        int32_t *s = src + j * S, *ti = tin + j * T, *to = tout + j * T;
        memcpy(s, p->src + p->src_off[i], (size_t)a * sizeof *s);
        s[a] = t->eos;
        for (int q = a + 1; q < S; q++) s[q] = t->pad;
        ti[0] = t->bos;
        memcpy(ti + 1, p->tgt + p->tgt_off[i], (size_t)c * sizeof *ti);
        memcpy(to, p->tgt + p->tgt_off[i], (size_t)c * sizeof *to);
        to[c] = t->eos;
        for (int q = c + 1; q < T; q++) ti[q] = to[q] = t->pad;
    }
    memset(b, 0, sizeof *b);
    b->B = (int)n, b->S = S, b->T = T;
    b->src = src, b->tgt_in = tin, b->tgt_out = tout;
    return 0;
}

static int mt_next(void *ctx, nlp_rng *r, nlp_batch *b)
{
    (void)r; /* the order is a function of (seed, epoch): see mt.h */
    nlp_mt_task *t = ctx;
    int rc;
    if (!t->epoch && (rc = build_epoch(t, 1))) return rc;
    if (t->drawn >= t->nbatch) {
        if ((rc = build_epoch(t, t->epoch + 1))) return rc;
        t->drawn = 0;
    }
    size_t k = t->drawn++;
    return fill(t, t->train, t->order + t->cut[k], t->cut[k + 1] - t->cut[k], b);
}

static void mt_get_state(void *ctx, uint64_t s[4])
{
    nlp_mt_task *t = ctx;
    s[0] = t->epoch, s[1] = t->drawn, s[2] = s[3] = 0;
}

static int mt_set_state(void *ctx, const uint64_t s[4])
{
    nlp_mt_task *t = ctx;
    int rc;
    t->epoch = 0, t->drawn = 0;
    if (s[0] && (rc = build_epoch(t, s[0]))) return rc;
    t->drawn = s[1];
    return 0;
}

int nlp_mt_score(nlp_mt_task *t, nlp_model *m, const nlp_pairs *p, nlp_eval *out, size_t *skipped)
{
    const nlp_model_config *cfg = nlp_model_cfg(m);
    size_t n = p->n, ns = 0, nskip = 0;
    key *k = nlp_malloc((n ? n : 1) * sizeof *k);
    uint32_t *idx = nlp_malloc((n ? n : 1) * sizeof *idx);
    size_t *cut = nlp_malloc((n + 1) * sizeof *cut);
    int rc = 0;
    if (!k || !idx || !cut) {
        rc = NLP_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (slen(p, i) > cfg->max_positions || tlen(p, i) > cfg->max_positions || tlen(p, i) < 2 ||
            slen(p, i) < 2) {
            nskip++;
            continue;
        }
        k[ns++] = (key){(uint32_t)tlen(p, i), (uint32_t)slen(p, i), 0, (uint32_t)i};
    }
    qsort(k, ns, sizeof *k, key_cmp);
    for (size_t i = 0; i < ns; i++) idx[i] = k[i].i;
    size_t nb = cut_batches(p, idx, ns, t->max_tokens, cut);
    double nll = 0, tok = 0;
    const int R = nlp_dist_size(), me = nlp_dist_rank();
    for (size_t b = 0; b < nb; b++) {
        if (!nlp_dist_mine(b, me, R)) continue; /* another rank's share of the validation */
        nlp_batch batch;
        nlp_losses l;
        if ((rc = fill(t, p, idx + cut[b], cut[b + 1] - cut[b], &batch)) || (rc = nlp_model_forward(m, &batch, &l)))
            goto out;
        nll += l.nll * l.tokens;
        tok += l.tokens;
    }
    double sums[2] = {nll, tok};
    if ((rc = nlp_dist_sum_f64(sums, 2))) goto out;
    nll = sums[0], tok = sums[1];
    out->v[0] = tok ? nll / tok : NAN;
    out->v[1] = exp(out->v[0]);
    if (skipped) *skipped = nskip;
out:
    free(k), free(idx), free(cut);
    return rc;
}

static int mt_eval(void *ctx, nlp_model *m, nlp_eval *out)
{
    nlp_mt_task *t = ctx;
    for (int i = 0; i < NLP_TRAIN_MAX_METRICS; i++) out->v[i] = NAN;
    int rc = nlp_mt_score(t, m, t->valid, out, NULL);
    if (!rc && t->bleu) rc = t->bleu(t->bleu_ctx, m, &out->v[2]);
    return rc;
}

static const char *const mt_names[] = {"loss", "ppl", "bleu", NULL};

int nlp_mt_task_init(nlp_mt_task *t, nlp_task *task, const nlp_pairs *train, const nlp_pairs *valid,
                     const nlp_model_config *cfg, long max_tokens, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    if (!train->n) return nlp_error(NLP_EDATA, "no training pairs left after filtering");
    long longest = (train->src_max > train->tgt_max ? train->src_max : train->tgt_max) + 1;
    if (longest > max_tokens)
        return nlp_error(NLP_EINVAL, "a batch of %ld tokens cannot hold the longest sentence (%ld tokens with EOS)",
                         max_tokens, longest);
    if (longest > cfg->max_positions)
        return nlp_error(NLP_EINVAL, "the longest sentence (%ld tokens with EOS) exceeds the model's %d positions",
                         longest, cfg->max_positions);
    t->train = train, t->valid = valid;
    t->pad = cfg->pad_id, t->bos = cfg->bos_id, t->eos = cfg->eos_id;
    t->max_tokens = max_tokens, t->seed = seed;
    memset(task, 0, sizeof *task);
    task->ctx = t;
    task->next_batch = mt_next;
    task->evaluate = valid && valid->n ? mt_eval : NULL;
    task->eval_names = mt_names;
    task->get_state = mt_get_state;
    task->set_state = mt_set_state;
    return 0;
}

size_t nlp_mt_epoch_batches(nlp_mt_task *t)
{
    if (!t->epoch && build_epoch(t, 1)) return 0;
    return t->nbatch;
}

void nlp_mt_task_free(nlp_mt_task *t)
{
    free(t->order), free(t->cut), free(t->buf);
    memset(t, 0, sizeof *t);
}
