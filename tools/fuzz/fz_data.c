/* tools/fuzz/fz_data.c — libFuzzer target: pretrain's GPT data
 * (lib/train/data): token streams (nlpipe NLTK, llm.c shards) or text with
 * a tokenizer, one or two inputs appended (split at the first NUL byte when
 * byte 0 says so), with or without a vocabulary limit; then the byte count
 * of a stream's text, the evaluation windows and random training windows.
 * Every id kept must be below the limit and below max_id. Build and run:
 * tools/fuzz/run data. */
#include "fz_common.h"
#include "base/rng.h"
#include "train/data.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static nlp_tokenizer *bpe;
    if (!bpe) bpe = fz_tokenizer("bpe.json");
    if (n < 1) return 0;
    const uint8_t mode = d[0];
    d++, n--;
    const uint8_t *z = (mode & 2) ? memchr(d, 0xfe, n) : NULL;
    size_t k = z ? (size_t)(z - d) : n;
    const uint32_t vocab = (mode & 4) ? 400 : 0;
    const nlp_tokenizer *tk = (mode & 8) ? NULL : bpe;
    nlp_corpus c = NLP_CORPUS_INIT;
    if (mode & 16) c.eot = 0;
    int rc = (mode & 1) ? nlp_corpus_add_stream(&c, fz_put("a.bin", d, k), vocab)
                        : nlp_corpus_add(&c, fz_put("a.bin", d, k), tk, 0, vocab, 1);
    if (!rc && z) rc = nlp_corpus_add(&c, fz_put("b.bin", z + 1, n - k - 1), tk, 0, vocab, 1);
    for (size_t i = 0; i < c.n; i++) {
        int32_t v;
        if (nlp_corpus_read(&c, i, 1, &v)) continue; /* an id the header does not admit: refused where read */
        if (v < 0 || (vocab && (uint32_t)v >= vocab)) abort();
    }
    if (!rc && c.n && !c.bytes && (mode & 32)) nlp_corpus_count_bytes(&c, bpe);
    const int T = 2 + (mode >> 6) * 5;
    if (c.n >= (size_t)T) {
        size_t w = nlp_corpus_eval_windows(&c, T);
        int32_t ids[2 * 17];
        for (size_t i = 0; i < w; i++) {
            int len;
            if (nlp_corpus_eval_window(&c, T, i, ids, &len) == 0 && (len < 2 || len > T)) abort();
        }
        nlp_rng r;
        nlp_rng_seed(&r, 1);
        (void)nlp_corpus_windows(&c, &r, 2, T, ids);
    }
    nlp_corpus_free(&c);
    return 0;
}
