/*
 * wordpiece_train.c — WordPiece training by the likelihood score, and HF's
 * frequency variant through the BPE trainer. See wordpiece_train.h.
 *
 * Data of the likelihood trainer:
 *   words   every distinct word of two or more symbols: its symbols (ids)
 *           in one array, rewritten in place as merges shrink them, and its
 *           count
 *   tokens  per id: freq (occurrences in the current segmentation) and the
 *           adjacency list of the pair records it is part of
 *   pairs   one record per pair (a, b) ever seen: count, the words that
 *           gained it since it was last merged (duplicates allowed, skipped
 *           by a per-merge stamp), version, and whether it is listed in a's
 *           and b's adjacency lists
 *   heap    entries (count, freq a, freq b, record, version); see the header
 *           for the lazy rules
 */
#include "tok/wordpiece_train.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/mem.h"
#include "text/utf8.h"
#include "tok/alphabet.h"
#include "tok/bpe_train.h"

#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

// --- records

struct pair {
    int64_t count;
    int32_t a, b;
    uint32_t *w; /* words that gained the pair */
    uint32_t nw, cw;
    uint32_t ver;   /* bumped at every push: older heap entries are dead */
    uint32_t stamp; /* the merge that last queued it */
    uint8_t in_a, in_b;
};

struct tokinfo {
    int64_t freq;
    uint32_t *adj; /* pair records holding this token */
    uint32_t nadj, cadj;
};

struct hent {
    int64_t count, fa, fb;
    uint32_t rec, ver;
};

struct trainer {
    const nlp_wordpiece_train_opts *o;
    const char *prefix;
    size_t plen;
    nlp_vocab *vocab;
    struct tokinfo *tok;
    size_t ntok; /* entries allocated in tok */
    /* words */
    int32_t *sym;
    size_t *woff;
    uint32_t *wlen, *wstamp;
    int64_t *wcount;
    size_t nwords;
    /* pairs */
    nlp_idmap pmap; /* a << 32 | b -> record */
    struct pair *p;
    size_t np, cp;
    /* heap */
    struct hent *h;
    size_t nh, ch;
    uint32_t step;
    int64_t minf;
    size_t merges;
};

static int ensure_tokens(struct trainer *t, size_t n)
{
    if (n <= t->ntok) return NLP_OK;
    size_t c = t->ntok ? t->ntok : 256;
    while (c < n) c *= 2;
    struct tokinfo *g = nlp_reallocarray(t->tok, c, sizeof *g);
    if (!g) return NLP_ENOMEM;
    memset(g + t->ntok, 0, (c - t->ntok) * sizeof *g);
    t->tok = g;
    t->ntok = c;
    return NLP_OK;
}

