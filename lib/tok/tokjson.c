/*
 * tokjson.c — tokenizer.json through jansson. See tokjson.h.
 */
#include "tok/tokjson.h"
#include "tok/jscan.h"
#include "tok/tokfiles.h"
#include "base/base64.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "text/utf8.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// --- reading

/* model.vocab and model.merges as jscan.c read them, where it could */
struct fast {
    nlp_vocab *vocab;
    int32_t *merges;
    size_t n_merges;
    int has_merges;
};

struct rd {
    const char *name;
    nlp_tok_spec *s;
    struct fast *fast; /* or NULL */
};

static int bad(const struct rd *r, const char *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(const struct rd *r, const char *where, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nlp_error(NLP_EFORMAT, "'%s': %s: %s", r->name, where, msg);
}

static const char *type_name(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "something else";
}

/* Boolean member (absent or null = def). */
static int get_bool(const struct rd *r, const json_t *o, const char *key, int def, const char *where, int *out)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return NLP_OK;
    }
    if (!json_is_boolean(v)) return bad(r, where, "'%s' must be true or false, not %s", key, type_name(v));
    *out = json_is_true(v);
    return NLP_OK;
}

/* Non-negative integer member (absent or null = def). */
static int get_uint(const struct rd *r, const json_t *o, const char *key, long long def, long long max,
                    const char *where, long long *out)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return NLP_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
        return bad(r, where, "'%s' must be an integer from 0 to %lld", key, max);
    *out = json_integer_value(v);
    return NLP_OK;
}

/* String member copied into *out (absent or null = NULL). */
static int get_str(const struct rd *r, const json_t *o, const char *key, const char *where, char **out)
{
    *out = NULL;
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return NLP_OK;
    if (!json_is_string(v)) return bad(r, where, "'%s' must be a string, not %s", key, type_name(v));
    *out = nlp_strndup(json_string_value(v), json_string_length(v));
    return *out ? NLP_OK : NLP_ENOMEM;
}

static const char *get_type(const struct rd *r, const json_t *o, const char *where, int *rc)
{
    *rc = NLP_OK;
    if (!json_is_object(o)) {
        *rc = bad(r, where, "expected an object, found %s", type_name(o));
        return NULL;
    }
    json_t *t = json_object_get(o, "type");
    if (!json_is_string(t)) {
        *rc = bad(r, where, "missing \"type\"");
        return NULL;
    }
    return json_string_value(t);
}

/* Appends one element to a growable array of `size`-byte elements. */
static void *grow1(void *pp, size_t *n, size_t size)
{
    void **p = pp;
    void *q = nlp_reallocarray(*p, *n + 1, size);
    if (!q) return NULL;
    *p = q;
    memset((char *)q + *n * size, 0, size);
    return (char *)q + (*n)++ * size;
}

typedef int (*read_fn)(const struct rd *r, const json_t *j, const char *where);

/* A Sequence component: reads every element of j[key] with fn. */
static int read_sequence(const struct rd *r, const json_t *j, const char *key, const char *where, read_fn fn)
{
    json_t *a = json_object_get(j, key);
    if (!json_is_array(a)) return bad(r, where, "'%s' must be an array", key);
    for (size_t i = 0; i < json_array_size(a); i++) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s.%s[%zu]", where, key, i);
        int rc = fn(r, json_array_get(a, i), sub);
        if (rc) return rc;
    }
    return NLP_OK;
}

/* HF's Replace (a normalizer, and a decoder): pattern {"String": s} or
 * {"Regex": re} (of the forms normalize.h reads), content. */
static int read_replace(const struct rd *r, const json_t *j, const char *where, nlp_norm_step *st)
{
    memset(st, 0, sizeof *st);
    st->type = NLP_NORM_STEP_REPLACE;
    json_t *p = json_object_get(j, "pattern");
    json_t *s = json_is_object(p) ? json_object_get(p, "String") : NULL;
    json_t *re = json_is_object(p) ? json_object_get(p, "Regex") : NULL;
    char *content;
    int rc = get_str(r, j, "content", where, &content);
    if (rc) return rc;
    if (json_is_string(s)) {
        st->a = nlp_strndup(json_string_value(s), json_string_length(s));
        st->b = content ? content : nlp_strdup("");
        return st->a && st->b ? NLP_OK : NLP_ENOMEM;
    }
    if (json_is_string(re)) {
        rc = nlp_norm_replace_regex(st, json_string_value(re), content);
        free(content);
        return rc == NLP_EFORMAT ? bad(r, where, "%s", nlp_errmsg()) : rc;
    }
    free(content);
    return bad(r, where, "'pattern' must be {\"String\": ...} or {\"Regex\": ...}");
}

/* HF's Precompiled: precompiled_charsmap, base64 */
static int read_precompiled(const struct rd *r, const json_t *j, const char *where, nlp_norm_step *st)
{
    json_t *v = json_object_get(j, "precompiled_charsmap");
    if (!json_is_string(v)) return bad(r, where, "'precompiled_charsmap' must be a base64 string");
    nlp_buf b = {0};
    size_t at;
    int rc = nlp_base64_decode(json_string_value(v), json_string_length(v), &b, &at);
    if (rc == NLP_EFORMAT) rc = bad(r, where, "'precompiled_charsmap' is not base64 (character %zu)", at);
    if (!rc) {
        rc = nlp_norm_precompiled(st, b.data ? b.data : "", b.len);
        if (rc == NLP_EFORMAT) rc = bad(r, where, "precompiled_charsmap: %s", nlp_errmsg());
        /* HF reads the replacement strings as one UTF-8 string */
        else if (!rc && !nlp_utf8_valid(st->cm->norm, st->cm->nnorm, &at)) {
            rc = bad(r, where, "precompiled_charsmap: the replacement strings are not UTF-8 (byte %zu)", at);
            free(st->map);
            nlp_charsmap_free(st->cm);
            free(st->cm);
            memset(st, 0, sizeof *st);
        }
    }
    nlp_buf_free(&b);
    return rc;
}

/* HF's Metaspace (pre-tokenizer and decoder): replacement (one
 * character), prepend_scheme (always, first, never; the older
 * add_prefix_space: false is never), split. */
static int read_metaspace(const struct rd *r, const json_t *j, const char *where, char rep[8], int *scheme, int *split)
{
    json_t *v = json_object_get(j, "replacement");
    size_t k = 0;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 4 ||
        (nlp_utf8_next(json_string_value(v), json_string_length(v), &k), k != json_string_length(v)))
        return bad(r, where, "'replacement' must be one character");
    memcpy(rep, json_string_value(v), json_string_length(v));
    rep[json_string_length(v)] = 0;
    json_t *ps = json_object_get(j, "prepend_scheme");
    *scheme = NLP_PREPEND_ALWAYS;
    if (ps && !json_is_null(ps)) {
        const char *x = json_is_string(ps) ? json_string_value(ps) : "";
        if (strcmp(x, "always") == 0) *scheme = NLP_PREPEND_ALWAYS;
        else if (strcmp(x, "first") == 0) *scheme = NLP_PREPEND_FIRST;
        else if (strcmp(x, "never") == 0) *scheme = NLP_PREPEND_NEVER;
        else return bad(r, where, "'prepend_scheme' must be \"always\", \"first\" or \"never\"");
    }
    json_t *aps = json_object_get(j, "add_prefix_space");
    if (aps && !json_is_null(aps)) {
        if (!json_is_boolean(aps)) return bad(r, where, "'add_prefix_space' must be true or false");
        if (!json_is_true(aps)) {
            if (*scheme != NLP_PREPEND_NEVER) /* as HF: the two must agree */
                return bad(r, where, "add_prefix_space does not match declared prepend_scheme");
        }
    }
    return get_bool(r, j, "split", 1, where, split);
}

static int read_normalizer(const struct rd *r, const json_t *j, const char *where)
{
    int rc;
    const char *t = get_type(r, j, where, &rc);
    if (!t) return rc;
    if (strcmp(t, "Sequence") == 0) return read_sequence(r, j, "normalizers", where, read_normalizer);
    nlp_norm_step st = {0};
    if (strcmp(t, "NFC") == 0) st.type = NLP_NORM_STEP_NFC;
    else if (strcmp(t, "NFD") == 0) st.type = NLP_NORM_STEP_NFD;
    else if (strcmp(t, "NFKC") == 0) st.type = NLP_NORM_STEP_NFKC;
    else if (strcmp(t, "NFKD") == 0) st.type = NLP_NORM_STEP_NFKD;
    else if (strcmp(t, "Lowercase") == 0) st.type = NLP_NORM_STEP_LOWERCASE;
    else if (strcmp(t, "StripAccents") == 0) st.type = NLP_NORM_STEP_STRIP_ACCENTS;
    else if (strcmp(t, "Strip") == 0) {
        st.type = NLP_NORM_STEP_STRIP;
        if ((rc = get_bool(r, j, "strip_left", 1, where, &st.left)) ||
            (rc = get_bool(r, j, "strip_right", 1, where, &st.right)))
            return rc;
    } else if (strcmp(t, "Prepend") == 0) {
        st.type = NLP_NORM_STEP_PREPEND;
        if ((rc = get_str(r, j, "prepend", where, &st.a))) return rc;
    } else if (strcmp(t, "Replace") == 0) {
        if ((rc = read_replace(r, j, where, &st))) return rc;
    } else if (strcmp(t, "Precompiled") == 0) {
        if ((rc = read_precompiled(r, j, where, &st))) return rc;
    } else if (strcmp(t, "BertNormalizer") == 0) {
        st = nlp_norm_bert(1);
        json_t *sa = json_object_get(j, "strip_accents");
        if ((rc = get_bool(r, j, "clean_text", 1, where, &st.clean_text)) ||
            (rc = get_bool(r, j, "handle_chinese_chars", 1, where, &st.handle_chinese_chars)) ||
            (rc = get_bool(r, j, "lowercase", 1, where, &st.lowercase)) ||
            (sa && !json_is_null(sa) && (rc = get_bool(r, j, "strip_accents", 0, where, &st.strip_accents))))
            return rc;
    } else {
        return bad(r, where, "normalizer type '%s' is not supported", t);
    }
    nlp_norm_step *d = grow1(&r->s->norm, &r->s->n_norm, sizeof *d);
    if (!d) {
        free(st.a);
        free(st.b);
        return NLP_ENOMEM;
    }
    *d = st;
    return NLP_OK;
}

