/*
 * test_model.c — lib/model: presets and parameter counts, YAML settings with
 * their errors (file and line), the JSON forms, whole-model gradients of GPT,
 * BERT and the encoder-decoder (post- and pre-LN, with dropout) against finite
 * differences, save/load (mapped F32, BF16, HF config.json), run-to-run
 * determinism, bit-identical resume from a checkpoint, and bad input.
 */
#include "base/config.h"
#include "base/err.h"
#include "base/io.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/model.h"
#include "nn/gemm.h"
#include "nn/optim.h"
#include "nn/relpos.h"
#include "test.h"

#include <limits.h>
#include <omp.h>
#include <sys/stat.h>

static char *tmp_path(const char *name)
{
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

static void write_text(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    fputs(s, f);
    fclose(f);
}

static int build_from(nlp_model_config *c, const char *preset, const char *yaml, const char *const *ov)
{
    nlp_config f = {0};
    int n = 0, rc = 0;
    if (yaml) {
        const char *p = tmp_path("m.yaml");
        write_text(p, yaml);
        rc = nlp_config_load(&f, p);
        n = 1;
    }
    if (!rc) rc = nlp_model_config_build(c, preset, &f, (size_t)n, ov);
    nlp_config_free(&f);
    return rc;
}

// --- configs

static size_t count_params(const nlp_model_config *c) { return nlp_model_config_param_count(c); }

static void test_presets(void)
{
    nlp_model_config c;
    CHECK_EQ_INT(nlp_model_config_preset(&c, "gpt2", NLP_ARCH_GPT), 0);
    CHECK(c.arch == NLP_ARCH_GPT && c.d_model == 768 && c.layers == 12 && c.vocab_size == 50257);
    CHECK_EQ_INT(count_params(&c), 124439808); /* HF gpt2 */
    CHECK_EQ_INT(nlp_model_config_preset(&c, "bert-base", NLP_ARCH_GPT), 0);
    CHECK(c.arch == NLP_ARCH_BERT && c.ln_eps == 1e-12 && c.activation == NLP_ACT_GELU);
    CHECK_EQ_INT(count_params(&c), 110106428); /* HF BertForPreTraining bert-base-uncased */
    CHECK_EQ_INT(nlp_model_config_preset(&c, "base", NLP_ARCH_GPT), 0);
    CHECK(c.arch == NLP_ARCH_TRANSFORMER && c.d_model == 512 && c.heads == 8 && c.d_ff == 2048 &&
          c.encoder_layers == 6 && c.decoder_layers == 6 && c.dropout == 0.1 && c.label_smoothing == 0.1 &&
          !c.pre_ln && c.positions == NLP_POS_SINUSOIDAL && c.shared_vocab);
    CHECK_EQ_INT(nlp_model_config_preset(&c, "big", NLP_ARCH_GPT), 0);
    CHECK(c.d_model == 1024 && c.heads == 16 && c.d_ff == 4096 && c.dropout == 0.3);
    CHECK_EQ_INT(nlp_model_config_preset(&c, "small", NLP_ARCH_GPT), 0);
    CHECK(c.layers == 4 && c.d_model == 256 && c.heads == 4 && c.max_positions == 256 && c.vocab_size == 8192);
    CHECK_EQ_INT(nlp_model_config_preset(&c, "small", NLP_ARCH_TRANSFORMER), 0);
    CHECK(c.encoder_layers == 3 && c.decoder_layers == 3 && c.d_ff == 1024);
    CHECK_EQ_INT(nlp_model_config_preset(&c, "tiny", NLP_ARCH_BERT), 0);
    CHECK(c.arch == NLP_ARCH_BERT && c.d_model == 64 && c.layers == 2);
    CHECK_EQ_INT(nlp_model_config_preset(&c, "huge", NLP_ARCH_GPT), NLP_EINVAL);
}

static void test_settings(void)
{
    nlp_model_config c;
    /* files, preset anywhere, overrides win */
    const char *ov[] = {"layers=3", "dropout=0", NULL};
    CHECK_EQ_INT(build_from(&c, NULL, "arch: transformer\nd-model: 128\npreset: tiny\nnorm: pre\npositions: learned\n"
                                      "shared-vocab: false\nsrc-vocab-size: 300\ntie-output: no\n"
                                      "smoothing-mode: others\n", ov),
                 0);
    CHECK(c.arch == NLP_ARCH_TRANSFORMER && c.d_model == 128 && c.heads == 4 && c.encoder_layers == 3 &&
          c.decoder_layers == 3 && c.pre_ln && c.positions == NLP_POS_LEARNED && !c.shared_vocab && c.src_vocab_size == 300 &&
          !c.tie_output && c.smoothing_mode == NLP_SMOOTH_OTHERS && c.dropout == 0);
    /* --dump-config semantics: the dump resolves to the same struct */
    nlp_buf d = {0};
    CHECK_EQ_INT(nlp_model_config_dump(&c, &d), 0);
    CHECK(strstr(d.data, "preset: tiny\narch: transformer\n") == d.data);
    CHECK(strstr(d.data, "encoder-layers: 3\n") && !strstr(d.data, "\nlayers:") && !strstr(d.data, "init-std"));
    nlp_model_config c2;
    CHECK_EQ_INT(build_from(&c2, NULL, d.data, NULL), 0);
    CHECK(nlp_model_config_equal(&c, &c2));
    nlp_buf_free(&d);
    for (int a = 0; a < 3; a++) {
        nlp_model_config_preset(&c, a == 0 ? "gpt2" : a == 1 ? "bert-base" : "big", NLP_ARCH_GPT);
        c.ln_eps = 1e-6 / 3; /* a double that needs all 17 digits */
        nlp_buf e = {0};
        nlp_model_config_dump(&c, &e);
        CHECK_EQ_INT(build_from(&c2, NULL, e.data, NULL), 0);
        CHECK_MSG(nlp_model_config_equal(&c, &c2), "dump round trip of arch %d", a);
        nlp_buf_free(&e);
    }

    /* errors name the file and the line */
    struct {
        const char *yaml, *needle;
    } bad[] = {
        {"arch: gpt\nlayerz: 3\n", "m.yaml' line 2: unknown model key 'layerz'"},
        {"d-model: 64\nheads: four\n", "line 2: 'heads' expects an integer, got 'four'"},
        {"dropout: 1.5\n", "line 1: 'dropout' must be in [0, 1), got 1.5"},
        {"arch: gpt\nnorm: pre\n", "line 2: key 'norm' does not apply to arch gpt"},
        {"arch: bert\nactivation: swish\n", "line 2: 'activation' must be one of relu, gelu, gelu-tanh, silu, got 'swish'"},
        {"preset: gpt2\narch: bert\n", "line 2: preset 'gpt2' is a gpt model, not bert"},
        {"preset: large\n", "line 1: unknown preset 'large'"},
        {"arch: transformer\nshared-vocab: maybe\n", "line 2: 'shared-vocab' expects true or false, got 'maybe'"},
        {"arch: transformer\nsrc-vocab-size: 100\n", "line 2: src-vocab-size 100 differs from vocab-size"},
        {"arch: rnn\n", "line 1: 'arch' must be one of gpt, bert, transformer, llama, got 'rnn'"},
        {"arch: gpt\nrope-theta: 500\n", "line 2: 'rope-theta' applies to rotary positions (positions: rope), not learned ones"},
        {"arch: llama\npositions: learned\n", "line 2: key 'positions' does not apply to arch llama"},
        {"arch: llama\nrope-layout: interleaved\n", "line 2: key 'rope-layout' does not apply to arch llama"},
        {"arch: bert\nkv-heads: 2\n", "line 2: key 'kv-heads' does not apply to arch bert"},
        {"arch: gpt\npositions: rope\nrope-layout: both\n", "line 3: 'rope-layout' must be one of half, interleaved, got 'both'"},
        {"arch: gpt\npositions: rope\nrope-theta: 0\n", "line 3: 'rope-theta' must be in (0, 1e+12), got 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = build_from(&c, NULL, bad[i].yaml, NULL);
        CHECK_MSG(rc == NLP_EFORMAT && strstr(nlp_errmsg(), bad[i].needle), "case %zu: rc %d '%s'", i, rc, nlp_errmsg());
    }
    CHECK_EQ_INT(build_from(&c, NULL, "d-model: 100\nheads: 3\n", NULL), NLP_EINVAL);
    CHECK(strstr(nlp_errmsg(), "d-model 100 is not divisible by heads 3") != NULL);
    const char *bad_ov[] = {"heads", NULL};
    CHECK_EQ_INT(build_from(&c, NULL, NULL, bad_ov), NLP_EINVAL);
    const char *bad_ov2[] = {"heads=x", NULL};
    CHECK_EQ_INT(build_from(&c, NULL, NULL, bad_ov2), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "override: 'heads' expects an integer") != NULL);
    CHECK(nlp_model_config_is_key("d-ff") && nlp_model_config_is_key("preset") && !nlp_model_config_is_key("lr"));
}

static void test_json(void)
{
    nlp_model_config c, c2;
    const char *hf = "{\"activation_function\": \"gelu_new\", \"architectures\": [\"GPT2LMHeadModel\"], "
                     "\"attn_pdrop\": 0.1, \"embd_pdrop\": 0.1, \"layer_norm_epsilon\": 1e-05, \"model_type\": "
                     "\"gpt2\", \"n_ctx\": 1024, \"n_embd\": 768, \"n_head\": 12, \"n_inner\": null, \"n_layer\": 12, "
                     "\"n_positions\": 1024, \"resid_pdrop\": 0.1, \"vocab_size\": 50257}";
    CHECK_EQ_INT(nlp_model_config_from_json(&c, NULL, hf, strlen(hf), "config.json"), 0);
    nlp_model_config_preset(&c2, "gpt2", NLP_ARCH_GPT);
    c2.preset[0] = 0;
    CHECK(nlp_model_config_equal(&c, &c2));
    const char *bert = "{\"model_type\": \"bert\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                       "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"hidden_act\": \"gelu\", "
                       "\"max_position_embeddings\": 40, \"type_vocab_size\": 2, \"vocab_size\": 99, "
                       "\"layer_norm_eps\": 1e-12, \"hidden_dropout_prob\": 0.2, \"attention_probs_dropout_prob\": 0.0}";
    CHECK_EQ_INT(nlp_model_config_from_json(&c, NULL, bert, strlen(bert), "config.json"), 0);
    CHECK(c.arch == NLP_ARCH_BERT && c.d_ff == 128 && c.vocab_size == 99 && c.dropout == 0.2 && c.attention_dropout == 0);
    /* to_json → from_json for each kind */
    const char *presets[] = {"gpt2", "bert-base", "base"};
    for (int i = 0; i < 3; i++) {
        nlp_model_config_preset(&c, presets[i], NLP_ARCH_GPT);
        c.preset[0] = 0;
        c.attention_dropout = c.dropout; /* the reference has one dropout */
        if (c.arch == NLP_ARCH_TRANSFORMER) c.pre_ln = 1, c.positions = NLP_POS_LEARNED, c.smoothing_mode = NLP_SMOOTH_OTHERS;
        nlp_buf j = {0};
        const char *kind;
        CHECK_EQ_INT(nlp_model_config_to_json(&c, &j, &kind), 0);
        CHECK_EQ_INT(nlp_model_config_from_json(&c2, kind, j.data, j.len, "meta"), 0);
        CHECK_MSG(nlp_model_config_equal(&c, &c2), "json round trip of %s", presets[i]);
        nlp_buf_free(&j);
    }
    /* encdec: an attention dropout of its own round-trips (the reference has
     * one dropout; its key is ours), and no dropout key means the
     * reference's EncDecConfig default, 0.0 */
    nlp_model_config_preset(&c, "small", NLP_ARCH_TRANSFORMER);
    c.preset[0] = 0;
    CHECK(c.dropout == 0.1 && c.attention_dropout == 0);
    {
        nlp_buf j = {0};
        const char *kind;
        CHECK_EQ_INT(nlp_model_config_to_json(&c, &j, &kind), 0);
        CHECK(strstr(j.data, "\"attention_dropout\": 0") != NULL);
        CHECK_EQ_INT(nlp_model_config_from_json(&c2, kind, j.data, j.len, "meta"), 0);
        CHECK(nlp_model_config_equal(&c, &c2));
        nlp_buf_free(&j);
    }
    const char *nodrop = "{\"src_vocab\": 50, \"tgt_vocab\": 50, \"d_model\": 32, \"n_heads\": 4, \"d_ff\": 64, "
                         "\"n_enc\": 1, \"n_dec\": 1}";
    CHECK_EQ_INT(nlp_model_config_from_json(&c, "encdec", nodrop, strlen(nodrop), "config.json"), 0);
    CHECK(c.dropout == 0 && c.attention_dropout == 0);
    CHECK_EQ_INT(nlp_model_config_from_json(&c, "gpt", "{\"n_embd\": \"big\"}", 17, "x.json"), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "'x.json': config key 'n_embd' is not a non-negative integer") != NULL);
    CHECK_EQ_INT(nlp_model_config_from_json(&c, NULL, "{\"n_embd\": 7,", 13, "x.json"), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "bad JSON config") != NULL);
    CHECK_EQ_INT(nlp_model_config_from_json(&c, NULL, "{\"foo\": 1}", 10, "x.json"), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "cannot tell the model kind") != NULL);
    /* sizes beyond what the YAML keys allow are range errors, not int
     * overflows (4·n_embd for d_ff, 3·C for c_attn) or allocations of them */
    const char *wide[] = {"{\"n_embd\": 536870912, \"n_head\": 1}", "{\"n_embd\": 1073741824, \"n_head\": 1, \"n_inner\": 4}"};
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(nlp_model_config_from_json(&c, "gpt", wide[i], strlen(wide[i]), "w.json"), NLP_EFORMAT);
        CHECK_MSG(strstr(nlp_errmsg(), "'w.json'") && strstr(nlp_errmsg(), "d-model"), "'%s': %s", wide[i],
                  nlp_errmsg());
    }
    const char *deep = "{\"n_enc\": 1073741824}";
    CHECK_EQ_INT(nlp_model_config_from_json(&c, "encdec", deep, strlen(deep), "w.json"), NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "encoder-layers"), "%s", nlp_errmsg());
    /* the head count is not in any tensor shape: a config without it means
     * the default of the class that wrote it (GPTConfig, HF GPT2Config and
     * BertConfig: 12; the reference's EncDecConfig: 8), not ours */
    const char *nohead[][2] = {{"gpt", "{\"n_embd\": 96, \"n_layer\": 1}"},
                               {NULL, "{\"model_type\": \"gpt2\", \"n_embd\": 96, \"n_layer\": 1}"},
                               {"bert", "{\"hidden_size\": 96, \"num_hidden_layers\": 1}"},
                               {NULL, "{\"model_type\": \"bert\", \"hidden_size\": 96}"},
                               {"encdec", "{\"d_model\": 96, \"n_enc\": 1}"}};
    const int want_heads[] = {12, 12, 12, 12, 8};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(nlp_model_config_from_json(&c, nohead[i][0], nohead[i][1], strlen(nohead[i][1]), "h.json"), 0);
        CHECK_MSG(c.heads == want_heads[i], "'%s': %d heads, expected %d", nohead[i][1], c.heads, want_heads[i]);
    }
    nlp_model_config_preset(&c, "tiny", NLP_ARCH_GPT);
    c.d_model = c.heads = 1 << 20;
    CHECK_EQ_INT(nlp_model_config_validate(&c), NLP_EINVAL);
    CHECK_MSG(strstr(nlp_errmsg(), "d-model"), "%s", nlp_errmsg());
}

