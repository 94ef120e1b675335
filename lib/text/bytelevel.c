/*
 * bytelevel.c — GPT-2 byte <-> character mapping. See bytelevel.h.
 */
#include "text/bytelevel.h"
#include "base/err.h"
#include "text/utf8.h"

#include <pthread.h>

static int32_t b2cp[256];
static char b2u[256][2];
static uint8_t b2ulen[256];
static uint8_t hi2b[68]; /* U+0100 + n -> byte */
static int16_t cp2b[0x100 + 68]; /* character -> byte, -1 where none */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

static void build(void)
{
    int n = 0;
    for (int c = 0; c < 0x100 + 68; c++) cp2b[c] = -1;
    for (int b = 0; b < 256; b++) {
        if (!printable(b)) hi2b[n] = (uint8_t)b;
        b2cp[b] = printable(b) ? b : 0x100 + n++;
        char tmp[4];
        int k = nlp_utf8_encode(b2cp[b], tmp);
        b2ulen[b] = (uint8_t)k;
        b2u[b][0] = tmp[0];
        b2u[b][1] = k > 1 ? tmp[1] : 0;
        cp2b[b2cp[b]] = (int16_t)b;
    }
}

int32_t nlp_bytelevel_cp(uint8_t b)
{
    pthread_once(&once, build);
    return b2cp[b];
}

int nlp_bytelevel_byte(int32_t cp)
{
    if (cp >= 0x100 && cp < 0x100 + 68) {
        pthread_once(&once, build);
        return hi2b[cp - 0x100];
    }
    if (cp >= 0 && cp < 256 && printable(cp)) return cp;
    return -1;
}

const char *nlp_bytelevel_utf8(uint8_t b, size_t *len)
{
    pthread_once(&once, build);
    *len = b2ulen[b];
    return b2u[b];
}

int nlp_bytelevel_encode(const char *s, size_t n, nlp_buf *out)
{
    pthread_once(&once, build);
    if (nlp_buf_reserve(out, 2 * n)) return NLP_ENOMEM;
    char *o = out->data + out->len;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = (uint8_t)s[i];
        *o++ = b2u[b][0];
        if (b2ulen[b] > 1) *o++ = b2u[b][1];
    }
    out->len = (size_t)(o - out->data);
    out->data[out->len] = 0;
    return NLP_OK;
}

int nlp_bytelevel_decode(const char *s, size_t n, nlp_buf *out)
{
    size_t keep = out->len;
    if (nlp_buf_reserve(out, n)) return NLP_ENOMEM;
    pthread_once(&once, build);
    size_t i = 0;
    const unsigned char *u = (const unsigned char *)s;
    while (i < n) {
        int32_t cp;
        /* the characters of the mapping are printable ASCII and U+00A1 to
         * U+0143: one or two bytes */
        if (u[i] < 0x80) cp = u[i++];
        else if (u[i] >= 0xC2 && u[i] <= 0xC5 && i + 1 < n && (u[i + 1] & 0xC0) == 0x80) {
            cp = (u[i] & 0x1F) << 6 | (u[i + 1] & 0x3F);
            i += 2;
        } else cp = nlp_utf8_next(s, n, &i);
        int b = cp >= 0 && cp < 0x100 + 68 ? cp2b[cp] : -1;
        if (b < 0) {
            out->len = keep;
            if (out->data) out->data[keep] = 0;
            return 0;
        }
        out->data[out->len++] = (char)b;
    }
    out->data[out->len] = 0;
    return 1;
}
