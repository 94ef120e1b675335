/*
 * bert.h — internal to lib/model: BERT with its pre-training heads (HF
 * BertForPreTraining semantics and names): token + position + segment
 * embeddings and LayerNorm, post-LN encoder with GELU, pooler tanh(dense(h[CLS])),
 * MLM head (dense, GELU, LayerNorm, decoder tied to the word embeddings plus
 * cls.predictions.bias) and NSP head (cls.seq_relationship).
 *
 * Not here: the public API (model.h), the shared sublayers (net.h).
 */
#ifndef NLP_MODEL_BERT_H
#define NLP_MODEL_BERT_H

#include "model/net.h"

extern const nlp_arch_ops nlp_bert_ops;

#endif
