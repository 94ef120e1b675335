/*
 * model.h — GPT-2, BERT and the Vaswani encoder-decoder: create from a
 * configuration, load and save (safetensors with HuggingFace names), forward
 * with losses, backward into a gradient arena.
 *
 * Architectures (the PyTorch reference in shared/parity/models.py is the
 * contract, tensor names included):
 *   gpt          pre-LN decoder, GELU (tanh), learned positions, output tied to
 *                wte; names wte, wpe, h.N.ln_1, h.N.attn.c_attn (Conv1D [C,3C]),
 *                h.N.attn.c_proj, h.N.ln_2, h.N.mlp.c_fc, h.N.mlp.c_proj, ln_f.
 *                Loss: mean CE of logits[:, :-1] against labels[:, 1:] (HF shift).
 *   bert         post-LN encoder, GELU (erf), token + position + segment
 *                embeddings with LayerNorm, pooler (tanh), MLM head (dense, GELU,
 *                LN, decoder tied to the word embeddings + bias) and NSP head;
 *                BertForPreTraining names. Loss: MLM mean CE + NSP mean CE.
 *   transformer  encoder-decoder, post-LN (or pre-LN with final LNs),
 *                embeddings × √d plus sinusoidal or learned positions, shared or
 *                separate vocabularies, output tied to the target embedding or
 *                not, ReLU FFN; pad keys masked everywhere, decoder self-attention
 *                causal. Loss: label-smoothed CE over non-pad targets.
 *
 * A model file is a safetensors file (or a directory holding model.safetensors)
 * whose __metadata__ carries "model" (gpt | bert | encdec) and "config" (the
 * reference's JSON), or a HuggingFace model.safetensors with config.json beside
 * it. A file written by nlp_model_save in F32 is mapped, not read.
 *
 * Threads: OpenMP; for a given thread count every result is the same from run
 * to run. Dropout masks come from the model's nlp_rng (seed it with
 * nlp_model_seed), one draw per training forward pass.
 *
 * Not here: batching of text, the training loop, decoding strategies.
 */
#ifndef NLP_MODEL_MODEL_H
#define NLP_MODEL_MODEL_H

#include <stdint.h>

#include "base/rng.h"
#include "model/config.h"
#include "nn/params.h"

typedef struct nlp_model nlp_model;

/* One batch. Arrays are row-major, not copied, and must stay valid until the
 * backward pass that follows the forward. Ids are checked: an id outside its
 * vocabulary is NLP_EDATA naming the row and position. */
typedef struct nlp_batch {
    int B, T;                   /* rows, positions (transformer: target positions) */
    int S;                      /* transformer: source positions */
    const int32_t *ids;         /* gpt, bert: [B,T] */
    const int32_t *labels;      /* gpt: [B,T] (the HF shift is applied inside); bert: MLM labels [B,T];
                                   -100 = ignore; NULL = no loss */
    const int32_t *type_ids;    /* bert: [B,T] segment ids (NULL = all 0) */
    const int32_t *mask;        /* bert: [B,T] 1 = real token, 0 = padding (NULL = all 1) */
    const int32_t *nsp_labels;  /* bert: [B] 0/1 (NULL = no NSP loss) */
    const int32_t *src;         /* transformer: [B,S], pad-id = padding */
    const int32_t *tgt_in;      /* transformer: [B,T] decoder input (BOS y1 ...) */
    const int32_t *tgt_out;     /* transformer: [B,T] targets (y1 ... EOS), pad-id ignored; NULL = no loss */
    /* sequence classification (a model with num-labels > 0: finetune) */
    const int32_t *cls_labels;  /* [B] label index in [0, num-labels); NULL = no classification loss
                                   (with choices or pair_sum: one per example, [B/g]) */
    const int32_t *cls_pos;     /* gpt: [B] the position whose final hidden state is classified (the
                                   [EXTRACT] token); bert classifies [CLS] at position 0 (NULL) */
    /* Examples of several rows (g = nlp_batch_group: B a multiple of g):
     * choices   multiple choice: an example is `choices` consecutive rows,
     *           one per candidate; the head (num-labels 1) scores each row
     *           and the softmax runs over the example's scores: cls_labels
     *           holds the right candidate (0 .. choices-1) and the
     *           classification logits are [B/choices, choices] (0 or 1:
     *           rows are examples)
     * pair_sum  similarity (gpt): an example is two rows, a pair in both
     *           orders, whose final states at cls_pos are added before the
     *           head (Radford et al. 2018): logits [B/2, num-labels],
     *           symmetric in the two rows by construction */
    int choices, pair_sum;
    /* bert with head span (extractive QA): the start and end logits at every
     * position; span_start, span_end [B] the gold positions (-100 = ignore;
     * NULL = no loss: the mean of the two cross-entropies over the row's
     * positions); span_mask [B,T] 1 where an answer may start or end (NULL:
     * everywhere), elsewhere the logits are -10000 (no probability, no
     * gradient) */
    const int32_t *span_start, *span_end, *span_mask;
    int row0;                   /* rows of a larger batch before these (a rank's share of a batch split
                                   for data-parallel training, nlp_batch_rows): dropout draws the masks
                                   the whole batch would, so the shares train as the whole; 0 otherwise */
} nlp_batch;

