/*
 * rundir.c — run directories: checkpoints written beside and renamed into
 * place, `latest`, --keep, the best model, averaging, and the TSV log. See
 * rundir.h; the loop (loop.c) drives them.
 */
#include "train/rundir.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "model/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

// --- run directories

static int join(char *buf, size_t cap, const char *dir, const char *name)
{
    if ((size_t)snprintf(buf, cap, "%s/%s", dir, name) >= cap)
        return nlp_error(NLP_EIO, "path too long: '%s/%s'", dir, name);
    return 0;
}


/* Removes a directory and everything in it (symbolic links are removed,
 * never followed), or the file or link at `path`. */
static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        char p[4096];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !join(p, sizeof p, path, e->d_name)) remove_tree(p);
        closedir(d);
    }
    rmdir(path);
}

static int is_step_name(const char *s, long *step)
{
    if (strncmp(s, "step-", 5) != 0 || !s[5]) return 0;
    char *end;
    errno = 0;
    long v = strtol(s + 5, &end, 10);
    if (*end || errno || v < 0) return 0;
    *step = v;
    return 1;
}

/* Does checkpoint dir/name belong to run `run` (0: any)? A checkpoint
 * without an id (an older one) belongs to any run; one whose training state
 * cannot be read to none. */
static int of_run(const char *dir, const char *name, uint64_t run)
{
    if (!run) return 1;
    char p[4096];
    uint64_t id;
    if (join(p, sizeof p, dir, name) || nlp_checkpoint_run_id(p, &id)) return 0;
    return !id || id == run;
}

/* Steps of the checkpoints in dir (of run `run`, 0: all), ascending (caller frees). */
static int list_steps(const char *dir, uint64_t run, long **out, size_t *n)
{
    *out = NULL, *n = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t cap = 0;
    struct dirent *e;
    long s;
    while ((e = readdir(d)))
        if (is_step_name(e->d_name, &s) && of_run(dir, e->d_name, run)) {
            if (nlp_grow(out, &cap, *n + 1, sizeof **out)) {
                closedir(d);
                return NLP_ENOMEM;
            }
            (*out)[(*n)++] = s;
        }
    closedir(d);
    for (size_t i = 1; i < *n; i++)
        for (size_t j = i; j > 0 && (*out)[j - 1] > (*out)[j]; j--) {
            long t = (*out)[j];
            (*out)[j] = (*out)[j - 1], (*out)[j - 1] = t;
        }
    return 0;
}

/* The hidden names this module writes in a run directory, all of them
 * ".NAME.tmp.PID" with an optional suffix:
 *   .step-N.tmp.PID, .best.tmp.PID...   a checkpoint or model being written
 *                                        (after an exchange: the old one, going)
 *   .latest.tmp.PID                      the new `latest` link, before its rename
 *   .NAME.tmp.PID.old                    the previous NAME, while a file system
 *                                        without RENAME_EXCHANGE replaces it
 *   .NAME.tmp.PID.gone                   a checkpoint --keep is removing
 * PID is the writer's process. */
static int parse_hidden(const char *s, char *name, size_t cap, long *pid, const char **suffix)
{
    const char *t = strstr(s, ".tmp.");
    if (s[0] != '.' || !t || t == s + 1 || (size_t)(t - s - 1) >= cap) return 0;
    char *end;
    errno = 0;
    long v = strtol(t + 5, &end, 10);
    if (end == t + 5 || errno || v <= 0 || (*end && strcmp(end, ".old") && strcmp(end, ".gone"))) return 0;
    memcpy(name, s + 1, (size_t)(t - s - 1));
    name[t - s - 1] = 0;
    *pid = v;
    *suffix = end;
    return 1;
}

/* Hidden temporaries of processes that are gone (this one, at its start,
 * has none in progress): removed, except that the previous NAME of an
 * interrupted two-rename replacement goes back into its place when NAME is
 * missing. */
void nlp_rundir_remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4096], q[4096], name[256];
    long pid;
    const char *suffix;
    while ((e = readdir(d))) {
        if (!parse_hidden(e->d_name, name, sizeof name, &pid, &suffix)) continue;
        if (pid != getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) continue; /* still running */
        if (join(p, sizeof p, dir, e->d_name) || join(q, sizeof q, dir, name)) continue;
        struct stat st;
        if (!strcmp(suffix, ".old") && lstat(q, &st) != 0 && errno == ENOENT && rename(p, q) == 0) continue;
        remove_tree(p);
    }
    closedir(d);
}

