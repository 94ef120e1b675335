/*
 * bpe_train.c — BPE training with incremental pair counts. See bpe_train.h.
 *
 * Data:
 *   words   every distinct word with two or more symbols: its symbols
 *           (ids) in one array, rewritten in place as merges shrink them,
 *           and its count
 *   pairs   one record per pair (a, b) ever seen: HF-style count, the words
 *           that gained the pair since it was last merged (duplicates
 *           allowed, skipped by a per-step stamp), and a version that
 *           invalidates heap entries once the pair has been merged
 *   heap    entries (count, a, b, record, version), best = highest count,
 *           then smallest (a, b); an entry whose count is stale is pushed
 *           again with the current count when it surfaces (HF's rule)
 */
#include "tok/bpe_train.h"
#include "tok/alphabet.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/mem.h"
#include "text/bytelevel.h"
#include "text/utf8.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

// --- pair records and their table

struct prec {
    int64_t count;
    uint32_t *w; /* words that gained this pair */
    uint32_t nw, cw;
    uint32_t ver;
    uint32_t touched; /* step that last gave it a positive change */
    int32_t a, b;
};

struct ptab {
    nlp_idmap m; /* (a << 32 | b) -> record */
    struct prec *r;
    size_t n, cap;
};

static inline uint64_t pkey(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b); }

static void ptab_free(struct ptab *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->r[i].w);
    free(t->r);
    nlp_idmap_free(&t->m);
}

/* Record of pair (a, b), created if new; -1 on ENOMEM. */
static long ptab_get(struct ptab *t, int32_t a, int32_t b)
{
    long r = nlp_idmap_find(&t->m, pkey(a, b));
    if (r >= 0) return r;
    if (t->n >= UINT32_MAX - 1 || nlp_grow(&t->r, &t->cap, t->n + 1, sizeof *t->r) ||
        nlp_idmap_put(&t->m, pkey(a, b), (uint32_t)t->n))
        return -1;
    memset(&t->r[t->n], 0, sizeof *t->r);
    t->r[t->n].a = a;
    t->r[t->n].b = b;
    t->r[t->n].touched = UINT32_MAX;
    return (long)t->n++;
}

static inline int prec_add_word(struct prec *r, uint32_t w)
{
    if (r->nw && r->w[r->nw - 1] == w) return NLP_OK;
    if (r->nw == r->cw) {
        uint32_t nc = r->cw ? r->cw * 2 : 4;
        uint32_t *p = nlp_reallocarray(r->w, nc, sizeof *p);
        if (!p) return NLP_ENOMEM;
        r->w = p;
        r->cw = nc;
    }
    r->w[r->nw++] = w;
    return NLP_OK;
}

// --- heap

struct hent {
    int64_t count;
    uint64_t key; /* a << 32 | b: smaller is better among equal counts */
    uint32_t rec, ver;
};

struct heap {
    struct hent *v;
    size_t n, cap;
};

static inline int better(const struct hent *x, const struct hent *y)
{
    return x->count > y->count || (x->count == y->count && x->key < y->key);
}

