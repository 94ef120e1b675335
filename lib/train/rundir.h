/*
 * rundir.h — the files of a run directory (loop.h describes the layout):
 * checkpoints written into a hidden directory and renamed into place, the
 * `latest` link, --keep, DIR/best, and the TSV log. The training loop's
 * helpers; nlp_train_find_checkpoint and nlp_train_average (loop.h) live
 * here too, so that a tool reading run directories needs none of the loop.
 */
#ifndef NLP_TRAIN_RUNDIR_H
#define NLP_TRAIN_RUNDIR_H

#include <stdio.h>

#include "model/checkpoint.h"
#include "train/loop.h"

/* Removes what interrupted writers (processes that are gone) left in dir:
 * hidden temporaries; puts back a checkpoint that a crash caught between
 * the two renames of a replacement (rundir.c lists the names). */
void nlp_rundir_remove_stale(const char *dir);

/* Writes the model (weights only) with o->save_extra's files as
 * o->out_dir/name (a model directory), atomically. */
int nlp_rundir_save_model(const nlp_train_opts *o, const nlp_model *m, const char *name);

/* Writes checkpoint step-N of the optimizer's step into o->out_dir, points
 * `latest` at it and applies o->keep; final gets its path. */
int nlp_rundir_save_checkpoint(const nlp_train_opts *o, nlp_model *m, const nlp_optim *opt, const nlp_train_state *st,
                               char *final, size_t cap);

/* The log: opened fresh, or (resumed_step >= 0) truncated after that step
 * and appended to. NULL with *rc 0 when o->log_path is NULL. */
FILE *nlp_rundir_log_open(const nlp_train_opts *o, const nlp_task *t, long resumed_step, int *rc);
/* Appends a row (flushed): 0, or NLP_EIO naming `path` when it cannot be
 * written (a full disk). */
int nlp_rundir_log_row(FILE *f, const char *path, const nlp_task *t, const nlp_train_event *e, const nlp_eval *ev);

#endif
