/*
 * bpe.c — BPE encoding of one word. See bpe.h.
 *
 * Merge rules live in an open-addressing table keyed by the pair of ids
 * with the rank and the id the merge produces: 8-byte slots (a << 16 | b,
 * 16-bit rank and id) when every id and rank fits 16 bits, as GPT-2's 50,257
 * tokens and 50,000 merges do (1 MiB instead of 2: the table is read at
 * random by every word seen for the first time, and L2 holds half of it
 * rather than a quarter), else 16-byte slots (a << 32 | b).
 */
#include "tok/bpe.h"
#include "base/err.h"
#include "base/mem.h"
#include "text/bytelevel.h"
#include "text/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_WORD 32
#define NO_RANK UINT32_MAX

struct mslot {
    uint64_t key;
    uint32_t rank; /* NO_RANK = empty */
    int32_t id;
};

/* the compact form: key a << 16 | b; rank NO_RANK16 = empty */
#define NO_RANK16 UINT16_MAX
struct mslot16 {
    uint32_t key;
    uint16_t rank, id;
};

struct nlp_bpe {
    const nlp_vocab *vocab;
    struct mslot *t;
    struct mslot16 *t16; /* instead of t when ids and ranks fit 16 bits */
    size_t mask;
    int shift;
    int byte_level;
    int32_t byte_id[256];
    /* classic: id of each ASCII character in its four spellings:
     * [0] plain, [1] with prefix, [2] with suffix, [3] both */
    int32_t ascii_id[4][128];
    nlp_bpe_opts o;
    int32_t unk_id;
    size_t plen, slen;
};

static inline size_t slot_of(const nlp_bpe *m, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> m->shift);
}

/* The keys of pair (a, b): 16-byte slots, and 8-byte ones (b masked: a
 * symbol of -1 makes the key of id 65535, which no such vocabulary has). */
static inline uint64_t key64(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }
static inline uint32_t key16(int32_t a, int32_t b) { return (uint32_t)a << 16 | ((uint32_t)b & 0xFFFFu); }

static inline uint32_t lookup(const nlp_bpe *m, int32_t a, int32_t b, int32_t *id)
{
    if (m->t16) { /* every id of this vocabulary is below 65536 */
        const uint32_t key = key16(a, b);
        for (size_t j = slot_of(m, key);; j = (j + 1) & m->mask) {
            const struct mslot16 *s = &m->t16[j];
            if (s->rank == NO_RANK16) return NO_RANK;
            if (s->key == key) {
                *id = s->id;
                return s->rank;
            }
        }
    }
    const uint64_t key = key64(a, b);
    for (size_t j = slot_of(m, key);; j = (j + 1) & m->mask) {
        const struct mslot *s = &m->t[j];
        if (s->rank == NO_RANK) return NO_RANK;
        if (s->key == key) {
            *id = s->id;
            return s->rank;
        }
    }
}

/* Starts fetching the slot where pair (a, b) is looked up first. */
static inline void prefetch_pair(const nlp_bpe *m, int32_t a, int32_t b)
{
    if (m->t16) __builtin_prefetch(&m->t16[slot_of(m, key16(a, b))]);
    else __builtin_prefetch(&m->t[slot_of(m, key64(a, b))]);
}

int64_t nlp_bpe_merge_rank(const nlp_bpe *m, int32_t a, int32_t b, int32_t *new_id)
{
    int32_t id;
    uint32_t r = lookup(m, a, b, &id);
    if (r == NO_RANK) return -1;
    if (new_id) *new_id = id;
    return r;
}

int32_t nlp_bpe_byte_id(const nlp_bpe *m, uint8_t b) { return m->byte_id[b]; }

void nlp_bpe_free(nlp_bpe *m)
{
    if (!m) return;
    free(m->t);
    free(m->t16);
    free(m->o.unk_token);
    free(m->o.continuing_subword_prefix);
    free(m->o.end_of_word_suffix);
    free(m);
}

