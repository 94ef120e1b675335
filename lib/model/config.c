/*
 * config.c — model configurations: keys, presets, resolution, YAML dump and
 * JSON forms. See config.h.
 */
#include "model/config.h"
#include "base/err.h"
#include "nn/rope.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum kt { KT_INT, KT_DOUBLE, KT_BOOL, KT_CHOICE };

#define A_GPT (1u << NLP_ARCH_GPT)
#define A_BERT (1u << NLP_ARCH_BERT)
#define A_TR (1u << NLP_ARCH_TRANSFORMER)
#define A_LLAMA (1u << NLP_ARCH_LLAMA)
#define A_ALL (A_GPT | A_BERT | A_TR | A_LLAMA)
#define A_LM (A_GPT | A_LLAMA)

static const char *const ARCHS[] = {"gpt", "bert", "transformer", "llama", NULL};
static const char *const ACTS[] = {"relu", "gelu", "gelu-tanh", "silu", NULL}; /* = enum nlp_act */
static const char *const NORMS[] = {"post", "pre", "rms", NULL};
static const char *const FFNS[] = {"dense", "gated-gelu", NULL}; /* = enum nlp_ffn */
static const char *const POSS[] = {"sinusoidal", "learned", "rope", "relative", NULL};
static const char *const ROPES[] = {"half", "interleaved", NULL};
static const char *const SMOOTHS[] = {"uniform", "others", NULL};
static const char *const HEADS[] = {"sequence", "span", NULL}; /* = enum nlp_head */

#define OFF(f) offsetof(nlp_model_config, f)

static const struct key {
    const char *name;
    enum kt type;
    size_t off;
    const char *const *choices;
    double lo, hi;
    unsigned arch;
} KEYS[] = {
    {"vocab-size", KT_INT, OFF(vocab_size), NULL, 1, 1 << 30, A_ALL},
    {"src-vocab-size", KT_INT, OFF(src_vocab_size), NULL, 1, 1 << 30, A_TR},
    {"d-model", KT_INT, OFF(d_model), NULL, 1, 1 << 16, A_ALL},
    {"heads", KT_INT, OFF(heads), NULL, 1, 1 << 10, A_ALL},
    {"kv-heads", KT_INT, OFF(kv_heads), NULL, 1, 1 << 10, A_LM},
    {"d-ff", KT_INT, OFF(d_ff), NULL, 1, 1 << 20, A_ALL},
    {"layers", KT_INT, OFF(layers), NULL, 1, 1 << 10, A_ALL},
    {"encoder-layers", KT_INT, OFF(encoder_layers), NULL, 1, 1 << 10, A_TR},
    {"decoder-layers", KT_INT, OFF(decoder_layers), NULL, 1, 1 << 10, A_TR},
    {"max-positions", KT_INT, OFF(max_positions), NULL, 1, 1 << 24, A_ALL},
    {"type-vocab-size", KT_INT, OFF(type_vocab_size), NULL, 1, 1 << 16, A_BERT},
    {"ln-eps", KT_DOUBLE, OFF(ln_eps), NULL, 0, 1, A_ALL},
    {"dropout", KT_DOUBLE, OFF(dropout), NULL, 0, 1, A_ALL},
    {"attention-dropout", KT_DOUBLE, OFF(attention_dropout), NULL, 0, 1, A_ALL},
    {"activation", KT_CHOICE, OFF(activation), ACTS, 0, 0, A_ALL},
    {"norm", KT_CHOICE, OFF(pre_ln), NORMS, 0, 0, A_TR},
    {"bias", KT_BOOL, OFF(bias), NULL, 0, 0, A_TR},
    {"ffn", KT_CHOICE, OFF(ffn), FFNS, 0, 0, A_TR},
    {"positions", KT_CHOICE, OFF(positions), POSS, 0, 0, A_TR | A_GPT},
    {"rope-theta", KT_DOUBLE, OFF(rope_theta), NULL, 0, 1e12, A_TR | A_LM},
    {"rope-layout", KT_CHOICE, OFF(rope_layout), ROPES, 0, 0, A_TR | A_GPT},
    {"relative-buckets", KT_INT, OFF(rel_buckets), NULL, 4, 1 << 16, A_TR},
    {"relative-max-distance", KT_INT, OFF(rel_max_distance), NULL, 3, 1 << 24, A_TR},
    {"sliding-window", KT_INT, OFF(sliding_window), NULL, 0, 1 << 24, A_LLAMA},
    {"shared-vocab", KT_BOOL, OFF(shared_vocab), NULL, 0, 0, A_TR},
    {"tie-output", KT_BOOL, OFF(tie_output), NULL, 0, 0, A_TR | A_LLAMA},
    {"pad-id", KT_INT, OFF(pad_id), NULL, 0, 1 << 30, A_TR},
    {"bos-id", KT_INT, OFF(bos_id), NULL, 0, 1 << 30, A_TR},
    {"eos-id", KT_INT, OFF(eos_id), NULL, 0, 1 << 30, A_TR},
    {"label-smoothing", KT_DOUBLE, OFF(label_smoothing), NULL, 0, 1, A_TR},
    {"smoothing-mode", KT_CHOICE, OFF(smoothing_mode), SMOOTHS, 0, 0, A_TR},
    {"init-std", KT_DOUBLE, OFF(init_std), NULL, 0, 10, A_LM | A_BERT},
    {"num-labels", KT_INT, OFF(num_labels), NULL, 0, 1 << 20, A_LM | A_BERT},
    {"head", KT_CHOICE, OFF(head), HEADS, 0, 0, A_BERT},
};
#define NKEYS (sizeof KEYS / sizeof KEYS[0])

/* Presets: settings applied after the architecture's defaults. arch_fixed < 0
 * means the preset fits every architecture (its entries may be per-arch). */