/* Rows [r0, r1) of b, as a batch of their own (pointers into b's arrays;
 * row0 set): one rank's share in data-parallel training. */
nlp_batch nlp_batch_rows(const nlp_batch *b, int r0, int r1);

/* Rows per example of b: b->choices (> 1), 2 with pair_sum, else 1. A
 * share of a batch (nlp_batch_rows) must start and end at examples. */
int nlp_batch_group(const nlp_batch *b);

typedef struct nlp_losses {
    double loss;      /* the loss the backward pass differentiates */
    double nll;       /* transformer: mean NLL without smoothing; gpt: = loss; bert: = mlm_loss */
    double mlm_loss, nsp_loss;
    double cls_loss;  /* classification: mean CE of the labels (L2); loss = cls_loss + λ·lm_loss */
    double lm_loss;   /* gpt classification: the auxiliary language-modelling loss (L1) */
    int tokens;       /* targets counted in the (main) loss; bert: the batch's unpadded positions */
} nlp_losses;

/* A new model with the reference's random initialisation drawn from `seed`
 * (gpt: N(0, init-std), c_proj N(0, init-std/√(2L)); bert: N(0, init-std);
 * transformer: Xavier-uniform matrices, N(0, d^-1/2) embeddings; biases 0, LN
 * weights 1). The dropout RNG is seeded from `seed` too. Free with
 * nlp_model_free. NLP_EINVAL for an invalid config, NLP_ENOMEM. */
int nlp_model_new(nlp_model **out, const nlp_model_config *cfg, uint64_t seed);

/* Memory of a training run of a model of configuration cfg, in bytes,
 * computed without allocating: the parameter arena, its gradient arena, the
 * optimizer's two moment arenas (Adam), and the activations of one
 * micro-batch of B rows of T positions (transformer: S source positions):
 * the arena that holds the forward pass's tensors and their gradients, and
 * with relative positions each stack's score bias and its gradient (H × S × S
 * for the encoder, H × T × T for the decoder). */
typedef struct nlp_train_memory {
    uint64_t params, grads, optim, acts;
} nlp_train_memory;

/* Fills *out for cfg and the micro-batch's shape. 0, or NLP_EINVAL for an
 * invalid configuration (with the message of nlp_model_config_validate). */
int nlp_model_train_memory(const nlp_model_config *cfg, int B, int T, int S, nlp_train_memory *out);

/* The activation memory m holds now, in bytes: its arena and the relative
 * position bias buffers, as large as the largest pass so far made them (after
 * a training pass at the largest shape: nlp_train_memory's acts). */
uint64_t nlp_model_act_bytes(const nlp_model *m);

