/* tools/fuzz/fz_spm.c — libFuzzer target: a sentencepiece .model (the
 * protobuf reader, the checks, the character map, the trie) through the
 * tokenizer: encoding of fixed texts and of the input itself (ids and
 * passed-through pieces: the same ids outside the unknown runs), decoding
 * of every id, HF's view of it (tokenizer.json) encoding the same texts,
 * and the tokenizer.json that embeds the model reading back as the same
 * tokenizer (same ids). Build and run: tools/fuzz/run spm. */
#include "base/err.h"
#include "tok/spm.h"
#include "tok/tokenizer.h"
#include "tok/tokfiles.h"
#include "tok/tokjson.h"
#include <assert.h>
#include <stdlib.h>
#include <string.h>

static const char *texts[] = {"", " ", "hello world", "  hug  pug\tpun\n", "abc\xff\xfe def", "<s> x </s> <unk>",
                              "\xe6\x9d\xb1\xe4\xba\xac caf\xc3\xa9 e\xcc\x81", "\xe2\x96\x81\xe2\x96\x81 a",
                              "ABC 123 \xef\xbc\xa1 \xc2\xad", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};

static void encode_all(const nlp_tokenizer *tk, const char *extra, size_t nextra, nlp_ids *out)
{
    nlp_tok_state *st = nlp_tok_state_new(tk);
    out->n = 0;
    for (size_t i = 0; i <= sizeof texts / sizeof *texts; i++) {
        const char *t = i < sizeof texts / sizeof *texts ? texts[i] : extra;
        size_t n = i < sizeof texts / sizeof *texts ? strlen(t) : nextra;
        if (nlp_tokenizer_encode_ids(tk, st, t, n, 0, out)) break;
        nlp_ids_push(out, -1); /* a separator */
    }
    nlp_tok_state_free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    nlp_tok_spec s, copy;
    if (nlp_tokfiles_spm_spec(d, n, "fz.model", &s)) return 0;
    int have_copy = nlp_tok_spec_copy(&copy, &s) == 0;
    nlp_tokenizer *tk;
    if (nlp_tokenizer_new(&tk, &s)) {
        nlp_tok_spec_free(&s);
        if (have_copy) nlp_tok_spec_free(&copy);
        return 0;
    }
    size_t nt = n > 200 ? 200 : n;
    nlp_ids a = {0}, b = {0};
    encode_all(tk, (const char *)d, nt, &a);
    /* passed through: the same ids, unknown runs aside */
    nlp_tok_state *st = nlp_tok_state_new(tk);
    nlp_encoding e = {0};
    nlp_encode_opts o = {.unk_passthrough = 1};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) nlp_tokenizer_encode(tk, st, texts[i], strlen(texts[i]), NULL, 0, &o, &e);
    nlp_encoding_free(&e);
    nlp_tok_state_free(st);
    /* decoding: the ids found, every id (up to 300) and out-of-range ones */
    nlp_buf out = {0};
    size_t vs = nlp_tokenizer_vocab_size(tk);
    for (size_t i = 0, k = 0; i <= a.n; i++)
        if (i == a.n || a.v[i] < 0) {
            nlp_buf_reset(&out);
            nlp_tokenizer_decode(tk, a.v + k, i - k, (int)(i & 1), &out, NULL);
            k = i + 1;
        }
    int32_t all[300];
    size_t na = 0;
    for (size_t i = 0; i < vs && na < 300; i++) all[na++] = (int32_t)i;
    nlp_buf_reset(&out);
    nlp_tokenizer_decode(tk, all, na, 0, &out, NULL);
    int32_t bad[3] = {-1, (int32_t)vs, INT32_MAX};
    for (int i = 0; i < 3; i++) nlp_tokenizer_decode(tk, bad + i, 1, 0, &out, NULL);
    /* tokenizer.json with the model embedded reads back as the same tokenizer */
    nlp_buf js = {0};
    if (nlp_tokjson_dump(nlp_tokenizer_spec(tk), &js) == 0) {
        nlp_tok_spec s2;
        nlp_tokenizer *t2;
        assert(nlp_tokjson_parse(js.data, js.len, "fz.json", &s2) == 0);
        assert(nlp_tokenizer_new(&t2, &s2) == 0);
        encode_all(t2, (const char *)d, nt, &b);
        assert(a.n == b.n && (a.n == 0 || memcmp(a.v, b.v, a.n * sizeof *a.v) == 0));
        nlp_tokenizer_free(t2);
    }
    /* HF's view: loads (or is refused) and encodes without faults */
    nlp_buf_reset(&js);
    if (have_copy && nlp_tokjson_dump_as(&copy, 1, &js) == 0) {
        nlp_tok_spec s3;
        if (nlp_tokjson_parse(js.data, js.len, "fz.hf.json", &s3) == 0) {
            nlp_tokenizer *t3;
            if (nlp_tokenizer_new(&t3, &s3) == 0) {
                encode_all(t3, (const char *)d, nt, &b);
                nlp_buf_reset(&out);
                nlp_tokenizer_decode(t3, all, na, 0, &out, NULL);
                nlp_tokenizer_free(t3);
            } else {
                nlp_tok_spec_free(&s3);
            }
        }
    }
    if (have_copy) nlp_tok_spec_free(&copy);
    nlp_buf_free(&js);
    nlp_buf_free(&out);
    nlp_ids_free(&a);
    nlp_ids_free(&b);
    nlp_tokenizer_free(tk);
    return 0;
}