// --- batches

typedef struct tbatch {
    nlp_batch b;
    int32_t ids[64], labels[64], types[64], mask[64], nsp[4], src[64], tin[64], tout[64], cls[8], pos[8];
    int32_t sstart[8], send[8], smask[64];
} tbatch;

/* The kind of classifier batch make_batch draws: rows of their own, 2
 * examples of 3 choices (6 rows, a head of one unit), 2 pairs summed (4
 * rows), or spans (bert's span head) */
static enum { TB_ROWS, TB_CHOICE, TB_PAIR_SUM, TB_SPAN } t_mode;

static void make_batch(tbatch *t, const nlp_model_config *c, nlp_rng *r)
{
    memset(t, 0, sizeof *t);
    const int B = t_mode == TB_CHOICE ? 6 : t_mode == TB_PAIR_SUM ? 4 : 3, T = 6, S = 7;
    t->b.B = B, t->b.T = T;
    int V = c->vocab_size;
    for (int i = 0; i < B * T; i++) {
        t->ids[i] = (int32_t)nlp_rng_below(r, (uint64_t)V);
        t->labels[i] = t->ids[i];
    }
    if (nlp_arch_is_lm(c->arch)) {
        t->labels[4] = -100;
        t->b.ids = t->ids, t->b.labels = t->labels;
    } else if (c->arch == NLP_ARCH_BERT) {
        for (int i = 0; i < B * T; i++) {
            t->types[i] = (i % T) >= T / 2;
            t->mask[i] = !(i / T == 1 && i % T >= 4); /* row 1 padded after 4 */
            if (i % 3) t->labels[i] = -100;
        }
        t->nsp[0] = 1, t->nsp[1] = 0, t->nsp[2] = 1;
        t->b.ids = t->ids, t->b.labels = t->labels, t->b.type_ids = t->types, t->b.mask = t->mask,
        t->b.nsp_labels = t->nsp;
    } else {
        t->b.S = S;
        for (int i = 0; i < B * S; i++) t->src[i] = 3 + (int32_t)nlp_rng_below(r, (uint64_t)c->src_vocab_size - 3);
        t->src[S - 1] = t->src[S - 2] = 0; /* row 0 padded */
        for (int b = 0; b < B; b++) {
            int n = T - 1 - b; /* tokens before EOS */
            for (int i = 0; i < T; i++) {
                int32_t y = 3 + (int32_t)nlp_rng_below(r, (uint64_t)V - 3);
                t->tin[b * T + i] = i == 0 ? 1 : i <= n ? y : 0;
                t->tout[b * T + i] = i < n ? 0 : i == n ? 2 : 0;
            }
            for (int i = 0; i < n; i++) t->tout[b * T + i] = t->tin[b * T + i + 1];
        }
        t->b.src = t->src, t->b.tgt_in = t->tin, t->b.tgt_out = t->tout;
    }
    if (c->num_labels > 0 && t_mode == TB_SPAN) { /* gold positions among those the mask allows (not 0, 1) */
        for (int b = 0; b < B; b++) {
            for (int i = 0; i < T; i++) t->smask[b * T + i] = i >= 2 && t->mask[b * T + i];
            int32_t x = 2 + (int32_t)nlp_rng_below(r, 2), y = 2 + (int32_t)nlp_rng_below(r, 2);
            t->sstart[b] = x < y ? x : y, t->send[b] = x < y ? y : x;
        }
        t->sstart[2] = t->send[2] = -100; /* a row without an answer */
        t->b.span_start = t->sstart, t->b.span_end = t->send, t->b.span_mask = t->smask;
        t->b.labels = NULL, t->b.nsp_labels = NULL;
    } else if (c->num_labels > 0) { /* a classifier: labels per example; gpt reads the state at pos */
        const int g = t_mode == TB_CHOICE ? 3 : t_mode == TB_PAIR_SUM ? 2 : 1;
        const uint64_t K = g > 2 ? (uint64_t)g : (uint64_t)c->num_labels;
        for (int b = 0; b < B; b++) t->pos[b] = T - 1 - b % 3;
        for (int e = 0; e < B / g; e++) t->cls[e] = (int32_t)nlp_rng_below(r, K);
        t->b.cls_labels = t->cls;
        t->b.choices = g > 2 ? g : 0, t->b.pair_sum = g == 2;
        if (nlp_arch_is_lm(c->arch)) t->b.cls_pos = t->pos;
        if (c->arch == NLP_ARCH_BERT) t->b.labels = NULL, t->b.nsp_labels = NULL; /* the classification loss alone */
    }
}

// --- whole-model gradients

struct fd {
    nlp_model *m;
    nlp_batch *b;
};

static double model_loss(struct fd *f)
{
    nlp_model_seed(f->m, 77); /* the same dropout masks every time */
    nlp_losses L;
    int rc = nlp_model_forward(f->m, f->b, &L);
    return rc ? NAN : L.loss;
}

static void grad_check_lm(const char *name, const nlp_model_config *cfg, double lm_weight)
{
    nlp_model *m;
    CHECK_EQ_INT(nlp_model_new(&m, cfg, 5), 0);
    if (!m) return;
    nlp_model_set_lm_weight(m, lm_weight);
    nlp_model_set_training(m, 1);
    nlp_rng r;
    nlp_rng_seed(&r, 9);
    tbatch t;
    make_batch(&t, cfg, &r);
    struct fd f = {m, &t.b};
    nlp_params *p = nlp_model_params(m);
    double l0 = model_loss(&f);
    CHECK(isfinite(l0));
    CHECK_EQ_INT(nlp_model_backward(m), 0);
    const float *g = nlp_params_grad(p);
    float *w = nlp_params_data(p);
    int bad = 0, checked = 0;
    for (size_t i = 0; i < nlp_params_count(p); i++) {
        const nlp_param_info *ti = nlp_params_info(p, i);
        /* the element with the largest gradient, and two random ones */
        size_t best = 0;
        for (size_t j = 0; j < ti->numel; j++)
            if (fabsf(g[ti->off + j]) > fabsf(g[ti->off + best])) best = j;
        size_t pick[3] = {best, nlp_rng_below(&r, ti->numel), nlp_rng_below(&r, ti->numel)};
        for (int k = 0; k < 3; k++) {
            size_t e = ti->off + pick[k];
            float v = w[e], h = 1e-3f;
            w[e] = v + h;
            double lp = model_loss(&f);
            w[e] = v - h;
            double lm = model_loss(&f);
            w[e] = v;
            double num = (lp - lm) / (2.0 * h), ana = g[e];
            double tol = 3e-2 * fmax(fabs(num), fabs(ana)) + 6e-4;
            checked++;
            if (fabs(num - ana) > tol && bad++ < 5)
                printf("    %s %s[%zu]: numeric %.6g analytic %.6g\n", name, ti->name, pick[k], num, ana);
        }
    }
    CHECK_MSG(bad == 0, "%s: %d of %d gradient elements off", name, bad, checked);
    /* training mode with dropout changes the loss; eval mode is deterministic and different */
    nlp_model_set_training(m, 0);
    nlp_losses a, b;
    nlp_model_forward(m, &t.b, &a);
    nlp_model_forward(m, &t.b, &b);
    CHECK(a.loss == b.loss);
    if (cfg->dropout > 0) CHECK(a.loss != l0);
    nlp_model_free(m);
}

static void grad_check(const char *name, const nlp_model_config *cfg) { grad_check_lm(name, cfg, 0.5); }

