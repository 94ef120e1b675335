/*
 * mem.c — allocation helpers. See mem.h.
 */
#include "base/mem.h"
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *oom(size_t n)
{
    nlp_error(NLP_ENOMEM, "out of memory (%zu bytes)", n);
    return NULL;
}

void *nlp_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    return p ? p : oom(size);
}

void *nlp_calloc(size_t n, size_t size)
{
    if (n && size > SIZE_MAX / n) return oom(SIZE_MAX);
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

void *nlp_realloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    return q ? q : oom(size);
}

void *nlp_reallocarray(void *p, size_t n, size_t size)
{
    if (n && size > SIZE_MAX / n) return oom(SIZE_MAX);
    return nlp_realloc(p, n * size);
}

char *nlp_strndup(const char *s, size_t n)
{
    char *d = nlp_malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *nlp_strdup(const char *s) { return nlp_strndup(s, strlen(s)); }

int nlp_grow(void *pp, size_t *cap, size_t need, size_t size)
{
    void **p = pp;
    if (need <= *cap) return NLP_OK;
    size_t nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > SIZE_MAX / 2) return nlp_error(NLP_ENOMEM, "out of memory (array of %zu)", need);
        nc *= 2;
    }
    void *q = nlp_reallocarray(*p, nc, size);
    if (!q) return NLP_ENOMEM;
    *p = q;
    *cap = nc;
    return NLP_OK;
}

// --- nlp_buf

int nlp_buf_reserve(nlp_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1) return nlp_error(NLP_ENOMEM, "out of memory (buffer)");
    return nlp_grow(&b->data, &b->cap, b->len + extra + 1, 1);
}

int nlp_buf_append(nlp_buf *b, const void *p, size_t n)
{
    if (nlp_buf_reserve(b, n)) return NLP_ENOMEM;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
    return NLP_OK;
}

int nlp_buf_putc(nlp_buf *b, int c)
{
    char ch = (char)c;
    return nlp_buf_append(b, &ch, 1);
}

int nlp_buf_puts(nlp_buf *b, const char *s) { return nlp_buf_append(b, s, strlen(s)); }

int nlp_buf_printf(nlp_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return nlp_error(NLP_ERR, "bad format string");
    if (nlp_buf_reserve(b, (size_t)n)) return NLP_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return NLP_OK;
}

void nlp_buf_reset(nlp_buf *b)
{
    b->len = 0;
    if (b->data) b->data[0] = 0;
}

char *nlp_buf_detach(nlp_buf *b, size_t *len)
{
    char *d = b->data;
    if (len) *len = b->len;
    if (!d) d = nlp_strndup("", 0);
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

void nlp_buf_free(nlp_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

// --- nlp_arena

struct nlp_arena_block {
    struct nlp_arena_block *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK (64u << 10)

void *nlp_arena_alloc(nlp_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    struct nlp_arena_block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
        struct nlp_arena_block *nb = nlp_malloc(sizeof *nb + cap);
        if (!nb) return NULL;
        nb->cap = cap;
        nb->used = 0;
        if (b && size > ARENA_BLOCK) {
            /* A big one-off goes behind the current block so the
             * current block's free space is not wasted. */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += size;
    a->used_total += size;
    return p;
}

char *nlp_arena_strndup(nlp_arena *a, const char *s, size_t n)
{
    char *d = nlp_arena_alloc(a, n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

void nlp_arena_free(nlp_arena *a)
{
    struct nlp_arena_block *b = a->head;
    while (b) {
        struct nlp_arena_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
    a->used_total = 0;
}
