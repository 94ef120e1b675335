/*
 * test.h — the unit-test harness: one program per tests/unit/test_<name>.c.
 *
 * Each check prints "not ok" lines with file:line on failure (and "ok" lines
 * with -v); a test that cannot run prints "# skipped <test>: <reason>" and
 * counts one skip (test_skip); the program ends with the summary line
 *   # <name>: N passed, N failed[, N skipped]
 * that tests/run adds up (listing each reason once), and exits 1 if
 * anything failed.
 *
 * Environment for tests: SHARED (path of ../shared; tests that need it call
 * test_shared() and are skipped when it is absent), NLPIPE_TMP (scratch dir).
 *
 * Usage:
 *   static void test_foo(void) { CHECK(x == 1); CHECK_NEAR(y, 0.5, 1e-9); }
 *   int main(int argc, char **argv) { TEST_INIT(argc, argv); RUN(test_foo); return TEST_END(); }
 */
#ifndef NLP_TEST_H
#define NLP_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int t_pass, t_fail, t_skip, t_verbose;
static int t_compact; /* did the last test_data() answer with the compact copy */
static const char *t_name = "unit", *t_current = "";

#define TEST_INIT(argc, argv)                                                  \
    do {                                                                       \
        const char *s_ = strrchr((argv)[0], '/');                              \
        t_name = s_ ? s_ + 1 : (argv)[0];                                      \
        if (strncmp(t_name, "test_", 5) == 0) t_name += 5;                     \
        t_verbose = (argc) > 1 && strcmp((argv)[1], "-v") == 0;                \
    } while (0)

#define RUN(fn)                                                                \
    do {                                                                       \
        t_current = #fn;                                                       \
        fn();                                                                  \
    } while (0)

#define TEST_END()                                                             \
    (t_skip ? printf("# %s: %d passed, %d failed, %d skipped\n", t_name,       \
                     t_pass, t_fail, t_skip)                                   \
            : printf("# %s: %d passed, %d failed\n", t_name, t_pass, t_fail),  \
     fflush(stdout), t_fail ? 1 : 0)

/* Counts one skip of the current test and says why (once per call). */
#define test_skip(...)                                                         \
    do {                                                                       \
        t_skip++;                                                              \
        printf("# skipped %s: ", t_current);                                   \
        printf(__VA_ARGS__);                                                   \
        printf("\n");                                                          \
    } while (0)

static inline int t_report(int ok, const char *file, int line, const char *what)
{
    if (ok) {
        t_pass++;
        if (t_verbose) printf("ok %s: %s\n", t_current, what);
    } else {
        t_fail++;
        printf("not ok %s:%d %s: %s\n", file, line, t_current, what);
    }
    return ok;
}

#define CHECK(cond) t_report(!!(cond), __FILE__, __LINE__, #cond)

#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        if (!t_report(!!(cond), __FILE__, __LINE__, #cond)) {                  \
            printf("    ");                                                    \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
        }                                                                      \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                     \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (!t_report(a_ == b_, __FILE__, __LINE__, #a " == " #b))             \
            printf("    got %lld, expected %lld\n", a_, b_);                   \
    } while (0)

#define CHECK_STR(a, b)                                                        \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        int ok_ = a_ && b_ && strcmp(a_, b_) == 0;                             \
        if (!t_report(ok_, __FILE__, __LINE__, #a " == " #b))                  \
            printf("    got \"%s\", expected \"%s\"\n", a_ ? a_ : "(null)",    \
                   b_ ? b_ : "(null)");                                        \
    } while (0)

/* |a-b| <= tol (absolute) */
#define CHECK_NEAR(a, b, tol)                                                  \
    do {                                                                       \
        double a_ = (a), b_ = (b);                                             \
        if (!t_report(fabs(a_ - b_) <= (tol), __FILE__, __LINE__,              \
                      #a " ~ " #b))                                            \
            printf("    got %.17g, expected %.17g (tol %g)\n", a_, b_,         \
                   (double)(tol));                                             \
    } while (0)

/* relative: |a-b| <= rel*|b| (exact when b == 0) */
#define CHECK_REL(a, b, rel)                                                   \
    do {                                                                       \
        double a_ = (a), b_ = (b);                                             \
        int ok_ = b_ == 0 ? a_ == 0 : fabs(a_ - b_) <= (rel) * fabs(b_);       \
        if (!t_report(ok_, __FILE__, __LINE__, #a " ~rel " #b))                \
            printf("    got %.17g, expected %.17g (rel %g)\n", a_, b_,         \
                   (double)(rel));                                             \
    } while (0)

/* The shared/ directory, or NULL (and a skip is counted) when absent. */
static inline const char *test_shared(void)
{
    const char *s = getenv("SHARED");
    if (!s || !*s) s = "../shared";
    if (access(s, R_OK) != 0) {
        test_skip("shared data not found at '%s'", s);
        return NULL;
    }
    return s;
}

/* Where the reference file or directory `rel` (a path under shared/, such
 * as "vectors/tokenize/gpt2") is: $SHARED when it holds it (the full sets),
 * else "tests/data/golden", the compact copy carried in the repository (same
 * layout; units run from the top of the tree), else NULL and a skip is
 * counted. t_compact says which. */
static inline const char *test_root(const char *rel)
{
    static char path[1024];
    const char *s = getenv("SHARED");
    if (!s || !*s) s = "../shared";
    t_compact = 0;
    snprintf(path, sizeof path, "%s/%s", s, rel);
    if (access(path, R_OK) == 0) return s;
    t_compact = 1;
    snprintf(path, sizeof path, "tests/data/golden/%s", rel);
    if (access(path, R_OK) == 0) return "tests/data/golden";
    test_skip("%s not found in '%s' or tests/data/golden", rel, s);
    return NULL;
}

/* The path of `rel` under test_root(rel), or NULL (skipped). Valid until the
 * fourth call after. */
static inline const char *test_data(const char *rel)
{
    static char bufs[4][1024];
    static int k;
    const char *root = test_root(rel);
    if (!root) return NULL;
    char *b = bufs[k++ & 3];
    snprintf(b, sizeof bufs[0], "%s/%s", root, rel);
    return b;
}

/* A scratch directory made once per program (removed by tests/run). */
static inline const char *test_tmpdir(void)
{
    static char dir[256];
    if (!dir[0]) {
        const char *base = getenv("NLPIPE_TMP");
        snprintf(dir, sizeof dir, "%s/unit-%s-XXXXXX", base && *base ? base : "/tmp", t_name);
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return dir;
}

#endif