static void test_gradients(void)
{
    nlp_model_config c;
    const char *ov_gpt[] = {"vocab-size=40", "d-model=16", "heads=2", "d-ff=24", "layers=2", "max-positions=8",
                            "dropout=0.1", "attention-dropout=0.1", "init-std=0.3", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_gpt), 0);
    grad_check("gpt", &c);
    const char *ov_bert[] = {"arch=bert", "vocab-size=40", "d-model=16", "heads=2", "d-ff=24", "layers=2",
                             "max-positions=8", "type-vocab-size=2", "dropout=0.1", "attention-dropout=0.1",
                             "init-std=0.3", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_bert), 0);
    grad_check("bert", &c);
    /* classification heads: BERT on the pooled [CLS]; GPT at a position, with
     * the auxiliary LM loss (λ 0.5) and without (λ 0) */
    c.num_labels = 5;
    grad_check("bert classifier", &c);
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_gpt), 0);
    c.num_labels = 3;
    grad_check_lm("gpt classifier, lm 0.5", &c, 0.5);
    grad_check_lm("gpt classifier, lm 0", &c, 0.0);
    /* finetune's other heads: GPT's similarity (the two orders' states
     * summed), multiple choice (one unit per row, a softmax over an example's
     * rows) for GPT and BERT, and BERT's span head (start and end logits at
     * every position, masked) */
    t_mode = TB_PAIR_SUM;
    grad_check_lm("gpt similarity, lm 0.5", &c, 0.5);
    c.num_labels = 1, t_mode = TB_CHOICE;
    grad_check_lm("gpt multiple choice, lm 0.5", &c, 0.5);
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_bert), 0);
    c.num_labels = 1;
    grad_check("bert multiple choice", &c);
    c.num_labels = 2, c.head = NLP_HEAD_SPAN, t_mode = TB_SPAN;
    grad_check("bert span", &c);
    t_mode = TB_ROWS;
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_gpt), 0);
    /* GELU keeps the finite differences away from ReLU's kink; ReLU has its own layer check */
    const char *ov_tr[] = {"arch=transformer", "vocab-size=30", "d-model=16", "heads=2", "d-ff=24", "layers=2",
                           "max-positions=8", "dropout=0.1", "attention-dropout=0.1", "activation=gelu", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_tr), 0);
    grad_check("transformer post-LN", &c);
    const char *ov_tr2[] = {"arch=transformer", "vocab-size=30", "src-vocab-size=25", "shared-vocab=false",
                            "tie-output=false", "d-model=16", "heads=4", "d-ff=24", "encoder-layers=1",
                            "decoder-layers=2", "max-positions=8", "norm=pre", "positions=learned", "dropout=0.1",
                            "activation=gelu", "smoothing-mode=others", "label-smoothing=0.2", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_tr2), 0);
    grad_check("transformer pre-LN", &c);
    /* rotary positions in both layouts, with grouped keys and values (gpt's
     * fused c_attn of [C, C+2Ckv]), and the LLaMA block: RMSNorm, SwiGLU,
     * rotary positions, grouped-query attention, no biases, tied or not */
    const char *ov_rope[] = {"vocab-size=40", "d-model=16", "heads=4", "d-ff=24", "layers=2", "max-positions=8",
                             "dropout=0.1", "attention-dropout=0.1", "init-std=0.3", "positions=rope",
                             "rope-layout=half", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_rope), 0);
    grad_check("gpt rope half", &c);
    c.rope_layout = 1, c.kv_heads = 2, c.rope_theta = 100;
    grad_check("gpt rope interleaved, 2 kv heads", &c);
    const char *ov_llama[] = {"arch=llama", "vocab-size=40", "d-model=16", "heads=4", "kv-heads=2", "d-ff=24",
                              "layers=2", "max-positions=8", "init-std=0.3", "tie-output=false", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_llama), 0);
    grad_check("llama", &c);
    c.tie_output = 1, c.kv_heads = 1, c.dropout = c.attention_dropout = 0.1;
    grad_check("llama tied, 1 kv head, dropout", &c);
    c.num_labels = 3;
    grad_check_lm("llama classifier, lm 0.5", &c, 0.5);
    c.num_labels = 0, c.activation = NLP_ACT_GELU_TANH;
    grad_check("llama with a GeGLU", &c);
    const char *ov_tr3[] = {"arch=transformer", "vocab-size=30", "d-model=16", "heads=2", "d-ff=24", "layers=2",
                            "max-positions=8", "dropout=0.1", "activation=gelu", "positions=rope",
                            "rope-layout=interleaved", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_tr3), 0);
    grad_check("transformer rope", &c);
    /* T5's relative position bias: both tables (the encoder's bidirectional,
     * the decoder's causal), few buckets so that offsets share them */
    const char *ov_rel[] = {"arch=transformer", "vocab-size=30", "d-model=16", "heads=2", "d-ff=24", "layers=2",
                            "max-positions=8", "dropout=0.1", "attention-dropout=0.1", "activation=gelu",
                            "positions=relative", "relative-buckets=6", "relative-max-distance=5", "norm=pre", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_rel), 0);
    grad_check("transformer relative", &c);
    c.pre_ln = 0;
    grad_check("transformer relative post-LN", &c);
    /* and T5 v1.1's block: RMSNorm before each sublayer and at each stack's
     * end, no biases, the gated-GELU feed-forward */
    const char *ov_t5[] = {"arch=transformer", "vocab-size=30", "d-model=16", "heads=2", "d-ff=24", "layers=2",
                           "max-positions=8", "dropout=0.1", "attention-dropout=0.1", "positions=relative",
                           "relative-buckets=6", "relative-max-distance=5", "norm=rms", "bias=false",
                           "ffn=gated-gelu", "tie-output=false", "shared-vocab=false", "src-vocab-size=25", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_t5), 0);
    CHECK(c.activation == NLP_ACT_GELU_TANH);
    grad_check("transformer t5 v1.1 block", &c);
    c.ffn = NLP_FFN_DENSE, c.activation = NLP_ACT_GELU, c.bias = 1;
    grad_check("transformer rms, biases, dense", &c);
}

// --- data-parallel shares (lib/train splits a batch over ranks)

struct hook_rec {
    const float *g;
    size_t numel, last;
    float *snap; /* the gradients at and above each reported offset, when reported */
    size_t *offs;
    int n, cap, monotone;
};

static void rec_hook(void *ctx, size_t off)
{
    struct hook_rec *h = ctx;
    if (off > h->last) h->monotone = 0;
    h->last = off;
    if (h->n == h->cap) return;
    memcpy(h->snap + (size_t)h->n * h->numel + off, h->g + off, (h->numel - off) * sizeof(float));
    h->offs[h->n++] = off;
}

/* Rows split into shares, each dividing its losses by the whole batch's
 * counts and drawing the whole batch's dropout masks (nlp_batch_rows), give
 * the whole batch's losses and gradients summed; the backward hook reports
 * offsets above which the gradients no longer change. */
static void share_check(const char *name, const nlp_model_config *cfg, double lm_weight)
{
    nlp_model *m;
    CHECK_EQ_INT(nlp_model_new(&m, cfg, 5), 0);
    if (!m) return;
    nlp_model_set_lm_weight(m, lm_weight);
    nlp_model_set_training(m, 1);
    nlp_rng r;
    nlp_rng_seed(&r, 9);
    tbatch t;
    make_batch(&t, cfg, &r);
    nlp_params *p = nlp_model_params(m);
    const size_t n = nlp_params_numel(p);
    CHECK_EQ_INT(nlp_params_enable_grad(p), 0);
    float *g = nlp_params_grad(p), *whole = malloc(n * sizeof *whole);
    struct hook_rec h = {.g = g, .numel = n, .last = n, .cap = 64, .monotone = 1};
    h.snap = malloc((size_t)h.cap * n * sizeof *h.snap);
    h.offs = malloc((size_t)h.cap * sizeof *h.offs);
    /* the whole batch, with the hook */
    nlp_params_zero_grad(p);
    nlp_model_seed(m, 77);
    nlp_model_set_grad_hook(m, rec_hook, &h);
    nlp_losses lw;
    CHECK_EQ_INT(nlp_model_forward(m, &t.b, &lw), 0);
    CHECK_EQ_INT(nlp_model_backward(m), 0);
    nlp_model_set_grad_hook(m, NULL, NULL);
    memcpy(whole, g, n * sizeof *whole);
    CHECK_MSG(h.n > 0 && h.monotone, "%s: %d hook calls, monotone %d", name, h.n, h.monotone);
    int changed = 0;
    for (int k = 0; k < h.n; k++)
        changed += memcmp(h.snap + (size_t)k * n + h.offs[k], whole + h.offs[k], (n - h.offs[k]) * sizeof(float)) != 0;
    CHECK_MSG(changed == 0, "%s: gradients above %d of %d reported offsets changed afterwards", name, changed, h.n);
    /* the same pass over gradients marked zero (nlp_params_zero_grad_lazy),
     * the arena holding stale values (NaN here, an optimizer step's inputs in
     * training): each weight's product writes it, the rest are zeroed as they
     * are first added to or at the end; the same values, and what the hook
     * reads is final */
    for (size_t i = 0; i < n; i++) g[i] = NAN;
    nlp_params_zero_grad_lazy(p);
    nlp_model_seed(m, 77);
    h.n = 0, h.last = n, h.monotone = 1;
    nlp_model_set_grad_hook(m, rec_hook, &h);
    nlp_losses ll;
    CHECK_EQ_INT(nlp_model_forward(m, &t.b, &ll), 0);
    CHECK_EQ_INT(nlp_model_backward(m), 0);
    nlp_model_set_grad_hook(m, NULL, NULL);
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) differ += !(g[i] == whole[i]);
    CHECK_MSG(differ == 0, "%s: lazily zeroed gradients: %zu of %zu differ from zeroed ones", name, differ, n);
    changed = 0;
    for (int k = 0; k < h.n; k++)
        for (size_t i = h.offs[k]; i < n; i++) changed += !(h.snap[(size_t)k * n + i] == whole[i]);
    CHECK_MSG(h.n > 0 && changed == 0, "%s: lazily zeroed: %d values the hook read were not final", name, changed);
    /* two shares: row 0, rows 1..2 */
    double cnt[2];
    nlp_model_loss_counts(m, &t.b, cnt);
    nlp_model_set_loss_norm(m, cnt);
    for (size_t i = 0; i < n; i++) g[i] = NAN; /* the second share adds to the first's */
    nlp_params_zero_grad_lazy(p);
    double loss = 0;
    int tokens = 0;
    const int cut[3] = {0, nlp_batch_group(&t.b), t.b.B}; /* whole examples */
    for (int k = 0; k < 2; k++) {
        nlp_batch sb = nlp_batch_rows(&t.b, cut[k], cut[k + 1]);
        nlp_losses l;
        nlp_model_seed(m, 77);
        CHECK_EQ_INT(nlp_model_forward(m, &sb, &l), 0);
        CHECK_EQ_INT(nlp_model_backward(m), 0);
        loss += l.loss, tokens += l.tokens;
    }
    nlp_model_set_loss_norm(m, NULL);
    double worst = 0, scale = 0;
    size_t stale = 0; /* NaN left from before the shares (fmax would pass over it) */
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)g[i] - whole[i]));
        scale = fmax(scale, fabs((double)whole[i]));
        stale += isnan(g[i]);
    }
    CHECK_MSG(stale == 0, "%s: shares: %zu gradients never written nor zeroed", name, stale);
    CHECK_MSG(fabs(loss - lw.loss) < 1e-5 * fmax(1, fabs(lw.loss)) && tokens == lw.tokens,
              "%s: shares' loss %.9g (%d tokens), whole %.9g (%d)", name, loss, tokens, lw.loss, lw.tokens);
    CHECK_MSG(worst <= 1e-5 * scale + 1e-7, "%s: shares' gradients off by %.3g (largest %.3g)", name, worst, scale);
    free(whole), free(h.snap), free(h.offs);
    nlp_model_free(m);
}

