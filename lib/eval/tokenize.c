/*
 * tokenize.c — tokenizer registry and BLEU segment preprocessing. See tokenize.h.
 */
#include "eval/tokenize.h"
#include "base/err.h"
#include "eval/pystr.h"
#include "eval/tok13a.h"
#include "eval/tokintl.h"
#include "text/utf8.h"

#include <stdlib.h>

const char *const nlp_evtok_names[] = {"13a", "intl", "zh", "char", "none", NULL};

void nlp_evtok_buf_free(nlp_evtok_buf *b)
{
    nlp_buf_free(&b->low);
    nlp_buf_free(&b->tmp);
}

/* " ".join(characters of s) */
static int join_chars(const char *s, size_t n, nlp_buf *out)
{
    size_t i = 0;
    if (nlp_buf_reserve(out, 2 * n + 1)) return NLP_ENOMEM;
    while (i < n) {
        size_t j = i;
        nlp_utf8_next(s, n, &j);
        if (i > 0) out->data[out->len++] = ' ';
        for (; i < j; i++) out->data[out->len++] = s[i];
    }
    out->data[out->len] = 0;
    return NLP_OK;
}

int nlp_evtok_apply(nlp_evtok kind, const char *s, size_t n, nlp_buf *out, nlp_evtok_buf *sb)
{
    switch (kind) {
    case NLP_EVTOK_13A: return nlp_tok13a(s, n, out, &sb->tmp);
    case NLP_EVTOK_INTL: return nlp_tokintl(s, n, out, &sb->tmp);
    case NLP_EVTOK_ZH: return nlp_tokzh(s, n, out, &sb->tmp);
    case NLP_EVTOK_CHAR:
        nlp_buf_reset(out);
        return join_chars(s, n, out);
    case NLP_EVTOK_NONE:
        nlp_buf_reset(out);
        return nlp_buf_append(out, s, n) || nlp_buf_reserve(out, 1) ? NLP_ENOMEM : NLP_OK;
    }
    return NLP_EINVAL;
}

int nlp_evtok_segment(nlp_evtok kind, int lowercase, const char *s, size_t n, nlp_buf *out,
                      nlp_evtok_buf *sb)
{
    if (lowercase) {
        nlp_buf_reset(&sb->low);
        if (nlp_py_lower(s, n, &sb->low)) return NLP_ENOMEM;
        s = sb->low.data;
        n = sb->low.len;
    }
    return nlp_evtok_apply(kind, s, nlp_py_rstrip(s, n), out, sb);
}

int nlp_evtok_string(nlp_evtok kind, const char *s, size_t n, nlp_buf *out, nlp_evtok_buf *sb)
{
    nlp_buf t = {0};
    int rc = nlp_evtok_apply(kind, s, n, &t, sb);
    if (!rc) {
        if (kind == NLP_EVTOK_CHAR || kind == NLP_EVTOK_NONE) rc = nlp_buf_append(out, t.data, t.len);
        else rc = nlp_tok_join(t.data, t.len, out);
        if (!rc && nlp_buf_reserve(out, 1)) rc = NLP_ENOMEM;
    }
    nlp_buf_free(&t);
    return rc;
}
