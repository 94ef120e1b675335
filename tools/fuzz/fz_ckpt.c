/* tools/fuzz/fz_ckpt.c — libFuzzer target: checkpoints. Byte 0 picks what
 * the rest is: a model.safetensors alone (its __metadata__: format, model,
 * config JSON, nlpipe_config YAML, labels, input_length, step) loaded as a
 * model, then run forward on a few ids when it is small; or the
 * train_state.safetensors (or the model.safetensors) of a checkpoint whose
 * other half is tools/fuzz/data/ckpt's, loaded as a checkpoint to resume;
 * or (3, 4) edits of the values of tools/fuzz/data/ckpt's tensors, 8 bytes
 * an edit (see edit()): NaN, ±inf, huge, tiny and flipped bits in the
 * model's weights (3), which must be refused at load or give a model that
 * decodes (beam search and sampling, which must return, NLP_ENAN at worst);
 * zeroed, saturated and flipped words of the training state's generators,
 * data position and task state and values of Adam's moments (4), which
 * must be refused or give a state whose generators draw (no endless
 * rejection) and whose moments are finite, the second not negative.
 * Build and run: tools/fuzz/run ckpt. */
#include "fz_common.h"
#include "decode/decode.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "nn/params.h"
#include "nn/safetensors.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Applies the 8-byte edits of d[0..n) to a copy of file f[0..fn): edit =
 * tensor (1 byte, modulo the file's tensors), element (3 bytes LE, modulo
 * its elements), kind (1 byte), payload (3 bytes LE). F32 tensors: kind % 8
 * is NaN, +inf, -inf, ±3e38 (payload's sign bit), 0, a denormal, random
 * bits (the payload, twice), a flipped bit (payload % 32). U64 tensors
 * (generators, positions): kind % 5 zeroes the whole tensor, sets the word
 * to the payload, to all ones, flips a bit (payload % 64), zeroes the word.
 * Returns the copy (the caller frees) or NULL when f does not parse. */
static uint8_t *edit(const uint8_t *f, size_t fn, const uint8_t *d, size_t n)
{
    nlp_st *st;
    if (nlp_st_open_mem(&st, f, fn, "ref") != 0 || !nlp_st_count(st)) abort(); /* the harness's own files */
    size_t data_len; /* the data area ends the file */
    nlp_st_data(st, &data_len);
    uint8_t *out = malloc(fn);
    if (!out) abort();
    memcpy(out, f, fn);
    for (size_t i = 0; i + 8 <= n; i += 8) {
        const nlp_st_tensor *t = nlp_st_at(st, d[i] % nlp_st_count(st));
        if (!t->numel) continue;
        const uint32_t e = (uint32_t)(d[i + 1] | d[i + 2] << 8 | d[i + 3] << 16) % (uint32_t)t->numel;
        const uint32_t kind = d[i + 4], pay = (uint32_t)(d[i + 5] | d[i + 6] << 8 | d[i + 7] << 16);
        uint8_t *at = out + (fn - data_len) + t->begin;
        if (t->dtype == NLP_DT_F32) {
            float v;
            uint32_t bits;
            memcpy(&v, at + 4 * (size_t)e, 4);
            memcpy(&bits, &v, 4);
            switch (kind % 8) {
            case 0: v = NAN; break;
            case 1: v = INFINITY; break;
            case 2: v = -INFINITY; break;
            case 3: v = pay & 0x800000 ? -3e38f : 3e38f; break;
            case 4: v = 0; break;
            case 5: v = 1e-40f; break;
            case 6: bits = pay | pay << 24, memcpy(&v, &bits, 4); break;
            default: bits ^= 1u << (pay % 32), memcpy(&v, &bits, 4); break;
            }
            memcpy(at + 4 * (size_t)e, &v, 4);
        } else if (t->dtype == NLP_DT_U64) {
            uint64_t w;
            memcpy(&w, at + 8 * (size_t)e, 8);
            switch (kind % 5) {
            case 0: memset(at, 0, (size_t)(t->end - t->begin)); continue;
            case 1: w = pay; break;
            case 2: w = UINT64_MAX; break;
            case 3: w ^= (uint64_t)1 << (pay % 64); break;
            default: w = 0; break;
            }
            memcpy(at + 8 * (size_t)e, &w, 8);
        }
    }
    nlp_st_close(st);
    return out;
}

/* A model that loaded: finite weights (the load refuses others), and
 * decoding a few tokens returns (NLP_ENAN for scores that overflow). */
static void decode_some(nlp_model *m)
{
    nlp_params *p = nlp_model_params(m);
    if (nlp_nonfinite_index(nlp_params_data(p), nlp_params_numel(p)) != nlp_params_numel(p)) abort();
    const nlp_model_config *c = nlp_model_cfg(m);
    if (c->arch != NLP_ARCH_GPT || c->max_positions < 5 || nlp_params_numel(p) > (1u << 20)) return;
    for (int K = 1; K <= 3; K++) {
        nlp_cache *cache;
        if (nlp_cache_new(&cache, m, K, 5)) continue;
        int32_t prompt[6] = {0, 1 % c->vocab_size, 0, 1 % c->vocab_size, 0, 1 % c->vocab_size};
        if (nlp_decode_feed(m, cache, K, 2, prompt) == 0) {
            nlp_ids out[1] = {{0}};
            if (K > 1) {
                nlp_beam_opts bo = {.beams = K, .max_new = 3, .alpha = 0.6, .eos = 0, .early_stop = 1};
                nlp_beam_search(m, cache, 1, &bo, out, NULL, NULL);
            } else {
                nlp_gen_opts g = {.max_new = 3, .eos = -1, .sampler = nlp_sampler_greedy()};
                g.sampler.temperature = 0.8, g.sampler.top_k = 4, g.sampler.top_p = 0.9;
                if (nlp_ids_append(&out[0], prompt, 2) == 0) nlp_generate_rows(m, cache, 1, &g, out);
            }
            nlp_ids_free(&out[0]);
        }
        nlp_cache_free(cache);
    }
}

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
    const int which = d[0] % 5;
    d++, n--;
    if (which == 3) { /* the model's weights edited */
        uint8_t *f = edit(ref_model, ref_model_n, d, n);
        const char *p = fz_put("v/model.safetensors", f, ref_model_n);
        free(f);
        nlp_model *m;
        if (nlp_model_load(&m, p) == 0) {
            decode_some(m);
            nlp_model_free(m);
        }
        return 0;
    }
    if (which == 4) { /* the training state's generators, positions and moments edited */
        uint8_t *f = edit(ref_state, ref_state_n, d, n);
        fz_put("s/model.safetensors", ref_model, ref_model_n);
        const char *p = fz_put("s/train_state.safetensors", f, ref_state_n);
        free(f);
        char dir[160];
        snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(p, '/') - p), p);
        nlp_model *m;
        nlp_optim o;
        nlp_train_state s;
        if (nlp_checkpoint_load(dir, &m, &o, &s) == 0) {
            const nlp_rng *g[2] = {&s.data_rng, nlp_model_rng(m)};
            for (int k = 0; k < 2; k++)
                if (!(g[k]->s[0] | g[k]->s[1] | g[k]->s[2] | g[k]->s[3])) abort(); /* a stuck generator accepted */
            if (nlp_nonfinite_index(o.m, o.n) != o.n || nlp_nonfinite_index(o.v, o.n) != o.n) abort();
            for (size_t i = 0; i < o.n; i++)
                if (o.v[i] < 0) abort();
            for (int i = 0; i < 64; i++) { /* draws end (a hang is libFuzzer's -timeout) */
                nlp_rng_below(&s.data_rng, 1 + (uint64_t)i * 977);
                nlp_rng_below(nlp_model_rng(m), ((uint64_t)1 << 63) + (uint64_t)i);
            }
            nlp_model_free(m);
            nlp_optim_free(&o);
        }
        return 0;
    }
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
