/*
 * mem.c — allocation helpers. See mem.h.
 */
#include "base/mem.h"
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

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

/* Blocks from this size on come from mmap (glibc's threshold starts at
 * 128 KiB), where each page costs a fault when first touched. */
#define DENSE_MIN (128u << 10)

static void *populate(void *p, size_t size)
{
#ifdef MADV_POPULATE_WRITE
    if (p && size >= DENSE_MIN) {
        uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, e = ((uintptr_t)p + size) & ~(uintptr_t)4095;
        if (e > a) (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE); /* a hint: faults still work */
    }
#endif
    return p;
}

void *nlp_malloc_dense(size_t size) { return populate(nlp_malloc(size), size); }

void *nlp_calloc_dense(size_t n, size_t size)
{
    void *p = nlp_calloc(n, size);
    return populate(p, p ? n * size : 0);
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
    if (extra < b->cap - b->len) return NLP_OK; /* room for extra and the NUL */
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

/* size bytes at `align` (1 or 16) */
static void *arena_take(nlp_arena *a, size_t size, size_t align)
{
    struct nlp_arena_block *b = a->head;
    size_t pad = b ? (align - (b->used & (align - 1))) & (align - 1) : 0;
    if (!b || b->cap - b->used < pad + size) {
        pad = 0;
        /* an arena that outgrew its first block (a vocabulary's keys) gets
         * blocks four times as large, their pages made in one call
         * (nlp_malloc_dense: a bump arena writes all of a block but the
         * last one's tail) */
        const size_t blk = b ? 4 * ARENA_BLOCK : ARENA_BLOCK;
        size_t cap = size > blk ? size : blk;
        struct nlp_arena_block *nb = b ? nlp_malloc_dense(sizeof *nb + cap) : nlp_malloc(sizeof *nb + cap);
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
    void *p = b->data + b->used + pad;
    b->used += pad + size;
    a->used_total += pad + size;
    return p;
}

void *nlp_arena_alloc(nlp_arena *a, size_t size) { return arena_take(a, (size + 15) & ~(size_t)15, 16); }

char *nlp_arena_strndup(nlp_arena *a, const char *s, size_t n)
{
    char *d = arena_take(a, n + 1, 1); /* strings need no alignment: keys packed tight stay in cache */
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

// --- memory available

/* The number after `key` in a "key: N kB" file such as /proc/meminfo, in
 * bytes; 0 when absent. */
static uint64_t kb_field(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    uint64_t v = 0;
    size_t kn = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, kn) == 0 && line[kn] == ':') {
            v = strtoull(line + kn + 1, NULL, 10) * 1024;
            break;
        }
    fclose(f);
    return v;
}

/* One number in a file (cgroup limits); "max" and absent files are none. */
static int read_u64(const char *path, uint64_t *v)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[64];
    int ok = fgets(buf, sizeof buf, f) && buf[0] >= '0' && buf[0] <= '9';
    if (ok) *v = strtoull(buf, NULL, 10);
    fclose(f);
    return ok;
}

/* Room below the limits of the cgroup at `rel` (a path from /proc/self/cgroup)
 * and its parents, under mount point `root` with the given file names. */
static uint64_t cgroup_room(const char *root, const char *rel, const char *limit, const char *usage)
{
    uint64_t best = UINT64_MAX;
    char dir[1024], p[1200];
    snprintf(dir, sizeof dir, "%s", rel);
    for (;;) {
        uint64_t lim, use = 0;
        snprintf(p, sizeof p, "%s%s/%s", root, dir, limit);
        if (read_u64(p, &lim) && lim < (UINT64_C(1) << 62)) {
            snprintf(p, sizeof p, "%s%s/%s", root, dir, usage);
            read_u64(p, &use);
            uint64_t room = lim > use ? lim - use : 0;
            if (room < best) best = room;
        }
        char *slash = strrchr(dir, '/');
        if (!slash || !dir[0]) break;
        *slash = 0; /* the parent; "" is the mount's root */
    }
    return best;
}

uint64_t nlp_mem_available(const char **what)
{
    uint64_t best = UINT64_MAX, v;
    const char *why = NULL;
    if ((v = kb_field("/proc/meminfo", "MemAvailable")) > 0) best = v, why = "MemAvailable in /proc/meminfo";
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        uint64_t used = kb_field("/proc/self/status", "VmSize");
        v = (uint64_t)rl.rlim_cur > used ? (uint64_t)rl.rlim_cur - used : 0;
        if (v < best) best = v, why = "RLIMIT_AS (ulimit -v)";
    }
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (f) {
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c2) continue;
            const char *rel = strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1;
            if (strncmp(line, "0::", 3) == 0) { /* v2 */
                v = cgroup_room("/sys/fs/cgroup", rel, "memory.max", "memory.current");
                if (v < best) best = v, why = "the cgroup's memory.max";
            } else if (strstr(c1, "memory")) { /* v1 */
                v = cgroup_room("/sys/fs/cgroup/memory", rel, "memory.limit_in_bytes", "memory.usage_in_bytes");
                if (v < best) best = v, why = "the cgroup's memory.limit_in_bytes";
            }
        }
        fclose(f);
    }
    if (what) *what = why;
    return best;
}
