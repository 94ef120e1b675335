/*
 * tok13a.c — 13a, zh and the shared Western passes. See tok13a.h.
 *
 * Why bytes are enough: each pass looks at pairs (x, y) where one side must
 * be an ASCII character ('.', ',', '-' or a digit) and the other side is
 * "anything but a digit". A UTF-8 lead byte is always followed by a
 * continuation byte, and neither is ASCII, so a multi-byte character can
 * only take part in a match through its last byte (as x) or its first byte
 * (as y), and copying the rest of its bytes unchanged is what Python does
 * with the whole character. The scan positions line up for the same reason.
 */
#include "eval/tok13a.h"
#include "base/err.h"
#include "eval/pystr.h"
#include "text/utf8.h"

#include <string.h>

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Bytes that can take part in a rewrite of pass B/C ('.' ','), D ('-'). */
static const unsigned char dotcomma[256] = {['.'] = 1, [','] = 1};
static const unsigned char dash[256] = {['-'] = 1};

/* Copies s[i..) up to the byte before the next byte of class `cls` (a
 * match of passes B and D starts there; one of C starts at the class byte,
 * which the caller then sees next) and returns the new i. */
static inline size_t copy_run(const unsigned char *s, size_t n, size_t i, const unsigned char *cls, char **d)
{
    size_t k = i;
    while (k < n && !cls[s[k]]) k++;
    size_t stop = k == n ? n : k > i ? k - 1 : i;
    memcpy(*d, s + i, stop - i);
    *d += stop - i;
    return stop;
}