struct pentry {
    unsigned arch;
    const char *key, *value;
};
static const struct preset {
    const char *name;
    int arch_fixed;
    struct pentry e[16];
} PRESETS[] = {
    {"tiny", -1, {{A_ALL, "d-model", "64"}, {A_ALL, "heads", "4"}, {A_ALL, "d-ff", "256"}, {A_ALL, "layers", "2"},
                  {A_ALL, "vocab-size", "512"}, {A_ALL, "max-positions", "64"}, {A_LLAMA, "d-ff", "176"},
                  {A_LLAMA, "kv-heads", "2"}, {A_LLAMA, "tie-output", "true"}}},
    {"small", -1, {{A_ALL, "d-model", "256"}, {A_ALL, "heads", "4"}, {A_ALL, "d-ff", "1024"},
                   {A_LM | A_BERT, "layers", "4"}, {A_TR, "layers", "3"}, {A_ALL, "vocab-size", "8192"},
                   {A_ALL, "max-positions", "256"}, {A_LLAMA, "d-ff", "768"}, {A_LLAMA, "kv-heads", "2"},
                   {A_LLAMA, "tie-output", "true"}}},
    {"base", NLP_ARCH_TRANSFORMER,
     {{A_TR, "d-model", "512"}, {A_TR, "heads", "8"}, {A_TR, "d-ff", "2048"}, {A_TR, "layers", "6"},
      {A_TR, "vocab-size", "37000"}, {A_TR, "max-positions", "1024"}, {A_TR, "dropout", "0.1"},
      {A_TR, "label-smoothing", "0.1"}}},
    {"big", NLP_ARCH_TRANSFORMER,
     {{A_TR, "d-model", "1024"}, {A_TR, "heads", "16"}, {A_TR, "d-ff", "4096"}, {A_TR, "layers", "6"},
      {A_TR, "vocab-size", "37000"}, {A_TR, "max-positions", "1024"}, {A_TR, "dropout", "0.3"},
      {A_TR, "label-smoothing", "0.1"}}},
    {"t5-small", NLP_ARCH_TRANSFORMER, /* T5's small (Raffel et al. 2020) */
     {{A_TR, "d-model", "512"}, {A_TR, "heads", "8"}, {A_TR, "d-ff", "2048"}, {A_TR, "layers", "6"},
      {A_TR, "vocab-size", "32128"}, {A_TR, "max-positions", "512"}, {A_TR, "dropout", "0.1"},
      {A_TR, "label-smoothing", "0"}, {A_TR, "positions", "relative"}, {A_TR, "norm", "rms"},
      {A_TR, "bias", "false"}, {A_TR, "ln-eps", "1e-6"}}},
    {"gpt2", NLP_ARCH_GPT,
     {{A_GPT, "d-model", "768"}, {A_GPT, "heads", "12"}, {A_GPT, "d-ff", "3072"}, {A_GPT, "layers", "12"},
      {A_GPT, "vocab-size", "50257"}, {A_GPT, "max-positions", "1024"}}},
    {"gpt2-medium", NLP_ARCH_GPT,
     {{A_GPT, "d-model", "1024"}, {A_GPT, "heads", "16"}, {A_GPT, "d-ff", "4096"}, {A_GPT, "layers", "24"},
      {A_GPT, "vocab-size", "50257"}, {A_GPT, "max-positions", "1024"}}},
    {"bert-base", NLP_ARCH_BERT,
     {{A_BERT, "d-model", "768"}, {A_BERT, "heads", "12"}, {A_BERT, "d-ff", "3072"}, {A_BERT, "layers", "12"},
      {A_BERT, "vocab-size", "30522"}, {A_BERT, "max-positions", "512"}}},
    {"smollm-135m", NLP_ARCH_LLAMA, /* HuggingFaceTB/SmolLM-135M's config.json */
     {{A_LLAMA, "d-model", "576"}, {A_LLAMA, "heads", "9"}, {A_LLAMA, "kv-heads", "3"}, {A_LLAMA, "d-ff", "1536"},
      {A_LLAMA, "layers", "30"}, {A_LLAMA, "vocab-size", "49152"}, {A_LLAMA, "max-positions", "2048"},
      {A_LLAMA, "tie-output", "true"}, {A_LLAMA, "ln-eps", "1e-5"}, {A_LLAMA, "rope-theta", "10000"}}},
};
#define NPRESETS (sizeof PRESETS / sizeof PRESETS[0])

const char *nlp_arch_name(enum nlp_arch a) { return (unsigned)a < 4 ? ARCHS[a] : "?"; }

int nlp_model_config_max_len(const nlp_model_config *c)
{
    const int rope = c->arch == NLP_ARCH_LLAMA ||
                     (c->arch != NLP_ARCH_BERT && (c->positions == NLP_POS_ROPE || c->positions == NLP_POS_RELATIVE));
    if (!rope) return c->max_positions;
    return c->arch == NLP_ARCH_LLAMA && c->sliding_window > 0 ? c->sliding_window : INT_MAX;
}

static const struct key *find_key(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(KEYS[i].name, name) == 0) return &KEYS[i];
    return NULL;
}

int nlp_model_config_is_key(const char *key)
{
    return find_key(key) || strcmp(key, "preset") == 0 || strcmp(key, "arch") == 0;
}

static const struct preset *find_preset(const char *name)
{
    for (size_t i = 0; i < NPRESETS; i++)
        if (strcmp(PRESETS[i].name, name) == 0) return &PRESETS[i];
    return NULL;
}

static int where(const nlp_setting *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int where(const nlp_setting *s, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *o = s->origin ? s->origin : "config";
    if (s->line > 0) return nlp_error(NLP_EFORMAT, "'%s' line %d: %s", o, s->line, msg);
    return nlp_error(NLP_EFORMAT, "%s: %s", o, msg);
}

static int parse_arch(const char *v)
{
    if (!v) return -1;
    for (int i = 0; ARCHS[i]; i++)
        if (strcmp(v, ARCHS[i]) == 0) return i;
    if (strcmp(v, "encdec") == 0) return NLP_ARCH_TRANSFORMER;
    return -1;
}

static void defaults(nlp_model_config *c, enum nlp_arch arch)
{
    memset(c, 0, sizeof *c);
    c->arch = arch;
    c->vocab_size = c->src_vocab_size = 8192;
    c->d_model = 256;
    c->heads = 4;
    c->d_ff = 1024;
    c->layers = arch == NLP_ARCH_TRANSFORMER ? 3 : 4;
    c->encoder_layers = c->decoder_layers = 3;
    c->max_positions = 256;
    c->type_vocab_size = 2;
    c->dropout = 0.1;
    c->init_std = 0.02;
    c->rope_theta = 10000;
    c->rope_layout = NLP_ROPE_HALF;
    c->rel_buckets = 32;
    c->rel_max_distance = 128;
    c->bias = 1;
    switch (arch) {
    case NLP_ARCH_GPT:
        c->ln_eps = 1e-5;
        c->attention_dropout = 0.1;
        c->activation = NLP_ACT_GELU_TANH;
        c->pre_ln = 1;
        c->positions = NLP_POS_LEARNED;
        break;
    case NLP_ARCH_LLAMA: /* HF LlamaConfig's defaults, but for RMSNorm's eps (SmolLM's, LLaMA 1's) */
        c->ln_eps = 1e-5;
        c->dropout = 0;
        c->attention_dropout = 0;
        c->activation = NLP_ACT_SILU;
        c->pre_ln = 1;
        c->positions = NLP_POS_ROPE;
        break;
    case NLP_ARCH_BERT:
        c->ln_eps = 1e-12;
        c->attention_dropout = 0.1;
        c->activation = NLP_ACT_GELU;
        c->positions = NLP_POS_LEARNED;
        break;
    case NLP_ARCH_TRANSFORMER:
        c->ln_eps = 1e-5;
        c->attention_dropout = 0;
        c->activation = NLP_ACT_RELU;
        c->shared_vocab = c->tie_output = 1;
        c->pad_id = 0;
        c->bos_id = 1;
        c->eos_id = 2;
        c->label_smoothing = 0.1;
        c->smoothing_mode = NLP_SMOOTH_UNIFORM;
        break;
    }
}

/* Whether x is in the range of a KT_DOUBLE key: probabilities are below
 * their upper bound, ln-eps may be 1; ln-eps and init-std are above 0. The
 * one rule for settings and for whatever else filled the struct (JSON). */
static int double_in_range(const struct key *k, double x, int *open_lo, int *open_hi)
{
    *open_hi = strcmp(k->name, "ln-eps") != 0;
    *open_lo = strcmp(k->name, "ln-eps") == 0 || strcmp(k->name, "init-std") == 0 || strcmp(k->name, "rope-theta") == 0;
    return isfinite(x) && !(x < k->lo || x > k->hi || (*open_hi && x == k->hi) || (*open_lo && x == k->lo));
}

/* Sets one key (not preset/arch). */
static int set_key(nlp_model_config *c, const nlp_setting *s)
{
    const struct key *k = find_key(s->key);
    if (!k) return where(s, "unknown model key '%s'", s->key);
    if (!(k->arch & (1u << c->arch))) return where(s, "key '%s' does not apply to arch %s", s->key, ARCHS[c->arch]);
    const char *v = s->value;
    if (!v || !*v) return where(s, "key '%s' needs a value", s->key);
    char *end;
    switch (k->type) {
    case KT_INT: {
        errno = 0;
        long x = strtol(v, &end, 10);
        if (errno || *end || end == v) return where(s, "'%s' expects an integer, got '%s'", s->key, v);
        if (x < k->lo || x > k->hi)
            return where(s, "'%s' must be between %.0f and %.0f, got %ld", s->key, k->lo, k->hi, x);
        *(int *)((char *)c + k->off) = (int)x;
        if (strcmp(s->key, "layers") == 0) c->encoder_layers = c->decoder_layers = (int)x;
        return NLP_OK;
    }
    case KT_DOUBLE: {
        errno = 0;
        double x = strtod(v, &end);
        if (errno || *end || end == v || !isfinite(x)) return where(s, "'%s' expects a number, got '%s'", s->key, v);
        int open_lo, open_hi;
        if (!double_in_range(k, x, &open_lo, &open_hi))
            return where(s, "'%s' must be in %s%g, %g%s, got %s", s->key, open_lo ? "(" : "[", k->lo, k->hi,
                         open_hi ? ")" : "]", v);
        *(double *)((char *)c + k->off) = x;
        return NLP_OK;
    }
    case KT_BOOL: {
        int b = nlp_parse_bool(v);
        if (b < 0) return where(s, "'%s' expects true or false, got '%s'", s->key, v);
        *(int *)((char *)c + k->off) = b;
        return NLP_OK;
    }
    case KT_CHOICE:
        for (int i = 0; k->choices[i]; i++)
            if (strcmp(v, k->choices[i]) == 0) {
                *(int *)((char *)c + k->off) = i;
                return NLP_OK;
            }
        {
            char list[200] = "";
            for (int i = 0; k->choices[i]; i++) {
                strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, k->choices[i], sizeof list - strlen(list) - 1);
            }
            return where(s, "'%s' must be one of %s, got '%s'", s->key, list, v);
        }
    }
    return NLP_OK;
}

