/*
 * io.c — reader, atomic writer, whole-file helpers. See io.h.
 */
#include "base/io.h"
#include "base/err.h"
#include "base/mem.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK (1u << 16)

// --- reader

struct nlp_reader {
    int fd, own, eof;
    enum nlp_newline nl;
    char *buf;
    size_t cap, start, end; /* unread bytes are buf[start, end) */
    uint64_t base;          /* file offset of buf[0] */
    uint64_t lineno, line_off;
    int had_nl;
    char *name;
};

int nlp_reader_from_fd(nlp_reader **out, int fd, const char *name, int own)
{
    nlp_reader *r = nlp_calloc(1, sizeof *r);
    if (!r) return NLP_ENOMEM;
    r->fd = fd;
    r->own = own;
    r->cap = READ_CHUNK * 2;
    r->buf = nlp_malloc(r->cap + 1);
    r->name = nlp_strdup(name);
    if (!r->buf || !r->name) {
        free(r->buf);
        free(r->name);
        free(r);
        return NLP_ENOMEM;
    }
    *out = r;
    return NLP_OK;
}

int nlp_reader_open(nlp_reader **r, const char *path)
{
    if (strcmp(path, "-") == 0) return nlp_reader_from_fd(r, 0, "<stdin>", 0);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nlp_error_errno(NLP_EIO, "cannot open '%s'", path);
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return nlp_error(NLP_EIO, "cannot read '%s': Is a directory", path);
    }
    int rc = nlp_reader_from_fd(r, fd, path, 1);
    if (rc) close(fd);
    return rc;
}

void nlp_reader_set_newline(nlp_reader *r, enum nlp_newline mode) { r->nl = mode; }

/* Makes room and reads more bytes. Returns bytes read (0 at EOF) or <0. */
static long fill(nlp_reader *r)
{
    if (r->eof) return 0;
    if (r->start > 0 && (r->start == r->end || r->cap - r->end < READ_CHUNK)) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->base += r->start;
        r->end -= r->start;
        r->start = 0;
    }
    if (r->cap - r->end < READ_CHUNK) {
        size_t nc = r->cap * 2;
        char *nb = nlp_realloc(r->buf, nc + 1);
        if (!nb) return NLP_ENOMEM;
        r->buf = nb;
        r->cap = nc;
    }
    for (;;) {
        ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return nlp_error_errno(NLP_EIO, "cannot read '%s'", r->name);
        if (n == 0) r->eof = 1;
        r->end += (size_t)n;
        return n;
    }
}

static char *find_eol(nlp_reader *r, size_t from)
{
    char *p = r->buf + from, *e = r->buf + r->end;
    if (r->nl == NLP_NL_LF) return memchr(p, '\n', (size_t)(e - p));
    for (; p < e; p++)
        if (*p == '\n' || *p == '\r') return p;
    return NULL;
}

int nlp_reader_line(nlp_reader *r, char **line, size_t *len)
{
    size_t scanned = r->start;
    for (;;) {
        char *eol = find_eol(r, scanned);
        if (eol) {
            size_t term = 1;
            if (*eol == '\r') {
                /* need one more byte to tell "\r\n" from a lone "\r" */
                if (eol + 1 == r->buf + r->end && !r->eof) {
                    size_t pos = (size_t)(eol - r->buf) - r->start;
                    long n = fill(r);
                    if (n < 0) return (int)n;
                    scanned = r->start + pos;
                    continue;
                }
                if (eol + 1 < r->buf + r->end && eol[1] == '\n') term = 2;
            }
            *line = r->buf + r->start;
            *len = (size_t)(eol - *line);
            *eol = 0;
            r->line_off = r->base + r->start;
            r->start += *len + term;
            r->lineno++;
            r->had_nl = 1;
            return 1;
        }
        scanned = r->end;
        if (r->eof) {
            if (r->start == r->end) return 0;
            *line = r->buf + r->start;
            *len = r->end - r->start;
            r->buf[r->end] = 0; /* cap has one spare byte */
            r->line_off = r->base + r->start;
            r->start = r->end;
            r->lineno++;
            r->had_nl = 0;
            return 1;
        }
        size_t off = scanned - r->start;
        long n = fill(r);
        if (n < 0) return (int)n;
        scanned = r->start + off;
    }
}

