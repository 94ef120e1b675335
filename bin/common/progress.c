/*
 * progress.c — progress lines. See progress.h.
 */
#include "common/progress.h"
#include "common/cli.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

double progress_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void progress_start(progress_line *p, const char *what)
{
    p->what = what;
    p->t0 = progress_now();
    p->shown = 0;
}

/* "2 s", "3m05s", "1h02m" */
static void put_time(char *b, size_t n, double s)
{
    if (s < 0) s = 0;
    if (s < 90) snprintf(b, n, "%.0f s", s);
    else if (s < 5400) snprintf(b, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else snprintf(b, n, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

void progress_show(progress_line *p, double done, double total, double scale, const char *unit, double rate_done,
                   const char *rate_unit, const char *extra, int final)
{
    double now = progress_now(), t = now - p->t0;
    if (!final && p->shown > 0 && now - p->shown < 0.2) return;
    p->shown = now;
    double rate = t > 0 ? rate_done / t : 0;
    char left[32] = "";
    fprintf(stderr, "\r%s: ", cli_prog);
    if (p->what) fprintf(stderr, "%s: ", p->what);
    if (total > 0) {
        double share = done < total ? done / total : 1;
        fprintf(stderr, "%.0f%% of %.*f %s", 100 * share, scale > 1 ? 1 : 0, total / scale, unit);
        /* the time left at the pace so far */
        if (done > 0 && share < 1) put_time(left, sizeof left, t * (total - done) / done);
    } else {
        fprintf(stderr, "%.*f %s", scale > 1 ? 1 : 0, done / scale, unit);
    }
    if (rate_unit) fprintf(stderr, ", %.0f %s", rate, rate_unit);
    else fprintf(stderr, ", %.*f %s/s", scale > 1 ? 1 : 0, rate / scale, unit);
    if (left[0]) fprintf(stderr, ", %s left", left);
    else if (total > 0 || final) fprintf(stderr, ", %.1f s", t);
    if (extra) fprintf(stderr, ", %s", extra);
    fputs("   ", stderr); /* covers a longer line before */
    fflush(stderr);
}

void progress_end(progress_line *p)
{
    if (p->shown > 0) fputc('\n', stderr);
    p->shown = 0;
}

uint64_t progress_input_size(const char *const *paths, size_t n)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        int rc = strcmp(paths[i], "-") == 0 ? fstat(0, &st) : stat(paths[i], &st);
        if (rc != 0 || !S_ISREG(st.st_mode)) return 0;
        total += (uint64_t)st.st_size;
    }
    return total;
}
