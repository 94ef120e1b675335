/*
 * config.h — the configuration of a model: architecture and sizes, built-in
 * presets, YAML files and overrides resolved into one validated struct, its
 * YAML dump, and the JSON forms found in checkpoints.
 *
 * Keys (YAML keys = the long option names later tools accept):
 *
 *   preset             tiny | small | base | big | t5-small | gpt2 | gpt2-medium | bert-base | smollm-135m
 *   arch               gpt | bert | transformer | llama    (encdec is accepted for transformer)
 *   vocab-size         vocabulary (transformer: target side)
 *   src-vocab-size     transformer: source vocabulary (= vocab-size when shared-vocab)
 *   d-model, heads, d-ff, layers
 *   kv-heads           gpt, llama: heads of keys and values (grouped-query attention; = heads
 *                      by default: multi-head)
 *   encoder-layers, decoder-layers                         transformer (layers sets both)
 *   max-positions      rows of the position table (longest sequence)
 *   type-vocab-size    bert: segment ids
 *   ln-eps             LayerNorm epsilon (llama: RMSNorm's)
 *   dropout            embeddings, residual branches (and the transformer FFN inside)
 *   attention-dropout  attention probabilities
 *   activation         relu | gelu | gelu-tanh | silu (llama: of the gate of its SwiGLU)
 *   norm               transformer: post (LN(x + f(x)), the paper) | pre (x + f(LN(x))) | rms
 *                      (pre-norm with RMSNorm, scale only: T5's; the final norms too)
 *   bias               transformer: biases in the linear layers (true; T5: false)
 *   ffn                transformer: dense (fc2(act(fc1 x)), default) | gated-gelu (T5 v1.1:
 *                      fc2(gelu(gate x) ⊙ up x), GELU's tanh form; activation gelu-tanh)
 *   positions          transformer: sinusoidal | learned | rope | relative; gpt: learned | rope
 *                      (llama: rope). relative: T5's relative position bias (nn/relpos.h), a table
 *                      of [buckets, heads] per stack, bidirectional buckets in the encoder, causal in
 *                      the decoder's self-attention, none in cross-attention; no absolute positions
 *   relative-buckets   relative: buckets of key offsets (32; at least 4)
 *   relative-max-distance  relative: offsets from it on share the last bucket (128; above buckets / 2)
 *   rope-theta         rope: the base θ of the rotary frequencies θ^(−2i/D) (10000)
 *   rope-layout        rope, gpt and transformer: half (pairs (i, i + D/2): HF LLaMA, GPT-NeoX) |
 *                      interleaved (pairs (2i, 2i+1): RoFormer, GPT-J); llama: half
 *   sliding-window     llama: the attention window of a Mistral-style model (0: none); sequences
 *                      are limited to it (within it windowed attention equals full attention)
 *   shared-vocab       transformer (boolean)
 *   tie-output         transformer, llama: output projection = the (target) embedding (boolean)
 *   pad-id, bos-id, eos-id, label-smoothing, smoothing-mode (uniform | others)   transformer
 *   init-std           gpt, bert: standard deviation of the N(0, σ) initialisation
 *   num-labels         gpt, bert: classes of the sequence-classification head (0: none)
 *   head               bert: what num-labels sizes: sequence (the classifier on the pooled [CLS],
 *                      HF BertForSequenceClassification and BertForMultipleChoice) | span (start
 *                      and end logits at every position, HF BertForQuestionAnswering's
 *                      qa_outputs: num-labels 2); the dump names it only when it is span
 *
 * Resolution: the architecture's defaults (those of `small`), then the preset,
 * then every setting in the order given (YAML files in order, then overrides);
 * the last value of a key wins. `preset` and `arch` are looked up across all
 * settings first, so their position does not matter. A key that does not exist,
 * does not apply to the architecture, or has a value of the wrong type or out
 * of range is NLP_EFORMAT naming the origin (file) and line.
 *
 * A tool whose YAML files mix its own options with model keys hands over
 * the entries for which nlp_model_config_is_key() is true (with their file
 * and line) and prints nlp_model_config_dump() under --dump-config.
 *
 * Presets: tiny (d 64, 4 heads, ff 256, 2 layers, vocab 512, 64 positions: unit
 * tests), small (d 256, 4 heads, ff 1024, 4 layers — 3+3 for the transformer,
 * vocab 8192, 256 positions), base and big (Vaswani et al. 2017: 6+6 layers,
 * d 512/1024, 8/16 heads, ff 2048/4096, dropout 0.1/0.3, shared vocab 37000,
 * label smoothing 0.1), gpt2 (124M: 12 layers, d 768, vocab 50257, 1024
 * positions), gpt2-medium (355M: 24 layers, d 1024, 16 heads), bert-base (12 layers, d 768, vocab 30522, 512 positions),
 * t5-small (transformer, T5's small: 6+6 layers, d 512, 8 heads, d-ff 2048, relative positions,
 * RMSNorm, no biases, ReLU dense FFN, shared vocab 32128, dropout 0.1, no label smoothing,
 * ln-eps 1e-6, 512 positions; --ffn gated-gelu for v1.1's feed-forward),
 * smollm-135m (llama: SmolLM-135M's shape, 30 layers, d 576, 9 heads, 3 KV heads,
 * d-ff 1536, vocab 49152, 2048 positions, tied output). With arch llama, tiny and
 * small have 2 KV heads, a tied output and d-ff 176 and 768 (LLaMA's 2/3 of 4d
 * rounded up: SwiGLU's three matrices hold as many weights as an MLP's two of 4d).
 *
 * The llama architecture is the GPT decoder with LLaMA's block: RMSNorm before
 * each sublayer and at the end, a SwiGLU feed-forward (gate, up, down), rotary
 * positions (half layout), grouped-query attention, no biases, HF LlamaForCausalLM
 * tensor names; every GPT path (language modelling, classification, decoding)
 * applies to it.
 *
 * Not here: training options (learning rate, steps: lib/train), the tools'
 * own options.
 */