/* Loads a model from a safetensors file or a directory with model.safetensors.
 * The configuration comes from the file's metadata, else from config.json next
 * to it. Errors: NLP_EIO (cannot read), NLP_EFORMAT (bad file, unknown config,
 * missing tensor, wrong shape, a NaN or infinite weight — the message names
 * the file and the tensor — or a configuration asking for tables far larger
 * than its weights: a sinusoidal max-positions of millions). */
int nlp_model_load(nlp_model **out, const char *path);

/* Saves the parameters (F32 or BF16) with the configuration in __metadata__,
 * atomically. A directory path gets model.safetensors inside it. */
int nlp_model_save(const nlp_model *m, const char *path, enum nlp_dtype dtype);
/* The same with extra __metadata__ pairs (key, value, ..., NULL), such as a
 * checkpoint's step. */
int nlp_model_save_meta(const nlp_model *m, const char *path, enum nlp_dtype dtype, const char *const *extra);

void nlp_model_free(nlp_model *m);

const nlp_model_config *nlp_model_cfg(const nlp_model *m);
nlp_params *nlp_model_params(nlp_model *m);

/* Training mode turns dropout on (off by default). */
void nlp_model_set_training(nlp_model *m, int on);
void nlp_model_seed(nlp_model *m, uint64_t seed);
/* Decoding reads each weight matrix once per token, and streams a matrix
 * stored [out,in] (one dot product per output, nn.Linear's layout) faster
 * than one stored [in,out] (GPT-2's Conv1D): this transposes the [in,out]
 * weights in place and switches their layers to [out,in]. Every forward
 * pass gives the same results as before (up to summation order); the model
 * can then no longer be trained or saved (nlp_model_save: NLP_EINVAL).
 * 0 or NLP_ENOMEM. */
int nlp_model_set_inference_layout(nlp_model *m);

/* Inference with bfloat16 weights: keeps a bf16 copy of the parameters
 * (round to nearest even) that incremental decoding and other forward
 * passes of up to NLP_LINEAR_BF16_ROWS rows read instead of the fp32 ones
 * (half the bytes per token; fp32 arithmetic). The fp32 weights stay for
 * longer inputs and training, which never use the copy; weights changed
 * afterwards need another call. 0 or NLP_ENOMEM. */
int nlp_model_set_inference_bf16(nlp_model *m);

/* The fp32 parameters rounded in place to bfloat16's values (round to
 * nearest even, as the copy above): with it, products of any number of rows
 * (a prompt's pass, perplexity's windows) use the weights incremental
 * decoding reads from the copy, and `generate --bf16` scores and decodes one
 * model. Call it before nlp_model_set_inference_layout. */
void nlp_model_round_bf16(nlp_model *m);

/* Inference with packed weights: keeps a copy of every weight matrix (and of
 * the output embedding) packed for the matrix kernels (nn/sgemm.h), which
 * forward passes with training off then read instead of packing the weights
 * again in every product: incremental decoding makes a few products per
 * token. The same results bit for bit; memory for a second copy of the
 * weights. Weights changed afterwards need nlp_model_drop_packed and another
 * call; switching training on drops the copies. 0 or NLP_ENOMEM. */
int nlp_model_pack_weights(nlp_model *m);
void nlp_model_drop_packed(nlp_model *m);
int nlp_model_has_packed(const nlp_model *m);

/* Inference with int8 weights: every weight matrix of the layers (and the
 * output embedding) quantized once to int8 in blocks of 32 with an fp16
 * scale each (nn/q8.h), which forward passes with training off then use
 * for every product, activations quantized per row (about a quarter of the
 * bytes of fp32 per token). Sets the inference layout first
 * (nlp_model_set_inference_layout). The fp32 weights stay (embeddings are
 * read from them, training never uses the copy); weights changed afterwards
 * need nlp_model_drop_int8 and another call. 0, NLP_ENOMEM, or NLP_EFORMAT
 * for a weight that is not finite (naming the tensor). */
int nlp_model_set_inference_int8(nlp_model *m);
void nlp_model_drop_int8(nlp_model *m);
/* Bytes of the int8 copy (0 when there is none). */
size_t nlp_model_int8_bytes(const nlp_model *m);

