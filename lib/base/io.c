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
#include <signal.h>
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
    /* lines longer than max_line (0 = no limit) come in parts: part is 1
     * while the line goes on, and the byte after a returned part, which
     * its NUL terminator replaced, is kept in held_ch until the next call */
    size_t max_line;
    int part, held;
    char held_ch;
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

void nlp_reader_set_max_line(nlp_reader *r, size_t max) { r->max_line = max; }

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

/* Puts back the byte a part's NUL terminator replaced. */
static void unhold(nlp_reader *r)
{
    if (r->held) {
        r->buf[r->start] = r->held_ch;
        r->held = 0;
    }
}

/* Returns buf[start, start + n) as the next line or part of one; term is
 * the terminator's length (0: none; then a part unless at the end). */
static int give_line(nlp_reader *r, size_t n, size_t term, int is_part, char **line, size_t *len)
{
    *line = r->buf + r->start;
    *len = n;
    if (is_part && r->start + n < r->end) {
        r->held = 1;
        r->held_ch = r->buf[r->start + n];
    }
    r->buf[r->start + n] = 0; /* the terminator's place, or the spare byte of cap */
    r->line_off = r->base + r->start;
    r->start += n + term;
    if (!r->part) r->lineno++;
    r->part = is_part;
    r->had_nl = term > 0;
    return 1;
}

int nlp_reader_line(nlp_reader *r, char **line, size_t *len)
{
    unhold(r);
    size_t scanned = r->start, max = r->max_line;
    for (;;) {
        char *eol = find_eol(r, scanned);
        if (eol && max && (size_t)(eol - (r->buf + r->start)) > max) return give_line(r, max, 0, 1, line, len);
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
            return give_line(r, (size_t)(eol - (r->buf + r->start)), term, 0, line, len);
        }
        scanned = r->end;
        if (max && r->end - r->start > max) return give_line(r, max, 0, 1, line, len);
        if (r->eof) {
            if (r->start == r->end) {
                r->part = 0;
                return 0;
            }
            return give_line(r, r->end - r->start, 0, 0, line, len);
        }
        size_t off = scanned - r->start;
        long n = fill(r);
        if (n < 0) return (int)n;
        scanned = r->start + off;
    }
}

int nlp_reader_read(nlp_reader *r, void *out, size_t n, size_t *got)
{
    unhold(r);
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
    unhold(r);
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
int nlp_reader_partial(const nlp_reader *r) { return r->part; }

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

/* The temporaries "NAME.tmp.PID-N" beside path that a process which no
 * longer exists left behind (a SIGKILL, a power cut: nothing could remove
 * them). A live process's temporary is never touched. Errors are ignored:
 * this only tidies up. */
static void remove_stale_temps(const char *path)
{
    char *copy = nlp_strdup(path), *copy2 = nlp_strdup(path);
    DIR *d = NULL;
    if (copy && copy2) d = opendir(dirname(copy));
    if (d) {
        const char *base = basename(copy2);
        size_t bn = strlen(base);
        struct dirent *e;
        while ((e = readdir(d))) {
            const char *n = e->d_name, *p;
            if (strncmp(n, base, bn) != 0 || strncmp(n + bn, ".tmp.", 5) != 0) continue;
            char *end;
            errno = 0;
            long pid = strtol(n + bn + 5, &end, 10);
            if (errno || end == n + bn + 5 || *end != '-' || pid <= 0 || pid == (long)getpid()) continue;
            for (p = end + 1; *p >= '0' && *p <= '9'; p++)
                ;
            if (p == end + 1 || *p) continue;
            if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
            struct stat st;
            if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) unlinkat(dirfd(d), n, 0);
        }
        closedir(d);
    }
    free(copy);
    free(copy2);
}

struct nlp_writer {
    int fd, is_stdout, atomic, slot;
    char *path, *tmp, *target; /* target: path with its symbolic links followed */
    char buf[WBUF];
    size_t used;
    uint64_t written;
    int failed;
};

static int in_place_ok;

void nlp_writer_set_in_place(int allow) { in_place_ok = allow; }

/* `path` with its symbolic links followed (a malloc'd copy; the last target
 * may not exist yet, as for `>` onto a dangling link). NULL on ENOMEM. */
