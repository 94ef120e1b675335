/*
 * loop.h — the one training loop every architecture shares: gradient
 * accumulation, clipping, the learning-rate schedule, AdamW/Adam, periodic
 * validation, run checkpoints (written to a new directory and renamed into
 * place), --keep, resume, a TSV log, stop on signal or non-finite loss.
 *
 * What is trained is a task (nlp_task): it fills micro-batches from its
 * data generator and evaluates the model on its validation data. The loop
 * knows nothing of tokens or text beyond that.
 *
 * A run directory holds checkpoints named step-NNNNNNNN (nlp_checkpoint_save's
 * layout plus what the caller adds through save_extra) and a symbolic link
 * `latest` to the newest. A checkpoint is written into a hidden temporary
 * directory and renamed into place, then `latest` is replaced (a link
 * renamed over it), then checkpoints beyond the newest `keep` are removed:
 * a crash at any moment leaves every completed checkpoint loadable. With
 * save_best, the weights of the best validation so far go to DIR/best (a
 * model directory, exchanged into place atomically), which --keep never
 * removes.
 *
 * Determinism: with the same options, data, seed and thread count the loss
 * sequence is the same bit for bit, and a resumed run continues it exactly
 * (the checkpoint holds the weights, both Adam moments, the step, the
 * model's dropout generator, the task's data generator, the tokens seen and
 * the schedule's length).
 *
 * A time budget (max_seconds, with steps 0) is used whole, and the decay
 * of the cosine and linear schedules is keyed to the training time, not
 * to a step count guessed in advance: after the warm-up's steps, a step
 * that starts at training time t has the rate of the decay's fraction
 *
 *     (t - t_w) / (max_seconds - t_w)      (t_w: when the warm-up ended)
 *
 * and the step the budget ends in at the recent pace (dt: the longest
 * step lately, easing down) is the last, with the floor lr_min: the run
 * ends within a step of its budget at the end of its schedule whatever
 * the pace did on the way (a busy machine for a minute, a fast or slow
 * start). Noam, inverse-sqrt and constant do not depend on the length.
 * Such a run is reproducible on resume given what it recorded: the
 * checkpoint holds the training time so far, t_w, dt and the budget as
 * exact doubles, so with the same clock readings a resumed run takes the
 * same steps with the same rates to the same weights as one never stopped
 * (the unit tests drive the loop with a clock of their own: o->clock).
 * Resumed with the same budget, a run trains on to the budget's end (one
 * that has used it trains nothing); with another budget the schedule is
 * laid over the new one, as if the run had been planned with it.
 *
 * Data parallel (a program started by mpirun, train/dist.h): every rank
 * draws every micro-batch from the same generator and trains on its share
 * of the rows (nlp_batch_rows), with each loss divided by the whole batch's
 * count, so the ranks' gradients sum to the whole batch's; the sum runs in
 * buckets that start while the backward pass continues (the model's grad
 * hook). Every rank then takes the same optimizer step. Rank 0's clock
 * decides a time budget's end and a signal on any rank stops all; rank 0
 * alone reports, logs and writes checkpoints (the others wait for its
 * status), and checkpoints record the number of ranks. A run may resume on
 * another number of ranks: the batches are the same, the sums' order is not.
 * The tasks' evaluate functions shard the validation data and combine the
 * figures themselves.
 *
 * Not here: reading data (data.h, the tasks), printing (the caller's
 * report callback), choosing options (bin/).
 */
#ifndef NLP_TRAIN_LOOP_H
#define NLP_TRAIN_LOOP_H

#include <signal.h>
#include <stdint.h>

#include "base/rng.h"
#include "model/model.h"
#include "nn/optim.h"

#define NLP_TRAIN_MAX_METRICS 8

enum nlp_schedule {
    NLP_SCHED_COSINE = 0,   /* linear warm-up, cosine to lr-min */
    NLP_SCHED_LINEAR = 1,   /* linear warm-up, linear decay to lr-min */
    NLP_SCHED_CONSTANT = 2, /* linear warm-up, then lr */
    NLP_SCHED_NOAM = 3,     /* Vaswani et al.: lr · d^-0.5 · min(s^-0.5, s · warmup^-1.5) */
    NLP_SCHED_INVSQRT = 4,  /* linear warm-up to lr, then lr · sqrt(warmup / s) (fairseq's
                               inverse_sqrt: the paper's shape with the peak given) */
};

/* Validation figures: metric k is names[k] (the task's eval_names). */
typedef struct nlp_eval {
    double v[NLP_TRAIN_MAX_METRICS];
} nlp_eval;

typedef struct nlp_task {
    void *ctx;
    /* Fills micro-batch b (its arrays owned by the task, valid until the
     * next call) drawing from r. Returns 0 or an error status. */
    int (*next_batch)(void *ctx, nlp_rng *r, nlp_batch *b);
    /* Evaluates m (dropout off) on the validation data; NULL = none. */
    int (*evaluate)(void *ctx, nlp_model *m, nlp_eval *out);
    /* Names of the evaluate() figures ("loss", "ppl", "bpb"...), NULL-ended. */
    const char *const *eval_names;
    /* The figure "best" refers to (an index into eval_names; a NaN value
     * falls back to figure 0, lower better), and whether higher is better. */
    int best_metric, higher_is_better;
    /* The data generator's own position beyond `r` (an epoch and a batch,
     * say), saved in checkpoints and restored on resume; NULL = none. */
    void (*get_state)(void *ctx, uint64_t s[4]);
    int (*set_state)(void *ctx, const uint64_t s[4]);
} nlp_task;

