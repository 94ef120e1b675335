/*
 * normalize.c — normalizer steps. See normalize.h.
 */
#include "tok/normalize.h"
#include "base/err.h"
#include "text/uclass.h"
#include "text/unicode.h"
#include "text/utf8.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void step_free(nlp_norm_step *st)
{
    free(st->a);
    free(st->b);
    free(st->map);
    if (st->cm) nlp_charsmap_free(st->cm);
    free(st->cm);
}

void nlp_norm_steps_free(nlp_norm_step *steps, size_t n)
{
    for (size_t i = 0; i < n; i++) step_free(&steps[i]);
    free(steps);
}

int nlp_norm_precompiled(nlp_norm_step *st, const void *map, size_t n)
{
    memset(st, 0, sizeof *st);
    st->type = NLP_NORM_STEP_PRECOMPILED;
    st->map = nlp_malloc(n ? n : 1);
    st->cm = nlp_calloc(1, sizeof *st->cm);
    if (!st->map || !st->cm) {
        step_free(st);
        return NLP_ENOMEM;
    }
    memcpy(st->map, map, n);
    st->map_len = n;
    int rc = nlp_charsmap_init(st->cm, map, n);
    if (rc) {
        free(st->cm);
        st->cm = NULL;
        step_free(st);
        memset(st, 0, sizeof *st);
    }
    return rc;
}

int nlp_norm_replace_regex(nlp_norm_step *st, const char *pat, const char *content)
{
    memset(st, 0, sizeof *st);
    st->type = NLP_NORM_STEP_REPLACE;
    st->regex = 1;
    st->re_cp = -1;
    static const char meta[] = "\\.^$|?*+()[]{}";
    size_t n = strlen(pat), i = 0;
    int32_t cp = -1;
    if (n && !strpbrk(pat, meta)) {
        /* a literal */
    } else if (n) {
        if (pat[0] == '\\' && n >= 2 && strchr(meta, pat[1])) {
            cp = (unsigned char)pat[1];
            i = 2;
        } else if (!strchr(meta, pat[0])) {
            cp = nlp_utf8_next(pat, n, &i);
        }
        size_t lo = 1, hi = 1;
        if (cp >= 0 && i < n) {
            if (pat[i] == '+' && i + 1 == n) {
                hi = SIZE_MAX;
            } else if (pat[i] == '{' && pat[n - 1] == '}') {
                char *e;
                unsigned long a = strtoul(pat + i + 1, &e, 10), b = a;
                if (e == pat + i + 1) cp = -1;
                else if (*e == ',' && e[1] == '}') b = (unsigned long)-1, e++;
                else if (*e == ',') {
                    char *f;
                    b = strtoul(e + 1, &f, 10);
                    if (f == e + 1 || *f != '}') cp = -1;
                    e = f;
                }
                if (cp >= 0 && (*e != '}' || e != pat + n - 1)) cp = -1;
                lo = a, hi = b == (unsigned long)-1 ? SIZE_MAX : b;
                if (lo == 0 || hi < lo) cp = -1;
            } else {
                cp = -1;
            }
        }
        if (cp < 0)
            return nlp_error(NLP_EFORMAT, "Replace: the Regex pattern '%s' is not supported (only a literal, or one "
                             "character repeated: X+, X{n}, X{n,}, X{n,m}, n >= 1)", pat);
        st->re_cp = cp;
        st->re_min = lo;
        st->re_max = hi;
    } else {
        return nlp_error(NLP_EFORMAT, "Replace: an empty Regex pattern");
    }
    st->a = nlp_strdup(pat);
    st->b = nlp_strdup(content ? content : "");
    if (!st->a || !st->b) {
        step_free(st);
        return NLP_ENOMEM;
    }
    return NLP_OK;
}