/* Changes the dropout probabilities (fine-tuning or continuing a loaded
 * model with other regularisation); each in [0, 1). NLP_EINVAL otherwise. */
int nlp_model_set_dropout(nlp_model *m, double dropout, double attention_dropout);
/* The dropout generator, for saving and restoring its state. */
nlp_rng *nlp_model_rng(nlp_model *m);

/* Forward pass; with labels (targets) also the losses, and the activations
 * are kept for nlp_model_backward. `out` may be NULL. In training mode, a
 * GPT or encoder-decoder forward with targets also computes the loss's
 * gradient in the same pass over the logits: nlp_model_logits then holds
 * that gradient, not the logits. */
int nlp_model_forward(nlp_model *m, const nlp_batch *b, nlp_losses *out);

/* Backward pass of the last forward (which must have computed a loss):
 * gradients of its loss are ADDED to the gradient arena (allocated and zeroed
 * on first use; clear it with nlp_params_zero_grad, or mark it zero with
 * nlp_params_zero_grad_lazy: a layer's product then writes its weight
 * gradient instead of adding it, and at the end of the pass the arena holds
 * the gradients either way). The logits buffer is
 * reused for their gradient. NLP_EINVAL when there is no loss to
 * differentiate. */
int nlp_model_backward(nlp_model *m);

/* Logits of the last forward: gpt [B,T,V], bert MLM [B,T,V], transformer
 * [B,T,V_tgt]; *rows = B·T, *cols = V. Valid until the next forward or
 * backward. */
const float *nlp_model_logits(const nlp_model *m, int *rows, int *cols);
/* bert: NSP logits [B,2] of the last forward. */
const float *nlp_model_nsp_logits(const nlp_model *m);
/* Classification logits [B, num-labels] of the last forward pass (a model
 * with a classification head: finetune), or NULL; with choices or pair_sum
 * one row per example (model.h's nlp_batch). NULL for a span head. */
const float *nlp_model_cls_logits(const nlp_model *m);
/* A span head's logits of the last forward pass: [2, B, T], the start
 * logits of every row, then the end logits (-10000 where span_mask is 0);
 * NULL for other models. */
const float *nlp_model_span_logits(const nlp_model *m);

/* Sequence classification (num-labels > 0). BERT classifies the pooled
 * [CLS] ("classifier", HF BertForSequenceClassification); GPT the final
 * state at each row's batch->cls_pos ("score", Radford et al. 2018) and,
 * with LM labels, trains on L3 = L2 + λ·L1: the classification loss plus λ
 * times the language-modelling loss (λ = 0 skips the vocabulary's logits
 * altogether). */
void nlp_model_set_lm_weight(nlp_model *m, double lambda); /* default 0.5 */

/* Data-parallel training. A rank trains on its share of each batch
 * (nlp_batch_rows) and the gradients of the ranks are summed: for that sum
 * to be the gradient of the whole batch's loss, each share divides its loss
 * sums by the whole batch's counts instead of its own. nlp_model_loss_counts
 * gives a batch's counts: n[0] the targets of the token-level loss (LM, MLM,
 * translation), n[1] those of the sequence-level loss (NSP, classification).
 * nlp_model_set_loss_norm makes forward passes divide by norm[0], norm[1]
 * (0, or norm NULL: each batch by its own counts, the default); the losses
 * reported are then the shares of the whole batch's means, which sum to them. */
void nlp_model_loss_counts(const nlp_model *m, const nlp_batch *b, double n[2]);
void nlp_model_set_loss_norm(nlp_model *m, const double norm[2]);

/* Calls fn(ctx, off) during each backward pass, from the calling thread,
 * whenever the gradients of every parameter at arena offset >= off are
 * final (off decreasing within a pass; after the pass all are): a
 * data-parallel trainer starts summing those across ranks while the
 * backward pass goes on. fn NULL removes it. */
void nlp_model_set_grad_hook(nlp_model *m, void (*fn)(void *ctx, size_t off), void *ctx);
/* A training forward pass over no rows (a rank without a share of a small
 * batch): advances the dropout generator as nlp_model_forward would, so that
 * the ranks stay in step. */
