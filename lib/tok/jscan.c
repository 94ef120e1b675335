/*
 * jscan.c — a fast path through the large, flat parts of tokenizer files.
 * See jscan.h.
 *
 * What counts as valid follows jansson 2.14 as the readers call it (no
 * JSON_ALLOW_NUL): strings of well-formed UTF-8 without control characters,
 * the escapes \" \\ \/ \b \f \n \r \t and \u with four hex digits (a high
 * surrogate only with a low one after it, never \u0000), integers
 * -?(0|[1-9][0-9]*) without a fraction or exponent, and no more than 2048
 * levels of nesting. Where the text strays from the shapes read here, the
 * answer is "not handled".
 */
#include "tok/jscan.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH */

size_t nlp_jscan_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) i++;
    return i;
}

/* Length of the well-formed UTF-8 sequence at s[i] (lead byte >= 0x80), or
 * 0: no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n, size_t i)
{
    unsigned c = s[i];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if ((s[i + k] & 0xC0) != 0x80) return 0;
    return len;
}

/* Is u[a, e) well-formed UTF-8? The text (of n bytes) is read 16 bytes a
 * step while it holds ASCII and two-byte characters only, as all of GPT-2's
 * byte-level vocabulary does: the lead bytes (C2..DF) shifted by one must
 * be exactly the continuation bytes, and no other byte may be above 7F. At
 * the first step that is not so (or near the end of the text) the byte loop
 * takes over, from the lead byte the last step ended with if there was one. */
#ifdef __SSE2__
/* Of the 16 bytes x, those within keep that are lead bytes of two-byte
 * characters (C2..DF) and those that are continuation bytes (80..BF). */
static inline void two_byte_masks(__m128i x, unsigned keep, unsigned *lead, unsigned *cont)
{
    const __m128i t = _mm_sub_epi8(x, _mm_set1_epi8((char)0xC2)); /* lead bytes: 0..1D */
    const __m128i top2 = _mm_and_si128(x, _mm_set1_epi8((char)0xC0));
    *lead = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(0x1D)), t)) & keep;
    *cont = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(top2, _mm_set1_epi8((char)0x80))) & keep;
}
#endif

static int utf8_ok(const unsigned char *u, size_t a, size_t e, size_t n)
{
#ifdef __SSE2__
    unsigned carry = 0; /* the previous step ended with a lead byte */
    while (a < e && n - a >= 16) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(u + a));
        const unsigned k = e - a < 16 ? (unsigned)(e - a) : 16, keep = (1u << k) - 1;
        const unsigned high = (unsigned)_mm_movemask_epi8(x) & keep;
        unsigned lead, cont;
        two_byte_masks(x, keep, &lead, &cont);
        const unsigned want = lead << 1 | carry;
        if ((lead | cont) != high || (want & keep) != cont) break;
        carry = want >> k;
        a += k;
    }
    if (a >= e) return !carry;
    a -= carry;
#endif
    for (size_t i = a; i < e;) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t l = utf8_len(u, e, i);
        if (!l) return 0;
        i += l;
    }
    return 1;
}

static int hex4(const char *s, size_t n, size_t i, unsigned *out)
{
    if (n - i < 4) return 0;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned c = (unsigned char)s[i + k], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') d = (c | 0x20) - 'a' + 10;
        else return 0;
        v = v << 4 | d;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The bytes of w that are a quote, a backslash or a control character: the
 * high bit of each flagged byte. Only the lowest flag is exact (a borrow
 * carries upwards), which is the one the scans use. */
static inline uint64_t special8(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    const uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    return (((q - ones) & ~q) | ((bs - ones) & ~bs) | ((w - ones * 0x20) & ~w)) & high;
}

/*
 * The string at s[*i] (an opening quote). 1: *i past the closing quote, and
 * the decoded bytes at *p, *len: inside the text where it holds no escape,
 * else in `scratch` (which then must outlive the use). 0: no valid string.
 * -1: out of memory.
 */
static int string(const char *s, size_t n, size_t *i, const char **p, size_t *len, nlp_buf *scratch)
{
    size_t j = *i;
    if (j >= n || s[j] != '"') return 0;
    size_t b = ++j;
    const unsigned char *u = (const unsigned char *)s;
#ifdef __SSE2__
    /* most strings (a vocabulary's tokens) end within 16 bytes: the closing
     * quote found and the UTF-8 of ASCII and two-byte characters checked
     * from one load (as utf8_ok's step); anything else goes on below */
    if (n - j >= 16) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(u + j));
        const __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1F)), x);
        const unsigned sp = (unsigned)_mm_movemask_epi8(_mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))), ctl));
        const unsigned k = sp ? (unsigned)__builtin_ctz(sp) : 16;
        if (k < 16 && u[j + k] == '"') {
            const unsigned keep = (1u << k) - 1, high16 = (unsigned)_mm_movemask_epi8(x) & keep;
            int ok = 1;
            if (high16) {
                unsigned lead, cont;
                two_byte_masks(x, keep, &lead, &cont);
                /* every high byte a lead or a continuation, each lead followed
                 * by one continuation inside the string, and no other */
                ok = (lead | cont) == high16 && lead << 1 == cont;
                if (!ok) ok = utf8_ok(u, j, j + k, n); /* three- and four-byte characters */
            }
            if (!ok) return 0;
            *p = s + b;
            *len = k;
            *i = j + k + 1;
            return 1;
        }
    }
