/*
 * mem.h — allocation that reports failure instead of exiting, a growable
 * byte buffer, and an arena for many small long-lived objects.
 *
 * Every allocator here returns NULL (or a negative status) on failure with
 * the nlp_errmsg() set to "out of memory (N bytes)"; callers propagate
 * NLP_ENOMEM. Nothing here exits.
 *
 * Also here: how much memory the process can still get (nlp_mem_available),
 * so that a tool can refuse a job that cannot fit before it starts.
 *
 * Not here: aligned tensor storage (lib/nn owns that).
 */
#ifndef NLP_BASE_MEM_H
#define NLP_BASE_MEM_H

#include <stddef.h>
#include <stdint.h>

/* malloc/calloc/realloc that set the error message on failure. The caller
 * frees with free(). nlp_realloc leaves `p` untouched on failure. Sizes of
 * zero return a valid unique pointer. n*size overflow is reported as ENOMEM. */
void *nlp_malloc(size_t size);
void *nlp_calloc(size_t n, size_t size);
void *nlp_realloc(void *p, size_t size);
void *nlp_reallocarray(void *p, size_t n, size_t size);
char *nlp_strdup(const char *s);
char *nlp_strndup(const char *s, size_t n);

/* The same for memory the caller is about to write all over (a hash table,
 * a lookup table): the pages of a large block are made in one call
 * (madvise MADV_POPULATE_WRITE) instead of one page fault each as they are
 * first written, which is about half their cost; a block of this process's
 * start-up (a tokenizer's tables) takes hundreds. Not for memory that may
 * stay partly untouched: every page of it becomes resident. */
void *nlp_malloc_dense(size_t size);
void *nlp_calloc_dense(size_t n, size_t size);

/* The memory a new allocation of this process can still get, in bytes: the
 * smallest of MemAvailable (/proc/meminfo), the address space RLIMIT_AS
 * (`ulimit -v`) leaves beyond what the process maps already (VmSize), and
 * the room below the memory.max (cgroup v2) or memory.limit_in_bytes (v1)
 * of the process's cgroup and its parents beyond their usage. *what (may
 * be NULL) gets the name of the one that decided: "MemAvailable in
 * /proc/meminfo", "RLIMIT_AS (ulimit -v)", "the cgroup's memory.max".
 * UINT64_MAX with *what NULL when none is known. */
uint64_t nlp_mem_available(const char **what);

/* Grows *p (an array of *cap elements of `size` bytes) so that it holds at
 * least `need` elements, at least doubling. Returns 0 or NLP_ENOMEM. */
int nlp_grow(void *p, size_t *cap, size_t need, size_t size);

/* Growable byte buffer, always NUL-terminated when len > 0 or after any append.
 * Zero-initialize ({0}) to start; free with nlp_buf_free. */
typedef struct nlp_buf {
    char *data;
    size_t len, cap;
} nlp_buf;

int nlp_buf_reserve(nlp_buf *b, size_t extra);
int nlp_buf_append(nlp_buf *b, const void *p, size_t n);
int nlp_buf_putc(nlp_buf *b, int c);
int nlp_buf_puts(nlp_buf *b, const char *s);
int nlp_buf_printf(nlp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void nlp_buf_reset(nlp_buf *b); /* len = 0, keeps memory */
/* Hands the storage to the caller (who frees it) and resets b. */
char *nlp_buf_detach(nlp_buf *b, size_t *len);
void nlp_buf_free(nlp_buf *b);

/* Bump arena: many small allocations freed together. Blocks are at least
 * 64 KiB (256 KiB, made in one call, after the first); a larger request gets
 * a block of its own. Memory is 16-aligned. */
typedef struct nlp_arena {
    struct nlp_arena_block *head;
    size_t used_total;
} nlp_arena;

void *nlp_arena_alloc(nlp_arena *a, size_t size);
/* Copies n bytes and adds a NUL. */
char *nlp_arena_strndup(nlp_arena *a, const char *s, size_t n);
void nlp_arena_free(nlp_arena *a);

#endif
