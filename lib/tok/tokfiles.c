/*
 * tokfiles.c — tokenizer file formats and -m path resolution. See tokfiles.h.
 */
#include "tok/tokfiles.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "text/unicode.h"
#include "text/utf8.h"
#include "tok/jscan.h"
#include "tok/tokbin.h"
#include "tok/tokjson.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define EOW "</w>"

// --- merges files ("a b" per line)

/* Reads the pairs of a merges file from byte *at on into v (two spans a
 * pair, inside the text), at most max pairs: returns how many, *at moves on.
 * Skips a first line starting with "#version" and empty lines; *line
 * counts lines. A line that is no pair is an error (negative). */
static long merges_chunk(const char *data, size_t n, size_t *at, size_t *line, const char *name, nlp_span *v,
                         size_t max)
{
    size_t nv = 0, i = *at;
    while (i < n && nv < max) {
        /* one pass over the (short) line: its end, its spaces */
        const char *s = data + i, *sp = NULL;
        size_t e = i, spaces = 0;
        int ended = 0; /* e is at the line's end */
#ifdef __SSE2__
        /* 16 bytes a step: where the line ends, where its spaces are */
        const __m128i nl = _mm_set1_epi8('\n'), blank = _mm_set1_epi8(' ');
        for (; e + 16 <= n; e += 16) {
            const __m128i x = _mm_loadu_si128((const __m128i *)(data + e));
            unsigned mn = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, nl)),
                     ms = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, blank));
            if (mn) ms &= (1u << __builtin_ctz(mn)) - 1; /* the spaces before the end */
            if (ms && !spaces) sp = data + e + __builtin_ctz(ms);
            spaces += (size_t)__builtin_popcount(ms);
            if (mn) {
                e += (size_t)__builtin_ctz(mn);
                ended = 1;
                break;
            }
        }
#endif
        for (; !ended && e < n && data[e] != '\n'; e++)
            if (data[e] == ' ' && !spaces++) sp = data + e;
        size_t len = e - i;
        i = e + 1;
        ++*line;
        if (len && s[len - 1] == '\r') len--;
        if (*line == 1 && len >= 8 && memcmp(s, "#version", 8) == 0) continue;
        if (len == 0) continue;
        if (spaces != 1 || sp == s || sp == s + len - 1)
            return nlp_error(NLP_EFORMAT, "'%s' line %zu: expected two tokens separated by one space", name, *line);
        v[2 * nv] = (nlp_span){s, (size_t)(sp - s)};
        v[2 * nv + 1] = (nlp_span){sp + 1, (size_t)(s + len - sp - 1)};
        nv++;
    }
    *at = i;
    return (long)nv;
}

/* All the pairs of a merges file, as merges_chunk reads them. */
static int parse_merges(const char *data, size_t n, const char *name, nlp_span **out, size_t *count)
{
    nlp_span *v = NULL;
    size_t nv = 0, cap = 0, at = 0, line = 0;
    while (at < n) {
        if (nlp_grow(&v, &cap, 2 * nv + 2048, sizeof *v)) {
            free(v);
            return NLP_ENOMEM;
        }
        long k = merges_chunk(data, n, &at, &line, name, v + 2 * nv, 1024);
        if (k < 0) {
            free(v);
            return (int)k;
        }
        nv += (size_t)k;
    }
    *out = v;
    *count = nv;
    return NLP_OK;
}

/* 1-based number of the line holding byte `at` of data. */
static size_t line_of(const char *data, size_t at)
{
    size_t line = 1;
    for (const char *p = data; (p = memchr(p, '\n', (size_t)(data + at - p))); p++) line++;
    return line;
}

static int read_text(const char *path, char **data, size_t *n)
{
    int rc = nlp_read_file_max(path, NLP_TOKFILE_MAX_BYTES, data, n);
    if (rc) return rc;
    size_t bad;
    if (!nlp_utf8_valid(*data, *n, &bad)) {
        size_t line = line_of(*data, bad);
        free(*data);
        *data = NULL; /* callers free it again on their error path */
        return nlp_error(NLP_EFORMAT, "'%s' byte %zu: invalid UTF-8 (line %zu)", path, bad, line);
    }
    return NLP_OK;
}

/* The JSON text of a file without a UTF-8 byte-order mark, which HF's
 * reader accepts and jansson does not. */
static const char *skip_bom(const char *d, size_t *n)
{
    if (*n >= 3 && memcmp(d, "\xEF\xBB\xBF", 3) == 0) {
        *n -= 3;
        return d + 3;
    }
    return d;
}

// --- pipelines

/* GPT-2: byte-level pre-tokenizer without prefix space, ByteLevel
 * post-processor and decoder, <|endoftext|> special. */
static int gpt2_pipeline(nlp_tok_spec *s)
{
    if (nlp_tok_spec_pipeline(s, NLP_PIPE_BYTELEVEL, NULL)) return NLP_ENOMEM;
    int32_t eot = nlp_vocab_find(s->vocab, "<|endoftext|>", 13);
    if (eot >= 0) {
        s->added = nlp_calloc(1, sizeof *s->added);
        if (!s->added || !(s->added[0].content = nlp_strdup("<|endoftext|>"))) return NLP_ENOMEM;
        s->added[0].id = eot;
        s->added[0].special = 1;
        s->n_added = 1;
    }
    return NLP_OK;
}