static int read_pretok(const struct rd *r, const json_t *j, const char *where)
{
    int rc;
    const char *t = get_type(r, j, where, &rc);
    if (!t) return rc;
    if (strcmp(t, "Sequence") == 0) return read_sequence(r, j, "pretokenizers", where, read_pretok);
    nlp_pretok_step st = {0};
    if (strcmp(t, "ByteLevel") == 0) {
        st.type = NLP_PRETOK_BYTELEVEL;
        if ((rc = get_bool(r, j, "add_prefix_space", 1, where, &st.add_prefix_space)) ||
            (rc = get_bool(r, j, "trim_offsets", 1, where, &st.trim_offsets)) ||
            (rc = get_bool(r, j, "use_regex", 1, where, &st.use_regex)))
            return rc;
    } else if (strcmp(t, "Whitespace") == 0) {
        st.type = NLP_PRETOK_WHITESPACE;
    } else if (strcmp(t, "WhitespaceSplit") == 0) {
        st.type = NLP_PRETOK_WHITESPACE_SPLIT;
    } else if (strcmp(t, "BertPreTokenizer") == 0) {
        st.type = NLP_PRETOK_BERT;
    } else if (strcmp(t, "Metaspace") == 0) {
        st.type = NLP_PRETOK_METASPACE;
        if ((rc = read_metaspace(r, j, where, st.replacement, &st.prepend_scheme, &st.split))) return rc;
    } else if (strcmp(t, "Split") == 0) {
        json_t *p = json_object_get(j, "pattern");
        json_t *re = json_is_object(p) ? json_object_get(p, "Regex") : NULL;
        json_t *beh = json_object_get(j, "behavior");
        int invert;
        if ((rc = get_bool(r, j, "invert", 0, where, &invert))) return rc;
        if (!json_is_string(re) || strcmp(json_string_value(re), nlp_pretok_gpt2_pattern) != 0 ||
            !json_is_string(beh) || strcmp(json_string_value(beh), "Isolated") != 0 || invert)
            return bad(r, where, "only Split with GPT-2's regex, behavior Isolated, is supported (no regex engine)");
        st.type = NLP_PRETOK_GPT2_SPLIT;
    } else {
        return bad(r, where, "pre-tokenizer type '%s' is not supported", t);
    }
    nlp_pretok_step *d = grow1(&r->s->pretok, &r->s->n_pretok, sizeof *d);
    if (!d) return NLP_ENOMEM;
    *d = st;
    return NLP_OK;
}

static int read_decoder(const struct rd *r, const json_t *j, const char *where)
{
    int rc;
    const char *t = get_type(r, j, where, &rc);
    if (!t) return rc;
    if (strcmp(t, "Sequence") == 0) return read_sequence(r, j, "decoders", where, read_decoder);
    nlp_dec_step st = {0};
    if (strcmp(t, "ByteLevel") == 0) {
        st.type = NLP_DEC_BYTELEVEL;
        if ((rc = get_bool(r, j, "add_prefix_space", 1, where, &st.add_prefix_space)) ||
            (rc = get_bool(r, j, "trim_offsets", 1, where, &st.trim_offsets)) ||
            (rc = get_bool(r, j, "use_regex", 1, where, &st.use_regex)))
            return rc;
    } else if (strcmp(t, "BPEDecoder") == 0) {
        st.type = NLP_DEC_BPE;
        if ((rc = get_str(r, j, "suffix", where, &st.suffix))) return rc;
        if (!st.suffix && !(st.suffix = nlp_strdup("</w>"))) return NLP_ENOMEM;
    } else if (strcmp(t, "WordPiece") == 0) {
        st.type = NLP_DEC_WORDPIECE;
        if ((rc = get_bool(r, j, "cleanup", 1, where, &st.cleanup)) ||
            (rc = get_str(r, j, "prefix", where, &st.suffix)))
            return rc;
        if (!st.suffix && !(st.suffix = nlp_strdup(NLP_WORDPIECE_PREFIX))) return NLP_ENOMEM;
    } else if (strcmp(t, "Metaspace") == 0) {
        st.type = NLP_DEC_METASPACE;
        if ((rc = read_metaspace(r, j, where, st.replacement, &st.prepend_scheme, &st.split))) return rc;
    } else if (strcmp(t, "ByteFallback") == 0) {
        st.type = NLP_DEC_BYTE_FALLBACK;
    } else if (strcmp(t, "Fuse") == 0) {
        st.type = NLP_DEC_FUSE;
    } else if (strcmp(t, "Strip") == 0) {
        st.type = NLP_DEC_STRIP;
        json_t *c = json_object_get(j, "content");
        size_t k = 0;
        long long a, b;
        if (!json_is_string(c) || json_string_length(c) == 0 || json_string_length(c) > 4 ||
            (nlp_utf8_next(json_string_value(c), json_string_length(c), &k), k != json_string_length(c)))
            return bad(r, where, "'content' must be one character");
        memcpy(st.replacement, json_string_value(c), json_string_length(c));
        if ((rc = get_uint(r, j, "start", -1, (long long)1 << 40, where, &a)) ||
            (rc = get_uint(r, j, "stop", -1, (long long)1 << 40, where, &b)))
            return rc;
        if (a < 0 || b < 0) return bad(r, where, "'start' and 'stop' are needed");
        st.start = (size_t)a;
        st.stop = (size_t)b;
    } else if (strcmp(t, "Replace") == 0) {
        st.type = NLP_DEC_REPLACE;
        if ((rc = read_replace(r, j, where, &st.replace))) return rc;
    } else {
        return bad(r, where, "decoder type '%s' is not supported", t);
    }
    nlp_dec_step *d = grow1(&r->s->dec, &r->s->n_dec, sizeof *d);
    if (!d) {
        free(st.suffix);
        free(st.replace.a);
        free(st.replace.b);
        return NLP_ENOMEM;
    }
    *d = st;
    return NLP_OK;
}

/* ["[SEP]", 102] */
static int read_tok_id(const struct rd *r, const json_t *o, const char *key, const char *where, char **name,
                       int32_t *id)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(json_array_get(v, 0)) ||
        !json_is_integer(json_array_get(v, 1)) || json_integer_value(json_array_get(v, 1)) < 0 ||
        json_integer_value(json_array_get(v, 1)) > INT32_MAX)
        return bad(r, where, "'%s' must be [\"token\", id]", key);
    *name = (char *)json_string_value(json_array_get(v, 0));
    *id = (int32_t)json_integer_value(json_array_get(v, 1));
    return NLP_OK;
}

static int read_pieces(const struct rd *r, const json_t *a, const char *where, nlp_tmpl_piece **out, size_t *n)
{
    if (!json_is_array(a)) return bad(r, where, "expected an array of template pieces");
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *p = json_array_get(a, i);
        json_t *seq = json_object_get(p, "Sequence"), *sp = json_object_get(p, "SpecialToken");
        json_t *body = seq ? seq : sp;
        json_t *id = json_object_get(body, "id"), *ty = json_object_get(body, "type_id");
        if (!json_is_object(body) || !json_is_string(id) || !json_is_integer(ty) || json_integer_value(ty) < 0 ||
            json_integer_value(ty) > 255)
            return bad(r, where, "piece %zu must be {\"Sequence\": {\"id\", \"type_id\"}} or {\"SpecialToken\": ...}", i);
        nlp_tmpl_piece *d = grow1(out, n, sizeof *d);
        if (!d) return NLP_ENOMEM;
        d->type_id = (int)json_integer_value(ty);
        if (seq) {
            const char *s = json_string_value(id);
            if (strcmp(s, "A") != 0 && strcmp(s, "B") != 0)
                return bad(r, where, "piece %zu: sequence id must be \"A\" or \"B\"", i);
            d->seq = s[0] == 'B';
        } else {
            d->special = 1;
            if (!(d->name = nlp_strdup(json_string_value(id)))) return NLP_ENOMEM;
        }
    }
    return NLP_OK;
}