#endif
    uint64_t hi = 0; /* the bytes seen, or'ed: is any beyond ASCII? */
    const uint64_t high = 0x8080808080808080ull;
    for (;;) { /* the plain run */
        /* 8 bytes at a time while none is a quote, a backslash or a
         * control character (UTF-8 is checked at the end, if need be) */
        while (n - j >= 8) {
            uint64_t w;
            memcpy(&w, s + j, 8);
            const uint64_t special = special8(w);
            if (special) { /* go to the first such byte */
                const unsigned k = (unsigned)__builtin_ctzll(special) >> 3;
                hi |= w & ((1ull << (8 * k)) - 1);
                j += k;
                break;
            }
            hi |= w;
            j += 8;
        }
        if (j >= n) return 0;
        unsigned c = u[j];
        if (c == '"') {
            if ((hi & high) && !utf8_ok(u, b, j, n)) return 0;
            *p = s + b;
            *len = j - b;
            *i = j + 1;
            return 1;
        }
        if (c == '\\') break;
        if (c < 0x20) return 0;
        hi |= c;
        j++;
    }
    /* an escape: decode from the start into scratch, which grows as the
     * decoded bytes need it. The raw runs between escapes are copied 8
     * bytes a step where there is room, and each is checked for UTF-8 when
     * it ends (a character cannot be split by an escape). */
    if ((hi & high) && !utf8_ok(u, b, j, n)) return 0;
    nlp_buf_reset(scratch);
    if (nlp_buf_reserve(scratch, j - b + 64)) return -1;
    /* the output position in a local: a store through a char pointer could
     * alias scratch->len, which the loop would otherwise reload each byte */
    char *d = scratch->data;
    size_t o = j - b, room = scratch->cap - 1;
    memcpy(d, s + b, o);
    size_t run = j; /* where the raw run being copied began */
    hi = 0;
    for (;;) {
        if (room - o < 16) { /* room for one more step: 8 bytes stored, up to
                              * 7 of them kept, then an escape's 4 */
            scratch->len = o;
            if (nlp_buf_reserve(scratch, 64)) return -1; /* at least doubles */
            d = scratch->data;
            room = scratch->cap - 1;
        }
        if (n - j >= 8) {
            uint64_t w;
            memcpy(&w, s + j, 8);
            memcpy(d + o, &w, 8); /* all 8, though fewer may count */
            const uint64_t special = special8(w);
            if (!special) {
                hi |= w;
                o += 8;
                j += 8;
                continue;
            }
            const unsigned k = (unsigned)__builtin_ctzll(special) >> 3;
            hi |= w & ((1ull << (8 * k)) - 1);
            o += k;
            j += k;
        }
        if (j >= n) return 0;
        unsigned c = u[j];
        if (c != '"' && c != '\\') {
            if (c < 0x20) return 0;
            hi |= c;
            d[o++] = (char)c;
            j++;
            continue;
        }
        if ((hi & high) && !utf8_ok(u, run, j, n)) return 0;
        if (c == '"') break;
        if (j + 1 >= n) return 0;
        char esc = s[j + 1], r;
        switch (esc) {
        case '"': r = '"'; break;
        case '\\': r = '\\'; break;
        case '/': r = '/'; break;
        case 'b': r = '\b'; break;
        case 'f': r = '\f'; break;
        case 'n': r = '\n'; break;
        case 'r': r = '\r'; break;
        case 't': r = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (!hex4(s, n, j + 2, &cp) || cp == 0) return 0;
            j += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return 0;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (n - j < 2 || s[j] != '\\' || s[j + 1] != 'u' || !hex4(s, n, j + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                    return 0;
                j += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            o += put_utf8(d + o, cp);
            run = j;
            hi = 0;
            continue;
        }
        default: return 0;
        }
        d[o++] = r;
        j += 2;
        run = j;
        hi = 0;
    }
    scratch->len = o;
    *p = scratch->data;
    *len = scratch->len;
    *i = j + 1;
    return 1;
}