static void test_shares(void)
{
    nlp_model_config c;
    const char *ov_gpt[] = {"vocab-size=40", "d-model=16", "heads=2", "d-ff=24", "layers=2", "max-positions=8",
                            "dropout=0.1", "attention-dropout=0.1", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_gpt), 0);
    share_check("gpt", &c, 0.5);
    c.num_labels = 3;
    share_check("gpt classifier", &c, 0.5);
    t_mode = TB_PAIR_SUM;
    share_check("gpt similarity", &c, 0.5);
    c.num_labels = 1, t_mode = TB_CHOICE;
    share_check("gpt multiple choice", &c, 0.5);
    t_mode = TB_ROWS;
    const char *ov_bert[] = {"arch=bert", "vocab-size=40", "d-model=16", "heads=2", "d-ff=24", "layers=2",
                             "max-positions=8", "type-vocab-size=2", "dropout=0.1", "attention-dropout=0.1", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_bert), 0);
    share_check("bert", &c, 0.5);
    c.num_labels = 4;
    share_check("bert classifier", &c, 0.5);
    c.num_labels = 1, t_mode = TB_CHOICE;
    share_check("bert multiple choice", &c, 0.5);
    c.num_labels = 2, c.head = NLP_HEAD_SPAN, t_mode = TB_SPAN;
    share_check("bert span", &c, 0.5);
    t_mode = TB_ROWS;
    const char *ov_tr[] = {"arch=transformer", "vocab-size=30", "d-model=16", "heads=2", "d-ff=24", "layers=2",
                           "max-positions=8", "dropout=0.1", "attention-dropout=0.1", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_tr), 0);
    share_check("transformer", &c, 0.5);
    const char *ov_tr2[] = {"arch=transformer", "vocab-size=30", "src-vocab-size=25", "shared-vocab=false",
                            "tie-output=false", "d-model=16", "heads=4", "d-ff=24", "encoder-layers=1",
                            "decoder-layers=2", "max-positions=8", "norm=pre", "positions=learned", "dropout=0.1", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_tr2), 0);
    share_check("transformer pre-LN", &c, 0.5);
    const char *ov_llama[] = {"arch=llama", "vocab-size=40", "d-model=16", "heads=4", "kv-heads=2", "d-ff=24",
                              "layers=2", "max-positions=8", "dropout=0.1", "attention-dropout=0.1",
                              "tie-output=false", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_llama), 0);
    share_check("llama", &c, 0.5);
    c.num_labels = 3, c.tie_output = 1;
    share_check("llama classifier", &c, 0.5);
    const char *ov_rope[] = {"vocab-size=40", "d-model=16", "heads=2", "d-ff=24", "layers=2", "max-positions=8",
                             "dropout=0.1", "positions=rope", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov_rope), 0);
    share_check("gpt rope", &c, 0.5);
}

// --- save/load, determinism, resume

static nlp_model *tiny(enum nlp_arch a, double dropout)
{
    nlp_model_config c;
    nlp_model_config_preset(&c, "tiny", a);
    c.dropout = c.attention_dropout = dropout;
    c.vocab_size = c.src_vocab_size = 64;
    nlp_model *m = NULL;
    nlp_model_new(&m, &c, 3);
    return m;
}

static void test_save_load(void)
{
    for (int a = 0; a < 3; a++) {
        nlp_model *m = tiny((enum nlp_arch)a, 0);
        nlp_rng r;
        nlp_rng_seed(&r, 1);
        tbatch t;
        make_batch(&t, nlp_model_cfg(m), &r);
        nlp_losses L1, L2;
        CHECK_EQ_INT(nlp_model_forward(m, &t.b, &L1), 0);
        int rows, V;
        const float *l1 = nlp_model_logits(m, &rows, &V);
        float *keep = malloc((size_t)rows * V * 4);
        memcpy(keep, l1, (size_t)rows * V * 4);
        const char *path = tmp_path("model.safetensors");
        CHECK_EQ_INT(nlp_model_save(m, path, NLP_DT_F32), 0);
        nlp_model *m2;
        CHECK_EQ_INT(nlp_model_load(&m2, test_tmpdir()), 0); /* a directory with model.safetensors */
        if (!m2) continue;
        CHECK(nlp_params_is_mapped(nlp_model_params(m2)));
        CHECK(nlp_model_config_equal(nlp_model_cfg(m), nlp_model_cfg(m2)));
        CHECK_EQ_INT(nlp_model_forward(m2, &t.b, &L2), 0);
        CHECK(L1.loss == L2.loss);
        CHECK(memcmp(keep, nlp_model_logits(m2, NULL, NULL), (size_t)rows * V * 4) == 0);
        /* training a mapped model works (copy-on-write) */
        CHECK_EQ_INT(nlp_model_backward(m2), 0);
        nlp_model_free(m2);
        /* BF16: copied, close */
        CHECK_EQ_INT(nlp_model_save(m, path, NLP_DT_BF16), 0);
        CHECK_EQ_INT(nlp_model_load(&m2, path), 0);
        if (m2) {
            CHECK(!nlp_params_is_mapped(nlp_model_params(m2)));
            nlp_model_forward(m2, &t.b, &L2);
            CHECK_NEAR(L2.loss, L1.loss, 0.05);
            nlp_model_free(m2);
        }
        free(keep);
        nlp_model_free(m);
    }
    /* HF layout: config.json beside model.safetensors without config metadata */
    nlp_model *m = tiny(NLP_ARCH_GPT, 0);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/hf", test_tmpdir());
    mkdir(dir, 0777);
    char path[700];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    nlp_params_save(nlp_model_params(m), path, NULL, NLP_DT_F32);
    nlp_model *m2;
    CHECK_EQ_INT(nlp_model_load(&m2, dir), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "no model configuration") != NULL);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, "{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4, "
                     "\"n_positions\": 64, \"vocab_size\": 64}");
    CHECK_EQ_INT(nlp_model_load(&m2, dir), 0);
    if (m2) {
        CHECK_EQ_INT(nlp_model_cfg(m2)->d_ff, 256);
        nlp_model_free(m2);
    }
    /* a config that does not match the tensors */
    write_text(path, "{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 3, \"n_head\": 4, "
                     "\"n_positions\": 64, \"vocab_size\": 64}");
    CHECK_EQ_INT(nlp_model_load(&m2, dir), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "missing tensor 'h.2.ln_1.weight'") != NULL);
    write_text(path, "{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4, "
                     "\"n_positions\": 64, \"vocab_size\": 65}");
    CHECK_EQ_INT(nlp_model_load(&m2, dir), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "tensor 'wte.weight' has shape [64, 64], expected [65, 64]") != NULL);
    nlp_model_free(m);
}

/* Adding tokens and a classifier to a pretrained model; label names saved
 * with it; L3 = L2 + λ·L1. */
static void test_classifier(void)
{
    nlp_model *m = tiny(NLP_ARCH_GPT, 0), *e = NULL;
    nlp_model_config c = *nlp_model_cfg(m);
    c.vocab_size += 3, c.num_labels = 3;
    CHECK_EQ_INT(nlp_model_extend(&e, m, &c, 11), 0);
    if (!e) return;
    nlp_params *p = nlp_model_params(m), *q = nlp_model_params(e);
    int wte = nlp_params_find(q, "wte.weight"), old = nlp_params_find(p, "wte.weight");
    CHECK(nlp_params_find(q, "score.weight") >= 0 && nlp_params_find(p, "score.weight") < 0);
    CHECK(!memcmp(nlp_params_at(q, (size_t)wte), nlp_params_at(p, (size_t)old), 64 * 64 * sizeof(float)));
    CHECK(!memcmp(nlp_params_at(q, (size_t)nlp_params_find(q, "h.0.attn.c_attn.weight")),
                  nlp_params_at(p, (size_t)nlp_params_find(p, "h.0.attn.c_attn.weight")), 64 * 192 * sizeof(float)));
    const char *names[] = {"python", "utils", "net"};
    CHECK_EQ_INT(nlp_model_set_labels(e, names, 2), NLP_EINVAL);
    CHECK_EQ_INT(nlp_model_set_labels(e, names, 3), 0);
    char path[512], lab[32];
    snprintf(path, sizeof path, "%s/cls.safetensors", test_tmpdir());
    CHECK_EQ_INT(nlp_model_save(e, path, NLP_DT_F32), 0);
    nlp_model *l = NULL;
    CHECK_EQ_INT(nlp_model_load(&l, path), 0);
    if (l) {
        CHECK(nlp_model_cfg(l)->num_labels == 3 && nlp_model_cfg(l)->vocab_size == 67);
        CHECK(nlp_model_label(l, 1, lab, sizeof lab) == 0 && !strcmp(lab, "utils"));
        CHECK(nlp_model_label(l, 3, lab, sizeof lab) == -1);
        nlp_model_free(l);
    }
    /* the loss: L2 + λ·L1, and L2 alone without LM labels */
    int32_t ids[2 * 5] = {1, 2, 3, 64, 0, 5, 6, 65, 66, 0}, pos[2] = {3, 4}, y[2] = {2, 0};
    nlp_batch b = {.B = 2, .T = 5, .ids = ids, .labels = ids, .cls_labels = y, .cls_pos = pos};
    nlp_losses a, z;
    nlp_model_set_lm_weight(e, 0.5);
    CHECK_EQ_INT(nlp_model_forward(e, &b, &a), 0);
    CHECK(a.lm_loss > 0 && a.cls_loss > 0 && fabs(a.loss - (a.cls_loss + 0.5 * a.lm_loss)) < 1e-9);
    b.labels = NULL;
    CHECK_EQ_INT(nlp_model_forward(e, &b, &z), 0);
    CHECK(z.loss == a.cls_loss && z.lm_loss == 0);
    const float *lg = nlp_model_cls_logits(e);
    CHECK(lg && isfinite(lg[0]) && isfinite(lg[5]));
    /* shrinking is refused */
    c.vocab_size = 10;
    nlp_model *bad = NULL;
    CHECK_EQ_INT(nlp_model_extend(&bad, e, &c, 1), NLP_EINVAL);
    nlp_model_free(e);
    nlp_model_free(m);
}

/* BERT's MLM head runs on the labelled rows only in training: the same
 * losses as over every row (no dropout). */
static void test_bert_gather(void)
{
    nlp_model *m = tiny(NLP_ARCH_BERT, 0);
    nlp_rng r;
    nlp_rng_seed(&r, 4);
    nlp_model_config c = *nlp_model_cfg(m);
    tbatch t;
    make_batch(&t, &c, &r);
    nlp_losses full, part;
    CHECK_EQ_INT(nlp_model_forward(m, &t.b, &full), 0);
    nlp_model_set_training(m, 1);
    CHECK_EQ_INT(nlp_model_forward(m, &t.b, &part), 0);
    CHECK_MSG(fabs(full.mlm_loss - part.mlm_loss) < 1e-6 && full.tokens == part.tokens && full.nsp_loss == part.nsp_loss,
              "mlm %.9g vs %.9g, %d vs %d tokens", full.mlm_loss, part.mlm_loss, full.tokens, part.tokens);
    /* and the same gradients, every parameter */
    nlp_params *p = nlp_model_params(m);
    const size_t n = nlp_params_numel(p);
    float *g = malloc(n * sizeof *g);
    nlp_model_set_training(m, 0);
    nlp_params_zero_grad(p);
    CHECK_EQ_INT(nlp_model_forward(m, &t.b, &full), 0);
    CHECK_EQ_INT(nlp_model_backward(m), 0);
    memcpy(g, nlp_params_grad(p), n * sizeof *g);
    nlp_model_set_training(m, 1);
    nlp_params_zero_grad(p);
    CHECK_EQ_INT(nlp_model_forward(m, &t.b, &part), 0);
    CHECK_EQ_INT(nlp_model_backward(m), 0);
    const float *h = nlp_params_grad(p);
    double worst = 0, scale = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)g[i] - h[i]);
        if (d > worst) worst = d, at = i;
        if (fabs(g[i]) > scale) scale = fabs(g[i]);
    }
    CHECK_MSG(worst <= 1e-5 * scale, "gradient %zu of %zu: %.9g (all rows) vs %.9g (labelled rows), scale %.3g", at, n,
              g[at], h[at], scale);
    free(g);
    nlp_model_free(m);
}