void nlp_bpe_scratch_free(nlp_bpe_scratch *s)
{
    free(s->sym);
    free(s->prev);
    free(s->next);
    free(s->heap);
    free(s->tmp);
    memset(s, 0, sizeof *s);
}

static int dup_opt(char **dst, const char *src)
{
    *dst = NULL;
    if (!src) return NLP_OK;
    *dst = nlp_strdup(src);
    return *dst ? NLP_OK : NLP_ENOMEM;
}

/* Id of prefix? + s[0..n) + suffix? (variant bits 1 = prefix, 2 = suffix). */
static int32_t find_variant(const nlp_bpe *m, const char *s, size_t n, int variant, nlp_buf *b)
{
    if (!variant) return nlp_vocab_find(m->vocab, s, n);
    nlp_buf_reset(b);
    if ((variant & 1) && nlp_buf_append(b, m->o.continuing_subword_prefix, m->plen)) return -2;
    if (nlp_buf_append(b, s, n)) return -2;
    if ((variant & 2) && nlp_buf_append(b, m->o.end_of_word_suffix, m->slen)) return -2;
    return nlp_vocab_find(m->vocab, b->data, b->len);
}

static const char *tok_str(const nlp_vocab *v, int32_t id)
{
    const char *s = nlp_vocab_token(v, id, NULL);
    return s ? s : "?";
}