int nlp_reader_read(nlp_reader *r, void *out, size_t n, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        if (r->start == r->end) {
            if (n - done >= READ_CHUNK && !r->eof) {
                ssize_t k = read(r->fd, (char *)out + done, n - done);
                if (k < 0 && errno == EINTR) continue;
                if (k < 0) return nlp_error_errno(NLP_EIO, "cannot read '%s'", r->name);
                if (k == 0) {
                    r->eof = 1;
                    break;
                }
                r->base += (size_t)k;
                done += (size_t)k;
                continue;
            }
            long k = fill(r);
            if (k < 0) return (int)k;
            if (k == 0) break;
        }
        size_t take = r->end - r->start;
        if (take > n - done) take = n - done;
        memcpy((char *)out + done, r->buf + r->start, take);
        r->start += take;
        done += take;
    }
    *got = done;
    return NLP_OK;
}

int nlp_reader_peek(nlp_reader *r, size_t n, const char **p, size_t *got)
{
    while (r->end - r->start < n && !r->eof) {
        long k = fill(r);
        if (k < 0) return (int)k;
    }
    *p = r->buf + r->start;
    *got = r->end - r->start < n ? r->end - r->start : n;
    return NLP_OK;
}

int nlp_reader_read_exact(nlp_reader *r, void *buf, size_t n)
{
    size_t got;
    uint64_t at = nlp_reader_offset(r);
    int rc = nlp_reader_read(r, buf, n, &got);
    if (rc) return rc;
    if (got != n)
        return nlp_error(NLP_EFORMAT, "'%s': truncated at byte %llu (wanted %zu more bytes, got %zu)",
                         r->name, (unsigned long long)(at + got), n, got);
    return NLP_OK;
}

const char *nlp_reader_name(const nlp_reader *r) { return r->name; }
uint64_t nlp_reader_lineno(const nlp_reader *r) { return r->lineno; }
uint64_t nlp_reader_line_offset(const nlp_reader *r) { return r->line_off; }
uint64_t nlp_reader_offset(const nlp_reader *r) { return r->base + r->start; }
int nlp_reader_had_newline(const nlp_reader *r) { return r->had_nl; }

void nlp_reader_close(nlp_reader *r)
{
    if (!r) return;
    if (r->own) close(r->fd);
    free(r->buf);
    free(r->name);
    free(r);
}

int nlp_read_lines(const char *path, enum nlp_newline mode, char ***lines, size_t *n)
{
    nlp_reader *r;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    nlp_reader_set_newline(r, mode);
    nlp_buf text = {0};
    size_t *offs = NULL, cap = 0, cnt = 0;
    char *line;
    size_t len;
    while ((rc = nlp_reader_line(r, &line, &len)) == 1) {
        if (nlp_grow(&offs, &cap, cnt + 1, sizeof *offs) || nlp_buf_append(&text, line, len) ||
            nlp_buf_putc(&text, 0)) {
            rc = NLP_ENOMEM;
            break;
        }
        offs[cnt++] = text.len - len - 1;
    }
    nlp_reader_close(r);
    if (rc < 0) {
        free(offs);
        nlp_buf_free(&text);
        return rc;
    }
    /* one block: the pointer array followed by the text */
    size_t ptrs = (cnt + 1) * sizeof(char *);
    char **out = nlp_malloc(ptrs + text.len + 1);
    if (!out) {
        free(offs);
        nlp_buf_free(&text);
        return NLP_ENOMEM;
    }
    char *t = (char *)out + ptrs;
    if (text.len) memcpy(t, text.data, text.len);
    t[text.len] = 0;
    for (size_t i = 0; i < cnt; i++) out[i] = t + offs[i];
    out[cnt] = NULL;
    free(offs);
    nlp_buf_free(&text);
    *lines = out;
    *n = cnt;
    return NLP_OK;
}

