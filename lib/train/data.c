/*
 * data.c — token corpora and their windows. See data.h.
 */
#include "train/data.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "text/utf8.h"
#include "tok/tokbin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int push(nlp_corpus *c, const int32_t *ids, size_t n)
{
    if (nlp_grow(&c->ids, &c->cap, c->n + n + 1, sizeof *c->ids)) return NLP_ENOMEM;
    if (n) memcpy(c->ids + c->n, ids, n * sizeof *ids); /* an empty document has no ids (NULL) */
    c->n += n;
    for (size_t i = 0; i < n; i++)
        if ((uint32_t)ids[i] + 1 > c->max_id) c->max_id = (uint32_t)ids[i] + 1;
    return 0;
}

/* A new document: the separator first unless the corpus is empty. */
static int begin_doc(nlp_corpus *c)
{
    c->docs++;
    if (c->n == 0 || c->eot < 0) return 0;
    return push(c, &c->eot, 1);
}

static int add_stream(nlp_corpus *c, nlp_reader *r, const char *path, uint32_t vocab)
{
    nlp_tokbin_reader *br = NULL;
    nlp_ids doc = {0};
    int rc;
    if ((rc = nlp_tokbin_reader_new(&br, r, c->eot))) goto out;
    const nlp_tokbin_info *in = nlp_tokbin_reader_info(br);
    if (in->eot >= 0) {
        if (c->eot >= 0 && c->n && in->eot != c->eot) {
            rc = nlp_error(NLP_EDATA, "'%s': its end-of-text id is %lld, the earlier inputs' %d: were they made "
                           "with another tokenizer?", path, (long long)in->eot, c->eot);
            goto out;
        }
        c->eot = (int32_t)in->eot;
    }
    if (in->vocab_size > c->vocab) c->vocab = in->vocab_size;
    if (vocab && in->vocab_size > vocab) {
        rc = nlp_error(NLP_EDATA, "'%s': a stream of a %u-token vocabulary, but the model has %u tokens: was it "
                       "made with another tokenizer?", path, in->vocab_size, vocab);
        goto out;
    }
    uint64_t seen = 0;
    while ((rc = nlp_tokbin_next_doc(br, &doc)) == 1) {
        for (size_t i = 0; i < doc.n; i++)
            if (vocab && (uint32_t)doc.v[i] >= vocab) {
                rc = nlp_error(NLP_EDATA, "'%s': token %llu is id %u, not below the model's vocabulary size %u",
                               path, (unsigned long long)(seen + i), (uint32_t)doc.v[i], vocab);
                goto out;
            }
        seen += doc.n + 1;
        if ((rc = begin_doc(c)) || (rc = push(c, doc.v, doc.n))) goto out;
    }
out:
    nlp_ids_free(&doc);
    nlp_tokbin_reader_free(br);
    return rc < 0 ? rc : 0;
}

int nlp_corpus_add_stream(nlp_corpus *c, const char *path, uint32_t vocab)
{
    nlp_reader *r = NULL;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    rc = add_stream(c, r, path, vocab);
    nlp_reader_close(r);
    return rc;
}