int nlp_bpe_new(nlp_bpe **out, const nlp_vocab *vocab, const int32_t *merges, size_t nmerges,
                const nlp_bpe_opts *opts, int byte_level)
{
    static const nlp_bpe_opts none = {0};
    if (!opts) opts = &none;
    nlp_bpe *m = nlp_calloc(1, sizeof *m);
    if (!m) return NLP_ENOMEM;
    m->vocab = vocab;
    m->byte_level = byte_level;
    m->unk_id = -1;
    int rc = NLP_OK;
    nlp_buf b = {0};
    if (dup_opt(&m->o.unk_token, opts->unk_token) || dup_opt(&m->o.continuing_subword_prefix, opts->continuing_subword_prefix) ||
        dup_opt(&m->o.end_of_word_suffix, opts->end_of_word_suffix)) {
        rc = NLP_ENOMEM;
        goto fail;
    }
    m->o.fuse_unk = opts->fuse_unk;
    m->o.byte_fallback = opts->byte_fallback;
    m->o.ignore_merges = opts->ignore_merges;
    m->plen = m->o.continuing_subword_prefix ? strlen(m->o.continuing_subword_prefix) : 0;
    m->slen = m->o.end_of_word_suffix ? strlen(m->o.end_of_word_suffix) : 0;
    if (m->o.unk_token) {
        m->unk_id = nlp_vocab_find(vocab, m->o.unk_token, strlen(m->o.unk_token));
        if (m->unk_id < 0) {
            rc = nlp_error(NLP_EFORMAT, "unk_token '%s' is not in the vocabulary", m->o.unk_token);
            goto fail;
        }
    }

    size_t ns = 16;
    int bits = 4;
    while (ns < nmerges * 2 + 2) {
        ns *= 2;
        bits++;
    }
    const char *const *tok;
    const uint32_t *tlen;
    nlp_vocab_arrays(vocab, &tok, &tlen);
    size_t vsize = nlp_vocab_size(vocab);
    if (vsize < NO_RANK16 && nmerges < NO_RANK16) {
        m->t16 = nlp_malloc_dense(ns * sizeof *m->t16);
        if (m->t16) memset(m->t16, 0xff, ns * sizeof *m->t16);
    } else {
        m->t = nlp_malloc_dense(ns * sizeof *m->t);
        if (m->t)
            for (size_t i = 0; i < ns; i++) m->t[i].rank = NO_RANK;
    }
    if (!m->t && !m->t16) {
        rc = NLP_ENOMEM;
        goto fail;
    }
    m->mask = ns - 1;
    m->shift = 64 - bits;
    /* The token a merge makes is most often the one after the previous
     * merge's (GPT-2's merge r makes token 256 + r; a trainer adds them in
     * order): that guess is checked against the two halves' bytes, which is
     * exact since a vocabulary holds each string once. The others are looked
     * up a chunk at a time (their lookups overlap: nlp_vocab_find_many). */
    enum { CHUNK = 1024 };
    nlp_span cat[CHUNK];
    int32_t cid[CHUNK];
    size_t off[CHUNK + 1], miss[CHUNK];
    int64_t base = -1; /* guess: merge r makes token base + r (known after the first chunk) */
    for (size_t r0 = 0; r0 < nmerges; r0 += CHUNK) {
        size_t k = nmerges - r0 < CHUNK ? nmerges - r0 : CHUNK, nmiss = 0;
        nlp_buf_reset(&b);
        for (size_t q = 0; q < k; q++) {
            size_t r = r0 + q;
            int32_t a = merges[2 * r], c = merges[2 * r + 1];
            const char *sa = a >= 0 && (size_t)a < vsize ? tok[a] : NULL, *sc = c >= 0 && (size_t)c < vsize ? tok[c] : NULL;
            if (!sa || !sc) {
                rc = nlp_error(NLP_EFORMAT, "merge %zu: token id %ld is not in the vocabulary", r, (long)(sa ? c : a));
                goto fail;
            }
            size_t la = tlen[a], lc = tlen[c];
            if (m->plen && lc >= m->plen && memcmp(sc, m->o.continuing_subword_prefix, m->plen) == 0) {
                sc += m->plen;
                lc -= m->plen;
            }
            int64_t g = base + (int64_t)r;
            if (base >= 0 && (size_t)g < vsize && tok[g] && tlen[g] == la + lc && memcmp(tok[g], sa, la) == 0 &&
                memcmp(tok[g] + la, sc, lc) == 0) {
                cid[q] = (int32_t)g;
                continue;
            }
            cid[q] = -1;
            miss[nmiss] = q;
            off[nmiss] = b.len;
            if (nlp_buf_reserve(&b, la + lc)) {
                rc = NLP_ENOMEM;
                goto fail;
            }
            memcpy(b.data + b.len, sa, la);
            memcpy(b.data + b.len + la, sc, lc);
            b.len += la + lc;
            nmiss++;
        }
        if (nmiss) {
            off[nmiss] = b.len;
            for (size_t q = 0; q < nmiss; q++) cat[q] = (nlp_span){b.data + off[q], off[q + 1] - off[q]};
            int32_t found[CHUNK];
            nlp_vocab_find_many(vocab, cat, nmiss, found);
            for (size_t q = 0; q < nmiss; q++) {
                size_t r = r0 + miss[q];
                if (found[q] < 0) {
                    rc = nlp_error(NLP_EFORMAT,
                                   "merge %zu ('%s' '%s'): the merged token '%.*s' is not in the vocabulary", r,
                                   tok_str(vocab, merges[2 * r]), tok_str(vocab, merges[2 * r + 1]), (int)cat[q].n,
                                   cat[q].s);
                    goto fail;
                }
                cid[miss[q]] = found[q];
            }
            /* the next chunk's guesses follow its last merge */
            base = (int64_t)cid[k - 1] - (int64_t)(r0 + k - 1);
        }
        for (size_t q = 0; q < k; q++) {
            size_t r = r0 + q;
            int32_t a = merges[2 * r], c = merges[2 * r + 1], id = cid[q];
            if (m->t16) {
                const uint32_t key = key16(a, c);
                size_t j = slot_of(m, key);
                while (m->t16[j].rank != NO_RANK16 && m->t16[j].key != key) j = (j + 1) & m->mask;
                m->t16[j] = (struct mslot16){key, (uint16_t)r, (uint16_t)id}; /* a later duplicate wins, as in HF */
                continue;
            }
            const uint64_t key = key64(a, c);
            size_t j = slot_of(m, key);
            while (m->t[j].rank != NO_RANK && m->t[j].key != key) j = (j + 1) & m->mask;
            m->t[j].key = key;
            m->t[j].rank = (uint32_t)r; /* a later duplicate wins, as in HF */
            m->t[j].id = id;
        }
    }

    for (int x = 0; x < 256; x++) {
        size_t l;
        const char *u = nlp_bytelevel_utf8((uint8_t)x, &l);
        m->byte_id[x] = nlp_vocab_find(vocab, u, l);
    }
    for (int v = 0; v < 4; v++)
        for (int c = 0; c < 128; c++) {
            char ch = (char)c;
            int32_t id = find_variant(m, &ch, 1, v & ((m->plen ? 1 : 0) | (m->slen ? 2 : 0)), &b);
            if (id == -2) {
                rc = NLP_ENOMEM;
                goto fail;
            }
            m->ascii_id[v][c] = id;
        }
    nlp_buf_free(&b);
    *out = m;
    return NLP_OK;
fail:
    nlp_buf_free(&b);
    nlp_bpe_free(m);
    return rc;
}