/* Values that follow from others: one vocabulary when shared, layers for
 * gpt/bert; key/value heads = heads unless grouped; the rotary settings at
 * their defaults without rotary positions (they do not apply). */
static void normalise(nlp_model_config *c)
{
    if (c->arch != NLP_ARCH_TRANSFORMER || c->shared_vocab) c->src_vocab_size = c->vocab_size;
    if (c->arch == NLP_ARCH_TRANSFORMER) c->layers = c->encoder_layers;
    else c->encoder_layers = c->decoder_layers = c->layers;
    if (!nlp_arch_is_lm(c->arch) || c->kv_heads <= 0) c->kv_heads = c->heads;
    if (c->arch == NLP_ARCH_LLAMA) c->positions = NLP_POS_ROPE, c->rope_layout = NLP_ROPE_HALF;
    if (c->arch == NLP_ARCH_BERT) c->positions = NLP_POS_LEARNED;
    if (c->positions != NLP_POS_ROPE) c->rope_theta = 10000, c->rope_layout = NLP_ROPE_HALF;
    if (c->positions != NLP_POS_RELATIVE) c->rel_buckets = 32, c->rel_max_distance = 128;
    if (c->arch != NLP_ARCH_TRANSFORMER) c->bias = 1, c->ffn = NLP_FFN_DENSE;
    if (c->ffn == NLP_FFN_GATED_GELU) c->activation = NLP_ACT_GELU_TANH;
    if (c->arch != NLP_ARCH_LLAMA) c->sliding_window = 0;
}

static int apply_preset(nlp_model_config *c, const struct preset *p)
{
    for (int i = 0; i < 16 && p->e[i].key; i++) {
        if (!(p->e[i].arch & (1u << c->arch))) continue;
        nlp_setting s = {p->e[i].key, p->e[i].value, "preset", 0};
        int rc = set_key(c, &s);
        if (rc) return rc;
    }
    snprintf(c->preset, sizeof c->preset, "%s", p->name);
    return NLP_OK;
}

int nlp_model_config_preset(nlp_model_config *cfg, const char *preset, enum nlp_arch arch)
{
    const struct preset *p = NULL;
    if (preset && !(p = find_preset(preset))) return nlp_error(NLP_EINVAL, "unknown preset '%s'", preset);
    if (p && p->arch_fixed >= 0) arch = (enum nlp_arch)p->arch_fixed;
    defaults(cfg, arch);
    int rc = p ? apply_preset(cfg, p) : NLP_OK;
    normalise(cfg);
    return rc ? rc : nlp_model_config_validate(cfg);
}

int nlp_model_config_resolve(nlp_model_config *cfg, const nlp_setting *s, size_t n)
{
    const nlp_setting *ps = NULL, *as = NULL, *src = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s[i].key, "preset") == 0) ps = &s[i];
        else if (strcmp(s[i].key, "arch") == 0) as = &s[i];
    }
    const struct preset *p = NULL;
    if (ps && ps->value && *ps->value && !(p = find_preset(ps->value))) {
        char list[200] = "";
        for (size_t i = 0; i < NPRESETS; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, PRESETS[i].name, sizeof list - strlen(list) - 1);
        }
        return where(ps, "unknown preset '%s' (presets: %s)", ps->value, list);
    }
    int arch = p && p->arch_fixed >= 0 ? p->arch_fixed : NLP_ARCH_GPT;
    if (as) {
        int a = parse_arch(as->value);
        if (a < 0) return where(as, "'arch' must be one of gpt, bert, transformer, llama, got '%s'", as->value ? as->value : "");
        if (p && p->arch_fixed >= 0 && a != p->arch_fixed)
            return where(as, "preset '%s' is a %s model, not %s", p->name, ARCHS[p->arch_fixed], ARCHS[a]);
        arch = a;
    }
    defaults(cfg, (enum nlp_arch)arch);
    int rc = p ? apply_preset(cfg, p) : NLP_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        if (&s[i] == ps || &s[i] == as || strcmp(s[i].key, "preset") == 0 || strcmp(s[i].key, "arch") == 0) continue;
        rc = set_key(cfg, &s[i]);
        if (strcmp(s[i].key, "src-vocab-size") == 0) src = &s[i];
    }
    if (rc) return rc;
    /* the rotary settings apply to rotary positions only: one given for a
     * model without them is a mistake, not something to drop silently */
    for (size_t i = 0; i < n && cfg->positions != NLP_POS_ROPE; i++)
        if (strcmp(s[i].key, "rope-theta") == 0 || strcmp(s[i].key, "rope-layout") == 0)
            return where(&s[i], "'%s' applies to rotary positions (positions: rope), not %s ones", s[i].key,
                         POSS[cfg->positions]);
    for (size_t i = 0; i < n && cfg->ffn == NLP_FFN_GATED_GELU; i++)
        if (strcmp(s[i].key, "activation") == 0 && strcmp(s[i].value ? s[i].value : "", "gelu-tanh") != 0)
            return where(&s[i], "'activation' %s does not apply to ffn gated-gelu (its GELU is the tanh form)",
                         s[i].value ? s[i].value : "");
    for (size_t i = 0; i < n && cfg->positions != NLP_POS_RELATIVE; i++)
        if (strcmp(s[i].key, "relative-buckets") == 0 || strcmp(s[i].key, "relative-max-distance") == 0)
            return where(&s[i], "'%s' applies to relative positions (positions: relative), not %s ones", s[i].key,
                         POSS[cfg->positions]);
    if (cfg->arch == NLP_ARCH_TRANSFORMER && cfg->shared_vocab && src && cfg->src_vocab_size != cfg->vocab_size)
        return where(src, "src-vocab-size %d differs from vocab-size %d but shared-vocab is true", cfg->src_vocab_size,
                     cfg->vocab_size);
    normalise(cfg);
    return nlp_model_config_validate(cfg);
}