/* Classic BPE on white-space-split words, optional end-of-word suffix. */
static int classic_pipeline(nlp_tok_spec *s, const char *suffix)
{
    if (nlp_tok_spec_pipeline(s, NLP_PIPE_WHITESPACE, suffix)) return NLP_ENOMEM;
    if (suffix && !(s->bpe.end_of_word_suffix = nlp_strdup(suffix))) return NLP_ENOMEM;
    return NLP_OK;
}

/* Does any token hold one of GPT-2's remapped characters U+0100..U+0143? */
static int looks_byte_level(const nlp_vocab *v)
{
    size_t size = nlp_vocab_size(v);
    for (size_t i = 0; i < size; i++) {
        size_t n;
        const char *t = nlp_vocab_token(v, (int32_t)i, &n);
        if (!t) continue;
        for (size_t k = 0; k + 1 < n; k++) {
            unsigned char c0 = (unsigned char)t[k], c1 = (unsigned char)t[k + 1];
            /* U+0100..U+013F = C4 80..C4 BF; U+0140..U+0143 = C5 80..C5 83 */
            if ((c0 == 0xC4 && c1 >= 0x80 && c1 <= 0xBF) || (c0 == 0xC5 && c1 >= 0x80 && c1 <= 0x83)) return 1;
        }
    }
    return 0;
}

static int ends_with_eow(const nlp_vocab *v)
{
    size_t size = nlp_vocab_size(v);
    for (size_t i = 0; i < size; i++) {
        size_t n;
        const char *t = nlp_vocab_token(v, (int32_t)i, &n);
        if (t && n > 4 && memcmp(t + n - 4, EOW, 4) == 0) return 1;
    }
    return 0;
}

// --- readers

static int read_vocab_json(const char *path, nlp_vocab **out)
{
    nlp_map m;
    int rc = nlp_map_file_max(&m, path, NLP_TOKFILE_MAX_BYTES);
    if (rc) return rc;
    json_error_t err;
    size_t len = m.len;
    const char *text = skip_bom(m.data, &len);
    /* the fast path; where it does not answer, jansson reads the text and
     * the checks below name what is wrong */
    size_t o0 = nlp_jscan_ws(text, len, 0), end = 0;
    nlp_vocab *fast = NULL;
    if ((rc = nlp_jscan_vocab(text, o0, len, &end, &fast)) == 1 && nlp_jscan_ws(text, len, end) == len) {
        nlp_unmap(&m);
        *out = fast;
        return NLP_OK;
    }
    nlp_vocab_free(fast);
    if (rc < 0) {
        nlp_unmap(&m);
        return rc;
    }
    json_t *root = json_loadb(text, len, 0, &err);
    nlp_unmap(&m);
    if (!root) return nlp_error(NLP_EFORMAT, "'%s' line %d column %d: %s", path, err.line, err.column, err.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return nlp_error(NLP_EFORMAT, "'%s': expected a JSON object of \"token\": id", path);
    }
    nlp_vocab *v = nlp_vocab_new(json_object_size(root));
    if (!v) {
        json_decref(root);
        return NLP_ENOMEM;
    }
    const char *key;
    json_t *val;
    rc = NLP_OK;
    json_object_foreach(root, key, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) >= INT32_MAX - 1) {
            rc = nlp_error(NLP_EFORMAT, "'%s': the id of '%s' must be a non-negative integer", path, key);
            break;
        }
        if ((size_t)json_integer_value(val) >= json_object_size(root) + NLP_VOCAB_MAX_HOLES) {
            rc = nlp_error(NLP_EFORMAT, "'%s': the id of '%s' (%lld) leaves more than %zu ids without a token", path,
                           key, (long long)json_integer_value(val), NLP_VOCAB_MAX_HOLES);
            break;
        }
        if ((rc = nlp_vocab_set(v, (int32_t)json_integer_value(val), key, strlen(key)))) {
            if (rc == NLP_EFORMAT) nlp_error_prefix(rc, "'%s'", path);
            break;
        }
    }
    json_decref(root);
    if (rc) {
        nlp_vocab_free(v);
        return rc;
    }
    *out = v;
    return NLP_OK;
}

