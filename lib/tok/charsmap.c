/*
 * charsmap.c — sentencepiece's precompiled character map. See charsmap.h.
 */
#include "tok/charsmap.h"
#include "base/err.h"
#include "text/unicode.h"
#include "text/utf8.h"

#include <stdlib.h>
#include <string.h>

static inline uint32_t has_leaf(uint32_t u) { return u >> 8 & 1; }
static inline uint32_t value_of(uint32_t u) { return u & 0x7FFFFFFFu; }
static inline uint32_t label_of(uint32_t u) { return u & 0x800000FFu; }
static inline uint32_t offset_of(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

int nlp_charsmap_init(nlp_charsmap *m, const void *blob, size_t n)
{
    memset(m, 0, sizeof *m);
    const uint8_t *b = blob;
    if (n <= 4) return nlp_error(NLP_EFORMAT, "%zu bytes: too short for a character map (a 4-byte size, then a trie)", n);
    uint32_t t = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    if (t == 0 || t % 4 || t > n - 4)
        return nlp_error(NLP_EFORMAT, "the trie's size (%u bytes) does not fit the %zu bytes of the map", t, n);
    m->nunit = t / 4;
    m->nnorm = n - 4 - t;
    m->unit = nlp_malloc(t);
    m->norm = nlp_malloc(m->nnorm + 1);
    if (!m->unit || !m->norm) {
        nlp_charsmap_free(m);
        return NLP_ENOMEM;
    }
    for (size_t i = 0; i < m->nunit; i++) {
        const uint8_t *p = b + 4 + 4 * i;
        m->unit[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    }
    memcpy(m->norm, b + 4 + t, m->nnorm);
    m->norm[m->nnorm] = 0;
    uint32_t root = offset_of(m->unit[0]);
    for (int c = 0; c < 256; c++) {
        uint32_t p = root ^ (uint32_t)c;
        if (p < m->nunit && label_of(m->unit[p]) == (uint32_t)c) m->first[c >> 3] |= (uint8_t)(1u << (c & 7));
    }
    return NLP_OK;
}

void nlp_charsmap_free(nlp_charsmap *m)
{
    free(m->unit);
    free(m->norm);
    memset(m, 0, sizeof *m);
}

/* Darts' commonPrefixSearch over s[0..n): calls back with each key's
 * length and value, shortest first, until fn returns nonzero or max keys
 * were seen. stop_at_nul: a NUL byte ends the search (HF's reading). */
static void prefixes(const nlp_charsmap *m, const uint8_t *s, size_t n, int stop_at_nul, int max,
                     int (*fn)(void *ctx, size_t len, uint32_t v), void *ctx)
{
    if (!m->nunit) return;
    uint32_t pos = offset_of(m->unit[0]);
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (stop_at_nul && !s[i]) return;
        pos ^= s[i];
        if (pos >= m->nunit) return;
        uint32_t u = m->unit[pos];
        if (label_of(u) != s[i]) return;
        pos ^= offset_of(u);
        if (has_leaf(u)) {
            if (pos >= m->nunit) return;
            uint32_t v = value_of(m->unit[pos]);
            if (v < m->nnorm && fn(ctx, i + 1, v)) return;
            if (++seen >= max) return;
        }
    }
}

int nlp_charsmap_ascii_tail(const nlp_charsmap *m, uint8_t c)
{
    if (!m->nunit || !nlp_charsmap_starts(m, c)) return 0;
    uint32_t node = offset_of(m->unit[0]) ^ c, u = m->unit[node];
    uint32_t pos = node ^ offset_of(u);
    int r = 0;
    if (has_leaf(u) && pos < m->nunit && value_of(m->unit[pos]) < m->nnorm) r |= 1;
    for (uint32_t l = 1; l < 128 && !(r & 2); l++) {
        uint32_t ch = pos ^ l;
        if (ch < m->nunit && label_of(m->unit[ch]) == l) r |= 2;
    }
    return r;
}

struct hit {
    size_t len;
    uint32_t v;
};

static int keep_longest(void *ctx, size_t len, uint32_t v)
{
    struct hit *h = ctx;
    if (len > h->len) *h = (struct hit){len, v};
    return 0;
}

static int keep_first(void *ctx, size_t len, uint32_t v)
{
    struct hit *h = ctx;
    *h = (struct hit){len, v};
    return 1;
}

size_t nlp_charsmap_longest(const nlp_charsmap *m, const char *s, size_t n, const char **out, size_t *outn)
{
    struct hit h = {0, 0};
    prefixes(m, (const uint8_t *)s, n, 0, 32, keep_longest, &h);
    if (!h.len) return 0;
    *out = m->norm + h.v;
    *outn = strlen(*out);
    return h.len;
}

int nlp_charsmap_first(const nlp_charsmap *m, const char *s, size_t n, const char **out, size_t *outn)
{
    struct hit h = {0, 0};
    prefixes(m, (const uint8_t *)s, n, 1, 1 << 30, keep_first, &h);
    if (!h.len) return 0;
    *out = m->norm + h.v;
    *outn = strlen(*out);
    return 1;
}

/* One character or cluster s[0..n) through HF's transform: its
 * replacement, or itself. */
static int put_transformed(const nlp_charsmap *m, const char *s, size_t n, nlp_buf *out)
{
    const char *r;
    size_t rn;
    if (nlp_charsmap_first(m, s, n, &r, &rn)) return nlp_buf_append(out, r, rn);
    return nlp_buf_append(out, s, n);
}

int nlp_charsmap_normalize_hf(const nlp_charsmap *m, const char *s, size_t n, nlp_buf *out)
{
    int32_t state = 0, prev = -1;
    size_t i = 0, g = 0; /* the cluster under way starts at g */
    while (i <= n) {
        size_t at = i;
        int32_t cp = -1;
        if (i < n) {
            cp = nlp_utf8_next(s, n, &i);
            if (cp < 0) cp = 0xFFFD; /* ill-formed input is the caller's to refuse; never a bad read */
        } else {
            i = n + 1;
        }
        if (at > g && (cp < 0 || nlp_uc_grapheme_break(&state, prev, cp))) {
            /* the cluster s[g..at) */
            const char *r;
            size_t rn, len = at - g;
            if (len < 6 && nlp_charsmap_first(m, s + g, len, &r, &rn)) {
                if (nlp_buf_append(out, r, rn)) return NLP_ENOMEM;
            } else {
                for (size_t k = g; k < at;) {
                    size_t e = k + nlp_utf8_seq_len(s, at, k);
                    if (e <= k) e = k + 1;
                    if (put_transformed(m, s + k, e - k, out)) return NLP_ENOMEM;
                    k = e;
                }
            }
            g = at;
        }
        prev = cp;
    }
    return NLP_OK;
}
