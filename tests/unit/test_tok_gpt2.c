/*
 * test_tok_gpt2.c — GPT-2 encoding against the reference vectors
 * (shared/vectors/tokenize/gpt2.jsonl: exact input bytes as hex, ids and
 * tokens from HF tokenizers, tiktoken, js-tiktoken and gpt-3-encoder, which
 * all agree), and decode(encode(x)) == x for every well-formed row.
 */
#include "test.h"

#include "base/err.h"
#include "tok/tokfiles.h"
#include "tok/tokjson.h"
#include "text/utf8.h"

#include <jansson.h>

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

/* The rows through GPT-2 read from encoder.json + vocab.bpe (as_json = 0), or
 * through a tokenizer.json written from them and read back (as_json = 1). */
static void check_vectors(int as_json)
{
    const char *sh = test_root("vectors/tokenize/gpt2.jsonl");
    if (!sh) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/vectors/tokenize/gpt2/", sh);
    nlp_tokenizer *tk;
    int rc;
    if (as_json) {
        nlp_tok_spec s;
        CHECK(nlp_tokfiles_read(path, NULL, &s) == 0);
        snprintf(path, sizeof path, "%s/gpt2.json", test_tmpdir());
        CHECK(nlp_tokjson_write(&s, path) == 0);
        nlp_tok_spec_free(&s);
    }
    rc = nlp_tokfiles_load(path, NULL, &tk);
    CHECK_MSG(rc == 0, "load: %s", nlp_errmsg());
    if (rc) return;
    CHECK_EQ_INT(nlp_tokenizer_vocab_size(tk), 50257);
    CHECK(nlp_tokenizer_is_special(tk, 50256));
    nlp_tok_state *st = nlp_tok_state_new(tk);
    snprintf(path, sizeof path, "%s/vectors/tokenize/gpt2.jsonl", sh);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) return;
    char line[1 << 16];
    int rows = 0, ok_ids = 0, ok_toks = 0, ok_rt = 0, valid = 0, repaired_rows = 0;
    nlp_buf text = {0}, fixed = {0}, back = {0};
    nlp_ids ids = {0};
    while (fgets(line, sizeof line, f)) {
        json_error_t err;
        json_t *o = json_loads(line, 0, &err);
        if (!o) continue;
        rows++;
        const char *hex = json_string_value(json_object_get(o, "hex"));
        nlp_buf_reset(&text);
        for (size_t i = 0; hex[i] && hex[i + 1]; i += 2) nlp_buf_putc(&text, hexval(hex[i]) * 16 + hexval(hex[i + 1]));
        nlp_buf_reset(&fixed);
        size_t repl = 0;
        nlp_utf8_repair(text.data ? text.data : "", text.len, &fixed, &repl);
        repaired_rows += repl > 0;
        ids.n = 0;
        rc = nlp_tokenizer_encode_ids(tk, st, fixed.data ? fixed.data : "", fixed.len, 0, &ids);
        json_t *want = json_object_get(o, "ids"), *toks = json_object_get(o, "tokens");
        int same = rc == 0 && ids.n == json_array_size(want), same_t = same;
        for (size_t i = 0; same && i < ids.n; i++) {
            same = ids.v[i] == json_integer_value(json_array_get(want, i));
            size_t n;
            const char *t = nlp_tokenizer_id_to_token(tk, ids.v[i], &n);
            const char *w = json_string_value(json_array_get(toks, i));
            same_t = same_t && t && w && strlen(w) == n && memcmp(t, w, n) == 0;
        }
        ok_ids += same;
        ok_toks += same_t;
        if (!same) {
            printf("    row %d differs: hex %s got", rows, hex);
            for (size_t i = 0; i < ids.n && i < 20; i++) printf(" %d", ids.v[i]);
            printf("\n");
        }
        if (repl == 0) {
            valid++;
            nlp_buf_reset(&back);
            rc = nlp_tokenizer_decode(tk, ids.v, ids.n, 0, &back, NULL);
            int rt = rc == 0 && back.len == text.len && (text.len == 0 || memcmp(back.data, text.data, text.len) == 0);
            ok_rt += rt;
            if (!rt) printf("    row %d does not round-trip\n", rows);
        }
        json_decref(o);
    }
    fclose(f);
    CHECK_EQ_INT(rows, 275);
    CHECK_EQ_INT(ok_ids, rows);
    CHECK_EQ_INT(ok_toks, rows);
    CHECK_EQ_INT(ok_rt, valid);
    CHECK(repaired_rows >= 14);
    nlp_buf_free(&text);
    nlp_buf_free(&fixed);
    nlp_buf_free(&back);
    nlp_ids_free(&ids);
    nlp_tok_state_free(st);
    nlp_tokenizer_free(tk);
}

static void test_gpt2_vectors(void) { check_vectors(0); }
static void test_gpt2_as_tokenizer_json(void) { check_vectors(1); }

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_gpt2_vectors);
    RUN(test_gpt2_as_tokenizer_json);
    return TEST_END();
}
