/*
 * translate.c — batched greedy and beam-search translation. See translate.h.
 */
#include "decode/translate.h"
#include "base/err.h"
#include "base/mem.h"
#include "decode/decode.h"
#include "nn/gemm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

nlp_translate_opts nlp_translate_defaults(void)
{
    return (nlp_translate_opts){.beams = 4, .alpha = 0.6, .len_a = 1.5, .len_b = 10, .nbest = 1, .batch = 16};
}

typedef struct byl {
    size_t len, i;
} byl;

static int byl_cmp(const void *a, const void *b)
{
    const byl *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Steps at most for a source of len ids. */
static int limit(const nlp_translate_opts *o, size_t len, int positions)
{
    double l = o->max_len > 0 ? o->max_len : floor(o->len_a * (double)len + o->len_b);
    if (l > positions - 1) l = positions - 1; /* BOS takes position 0 */
    return l < 1 ? 1 : (int)l;
}

int nlp_translate(nlp_model *m, const nlp_ids *src, size_t n, const nlp_translate_opts *o, nlp_ids *hyp,
                  float *score)
{
    const nlp_model_config *cfg = nlp_model_cfg(m);
    if (cfg->arch != NLP_ARCH_TRANSFORMER)
        return nlp_error(NLP_EINVAL, "translation needs an encoder-decoder (transformer), not %s",
                         nlp_arch_name(cfg->arch));
    const int K = o->beams > 0 ? o->beams : 1, NB = o->nbest > 1 ? (o->nbest < K ? o->nbest : K) : 1;
    const int GB = o->batch > 0 ? o->batch : 1;
    byl *ord = nlp_malloc((n ? n : 1) * sizeof *ord);
    if (!ord) return NLP_ENOMEM;
    size_t nz = 0;
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < NB; j++) {
            hyp[i * NB + j].n = 0;
            if (score) score[i * NB + j] = 0;
        }
        if (src[i].n > (size_t)cfg->max_positions) {
            free(ord);
            return nlp_error(NLP_EDATA, "sentence %zu: %zu source tokens, more than the model's %d positions", i + 1,
                             src[i].n, cfg->max_positions);
        }
        if (src[i].n) ord[nz++] = (byl){src[i].n, i};
    }
    qsort(ord, nz, sizeof *ord, byl_cmp);

    int rc = 0;
    int32_t *sb = NULL, *bos = NULL;
    int *gmax = NULL;
    nlp_ids *out = NULL;
    float *sc = NULL;
    nlp_cache *c = NULL;
    int nout = 0;
    const int prev = nlp_gemm_set_row_invariant(1);
    /* the weights packed once for every step (unless the caller keeps them
     * packed, or they are int8, or products are bf16: packed fp32 weights
     * would take the fp32 kernels) */
    const int own_pack = !nlp_model_has_packed(m) && !nlp_model_int8_bytes(m) && nlp_gemm_get_mode() != NLP_GEMM_BF16 &&
                         nlp_model_pack_weights(m) == 0;
    for (size_t b0 = 0; b0 < nz && !rc; b0 += (size_t)GB) {
        const int G = nz - b0 < (size_t)GB ? (int)(nz - b0) : GB, R = G * K;
        int S = 0, N = 0;
        for (int g = 0; g < G; g++) {
            const size_t len = ord[b0 + g].len;
            if ((int)len > S) S = (int)len;
            const int l = limit(o, len, cfg->max_positions);
            if (l > N) N = l;
        }
        free(sb), free(bos), free(gmax), free(sc);
        for (int r = 0; r < nout; r++) nlp_ids_free(&out[r]);
        free(out);
        nout = 0;
        sb = nlp_malloc((size_t)G * S * sizeof *sb);
        bos = nlp_malloc((size_t)R * sizeof *bos);
        gmax = nlp_malloc((size_t)G * sizeof *gmax);
        sc = nlp_malloc((size_t)G * NB * sizeof *sc);
        out = nlp_calloc((size_t)G * NB, sizeof *out);
        if (!sb || !bos || !gmax || !sc || !out) {
            rc = NLP_ENOMEM;
            break;
        }
        nout = G * NB;
        for (int g = 0; g < G; g++) {
            const nlp_ids *s = &src[ord[b0 + g].i];
            gmax[g] = limit(o, s->n, cfg->max_positions);
            int32_t *row = sb + (size_t)g * S; /* encoded once, shared by its K beams */
            memcpy(row, s->v, s->n * sizeof *row);
            for (int q = (int)s->n; q < S; q++) row[q] = cfg->pad_id;
        }
        for (int r = 0; r < R; r++) bos[r] = cfg->bos_id;
        nlp_cache_free(c);
        c = NULL;
        nlp_batch eb = {.B = G, .S = S, .T = 1, .src = sb};
        nlp_beam_opts bo = {.beams = K, .max_new = N, .alpha = o->alpha, .eos = cfg->eos_id, .early_stop = 1,
                            .nbest = NB, .group_max = gmax, .vocab_limit = o->vocab_limit};
        if ((rc = nlp_cache_new(&c, m, R, N + 1)) || (rc = nlp_model_encode(m, &eb, c)) ||
            (rc = nlp_decode_feed(m, c, R, 1, bos)))
            break;
        float *norm = nlp_malloc((size_t)G * NB * sizeof *norm);
        if (!norm) {
            rc = NLP_ENOMEM;
            break;
        }
        rc = nlp_beam_search(m, c, G, &bo, out, sc, norm);
        for (int g = 0; g < G && !rc; g++)
            for (int j = 0; j < NB && !rc; j++) {
                const size_t i = ord[b0 + g].i;
                nlp_ids *h = &hyp[i * NB + j];
                h->n = 0;
                rc = nlp_ids_append(h, out[g * NB + j].v, out[g * NB + j].n);
                if (score) score[i * NB + j] = norm[g * NB + j];
            }
        free(norm);
    }
    for (int r = 0; r < nout; r++) nlp_ids_free(&out[r]);
    nlp_cache_free(c);
    nlp_gemm_set_row_invariant(prev);
    if (own_pack) nlp_model_drop_packed(m);
    free(sb), free(bos), free(gmax), free(sc), free(out), free(ord);
    return rc;
}
