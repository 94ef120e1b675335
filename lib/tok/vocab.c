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

nlp_vocab *nlp_vocab_new(size_t hint)
{
    nlp_vocab *v = nlp_calloc(1, sizeof *v);
    if (!v) return NULL;
    v->map = nlp_strmap_new(hint ? hint : 16);
    if (!v->map) {
        free(v);
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

static int ensure(nlp_vocab *v, size_t need)
{
    if (need <= v->cap) return NLP_OK;
    size_t c = v->cap ? v->cap : 16;
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

/* Inserts into the map and points tok[id] at the map's copy of the key. */
static int place(nlp_vocab *v, int32_t id, const char *s, size_t n)
{
    int is_new;
    int64_t *slot = nlp_strmap_slot(v->map, s, n, &is_new);
    if (!slot) return NLP_ENOMEM;
    *slot = id;
    size_t kn;
    v->tok[id] = nlp_strmap_key(v->map, nlp_strmap_size(v->map) - 1, &kn);
    v->len[id] = (uint32_t)n;
    if ((size_t)id >= v->size) v->size = (size_t)id + 1;
    v->count++;
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

int nlp_vocab_set(nlp_vocab *v, int32_t id, const char *s, size_t n)
{
    if (id < 0 || id >= INT32_MAX - 1) return nlp_error(NLP_EFORMAT, "token id %ld is out of range", (long)id);
    int32_t have = nlp_vocab_find(v, s, n);
    if (have >= 0)
        return nlp_error(NLP_EFORMAT, "token '%.*s' has two ids (%ld and %ld)", (int)(n > 80 ? 80 : n), s,
                         (long)have, (long)id);
    if (ensure(v, (size_t)id + 1)) return NLP_ENOMEM;
    if (v->tok[id])
        return nlp_error(NLP_EFORMAT, "id %ld is given to two tokens ('%s' and '%.*s')", (long)id, v->tok[id],
                         (int)(n > 80 ? 80 : n), s);
    return place(v, id, s, n);
}

int32_t nlp_vocab_find(const nlp_vocab *v, const char *s, size_t n)
{
    int64_t id;
    return nlp_strmap_get(v->map, s, n, &id) ? (int32_t)id : -1;
}

const char *nlp_vocab_token(const nlp_vocab *v, int32_t id, size_t *n)
{
    if (id < 0 || (size_t)id >= v->size || !v->tok[id]) return NULL;
    if (n) *n = v->len[id];
    return v->tok[id];
}

size_t nlp_vocab_size(const nlp_vocab *v) { return v->size; }
size_t nlp_vocab_count(const nlp_vocab *v) { return v->count; }

nlp_vocab *nlp_vocab_clone(const nlp_vocab *v)
{
    nlp_vocab *c = nlp_vocab_new(v->count);
    if (!c) return NULL;
    for (size_t i = 0; i < v->size; i++)
        if (v->tok[i] && nlp_vocab_set(c, (int32_t)i, v->tok[i], v->len[i])) {
            nlp_vocab_free(c);
            return NULL;
        }
    return c;
}