int nlp_model_config_build(nlp_model_config *cfg, const char *preset, const nlp_config *files, size_t nfiles,
                           const char *const *overrides)
{
    size_t n = preset ? 1 : 0, k = 0;
    for (size_t f = 0; f < nfiles; f++) n += files[f].n;
    for (size_t i = 0; overrides && overrides[i]; i++) n++;
    nlp_setting *s = nlp_calloc(n ? n : 1, sizeof *s);
    char **own = nlp_calloc(n ? n : 1, sizeof *own);
    if (!s || !own) {
        free(s);
        free(own);
        return NLP_ENOMEM;
    }
    int rc = NLP_OK;
    if (preset) s[k++] = (nlp_setting){"preset", preset, "preset", 0};
    for (size_t f = 0; f < nfiles; f++)
        for (size_t i = 0; i < files[f].n; i++)
            s[k++] = (nlp_setting){files[f].e[i].key, files[f].e[i].value, files[f].path, files[f].e[i].line};
    for (size_t i = 0; overrides && overrides[i] && !rc; i++) {
        const char *eq = strchr(overrides[i], '=');
        if (!eq) {
            rc = nlp_error(NLP_EINVAL, "override '%s' is not KEY=VALUE", overrides[i]);
            break;
        }
        own[i] = nlp_strndup(overrides[i], (size_t)(eq - overrides[i]));
        if (!own[i]) {
            rc = NLP_ENOMEM;
            break;
        }
        s[k++] = (nlp_setting){own[i], eq + 1, "override", 0};
    }
    if (!rc) rc = nlp_model_config_resolve(cfg, s, k);
    for (size_t i = 0; i < n; i++) free(own[i]);
    free(own);
    free(s);
    return rc;
}

int nlp_model_config_validate(const nlp_model_config *c)
{
    for (size_t i = 0; i < NKEYS; i++) { /* the ranges of the keys, whatever filled the struct */
        const struct key *k = &KEYS[i];
        if (k->type == KT_DOUBLE && (k->arch & (1u << c->arch))) {
            /* a configuration from JSON must resolve again from its own dump */
            double x = *(const double *)((const char *)c + k->off);
            int open_lo, open_hi;
            if (!double_in_range(k, x, &open_lo, &open_hi))
                return nlp_error(NLP_EINVAL, "%s must be in %s%g, %g%s, got %g", k->name, open_lo ? "(" : "[", k->lo,
                                 k->hi, open_hi ? ")" : "]", x);
            continue;
        }
        if (k->type != KT_INT || !(k->arch & (1u << c->arch))) continue;
        if (c->arch == NLP_ARCH_TRANSFORMER && strcmp(k->name, "layers") == 0) continue; /* = encoder-layers */
        int v = *(const int *)((const char *)c + k->off);
        if (v < k->lo || v > k->hi)
            return nlp_error(NLP_EINVAL, "%s must be between %.0f and %.0f, got %d", k->name, k->lo, k->hi, v);
    }
    if (c->d_model % c->heads)
        return nlp_error(NLP_EINVAL, "d-model %d is not divisible by heads %d", c->d_model, c->heads);
    if (c->kv_heads < 1 || c->heads % c->kv_heads)
        return nlp_error(NLP_EINVAL, "heads %d is not a multiple of kv-heads %d", c->heads, c->kv_heads);
    if (c->positions == NLP_POS_ROPE && (c->d_model / c->heads) % 2)
        return nlp_error(NLP_EINVAL, "rotary positions need an even head size, got %d (d-model %d / heads %d)",
                         c->d_model / c->heads, c->d_model, c->heads);
    if ((unsigned)c->positions > NLP_POS_RELATIVE || (unsigned)c->rope_layout > NLP_ROPE_INTERLEAVED)
        return nlp_error(NLP_EINVAL, "unknown positions or rope layout");
    if ((unsigned)c->head > NLP_HEAD_SPAN) return nlp_error(NLP_EINVAL, "unknown head");
    if ((unsigned)c->ffn > NLP_FFN_GATED_GELU || (unsigned)c->pre_ln > 2) return nlp_error(NLP_EINVAL, "unknown ffn or norm");
    if (c->ffn == NLP_FFN_GATED_GELU && c->activation != NLP_ACT_GELU_TANH)
        return nlp_error(NLP_EINVAL, "ffn gated-gelu has the activation gelu-tanh");
    if (c->head == NLP_HEAD_SPAN && c->arch != NLP_ARCH_BERT)
        return nlp_error(NLP_EINVAL, "head span is bert's (extractive question answering), not %s's", ARCHS[c->arch]);
    if (c->head == NLP_HEAD_SPAN && c->num_labels != 2)
        return nlp_error(NLP_EINVAL, "head span has 2 outputs (start and end), so num-labels 2, not %d", c->num_labels);
    if (c->arch == NLP_ARCH_GPT && (c->positions == NLP_POS_SINUSOIDAL || c->positions == NLP_POS_RELATIVE))
        return nlp_error(NLP_EINVAL, "gpt positions are learned or rope, not %s", POSS[c->positions]);
    if (c->positions == NLP_POS_RELATIVE && 2 * c->rel_max_distance <= c->rel_buckets)
        return nlp_error(NLP_EINVAL, "relative-max-distance %d must be above relative-buckets / 2 (%d)",
                         c->rel_max_distance, c->rel_buckets / 2);
    if (c->arch == NLP_ARCH_LLAMA && (c->positions != NLP_POS_ROPE || c->rope_layout != NLP_ROPE_HALF))
        return nlp_error(NLP_EINVAL, "llama positions are rotary, in the half layout");
    if (c->arch == NLP_ARCH_TRANSFORMER) {
        if (c->positions == NLP_POS_SINUSOIDAL && c->d_model % 2)
            return nlp_error(NLP_EINVAL, "sinusoidal positions need an even d-model, got %d", c->d_model);
        const char *nm[] = {"pad-id", "bos-id", "eos-id"};
        int id[] = {c->pad_id, c->bos_id, c->eos_id};
        for (int i = 0; i < 3; i++)
            if (id[i] >= c->vocab_size)
                return nlp_error(NLP_EINVAL, "%s %d is outside the vocabulary (vocab-size %d)", nm[i], id[i], c->vocab_size);
        if (c->shared_vocab && c->src_vocab_size != c->vocab_size)
            return nlp_error(NLP_EINVAL, "shared-vocab needs src-vocab-size == vocab-size (%d, %d)", c->src_vocab_size,
                             c->vocab_size);
        if (c->pad_id >= c->src_vocab_size)
            return nlp_error(NLP_EINVAL, "pad-id %d is outside the source vocabulary (%d)", c->pad_id, c->src_vocab_size);
        if (c->smoothing_mode == NLP_SMOOTH_OTHERS && c->vocab_size < 2)
            return nlp_error(NLP_EINVAL, "smoothing-mode others needs at least 2 classes");
    }
    if (c->dropout < 0 || c->dropout >= 1 || c->attention_dropout < 0 || c->attention_dropout >= 1)
        return nlp_error(NLP_EINVAL, "dropout must be in [0, 1)");
    if (!(c->ln_eps > 0)) return nlp_error(NLP_EINVAL, "ln-eps must be positive");
    return NLP_OK;
}