/* Appends x to a growable uint32 list. */
static int push_u32(uint32_t **v, uint32_t *n, uint32_t *cap, uint32_t x)
{
    if (*n == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 4;
        uint32_t *g = nlp_reallocarray(*v, nc, sizeof *g);
        if (!g) return NLP_ENOMEM;
        *v = g;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return NLP_OK;
}

static inline uint64_t pkey(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

/* Pair (a, b) gains delta occurrences (weighted) in word w. */
static int pair_add(struct trainer *t, int32_t a, int32_t b, int64_t delta, uint32_t w)
{
    long r = nlp_idmap_find(&t->pmap, pkey(a, b));
    if (r < 0) {
        if (t->np >= UINT32_MAX - 1 || nlp_grow(&t->p, &t->cp, t->np + 1, sizeof *t->p) ||
            nlp_idmap_put(&t->pmap, pkey(a, b), (uint32_t)t->np))
            return NLP_ENOMEM;
        memset(&t->p[t->np], 0, sizeof *t->p);
        t->p[t->np].a = a;
        t->p[t->np].b = b;
        t->p[t->np].stamp = UINT32_MAX;
        r = (long)t->np++;
    }
    struct pair *p = &t->p[r];
    p->count += delta;
    if (delta <= 0) return NLP_OK;
    if (!(p->nw && p->w[p->nw - 1] == w) && push_u32(&p->w, &p->nw, &p->cw, w)) return NLP_ENOMEM;
    if (!p->in_a) {
        struct tokinfo *k = &t->tok[a];
        if (push_u32(&k->adj, &k->nadj, &k->cadj, (uint32_t)r)) return NLP_ENOMEM;
        p->in_a = 1;
    }
    if (a != b && !p->in_b) {
        struct tokinfo *k = &t->tok[b];
        if (push_u32(&k->adj, &k->nadj, &k->cadj, (uint32_t)r)) return NLP_ENOMEM;
        p->in_b = 1;
    }
    return NLP_OK;
}

// --- heap: best = highest score, then count, then smaller merged string, then (a, b)

/* Compares the byte strings x1 x2 and y1 y2 (each the concatenation of two
 * parts). */
static int cmp_cat(const char *x1, size_t nx1, const char *x2, size_t nx2, const char *y1, size_t ny1, const char *y2,
                   size_t ny2)
{
    size_t nx = nx1 + nx2, ny = ny1 + ny2, i = 0;
    while (i < nx && i < ny) {
        const char *xp = i < nx1 ? x1 + i : x2 + (i - nx1);
        const char *yp = i < ny1 ? y1 + i : y2 + (i - ny1);
        size_t xl = i < nx1 ? nx1 - i : nx - i, yl = i < ny1 ? ny1 - i : ny - i, k = xl < yl ? xl : yl;
        int c = memcmp(xp, yp, k);
        if (c) return c;
        i += k;
    }
    return (nx > ny) - (nx < ny);
}

/* The merged string of record r: token a, then token b without the prefix. */
static void merged_parts(const struct trainer *t, uint32_t r, const char **s1, size_t *n1, const char **s2, size_t *n2)
{
    *s1 = nlp_vocab_token(t->vocab, t->p[r].a, n1);
    *s2 = nlp_vocab_token(t->vocab, t->p[r].b, n2);
    if (*n2 >= t->plen && memcmp(*s2, t->prefix, t->plen) == 0) {
        *s2 += t->plen;
        *n2 -= t->plen;
    }
}

static int better(const struct trainer *t, const struct hent *x, const struct hent *y)
{
    u128 lx = (u128)(uint64_t)x->count * (uint64_t)y->fa * (uint64_t)y->fb;
    u128 ly = (u128)(uint64_t)y->count * (uint64_t)x->fa * (uint64_t)x->fb;
    if (lx != ly) return lx > ly;
    if (x->count != y->count) return x->count > y->count;
    if (x->rec == y->rec) return 0;
    const char *a1, *a2, *b1, *b2;
    size_t na1, na2, nb1, nb2;
    merged_parts(t, x->rec, &a1, &na1, &a2, &na2);
    merged_parts(t, y->rec, &b1, &nb1, &b2, &nb2);
    int c = cmp_cat(a1, na1, a2, na2, b1, nb1, b2, nb2);
    if (c) return c < 0;
    return pkey(t->p[x->rec].a, t->p[x->rec].b) < pkey(t->p[y->rec].a, t->p[y->rec].b);
}

static void sift_down(struct trainer *t, size_t i)
{
    struct hent x = t->h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= t->nh) break;
        if (c + 1 < t->nh && better(t, &t->h[c + 1], &t->h[c])) c++;
        if (!better(t, &t->h[c], &x)) break;
        t->h[i] = t->h[c];
        i = c;
    }
    t->h[i] = x;
}

/* A fresh heap entry for record r (its version bumped). */
static struct hent entry(struct trainer *t, uint32_t r)
{
    struct pair *p = &t->p[r];
    p->ver++;
    return (struct hent){p->count, t->tok[p->a].freq, t->tok[p->b].freq, r, p->ver};
}

static int push(struct trainer *t, uint32_t r)
{
    if (t->nh == t->ch && nlp_grow(&t->h, &t->ch, t->nh + 1, sizeof *t->h)) return NLP_ENOMEM;
    struct hent e = entry(t, r);
    size_t i = t->nh++;
    while (i > 0) {
        size_t q = (i - 1) / 2;
        if (!better(t, &e, &t->h[q])) break;
        t->h[i] = t->h[q];
        i = q;
    }
    t->h[i] = e;
    return NLP_OK;
}