// --- who writes into a run directory

#define LOCK_NAME ".lock"

/* The pid a lock file holds (0: none readable). */
static long lock_holder(int fd)
{
    char b[32];
    ssize_t n = pread(fd, b, sizeof b - 1, 0);
    if (n <= 0) return 0;
    b[n] = 0;
    return strtol(b, NULL, 10);
}

int nlp_rundir_lock(const char *dir, int *created, int *fd_out)
{
    char p[4096];
    int rc;
    *created = 0, *fd_out = -1;
    if ((rc = join(p, sizeof p, dir, LOCK_NAME))) return rc;
    if (mkdir(dir, 0777) == 0) *created = 1;
    else if (errno != EEXIST) return nlp_error_errno(NLP_EIO, "cannot create run directory '%s'", dir);
    if (!nlp_is_dir(dir)) return nlp_error(NLP_EIO, "'%s' is not a directory", dir);
    for (int tries = 0;; tries++) {
        int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0) {
            rc = nlp_error_errno(NLP_EIO, "cannot write in run directory '%s' (its lock '%s')", dir, p);
            break;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            long pid = errno == EWOULDBLOCK ? lock_holder(fd) : 0;
            rc = errno == EWOULDBLOCK
                     ? pid > 0 ? nlp_error(NLP_EIO, "'%s' is in use by another run (process %ld, which holds '%s')",
                                           dir, pid, p)
                               : nlp_error(NLP_EIO, "'%s' is in use by another run (it holds '%s')", dir, p)
                     : nlp_error_errno(NLP_EIO, "cannot lock '%s'", p);
            close(fd);
            break;
        }
        /* the file locked must still be the one at its name: a run ending
         * removes its lock file, and one that opened the old file before
         * that would hold a lock nobody else sees */
        struct stat a, b;
        if (fstat(fd, &a) != 0 || stat(p, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
            close(fd);
            if (tries < 100) continue;
            rc = nlp_error(NLP_EIO, "cannot lock '%s': it keeps being replaced", p);
            break;
        }
        char pid[32];
        int k = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)k, 0) != k) {
            rc = nlp_error_errno(NLP_EIO, "cannot write in run directory '%s' (its lock '%s')", dir, p);
            unlink(p);
            close(fd);
            break;
        }
        *fd_out = fd;
        return 0;
    }
    if (*created) rmdir(dir);
    *created = 0;
    return rc;
}

void nlp_rundir_unlock(const char *dir, int fd)
{
    if (fd < 0) return;
    char p[4096];
    struct stat a, b;
    /* removed while held (no other run can take the old file meanwhile) */
    if (!join(p, sizeof p, dir, LOCK_NAME) && fstat(fd, &a) == 0 && stat(p, &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev)
        unlink(p);
    close(fd);
}

/* Adds 'name' to a list of at most three (then "..."). */
static void add_name(char *found, size_t cap, int *named, const char *name)
{
    size_t l = strlen(found);
    if (*named < 3) snprintf(found + l, cap - l, "%s'%s'", *named ? ", " : "", name);
    else if (*named == 3) snprintf(found + l, cap - l, ", ...");
    ++*named;
}

int nlp_rundir_foreign(const char *dir, uint64_t run, int legacy, char *found, size_t cap)
{
    char runf[64] = "";
    int named = 0, nrun = 0, mine = 0, theirs = 0;
    if (cap) found[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return 0; /* missing (or not a directory: the lock says so) */
    struct dirent *e;
    char name[256], p[4096];
    long pid, step;
    const char *suffix;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, LOCK_NAME)) continue;
        if (!strcmp(n, "data") && !join(p, sizeof p, dir, n) && nlp_is_dir(p)) continue; /* a data cache */
        if (parse_hidden(n, name, sizeof name, &pid, &suffix) && pid != getpid() && kill((pid_t)pid, 0) != 0 &&
            errno == ESRCH)
            continue; /* a temporary of a writer that is gone (removed when the run starts) */
        uint64_t id;
        if (is_step_name(n, &step) && !join(p, sizeof p, dir, n) && !nlp_checkpoint_run_id(p, &id) &&
            ((id && id == run) || (!id && legacy))) {
            mine = 1;
            continue;
        }
        theirs += is_step_name(n, &step);
        if (!strcmp(n, "latest") || !strcmp(n, "best") || !strcmp(n, "average")) {
            /* the run's own when its checkpoints are there */
            add_name(runf, sizeof runf, &nrun, n);
            continue;
        }
        if (cap) add_name(found, cap, &named, n);
        else named++;
    }
    closedir(d);
    /* latest, best, average: another run's beside its checkpoints; alone,
     * what a run stopped before its first checkpoint left (it cannot be
     * resumed: a new run takes its place) */
    if (!mine && theirs && nrun) {
        if (cap) {
            size_t l = strlen(found);
            snprintf(found + l, cap - l, "%s%s", named ? ", " : "", runf);
        }
        named += nrun;
    }
    return named > 0;
}

