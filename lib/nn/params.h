/*
 * params.h — a model's named parameter tensors in one fp32 arena, their
 * gradients in a second arena of the same layout, and safetensors load/save.
 *
 * Tensors are packed back to back in the order they were added (no padding),
 * which is also the order a checkpoint stores them in: saving is one header
 * plus the arena, and loading a file written in this layout maps it instead of
 * copying (the arena then lives in the copy-on-write mapping, so inference
 * starts without reading the weights and training may still update them).
 * Files in another order or dtype (BF16, F16, F64, e.g. HuggingFace hub
 * checkpoints) are copied and converted.
 *
 * Loading looks each parameter up by name, then under the aliases real
 * checkpoints use: a "transformer." prefix (GPT-2 saved from
 * GPT2LMHeadModel) and LayerNorm "gamma"/"beta" for "weight"/"bias" (old BERT).
 * Other tensors in the file (tied copies such as lm_head.weight, attention
 * mask buffers) are ignored.
 *
 * Not here: what the parameters mean (lib/model), optimizer state (optim.h).
 */
#ifndef NLP_NN_PARAMS_H
#define NLP_NN_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "nn/safetensors.h"

#define NLP_PARAM_MAXDIM 4

typedef struct nlp_param_info {
    const char *name;  /* owned by the set */
    int ndim;
    int64_t shape[NLP_PARAM_MAXDIM];
    size_t off;        /* in floats from the arena start */
    size_t numel;
    int no_decay;      /* optimizers skip weight decay for this tensor */
} nlp_param_info;

typedef struct nlp_params nlp_params;

/* An empty set (NULL on ENOMEM). Free with nlp_params_free. */
nlp_params *nlp_params_new(void);
void nlp_params_free(nlp_params *p);

/* Declares the next tensor. Returns its index (>= 0) or NLP_EINVAL (duplicate
 * name, bad shape, set already allocated) / NLP_ENOMEM. */
int nlp_params_add(nlp_params *p, const char *name, int ndim, const int64_t *shape, int no_decay);

/* Allocates the arena (zero-filled, 64-byte aligned) once every tensor is
 * declared. 0 or NLP_ENOMEM. */
int nlp_params_alloc(nlp_params *p);

size_t nlp_params_count(const nlp_params *p);
const nlp_param_info *nlp_params_info(const nlp_params *p, size_t i);
/* Index of `name`, or -1. */
int nlp_params_find(const nlp_params *p, const char *name);
/* Total floats in the arena. */
size_t nlp_params_numel(const nlp_params *p);

/* The arena (NULL before nlp_params_alloc) and tensor i inside it. */
float *nlp_params_data(const nlp_params *p);
static inline float *nlp_params_at(const nlp_params *p, size_t i)
{
    return nlp_params_data(p) + nlp_params_info(p, i)->off;
}

/* Gradient arena: allocated (zeroed) by nlp_params_enable_grad, NULL before. */
int nlp_params_enable_grad(nlp_params *p);
float *nlp_params_grad(const nlp_params *p);
void nlp_params_zero_grad(nlp_params *p);

/* Lazy zeroing, as PyTorch's zero_grad(set_to_none=True): every gradient is
 * marked zero without touching the arena, so that the backward pass writes
 * a layer's weight gradient with its product (beta 0) instead of adding it
 * to zeros written by a pass over the whole arena and read back (for GPT-2
 * 124M, 500 MB written and 500 MB read a step). The arena holds stale values
 * until settled; the protocol, for whoever writes gradients:
 *  - nlp_params_grad_claim: a producer about to write the WHOLE of tensors
 *    i..i+n-1 (one product over adjacent tensors): 1 when all of them are
 *    marked zero (they now count as written: overwrite them), else 0 (the
 *    marked ones among them are zeroed first: add to them);
 *  - nlp_params_grad_at: anyone else (adding to part of a tensor): tensor
 *    i's gradient, zeroed first when marked;
 *  - nlp_params_grad_settle: zeroes the still-marked tensors at arena offset
 *    >= off, so that the arena holds the true gradients there (the model
 *    does it at the end of every backward pass, and before a gradient hook).
 * nlp_params_zero_grad zeroes at once (and clears the marks). */
void nlp_params_zero_grad_lazy(nlp_params *p);
int nlp_params_grad_claim(nlp_params *p, size_t i, size_t n);
float *nlp_params_grad_at(nlp_params *p, size_t i);
void nlp_params_grad_settle(nlp_params *p, size_t off);

/* Fills the arena from an open safetensors file and CONSUMES f (closes it, or
 * keeps it as the arena's storage when the file holds exactly this layout in
 * F32). Every parameter must be present (by name or alias) with the same
 * shape: otherwise NLP_EFORMAT "'file': missing tensor 'x'" or "'file':
 * tensor 'x' has shape [..], expected [..]". Non-float tensors are
 * NLP_EFORMAT, and so is a NaN or an infinity in any tensor ("'file':
 * tensor 'x' holds NaN at index I of N: the model is corrupt"): one flipped
 * bit of a weight near 1 makes it infinite, and a model that computes with
 * it gives NaN scores, which no decoder can rank. */
int nlp_params_load(nlp_params *p, nlp_st *f);
/* The same from the nf files of a sharded checkpoint (HF's
 * model-0000N-of-0000M.safetensors), each parameter from the first file
 * holding it; CONSUMES every file (the arena is always a copy). */
int nlp_params_load_files(nlp_params *p, nlp_st *const *f, size_t nf);

/* The index of the first NaN or infinity of x[0, n), or n when there is
 * none (one vectorised pass when there is none). */
size_t nlp_nonfinite_index(const float *x, size_t n);

/* 1 when the arena lives in a mapped file (see nlp_params_load). */
int nlp_params_is_mapped(const nlp_params *p);

/* Adds every parameter to a safetensors writer as `dtype` (F32 or BF16), each
 * name prefixed with `prefix` (may be ""), reading from `src` (an arena of the
 * same layout: the parameters, the gradients, or a copy). The data is not
 * copied: keep src alive until the writer is saved. */
int nlp_params_to_writer(const nlp_params *p, nlp_st_writer *w, const char *prefix, const float *src,
                         enum nlp_dtype dtype);

/* Saves the parameters to `path` atomically as F32 or BF16, with metadata
 * pairs meta[0]=meta[1], ... (NULL-terminated list, may be NULL). */
int nlp_params_save(const nlp_params *p, const char *path, const char *const *meta, enum nlp_dtype dtype);

#endif