/* The first index from j on (or n) holding a quote or a backslash. */
static size_t next_in_string(const char *s, size_t j, size_t n)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
    while (j + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + j));
        int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bs)));
        if (mask) return j + (size_t)__builtin_ctz((unsigned)mask);
        j += 16;
    }
#endif
    while (j < n && s[j] != '"' && s[j] != '\\') j++;
    return j;
}

/* Past the string whose opening quote is at s[j - 1], or n + 1. */
static size_t skip_string(const char *s, size_t j, size_t n)
{
    for (;;) {
        j = next_in_string(s, j, n);
        if (j >= n) return n + 1;
        if (s[j] == '"') return j + 1;
        j += 2; /* an escape */
        if (j > n) return n + 1;
    }
}

/* A bracket outside strings of a container being skipped: 1 (go on), 0
 * (the container's closing bracket), -1 (no valid end: mismatched or too
 * deep). */
static inline int bracket(char c, char *stack, int *depth)
{
    if (c == '{' || c == '[') {
        if (*depth == MAX_DEPTH) return -1;
        stack[(*depth)++] = c == '{' ? '}' : ']';
    } else if (c == '}' || c == ']') {
        if (!*depth || stack[*depth - 1] != c) return -1;
        if (--*depth == 0) return 0;
    }
    return 1;
}

/* Any byte of it, with the string state: as bracket(). */
static inline int skip_byte(char c, int *in_str, int *esc, char *stack, int *depth)
{
    if (*in_str) {
        if (*esc) *esc = 0;
        else if (c == '\\') *esc = 1;
        else if (c == '"') *in_str = 0;
        return 1;
    }
    if (c == '"') {
        *in_str = 1;
        return 1;
    }
    return bracket(c, stack, depth);
}

int nlp_jscan_skip(const char *s, size_t n, size_t *i)
{
    char stack[MAX_DEPTH]; /* the closing bracket each open level expects */
    int depth = 0;
    size_t j = nlp_jscan_ws(s, n, *i);
    if (j >= n) return 0;
    char c = s[j];
    if (c == '"') { /* a value that is no container */
        if ((j = skip_string(s, j + 1, n)) > n) return 0;
        *i = j;
        return 1;
    }
    if (c != '{' && c != '[') {
        size_t b = j;
        while (j < n && ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= '0' && s[j] <= '9') || s[j] == '-' || s[j] == '+' ||
                         s[j] == '.' || s[j] == 'E'))
            j++;
        if (j == b) return 0;
        *i = j;
        return 1;
    }
    /* a container: only quotes and brackets matter for finding its end
     * (what lies between them is not checked) */
    int in_str = 0, esc = 0; /* inside a string; the next byte is escaped */
#ifdef __SSE2__
    /* 64 bytes a step: the bytes inside strings are the prefix XOR of the
     * quotes, and the brackets outside them are visited one by one; a step
     * with a backslash (an escape: rare in a tokenizer) goes byte by byte */
    for (; j + 64 <= n; j += 64) {
        uint64_t q = 0, bs = 0, br = 0;
        for (int k = 0; k < 4; k++) {
            const __m128i v = _mm_loadu_si128((const __m128i *)(s + j + 16 * k)),
                          t = _mm_or_si128(v, _mm_set1_epi8(0x20)); /* [ -> {, ] -> } */
            q |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))) << (16 * k);
            bs |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))) << (16 * k);
            br |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(t, _mm_set1_epi8('{')),
                                                                     _mm_cmpeq_epi8(t, _mm_set1_epi8('}'))))
                  << (16 * k);
        }
        if (bs || esc) {
            for (size_t k = j; k < j + 64; k++) {
                int r = skip_byte(s[k], &in_str, &esc, stack, &depth);
                if (r <= 0) {
                    if (r == 0) *i = k + 1;
                    return r == 0;
                }
            }
            continue;
        }
        uint64_t inside = q; /* bit i: byte i follows an odd number of quotes of the step */
        inside ^= inside << 1, inside ^= inside << 2, inside ^= inside << 4;
        inside ^= inside << 8, inside ^= inside << 16, inside ^= inside << 32;
        if (in_str) inside = ~inside;
        for (uint64_t b = br & ~inside; b; b &= b - 1) {
            const size_t at = j + (size_t)__builtin_ctzll(b);
            int r = bracket(s[at], stack, &depth);
            if (r <= 0) {
                if (r == 0) *i = at + 1;
                return r == 0;
            }
        }
        in_str ^= __builtin_popcountll(q) & 1;
    }