void nlp_model_skip_forward(nlp_model *m);

/* The label names of the head, saved with the model ("labels" in the
 * safetensors metadata, '\n'-joined). n must equal num-labels; a name may
 * not be empty or hold a newline (NLP_EINVAL). */
int nlp_model_set_labels(nlp_model *m, const char *const *names, int n);
int nlp_model_set_labels_text(nlp_model *m, const char *joined, const char *origin);
/* Label i's name into buf (its index as text when the model has no names);
 * 0, or -1 when i is out of range. */
int nlp_model_label(const nlp_model *m, int i, char *buf, size_t cap);
/* The positions per example a classifier was trained on (its inputs cut to
 * them), saved with the model ("input_length" in the metadata) so that
 * using it reads inputs as training did; 0 when not recorded. n must lie in
 * 1..max-positions (NLP_EINVAL). */
int nlp_model_set_input_length(nlp_model *m, int n);
int nlp_model_input_length(const nlp_model *m);
/* The texts per example a classifier was trained on: 1 (single texts), 2
 * (pairs), or 1 + k for multiple choice (a context and k choices), saved
 * with the model ("input_texts") so that using it can refuse the other kind
 * of input (a labelled file given to predict reads as pairs); 0 when not
 * recorded. n must lie in 1 .. NLP_MAX_INPUT_TEXTS (NLP_EINVAL). */
#define NLP_MAX_INPUT_TEXTS 1024
int nlp_model_set_input_texts(nlp_model *m, int n);
int nlp_model_input_texts(const nlp_model *m);
/* The task prefix of a text-to-text model (T5's "translate English to
 * German: "): the text its training sources began with, saved with it
 * ("prefix" in the metadata) so that translate puts it before each input.
 * NULL or "" removes it; otherwise it must be valid UTF-8 without a
 * newline, tab or NUL, at most NLP_MAX_PREFIX bytes (NLP_EINVAL). A model
 * without one (one saved before prefixes were recorded) gives NULL. */
#define NLP_MAX_PREFIX 4096
int nlp_model_set_prefix(nlp_model *m, const char *prefix);
const char *nlp_model_prefix(const nlp_model *m);
/* The same check alone: 0, or NLP_EINVAL with a message. */
int nlp_prefix_check(const char *prefix);
/* The task a fine-tuned model was trained for, saved with it ("task" in the
 * metadata: classify, choice, similarity, span) so that using it reads its
 * kind of input; NLP_FT_NONE when not recorded (a classifier of before). */
enum nlp_ft_task {
    NLP_FT_NONE = 0,
    NLP_FT_CLASSIFY,   /* label<TAB>text (or a pair): one row per example */
    NLP_FT_CHOICE,     /* a context and k candidates: nlp_batch.choices */
    NLP_FT_SIMILARITY, /* a pair in both orders: nlp_batch.pair_sum */
    NLP_FT_SPAN,       /* extractive QA: a span head */
};
int nlp_model_set_task(nlp_model *m, enum nlp_ft_task t);
enum nlp_ft_task nlp_model_task(const nlp_model *m);
/* "classify", "choice", "similarity", "span" ("" for NLP_FT_NONE), and back
 * (-1 for an unknown name). */
const char *nlp_ft_task_name(enum nlp_ft_task t);
int nlp_ft_task_from_name(const char *s);

/* A new model of configuration cfg (same architecture) initialised from
 * seed, then every tensor of src copied in by name: a tensor that grew in
 * its first dimension (more vocabulary rows, a larger bias) gets src's rows
 * first and keeps its initialisation for the rest; tensors src lacks (a new
 * classifier) keep theirs. For adding tokens and heads before fine-tuning.
 * NLP_EINVAL when a tensor would shrink or change shape otherwise. */