int nlp_tokfiles_read_pair(const char *vocab_path, const char *merges_path, int gpt2, nlp_tok_spec *s)
{
    memset(s, 0, sizeof *s);
    int rc = read_vocab_json(vocab_path, &s->vocab);
    if (rc) return rc;
    nlp_map m = {0};
    size_t nm = 0, at = 0, line = 0;
    /* The text is checked for UTF-8 only where something is wrong with it:
     * every byte of it but the "#version" line is part of a token that must
     * be found in the vocabulary, whose tokens are valid UTF-8; an invalid
     * byte is then named as such, before anything else (as read_text).
     * The pairs are read and looked up a chunk at a time. */
    if ((rc = nlp_map_file_max(&m, merges_path, NLP_TOKFILE_MAX_BYTES))) goto fail;
    const char *data = m.data;
    size_t n = m.len;
    enum { CHUNK = 1024 };
    nlp_span keys[2 * CHUNK];
    { /* a pair a line at most: the ids' array made at once (nlp_malloc_dense), not grown and faulted in */
        size_t lines = 1;
        for (const char *q = data; (q = memchr(q, '\n', (size_t)(data + n - q))); q++) lines++;
        if (!(s->merges = nlp_malloc_dense((2 * lines + 1) * sizeof *s->merges))) {
            rc = NLP_ENOMEM;
            goto fail;
        }
    }
    while (at < n) {
        long k = merges_chunk(data, n, &at, &line, merges_path, keys, CHUNK);
        if (k < 0) {
            rc = (int)k;
            goto bad_text;
        }
        int32_t *ids = s->merges + 2 * nm; /* room made above: a pair a line at most */
        nlp_vocab_find_many(s->vocab, keys, 2 * (size_t)k, ids);
        for (size_t i = 0; i < 2 * (size_t)k; i++)
            if (ids[i] < 0) {
                rc = nlp_error(NLP_EFORMAT, "'%s' line %zu: token '%.*s' is not in '%s'", merges_path,
                               line_of(data, (size_t)(keys[i].s - data)), (int)keys[i].n, keys[i].s, vocab_path);
                goto bad_text;
            }
        nm += (size_t)k;
    }
    s->n_merges = nm;
    s->model = NLP_MODEL_BPE;
    if (gpt2 || looks_byte_level(s->vocab)) rc = gpt2_pipeline(s);
    else rc = classic_pipeline(s, ends_with_eow(s->vocab) ? EOW : NULL);
    if (rc) goto fail;
    nlp_unmap(&m);
    return NLP_OK;
bad_text:
    if (rc == NLP_EFORMAT) {
        size_t bad;
        if (!nlp_utf8_valid(data, n, &bad))
            rc = nlp_error(NLP_EFORMAT, "'%s' byte %zu: invalid UTF-8 (line %zu)", merges_path, bad, line_of(data, bad));
    }
fail:
    if (m.data) nlp_unmap(&m);
    nlp_tok_spec_free(s);
    return rc;
}

struct cpt {
    int32_t cp;
    int eow;
};

static int cmp_cpt(const void *x, const void *y)
{
    const struct cpt *a = x, *b = y;
    if (a->eow != b->eow) return a->eow - b->eow;
    return (a->cp > b->cp) - (a->cp < b->cp);
}

/* Adds the characters of symbol s (its last one flagged when s ends with
 * </w>) to the set. */
static int collect_chars(const char *s, size_t n, struct cpt **set, size_t *ns, size_t *cap)
{
    int eow = n > 4 && memcmp(s + n - 4, EOW, 4) == 0;
    if (eow) n -= 4;
    size_t i = 0;
    while (i < n) {
        int32_t cp = nlp_utf8_next(s, n, &i);
        if (cp < 0) continue;
        if (nlp_grow(set, cap, *ns + 1, sizeof **set)) return NLP_ENOMEM;
        (*set)[(*ns)++] = (struct cpt){cp, 0};
        if (eow && i == n) {
            if (nlp_grow(set, cap, *ns + 1, sizeof **set)) return NLP_ENOMEM;
            (*set)[(*ns)++] = (struct cpt){cp, 1};
        }
    }
    return NLP_OK;
}

int nlp_tokfiles_read_codes(const char *path, nlp_tok_spec *s)
{
    memset(s, 0, sizeof *s);
    char *data = NULL;
    size_t n, nm = 0, ns = 0, cap = 0;
    nlp_span *ml = NULL; /* a pair: ml[2i], ml[2i + 1] */
    struct cpt *set = NULL;
    nlp_buf b = {0};
    int rc;
    if ((rc = read_text(path, &data, &n)) || (rc = parse_merges(data, n, path, &ml, &nm))) goto fail;
    if (nm == 0) {
        rc = nlp_error(NLP_EFORMAT, "'%s': no merges (expected lines of two tokens separated by a space)", path);
        goto fail;
    }
    for (size_t i = 0; i < nm; i++)
        if ((rc = collect_chars(ml[2 * i].s, ml[2 * i].n, &set, &ns, &cap)) ||
            (rc = collect_chars(ml[2 * i + 1].s, ml[2 * i + 1].n, &set, &ns, &cap)))
            goto fail;
    /* every character in both spellings, so that any word of known
     * characters can be encoded */
    size_t n0 = ns;
    for (size_t i = 0; i < n0; i++) {
        if (nlp_grow(&set, &cap, ns + 1, sizeof *set)) {
            rc = NLP_ENOMEM;
            goto fail;
        }
        set[ns++] = (struct cpt){set[i].cp, !set[i].eow};
    }
    qsort(set, ns, sizeof *set, cmp_cpt);
    if (!(s->vocab = nlp_vocab_new(ns + nm + 1)) || nlp_vocab_add(s->vocab, "<unk>", 5, NULL)) {
        rc = NLP_ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < ns; i++) {
        nlp_buf_reset(&b);
        if (nlp_utf8_append(&b, set[i].cp) || (set[i].eow && nlp_buf_puts(&b, EOW)) ||
            nlp_vocab_add(s->vocab, b.data, b.len, NULL)) {
            rc = NLP_ENOMEM;
            goto fail;
        }
    }
    s->merges = nlp_malloc(2 * nm * sizeof *s->merges);
    if (!s->merges) {
        rc = NLP_ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < nm; i++) {
        const nlp_span *x = &ml[2 * i], *y = &ml[2 * i + 1];
        int32_t a = nlp_vocab_find(s->vocab, x->s, x->n), c = nlp_vocab_find(s->vocab, y->s, y->n);
        if (a < 0 || c < 0) {
            const nlp_span *z = a < 0 ? x : y;
            rc = nlp_error(NLP_EFORMAT, "'%s' line %zu: '%.*s' is neither a character nor made by an earlier merge",
                           path, line_of(data, (size_t)(z->s - data)), (int)z->n, z->s);
            goto fail;
        }
        nlp_buf_reset(&b);
        if (nlp_buf_append(&b, x->s, x->n) || nlp_buf_append(&b, y->s, y->n) ||
            nlp_vocab_add(s->vocab, b.data, b.len, NULL)) {
            rc = NLP_ENOMEM;
            goto fail;
        }
        s->merges[2 * i] = a;
        s->merges[2 * i + 1] = c;
    }
    s->n_merges = nm;
    s->model = NLP_MODEL_BPE;
    if (!(s->bpe.unk_token = nlp_strdup("<unk>")) || classic_pipeline(s, EOW)) {
        rc = NLP_ENOMEM;
        goto fail;
    }
    free(ml);
    free(set);
    free(data);
    nlp_buf_free(&b);
    return NLP_OK;
fail:
    free(ml);
    free(set);
    free(data);
    nlp_buf_free(&b);
    nlp_tok_spec_free(s);
    return rc;
}

