/* tools/fuzz/fz_ckpt.c — libFuzzer target: checkpoints. Byte 0 picks what
 * the rest is: a model.safetensors alone (its __metadata__: format, model,
 * config JSON, nlpipe_config YAML, labels, input_length, step) loaded as a
 * model, then run forward on a few ids when it is small; or the
 * train_state.safetensors (or the model.safetensors) of a checkpoint whose
 * other half is tools/fuzz/data/ckpt's, loaded as a checkpoint to resume.
 * Build and run: tools/fuzz/run ckpt. */
#include "fz_common.h"
#include "model/checkpoint.h"
#include "model/model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static uint8_t *ref_model, *ref_state;
    static size_t ref_model_n, ref_state_n;
    if (!ref_model) {
        ref_model = fz_data_file("ckpt/model.safetensors", &ref_model_n);
        ref_state = fz_data_file("ckpt/train_state.safetensors", &ref_state_n);
    }
    if (n < 1) return 0;
    const int which = d[0] % 3;
    d++, n--;
    if (which == 0) {
        const char *p = fz_put("m/model.safetensors", d, n);
        nlp_model *m;
        if (nlp_model_load(&m, p) == 0) {
            const nlp_model_config *c = nlp_model_cfg(m);
            char label[64];
            for (int k = 0; k < c->num_labels && k < 4; k++) nlp_model_label(m, k, label, sizeof label);
            if (nlp_params_numel(nlp_model_params(m)) < (1u << 20) && c->max_positions >= 2 &&
                c->arch != NLP_ARCH_TRANSFORMER && c->d_model <= 512) {
                int32_t ids[2] = {0, c->vocab_size > 1 ? 1 : 0}, labels[2] = {ids[1], -100}, cls[1] = {0}, pos[1] = {1};
                nlp_batch b = {.B = 1, .T = 2, .ids = ids, .labels = labels};
                if (c->num_labels > 0) b.cls_labels = cls, b.cls_pos = c->arch == NLP_ARCH_GPT ? pos : NULL;
                nlp_losses l;
                if (nlp_model_forward(m, &b, &l) == 0) nlp_model_backward(m);
            }
            nlp_model_free(m);
        }
        return 0;
    }
    fz_put("c/model.safetensors", which == 1 ? ref_model : d, which == 1 ? ref_model_n : n);
    const char *p = fz_put("c/train_state.safetensors", which == 2 ? ref_state : d, which == 2 ? ref_state_n : n);
    char dir[160];
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(p, '/') - p), p);
    nlp_model *m;
    nlp_optim o;
    nlp_train_state s;
    if (nlp_checkpoint_load(dir, &m, &o, &s) == 0) {
        if (o.n != nlp_params_numel(nlp_model_params(m))) abort();
        nlp_model_free(m);
        nlp_optim_free(&o);
    }
    return 0;
}