static int read_template(const struct rd *r, const json_t *j, const char *where)
{
    nlp_postproc *p = &r->s->post;
    char sub[256];
    int rc;
    p->type = NLP_POST_TEMPLATE;
    snprintf(sub, sizeof sub, "%s.single", where);
    if ((rc = read_pieces(r, json_object_get(j, "single"), sub, &p->single, &p->n_single))) return rc;
    snprintf(sub, sizeof sub, "%s.pair", where);
    if ((rc = read_pieces(r, json_object_get(j, "pair"), sub, &p->pair, &p->n_pair))) return rc;
    json_t *sp = json_object_get(j, "special_tokens");
    if (sp && !json_is_object(sp)) return bad(r, where, "'special_tokens' must be an object");
    const char *key;
    json_t *v;
    json_object_foreach(sp, key, v)
    {
        snprintf(sub, sizeof sub, "%s.special_tokens.%s", where, key);
        json_t *ids = json_object_get(v, "ids"), *toks = json_object_get(v, "tokens");
        if (!json_is_array(ids) || !json_is_array(toks) || json_array_size(ids) != json_array_size(toks))
            return bad(r, sub, "expected \"ids\" and \"tokens\" arrays of the same length");
        nlp_tmpl_special *d = grow1(&p->specials, &p->n_specials, sizeof *d);
        if (!d) return NLP_ENOMEM;
        size_t n = json_array_size(ids);
        d->name = nlp_strdup(key);
        d->ids = nlp_calloc(n ? n : 1, sizeof *d->ids);
        d->tokens = nlp_calloc(n ? n : 1, sizeof *d->tokens);
        if (!d->name || !d->ids || !d->tokens) return NLP_ENOMEM;
        for (size_t k = 0; k < n; k++) {
            json_t *iv = json_array_get(ids, k), *tv = json_array_get(toks, k);
            if (!json_is_integer(iv) || json_integer_value(iv) < 0 || json_integer_value(iv) > INT32_MAX ||
                !json_is_string(tv))
                return bad(r, sub, "entry %zu: expected an id and a token string", k);
            d->ids[k] = (int32_t)json_integer_value(iv);
            if (!(d->tokens[k] = nlp_strdup(json_string_value(tv)))) return NLP_ENOMEM;
            d->n = k + 1;
        }
    }
    return NLP_OK;
}

static int read_post(const struct rd *r, const json_t *j, const char *where, int depth)
{
    int rc;
    const char *t = get_type(r, j, where, &rc);
    if (!t) return rc;
    nlp_postproc *p = &r->s->post;
    char sub[256];
    if (strcmp(t, "Sequence") == 0 && depth == 0) {
        json_t *a = json_object_get(j, "processors");
        if (!json_is_array(a)) return bad(r, where, "'processors' must be an array");
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(sub, sizeof sub, "%s.processors[%zu]", where, i);
            if ((rc = read_post(r, json_array_get(a, i), sub, 1))) return rc;
        }
        return NLP_OK;
    }
    if (strcmp(t, "ByteLevel") == 0) {
        if (p->bytelevel || p->type != NLP_POST_NONE)
            return bad(r, where, "only a ByteLevel processor followed by one template is supported");
        p->bytelevel = 1;
        if ((rc = get_bool(r, j, "add_prefix_space", 1, where, &p->bl_add_prefix_space)) ||
            (rc = get_bool(r, j, "trim_offsets", 1, where, &p->bl_trim_offsets)) ||
            (rc = get_bool(r, j, "use_regex", 1, where, &p->bl_use_regex)))
            return rc;
        return NLP_OK;
    }
    if (p->type != NLP_POST_NONE) return bad(r, where, "only one template processor is supported");
    if (strcmp(t, "TemplateProcessing") == 0) return read_template(r, j, where);
    int roberta = strcmp(t, "RobertaProcessing") == 0;
    if (roberta || strcmp(t, "BertProcessing") == 0) {
        char *cls, *sep;
        int32_t cid, sid;
        if ((rc = read_tok_id(r, j, "cls", where, &cls, &cid)) || (rc = read_tok_id(r, j, "sep", where, &sep, &sid)))
            return rc;
        if ((rc = nlp_postproc_set_cls_sep(p, roberta, cls, cid, sep, sid))) return rc;
        if (roberta &&
            ((rc = get_bool(r, j, "trim_offsets", 1, where, &p->trim_offsets)) ||
             (rc = get_bool(r, j, "add_prefix_space", 1, where, &p->add_prefix_space))))
            return rc;
        return NLP_OK;
    }
    return bad(r, where, "post-processor type '%s' is not supported", t);
}

static int read_added(const struct rd *r, const json_t *a)
{
    if (!json_is_array(a)) return bad(r, "added_tokens", "expected an array");
    for (size_t i = 0; i < json_array_size(a); i++) {
        char where[64];
        snprintf(where, sizeof where, "added_tokens[%zu]", i);
        json_t *o = json_array_get(a, i);
        if (!json_is_object(o)) return bad(r, where, "expected an object");
        nlp_added_token *t = grow1(&r->s->added, &r->s->n_added, sizeof *t);
        if (!t) return NLP_ENOMEM;
        long long id;
        int rc;
        if ((rc = get_uint(r, o, "id", -1, INT32_MAX - 1, where, &id))) return rc;
        if (id < 0) return bad(r, where, "missing 'id'");
        t->id = (int32_t)id;
        if ((rc = get_str(r, o, "content", where, &t->content))) return rc;
        if (!t->content) return bad(r, where, "missing 'content'");
        if (!t->content[0]) return bad(r, where, "'content' is empty: an added token needs its text");
        if ((size_t)id >= nlp_vocab_count(r->s->vocab) + json_array_size(a) + NLP_VOCAB_MAX_HOLES)
            return bad(r, where, "the id of '%s' (%lld) leaves more than %zu ids without a token", t->content, id,
                       NLP_VOCAB_MAX_HOLES);
        if ((rc = get_bool(r, o, "special", 0, where, &t->special)) ||
            (rc = get_bool(r, o, "single_word", 0, where, &t->single_word)) ||
            (rc = get_bool(r, o, "lstrip", 0, where, &t->lstrip)) ||
            (rc = get_bool(r, o, "rstrip", 0, where, &t->rstrip)) ||
            (rc = get_bool(r, o, "normalized", !t->special, where, &t->normalized)))
            return rc;
    }
    return NLP_OK;
}

/* The added tokens of a file that embeds a sentencepiece model: the view's
 * (control and user-defined pieces, ids below the model's size) are the
 * model's own; those past them were added to it (finetune's). */
static int read_added_past(const struct rd *r, const json_t *a, size_t size)
{
    nlp_tok_spec *s = r->s;
    int rc = read_added(r, a);
    if (rc) return rc;
    size_t k = 0;
    for (size_t i = 0; i < s->n_added; i++) {
        if ((size_t)s->added[i].id >= size) s->added[k++] = s->added[i];
        else free(s->added[i].content);
    }
    s->n_added = k;
    return NLP_OK;
}

static int read_trunc_pad(const struct rd *r, const json_t *root)
{
    json_t *t = json_object_get(root, "truncation");
    int rc;
    long long v;
    if (t && !json_is_null(t)) {
        if (!json_is_object(t)) return bad(r, "truncation", "expected an object or null");
        nlp_truncation *tr = &r->s->trunc;
        tr->enabled = 1;
        if ((rc = get_uint(r, t, "max_length", 512, (long long)1 << 40, "truncation", &v))) return rc;
        tr->max_length = (size_t)v;
        if ((rc = get_uint(r, t, "stride", 0, (long long)1 << 40, "truncation", &v))) return rc;
        tr->stride = (size_t)v;
        json_t *s = json_object_get(t, "strategy"), *d = json_object_get(t, "direction");
        const char *ss = json_is_string(s) ? json_string_value(s) : "LongestFirst";
        if (strcmp(ss, "LongestFirst") == 0) tr->strategy = NLP_TRUNC_LONGEST_FIRST;
        else if (strcmp(ss, "OnlyFirst") == 0) tr->strategy = NLP_TRUNC_ONLY_FIRST;
        else if (strcmp(ss, "OnlySecond") == 0) tr->strategy = NLP_TRUNC_ONLY_SECOND;
        else return bad(r, "truncation", "unknown strategy '%s'", ss);
        const char *ds = json_is_string(d) ? json_string_value(d) : "Right";
        if (strcmp(ds, "Right") != 0 && strcmp(ds, "Left") != 0)
            return bad(r, "truncation", "direction must be \"Right\" or \"Left\"");
        tr->left = ds[0] == 'L';
    }
    json_t *p = json_object_get(root, "padding");
    if (p && !json_is_null(p)) {
        if (!json_is_object(p)) return bad(r, "padding", "expected an object or null");
        nlp_padding *pd = &r->s->pad;
        pd->enabled = 1;
        json_t *s = json_object_get(p, "strategy");
        json_t *fixed = json_is_object(s) ? json_object_get(s, "Fixed") : NULL;
        if (fixed) {
            if (!json_is_integer(fixed) || json_integer_value(fixed) < 1)
                return bad(r, "padding", "strategy Fixed needs a positive length");
            pd->length = (size_t)json_integer_value(fixed);
        } else if (s && !(json_is_string(s) && strcmp(json_string_value(s), "BatchLongest") == 0)) {
            return bad(r, "padding", "strategy must be \"BatchLongest\" or {\"Fixed\": N}");
        }
        json_t *d = json_object_get(p, "direction");
        const char *ds = json_is_string(d) ? json_string_value(d) : "Right";
        if (strcmp(ds, "Right") != 0 && strcmp(ds, "Left") != 0)
            return bad(r, "padding", "direction must be \"Right\" or \"Left\"");
        pd->left = ds[0] == 'L';
        if ((rc = get_uint(r, p, "pad_to_multiple_of", 0, (long long)1 << 30, "padding", &v))) return rc;
        pd->multiple_of = (size_t)v;
        if ((rc = get_uint(r, p, "pad_id", 0, INT32_MAX, "padding", &v))) return rc;
        pd->pad_id = (int32_t)v;
        if ((rc = get_uint(r, p, "pad_type_id", 0, 255, "padding", &v))) return rc;
        pd->pad_type_id = (int)v;
        if ((rc = get_str(r, p, "pad_token", "padding", &pd->pad_token))) return rc;
    }
    return NLP_OK;
}

