/*
 * lines.h — input lines for the model tools that answer line by line
 * (translate, generate --batch, finetune predict and eval): read as they
 * come and handed over as soon as no more are waiting, so that a line typed
 * at a terminal or sent down a pipe is answered at once while a file is
 * read in batches; each line at most a limit of bytes (--max-line-bytes),
 * so that the memory stays bounded on any stream: a longer line exits 1
 * naming the file and the line, before more of it is read.
 *
 * Like cli.h this lives in bin/: it prints and exits.
 */
#ifndef NLP_BIN_LINES_H
#define NLP_BIN_LINES_H

#include <stddef.h>
#include <stdint.h>

typedef struct lines_in {
    int fd;
    const char *name; /* for messages: the path, or "standard input" */
    char *buf;
    size_t len, cap, pos;
    size_t max;       /* the longest line held (bytes, its newline not counted) */
    int eof;
    uint64_t lineno;  /* the number of the line last handed over (1-based) */
} lines_in;

/* Opens path ("-": standard input) with lines of at most max bytes; exits 1
 * when it cannot be opened. */
void lines_open(lines_in *r, const char *path, size_t max);

/* The next whole line, without its newline (a final line without one
 * counts): 1 with *line and *n (valid until the next call; not
 * NUL-terminated), or 0 when none is waiting and block is 0, or at the end
 * of the input. Exits 1 on a read error or a line longer than r->max. */
int lines_next(lines_in *r, int block, const char **line, size_t *n);

/* 1 when the input has ended and every line was handed over. */
int lines_done(const lines_in *r);

void lines_close(lines_in *r);

#endif