static char *follow_links(const char *path)
{
    char *p = nlp_strdup(path);
    for (int hops = 0; p && hops < 40; hops++) {
        struct stat st;
        if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode)) return p;
        char link[4096];
        ssize_t n = readlink(p, link, sizeof link - 1);
        if (n < 0) return p;
        link[n] = 0;
        char *next;
        if (link[0] == '/') {
            next = nlp_strdup(link);
        } else { /* relative to the link's directory */
            const char *slash = strrchr(p, '/');
            size_t dl = slash ? (size_t)(slash - p) + 1 : 0;
            next = nlp_malloc(dl + (size_t)n + 1);
            if (next) {
                memcpy(next, p, dl);
                memcpy(next + dl, link, (size_t)n + 1);
            }
        }
        free(p);
        p = next;
    }
    return p; /* a loop: the open below reports it */
}

int nlp_writer_open(nlp_writer **out, const char *user_path, int flags)
{
    nlp_writer *w = nlp_calloc(1, sizeof *w);
    if (!w) return NLP_ENOMEM;
    /* messages name the path as given; the bytes go to where it leads */
    w->path = nlp_strdup(strcmp(user_path, "-") == 0 ? "<stdout>" : user_path);
    w->target = strcmp(user_path, "-") == 0 ? nlp_strdup(user_path) : follow_links(user_path);
    if (!w->path || !w->target) {
        free(w->path);
        free(w->target);
        free(w);
        return NLP_ENOMEM;
    }
    const char *path = w->target;
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
            int rc = nlp_error_errno(NLP_EIO, "cannot create '%s'", user_path);
            free(w->path);
            free(w->target);
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
            free(w->target);
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
        int e = errno;
        if (w->fd < 0 && exists && (e == EACCES || e == EPERM || e == EROFS) && access(path, W_OK) == 0) {
            /* the directory refuses a temporary file, the file is writable */
            if (in_place_ok) {
                free(w->tmp);
                w->tmp = NULL;
                w->fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
                if (w->fd >= 0) goto opened;
                e = errno;
            } else {
                int rc = nlp_error(NLP_EIO, "cannot replace '%s' atomically: no temporary file can be created in "
                                            "its directory (%s); the file itself is writable: --in-place writes it "
                                            "in place, without the atomic replace", user_path, strerror(e));
                free(w->tmp);
                free(w->path);
                free(w->target);
                free(w);
                return rc;
            }
        }
        if (w->fd < 0) {
            errno = e;
            int rc = nlp_error_errno(NLP_EIO, "cannot create '%s'", user_path);
            free(w->tmp);
            free(w->path);
            free(w->target);
            free(w);
            return rc;
        }
        w->atomic = 1;
        w->slot = pending_add(w->tmp);
    }
opened:
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

int nlp_fsync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) /* a directory this process may not read: nothing to sync with */
        return errno == EACCES ? 0 : nlp_error_errno(NLP_EIO, "cannot sync directory '%s'", dir);
    int rc = 0;
    /* EINVAL, ENOTSUP: a file system that cannot sync a directory */
    if (fsync(dfd) != 0 && errno != EINVAL && errno != ENOTSUP)
        rc = nlp_error_errno(NLP_EIO, "cannot sync directory '%s'", dir);
    close(dfd);
    return rc;
}

static int fsync_dir_of(const char *path)
{
    char *copy = nlp_strdup(path);
    if (!copy) return NLP_ENOMEM;
    int rc = nlp_fsync_dir(dirname(copy));
    free(copy);
    return rc;
}

/* Flushes, syncs and closes w's file (the rename is left to commit()).
 * Returns 0 or NLP_EIO. */
static int finish(nlp_writer *w)
{
    int rc = nlp_writer_flush(w);
    if (w->is_stdout) return rc; /* commit() frees it */
    if (!rc && fsync(w->fd) != 0 && errno != EINVAL)
        rc = nlp_error_errno(NLP_EIO, "cannot sync '%s'", w->path);
    if (close(w->fd) != 0 && !rc) rc = nlp_error_errno(NLP_EIO, "cannot write '%s'", w->path);
    w->fd = -1;
    return rc;
}

/* After finish(): renames the temporary into place unless rc (then it is
 * removed), and frees w. Returns rc or the rename's error. */
static int commit(nlp_writer *w, int rc)
{
    if (w->atomic) {
        if (!rc && rename(w->tmp, w->target) != 0)
            rc = nlp_error_errno(NLP_EIO, "cannot rename '%s' to '%s'", w->tmp, w->target);
        if (rc) unlink(w->tmp);
        else rc = fsync_dir_of(w->target); /* the file is in place, but a crash may yet lose it */
        pending_remove(w->slot);
        free(w->tmp);
    }
    free(w->path);
    free(w->target);
    free(w);
    return rc;
}

int nlp_writer_close(nlp_writer *w) { return commit(w, finish(w)); }