int nlp_norm_steps_copy(const nlp_norm_step *steps, size_t n, nlp_norm_step **out)
{
    *out = NULL;
    if (!n) return NLP_OK;
    nlp_norm_step *c = nlp_calloc(n, sizeof *c);
    if (!c) return NLP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        c[i] = steps[i];
        c[i].map = NULL;
        c[i].cm = NULL;
        c[i].a = steps[i].a ? nlp_strdup(steps[i].a) : NULL;
        c[i].b = steps[i].b ? nlp_strdup(steps[i].b) : NULL;
        if ((steps[i].a && !c[i].a) || (steps[i].b && !c[i].b)) {
            nlp_norm_steps_free(c, i + 1);
            return NLP_ENOMEM;
        }
        if (steps[i].type == NLP_NORM_STEP_PRECOMPILED) {
            char *a = c[i].a, *b = c[i].b;
            int rc = nlp_norm_precompiled(&c[i], steps[i].map, steps[i].map_len);
            c[i].a = a, c[i].b = b;
            if (rc) {
                nlp_norm_steps_free(c, i + 1);
                return rc;
            }
        }
    }
    *out = c;
    return NLP_OK;
}

// --- BertNormalizer

nlp_norm_step nlp_norm_bert(int lowercase)
{
    return (nlp_norm_step){.type = NLP_NORM_STEP_BERT, .clean_text = 1, .handle_chinese_chars = 1,
                           .strip_accents = -1, .lowercase = lowercase};
}

