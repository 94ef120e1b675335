/* tools/fuzz/fz_json.c — libFuzzer target: tokenizer.json text through the
 * reader, the writer (read-write-read gives the same bytes), the compiler,
 * encoding (single, pair, truncation, padding) and decoding of every id.
 * Build and run: tools/fuzz/run. */
#include "tok/tokjson.h"
#include "tok/tokenizer.h"
#include "text/utf8.h"
#include "base/err.h"
#include <stdlib.h>
#include <string.h>
#include <assert.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    nlp_tok_spec s;
    if (nlp_tokjson_parse((const char *)d, n, "fz", &s)) return 0;
    /* round trip through the writer */
    nlp_buf js = {0};
    if (nlp_tokjson_dump(&s, &js) == 0) {
        nlp_tok_spec s2;
        if (nlp_tokjson_parse(js.data, js.len, "fz2", &s2) == 0) {
            nlp_buf js2 = {0};
            assert(nlp_tokjson_dump(&s2, &js2) == 0);
            assert(js2.len == js.len && memcmp(js.data, js2.data, js.len) == 0);
            nlp_buf_free(&js2);
            nlp_tok_spec_free(&s2);
        }
    }
    nlp_buf_free(&js);
    nlp_tokenizer *tk;
    if (nlp_tokenizer_new(&tk, &s)) {
        nlp_tok_spec_free(&s);
        return 0;
    }
    nlp_tok_state *st = nlp_tok_state_new(tk);
    static const char *texts[] = {"", " ", "hello world", "  hug  pug\tpun\n", "abc\xff\xfe def", "[CLS] x [SEP]",
                                  "<|endoftext|>a", "\xe6\x9d\xb1\xe4\xba\xac caf\xc3\xa9", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    nlp_encoding e = {0};
    nlp_buf out = {0};
    nlp_truncation tr = {.enabled = 1, .max_length = 5, .strategy = NLP_TRUNC_LONGEST_FIRST};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        for (int k = 0; k < 4; k++) {
            nlp_encode_opts o = {.add_special = k & 1, .split_special = (k >> 1) & 1, .trunc = (k == 3) ? &tr : NULL};
            const char *b = i ? texts[i - 1] : NULL;
            int rc = nlp_tokenizer_encode(tk, st, texts[i], strlen(texts[i]), b, b ? strlen(b) : 0, &o, &e);
            if (rc) continue;
            nlp_encoding_pad(&e, e.n + 3, 0, 0, k & 1);
            nlp_buf_reset(&out);
            nlp_tokenizer_decode(tk, e.ids, e.n, k & 1, &out, NULL);
        }
    }
    /* the fuzz input itself as text */
    nlp_ids ids = {0};
    nlp_tokenizer_encode_ids(tk, st, (const char *)d, n > 300 ? 300 : n, 0, &ids);
    nlp_buf_reset(&out);
    nlp_tokenizer_decode(tk, ids.v, ids.n, 0, &out, NULL);
    /* every id and a few beyond */
    size_t vs = nlp_tokenizer_vocab_size(tk);
    int32_t all[64];
    size_t na = 0;
    for (size_t i = 0; i < vs && na < 60; i++) all[na++] = (int32_t)i;
    nlp_buf_reset(&out);
    nlp_tokenizer_decode(tk, all, na, 0, &out, NULL);
    int32_t bad[3] = {-1, (int32_t)vs, INT32_MAX};
    for (int i = 0; i < 3; i++) nlp_tokenizer_decode(tk, bad + i, 1, 0, &out, NULL);
    nlp_ids_free(&ids);
    nlp_buf_free(&out);
    nlp_encoding_free(&e);
    nlp_tok_state_free(st);
    nlp_tokenizer_free(tk);
    return 0;
}