/* model.vocab: {"token": id, ...} */
static int read_vocab(const struct rd *r, const json_t *m)
{
    nlp_tok_spec *s = r->s;
    if (r->fast && r->fast->vocab) {
        s->vocab = r->fast->vocab;
        r->fast->vocab = NULL;
        return NLP_OK;
    }
    json_t *v = json_object_get(m, "vocab");
    if (!json_is_object(v)) return bad(r, "model.vocab", "expected an object of \"token\": id");
    if (!(s->vocab = nlp_vocab_new(json_object_size(v)))) return NLP_ENOMEM;
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) >= INT32_MAX - 1)
            return bad(r, "model.vocab", "the id of '%s' must be a non-negative integer", key);
        if ((size_t)json_integer_value(val) >= json_object_size(v) + NLP_VOCAB_MAX_HOLES)
            return bad(r, "model.vocab", "the id of '%s' (%lld) leaves more than %zu ids without a token", key,
                       (long long)json_integer_value(val), NLP_VOCAB_MAX_HOLES);
        int rc = nlp_vocab_set(s->vocab, (int32_t)json_integer_value(val), key, strlen(key));
        if (rc) return rc == NLP_EFORMAT ? bad(r, "model.vocab", "%s", nlp_errmsg()) : rc;
    }
    return NLP_OK;
}

/* One merge: "a b" or ["a", "b"]. */
static int read_merge(const struct rd *r, const json_t *m, size_t i, int32_t *out)
{
    char where[64];
    snprintf(where, sizeof where, "model.merges[%zu]", i);
    const char *a, *b;
    size_t la, lb;
    if (json_is_string(m)) {
        const char *s = json_string_value(m);
        const char *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' ')) return bad(r, where, "expected \"a b\" (two tokens, one space)");
        a = s;
        la = (size_t)(sp - s);
        b = sp + 1;
        lb = strlen(b);
    } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
               json_is_string(json_array_get(m, 1))) {
        a = json_string_value(json_array_get(m, 0));
        la = json_string_length(json_array_get(m, 0));
        b = json_string_value(json_array_get(m, 1));
        lb = json_string_length(json_array_get(m, 1));
    } else {
        return bad(r, where, "expected \"a b\" or [\"a\", \"b\"]");
    }
    out[0] = nlp_vocab_find(r->s->vocab, a, la);
    out[1] = nlp_vocab_find(r->s->vocab, b, lb);
    if (out[0] < 0) return bad(r, where, "token '%.*s' is not in the vocabulary", (int)la, a);
    if (out[1] < 0) return bad(r, where, "token '%.*s' is not in the vocabulary", (int)lb, b);
    return NLP_OK;
}

/* HF's Unigram: vocab [[token, score], ...], unk_id, byte_fallback */
static int read_unigram(const struct rd *r, const json_t *m)
{
    nlp_tok_spec *s = r->s;
    s->model = NLP_MODEL_UNIGRAM;
    long long unk;
    int rc;
    if ((rc = get_uint(r, m, "unk_id", -1, INT32_MAX - 1, "model", &unk)) ||
        (rc = get_bool(r, m, "byte_fallback", 0, "model", &s->uni.byte_fallback)))
        return rc;
    s->uni.unk_id = (int32_t)unk;
    json_t *v = json_object_get(m, "vocab");
    if (!json_is_array(v)) return bad(r, "model.vocab", "expected an array of [\"token\", score]");
    size_t n = json_array_size(v);
    if (!(s->vocab = nlp_vocab_new(n)) || !(s->scores = nlp_malloc((n ? n : 1) * sizeof *s->scores))) return NLP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i), *tok = json_array_get(e, 0), *sc = json_array_get(e, 1);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(tok) || !json_is_number(sc)) {
            char where[64];
            snprintf(where, sizeof where, "model.vocab[%zu]", i);
            return bad(r, where, "expected [\"token\", score]");
        }
        if ((rc = nlp_vocab_set(s->vocab, (int32_t)i, json_string_value(tok), json_string_length(tok)))) {
            char where[64];
            snprintf(where, sizeof where, "model.vocab[%zu]", i);
            return rc == NLP_EFORMAT ? bad(r, where, "%s", nlp_errmsg()) : rc;
        }
        s->scores[i] = json_number_value(sc);
        s->n_scores = i + 1;
    }
    if (s->uni.unk_id >= 0 && (size_t)s->uni.unk_id >= n)
        return bad(r, "model.unk_id", "%ld is not below the vocabulary size %zu", (long)s->uni.unk_id, n);
    return NLP_OK;
}

/* nlpipe's own key in a model: the sentencepiece .model it was read from
 * (base64). When present it is the tokenizer: the rest of the file is HF's
 * view of the same model, for HF to read. */
#define SPM_KEY "nlpipe_sentencepiece_model"

static int read_embedded_spm(const struct rd *r, const json_t *v)
{
    if (!json_is_string(v)) return bad(r, "model." SPM_KEY, "expected a base64 string");
    nlp_buf b = {0};
    size_t at;
    int rc = nlp_base64_decode(json_string_value(v), json_string_length(v), &b, &at);
    if (rc == NLP_EFORMAT) rc = bad(r, "model." SPM_KEY, "not base64 (character %zu)", at);
    if (!rc) {
        char name[600];
        snprintf(name, sizeof name, "%s: model." SPM_KEY, r->name);
        nlp_tok_spec t;
        rc = nlp_tokfiles_spm_spec(b.data ? b.data : "", b.len, name, &t);
        if (!rc) {
            nlp_tok_spec_free(r->s);
            *r->s = t;
        }
    }
    nlp_buf_free(&b);
    return rc;
}

static int read_model(const struct rd *r, const json_t *m)
{
    if (!json_is_object(m)) return bad(r, "model", "expected an object");
    json_t *t = json_object_get(m, "type");
    if (t && !json_is_string(t)) return bad(r, "model", "'type' must be a string");
    nlp_tok_spec *s = r->s;
    int rc;
    if (t && strcmp(json_string_value(t), "Unigram") == 0) return read_unigram(r, m);
    /* without "type", HF tells the models apart by their fields */
    int wp = t ? strcmp(json_string_value(t), "WordPiece") == 0
               : !json_object_get(m, "merges") && json_object_get(m, "max_input_chars_per_word");
    if (t && !wp && strcmp(json_string_value(t), "BPE") != 0)
        return bad(r, "model", "model type '%s' is not supported (BPE, WordPiece and Unigram are)",
                   json_string_value(t));
    if (!t && !wp && !json_object_get(m, "merges"))
        return bad(r, "model", "no 'type', no 'merges' and no 'max_input_chars_per_word': not a BPE or WordPiece model");
    if (wp) {
        s->model = NLP_MODEL_WORDPIECE;
        long long mc;
        if ((rc = get_str(r, m, "unk_token", "model", &s->wp.unk_token)) ||
            (rc = get_str(r, m, "continuing_subword_prefix", "model", &s->wp.continuing_subword_prefix)) ||
            (rc = get_uint(r, m, "max_input_chars_per_word", NLP_WORDPIECE_MAX_CHARS, (long long)1 << 40, "model", &mc)))
            return rc;
        s->wp.max_input_chars_per_word = (size_t)mc;
        if (!s->wp.unk_token && !(s->wp.unk_token = nlp_strdup(NLP_WORDPIECE_UNK))) return NLP_ENOMEM;
        if (!s->wp.continuing_subword_prefix && !(s->wp.continuing_subword_prefix = nlp_strdup(NLP_WORDPIECE_PREFIX)))
            return NLP_ENOMEM;
        return read_vocab(r, m);
    }
    s->model = NLP_MODEL_BPE;
    json_t *d = json_object_get(m, "dropout");
    if (d && !json_is_null(d) && !(json_is_number(d) && json_number_value(d) == 0))
        return bad(r, "model", "BPE dropout is not supported");
    if ((rc = get_str(r, m, "unk_token", "model", &s->bpe.unk_token)) ||
        (rc = get_str(r, m, "continuing_subword_prefix", "model", &s->bpe.continuing_subword_prefix)) ||
        (rc = get_str(r, m, "end_of_word_suffix", "model", &s->bpe.end_of_word_suffix)) ||
        (rc = get_bool(r, m, "fuse_unk", 0, "model", &s->bpe.fuse_unk)) ||
        (rc = get_bool(r, m, "byte_fallback", 0, "model", &s->bpe.byte_fallback)) ||
        (rc = get_bool(r, m, "ignore_merges", 0, "model", &s->bpe.ignore_merges)))
        return rc;
    if ((rc = read_vocab(r, m))) return rc;
    json_t *ms = json_object_get(m, "merges");
    if (ms && !json_is_null(ms)) {
        if (!json_is_array(ms)) return bad(r, "model.merges", "expected an array");
        if (r->fast && r->fast->has_merges) {
            s->merges = r->fast->merges;
            s->n_merges = r->fast->n_merges;
            r->fast->merges = NULL;
            r->fast->has_merges = 0;
            return NLP_OK;
        }
        size_t n = json_array_size(ms);
        s->merges = nlp_malloc((n ? 2 * n : 1) * sizeof *s->merges);
        if (!s->merges) return NLP_ENOMEM;
        for (size_t i = 0; i < n; i++)
            if ((rc = read_merge(r, json_array_get(ms, i), i, s->merges + 2 * i))) return rc;
        s->n_merges = n;
    }
    return NLP_OK;
}