// --- encoding

static int ensure(nlp_bpe_scratch *s, size_t n)
{
    if (n <= s->cap) return NLP_OK;
    size_t c = s->cap ? s->cap : 64;
    while (c < n) c *= 2;
    int32_t *a = nlp_reallocarray(s->sym, c, sizeof *a);
    if (!a) return NLP_ENOMEM;
    s->sym = a;
    a = nlp_reallocarray(s->prev, c, sizeof *a);
    if (!a) return NLP_ENOMEM;
    s->prev = a;
    a = nlp_reallocarray(s->next, c, sizeof *a);
    if (!a) return NLP_ENOMEM;
    s->next = a;
    s->cap = c;
    return NLP_OK;
}

/* Builds the initial symbols of a classic (character) word into sc->sym;
 * returns their count, or -1 on ENOMEM. */
static long classic_symbols(const nlp_bpe *m, nlp_bpe_scratch *sc, const char *w, size_t n)
{
    if (ensure(sc, n + 1)) return -1;
    int32_t *sym = sc->sym;
    long k = 0;
    int32_t pending_unk = -1; /* fused unk waiting to be emitted */
    nlp_buf tmp = {0};
    tmp.data = sc->tmp;
    tmp.cap = sc->tmpcap;
    size_t i = 0;
    while (i < n) {
        size_t at = i;
        unsigned char c = (unsigned char)w[i];
        if (c < 0x80) i++;
        else nlp_utf8_next(w, n, &i); /* advances at least one byte */
        int variant = (at > 0 && m->plen ? 1 : 0) | (i == n && m->slen ? 2 : 0);
        int32_t id;
        if (c < 0x80) id = m->ascii_id[variant][c];
        else {
            id = find_variant(m, w + at, i - at, variant, &tmp);
            if (id == -2) goto oom;
        }
        if (id >= 0) {
            if (pending_unk >= 0) sym[k++] = pending_unk;
            pending_unk = -1;
            sym[k++] = id;
            continue;
        }
        if (m->o.byte_fallback) {
            /* HF spells the character with its prefix/suffix, then looks up
             * every byte of that as <0xHH> */
            nlp_buf sp = {0};
            if (((variant & 1) && nlp_buf_append(&sp, m->o.continuing_subword_prefix, m->plen)) ||
                nlp_buf_append(&sp, w + at, i - at) ||
                ((variant & 2) && nlp_buf_append(&sp, m->o.end_of_word_suffix, m->slen)) ||
                ensure(sc, (size_t)k + sp.len + 2 + (n - i))) {
                nlp_buf_free(&sp);
                goto oom;
            }
            sym = sc->sym;
            long k0 = k + (pending_unk >= 0);
            int all = 1;
            for (size_t q = 0; q < sp.len && all; q++) {
                char name[8];
                snprintf(name, sizeof name, "<0x%02X>", (unsigned char)sp.data[q]);
                int32_t bid = nlp_vocab_find(m->vocab, name, 6);
                if (bid < 0) all = 0;
                else sym[k0 + (long)q] = bid;
            }
            size_t added = sp.len;
            nlp_buf_free(&sp);
            if (all) {
                if (pending_unk >= 0) sym[k] = pending_unk;
                pending_unk = -1;
                k = k0 + (long)added;
                continue;
            }
        }
        if (m->unk_id >= 0) {
            if (pending_unk >= 0 && !m->o.fuse_unk) sym[k++] = pending_unk;
            pending_unk = m->unk_id;
        }
    }
    if (pending_unk >= 0) sym[k++] = pending_unk;
    sc->tmp = tmp.data;
    sc->tmpcap = tmp.cap;
    return k;
oom:
    sc->tmp = tmp.data;
    sc->tmpcap = tmp.cap;
    return -1;
}