#ifndef NLP_MODEL_CONFIG_H
#define NLP_MODEL_CONFIG_H

#include <stddef.h>

#include "base/config.h"
#include "base/mem.h"
#include "nn/act.h"
#include "nn/loss.h"

enum nlp_arch {
    NLP_ARCH_GPT = 0,
    NLP_ARCH_BERT = 1,
    NLP_ARCH_TRANSFORMER = 2,
    NLP_ARCH_LLAMA = 3,
};

/* Decoder-only language models: gpt and llama. */
static inline int nlp_arch_is_lm(enum nlp_arch a) { return a == NLP_ARCH_GPT || a == NLP_ARCH_LLAMA; }

/* What a bert model's head of num-labels outputs reads (config key head). */
enum nlp_head {
    NLP_HEAD_SEQUENCE = 0, /* one row of logits per sequence */
    NLP_HEAD_SPAN = 1,     /* start and end logits at every position (extractive QA) */
};

enum nlp_positions {
    NLP_POS_SINUSOIDAL = 0,
    NLP_POS_LEARNED = 1,
    NLP_POS_ROPE = 2, /* rotary (nn/rope.h): no table, queries and keys rotated */
    NLP_POS_RELATIVE = 3, /* transformer: T5's bucketed relative position bias (nn/relpos.h) */
};

enum nlp_ffn {
    NLP_FFN_DENSE = 0,      /* fc2(act(fc1 x)) */
    NLP_FFN_GATED_GELU = 1, /* T5 v1.1: fc2(gelu(gate x) ⊙ up x) */
};

typedef struct nlp_model_config {
    enum nlp_arch arch;
    char preset[16];      /* the preset it was built from, "" for none */
    int vocab_size;       /* transformer: target vocabulary */
    int src_vocab_size;   /* transformer */
    int d_model, heads, d_ff;
    int layers;           /* gpt, bert */
    int encoder_layers, decoder_layers;
    int max_positions;
    int type_vocab_size;  /* bert */
    double ln_eps;
    double dropout, attention_dropout;
    enum nlp_act activation;
    int pre_ln;           /* transformer; gpt and llama are always pre-LN, bert post-LN */
    int positions;        /* enum nlp_positions: transformer, gpt; bert learns them, llama rotates */
    int kv_heads;         /* gpt, llama: key/value heads (a divisor of heads); = heads otherwise */
    double rope_theta;    /* rotary positions */
    int rope_layout;      /* enum nlp_rope_layout */
    int sliding_window;   /* llama: 0, or the longest sequence (Mistral's attention window) */
    int bias;             /* transformer: the linear layers have biases (1) */
    int ffn;              /* transformer: enum nlp_ffn */
    int rel_buckets;      /* relative positions: buckets of key offsets (32) */
    int rel_max_distance; /* relative positions: the offset from which all share the last bucket (128) */
    int shared_vocab, tie_output;
    int pad_id, bos_id, eos_id;
    double label_smoothing;
    enum nlp_smoothing smoothing_mode;
    double init_std;
    int num_labels;       /* gpt, bert: classes of a sequence-classification head (0 = none: finetune adds it) */
    int head;             /* bert: enum nlp_head (span: num_labels 2) */
} nlp_model_config;