static int parse_root(const struct rd *r, const json_t *root)
{
    if (!json_is_object(root))
        return nlp_error(NLP_EFORMAT, "'%s': %s, not a tokenizer: expected a JSON object (tokenizer.json)", r->name,
                         type_name(root));
    json_t *m = json_object_get(root, "model");
    if (!m) return nlp_error(NLP_EFORMAT, "'%s': no \"model\": not a tokenizer.json", r->name);
    int rc;
    json_t *spm = json_is_object(m) ? json_object_get(m, SPM_KEY) : NULL;
    if (spm) { /* the whole tokenizer, as the .model file is, and the tokens added to it */
        if ((rc = read_embedded_spm(r, spm))) return rc;
        json_t *a = json_object_get(root, "added_tokens");
        return a && !json_is_null(a) ? read_added_past(r, a, nlp_vocab_size(r->s->vocab)) : NLP_OK;
    }
    if ((rc = read_model(r, m))) return rc;
    json_t *a = json_object_get(root, "added_tokens");
    if (a && !json_is_null(a) && (rc = read_added(r, a))) return rc;
    json_t *j;
    if ((j = json_object_get(root, "normalizer")) && !json_is_null(j) && (rc = read_normalizer(r, j, "normalizer")))
        return rc;
    if ((j = json_object_get(root, "pre_tokenizer")) && !json_is_null(j) &&
        (rc = read_pretok(r, j, "pre_tokenizer")))
        return rc;
    if ((j = json_object_get(root, "post_processor")) && !json_is_null(j) &&
        (rc = read_post(r, j, "post_processor", 0)))
        return rc;
    if ((j = json_object_get(root, "decoder")) && !json_is_null(j) && (rc = read_decoder(r, j, "decoder"))) return rc;
    return read_trunc_pad(r, root);
}

/*
 * The fast path (jscan.h): reads model.vocab, and model.merges against it,
 * and makes in *doc a copy of the text with both emptied ({} and []), for
 * jansson to read the rest (an error found there sends the whole original
 * text to jansson, so positions in the copy do not matter). 1: done (where
 * f->has_merges, the merges too); 0: not handled (the whole text goes to
 * jansson); NLP_ENOMEM.
 */
static int fast_model(const char *s, size_t n, const nlp_jscan_tok *scanned, struct fast *f, nlp_buf *doc)
{
    nlp_jscan_tok t;
    int r = 1;
    if (scanned) t = *scanned;
    else if ((r = nlp_jscan_tokenizer(s, n, &t)) != 1) return r < -1 ? r : 0;
    if (!t.model[1] || !t.vocab[1]) return 0;
    size_t v0 = t.vocab[0], v1 = t.vocab[1], g0 = t.merges[0], g1 = t.merges[1];
    if ((r = nlp_jscan_vocab(s, v0, v1, NULL, &f->vocab)) <= 0) return r;
    if (g1 && (r = nlp_jscan_merges(s, g0, g1, f->vocab, &f->merges, &f->n_merges)) < 0) return r;
    f->has_merges = g1 && r == 1;
    if (nlp_buf_reserve(doc, n)) return NLP_ENOMEM;
    size_t span[2][2] = {{v0, v1}, {g0, g1}}, ns = f->has_merges ? 2 : 1, at = 0;
    if (ns == 2 && g0 < v0) {
        size_t t0 = span[0][0], t1 = span[0][1];
        span[0][0] = span[1][0], span[0][1] = span[1][1];
        span[1][0] = t0, span[1][1] = t1;
    }
    for (size_t k = 0; k < ns; k++) {
        size_t a = span[k][0], b = span[k][1];
        memcpy(doc->data + doc->len, s + at, a - at);
        doc->len += a - at;
        doc->data[doc->len++] = s[a];
        doc->data[doc->len++] = s[b - 1];
        at = b;
    }
    memcpy(doc->data + doc->len, s + at, n - at);
    doc->len += n - at;
    return 1;
}

static void fast_free(struct fast *f)
{
    nlp_vocab_free(f->vocab);
    free(f->merges);
    memset(f, 0, sizeof *f);
}

static int parse(const char *data, size_t n, const char *name, nlp_tok_spec *spec, struct fast *fast)
{
    json_error_t err;
    /* any JSON value, so that null or a number is named as what it is */
    json_t *root = json_loadb(data, n, JSON_DECODE_ANY, &err);
    if (!root) return nlp_error(NLP_EFORMAT, "'%s' line %d column %d: %s", name, err.line, err.column, err.text);
    struct rd r = {name, spec, fast};
    int rc = parse_root(&r, root);
    json_decref(root);
    if (rc) nlp_tok_spec_free(spec);
    return rc;
}

int nlp_tokjson_parse(const char *data, size_t n, const char *name, nlp_tok_spec *spec)
{
    return nlp_tokjson_parse_scanned(data, n, name, NULL, spec);
}

int nlp_tokjson_parse_scanned(const char *data, size_t n, const char *name, const nlp_jscan_tok *scanned,
                              nlp_tok_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    if (n >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) { /* a byte-order mark, as HF accepts */
        data += 3;
        n -= 3;
        scanned = NULL;
    }
    struct fast f = {0};
    nlp_buf doc = {0};
    int rc = fast_model(data, n, scanned, &f, &doc);
    if (rc == 1) {
        rc = parse(doc.data, doc.len, name, spec, &f);
        /* an error: the whole text again, so that what is named and where
         * is what jansson and the readers find in it */
        if (rc && rc != NLP_ENOMEM) rc = 0;
        else rc = rc ? rc : 1;
    }
    fast_free(&f);
    nlp_buf_free(&doc);
    if (rc == 1) return NLP_OK;
    if (rc < 0) return rc;
    memset(spec, 0, sizeof *spec);
    return parse(data, n, name, spec, NULL);
}

int nlp_tokjson_read(const char *path, nlp_tok_spec *spec)
{
    nlp_map m;
    memset(spec, 0, sizeof *spec);
    int rc = nlp_map_file_max(&m, path, NLP_TOKFILE_MAX_BYTES);
    if (rc) return rc;
    rc = nlp_tokjson_parse(m.data, m.len, path, spec);
    nlp_unmap(&m);
    return rc;
}

// --- writing

/* jansson helpers that track allocation failure in one flag */
struct wr {
    int oom;
};

static json_t *chk(struct wr *w, json_t *j)
{
    if (!j) w->oom = 1;
    return j;
}

/* jansson's *_new calls take the value's reference even when they fail
 * (and free it): it is dropped here only when they are not called */
static void set(struct wr *w, json_t *o, const char *key, json_t *v)
{
    if (!o || !v) {
        w->oom = 1;
        json_decref(v);
    } else if (json_object_set_new(o, key, v)) {
        w->oom = 1;
    }
}

static void push(struct wr *w, json_t *a, json_t *v)
{
    if (!a || !v) {
        w->oom = 1;
        json_decref(v);
    } else if (json_array_append_new(a, v)) {
        w->oom = 1;
    }
}

static json_t *str_or_null(struct wr *w, const char *s) { return chk(w, s ? json_string(s) : json_null()); }
static json_t *strn(struct wr *w, const char *s, size_t n) { return chk(w, json_stringn(s, n)); }
static json_t *integer(struct wr *w, long long v) { return chk(w, json_integer(v)); }
static json_t *boolean(struct wr *w, int v) { return chk(w, json_boolean(v)); }

static json_t *typed(struct wr *w, const char *type)
{
    json_t *o = chk(w, json_object());
    set(w, o, "type", chk(w, json_string(type)));
    return o;
}

static json_t *seq_or_one(struct wr *w, json_t **items, size_t n, const char *list_key)
{
    if (n == 1) return items[0];
    json_t *o = typed(w, "Sequence"), *a = chk(w, json_array());
    for (size_t i = 0; i < n; i++) push(w, a, items[i]);
    set(w, o, list_key, a);
    return o;
}

