/* tools/fuzz/fz_mt.c — libFuzzer target: parallel text for pretrain --arch
 * transformer (lib/train/mt): a TSV of source<TAB>target lines, or two
 * files aligned line by line (the input split at its first NUL byte), with
 * one shared or two tokenizers, length limits, empty sides kept or not;
 * the pairs read then go through the translation task's batching (an epoch
 * of batches sorted and cut by tokens) for two batches. Byte 0 picks the
 * mode. Build and run: tools/fuzz/run mt. */
#include "fz_common.h"
#include "base/rng.h"
#include "model/config.h"
#include "train/mt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static nlp_tokenizer *mt, *bpe;
    if (!mt) mt = fz_tokenizer("mt.json"), bpe = fz_tokenizer("bpe.json");
    if (n < 1) return 0;
    const uint8_t mode = d[0];
    d++, n--;
    const char *src, *tgt = NULL;
    if (mode & 1) {
        const uint8_t *z = memchr(d, 0, n);
        size_t k = z ? (size_t)(z - d) : n / 2;
        src = fz_put("src.txt", d, k);
        tgt = fz_put("tgt.txt", d + (z ? k + 1 : k), n - (z ? k + 1 : k));
    } else {
        src = fz_put("train.tsv", d, n);
    }
    nlp_pairs_opts o = {.src_tk = mode & 2 ? bpe : mt, .tgt_tk = mt, .max_len = (mode >> 2) & 7 ? ((mode >> 2) & 7) * 4 : 0,
                        .keep_empty = (mode >> 5) & 1, .keep_text = (mode >> 6) & 1, .threads = 1};
    nlp_pairs p;
    memset(&p, 0, sizeof p);
    if (nlp_pairs_read(&p, src, tgt, &o) == 0) {
        nlp_model_config cfg;
        if (p.n && nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_TRANSFORMER) == 0) {
            cfg.vocab_size = cfg.src_vocab_size = 1024;
            cfg.shared_vocab = 0;
            cfg.pad_id = 0, cfg.bos_id = 1, cfg.eos_id = 2;
            nlp_mt_task t;
            nlp_task task;
            if (nlp_mt_task_init(&t, &task, &p, NULL, &cfg, (mode & 128) ? 64 : 600, 3) == 0) {
                nlp_rng r;
                nlp_rng_seed(&r, 7);
                nlp_batch b;
                nlp_mt_epoch_batches(&t);
                for (int k = 0; k < 2; k++)
                    if (task.next_batch(task.ctx, &r, &b)) break;
                nlp_mt_task_free(&t);
            }
        }
    }
    nlp_pairs_free(&p);
    return 0;
}
