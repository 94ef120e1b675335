/*
 * embed.c — embeddings and position tables. See embed.h.
 */
#include "nn/embed.h"

#include <math.h>
#include <string.h>

#define PAR_MIN (1L << 15)

static inline void embed_row(float *y, const float *table, const int32_t *ids, int i, int C, float scale,
                             int accumulate)
{
    const float *e = table + (size_t)ids[i] * C;
    float *yi = y + (size_t)i * C;
    if (accumulate) {
#pragma omp simd
        for (int c = 0; c < C; c++) yi[c] += scale * e[c];
    } else if (scale == 1.0f) {
        memcpy(yi, e, (size_t)C * sizeof(float));
    } else {
#pragma omp simd
        for (int c = 0; c < C; c++) yi[c] = scale * e[c];
    }
}

void nlp_embed_forward(float *y, const float *table, const int32_t *ids, int N, int C, float scale, int accumulate)
{
    /* a token of decoding without entering OpenMP (a region costs more, even under a false if()) */
    if ((long)N * C <= PAR_MIN) {
        for (int i = 0; i < N; i++) embed_row(y, table, ids, i, C, scale, accumulate);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) embed_row(y, table, ids, i, C, scale, accumulate);
}

void nlp_embed_backward(float *dtable, const float *dy, const int32_t *ids, int N, int C, float scale)
{
    int blocks = (C + 63) / 64;
#pragma omp parallel for schedule(static) if ((long)N * C > PAR_MIN)
    for (int bk = 0; bk < blocks; bk++) {
        int c0 = bk * 64, c1 = c0 + 64 < C ? c0 + 64 : C;
        for (int i = 0; i < N; i++) {
            float *d = dtable + (size_t)ids[i] * C;
            const float *g = dy + (size_t)i * C;
#pragma omp simd
            for (int c = c0; c < c1; c++) d[c] += scale * g[c];
        }
    }
}

void nlp_pos_forward(float *y, const float *pos, int B, int T, int C, int offset)
{
    if ((long)B * T * C <= PAR_MIN) { /* as nlp_embed_forward */
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                float *yi = y + ((size_t)b * T + t) * C;
                const float *p = pos + (size_t)(offset + t) * C;
#pragma omp simd
                for (int c = 0; c < C; c++) yi[c] += p[c];
            }
        return;
    }
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *yi = y + ((size_t)b * T + t) * C;
            const float *p = pos + (size_t)(offset + t) * C;
#pragma omp simd
            for (int c = 0; c < C; c++) yi[c] += p[c];
        }
}

void nlp_pos_backward(float *dpos, const float *dy, int B, int T, int C, int offset)
{
#pragma omp parallel for schedule(static) if ((long)B * T * C > PAR_MIN)
    for (int t = 0; t < T; t++) {
        float *d = dpos + (size_t)(offset + t) * C;
        for (int b = 0; b < B; b++) {
            const float *g = dy + ((size_t)b * T + t) * C;
#pragma omp simd
            for (int c = 0; c < C; c++) d[c] += g[c];
        }
    }
}

void nlp_sinusoid_table(float *pe, int P, int C)
{
    const float k = (float)(-log(10000.0) / C);
    for (int i = 0; 2 * i < C; i++) {
        float w = expf((float)(2 * i) * k);
        for (int p = 0; p < P; p++) {
            float a = (float)p * w;
            pe[(size_t)p * C + 2 * i] = sinf(a);
            if (2 * i + 1 < C) pe[(size_t)p * C + 2 * i + 1] = cosf(a);
        }
    }
}