int nlp_model_config_equal(const nlp_model_config *a, const nlp_model_config *b)
{
    return a->arch == b->arch && strcmp(a->preset, b->preset) == 0 && a->vocab_size == b->vocab_size &&
           a->src_vocab_size == b->src_vocab_size && a->d_model == b->d_model && a->heads == b->heads &&
           a->d_ff == b->d_ff && a->layers == b->layers && a->encoder_layers == b->encoder_layers &&
           a->decoder_layers == b->decoder_layers && a->max_positions == b->max_positions &&
           a->type_vocab_size == b->type_vocab_size && a->ln_eps == b->ln_eps && a->dropout == b->dropout &&
           a->attention_dropout == b->attention_dropout && a->activation == b->activation && a->pre_ln == b->pre_ln &&
           a->positions == b->positions && a->kv_heads == b->kv_heads && a->rope_theta == b->rope_theta &&
           a->rope_layout == b->rope_layout && a->sliding_window == b->sliding_window &&
           a->rel_buckets == b->rel_buckets && a->rel_max_distance == b->rel_max_distance && a->bias == b->bias &&
           a->ffn == b->ffn &&
           a->shared_vocab == b->shared_vocab && a->tie_output == b->tie_output &&
           a->pad_id == b->pad_id && a->bos_id == b->bos_id && a->eos_id == b->eos_id &&
           a->label_smoothing == b->label_smoothing && a->smoothing_mode == b->smoothing_mode &&
           a->init_std == b->init_std && a->num_labels == b->num_labels && a->head == b->head;
}

int nlp_format_double(char *buf, size_t cap, double v)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        if (strtod(buf, NULL) == v) break;
    }
    return NLP_OK;
}

int nlp_model_config_dump(const nlp_model_config *c, nlp_buf *out)
{
    int rc = NLP_OK;
    if (c->preset[0]) rc = nlp_buf_printf(out, "preset: %s\n", c->preset);
    if (!rc) rc = nlp_buf_printf(out, "arch: %s\n", ARCHS[c->arch]);
    for (size_t i = 0; i < NKEYS && !rc; i++) {
        const struct key *k = &KEYS[i];
        if (!(k->arch & (1u << c->arch))) continue;
        if (c->arch == NLP_ARCH_TRANSFORMER && strcmp(k->name, "layers") == 0) continue;
        if (c->arch == NLP_ARCH_TRANSFORMER && c->shared_vocab && strcmp(k->name, "src-vocab-size") == 0) continue;
        if (c->positions != NLP_POS_ROPE && strncmp(k->name, "rope-", 5) == 0) continue;
        if (c->positions != NLP_POS_RELATIVE && strncmp(k->name, "relative-", 9) == 0) continue;
        if (c->head == NLP_HEAD_SEQUENCE && strcmp(k->name, "head") == 0) continue; /* the default, unnamed */
        if (c->bias && strcmp(k->name, "bias") == 0) continue;                   /* defaults, unnamed */
        if (c->ffn == NLP_FFN_DENSE && strcmp(k->name, "ffn") == 0) continue;
        const void *f = (const char *)c + k->off;
        char num[40];
        switch (k->type) {
        case KT_INT: rc = nlp_buf_printf(out, "%s: %d\n", k->name, *(const int *)f); break;
        case KT_DOUBLE:
            nlp_format_double(num, sizeof num, *(const double *)f);
            rc = nlp_buf_printf(out, "%s: %s\n", k->name, num);
            break;
        case KT_BOOL: rc = nlp_buf_printf(out, "%s: %s\n", k->name, *(const int *)f ? "true" : "false"); break;
        case KT_CHOICE: rc = nlp_buf_printf(out, "%s: %s\n", k->name, k->choices[*(const int *)f]); break;
        }
    }
    return rc;
}

// --- JSON forms