static struct hent pop(struct trainer *t)
{
    struct hent top = t->h[0];
    t->h[0] = t->h[--t->nh];
    if (t->nh) sift_down(t, 0);
    return top;
}

/* The heap from scratch: one entry per pair that may still merge. */
static int rebuild(struct trainer *t)
{
    t->nh = 0;
    for (size_t r = 0; r < t->np; r++) {
        if (t->p[r].count < t->minf) continue;
        if (t->nh == t->ch && nlp_grow(&t->h, &t->ch, t->nh + 1, sizeof *t->h)) return NLP_ENOMEM;
        t->h[t->nh++] = entry(t, (uint32_t)r);
    }
    for (size_t i = t->nh / 2; i-- > 0;) sift_down(t, i);
    return NLP_OK;
}

// --- setup

static int by_key(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Special tokens, the initial alphabet, the words as symbols and the token
 * frequencies. */
static int setup(struct trainer *t, const nlp_wordcount *wc, nlp_wordpiece_train_stats *stats)
{
    const nlp_wordpiece_train_opts *o = t->o;
    size_t nw = nlp_wordcount_size(wc);
    nlp_alphabet kept = {0};
    nlp_idmap spell = {0}; /* cp * 2 + (continuing) -> token id */
    int64_t *keys = NULL;
    size_t nkeys = 0, ckeys = 0, total = 0;
    nlp_buf b = {0};
    int rc = NLP_ENOMEM;
    if (nlp_idmap_init(&spell, 512)) goto out;
    for (size_t i = 0; i < o->n_specials; i++)
        if (nlp_vocab_add(t->vocab, o->specials[i], strlen(o->specials[i]), NULL)) goto out;
    size_t nspecial = nlp_vocab_count(t->vocab);
    if (nlp_alphabet_build(&kept, wc, 0, 0, o->limit_alphabet)) goto out;

    /* the spellings words use: first character plain, the others prefixed;
     * sorted as keys kind * 2^32 + code point */
    for (size_t i = 0; i < nw; i++) {
        size_t n, k = 0;
        const char *w = nlp_wordcount_word(wc, i, &n, NULL);
        for (int first = 1; k < n;) {
            int32_t cp = nlp_alphabet_next(w, n, &k, 0);
            if (!nlp_alphabet_has(&kept, cp)) continue;
            uint64_t key = (uint64_t)cp * 2 + !first;
            total++;
            first = 0;
            if (nlp_idmap_find(&spell, key) >= 0) continue;
            if (nlp_idmap_put(&spell, key, 0) || nlp_grow(&keys, &ckeys, nkeys + 1, sizeof *keys)) goto out;
            keys[nkeys++] = (int64_t)((key & 1) << 32 | (uint64_t)cp);
        }
    }
    qsort(keys, nkeys, sizeof *keys, by_key);
    for (size_t i = 0; i < nkeys; i++) {
        int32_t cp = (int32_t)(keys[i] & 0xFFFFFFFF), id;
        int cont = (int)(keys[i] >> 32);
        nlp_buf_reset(&b);
        if ((cont && nlp_buf_puts(&b, t->prefix)) || nlp_utf8_append(&b, cp) ||
            nlp_vocab_add(t->vocab, b.data, b.len, &id) || nlp_idmap_put(&spell, (uint64_t)cp * 2 + (uint64_t)cont, (uint32_t)id))
            goto out;
    }
    if (stats) stats->alphabet = nkeys;
    if (nlp_vocab_count(t->vocab) > o->vocab_size) {
        /* it depends on the data, not on the command line alone: NLP_EDATA */
        rc = nlp_error(NLP_EDATA,
                       "the vocabulary size %zu is smaller than the %zu special tokens plus the %zu characters of the "
                       "initial alphabet: this data needs a vocabulary of at least %zu",
                       o->vocab_size, nspecial, nkeys, nlp_vocab_count(t->vocab));
        goto out;
    }
    if (ensure_tokens(t, nlp_vocab_size(t->vocab))) goto out;

    /* the words as symbols; one-symbol words only count in freq */
    t->sym = nlp_malloc((total ? total : 1) * sizeof *t->sym);
    t->woff = nlp_malloc((nw ? nw : 1) * sizeof *t->woff);
    t->wlen = nlp_malloc((nw ? nw : 1) * sizeof *t->wlen);
    t->wcount = nlp_malloc((nw ? nw : 1) * sizeof *t->wcount);
    t->wstamp = nlp_calloc(nw ? nw : 1, sizeof *t->wstamp);
    if (!t->sym || !t->woff || !t->wlen || !t->wcount || !t->wstamp) goto out;
    size_t at = 0;
    u128 weighted = 0;
    for (size_t i = 0; i < nw; i++) {
        size_t n, k = 0, start = at;
        uint64_t cnt;
        const char *w = nlp_wordcount_word(wc, i, &n, &cnt);
        for (int first = 1; k < n;) {
            int32_t cp = nlp_alphabet_next(w, n, &k, 0);
            if (!nlp_alphabet_has(&kept, cp)) continue;
            int32_t id = (int32_t)nlp_idmap_find(&spell, (uint64_t)cp * 2 + !first);
            first = 0;
            t->sym[at++] = id;
            t->tok[id].freq += (int64_t)cnt;
        }
        weighted += (u128)cnt * (at - start);
        if (at - start < 2) {
            at = start;
            continue;
        }
        t->woff[t->nwords] = start;
        t->wlen[t->nwords] = (uint32_t)(at - start);
        t->wcount[t->nwords] = (int64_t)cnt;
        t->nwords++;
    }
    /* exact scores compare products of three counts in 128 bits */
    if (weighted >= (u128)1 << 42) {
        rc = nlp_error(NLP_EINVAL, "the corpus has more than 2^42 characters: too many for exact scores");
        goto out;
    }
    rc = NLP_OK;
out:
    nlp_alphabet_free(&kept);
    nlp_idmap_free(&spell);
    free(keys);
    nlp_buf_free(&b);
    return rc;
}

static int count_pairs(struct trainer *t)
{
    if (nlp_idmap_init(&t->pmap, t->nwords * 2)) return NLP_ENOMEM;
    for (size_t w = 0; w < t->nwords; w++) {
        const int32_t *s = t->sym + t->woff[w];
        for (uint32_t i = 0; i + 1 < t->wlen[w]; i++)
            if (pair_add(t, s[i], s[i + 1], t->wcount[w], (uint32_t)w)) return NLP_ENOMEM;
    }
    return rebuild(t);
}

// --- merging

/* Rewrites word w, merging (a, b) into c left to right, with the exact
 * count changes: per merged occurrence, -1 for (a, b), and the neighbours'
 * pairs move from a or b to c. */
static int merge_word(struct trainer *t, uint32_t w, int32_t a, int32_t b, int32_t c)
{
    int32_t *s = t->sym + t->woff[w];
    size_t n = t->wlen[w], i = 0, j = 0;
    int64_t k = t->wcount[w];
    while (i < n) {
        if (i + 1 < n && s[i] == a && s[i + 1] == b) {
            if (j > 0 && (pair_add(t, s[j - 1], a, -k, w) || pair_add(t, s[j - 1], c, k, w))) return NLP_ENOMEM;
            if (i + 2 < n && (pair_add(t, b, s[i + 2], -k, w) || pair_add(t, c, s[i + 2], k, w))) return NLP_ENOMEM;
            if (pair_add(t, a, b, -k, w)) return NLP_ENOMEM;
            t->tok[a].freq -= k;
            t->tok[b].freq -= k;
            t->tok[c].freq += k;
            s[j++] = c;
            i += 2;
        } else {
            s[j++] = s[i++];
        }
    }
    t->wlen[w] = (uint32_t)j;
    return NLP_OK;
}

/* Pushes the pairs of token x again (their scores may have risen) and drops
 * the dead ones from its list. */
static int requeue(struct trainer *t, int32_t x)
{
    struct tokinfo *k = &t->tok[x];
    uint32_t i = 0;
    while (i < k->nadj) {
        uint32_t r = k->adj[i];
        struct pair *p = &t->p[r];
        if (p->count == 0) {
            if (p->a == x) p->in_a = 0;
            else p->in_b = 0;
            k->adj[i] = k->adj[--k->nadj];
            continue;
        }
        i++;
        if (p->stamp == t->step) continue;
        p->stamp = t->step;
        if (p->count >= t->minf && push(t, r)) return NLP_ENOMEM;
    }
    return NLP_OK;
}

static int train_loop(struct trainer *t, nlp_wordpiece_train_stats *stats)
{
    const nlp_wordpiece_train_opts *o = t->o;
    nlp_buf tok = {0};
    int rc = NLP_OK;
    while (nlp_vocab_count(t->vocab) < o->vocab_size && t->nh) {
        struct hent top = pop(t);
        struct pair *p = &t->p[top.rec];
        if (top.ver != p->ver || p->count < t->minf) continue; /* superseded, or no longer frequent enough */
        if (top.count != p->count || top.fa != t->tok[p->a].freq || top.fb != t->tok[p->b].freq) {
            /* its score fell since: back in with the current counts */
            if ((rc = push(t, top.rec))) goto out;
            continue;
        }
        int32_t a = p->a, b = p->b, c;
        const char *s1, *s2;
        size_t n1, n2;
        merged_parts(t, top.rec, &s1, &n1, &s2, &n2);
        nlp_buf_reset(&tok);
        if (nlp_buf_append(&tok, s1, n1) || nlp_buf_append(&tok, s2, n2) ||
            nlp_vocab_add(t->vocab, tok.data, tok.len, &c) || ensure_tokens(t, (size_t)c + 1)) {
            rc = NLP_ENOMEM;
            goto out;
        }
        if (o->on_merge)
            o->on_merge(o->merge_ctx, t->vocab, a, b, c, (uint64_t)top.count, (uint64_t)top.fa, (uint64_t)top.fb);
        t->merges++;

        /* rewrite the words that hold the pair; take its word list out
         * first (records move as pairs are created) */
        t->step++;
        uint32_t *ws = t->p[top.rec].w, nw = t->p[top.rec].nw;
        t->p[top.rec].w = NULL;
        t->p[top.rec].nw = t->p[top.rec].cw = 0;
        for (uint32_t k = 0; k < nw && !rc; k++) {
            uint32_t w = ws[k];
            if (t->wstamp[w] == t->step) continue;
            t->wstamp[w] = t->step;
            rc = merge_word(t, w, a, b, c);
        }
        free(ws);
        if (rc || (rc = requeue(t, a)) || (a != b && (rc = requeue(t, b))) || (rc = requeue(t, c))) goto out;
        if (t->nh > 2 * t->np + ((size_t)1 << 20) && (rc = rebuild(t))) goto out;
        if (o->progress && t->merges % 256 == 0)
            o->progress(o->progress_ctx, t->merges, nlp_vocab_count(t->vocab), o->vocab_size);
    }
    if (o->progress) o->progress(o->progress_ctx, t->merges, nlp_vocab_count(t->vocab), o->vocab_size);
    if (stats) stats->merges = t->merges;
out:
    nlp_buf_free(&tok);
    return rc;
}

static void trainer_free(struct trainer *t)
{
    nlp_vocab_free(t->vocab);
    if (t->tok)
        for (size_t i = 0; i < t->ntok; i++) free(t->tok[i].adj);
    free(t->tok);
    free(t->sym);
    free(t->woff);
    free(t->wlen);
    free(t->wstamp);
    free(t->wcount);
    for (size_t i = 0; i < t->np; i++) free(t->p[i].w);
    free(t->p);
    nlp_idmap_free(&t->pmap);
    free(t->h);
}

// --- the model part of the spec

/* Replaces spec's model part with a WordPiece model over vocab (taken) and
 * the special tokens. */
static int fill_spec(nlp_tok_spec *spec, nlp_vocab *vocab, const nlp_wordpiece_train_opts *o, const char *prefix)
{
    nlp_added_token *added = nlp_calloc(o->n_specials ? o->n_specials : 1, sizeof *added);
    char *unk = nlp_strdup(o->unk_token ? o->unk_token : NLP_WORDPIECE_UNK), *pre = nlp_strdup(prefix);
    size_t nadded = 0;
    int rc = added && unk && pre ? NLP_OK : NLP_ENOMEM;
    for (size_t i = 0; !rc && i < o->n_specials; i++) {
        int dup = 0;
        for (size_t k = 0; k < i; k++) dup |= strcmp(o->specials[k], o->specials[i]) == 0;
        if (dup) continue;
        nlp_added_token *a = &added[nadded++];
        a->id = nlp_vocab_find(vocab, o->specials[i], strlen(o->specials[i]));
        a->special = 1;
        if (!(a->content = nlp_strdup(o->specials[i]))) rc = NLP_ENOMEM;
    }
    if (rc) {
        nlp_added_free(added, nadded);
        free(unk);
        free(pre);
        return rc;
    }
    nlp_vocab_free(spec->vocab);
    free(spec->merges);
    free(spec->bpe.unk_token);
    free(spec->bpe.continuing_subword_prefix);
    free(spec->bpe.end_of_word_suffix);
    free(spec->wp.unk_token);
    free(spec->wp.continuing_subword_prefix);
    nlp_added_free(spec->added, spec->n_added);
    spec->merges = NULL;
    spec->n_merges = 0;
    memset(&spec->bpe, 0, sizeof spec->bpe);
    spec->model = NLP_MODEL_WORDPIECE;
    spec->vocab = vocab;
    spec->wp = (nlp_wordpiece_opts){unk, pre, NLP_WORDPIECE_MAX_CHARS};
    spec->added = added;
    spec->n_added = nadded;
    return NLP_OK;
}

/* HF's variant: BPE with the prefix, ranked by pair count. */
static int train_frequency(const nlp_wordcount *wc, const nlp_wordpiece_train_opts *o, const char *prefix,
                           nlp_tok_spec *spec, nlp_wordpiece_train_stats *stats)
{
    nlp_bpe_train_opts bo = {
        .vocab_size = o->vocab_size,
        .min_frequency = o->min_frequency,
        .specials = o->specials,
        .n_specials = o->n_specials,
        .limit_alphabet = o->limit_alphabet,
        .continuing_subword_prefix = prefix,
        .threads = o->threads,
        .progress = o->progress,
        .progress_ctx = o->progress_ctx,
    };
    nlp_tok_spec tmp = {0};
    nlp_bpe_train_stats bs;
    int rc = nlp_bpe_train(wc, &bo, &tmp, &bs);
    if (!rc) {
        rc = fill_spec(spec, tmp.vocab, o, prefix);
        if (!rc) tmp.vocab = NULL;
    }
    nlp_tok_spec_free(&tmp);
    if (!rc && stats) {
        stats->alphabet = bs.alphabet;
        stats->merges = bs.merges;
    }
    return rc;
}

int nlp_wordpiece_train(const nlp_wordcount *wc, const nlp_wordpiece_train_opts *o, nlp_tok_spec *spec,
                        nlp_wordpiece_train_stats *stats)
{
    if (stats) memset(stats, 0, sizeof *stats);
    const char *prefix = o->prefix ? o->prefix : NLP_WORDPIECE_PREFIX;
    if (!*prefix) return nlp_error(NLP_EINVAL, "the continuing-subword prefix must not be empty");
    if (nlp_wordcount_size(wc) == 0) return nlp_error(NLP_EDATA, "no words to learn from (the input is empty)");
    if (o->score == NLP_WP_SCORE_FREQUENCY) return train_frequency(wc, o, prefix, spec, stats);

    struct trainer t = {.o = o, .prefix = prefix, .plen = strlen(prefix)};
    t.minf = o->min_frequency > 1 ? (int64_t)(o->min_frequency < INT64_MAX ? o->min_frequency : INT64_MAX) : 1;
    t.vocab = nlp_vocab_new(o->vocab_size < (1u << 20) ? o->vocab_size : (1u << 20));
    int rc = t.vocab ? NLP_OK : NLP_ENOMEM;
    if (!rc) rc = setup(&t, wc, stats);
    if (!rc) rc = count_pairs(&t);
    if (!rc) rc = train_loop(&t, stats);
    if (!rc && !(rc = fill_spec(spec, t.vocab, o, prefix))) t.vocab = NULL;
    trainer_free(&t);
    return rc;
}
