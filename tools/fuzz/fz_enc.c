/* tools/fuzz/fz_enc.c — libFuzzer target: GPT-2 and bert-base-uncased from
 * $SHARED/vectors/tokenize on arbitrary bytes; byte-level decode(encode(x))
 * must give x back, a fresh state the same ids as a warm cache, and the
 * (repaired) text encoded in pieces cut where nlp_tokenizer_cut says (as
 * tokenize does with long lines) the same ids as whole.
 * Build and run: tools/fuzz/run. */
#include "tok/tokfiles.h"
#include "tok/tokenizer.h"
#include "text/utf8.h"
#include "base/err.h"
#include <stdlib.h>
#include <string.h>
#include <assert.h>
#include <stdio.h>

static nlp_tokenizer *g2, *bert;
static nlp_tok_state *sg, *sb;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *sh = getenv("SHARED") ? getenv("SHARED") : "../shared";
    char p[4096];
    snprintf(p, sizeof p, "%s/vectors/tokenize/gpt2", sh);
    if (nlp_tokfiles_load(p, NULL, &g2)) { fprintf(stderr, "%s\n", nlp_errmsg()); abort(); }
    snprintf(p, sizeof p, "%s/vectors/tokenize/bert-base-uncased-vocab.txt", sh);
    if (nlp_tokfiles_load(p, NULL, &bert)) { fprintf(stderr, "%s\n", nlp_errmsg()); abort(); }
    sg = nlp_tok_state_new(g2);
    sb = nlp_tok_state_new(bert);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    nlp_ids a = {0}, b = {0};
    nlp_buf out = {0}, fix = {0};
    /* raw bytes (may be ill-formed): must not crash; byte-level round trip is exact */
    int rc = nlp_tokenizer_encode_ids(g2, sg, (const char *)d, n, 1, &a);
    assert(rc == 0);
    rc = nlp_tokenizer_decode(g2, a.v, a.n, 0, &out, NULL);
    assert(rc == 0);
    assert(out.len == n && (n == 0 || memcmp(out.data, d, n) == 0));
    /* fresh state gives the same ids */
    nlp_tok_state *fresh = nlp_tok_state_new(g2);
    rc = nlp_tokenizer_encode_ids(g2, fresh, (const char *)d, n, 1, &b);
    assert(rc == 0 && b.n == a.n && (a.n == 0 || memcmp(a.v, b.v, a.n * 4) == 0));
    nlp_tok_state_free(fresh);
    /* BERT on repaired text */
    nlp_utf8_repair((const char *)d, n, &fix, NULL);
    /* both tokenizers: the repaired text in pieces of sizes taken from the
     * input, each up to its last cut place, equals the whole */
    const char *ft = fix.data ? fix.data : "";
    for (int k = 0; k < 2; k++) {
        nlp_tokenizer *tk = k ? bert : g2;
        nlp_tok_state *st = k ? sb : sg;
        assert(nlp_tokenizer_cuttable(tk));
        nlp_ids whole = {0}, cut = {0};
        assert(nlp_tokenizer_encode_ids(tk, st, ft, fix.len, 0, &whole) == 0);
        size_t start = 0, end = 0, step = 0;
        while (start < fix.len) {
            end += 1 + (n ? d[step++ % n] % 32 : 7);
            if (end >= fix.len) end = fix.len;
            size_t c = end < fix.len ? nlp_tokenizer_cut(ft + start, end - start) : end - start;
            if (c == 0) continue;
            assert(nlp_tokenizer_encode_ids(tk, st, ft + start, c, 0, &cut) == 0);
            start += c;
        }
        assert(whole.n == cut.n && (whole.n == 0 || memcmp(whole.v, cut.v, whole.n * 4) == 0));
        nlp_ids_free(&whole);
        nlp_ids_free(&cut);
    }
    a.n = 0;
    nlp_encoding e = {0};
    rc = nlp_tokenizer_encode(bert, sb, fix.data ? fix.data : "", fix.len, (const char *)d, n / 2, NULL, &e);
    (void)rc;
    nlp_buf_reset(&out);
    nlp_tokenizer_decode(bert, e.ids, e.n, 1, &out, NULL);
    nlp_encoding_free(&e);
    nlp_ids_free(&a); nlp_ids_free(&b);
    nlp_buf_free(&out); nlp_buf_free(&fix);
    return 0;
}