/* HF's is_chinese_char. */
static inline int is_cjk(int32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) ||
           (cp >= 0x2B920 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* ASCII bytes under clean_text and lowercase: the byte to write, or -1 to
 * drop it. Index: [clean][lower][byte]. */
static short ascii_map[2][2][128];
static pthread_once_t ascii_once = PTHREAD_ONCE_INIT;

static void build_ascii_map(void)
{
    for (int clean = 0; clean < 2; clean++)
        for (int lower = 0; lower < 2; lower++)
            for (int c = 0; c < 128; c++) {
                short o = (short)c;
                if (lower && c >= 'A' && c <= 'Z') o = (short)(c + 32);
                if (clean) {
                    if (c == '\t' || c == '\n' || c == '\r') o = ' ';
                    else if (c < 0x20 || c == 0x7F) o = -1; /* Cc (VT and FF too: they are controls first) */
                }
                ascii_map[clean][lower][c] = o;
            }
}

/* Replaces out[from..] (well-formed UTF-8) by its NFD without Mn
 * characters, lowercased if `lower`. */
static int strip_run(nlp_buf *out, size_t from, int lower)
{
    int32_t small[256], *cps = small;
    long k = nlp_uc_nfd_cps(out->data + from, out->len - from, cps, 256);
    if (k > 256) {
        if (!(cps = nlp_malloc((size_t)k * sizeof *cps))) return NLP_ENOMEM;
        k = nlp_uc_nfd_cps(out->data + from, out->len - from, cps, (size_t)k);
    }
    int rc = k < 0 ? (int)k : NLP_OK;
    out->len = from;
    for (long i = 0; i < k && !rc; i++) {
        if (nlp_uclass(cps[i]) & NLP_UCL_MN) continue;
        if (lower) rc = nlp_uclass_lower_append(out, cps[i]);
        else rc = nlp_utf8_append(out, cps[i]);
    }
    if (cps != small) free(cps);
    return rc;
}

static int bert(const nlp_norm_step *st, const char *in, size_t n, nlp_buf *out)
{
    pthread_once(&ascii_once, build_ascii_map);
    const int strip = st->strip_accents < 0 ? st->lowercase : st->strip_accents;
    const short *map = ascii_map[!!st->clean_text][!!st->lowercase];
    /* CJK spacing at most triples a character's bytes; lowercasing grows
     * few (U+0130: 2 -> 3 bytes; the buffer grows on demand there) */
    if (nlp_buf_reserve(out, n + n / 2 + 16)) return NLP_ENOMEM;
    size_t i = 0, run = SIZE_MAX; /* run: start in out of pending characters to strip */
    int rc = NLP_OK;
    while (i < n) {
        unsigned char c = (unsigned char)in[i];
        if (c < 0x80) {
            if (run != SIZE_MAX) {
                if ((rc = strip_run(out, run, st->lowercase))) return rc;
                run = SIZE_MAX;
            }
            /* a stretch of ASCII through the table */
            if (nlp_buf_reserve(out, n - i)) return NLP_ENOMEM;
            char *o = out->data + out->len;
            do {
                short m = map[c];
                if (m >= 0) *o++ = (char)m;
                if (++i == n) break;
                c = (unsigned char)in[i];
            } while (c < 0x80);
            out->len = (size_t)(o - out->data);
            continue;
        }
        size_t at = i;
        int32_t cp = nlp_utf8_next(in, n, &i);
        if (cp < 0) return nlp_error(NLP_EDATA, "ill-formed UTF-8 at byte %zu", at);
        uint8_t u = nlp_uclass(cp);
        int space = 0;
        if (st->clean_text) {
            if (cp == 0xFFFD || ((u & NLP_UCL_OTHER) && nlp_uc_category(cp) != NLP_UC_CN)) continue;
            space = (u & NLP_UCL_SPACE) != 0;
        }
        int cjk = !space && st->handle_chinese_chars && is_cjk(cp);
        if ((space || cjk) && run != SIZE_MAX) {
            if ((rc = strip_run(out, run, st->lowercase))) return rc;
            run = SIZE_MAX;
        }
        if (space) {
            rc = nlp_buf_putc(out, ' ');
        } else if (cjk) {
            /* ideographs have no decomposition to strip nor case */
            if (!(rc = nlp_buf_putc(out, ' ')) && !(rc = nlp_buf_append(out, in + at, i - at))) rc = nlp_buf_putc(out, ' ');
        } else if (strip) {
            if (run == SIZE_MAX) run = out->len;
            rc = nlp_buf_append(out, in + at, i - at);
        } else if (st->lowercase) {
            rc = nlp_uclass_lower_append(out, cp);
        } else {
            rc = nlp_buf_append(out, in + at, i - at);
        }
        if (rc) return rc;
    }
    if (run != SIZE_MAX) rc = strip_run(out, run, st->lowercase);
    return rc;
}

// --- steps

/* Replace with a repeated-character pattern: each leftmost run of re_min
 * to re_max characters re_cp (greedy) becomes the content. */
static int replace_run(const nlp_norm_step *st, const char *in, size_t n, nlp_buf *out)
{
    char enc[4];
    int el = nlp_utf8_encode(st->re_cp, enc);
    if (el <= 0) return nlp_buf_append(out, in, n);
    size_t i = 0;
    while (i < n) {
        if (n - i < (size_t)el || memcmp(in + i, enc, (size_t)el) != 0) {
            const char *next = memchr(in + i + 1, enc[0], n - i - 1);
            size_t upto = next ? (size_t)(next - in) : n;
            if (nlp_buf_append(out, in + i, upto - i)) return NLP_ENOMEM;
            i = upto;
            continue;
        }
        size_t r = 0, j = i;
        while (j + (size_t)el <= n && memcmp(in + j, enc, (size_t)el) == 0) j += (size_t)el, r++;
        /* the run of r characters: matches of re_max while they last, then
         * one of what is left if that is at least re_min */
        while (r >= st->re_min) {
            size_t take = r < st->re_max ? r : st->re_max;
            if (st->b && nlp_buf_puts(out, st->b)) return NLP_ENOMEM;
            r -= take;
        }
        for (size_t k = 0; k < r; k++)
            if (nlp_buf_append(out, enc, (size_t)el)) return NLP_ENOMEM;
        i = j;
    }
    return nlp_buf_reserve(out, 0);
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
    case NLP_NORM_STEP_PRECOMPILED: return st->cm ? nlp_charsmap_normalize_hf(st->cm, in, n, out) : nlp_buf_append(out, in, n);
    case NLP_NORM_STEP_REPLACE: {
        if (st->regex && st->re_cp >= 0) return replace_run(st, in, n, out);
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
    case NLP_NORM_STEP_BERT: return bert(st, in, n, out);
    }
    return nlp_error(NLP_EINVAL, "unknown normalizer step %d", (int)st->type);
}

int nlp_norm_step_apply(const nlp_norm_step *st, const char *s, size_t n, nlp_buf *out)
{
    int rc = step(st, s, n, out);
    return rc ? rc : nlp_buf_reserve(out, 0);
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
