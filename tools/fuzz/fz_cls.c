/* tools/fuzz/fz_cls.c — libFuzzer target: finetune's training and test TSVs
 * (lib/train/cls: label<TAB>text, label<TAB>a<TAB>b, unlabelled text) read
 * with a WordPiece or a byte-level BPE tokenizer, against a fixed or a
 * growing label set; every example read is then laid out for BERT and GPT
 * and a training task draws two batches from them. Byte 0 picks the mode.
 * Build and run: tools/fuzz/run cls. */
#include "fz_common.h"
#include "base/rng.h"
#include "model/config.h"
#include "train/cls.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static nlp_tokenizer *wp, *bpe;
    if (!wp) wp = fz_tokenizer("wp.json"), bpe = fz_tokenizer("bpe.json");
    if (n < 1) return 0;
    const uint8_t mode = d[0];
    const char *path = fz_put("train.tsv", d + 1, n - 1);
    nlp_cls_labels labels = {0};
    if (mode & 8) { /* a label set given first (--labels, a model's names) */
        nlp_cls_labels_add(&labels, "en", 2, NULL);
        nlp_cls_labels_add(&labels, "de", 2, NULL);
    }
    nlp_cls_read_opts o = {.tk = mode & 1 ? bpe : wp, .labelled = !(mode & 2), .texts = (mode >> 2) & 1 ? 2 : 0,
                           .labels = &labels, .add_labels = !(mode & 8), .threads = 1};
    if (mode & 16) o.texts = 1;
    nlp_cls_data data;
    if (nlp_cls_read(&data, path, &o) == 0) {
        nlp_cls_encoder e;
        int T = 4 + (mode >> 5) * 3;
        int32_t ids[32], type[32], mask[32], lm[32], pos;
        if (nlp_cls_encoder_bert(&e, wp, T) == 0)
            for (size_t i = 0; i < data.n; i++) {
                const int32_t *b = data.pair ? data.b + data.b_off[i] : NULL;
                size_t nb = data.pair ? data.b_off[i + 1] - data.b_off[i] : 0;
                int len = nlp_cls_encode(&e, data.a + data.a_off[i], data.a_off[i + 1] - data.a_off[i], b, nb, T, ids,
                                         type, mask, lm, &pos);
                if (len < 0 || len > T) abort();
            }
        nlp_cls_truncated(&e, &data);
        nlp_cls_encoder g;
        nlp_cls_encoder_gpt(&g, 500, 501, 502, 502, T);
        nlp_model_config cfg;
        if (data.labelled && data.n && nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_BERT) == 0) {
            cfg.num_labels = nlp_cls_labels_count(&labels) > 1 ? nlp_cls_labels_count(&labels) : 2;
            cfg.vocab_size = 1024;
            nlp_cls_task t;
            nlp_task task;
            if (nlp_cls_task_init(&t, &task, &data, NULL, &e, &cfg, 3) == 0) {
                nlp_rng r;
                nlp_rng_seed(&r, 7);
                nlp_batch b;
                for (int k = 0; k < 2; k++)
                    if (task.next_batch(task.ctx, &r, &b)) break;
                nlp_cls_task_free(&t);
            }
        }
        nlp_cls_data_free(&data);
    }
    nlp_cls_labels_free(&labels);
    return 0;
}
