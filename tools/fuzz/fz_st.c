/*
 * fz_st.c — libFuzzer target for the safetensors reader (lib/nn/safetensors.c):
 * every input is a whole file for nlp_st_open_mem; an accepted file must index
 * exactly its bytes (each tensor's byte range = numel × dtype size, computed
 * without wrapping) and its tensors must read through every converter.
 * Build and run: tools/fuzz/run st. A crash, a sanitizer report or an abort()
 * here is a reader bug.
 */
#include "nn/safetensors.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    nlp_st *f;
    if (nlp_st_open_mem(&f, d, n, "fuzz") != 0) return 0;
    size_t data_len, sum = 0;
    nlp_st_data(f, &data_len);
    for (size_t i = 0; i < nlp_st_count(f); i++) {
        const nlp_st_tensor *t = nlp_st_at(f, i);
        if ((unsigned __int128)(uint64_t)t->numel * nlp_dtype_size(t->dtype) != t->end - t->begin) abort();
        if (t->end > data_len) abort();
        sum += t->end - t->begin;
        if (t->numel > (1 << 22)) continue;
        void *buf = malloc((size_t)(t->numel ? t->numel : 1) * 8);
        if (!buf) continue;
        nlp_st_read_f32(f, t, buf);
        nlp_st_read_i32(f, t, buf);
        nlp_st_read_i64(f, t, buf);
        nlp_st_read_u64(f, t, buf);
        free(buf);
    }
    if (sum != data_len) abort(); /* packed, no holes, nothing after the last tensor */
    nlp_st_close(f);
    return 0;
}
