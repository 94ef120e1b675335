/*
 * test_train_budget.c — a time budget is used whole (lib/train/loop.c):
 * the training loop driven by a clock of the test's own, which the task
 * advances by a chosen time per step (a busy machine's slow steps, then
 * fast ones, or the reverse), on a tiny GPT and random tokens.
 *
 * A run ends with the step that ends its budget (not before, at most a step
 * after) and its last step has the schedule's floor, whatever the pace did;
 * the decay never goes back up; a run stopped halfway and resumed takes the
 * same steps with the same rates to the same weights, bit for bit; resumed
 * with its budget used it trains nothing, with a larger one it trains on to
 * the new end. Clock readings are multiples of 1/128 s, so their sums are
 * exact and the comparisons need no tolerance.
 */
#include "test.h"

#include "base/rng.h"
#include "base/thread.h"
#include "model/model.h"
#include "train/data.h"
#include "train/lm.h"
#include "train/loop.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXSTEPS 4000

/* the clock and the task that moves it */
typedef struct fake {
    double t;          /* the clock, seconds */
    long batches;      /* next_batch calls so far (of the whole run: a resumed run goes on counting) */
    long first;        /* batches that take `t_first` seconds each, then `t_rest` */
    double t_first, t_rest;
    long hiccup;       /* this batch takes `t_hiccup` seconds (0: none) */
    double t_hiccup;
    long stop_at;      /* ask the loop to stop after this batch (0: never) */
    nlp_task inner;    /* the LM task */
    /* what the loop reported */
    long n, steps[MAXSTEPS];
    double lr[MAXSTEPS], seconds[MAXSTEPS];
} fake;

static double fake_now(void *ctx)
{
    return ((fake *)ctx)->t;
}

static int fake_next(void *ctx, nlp_rng *r, nlp_batch *b)
{
    fake *f = ctx;
    f->batches++;
    f->t += f->batches == f->hiccup ? f->t_hiccup : f->batches <= f->first ? f->t_first : f->t_rest;
    if (f->stop_at && f->batches == f->stop_at) nlp_train_request_stop(SIGINT);
    return f->inner.next_batch(f->inner.ctx, r, b);
}

static void fake_report(void *ctx, const nlp_train_event *e)
{
    fake *f = ctx;
    if (e->kind != NLP_TRAIN_STEP || f->n >= MAXSTEPS) return;
    f->steps[f->n] = e->step, f->lr[f->n] = e->lr, f->seconds[f->n] = e->seconds;
    f->n++;
}

static nlp_corpus corpus = NLP_CORPUS_INIT;
static int32_t ids[4096];

static nlp_model *tiny_gpt(void)
{
    nlp_model_config c;
    nlp_model_config_preset(&c, "tiny", NLP_ARCH_GPT);
    c.vocab_size = 64, c.max_positions = 16, c.dropout = c.attention_dropout = 0.1;
    nlp_model *m = NULL;
    CHECK_EQ_INT(nlp_model_new(&m, &c, 7), 0);
    return m;
}

/* One nlp_train call: a new run into dir (model m), or resuming dir (m NULL).
 * The clock starts at t0 and the batches count on from `batches`. */
static int run(fake *f, nlp_lm_task *lt, const char *dir, nlp_model **m, double budget, double t0, long batches,
               nlp_train_result *res)
{
    nlp_task task;
    CHECK_EQ_INT(nlp_lm_task_init(lt, &task, &corpus, NULL, 2, 16), 0);
    f->inner = task;
    task.ctx = f, task.next_batch = fake_next;
    f->t = t0, f->batches = batches, f->n = 0;
    nlp_train_opts o = {
        .out_dir = dir,
        .max_seconds = budget,
        .accum = 1,
        .schedule = NLP_SCHED_COSINE,
        .lr = 1e-2,
        .lr_min = 1e-3,
        .warmup = 10,
        .clip = 1,
        .optim = nlp_optim_default(),
        .seed = 3,
        .report = fake_report,
        .cb_ctx = f,
        .clock = fake_now,
        .clock_ctx = f,
    };
    const int resume = *m == NULL;
    int rc = nlp_train(m, &task, &o, resume ? dir : NULL, res);
    nlp_lm_task_free(lt);
    return rc;
}

/* The run's last step: ends within a step of the budget, at the floor, with
 * a decay that never rose after the warm-up. */