static void sift_down(struct heap *h, size_t i)
{
    struct hent x = h->v[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && better(&h->v[c + 1], &h->v[c])) c++;
        if (!better(&h->v[c], &x)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    h->v[i] = x;
}

static int heap_push(struct heap *h, struct hent e)
{
    if (h->n == h->cap && nlp_grow(&h->v, &h->cap, h->n + 1, sizeof *h->v)) return NLP_ENOMEM;
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!better(&e, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = e;
    return NLP_OK;
}

static struct hent heap_pop(struct heap *h)
{
    struct hent top = h->v[0];
    h->v[0] = h->v[--h->n];
    if (h->n) sift_down(h, 0);
    return top;
}

// --- character spellings

struct chr {
    int32_t cp;
    uint64_t count;
};

static int by_cp(const void *x, const void *y)
{
    const struct chr *a = x, *b = y;
    return (a->cp > b->cp) - (a->cp < b->cp);
}

/* Characters (or character spellings) and their counts, found by key. */
struct cset {
    nlp_idmap m; /* key -> index in c */
    struct chr *c;
    size_t n, cap;
};

/* Index of key's entry, created with count 0 if new; -1 on ENOMEM. */
static long cset_get(struct cset *s, int32_t key)
{
    long i = nlp_idmap_find(&s->m, (uint32_t)key);
    if (i >= 0) return i;
    if (nlp_grow(&s->c, &s->cap, s->n + 1, sizeof *s->c) || nlp_idmap_put(&s->m, (uint32_t)key, (uint32_t)s->n)) return -1;
    s->c[s->n] = (struct chr){key, 0};
    return (long)s->n++;
}

static void cset_free(struct cset *s)
{
    nlp_idmap_free(&s->m);
    free(s->c);
}

// --- the trainer

struct trainer {
    const nlp_bpe_train_opts *o;
    nlp_vocab *vocab;
    /* words */
    int32_t *sym;
    size_t *woff;
    uint32_t *wlen;
    int64_t *wcount;
    uint32_t *stamp;
    size_t nwords;
    struct ptab pt;
    struct heap heap;
    uint32_t step;
    uint32_t *touched;
    size_t ntouched, ctouched;
    int32_t *merges;
    size_t nmerges, cmerges;
    size_t plen; /* prefix length */
};

/* Applies one change of HF's Word::merge: pair (a, b) gains `delta`
 * occurrences in word w. */
static inline int change(struct trainer *t, int32_t a, int32_t b, int delta, uint32_t w)
{
    long r = ptab_get(&t->pt, a, b);
    if (r < 0) return NLP_ENOMEM;
    struct prec *p = &t->pt.r[r];
    p->count += delta * t->wcount[w];
    if (delta > 0) {
        if (prec_add_word(p, w)) return NLP_ENOMEM;
        if (p->touched != t->step) {
            p->touched = t->step;
            if (t->ntouched == t->ctouched && nlp_grow(&t->touched, &t->ctouched, t->ntouched + 1, sizeof *t->touched))
                return NLP_ENOMEM;
            t->touched[t->ntouched++] = (uint32_t)r;
        }
    }
    return NLP_OK;
}

/* A change recorded by a worker thread, applied later in order. */
struct chg {
    int32_t a, b;
    int32_t delta;
    uint32_t w;
};

struct chgbuf {
    struct chg *v;
    size_t n, cap;
};

/* Rewrites word w, merging (a, b) into c left to right as HF's Word::merge
 * does; emits the pair changes through `emit`. */
#define MERGE_WORD(T, W, A, B, C, EMIT)                                                                                \
    do {                                                                                                               \
        int32_t *s_ = (T)->sym + (T)->woff[W];                                                                         \
        size_t n_ = (T)->wlen[W], i_ = 0, j_ = 0;                                                                      \
        while (i_ < n_) {                                                                                              \
            if (i_ + 1 < n_ && s_[i_] == (A) && s_[i_ + 1] == (B)) {                                                   \
                if (j_ > 0) {                                                                                          \
                    EMIT(s_[j_ - 1], (A), -1, W);                                                                      \
                    EMIT(s_[j_ - 1], (C), 1, W);                                                                       \
                }                                                                                                      \
                if (i_ + 2 < n_) {                                                                                     \
                    EMIT((B), s_[i_ + 2], -1, W);                                                                      \
                    EMIT((C), s_[i_ + 2], 1, W);                                                                       \
                }                                                                                                      \
                s_[j_++] = (C);                                                                                        \
                i_ += 2;                                                                                               \
            } else {                                                                                                   \
                s_[j_++] = s_[i_++];                                                                                   \
            }                                                                                                          \
        }                                                                                                              \
        (T)->wlen[W] = (uint32_t)j_;                                                                                   \
    } while (0)

#define EMIT_DIRECT(x, y, d, w)                                                                                        \
    do {                                                                                                               \
        if (change(t, (x), (y), (d), (w))) return NLP_ENOMEM;                                                          \
    } while (0)

static int merge_serial(struct trainer *t, const uint32_t *ws, size_t nw, int32_t a, int32_t b, int32_t c)
{
    for (size_t k = 0; k < nw; k++) {
        uint32_t w = ws[k];
        if (t->stamp[w] == t->step) continue;
        t->stamp[w] = t->step;
        MERGE_WORD(t, w, a, b, c, EMIT_DIRECT);
    }
    return NLP_OK;
}

static inline int chg_push(struct chgbuf *cb, int32_t a, int32_t b, int d, uint32_t w)
{
    if (cb->n == cb->cap && nlp_grow(&cb->v, &cb->cap, cb->n + 1, sizeof *cb->v)) return NLP_ENOMEM;
    cb->v[cb->n++] = (struct chg){a, b, d, w};
    return NLP_OK;
}

#define EMIT_BUF(x, y, d, w)                                                                                           \
    do {                                                                                                               \
        if (chg_push(cb, (x), (y), (d), (w))) oom = 1;                                                                 \
    } while (0)

/* Large merges: the distinct words are rewritten on several threads, each
 * recording its changes; the changes are then applied in word order, which
 * gives the same counts, word lists and heap pushes as the serial loop. */
static int merge_parallel(struct trainer *t, const uint32_t *ws, size_t nw, int32_t a, int32_t b, int32_t c,
                          struct chgbuf *bufs, int nthreads, uint32_t *uniq)
{
    size_t nu = 0;
    for (size_t k = 0; k < nw; k++) {
        uint32_t w = ws[k];
        if (t->stamp[w] == t->step) continue;
        t->stamp[w] = t->step;
        uniq[nu++] = w;
    }
    int oom = 0;
#pragma omp parallel num_threads(nthreads) reduction(| : oom)
    {
        int id = omp_get_thread_num(), nt = omp_get_num_threads();
        struct chgbuf *cb = &bufs[id];
        cb->n = 0;
        /* contiguous blocks keep the thread's changes in word order */
        size_t lo = nu * (size_t)id / (size_t)nt, hi = nu * (size_t)(id + 1) / (size_t)nt;
        for (size_t k = lo; k < hi && !oom; k++) {
            uint32_t w = uniq[k];
            MERGE_WORD(t, w, a, b, c, EMIT_BUF);
        }
    }
    if (oom) return nlp_error(NLP_ENOMEM, "out of memory (BPE training)");
    for (int th = 0; th < nthreads; th++)
        for (size_t k = 0; k < bufs[th].n; k++) {
            const struct chg *g = &bufs[th].v[k];
            if (change(t, g->a, g->b, g->delta, g->w)) return NLP_ENOMEM;
        }
    return NLP_OK;
}

static int push_rec(struct trainer *t, uint32_t r)
{
    const struct prec *p = &t->pt.r[r];
    return heap_push(&t->heap, (struct hent){p->count, pkey(p->a, p->b), r, p->ver});
}

static int add_token(nlp_vocab *v, int32_t cp, int variant, const char *prefix, const char *suffix, nlp_buf *b)
{
    nlp_buf_reset(b);
    if ((variant & 1) && nlp_buf_puts(b, prefix)) return NLP_ENOMEM;
    if (nlp_utf8_append(b, cp)) return NLP_ENOMEM;
    if ((variant & 2) && nlp_buf_puts(b, suffix)) return NLP_ENOMEM;
    return nlp_vocab_add(v, b->data, b->len, NULL);
}

/* Builds the initial vocabulary and the words' symbols. */
static int setup(struct trainer *t, const nlp_wordcount *wc, nlp_bpe_train_stats *stats)
{
    const nlp_bpe_train_opts *o = t->o;
    size_t nw = nlp_wordcount_size(wc);
    const char *prefix = o->continuing_subword_prefix, *suffix = o->end_of_word_suffix;
    struct cset spell = {0};
    nlp_alphabet alpha = {0};
    nlp_idmap ids = {0}; /* cp * 4 + spelling (1 prefix, 2 suffix, 3 both) -> token id */
    nlp_buf b = {0};
    int rc = NLP_ENOMEM;
    if (nlp_idmap_init(&spell.m, 256) || nlp_idmap_init(&ids, 512)) goto out;

    /* 1. special tokens */
    for (size_t i = 0; i < o->n_specials; i++)
        if (nlp_vocab_add(t->vocab, o->specials[i], strlen(o->specials[i]), NULL)) goto out;
    size_t nspecial = nlp_vocab_count(t->vocab);

    /* 2. alphabet: character counts weighted by word counts */
    if (nlp_alphabet_build(&alpha, wc, o->byte_level, o->byte_alphabet, o->limit_alphabet)) goto out;
    size_t keep = alpha.n, total_syms = alpha.symbols;
    for (size_t i = 0; i < keep; i++) {
        int32_t id;
        if (add_token(t->vocab, alpha.cp[i], 0, prefix, suffix, &b) ||
            (id = nlp_vocab_find(t->vocab, b.data, b.len)) < 0 || nlp_idmap_put(&ids, (uint64_t)alpha.cp[i] * 4, (uint32_t)id))
            goto out;
    }
    if (stats) stats->alphabet = keep;

    /* 3. the prefixed / suffixed spellings words need, sorted */
    if (prefix || suffix) {
        for (size_t i = 0; i < nw; i++) {
            size_t n, k = 0;
            const char *w = nlp_wordcount_word(wc, i, &n, NULL);
            for (int first = 1; k < n;) {
                int32_t cp = nlp_alphabet_next(w, n, &k, o->byte_level);
                if (nlp_idmap_find(&ids, (uint64_t)cp * 4) < 0) continue; /* dropped by limit_alphabet */
                int sp = (!first && prefix ? 1 : 0) | (k == n && suffix ? 2 : 0);
                first = 0;
                if (sp && cset_get(&spell, cp * 4 + sp) < 0) goto out;
            }
        }
        qsort(spell.c, spell.n, sizeof *spell.c, by_cp);
        for (size_t i = 0; i < spell.n; i++) {
            int32_t key = spell.c[i].cp, id;
            if (add_token(t->vocab, key / 4, key % 4, prefix, suffix, &b) ||
                (id = nlp_vocab_find(t->vocab, b.data, b.len)) < 0 || nlp_idmap_put(&ids, (uint64_t)key, (uint32_t)id))
                goto out;
        }
    }
    if (nlp_vocab_count(t->vocab) > o->vocab_size) {
        /* it depends on the data, not on the command line alone: NLP_EDATA */
        rc = nlp_error(NLP_EDATA,
                       "the vocabulary size %zu is smaller than the %zu special tokens plus the %zu characters of the "
                       "alphabet%s: this data needs a vocabulary of at least %zu",
                       o->vocab_size, nspecial, keep, spell.n ? " and their prefixed/suffixed forms" : "",
                       nlp_vocab_count(t->vocab));
        goto out;
    }

    /* 4. the words as symbols */
    t->sym = nlp_malloc((total_syms ? total_syms : 1) * sizeof *t->sym);
    t->woff = nlp_malloc((nw ? nw : 1) * sizeof *t->woff);
    t->wlen = nlp_malloc((nw ? nw : 1) * sizeof *t->wlen);
    t->wcount = nlp_malloc((nw ? nw : 1) * sizeof *t->wcount);
    if (!t->sym || !t->woff || !t->wlen || !t->wcount) goto out;
    size_t at = 0;
    for (size_t i = 0; i < nw; i++) {
        size_t n, k = 0, start = at;
        uint64_t cnt;
        const char *w = nlp_wordcount_word(wc, i, &n, &cnt);
        for (int first = 1; k < n;) {
            int32_t cp = nlp_alphabet_next(w, n, &k, o->byte_level);
            if (nlp_idmap_find(&ids, (uint64_t)cp * 4) < 0) continue;
            int sp = (!first && prefix ? 1 : 0) | (k == n && suffix ? 2 : 0);
            first = 0;
            t->sym[at++] = (int32_t)nlp_idmap_find(&ids, (uint64_t)cp * 4 + (uint64_t)sp);
        }
        if (at - start < 2) {
            at = start; /* no pairs: nothing to learn from this word */
            continue;
        }
        t->woff[t->nwords] = start;
        t->wlen[t->nwords] = (uint32_t)(at - start);
        t->wcount[t->nwords] = (int64_t)cnt;
        t->nwords++;
    }
    rc = NLP_OK;
out:
    nlp_alphabet_free(&alpha);
    cset_free(&spell);
    nlp_idmap_free(&ids);
    nlp_buf_free(&b);
    return rc;
}

static int count_pairs(struct trainer *t)
{
    if (nlp_idmap_init(&t->pt.m, t->nwords * 2)) return NLP_ENOMEM;
    for (size_t w = 0; w < t->nwords; w++) {
        const int32_t *s = t->sym + t->woff[w];
        for (uint32_t i = 0; i + 1 < t->wlen[w]; i++) {
            long r = ptab_get(&t->pt, s[i], s[i + 1]);
            if (r < 0) return NLP_ENOMEM;
            struct prec *p = &t->pt.r[r];
            p->count += t->wcount[w];
            if (prec_add_word(p, (uint32_t)w)) return NLP_ENOMEM;
        }
    }
    for (size_t r = 0; r < t->pt.n; r++)
        if (t->pt.r[r].count > 0 && push_rec(t, (uint32_t)r)) return NLP_ENOMEM;
    return NLP_OK;
}

static int train_loop(struct trainer *t, nlp_bpe_train_stats *stats)
{
    const nlp_bpe_train_opts *o = t->o;
    int nthreads = o->threads > 0 ? o->threads : omp_get_max_threads();
    struct chgbuf *bufs = nlp_calloc((size_t)nthreads, sizeof *bufs);
    uint32_t *uniq = nlp_malloc((t->nwords ? t->nwords : 1) * sizeof *uniq);
    t->stamp = nlp_calloc(t->nwords ? t->nwords : 1, sizeof *t->stamp);
    nlp_buf tok = {0};
    int rc = NLP_OK;
    if (!bufs || !uniq || !t->stamp) {
        rc = NLP_ENOMEM;
        goto out;
    }
    uint64_t minf = o->min_frequency > 1 ? o->min_frequency : 1;
    while (nlp_vocab_count(t->vocab) < o->vocab_size && t->heap.n) {
        struct hent top = heap_pop(&t->heap);
        struct prec *p = &t->pt.r[top.rec];
        if (top.ver != p->ver) continue; /* the pair was merged since */
        if (top.count != p->count) {
            /* stale: back in with the current count (HF's rule) */
            if (p->count > 0 && (rc = push_rec(t, top.rec))) goto out;
            continue;
        }
        if ((uint64_t)top.count < minf) break;
        int32_t a = p->a, b = p->b;
        /* the new token: a + b, b's continuing prefix removed */
        size_t na, nb;
        const char *sa = nlp_vocab_token(t->vocab, a, &na), *sb = nlp_vocab_token(t->vocab, b, &nb);
        if (t->plen && nb >= t->plen && memcmp(sb, o->continuing_subword_prefix, t->plen) == 0) {
            sb += t->plen;
            nb -= t->plen;
        }
        nlp_buf_reset(&tok);
        int32_t c;
        if (nlp_buf_append(&tok, sa, na) || nlp_buf_append(&tok, sb, nb) ||
            nlp_vocab_add(t->vocab, tok.data, tok.len, &c) ||
            nlp_grow(&t->merges, &t->cmerges, 2 * t->nmerges + 2, sizeof *t->merges)) {
            rc = NLP_ENOMEM;
            goto out;
        }
        t->merges[2 * t->nmerges] = a;
        t->merges[2 * t->nmerges + 1] = b;
        t->nmerges++;
        if (stats) stats->last_count = (uint64_t)top.count;

        /* rewrite the words that have the pair; p may move as pairs are
         * created, so take its word list out first */
        t->step++;
        t->ntouched = 0;
        uint32_t *ws = p->w, nw = p->nw;
        p->w = NULL;
        p->nw = p->cw = 0;
        p->ver++;
        if (nthreads > 1 && nw >= 2048) rc = merge_parallel(t, ws, nw, a, b, c, bufs, nthreads, uniq);
        else rc = merge_serial(t, ws, nw, a, b, c);
        free(ws);
        if (rc) goto out;
        for (size_t k = 0; k < t->ntouched; k++)
            if (t->pt.r[t->touched[k]].count > 0 && (rc = push_rec(t, t->touched[k]))) goto out;
        if (o->progress && t->nmerges % 256 == 0)
            o->progress(o->progress_ctx, t->nmerges, nlp_vocab_count(t->vocab), o->vocab_size);
    }
    if (o->progress) o->progress(o->progress_ctx, t->nmerges, nlp_vocab_count(t->vocab), o->vocab_size);
out:
    if (bufs)
        for (int i = 0; i < nthreads; i++) free(bufs[i].v);
    free(bufs);
    free(uniq);
    nlp_buf_free(&tok);
    return rc;
}

int nlp_bpe_train(const nlp_wordcount *wc, const nlp_bpe_train_opts *o, nlp_tok_spec *spec, nlp_bpe_train_stats *stats)
{
    if (stats) memset(stats, 0, sizeof *stats);
    if (nlp_wordcount_size(wc) == 0) return nlp_error(NLP_EDATA, "no words to learn from (the input is empty)");
    if (o->unk_token) {
        int found = 0;
        for (size_t i = 0; i < o->n_specials; i++) found |= strcmp(o->specials[i], o->unk_token) == 0;
        if (!found) return nlp_error(NLP_EINVAL, "the unknown token '%s' must be one of the special tokens", o->unk_token);
    }
    struct trainer t = {.o = o};
    t.plen = o->continuing_subword_prefix ? strlen(o->continuing_subword_prefix) : 0;
    t.vocab = nlp_vocab_new(o->vocab_size < (1u << 20) ? o->vocab_size : (1u << 20));
    int rc = t.vocab ? NLP_OK : NLP_ENOMEM;
    if (!rc) rc = setup(&t, wc, stats);
    if (!rc) rc = count_pairs(&t);
    if (!rc) rc = train_loop(&t, stats);
    nlp_added_token *added = NULL;
    size_t nadded = 0;
    if (!rc && o->n_specials) {
        added = nlp_calloc(o->n_specials, sizeof *added);
        if (!added) rc = NLP_ENOMEM;
        for (size_t i = 0; !rc && i < o->n_specials; i++) {
            int dup = 0;
            for (size_t k = 0; k < i; k++) dup |= strcmp(o->specials[k], o->specials[i]) == 0;
            if (dup) continue;
            nlp_added_token *a = &added[nadded++];
            a->id = nlp_vocab_find(t.vocab, o->specials[i], strlen(o->specials[i]));
            a->special = 1;
            if (!(a->content = nlp_strdup(o->specials[i]))) rc = NLP_ENOMEM;
        }
    }
    char *unk = NULL, *pre = NULL, *suf = NULL;
    if (!rc && ((o->unk_token && !(unk = nlp_strdup(o->unk_token))) ||
                (o->continuing_subword_prefix && !(pre = nlp_strdup(o->continuing_subword_prefix))) ||
                (o->end_of_word_suffix && !(suf = nlp_strdup(o->end_of_word_suffix)))))
        rc = NLP_ENOMEM;
    if (!rc) {
        nlp_vocab_free(spec->vocab);
        free(spec->merges);
        free(spec->bpe.unk_token);
        free(spec->bpe.continuing_subword_prefix);
        free(spec->bpe.end_of_word_suffix);
        nlp_added_free(spec->added, spec->n_added);
        spec->model = NLP_MODEL_BPE;
        spec->vocab = t.vocab;
        spec->merges = t.merges;
        spec->n_merges = t.nmerges;
        memset(&spec->bpe, 0, sizeof spec->bpe);
        spec->bpe.unk_token = unk;
        spec->bpe.continuing_subword_prefix = pre;
        spec->bpe.end_of_word_suffix = suf;
        spec->added = added;
        spec->n_added = nadded;
        t.vocab = NULL;
        t.merges = NULL;
        if (stats) stats->merges = t.nmerges;
    } else {
        free(unk);
        free(pre);
        free(suf);
        nlp_added_free(added, nadded);
    }
    nlp_vocab_free(t.vocab);
    free(t.merges);
    free(t.sym);
    free(t.woff);
    free(t.wlen);
    free(t.wcount);
    free(t.stamp);
    free(t.touched);
    free(t.heap.v);
    ptab_free(&t.pt);
    return rc;
}