/* Tokenizes text[len] (consumed: freed here). */
static int add_text(nlp_corpus *c, char *text, size_t len, const char *path, const nlp_tokenizer *tk, int32_t eot,
                    int threads)
{
    int rc = 0;
    c->eot = eot;
    c->bytes += len;
    /* line starts */
    size_t nl = 0, cap = 0;
    size_t *start = NULL;
    for (size_t i = 0; i < len;) {
        if (nlp_grow(&start, &cap, nl + 2, sizeof *start)) {
            free(text);
            return NLP_ENOMEM;
        }
        start[nl++] = i;
        const char *e = memchr(text + i, '\n', len - i);
        i = e ? (size_t)(e - text) + 1 : len;
    }
    if (!start && !(start = malloc(sizeof *start))) {
        free(text);
        return NLP_ENOMEM;
    }
    start[nl] = len;

    if (threads <= 0) threads = nlp_cpu_count();
    size_t nchunk = (size_t)threads * 8;
    if (nchunk > nl) nchunk = nl ? nl : 1;
    nlp_ids *out = nlp_calloc(nchunk, sizeof *out);
    uint64_t *docs = nlp_calloc(nchunk, sizeof *docs), *fixed = nlp_calloc(nchunk, sizeof *fixed);
    int *err = nlp_calloc(nchunk, sizeof *err);
    char **msg = nlp_calloc(nchunk, sizeof *msg); /* the tokenizer's message (per thread) */
    size_t *bad = nlp_calloc(nchunk, sizeof *bad);  /* and the 0-based line it is about */
    if (!out || !docs || !fixed || !err || !msg || !bad) {
        rc = NLP_ENOMEM;
        goto done;
    }
#pragma omp parallel num_threads(threads)
    {
        nlp_tok_state *st = nlp_tok_state_new(tk);
        nlp_buf fix = {0};
#pragma omp for schedule(dynamic, 1)
        for (size_t k = 0; k < nchunk; k++) {
            if (!st) {
                err[k] = NLP_ENOMEM;
                continue;
            }
            size_t a = nl * k / nchunk, b = nl * (k + 1) / nchunk;
            for (size_t l = a; l < b && !err[k]; l++) {
                const char *s = text + start[l];
                size_t n = start[l + 1] - start[l];
                if (n && s[n - 1] == '\n') n--;
                if (n && s[n - 1] == '\r') n--;
                if (!n) continue;
                if (!nlp_utf8_valid(s, n, NULL)) {
                    nlp_buf_reset(&fix);
                    if (nlp_utf8_repair(s, n, &fix, NULL)) {
                        err[k] = NLP_ENOMEM;
                        break;
                    }
                    s = fix.data, n = fix.len;
                    fixed[k]++;
                }
                if (docs[k]++ && eot >= 0 && nlp_ids_push(&out[k], eot)) err[k] = NLP_ENOMEM;
                int r = nlp_tokenizer_encode_ids(tk, st, s, n, 0, &out[k]);
                if (r) {
                    err[k] = r, bad[k] = l;
                    msg[k] = nlp_strdup(nlp_errmsg());
                }
            }
        }
        nlp_buf_free(&fix);
        nlp_tok_state_free(st);
    }
    for (size_t k = 0; k < nchunk; k++) {
        if (err[k]) {
            rc = msg[k] ? nlp_error(err[k], "'%s' line %zu: %s", path, bad[k] + 1, msg[k]) : err[k];
            goto done;
        }
        if (!docs[k]) continue;
        if ((rc = begin_doc(c)) || (rc = push(c, out[k].v, out[k].n))) goto done;
        c->docs += docs[k] - 1;
        c->repaired += fixed[k];
    }
done:
    for (size_t k = 0; out && k < nchunk; k++) nlp_ids_free(&out[k]);
    for (size_t k = 0; msg && k < nchunk; k++) free(msg[k]);
    free(out), free(docs), free(fixed), free(err), free(msg), free(bad), free(start), free(text);
    return rc;
}

int nlp_corpus_add_text(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, int threads)
{
    char *text = NULL;
    size_t len = 0;
    int rc = nlp_read_file_lines(path, c->max_line, &text, &len);
    if (rc) return rc;
    return add_text(c, text, len, path, tk, eot, threads);
}

int nlp_corpus_add(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, uint32_t vocab, int threads)
{
    nlp_reader *r = NULL;
    const char *p;
    size_t got;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    if ((rc = nlp_reader_peek(r, 4, &p, &got))) goto out;
    if (got == 4 && nlp_tokbin_sniff((const unsigned char *)p)) {
        rc = add_stream(c, r, path, vocab);
        goto out;
    }
    if (!tk) {
        rc = nlp_error(NLP_EDATA, "'%s' is not a token stream (%s): give a tokenizer for text input", path,
                       got ? "no NLTK or llm.c header" : "it is empty");
        goto out;
    }
    size_t len;
    char *text;
    if ((rc = nlp_reader_read_lines(r, c->max_line, &text, &len))) goto out;
    rc = add_text(c, text, len, path, tk, eot, threads);
out:
    nlp_reader_close(r);
    return rc;
}

int nlp_corpus_count_bytes(nlp_corpus *c, const nlp_tokenizer *tk)
{
    nlp_buf b = {0};
    uint64_t bytes = 0;
    size_t i = 0;
    while (i < c->n) {
        size_t j = i;
        while (j < c->n && c->ids[j] != c->eot) j++;
        nlp_buf_reset(&b);
        int rc = nlp_tokenizer_decode(tk, c->ids + i, j - i, 1, &b, NULL);
        if (rc) {
            nlp_buf_free(&b);
            return rc;
        }
        bytes += b.len + 1;
        i = j + 1;
    }
    nlp_buf_free(&b);
    c->bytes += bytes;
    return 0;
}

void nlp_corpus_free(nlp_corpus *c)
{
    free(c->ids);
    memset(c, 0, sizeof *c);
    c->eot = -1;
}

void nlp_corpus_windows(const nlp_corpus *c, nlp_rng *r, int B, int T, int32_t *ids)
{
    NLP_ASSERT((size_t)T <= c->n);
    for (int b = 0; b < B; b++) {
        size_t s = (size_t)nlp_rng_below(r, c->n - (size_t)T + 1);
        memcpy(ids + (size_t)b * T, c->ids + s, (size_t)T * sizeof *ids);
    }
}

size_t nlp_corpus_eval_windows(const nlp_corpus *c, int T)
{
    if (c->n < 2 || T < 2) return 0;
    return (c->n - 1 + (size_t)T - 2) / (size_t)(T - 1);
}

const int32_t *nlp_corpus_eval_window(const nlp_corpus *c, int T, size_t k, int *len)
{
    size_t s = k * (size_t)(T - 1), n = c->n - s;
    *len = n < (size_t)T ? (int)n : T;
    return c->ids + s;
}
