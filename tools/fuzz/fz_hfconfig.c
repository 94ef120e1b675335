/* tools/fuzz/fz_hfconfig.c — libFuzzer target: model configurations in JSON
 * (lib/model/config): a HuggingFace config.json (GPT-2, BERT, LLaMA,
 * Mistral) or the reference form with its kind (gpt, bert, encdec, llama;
 * byte 0 % 6 picks), validated; an accepted one must dump to YAML and
 * resolve back to the same struct and to the same JSON; a config.json beside
 * a model.safetensors without configuration metadata (the HF layout) loaded
 * as a model; and (byte 0 % 6 = 5) the input as the
 * model.safetensors.index.json of a LLaMA checkpoint in two shards
 * (tools/fuzz/data/llama), loaded. Build and run: tools/fuzz/run hfconfig. */
#include "fz_common.h"
#include "base/config.h"
#include "model/config.h"
#include "model/model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static uint8_t *hf_weights, *shard[2], *llama_cfg;
    static size_t hf_weights_n, shard_n[2], llama_cfg_n;
    if (!hf_weights) {
        hf_weights = fz_data_file("hf/model.safetensors", &hf_weights_n);
        shard[0] = fz_data_file("llama/model-00001-of-00002.safetensors", &shard_n[0]);
        shard[1] = fz_data_file("llama/model-00002-of-00002.safetensors", &shard_n[1]);
        llama_cfg = fz_data_file("llama/config.json", &llama_cfg_n);
    }
    if (n < 1) return 0;
    static const char *const kinds[] = {NULL, "gpt", "bert", "encdec", "llama"};
    const int which = d[0] % 6;
    d++, n--;
    if (which == 5) { /* a shard index */
        fz_put("llama/config.json", llama_cfg, llama_cfg_n);
        fz_put("llama/model-00001-of-00002.safetensors", shard[0], shard_n[0]);
        const char *p = fz_put("llama/model-00002-of-00002.safetensors", shard[1], shard_n[1]);
        fz_put("llama/model.safetensors.index.json", d, n);
        char dir[200];
        snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(p, '/') - p), p);
        nlp_model *m;
        if (nlp_model_load(&m, dir) == 0) nlp_model_free(m);
        return 0;
    }
    nlp_model_config c;
    if (nlp_model_config_from_json(&c, kinds[which], (const char *)d, n, "config.json") == 0 &&
        nlp_model_config_validate(&c) == 0) {
        nlp_buf y = {0}, j1 = {0}, j2 = {0};
        nlp_config f;
        nlp_model_config back;
        const char *k1, *k2;
        if (nlp_model_config_dump(&c, &y) == 0 && nlp_config_parse(&f, y.data, y.len, "dump") == 0) {
            if (nlp_model_config_build(&back, NULL, &f, 1, NULL) != 0 || !nlp_model_config_equal(&c, &back)) abort();
            if (nlp_model_config_to_json(&c, &j1, &k1) || nlp_model_config_to_json(&back, &j2, &k2) ||
                strcmp(j1.data, j2.data) || strcmp(k1, k2))
                abort();
        }
        nlp_config_free(&f);
        nlp_buf_free(&y), nlp_buf_free(&j1), nlp_buf_free(&j2);
    }
    if (which == 0) { /* beside weights: the loader reads it */
        fz_put("hf/config.json", d, n);
        const char *p = fz_put("hf/model.safetensors", hf_weights, hf_weights_n);
        nlp_model *m;
        if (nlp_model_load(&m, p) == 0) nlp_model_free(m);
    }
    return 0;
}
