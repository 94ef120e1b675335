/*
 * lines.c — input lines, handed over as soon as no more are waiting. See lines.h.
 */
#include "common/lines.h"
#include "base/err.h"
#include "base/mem.h"
#include "common/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

void lines_open(lines_in *r, const char *path, size_t max)
{
    memset(r, 0, sizeof *r);
    r->name = path;
    r->max = max;
    if (strcmp(path, "-") == 0) r->fd = 0, r->name = "standard input";
    else if ((r->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        cli_die(NLP_EXIT_FAILURE, "cannot open '%s': %s", path, strerror(errno));
}

/* Fills the buffer; blocks only when `block`. Returns 1 if bytes came. */
static int fill(lines_in *r, int block)
{
    if (r->eof) return 0;
    if (!block) {
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        if (poll(&p, 1, 0) <= 0) return 0;
    }
    if (r->pos > 0 && r->pos == r->len) r->pos = r->len = 0;
    if (r->pos > r->cap / 2) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos, r->pos = 0;
    }
    if (nlp_grow(&r->buf, &r->cap, r->len + 65536, 1)) cli_fail(NLP_ENOMEM);
    ssize_t k;
    do k = read(r->fd, r->buf + r->len, r->cap - r->len);
    while (k < 0 && errno == EINTR);
    if (k < 0) cli_die(NLP_EXIT_FAILURE, "cannot read '%s': %s", r->name, strerror(errno));
    if (k == 0) {
        r->eof = 1;
        return 0;
    }
    r->len += (size_t)k;
    return 1;
}

static _Noreturn void too_long(const lines_in *r)
{
    cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: longer than %zu bytes, the longest line allowed (--max-line-bytes "
            "raises the limit)", r->name, (unsigned long long)r->lineno + 1, r->max);
}

int lines_next(lines_in *r, int block, const char **line, size_t *n)
{
    size_t looked = 0; /* bytes of the current line already searched for a newline */
    for (;;) {
        const size_t have = r->len - r->pos;
        char *nl = have > looked ? memchr(r->buf + r->pos + looked, '\n', have - looked) : NULL;
        if (nl) {
            *line = r->buf + r->pos;
            *n = (size_t)(nl - *line);
            if (*n > r->max) too_long(r);
            r->pos = (size_t)(nl - r->buf) + 1;
            r->lineno++;
            return 1;
        }
        looked = have;
        if (have > r->max) too_long(r); /* before more of it is read */
        if (r->eof) {
            if (have) {
                *line = r->buf + r->pos;
                *n = have;
                r->pos = r->len;
                r->lineno++;
                return 1;
            }
            return 0;
        }
        if (!fill(r, block) && !r->eof) return 0;
    }
}

int lines_done(const lines_in *r) { return r->eof && r->pos >= r->len; }

void lines_close(lines_in *r)
{
    if (r->fd > 0) close(r->fd);
    free(r->buf);
    memset(r, 0, sizeof *r);
}
