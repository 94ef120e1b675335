/*
 * decoder.c — decoder steps. See decoder.h.
 *
 * The steps transform a list of strings (HF's decode_chain); the list is
 * kept as one buffer plus end offsets.
 */
#include "tok/decoder.h"
#include "base/err.h"
#include "text/bytelevel.h"
#include "text/utf8.h"
#include "tok/pretok.h"

#include <stdlib.h>
#include <string.h>

void nlp_dec_steps_free(nlp_dec_step *d, size_t n)
{
    if (!d) return;
    for (size_t i = 0; i < n; i++) {
        free(d[i].suffix);
        free(d[i].replace.a);
        free(d[i].replace.b);
    }
    free(d);
}

int nlp_dec_steps_copy(const nlp_dec_step *d, size_t n, nlp_dec_step **out)
{
    *out = NULL;
    if (!n) return NLP_OK;
    nlp_dec_step *c = nlp_calloc(n, sizeof *c);
    if (!c) return NLP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        c[i] = d[i];
        c[i].replace.a = c[i].replace.b = NULL;
        if ((d[i].suffix && !(c[i].suffix = nlp_strdup(d[i].suffix))) ||
            (d[i].replace.a && !(c[i].replace.a = nlp_strdup(d[i].replace.a))) ||
            (d[i].replace.b && !(c[i].replace.b = nlp_strdup(d[i].replace.b)))) {
            nlp_dec_steps_free(c, i + 1);
            return NLP_ENOMEM;
        }
    }
    *out = c;
    return NLP_OK;
}

struct list {
    nlp_buf text;
    size_t *end, n, cap;
};

static int list_push(struct list *l, const char *s, size_t n)
{
    if (nlp_buf_append(&l->text, s, n)) return NLP_ENOMEM;
    if (nlp_grow(&l->end, &l->cap, l->n + 1, sizeof *l->end)) return NLP_ENOMEM;
    l->end[l->n++] = l->text.len;
    return NLP_OK;
}

static void list_free(struct list *l)
{
    nlp_buf_free(&l->text);
    free(l->end);
}

/* Bytes of one byte-level token appended to out. */
static int bytelevel_token(const char *s, size_t n, nlp_buf *out)
{
    int r = nlp_bytelevel_decode(s, n, out);
    if (r < 0) return r;
    return r ? NLP_OK : nlp_buf_append(out, s, n);
}

/* HF's wordpiece cleanup of one token: the replacements in their order. */
static int cleanup(nlp_buf *b, size_t from)
{
    static const char *const rep[][2] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (size_t r = 0; r < sizeof rep / sizeof *rep; r++) {
        size_t pl = strlen(rep[r][0]), ql = strlen(rep[r][1]);
        /* every replacement shortens the text: rewrite in place */
        char *s = b->data + from;
        size_t n = b->len - from, i = 0, o = 0;
        while (i < n) {
            if (s[i] == ' ' && n - i >= pl && memcmp(s + i, rep[r][0], pl) == 0) {
                memmove(s + o, rep[r][1], ql);
                o += ql;
                i += pl;
            } else {
                s[o++] = s[i++];
            }
        }
        b->len = from + o;
    }
    return nlp_buf_reserve(b, 0);
}

static int end_token(struct list *out)
{
    if (nlp_grow(&out->end, &out->cap, out->n + 1, sizeof *out->end)) return NLP_ENOMEM;
    out->end[out->n++] = out->text.len;
    return NLP_OK;
}

/* <0xNN> as HF's ByteFallback reads it (Rust's u8::from_str_radix on the
 * two characters: a '+' sign and either case allowed): the byte, or -1. */
static int hf_byte_token(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    const char *d = s + 3;
    size_t k = 2;
    if (d[0] == '+') d++, k--;
    int v = 0;
    for (size_t i = 0; i < k; i++) {
        char c = d[i];
        int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (x < 0) return -1;
        v = v * 16 + x;
    }
    return v;
}

