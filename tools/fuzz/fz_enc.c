/* tools/fuzz/fz_enc.c — libFuzzer target: GPT-2 and bert-base-uncased from
 * $SHARED/vectors/tokenize on arbitrary bytes; byte-level decode(encode(x))
 * must give x back, and a fresh state the same ids as a warm cache.
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
