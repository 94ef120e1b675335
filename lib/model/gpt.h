/*
 * gpt.h — internal to lib/model: the GPT-2 architecture (HF GPT2LMHeadModel
 * semantics and hub names without the "transformer." prefix): pre-LN blocks,
 * fused c_attn (Conv1D [C,3C]), GELU (tanh) MLP, final ln_f, logits tied to
 * wte, loss on logits[:, :-1] against labels[:, 1:].
 *
 * Not here: the public API (model.h), the shared sublayers (net.h).
 */
#ifndef NLP_MODEL_GPT_H
#define NLP_MODEL_GPT_H

#include "model/net.h"

extern const nlp_arch_ops nlp_gpt_ops;

#endif