// --- writer

#define WBUF (1u << 16)

/* Temporary files of open atomic writers, for nlp_writer_unlink_pending()
 * to remove from a signal handler: plain loads and unlink() only, both
 * async-signal-safe. Writers beyond the table's size are simply not
 * tracked (their temporary would survive a kill, the target still would). */
#define PENDING_MAX 64
static char *_Atomic pending[PENDING_MAX];

static int pending_add(char *path)
{
    for (int i = 0; i < PENDING_MAX; i++) {
        char *none = NULL;
        if (atomic_compare_exchange_strong(&pending[i], &none, path)) return i;
    }
    return -1;
}

static void pending_remove(int slot)
{
    if (slot >= 0) atomic_store(&pending[slot], NULL);
}

void nlp_writer_unlink_pending(void)
{
    for (int i = 0; i < PENDING_MAX; i++) {
        char *p = atomic_load(&pending[i]);
        if (p) unlink(p);
    }
}

/* Removes the temporaries "<name>.tmp.<pid>-<n>" of `path` that writers
 * killed before their rename left beside it (a process that is gone; this
 * one has none at the time of a new open of the same target but may have
 * another writer of it open, so its own pid is spared). */
static void remove_stale_temps(const char *path)
{
    char *copy = nlp_strdup(path), *copy2 = nlp_strdup(path);
    DIR *d = copy && copy2 ? opendir(dirname(copy)) : NULL;
    if (d) {
        const char *base = basename(copy2);
        size_t bn = strlen(base);
        struct dirent *e;
        while ((e = readdir(d))) {
            const char *n = e->d_name;
            if (strncmp(n, base, bn) != 0 || strncmp(n + bn, ".tmp.", 5) != 0) continue;
            char *end;
            errno = 0;
            long pid = strtol(n + bn + 5, &end, 10);
            if (end == n + bn + 5 || errno || pid <= 0 || *end != '-' || !end[1]) continue;
            char *end2;
            strtoul(end + 1, &end2, 10);
            if (*end2 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno == EPERM) continue;
            size_t dn = strlen(copy), need = dn + strlen(n) + 2;
            char *p = nlp_malloc(need);
            if (!p) break;
            snprintf(p, need, "%s/%s", copy, n);
            unlink(p);
            free(p);
        }
        closedir(d);
    }
    free(copy);
    free(copy2);
}

struct nlp_writer {
    int fd, is_stdout, atomic, slot;
    char *path, *tmp;
    char buf[WBUF];
    size_t used;
    uint64_t written;
    int failed;
};