typedef enum nlp_train_event_kind {
    NLP_TRAIN_STEP,   /* after an optimizer step */
    NLP_TRAIN_EVAL,   /* after a validation */
    NLP_TRAIN_SAVE,   /* after a checkpoint was written (path = its directory) */
    NLP_TRAIN_RESUME, /* after a checkpoint was loaded (path = its directory) */
    NLP_TRAIN_PLAN,   /* the run's length: total = the steps of a fixed run (before its first step) or
                         the steps a time budget will hold at the pace so far (after 20 steps of this
                         run, and again when the estimate falls to the warm-up's steps or below while
                         the warm-up lasts); step = the steps done */
} nlp_train_event_kind;

typedef struct nlp_train_event {
    nlp_train_event_kind kind;
    long step, total;       /* optimizer steps done, planned */
    uint64_t tokens;        /* target tokens trained on so far */
    double loss;            /* mean loss of this step */
    double lr, grad_norm;
    double tokens_per_s;    /* over the steps since the last STEP report */
    double seconds;         /* training time so far (evaluation excluded) */
    double eta;             /* seconds left (estimate), -1 unknown; NLP_TRAIN_RESUME: of a time budget
                               (0: it is used, nothing to train) */
    const nlp_eval *eval;   /* NLP_TRAIN_EVAL */
    int best;               /* NLP_TRAIN_EVAL: the best validation so far */
    const char *path;
    int ranks_before;       /* NLP_TRAIN_RESUME: the processes the run was trained on until now */
} nlp_train_event;

typedef struct nlp_train_opts {
    const char *out_dir;        /* run directory (created); NULL = no checkpoints */
    long steps;                 /* optimizer steps; 0 = until max_seconds */
    double max_seconds;         /* training time budget (evaluation excluded); 0 = none */
    int accum;                  /* micro-batches per step (>= 1) */
    enum nlp_schedule schedule;
    double lr, lr_min;
    long warmup;
    double clip;                /* max global gradient norm; 0 = no clipping */
    nlp_optim_config optim;
    long eval_every, save_every;/* steps; 0 = never (a final checkpoint is still written) */
    long eval_at_start;         /* 1: validate before the first step */
    int keep;                   /* checkpoints to keep; 0 = all */
    int save_best;              /* write the model of the best validation to DIR/best */
    const char *log_path;       /* TSV log; NULL = none */
    uint64_t seed;              /* data generator seed (the model's own is set at creation) */
    uint64_t run_id;            /* this run's id, recorded in its checkpoints: --keep and averaging
                                   count only the checkpoints of this run (and older ones without an
                                   id) in a directory that holds others too; a resumed run keeps its
                                   checkpoint's id (this one when it has none). 0: every checkpoint
                                   counts */
    /* The caller adds its files (tokenizer, options) to a checkpoint
     * directory being written; NULL = nothing. */
    int (*save_extra)(void *ctx, const char *dir);
    void (*report)(void *ctx, const nlp_train_event *e);
    void *cb_ctx;
    /* The training clock in seconds (tests drive the loop with a clock of
     * their own); NULL = CLOCK_MONOTONIC. */
    double (*clock)(void *ctx);
    void *clock_ctx;
} nlp_train_opts;

/* What a run ended with. */
typedef struct nlp_train_result {
    long step;
    int signal;              /* the signal that stopped the run, 0 = none */
    char last_checkpoint[4096]; /* "" = none written or loaded */
    double best;             /* best first validation figure, NAN = none */
    double seconds;          /* training time of this run (evaluation excluded) */
    double comm_seconds;     /* of which waiting for the other ranks' gradients and figures (data
                                parallel: the communication the backward pass did not hide) */
    uint64_t run_id;         /* the run's id (o->run_id, or a resumed checkpoint's) */
} nlp_train_result;

/* Trains m (whose parameters are created or loaded) for the task. With
 * `resume` (a checkpoint directory, or NULL) the model, optimizer and
 * generators come from it instead: pass *m = NULL then, and the loaded
 * model is returned in *m. Returns 0 (finished, or stopped by a signal:
 * result->signal), NLP_ENAN (non-finite loss or gradient: nothing saved for
 * that step; the message names the step and the last good checkpoint),
 * or another error status. */
int nlp_train(nlp_model **m, const nlp_task *task, const nlp_train_opts *o, const char *resume,
              nlp_train_result *result);

/* Asks a running nlp_train to save a checkpoint and return after the
 * current step (async-signal-safe: meant for SIGINT/SIGTERM handlers). */
void nlp_train_request_stop(int sig);

/* The newest checkpoint of a run directory (through `latest`, else the
 * highest step-N), or dir itself when it holds model.safetensors. Writes
 * the path into buf. 0, or NLP_EIO "'dir' holds no checkpoint". */
int nlp_train_find_checkpoint(const char *dir, char *buf, size_t cap);

/* Averages the weights of the newest n checkpoints of o->out_dir (as
 * Vaswani et al. did for their results) into o->out_dir/average, a model
 * directory with o->save_extra's files; *used gets how many there were
 * (fewer than n when the run kept fewer). With o->run_id, only the
 * checkpoints of that run (and older ones without an id) count. */
int nlp_train_average(const nlp_train_opts *o, int n, int *used);

/* The learning rate of a 1-based step under the options' schedule. */
double nlp_train_lr(const nlp_train_opts *o, long step, long total, int d_model);

/* The same for a run keyed to its time budget: the warm-up by steps, then
 * cosine and linear at `frac` (0: the peak o->lr, 1 and beyond: o->lr_min)
 * of their decay; the other schedules as nlp_train_lr. */
double nlp_train_lr_frac(const nlp_train_opts *o, long step, double frac, int d_model);

#endif
