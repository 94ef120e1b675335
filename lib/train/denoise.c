/*
 * denoise.c — pairs for the encoder-decoder's denoising objectives. See
 * denoise.h.
 */
#include "train/denoise.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/thread.h"
#include "train/noise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the corruptions' generators apart from every other stream of the seed */
#define NOISE_STREAM 0x6e6f697365ull
#define MAX_DRAWS 64

static int check_opts(const nlp_denoise_opts *o)
{
    if (o->max_len < 1) return nlp_error(NLP_EINVAL, "a side of %d tokens holds nothing", o->max_len);
    if (o->kind == NLP_DENOISE_SPAN) {
        if (!(o->density > 0 && o->density < 1))
            return nlp_error(NLP_EINVAL, "the noise density must be between 0 and 1 (not %g)", o->density);
        if (!(o->mean_span >= 1 && o->mean_span <= 1e6))
            return nlp_error(NLP_EINVAL, "the mean noise span must be at least 1 token (not %g)", o->mean_span);
        if (o->n_sentinel < 2 || !o->sentinel)
            return nlp_error(NLP_EINVAL, "span corruption needs 2 sentinels or more (not %zu)", o->n_sentinel);
        return 0;
    }
    if (o->kind == NLP_DENOISE_BART) {
        if (!(o->ratio >= 0 && o->ratio <= 1))
            return nlp_error(NLP_EINVAL, "the mask ratio must be in [0, 1] (not %g)", o->ratio);
        if (!(o->lambda > 0 && o->lambda <= 100))
            return nlp_error(NLP_EINVAL, "the Poisson lambda of span lengths must be in (0, 100] (not %g)", o->lambda);
        if (o->mask < 0) return nlp_error(NLP_EINVAL, "text infilling needs a mask id");
        return 0;
    }
    return nlp_error(NLP_EINVAL, "no such denoising objective (%d)", o->kind);
}

/* Whether a span piece of n tokens fits: input and target with EOS, and
 * the sentinels its spans need. */
static int span_fits(const nlp_denoise_opts *o, size_t n)
{
    size_t k, s;
    nlp_noise_t5_counts(n, o->density, o->mean_span, &k, &s);
    return n - k + s + 1 <= (size_t)o->max_len && k + s + 2 <= (size_t)o->max_len && s + 1 <= o->n_sentinel;
}

size_t nlp_denoise_max_piece(const nlp_denoise_opts *o)
{
    if (check_opts(o)) return 0;
    if (o->kind == NLP_DENOISE_BART) return o->max_len >= 3 ? (size_t)o->max_len - 1 : 0;
    size_t n = 2;
    while (n < ((size_t)1 << 26) && span_fits(o, n)) n++;
    return n - 1 >= 2 ? n - 1 : 0; /* the first that does not fit, less one: every shorter one fits */
}

static int push_piece(nlp_denoise *d, size_t *cap, size_t a, size_t b, size_t s0, size_t s1, size_t *kept)
{
    if (b - a < 2) { /* too short to corrupt */
        d->skipped++;
        return 0;
    }
    if (nlp_grow(&d->piece, cap, d->n + 1, sizeof *d->piece)) return NLP_ENOMEM;
    d->piece[d->n++] = (nlp_denoise_piece){a, b, s0, s1};
    (*kept)++;
    return 0;
}

