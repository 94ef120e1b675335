/*
 * ckcheck — checks a run directory the way a user who resumes it needs it:
 * for the crash-safety tests (tests/cli/0700-crash-safety.bats).
 *
 *   tools/ckcheck [--no-stale] RUN_DIR
 *
 * Every step-N directory must load as a checkpoint (model, training state
 * and the tokenizer beside them, at step N, with run.yaml and no temporary
 * file inside), `latest` (when present) must be a link to one of them, and
 * `best` and `average` (when present) must load as models. Hidden entries
 * and *.tmp.* files are what an interrupted writer leaves: listed as
 * "stale NAME", an error with --no-stale. Prints "latest step-N" (or
 * "latest none") and exits 0 when all is well, else prints what is wrong
 * and exits 1 (2: usage).
 */
#include "base/err.h"
#include "base/io.h"
#include "model/checkpoint.h"
#include "tok/tokfiles.h"
#include "train/loop.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int bad;

static void fail(const char *what, const char *name)
{
    printf("bad %s: %s\n", name, what);
    bad = 1;
}

/* A checkpoint directory: loads, is at its step, holds nothing temporary. */
static void check_step(const char *dir, const char *name, long step)
{
    char p[8800];
    nlp_model *m;
    nlp_optim o;
    nlp_train_state s;
    if (nlp_checkpoint_load(dir, &m, &o, &s)) {
        fail(nlp_errmsg(), name);
        return;
    }
    if (o.step != step) fail("the training state is at another step", name);
    nlp_model_free(m);
    nlp_optim_free(&o);
    snprintf(p, sizeof p, "%s/run.yaml", dir);
    if (!nlp_file_exists(p)) fail("no run.yaml", name);
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    nlp_tokenizer *tk;
    if (nlp_file_exists(p)) {
        if (nlp_tokfiles_load(p, NULL, &tk)) fail(nlp_errmsg(), name);
        else nlp_tokenizer_free(tk);
    }
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) fail("holds a temporary file", name);
    if (d) closedir(d);
}

int main(int argc, char **argv)
{
    int no_stale = argc > 1 && strcmp(argv[1], "--no-stale") == 0;
    if (argc != 2 + no_stale) {
        fprintf(stderr, "usage: ckcheck [--no-stale] RUN_DIR\n");
        return 2;
    }
    const char *run = argv[1 + no_stale];
    DIR *d = opendir(run);
    if (!d) {
        printf("bad %s: %s\n", run, strerror(errno));
        return 1;
    }
    struct dirent *e;
    char p[8600], link[4096];
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", run, n);
        long step;
        char *end;
        if (n[0] == '.' || strstr(n, ".tmp.")) {
            printf("stale %s\n", n);
            if (no_stale) bad = 1;
        } else if (!strncmp(n, "step-", 5) && (step = strtol(n + 5, &end, 10)) >= 0 && !*end && end != n + 5) {
            check_step(p, n, step);
        } else if (!strcmp(n, "latest")) {
            ssize_t k = readlink(p, link, sizeof link - 1);
            if (k < 0) {
                fail("not a symbolic link", n);
                continue;
            }
            link[k] = 0;
            snprintf(p, sizeof p, "%s/%s", run, link);
            if (strncmp(link, "step-", 5) || !nlp_is_dir(p)) fail("points at no checkpoint", n);
        } else if (!strcmp(n, "best") || !strcmp(n, "average")) {
            nlp_model *m;
            if (nlp_model_load(&m, p)) fail(nlp_errmsg(), n);
            else nlp_model_free(m);
        }
    }
    closedir(d);
    if (nlp_train_find_checkpoint(run, p, sizeof p) == 0 && strcmp(p, run) != 0) {
        char real[PATH_MAX];
        const char *q = realpath(p, real) ? real : p, *slash = strrchr(q, '/');
        printf("latest %s\n", slash ? slash + 1 : q);
    } else {
        printf("latest none\n");
    }
    return bad;
}
