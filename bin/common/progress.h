/*
 * progress.h — the progress lines of the tools (--progress): one line on
 * standard error, rewritten in place, that says how far a job is, how fast
 * it goes and, when its size is known, the share done and the time left:
 *
 *   train-bpe: counting words: 42% of 50.0 MB, 12.3 MB/s, 2 s left, 120000 lines
 *   train-bpe: merging: 37% of 30000 tokens, 850 merges/s, 22 s left
 *   tokenize: 10.0 MB, 8.1 MB/s, 51000 lines, 2300000 tokens
 *
 * Like cli.h this lives in bin/: it prints. Not here: deciding whether to
 * show progress (the tools' --progress, default on a terminal).
 */
#ifndef NLP_BIN_PROGRESS_H
#define NLP_BIN_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

typedef struct progress_line {
    const char *what; /* "counting words", or NULL */
    double t0, shown; /* start, and when the line was last written */
} progress_line;

/* Monotonic seconds. */
double progress_now(void);

/* Starts the clock of p. */
void progress_start(progress_line *p, const char *what);

/* Writes p's line: `done` of `total` (total 0 = unknown: no share and no
 * time left), each divided by `scale` and followed by `unit` ("MB" with
 * 1e6), the rate of `rate_done` per second in `rate_unit` (such as
 * "merges/s"; NULL: done's, in unit/s), the time left at the pace so far,
 * then `extra` (or NULL). Writes at most every 0.2 s unless `final`. */
void progress_show(progress_line *p, double done, double total, double scale, const char *unit, double rate_done,
                   const char *rate_unit, const char *extra, int final);

/* Ends the line (a newline) if one was written. */
void progress_end(progress_line *p);

/* The size in bytes of the inputs ("-" = standard input) when every one is
 * a regular file, else 0 (unknown: a pipe). */
uint64_t progress_input_size(const char *const *paths, size_t n);

#endif