static void check_run(const fake *f, double budget, const char *what)
{
    CHECK_MSG(f->n > 20, "%s: %ld steps", what, f->n);
    if (f->n < 2) return;
    const double end = f->seconds[f->n - 1], step = f->t_first > f->t_rest ? f->t_first : f->t_rest;
    CHECK_MSG(end >= budget - step && end <= budget + step, "%s: ended at %.4f s of a %.4f s budget", what, end,
              budget);
    CHECK_MSG(f->lr[f->n - 1] == 1e-3, "%s: last lr %.9g, not the floor 1e-3", what, f->lr[f->n - 1]);
    int rises = 0;
    for (long i = 1; i < f->n; i++)
        if (f->steps[i] > 10 && f->lr[i] > f->lr[i - 1]) rises++;
    CHECK_MSG(!rises, "%s: the rate rose %d times after the warm-up", what, rises);
}

static const char *dir_of(const char *name)
{
    static char bufs[4][512];
    static int k;
    char *b = bufs[k++ & 3];
    snprintf(b, sizeof bufs[0], "%s/%s", test_tmpdir(), name);
    return b;
}

/* The first 20 steps slow (a busy core), the rest 8 times faster: a plan
 * made from the first steps would end the run at a quarter of its budget. */
static void test_slow_start(void)
{
    static fake f = {.first = 20, .t_first = 1.0 / 16, .t_rest = 1.0 / 128};
    nlp_lm_task lt;
    nlp_train_result res;
    nlp_model *m = tiny_gpt();
    CHECK_EQ_INT(run(&f, &lt, dir_of("slow"), &m, 2.0, 0, 0, &res), 0);
    check_run(&f, 2.0, "slow start");
    CHECK(f.seconds[f.n - 1] == 2.0);
    nlp_model_free(m);
}

/* The reverse: fast first steps, then slow ones (the machine gets busy). */
static void test_fast_start(void)
{
    static fake f = {.first = 20, .t_first = 1.0 / 128, .t_rest = 1.0 / 32};
    nlp_lm_task lt;
    nlp_train_result res;
    nlp_model *m = tiny_gpt();
    CHECK_EQ_INT(run(&f, &lt, dir_of("fast"), &m, 2.0, 0, 0, &res), 0);
    check_run(&f, 2.0, "fast start");
    nlp_model_free(m);
}

/* A slow step near the end (the machine busy for a moment): the next one
 * would end past the budget, so it is the last, at the floor, a little
 * before the budget's end; resumed, the run has nothing left to train. */
static void test_hiccup(void)
{
    static fake f = {.first = 0, .t_rest = 1.0 / 128, .hiccup = 240, .t_hiccup = 12.0 / 128};
    nlp_lm_task lt;
    nlp_train_result res;
    nlp_model *m = tiny_gpt();
    const char *d = dir_of("hiccup");
    CHECK_EQ_INT(run(&f, &lt, d, &m, 2.0, 0, 0, &res), 0);
    CHECK_EQ_INT(res.step, 241);
    CHECK(f.n == 241 && f.seconds[f.n - 1] == 252.0 / 128 && f.lr[f.n - 1] == 1e-3);
    nlp_model_free(m);
    m = NULL;
    CHECK_EQ_INT(run(&f, &lt, d, &m, 2.0, 0, 241, &res), 0);
    CHECK_EQ_INT(f.n, 0);
    CHECK_EQ_INT(res.step, 241);
    nlp_model_free(m);
}

/* Stopped after 50 steps and resumed (the clock elsewhere: 1000 s): the
 * same rates at every step and the same final weights as a run never
 * stopped. Then resumed with its budget used: no step; with a larger one:
 * on to its end. */