static void test_bad_input(void)
{
    nlp_model *m = tiny(NLP_ARCH_GPT, 0);
    int32_t ids[4] = {1, 2, 64, 3};
    nlp_batch b = {.B = 2, .T = 2, .ids = ids, .labels = ids};
    CHECK_EQ_INT(nlp_model_forward(m, &b, NULL), NLP_EDATA);
    CHECK_STR(nlp_errmsg(), "input row 1, position 0: id 64 outside [0, 64)");
    ids[2] = 5;
    int32_t lab[4] = {1, -100, -3, 4};
    b.labels = lab;
    CHECK_EQ_INT(nlp_model_forward(m, &b, NULL), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "label row 1, position 0: id -3") != NULL);
    b.labels = NULL;
    CHECK_EQ_INT(nlp_model_forward(m, &b, NULL), 0);
    CHECK_EQ_INT(nlp_model_backward(m), NLP_EINVAL); /* no loss */
    b.T = 65;
    CHECK_EQ_INT(nlp_model_forward(m, &b, NULL), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "longer than max-positions 64") != NULL);
    nlp_model_free(m);
    nlp_model *x;
    CHECK_EQ_INT(nlp_model_load(&x, tmp_path("absent.safetensors")), NLP_EIO);
    const char *p = tmp_path("garbage.safetensors");
    write_text(p, "hello, this is not a model file at all");
    CHECK_EQ_INT(nlp_model_load(&x, p), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "garbage.safetensors") != NULL);
    /* a header whose config asks for a 4 TiB sinusoidal table (2^24 positions
     * of d 65536) and holds no weights: refused before anything of the
     * config's size is allocated or filled (the table, far larger than the
     * weights, is named before the missing tensor) */
    nlp_st_writer *w = nlp_st_writer_new();
    nlp_st_writer_meta(w, "model", "encdec");
    nlp_st_writer_meta(w, "config", "{\"d_model\": 65536, \"n_heads\": 1, \"max_len\": 16777216}");
    p = tmp_path("huge-table.safetensors");
    CHECK_EQ_INT(nlp_st_writer_save(w, p), 0);
    nlp_st_writer_free(w);
    CHECK_EQ_INT(nlp_model_load(&x, p), NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "max-positions 16777216 asks for a position table of 4194304 MiB"), "%s",
              nlp_errmsg());
}

/* Four steps straight vs two, checkpoint, reload, two more: bit-identical. */
static void train_steps(nlp_model *m, nlp_optim *o, nlp_train_state *s, int n, double *last)
{
    for (int k = 0; k < n; k++) {
        tbatch t;
        make_batch(&t, nlp_model_cfg(m), &s->data_rng);
        s->data_position[0]++;
        nlp_params *p = nlp_model_params(m);
        nlp_params_zero_grad(p);
        nlp_losses L;
        nlp_model_forward(m, &t.b, &L);
        nlp_model_backward(m);
        nlp_clip_grad_norm(nlp_params_grad(p), nlp_params_numel(p), 0.5);
        nlp_optim_step(o, p, nlp_params_grad(p), nlp_lr_cosine(o->step + 1, 2, 10, 1e-2, 1e-3));
        *last = L.loss;
    }
}

/* nlp_optim_step_scaled against the passes it replaces: the arena scaled by
 * 1/accumulation in place, clipped by nlp_clip_grad_norm, then stepped.
 * Bit for bit, with clipping firing and not, after two steps. */
static void test_scaled_step(void)
{
    for (int c = 0; c < 2; c++) {
        const double max_norm = c ? 1e3 : 0.05; /* 0.05: the factor is below 1 */
        nlp_optim_config oc = nlp_optim_default();
        nlp_model *m1 = tiny(NLP_ARCH_GPT, 0), *m2 = tiny(NLP_ARCH_GPT, 0);
        nlp_params *p1 = nlp_model_params(m1), *p2 = nlp_model_params(m2);
        const size_t n = nlp_params_numel(p1);
        nlp_optim o1, o2;
        nlp_optim_init(&o1, &oc, n);
        nlp_optim_init(&o2, &oc, n);
        nlp_rng r;
        nlp_rng_seed(&r, 5);
        int fired = 0, same_norm = 1;
        for (int k = 0; k < 2; k++) {
            tbatch t;
            make_batch(&t, nlp_model_cfg(m1), &r);
            nlp_losses L;
            nlp_model_set_training(m1, 1);
            nlp_model_set_training(m2, 1);
            nlp_params_zero_grad(p1);
            nlp_params_zero_grad(p2);
            nlp_model_forward(m1, &t.b, &L);
            nlp_model_backward(m1);
            nlp_model_forward(m2, &t.b, &L);
            nlp_model_backward(m2);
            const float sc = 1.0f / 3.0f;
            float *g1 = nlp_params_grad(p1);
            for (size_t i = 0; i < n; i++) g1[i] *= sc;
            double n1 = nlp_clip_grad_norm(g1, n, max_norm);
            nlp_optim_step(&o1, p1, g1, 1e-2);
            double n2 = nlp_grad_norm_scaled(nlp_params_grad(p2), n, sc);
            float f = nlp_clip_factor(n2, max_norm);
            fired |= f < 1;
            same_norm &= n1 == n2;
            nlp_optim_step_scaled(&o2, p2, nlp_params_grad(p2), sc, f, 1e-2);
        }
        CHECK_MSG(same_norm, "gradient norms differ (max_norm %g)", max_norm);
        CHECK_EQ_INT(fired, !c);
        CHECK_MSG(memcmp(nlp_params_data(p1), nlp_params_data(p2), n * sizeof(float)) == 0 &&
                      memcmp(o1.m, o2.m, n * sizeof(float)) == 0 && memcmp(o1.v, o2.v, n * sizeof(float)) == 0,
                  "parameters or moments differ after scaled steps (max_norm %g)", max_norm);
        nlp_optim_free(&o1);
        nlp_optim_free(&o2);
        nlp_model_free(m1);
        nlp_model_free(m2);
    }
}

static void test_resume(void)
{
    for (int a = 0; a < 3; a++) {
        nlp_optim_config oc = nlp_optim_default();
        nlp_model *m1 = tiny((enum nlp_arch)a, 0.1), *m2 = tiny((enum nlp_arch)a, 0.1), *m3;
        nlp_model_set_training(m1, 1);
        nlp_model_set_training(m2, 1);
        nlp_optim o1, o2, o3;
        nlp_optim_init(&o1, &oc, nlp_params_numel(nlp_model_params(m1)));
        nlp_optim_init(&o2, &oc, nlp_params_numel(nlp_model_params(m2)));
        nlp_train_state s1 = {0}, s2 = {0}, s3;
        nlp_rng_seed(&s1.data_rng, 11);
        nlp_rng_seed(&s2.data_rng, 11);
        double l1, l2;
        train_steps(m1, &o1, &s1, 4, &l1);
        train_steps(m2, &o2, &s2, 2, &l2);
        char dir[600];
        snprintf(dir, sizeof dir, "%s/ckpt%d", test_tmpdir(), a);
        CHECK_EQ_INT(nlp_checkpoint_save(dir, m2, &o2, &s2), 0);
        nlp_model_free(m2);
        nlp_optim_free(&o2);
        CHECK_EQ_INT(nlp_checkpoint_load(dir, &m3, &o3, &s3), 0);
        if (!m3) continue;
        CHECK_EQ_INT(o3.step, 2);
        CHECK(s3.data_position[0] == 2);
        nlp_model_set_training(m3, 1);
        train_steps(m3, &o3, &s3, 2, &l2);
        CHECK_MSG(l1 == l2, "arch %d: loss %.9g after resume, %.9g straight", a, l2, l1);
        nlp_params *p1 = nlp_model_params(m1), *p3 = nlp_model_params(m3);
        CHECK_MSG(memcmp(nlp_params_data(p1), nlp_params_data(p3), nlp_params_numel(p1) * 4) == 0,
                  "arch %d: weights differ after resume", a);
        CHECK(memcmp(o1.v, o3.v, o1.n * 4) == 0);
        /* a state from another step than the model is refused */
        CHECK_EQ_INT(nlp_checkpoint_save(dir, m3, &o3, &s3), 0);
        char mp[700];
        snprintf(mp, sizeof mp, "%s/model.safetensors", dir);
        nlp_model_save(m1, mp, NLP_DT_F32); /* no step: as if the second rename never happened */
        nlp_model *m4;
        nlp_optim o4;
        CHECK_EQ_INT(nlp_checkpoint_load(dir, &m4, &o4, &s3), NLP_EFORMAT);
        CHECK(strstr(nlp_errmsg(), "is inconsistent") != NULL);
        nlp_model_free(m1);
        nlp_model_free(m3);
        nlp_optim_free(&o1);
        nlp_optim_free(&o3);
    }
}

static void test_determinism(void)
{
    /* same thread count, same bytes: two passes of forward + backward */
    nlp_model *m = tiny(NLP_ARCH_TRANSFORMER, 0.1);
    nlp_model_set_training(m, 1);
    nlp_rng r;
    nlp_rng_seed(&r, 2);
    tbatch t;
    make_batch(&t, nlp_model_cfg(m), &r);
    nlp_params *p = nlp_model_params(m);
    size_t n = nlp_params_numel(p);
    float *g1 = malloc(n * 4);
    for (int k = 0; k < 2; k++) {
        nlp_params_zero_grad(p);
        nlp_model_seed(m, 3);
        nlp_model_forward(m, &t.b, NULL);
        nlp_model_backward(m);
        if (k == 0) memcpy(g1, nlp_params_grad(p), n * 4);
    }
    CHECK(memcmp(g1, nlp_params_grad(p), n * 4) == 0);
    free(g1);
    nlp_model_free(m);
}

/* The opt-in bf16 products train: 40 AdamW steps on one batch end within a
 * few percent of the fp32 run's loss. */
static void test_bf16_training(void)
{
    if (!nlp_cpu_has_avx512bf16()) {
        test_skip("no AVX-512 BF16 on this CPU");
        return;
    }
    double final[2] = {0, 0}, first = 0;
    for (int mode = 0; mode < 2; mode++) {
        nlp_model *m = tiny(NLP_ARCH_GPT, 0);
        nlp_rng r;
        nlp_rng_seed(&r, 8);
        tbatch t;
        make_batch(&t, nlp_model_cfg(m), &r);
        nlp_optim_config oc = nlp_optim_default();
        nlp_optim o;
        nlp_params *p = nlp_model_params(m);
        nlp_optim_init(&o, &oc, nlp_params_numel(p));
        CHECK_EQ_INT(nlp_gemm_set_mode(mode ? NLP_GEMM_BF16 : NLP_GEMM_F32), 0);
        for (int k = 0; k < 40; k++) {
            nlp_params_zero_grad(p);
            nlp_losses L;
            nlp_model_forward(m, &t.b, &L);
            nlp_model_backward(m);
            nlp_optim_step(&o, p, nlp_params_grad(p), 3e-3);
            if (k == 0) first = L.loss;
            final[mode] = L.loss;
        }
        nlp_gemm_set_mode(NLP_GEMM_F32);
        nlp_optim_free(&o);
        nlp_model_free(m);
    }
    if (t_verbose) printf("# bf16 training: start %.5f, fp32 %.6f, bf16 %.6f\n", first, final[0], final[1]);
    CHECK_MSG(final[0] < 0.5 * first, "fp32 run: loss %.4f from %.4f", final[0], first);
    CHECK_MSG(fabs(final[1] - final[0]) < 0.05 * final[0] + 0.02, "bf16 run ends at %.4f, fp32 at %.4f", final[1], final[0]);
}

