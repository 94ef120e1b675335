/*
 * noise.c — T5's span corruption, BART's text infilling and sentence
 * permutation. See noise.h.
 */
#include "train/noise.h"
#include "base/err.h"
#include "base/mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Marks k of the n places 0 .. n-1 (flag[i] = 1), drawn uniformly without
 * replacement (Floyd's algorithm); flag is zeroed first. */
static void choose(nlp_rng *r, size_t n, size_t k, uint8_t *flag)
{
    memset(flag, 0, n);
    for (size_t j = n - k; j < n; j++) {
        const size_t t = (size_t)nlp_rng_below(r, j + 1);
        flag[flag[t] ? j : t] = 1;
    }
}

/* Cuts `items` (>= segs >= 1) into segs runs of at least one item: cut[j] =
 * 1 where a run starts, for j in 1 .. items - 1 (cut[0] is 0), the segs - 1
 * places drawn uniformly among the items - 1. */
static void segmentation(nlp_rng *r, size_t items, size_t segs, uint8_t *cut)
{
    cut[0] = 0;
    choose(r, items - 1, segs - 1, cut + 1);
}

void nlp_noise_t5_counts(size_t n, double density, double mean_span, size_t *noise, size_t *spans)
{
    *noise = *spans = 0;
    if (n < 2) return;
    /* rounded half to even, as T5's round */
    double kd = nearbyint((double)n * density);
    size_t k = kd < 1 ? 1 : (size_t)kd;
    if (k > n - 1) k = n - 1;
    double sd = nearbyint((double)k / mean_span);
    size_t s = sd < 1 ? 1 : (size_t)sd;
    if (s > k) s = k;
    if (s > n - k) s = n - k;
    *noise = k, *spans = s;
}

int nlp_noise_t5_mask(nlp_rng *r, size_t n, double density, double mean_span, uint8_t *mask, size_t *spans)
{
    *spans = 0;
    if (!(density > 0 && density < 1))
        return nlp_error(NLP_EINVAL, "the noise density must be between 0 and 1 (not %g)", density);
    if (!(mean_span >= 1 && mean_span <= 1e6))
        return nlp_error(NLP_EINVAL, "the mean noise span must be at least 1 token (not %g)", mean_span);
    if (n) memset(mask, 0, n);
    if (n < 2) return 0;
    size_t k, s;
    nlp_noise_t5_counts(n, density, mean_span, &k, &s);
    uint8_t *ck = nlp_malloc(n), *cn = ck + (n - k);
    if (!ck) return NLP_ENOMEM;
    segmentation(r, n - k, s, ck);
    segmentation(r, k, s, cn);
    size_t at = 0, i = 0, j = 0;
    for (size_t run = 0; run < s; run++) {
        do mask[at++] = 0, i++;
        while (i < n - k && !ck[i]);
        do mask[at++] = 1, j++;
        while (j < k && !cn[j]);
    }
    free(ck);
    *spans = s;
    return 0;
}

int nlp_noise_t5_corrupt(const int32_t *ids, size_t n, const uint8_t *mask, const int32_t *sentinel,
                         size_t n_sentinel, int32_t eos, nlp_ids *in, nlp_ids *tgt)
{
    size_t runs = 0;
    for (size_t i = 0; i < n; i++) runs += mask[i] && (i == 0 || !mask[i - 1]);
    if (runs + 1 > n_sentinel)
        return nlp_error(NLP_EINVAL, "%zu noise spans need %zu sentinels, there are %zu", runs, runs + 1, n_sentinel);
    size_t k = 0;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (!mask[i]) {
            rc = nlp_ids_push(in, ids[i]);
            continue;
        }
        if (i == 0 || !mask[i - 1]) {
            rc = nlp_ids_push(in, sentinel[k]);
            if (!rc) rc = nlp_ids_push(tgt, sentinel[k]);
            k++;
        }
        if (!rc) rc = nlp_ids_push(tgt, ids[i]);
    }
    if (!rc && eos >= 0) rc = nlp_ids_push(in, eos);
    if (!rc) rc = nlp_ids_push(tgt, sentinel[k]);
    if (!rc && eos >= 0) rc = nlp_ids_push(tgt, eos);
    return rc;
}

