/*
 * wordcount.c — corpus word counts. See wordcount.h.
 */
#include "tok/wordcount.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "text/utf8.h"
#include "tok/added.h"
#include "tok/wordcache.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct went {
    uint64_t h; /* 0 = empty */
    uint64_t count;
    uint32_t off, len;
};

struct nlp_wordcount {
    struct went *t;
    size_t mask, n;
    uint32_t *order; /* slots in insertion order */
    size_t ocap;
    char *keys;
    size_t klen, kcap;
};

nlp_wordcount *nlp_wordcount_new(void)
{
    nlp_wordcount *wc = nlp_calloc(1, sizeof *wc);
    if (!wc) return NULL;
    wc->t = nlp_calloc(1024, sizeof *wc->t);
    if (!wc->t) {
        free(wc);
        return NULL;
    }
    wc->mask = 1023;
    return wc;
}

void nlp_wordcount_free(nlp_wordcount *wc)
{
    if (!wc) return;
    free(wc->t);
    free(wc->order);
    free(wc->keys);
    free(wc);
}

static int rehash(nlp_wordcount *wc)
{
    size_t ns = (wc->mask + 1) * 2;
    struct went *t = nlp_calloc(ns, sizeof *t);
    if (!t) return NLP_ENOMEM;
    for (size_t i = 0; i < wc->n; i++) {
        struct went *e = &wc->t[wc->order[i]];
        size_t j = e->h & (ns - 1);
        while (t[j].h) j = (j + 1) & (ns - 1);
        t[j] = *e;
        wc->order[i] = (uint32_t)j;
    }
    free(wc->t);
    wc->t = t;
    wc->mask = ns - 1;
    return NLP_OK;
}

static int add_h(nlp_wordcount *wc, const char *w, size_t n, uint64_t h, uint64_t count)
{
    size_t j = h & wc->mask;
    for (;; j = (j + 1) & wc->mask) {
        struct went *e = &wc->t[j];
        if (!e->h) break;
        if (e->h == h && e->len == n && nlp_word_eq(wc->keys + e->off, w, n)) {
            e->count += count;
            return NLP_OK;
        }
    }
    if (wc->n >= UINT32_MAX - 1 || wc->klen + n >= UINT32_MAX)
        return nlp_error(NLP_ENOMEM, "too many distinct words to count");
    if (wc->klen + n > wc->kcap && nlp_grow(&wc->keys, &wc->kcap, wc->klen + n, 1)) return NLP_ENOMEM;
    if (nlp_grow(&wc->order, &wc->ocap, wc->n + 1, sizeof *wc->order)) return NLP_ENOMEM;
    memcpy(wc->keys + wc->klen, w, n);
    struct went *e = &wc->t[j];
    e->h = h;
    e->count = count;
    e->off = (uint32_t)wc->klen;
    e->len = (uint32_t)n;
    wc->klen += n;
    wc->order[wc->n++] = (uint32_t)j;
    if (wc->n * 2 > wc->mask + 1) return rehash(wc);
    return NLP_OK;
}

int nlp_wordcount_add(nlp_wordcount *wc, const char *w, size_t n, uint64_t count)
{
    return add_h(wc, w, n, nlp_wordcache_hash(w, n), count);
}

size_t nlp_wordcount_size(const nlp_wordcount *wc) { return wc->n; }

const char *nlp_wordcount_word(const nlp_wordcount *wc, size_t i, size_t *n, uint64_t *count)
{
    const struct went *e = &wc->t[wc->order[i]];
    *n = e->len;
    if (count) *count = e->count;
    return wc->keys + e->off;
}

// --- counting a corpus

struct worker {
    nlp_wordcount *wc;
    nlp_buf norm, ntmp, work;
    nlp_pieces pieces;
    uint64_t words;
    int rc;
};

/* Normalizes and splits one piece of text (between special tokens). */
static int count_text(struct worker *w, const nlp_wordcount_opts *o, const char *s, size_t n)
{
    if (n == 0) return NLP_OK;
    if (o->n_norm) {
        int rc = nlp_normalize(o->norm, o->n_norm, s, n, &w->norm, &w->ntmp);
        if (rc) return rc;
        s = w->norm.data;
        n = w->norm.len;
    }
    w->pieces.n = 0;
    int rc = nlp_pretok_run(o->pretok, o->n_pretok, s, n, &w->work, &w->pieces);
    for (size_t i = 0; i < w->pieces.n && !rc; i++) {
        const nlp_piece *p = &w->pieces.v[i];
        rc = add_h(w->wc, p->p, p->n, nlp_wordcache_hash(p->p, p->n), 1);
    }
    w->words += w->pieces.n;
    return rc;
}

static int count_line(struct worker *w, const nlp_wordcount_opts *o, const nlp_added_matcher *m, const char *s,
                      size_t n)
{
    if (!m) return count_text(w, o, s, n);
    size_t pos = 0, ms, me;
    int32_t id;
    while (nlp_added_next(m, s, n, pos, pos, 0, &ms, &me, &id)) {
        int rc = count_text(w, o, s + pos, ms - pos);
        if (rc) return rc;
        pos = me;
    }
    return count_text(w, o, s + pos, n - pos);
}

struct batch {
    nlp_buf text;
    size_t *end; /* line i is text[end[i-1] .. end[i]) */
    size_t n, cap;
};

static int run_batch(struct batch *b, struct worker *ws, int nthreads, const nlp_wordcount_opts *o,
                     const nlp_added_matcher *m)
{
    size_t n = b->n;
#pragma omp parallel for schedule(dynamic, 64) num_threads(nthreads) if (nthreads > 1)
    for (size_t i = 0; i < n; i++) {
        struct worker *w = &ws[omp_get_thread_num()];
        if (w->rc) continue;
        size_t s = i ? b->end[i - 1] : 0;
        w->rc = count_line(w, o, m, b->text.data + s, b->end[i] - s);
    }
    b->n = 0;
    nlp_buf_reset(&b->text);
    for (int t = 0; t < nthreads; t++)
        if (ws[t].rc) return ws[t].rc;
    return NLP_OK;
}

