/*
 * datrie.c — the double-array trie. See datrie.h.
 *
 * Building: the keys are sorted, so that the keys below a node are one
 * range and its children's labels come in order. Nodes are placed breadth
 * first, from a queue (a key may be long: no recursion), so that the
 * shallow nodes, which every walk visits, share a few cache lines at the
 * start of the array. A node's children go at the
 * first base b >= 1 for which every b + label is a free cell; the free cells
 * are a doubly linked list, and the array always keeps 512 free cells past
 * the last one used, so that the search ends there at the latest.
 */
#include "tok/datrie.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

#define MAX_CELLS ((size_t)1 << 30)

struct builder {
    nlp_da_cell *c;
    int32_t *next, *prev; /* free list over cells; -1 ends it; head and tail below */
    int32_t head, tail;
    size_t cap, used; /* used: 1 + the largest index taken */
};

static int grow_to(struct builder *b, size_t need)
{
    if (need <= b->cap) return NLP_OK;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < need) cap *= 2;
    if (cap > MAX_CELLS) return nlp_error(NLP_ENOMEM, "dictionary too large for a double-array trie");
    nlp_da_cell *c = nlp_reallocarray(b->c, cap, sizeof *c);
    if (!c) return NLP_ENOMEM;
    b->c = c;
    int32_t *nx = nlp_reallocarray(b->next, cap, sizeof *nx);
    if (!nx) return NLP_ENOMEM;
    b->next = nx;
    int32_t *pv = nlp_reallocarray(b->prev, cap, sizeof *pv);
    if (!pv) return NLP_ENOMEM;
    b->prev = pv;
    for (size_t i = b->cap; i < cap; i++) {
        c[i] = (nlp_da_cell){0, -1, -1};
        nx[i] = i + 1 < cap ? (int32_t)(i + 1) : -1;
        pv[i] = i > b->cap ? (int32_t)(i - 1) : b->tail;
    }
    if (b->tail >= 0) nx[b->tail] = (int32_t)b->cap;
    else b->head = (int32_t)b->cap;
    b->tail = (int32_t)(cap - 1);
    b->cap = cap;
    return NLP_OK;
}

static void take(struct builder *b, int32_t i, int32_t parent)
{
    int32_t p = b->prev[i], n = b->next[i];
    if (p >= 0) b->next[p] = n;
    else b->head = n;
    if (n >= 0) b->prev[n] = p;
    else b->tail = p;
    b->c[i].check = parent;
    if ((size_t)i + 1 > b->used) b->used = (size_t)i + 1;
}

struct key {
    const uint8_t *s;
    size_t n;
    int32_t v;
    size_t order;
};

static int cmp_key(const void *x, const void *y)
{
    const struct key *a = x, *b = y;
    size_t m = a->n < b->n ? a->n : b->n;
    int r = m ? memcmp(a->s, b->s, m) : 0;
    if (r) return r;
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

struct frame {
    int32_t cell;
    size_t lo, hi, depth;
};

int nlp_datrie_build(nlp_datrie *t, const nlp_span *keys, const int32_t *vals, size_t n)
{
    memset(t, 0, sizeof *t);
    struct builder b = {.head = -1, .tail = -1};
    struct key *k = nlp_malloc((n ? n : 1) * sizeof *k);
    struct frame *st = NULL;
    size_t nst = 0, cst = 0, head = 0; /* the queue: st[head..nst) */
    int rc = NLP_ENOMEM;
    if (!k) goto out;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (keys[i].n) k[m++] = (struct key){(const uint8_t *)keys[i].s, keys[i].n, vals[i], i};
    qsort(k, m, sizeof *k, cmp_key);
    if ((rc = grow_to(&b, 1024))) goto out;
    take(&b, 0, -2); /* the root */
    if (nlp_grow(&st, &cst, 1, sizeof *st)) {
        rc = NLP_ENOMEM;
        goto out;
    }
    st[nst++] = (struct frame){0, 0, m, 0};
    while (head < nst) {
        struct frame f = st[head++];
        size_t lo = f.lo;
        if (lo < f.hi && k[lo].n == f.depth) {
            b.c[f.cell].value = k[lo].v; /* the first of equal keys: the sort keeps their order */
            while (lo < f.hi && k[lo].n == f.depth) lo++;
        }
        if (lo == f.hi) continue;
        /* the labels, ascending */
        uint8_t lab[256];
        int nl = 0;
        for (size_t i = lo; i < f.hi; i++) {
            uint8_t c = k[i].s[f.depth];
            if (!nl || lab[nl - 1] != c) lab[nl++] = c;
        }
        if ((rc = grow_to(&b, b.used + 512))) goto out;
        int32_t base = -1;
        for (int32_t p = b.head; p >= 0; p = b.next[p]) {
            int32_t cand = p - lab[0];
            if (cand < 1) continue;
            int fits = 1;
            for (int j = 1; j < nl && fits; j++) fits = b.c[cand + lab[j]].check == -1;
            if (fits) {
                base = cand;
                break;
            }
        }
        NLP_ASSERT(base >= 1); /* the free tail always fits */
        b.c[f.cell].base = base;
        for (int j = 0; j < nl; j++) take(&b, base + lab[j], f.cell);
        if ((rc = grow_to(&b, b.used + 512))) goto out;
        /* the children's ranges, queued in label order */
        if (head > cst / 2) { /* the queue's done half is reused */
            memmove(st, st + head, (nst - head) * sizeof *st);
            nst -= head;
            head = 0;
        }
        if (nlp_grow(&st, &cst, nst + (size_t)nl, sizeof *st)) {
            rc = NLP_ENOMEM;
            goto out;
        }
        size_t from = lo;
        for (int j = 0; j < nl; j++) {
            size_t e = from;
            while (e < f.hi && k[e].s[f.depth] == lab[j]) e++;
            st[nst++] = (struct frame){base + lab[j], from, e, f.depth + 1};
            from = e;
        }
    }
    t->n = b.used + 256; /* base + byte of any node is a cell (free ones check -1) */
    t->c = nlp_reallocarray(b.c, t->n, sizeof *t->c);
    if (!t->c) {
        t->c = b.c;
        t->n = b.cap;
    }
    b.c = NULL;
    rc = NLP_OK;
out:
    free(b.c);
    free(b.next);
    free(b.prev);
    free(k);
    free(st);
    return rc;
}

void nlp_datrie_free(nlp_datrie *t)
{
    free(t->c);
    memset(t, 0, sizeof *t);
}

int32_t nlp_datrie_find(const nlp_datrie *t, const char *s, size_t n)
{
    if (!t->c) return -1;
    int32_t node = 0;
    for (size_t i = 0; i < n; i++)
        if (!nlp_datrie_step(t, &node, (uint8_t)s[i])) return -1;
    return nlp_datrie_value(t, node);
}
