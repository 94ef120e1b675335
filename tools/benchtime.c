/*
 * benchtime — runs a command several times and prints the median wall time
 * and the peak resident memory, for the benchmark scripts in tools/bench/.
 *
 *   benchtime [-n RUNS] [-w WARMUP] [-i STDIN_FILE] [-o STDOUT_FILE] -- CMD [ARG]...
 *
 * Prints one line: median_seconds<TAB>peak_rss_MiB<TAB>min_seconds<TAB>max_seconds.
 * stdout of CMD goes to /dev/null unless -o; stderr is kept. Exits 1 if any run
 * fails (with that run's status in the message).
 */
#include "common/cli.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* An integer option value in [lo, hi], or a usage error (a bare conversion
 * took "-t abc" for 0 threads, and "-t 100000" overflowed OpenMP's stacks). */
static int int_arg(const char *flag, const char *s, long lo, long hi)
{
    long v;
    if (cli_parse_long(s, &v)) cli_die(NLP_EXIT_USAGE, "invalid value for %s: %s", flag, nlp_errmsg());
    if (v < lo || v > hi) cli_die(NLP_EXIT_USAGE, "invalid value for %s: %ld is out of range (%ld to %ld)", flag, v, lo, hi);
    return (int)v;
}

int main(int argc, char **argv)
{
    cli_prog = "benchtime";
    int runs = 5, warm = 0, c;
    const char *in = NULL, *out = "/dev/null";
    while ((c = getopt(argc, argv, "+n:w:i:o:")) != -1) {
        switch (c) {
        case 'n': runs = int_arg("-n", optarg, 1, 1000000); break;
        case 'w': warm = int_arg("-w", optarg, 0, 1000000); break;
        case 'i': in = optarg; break;
        case 'o': out = optarg; break;
        default:
            fprintf(stderr, "usage: benchtime [-n RUNS] [-w WARMUP] [-i IN] [-o OUT] -- CMD [ARG]...\n");
            return 2;
        }
    }
    if (optind >= argc || runs < 1) {
        fprintf(stderr, "benchtime: no command\n");
        return 2;
    }
    double *t = calloc((size_t)runs, sizeof *t);
    long peak = 0;
    for (int r = -warm; r < runs; r++) {
        double t0 = now();
        pid_t pid = fork();
        if (pid < 0) {
            perror("benchtime: fork");
            return 1;
        }
        if (pid == 0) {
            if (in) {
                int fd = open(in, O_RDONLY);
                if (fd < 0) {
                    perror(in);
                    _exit(127);
                }
                dup2(fd, 0);
                close(fd);
            }
            int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fo >= 0) {
                dup2(fo, 1);
                close(fo);
            }
            execvp(argv[optind], argv + optind);
            perror(argv[optind]);
            _exit(127);
        }
        int st;
        struct rusage ru;
        if (wait4(pid, &st, 0, &ru) < 0) {
            perror("benchtime: wait4");
            return 1;
        }
        double dt = now() - t0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "benchtime: '%s' failed (status %d)\n", argv[optind],
                    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
            return 1;
        }
        if (r >= 0) {
            t[r] = dt;
            if (ru.ru_maxrss > peak) peak = ru.ru_maxrss;
        }
    }
    qsort(t, (size_t)runs, sizeof *t, cmp);
    double med = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    printf("%.4f\t%.1f\t%.4f\t%.4f\n", med, peak / 1024.0, t[0], t[runs - 1]);
    free(t);
    return 0;
}