int nlp_model_config_to_json(const nlp_model_config *c, nlp_buf *j, const char **kind)
{
    char eps[40], dr[40], ls[40], nl[40] = "";
    if (c->num_labels > 0) snprintf(nl, sizeof nl, ", \"num_labels\": %d", c->num_labels);
    nlp_format_double(eps, sizeof eps, c->ln_eps);
    nlp_format_double(dr, sizeof dr, c->dropout);
    nlp_format_double(ls, sizeof ls, c->label_smoothing);
    /* rotary positions and grouped keys (our reference's names) */
    char rope[160] = "", kv[40] = "";
    if (c->positions == NLP_POS_ROPE && c->arch != NLP_ARCH_LLAMA) {
        char th[40];
        nlp_format_double(th, sizeof th, c->rope_theta);
        snprintf(rope, sizeof rope, ", \"rope_theta\": %s, \"rope_layout\": \"%s\"", th, ROPES[c->rope_layout]);
    }
    if (c->kv_heads != c->heads) snprintf(kv, sizeof kv, ", \"n_kv_head\": %d", c->kv_heads);
    switch (c->arch) {
    case NLP_ARCH_GPT:
        *kind = "gpt";
        return nlp_buf_printf(j,
                              "{\"vocab_size\": %d, \"n_positions\": %d, \"n_embd\": %d, \"n_layer\": %d, "
                              "\"n_head\": %d, \"layer_norm_epsilon\": %s, \"dropout\": %s%s%s%s%s}",
                              c->vocab_size, c->max_positions, c->d_model, c->layers, c->heads, eps, dr, nl,
                              *rope ? ", \"pos\": \"rope\"" : "", rope, kv);
    case NLP_ARCH_LLAMA: {
        /* HF's LlamaConfig (MistralConfig with a sliding window), as config.json holds it */
        *kind = "llama";
        static const char *const act[] = {"relu", "gelu", "gelu_pytorch_tanh", "silu", "tanh"};
        char th[40], init[40], adr[40], sw[48] = "";
        nlp_format_double(th, sizeof th, c->rope_theta);
        nlp_format_double(init, sizeof init, c->init_std);
        nlp_format_double(adr, sizeof adr, c->attention_dropout);
        const int mistral = c->sliding_window > 0;
        if (mistral) snprintf(sw, sizeof sw, ", \"sliding_window\": %d", c->sliding_window);
        return nlp_buf_printf(
            j,
            "{\"architectures\": [\"%s\"], \"model_type\": \"%s\", \"vocab_size\": %d, \"hidden_size\": %d, "
            "\"intermediate_size\": %d, \"num_hidden_layers\": %d, \"num_attention_heads\": %d, "
            "\"num_key_value_heads\": %d, \"head_dim\": %d, \"max_position_embeddings\": %d, \"rms_norm_eps\": %s, "
            "\"rope_theta\": %s, \"rope_scaling\": null, \"tie_word_embeddings\": %s, \"hidden_act\": \"%s\", "
            "\"attention_bias\": false, \"mlp_bias\": false, \"attention_dropout\": %s, \"initializer_range\": %s, "
            "\"torch_dtype\": \"float32\", \"dropout\": %s%s%s}",
            mistral ? "MistralForCausalLM" : "LlamaForCausalLM", mistral ? "mistral" : "llama", c->vocab_size,
            c->d_model, c->d_ff, c->layers, c->heads, c->kv_heads, c->d_model / c->heads, c->max_positions, eps, th,
            c->tie_output ? "true" : "false", act[c->activation], adr, init, dr, sw, nl);
    }
    case NLP_ARCH_BERT:
        *kind = "bert";
        return nlp_buf_printf(j,
                              "{\"vocab_size\": %d, \"hidden_size\": %d, \"num_hidden_layers\": %d, "
                              "\"num_attention_heads\": %d, \"intermediate_size\": %d, "
                              "\"max_position_embeddings\": %d, \"type_vocab_size\": %d, \"layer_norm_eps\": %s, "
                              "\"dropout\": %s%s%s}",
                              c->vocab_size, c->d_model, c->layers, c->heads, c->d_ff, c->max_positions,
                              c->type_vocab_size, eps, dr, nl, c->head == NLP_HEAD_SPAN ? ", \"head\": \"span\"" : "");
    case NLP_ARCH_TRANSFORMER: {
        *kind = "encdec";
        if (c->positions == NLP_POS_RELATIVE)
            snprintf(rope, sizeof rope, ", \"relative_buckets\": %d, \"relative_max_distance\": %d", c->rel_buckets,
                     c->rel_max_distance);
        /* T5's choices, named only when taken (the reference's EncDecConfig has none of them) */
        if (c->pre_ln == 2) strncat(rope, ", \"norm\": \"rms\"", sizeof rope - strlen(rope) - 1);
        if (!c->bias) strncat(rope, ", \"bias\": false", sizeof rope - strlen(rope) - 1);
        if (c->ffn) strncat(rope, ", \"ffn\": \"gated-gelu\"", sizeof rope - strlen(rope) - 1);
        /* the reference has one dropout; a different attention dropout
         * (our presets: none) travels in a key of its own */
        char adr[64] = "";
        if (c->attention_dropout != c->dropout) {
            char v[32];
            nlp_format_double(v, sizeof v, c->attention_dropout);
            snprintf(adr, sizeof adr, ", \"attention_dropout\": %s", v);
        }
        return nlp_buf_printf(
            j,
            "{\"src_vocab\": %d, \"tgt_vocab\": %d, \"shared_vocab\": %s, \"tie_output\": %s, \"d_model\": %d, "
            "\"n_heads\": %d, \"d_ff\": %d, \"n_enc\": %d, \"n_dec\": %d, \"max_len\": %d, \"pre_ln\": %s, "
            "\"pos\": \"%s\", \"pad_id\": %d, \"bos_id\": %d, \"eos_id\": %d, \"label_smoothing\": %s, "
            "\"smoothing_mode\": \"%s\", \"ln_eps\": %s, \"dropout\": %s%s%s}",
            c->src_vocab_size, c->vocab_size, c->shared_vocab ? "true" : "false", c->tie_output ? "true" : "false",
            c->d_model, c->heads, c->d_ff, c->encoder_layers, c->decoder_layers, c->max_positions,
            c->pre_ln ? "true" : "false", POSS[c->positions], c->pad_id, c->bos_id, c->eos_id, ls,
            SMOOTHS[c->smoothing_mode], eps, dr, adr, rope);
    }
    }
    return NLP_EINVAL;
}

/* Reads an optional member into an int / double / bool; returns NLP_EFORMAT on a wrong type. */
static int j_int(json_t *o, const char *k, int *out, const char *origin)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) return NLP_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (1 << 30))
        return nlp_error(NLP_EFORMAT, "'%s': config key '%s' is not a non-negative integer", origin, k);
    *out = (int)json_integer_value(v);
    return NLP_OK;
}

static int j_dbl(json_t *o, const char *k, double *out, const char *origin)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) return NLP_OK;
    if (!json_is_number(v)) return nlp_error(NLP_EFORMAT, "'%s': config key '%s' is not a number", origin, k);
    *out = json_number_value(v);
    return NLP_OK;
}

static int j_bool(json_t *o, const char *k, int *out, const char *origin)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) return NLP_OK;
    if (!json_is_boolean(v)) return nlp_error(NLP_EFORMAT, "'%s': config key '%s' is not true or false", origin, k);
    *out = json_is_true(v);
    return NLP_OK;
}

static int j_choice(json_t *o, const char *k, int *out, const char *const *names, const char *const *alias,
                    const int *alias_val, const char *origin)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) return NLP_OK;
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        for (int i = 0; names && names[i]; i++)
            if (strcmp(s, names[i]) == 0) return *out = i, NLP_OK;
        for (int i = 0; alias && alias[i]; i++)
            if (strcmp(s, alias[i]) == 0) return *out = alias_val[i], NLP_OK;
    }
    return nlp_error(NLP_EFORMAT, "'%s': config key '%s' has an unsupported value", origin, k);
}

/* The classification head's size: "num_labels" (ours), else the size of a
 * HuggingFace *ForSequenceClassification config's "id2label". */
static int j_labels(json_t *o, int *out, const char *origin)
{
    int rc = j_int(o, "num_labels", out, origin);
    json_t *m = json_object_get(o, "id2label");
    if (!rc && !json_object_get(o, "num_labels") && json_is_object(m)) *out = (int)json_object_size(m);
    return rc;
}