unsigned nlp_noise_poisson(nlp_rng *r, double lambda)
{
    const double L = exp(-lambda);
    unsigned k = 0;
    double p = 1;
    do {
        k++;
        p *= nlp_rng_double(r);
    } while (p > L);
    return k - 1;
}

int nlp_noise_bart_infill(nlp_rng *r, const int32_t *ids, size_t n, double ratio, double lambda, int32_t mask_id,
                          nlp_ids *out, size_t *masked, size_t *spans)
{
    if (masked) *masked = 0;
    if (spans) *spans = 0;
    if (!(ratio >= 0 && ratio <= 1)) return nlp_error(NLP_EINVAL, "the mask ratio must be in [0, 1] (not %g)", ratio);
    if (!(lambda > 0 && lambda <= 100))
        return nlp_error(NLP_EINVAL, "the Poisson lambda of span lengths must be in (0, 100] (not %g)", lambda);
    double md = ceil((double)n * ratio);
    size_t m = md > (double)n ? n : (size_t)md;
    if (m == 0) {
        for (size_t i = 0; i < n; i++)
            if (nlp_ids_push(out, ids[i])) return NLP_ENOMEM;
        return 0;
    }
    /* span lengths until they cover m, the last cut to fit */
    uint32_t *len = NULL;
    size_t s = 0, cap = 0, sum = 0;
    while (sum < m) {
        if (nlp_grow(&len, &cap, s + 1, sizeof *len)) {
            free(len);
            return NLP_ENOMEM;
        }
        unsigned l = nlp_noise_poisson(r, lambda);
        if (l > m - sum) l = (unsigned)(m - sum);
        len[s++] = l, sum += l;
    }
    for (size_t i = s; i > 1; i--) { /* the cut one anywhere */
        const size_t j = (size_t)nlp_rng_below(r, i);
        const uint32_t t = len[i - 1];
        len[i - 1] = len[j], len[j] = t;
    }
    /* the n - m kept tokens and the s spans in a random order: slot i is a
     * span when is_span[i] */
    const size_t slots = n - m + s;
    uint8_t *is_span = nlp_malloc(slots);
    if (!is_span) {
        free(len);
        return NLP_ENOMEM;
    }
    choose(r, slots, s, is_span);
    size_t pos = 0, k = 0;
    int rc = 0;
    for (size_t i = 0; i < slots && !rc; i++) {
        if (is_span[i]) rc = nlp_ids_push(out, mask_id), pos += len[k++];
        else rc = nlp_ids_push(out, ids[pos++]);
    }
    free(is_span), free(len);
    if (rc) return rc;
    if (masked) *masked = m;
    if (spans) *spans = s;
    return 0;
}

int nlp_noise_permute(nlp_rng *r, const int32_t *ids, const size_t *start, size_t n_sent, nlp_ids *out)
{
    if (n_sent == 0) return 0;
    if (start[0] != 0) return nlp_error(NLP_EINVAL, "the first sentence starts at %zu, not 0", start[0]);
    for (size_t i = 0; i < n_sent; i++)
        if (start[i + 1] < start[i])
            return nlp_error(NLP_EINVAL, "sentence %zu ends (%zu) before it starts (%zu)", i, start[i + 1], start[i]);
    size_t *perm = nlp_malloc(n_sent * sizeof *perm);
    if (!perm) return NLP_ENOMEM;
    for (size_t i = 0; i < n_sent; i++) perm[i] = i;
    for (size_t i = n_sent; i > 1; i--) {
        const size_t j = (size_t)nlp_rng_below(r, i), t = perm[i - 1];
        perm[i - 1] = perm[j], perm[j] = t;
    }
    int rc = 0;
    for (size_t i = 0; i < n_sent && !rc; i++)
        for (size_t t = start[perm[i]]; t < start[perm[i] + 1] && !rc; t++) rc = nlp_ids_push(out, ids[t]);
    free(perm);
    return rc;
}