static json_t *base64(struct wr *w, const void *p, size_t n)
{
    nlp_buf b = {0};
    if (nlp_base64_encode(p, n, &b)) {
        w->oom = 1;
        return NULL;
    }
    json_t *j = chk(w, json_stringn(b.data ? b.data : "", b.len));
    nlp_buf_free(&b);
    return j;
}

static void replace_fields(struct wr *w, json_t *o, const nlp_norm_step *st)
{
    json_t *p = chk(w, json_object());
    set(w, p, st->regex ? "Regex" : "String", str_or_null(w, st->a ? st->a : ""));
    set(w, o, "pattern", p);
    set(w, o, "content", str_or_null(w, st->b ? st->b : ""));
}

static void metaspace_fields(struct wr *w, json_t *o, const char *rep, int scheme, int split)
{
    static const char *const sch[] = {"always", "first", "never"};
    set(w, o, "replacement", str_or_null(w, rep));
    set(w, o, "prepend_scheme", chk(w, json_string(sch[scheme >= 0 && scheme <= 2 ? scheme : 0])));
    set(w, o, "split", boolean(w, split));
}

static json_t *write_normalizer(struct wr *w, const nlp_tok_spec *s)
{
    if (!s->n_norm) return chk(w, json_null());
    static const char *names[] = {"NFC",   "NFD",     "NFKC",    "NFKD",           "Lowercase",   "StripAccents",
                                  "Strip", "Prepend", "Replace", "BertNormalizer", "Precompiled"};
    json_t **items = nlp_calloc(s->n_norm, sizeof *items);
    if (!items) {
        w->oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < s->n_norm; i++) {
        const nlp_norm_step *st = &s->norm[i];
        json_t *o = typed(w, names[st->type]);
        if (st->type == NLP_NORM_STEP_STRIP) {
            set(w, o, "strip_left", boolean(w, st->left));
            set(w, o, "strip_right", boolean(w, st->right));
        } else if (st->type == NLP_NORM_STEP_PREPEND) {
            set(w, o, "prepend", str_or_null(w, st->a ? st->a : ""));
        } else if (st->type == NLP_NORM_STEP_REPLACE) {
            replace_fields(w, o, st);
        } else if (st->type == NLP_NORM_STEP_PRECOMPILED) {
            set(w, o, "precompiled_charsmap", base64(w, st->map, st->map_len));
        } else if (st->type == NLP_NORM_STEP_BERT) {
            set(w, o, "clean_text", boolean(w, st->clean_text));
            set(w, o, "handle_chinese_chars", boolean(w, st->handle_chinese_chars));
            set(w, o, "strip_accents", st->strip_accents < 0 ? chk(w, json_null()) : boolean(w, st->strip_accents));
            set(w, o, "lowercase", boolean(w, st->lowercase));
        }
        items[i] = o;
    }
    json_t *r = seq_or_one(w, items, s->n_norm, "normalizers");
    free(items);
    return r;
}

static void bytelevel_fields(struct wr *w, json_t *o, int add_prefix_space, int trim_offsets, int use_regex)
{
    set(w, o, "add_prefix_space", boolean(w, add_prefix_space));
    set(w, o, "trim_offsets", boolean(w, trim_offsets));
    set(w, o, "use_regex", boolean(w, use_regex));
}

static json_t *write_pretok(struct wr *w, const nlp_tok_spec *s)
{
    if (!s->n_pretok) return chk(w, json_null());
    json_t **items = nlp_calloc(s->n_pretok, sizeof *items);
    if (!items) {
        w->oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < s->n_pretok; i++) {
        const nlp_pretok_step *st = &s->pretok[i];
        json_t *o = NULL;
        switch (st->type) {
        case NLP_PRETOK_BYTELEVEL:
            o = typed(w, "ByteLevel");
            bytelevel_fields(w, o, st->add_prefix_space, st->trim_offsets, st->use_regex);
            break;
        case NLP_PRETOK_GPT2_SPLIT: {
            o = typed(w, "Split");
            json_t *p = chk(w, json_object());
            set(w, p, "Regex", chk(w, json_string(nlp_pretok_gpt2_pattern)));
            set(w, o, "pattern", p);
            set(w, o, "behavior", chk(w, json_string("Isolated")));
            set(w, o, "invert", boolean(w, 0));
            break;
        }
        case NLP_PRETOK_WHITESPACE: o = typed(w, "Whitespace"); break;
        case NLP_PRETOK_WHITESPACE_SPLIT: o = typed(w, "WhitespaceSplit"); break;
        case NLP_PRETOK_BERT: o = typed(w, "BertPreTokenizer"); break;
        case NLP_PRETOK_METASPACE:
            o = typed(w, "Metaspace");
            metaspace_fields(w, o, st->replacement, st->prepend_scheme, st->split);
            break;
        }
        items[i] = o;
    }
    json_t *r = seq_or_one(w, items, s->n_pretok, "pretokenizers");
    free(items);
    return r;
}

static json_t *write_pieces(struct wr *w, const nlp_tmpl_piece *p, size_t n)
{
    json_t *a = chk(w, json_array());
    for (size_t i = 0; i < n; i++) {
        json_t *o = chk(w, json_object()), *body = chk(w, json_object());
        set(w, body, "id", chk(w, json_string(p[i].special ? p[i].name : p[i].seq ? "B" : "A")));
        set(w, body, "type_id", integer(w, p[i].type_id));
        set(w, o, p[i].special ? "SpecialToken" : "Sequence", body);
        push(w, a, o);
    }
    return a;
}

static json_t *tok_id(struct wr *w, const char *s, int32_t id)
{
    json_t *a = chk(w, json_array());
    push(w, a, str_or_null(w, s));
    push(w, a, integer(w, id));
    return a;
}

static json_t *write_post(struct wr *w, const nlp_postproc *p)
{
    json_t *bl = NULL, *main = NULL;
    if (p->bytelevel) {
        bl = typed(w, "ByteLevel");
        bytelevel_fields(w, bl, p->bl_add_prefix_space, p->bl_trim_offsets, p->bl_use_regex);
    }
    switch (p->type) {
    case NLP_POST_NONE: break;
    case NLP_POST_TEMPLATE: {
        main = typed(w, "TemplateProcessing");
        set(w, main, "single", write_pieces(w, p->single, p->n_single));
        set(w, main, "pair", write_pieces(w, p->pair, p->n_pair));
        json_t *sp = chk(w, json_object());
        for (size_t i = 0; i < p->n_specials; i++) {
            const nlp_tmpl_special *t = &p->specials[i];
            json_t *o = chk(w, json_object()), *ids = chk(w, json_array()), *toks = chk(w, json_array());
            set(w, o, "id", str_or_null(w, t->name));
            for (size_t k = 0; k < t->n; k++) {
                push(w, ids, integer(w, t->ids[k]));
                push(w, toks, str_or_null(w, t->tokens[k]));
            }
            set(w, o, "ids", ids);
            set(w, o, "tokens", toks);
            set(w, sp, t->name, o);
        }
        set(w, main, "special_tokens", sp);
        break;
    }
    case NLP_POST_BERT:
    case NLP_POST_ROBERTA:
        main = typed(w, p->type == NLP_POST_BERT ? "BertProcessing" : "RobertaProcessing");
        set(w, main, "sep", tok_id(w, p->sep, p->sep_id));
        set(w, main, "cls", tok_id(w, p->cls, p->cls_id));
        if (p->type == NLP_POST_ROBERTA) {
            set(w, main, "trim_offsets", boolean(w, p->trim_offsets));
            set(w, main, "add_prefix_space", boolean(w, p->add_prefix_space));
        }
        break;
    }
    if (bl && main) {
        json_t *items[2] = {bl, main};
        return seq_or_one(w, items, 2, "processors");
    }
    if (bl) return bl;
    if (main) return main;
    return chk(w, json_null());
}

static json_t *write_decoder(struct wr *w, const nlp_tok_spec *s)
{
    if (!s->n_dec) return chk(w, json_null());
    json_t **items = nlp_calloc(s->n_dec, sizeof *items);
    if (!items) {
        w->oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < s->n_dec; i++) {
        const nlp_dec_step *st = &s->dec[i];
        json_t *o = NULL;
        switch (st->type) {
        case NLP_DEC_BYTELEVEL:
            o = typed(w, "ByteLevel");
            bytelevel_fields(w, o, st->add_prefix_space, st->trim_offsets, st->use_regex);
            break;
        case NLP_DEC_BPE:
            o = typed(w, "BPEDecoder");
            set(w, o, "suffix", str_or_null(w, st->suffix ? st->suffix : "</w>"));
            break;
        case NLP_DEC_WORDPIECE:
            o = typed(w, "WordPiece");
            set(w, o, "prefix", str_or_null(w, st->suffix ? st->suffix : NLP_WORDPIECE_PREFIX));
            set(w, o, "cleanup", boolean(w, st->cleanup));
            break;
        case NLP_DEC_METASPACE:
            o = typed(w, "Metaspace");
            metaspace_fields(w, o, st->replacement, st->prepend_scheme, st->split);
            break;
        case NLP_DEC_BYTE_FALLBACK: o = typed(w, "ByteFallback"); break;
        case NLP_DEC_FUSE: o = typed(w, "Fuse"); break;
        case NLP_DEC_STRIP:
            o = typed(w, "Strip");
            set(w, o, "content", str_or_null(w, st->replacement));
            set(w, o, "start", integer(w, (long long)st->start));
            set(w, o, "stop", integer(w, (long long)st->stop));
            break;
        case NLP_DEC_REPLACE:
            o = typed(w, "Replace");
            replace_fields(w, o, &st->replace);
            break;
        }
        items[i] = o;
    }
    json_t *r = seq_or_one(w, items, s->n_dec, "decoders");
    free(items);
    return r;
}