/* Pass A's class: [{-~[-` -&(-+:-@/] */
static int is_punct13a(unsigned char c)
{
    return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
           (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == 0x2F;
}

/* Appends s with every occurrence of `from` replaced by `to` (Python's
 * str.replace: left to right, non-overlapping). */
static int replace_all(const char *s, size_t n, const char *from, const char *to, nlp_buf *out)
{
    size_t fl = strlen(from), tl = strlen(to), i = 0;
    while (i < n) {
        const char *hit = fl <= n - i ? memmem(s + i, n - i, from, fl) : NULL;
        size_t upto = hit ? (size_t)(hit - s) : n;
        if (nlp_buf_append(out, s + i, upto - i)) return NLP_ENOMEM;
        if (!hit) break;
        if (tl && nlp_buf_append(out, to, tl)) return NLP_ENOMEM;
        i = upto + fl;
    }
    if (!out->data && nlp_buf_reserve(out, 1)) return NLP_ENOMEM;
    return NLP_OK;
}

static void swap(nlp_buf *a, nlp_buf *b)
{
    nlp_buf t = *a;
    *a = *b;
    *b = t;
}

/* Runs one replace_all over buf in place. */
static int replace_in(nlp_buf *buf, nlp_buf *tmp, const char *from, const char *to)
{
    nlp_buf_reset(tmp);
    if (replace_all(buf->data, buf->len, from, to, tmp)) return NLP_ENOMEM;
    swap(buf, tmp);
    return NLP_OK;
}

int nlp_tok13a_unescape(const char *s, size_t n, nlp_buf *out)
{
    static const char *const ent[4][2] = {{"&quot;", "\""}, {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}};
    size_t start = out->len;
    if (nlp_buf_append(out, s, n) || nlp_buf_reserve(out, 1)) return NLP_ENOMEM;
    if (!memchr(s, '&', n)) return NLP_OK;
    nlp_buf a = {0}, b = {0};
    int rc = nlp_buf_append(&a, s, n);
    for (int k = 0; k < 4 && !rc; k++) rc = replace_in(&a, &b, ent[k][0], ent[k][1]);
    if (!rc) {
        out->len = start;
        rc = nlp_buf_append(out, a.data, a.len);
    }
    nlp_buf_free(&a);
    nlp_buf_free(&b);
    return rc;
}

/* Passes B, C and D, which rewrite a pair of adjacent characters:
 *   B: ([^0-9])([.,]) -> "\1 \2 "
 *   C: ([.,])([^0-9]) -> " \1 \2"
 *   D: ([0-9])(-)     -> "\1 \2 "
 * over buf in place, non-overlapping and left to right. */
static int pair_pass(nlp_buf *buf, nlp_buf *tmp, char pass)
{
    const unsigned char *s = (const unsigned char *)buf->data, *cls = pass == 'D' ? dash : dotcomma;
    size_t n = buf->len, i;
    nlp_buf_reset(tmp);
    if (nlp_buf_reserve(tmp, 2 * n + 1)) return NLP_ENOMEM;
    char *d = tmp->data;
    for (i = 0; i < n;) {
        i = copy_run(s, n, i, cls, &d);
        if (i + 1 >= n) {
            if (i < n) *d++ = (char)s[i++];
            break;
        }
        unsigned char x = s[i], y = s[i + 1];
        int hit = pass == 'B'   ? !is_digit(x) && (y == '.' || y == ',')
                  : pass == 'C' ? (x == '.' || x == ',') && !is_digit(y)
                                : is_digit(x) && y == '-';
        if (!hit) {
            *d++ = (char)s[i++];
            continue;
        }
        if (pass == 'C') *d++ = ' ';
        *d++ = (char)x;
        *d++ = ' ';
        *d++ = (char)y;
        if (pass != 'C') *d++ = ' ';
        i += 2;
    }
    tmp->len = (size_t)(d - tmp->data);
    tmp->data[tmp->len] = 0;
    swap(buf, tmp);
    return NLP_OK;
}

int nlp_tok13a_western(nlp_buf *buf, nlp_buf *tmp, int possessive)
{
    const unsigned char *s;
    size_t n, i;
    char *d;

    /* A: [{-~[-` -&(-+:-@/] -> " \1 " */
    s = (const unsigned char *)buf->data;
    n = buf->len;
    nlp_buf_reset(tmp);
    if (nlp_buf_reserve(tmp, 3 * n + 1)) return NLP_ENOMEM;
    d = tmp->data;
    for (i = 0; i < n; i++) {
        if (is_punct13a(s[i])) {
            *d++ = ' ';
            *d++ = (char)s[i];
            *d++ = ' ';
        } else {
            *d++ = (char)s[i];
        }
    }
    tmp->len = (size_t)(d - tmp->data);
    tmp->data[tmp->len] = 0;
    swap(buf, tmp);

    if (possessive) {
        if (replace_in(buf, tmp, "'s ", " 's ")) return NLP_ENOMEM;
        if (buf->len >= 2 && memcmp(buf->data + buf->len - 2, "'s", 2) == 0) {
            buf->len -= 2;
            if (nlp_buf_append(buf, " 's", 3)) return NLP_ENOMEM;
        }
    }

    if (pair_pass(buf, tmp, 'B') || pair_pass(buf, tmp, 'C') || pair_pass(buf, tmp, 'D')) return NLP_ENOMEM;
    return NLP_OK;
}

int nlp_tok13a(const char *s, size_t n, nlp_buf *out, nlp_buf *tmp)
{
    nlp_buf_reset(out);
    if (nlp_buf_putc(out, ' ')) return NLP_ENOMEM;
    if (memchr(s, '<', n)) {
        nlp_buf_reset(tmp);
        if (replace_all(s, n, "<skipped>", "", tmp)) return NLP_ENOMEM;
        if (nlp_tok13a_unescape(tmp->data, tmp->len, out)) return NLP_ENOMEM;
    } else if (nlp_tok13a_unescape(s, n, out)) {
        return NLP_ENOMEM;
    }
    if (nlp_buf_putc(out, ' ')) return NLP_ENOMEM;
    return nlp_tok13a_western(out, tmp, 0);
}

int nlp_tokzh_is_chinese(int32_t c)
{
    static const int32_t r[][2] = {
        {0x3400, 0x4DB5}, {0x4E00, 0x9FA5}, {0x9FA6, 0x9FBB}, {0xF900, 0xFA2D}, {0xFA30, 0xFA6A},
        {0xFA70, 0xFAD9}, {0x2001, 0x2A6D}, {0x2F81, 0x2FA1}, {0xFF00, 0xFFEF}, {0x2E80, 0x2EFF},
        {0x3000, 0x303F}, {0x31C0, 0x31EF}, {0x2F00, 0x2FDF}, {0x2FF0, 0x2FFF}, {0x3100, 0x312F},
        {0x31A0, 0x31BF}, {0xFE10, 0xFE1F}, {0xFE30, 0xFE4F}, {0x2600, 0x26FF}, {0x2700, 0x27BF},
        {0x3200, 0x32FF}, {0x3300, 0x33FF},
    };
    for (size_t i = 0; i < sizeof r / sizeof *r; i++)
        if (c >= r[i][0] && c <= r[i][1]) return 1;
    return 0;
}

int nlp_tokzh(const char *s, size_t n, nlp_buf *out, nlp_buf *tmp)
{
    size_t b = nlp_py_lstrip(s, n), e = nlp_py_rstrip(s, n);
    nlp_buf_reset(out);
    if (nlp_buf_reserve(out, 3 * (e > b ? e - b : 0) + 1)) return NLP_ENOMEM;
    for (size_t i = b; i < e;) {
        if ((unsigned char)s[i] < 0x80) {
            out->data[out->len++] = s[i++];
            continue;
        }
        size_t j = i;
        int32_t cp = nlp_utf8_next(s, e, &j);
        int wide = nlp_tokzh_is_chinese(cp);
        if (wide) out->data[out->len++] = ' ';
        memcpy(out->data + out->len, s + i, j - i);
        out->len += j - i;
        if (wide) out->data[out->len++] = ' ';
        i = j;
    }
    out->data[out->len] = 0;
    return nlp_tok13a_western(out, tmp, 0);
}

int nlp_tok_join(const char *s, size_t n, nlp_buf *out)
{
    size_t pos = 0, tb, te;
    int first = 1;
    if (nlp_buf_reserve(out, n + 1)) return NLP_ENOMEM;
    while (nlp_py_next_token(s, n, &pos, &tb, &te)) {
        if (!first && nlp_buf_putc(out, ' ')) return NLP_ENOMEM;
        if (nlp_buf_append(out, s + tb, te - tb)) return NLP_ENOMEM;
        first = 0;
    }
    return NLP_OK;
}
