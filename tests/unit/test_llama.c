/*
 * test_llama.c — the LLaMA family and rotary positions at the model level:
 * HuggingFace LLaMA directories (config.json + model.safetensors, or shards
 * with model.safetensors.index.json; F32, F16 and BF16) load to the model
 * they hold, bf16 weights stay bf16 under --bf16's copy, our own llama saves
 * carry HF's config.json, bad directories and configs are refused naming
 * what is wrong; the two rotary layouts are one model up to a permutation of
 * the q and k rows; rotary models take sequences past max-positions, learned
 * ones do not, and a sliding window bounds them.
 */
#include "base/err.h"
#include "base/io.h"
#include "model/config.h"
#include "model/model.h"
#include "nn/safetensors.h"
#include "test.h"

#include <sys/stat.h>

static void write_text(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    fputs(s, f);
    fclose(f);
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static const int B = 2, T = 7;
static int32_t IDS[2 * 7] = {5, 9, 1, 33, 2, 60, 7, 8, 8, 4, 0, 63, 12, 3};

/* Logits of the fixed batch, copied (free them). */
static float *logits_of(nlp_model *m)
{
    nlp_batch b = {.B = B, .T = T, .ids = IDS};
    if (nlp_model_forward(m, &b, NULL)) return NULL;
    int rows, V;
    const float *l = nlp_model_logits(m, &rows, &V);
    float *c = malloc((size_t)rows * V * sizeof *c);
    memcpy(c, l, (size_t)rows * V * sizeof *c);
    return c;
}

static nlp_model *llama(int tied, int kv, uint64_t seed)
{
    nlp_model_config c;
    nlp_model_config_preset(&c, "tiny", NLP_ARCH_LLAMA);
    c.vocab_size = 64, c.tie_output = tied, c.kv_heads = kv;
    c.init_std = 0.2; /* logits far from uniform */
    nlp_model *m = NULL;
    nlp_model_new(&m, &c, seed);
    return m;
}

static float f16_to_f32_ref(uint16_t h) { return nlp_f16_to_f32(h); }

/* fp32 to IEEE half, round to nearest even (normal range only: the test's
 * weights are small). */
static uint16_t f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000, e = (u >> 23) & 0xff, m = u & 0x7fffff;
    if (e < 103) return (uint16_t)sign; /* below half's subnormals: ±0 */
    if (e < 113) { /* subnormal half */
        m |= 0x800000;
        int sh = 126 - (int)e;
        uint32_t r = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t h = ((e - 112) << 10) | (m >> 13), rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

/* Writes m's parameters as HF would: n shards of the given dtype (F32, F16,
 * BF16) with model.safetensors.index.json, or one model.safetensors (n 1),
 * metadata {"format": "pt"} only, and config.json (our HF LlamaConfig). */
static int write_hf(nlp_model *m, const char *dir, int n, enum nlp_dtype dt)
{
    mkdir(dir, 0777);
    nlp_params *p = nlp_model_params(m);
    const size_t np = nlp_params_count(p);
    nlp_buf cj = {0}, idx = {0};
    const char *kind;
    if (nlp_model_config_to_json(nlp_model_cfg(m), &cj, &kind)) return -1;
    char path[700];
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, cj.data);
    nlp_buf_free(&cj);
    uint16_t *half = malloc(nlp_params_numel(p) * sizeof *half);
    const float *w = nlp_params_data(p);
    for (size_t i = 0; i < nlp_params_numel(p); i++) half[i] = f32_to_f16(w[i]);
    nlp_buf_printf(&idx, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
    int rc = 0;
    for (int s = 0; s < n && !rc; s++) {
        nlp_st_writer *wr = nlp_st_writer_new();
        nlp_st_writer_meta(wr, "format", "pt");
        char name[64];
        if (n == 1) snprintf(name, sizeof name, "model.safetensors");
        else snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, n);
        /* HF orders a shard's tensors by name: here, every n-th tensor in reverse */
        for (size_t i = np; i-- > 0;) {
            if ((int)(i % (size_t)n) != s) continue;
            const nlp_param_info *t = nlp_params_info(p, i);
            if (dt == NLP_DT_F16) rc |= nlp_st_writer_add(wr, t->name, NLP_DT_F16, t->ndim, t->shape, half + t->off, NLP_DT_F16);
            else rc |= nlp_st_writer_add(wr, t->name, dt, t->ndim, t->shape, w + t->off, NLP_DT_F32);
            nlp_buf_printf(&idx, "%s\"%s\": \"%s\"", idx.data[idx.len - 1] == '{' ? "" : ", ", t->name, name);
        }
        snprintf(path, sizeof path, "%s/%s", dir, name);
        rc |= nlp_st_writer_save(wr, path);
        nlp_st_writer_free(wr);
    }
    nlp_buf_printf(&idx, "}}\n");
    if (n > 1) {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        write_text(path, idx.data);
    }
    nlp_buf_free(&idx);
    free(half);
    return rc;
}

/* Rounds m's weights in place as a file of dtype dt holds them. */
static void round_weights(nlp_model *m, enum nlp_dtype dt)
{
    nlp_params *p = nlp_model_params(m);
    float *w = nlp_params_data(p);
    for (size_t i = 0; i < nlp_params_numel(p); i++)
        w[i] = dt == NLP_DT_BF16 ? nlp_bf16_to_f32(nlp_f32_to_bf16(w[i])) : f16_to_f32_ref(f32_to_f16(w[i]));
}

static void test_hf_dirs(void)
{
    for (int tied = 0; tied < 2; tied++) {
        nlp_model *m = llama(tied, 2, 11);
        CHECK(m != NULL);
        if (!m) return;
        float *ref = logits_of(m);
        const size_t nl = (size_t)B * T * 64;
        /* our own save: HF's names, format pt, config.json beside */
        char dir[600];
        snprintf(dir, sizeof dir, "%s/own%d", test_tmpdir(), tied);
        mkdir(dir, 0777);
        CHECK_EQ_INT(nlp_model_save(m, dir, NLP_DT_F32), 0);
        char cj[700];
        snprintf(cj, sizeof cj, "%s/config.json", dir);
        char *text;
        size_t len;
        CHECK_EQ_INT(nlp_read_file(cj, &text, &len), 0);
        CHECK_MSG(text && strstr(text, "\"model_type\": \"llama\"") && strstr(text, "\"LlamaForCausalLM\"") &&
                      strstr(text, tied ? "\"tie_word_embeddings\": true" : "\"tie_word_embeddings\": false") &&
                      strstr(text, "\"num_key_value_heads\": 2"),
                  "config.json: %s", text ? text : "(none)");
        nlp_model *back = NULL;
        CHECK_EQ_INT(nlp_model_load(&back, dir), 0);
        if (back) {
            float *l = logits_of(back);
            CHECK(l && memcmp(l, ref, nl * 4) == 0);
            free(l);
            nlp_model_free(back);
        }
        /* the same config.json read as HF's: the same configuration */
        nlp_model_config hc;
        CHECK_EQ_INT(nlp_model_config_from_json(&hc, NULL, text, len, cj), 0);
        nlp_model_config own = *nlp_model_cfg(m);
        memset(own.preset, 0, sizeof own.preset);
        own.src_vocab_size = own.vocab_size; /* llama() set the vocabulary after the preset */
        hc.init_std = own.init_std;
        CHECK_MSG(nlp_model_config_equal(&hc, &own), "config.json read back differs");
        free(text);
        /* HF layouts: one F32 file; two and three BF16 shards; one F16 file */
        const struct {
            int shards;
            enum nlp_dtype dt;
        } cases[] = {{1, NLP_DT_F32}, {2, NLP_DT_BF16}, {3, NLP_DT_BF16}, {1, NLP_DT_F16}};
        for (int k = 0; k < 4; k++) {
            snprintf(dir, sizeof dir, "%s/hf%d-%d", test_tmpdir(), tied, k);
            CHECK_EQ_INT(write_hf(m, dir, cases[k].shards, cases[k].dt), 0);
            nlp_model *h = NULL, *r = llama(tied, 2, 11);
            CHECK_EQ_INT(nlp_model_load(&h, dir), 0);
            if (!h || !r) {
                nlp_model_free(h), nlp_model_free(r);
                continue;
            }
            if (cases[k].dt != NLP_DT_F32) round_weights(r, cases[k].dt);
            float *want = logits_of(r), *got = logits_of(h);
            CHECK_MSG(got && want && memcmp(got, want, nl * 4) == 0, "tied %d, %d %s shard(s): logits differ by %g",
                      tied, cases[k].shards, nlp_dtype_name(cases[k].dt), got && want ? max_diff(got, want, nl) : -1.0);
            if (cases[k].dt == NLP_DT_BF16) {
                /* bf16 stays bf16: the inference copy holds the file's very bits */
                nlp_params *hp = nlp_model_params(h);
                const float *w = nlp_params_data(hp);
                size_t same = 0;
                for (size_t i = 0; i < nlp_params_numel(hp); i++)
                    same += nlp_bf16_to_f32(nlp_f32_to_bf16(w[i])) == w[i] || w[i] != w[i];
                CHECK_MSG(same == nlp_params_numel(hp), "%zu of %zu bf16 weights changed by the bf16 copy",
                          nlp_params_numel(hp) - same, nlp_params_numel(hp));
                CHECK_EQ_INT(nlp_model_set_inference_bf16(h), 0);
            }
            free(want), free(got);
            nlp_model_free(h), nlp_model_free(r);
        }
        free(ref);
        nlp_model_free(m);
    }
}

/* A directory is refused with the file and what is wrong in the message. */
static void expect_refused(const char *dir, int code, const char *needle)
{
    nlp_model *m = NULL;
    int rc = nlp_model_load(&m, dir);
    CHECK_MSG(rc == code && strstr(nlp_errmsg(), needle), "'%s': rc %d, expected %d with '%s': %s", dir, rc, code,
              needle, nlp_errmsg());
    nlp_model_free(m);
}

static void test_bad_dirs(void)
{
    nlp_model *m = llama(1, 2, 3);
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/bad", test_tmpdir());
    CHECK_EQ_INT(write_hf(m, dir, 2, NLP_DT_BF16), 0);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    char *idx;
    size_t len;
    CHECK_EQ_INT(nlp_read_file(path, &idx, &len), 0);
    /* a shard missing */
    snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
    char moved[720];
    snprintf(moved, sizeof moved, "%s.away", path);
    rename(path, moved);
    expect_refused(dir, NLP_EFORMAT, "model-00002-of-00002.safetensors");
    rename(moved, path);
    /* a map that puts a tensor in the wrong shard, or outside the directory */
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_text(path, "{\"weight_map\": {\"model.norm.weight\": \"model-00002-of-00002.safetensors\", "
                     "\"lm_head.weight\": \"model-00001-of-00002.safetensors\"}}");
    expect_refused(dir, NLP_EFORMAT, "is not in");
    write_text(path, "{\"weight_map\": {\"model.norm.weight\": \"../model-00001-of-00002.safetensors\"}}");
    expect_refused(dir, NLP_EFORMAT, "not the name of a file beside it");
    write_text(path, "{\"weight_map\": []}");
    expect_refused(dir, NLP_EFORMAT, "weight_map");
    write_text(path, "{\"weight_map\": {\"model.norm.weight\": \"model-00001-of-00002.safetensors\"");
    expect_refused(dir, NLP_EFORMAT, "bad JSON");
    /* the map's shards lack a parameter */
    write_text(path, "{\"weight_map\": {\"model.norm.weight\": \"model-00002-of-00002.safetensors\"}}");
    expect_refused(dir, NLP_EFORMAT, "missing tensor");
    write_text(path, idx);
    free(idx);
    nlp_model *ok = NULL;
    CHECK_EQ_INT(nlp_model_load(&ok, dir), 0);
    nlp_model_free(ok);
    /* configs asking for what is not implemented: exit 3 naming the key */
    const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"model_type\": \"qwen2\", \"hidden_size\": 64}", "'model_type' is 'qwen2'"},
        {"{\"model_type\": 7}", "'model_type' is not a string"},
        {"{\"model_type\": \"llama\", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}}",
         "'rope_scaling' is of type 'linear'"},
        {"{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}}",
         "'rope_scaling' is of type 'llama3'"},
        {"{\"model_type\": \"llama\", \"rope_scaling\": 1}", "'rope_scaling': scaled rotary positions"},
        {"{\"model_type\": \"llama\", \"attention_bias\": true}", "'attention_bias' is true"},
        {"{\"model_type\": \"mistral\", \"mlp_bias\": true}", "'mlp_bias' is true"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4, \"head_dim\": 32}",
         "'head_dim' is 32"},
        {"{\"model_type\": \"llama\", \"hidden_act\": \"relu2\"}", "'hidden_act' has an unsupported value"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4, \"num_key_value_heads\": 3}",
         "not a multiple of kv-heads 3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        nlp_model_config c;
        int rc = nlp_model_config_from_json(&c, NULL, bad[i].json, strlen(bad[i].json), "config.json");
        CHECK_MSG(rc == NLP_EFORMAT && strstr(nlp_errmsg(), "'config.json'") && strstr(nlp_errmsg(), bad[i].needle),
                  "case %zu: rc %d: %s", i, rc, nlp_errmsg());
    }
    /* ... and through the loader */
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, "{\"model_type\": \"llama\", \"vocab_size\": 64, \"hidden_size\": 64, \"intermediate_size\": 176, "
                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                     "\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 4.0}}");
    expect_refused(dir, NLP_EFORMAT, "rope_scaling");
    /* a Mistral-style config: the same weights, HF's defaults, a window */
    write_text(path, "{\"model_type\": \"mistral\", \"vocab_size\": 64, \"hidden_size\": 64, \"intermediate_size\": 176, "
                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                     "\"tie_word_embeddings\": true, \"rms_norm_eps\": 1e-5, \"sliding_window\": 5, "
                     "\"max_position_embeddings\": 64}");
    nlp_model *mi = NULL;
    CHECK_EQ_INT(nlp_model_load(&mi, dir), 0);
    if (mi) {
        CHECK(nlp_model_cfg(mi)->sliding_window == 5 && nlp_model_config_max_len(nlp_model_cfg(mi)) == 5);
        nlp_batch b = {.B = 1, .T = 5, .ids = IDS};
        CHECK_EQ_INT(nlp_model_forward(mi, &b, NULL), 0);
        b.T = 6; /* past the window: windowed attention is not computed, so refused */
        CHECK_EQ_INT(nlp_model_forward(mi, &b, NULL), NLP_EDATA);
        CHECK_MSG(strstr(nlp_errmsg(), "sliding window"), "%s", nlp_errmsg());
        nlp_buf j = {0};
        const char *kind;
        CHECK_EQ_INT(nlp_model_config_to_json(nlp_model_cfg(mi), &j, &kind), 0);
        CHECK(strstr(j.data, "\"model_type\": \"mistral\"") && strstr(j.data, "\"sliding_window\": 5"));
        nlp_buf_free(&j);
        nlp_model_free(mi);
    }
    nlp_model_free(m);
}