int nlp_writer_close_set(nlp_writer **w, size_t n)
{
    int rc = NLP_OK;
    for (size_t i = 0; i < n; i++) {
        int r = finish(w[i]);
        if (r && !rc) rc = r;
    }
    /* every file is complete (or one failed and none is renamed) */
    for (size_t i = 0; i < n; i++) {
        int r = commit(w[i], rc);
        if (r && !rc) rc = r;
    }
    return rc;
}

void nlp_writer_abort(nlp_writer *w)
{
    if (!w) return;
    if (w->is_stdout) {
        nlp_writer_flush(w);
    } else {
        if (w->fd >= 0) close(w->fd);
        if (w->atomic) {
            unlink(w->tmp);
            pending_remove(w->slot);
        }
    }
    free(w->tmp);
    free(w->path);
    free(w->target);
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

static int too_big(const char *path, size_t max)
{
    return nlp_error(NLP_EFORMAT, "'%s': larger than %zu bytes (%.0f MiB), the most this file may hold", path, max,
                     (double)max / (1 << 20));
}

/* Reads r to its end into a NUL-terminated block and closes r; more than
 * max bytes is NLP_EFORMAT (path names the file in the message). */
static int read_all(nlp_reader *r, const char *path, size_t max, char **data, size_t *len)
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
        if (b.len > max) {
            rc = too_big(path, max);
            break;
        }
    }
    nlp_reader_close(r);
    if (rc) {
        nlp_buf_free(&b);
        return rc;
    }
    *data = nlp_buf_detach(&b, len);
    return *data ? NLP_OK : NLP_ENOMEM;
}

int nlp_read_file_max(const char *path, size_t max, char **data, size_t *len)
{
    nlp_reader *r;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    return read_all(r, path, max, data, len);
}

int nlp_read_file(const char *path, char **data, size_t *len) { return nlp_read_file_max(path, SIZE_MAX, data, len); }

int nlp_read_file_lines(const char *path, size_t max_line, char **data, size_t *len)
{
    nlp_reader *r;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    rc = nlp_reader_read_lines(r, max_line, data, len);
    nlp_reader_close(r);
    return rc;
}

int nlp_lines_check(const char *path, const char *p, size_t n, size_t max_line, size_t *cur, uint64_t *line)
{
    const char *e = p + n, *nl;
    while ((nl = memchr(p, '\n', (size_t)(e - p))) && *cur + (size_t)(nl - p) <= max_line)
        *cur = 0, ++*line, p = nl + 1;
    *cur += (size_t)((nl ? nl : e) - p);
    if (*cur <= max_line) return 0;
    return nlp_error(NLP_EDATA, "'%s' line %llu: longer than %zu bytes, the longest line allowed "
                     "(--max-line-bytes raises the limit)", strcmp(path, "-") ? path : "standard input",
                     (unsigned long long)*line, max_line);
}

int nlp_reader_read_lines(nlp_reader *r, size_t max_line, char **data, size_t *len)
{
    const char *path = nlp_reader_name(r);
    int rc = 0;
    nlp_buf b = {0};
    uint64_t line = 1;
    size_t cur = 0, got; /* bytes of the current line so far */
    for (;;) {
        if (nlp_buf_reserve(&b, 1 << 20)) {
            rc = NLP_ENOMEM;
            break;
        }
        if ((rc = nlp_reader_read(r, b.data + b.len, b.cap - b.len - 1, &got)) || !got) break;
        const char *p = b.data + b.len;
        b.len += got;
        if (max_line && (rc = nlp_lines_check(path, p, got, max_line, &cur, &line))) break;
    }
    if (!rc && !b.data && nlp_buf_reserve(&b, 1)) rc = NLP_ENOMEM;
    if (rc) {
        nlp_buf_free(&b);
        return rc;
    }
    b.data[b.len] = 0;
    *data = nlp_buf_detach(&b, len);
    return 0;
}

int nlp_map_file_max(nlp_map *m, const char *path, size_t max)
{
    memset(m, 0, sizeof *m);
    int fd = strcmp(path, "-") == 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
            close(fd);
            return nlp_error(NLP_EIO, "cannot read '%s': Is a directory", path);
        }
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
            close(fd);
            return too_big(path, max);
        }
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
            /* MAP_POPULATE: its pages mapped by this one call, not a page
             * fault each as they are first read (every caller reads the
             * whole file: GPT-2's encoder.json and vocab.bpe, 367 faults) */
            void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
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
    rc = read_all(r, path, max, &d, &n);
    if (rc) return rc;
    m->data = d;
    m->len = n;
    return NLP_OK;
}

int nlp_map_file(nlp_map *m, const char *path) { return nlp_map_file_max(m, path, SIZE_MAX); }

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
