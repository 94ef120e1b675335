/*
 * relpos.c — T5's bucketed relative position bias. See relpos.h.
 */
#include "nn/relpos.h"

#include <math.h>
#include <stddef.h>

int nlp_relpos_bucket(int rel, int bidirectional, int buckets, int max_distance)
{
    int ret = 0, n = -rel; /* how far before the query the key is */
    if (bidirectional) {
        buckets /= 2;
        if (n < 0) ret += buckets;
        n = n < 0 ? -n : n;
    } else if (n < 0) n = 0;
    const int exact = buckets / 2;
    if (n < exact) return ret + n;
    int big = exact + (int)(log((double)n / exact) / log((double)max_distance / exact) * (buckets - exact));
    if (big > buckets - 1) big = buckets - 1;
    return ret + big;
}

void nlp_relpos_forward(float *bias, const float *table, int H, int T, int S, int q0, int bidirectional, int buckets,
                        int max_distance)
{
    /* the bucket depends on j − t only: one lookup per offset */
    for (int t = 0; t < T; t++)
        for (int j = 0; j < S; j++) {
            const int k = nlp_relpos_bucket(j - (q0 + t), bidirectional, buckets, max_distance);
            for (int h = 0; h < H; h++) bias[((size_t)h * T + t) * S + j] = table[(size_t)k * H + h];
        }
}

void nlp_relpos_backward(float *dtable, const float *dbias, int H, int T, int S, int bidirectional, int buckets,
                         int max_distance)
{
    for (int t = 0; t < T; t++)
        for (int j = 0; j < S; j++) {
            const int k = nlp_relpos_bucket(j - t, bidirectional, buckets, max_distance);
            for (int h = 0; h < H; h++) dtable[(size_t)k * H + h] += dbias[((size_t)h * T + t) * S + j];
        }
}
