/*
 * vocab.c — token <-> id tables. See vocab.h.
 *
 * Tokens live in an arena; the string -> id direction is an nlp_strmap.
 */
#include "tok/vocab.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

struct nlp_vocab {
    nlp_strmap *map;
    const char **tok; /* by id; NULL = hole */
    uint32_t *len;
    size_t size, cap, count;
};

static int ensure(nlp_vocab *v, size_t need)
{
    if (need <= v->cap) return NLP_OK;
    if (!v->cap) { /* zeroed, and written all over by a vocabulary file */
        size_t c = need > 16 ? need : 16;
        v->tok = nlp_calloc_dense(c, sizeof *v->tok);
        v->len = nlp_calloc_dense(c, sizeof *v->len);
        if (!v->tok || !v->len) return NLP_ENOMEM;
        v->cap = c;
        return NLP_OK;
    }
    size_t c = v->cap;
    while (c < need) c *= 2;
    const char **t = nlp_reallocarray(v->tok, c, sizeof *t);
    if (!t) return NLP_ENOMEM;
    v->tok = t;
    uint32_t *l = nlp_reallocarray(v->len, c, sizeof *l);
    if (!l) return NLP_ENOMEM;
    v->len = l;
    memset(v->tok + v->cap, 0, (c - v->cap) * sizeof *t);
    memset(v->len + v->cap, 0, (c - v->cap) * sizeof *l);
    v->cap = c;
    return NLP_OK;
}

nlp_vocab *nlp_vocab_new(size_t hint)
{
    nlp_vocab *v = nlp_calloc(1, sizeof *v);
    if (!v) return NULL;
    v->map = nlp_strmap_new(hint ? hint : 16);
    if (!v->map || ensure(v, hint)) {
        nlp_vocab_free(v);
        return NULL;
    }
    return v;
}

void nlp_vocab_free(nlp_vocab *v)
{
    if (!v) return;
    nlp_strmap_free(v->map);
    free(v->tok);
    free(v->len);
    free(v);
}


/* Points tok[id] at the key the map took in last (n bytes). */
static void record(nlp_vocab *v, int32_t id, size_t n)
{
    size_t kn;
    v->tok[id] = nlp_strmap_key(v->map, nlp_strmap_size(v->map) - 1, &kn);
    v->len[id] = (uint32_t)n;
    if ((size_t)id >= v->size) v->size = (size_t)id + 1;
    v->count++;
}

/* Inserts into the map and points tok[id] at the map's copy of the key. */
static int place(nlp_vocab *v, int32_t id, const char *s, size_t n)
{
    int is_new;
    int64_t *slot = nlp_strmap_slot(v->map, s, n, &is_new);
    if (!slot) return NLP_ENOMEM;
    *slot = id;
    record(v, id, n);
    return NLP_OK;
}

int nlp_vocab_add(nlp_vocab *v, const char *s, size_t n, int32_t *id)
{
    int32_t have = nlp_vocab_find(v, s, n);
    if (have >= 0) {
        if (id) *id = have;
        return NLP_OK;
    }
    if (v->size >= INT32_MAX - 1) return nlp_error(NLP_ENOMEM, "vocabulary too large");
    if (ensure(v, v->size + 1)) return NLP_ENOMEM;
    int32_t nid = (int32_t)v->size;
    if (place(v, nid, s, n)) return NLP_ENOMEM;
    if (id) *id = nid;
    return NLP_OK;
}

static int set_h(nlp_vocab *v, int32_t id, const char *s, size_t n, uint64_t h);

int nlp_vocab_set(nlp_vocab *v, int32_t id, const char *s, size_t n)
{
    return set_h(v, id, s, n, nlp_strmap_hash(s, n));
}

