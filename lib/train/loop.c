/*
 * loop.c — the training loop, run checkpoints and the TSV log. See loop.h.
 */
#include "train/loop.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "model/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_signal;

void nlp_train_request_stop(int sig)
{
    stop_signal = sig;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double nlp_train_lr(const nlp_train_opts *o, long step, long total, int d_model)
{
    switch (o->schedule) {
    case NLP_SCHED_LINEAR: return nlp_lr_linear(step, o->warmup, total, o->lr, o->lr_min);
    case NLP_SCHED_CONSTANT: return nlp_lr_constant(step, o->warmup, o->lr);
    case NLP_SCHED_NOAM: return nlp_lr_noam(step, d_model, o->warmup > 0 ? o->warmup : 1, o->lr);
    case NLP_SCHED_INVSQRT:
        if (o->warmup > 0 && step < o->warmup) return o->lr * (double)step / (double)o->warmup;
        return o->warmup > 0 ? o->lr * sqrt((double)o->warmup / (double)step) : o->lr / sqrt((double)step);
    default: return nlp_lr_cosine(step, o->warmup, total, o->lr, o->lr_min);
    }
}

// --- run directories

static int join(char *buf, size_t cap, const char *dir, const char *name)
{
    if ((size_t)snprintf(buf, cap, "%s/%s", dir, name) >= cap)
        return nlp_error(NLP_EIO, "path too long: '%s/%s'", dir, name);
    return 0;
}

static void fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* Removes a checkpoint directory and the plain files in it. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[4096];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !join(p, sizeof p, dir, e->d_name)) unlink(p);
        closedir(d);
    }
    rmdir(dir);
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

/* Steps of the checkpoints in dir, ascending (caller frees). */
static int list_steps(const char *dir, long **out, size_t *n)
{
    *out = NULL, *n = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t cap = 0;
    struct dirent *e;
    long s;
    while ((e = readdir(d)))
        if (is_step_name(e->d_name, &s)) {
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

/* Temporary checkpoint directories left by processes that are gone. */
static void remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d))) {
        const char *s = strstr(e->d_name, ".tmp.");
        if ((strncmp(e->d_name, ".step-", 6) != 0 && strncmp(e->d_name, ".best.", 6) != 0 &&
             strncmp(e->d_name, ".average.", 9) != 0) || !s)
            continue;
        long pid = strtol(s + 5, NULL, 10);
        if (pid > 0 && (pid == getpid() || kill((pid_t)pid, 0) != 0) && !join(p, sizeof p, dir, e->d_name))
            remove_tree(p);
    }
    closedir(d);
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
    if ((rc = list_steps(dir, &steps, &n))) return rc;
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
        /* a file system without exchange: two renames */
        char old[4200];
        snprintf(old, sizeof old, "%s.old", tmp);
        if (rename(final, old) == 0) remove_tree(old);
    }
    if (rename(tmp, final) != 0) return nlp_error_errno(NLP_EIO, "cannot rename '%s' to '%s'", tmp, final);
    return 0;
}

/* Writes a model (weights only) with the caller's extras as DIR/name,
 * through a hidden temporary directory. */
static int save_model_dir(const nlp_train_opts *o, const nlp_model *m, const char *name)
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
    fsync_dir(tmp);
    if ((rc = replace_dir(tmp, final))) {
        remove_tree(tmp);
        return rc;
    }
    fsync_dir(o->out_dir);
    return 0;
}

int nlp_train_average(const nlp_train_opts *o, int n, int *used)
{
    long *steps;
    size_t ns;
    int rc;
    *used = 0;
    if ((rc = list_steps(o->out_dir, &steps, &ns))) return rc;
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
    rc = save_model_dir(o, avg, "average");
out:
    nlp_model_free(avg);
    free(sum), free(steps);
    return rc;
}