/* 1 when HF's "architectures" list names `name`. */
static int has_architecture(json_t *o, const char *name)
{
    json_t *a = json_object_get(o, "architectures"), *v;
    size_t i;
    if (!json_is_array(a)) return 0;
    json_array_foreach(a, i, v) if (json_is_string(v) && strcmp(json_string_value(v), name) == 0) return 1;
    return 0;
}

/* A false or absent boolean: `key` true asks for what this build does not compute. */
static int j_not_true(json_t *o, const char *k, const char *what, const char *origin)
{
    int v = 0, rc = j_bool(o, k, &v, origin);
    if (!rc && v) rc = nlp_error(NLP_EFORMAT, "'%s': config key '%s' is true: %s are not implemented", origin, k, what);
    return rc;
}

/* HF's LlamaConfig (MistralConfig), with its class defaults for absent keys
 * (a head count in particular: no tensor shape holds it). */
static int llama_json(nlp_model_config *c, json_t *o, int mistral, const char *origin)
{
    static const char *const names[] = {"relu", "gelu", "gelu_pytorch_tanh", "silu", NULL};
    static const char *const alias[] = {"swish", "gelu_new", "gelu_fast", NULL};
    static const int alias_val[] = {NLP_ACT_SILU, NLP_ACT_GELU_TANH, NLP_ACT_GELU_TANH};
    c->vocab_size = 32000, c->d_model = 4096, c->d_ff = 11008, c->layers = 32;
    c->max_positions = 2048, c->ln_eps = 1e-6, c->tie_output = 0;
    int rc;
    if ((rc = j_int(o, "vocab_size", &c->vocab_size, origin)) || (rc = j_int(o, "hidden_size", &c->d_model, origin)) ||
        (rc = j_int(o, "intermediate_size", &c->d_ff, origin)) ||
        (rc = j_int(o, "num_hidden_layers", &c->layers, origin)) ||
        (rc = j_int(o, "num_attention_heads", &c->heads, origin)) ||
        (rc = j_int(o, "num_key_value_heads", &c->kv_heads, origin)) ||
        (rc = j_int(o, "max_position_embeddings", &c->max_positions, origin)) ||
        (rc = j_dbl(o, "rms_norm_eps", &c->ln_eps, origin)) || (rc = j_dbl(o, "rope_theta", &c->rope_theta, origin)) ||
        (rc = j_bool(o, "tie_word_embeddings", &c->tie_output, origin)) ||
        (rc = j_choice(o, "hidden_act", (int *)&c->activation, names, alias, alias_val, origin)) ||
        (rc = j_dbl(o, "initializer_range", &c->init_std, origin)) ||
        (rc = j_not_true(o, "attention_bias", "biases of the attention projections", origin)) ||
        (rc = j_not_true(o, "mlp_bias", "biases of the feed-forward projections", origin)))
        return rc;
    /* rotary positions as computed here, or nothing: a scaled rope would give wrong answers */
    json_t *rs = json_object_get(o, "rope_scaling");
    if (rs && !json_is_null(rs)) {
        json_t *t = json_is_object(rs) ? json_object_get(rs, "rope_type") : NULL;
        if (!t && json_is_object(rs)) t = json_object_get(rs, "type");
        const char *tn = json_is_string(t) ? json_string_value(t) : NULL;
        if (!tn || strcmp(tn, "default") != 0)
            return nlp_error(NLP_EFORMAT, "'%s': config key 'rope_scaling'%s%s%s: scaled rotary positions are not "
                             "implemented (only null or type 'default')", origin, tn ? " is of type '" : "",
                             tn ? tn : "", tn ? "'" : "");
    }
    json_t *hd = json_object_get(o, "head_dim");
    if (hd && !json_is_null(hd)) {
        int d = 0;
        if ((rc = j_int(o, "head_dim", &d, origin))) return rc;
        if (c->heads > 0 && d != c->d_model / c->heads)
            return nlp_error(NLP_EFORMAT, "'%s': config key 'head_dim' is %d, not hidden_size / num_attention_heads = "
                             "%d: heads of another size are not implemented", origin, d, c->heads ? c->d_model / c->heads : 0);
    }
    /* Mistral: attention within a window (MistralConfig's default 4096; null: none) */
    json_t *sw = json_object_get(o, "sliding_window");
    if (mistral && !sw) c->sliding_window = 4096;
    if (sw && !json_is_null(sw) && (rc = j_int(o, "sliding_window", &c->sliding_window, origin))) return rc;
    return NLP_OK;
}

int nlp_model_config_from_json(nlp_model_config *c, const char *kind, const char *text, size_t len,
                               const char *origin)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    if (!o) return nlp_error(NLP_EFORMAT, "'%s': bad JSON config at line %d, column %d: %s", origin, je.line, je.column, je.text);
    int rc = NLP_OK;
    if (!json_is_object(o)) {
        rc = nlp_error(NLP_EFORMAT, "'%s': the config is not a JSON object", origin);
        goto out;
    }
    int arch = -1, mistral = 0;
    if (kind) arch = parse_arch(kind);
    if (arch < 0 && !kind) {
        json_t *mt = json_object_get(o, "model_type");
        if (mt && !json_is_null(mt)) { /* HF names the model: it must be one this build computes */
            const char *t = json_is_string(mt) ? json_string_value(mt) : "";
            if (strcmp(t, "gpt2") == 0) arch = NLP_ARCH_GPT;
            else if (strcmp(t, "bert") == 0) arch = NLP_ARCH_BERT;
            else if (strcmp(t, "llama") == 0) arch = NLP_ARCH_LLAMA;
            else if (strcmp(t, "mistral") == 0) arch = NLP_ARCH_LLAMA, mistral = 1;
            else {
                rc = nlp_error(NLP_EFORMAT, "'%s': config key 'model_type' is %s%s%s: this build reads gpt2, bert, llama "
                               "and mistral models", origin, json_is_string(mt) ? "'" : "", json_is_string(mt) ? t : "not a string",
                               json_is_string(mt) ? "'" : "");
                goto out;
            }
        } else if (json_object_get(o, "n_embd")) arch = NLP_ARCH_GPT;
        else if (json_object_get(o, "num_key_value_heads") || json_object_get(o, "rms_norm_eps")) arch = NLP_ARCH_LLAMA;
        else if (json_object_get(o, "hidden_size")) arch = NLP_ARCH_BERT;
        else if (json_object_get(o, "n_enc") && json_object_get(o, "d_model")) arch = NLP_ARCH_TRANSFORMER;
    }
    if (arch < 0) {
        rc = nlp_error(NLP_EFORMAT, "'%s': cannot tell the model kind %s%s%s(expected gpt, bert, encdec or llama)", origin,
                       kind ? "'" : "", kind ? kind : "", kind ? "' " : "");
        goto out;
    }
    defaults(c, (enum nlp_arch)arch);
    /* the head count is in no tensor shape: absent, it is the default of the
     * class the JSON comes from (HF GPT2Config/BertConfig and the reference's
     * GPTConfig/BertConfig: 12; EncDecConfig: 8; LlamaConfig: 32), or the
     * weights are misread */
    c->heads = arch == NLP_ARCH_TRANSFORMER ? 8 : arch == NLP_ARCH_LLAMA ? 32 : 12;
    static const char *const act_alias[] = {"gelu_new", "gelu_pytorch_tanh", "gelu_fast", NULL};
    static const int act_val[] = {NLP_ACT_GELU_TANH, NLP_ACT_GELU_TANH, NLP_ACT_GELU_TANH};
    int inner = -1;
    double drop = -1, adrop = -1;
