/*
 * normalize.c — normalizer steps. See normalize.h.
 */
#include "tok/normalize.h"
#include "base/err.h"
#include "text/uclass.h"
#include "text/unicode.h"
#include "text/utf8.h"

#include <stdlib.h>
#include <string.h>

void nlp_norm_steps_free(nlp_norm_step *steps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(steps[i].a);
        free(steps[i].b);
    }
    free(steps);
}

int nlp_norm_steps_copy(const nlp_norm_step *steps, size_t n, nlp_norm_step **out)
{
    *out = NULL;
    if (!n) return NLP_OK;
    nlp_norm_step *c = nlp_calloc(n, sizeof *c);
    if (!c) return NLP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        c[i] = steps[i];
        c[i].a = steps[i].a ? nlp_strdup(steps[i].a) : NULL;
        c[i].b = steps[i].b ? nlp_strdup(steps[i].b) : NULL;
        if ((steps[i].a && !c[i].a) || (steps[i].b && !c[i].b)) {
            nlp_norm_steps_free(c, i + 1);
            return NLP_ENOMEM;
        }
    }
    *out = c;
    return NLP_OK;
}

/* One step from in[0..n) to out (appended). */
static int step(const nlp_norm_step *st, const char *in, size_t n, nlp_buf *out)
{
    switch (st->type) {
    case NLP_NORM_STEP_NFC: return nlp_uc_normalize(in, n, NLP_NORM_NFC, out);
    case NLP_NORM_STEP_NFD: return nlp_uc_normalize(in, n, NLP_NORM_NFD, out);
    case NLP_NORM_STEP_NFKC: return nlp_uc_normalize(in, n, NLP_NORM_NFKC, out);
    case NLP_NORM_STEP_NFKD: return nlp_uc_normalize(in, n, NLP_NORM_NFKD, out);
    case NLP_NORM_STEP_LOWERCASE:
    case NLP_NORM_STEP_STRIP_ACCENTS: {
        size_t i = 0;
        if (nlp_buf_reserve(out, n + 8)) return NLP_ENOMEM;
        while (i < n) {
            unsigned char c = (unsigned char)in[i];
            if (c < 0x80) {
                char o = st->type == NLP_NORM_STEP_LOWERCASE && c >= 'A' && c <= 'Z' ? (char)(c + 32) : (char)c;
                if (nlp_buf_putc(out, o)) return NLP_ENOMEM;
                i++;
                continue;
            }
            size_t at = i;
            int32_t cp = nlp_utf8_next(in, n, &i);
            if (cp < 0) return nlp_error(NLP_EDATA, "ill-formed UTF-8 at byte %zu", at);
            int rc;
            if (st->type == NLP_NORM_STEP_LOWERCASE) rc = nlp_uclass_lower_append(out, cp);
            else rc = (nlp_uclass(cp) & NLP_UCL_MN) ? NLP_OK : nlp_buf_append(out, in + at, i - at);
            if (rc) return rc;
        }
        return NLP_OK;
    }
    case NLP_NORM_STEP_STRIP: {
        size_t b = 0, e = n;
        if (st->left)
            while (b < e) {
                size_t j = b;
                int32_t cp = nlp_utf8_next(in, e, &j);
                if (cp < 0 || !nlp_uc_is_white_space(cp)) break;
                b = j;
            }
        if (st->right)
            while (e > b) {
                size_t s = e - 1;
                while (s > b && ((unsigned char)in[s] & 0xC0) == 0x80) s--;
                size_t j = s;
                int32_t cp = nlp_utf8_next(in, e, &j);
                if (cp < 0 || !nlp_uc_is_white_space(cp)) break;
                e = s;
            }
        return nlp_buf_append(out, in + b, e - b);
    }
    case NLP_NORM_STEP_PREPEND:
        if (n && st->a && nlp_buf_puts(out, st->a)) return NLP_ENOMEM;
        return nlp_buf_append(out, in, n);
    case NLP_NORM_STEP_REPLACE: {
        size_t pl = st->a ? strlen(st->a) : 0;
        if (!pl) return nlp_buf_append(out, in, n);
        size_t i = 0;
        while (i < n) {
            const char *hit = n - i >= pl ? memmem(in + i, n - i, st->a, pl) : NULL;
            size_t upto = hit ? (size_t)(hit - in) : n;
            if (nlp_buf_append(out, in + i, upto - i)) return NLP_ENOMEM;
            if (!hit) break;
            if (st->b && nlp_buf_puts(out, st->b)) return NLP_ENOMEM;
            i = upto + pl;
        }
        return nlp_buf_reserve(out, 0);
    }
    }
    return nlp_error(NLP_EINVAL, "unknown normalizer step %d", (int)st->type);
}

int nlp_normalize(const nlp_norm_step *steps, size_t nsteps, const char *s, size_t n, nlp_buf *out, nlp_buf *tmp)
{
    nlp_buf_reset(out);
    if (nsteps == 0) return nlp_buf_append(out, s, n) ? NLP_ENOMEM : nlp_buf_reserve(out, 0);
    /* ping-pong between out and tmp so that the last step writes into out */
    nlp_buf *bufs[2] = {out, tmp};
    int cur = nsteps % 2 == 1 ? 0 : 1;
    const char *in = s;
    size_t len = n;
    for (size_t k = 0; k < nsteps; k++) {
        nlp_buf *dst = bufs[cur];
        nlp_buf_reset(dst);
        int rc = step(&steps[k], in, len, dst);
        if (rc) return rc;
        if (nlp_buf_reserve(dst, 0)) return NLP_ENOMEM;
        in = dst->data;
        len = dst->len;
        cur ^= 1;
    }
    return NLP_OK;
}
