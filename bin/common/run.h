/*
 * run.h — what the training tools (pretrain, finetune) share about their
 * run directory before training starts: the run's id, the directory a
 * resumed run writes to, the lock against a second run in the same
 * directory, and the refusal to write a new run into a directory that
 * holds something else, all before any data is read.
 *
 * Like cli.h this lives in bin/: it prints and exits.
 */
#ifndef NLP_BIN_RUN_H
#define NLP_BIN_RUN_H

#include <stddef.h>
#include <stdint.h>

/* A new run's id: 64 random bits (never 0), recorded in its checkpoints. */
uint64_t run_new_id(void);

/* A resumed run's output paths. The run directory is where the run is
 * resumed from: --resume's directory, or the run directory holding the
 * checkpoint --resume names (exit 2 for a checkpoint outside one, unless -m
 * is given), never the one its run.yaml recorded (a copy of a run resumed
 * would write into the original); -m wins when the user gave it (a flag, or
 * a config file other than the run's own `yaml`). *log, when it comes from
 * `yaml` and the run was recorded elsewhere: a log inside the recorded run
 * directory follows the run; one outside it stays the original run's when
 * that still exists (dropped, with a warning), else (the run was moved) it
 * goes on. `ck` is the checkpoint resumed. Returns 1 when the run goes on
 * in the directory it is resumed from, 0 when -m sends it elsewhere. */
int run_resume_paths(const char *resume, const char *ck, const char *yaml, const char **model, const char **log);
/* The run's id: a new one, or with resume (not NULL) the resumed run's, its
 * paths set by run_resume_paths (*own_dir its result) and *legacy 1 for an
 * older run whose checkpoints carry no id. Exits 3 on a bad checkpoint. */
uint64_t run_identify(const char *resume, const char *ck, const char *yaml, const char **model, const char **log,
                      int *own_dir, int *legacy);

/* Takes `dir`'s lock (creating it when missing; exit 1, naming the pid of
 * the run that holds it, when another does, or when it cannot be created or
 * written in) and, with check, refuses (exit 1) a directory that holds what
 * is not run `id`'s (nlp_rundir_foreign; legacy: an older run's
 * checkpoints count as this run's) unless force. The lock is released at
 * exit, and `dir` removed again if this call made it and it is still empty.
 * With dry_run nothing is made or locked: only the check. Rank 0 of a
 * data-parallel job alone (the others write nothing). */
void run_dir_begin(const char *dir, uint64_t id, int check, int legacy, int force, int dry_run);
/* Whether run_dir_begin made the directory (so what goes into it goes again
 * when the run fails before training). */
int run_dir_created(void);

#endif
