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

/* The lock against a second run writing into the same directory: an
 * exclusive flock(2) on DIR/.lock, a file holding the holder's pid. DIR is
 * created when missing (*created set to 1). NLP_EIO "'DIR' is in use by
 * another run (process P, which holds 'DIR/.lock')" when another process
 * holds it; NLP_EIO naming what failed when DIR cannot be created, is not a
 * directory or cannot be written in (a read-only file system: found here,
 * before any training). *fd keeps the lock until nlp_rundir_unlock, which
 * removes the file, or the process's end (a killed run's lock file stays,
 * unlocked: the next run takes it). */
int nlp_rundir_lock(const char *dir, int *created, int *fd);
void nlp_rundir_unlock(const char *dir, int fd);

/* Does DIR hold what is not run `run`'s? 0 when it is missing or empty, or
 * holds only checkpoints of that run (those without a run id too when
 * `legacy`: an older run resumed) with their latest, best and average,
 * besides what is no run's: the lock file, the temporaries of writers that
 * are gone, a data cache ('data'), and a latest, best or average without
 * any checkpoint (a run killed before its first one, which cannot be
 * resumed: run again, it is replaced). Else 1, and `found` names up to
 * three of the other entries. */
int nlp_rundir_foreign(const char *dir, uint64_t run, int legacy, char *found, size_t cap);

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