#endif
    for (; j < n; j++) {
        int r = skip_byte(s[j], &in_str, &esc, stack, &depth);
        if (r <= 0) {
            if (r == 0) *i = j + 1;
            return r == 0;
        }
    }
    return 0;
}

/* After an element of an object or array: 1 and *j at the next element
 * (past a comma), 0 and *j past the closing bracket `close`, -1 (neither). */
static int after_item(const char *s, size_t lim, size_t *j, char close)
{
    size_t k = nlp_jscan_ws(s, lim, *j);
    if (k < lim && s[k] == ',') {
        *j = nlp_jscan_ws(s, lim, k + 1);
        return 1;
    }
    if (k < lim && s[k] == close) {
        *j = k + 1;
        return 0;
    }
    return -1;
}

/* nlp_jscan_members; where nest is given, the value of the member named
 * nest->key, when an object, is scanned for nest's keys in the same pass
 * (their spans cleared where the last such member is no object). */
struct nest {
    const char *key;
    const char *const *keys;
    size_t nk;
    size_t (*spans)[2];
    size_t at[2]; /* the object's own span, or [0, 0) */
};

static int members(const char *s, size_t o0, size_t lim, const char *const *keys, size_t nk, size_t (*spans)[2],
                   size_t *end, struct nest *nest)
{
    size_t j = o0;
    for (size_t k = 0; k < nk; k++) spans[k][0] = spans[k][1] = 0;
    if (j >= lim || s[j] != '{') return -1;
    j = nlp_jscan_ws(s, lim, j + 1);
    if (j < lim && s[j] == '}') {
        *end = j + 1;
        return 1;
    }
    nlp_buf scratch = {0};
    int rc = -1;
    for (;;) {
        const char *key;
        size_t kn;
        int r = string(s, lim, &j, &key, &kn, &scratch);
        if (r <= 0) {
            if (r < 0) rc = NLP_ENOMEM;
            break;
        }
        size_t hit = nk;
        for (size_t k = 0; k < nk && hit == nk; k++)
            if (strlen(keys[k]) == kn && memcmp(key, keys[k], kn) == 0) hit = k;
        int nested = nest && strlen(nest->key) == kn && memcmp(key, nest->key, kn) == 0;
        j = nlp_jscan_ws(s, lim, j);
        if (j >= lim || s[j] != ':') break;
        size_t a = nlp_jscan_ws(s, lim, j + 1);
        j = a;
        if (nested) {
            nest->at[0] = nest->at[1] = 0;
            for (size_t k = 0; k < nest->nk; k++) nest->spans[k][0] = nest->spans[k][1] = 0;
        }
        if (nested && j < lim && s[j] == '{') {
            if ((r = members(s, a, lim, nest->keys, nest->nk, nest->spans, &j, NULL)) != 1) {
                if (r < -1) rc = r;
                break;
            }
            nest->at[0] = a;
            nest->at[1] = j;
        } else if (!nlp_jscan_skip(s, lim, &j)) break;
        if (hit < nk) {
            spans[hit][0] = a;
            spans[hit][1] = j;
        }
        int more = after_item(s, lim, &j, '}');
        if (more > 0) continue;
        if (!more) {
            *end = j;
            rc = 1;
        }
        break;
    }
    nlp_buf_free(&scratch);
    return rc;
}

int nlp_jscan_members(const char *s, size_t o0, size_t lim, const char *const *keys, size_t nk, size_t (*spans)[2],
                      size_t *end)
{
    return members(s, o0, lim, keys, nk, spans, end, NULL);
}

int nlp_jscan_doc_members(const char *s, size_t n, const char *const *keys, size_t nk, size_t (*spans)[2])
{
    size_t end;
    int r = nlp_jscan_members(s, nlp_jscan_ws(s, n, 0), n, keys, nk, spans, &end);
    if (r == 1 && nlp_jscan_ws(s, n, end) != n) r = -1;
    return r;
}