static void test_resume(void)
{
    static fake a = {.first = 20, .t_first = 1.0 / 16, .t_rest = 1.0 / 128};
    static fake b = {.first = 20, .t_first = 1.0 / 16, .t_rest = 1.0 / 128};
    nlp_lm_task lt;
    nlp_train_result ra, rb;
    nlp_model *ma = tiny_gpt(), *mb = tiny_gpt();
    const char *da = dir_of("whole"), *db = dir_of("cut");
    CHECK_EQ_INT(run(&a, &lt, da, &ma, 2.0, 0, 0, &ra), 0);
    b.stop_at = 50;
    CHECK_EQ_INT(run(&b, &lt, db, &mb, 2.0, 0, 0, &rb), 0);
    nlp_train_request_stop(0);
    CHECK_EQ_INT(rb.signal, SIGINT);
    CHECK_EQ_INT(rb.step, 50);
    CHECK_EQ_INT(b.n, 50);
    for (long i = 0; i < b.n && i < a.n; i++)
        CHECK_MSG(a.lr[i] == b.lr[i], "step %ld: lr %.17g before the stop, %.17g in the whole run", a.steps[i], b.lr[i],
                  a.lr[i]);
    nlp_model_free(mb);
    mb = NULL;
    b.stop_at = 0;
    CHECK_EQ_INT(run(&b, &lt, db, &mb, 2.0, 1000, 50, &rb), 0);
    CHECK_EQ_INT(rb.step, ra.step);
    CHECK_EQ_INT(b.n, a.n - 50);
    for (long i = 0; i < b.n && 50 + i < a.n; i++) {
        CHECK_MSG(a.lr[50 + i] == b.lr[i] && a.seconds[50 + i] == b.seconds[i],
                  "step %ld: lr %.17g at %.17g s resumed, %.17g at %.17g s in the whole run", b.steps[i], b.lr[i],
                  b.seconds[i], a.lr[50 + i], a.seconds[50 + i]);
    }
    if (ma && mb) {
        nlp_params *pa = nlp_model_params(ma), *pb = nlp_model_params(mb);
        CHECK(nlp_params_numel(pa) == nlp_params_numel(pb) &&
              memcmp(nlp_params_data(pa), nlp_params_data(pb), nlp_params_numel(pa) * sizeof(float)) == 0);
    }
    /* the budget is used: nothing to train */
    nlp_model_free(mb);
    mb = NULL;
    CHECK_EQ_INT(run(&b, &lt, db, &mb, 2.0, 0, ra.step, &rb), 0);
    CHECK_EQ_INT(b.n, 0);
    CHECK_EQ_INT(rb.step, ra.step);
    /* a larger budget: on to its end, again at the floor */
    nlp_model_free(mb);
    mb = NULL;
    CHECK_EQ_INT(run(&b, &lt, db, &mb, 2.5, 0, ra.step, &rb), 0);
    CHECK_MSG(b.n > 50, "%ld steps in the added half second", b.n);
    if (b.n) {
        CHECK(b.seconds[b.n - 1] == 2.5);
        CHECK(b.lr[b.n - 1] == 1e-3);
    }
    nlp_model_free(ma);
    nlp_model_free(mb);
}

/* The rate of a time-keyed schedule: the warm-up by steps, then the decay
 * at a fraction of the budget (ends included), the others as by steps. */
static void test_lr_frac(void)
{
    nlp_train_opts o = {.schedule = NLP_SCHED_COSINE, .lr = 1e-3, .lr_min = 1e-5, .warmup = 100};
    CHECK_NEAR(nlp_train_lr_frac(&o, 50, 0.7, 64), 5e-4, 1e-15);
    CHECK(nlp_train_lr_frac(&o, 100, 0, 64) == 1e-3);
    CHECK_NEAR(nlp_train_lr_frac(&o, 500, 0.5, 64), (1e-3 + 1e-5) / 2, 1e-15);
    CHECK(nlp_train_lr_frac(&o, 500, 1, 64) == 1e-5);
    CHECK(nlp_train_lr_frac(&o, 500, 1.5, 64) == 1e-5);
    o.schedule = NLP_SCHED_LINEAR;
    CHECK_NEAR(nlp_train_lr_frac(&o, 500, 0.25, 64), 1e-3 + (1e-5 - 1e-3) * 0.25, 1e-15);
    CHECK(nlp_train_lr_frac(&o, 500, 1, 64) == 1e-5);
    o.schedule = NLP_SCHED_INVSQRT;
    CHECK(nlp_train_lr_frac(&o, 400, 0.9, 64) == nlp_train_lr(&o, 400, 0, 64));
    o.schedule = NLP_SCHED_CONSTANT;
    CHECK(nlp_train_lr_frac(&o, 400, 0.9, 64) == 1e-3);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    nlp_threads_set(1); /* the steps are tiny: a second thread would only wait */
    nlp_rng r;
    nlp_rng_seed(&r, 11);
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) ids[i] = (int32_t)nlp_rng_below(&r, 64);
    static nlp_corpus_part part; /* one part in memory: the ids above */
    part.ids = ids, part.n = part.cap = sizeof ids / sizeof *ids, part.eot = -1;
    corpus.part = &part, corpus.nparts = corpus.parts_cap = 1;
    corpus.n = part.n, corpus.max_id = 64, corpus.held = part.n * sizeof *ids;
    RUN(test_lr_frac);
    RUN(test_slow_start);
    RUN(test_fast_start);
    RUN(test_hiccup);
    RUN(test_resume);
    return TEST_END();
}