/* One key = value with where it came from: `origin` (a file name, or a text
 * such as "--set") and a 1-based line (0 = none) for messages. */
typedef struct nlp_setting {
    const char *key, *value, *origin;
    int line;
} nlp_setting;

/* Resolves settings (in precedence order, later wins) into *cfg and validates
 * it. Errors: NLP_EFORMAT "'origin' line N: ..." for a bad setting,
 * NLP_EINVAL for an inconsistent result (e.g. d-model not divisible by heads). */
int nlp_model_config_resolve(nlp_model_config *cfg, const nlp_setting *s, size_t n);

/* Convenience: preset (NULL = none), YAML files (parsed), then "key=value"
 * overrides (NULL-terminated list, may be NULL; origin "override"). */
int nlp_model_config_build(nlp_model_config *cfg, const char *preset, const nlp_config *files, size_t nfiles,
                           const char *const *overrides);

/* Only the architecture's defaults and a preset (NULL = none). */
int nlp_model_config_preset(nlp_model_config *cfg, const char *preset, enum nlp_arch arch);

/* Checks sizes and consistency: 0 or NLP_EINVAL with a message. */
int nlp_model_config_validate(const nlp_model_config *cfg);

/* 1 when every field is equal (the preset name included). */
int nlp_model_config_equal(const nlp_model_config *a, const nlp_model_config *b);

/* Appends the configuration as YAML: every key that applies to the
 * architecture, one per line, in the order of the list above; resolving the
 * dump gives back exactly the same struct. */
int nlp_model_config_dump(const nlp_model_config *cfg, nlp_buf *out);

/* 1 if `key` is a model configuration key (for tools routing their options). */
int nlp_model_config_is_key(const char *key);

/* "gpt", "bert", "transformer", "llama". */
const char *nlp_arch_name(enum nlp_arch a);

/* The longest sequence a model of cfg takes: max-positions with a position
 * table (learned or sinusoidal); with rotary positions, which need none, any
 * length (INT_MAX: they extrapolate, if not as well as within the trained
 * length), but no more than a sliding window. */
int nlp_model_config_max_len(const nlp_model_config *cfg);

/* The checkpoint form: `kind` ("gpt", "bert", "encdec": the reference's model
 * names) and a JSON object with the field names of the PyTorch reference
 * dataclasses (GPTConfig, BertConfig, EncDecConfig); rotary positions and
 * key/value heads add "pos", "rope_theta", "rope_layout", "n_kv_head". For
 * llama: kind "llama" and HF's LlamaConfig (config.json: model_type llama,
 * architectures LlamaForCausalLM), which HF transformers loads as it is. */
int nlp_model_config_to_json(const nlp_model_config *cfg, nlp_buf *json, const char **kind);

/* Reads a JSON config: the reference form above (kind given), or a
 * HuggingFace config.json (kind NULL: "model_type" gpt2, bert, llama or
 * mistral, else GPT-2 or BERT from the keys present when there is no
 * model_type; another model_type is NLP_EFORMAT naming it). Unknown keys are
 * ignored (HF configs carry many), but a llama/mistral config asking for what
 * this build does not compute is NLP_EFORMAT naming the key: rope_scaling
 * (other than null or type "default"), attention_bias or mlp_bias true, a
 * head_dim other than hidden_size / num_attention_heads, a hidden_act other
 * than silu, gelu, gelu_pytorch_tanh, relu. A missing
 * head count, which no tensor shape reveals, is that of the class the JSON
 * comes from (12 for GPT-2 and BERT, 8 for the reference's EncDecConfig);
 * other missing sizes take the architecture's defaults (the weights' shapes
 * then catch a mismatch). `origin` names the file in messages. NLP_EFORMAT on
 * malformed JSON or values. */
int nlp_model_config_from_json(nlp_model_config *cfg, const char *kind, const char *json, size_t len,
                               const char *origin);

/* Floats in the dump: the shortest decimal that reads back as the same double. */
int nlp_format_double(char *buf, size_t cap, double v);

#endif