static int apply(const nlp_dec_step *st, const struct list *in, struct list *out)
{
    size_t start = 0;
    switch (st->type) {
    case NLP_DEC_METASPACE: {
        const char *r = st->replacement;
        size_t rl = strlen(r);
        for (size_t i = 0; i < in->n; i++) {
            const char *s = in->text.data + start;
            size_t n = in->end[i] - start, j = 0;
            start = in->end[i];
            int drop = i == 0 && st->prepend_scheme != NLP_PREPEND_NEVER;
            while (j < n) {
                const char *hit = rl && n - j >= rl ? memmem(s + j, n - j, r, rl) : NULL;
                size_t upto = hit ? (size_t)(hit - s) : n;
                if (nlp_buf_append(&out->text, s + j, upto - j)) return NLP_ENOMEM;
                if (!hit) break;
                if (!drop && nlp_buf_putc(&out->text, ' ')) return NLP_ENOMEM;
                j = upto + rl;
            }
            if (end_token(out)) return NLP_ENOMEM;
        }
        return NLP_OK;
    }
    case NLP_DEC_BYTE_FALLBACK: {
        size_t run = 0; /* byte tokens waiting, their bytes at the end of out->text */
        size_t run_at = 0;
        for (size_t i = 0; i <= in->n; i++) {
            const char *s = i < in->n ? in->text.data + start : NULL;
            size_t n = i < in->n ? in->end[i] - start : 0;
            int b = s ? hf_byte_token(s, n) : -1;
            if (b >= 0) {
                if (!run) run_at = out->text.len;
                if (nlp_buf_putc(&out->text, b)) return NLP_ENOMEM;
                run++;
            } else {
                if (run) {
                    size_t bl = out->text.len - run_at;
                    if (!nlp_utf8_valid(out->text.data + run_at, bl, NULL)) {
                        out->text.len = run_at;
                        for (size_t k = 0; k < run; k++) {
                            if (nlp_buf_append(&out->text, "\xEF\xBF\xBD", 3) || end_token(out)) return NLP_ENOMEM;
                        }
                    } else if (end_token(out)) {
                        return NLP_ENOMEM;
                    }
                    run = 0;
                }
                if (s && (nlp_buf_append(&out->text, s, n) || end_token(out))) return NLP_ENOMEM;
            }
            if (i < in->n) start = in->end[i];
        }
        return NLP_OK;
    }
    case NLP_DEC_FUSE:
        if (nlp_buf_append(&out->text, in->text.data ? in->text.data : "", in->text.len)) return NLP_ENOMEM;
        return end_token(out);
    case NLP_DEC_STRIP: {
        const char *c = st->replacement;
        size_t cl = strlen(c);
        for (size_t i = 0; i < in->n; i++) {
            const char *s = in->text.data + start;
            size_t n = in->end[i] - start, b = 0, e = n;
            start = in->end[i];
            for (size_t k = 0; cl && k < st->start && e - b >= cl && memcmp(s + b, c, cl) == 0; k++) b += cl;
            for (size_t k = 0; cl && k < st->stop && e - b >= cl && memcmp(s + e - cl, c, cl) == 0; k++) e -= cl;
            if (nlp_buf_append(&out->text, s + b, e - b) || end_token(out)) return NLP_ENOMEM;
        }
        return NLP_OK;
    }
    case NLP_DEC_REPLACE:
        for (size_t i = 0; i < in->n; i++) {
            int rc = nlp_norm_step_apply(&st->replace, in->text.data + start, in->end[i] - start, &out->text);
            if (rc) return rc;
            start = in->end[i];
            if (end_token(out)) return NLP_ENOMEM;
        }
        return NLP_OK;
    case NLP_DEC_BYTELEVEL: {
        for (size_t i = 0; i < in->n; i++) {
            if (bytelevel_token(in->text.data + start, in->end[i] - start, &out->text)) return NLP_ENOMEM;
            start = in->end[i];
        }
        if (nlp_grow(&out->end, &out->cap, 1, sizeof *out->end)) return NLP_ENOMEM;
        out->end[0] = out->text.len;
        out->n = 1;
        return NLP_OK;
    }
    case NLP_DEC_BPE: {
        const char *suf = st->suffix ? st->suffix : "";
        size_t sl = strlen(suf);
        for (size_t i = 0; i < in->n; i++) {
            const char *s = in->text.data + start;
            size_t n = in->end[i] - start;
            start = in->end[i];
            const char *rep = i + 1 == in->n ? "" : " ";
            size_t j = 0;
            while (j < n) {
                const char *hit = sl && n - j >= sl ? memmem(s + j, n - j, suf, sl) : NULL;
                size_t upto = hit ? (size_t)(hit - s) : n;
                if (nlp_buf_append(&out->text, s + j, upto - j)) return NLP_ENOMEM;
                if (!hit) break;
                if (nlp_buf_puts(&out->text, rep)) return NLP_ENOMEM;
                j = upto + sl;
            }
            if (nlp_grow(&out->end, &out->cap, out->n + 1, sizeof *out->end)) return NLP_ENOMEM;
            out->end[out->n++] = out->text.len;
        }
        return NLP_OK;
    }
    case NLP_DEC_WORDPIECE: {
        const char *pre = st->suffix ? st->suffix : "";
        size_t pl = strlen(pre);
        for (size_t i = 0; i < in->n; i++) {
            const char *s = in->text.data + start;
            size_t n = in->end[i] - start, from = out->text.len;
            start = in->end[i];
            if (i > 0) {
                if (n >= pl && memcmp(s, pre, pl) == 0) {
                    s += pl;
                    n -= pl;
                } else if (nlp_buf_putc(&out->text, ' ')) {
                    return NLP_ENOMEM;
                }
            }
            if (nlp_buf_append(&out->text, s, n) || (st->cleanup && cleanup(&out->text, from))) return NLP_ENOMEM;
            if (nlp_grow(&out->end, &out->cap, out->n + 1, sizeof *out->end)) return NLP_ENOMEM;
            out->end[out->n++] = out->text.len;
        }
        return NLP_OK;
    }
    }
    return nlp_error(NLP_EINVAL, "unknown decoder step %d", (int)st->type);
}

int nlp_decode_tokens(const nlp_dec_step *steps, size_t nsteps, const nlp_dec_token *t, size_t n, nlp_buf *out)
{
    if (nsteps == 0) {
        for (size_t i = 0; i < n; i++)
            if ((i && nlp_buf_putc(out, ' ')) || nlp_buf_append(out, t[i].s, t[i].n)) return NLP_ENOMEM;
        return nlp_buf_reserve(out, 0);
    }
    if (nsteps == 1 && steps[0].type == NLP_DEC_BYTELEVEL) {
        for (size_t i = 0; i < n; i++)
            if (bytelevel_token(t[i].s, t[i].n, out)) return NLP_ENOMEM;
        return nlp_buf_reserve(out, 0);
    }
    struct list a = {0}, b = {0};
    int rc = NLP_OK;
    for (size_t i = 0; i < n && !rc; i++) rc = list_push(&a, t[i].s, t[i].n);
    for (size_t k = 0; k < nsteps && !rc; k++) {
        nlp_buf_reset(&b.text);
        b.n = 0;
        rc = apply(&steps[k], &a, &b);
        struct list tmp = a;
        a = b;
        b = tmp;
    }
    if (!rc && nlp_buf_append(out, a.text.data ? a.text.data : "", a.text.len)) rc = NLP_ENOMEM;
    list_free(&a);
    list_free(&b);
    return rc;
}
