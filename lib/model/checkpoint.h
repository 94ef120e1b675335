/*
 * checkpoint.h — a training checkpoint: the model and everything needed to
 * resume a run bit-identically, written atomically.
 *
 * A checkpoint is a directory:
 *
 *   DIR/model.safetensors        the weights (F32) and the model configuration,
 *                                as nlp_model_save writes them, plus metadata
 *                                "step" (so inference tools read it as any model)
 *   DIR/train_state.safetensors  the rest, also safetensors:
 *     __metadata__  format "nlpipe-train-state", version "1", step,
 *                   optimizer (adamw | adam), beta1, beta2, eps, weight_decay
 *                   (shortest round-trip decimals), params (count of floats),
 *                   layout (FNV-1a hash of the parameter names and shapes, hex),
 *                   run (the run's id, 16 hex digits; absent in older checkpoints
 *                   and in those of runs without one)
 *     optim.m, optim.v   F32 [params]   the two moment arenas, in the model's layout
 *     rng.model          U64 [4]        the model's dropout generator
 *     rng.data           U64 [4]        the caller's data generator (shuffling, masking)
 *     data.position      U64 [4]        the caller's position in its data, opaque here
 *     data.task          U64 [4]        the caller's task state, opaque too (older: absent)
 *     train.clock        U64 [8]        the caller's clock and schedule, opaque too (older:
 *                                       absent, read as zeros)
 *
 * Each file is written through a temporary file, fsynced and renamed, the
 * state first and the model second; both carry the step, and loading rejects
 * a pair whose steps differ (a crash between the two renames), so a reader
 * never resumes from a mixed checkpoint.
 *
 * Not here: when to checkpoint, how many to keep (lib/train).
 */
#ifndef NLP_MODEL_CHECKPOINT_H
#define NLP_MODEL_CHECKPOINT_H

#include <stdint.h>

#include "base/rng.h"
#include "model/model.h"
#include "nn/optim.h"

typedef struct nlp_train_state {
    nlp_rng data_rng;          /* the caller's generator */
    uint64_t data_position[4]; /* opaque to the library */
    uint64_t task_state[4];    /* opaque too (absent from older checkpoints: zeros) */
    uint64_t clock[8];         /* opaque too: the training loop's time budget (absent: zeros) */
    int ranks;                 /* processes the run was trained on (metadata "ranks"; older: 1) */
    uint64_t run_id;           /* the run's id (metadata "run"; 0: none, or an older checkpoint) */
} nlp_train_state;

/* Writes DIR (created if missing) from the model, its optimizer (o->step is
 * the step) and the caller's state. NLP_EIO on failure. */
int nlp_checkpoint_save(const char *dir, const nlp_model *m, const nlp_optim *o, const nlp_train_state *s);

/* Reads DIR: a new model (*m, free with nlp_model_free; its dropout
 * generator restored), the optimizer (*o initialised; free with
 * nlp_optim_free) and the caller's state. NLP_EFORMAT names the file and what
 * is wrong (not a train state, another model's layout, steps that differ,
 * missing tensors, a NaN or an infinity in the weights or Adam's moments, a
 * negative second moment, a random generator's state of all zeros), NLP_EIO
 * when unreadable. */
int nlp_checkpoint_load(const char *dir, nlp_model **m, nlp_optim *o, nlp_train_state *s);

/* The run id of checkpoint DIR (its train_state's "run"), read from the
 * file's header alone: 0 into *id when it has none. NLP_EIO or
 * NLP_EFORMAT when the training state cannot be read. */
int nlp_checkpoint_run_id(const char *dir, uint64_t *id);

/* The layout fingerprint written as "layout" (FNV-1a over names and shapes). */
uint64_t nlp_params_layout_hash(const nlp_params *p);

#endif
