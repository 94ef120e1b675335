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
