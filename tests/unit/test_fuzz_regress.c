/*
 * test_fuzz_regress.c — every input the libFuzzer targets of tools/fuzz/
 * found a fault with, replayed through the same calls as the target did
 * (the targets need clang; this runs in make test and, with the
 * sanitizers that caught them, in make asan). One function per finding,
 * named after the target, with the date and what was wrong.
 */
#include "test.h"

#include "base/config.h"
#include "base/err.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "train/data.h"
#include "base/io.h"
#include "tok/tokfiles.h"
#include "tok/tokjson.h"

#include <fcntl.h>
#include <sys/stat.h>

static const char *put(const char *name, const void *d, size_t n)
{
    static char p[4][600];
    static int k;
    char *path = p[k++ % 4];
    snprintf(path, sizeof p[0], "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f)) abort();
    return path;
}

/* data, 2026-11-26: a token stream with an empty document (two end-of-text
 * ids in a row) passed memcpy a NULL source (UBSan: nonnull attribute). */
static void test_data_empty_document(void)
{
    /* NLTK v1, 2-byte ids, vocabulary 300, end-of-text 1: "5 1 1 7 1" (a
     * stream separates documents: empty ones after the first and the last 1) */
    static const unsigned char s[] = {'N', 'L', 'T', 'K', 1, 0, 0, 0, 2, 0, 0, 0, 0x2c, 1, 0, 0, 1, 0, 0, 0,
                                      0,   0,   0,   0,   0, 0, 0, 0, 0, 0, 0, 0, 5,    0, 1, 0, 1, 0, 7, 0, 1, 0};
    nlp_corpus c = NLP_CORPUS_INIT;
    CHECK_EQ_INT(nlp_corpus_add_stream(&c, put("empty-doc.bin", s, sizeof s), 300), 0);
    /* the documents 5, (empty), 7, (empty): joined by the end-of-text id */
    CHECK_EQ_INT(c.n, 5);
    int32_t v[5];
    if (c.n == 5) {
        CHECK_EQ_INT(nlp_corpus_read(&c, 0, 5, v), 0);
        CHECK(v[0] == 5 && v[1] == 1 && v[2] == 1 && v[3] == 7 && v[4] == 1);
    }
    nlp_corpus_free(&c);
}

/* hfconfig, 2026-11-26: a HuggingFace config.json with layer_norm_epsilon
 * 1e5 was accepted (validation checked only the integer keys), but the
 * YAML dump saved with every model ("ln-eps: 1e+05") is refused on load:
 * a model fine-tuned from it could be saved and never loaded again. Now
 * the JSON is refused, naming the key; an accepted one resolves again from
 * its own dump. */
static void test_hfconfig_out_of_range(void)
{
    static const char j[] = "{\"model_tyPe\": \"gpt2\", \"vocab_sizee\": 16, \"ns_opitions\": 8, \"n_embd\": 8, "
                            "\"dropsout\": 1, \"n_head\": 2, \"layer_norm_epsilon\": 1e05}";
    nlp_model_config c;
    CHECK_EQ_INT(nlp_model_config_from_json(&c, NULL, j, strlen(j), "config.json"), NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "'config.json'") && strstr(nlp_errmsg(), "ln-eps must be in (0, 1]"), "%s",
              nlp_errmsg());
    static const char *const bad[] = {"{\"n_embd\": 8, \"n_head\": 2, \"resid_pdrop\": 1}",
                                      "{\"n_embd\": 8, \"n_head\": 2, \"initializer_range\": 0}",
                                      "{\"n_embd\": 8, \"n_head\": 2, \"layer_norm_epsilon\": -1}", NULL};
    for (int i = 0; bad[i]; i++) CHECK_EQ_INT(nlp_model_config_from_json(&c, NULL, bad[i], strlen(bad[i]), "c"), NLP_EFORMAT);
    static const char ok[] = "{\"n_embd\": 8, \"n_head\": 2, \"layer_norm_epsilon\": 1, \"attn_pdrop\": 0.5}";
    CHECK_EQ_INT(nlp_model_config_from_json(&c, NULL, ok, strlen(ok), "c"), 0);
    nlp_buf y = {0};
    nlp_config f;
    nlp_model_config back;
    CHECK_EQ_INT(nlp_model_config_dump(&c, &y), 0);
    CHECK_EQ_INT(nlp_config_parse(&f, y.data, y.len, "dump"), 0);
    CHECK_EQ_INT(nlp_model_config_build(&back, NULL, &f, 1, NULL), 0);
    CHECK(nlp_model_config_equal(&c, &back));
    nlp_config_free(&f);
    nlp_buf_free(&y);
}

