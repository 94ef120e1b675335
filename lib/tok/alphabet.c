/*
 * alphabet.c — the trainers' initial alphabet. See alphabet.h.
 */
#include "tok/alphabet.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

struct chr {
    int32_t cp;
    uint64_t count;
};

static int by_count_then_cp(const void *x, const void *y)
{
    const struct chr *a = x, *b = y;
    /* least frequent first; among equals the larger code point first, so
     * that the smaller one is kept */
    if (a->count != b->count) return a->count < b->count ? -1 : 1;
    return (a->cp < b->cp) - (a->cp > b->cp);
}

static int by_cp(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

int nlp_alphabet_build(nlp_alphabet *a, const nlp_wordcount *wc, int byte_level, int byte_alphabet, size_t limit)
{
    memset(a, 0, sizeof *a);
    nlp_idmap idx = {0}; /* code point -> index in c */
    struct chr *c = NULL;
    size_t nc = 0, cap = 0, nw = nlp_wordcount_size(wc);
    int rc = NLP_ENOMEM;
    if (nlp_idmap_init(&idx, 256) || nlp_idmap_init(&a->kept, 256)) goto out;
    for (size_t i = 0; i < nw + (byte_level && byte_alphabet ? 1 : 0); i++) {
        size_t n, k = 0;
        uint64_t cnt;
        const char *w;
        if (i < nw) {
            w = nlp_wordcount_word(wc, i, &n, &cnt);
        } else {
            /* every byte, ahead of any count */
            static char all[256];
            for (int x = 0; x < 256; x++) all[x] = (char)x;
            w = all;
            n = 256;
            cnt = UINT64_MAX;
        }
        while (k < n) {
            int32_t cp = nlp_alphabet_next(w, n, &k, byte_level);
            long j = nlp_idmap_find(&idx, (uint32_t)cp);
            if (j < 0) {
                if (nlp_grow(&c, &cap, nc + 1, sizeof *c) || nlp_idmap_put(&idx, (uint32_t)cp, (uint32_t)nc)) goto out;
                c[nc] = (struct chr){cp, 0};
                j = (long)nc++;
            }
            c[j].count = cnt == UINT64_MAX || c[j].count > UINT64_MAX - cnt ? UINT64_MAX : c[j].count + cnt;
            if (i < nw) a->symbols++;
        }
    }
    size_t from = 0;
    if (limit && nc > limit) {
        qsort(c, nc, sizeof *c, by_count_then_cp);
        from = nc - limit;
    }
    if (!(a->cp = nlp_malloc((nc - from + 1) * sizeof *a->cp))) goto out;
    for (size_t i = from; i < nc; i++) {
        a->cp[a->n++] = c[i].cp;
        if (nlp_idmap_put(&a->kept, (uint32_t)c[i].cp, 1)) goto out;
    }
    qsort(a->cp, a->n, sizeof *a->cp, by_cp);
    rc = NLP_OK;
out:
    nlp_idmap_free(&idx);
    free(c);
    return rc;
}

void nlp_alphabet_free(nlp_alphabet *a)
{
    free(a->cp);
    nlp_idmap_free(&a->kept);
    memset(a, 0, sizeof *a);
}