// --- BERT vocab.txt

/* Length of s[0..n) without its trailing White_Space characters (Rust's
 * trim_end, which HF's vocab reader applies to each line). */
static size_t trim_end(const char *s, size_t n)
{
    while (n > 0) {
        size_t b = n - 1;
        while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
        size_t j = b;
        int32_t cp = nlp_utf8_next(s, n, &j);
        if (cp < 0 || !nlp_uc_is_white_space(cp)) break;
        n = b;
    }
    return n;
}

/* BERT's pipeline around a WordPiece vocabulary. */
static int bert_pipeline(nlp_tok_spec *s, int cased)
{
    static const char *const specials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    s->model = NLP_MODEL_WORDPIECE;
    if (!(s->wp.unk_token = nlp_strdup(NLP_WORDPIECE_UNK)) ||
        !(s->wp.continuing_subword_prefix = nlp_strdup(NLP_WORDPIECE_PREFIX)))
        return NLP_ENOMEM;
    s->wp.max_input_chars_per_word = NLP_WORDPIECE_MAX_CHARS;
    if (nlp_tok_spec_pipeline(s, NLP_PIPE_BERT, NULL)) return NLP_ENOMEM;
    if (cased) nlp_tok_spec_bert_case(s, 0, -1);
    s->added = nlp_calloc(5, sizeof *s->added);
    if (!s->added) return NLP_ENOMEM;
    for (size_t i = 0; i < 5; i++) {
        int32_t id = nlp_vocab_find(s->vocab, specials[i], strlen(specials[i]));
        if (id < 0) continue;
        nlp_added_token *t = &s->added[s->n_added++];
        t->id = id;
        t->special = 1;
        if (!(t->content = nlp_strdup(specials[i]))) return NLP_ENOMEM;
    }
    return nlp_tok_spec_bert_post(s, "[CLS]", "[SEP]") < 0 ? NLP_ENOMEM : NLP_OK;
}

int nlp_tokfiles_read_vocab_txt(const char *path, int cased, nlp_tok_spec *s)
{
    memset(s, 0, sizeof *s);
    char *data = NULL;
    size_t n;
    int rc = read_text(path, &data, &n);
    if (rc) return rc;
    if (!(s->vocab = nlp_vocab_new(n / 8 + 16))) {
        rc = NLP_ENOMEM;
        goto fail;
    }
    size_t i = 0, line = 0;
    while (i < n) {
        const char *p = data + i, *nl = memchr(p, '\n', n - i);
        size_t len = nl ? (size_t)(nl - p) : n - i;
        i += len + 1;
        line++;
        if (memchr(p, '\0', len)) {
            rc = nlp_error(NLP_EFORMAT, "'%s' line %zu: a NUL byte: not a vocab.txt (one token per line)", path, line);
            goto fail;
        }
        len = trim_end(p, len);
        if (len == 0) {
            rc = nlp_error(NLP_EFORMAT, "'%s' line %zu: empty line: a vocab.txt has one token per line", path, line);
            goto fail;
        }
        if (memchr(p, '\r', len)) {
            rc = nlp_error(NLP_EFORMAT, "'%s' line %zu: a carriage return inside a line: a vocab.txt has one token "
                           "per line, and lines end with LF (or CR LF), not CR alone", path, line);
            goto fail;
        }
        if (line > (size_t)INT32_MAX - 2) {
            rc = nlp_error(NLP_EFORMAT, "'%s': too many lines for a vocabulary", path);
            goto fail;
        }
        if ((rc = nlp_vocab_set(s->vocab, (int32_t)(line - 1), p, len))) {
            if (rc == NLP_EFORMAT) nlp_error_prefix(rc, "'%s' line %zu", path, line);
            goto fail;
        }
    }
    if (line == 0) {
        rc = nlp_error(NLP_EFORMAT, "'%s' is empty: a vocab.txt has one token per line", path);
        goto fail;
    }
    if ((rc = bert_pipeline(s, cased))) goto fail;
    free(data);
    return NLP_OK;
fail:
    free(data);
    nlp_tok_spec_free(s);
    return rc;
}

// --- sentencepiece .model