int nlp_wordcount_files(nlp_wordcount *wc, const char *const *paths, size_t npaths, const nlp_wordcount_opts *o,
                        nlp_wordcount_stats *st)
{
    int nthreads = o->threads > 0 ? o->threads : omp_get_max_threads();
    struct worker *ws = nlp_calloc((size_t)nthreads, sizeof *ws);
    nlp_added_token *specials = o->n_specials ? nlp_calloc(o->n_specials, sizeof *specials) : NULL;
    nlp_added_matcher *m = NULL;
    struct batch b = {0};
    nlp_buf fix = {0};
    int rc = NLP_OK;
    if (!ws || (o->n_specials && !specials)) {
        rc = NLP_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < o->n_specials; i++) {
        specials[i].content = (char *)o->specials[i];
        specials[i].special = 1;
    }
    if (o->n_specials && !(m = nlp_added_matcher_new(specials, o->n_specials, 0))) {
        rc = NLP_ENOMEM;
        goto out;
    }
    ws[0].wc = wc;
    for (int t = 1; t < nthreads; t++)
        if (!(ws[t].wc = nlp_wordcount_new())) {
            rc = NLP_ENOMEM;
            goto out;
        }
    const size_t batch_bytes = (size_t)4 << 20;
    for (size_t f = 0; f < npaths && !rc; f++) {
        nlp_reader *r;
        if ((rc = nlp_reader_open(&r, paths[f]))) break;
        nlp_reader_set_max_line(r, o->max_line_bytes);
        char *line;
        size_t len;
        for (;;) {
            if (o->max_lines && st->lines >= o->max_lines) break;
            int got = nlp_reader_line(r, &line, &len);
            if (got < 0) {
                rc = got;
                break;
            }
            if (got == 0) break;
            if (nlp_reader_partial(r)) {
                rc = nlp_error(NLP_EDATA, "'%s' line %llu: longer than %zu bytes, the longest line allowed%s%s", nlp_reader_name(r),
                               (unsigned long long)nlp_reader_lineno(r), o->max_line_bytes,
                               o->long_line_hint ? " " : "", o->long_line_hint ? o->long_line_hint : "");
                break;
            }
            st->lines++;
            st->bytes += len + (size_t)nlp_reader_had_newline(r);
            const char *nul = o->nul_error ? memchr(line, 0, len) : NULL;
            if (nul) {
                rc = nlp_error(NLP_EDATA, "'%s' line %llu byte %llu: a NUL byte: %s", paths[f],
                               (unsigned long long)nlp_reader_lineno(r),
                               (unsigned long long)(nlp_reader_line_offset(r) + (uint64_t)(nul - line)), o->nul_error);
                break;
            }
            size_t bad;
            if (!nlp_utf8_valid(line, len, &bad)) {
                uint64_t at = nlp_reader_line_offset(r) + bad;
                if (o->strict) {
                    rc = nlp_error(NLP_EDATA, "'%s' line %llu byte %llu: invalid UTF-8", paths[f],
                                   (unsigned long long)nlp_reader_lineno(r), (unsigned long long)at);
                    break;
                }
                size_t k;
                nlp_buf_reset(&fix);
                if ((rc = nlp_utf8_repair(line, len, &fix, &k))) break;
                if (!st->replaced)
                    snprintf(st->first_bad, sizeof st->first_bad, "'%s' line %llu byte %llu", paths[f],
                             (unsigned long long)nlp_reader_lineno(r), (unsigned long long)at);
                st->replaced += k;
                line = fix.data;
                len = fix.len;
            }
            if (nlp_buf_append(&b.text, line, len) ||
                (nlp_reader_had_newline(r) && nlp_buf_putc(&b.text, '\n')) ||
                nlp_grow(&b.end, &b.cap, b.n + 1, sizeof *b.end)) {
                rc = NLP_ENOMEM;
                break;
            }
            b.end[b.n++] = b.text.len;
            if (b.text.len >= batch_bytes) {
                if ((rc = run_batch(&b, ws, nthreads, o, m))) break;
                if (o->progress) o->progress(o->progress_ctx, st->lines, st->bytes);
            }
        }
        nlp_reader_close(r);
    }
    if (!rc && b.n) rc = run_batch(&b, ws, nthreads, o, m);
    if (!rc && o->progress) o->progress(o->progress_ctx, st->lines, st->bytes);
    /* merge the other threads' tables into wc */
    for (int t = 1; t < nthreads && !rc; t++) {
        nlp_wordcount *x = ws[t].wc;
        for (size_t i = 0; i < x->n && !rc; i++) {
            const struct went *e = &x->t[x->order[i]];
            rc = add_h(wc, x->keys + e->off, e->len, e->h, e->count);
        }
    }
    for (int t = 0; t < nthreads; t++) st->words += ws[t].words;
out:
    if (ws) {
        for (int t = 0; t < nthreads; t++) {
            if (t) nlp_wordcount_free(ws[t].wc);
            nlp_buf_free(&ws[t].norm);
            nlp_buf_free(&ws[t].ntmp);
            nlp_buf_free(&ws[t].work);
            nlp_pieces_free(&ws[t].pieces);
        }
    }
    free(ws);
    nlp_added_matcher_free(m);
    free(specials);
    nlp_buf_free(&b.text);
    free(b.end);
    nlp_buf_free(&fix);
    return rc;
}