/* model.vocab in id order */
static json_t *write_vocab(struct wr *w, const nlp_tok_spec *s)
{
    json_t *v = chk(w, json_object());
    size_t size = s->vocab ? nlp_vocab_size(s->vocab) : 0;
    for (size_t i = 0; i < size && !w->oom; i++) {
        size_t n;
        const char *t = nlp_vocab_token(s->vocab, (int32_t)i, &n);
        if (!t) continue;
        /* jansson keys are NUL-terminated: nlp_tokjson_dump refuses tokens
         * with a NUL byte before we get here */
        set(w, v, t, integer(w, (long long)i));
    }
    return v;
}

static json_t *write_model(struct wr *w, const nlp_tok_spec *s)
{
    if (s->model == NLP_MODEL_UNIGRAM) {
        json_t *m = typed(w, "Unigram");
        set(w, m, "unk_id", s->uni.unk_id >= 0 ? integer(w, s->uni.unk_id) : chk(w, json_null()));
        json_t *v = chk(w, json_array());
        size_t size = s->vocab ? nlp_vocab_size(s->vocab) : 0;
        for (size_t i = 0; i < size && !w->oom; i++) {
            size_t n;
            const char *t = nlp_vocab_token(s->vocab, (int32_t)i, &n);
            json_t *e = chk(w, json_array());
            push(w, e, strn(w, t ? t : "", t ? n : 0));
            push(w, e, chk(w, json_real(i < s->n_scores ? s->scores[i] : 0.0)));
            push(w, v, e);
        }
        set(w, m, "vocab", v);
        set(w, m, "byte_fallback", boolean(w, s->uni.byte_fallback));
        return m;
    }
    if (s->model == NLP_MODEL_WORDPIECE) {
        json_t *m = typed(w, "WordPiece");
        set(w, m, "unk_token", str_or_null(w, s->wp.unk_token ? s->wp.unk_token : NLP_WORDPIECE_UNK));
        set(w, m, "continuing_subword_prefix",
            str_or_null(w, s->wp.continuing_subword_prefix ? s->wp.continuing_subword_prefix : NLP_WORDPIECE_PREFIX));
        set(w, m, "max_input_chars_per_word",
            integer(w, (long long)(s->wp.max_input_chars_per_word ? s->wp.max_input_chars_per_word
                                                                  : NLP_WORDPIECE_MAX_CHARS)));
        set(w, m, "vocab", write_vocab(w, s));
        return m;
    }
    json_t *m = typed(w, "BPE");
    set(w, m, "dropout", chk(w, json_null()));
    set(w, m, "unk_token", str_or_null(w, s->bpe.unk_token));
    set(w, m, "continuing_subword_prefix", str_or_null(w, s->bpe.continuing_subword_prefix));
    set(w, m, "end_of_word_suffix", str_or_null(w, s->bpe.end_of_word_suffix));
    set(w, m, "fuse_unk", boolean(w, s->bpe.fuse_unk));
    set(w, m, "byte_fallback", boolean(w, s->bpe.byte_fallback));
    set(w, m, "ignore_merges", boolean(w, s->bpe.ignore_merges));
    set(w, m, "vocab", write_vocab(w, s));
    json_t *a = chk(w, json_array());
    for (size_t i = 0; i < s->n_merges && !w->oom; i++) {
        json_t *pair = chk(w, json_array());
        size_t na, nb;
        const char *ta = nlp_vocab_token(s->vocab, s->merges[2 * i], &na);
        const char *tb = nlp_vocab_token(s->vocab, s->merges[2 * i + 1], &nb);
        push(w, pair, strn(w, ta ? ta : "", ta ? na : 0));
        push(w, pair, strn(w, tb ? tb : "", tb ? nb : 0));
        push(w, a, pair);
    }
    set(w, m, "merges", a);
    return m;
}

static json_t *write_root(struct wr *w, const nlp_tok_spec *s)
{
    json_t *root = chk(w, json_object());
    set(w, root, "version", chk(w, json_string("1.0")));
    if (s->trunc.enabled) {
        json_t *t = chk(w, json_object());
        set(w, t, "direction", chk(w, json_string(s->trunc.left ? "Left" : "Right")));
        set(w, t, "max_length", integer(w, (long long)s->trunc.max_length));
        static const char *st[] = {"LongestFirst", "OnlyFirst", "OnlySecond"};
        set(w, t, "strategy", chk(w, json_string(st[s->trunc.strategy])));
        set(w, t, "stride", integer(w, (long long)s->trunc.stride));
        set(w, root, "truncation", t);
    } else {
        set(w, root, "truncation", chk(w, json_null()));
    }
    if (s->pad.enabled) {
        json_t *p = chk(w, json_object());
        if (s->pad.length) {
            json_t *f = chk(w, json_object());
            set(w, f, "Fixed", integer(w, (long long)s->pad.length));
            set(w, p, "strategy", f);
        } else {
            set(w, p, "strategy", chk(w, json_string("BatchLongest")));
        }
        set(w, p, "direction", chk(w, json_string(s->pad.left ? "Left" : "Right")));
        set(w, p, "pad_to_multiple_of", s->pad.multiple_of ? integer(w, (long long)s->pad.multiple_of) : chk(w, json_null()));
        set(w, p, "pad_id", integer(w, s->pad.pad_id));
        set(w, p, "pad_type_id", integer(w, s->pad.pad_type_id));
        set(w, p, "pad_token", str_or_null(w, s->pad.pad_token ? s->pad.pad_token : "[PAD]"));
        set(w, root, "padding", p);
    } else {
        set(w, root, "padding", chk(w, json_null()));
    }
    json_t *added = chk(w, json_array());
    for (size_t i = 0; i < s->n_added; i++) {
        const nlp_added_token *t = &s->added[i];
        json_t *o = chk(w, json_object());
        set(w, o, "id", integer(w, t->id));
        set(w, o, "content", str_or_null(w, t->content));
        set(w, o, "single_word", boolean(w, t->single_word));
        set(w, o, "lstrip", boolean(w, t->lstrip));
        set(w, o, "rstrip", boolean(w, t->rstrip));
        set(w, o, "normalized", boolean(w, t->normalized));
        set(w, o, "special", boolean(w, t->special));
        push(w, added, o);
    }
    set(w, root, "added_tokens", added);
    set(w, root, "normalizer", write_normalizer(w, s));
    set(w, root, "pre_tokenizer", write_pretok(w, s));
    set(w, root, "post_processor", write_post(w, &s->post));
    set(w, root, "decoder", write_decoder(w, s));
    set(w, root, "model", write_model(w, s));
    return root;
}

// --- HF's view of a sentencepiece model

/* Code points in s[0..n). */
static size_t cps(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

struct mcand {
    int32_t l, r;
    float score;
    size_t ll, lr; /* code points */
    size_t order;
};

/* transformers' generate_merges with piece scores: every piece split at
 * each character where both halves are pieces; by score (higher first),
 * then the longer left part, then the longer right part; pieces in id
 * order, and a piece's splits by (left id, right id), before that. */
static int cmp_mcand(const void *x, const void *y)
{
    const struct mcand *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->ll != b->ll) return a->ll > b->ll ? -1 : 1;
    if (a->lr != b->lr) return a->lr > b->lr ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

static int cmp_mcand_ids(const void *x, const void *y)
{
    const struct mcand *a = x, *b = y;
    if (a->l != b->l) return a->l < b->l ? -1 : 1;
    return (a->r > b->r) - (a->r < b->r);
}

static int spm_merges(const nlp_spm_info *in, const nlp_vocab *v, int32_t **out, size_t *nout)
{
    struct mcand *c = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < in->n; i++) {
        const char *p = in->piece[i];
        size_t len = in->len[i], first = n;
        for (size_t k = 1; k < len; k++) {
            if (((unsigned char)p[k] & 0xC0) == 0x80) continue;
            int32_t a = nlp_vocab_find(v, p, k), b = nlp_vocab_find(v, p + k, len - k);
            if (a < 0 || b < 0) continue;
            if (nlp_grow(&c, &cap, n + 1, sizeof *c)) {
                free(c);
                return NLP_ENOMEM;
            }
            c[n++] = (struct mcand){a, b, in->score[i], cps(p, k), cps(p + k, len - k), 0};
        }
        if (n > first) qsort(c + first, n - first, sizeof *c, cmp_mcand_ids);
    }
    for (size_t i = 0; i < n; i++) c[i].order = i;
    if (n) qsort(c, n, sizeof *c, cmp_mcand);
    int32_t *m = nlp_malloc((n ? 2 * n : 1) * sizeof *m);
    if (!m) {
        free(c);
        return NLP_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) m[2 * i] = c[i].l, m[2 * i + 1] = c[i].r;
    free(c);
    *out = m;
    *nout = n;
    return NLP_OK;
}