int nlp_writer_open(nlp_writer **out, const char *path, int flags)
{
    nlp_writer *w = nlp_calloc(1, sizeof *w);
    if (!w) return NLP_ENOMEM;
    w->path = nlp_strdup(strcmp(path, "-") == 0 ? "<stdout>" : path);
    if (!w->path) {
        free(w);
        return NLP_ENOMEM;
    }
    /* Only a regular file (or a new one) can be replaced by renaming a
     * temporary over it: a FIFO, a device such as /dev/null or /dev/stdout,
     * or a shell's /dev/fd/N is written in place (renaming would put a plain
     * file where the node was), and a directory fails at the open below. */
    struct stat st;
    int exists = strcmp(path, "-") != 0 && stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) flags |= NLP_W_DIRECT;
    if (strcmp(path, "-") == 0) {
        w->fd = 1;
        w->is_stdout = 1;
    } else if (flags & NLP_W_DIRECT) {
        w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (w->fd < 0) {
            int rc = nlp_error_errno(NLP_EIO, "cannot create '%s'", path);
            free(w->path);
            free(w);
            return rc;
        }
    } else {
        /* The temporary sits beside the target (same file system, so the
         * rename is atomic) under a name unique to this process and call;
         * O_EXCL refuses to reuse anything already there. Mode 0666 & ~umask
         * as for any new file, or the mode of the file it replaces. */
        static _Atomic unsigned long serial;
        remove_stale_temps(path);
        size_t n = strlen(path) + 48;
        w->tmp = nlp_malloc(n);
        if (!w->tmp) {
            free(w->path);
            free(w);
            return NLP_ENOMEM;
        }
        w->fd = -1;
        for (int tries = 0; w->fd < 0 && tries < 100; tries++) {
            snprintf(w->tmp, n, "%s.tmp.%ld-%lu", path, (long)getpid(), serial++);
            w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (w->fd < 0 && errno != EEXIST) break;
        }
        /* a file being replaced keeps its rwx bits (not setuid/setgid: new
         * content does not inherit those) */
        if (w->fd >= 0 && exists && fchmod(w->fd, st.st_mode & 0777) != 0) {
            int e = errno;
            close(w->fd);
            unlink(w->tmp);
            w->fd = -1;
            errno = e;
        }
        if (w->fd < 0) {
            int rc = nlp_error_errno(NLP_EIO, "cannot create '%s'", path);
            free(w->tmp);
            free(w->path);
            free(w);
            return rc;
        }
        w->atomic = 1;
        w->slot = pending_add(w->tmp);
    }
    *out = w;
    return NLP_OK;
}

static int write_all(nlp_writer *w, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            w->failed = 1;
            return nlp_error_errno(NLP_EIO, "cannot write '%s'", w->path);
        }
        p += k;
        n -= (size_t)k;
    }
    return NLP_OK;
}

int nlp_writer_flush(nlp_writer *w)
{
    if (w->failed) return NLP_EIO;
    int rc = write_all(w, w->buf, w->used);
    w->used = 0;
    return rc;
}

int nlp_writer_write(nlp_writer *w, const void *p, size_t n)
{
    if (w->failed) return NLP_EIO;
    w->written += n;
    if (n >= WBUF) {
        if (nlp_writer_flush(w)) return NLP_EIO;
        return write_all(w, p, n);
    }
    if (WBUF - w->used < n && nlp_writer_flush(w)) return NLP_EIO;
    memcpy(w->buf + w->used, p, n);
    w->used += n;
    return NLP_OK;
}

int nlp_writer_puts(nlp_writer *w, const char *s) { return nlp_writer_write(w, s, strlen(s)); }

int nlp_writer_putc(nlp_writer *w, int c)
{
    if (w->used < WBUF) {
        w->buf[w->used++] = (char)c;
        w->written++;
        return w->failed ? NLP_EIO : NLP_OK;
    }
    char ch = (char)c;
    return nlp_writer_write(w, &ch, 1);
}

int nlp_writer_printf(nlp_writer *w, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return nlp_error(NLP_ERR, "bad format string");
    if ((size_t)n < sizeof small) return nlp_writer_write(w, small, (size_t)n);
    char *big = nlp_malloc((size_t)n + 1);
    if (!big) return NLP_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = nlp_writer_write(w, big, (size_t)n);
    free(big);
    return rc;
}

const char *nlp_writer_name(const nlp_writer *w) { return w->path; }
uint64_t nlp_writer_offset(const nlp_writer *w) { return w->written; }

static void fsync_dir_of(const char *path)
{
    char *copy = nlp_strdup(path);
    if (!copy) return;
    int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(copy);
}