int nlp_vocab_set_many(nlp_vocab *v, const int32_t *ids, const nlp_span *toks, size_t n, size_t *failed)
{
    enum { AHEAD = 8 };
    uint64_t h[AHEAD];
    for (size_t i = 0; i < n && i < AHEAD; i++) {
        h[i] = nlp_strmap_hash(toks[i].s, toks[i].n);
        nlp_strmap_prefetch(v->map, h[i]);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t hi = h[i % AHEAD];
        if (i + AHEAD < n) {
            h[i % AHEAD] = nlp_strmap_hash(toks[i + AHEAD].s, toks[i + AHEAD].n);
            nlp_strmap_prefetch(v->map, h[i % AHEAD]);
        }
        int rc = set_h(v, ids[i], toks[i].s, toks[i].n, hi);
        if (rc) {
            *failed = i;
            return rc;
        }
    }
    return NLP_OK;
}

static int set_h(nlp_vocab *v, int32_t id, const char *s, size_t n, uint64_t h)
{
    if (id < 0 || id >= INT32_MAX - 1) return nlp_error(NLP_EFORMAT, "token id %ld is out of range", (long)id);
    if ((size_t)id < v->cap && v->tok[id]) {
        int32_t have = nlp_vocab_find(v, s, n);
        if (have >= 0)
            return nlp_error(NLP_EFORMAT, "token '%.*s' has two ids (%ld and %ld)", (int)(n > 80 ? 80 : n), s,
                             (long)have, (long)id);
        return nlp_error(NLP_EFORMAT, "id %ld is given to two tokens ('%s' and '%.*s')", (long)id, v->tok[id],
                         (int)(n > 80 ? 80 : n), s);
    }
    if (ensure(v, (size_t)id + 1)) return NLP_ENOMEM;
    /* one probe of the map: it finds the token, or takes it in */
    int is_new;
    int64_t *slot = nlp_strmap_slot_h(v->map, s, n, h, &is_new);
    if (!slot) return NLP_ENOMEM;
    if (!is_new)
        return nlp_error(NLP_EFORMAT, "token '%.*s' has two ids (%ld and %ld)", (int)(n > 80 ? 80 : n), s,
                         (long)*slot, (long)id);
    *slot = id;
    record(v, id, n);
    return NLP_OK;
}

int32_t nlp_vocab_find(const nlp_vocab *v, const char *s, size_t n)
{
    int64_t id;
    return nlp_strmap_get(v->map, s, n, &id) ? (int32_t)id : -1;
}

void nlp_vocab_find_many(const nlp_vocab *v, const nlp_span *keys, size_t n, int32_t *ids)
{
    int64_t val[1024];
    for (size_t i = 0; i < n; i += 1024) {
        size_t k = n - i < 1024 ? n - i : 1024;
        nlp_strmap_get_many(v->map, keys + i, k, val, -1);
        for (size_t j = 0; j < k; j++) ids[i + j] = (int32_t)val[j];
    }
}

const char *nlp_vocab_token(const nlp_vocab *v, int32_t id, size_t *n)
{
    if (id < 0 || (size_t)id >= v->size || !v->tok[id]) return NULL;
    if (n) *n = v->len[id];
    return v->tok[id];
}

size_t nlp_vocab_size(const nlp_vocab *v) { return v->size; }

void nlp_vocab_arrays(const nlp_vocab *v, const char *const **tok, const uint32_t **len)
{
    *tok = v->tok;
    *len = v->len;
}
size_t nlp_vocab_count(const nlp_vocab *v) { return v->count; }

nlp_vocab *nlp_vocab_clone(const nlp_vocab *v)
{
    nlp_vocab *c = nlp_calloc(1, sizeof *c);
    if (!c) return NULL;
    c->map = nlp_strmap_clone(v->map);
    if (!c->map || ensure(c, v->size)) {
        nlp_vocab_free(c);
        return NULL;
    }
    /* the map's keys in insertion order are the tokens in the order set */
    for (size_t i = 0, n = nlp_strmap_size(c->map); i < n; i++) {
        size_t kn;
        const char *k = nlp_strmap_key(c->map, i, &kn);
        int64_t id = nlp_strmap_value(c->map, i);
        c->tok[id] = k;
        c->len[id] = (uint32_t)kn;
    }
    c->size = v->size;
    c->count = v->count;
    return c;
}
