/*
 * err.h — status codes, error messages and invariant checks for libnlpipe.
 *
 * The library never exits on bad input. A failing function returns a
 * negative nlp_status and leaves a message, retrievable with nlp_errmsg(),
 * that names the file, line or byte offset and what was expected (the
 * sqlite rc + errmsg pattern). The message is per thread.
 *
 * Broken invariants (bugs, not user errors) are caught by NLP_ASSERT, which
 * prints file:line and aborts; never use it for data that comes from outside.
 *
 * Not here: printing to the user or choosing exit codes beyond the mapping in
 * nlp_exit_code(); that is bin/'s job.
 */
#ifndef NLP_BASE_ERR_H
#define NLP_BASE_ERR_H

#include <stdarg.h>

/* C11's _Noreturn, spelled so that C++ (which has [[noreturn]]) reads the
 * header too. */
#if defined(__cplusplus)
#define NLP_NORETURN [[noreturn]]
#else
#define NLP_NORETURN _Noreturn
#endif

typedef enum nlp_status {
    NLP_OK      = 0,
    NLP_ERR     = -1, /* runtime failure not covered below */
    NLP_EIO     = -2, /* cannot open, read, write, rename, fsync */
    NLP_ENOMEM  = -3, /* allocation failed */
    NLP_EINVAL  = -4, /* bad argument or option value (a usage error) */
    NLP_EDATA   = -5, /* bad input data: invalid UTF-8, line count mismatch... */
    NLP_EFORMAT = -6, /* unreadable, corrupt or incompatible model/tokenizer/data file */
    NLP_ENAN    = -7, /* non-finite value during training */
} nlp_status;

/* Exit statuses shared by every tool (shared/CLI.md). */
enum {
    NLP_EXIT_OK      = 0,
    NLP_EXIT_FAILURE = 1,
    NLP_EXIT_USAGE   = 2,
    NLP_EXIT_FORMAT  = 3,
};

/* Sets this thread's message from a printf format and returns `code`, so a
 * failing path reads `return nlp_error(NLP_EDATA, "'%s' line %zu: ...", ...)`. */
int nlp_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int nlp_verror(int code, const char *fmt, va_list ap);

/* Like nlp_error but appends ": strerror(errno)" (errno read on entry). */
int nlp_error_errno(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends "prefix: " to the current message (adds context as an error
 * travels up) and returns `code`. */
int nlp_error_prefix(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The current thread's last message ("" if none). Valid until the next
 * nlp_error* call on this thread. */
const char *nlp_errmsg(void);

/* The last status passed to nlp_error* on this thread (NLP_OK if none). */
int nlp_errcode(void);

void nlp_error_clear(void);

/* Maps a status to the exit status of shared/CLI.md: 0 ok, 2 usage,
 * 3 bad model/data file format, 1 everything else. */
int nlp_exit_code(int status);

/* Human name of a status, e.g. "format error". */
const char *nlp_status_name(int status);

/* Invariant check for bugs: prints "file:line: assertion failed: expr" and aborts. */
#define NLP_ASSERT(x)                                                          \
    do {                                                                       \
        if (!(x)) nlp_assert_fail(__FILE__, __LINE__, #x);                     \
    } while (0)

NLP_NORETURN void nlp_assert_fail(const char *file, int line, const char *expr);

#endif
