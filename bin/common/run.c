/*
 * run.c — a training run's directory before training starts. See run.h.
 */
#include "common/run.h"
#include "base/config.h"
#include "base/err.h"
#include "base/io.h"
#include "base/rng.h"
#include "common/cli.h"
#include "train/dist.h"
#include "train/rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

uint64_t run_new_id(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, GRND_NONBLOCK) != (ssize_t)sizeof id) {
        /* no entropy yet (early boot): the clock and the pid, mixed */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t st = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
        id = nlp_splitmix64(&st);
    }
    return id ? id : 1;
}

/* "step-N" or "latest": the name of a checkpoint inside a run directory */
static int checkpoint_name(const char *s)
{
    if (!strcmp(s, "latest")) return 1;
    if (strncmp(s, "step-", 5) || !s[5]) return 0;
    for (s += 5; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

/* The real path of an existing directory (NULL otherwise; the caller frees). */
static char *real_dir(const char *p)
{
    return p && nlp_is_dir(p) ? realpath(p, NULL) : NULL;
}

int run_resume_paths(const char *resume, const char *ck, const char *yaml, const char **model, const char **log)
{
    const char *file;
    int line;
    static char dir[4200];
    /* the run directory --resume names */
    if (strcmp(ck, resume) != 0) {
        snprintf(dir, sizeof dir, "%s", resume); /* a run directory: its checkpoint was found inside */
    } else {
        snprintf(dir, sizeof dir, "%s", ck);
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
        char *slash = strrchr(dir, '/');
        const char *base = slash ? slash + 1 : dir;
        if (!checkpoint_name(base)) dir[0] = 0; /* a checkpoint outside a run directory */
        else if (slash == dir) dir[1] = 0;
        else if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
    }
    const int given = cli_given("model") == 2 ||
                      (cli_given("model") == 1 && cli_value_origin(*model, &file, &line) && yaml &&
                       strcmp(file, yaml) != 0);
    /* the run directory run.yaml recorded (-m may have replaced it by now) */
    static char recorded_buf[4200];
    const char *recorded = NULL;
    nlp_config rc = {0};
    if (yaml && nlp_config_load(&rc, yaml) == 0) {
        const nlp_config_entry *e = nlp_config_get(&rc, "model");
        if (e && e->value) snprintf(recorded_buf, sizeof recorded_buf, "%s", e->value), recorded = recorded_buf;
    }
    nlp_config_free(&rc);
    if (!given) {
        if (!dir[0])
            cli_usage_error("--resume '%s' is a checkpoint outside a run directory: give -m DIR for the run's new "
                            "checkpoints", resume);
        *model = dir;
    }
    int own = 1;
    if (given) {
        char *a = real_dir(*model), *b = dir[0] ? real_dir(dir) : NULL;
        own = a && b && !strcmp(a, b);
        free(a), free(b);
    }
    /* the log run.yaml recorded, of a run recorded in another directory */
    if (!recorded || !*log || !cli_value_origin(*log, &file, &line) || !yaml || strcmp(file, yaml) != 0) return own;
    char *was = realpath(recorded, NULL), *now = real_dir(*model);
    int moved = !was || !now || strcmp(was, now) != 0; /* now NULL: a directory not made yet */
    if (moved) {
        size_t wl = strlen(recorded);
        static char follow[8400];
        while (wl > 1 && recorded[wl - 1] == '/') wl--;
        if (!strncmp(*log, recorded, wl) && (*log)[wl] == '/') {
            snprintf(follow, sizeof follow, "%s%s", *model, *log + wl); /* inside the run: it moves with it */
            *log = follow;
        } else if (was) {
            cli_warn("the run was recorded in '%s', which still exists, and is resumed in '%s': its log '%s' stays "
                     "the original run's; give --log FILE to log this one", recorded, *model, *log);
            *log = NULL;
        }
    }
    free(was), free(now);
    return own;
}

static struct {
    char dir[4096]; /* a copy: the option's string may be freed before exit */
    int fd, created;
} held = {.fd = -1};

static void release(void)
{
    if (held.fd < 0) return;
    nlp_rundir_unlock(held.dir, held.fd);
    held.fd = -1;
    if (held.created) rmdir(held.dir); /* only when nothing was written in it */
}

uint64_t run_identify(const char *resume, const char *ck, const char *yaml, const char **model, const char **log,
                      int *own_dir, int *legacy)
{
    *own_dir = 0, *legacy = 0;
    if (!resume) return run_new_id();
    *own_dir = run_resume_paths(resume, ck, yaml, model, log);
    uint64_t rid;
    if (nlp_checkpoint_run_id(ck, &rid)) cli_fail(nlp_errcode());
    if (!rid) *legacy = 1; /* an older run: its checkpoints have no id */
    return rid ? rid : run_new_id();
}

int run_dir_created(void) { return held.fd >= 0 && held.created; }

void run_dir_begin(const char *dir, uint64_t id, int check, int legacy, int force, int dry_run)
{
    if (nlp_dist_rank() != 0) return;
    if (!dry_run) {
        snprintf(held.dir, sizeof held.dir, "%s", dir);
        int rc = nlp_rundir_lock(held.dir, &held.created, &held.fd);
        if (rc) cli_fail(rc);
        atexit(release);
    }
    char found[600];
    if (check && !force && nlp_rundir_foreign(dir, id, legacy, found, sizeof found))
        cli_die(NLP_EXIT_FAILURE, "'%s' holds another run or other files (%s): give another -m DIR, --resume %s to "
                "continue the run that is there, or --force to write this run into it anyway", dir, found, dir);
}