int nlp_model_extend(nlp_model **out, const nlp_model *src, const nlp_model_config *cfg, uint64_t seed);
/* transformer: the cross-attention probabilities [B,H,T,S] of decoder
 * layer `layer` (-1 = the last) in the last full forward pass (not
 * incremental decoding; before dropout), *H gets the heads; NULL when
 * there is none. Valid until the next forward. */
const float *nlp_model_cross_attention(const nlp_model *m, int layer, int *H);

// --- incremental decoding

/* Keys and values of the positions decoded so far, per attention layer, for
 * B rows of at most max_len positions (gpt: prompt + generated; transformer:
 * target positions; the source side is sized by nlp_model_encode). */
typedef struct nlp_cache nlp_cache;

/* A cache for model m (gpt or transformer; bert has no decoder: NLP_EINVAL).
 * Free with nlp_cache_free. */
int nlp_cache_new(nlp_cache **out, const nlp_model *m, int B, int max_len);
void nlp_cache_free(nlp_cache *c);
/* Positions cached, the same for every row. */
int nlp_cache_len(const nlp_cache *c);
/* Forgets the positions (and the encoded source); keeps the memory. */
void nlp_cache_reset(nlp_cache *c);
/* Beam search: row i takes the cached state of row rows[i] (i < B), the
 * source side included (with sources shared by groups of rows, rows[i] must
 * be in i's group: NLP_EINVAL otherwise). 0 or NLP_ENOMEM. */
int nlp_cache_reorder(nlp_cache *c, const int32_t *rows);
/* The same for the decoded positions only, the source side staying: for
 * beam search, whose rows only ever take the state of rows that encoded the
 * same source. */
int nlp_cache_reorder_self(nlp_cache *c, const int32_t *rows);

/* Every row of dst continues row `row` of src: dst's positions become
 * src's (dst's own are forgotten), so that a context decoded once in a
 * one-row cache is continued in several rows (the choices of a question,
 * each scored after the same prompt). The keys and values are copied once,
 * into dst's row 0, and the other rows read them there through the table
 * beam search reorders (no copy per row until a pass of many new
 * positions needs each row's keys as one block). Both caches of the same
 * decoder-only model (gpt, llama); src's length at most dst's max_len.
 * 0, or NLP_EINVAL naming what does not match. */
int nlp_cache_share(nlp_cache *dst, const nlp_cache *src, int row);

/* transformer: runs the encoder over b->src [B,S] and stores every decoder
 * layer's cross-attention keys and values and the source padding mask in the
 * cache, whose length becomes 0. The cache's rows may be a multiple g of B:
 * then source i serves rows i·g .. i·g+g-1 (the beams of beam search), is
 * encoded once, and nlp_cache_reorder keeps rows within their source. */
int nlp_model_encode(nlp_model *m, const nlp_batch *b, nlp_cache *c);

/* Appends T new positions to every row and computes their logits
 * (nlp_model_logits: B·T rows): gpt b->ids [B,T], transformer b->tgt_in
 * [B,T] after nlp_model_encode. Positions continue from nlp_cache_len(c); the
 * result equals (up to rounding: products of few rows sum in another order,
 * nn/gemv.h) the corresponding rows of a full forward pass when no
 * transformer decoder input is the pad id (the full pass masks pad keys in
 * the decoder self-attention; decoding attends to every position it was
 * given, as the reference's cached decoding does). Dropout is off;
 * no loss, no backward. Errors: NLP_EINVAL (wrong B, no source encoded, bert),
 * NLP_EDATA (ids out of range, longer than the cache or max-positions). */
int nlp_model_decode(nlp_model *m, const nlp_batch *b, nlp_cache *c);

/* Parameters a configuration has (tied weights counted once), and the
 * multiply-adds of one training step of B×T tokens, for throughput figures:
 * 6·(parameters used in products)·tokens + 12·layers·C·T·tokens (attention). */
size_t nlp_model_param_count(const nlp_model *m);
/* The same from a configuration alone (nothing allocated but the names): 0
 * with the error set when the configuration is invalid. */
size_t nlp_model_config_param_count(const nlp_model_config *cfg);
double nlp_model_train_flops(const nlp_model *m, int B, int T);

#endif