/* gpt with rotary positions in the interleaved layout equals gpt in the half
 * layout whose q and k columns (c_attn is Conv1D [C, C+2Ckv]) are permuted
 * within each head: even dimensions first, then odd ones. */
static void test_layout_permutation(void)
{
    nlp_model_config c;
    nlp_model_config_preset(&c, "tiny", NLP_ARCH_GPT);
    c.vocab_size = 64, c.positions = NLP_POS_ROPE, c.rope_layout = 1, c.kv_heads = 2, c.init_std = 0.2;
    nlp_model *a = NULL, *b = NULL;
    CHECK_EQ_INT(nlp_model_new(&a, &c, 5), 0);
    c.rope_layout = 0;
    CHECK_EQ_INT(nlp_model_new(&b, &c, 6), 0);
    if (!a || !b) return;
    nlp_params *pa = nlp_model_params(a), *pb = nlp_model_params(b);
    memcpy(nlp_params_data(pb), nlp_params_data(pa), nlp_params_numel(pa) * 4);
    const int C = c.d_model, D = C / c.heads, W = C + 2 * c.kv_heads * D;
    for (int l = 0; l < c.layers; l++) {
        char name[64];
        snprintf(name, sizeof name, "h.%d.attn.c_attn.weight", l);
        int iw = nlp_params_find(pa, name);
        snprintf(name, sizeof name, "h.%d.attn.c_attn.bias", l);
        int ib = nlp_params_find(pa, name);
        CHECK(iw >= 0 && ib >= 0);
        const float *wa = nlp_params_at(pa, (size_t)iw), *ba = nlp_params_at(pa, (size_t)ib);
        float *wb = nlp_params_at(pb, (size_t)iw), *bb = nlp_params_at(pb, (size_t)ib);
        const int heads = c.heads + c.kv_heads; /* the q heads, then the k heads */
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < D; i++) {
                const int to = h * D + (i % 2 ? D / 2 + i / 2 : i / 2), from = h * D + i;
                for (int r = 0; r < C; r++) wb[(size_t)r * W + to] = wa[(size_t)r * W + from];
                bb[to] = ba[from];
            }
    }
    float *la = logits_of(a), *lb = logits_of(b);
    double d = la && lb ? max_diff(la, lb, (size_t)B * T * 64) : 1;
    CHECK_MSG(d < 2e-5, "interleaved vs permuted half: logits differ by %g", d);
    /* without the permutation they differ */
    memcpy(nlp_params_data(pb), nlp_params_data(pa), nlp_params_numel(pa) * 4);
    float *lc = logits_of(b);
    CHECK(la && lc && max_diff(la, lc, (size_t)B * T * 64) > 1e-3);
    free(la), free(lb), free(lc);
    nlp_model_free(a), nlp_model_free(b);
}