static void copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    if (!a || !b) abort();
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, n, b) != n) abort();
    fclose(a);
    if (fclose(b)) abort();
}

/* ckpt, 2026-11-26: a checkpoint whose model.safetensors records another
 * step than its train_state (the fuzzer's model file says 1, the state 2)
 * was refused with a message that read the model's step after its header
 * was freed (ASan: heap-use-after-free in nlp_checkpoint_load). The model
 * file is the fuzzer's input (tests/data/fuzz), the state the target's. */
static void test_ckpt_model_step_after_close(void)
{
    char dir[600], p[700];
    snprintf(dir, sizeof dir, "%s/ckpt-step", test_tmpdir());
    CHECK_EQ_INT(mkdir(dir, 0755), 0);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    copy_file("tests/data/fuzz/ckpt-model-step.safetensors", p);
    snprintf(p, sizeof p, "%s/train_state.safetensors", dir);
    copy_file("tools/fuzz/data/ckpt/train_state.safetensors", p);
    nlp_model *m = NULL;
    nlp_optim o;
    nlp_train_state st;
    CHECK_EQ_INT(nlp_checkpoint_load(dir, &m, &o, &st), NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "the training state is at step 2, the model at 1"), "%s", nlp_errmsg());
}

/* The .model file at path through what the spm target does with it: the
 * tokenizer, then its tokenizer.json. Returns the dump's status. */
static int spm_dump(const char *path)
{
    nlp_map m;
    if (nlp_map_file(&m, path)) return -100;
    nlp_tok_spec s;
    int rc = nlp_tokfiles_spm_spec(m.data, m.len, path, &s);
    nlp_unmap(&m);
    if (rc) return -101;
    nlp_tokenizer *tk;
    if (nlp_tokenizer_new(&tk, &s)) {
        nlp_tok_spec_free(&s);
        return -102;
    }
    nlp_buf js = {0};
    rc = nlp_tokjson_dump(nlp_tokenizer_spec(tk), &js);
    nlp_buf_free(&js);
    nlp_tokenizer_free(tk);
    return rc;
}

/* spm, 2026-11-29: a bpe model with pieces whose splits make no merges
 * passed qsort a NULL array (UBSan: nonnull attribute); it writes. */
static void test_spm_empty_merges(void) { CHECK_EQ_INT(spm_dump("tests/data/fuzz/spm-empty-merges.model"), 0); }

/* spm, 2026-11-29: a piece that is not UTF-8 (a .model allows any bytes)
 * made jansson refuse a key, and the writer freed the value jansson had
 * already freed (use after free). Now such a tokenizer is refused for JSON
 * with a message ("token N is not UTF-8"), and the writer never frees what
 * jansson took. */
static void test_spm_piece_not_utf8(void)
{
    CHECK_EQ_INT(spm_dump("tests/data/fuzz/spm-not-utf8.model"), NLP_EINVAL);
    CHECK_MSG(strstr(nlp_errmsg(), "is not UTF-8, which a JSON vocabulary cannot hold") != NULL, "%s", nlp_errmsg());
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_data_empty_document);
    RUN(test_hfconfig_out_of_range);
    RUN(test_ckpt_model_step_after_close);
    RUN(test_spm_empty_merges);
    RUN(test_spm_piece_not_utf8);
    return TEST_END();
}
