/*
 * wordcache.c — bounded word -> ids memo. See wordcache.h.
 */
#include "tok/wordcache.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

struct slot {
    uint64_t h;       /* 0 = empty (a real hash of 0 is stored as 1) */
    uint32_t key, kn; /* offset and length in keys */
    uint32_t ids, ni; /* offset and count in idpool */
};

struct nlp_wordcache {
    struct slot *t;
    size_t mask, used, max;
    char *keys;
    size_t klen, kcap;
    int32_t *idpool;
    size_t ilen, icap;
};

nlp_wordcache *nlp_wordcache_new(size_t max_words)
{
    nlp_wordcache *c = nlp_calloc(1, sizeof *c);
    if (!c) return NULL;
    c->max = max_words ? max_words : 65536;
    size_t ns = 16;
    while (ns < c->max * 2) ns *= 2;
    c->t = nlp_calloc(ns, sizeof *c->t);
    if (!c->t) {
        free(c);
        return NULL;
    }
    c->mask = ns - 1;
    return c;
}

void nlp_wordcache_free(nlp_wordcache *c)
{
    if (!c) return;
    free(c->t);
    free(c->keys);
    free(c->idpool);
    free(c);
}

static void clear(nlp_wordcache *c)
{
    memset(c->t, 0, (c->mask + 1) * sizeof *c->t);
    c->used = c->klen = c->ilen = 0;
}

const int32_t *nlp_wordcache_get(const nlp_wordcache *c, const char *w, size_t n, uint64_t h, size_t *nids)
{
    if (!h) h = 1;
    for (size_t j = h & c->mask;; j = (j + 1) & c->mask) {
        const struct slot *s = &c->t[j];
        if (!s->h) return NULL;
        if (s->h == h && s->kn == n && memcmp(c->keys + s->key, w, n) == 0) {
            *nids = s->ni;
            return c->idpool + s->ids;
        }
    }
}

int nlp_wordcache_put(nlp_wordcache *c, const char *w, size_t n, uint64_t h, const int32_t *ids, size_t nids)
{
    if (n > NLP_WORDCACHE_MAX_LEN || nids > NLP_WORDCACHE_MAX_LEN) return NLP_OK;
    if (c->used >= c->max) clear(c);
    if (!h) h = 1;
    if (c->klen + n > c->kcap && nlp_grow(&c->keys, &c->kcap, c->klen + n, 1)) return NLP_ENOMEM;
    if (c->ilen + nids > c->icap && nlp_grow(&c->idpool, &c->icap, c->ilen + nids, sizeof *c->idpool))
        return NLP_ENOMEM;
    size_t j = h & c->mask;
    while (c->t[j].h) j = (j + 1) & c->mask;
    struct slot *s = &c->t[j];
    s->h = h;
    s->key = (uint32_t)c->klen;
    s->kn = (uint32_t)n;
    s->ids = (uint32_t)c->ilen;
    s->ni = (uint32_t)nids;
    memcpy(c->keys + c->klen, w, n);
    c->klen += n;
    if (nids) memcpy(c->idpool + c->ilen, ids, nids * sizeof *ids);
    c->ilen += nids;
    c->used++;
    return NLP_OK;
}