int nlp_tokfiles_spm_spec(const void *data, size_t n, const char *name, nlp_tok_spec *s)
{
    memset(s, 0, sizeof *s);
    nlp_spm_info in;
    int rc = nlp_spm_parse(data, n, name, &in);
    if (rc) return rc;
    rc = NLP_ENOMEM;
    if (!(s->vocab = nlp_vocab_new(in.n)) || !(s->spm_data = nlp_malloc(n ? n : 1))) goto fail;
    memcpy(s->spm_data, data, n);
    s->spm_len = n;
    s->model = NLP_MODEL_SPM;
    for (size_t i = 0; i < in.n; i++) {
        /* a piece may be both a reserved one (control, unknown, byte) and a
         * normal one, as sentencepiece allows: the vocabulary keeps the
         * first, the model knows both */
        if ((rc = nlp_vocab_set(s->vocab, (int32_t)i, in.piece[i], in.len[i]))) {
            if (rc != NLP_EFORMAT) goto fail;
            nlp_error_clear(); /* the piece given twice: the first stays */
        }
    }
    nlp_spm_info_free(&in);
    return NLP_OK;
fail:
    nlp_spm_info_free(&in);
    nlp_tok_spec_free(s);
    return rc;
}

int nlp_tokfiles_read_spm(const char *path, nlp_tok_spec *s)
{
    memset(s, 0, sizeof *s);
    nlp_map m;
    int rc = nlp_map_file_max(&m, path, NLP_TOKFILE_MAX_BYTES);
    if (rc) return rc;
    rc = nlp_tokfiles_spm_spec(m.data, m.len, path, s);
    nlp_unmap(&m);
    return rc;
}

/* A file named *.model, or whose first bytes are a sentencepiece piece. */
static int looks_spm(const char *path)
{
    size_t n = strlen(path);
    if (n >= 6 && strcmp(path + n - 6, ".model") == 0) return 1;
    unsigned char h[4096];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t k = fread(h, 1, sizeof h, f);
    fclose(f);
    return nlp_spm_sniff(h, k);
}

static int named_vocab_txt(const char *path)
{
    const char *base = strrchr(path, '/');
    return strcmp(base ? base + 1 : path, "vocab.txt") == 0;
}

/* Is the text file at path a vocab.txt? By name, else by content: its first
 * line holds no space and is no "#version" line (every line of a merges
 * file or codes has one space). By the first line, so that a later odd
 * line is reported where it is, not as "line 1" of a merges file. */
static int looks_vocab_txt(const char *path)
{
    if (named_vocab_txt(path)) return 1;
    nlp_map m;
    if (nlp_map_file_max(&m, path, NLP_TOKFILE_MAX_BYTES)) return 0;
    const char *d = m.data, *nl = m.len ? memchr(d, '\n', m.len) : NULL;
    size_t n = nl ? (size_t)(nl - d) : m.len;
    int yes = n > 0 && !memchr(d, ' ', n) && !(n >= 8 && memcmp(d, "#version", 8) == 0);
    nlp_unmap(&m);
    return yes;
}

static int write_vocab_txt(const nlp_tok_spec *s, const char *path)
{
    if (s->model != NLP_MODEL_WORDPIECE)
        return nlp_error(NLP_EINVAL, "a vocab.txt holds a WordPiece vocabulary, not a BPE one");
    const nlp_wordpiece_opts *o = &s->wp;
    if ((o->unk_token && strcmp(o->unk_token, NLP_WORDPIECE_UNK) != 0) ||
        (o->continuing_subword_prefix && strcmp(o->continuing_subword_prefix, NLP_WORDPIECE_PREFIX) != 0) ||
        (o->max_input_chars_per_word && o->max_input_chars_per_word != NLP_WORDPIECE_MAX_CHARS))
        return nlp_error(NLP_EINVAL, "a vocab.txt assumes the unknown token %s, the prefix %s and words of at most %d "
                                     "characters; this tokenizer differs (write tokenizer.json)",
                         NLP_WORDPIECE_UNK, NLP_WORDPIECE_PREFIX, NLP_WORDPIECE_MAX_CHARS);
    for (size_t i = 0; i < s->n_added; i++) {
        const char *t = nlp_vocab_token(s->vocab, s->added[i].id, NULL);
        if (!t || strcmp(t, s->added[i].content) != 0)
            return nlp_error(NLP_EINVAL, "added token '%s' is not in the vocabulary: a vocab.txt cannot hold it",
                             s->added[i].content);
    }
    nlp_buf b = {0};
    size_t size = nlp_vocab_size(s->vocab);
    int rc = NLP_OK;
    for (size_t i = 0; i < size && !rc; i++) {
        size_t n;
        const char *t = nlp_vocab_token(s->vocab, (int32_t)i, &n);
        if (!t) rc = nlp_error(NLP_EINVAL, "id %zu has no token: a vocab.txt lists ids without gaps", i);
        else if (memchr(t, '\n', n) || memchr(t, '\r', n) || trim_end(t, n) != n || n == 0)
            rc = nlp_error(NLP_EINVAL, "token %zu ('%s') has a line break or ends in white space: a vocab.txt cannot "
                                       "hold it", i, t);
        else if (nlp_buf_append(&b, t, n) || nlp_buf_putc(&b, '\n'))
            rc = NLP_ENOMEM;
    }
    if (!rc) rc = nlp_write_file(path, b.data ? b.data : "", b.len);
    nlp_buf_free(&b);
    return rc;
}

