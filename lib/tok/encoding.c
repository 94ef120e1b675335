/*
 * encoding.c — id arrays and encodings. See encoding.h.
 */
#include "tok/encoding.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

int nlp_ids_push(nlp_ids *a, int32_t id)
{
    if (a->n == a->cap && nlp_grow(&a->v, &a->cap, a->n + 1, sizeof *a->v)) return NLP_ENOMEM;
    a->v[a->n++] = id;
    return NLP_OK;
}

int nlp_ids_append(nlp_ids *a, const int32_t *ids, size_t n)
{
    if (a->n + n > a->cap && nlp_grow(&a->v, &a->cap, a->n + n, sizeof *a->v)) return NLP_ENOMEM;
    if (n) memcpy(a->v + a->n, ids, n * sizeof *ids);
    a->n += n;
    return NLP_OK;
}

void nlp_ids_free(nlp_ids *a)
{
    free(a->v);
    memset(a, 0, sizeof *a);
}

int nlp_encoding_reserve(nlp_encoding *e, size_t extra)
{
    size_t need = e->n + extra;
    if (need <= e->cap) return NLP_OK;
    size_t c = e->cap ? e->cap : 64;
    while (c < need) c *= 2;
    int32_t *ids = nlp_reallocarray(e->ids, c, sizeof *ids);
    if (!ids) return NLP_ENOMEM;
    e->ids = ids;
    uint8_t **arr[3] = {&e->type_ids, &e->attention, &e->special};
    for (int k = 0; k < 3; k++) {
        uint8_t *p = nlp_realloc(*arr[k], c);
        if (!p) return NLP_ENOMEM;
        *arr[k] = p;
    }
    e->cap = c;
    return NLP_OK;
}

int nlp_encoding_append(nlp_encoding *e, const int32_t *ids, size_t n, int type_id, int special)
{
    if (!n) return NLP_OK;
    if (nlp_encoding_reserve(e, n)) return NLP_ENOMEM;
    memcpy(e->ids + e->n, ids, n * sizeof *ids);
    memset(e->type_ids + e->n, type_id, n);
    memset(e->attention + e->n, 1, n);
    memset(e->special + e->n, special ? 1 : 0, n);
    e->n += n;
    return NLP_OK;
}

int nlp_encoding_concat(nlp_encoding *e, const nlp_encoding *s)
{
    if (!s->n) return NLP_OK;
    if (nlp_encoding_reserve(e, s->n)) return NLP_ENOMEM;
    {
        memcpy(e->ids + e->n, s->ids, s->n * sizeof *s->ids);
        memcpy(e->type_ids + e->n, s->type_ids, s->n);
        memcpy(e->attention + e->n, s->attention, s->n);
        memcpy(e->special + e->n, s->special, s->n);
    }
    e->n += s->n;
    return NLP_OK;
}

void nlp_encoding_truncate(nlp_encoding *e, size_t n, int from_left)
{
    if (n >= e->n) return;
    if (from_left) {
        size_t drop = e->n - n;
        memmove(e->ids, e->ids + drop, n * sizeof *e->ids);
        memmove(e->type_ids, e->type_ids + drop, n);
        memmove(e->attention, e->attention + drop, n);
        memmove(e->special, e->special + drop, n);
    }
    e->n = n;
}

int nlp_encoding_pad(nlp_encoding *e, size_t n, int32_t pad_id, int pad_type_id, int left)
{
    if (e->n >= n) return NLP_OK;
    size_t add = n - e->n;
    if (nlp_encoding_reserve(e, add)) return NLP_ENOMEM;
    size_t at = e->n;
    if (left) {
        memmove(e->ids + add, e->ids, e->n * sizeof *e->ids);
        memmove(e->type_ids + add, e->type_ids, e->n);
        memmove(e->attention + add, e->attention, e->n);
        memmove(e->special + add, e->special, e->n);
        at = 0;
    }
    for (size_t i = 0; i < add; i++) e->ids[at + i] = pad_id;
    memset(e->type_ids + at, pad_type_id, add);
    memset(e->attention + at, 0, add);
    memset(e->special + at, 1, add);
    e->n = n;
    return NLP_OK;
}

void nlp_encoding_reset(nlp_encoding *e) { e->n = 0; }

void nlp_encoding_free(nlp_encoding *e)
{
    free(e->ids);
    free(e->type_ids);
    free(e->attention);
    free(e->special);
    memset(e, 0, sizeof *e);
}
