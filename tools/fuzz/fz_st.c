/*
 * fz_st.c — libFuzzer target for the safetensors reader (lib/nn/safetensors.c):
 * every input is a whole file for nlp_st_open_mem; an accepted file must index
 * exactly its bytes (each tensor's byte range = numel × dtype size, computed
 * without wrapping) and its tensors must read through every converter; the
 * values read as floats (every bit pattern: NaN, infinities, denormals) are
 * checked by nlp_nonfinite_index, the load's check of a model's weights,
 * against a plain scan.
 * Build and run: tools/fuzz/run st. A crash, a sanitizer report or an abort()
 * here is a reader bug.
 */
#include "nn/params.h"
#include "nn/safetensors.h"

#include <math.h>
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
        /* the finiteness check a model's load makes, against a plain scan,
         * on whatever values the file holds (NaN payloads, infinities,
         * denormals: every bit pattern) */
        if (nlp_st_read_f32(f, t, buf) == 0) {
            const float *x = buf;
            size_t first = (size_t)t->numel;
            for (size_t k = 0; k < (size_t)t->numel && first == (size_t)t->numel; k++)
                if (!isfinite(x[k])) first = k;
            if (nlp_nonfinite_index(x, (size_t)t->numel) != first) abort();
        }
        nlp_st_read_i32(f, t, buf);
        nlp_st_read_i64(f, t, buf);
        nlp_st_read_u64(f, t, buf);
        free(buf);
    }
    if (sum != data_len) abort(); /* packed, no holes, nothing after the last tensor */
    nlp_st_close(f);
    return 0;
}
