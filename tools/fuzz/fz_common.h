/*
 * fz_common.h — what the libFuzzer targets of tools/fuzz/ share: a private
 * scratch directory for inputs that the readers take as files, and the
 * small tokenizers of tools/fuzz/data (NLPIPE_FUZZ_DATA, set by
 * tools/fuzz/run; default tools/fuzz/data from the top of the tree).
 * Header-only: each target is one translation unit.
 */
#ifndef NLP_FUZZ_COMMON_H
#define NLP_FUZZ_COMMON_H

#include "base/err.h"
#include "tok/tokfiles.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* The path of scratch file `name` (in /dev/shm/nlpipe-fuzz-PID; "sub/name"
 * makes the directory sub), holding d[0..n). The string is static and
 * stays valid for the next 7 calls. */
static inline const char *fz_put(const char *name, const uint8_t *d, size_t n)
{
    static char dir[64];
    static char path[8][160];
    static int next;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/dev/shm/nlpipe-fuzz-%d", (int)getpid());
        mkdir(dir, 0755);
    }
    char *p = path[next++ % 8];
    snprintf(p, 160, "%s/%s", dir, name);
    char *slash = strrchr(p, '/');
    if (slash > p + strlen(dir)) {
        *slash = 0;
        mkdir(p, 0755);
        *slash = '/';
    }
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) abort();
    while (n) {
        ssize_t w = write(fd, d, n);
        if (w <= 0) abort();
        d += w, n -= (size_t)w;
    }
    close(fd);
    return p;
}

/* Tokenizer tools/fuzz/data/NAME, loaded once (abort if it will not load:
 * the harness is broken, not the reader under test). */
static inline nlp_tokenizer *fz_tokenizer(const char *name)
{
    const char *dir = getenv("NLPIPE_FUZZ_DATA");
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir ? dir : "tools/fuzz/data", name);
    nlp_tokenizer *tk;
    if (nlp_tokfiles_load(p, NULL, &tk)) {
        fprintf(stderr, "fuzz harness: %s\n", nlp_errmsg());
        abort();
    }
    return tk;
}

/* The bytes of tools/fuzz/data/NAME (malloc'd, never freed; abort when
 * missing). */
static inline uint8_t *fz_data_file(const char *name, size_t *n)
{
    const char *dir = getenv("NLPIPE_FUZZ_DATA");
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir ? dir : "tools/fuzz/data", name);
    FILE *f = fopen(p, "rb");
    if (!f) {
        fprintf(stderr, "fuzz harness: cannot open '%s'\n", p);
        abort();
    }
    uint8_t *b = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n == cap && !(b = realloc(b, cap = cap * 2 + 4096))) abort();
        size_t k = fread(b + *n, 1, cap - *n, f);
        if (!k) break;
        *n += k;
    }
    fclose(f);
    return b;
}

#endif
