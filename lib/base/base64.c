/*
 * base64.c — base64 with the standard alphabet. See base64.h.
 */
#include "base/base64.h"
#include "base/err.h"

#include <stdint.h>

static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int nlp_base64_encode(const void *p, size_t n, nlp_buf *out)
{
    const uint8_t *d = p;
    if (nlp_buf_reserve(out, (n + 2) / 3 * 4)) return NLP_ENOMEM;
    char *o = out->data + out->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        *o++ = alpha[v >> 18], *o++ = alpha[v >> 12 & 63], *o++ = alpha[v >> 6 & 63], *o++ = alpha[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)d[i] << 16;
        *o++ = alpha[v >> 18], *o++ = alpha[v >> 12 & 63], *o++ = '=', *o++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8;
        *o++ = alpha[v >> 18], *o++ = alpha[v >> 12 & 63], *o++ = alpha[v >> 6 & 63], *o++ = '=';
    }
    out->len = (size_t)(o - out->data);
    out->data[out->len] = 0;
    return NLP_OK;
}

static int val(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

int nlp_base64_decode(const char *s, size_t n, nlp_buf *out, size_t *bad)
{
    if (n % 4) {
        *bad = n;
        return NLP_EFORMAT;
    }
    if (nlp_buf_reserve(out, n / 4 * 3)) return NLP_ENOMEM;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            char c = s[i + k];
            /* '=' only as the last one or two characters of the text */
            if (c == '=' && i + 4 == n && (k == 3 || (k == 2 && s[i + 3] == '='))) {
                v[k] = 0;
                pad++;
                continue;
            }
            if ((v[k] = val(c)) < 0 || pad) {
                *bad = i + (size_t)k;
                return NLP_EFORMAT;
            }
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        char b[3] = {(char)(x >> 16), (char)(x >> 8 & 255), (char)(x & 255)};
        if (nlp_buf_append(out, b, (size_t)(3 - pad))) return NLP_ENOMEM;
    }
    return nlp_buf_reserve(out, 0);
}