int nlp_train_find_checkpoint(const char *dir, char *buf, size_t cap)
{
    char p[4096];
    int rc = join(p, sizeof p, dir, "model.safetensors");
    if (rc) return rc;
    if (nlp_file_exists(p) || !nlp_is_dir(dir)) {
        if ((size_t)snprintf(buf, cap, "%s", dir) >= cap) return nlp_error(NLP_EIO, "path too long");
        return 0;
    }
    if (!join(p, sizeof p, dir, "latest") && nlp_is_dir(p)) {
        char q[4096];
        if (!join(q, sizeof q, p, "model.safetensors") && nlp_file_exists(q)) {
            if ((size_t)snprintf(buf, cap, "%s", p) >= cap) return nlp_error(NLP_EIO, "path too long");
            return 0;
        }
    }
    long *steps;
    size_t n;
    if ((rc = list_steps(dir, 0, &steps, &n))) return rc;
    long best = n ? steps[n - 1] : -1;
    free(steps);
    if (best < 0) return nlp_error(NLP_EIO, "'%s' holds no checkpoint (no model.safetensors, no step-N directory)", dir);
    if ((size_t)snprintf(buf, cap, "%s/step-%08ld", dir, best) >= cap) return nlp_error(NLP_EIO, "path too long");
    return 0;
}

/* Puts directory tmp in the place of final in one step: exchanged with an
 * existing final (which then goes), else renamed. */
static int replace_dir(const char *tmp, const char *final)
{
    if (nlp_is_dir(final)) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0) {
            remove_tree(tmp); /* the old one, now */
            return 0;
        }
        if (errno != EINVAL && errno != ENOSYS)
            return nlp_error_errno(NLP_EIO, "cannot replace '%s' with '%s'", final, tmp);
        /* a file system without exchange: two renames, the old one kept
         * (hidden) until the new one is in place; a crash between them
         * leaves it for nlp_rundir_remove_stale to put back */
        char old[4200];
        snprintf(old, sizeof old, "%s.old", tmp);
        remove_tree(old);
        if (rename(final, old) != 0) return nlp_error_errno(NLP_EIO, "cannot replace '%s' with '%s'", final, tmp);
        if (rename(tmp, final) != 0) {
            int rc = nlp_error_errno(NLP_EIO, "cannot rename '%s' to '%s'", tmp, final);
            rename(old, final);
            return rc;
        }
        remove_tree(old);
        return 0;
    }
    if (rename(tmp, final) != 0) return nlp_error_errno(NLP_EIO, "cannot rename '%s' to '%s'", tmp, final);
    return 0;
}

/* Writes a model (weights only) with the caller's extras as DIR/name,
 * through a hidden temporary directory. */
int nlp_rundir_save_model(const nlp_train_opts *o, const nlp_model *m, const char *name)
{
    char tmp[4096], final[4096], hidden[128], p[4200];
    snprintf(hidden, sizeof hidden, ".%s.tmp.%ld", name, (long)getpid());
    int rc;
    if ((rc = join(tmp, sizeof tmp, o->out_dir, hidden)) || (rc = join(final, sizeof final, o->out_dir, name)))
        return rc;
    remove_tree(tmp);
    if (mkdir(tmp, 0777) != 0) return nlp_error_errno(NLP_EIO, "cannot create '%s'", tmp);
    snprintf(p, sizeof p, "%s/model.safetensors", tmp);
    if ((rc = nlp_model_save(m, p, NLP_DT_F32)) || (o->save_extra && (rc = o->save_extra(o->cb_ctx, tmp)))) {
        int code = nlp_errcode() ? nlp_errcode() : rc;
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", nlp_errmsg());
        remove_tree(tmp);
        return nlp_error(code, "'%s' not written: %s", final, msg);
    }
    if ((rc = nlp_fsync_dir(tmp)) || (rc = replace_dir(tmp, final))) {
        remove_tree(tmp);
        return rc;
    }
    return nlp_fsync_dir(o->out_dir);
}