/* Rotary positions have no table: a model takes sequences past its
 * max-positions (what it was made for), a learned table does not; decoding
 * past it too. */
static void test_lengths(void)
{
    nlp_model_config c;
    nlp_model_config_preset(&c, "tiny", NLP_ARCH_LLAMA);
    c.vocab_size = 64, c.max_positions = 4;
    nlp_model *m = NULL;
    CHECK_EQ_INT(nlp_model_new(&m, &c, 1), 0);
    nlp_batch b = {.B = 2, .T = 7, .ids = IDS, .labels = IDS};
    nlp_losses L;
    CHECK_EQ_INT(nlp_model_forward(m, &b, &L), 0);
    CHECK(isfinite(L.loss));
    nlp_cache *cache;
    CHECK_EQ_INT(nlp_cache_new(&cache, m, 2, 7), 0);
    nlp_batch pb = {.B = 2, .T = 3, .ids = IDS};
    CHECK_EQ_INT(nlp_model_decode(m, &pb, cache), 0);
    for (int t = 0; t < 4; t++) {
        nlp_batch sb = {.B = 2, .T = 1, .ids = IDS + t};
        CHECK_EQ_INT(nlp_model_decode(m, &sb, cache), 0);
    }
    nlp_batch sb = {.B = 2, .T = 1, .ids = IDS};
    CHECK_EQ_INT(nlp_model_decode(m, &sb, cache), NLP_EDATA); /* the cache is full */
    nlp_cache_free(cache);
    nlp_model_free(m);
    nlp_model_config_preset(&c, "tiny", NLP_ARCH_GPT);
    c.vocab_size = 64, c.max_positions = 4;
    CHECK_EQ_INT(nlp_model_new(&m, &c, 1), 0);
    CHECK_EQ_INT(nlp_model_forward(m, &b, &L), NLP_EDATA);
    CHECK_MSG(strstr(nlp_errmsg(), "longer than max-positions 4"), "%s", nlp_errmsg());
    nlp_model_free(m);
    CHECK(nlp_model_config_max_len(&c) == 4);
    c.positions = NLP_POS_ROPE;
    CHECK(nlp_model_config_max_len(&c) == INT32_MAX);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_hf_dirs);
    RUN(test_bad_dirs);
    RUN(test_layout_permutation);
    RUN(test_lengths);
    return TEST_END();
}