int nlp_denoise_init(nlp_denoise *d, const nlp_bert_docs *docs, const nlp_denoise_opts *o, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    d->pairs.map.fd = -1;
    int rc = check_opts(o);
    if (rc) return rc;
    const size_t P = nlp_denoise_max_piece(o);
    if (P < 2)
        return nlp_error(NLP_EINVAL, "a side of %d tokens (with EOS) holds no corrupted text of 2 tokens", o->max_len);
    d->o = *o, d->docs = docs, d->seed = seed, d->max_piece = P;
    size_t cap = 0, dcap = 0;
    for (size_t k = 0; k < docs->ndoc && !rc; k++) {
        size_t before = d->n, kept = 0, pieces = 0;
        size_t cur_s0 = 0, cur_a = 0, cur_b = 0;
        int open = 0;
        for (size_t s = docs->doc[k]; s < docs->doc[k + 1] && !rc; s++) {
            const size_t a = docs->sent[s], b = docs->sent[s + 1], len = b - a;
            if (len > P) { /* too long by itself: near-equal parts */
                if (open) rc = push_piece(d, &cap, cur_a, cur_b, cur_s0, s, &kept), pieces++, open = 0;
                const size_t q = (len + P - 1) / P;
                for (size_t j = 0; j < q && !rc; j++)
                    rc = push_piece(d, &cap, a + len * j / q, a + len * (j + 1) / q, s, s + 1, &kept), pieces++;
                d->sents_cut++;
                continue;
            }
            if (open && cur_b - cur_a + len > P) rc = push_piece(d, &cap, cur_a, cur_b, cur_s0, s, &kept), pieces++, open = 0;
            if (!open) cur_s0 = s, cur_a = a, open = 1;
            cur_b = b;
        }
        if (open && !rc) rc = push_piece(d, &cap, cur_a, cur_b, cur_s0, docs->doc[k + 1], &kept), pieces++;
        if (rc) break;
        if (pieces > 1) d->docs_cut++;
        if (!kept) d->skipped_docs++;
        if (nlp_grow(&d->doc, &dcap, d->n + 1, sizeof *d->doc)) {
            rc = NLP_ENOMEM;
            break;
        }
        for (size_t i = before; i < d->n; i++) d->doc[i] = k;
    }
    if (!rc && !d->n)
        rc = nlp_error(NLP_EDATA, "no text to corrupt: %zu document%s, none of 2 tokens or more", docs->ndoc,
                       docs->ndoc == 1 ? "" : "s");
    nlp_bert_docs_release(docs);
    if (rc) nlp_denoise_free(d);
    return rc;
}

void nlp_denoise_free(nlp_denoise *d)
{
    free(d->piece), free(d->doc);
    nlp_pairs_free(&d->pairs);
    memset(d, 0, sizeof *d);
    d->pairs.map.fd = -1;
}

/* Scratch of one thread. */
typedef struct scratch {
    uint8_t *mask;
    size_t *start;
    size_t cap_mask, cap_start;
    nlp_ids perm;
    uint64_t redrawn, cut;
} scratch;

static void scratch_free(scratch *w)
{
    free(w->mask), free(w->start), nlp_ids_free(&w->perm);
    memset(w, 0, sizeof *w);
}

/* Epoch e's pair of piece i, appended to src and tgt. */
static int corrupt(const nlp_denoise *d, size_t i, uint64_t e, nlp_ids *src, nlp_ids *tgt, scratch *w)
{
    const nlp_denoise_opts *o = &d->o;
    const nlp_denoise_piece *pc = &d->piece[i];
    const int32_t *ids = d->docs->ids + pc->a;
    const size_t n = pc->b - pc->a;
    nlp_rng base, r;
    nlp_rng_seed(&base, d->seed);
    base = nlp_rng_split(&base, NOISE_STREAM);
    base = nlp_rng_split(&base, e);
    r = nlp_rng_split(&base, i);
    int rc;
    if (o->kind == NLP_DENOISE_SPAN) {
        size_t spans;
        if (nlp_grow(&w->mask, &w->cap_mask, n, 1)) return NLP_ENOMEM;
        if ((rc = nlp_noise_t5_mask(&r, n, o->density, o->mean_span, w->mask, &spans))) return rc;
        return nlp_noise_t5_corrupt(ids, n, w->mask, o->sentinel, o->n_sentinel, -1, src, tgt);
    }
    /* the piece's sentences, from 0 */
    size_t ns = 0;
    if (nlp_grow(&w->start, &w->cap_start, pc->s1 - pc->s0 + 2, sizeof *w->start)) return NLP_ENOMEM;
    w->start[ns++] = 0;
    for (size_t s = pc->s0 + 1; s < pc->s1; s++) {
        const size_t at = d->docs->sent[s];
        if (at > pc->a && at < pc->b) w->start[ns++] = at - pc->a;
    }
    w->start[ns] = n;
    const size_t before = src->n;
    for (int draw = 1;; draw++) {
        const int32_t *x = ids;
        if (o->permute && ns >= 2) {
            w->perm.n = 0;
            if ((rc = nlp_noise_permute(&r, ids, w->start, ns, &w->perm))) return rc;
            x = w->perm.v;
        }
        if ((rc = nlp_noise_bart_infill(&r, x, n, o->ratio, o->lambda, o->mask, src, NULL, NULL))) return rc;
        if (src->n - before + 1 <= (size_t)o->max_len) break;
        if (draw == MAX_DRAWS) { /* cut to fit */
            src->n = before + (size_t)o->max_len - 1;
            w->cut++;
            break;
        }
        src->n = before;
        w->redrawn++;
    }
    return nlp_ids_append(tgt, ids, n);
}