int nlp_jscan_tokenizer(const char *s, size_t n, nlp_jscan_tok *t)
{
    static const char *const model_keys[] = {"vocab", "merges"};
    size_t sp[2][2], none[1][2], end;
    struct nest nest = {"model", model_keys, 2, sp, {0, 0}};
    memset(t, 0, sizeof *t);
    int r = members(s, nlp_jscan_ws(s, n, 0), n, NULL, 0, none, &end, &nest);
    if (r == 1 && nlp_jscan_ws(s, n, end) != n) r = -1;
    if (r != 1) return r;
    t->model[0] = nest.at[0];
    t->model[1] = nest.at[1];
    memcpy(t->vocab, sp[0], sizeof t->vocab);
    memcpy(t->merges, sp[1], sizeof t->merges);
    return 1;
}

/* A non-negative integer below 2^31 at s[*i], as jansson reads integers. */
static int id_at(const char *s, size_t n, size_t *i, int64_t *out)
{
    size_t j = *i;
    if (j + 1 < n && s[j] == '-' && s[j + 1] == '0') j++; /* -0 is an integer, 0 */
    size_t d0 = j;
    int64_t v = 0;
    while (j < n && s[j] >= '0' && s[j] <= '9' && j - d0 < 11) v = v * 10 + (s[j++] - '0');
    size_t nd = j - d0;
    if (nd == 0 || nd > 10 || (nd > 1 && s[d0] == '0') || v >= INT32_MAX - 1) return 0;
    if (j < n && (s[j] == '.' || s[j] == 'e' || s[j] == 'E' || (s[j] >= '0' && s[j] <= '9'))) return 0;
    *out = v;
    *i = j;
    return 1;
}

/* Puts the batch of pending tokens into v: 1, 0 (a token or an id twice:
 * not handled) or NLP_ENOMEM. Decoded tokens are in dec at doff[q]. */
static int put_batch(nlp_vocab *v, nlp_span *t, const size_t *doff, const int32_t *id, size_t k, const nlp_buf *dec)
{
    for (size_t q = 0; q < k; q++)
        if (doff[q] != SIZE_MAX) t[q].s = dec->data + doff[q];
    size_t bad;
    int r = nlp_vocab_set_many(v, id, t, k, &bad);
    return r == NLP_ENOMEM ? r : !r;
}

int nlp_jscan_vocab(const char *s, size_t o0, size_t o1, size_t *end, nlp_vocab **out)
{
    size_t j = o0;
    if (j >= o1 || s[j] != '{') return 0;
    /* The tokens go into the vocabulary as they are read, a batch at a time
     * (nlp_vocab_set_many fetches the slots of a batch ahead); sized for a
     * token every 16 bytes of text. */
    enum { BATCH = 256 };
    nlp_span t[BATCH];
    int32_t id[BATCH];
    size_t doff[BATCH], nb = 0, nkv = 0;
    nlp_buf scratch = {0}, dec = {0}; /* a string decoded; a batch's decoded tokens */
    nlp_vocab *v = nlp_vocab_new((o1 - o0) / 16 + 16);
    int64_t max = -1;
    int rc = 0;
    if (!v) return NLP_ENOMEM;
    j = nlp_jscan_ws(s, o1, j + 1);
    if (j < o1 && s[j] == '}') j++;
    else
        for (;;) {
            const char *k;
            size_t kn;
            int r = string(s, o1, &j, &k, &kn, &scratch);
            if (r <= 0) {
                rc = r < 0 ? NLP_ENOMEM : 0;
                goto out;
            }
            doff[nb] = SIZE_MAX;
            if (k == scratch.data) {
                doff[nb] = dec.len;
                if (nlp_buf_append(&dec, k, kn)) {
                    rc = NLP_ENOMEM;
                    goto out;
                }
            }
            j = nlp_jscan_ws(s, o1, j);
            if (j >= o1 || s[j] != ':') goto out;
            j = nlp_jscan_ws(s, o1, j + 1);
            int64_t val;
            if (!id_at(s, o1, &j, &val)) goto out;
            t[nb] = (nlp_span){k, kn};
            id[nb++] = (int32_t)val;
            nkv++;
            if (val > max) max = val;
            if (nb == BATCH) {
                if ((rc = put_batch(v, t, doff, id, nb, &dec)) != 1) goto out;
                rc = 0;
                nb = 0;
                nlp_buf_reset(&dec);
            }
            int more = after_item(s, o1, &j, '}');
            if (more < 0) goto out;
            if (!more) break;
        }
    if ((end ? 0 : j != o1) || (max >= 0 && (size_t)max >= nkv + NLP_VOCAB_MAX_HOLES)) goto out;
    if ((rc = put_batch(v, t, doff, id, nb, &dec)) != 1) goto out;
    if (end) *end = j;
    *out = v;
    v = NULL;
    rc = 1;
out:
    nlp_vocab_free(v);
    nlp_buf_free(&scratch);
    nlp_buf_free(&dec);
    return rc;
}

