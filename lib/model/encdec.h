/*
 * encdec.h — internal to lib/model: the encoder-decoder Transformer of
 * Vaswani et al. (2017) as the reference EncDec writes it: embeddings × √d
 * plus sinusoidal or learned positions, post-LN (or pre-LN with a final LN
 * on each stack), ReLU FFN, pad keys masked in every attention, causal decoder
 * self-attention, output tied to the target embedding or a separate
 * out_proj, label-smoothed loss over non-pad targets.
 *
 * Not here: the public API (model.h), the shared sublayers (net.h).
 */
#ifndef NLP_MODEL_ENCDEC_H
#define NLP_MODEL_ENCDEC_H

#include "model/net.h"

extern const nlp_arch_ops nlp_encdec_ops;

#endif