int nlp_train_average(const nlp_train_opts *o, int n, int *used)
{
    long *steps;
    size_t ns;
    int rc;
    *used = 0;
    if ((rc = list_steps(o->out_dir, o->run_id, &steps, &ns))) return rc;
    if (!ns) {
        free(steps);
        return nlp_error(NLP_EIO, "'%s' holds no checkpoint to average", o->out_dir);
    }
    size_t first = ns > (size_t)n ? ns - (size_t)n : 0;
    nlp_model *avg = NULL;
    double *sum = NULL;
    size_t numel = 0;
    char p[4096], name[64];
    for (size_t i = first; i < ns; i++) {
        nlp_model *m;
        snprintf(name, sizeof name, "step-%08ld", steps[i]);
        if ((rc = join(p, sizeof p, o->out_dir, name)) || (rc = nlp_model_load(&m, p))) goto out;
        const float *w = nlp_params_data(nlp_model_params(m));
        if (!avg) {
            numel = nlp_params_numel(nlp_model_params(m));
            if (!(sum = nlp_calloc(numel, sizeof *sum))) {
                nlp_model_free(m);
                rc = NLP_ENOMEM;
                goto out;
            }
        } else if (nlp_params_numel(nlp_model_params(m)) != numel ||
                   !nlp_model_config_equal(nlp_model_cfg(m), nlp_model_cfg(avg))) {
            nlp_model_free(m);
            rc = nlp_error(NLP_EFORMAT, "'%s' is another model than the run's other checkpoints", p);
            goto out;
        }
        for (size_t k = 0; k < numel; k++) sum[k] += w[k];
        if (!avg) avg = m;
        else nlp_model_free(m);
        (*used)++;
    }
    float *w = nlp_params_data(nlp_model_params(avg));
    for (size_t k = 0; k < numel; k++) w[k] = (float)(sum[k] / *used);
    rc = nlp_rundir_save_model(o, avg, "average");
out:
    nlp_model_free(avg);
    free(sum), free(steps);
    return rc;
}

int nlp_rundir_save_checkpoint(const nlp_train_opts *o, nlp_model *m, const nlp_optim *opt, const nlp_train_state *st,
                           char *final, size_t cap)
{
    char tmp[4096], name[64], p[4096];
    snprintf(name, sizeof name, ".step-%08ld.tmp.%ld", opt->step, (long)getpid());
    int rc = join(tmp, sizeof tmp, o->out_dir, name);
    if (rc) return rc;
    snprintf(name, sizeof name, "step-%08ld", opt->step);
    if ((rc = join(final, cap, o->out_dir, name))) return rc;
    remove_tree(tmp);
    if ((rc = nlp_checkpoint_save(tmp, m, opt, st)) || (o->save_extra && (rc = o->save_extra(o->cb_ctx, tmp)))) {
        int code = nlp_errcode() ? nlp_errcode() : rc;
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", nlp_errmsg());
        remove_tree(tmp);
        return nlp_error(code, "checkpoint at step %ld not written (the previous ones are kept): %s", opt->step, msg);
    }
    /* the same step again (a resumed run saving where it started) is
     * exchanged with the old one */
    if ((rc = nlp_fsync_dir(tmp)) || (rc = replace_dir(tmp, final))) {
        remove_tree(tmp);
        return rc;
    }
    if ((rc = nlp_fsync_dir(o->out_dir))) return rc;
    /* latest -> step-N, replaced atomically */
    snprintf(name, sizeof name, ".latest.tmp.%ld", (long)getpid());
    if ((rc = join(p, sizeof p, o->out_dir, name))) return rc;
    unlink(p);
    char target[64], lp[4096];
    snprintf(target, sizeof target, "step-%08ld", opt->step);
    if ((rc = join(lp, sizeof lp, o->out_dir, "latest"))) return rc;
    if (symlink(target, p) != 0 || rename(p, lp) != 0) {
        rc = nlp_error_errno(NLP_EIO, "cannot point '%s' at '%s'", lp, target);
        unlink(p);
        return rc;
    }
    if ((rc = nlp_fsync_dir(o->out_dir))) return rc;
    if (o->keep > 0) {
        long *steps;
        size_t n;
        if (!list_steps(o->out_dir, st->run_id, &steps, &n)) {
            /* each one leaves at once (renamed hidden), so a crash
             * never leaves half a checkpoint under a step-N name */
            for (size_t i = 0; i + (size_t)o->keep < n; i++) {
                if (steps[i] == opt->step) continue;
                char gone[4096];
                snprintf(name, sizeof name, "step-%08ld", steps[i]);
                if (join(p, sizeof p, o->out_dir, name)) continue;
                snprintf(name, sizeof name, ".step-%08ld.tmp.%ld.gone", steps[i], (long)getpid());
                if (join(gone, sizeof gone, o->out_dir, name)) continue;
                remove_tree(gone);
                if (rename(p, gone) == 0) remove_tree(gone);
            }
            free(steps);
        }
    }
    return 0;
}

