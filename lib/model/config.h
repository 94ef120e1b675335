/*
 * config.h — the configuration of a model: architecture and sizes, built-in
 * presets, YAML files and overrides resolved into one validated struct, its
 * YAML dump, and the JSON forms found in checkpoints.
 *
 * Keys (YAML keys = the long option names later tools accept):
 *
 *   preset             tiny | small | base | big | gpt2 | gpt2-medium | bert-base
 *   arch               gpt | bert | transformer            (encdec is accepted for transformer)
 *   vocab-size         vocabulary (transformer: target side)
 *   src-vocab-size     transformer: source vocabulary (= vocab-size when shared-vocab)
 *   d-model, heads, d-ff, layers
 *   encoder-layers, decoder-layers                         transformer (layers sets both)
 *   max-positions      rows of the position table (longest sequence)
 *   type-vocab-size    bert: segment ids
 *   ln-eps             LayerNorm epsilon
 *   dropout            embeddings, residual branches (and the transformer FFN inside)
 *   attention-dropout  attention probabilities
 *   activation         relu | gelu | gelu-tanh
 *   norm               transformer: post (LN(x + f(x)), the paper) | pre (x + f(LN(x)))
 *   positions          transformer: sinusoidal | learned
 *   shared-vocab, tie-output                               transformer (booleans)
 *   pad-id, bos-id, eos-id, label-smoothing, smoothing-mode (uniform | others)   transformer
 *   init-std           gpt, bert: standard deviation of the N(0, σ) initialisation
 *   num-labels         gpt, bert: classes of the sequence-classification head (0: none)
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
 * positions), gpt2-medium (355M: 24 layers, d 1024, 16 heads), bert-base (12 layers, d 768, vocab 30522, 512 positions).
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
    int pre_ln;           /* transformer; gpt is always pre-LN, bert post-LN */
    int learned_pos;      /* transformer; gpt and bert always learn positions */
    int shared_vocab, tie_output;
    int pad_id, bos_id, eos_id;
    double label_smoothing;
    enum nlp_smoothing smoothing_mode;
    double init_std;
    int num_labels;       /* gpt, bert: classes of a sequence-classification head (0 = none: finetune adds it) */
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

/* "gpt", "bert", "transformer". */
const char *nlp_arch_name(enum nlp_arch a);

/* The checkpoint form: `kind` ("gpt", "bert", "encdec": the reference's model
 * names) and a JSON object with the field names of the PyTorch reference
 * dataclasses (GPTConfig, BertConfig, EncDecConfig). */
int nlp_model_config_to_json(const nlp_model_config *cfg, nlp_buf *json, const char **kind);

/* Reads a JSON config: the reference form above (kind given), or a
 * HuggingFace config.json (kind NULL: GPT-2 or BERT from "model_type" or the
 * keys present). Unknown keys are ignored (HF configs carry many). A missing
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