static int save_checkpoint(const nlp_train_opts *o, nlp_model *m, const nlp_optim *opt, const nlp_train_state *st,
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
    fsync_dir(tmp);
    /* the same step again (a resumed run saving where it started) is
     * exchanged with the old one */
    if ((rc = replace_dir(tmp, final))) {
        remove_tree(tmp);
        return rc;
    }
    fsync_dir(o->out_dir);
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
    fsync_dir(o->out_dir);
    if (o->keep > 0) {
        long *steps;
        size_t n;
        if (!list_steps(o->out_dir, &steps, &n)) {
            for (size_t i = 0; i + (size_t)o->keep < n; i++) {
                if (steps[i] == opt->step) continue;
                snprintf(name, sizeof name, "step-%08ld", steps[i]);
                if (!join(p, sizeof p, o->out_dir, name)) remove_tree(p);
            }
            free(steps);
        }
    }
    return 0;
}

// --- TSV log

/* Keeps the header and the rows of steps <= `step` (a resumed run rewrites
 * what the interrupted one logged after its checkpoint). */
static int log_truncate(const char *path, long step)
{
    char **lines;
    size_t n;
    if (!nlp_file_exists(path)) return 0;
    int rc = nlp_read_lines(path, NLP_NL_LF, &lines, &n);
    if (rc) return rc;
    nlp_buf b = {0};
    for (size_t i = 0; i < n && !rc; i++) {
        char *end;
        long s = strtol(lines[i], &end, 10);
        if (i > 0 && end != lines[i] && s > step) break;
        rc = nlp_buf_puts(&b, lines[i]);
        if (!rc) rc = nlp_buf_putc(&b, '\n');
    }
    if (!rc) rc = nlp_write_file(path, b.data ? b.data : "", b.len);
    nlp_buf_free(&b);
    free(lines);
    return rc;
}

static FILE *log_open(const nlp_train_opts *o, const nlp_task *t, long resumed_step, int *rc)
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
        fflush(f);
    }
    return f;
}

static void log_row(FILE *f, const nlp_task *t, const nlp_train_event *e, const nlp_eval *ev)
{
    if (!f) return;
    fprintf(f, "%ld\t%llu\t%.4f\t%.6g\t%.6f\t%.4f\t%.1f", e->step, (unsigned long long)e->tokens, e->seconds / 60,
            e->lr, e->loss, e->grad_norm, e->tokens_per_s);
    for (size_t k = 0; t->eval_names && t->eval_names[k]; k++)
        if (ev) fprintf(f, "\t%.6f", ev->v[k]);
        else fputc('\t', f);
    fputc('\n', f);
    fflush(f);
}

// --- the loop

static uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

