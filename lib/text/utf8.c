/*
 * utf8.c — UTF-8 codec with maximal-subpart repair. See utf8.h.
 *
 * Well-formed byte sequences (Unicode Table 3-7):
 *   00..7F
 *   C2..DF 80..BF
 *   E0     A0..BF 80..BF
 *   E1..EC 80..BF 80..BF
 *   ED     80..9F 80..BF
 *   EE..EF 80..BF 80..BF
 *   F0     90..BF 80..BF 80..BF
 *   F1..F3 80..BF 80..BF 80..BF
 *   F4     80..8F 80..BF 80..BF
 */
#include "text/utf8.h"
#include "base/err.h"

#include <string.h>

/* Valid range of the second byte for a given lead byte; the later bytes are
 * always 80..BF. */
static inline int second_ok(unsigned lead, unsigned b)
{
    switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
    }
}

static inline int seq_need(unsigned lead)
{
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

int32_t nlp_utf8_next(const char *str, size_t n, size_t *i)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t p = *i;
    unsigned c = s[p];
    if (c < 0x80) {
        *i = p + 1;
        return (int32_t)c;
    }
    int need = seq_need(c);
    if (need == 0) {
        *i = p + 1;
        return -1;
    }
    int32_t cp = (int32_t)(c & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07));
    for (int k = 1; k < need; k++) {
        if (p + (size_t)k >= n) {
            *i = p + (size_t)k; /* truncated: the maximal subpart is what we have */
            return -1;
        }
        unsigned b = s[p + (size_t)k];
        int ok = k == 1 ? second_ok(c, b) : (b >= 0x80 && b <= 0xBF);
        if (!ok) {
            *i = p + (size_t)k; /* the offending byte starts the next attempt */
            return -1;
        }
        cp = (cp << 6) | (int32_t)(b & 0x3F);
    }
    *i = p + (size_t)need;
    return cp;
}

size_t nlp_utf8_seq_len(const char *s, size_t n, size_t i)
{
    size_t j = i;
    return nlp_utf8_next(s, n, &j) < 0 ? 0 : j - i;
}

int nlp_utf8_valid(const char *s, size_t n, size_t *bad)
{
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, 8 bytes at a time */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        /* a two-byte sequence (Latin, Greek, Cyrillic...; GPT-2's Ġ) */
        unsigned c = (unsigned char)s[i];
        if (c >= 0xC2 && c <= 0xDF && i + 1 < n && ((unsigned char)s[i + 1] & 0xC0) == 0x80) {
            i += 2;
            continue;
        }
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t at = i;
        if (nlp_utf8_next(s, n, &i) < 0) {
            if (bad) *bad = at;
            return 0;
        }
    }
    return 1;
}

int nlp_utf8_repair(const char *s, size_t n, nlp_buf *out, size_t *replaced)
{
    size_t i = 0, good = 0, cnt = 0;
    if (nlp_buf_reserve(out, n)) return NLP_ENOMEM;
    while (i < n) {
        size_t at = i;
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        if (nlp_utf8_next(s, n, &i) >= 0) continue;
        if (nlp_buf_append(out, s + good, at - good) || nlp_buf_append(out, "\xEF\xBF\xBD", 3))
            return NLP_ENOMEM;
        good = i;
        cnt++;
    }
    if (nlp_buf_append(out, s + good, n - good)) return NLP_ENOMEM;
    if (replaced) *replaced = cnt;
    return NLP_OK;
}

int nlp_utf8_encode(int32_t cp, char out[4])
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0) return 0;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= 0x10FFFF) {
        o[0] = (unsigned char)(0xF0 | (cp >> 18));
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (unsigned char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}

int nlp_utf8_append(nlp_buf *b, int32_t cp)
{
    char tmp[4];
    int k = nlp_utf8_encode(cp, tmp);
    if (!k) return nlp_buf_append(b, "\xEF\xBF\xBD", 3);
    return nlp_buf_append(b, tmp, (size_t)k);
}

size_t nlp_utf8_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}