enum { CHUNK = 1024 }; /* tokens looked up at once */

/* string(), with a string that had to be decoded (into scratch, which the
 * next one reuses) copied into keep: 1, 0 (no valid string) or NLP_ENOMEM. */
static int kept_string(const char *s, size_t n, size_t *i, const char **p, size_t *len, nlp_buf *scratch,
                       nlp_arena *keep)
{
    int r = string(s, n, i, p, len, scratch);
    if (r < 0) return NLP_ENOMEM;
    if (r && *p == scratch->data && !(*p = nlp_arena_strndup(keep, *p, *len))) return NLP_ENOMEM;
    return r;
}

/* The ids of the *np pending tokens into out; 0 where one is unknown. */
static int resolve(const nlp_vocab *v, nlp_span *pend, size_t *np, int32_t *out)
{
    if (!*np) return 1;
    nlp_vocab_find_many(v, pend, *np, out);
    for (size_t i = 0; i < *np; i++)
        if (out[i] < 0) return 0;
    *np = 0;
    return 1;
}

int nlp_jscan_merges(const char *s, size_t a0, size_t a1, const nlp_vocab *v, int32_t **out, size_t *count)
{
    size_t j = a0;
    if (j >= a1 || s[j] != '[') return 0;
    int32_t *m = NULL;
    size_t nm = 0, cap = 0, np = 0;
    nlp_buf scratch = {0};
    nlp_arena keep = {0}; /* decoded tokens, alive until they are looked up */
    nlp_span pend[CHUNK];
    int rc = 0;
    j = nlp_jscan_ws(s, a1, j + 1);
    if (j < a1 && s[j] == ']') j++;
    else
        for (;;) {
            const char *a, *b;
            size_t la, lb;
            int r;
            if (j < a1 && s[j] == '"') {
                if ((r = kept_string(s, a1, &j, &a, &la, &scratch, &keep)) <= 0) {
                    rc = r;
                    goto out;
                }
                const char *sp = memchr(a, ' ', la);
                if (!sp || memchr(sp + 1, ' ', (size_t)(a + la - sp - 1))) goto out;
                b = sp + 1;
                lb = (size_t)(a + la - b);
                la = (size_t)(sp - a);
            } else if (j < a1 && s[j] == '[') {
                j = nlp_jscan_ws(s, a1, j + 1);
                if ((r = kept_string(s, a1, &j, &a, &la, &scratch, &keep)) <= 0) {
                    rc = r;
                    goto out;
                }
                j = nlp_jscan_ws(s, a1, j);
                if (j >= a1 || s[j] != ',') goto out;
                j = nlp_jscan_ws(s, a1, j + 1);
                if ((r = kept_string(s, a1, &j, &b, &lb, &scratch, &keep)) <= 0) {
                    rc = r;
                    goto out;
                }
                j = nlp_jscan_ws(s, a1, j);
                if (j >= a1 || s[j] != ']') goto out;
                j++;
            } else goto out;
            /* looked up a chunk at a time (nlp_vocab_find_many) */
            if (2 * nm + 2 > cap && nlp_grow(&m, &cap, 2 * nm + 2, sizeof *m)) {
                rc = NLP_ENOMEM;
                goto out;
            }
            pend[np++] = (nlp_span){a, la};
            pend[np++] = (nlp_span){b, lb};
            nm++;
            if (np == CHUNK && !resolve(v, pend, &np, m + 2 * nm - CHUNK)) goto out;
            int more = after_item(s, a1, &j, ']');
            if (more < 0) goto out;
            if (!more) break;
        }
    if (j != a1 || !resolve(v, pend, &np, m + 2 * nm - np)) goto out;
    if (!m && !(m = nlp_malloc(sizeof *m))) {
        rc = NLP_ENOMEM;
        goto out;
    }
    *out = m;
    *count = nm;
    m = NULL;
    rc = 1;
out:
    free(m);
    nlp_buf_free(&scratch);
    nlp_arena_free(&keep);
    return rc;
}