int nlp_train(nlp_model **mp, const nlp_task *task, const nlp_train_opts *o, const char *resume,
              nlp_train_result *res)
{
    memset(res, 0, sizeof *res);
    res->best = NAN;
    /* stop_signal is not cleared: a signal that came while the caller was
     * still loading its data stops the run before its first step */
    nlp_optim opt = {0};
    nlp_train_state st = {0};
    nlp_model *m = *mp;
    uint64_t tokens = 0;
    long total = o->steps, resumed = -1;
    double elapsed = 0, best = NAN;
    int rc;
    FILE *logf = NULL;

    if (o->accum < 1) return nlp_error(NLP_EINVAL, "gradient accumulation must be at least 1 micro-batch");
    if (!o->steps && o->max_seconds <= 0) return nlp_error(NLP_EINVAL, "give a number of steps or a time budget");
    if (resume) {
        char dir[4096];
        if ((rc = nlp_train_find_checkpoint(resume, dir, sizeof dir))) return rc;
        if ((rc = nlp_checkpoint_load(dir, &m, &opt, &st))) return rc;
        *mp = m;
        tokens = st.data_position[0];
        if (!o->steps) total = (long)st.data_position[1];
        if (!o->steps && o->new_budget && o->max_seconds > 0 && st.data_position[2] > 0) {
            double done = (double)st.data_position[2] / 1000.0;
            long est = (long)((double)opt.step * o->max_seconds / done);
            total = est > opt.step ? est : opt.step + 1;
        }
        elapsed = (double)st.data_position[2] / 1000.0;
        best = bitsd(st.data_position[3]);
        resumed = opt.step;
        if (task->set_state && (rc = task->set_state(task->ctx, st.task_state))) {
            nlp_model_free(m);
            *mp = NULL;
            nlp_optim_free(&opt);
            return rc;
        }
        snprintf(res->last_checkpoint, sizeof res->last_checkpoint, "%s", dir);
        if (o->report) {
            nlp_train_event e = {.kind = NLP_TRAIN_RESUME, .step = opt.step, .total = total, .tokens = tokens,
                                 .seconds = elapsed, .path = dir, .eta = -1};
            o->report(o->cb_ctx, &e);
        }
    } else {
        if (!m) return nlp_error(NLP_EINVAL, "no model to train");
        if ((rc = nlp_optim_init(&opt, &o->optim, nlp_params_numel(nlp_model_params(m))))) return rc;
        nlp_rng_seed(&st.data_rng, o->seed);
        best = NAN;
    }
    /* the options in force win over the checkpoint's optimizer settings */
    opt.cfg = o->optim;
    res->step = opt.step;
    if (o->out_dir) {
        if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) {
            rc = nlp_error_errno(NLP_EIO, "cannot create run directory '%s'", o->out_dir);
            goto out;
        }
        if (!nlp_is_dir(o->out_dir)) {
            rc = nlp_error(NLP_EIO, "'%s' is not a directory", o->out_dir);
            goto out;
        }
        remove_stale(o->out_dir);
    }
    if (!(logf = log_open(o, task, resumed, &rc)) && rc) goto out;

    nlp_params *p = nlp_model_params(m);
    if ((rc = nlp_params_enable_grad(p))) goto out;
    float *grad = nlp_params_grad(p);
    size_t numel = nlp_params_numel(p);
    const int d_model = nlp_model_cfg(m)->d_model;
    nlp_eval ev;
    double win_t0 = now(), win_tokens = 0, run_t0 = now() - elapsed;
    int evaluated = 0;
    long s0 = opt.step, saved = resumed;
    double t0 = elapsed;

    if (o->eval_at_start && task->evaluate && resumed < 0) {
        nlp_model_set_training(m, 0);
        if ((rc = task->evaluate(task->ctx, m, &ev))) goto out;
        if (o->report) {
            nlp_train_event e = {.kind = NLP_TRAIN_EVAL, .step = 0, .total = total, .eval = &ev, .eta = -1};
            o->report(o->cb_ctx, &e);
        }
        nlp_train_event e0 = {.step = 0, .lr = 0, .loss = NAN};
        log_row(logf, task, &e0, &ev);
        run_t0 = now() - elapsed; /* the clock starts after it */
        win_t0 = now();
    }

    int grads_zero = 0; /* the last optimizer step left the gradients at zero */
    while (total == 0 || opt.step < total) {
        if (stop_signal) break;
        nlp_model_set_training(m, 1);
        if (!grads_zero) nlp_params_zero_grad(p);
        grads_zero = 0;
        double loss = 0;
        for (int a = 0; a < o->accum; a++) {
            nlp_batch b;
            nlp_losses l;
            if ((rc = task->next_batch(task->ctx, &st.data_rng, &b))) goto out;
            if ((rc = nlp_model_forward(m, &b, &l)) || (rc = nlp_model_backward(m))) goto out;
            loss += l.loss;
            tokens += (uint64_t)l.tokens;
            win_tokens += l.tokens;
        }
        loss /= o->accum;
        if (o->accum > 1) {
            const float s = 1.0f / (float)o->accum;
            for (size_t i = 0; i < numel; i++) grad[i] *= s;
        }
        double norm = o->clip > 0 ? nlp_clip_grad_norm(grad, numel, o->clip) : nlp_grad_norm(grad, numel);
        if (!isfinite(loss) || !isfinite(norm)) {
            rc = nlp_error(NLP_ENAN, "step %ld: the %s is %s; %s", opt.step + 1, isfinite(loss) ? "gradient norm" : "loss",
                           isnan(isfinite(loss) ? norm : loss) ? "NaN" : "infinite",
                           res->last_checkpoint[0] ? "the last good checkpoint is kept" : "no checkpoint was written");
            if (res->last_checkpoint[0]) {
                char msg[1024];
                snprintf(msg, sizeof msg, "%s", nlp_errmsg());
                rc = nlp_error(NLP_ENAN, "%s: '%s'", msg, res->last_checkpoint);
            }
            goto out;
        }
        long step = opt.step + 1;
        /* before the schedule's length is known (a time budget's first 20
         * steps) there is no decay yet */
        double lr = nlp_train_lr(o, step, total ? total : (long)1e15, d_model);
        nlp_optim_step_zero(&opt, p, grad, lr); /* the next step's gradients start from zero */
        grads_zero = 1;
        res->step = opt.step;
        elapsed = now() - run_t0;
        if (!total && opt.step == 20) {
            long est = (long)(o->max_seconds / (elapsed / 20.0));
            total = est > 20 ? est : 21;
        }
        int last = (total && opt.step >= total) || (o->max_seconds > 0 && elapsed >= o->max_seconds);
        double wt = now() - win_t0;
        nlp_train_event e = {.kind = NLP_TRAIN_STEP, .step = opt.step, .total = total, .tokens = tokens,
                             .loss = loss, .lr = lr, .grad_norm = norm,
                             .tokens_per_s = wt > 0 ? win_tokens / wt : 0, .seconds = elapsed, .eta = -1};
        if (total && opt.step > s0) e.eta = (double)(total - opt.step) * (elapsed - t0) / (double)(opt.step - s0);
        if (o->max_seconds > 0 && (e.eta < 0 || e.eta > o->max_seconds - elapsed)) e.eta = o->max_seconds - elapsed;
        if (o->report) o->report(o->cb_ctx, &e);
        win_t0 = now(), win_tokens = 0;

        evaluated = 0;
        if (task->evaluate && ((o->eval_every && opt.step % o->eval_every == 0) || last)) {
            double t = now();
            nlp_model_set_training(m, 0);
            if ((rc = task->evaluate(task->ctx, m, &ev))) goto out;
            int bm = task->best_metric, hi = task->higher_is_better;
            if (isnan(ev.v[bm])) bm = 0, hi = 0;
            int is_best = !isnan(ev.v[bm]) && (isnan(best) || (hi ? ev.v[bm] > best : ev.v[bm] < best));
            if (is_best) {
                best = ev.v[bm];
                if (o->out_dir && o->save_best && (rc = save_model_dir(o, m, "best"))) goto out;
            }
            nlp_train_event ee = e;
            ee.kind = NLP_TRAIN_EVAL, ee.eval = &ev, ee.best = is_best;
            if (o->report) o->report(o->cb_ctx, &ee);
            evaluated = 1;
            run_t0 += now() - t; /* evaluation time is not training time */
            win_t0 = now();
        }
        log_row(logf, task, &e, evaluated ? &ev : NULL);
        if (o->out_dir && ((o->save_every && opt.step % o->save_every == 0) || last || stop_signal)) {
            double t = now();
            st.data_position[0] = tokens;
            st.data_position[1] = (uint64_t)total;
            st.data_position[2] = (uint64_t)llround(elapsed * 1000);
            st.data_position[3] = dbits(best);
            if (task->get_state) task->get_state(task->ctx, st.task_state);
            if ((rc = save_checkpoint(o, m, &opt, &st, res->last_checkpoint, sizeof res->last_checkpoint))) goto out;
            saved = opt.step;
            nlp_train_event se = e;
            se.kind = NLP_TRAIN_SAVE, se.path = res->last_checkpoint;
            if (o->report) o->report(o->cb_ctx, &se);
            run_t0 += now() - t;
            win_t0 = now();
        }
        if (last) break;
    }
    if (stop_signal) {
        res->signal = stop_signal;
        /* a signal between the last save check and the loop's: save where it
         * stops (nothing when this run took no step) */
        if (o->out_dir && saved != opt.step && opt.step > s0) {
            st.data_position[0] = tokens;
            st.data_position[1] = (uint64_t)total;
            st.data_position[2] = (uint64_t)llround(elapsed * 1000);
            st.data_position[3] = dbits(best);
            if (task->get_state) task->get_state(task->ctx, st.task_state);
            if ((rc = save_checkpoint(o, m, &opt, &st, res->last_checkpoint, sizeof res->last_checkpoint))) goto out;
        }
    }
    rc = 0;
    res->best = best;
out:
    if (logf) fclose(logf);
    nlp_optim_free(&opt);
    nlp_model_set_training(m, 0);
    return rc;
}
