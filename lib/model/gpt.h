/*
 * gpt.h — internal to lib/model: the GPT-2 architecture (HF GPT2LMHeadModel
 * semantics and hub names without the "transformer." prefix): pre-LN blocks,
 * fused c_attn (Conv1D [C,3C]), GELU (tanh) MLP, final ln_f, logits tied to
 * wte, loss on logits[:, :-1] against labels[:, 1:]; with rotary positions
 * no wpe, and with kv-heads a c_attn of [C, C+2Ckv].
 *
 * The same ops run llama (HF LlamaForCausalLM semantics and names): RMSNorm,
 * separate q/k/v/o projections without biases (k and v of kv-heads),
 * rotary positions, the SwiGLU feed-forward, model.norm, lm_head or the tied
 * embedding.
 *
 * Not here: the public API (model.h), the shared sublayers (net.h).
 */
#ifndef NLP_MODEL_GPT_H
#define NLP_MODEL_GPT_H

#include "model/net.h"

extern const nlp_arch_ops nlp_gpt_ops;

#endif
