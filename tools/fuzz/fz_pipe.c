/* tools/fuzz/fz_pipe.c — libFuzzer target: random normalizer, pre-tokenizer and decoder
 * steps over repaired text; checks that pieces point into the text or the
 * work buffer and that GPT-2 splits tile the text. Build and run: tools/fuzz/run. */
#include "tok/pretok.h"
#include "tok/normalize.h"
#include "tok/decoder.h"
#include "text/utf8.h"
#include <stdlib.h>
#include <string.h>
#include <assert.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 4) return 0;
    nlp_pretok_step st[4];
    size_t ns = d[0] % 5;
    for (size_t i = 0; i < ns; i++) {
        uint8_t c = d[1 + i % 3] >> (2 * (i % 2));
        st[i] = (nlp_pretok_step){.type = (nlp_pretok_type)(c % 5), .add_prefix_space = (c >> 3) & 1, .use_regex = (c >> 4) & 1};
    }
    nlp_norm_step nm[3];
    size_t nn = (d[2] >> 5) % 4;
    for (size_t i = 0; i < nn; i++) {
        uint8_t c = d[3] >> i;
        memset(&nm[i], 0, sizeof nm[i]);
        nm[i].type = (nlp_norm_type)(c % 10);
        nm[i].left = c & 1; nm[i].right = (c >> 1) & 1;
        nm[i].clean_text = c & 1; nm[i].handle_chinese_chars = (c>>1)&1; nm[i].strip_accents = ((c>>2)&3) - 1; if (nm[i].strip_accents > 1) nm[i].strip_accents = 1;
        nm[i].lowercase = (c>>4)&1;
        nm[i].a = (char *)(i ? "\xc3\xa9" : " ");
        nm[i].b = (char *)"xyz";
    }
    nlp_buf fix = {0}, out = {0}, tmp = {0}, work = {0};
    nlp_utf8_repair((const char *)d + 4, n - 4, &fix, NULL);
    const char *s = fix.data ? fix.data : "";
    size_t len = fix.len;
    if (nlp_normalize(nm, nn, s, len, &out, &tmp) == 0) {
        s = out.data ? out.data : "";
        len = out.len;
        assert(nlp_utf8_valid(s, len, NULL));
    }
    nlp_pieces p = {0};
    if (nlp_pretok_run(st, ns, s, len, &work, &p) == 0) {
        for (size_t i = 0; i < p.n; i++) {
            const char *q = p.v[i].p;
            int in_s = q >= s && q + p.v[i].n <= s + len;
            int in_w = work.data && q >= work.data && q + p.v[i].n <= work.data + work.cap;
            assert(in_s || in_w);
            volatile char sum = 0;
            for (size_t k = 0; k < p.v[i].n; k++) sum ^= q[k];
        }
        /* decoders over the pieces as tokens */
        nlp_dec_token *t = malloc((p.n + 1) * sizeof *t);
        for (size_t i = 0; i < p.n; i++) { t[i].s = p.v[i].p; t[i].n = p.v[i].n; }
        nlp_dec_step ds[2] = {{.type = (nlp_dec_type)(d[1] % 3), .suffix = (char *)"##", .cleanup = 1},
                              {.type = (nlp_dec_type)(d[2] % 3), .suffix = (char *)"</w>", .cleanup = d[3] & 1}};
        nlp_buf dec = {0};
        nlp_decode_tokens(ds, d[0] % 3, t, p.n, &dec);
        nlp_buf_free(&dec);
        free(t);
    }
    if (ns == 1 && (st[0].type == NLP_PRETOK_GPT2_SPLIT || (st[0].type == NLP_PRETOK_BYTELEVEL && st[0].use_regex && !st[0].add_prefix_space))) {
        size_t tot = 0;
        for (size_t i = 0; i < p.n; i++) { assert(p.v[i].p == s + tot); tot += p.v[i].n; }
        assert(tot == len);
    }
    nlp_pieces_free(&p);
    nlp_buf_free(&fix); nlp_buf_free(&out); nlp_buf_free(&tmp); nlp_buf_free(&work);
    return 0;
}