// --- TSV log

static size_t count_tabs(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += *s == '\t';
    return n;
}

/* Keeps the header and the rows of steps <= `step` (a resumed run rewrites
 * what the interrupted one logged after its checkpoint). A row cut short by
 * a crash has fewer fields than the header and goes too (whatever its step
 * field holds: "1" of a row of step 12, say). */
static int log_truncate(const char *path, long step)
{
    char **lines;
    size_t n;
    if (!nlp_file_exists(path)) return 0;
    int rc = nlp_read_lines(path, NLP_NL_LF, &lines, &n);
    if (rc) return rc;
    nlp_buf b = {0};
    const size_t fields = n ? count_tabs(lines[0]) : 0;
    for (size_t i = 0; i < n && !rc; i++) {
        char *end;
        long s = strtol(lines[i], &end, 10);
        if (i > 0 && (end == lines[i] || *end != '\t' || count_tabs(lines[i]) != fields)) continue;
        if (i > 0 && s > step) break;
        rc = nlp_buf_puts(&b, lines[i]);
        if (!rc) rc = nlp_buf_putc(&b, '\n');
    }
    if (!rc) rc = nlp_write_file(path, b.data ? b.data : "", b.len);
    nlp_buf_free(&b);
    free(lines);
    return rc;
}

FILE *nlp_rundir_log_open(const nlp_train_opts *o, const nlp_task *t, long resumed_step, int *rc)
{
    *rc = 0;
    if (!o->log_path) return NULL;
    int fresh = resumed_step < 0 || !nlp_file_exists(o->log_path);
    if (!fresh && (*rc = log_truncate(o->log_path, resumed_step))) return NULL;
    FILE *f = fopen(o->log_path, fresh ? "w" : "a");
    if (!f) {
        *rc = nlp_error_errno(NLP_EIO, "cannot open log '%s'", o->log_path);
        return NULL;
    }
    if (fresh) {
        fputs("step\ttokens\tminutes\tlr\tloss\tgrad_norm\ttokens_per_s", f);
        for (size_t k = 0; t->eval_names && t->eval_names[k]; k++) fprintf(f, "\tvalid_%s", t->eval_names[k]);
        fputc('\n', f);
        if (fflush(f) != 0 || ferror(f)) {
            *rc = nlp_error_errno(NLP_EIO, "cannot write log '%s'", o->log_path);
            fclose(f);
            return NULL;
        }
    }
    return f;
}

int nlp_rundir_log_row(FILE *f, const char *path, const nlp_task *t, const nlp_train_event *e, const nlp_eval *ev)
{
    if (!f) return 0;
    fprintf(f, "%ld\t%llu\t%.4f\t%.6g\t%.6f\t%.4f\t%.1f", e->step, (unsigned long long)e->tokens, e->seconds / 60,
            e->lr, e->loss, e->grad_norm, e->tokens_per_s);
    for (size_t k = 0; t->eval_names && t->eval_names[k]; k++)
        if (ev) fprintf(f, "\t%.6f", ev->v[k]);
        else fputc('\t', f);
    fputc('\n', f);
    if (fflush(f) != 0 || ferror(f)) return nlp_error_errno(NLP_EIO, "cannot write log '%s'", path);
    return 0;
}