/* bf16 products against fp32, one forward and backward of each
 * architecture: the loss within 0.5% and the gradient (relative L2 over all
 * parameters) within 2% for GPT and BERT (GELU; 0.5% and 0.3% when written)
 * and 8% for the encoder-decoder (4.1%): its ReLU's derivative is a step,
 * and the few pre-activations near 0 that bf16 rounding moves across it
 * carry their whole gradient or none (every layer below the last FFN's
 * output is 3-7% off, the last FFN's fc2 0.6%; PyTorch's autocast does
 * the same). Not the fp32 bits (bf16 was used). The GPT batch is 4 × 16
 * tokens, so that the weight gradients (K = 64 tokens) are bf16 products. */
static void test_bf16_parity(void)
{
    if (!nlp_cpu_has_avx512bf16()) {
        test_skip("no AVX-512 BF16 on this CPU");
        return;
    }
    for (int a = 0; a < 3; a++) {
        nlp_model *m = tiny((enum nlp_arch)a, 0);
        nlp_rng r;
        nlp_rng_seed(&r, 21);
        tbatch t;
        make_batch(&t, nlp_model_cfg(m), &r);
        int32_t ids[64];
        if (a == NLP_ARCH_GPT) {
            for (int i = 0; i < 64; i++) ids[i] = (int32_t)nlp_rng_below(&r, 64);
            t.b = (nlp_batch){.B = 4, .T = 16, .ids = ids, .labels = ids};
        }
        nlp_params *p = nlp_model_params(m);
        const size_t n = nlp_params_numel(p);
        float *g[2];
        double loss[2];
        CHECK_EQ_INT(nlp_params_enable_grad(p), 0);
        for (int mode = 0; mode < 2; mode++) {
            CHECK_EQ_INT(nlp_gemm_set_mode(mode ? NLP_GEMM_BF16 : NLP_GEMM_F32), 0);
            nlp_params_zero_grad(p);
            nlp_losses L;
            CHECK_EQ_INT(nlp_model_forward(m, &t.b, &L), 0);
            CHECK_EQ_INT(nlp_model_backward(m), 0);
            loss[mode] = L.loss;
            g[mode] = malloc(n * sizeof(float));
            memcpy(g[mode], nlp_params_grad(p), n * sizeof(float));
        }
        nlp_gemm_set_mode(NLP_GEMM_F32);
        double d2 = 0, r2 = 0;
        for (size_t i = 0; i < n; i++) d2 += (g[1][i] - g[0][i]) * (double)(g[1][i] - g[0][i]), r2 += g[0][i] * (double)g[0][i];
        const double dl = fabs(loss[1] - loss[0]) / loss[0], dg = sqrt(d2 / r2);
        if (t_verbose) printf("# bf16 %s: loss %.3g off, gradient %.3g off (relative)\n", nlp_arch_name((enum nlp_arch)a), dl, dg);
        const double tol = a == NLP_ARCH_TRANSFORMER ? 0.08 : 0.02;
        CHECK_MSG(dl < 5e-3 && dg < tol && dg > 0, "%s: bf16 loss %g off, gradient %g off", nlp_arch_name((enum nlp_arch)a),
                  dl, dg);
        free(g[0]), free(g[1]);
        nlp_model_free(m);
    }
}

/* int8 inference (nlp_model_set_inference_int8): the forward logits of a
 * tiny GPT and encoder-decoder within 3% (RMS, relative; 1.2% and 1.6% when written) of fp32's, and not
 * the fp32 ones (the int8 copy is used); training drops the copy. */
static void test_int8_inference(void)
{
    const enum nlp_arch archs[2] = {NLP_ARCH_GPT, NLP_ARCH_TRANSFORMER};
    for (int a = 0; a < 2; a++) {
        nlp_model *m = tiny(archs[a], 0);
        nlp_rng r;
        nlp_rng_seed(&r, 11);
        tbatch t;
        make_batch(&t, nlp_model_cfg(m), &r);
        t.b.labels = NULL, t.b.tgt_out = NULL;
        CHECK_EQ_INT(nlp_model_forward(m, &t.b, NULL), 0);
        int rows, V;
        const float *l = nlp_model_logits(m, &rows, &V);
        float *ref = malloc((size_t)rows * V * sizeof *ref);
        memcpy(ref, l, (size_t)rows * V * sizeof *ref);
        CHECK_EQ_INT(nlp_model_set_inference_int8(m), 0);
        CHECK(nlp_model_int8_bytes(m) > 0);
        CHECK_EQ_INT(nlp_model_forward(m, &t.b, NULL), 0);
        l = nlp_model_logits(m, NULL, NULL);
        double d2 = 0, r2 = 0;
        for (size_t i = 0; i < (size_t)rows * V; i++) d2 += (l[i] - ref[i]) * (double)(l[i] - ref[i]), r2 += ref[i] * (double)ref[i];
        const double rel = sqrt(d2 / r2);
        if (t_verbose) printf("# int8 %s: logits %.3g off (RMS, relative)\n", nlp_arch_name(archs[a]), rel);
        CHECK_MSG(rel < 0.03 && rel > 1e-6, "%s: int8 logits %g off fp32's", nlp_arch_name(archs[a]), rel);
        nlp_model_set_training(m, 1);
        CHECK(nlp_model_int8_bytes(m) == 0);
        free(ref);
        nlp_model_free(m);
    }
}

// --- incremental decoding

static double max_diff(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* gpt and llama: prompt of 3, then one position at a time = the full pass;
 * reordered rows; many positions after a reorder. */
static void cache_check(const char *name, nlp_model *m, int packed)
{
    const int B = 2, T = 7, V = 64;
    int32_t ids[2 * 7] = {5, 9, 1, 33, 2, 60, 7, 8, 8, 4, 0, 63, 12, 3};
    nlp_batch full = {.B = B, .T = T, .ids = ids};
    nlp_model_set_training(m, 0);
    CHECK_EQ_INT(nlp_model_forward(m, &full, NULL), 0);
    float *ref = malloc((size_t)B * T * V * 4);
    memcpy(ref, nlp_model_logits(m, NULL, NULL), (size_t)B * T * V * 4);
    if (packed) CHECK_EQ_INT(nlp_model_pack_weights(m), 0); /* decoding from the packed copies */
    else nlp_model_set_training(m, 1); /* decoding turns dropout off by itself */
    nlp_cache *c;
    CHECK_EQ_INT(nlp_cache_new(&c, m, B, 16), 0);
    int32_t step[2 * 3];
    for (int b = 0; b < B; b++) memcpy(step + b * 3, ids + b * T, 3 * 4);
    nlp_batch pb = {.B = B, .T = 3, .ids = step};
    CHECK_EQ_INT(nlp_model_decode(m, &pb, c), 0);
    double d = 0;
    for (int b = 0; b < B; b++)
        d = fmax(d, max_diff(nlp_model_logits(m, NULL, NULL) + (size_t)b * 3 * V, ref + (size_t)b * T * V, 3 * V));
    for (int t = 3; t < T; t++) {
        int32_t one[2] = {ids[t], ids[T + t]};
        nlp_batch sb = {.B = B, .T = 1, .ids = one};
        CHECK_EQ_INT(nlp_model_decode(m, &sb, c), 0);
        for (int b = 0; b < B; b++)
            d = fmax(d, max_diff(nlp_model_logits(m, NULL, NULL) + (size_t)b * V, ref + ((size_t)b * T + t) * V, V));
    }
    CHECK_MSG(d < 1e-5, "%s: cached logits differ by %g", name, d);
    CHECK_EQ_INT(nlp_cache_len(c), T);
    /* reorder: both rows take row 1's history; the next step gives row 1's logits twice */
    int32_t rows[2] = {1, 1}, nxt[2] = {17, 17};
    CHECK_EQ_INT(nlp_cache_reorder(c, rows), 0);
    nlp_batch nb = {.B = B, .T = 1, .ids = nxt};
    CHECK_EQ_INT(nlp_model_decode(m, &nb, c), 0);
    const float *lg = nlp_model_logits(m, NULL, NULL);
    CHECK(memcmp(lg, lg + V, V * 4) == 0);
    /* then several positions at once (the reordered keys are moved into
     * place first): both rows alike, and as a fresh cache given row 1's
     * history */
    int32_t five[2 * 5] = {3, 4, 5, 6, 7, 3, 4, 5, 6, 7};
    nlp_batch fb5 = {.B = B, .T = 5, .ids = five};
    CHECK_EQ_INT(nlp_model_decode(m, &fb5, c), 0);
    lg = nlp_model_logits(m, NULL, NULL);
    CHECK(memcmp(lg, lg + 5 * V, 5 * V * 4) == 0);
    float *got5 = malloc(5 * V * 4);
    memcpy(got5, lg, 5 * V * 4);
    int32_t hist[13];
    memcpy(hist, ids + T, 7 * 4);
    hist[7] = 17;
    memcpy(hist + 8, five, 5 * 4);
    nlp_cache *c1;
    CHECK_EQ_INT(nlp_cache_new(&c1, m, 1, 16), 0);
    nlp_batch hb = {.B = 1, .T = 13, .ids = hist};
    CHECK_EQ_INT(nlp_model_decode(m, &hb, c1), 0);
    d = max_diff(got5, nlp_model_logits(m, NULL, NULL) + 8 * V, 5 * V);
    CHECK_MSG(d < 1e-5, "%s: positions after a reorder differ by %g", name, d);
    nlp_cache_free(c1);
    free(got5);
    /* misuse */
    int32_t many[2 * 9] = {0};
    nlp_batch big = {.B = B, .T = 4, .ids = many}; /* 13 + 4 > 16 */
    CHECK_EQ_INT(nlp_model_decode(m, &big, c), NLP_EDATA);
    nlp_batch wrong = {.B = 1, .T = 1, .ids = many};
    CHECK_EQ_INT(nlp_model_decode(m, &wrong, c), NLP_EINVAL);
    nlp_cache_free(c);
    free(ref);
    nlp_model_free(m);
}

static void test_cache(void)
{
    const int B = 2, T = 7, V = 64;
    double d;
    float *ref;
    nlp_cache *c;
    nlp_model *m;
    cache_check("gpt", tiny(NLP_ARCH_GPT, 0.1), 0);
    /* rotary positions: the cache holds rotated keys, each new position is
     * rotated at its own place; grouped keys and values (fewer in the cache) */
    nlp_model_config cfg;
    nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_GPT);
    cfg.vocab_size = cfg.src_vocab_size = 64, cfg.positions = NLP_POS_ROPE, cfg.rope_layout = 1, cfg.kv_heads = 2;
    cfg.dropout = cfg.attention_dropout = 0.1;
    CHECK_EQ_INT(nlp_model_new(&m, &cfg, 3), 0);
    cache_check("gpt rope interleaved, 2 kv heads", m, 0);
    nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_LLAMA);
    cfg.vocab_size = 64, cfg.tie_output = 0, cfg.dropout = 0.1;
    CHECK_EQ_INT(nlp_model_new(&m, &cfg, 3), 0);
    cache_check("llama", m, 0);
    /* the same from the packed weights (q|k|v and gate|up packed as one) */
    nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_LLAMA);
    cfg.vocab_size = 64, cfg.kv_heads = 1;
    CHECK_EQ_INT(nlp_model_new(&m, &cfg, 4), 0);
    cache_check("llama, 1 kv head, packed weights", m, 1);
    nlp_model *bert = tiny(NLP_ARCH_BERT, 0);
    CHECK_EQ_INT(nlp_cache_new(&c, bert, 1, 4), NLP_EINVAL);
    nlp_model_free(bert);

    /* transformer: padded sources, targets one position at a time */
    for (int pre = 0; pre < 3; pre++) {
        nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_TRANSFORMER);
        cfg.vocab_size = cfg.src_vocab_size = 64;
        cfg.pre_ln = pre == 1, cfg.positions = pre == 1 ? NLP_POS_LEARNED : pre ? NLP_POS_ROPE : NLP_POS_SINUSOIDAL;
        nlp_model_new(&m, &cfg, 4);
        const int S = 5;
        int32_t src[2 * 5] = {7, 8, 9, 0, 0, 10, 11, 12, 13, 14}, tin[2 * 7] = {1, 5, 6, 7, 8, 9, 10, 1, 20, 21, 22, 23, 24, 25};
        nlp_batch fb = {.B = B, .T = T, .S = S, .src = src, .tgt_in = tin};
        CHECK_EQ_INT(nlp_model_forward(m, &fb, NULL), 0);
        ref = malloc((size_t)B * T * V * 4);
        memcpy(ref, nlp_model_logits(m, NULL, NULL), (size_t)B * T * V * 4);
        CHECK_EQ_INT(nlp_cache_new(&c, m, B, T), 0);
        nlp_batch eb = {.B = B, .S = S, .src = src};
        nlp_batch early = {.B = B, .T = 1, .tgt_in = tin};
        CHECK_EQ_INT(nlp_model_decode(m, &early, c), NLP_EINVAL); /* nothing encoded yet */
        CHECK_EQ_INT(nlp_model_encode(m, &eb, c), 0);
        d = 0;
        for (int t = 0; t < T; t++) {
            int32_t one[2] = {tin[t], tin[T + t]};
            nlp_batch sb = {.B = B, .T = 1, .tgt_in = one};
            CHECK_EQ_INT(nlp_model_decode(m, &sb, c), 0);
            for (int b = 0; b < B; b++)
                d = fmax(d, max_diff(nlp_model_logits(m, NULL, NULL) + (size_t)b * V, ref + ((size_t)b * T + t) * V, V));
        }
        CHECK_MSG(d < 1e-5, "transformer %s: cached logits differ by %g", pre == 2 ? "rope" : pre ? "pre-LN" : "post-LN", d);
        nlp_cache_free(c);
        free(ref);
        nlp_model_free(m);
    }
}

