/*
 * rope.c — rotary position embedding. See rope.h.
 */
#include "nn/rope.h"

#include <math.h>
#include <stddef.h>

#define PAR_MIN (1L << 15) /* elements below which one thread does it all */

void nlp_rope_table(float *cs, int p0, int T, int D, double theta)
{
    const int h = D / 2;
    for (int i = 0; i < h; i++) {
        /* HF: 1.0 / (base ** (arange(0, D, 2).float() / D)), all in fp32 */
        const float e = (float)(2 * i) / (float)D;
        const float inv = 1.0f / (float)pow((double)(float)theta, (double)e);
        for (int t = 0; t < T; t++) {
            const float a = (float)(p0 + t) * inv; /* one fp32 product, as HF's outer product */
            cs[(size_t)t * D + i] = (float)cos((double)a);
            cs[(size_t)t * D + h + i] = (float)sin((double)a);
        }
    }
}

void nlp_rope_apply(float *x, int B, int T, long ld, long bs, int H, int D, const float *cs,
                    enum nlp_rope_layout layout, int inverse)
{
    const int h = D / 2;
    const long rows = (long)B * T;
    const float sg = inverse ? -1.0f : 1.0f;
#pragma omp parallel for schedule(static) if (rows * H * D > PAR_MIN)
    for (long r = 0; r < rows; r++) {
        const int b = (int)(r / T), t = (int)(r % T);
        float *row = x + (size_t)b * bs + (size_t)t * ld;
        const float *c = cs + (size_t)t * D, *s = c + h;
        for (int k = 0; k < H; k++) {
            float *v = row + (size_t)k * D;
            if (layout == NLP_ROPE_HALF) {
                float *restrict lo = v, *restrict hi = v + h; /* the two halves do not overlap */
                for (int i = 0; i < h; i++) {
                    const float a = lo[i], e = hi[i], sn = sg * s[i];
                    lo[i] = a * c[i] - e * sn;
                    hi[i] = a * sn + e * c[i];
                }
            } else {
                for (int i = 0; i < h; i++) {
                    const float a = v[2 * i], e = v[2 * i + 1], sn = sg * s[i];
                    v[2 * i] = a * c[i] - e * sn;
                    v[2 * i + 1] = a * sn + e * c[i];
                }
            }
        }
    }
}