/* dir/name into b. */
static const char *join(nlp_buf *b, const char *dir, const char *name)
{
    nlp_buf_reset(b);
    if (nlp_buf_printf(b, "%s/%s", dir, name)) return NULL;
    return b->data;
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The first non-white-space byte of a file after a UTF-8 byte-order mark,
 * or -1 (empty). */
static int first_byte(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    int c, k = 0;
    static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
    while ((c = fgetc(f)) != EOF && k < 3 && c == bom[k]) k++;
    if (k > 0 && k < 3) c = bom[0]; /* not a whole BOM: a byte that is no JSON */
    while (c != EOF && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) c = fgetc(f);
    fclose(f);
    return c == EOF ? -1 : c;
}

/* Does the name end with ".json"? */
static int named_json(const char *path)
{
    size_t n = strlen(path);
    return n >= 5 && strcmp(path + n - 5, ".json") == 0;
}

/* What a file that is no tokenizer is, by its first bytes, or NULL: token
 * streams and safetensors files get passed to -m by mistake. */
static const char *binary_kind(const char *path)
{
    unsigned char h[16] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    if (n >= 4 && nlp_tokbin_sniff(h))
        return "a token stream (what tokenize --output-format bin writes, or an llm.c shard)";
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--) len = len << 8 | h[i];
    if (n >= 10 && h[8] == '{' && h[9] == '"' && len > 2 && len < ((uint64_t)1 << 32)) return "a safetensors file (a model?)";
    if (n >= 4 && memcmp(h, "GGUF", 4) == 0) return "a GGUF file (a llama.cpp model?)";
    return NULL;
}

/* The message of a file read by elimination as vocab.txt or codes that
 * failed: which formats were tried, why the others did not fit, and what
 * the last one found. */
static int not_a_tokenizer(int rc, const char *path, int as_codes)
{
    if (rc != NLP_EFORMAT) return rc;
    return nlp_error_prefix(rc, "'%s' is not a tokenizer: tried tokenizer.json and JSON vocabularies (they start "
                                "with '{'), a merges file (no encoder.json or vocab.json beside it), %s, then %s",
                            path, as_codes ? "a BERT vocab.txt (some line holds a space)" :
                                             "subword-nmt codes (no line holds a space)",
                            as_codes ? "subword-nmt codes" : "a BERT vocab.txt");
}

static int read_dir(const char *dir, nlp_tokfiles_opts *o, nlp_tok_spec *s)
{
    nlp_buf a = {0}, b = {0};
    int rc;
    const char *p, *q;
    if ((p = join(&a, dir, "tokenizer.json")) && is_file(p)) rc = nlp_tokjson_read(p, s);
    else if ((p = join(&a, dir, "encoder.json")) && (q = join(&b, dir, "vocab.bpe")) && is_file(p) && is_file(q)) {
        rc = nlp_tokfiles_read_pair(p, q, 1, s);
        o->fmt = NLP_TOKF_GPT2;
    } else if ((p = join(&a, dir, "vocab.json")) && (q = join(&b, dir, "merges.txt")) && is_file(p) && is_file(q)) {
        rc = nlp_tokfiles_read_pair(p, q, 0, s);
        o->fmt = NLP_TOKF_HF;
    } else if ((p = join(&a, dir, "codes")) && is_file(p)) {
        rc = nlp_tokfiles_read_codes(p, s);
        o->fmt = NLP_TOKF_CODES;
    } else if ((p = join(&a, dir, "bpe.codes")) && is_file(p)) {
        rc = nlp_tokfiles_read_codes(p, s);
        o->fmt = NLP_TOKF_CODES;
    }
    else if ((p = join(&a, dir, "vocab.txt")) && is_file(p)) {
        rc = nlp_tokfiles_read_vocab_txt(p, o->cased, s);
        o->fmt = NLP_TOKF_VOCAB;
    } else if (((p = join(&a, dir, "tokenizer.model")) && is_file(p)) ||
               ((p = join(&a, dir, "spiece.model")) && is_file(p)) ||
               ((p = join(&a, dir, "sentencepiece.bpe.model")) && is_file(p))) {
        rc = nlp_tokfiles_read_spm(p, s);
        o->fmt = NLP_TOKF_SPM;
    } else
        rc = nlp_error(NLP_EFORMAT,
                       "'%s': no tokenizer in this directory (looked for tokenizer.json, encoder.json + vocab.bpe, "
                       "vocab.json + merges.txt, codes, bpe.codes, vocab.txt, tokenizer.model, spiece.model, "
                       "sentencepiece.bpe.model)",
                       dir);
    nlp_buf_free(&a);
    nlp_buf_free(&b);
    return rc;
}