/* Short words: each pair's rank and position in one key (rank << 5 |
 * position; none: all ones), so the next merge, the lowest rank and the
 * leftmost of equal ones, is the smallest key: a minimum over the array
 * without a branch (a compare-and-branch per pair mispredicted). Merge,
 * shift the rest left (their positions one less), refresh the two
 * neighbouring pairs. */
#define NO_KEY UINT64_MAX
_Static_assert(SMALL_WORD <= 32, "a position takes 5 bits of a key");

/* The key of the pair at position i whose rank is r (NO_RANK: none). */
static inline uint64_t pair_key(uint32_t r, size_t i) { return r == NO_RANK ? NO_KEY : (uint64_t)r << 5 | i; }

static size_t merge_small(const nlp_bpe *m, int32_t *sym, size_t n)
{
    uint64_t key[SMALL_WORD];
    int32_t nid[SMALL_WORD];
    /* the first pairs' slots are fetched together: their cache misses
     * overlap (a word not in the word cache is mostly a cold one) */
    for (size_t i = 0; i + 1 < n; i++) prefetch_pair(m, sym[i], sym[i + 1]);
    for (size_t i = 0; i + 1 < n; i++) key[i] = pair_key(lookup(m, sym[i], sym[i + 1], &nid[i]), i);
    while (n > 1) {
        uint64_t best = NO_KEY;
        for (size_t i = 0; i + 1 < n; i++) best = key[i] < best ? key[i] : best;
        if (best == NO_KEY) break;
        const size_t at = (size_t)(best & 31);
        sym[at] = nid[at];
        for (size_t i = at + 1; i + 1 < n; i++) {
            sym[i] = sym[i + 1];
            key[i] = key[i + 1] == NO_KEY ? NO_KEY : key[i + 1] - 1;
            nid[i] = nid[i + 1];
        }
        n--;
        if (at > 0) key[at - 1] = pair_key(lookup(m, sym[at - 1], sym[at], &nid[at - 1]), at - 1);
        if (at + 1 < n) key[at] = pair_key(lookup(m, sym[at], sym[at + 1], &nid[at]), at);
    }
    return n;
}

/* Min-heap of (rank << 32 | position). */
static inline void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p] <= v) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static inline uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], v = h[--*n];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    if (m) h[i] = v;
    return top;
}

/* Long words: HF's algorithm — a linked list of symbols and a heap of
 * candidate merges, stale entries skipped. */