int nlp_tokjson_spm_view(const nlp_tok_spec *spm, nlp_tok_spec *v)
{
    memset(v, 0, sizeof *v);
    if (spm->model != NLP_MODEL_SPM) return nlp_error(NLP_EINVAL, "not a sentencepiece model");
    nlp_spm_info in;
    int rc = nlp_spm_parse(spm->spm_data, spm->spm_len, "sentencepiece model", &in);
    if (rc) return rc;
    rc = NLP_ENOMEM;
    if (!(v->vocab = nlp_vocab_clone(spm->vocab))) goto fail;
    int32_t unk = -1;
    size_t nadd = 0;
    for (size_t i = 0; i < in.n; i++) {
        if (in.type[i] == NLP_SPM_UNKNOWN) unk = (int32_t)i;
        if (in.type[i] == NLP_SPM_CONTROL || in.type[i] == NLP_SPM_USER_DEFINED) nadd++;
    }
    if (in.model_type == NLP_SPM_BPE) {
        v->model = NLP_MODEL_BPE;
        v->bpe.fuse_unk = 1;
        v->bpe.byte_fallback = in.byte_fallback;
        if (!(v->bpe.unk_token = nlp_strndup(in.piece[unk], in.len[unk]))) goto fail;
        if ((rc = spm_merges(&in, v->vocab, &v->merges, &v->n_merges))) goto fail;
        rc = NLP_ENOMEM;
    } else {
        /* unigram (and, as the nearest HF has, word and char models) */
        v->model = NLP_MODEL_UNIGRAM;
        v->uni.unk_id = unk;
        v->uni.byte_fallback = in.byte_fallback;
        if (!(v->scores = nlp_malloc(in.n * sizeof *v->scores))) goto fail;
        for (size_t i = 0; i < in.n; i++) v->scores[i] = in.score[i];
        v->n_scores = in.n;
    }
    /* control pieces are special added tokens, user-defined ones plain ones
     * (transformers' SpmConverter) */
    /* and the tokens added to the model (ids past its pieces) */
    nadd += spm->n_added;
    if (nadd && !(v->added = nlp_calloc(nadd, sizeof *v->added))) goto fail;
    for (size_t i = 0; i < in.n; i++)
        if (in.type[i] == NLP_SPM_CONTROL || in.type[i] == NLP_SPM_USER_DEFINED) {
            nlp_added_token *t = &v->added[v->n_added++];
            t->id = (int32_t)i;
            t->special = in.type[i] == NLP_SPM_CONTROL;
            if (!(t->content = nlp_strndup(in.piece[i], in.len[i]))) goto fail;
        }
    for (size_t i = 0; i < spm->n_added; i++) {
        if ((size_t)spm->added[i].id < in.n) continue;
        nlp_added_token *t = &v->added[v->n_added++];
        *t = spm->added[i];
        if (!(t->content = nlp_strdup(spm->added[i].content))) goto fail;
    }
    /* normalizer: the character map, then (remove_extra_whitespaces) the
     * right end stripped and runs of spaces made one U+2581 */
    size_t nn = (in.norm.charsmap_len ? 1 : 0) + (in.norm.remove_extra_whitespaces ? 2 : 0);
    if (nn && !(v->norm = nlp_calloc(nn, sizeof *v->norm))) goto fail;
    if (in.norm.charsmap_len) {
        if ((rc = nlp_norm_precompiled(&v->norm[v->n_norm], in.norm.charsmap, in.norm.charsmap_len))) goto fail;
        v->n_norm++;
        rc = NLP_ENOMEM;
    }
    if (in.norm.remove_extra_whitespaces) {
        v->norm[v->n_norm++] = (nlp_norm_step){.type = NLP_NORM_STEP_STRIP, .left = 0, .right = 1};
        if ((rc = nlp_norm_replace_regex(&v->norm[v->n_norm], " {2,}", "\xE2\x96\x81"))) goto fail;
        v->n_norm++;
        rc = NLP_ENOMEM;
    }
    int scheme = in.norm.add_dummy_prefix ? NLP_PREPEND_ALWAYS : NLP_PREPEND_NEVER;
    if (!(v->pretok = nlp_calloc(1, sizeof *v->pretok))) goto fail;
    v->pretok[0] = (nlp_pretok_step){.type = NLP_PRETOK_METASPACE, .prepend_scheme = scheme, .split = 1};
    strcpy(v->pretok[0].replacement, "\xE2\x96\x81");
    v->n_pretok = 1;
    if (in.byte_fallback) {
        /* LLaMA's: U+2581 to spaces, bytes gathered, one leading space off */
        if (!(v->dec = nlp_calloc(4, sizeof *v->dec))) goto fail;
        v->n_dec = 4;
        v->dec[0].type = NLP_DEC_REPLACE;
        v->dec[0].replace.type = NLP_NORM_STEP_REPLACE;
        if (!(v->dec[0].replace.a = nlp_strdup("\xE2\x96\x81")) || !(v->dec[0].replace.b = nlp_strdup(" "))) goto fail;
        v->dec[1].type = NLP_DEC_BYTE_FALLBACK;
        v->dec[2].type = NLP_DEC_FUSE;
        v->dec[3] = (nlp_dec_step){.type = NLP_DEC_STRIP, .start = in.norm.add_dummy_prefix ? 1 : 0, .stop = 0};
        strcpy(v->dec[3].replacement, " ");
    } else {
        if (!(v->dec = nlp_calloc(1, sizeof *v->dec))) goto fail;
        v->n_dec = 1;
        v->dec[0] = (nlp_dec_step){.type = NLP_DEC_METASPACE, .prepend_scheme = scheme, .split = 1};
        strcpy(v->dec[0].replacement, "\xE2\x96\x81");
    }
    nlp_spm_info_free(&in);
    return NLP_OK;
fail:
    nlp_spm_info_free(&in);
    nlp_tok_spec_free(v);
    return rc;
}

static int dump_cb(const char *buf, size_t size, void *data)
{
    return nlp_buf_append(data, buf, size) ? -1 : 0;
}

/* 0, or NLP_EINVAL when a token of the vocabulary holds a NUL byte: a JSON
 * key cannot hold one here (jansson cuts keys at the NUL and refuses to read
 * "\u0000" in keys), and classic BPE learns such tokens from a corpus with
 * NUL bytes. */
int nlp_tokjson_check_keys(const nlp_vocab *v)
{
    size_t size = v ? nlp_vocab_size(v) : 0;
    for (size_t i = 0; i < size; i++) {
        size_t n;
        const char *t = nlp_vocab_token(v, (int32_t)i, &n);
        if (t && memchr(t, 0, n))
            return nlp_error(NLP_EINVAL, "token %zu holds a NUL byte, which a JSON vocabulary cannot hold", i);
        /* JSON text is UTF-8 (sentencepiece pieces need not be) */
        if (t && !nlp_utf8_valid(t, n, NULL))
            return nlp_error(NLP_EINVAL, "token %zu is not UTF-8, which a JSON vocabulary cannot hold", i);
    }
    return NLP_OK;
}

int nlp_tokjson_dump(const nlp_tok_spec *spec, nlp_buf *out)
{
    return nlp_tokjson_dump_as(spec, 0, out);
}

int nlp_tokjson_dump_as(const nlp_tok_spec *spec, int hf_only, nlp_buf *out)
{
    int krc = nlp_tokjson_check_keys(spec->vocab);
    if (krc) return krc;
    struct wr w = {0};
    json_t *root;
    if (spec->model == NLP_MODEL_SPM) {
        /* HF's view, and (unless hf_only) the model itself, which nlpipe reads */
        nlp_tok_spec view;
        if ((krc = nlp_tokjson_spm_view(spec, &view))) return krc;
        root = write_root(&w, &view);
        nlp_tok_spec_free(&view);
        if (!hf_only) set(&w, json_object_get(root, "model"), SPM_KEY, base64(&w, spec->spm_data, spec->spm_len));
    } else {
        root = write_root(&w, spec);
    }
    if (w.oom) {
        json_decref(root);
        return nlp_error(NLP_ENOMEM, "out of memory (writing tokenizer.json)");
    }
    int rc = json_dump_callback(root, dump_cb, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (rc || nlp_buf_putc(out, '\n')) return nlp_error(NLP_ENOMEM, "out of memory (writing tokenizer.json)");
    return NLP_OK;
}

int nlp_tokjson_write(const nlp_tok_spec *spec, const char *path)
{
    nlp_buf b = {0};
    int rc = nlp_tokjson_dump(spec, &b);
    if (!rc) {
        nlp_writer *w;
        if (!(rc = nlp_writer_open(&w, path, 0))) {
            if ((rc = nlp_writer_write(w, b.data, b.len))) nlp_writer_abort(w);
            else rc = nlp_writer_close(w);
        }
    }
    nlp_buf_free(&b);
    return rc;
}