int nlp_writer_close(nlp_writer *w)
{
    int rc = nlp_writer_flush(w);
    if (w->is_stdout) {
        free(w->path);
        free(w);
        return rc;
    }
    if (!rc && fsync(w->fd) != 0 && errno != EINVAL)
        rc = nlp_error_errno(NLP_EIO, "cannot sync '%s'", w->path);
    if (close(w->fd) != 0 && !rc) rc = nlp_error_errno(NLP_EIO, "cannot write '%s'", w->path);
    if (w->atomic) {
        if (!rc && rename(w->tmp, w->path) != 0)
            rc = nlp_error_errno(NLP_EIO, "cannot rename '%s' to '%s'", w->tmp, w->path);
        if (rc) unlink(w->tmp);
        else fsync_dir_of(w->path);
        pending_remove(w->slot);
        free(w->tmp);
    }
    free(w->path);
    free(w);
    return rc;
}

void nlp_writer_abort(nlp_writer *w)
{
    if (!w) return;
    if (w->is_stdout) {
        nlp_writer_flush(w);
    } else {
        close(w->fd);
        if (w->atomic) {
            unlink(w->tmp);
            pending_remove(w->slot);
        }
    }
    free(w->tmp);
    free(w->path);
    free(w);
}

int nlp_write_file(const char *path, const void *data, size_t n)
{
    nlp_writer *w;
    int rc = nlp_writer_open(&w, path, 0);
    if (rc) return rc;
    if ((rc = nlp_writer_write(w, data, n))) {
        nlp_writer_abort(w);
        return rc;
    }
    return nlp_writer_close(w);
}

// --- whole files

/* Reads r to its end into a NUL-terminated block and closes r. */
static int read_all(nlp_reader *r, char **data, size_t *len)
{
    int rc = NLP_OK;
    nlp_buf b = {0};
    for (;;) {
        if (nlp_buf_reserve(&b, READ_CHUNK)) {
            rc = NLP_ENOMEM;
            break;
        }
        size_t got;
        if ((rc = nlp_reader_read(r, b.data + b.len, READ_CHUNK, &got))) break;
        b.len += got;
        b.data[b.len] = 0;
        if (got == 0) break;
    }
    nlp_reader_close(r);
    if (rc) {
        nlp_buf_free(&b);
        return rc;
    }
    *data = nlp_buf_detach(&b, len);
    return *data ? NLP_OK : NLP_ENOMEM;
}

int nlp_read_file(const char *path, char **data, size_t *len)
{
    nlp_reader *r;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    return read_all(r, data, len);
}

int nlp_map_file(nlp_map *m, const char *path)
{
    memset(m, 0, sizeof *m);
    int fd = strcmp(path, "-") == 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
            close(fd);
            return nlp_error(NLP_EIO, "cannot read '%s': Is a directory", path);
        }
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
            void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p != MAP_FAILED) {
                close(fd);
                m->data = p;
                m->len = (size_t)st.st_size;
                m->mapped = 1;
                return NLP_OK;
            }
        }
    } else if (strcmp(path, "-") != 0) {
        return nlp_error_errno(NLP_EIO, "cannot open '%s'", path);
    }
    /* Not mappable (standard input, a pipe, a FIFO, an empty or special
     * file): read what is already open. Closing and reopening a FIFO would
     * drop its writer (SIGPIPE) and then wait for one that never comes. */
    nlp_reader *r;
    int rc = fd >= 0 ? nlp_reader_from_fd(&r, fd, path, 1) : nlp_reader_open(&r, path);
    if (rc) {
        if (fd >= 0) close(fd);
        return rc;
    }
    char *d;
    size_t n;
    rc = read_all(r, &d, &n);
    if (rc) return rc;
    m->data = d;
    m->len = n;
    return NLP_OK;
}

void nlp_unmap(nlp_map *m)
{
    if (!m->data) return;
    if (m->mapped) munmap((void *)m->data, m->len);
    else free((void *)m->data);
    memset(m, 0, sizeof *m);
}

int nlp_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int nlp_file_exists(const char *path) { return access(path, R_OK) == 0; }
