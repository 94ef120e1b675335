/*
 * loop.c — the training loop, alone or data-parallel. See loop.h; the run
 * directory's files are rundir.c's.
 */
#include "train/loop.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/hash.h"
#include "base/prof.h"
#include "model/checkpoint.h"
#include "train/dist.h"
#include "train/rundir.h"

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

/* the training clock: the options' (tests), else CLOCK_MONOTONIC */
static double now(const nlp_train_opts *o)
{
    return o->clock ? o->clock(o->clock_ctx) : nlp_now();
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

double nlp_train_lr_frac(const nlp_train_opts *o, long step, double frac, int d_model)
{
    if (o->schedule != NLP_SCHED_COSINE && o->schedule != NLP_SCHED_LINEAR) return nlp_train_lr(o, step, 0, d_model);
    if (o->warmup > 0 && step < o->warmup) return o->lr * (double)step / (double)o->warmup;
    if (!(frac < 1)) return o->lr_min;
    if (frac < 0) frac = 0;
    if (o->schedule == NLP_SCHED_LINEAR) return o->lr + (o->lr_min - o->lr) * frac;
    return o->lr_min + 0.5 * (o->lr - o->lr_min) * (1 + cos(M_PI * frac));
}

// --- a time budget (loop.h: the decay keyed to the training time)

typedef struct budget {
    double seconds; /* the budget */
    double t_w;     /* training time at which the decay began (the start of step `warmup`); NAN: not yet */
    double dt;      /* a step's training time, lately: the longest of the last few (a longer step is
                       taken at once, a shorter one eases it down); 0: none measured yet */
} budget;

/* The decay's fraction at training time t (the start of a step). */
static double budget_frac(const budget *b, double t)
{
    double span = b->seconds - b->t_w;
    if (!(span > 0)) return 1;
    double f = (t - b->t_w) / span;
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

/* A step of d seconds was taken. The estimate errs long: a step expected
 * to end within the budget should, or the last one would not be the one
 * planned (with the floor rate) but an earlier one the budget ran out in. */
static void budget_step(budget *b, double d)
{
    b->dt = d >= b->dt ? d : 0.8 * b->dt + 0.2 * d;
}

/* The steps the budget holds at the recent pace (0: no pace yet). */
static long budget_steps(const budget *b, long step, double t)
{
    if (!(b->dt > 0)) return 0;
    double left = ceil((b->seconds - t) / b->dt);
    return step + (left > 0 ? (left < 1e15 ? (long)left : (long)1e15) : 0);
}

// --- data parallel (train/dist.h)

/* The gradient arena is summed across ranks in buckets of fixed bounds,
 * from the top of the arena down: [numel - (k+1)·size, numel - k·size).
 * The backward pass reports (nlp_model_set_grad_hook) how far down its
 * gradients are final, and every bucket wholly above that line starts at
 * once, so communication overlaps the rest of the pass. Every rank starts
 * the same buckets in the same order whatever its timing. */
typedef struct dp {
    int ranks, rank;
    float *grad;
    size_t numel, bucket, next; /* buckets below `next` not started yet */
    int rc;
} dp;

static void dp_start_above(dp *d, size_t off)
{
    while (!d->rc && d->next > 0) {
        size_t lo = d->next > d->bucket ? d->next - d->bucket : 0;
        if (lo < off) break;
        d->rc = nlp_dist_sum_start(d->grad + lo, d->next - lo);
        d->next = lo;
    }
}

static void dp_hook(void *ctx, size_t off)
{
    dp *d = ctx;
    dp_start_above(d, off);
    nlp_dist_progress();
}

/* Completes the step's gradient sum (starting what the hook did not). */
static int dp_finish(dp *d)
{
    dp_start_above(d, 0);
    int rc = nlp_dist_wait();
    if (!d->rc) d->rc = rc;
    rc = d->rc;
    d->rc = 0;
    d->next = d->numel;
    return rc;
}

/* Every rank must hold the same weights: compares a hash of the arena. */
static int dp_check_same(nlp_model *m, const char *when)
{
    if (nlp_dist_size() <= 1) return 0;
    nlp_params *p = nlp_model_params(m);
    uint64_t h = nlp_hash(nlp_params_data(p), nlp_params_numel(p) * sizeof(float), 0x5eed);
    double v[2] = {(double)(h >> 11), -(double)(h >> 11)};
    int rc = nlp_dist_max_f64(v, 2);
    if (rc) return rc;
    if (v[0] != -v[1])
        return nlp_error(NLP_EINVAL, "the ranks hold different weights %s (do they all read the same files?)", when);
    return 0;
}

/* Rank 0 did something the others wait on (a checkpoint): its status to
 * every rank, which fail with it. */
static int dp_status(int rc, const char *what)
{
    if (nlp_dist_size() <= 1) return rc;
    int32_t v = nlp_dist_rank() == 0 ? rc : 0;
    int brc = nlp_dist_bcast(&v, sizeof v, 0);
    if (brc) return brc;
    if (nlp_dist_rank() != 0 && v) return nlp_error(v, "rank 0 failed to write %s", what);
    return rc;
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

/* What a checkpoint records of the loop: the tokens seen, the planned steps
 * (0: a time budget's), the training time in milliseconds and the best
 * validation; with a time budget, its clock: the training time, the decay's
 * start, the pace and the budget as exact doubles (loop.h), and whether the
 * budget's last step was taken (`ended`). */
static void save_state(nlp_train_state *st, uint64_t tokens, long total, double elapsed, double best, const budget *b,
                       int ended)
{
    st->data_position[0] = tokens;
    st->data_position[1] = (uint64_t)total;
    st->data_position[2] = (uint64_t)llround(elapsed * 1000);
    st->data_position[3] = dbits(best);
    memset(st->clock, 0, sizeof st->clock);
    if (b) {
        st->clock[0] = dbits(elapsed);
        st->clock[1] = dbits(b->t_w);
        st->clock[2] = dbits(b->dt);
        st->clock[3] = dbits(b->seconds);
        st->clock[4] = (uint64_t)ended;
    }
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
    /* a time budget without a number of steps: the decay follows the clock */
    const int timed = !o->steps && o->max_seconds > 0;
    int ended = 0; /* the budget's last step is taken */
    budget bg = {.seconds = o->max_seconds, .t_w = NAN, .dt = 0};
    int rc;
    FILE *logf = NULL;
    /* data parallel: every rank draws every batch (the same generator) and
     * trains on its rows; rank 0 alone reports, logs and writes */
    dp par = {.ranks = nlp_dist_size(), .rank = nlp_dist_rank()};
    const int lead = par.rank == 0;
    void (*report)(void *, const nlp_train_event *) = lead ? o->report : NULL;

    if (o->accum < 1) return nlp_error(NLP_EINVAL, "gradient accumulation must be at least 1 micro-batch");
    if (!o->steps && o->max_seconds <= 0) return nlp_error(NLP_EINVAL, "give a number of steps or a time budget");
    if (resume) {
        char dir[4096];
        if ((rc = nlp_train_find_checkpoint(resume, dir, sizeof dir))) return rc;
        if ((rc = nlp_checkpoint_load(dir, &m, &opt, &st))) return rc;
        *mp = m;
        tokens = st.data_position[0];
        elapsed = (double)st.data_position[2] / 1000.0;
        if (st.clock[3]) { /* a run with a time budget: its clock as it was */
            elapsed = bitsd(st.clock[0]);
            bg.t_w = bitsd(st.clock[1]);
            bg.dt = bitsd(st.clock[2]);
            ended = st.clock[4] && bitsd(st.clock[3]) == o->max_seconds; /* (not with a new budget) */
        }
        if (opt.step < o->warmup) bg.t_w = NAN; /* (a longer --warmup than the run had) */
        else if (timed && isnan(bg.t_w)) /* a run of steps, or of an older build, goes on with a budget */
            bg.t_w = elapsed * (double)(o->warmup > 0 ? o->warmup : 0) / (double)(opt.step > 0 ? opt.step : 1);
        best = bitsd(st.data_position[3]);
        resumed = opt.step;
        if (task->set_state && (rc = task->set_state(task->ctx, st.task_state))) {
            nlp_model_free(m);
            *mp = NULL;
            nlp_optim_free(&opt);
            return rc;
        }
        snprintf(res->last_checkpoint, sizeof res->last_checkpoint, "%s", dir);
        if (!st.run_id) st.run_id = o->run_id;
        if (report) {
            nlp_train_event e = {.kind = NLP_TRAIN_RESUME, .step = opt.step, .total = total, .tokens = tokens,
                                 .seconds = elapsed, .path = dir, .eta = -1, .ranks_before = st.ranks};
            if (timed) e.eta = ended || elapsed >= o->max_seconds ? 0 : o->max_seconds - elapsed;
            report(o->cb_ctx, &e);
        }
    } else {
        if (!m) return nlp_error(NLP_EINVAL, "no model to train");
        if ((rc = nlp_optim_init(&opt, &o->optim, nlp_params_numel(nlp_model_params(m))))) return rc;
        nlp_rng_seed(&st.data_rng, o->seed);
        st.run_id = o->run_id;
        best = NAN;
    }
    res->run_id = st.run_id;
    st.ranks = par.ranks;
    rc = 0;
    /* the options in force win over the checkpoint's optimizer settings */
    opt.cfg = o->optim;
    res->step = opt.step;
    int made_dir = 0; /* this run created out_dir: a failure before anything is in it removes it */
    if (o->out_dir && lead) {
        if (mkdir(o->out_dir, 0777) == 0) {
            made_dir = 1;
        } else if (errno != EEXIST) {
            rc = nlp_error_errno(NLP_EIO, "cannot create run directory '%s'", o->out_dir);
        } else if (!nlp_is_dir(o->out_dir)) {
            rc = nlp_error(NLP_EIO, "'%s' is not a directory", o->out_dir);
        } else {
            nlp_rundir_remove_stale(o->out_dir);
        }
    }
    if (lead && !rc && !(logf = nlp_rundir_log_open(o, task, resumed, &rc)) && rc) { /* rc set */ }
    if ((rc = dp_status(rc, "the run directory or the log"))) goto out;
    if ((rc = dp_check_same(m, "at the start"))) goto out;

    nlp_params *p = nlp_model_params(m);
    if ((rc = nlp_params_enable_grad(p))) goto out;
    float *grad = nlp_params_grad(p);
    size_t numel = nlp_params_numel(p);
    const int d_model = nlp_model_cfg(m)->d_model;
    par.grad = grad, par.numel = par.next = numel;
    par.bucket = numel / 32 > ((size_t)1 << 20) ? numel / 32 : (size_t)1 << 20; /* >= 4 MB, <= 32 buckets */
    const char *bk = getenv("NLPIPE_MPI_BUCKET"); /* floats per bucket (tests, experiments) */
    if (bk && atol(bk) > 0) par.bucket = (size_t)atol(bk);
    const float sc = o->accum > 1 ? 1.0f / (float)o->accum : 1.0f; /* the mean over micro-batches */
    nlp_eval ev;
    double win_t0 = now(o), win_tokens = 0, run_t0 = now(o) - elapsed;
    int evaluated = 0;
    long s0 = opt.step, saved = resumed;
    double t0 = elapsed;
    int plan = 0; /* NLP_TRAIN_PLAN reported: 1, and 2 once it fell within the warm-up */

    if (report && total && opt.step < total) {
        nlp_train_event e = {.kind = NLP_TRAIN_PLAN, .step = opt.step, .total = total, .seconds = elapsed, .eta = -1};
        report(o->cb_ctx, &e);
    }

    if (o->eval_at_start && task->evaluate && resumed < 0) {
        nlp_model_set_training(m, 0);
        if ((rc = task->evaluate(task->ctx, m, &ev))) goto out;
        if (report) {
            nlp_train_event e = {.kind = NLP_TRAIN_EVAL, .step = 0, .total = total, .eval = &ev, .eta = -1};
            report(o->cb_ctx, &e);
        }
        nlp_train_event e0 = {.step = 0, .lr = 0, .loss = NAN};
        if ((rc = nlp_rundir_log_row(logf, o->log_path, task, &e0, &ev))) goto out;
        run_t0 = now(o) - elapsed; /* the clock starts after it */
        win_t0 = now(o);
    }

    while (total == 0 || opt.step < total) {
        if (stop_signal && par.ranks == 1) break;
        if (ended || (o->max_seconds > 0 && elapsed >= o->max_seconds)) break; /* a resumed run that has used its budget */
        nlp_model_set_training(m, 1);
        /* marked zero, not written: each layer's product writes its weight
         * gradient (the first micro-batch's), instead of adding it to zeros
         * written over the whole arena */
        nlp_params_zero_grad_lazy(p);
        double sums[2] = {0, 0}; /* loss, tokens of this step (this rank's shares) */
        for (int a = 0; a < o->accum; a++) {
            nlp_batch b;
            nlp_losses l;
            if ((rc = task->next_batch(task->ctx, &st.data_rng, &b))) goto out;
            if (par.ranks > 1) { /* this rank's rows, its losses shares of the whole batch's means */
                double cnt[2];
                nlp_model_loss_counts(m, &b, cnt);
                nlp_model_set_loss_norm(m, cnt);
                /* whole examples: a multiple-choice example's rows (or a pair's
                 * two orders) stay together */
                const long g = nlp_batch_group(&b), E = b.B / g;
                b = nlp_batch_rows(&b, (int)(g * (E * par.rank / par.ranks)), (int)(g * (E * (par.rank + 1) / par.ranks)));
                nlp_model_set_grad_hook(m, a == o->accum - 1 ? dp_hook : NULL, &par);
                if (!b.B) { /* fewer examples than ranks: none for this one */
                    nlp_model_skip_forward(m);
                    continue;
                }
            }
            if ((rc = nlp_model_forward(m, &b, &l)) || (rc = nlp_model_backward(m))) goto out;
            sums[0] += l.loss;
            sums[1] += l.tokens;
        }
        nlp_params_grad_settle(p, 0); /* zeros where no backward pass ran (a rank without rows) */
        if (par.ranks > 1) {
            nlp_model_set_grad_hook(m, NULL, NULL);
            nlp_model_set_loss_norm(m, NULL); /* validation's batches are whole */
            double tw = now(o);
            if ((rc = dp_finish(&par)) || (rc = nlp_dist_sum_f64(sums, 2))) goto out;
            res->comm_seconds += now(o) - tw;
        }
        double loss = sums[0] / o->accum;
        tokens += (uint64_t)sums[1];
        win_tokens += sums[1];
        /* the mean over micro-batches and the clipping factor are applied as
         * AdamW reads each gradient (nlp_optim_step_scaled: the same bits as
         * two passes over the arena scaling it, without them) */
        double norm = nlp_grad_norm_scaled(grad, numel, sc);
        const float clip = o->clip > 0 ? nlp_clip_factor(norm, o->clip) : 1.0f;
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
        double lr, before = elapsed;
        int planned_last = 0;
        if (timed) { /* the decay at this step's start time; the last step (the floor) is the one the budget
                        ends in, at the recent pace */
            if (step >= o->warmup && isnan(bg.t_w)) bg.t_w = elapsed;
            planned_last = bg.dt > 0 && elapsed + bg.dt >= bg.seconds;
            lr = nlp_train_lr_frac(o, step, planned_last ? 1 : isnan(bg.t_w) ? 0 : budget_frac(&bg, elapsed), d_model);
        } else {
            /* a budget with a number of steps too: the schedule is the steps' */
            lr = nlp_train_lr(o, step, total ? total : (long)1e15, d_model);
        }
        nlp_optim_step_scaled(&opt, p, grad, sc, clip, lr);
        res->step = opt.step;
        elapsed = now(o) - run_t0;
        if (par.ranks > 1) { /* rank 0's clock, and a signal any rank got, decide for all */
            double v[2] = {lead ? elapsed : -1, (double)stop_signal}, tw = now(o);
            if ((rc = nlp_dist_max_f64(v, 2))) goto out;
            res->comm_seconds += now(o) - tw;
            elapsed = v[0];
            if (v[1] > 0 && !stop_signal) stop_signal = (int)v[1];
        }
        long shown = total; /* the planned steps: a time budget's at the recent pace */
        if (timed) {
            budget_step(&bg, elapsed - before);
            shown = budget_steps(&bg, opt.step, elapsed);
            if (planned_last || elapsed >= bg.seconds) shown = opt.step;
        }
        int last = (total && opt.step >= total) || (o->max_seconds > 0 && elapsed >= o->max_seconds) || planned_last;
        ended = timed && last;
        double wt = now(o) - win_t0;
        nlp_train_event e = {.kind = NLP_TRAIN_STEP, .step = opt.step, .total = shown, .tokens = tokens,
                             .loss = loss, .lr = lr, .grad_norm = norm,
                             .tokens_per_s = wt > 0 ? win_tokens / wt : 0, .seconds = elapsed, .eta = -1};
        if (total && opt.step > s0) e.eta = (double)(total - opt.step) * (elapsed - t0) / (double)(opt.step - s0);
        if (o->max_seconds > 0 && (e.eta < 0 || e.eta > o->max_seconds - elapsed)) e.eta = o->max_seconds - elapsed;
        if (e.eta < 0 && o->max_seconds > 0) e.eta = 0;
        if (report) report(o->cb_ctx, &e);
        /* how many steps the budget holds: after 20 steps of this run, and
         * again when that falls within the warm-up while it lasts */
        if (timed && report && !last && shown > 0 &&
            ((!plan && opt.step - s0 >= 20) || (plan == 1 && opt.step < o->warmup && shown <= o->warmup))) {
            plan = shown <= o->warmup && opt.step < o->warmup ? 2 : 1;
            nlp_train_event pe = e;
            pe.kind = NLP_TRAIN_PLAN;
            report(o->cb_ctx, &pe);
        }
        win_t0 = now(o), win_tokens = 0;

        evaluated = 0;
        if (task->evaluate && ((o->eval_every && opt.step % o->eval_every == 0) || last)) {
            double t = now(o);
            nlp_model_set_training(m, 0);
            if ((rc = task->evaluate(task->ctx, m, &ev))) goto out;
            int bm = task->best_metric, hi = task->higher_is_better;
            if (isnan(ev.v[bm])) bm = 0, hi = 0;
            int is_best = !isnan(ev.v[bm]) && (isnan(best) || (hi ? ev.v[bm] > best : ev.v[bm] < best));
            if (is_best) {
                best = ev.v[bm];
                if (o->out_dir && o->save_best) {
                    rc = lead ? nlp_rundir_save_model(o, m, "best") : 0;
                    if ((rc = dp_status(rc, "the best model"))) goto out;
                }
            }
            nlp_train_event ee = e;
            ee.kind = NLP_TRAIN_EVAL, ee.eval = &ev, ee.best = is_best;
            if (report) report(o->cb_ctx, &ee);
            evaluated = 1;
            run_t0 += now(o) - t; /* evaluation time is not training time */
            win_t0 = now(o);
        }
        if ((rc = nlp_rundir_log_row(logf, o->log_path, task, &e, evaluated ? &ev : NULL))) goto out;
        if (o->out_dir && ((o->save_every && opt.step % o->save_every == 0) || last || stop_signal)) {
            double t = now(o);
            save_state(&st, tokens, total, elapsed, best, timed ? &bg : NULL, ended);
            if (task->get_state) task->get_state(task->ctx, st.task_state);
            if ((rc = dp_check_same(m, "before a checkpoint"))) goto out;
            rc = lead ? nlp_rundir_save_checkpoint(o, m, &opt, &st, res->last_checkpoint, sizeof res->last_checkpoint) : 0;
            if ((rc = dp_status(rc, "a checkpoint"))) goto out;
            saved = opt.step;
            nlp_train_event se = e;
            se.kind = NLP_TRAIN_SAVE, se.path = res->last_checkpoint;
            if (report) report(o->cb_ctx, &se);
            run_t0 += now(o) - t;
            win_t0 = now(o);
        }
        if (last || stop_signal) break;
    }
    res->seconds = elapsed - t0;
    if (stop_signal) {
        res->signal = stop_signal;
        /* a signal between the last save check and the loop's: save where it
         * stops (nothing when this run took no step) */
        if (o->out_dir && saved != opt.step && opt.step > s0) {
            save_state(&st, tokens, total, elapsed, best, timed ? &bg : NULL, ended);
            if (task->get_state) task->get_state(task->ctx, st.task_state);
            rc = lead ? nlp_rundir_save_checkpoint(o, m, &opt, &st, res->last_checkpoint, sizeof res->last_checkpoint) : 0;
            if ((rc = dp_status(rc, "a checkpoint"))) goto out;
        }
    }
    rc = 0;
    res->best = best;
out:
    if (rc && made_dir) rmdir(o->out_dir); /* only when empty */
    nlp_model_set_grad_hook(m, NULL, NULL);
    nlp_model_set_loss_norm(m, NULL);
    if (logf) fclose(logf);
    nlp_optim_free(&opt);
    nlp_model_set_training(m, 0);
    return rc;
}
