/*
 * err.c — per-thread error messages. See err.h.
 */
#include "base/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NLP_ERRMSG_MAX 1024

static _Thread_local char errmsg[NLP_ERRMSG_MAX];
static _Thread_local int errcode;

int nlp_verror(int code, const char *fmt, va_list ap)
{
    vsnprintf(errmsg, sizeof errmsg, fmt, ap);
    errcode = code;
    return code;
}

int nlp_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nlp_verror(code, fmt, ap);
    va_end(ap);
    return code;
}

int nlp_error_errno(int code, const char *fmt, ...)
{
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    nlp_verror(code, fmt, ap);
    va_end(ap);
    size_t n = strlen(errmsg);
    snprintf(errmsg + n, sizeof errmsg - n, ": %s", strerror(e));
    return code;
}

int nlp_error_prefix(int code, const char *fmt, ...)
{
    char old[NLP_ERRMSG_MAX], pre[NLP_ERRMSG_MAX];
    va_list ap;
    memcpy(old, errmsg, sizeof old);
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    /* pre is cut first when the whole does not fit, so the original message survives */
    size_t np = strlen(pre), no = strlen(old);
    if (np + 2 + no >= sizeof errmsg) np = no + 3 < sizeof errmsg ? sizeof errmsg - no - 3 : 0;
    memcpy(errmsg, pre, np);
    memcpy(errmsg + np, ": ", 2);
    size_t room = sizeof errmsg - np - 3;
    if (no > room) no = room;
    memcpy(errmsg + np + 2, old, no);
    errmsg[np + 2 + no] = 0;
    errcode = code;
    return code;
}

const char *nlp_errmsg(void) { return errmsg; }
int nlp_errcode(void) { return errcode; }

void nlp_error_clear(void)
{
    errmsg[0] = 0;
    errcode = NLP_OK;
}

int nlp_exit_code(int status)
{
    switch (status) {
    case NLP_OK: return NLP_EXIT_OK;
    case NLP_EINVAL: return NLP_EXIT_USAGE;
    case NLP_EFORMAT: return NLP_EXIT_FORMAT;
    default: return NLP_EXIT_FAILURE;
    }
}

const char *nlp_status_name(int status)
{
    switch (status) {
    case NLP_OK: return "ok";
    case NLP_ERR: return "error";
    case NLP_EIO: return "i/o error";
    case NLP_ENOMEM: return "out of memory";
    case NLP_EINVAL: return "invalid argument";
    case NLP_EDATA: return "bad input data";
    case NLP_EFORMAT: return "format error";
    case NLP_ENAN: return "non-finite value";
    default: return "unknown error";
    }
}

void nlp_assert_fail(const char *file, int line, const char *expr)
{
    fprintf(stderr, "%s:%d: assertion failed: %s (this is a bug in nlpipe)\n", file, line, expr);
    fflush(stderr);
    abort();
}