int nlp_tokfiles_read(const char *path, nlp_tokfiles_opts *opts, nlp_tok_spec *s)
{
    nlp_tokfiles_opts dflt = {0};
    nlp_tokfiles_opts *o = opts ? opts : &dflt;
    o->fmt = NLP_TOKF_JSON;
    memset(s, 0, sizeof *s);
    if (nlp_is_dir(path)) return read_dir(path, o, s);
    if (!nlp_file_exists(path)) return nlp_error_errno(NLP_EIO, "cannot open '%s'", path);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* A pipe (-m <(...), /dev/stdin) can be read only once, and the
         * formats told apart by name or by sibling files cannot come that
         * way: it must be a whole tokenizer.json. */
        char *data;
        size_t n;
        int rc = nlp_read_file_max(path, NLP_TOKFILE_MAX_BYTES, &data, &n);
        if (rc) return rc;
        size_t i = n >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
        while (i < n && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) i++;
        if (i < n && data[i] == '{') rc = nlp_tokjson_parse(data, n, path, s);
        else
            rc = nlp_error(NLP_EFORMAT, "'%s' is not a regular file: from a pipe only a tokenizer.json can be read", path);
        free(data);
        return rc;
    }
    const char *kind = binary_kind(path);
    if (kind) return nlp_error(NLP_EFORMAT, "'%s' is %s, not a tokenizer", path, kind);
    if (looks_spm(path)) {
        o->fmt = NLP_TOKF_SPM;
        return nlp_tokfiles_read_spm(path, s);
    }
    char *copy = nlp_strdup(path);
    if (!copy) return NLP_ENOMEM;
    const char *dir = dirname(copy);
    nlp_buf a = {0};
    int rc;
    int c = first_byte(path);
    if (c < 0) {
        rc = nlp_error(NLP_EFORMAT, "'%s' is empty: not a tokenizer file", path);
        goto out;
    }
    if ((c == '{' || named_json(path)) && !named_vocab_txt(path)) {
        /* tokenizer.json, or the vocabulary of a pair (a vocab.txt whose
         * first token starts with a brace is known by its name only); JSON
         * that is no object (null, [], a number) is no tokenizer either */
        nlp_map m;
        if ((rc = nlp_map_file_max(&m, path, NLP_TOKFILE_MAX_BYTES))) goto out;
        size_t len = m.len;
        const char *text = skip_bom(m.data, &len);
        nlp_jscan_tok t;
        int r = nlp_jscan_tokenizer(text, len, &t);
        if (r < -1) {
            nlp_unmap(&m);
            rc = r;
            goto out;
        }
        int has_model = r == 1 && t.model[1], is_obj = r == 1;
        if (has_model || !is_obj) {
            rc = nlp_tokjson_parse_scanned(text, len, path, is_obj ? &t : NULL, s);
            nlp_unmap(&m);
            goto out;
        }
        nlp_unmap(&m);
        const char *q;
        if ((q = join(&a, dir, "vocab.bpe")) && is_file(q)) {
            rc = nlp_tokfiles_read_pair(path, q, 1, s);
            o->fmt = NLP_TOKF_GPT2;
        } else if ((q = join(&a, dir, "merges.txt")) && is_file(q)) {
            rc = nlp_tokfiles_read_pair(path, q, 0, s);
            o->fmt = NLP_TOKF_HF;
        } else {
            rc = nlp_error(NLP_EFORMAT, "'%s' is a vocabulary without merges: put vocab.bpe or merges.txt beside it",
                           path);
        }
        goto out;
    }
    const char *q;
    if (looks_vocab_txt(path)) {
        rc = nlp_tokfiles_read_vocab_txt(path, o->cased, s);
        o->fmt = NLP_TOKF_VOCAB;
        if (!named_vocab_txt(path)) rc = not_a_tokenizer(rc, path, 0);
    } else if ((q = join(&a, dir, "encoder.json")) && is_file(q)) {
        rc = nlp_tokfiles_read_pair(q, path, 1, s);
        o->fmt = NLP_TOKF_GPT2;
    } else if ((q = join(&a, dir, "vocab.json")) && is_file(q)) {
        rc = nlp_tokfiles_read_pair(q, path, 0, s);
        o->fmt = NLP_TOKF_HF;
    } else {
        rc = not_a_tokenizer(nlp_tokfiles_read_codes(path, s), path, 1);
        o->fmt = NLP_TOKF_CODES;
    }
out:
    nlp_buf_free(&a);
    free(copy);
    return rc;
}

int nlp_tokfiles_load(const char *path, nlp_tokfiles_opts *opts, nlp_tokenizer **tk)
{
    nlp_tok_spec s;
    int rc = nlp_tokfiles_read(path, opts, &s);
    if (rc) return rc;
    rc = nlp_tokenizer_new(tk, &s);
    if (rc) {
        nlp_tok_spec_free(&s);
        static const char *const how[] = {"", " (read as GPT-2's encoder.json + vocab.bpe)",
                                          " (read as vocab.json + merges.txt)", " (read as subword-nmt codes)",
                                          " (read as a BERT vocab.txt)", " (read as a sentencepiece model)"};
        nlp_tok_format f = opts ? opts->fmt : NLP_TOKF_JSON;
        if (rc == NLP_EFORMAT) nlp_error_prefix(rc, "'%s'%s", path, how[f]);
    }
    return rc;
}

// --- writers

static int check_mergeable(const nlp_tok_spec *s)
{
    for (size_t i = 0; i < 2 * s->n_merges; i++) {
        size_t n;
        const char *t = nlp_vocab_token(s->vocab, s->merges[i], &n);
        if (t && (memchr(t, ' ', n) || memchr(t, '\n', n) || memchr(t, '\r', n)))
            return nlp_error(NLP_EINVAL, "token '%s' has a space or newline: a merges file cannot hold it", t);
    }
    return NLP_OK;
}

static int merges_text(const nlp_tok_spec *s, nlp_buf *b)
{
    if (nlp_buf_puts(b, "#version: 0.2\n")) return NLP_ENOMEM;
    for (size_t i = 0; i < s->n_merges; i++) {
        size_t na, nb;
        const char *ta = nlp_vocab_token(s->vocab, s->merges[2 * i], &na);
        const char *tb = nlp_vocab_token(s->vocab, s->merges[2 * i + 1], &nb);
        if (nlp_buf_append(b, ta, na) || nlp_buf_putc(b, ' ') || nlp_buf_append(b, tb, nb) || nlp_buf_putc(b, '\n'))
            return NLP_ENOMEM;
    }
    return NLP_OK;
}

