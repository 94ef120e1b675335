/* tools/fuzz/fz_bert.c — libFuzzer target: the documents of pretrain --arch
 * bert (lib/train/bert): text (a paragraph per line, or blocks between
 * blank lines) from memory or from a file, where a file may also be a
 * token stream (NLTK or llm.c header); two inputs appended one after the
 * other (split at the first NUL byte); then the BERT task is set up on them
 * and draws examples and a batch. Byte 0 picks the mode. Build and run:
 * tools/fuzz/run bert. */
#include "fz_common.h"
#include "base/rng.h"
#include "train/bert.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static nlp_tokenizer *wp;
    if (!wp) wp = fz_tokenizer("wp.json");
    if (n < 1) return 0;
    const uint8_t mode = d[0];
    d++, n--;
    const uint8_t *z = memchr(d, 0, n);
    size_t k = z && (mode & 4) ? (size_t)(z - d) : n;
    nlp_bert_docs docs;
    memset(&docs, 0, sizeof docs);
    int rc = mode & 1 ? nlp_bert_docs_add(&docs, fz_put("docs.txt", d, k), wp, 1)
                      : nlp_bert_docs_add_text(&docs, (const char *)d, k, "docs", wp, 1);
    if (!rc && k < n) {
        const char *second = fz_put("docs2.bin", d + k + 1, n - k - 1);
        rc = nlp_bert_docs_add(&docs, second, wp, 1);
    }
    /* the documents are well formed, whatever happened after them */
    for (size_t s = 0; s < docs.nsent; s++)
        if (docs.sent[s] >= docs.sent[s + 1] || docs.sent[s + 1] > docs.n) abort();
    for (size_t i = 0; i < docs.ndoc; i++)
        if (docs.doc[i] >= docs.doc[i + 1] || docs.doc[i + 1] > docs.nsent) abort();
    nlp_bert_opts o = NLP_BERT_OPTS_INIT;
    o.B = 2, o.T = 5 + ((mode >> 3) & 31), o.valid_max = 4;
    nlp_bert_task t;
    nlp_task task;
    if (nlp_bert_task_init(&t, &task, &docs, (mode & 2) ? &docs : NULL, wp, &o) == 0) {
        nlp_rng r;
        nlp_rng_seed(&r, mode);
        int32_t ids[64], labels[64], type[64], mask[64], nsp;
        for (size_t c = 0; c < t.train.n && c < 8; c++) {
            int len = nlp_bert_task_example(&t, c, &r, ids, labels, type, mask, &nsp, NULL);
            if (len < 3 || len > o.T) abort();
        }
        nlp_batch b;
        task.next_batch(task.ctx, &r, &b);
        nlp_bert_task_free(&t);
    }
    nlp_bert_docs_free(&docs);
    return 0;
}
