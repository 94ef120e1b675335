/*
 * tokintl.c — the intl tokenizer. See tokintl.h.
 *
 * The line is decoded once into (code point, category) pairs kept in tmp;
 * passes 1 and 2 rewrite that array, pass 3 encodes the result.
 */
#include "eval/tokintl.h"
#include "base/err.h"
#include "text/unicode.h"
#include "text/utf8.h"

#include <string.h>

typedef struct {
    int32_t cp;
    unsigned char p, n, s; /* \p{P}, \p{N}, \p{S} */
} uch;

static uch make(int32_t cp)
{
    uch u = {cp, 0, 0, 0};
    if (cp < 0x80) {
        /* ASCII fast path: utf8proc agrees, this only saves the lookups */
        u.n = cp >= '0' && cp <= '9';
        u.p = (cp >= 0x21 && cp <= 0x2F && cp != '$' && cp != '+') || (cp >= 0x3A && cp <= 0x40 && cp != '<' && cp != '=' && cp != '>') ||
              (cp >= 0x5B && cp <= 0x60 && cp != '^' && cp != '`') || cp == '{' || cp == '}' || cp == '_';
        u.s = cp == '$' || cp == '+' || cp == '<' || cp == '=' || cp == '>' || cp == '^' || cp == '`' || cp == '|' || cp == '~';
        return u;
    }
    nlp_uc_cat c = nlp_uc_category(cp);
    u.p = nlp_uc_cat_is_punct(c);
    u.n = nlp_uc_cat_is_number(c);
    u.s = nlp_uc_cat_is_symbol(c);
    return u;
}

static const uch SPACE = {' ', 0, 0, 0};

int nlp_tokintl(const char *s, size_t n, nlp_buf *out, nlp_buf *tmp)
{
    /* tmp holds two arrays a (current) and b (next); each pass at most doubles */
    size_t cap = 4 * n + 4;
    nlp_buf_reset(tmp);
    if (nlp_buf_reserve(tmp, 2 * cap * sizeof(uch))) return NLP_ENOMEM;
    uch *a = (uch *)(void *)tmp->data, *b = a + cap;
    size_t na = 0, nb, i = 0;
    while (i < n) a[na++] = make(nlp_utf8_next(s, n, &i));

    /* 1. (\P{N})(\p{P}) -> "\1 \2 " */
    nb = 0;
    for (i = 0; i < na;) {
        if (i + 1 < na && !a[i].n && a[i + 1].p) {
            b[nb++] = a[i];
            b[nb++] = SPACE;
            b[nb++] = a[i + 1];
            b[nb++] = SPACE;
            i += 2;
        } else {
            b[nb++] = a[i++];
        }
    }
    /* 2. (\p{P})(\P{N}) -> " \1 \2" */
    na = 0;
    for (i = 0; i < nb;) {
        if (i + 1 < nb && b[i].p && !b[i + 1].n) {
            a[na++] = SPACE;
            a[na++] = b[i];
            a[na++] = SPACE;
            a[na++] = b[i + 1];
            i += 2;
        } else {
            a[na++] = b[i++];
        }
    }
    /* 3. (\p{S}) -> " \1 " while encoding */
    nlp_buf_reset(out);
    if (nlp_buf_reserve(out, 6 * na + 1)) return NLP_ENOMEM;
    char *d = out->data;
    for (i = 0; i < na; i++) {
        if (a[i].s) *d++ = ' ';
        d += nlp_utf8_encode(a[i].cp, d);
        if (a[i].s) *d++ = ' ';
    }
    out->len = (size_t)(d - out->data);
    out->data[out->len] = 0;
    return NLP_OK;
}
