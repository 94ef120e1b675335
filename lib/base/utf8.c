/*
 * utf8.c — UTF-8 decoding and validation. See utf8.h.
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
#include "base/utf8.h"

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