/* T5's relative positions: the buckets (values from T5's
 * _relative_position_bucket run in torch), the configuration keys, the model
 * through the KV cache and beam reordering against full passes. */
static void relative_model(int k);
static void relative_memory(void);

static void test_relative(void)
{
    /* key − query offsets: bidirectional, then causal, 32 buckets up to 128 */
    const int rel[] = {0, -1, 1, -7, -8, -9, -12, -20, -100, -200, 7, 8, 9, 50, 300, -1000};
    const int bi[] = {0, 1, 17, 7, 8, 8, 9, 10, 15, 15, 23, 24, 24, 29, 31, 15};
    const int ca[] = {0, 1, 0, 7, 8, 9, 12, 17, 30, 31, 0, 0, 0, 0, 0, 31};
    for (int i = 0; i < 16; i++) {
        CHECK_EQ_INT(nlp_relpos_bucket(rel[i], 1, 32, 128), bi[i]);
        CHECK_EQ_INT(nlp_relpos_bucket(rel[i], 0, 32, 128), ca[i]);
    }
    /* keys: dumped and read back (YAML and JSON), misuse named */
    nlp_model_config c, c2;
    const char *ov[] = {"arch=transformer", "positions=relative", "relative-buckets=16", "relative-max-distance=40", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov), 0);
    CHECK(c.positions == NLP_POS_RELATIVE && c.rel_buckets == 16 && c.rel_max_distance == 40);
    CHECK_EQ_INT(nlp_model_config_max_len(&c), INT_MAX); /* no table: any length */
    nlp_buf y = {0};
    CHECK_EQ_INT(nlp_model_config_dump(&c, &y), 0);
    CHECK(strstr(y.data, "positions: relative\nrelative-buckets: 16\nrelative-max-distance: 40\n") != NULL);
    CHECK_EQ_INT(build_from(&c2, NULL, y.data, NULL), 0);
    CHECK(nlp_model_config_equal(&c, &c2));
    nlp_buf_free(&y);
    c.preset[0] = 0;
    nlp_buf j = {0};
    const char *kind;
    CHECK_EQ_INT(nlp_model_config_to_json(&c, &j, &kind), 0);
    CHECK_EQ_INT(nlp_model_config_from_json(&c2, kind, j.data, j.len, "meta"), 0);
    CHECK(nlp_model_config_equal(&c, &c2));
    nlp_buf_free(&j);
    const char *bad1[] = {"arch=transformer", "relative-buckets=16", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c2, NULL, NULL, 0, bad1), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "'relative-buckets' applies to relative positions") != NULL);
    const char *bad2[] = {"arch=transformer", "positions=relative", "relative-buckets=32", "relative-max-distance=16", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c2, NULL, NULL, 0, bad2), NLP_EINVAL);
    CHECK(strstr(nlp_errmsg(), "relative-max-distance 16 must be above relative-buckets / 2") != NULL);
    const char *bad3[] = {"positions=relative", NULL};
    CHECK(nlp_model_config_build(&c2, NULL, NULL, 0, bad3) != 0);
    const char *bad4[] = {"arch=transformer", "ffn=gated-gelu", "activation=relu", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c2, NULL, NULL, 0, bad4), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "'activation' relu does not apply to ffn gated-gelu") != NULL);
    /* T5's choices: dumped (only when taken) and read back; t5-small is
     * HF's t5-small to the parameter (60,506,624: tied, no biases, two
     * relative tables of 32 x 8) */
    const char *ov5[] = {"arch=transformer", "norm=rms", "bias=false", "ffn=gated-gelu", NULL};
    CHECK_EQ_INT(nlp_model_config_build(&c, "tiny", NULL, 0, ov5), 0);
    CHECK(c.pre_ln == 2 && !c.bias && c.ffn == NLP_FFN_GATED_GELU);
    CHECK_EQ_INT(nlp_model_config_dump(&c, &y), 0);
    CHECK(strstr(y.data, "norm: rms\nbias: false\nffn: gated-gelu\n") != NULL);
    CHECK_EQ_INT(build_from(&c2, NULL, y.data, NULL), 0);
    CHECK(nlp_model_config_equal(&c, &c2));
    nlp_buf_free(&y);
    c.preset[0] = 0;
    CHECK_EQ_INT(nlp_model_config_to_json(&c, &j, &kind), 0);
    CHECK(strstr(j.data, "\"norm\": \"rms\", \"bias\": false, \"ffn\": \"gated-gelu\"") != NULL);
    CHECK_EQ_INT(nlp_model_config_from_json(&c2, kind, j.data, j.len, "meta"), 0);
    CHECK(nlp_model_config_equal(&c, &c2));
    nlp_buf_free(&j);
    nlp_model_config_preset(&c, "t5-small", NLP_ARCH_GPT);
    CHECK(c.arch == NLP_ARCH_TRANSFORMER && c.positions == NLP_POS_RELATIVE && c.pre_ln == 2 && !c.bias &&
          c.encoder_layers == 6 && c.decoder_layers == 6 && c.d_model == 512 && c.heads == 8 && c.d_ff == 2048);
    CHECK_EQ_INT((long long)count_params(&c), 60506624LL);
    nlp_model_config_preset(&c, "small", NLP_ARCH_TRANSFORMER); /* the defaults name none of them */
    CHECK_EQ_INT(nlp_model_config_dump(&c, &y), 0);
    CHECK(!strstr(y.data, "bias") && !strstr(y.data, "ffn") && !strstr(y.data, "relative"));
    nlp_buf_free(&y);
    CHECK_EQ_INT(nlp_model_config_to_json(&c, &j, &kind), 0);
    CHECK(!strstr(j.data, "bias") && !strstr(j.data, "ffn") && !strstr(j.data, "norm"));
    nlp_buf_free(&j);

    for (int k = 0; k < 2; k++) relative_model(k);
    relative_memory();
}

/* The training memory estimate against what a training pass at that shape
 * allocates: the activation arena, and with relative positions each stack's
 * bias and its gradient (encoder S x S, decoder T x T: T != S tells them
 * apart), byte for byte; absolute positions the same without them. */
static void relative_memory(void)
{
    for (int k = 0; k < 2; k++) {
        nlp_model_config c;
        nlp_model_config_preset(&c, "tiny", NLP_ARCH_TRANSFORMER);
        c.vocab_size = c.src_vocab_size = 64;
        if (k) c.positions = NLP_POS_RELATIVE, c.rel_buckets = 8, c.rel_max_distance = 6;
        const int B = 2, S = 5, T = 7;
        nlp_train_memory e, e0;
        CHECK_EQ_INT(nlp_model_train_memory(&c, B, T, S, &e), 0);
        nlp_model *m;
        CHECK_EQ_INT(nlp_model_new(&m, &c, 4), 0);
        if (!m) return;
        nlp_model_set_training(m, 1);
        int32_t src[2 * 5] = {7, 8, 9, 0, 0, 10, 11, 12, 13, 14};
        int32_t tin[2 * 7] = {1, 5, 6, 7, 8, 9, 10, 1, 20, 21, 22, 23, 24, 25};
        int32_t tout[2 * 7] = {5, 6, 7, 8, 9, 10, 2, 20, 21, 22, 23, 24, 25, 2};
        nlp_batch b = {.B = B, .T = T, .S = S, .src = src, .tgt_in = tin, .tgt_out = tout};
        nlp_losses l;
        CHECK_EQ_INT(nlp_model_forward(m, &b, &l), 0);
        CHECK_EQ_INT(nlp_model_backward(m), 0);
        CHECK_MSG(nlp_model_act_bytes(m) == e.acts, "transformer %s: estimate %llu bytes of activations, a training "
                  "pass holds %llu", k ? "relative" : "sinusoidal", (unsigned long long)e.acts,
                  (unsigned long long)nlp_model_act_bytes(m));
        /* the bias buffers are the difference from the same model without them */
        nlp_model_config a = c;
        a.positions = NLP_POS_SINUSOIDAL;
        CHECK_EQ_INT(nlp_model_train_memory(&a, B, T, S, &e0), 0);
        CHECK_EQ_INT((long long)(e.acts - e0.acts), k ? 2LL * 4 * c.heads * (S * S + T * T) : 0LL);
        /* validation and decoding at that shape take no more */
        nlp_model_set_training(m, 0);
        b.tgt_out = NULL;
        CHECK_EQ_INT(nlp_model_forward(m, &b, NULL), 0);
        nlp_cache *cc;
        CHECK_EQ_INT(nlp_cache_new(&cc, m, B, T), 0);
        nlp_batch eb = {.B = B, .S = S, .src = src};
        CHECK_EQ_INT(nlp_model_encode(m, &eb, cc), 0);
        for (int t = 0; t < T; t++) {
            int32_t one[2] = {tin[t], tin[T + t]};
            nlp_batch sb = {.B = B, .T = 1, .tgt_in = one};
            CHECK_EQ_INT(nlp_model_decode(m, &sb, cc), 0);
        }
        nlp_cache_free(cc);
        CHECK(nlp_model_act_bytes(m) <= e.acts);
        nlp_model_free(m);
    }
}

/* A relative-position model (k = 1: T5 v1.1's block too): saved and loaded
 * with its tables, no absolute positions; the KV cache and beam reordering
 * against full passes. */