static int dump_cb(const char *buf, size_t size, void *data) { return nlp_buf_append(data, buf, size) ? -1 : 0; }

/* The vocabulary (and, for GPT-2, the added tokens) as a JSON object. */
static int vocab_text(const nlp_tok_spec *s, int gpt2, nlp_buf *b)
{
    int rc = nlp_tokjson_check_keys(s->vocab);
    if (rc) return rc;
    json_t *o = json_object();
    int oom = !o;
    size_t size = nlp_vocab_size(s->vocab);
    for (size_t i = 0; i < size && !oom; i++) {
        const char *t = nlp_vocab_token(s->vocab, (int32_t)i, NULL);
        if (t && json_object_set_new(o, t, json_integer((json_int_t)i))) oom = 1;
    }
    for (size_t i = 0; gpt2 && i < s->n_added && !oom; i++)
        if (!json_object_get(o, s->added[i].content) &&
            json_object_set_new(o, s->added[i].content, json_integer(s->added[i].id)))
            oom = 1;
    size_t flags = JSON_PRESERVE_ORDER | (gpt2 ? JSON_ENSURE_ASCII : JSON_COMPACT);
    if (!oom && json_dump_callback(o, dump_cb, b, flags)) oom = 1;
    json_decref(o);
    return oom ? nlp_error(NLP_ENOMEM, "out of memory (writing a vocabulary)") : NLP_OK;
}

static int make_dir(const char *path)
{
    if (nlp_is_dir(path)) return NLP_OK;
    if (mkdir(path, 0777) != 0 && errno != EEXIST) return nlp_error_errno(NLP_EIO, "cannot create directory '%s'", path);
    return NLP_OK;
}

int nlp_tokfiles_write(const nlp_tok_spec *s, nlp_tok_format fmt, const char *path)
{
    if (fmt == NLP_TOKF_JSON) return nlp_tokjson_write(s, path);
    if (fmt == NLP_TOKF_VOCAB) return write_vocab_txt(s, path);
    if (fmt == NLP_TOKF_SPM) {
        if (s->model != NLP_MODEL_SPM)
            return nlp_error(NLP_EINVAL, "a sentencepiece .model holds a sentencepiece model only");
        return nlp_write_file(path, (const char *)s->spm_data, s->spm_len);
    }
    if (s->model == NLP_MODEL_SPM || s->model == NLP_MODEL_UNIGRAM)
        return nlp_error(NLP_EINVAL, "this format holds BPE merges; a %s model is written as tokenizer.json%s",
                         s->model == NLP_MODEL_SPM ? "sentencepiece" : "Unigram",
                         s->model == NLP_MODEL_SPM ? " or its .model" : "");
    if (s->model != NLP_MODEL_BPE) return nlp_error(NLP_EINVAL, "this format holds BPE merges: write tokenizer.json");
    int rc = check_mergeable(s);
    if (rc) return rc;
    int bl = nlp_pretok_is_byte_level(s->pretok, s->n_pretok);
    if (fmt == NLP_TOKF_GPT2 && !bl)
        return nlp_error(NLP_EINVAL, "the gpt2 format (encoder.json + vocab.bpe) holds byte-level BPE only");
    if (fmt == NLP_TOKF_CODES &&
        (bl || !s->bpe.end_of_word_suffix || strcmp(s->bpe.end_of_word_suffix, EOW) != 0 ||
         s->bpe.continuing_subword_prefix))
        return nlp_error(NLP_EINVAL, "subword-nmt codes hold classic BPE with end-of-word suffix %s only", EOW);
    nlp_buf m = {0}, v = {0}, p = {0};
    if ((rc = merges_text(s, &m))) goto out;
    if (fmt == NLP_TOKF_CODES) {
        rc = nlp_write_file(path, m.data, m.len);
        goto out;
    }
    if ((rc = vocab_text(s, fmt == NLP_TOKF_GPT2, &v)) || (rc = make_dir(path))) goto out;
    /* the two files are one tokenizer: both are written to temporaries and
     * renamed only when both are complete, so that a failure (a full disk)
     * leaves the old pair whole, never a new vocabulary with old merges */
    const char *names[2] = {fmt == NLP_TOKF_GPT2 ? "encoder.json" : "vocab.json",
                            fmt == NLP_TOKF_GPT2 ? "vocab.bpe" : "merges.txt"};
    const nlp_buf *text[2] = {&v, &m};
    nlp_writer *w[2] = {NULL, NULL};
    for (int i = 0; i < 2 && !rc; i++) {
        if (!join(&p, path, names[i])) rc = NLP_ENOMEM;
        else if (!(rc = nlp_writer_open(&w[i], p.data, 0))) rc = nlp_writer_write(w[i], text[i]->data, text[i]->len);
    }
    if (rc) {
        for (int i = 0; i < 2; i++) nlp_writer_abort(w[i]);
        goto out;
    }
    rc = nlp_writer_close_set(w, 2);
out:
    nlp_buf_free(&m);
    nlp_buf_free(&v);
    nlp_buf_free(&p);
    return rc;
}