int nlp_denoise_example(nlp_denoise *d, size_t i, uint64_t e, nlp_ids *src, nlp_ids *tgt)
{
    if (i >= d->n) return nlp_error(NLP_EINVAL, "piece %zu of %zu", i, d->n);
    scratch w = {0};
    int rc = corrupt(d, i, e, src, tgt, &w);
    scratch_free(&w);
    return rc;
}

int nlp_denoise_epoch(nlp_denoise *d, uint64_t e)
{
    if (d->epoch == e && d->pairs.src_off) return 0;
    nlp_pairs_free(&d->pairs);
    d->epoch = 0;
    const size_t n = d->n;
    int threads = d->o.threads > 0 ? d->o.threads : nlp_cpu_count();
    size_t nchunk = (size_t)threads * 8;
    if (nchunk > n) nchunk = n ? n : 1;
    nlp_pairs *p = &d->pairs;
    nlp_ids *src = nlp_calloc(nchunk, sizeof *src), *tgt = nlp_calloc(nchunk, sizeof *tgt);
    int *err = nlp_calloc(nchunk, sizeof *err);
    uint64_t *redrawn = nlp_calloc(nchunk, sizeof *redrawn), *cut = nlp_calloc(nchunk, sizeof *cut);
    p->src_off = nlp_malloc((n + 1) * sizeof *p->src_off);
    p->tgt_off = nlp_malloc((n + 1) * sizeof *p->tgt_off);
    p->line = nlp_malloc((n ? n : 1) * sizeof *p->line);
    int rc = 0;
    if (!src || !tgt || !err || !redrawn || !cut || !p->src_off || !p->tgt_off || !p->line) {
        rc = NLP_ENOMEM;
        goto out;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (size_t k = 0; k < nchunk; k++) {
        scratch w = {0};
        const size_t a = n * k / nchunk, b = n * (k + 1) / nchunk;
        for (size_t i = a; i < b && !err[k]; i++) {
            size_t s0 = src[k].n, t0 = tgt[k].n;
            err[k] = corrupt(d, i, e, &src[k], &tgt[k], &w);
            p->src_off[i + 1] = src[k].n - s0, p->tgt_off[i + 1] = tgt[k].n - t0; /* lengths for now */
        }
        redrawn[k] = w.redrawn, cut[k] = w.cut;
        scratch_free(&w);
    }
    size_t ns = 0, nt = 0;
    for (size_t k = 0; k < nchunk; k++) {
        if (err[k]) {
            rc = err[k];
            goto out;
        }
        ns += src[k].n, nt += tgt[k].n;
    }
    if (!(p->src = nlp_malloc((ns ? ns : 1) * sizeof *p->src)) || !(p->tgt = nlp_malloc((nt ? nt : 1) * sizeof *p->tgt))) {
        rc = NLP_ENOMEM;
        goto out;
    }
    ns = nt = 0;
    for (size_t k = 0; k < nchunk; k++) {
        if (src[k].n) memcpy(p->src + ns, src[k].v, src[k].n * sizeof *p->src);
        if (tgt[k].n) memcpy(p->tgt + nt, tgt[k].v, tgt[k].n * sizeof *p->tgt);
        ns += src[k].n, nt += tgt[k].n;
        nlp_ids_free(&src[k]), nlp_ids_free(&tgt[k]);
        d->redrawn += redrawn[k], d->cut_inputs += cut[k];
    }
    p->src_off[0] = p->tgt_off[0] = 0;
    p->src_max = p->tgt_max = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t a = p->src_off[i + 1], b = p->tgt_off[i + 1];
        if ((int)a > p->src_max) p->src_max = (int)a;
        if ((int)b > p->tgt_max) p->tgt_max = (int)b;
        p->src_off[i + 1] = p->src_off[i] + a, p->tgt_off[i + 1] = p->tgt_off[i] + b;
        p->line[i] = d->doc[i] + 1;
    }
    p->n = p->lines = n;
    p->src_tokens = ns, p->tgt_tokens = nt;
    d->epoch = e;
out:
    for (size_t k = 0; src && k < nchunk; k++) nlp_ids_free(&src[k]);
    for (size_t k = 0; tgt && k < nchunk; k++) nlp_ids_free(&tgt[k]);
    free(src), free(tgt), free(err), free(redrawn), free(cut);
    nlp_bert_docs_release(d->docs);
    if (rc) nlp_pairs_free(&d->pairs);
    return rc;
}

int nlp_denoise_refresh(void *ctx, uint64_t e) { return nlp_denoise_epoch(ctx, e); }