static long merge_heap(const nlp_bpe *m, nlp_bpe_scratch *sc, size_t n)
{
    int32_t *sym = sc->sym, *prev = sc->prev, *next = sc->next;
    if (sc->hcap < 2 * n) {
        uint64_t *h = nlp_reallocarray(sc->heap, 2 * n, sizeof *h);
        if (!h) return -1;
        sc->heap = h;
        sc->hcap = 2 * n;
    }
    uint64_t *heap = sc->heap;
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        int32_t id;
        uint32_t r = lookup(m, sym[i], sym[i + 1], &id);
        if (r != NO_RANK) heap_push(heap, &hn, (uint64_t)r << 32 | i);
    }
    /* a removed symbol has sym = -1 */
    while (hn) {
        if (hn + 2 > sc->hcap) {
            uint64_t *h = nlp_reallocarray(sc->heap, sc->hcap * 2, sizeof *h);
            if (!h) return -1;
            sc->heap = heap = h;
            sc->hcap *= 2;
        }
        uint64_t top = heap_pop(heap, &hn);
        size_t pos = (uint32_t)top;
        uint32_t rank = (uint32_t)(top >> 32);
        if (sym[pos] < 0 || next[pos] < 0) continue;
        size_t nx = (size_t)next[pos];
        int32_t nid;
        uint32_t r = lookup(m, sym[pos], sym[nx], &nid);
        if (r == NO_RANK || r != rank) continue; /* stale: the pair at pos changed */
        sym[pos] = nid;
        sym[nx] = -1;
        next[pos] = next[nx];
        if (next[nx] >= 0) prev[next[nx]] = (int32_t)pos;
        int32_t id;
        if (prev[pos] >= 0) {
            uint32_t pr = lookup(m, sym[prev[pos]], sym[pos], &id);
            if (pr != NO_RANK) heap_push(heap, &hn, (uint64_t)pr << 32 | (uint32_t)prev[pos]);
        }
        if (next[pos] >= 0) {
            uint32_t nr = lookup(m, sym[pos], sym[next[pos]], &id);
            if (nr != NO_RANK) heap_push(heap, &hn, (uint64_t)nr << 32 | pos);
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (sym[i] >= 0) sym[k++] = sym[i];
    return (long)k;
}

int nlp_bpe_encode_word(const nlp_bpe *m, nlp_bpe_scratch *sc, const char *w, size_t n, nlp_ids *out)
{
    if (n == 0) return NLP_OK;
    if (m->o.ignore_merges) {
        int32_t id;
        if (m->byte_level) {
            nlp_buf b = {.data = sc->tmp, .cap = sc->tmpcap};
            nlp_buf_reset(&b);
            if (nlp_bytelevel_encode(w, n, &b)) return NLP_ENOMEM;
            sc->tmp = b.data;
            sc->tmpcap = b.cap;
            id = nlp_vocab_find(m->vocab, b.data, b.len);
        } else {
            id = nlp_vocab_find(m->vocab, w, n);
        }
        if (id >= 0) return nlp_ids_push(out, id);
    }
    long k;
    if (m->byte_level) {
        if (ensure(sc, n)) return NLP_ENOMEM;
        k = 0;
        int32_t pending_unk = -1;
        for (size_t i = 0; i < n; i++) {
            int32_t id = m->byte_id[(uint8_t)w[i]];
            if (id >= 0) {
                if (pending_unk >= 0) sc->sym[k++] = pending_unk;
                pending_unk = -1;
                sc->sym[k++] = id;
            } else if (m->unk_id >= 0) {
                if (pending_unk >= 0 && !m->o.fuse_unk) sc->sym[k++] = pending_unk;
                pending_unk = m->unk_id;
            }
        }
        if (pending_unk >= 0) sc->sym[k++] = pending_unk;
    } else {
        k = classic_symbols(m, sc, w, n);
        if (k < 0) return NLP_ENOMEM;
    }
    if (k <= SMALL_WORD) k = (long)merge_small(m, sc->sym, (size_t)k);
    else if ((k = merge_heap(m, sc, (size_t)k)) < 0) return NLP_ENOMEM;
    return nlp_ids_append(out, sc->sym, (size_t)k);
}