static void relative_model(int k)
{
    nlp_model_config c;
    nlp_model_config_preset(&c, "tiny", NLP_ARCH_TRANSFORMER);
    c.vocab_size = c.src_vocab_size = 64, c.positions = NLP_POS_RELATIVE, c.rel_buckets = 8, c.rel_max_distance = 6;
    c.pre_ln = 1 + k, c.dropout = 0.1;
    if (k) c.bias = 0, c.ffn = NLP_FFN_GATED_GELU, c.activation = NLP_ACT_GELU_TANH, c.ln_eps = 1e-6;
    nlp_model *m;
    CHECK_EQ_INT(nlp_model_new(&m, &c, 4), 0);
    if (!m) return;
    nlp_params *p = nlp_model_params(m);
    int tables = 0, gates = 0;
    for (size_t i = 0; i < nlp_params_count(p); i++) {
        const nlp_param_info *t = nlp_params_info(p, i);
        if (strstr(t->name, "rel_bias")) tables++, CHECK(t->shape[0] == 8 && t->shape[1] == 4);
        CHECK(!strstr(t->name, "_pos"));
        if (k) CHECK_MSG(!strstr(t->name, ".bias") && !strstr(t->name, "fc1"), "%s in a t5 v1.1 model", t->name);
        gates += strstr(t->name, ".ffn.gate.weight") || strstr(t->name, ".ffn.up.weight");
    }
    CHECK_EQ_INT(gates, k ? 8 : 0);
    CHECK_EQ_INT(tables, 2);
    const int B = 2, S = 5, T = 7, V = 64;
    int32_t src[2 * 5] = {7, 8, 9, 0, 0, 10, 11, 12, 13, 14}, tin[2 * 7] = {1, 5, 6, 7, 8, 9, 10, 1, 20, 21, 22, 23, 24, 25};
    nlp_batch fb = {.B = B, .T = T, .S = S, .src = src, .tgt_in = tin};
    CHECK_EQ_INT(nlp_model_forward(m, &fb, NULL), 0);
    float *ref = malloc((size_t)B * T * V * 4);
    memcpy(ref, nlp_model_logits(m, NULL, NULL), (size_t)B * T * V * 4);
    const char *path = tmp_path("rel.safetensors");
    CHECK_EQ_INT(nlp_model_save(m, path, NLP_DT_F32), 0);
    nlp_model *m2;
    CHECK_EQ_INT(nlp_model_load(&m2, path), 0);
    if (m2) {
        CHECK(nlp_model_config_equal(nlp_model_cfg(m), nlp_model_cfg(m2)));
        CHECK_EQ_INT(nlp_model_forward(m2, &fb, NULL), 0);
        CHECK(memcmp(ref, nlp_model_logits(m2, NULL, NULL), (size_t)B * T * V * 4) == 0);
        nlp_model_free(m2);
    }
    /* one position at a time through the cache = the full pass */
    nlp_cache *cc;
    CHECK_EQ_INT(nlp_cache_new(&cc, m, B, T), 0);
    nlp_batch eb = {.B = B, .S = S, .src = src};
    CHECK_EQ_INT(nlp_model_encode(m, &eb, cc), 0);
    double d = 0;
    for (int t = 0; t < T; t++) {
        int32_t one[2] = {tin[t], tin[T + t]};
        nlp_batch sb = {.B = B, .T = 1, .tgt_in = one};
        CHECK_EQ_INT(nlp_model_decode(m, &sb, cc), 0);
        for (int b = 0; b < B; b++)
            d = fmax(d, max_diff(nlp_model_logits(m, NULL, NULL) + (size_t)b * V, ref + ((size_t)b * T + t) * V, V));
    }
    CHECK_MSG(d < 1e-5, "transformer relative: cached logits differ by %g", d);
    nlp_cache_free(cc);
    /* beam search: source row 1 encoded once for two beams; the beams part,
     * then both take beam 1's history (reordered by index), one position,
     * then three at once: each = a full pass over that history */
    CHECK_EQ_INT(nlp_cache_new(&cc, m, 2, 12), 0);
    nlp_batch e1 = {.B = 1, .S = S, .src = src + S};
    CHECK_EQ_INT(nlp_model_encode(m, &e1, cc), 0);
    int32_t beams[2 * 3] = {1, 5, 6, 1, 30, 31};
    for (int t = 0; t < 3; t++) {
        int32_t one[2] = {beams[t], beams[3 + t]};
        nlp_batch sb = {.B = 2, .T = 1, .tgt_in = one};
        CHECK_EQ_INT(nlp_model_decode(m, &sb, cc), 0);
    }
    int32_t rows[2] = {1, 1};
    CHECK_EQ_INT(nlp_cache_reorder(cc, rows), 0);
    int32_t nxt[2] = {40, 40}, three[2 * 3] = {41, 42, 43, 41, 42, 43};
    nlp_batch nb = {.B = 2, .T = 1, .tgt_in = nxt}, tb = {.B = 2, .T = 3, .tgt_in = three};
    CHECK_EQ_INT(nlp_model_decode(m, &nb, cc), 0);
    float got[4 * 64];
    memcpy(got, nlp_model_logits(m, NULL, NULL) + V, V * 4); /* beam 1 after the reorder */
    CHECK(memcmp(nlp_model_logits(m, NULL, NULL), got, V * 4) == 0);
    CHECK_EQ_INT(nlp_model_decode(m, &tb, cc), 0);
    memcpy(got + V, nlp_model_logits(m, NULL, NULL), 3 * V * 4);
    CHECK(memcmp(nlp_model_logits(m, NULL, NULL), nlp_model_logits(m, NULL, NULL) + 3 * V, 3 * V * 4) == 0);
    int32_t hist[7] = {1, 30, 31, 40, 41, 42, 43};
    nlp_batch hb = {.B = 1, .T = 7, .S = S, .src = src + S, .tgt_in = hist};
    CHECK_EQ_INT(nlp_model_forward(m, &hb, NULL), 0);
    d = max_diff(got, nlp_model_logits(m, NULL, NULL) + 3 * V, 4 * V);
    CHECK_MSG(d < 1e-5, "transformer relative: beam-reordered logits differ from a full pass by %g", d);
    nlp_cache_free(cc);
    /* the bias matters: zeroed tables change the logits */
    for (size_t i = 0; i < nlp_params_count(p); i++)
        if (strstr(nlp_params_info(p, i)->name, "rel_bias"))
            memset(nlp_params_at(p, i), 0, nlp_params_info(p, i)->numel * 4);
    CHECK_EQ_INT(nlp_model_forward(m, &fb, NULL), 0);
    CHECK(max_diff(ref, nlp_model_logits(m, NULL, NULL), (size_t)B * T * V) > 1e-3);
    free(ref);
    nlp_model_free(m);
}

/* Reads lines of space-separated ids into rows of `width` (right-padded with pad); returns the row count. */
static int read_ids(const char *path, int32_t *out, int max_rows, int width, int32_t pad, int *lens)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[4096];
    int r = 0;
    while (r < max_rows && fgets(line, sizeof line, f)) {
        int n = 0;
        for (char *p = strtok(line, " \n"); p && n < width; p = strtok(NULL, " \n")) out[r * width + n++] = atoi(p);
        if (lens) lens[r] = n;
        for (int i = n; i < width; i++) out[r * width + i] = pad;
        r++;
    }
    fclose(f);
    return r;
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Greedy decoding of the shared decode fixtures (shared/parity/README.md,
 * "Decoding fixtures") through the cache: the whole set as one padded batch
 * and each example alone. */
static void test_decode_fixtures(void)
{
    /* the compact set in tests/data/golden holds the GPT fixture only */
    const char *sh = test_root("parity/fixtures/gpt/decode");
    if (!sh) return;
    const char *sets[] = {"gpt", "encdec", "encdec_preln", "encdec_sep_learned"};
    char path[1024];
    for (int k = 0; k < 4; k++) {
        int gpt = k == 0;
        snprintf(path, sizeof path, "%s/parity/fixtures/%s", sh, sets[k]);
        if (access(path, R_OK) != 0) {
            test_skip("the encoder-decoder fixtures are in ../shared only, not in tests/data/golden");
            continue;
        }
        nlp_model *m;
        CHECK_EQ_INT(nlp_model_load(&m, path), 0);
        if (!m) continue;
        int32_t in[64 * 16], want[64 * 16], lens[64];
        snprintf(path, sizeof path, "%s/parity/fixtures/%s/decode/prompts.txt", sh, sets[k]);
        int n = read_ids(path, in, 64, 16, 0, lens);
        snprintf(path, sizeof path, "%s/parity/fixtures/%s/decode/greedy.txt", sh, sets[k]);
        int n2 = read_ids(path, want, 64, 16, 0, NULL);
        CHECK(n > 0 && n == n2);
        const int N = 16, V = nlp_model_cfg(m)->vocab_size;
        for (int alone = 0; alone < 2; alone++) {
            int mism = 0;
            for (int r0 = 0; r0 < n; r0 += alone ? 1 : n) {
                int B = alone ? 1 : n, W = 0;
                for (int i = 0; i < B; i++) W = lens[r0 + i] > W ? lens[r0 + i] : W;
                int32_t batch[64 * 16], tok[64], out[64 * 16];
                for (int i = 0; i < B; i++) memcpy(batch + i * W, in + (r0 + i) * 16, (size_t)W * 4);
                nlp_cache *c;
                nlp_cache_new(&c, m, B, gpt ? W + N : N);
                if (gpt) {
                    nlp_batch pb = {.B = B, .T = W, .ids = batch};
                    CHECK_EQ_INT(nlp_model_decode(m, &pb, c), 0);
                    for (int i = 0; i < B; i++)
                        tok[i] = argmax(nlp_model_logits(m, NULL, NULL) + ((size_t)i * W + W - 1) * V, V);
                } else {
                    nlp_batch eb = {.B = B, .S = W, .src = batch};
                    CHECK_EQ_INT(nlp_model_encode(m, &eb, c), 0);
                    for (int i = 0; i < B; i++) tok[i] = nlp_model_cfg(m)->bos_id;
                    nlp_batch sb = {.B = B, .T = 1, .tgt_in = tok};
                    CHECK_EQ_INT(nlp_model_decode(m, &sb, c), 0);
                    for (int i = 0; i < B; i++) tok[i] = argmax(nlp_model_logits(m, NULL, NULL) + (size_t)i * V, V);
                }
                for (int s = 0; s < N; s++) {
                    for (int i = 0; i < B; i++) out[i * N + s] = tok[i];
                    if (s == N - 1) break;
                    nlp_batch sb = {.B = B, .T = 1, .ids = tok, .tgt_in = tok};
                    if (nlp_model_decode(m, &sb, c)) break;
                    for (int i = 0; i < B; i++) tok[i] = argmax(nlp_model_logits(m, NULL, NULL) + (size_t)i * V, V);
                }
                for (int i = 0; i < B; i++) mism += memcmp(out + i * N, want + (r0 + i) * 16, N * 4) != 0;
                nlp_cache_free(c);
            }
            CHECK_MSG(mism == 0, "%s greedy (%s): %d of %d lines differ", sets[k], alone ? "one by one" : "one batch",
                      mism, n);
        }
        nlp_model_free(m);
    }
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_presets);
    RUN(test_settings);
    RUN(test_json);
    RUN(test_gradients);
    RUN(test_shares);
    RUN(test_save_load);
    RUN(test_classifier);
    RUN(test_bert_gather);
    RUN(test_bad_input);
    RUN(test_scaled_step);
    RUN(test_resume);
    RUN(test_determinism);
    RUN(test_bf16_training);
    RUN(test_bf16_parity);
    RUN(test_int8_inference);
    RUN(test_cache);
    RUN(test_relative);
    RUN(test_decode_fixtures);
    return TEST_END();
}