#define TRY(x) \
    if ((rc = (x))) goto out
    switch (arch) {
    case NLP_ARCH_GPT:
        TRY(j_int(o, "vocab_size", &c->vocab_size, origin));
        TRY(j_int(o, "n_ctx", &c->max_positions, origin));
        TRY(j_int(o, "n_positions", &c->max_positions, origin));
        TRY(j_int(o, "n_embd", &c->d_model, origin));
        TRY(j_int(o, "n_layer", &c->layers, origin));
        TRY(j_int(o, "n_head", &c->heads, origin));
        TRY(j_int(o, "n_inner", &inner, origin));
        TRY(j_dbl(o, "layer_norm_epsilon", &c->ln_eps, origin));
        TRY(j_dbl(o, "resid_pdrop", &drop, origin));
        TRY(j_dbl(o, "attn_pdrop", &adrop, origin));
        TRY(j_dbl(o, "dropout", &drop, origin));
        TRY(j_choice(o, "activation_function", (int *)&c->activation, ACTS, act_alias, act_val, origin));
        TRY(j_dbl(o, "initializer_range", &c->init_std, origin));
        TRY(j_labels(o, &c->num_labels, origin));
        c->d_ff = inner > 0 ? inner : c->d_model <= INT_MAX / 4 ? 4 * c->d_model : INT_MAX;
        TRY(j_choice(o, "pos", &c->positions, POSS, NULL, NULL, origin));
        TRY(j_dbl(o, "rope_theta", &c->rope_theta, origin));
        TRY(j_choice(o, "rope_layout", &c->rope_layout, ROPES, NULL, NULL, origin));
        TRY(j_int(o, "n_kv_head", &c->kv_heads, origin));
        break;
    case NLP_ARCH_LLAMA:
        TRY(llama_json(c, o, mistral, origin));
        TRY(j_labels(o, &c->num_labels, origin));
        TRY(j_dbl(o, "dropout", &drop, origin));
        TRY(j_dbl(o, "attention_dropout", &adrop, origin));
        if (drop < 0) drop = 0; /* HF's LLaMA has no residual dropout */
        break;
    case NLP_ARCH_BERT:
        TRY(j_int(o, "vocab_size", &c->vocab_size, origin));
        TRY(j_int(o, "hidden_size", &c->d_model, origin));
        TRY(j_int(o, "num_hidden_layers", &c->layers, origin));
        TRY(j_int(o, "num_attention_heads", &c->heads, origin));
        TRY(j_int(o, "intermediate_size", &c->d_ff, origin));
        TRY(j_int(o, "max_position_embeddings", &c->max_positions, origin));
        TRY(j_int(o, "type_vocab_size", &c->type_vocab_size, origin));
        TRY(j_dbl(o, "layer_norm_eps", &c->ln_eps, origin));
        TRY(j_dbl(o, "hidden_dropout_prob", &drop, origin));
        TRY(j_dbl(o, "attention_probs_dropout_prob", &adrop, origin));
        TRY(j_dbl(o, "dropout", &drop, origin));
        TRY(j_choice(o, "hidden_act", (int *)&c->activation, ACTS, act_alias, act_val, origin));
        TRY(j_dbl(o, "initializer_range", &c->init_std, origin));
        TRY(j_labels(o, &c->num_labels, origin));
        TRY(j_choice(o, "head", &c->head, HEADS, NULL, NULL, origin));
        if (has_architecture(o, "BertForQuestionAnswering")) c->head = NLP_HEAD_SPAN, c->num_labels = 2;
        break;
    case NLP_ARCH_TRANSFORMER: {
        TRY(j_int(o, "src_vocab", &c->src_vocab_size, origin));
        TRY(j_int(o, "tgt_vocab", &c->vocab_size, origin));
        TRY(j_bool(o, "shared_vocab", &c->shared_vocab, origin));
        TRY(j_bool(o, "tie_output", &c->tie_output, origin));
        TRY(j_int(o, "d_model", &c->d_model, origin));
        TRY(j_int(o, "n_heads", &c->heads, origin));
        TRY(j_int(o, "d_ff", &c->d_ff, origin));
        TRY(j_int(o, "n_enc", &c->encoder_layers, origin));
        TRY(j_int(o, "n_dec", &c->decoder_layers, origin));
        TRY(j_int(o, "max_len", &c->max_positions, origin));
        TRY(j_bool(o, "pre_ln", &c->pre_ln, origin));
        TRY(j_choice(o, "norm", &c->pre_ln, NORMS, NULL, NULL, origin));
        TRY(j_bool(o, "bias", &c->bias, origin));
        TRY(j_choice(o, "ffn", &c->ffn, FFNS, NULL, NULL, origin));
        TRY(j_choice(o, "pos", &c->positions, POSS, NULL, NULL, origin));
        TRY(j_dbl(o, "rope_theta", &c->rope_theta, origin));
        TRY(j_choice(o, "rope_layout", &c->rope_layout, ROPES, NULL, NULL, origin));
        TRY(j_int(o, "relative_buckets", &c->rel_buckets, origin));
        TRY(j_int(o, "relative_max_distance", &c->rel_max_distance, origin));
        TRY(j_int(o, "pad_id", &c->pad_id, origin));
        TRY(j_int(o, "bos_id", &c->bos_id, origin));
        TRY(j_int(o, "eos_id", &c->eos_id, origin));
        TRY(j_dbl(o, "label_smoothing", &c->label_smoothing, origin));
        TRY(j_choice(o, "smoothing_mode", (int *)&c->smoothing_mode, SMOOTHS, NULL, NULL, origin));
        TRY(j_dbl(o, "ln_eps", &c->ln_eps, origin));
        TRY(j_dbl(o, "dropout", &drop, origin));
        if (drop < 0) drop = 0; /* absent: EncDecConfig's default, 0.0 */
        adrop = drop;           /* the reference uses one dropout everywhere... */
        TRY(j_dbl(o, "attention_dropout", &adrop, origin)); /* ...ours may differ */
        break;
    }
    }
#undef TRY
    if (drop >= 0) c->dropout = drop;
    if (adrop >= 0) c->attention_dropout = adrop;
    else if (drop >= 0) c->attention_dropout = drop;
    normalise(c);
    if (c->vocab_size < 1 || c->d_model < 1 || c->heads < 1 || c->d_ff < 1 || c->layers < 1 || c->max_positions < 1 ||
        c->encoder_layers < 1 || c->decoder_layers < 1 || c->src_vocab_size < 1 || c->type_vocab_size < 1) {
        rc = nlp_error(NLP_EFORMAT, "'%s': the config has a zero size", origin);
        goto out;
    }
    if ((rc = nlp_model_config_validate(c))) rc = nlp_error_prefix(NLP_EFORMAT, "'%s'", origin);
out:
    json_decref(o);
    return rc;
}
