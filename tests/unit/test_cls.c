/*
 * test_cls.c — sequence classification: the metrics of eval/classify
 * against hand-computed confusion matrices (a label never predicted, one
 * never gold, one neither: scikit-learn's conventions), the TSV reader of
 * train/cls (1 and 2 texts, labels in order of first appearance, mixed
 * field counts, empty fields, unseen labels, repaired UTF-8), the BERT and
 * GPT layouts with truncation and padding, the scoring of logits, the
 * training task's batches (every example once an epoch, padded to the
 * batch's longest, the same order for the same generator, resumed from a
 * saved state), and, when the model has a classification head, validation
 * and prediction on tiny models.
 */
#include "base/err.h"
#include "base/io.h"
#include "base/rng.h"
#include "eval/classify.h"
#include "model/config.h"
#include "model/model.h"
#include "tok/tokenizer.h"
#include "train/cls.h"
#include "test.h"

#include <omp.h>

// --- helpers

/* A BERT WordPiece tokenizer over a small vocabulary (ids in order). */
static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat",  "on",
                                    "mat",   "dog",   "ran",   "a",     "good",   "bad", "movie", "##s"};
enum { ID_PAD, ID_UNK, ID_CLS, ID_SEP, ID_MASK, ID_THE, ID_CAT, ID_SAT, ID_ON, ID_MAT, ID_DOG, ID_RAN, ID_A, ID_GOOD,
       ID_BAD, ID_MOVIE, ID_S, NVOCAB };

static nlp_tokenizer *tokenizer(int with_pad)
{
    nlp_tok_spec s = {0};
    s.vocab = nlp_vocab_new(NVOCAB);
    for (int i = with_pad ? 0 : 1; i < NVOCAB; i++) nlp_vocab_add(s.vocab, vocab[i], strlen(vocab[i]), NULL);
    s.model = NLP_MODEL_WORDPIECE;
    nlp_tok_spec_pipeline(&s, NLP_PIPE_BERT, NULL);
    nlp_tokenizer *tk = NULL;
    if (nlp_tokenizer_new(&tk, &s)) nlp_tok_spec_free(&s);
    return tk;
}

/* Writes text to a scratch file and returns its path (static buffer per slot). */
static const char *tmpfile_with(const char *name, const char *text)
{
    static char path[8][512];
    static int slot;
    char *p = path[slot++ % 8];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(p, "wb");
    fwrite(text, 1, strlen(text), f);
    fclose(f);
    return p;
}

static int ids_eq(const int32_t *got, const int32_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) return 0;
    return 1;
}

static int has(const char *msg, const char *part) { return strstr(msg, part) != NULL; }

// --- metrics

static void test_metrics(void)
{
    /* labels A B C D E: C is gold but never predicted, D predicted but never
     * gold, E neither */
    enum { A, B, C, D, E, L };
    const int32_t gold[] = {A, A, A, B, B, C, C};
    const int32_t pred[] = {A, A, B, B, D, A, B};
    uint64_t cm[L * L] = {0};
    CHECK(nlp_classify_count(cm, L, gold, pred, 7) == 0);
    CHECK_EQ_INT(cm[A * L + A], 2);
    CHECK_EQ_INT(cm[C * L + B], 1);
    CHECK_EQ_INT(nlp_classify_total(cm, L), 7);
    CHECK_NEAR(nlp_classify_accuracy(cm, L), 3.0 / 7.0, 1e-15);
    nlp_label_stats s;
    nlp_classify_label(cm, L, A, &s); /* tp 2, predicted 3, gold 3 */
    CHECK_NEAR(s.precision, 2.0 / 3.0, 1e-15);
    CHECK_NEAR(s.recall, 2.0 / 3.0, 1e-15);
    CHECK_NEAR(s.f1, 2.0 / 3.0, 1e-15);
    CHECK_EQ_INT(s.support, 3);
    nlp_classify_label(cm, L, B, &s); /* tp 1, predicted 3, gold 2 */
    CHECK_NEAR(s.precision, 1.0 / 3.0, 1e-15);
    CHECK_NEAR(s.recall, 0.5, 1e-15);
    CHECK_NEAR(s.f1, 0.4, 1e-15);
    CHECK_EQ_INT(s.support, 2);
    nlp_classify_label(cm, L, C, &s); /* never predicted: precision 0/0 = 0 */
    CHECK(s.precision == 0 && s.recall == 0 && s.f1 == 0);
    CHECK_EQ_INT(s.support, 2);
    CHECK_EQ_INT(s.predicted, 0);
    nlp_classify_label(cm, L, D, &s); /* never gold: recall 0/0 = 0 */
    CHECK(s.precision == 0 && s.recall == 0 && s.f1 == 0);
    CHECK_EQ_INT(s.support, 0);
    CHECK_EQ_INT(s.predicted, 1);
    nlp_classify_label(cm, L, E, &s);
    CHECK(s.precision == 0 && s.recall == 0 && s.f1 == 0 && s.support == 0 && s.predicted == 0);
    /* sklearn: f1_score([0,0,0,1,1,2,2], [0,0,1,1,3,0,1], average='macro')
     * = (2/3 + 0.4 + 0 + 0) / 4 over labels {0,1,2,3}; E is not counted */
    int used = -1;
    CHECK_NEAR(nlp_classify_macro_f1(cm, L, &used), (2.0 / 3.0 + 0.4) / 4.0, 1e-15);
    CHECK_EQ_INT(used, 4);

    /* out of range: refused, nothing counted */
    const int32_t bad[] = {A, L};
    CHECK_EQ_INT(nlp_classify_count(cm, L, gold, bad, 2), NLP_EINVAL);
    CHECK(has(nlp_errmsg(), "predicted label 5"));
    CHECK_EQ_INT(nlp_classify_total(cm, L), 7);

    /* empty matrix: undefined figures, null in JSON */
    uint64_t z[4] = {0};
    CHECK(isnan(nlp_classify_accuracy(z, 2)));
    CHECK(isnan(nlp_classify_macro_f1(z, 2, &used)));
    CHECK_EQ_INT(used, 0);

    /* perfect two-label case */
    const int32_t g2[] = {0, 1, 1}, p2[] = {0, 1, 1};
    uint64_t c2[4] = {0};
    CHECK(nlp_classify_count(c2, 2, g2, p2, 3) == 0);
    CHECK(nlp_classify_accuracy(c2, 2) == 1.0);
    CHECK(nlp_classify_macro_f1(c2, 2, NULL) == 1.0);
}

static void test_metrics_json(void)
{
    /* gold neg neg pos pos pos, pred neg pos neg pos pos; "odd" never seen */
    const int32_t gold[] = {0, 0, 1, 1, 1}, pred[] = {0, 1, 0, 1, 1};
    uint64_t cm[9] = {0};
    CHECK(nlp_classify_count(cm, 3, gold, pred, 5) == 0);
    const char *names[] = {"neg", "pos \"x\"", "odd"};
    nlp_buf b = {0};
    CHECK(nlp_classify_json(cm, 3, names, &b) == 0);
    /* neg: P 1/2 R 1/2; pos: P 2/3 R 2/3; macro over neg, pos */
    const char *want = "{\n"
                       "  \"examples\": 5,\n"
                       "  \"accuracy\": 0.6,\n"
                       "  \"macro_f1\": 0.5833333333333333,\n"
                       "  \"labels\": {\n"
                       "    \"neg\": {\"precision\": 0.5, \"recall\": 0.5, \"f1\": 0.5, \"support\": 2},\n"
                       "    \"pos \\\"x\\\"\": {\"precision\": 0.6666666666666666, \"recall\": 0.6666666666666666, "
                       "\"f1\": 0.6666666666666666, \"support\": 3},\n"
                       "    \"odd\": {\"precision\": 0.0, \"recall\": 0.0, \"f1\": 0.0, \"support\": 0}\n"
                       "  },\n"
                       "  \"confusion\": [[1, 1, 0], [1, 2, 0], [0, 0, 0]]\n"
                       "}\n";
    CHECK_STR(b.data, want);
    nlp_buf_reset(&b);
    uint64_t z[1] = {0};
    CHECK(nlp_classify_json(z, 1, NULL, &b) == 0);
    CHECK(has(b.data, "\"accuracy\": null") && has(b.data, "\"macro_f1\": null") && has(b.data, "\"0\": {"));
    nlp_buf_free(&b);
}

// --- reading

static int read_tsv(nlp_cls_data *d, const char *name, const char *text, nlp_cls_labels *labels, int labelled,
                    int add, int texts, const nlp_tokenizer *tk)
{
    nlp_cls_read_opts o = {.tk = tk, .labelled = labelled, .texts = texts, .labels = labels, .add_labels = add,
                           .threads = 1};
    return nlp_cls_read(d, tmpfile_with(name, text), &o);
}

static void test_read(void)
{
    nlp_tokenizer *tk = tokenizer(1);
    CHECK(tk != NULL);
    if (!tk) return;
    nlp_cls_labels labels = {0};
    nlp_cls_data d;
    /* single texts; labels in order of first appearance; CRLF */
    int rc = read_tsv(&d, "train.tsv", "pos\tthe cat sat\r\nneg\tthe dog ran\npos\ta good movie\nneutral\tthe mat",
                      &labels, 1, 1, 0, tk);
    CHECK_MSG(rc == 0, "%s", nlp_errmsg());
    CHECK_EQ_INT(d.n, 4);
    CHECK_EQ_INT(d.pair, 0);
    CHECK_EQ_INT(nlp_cls_labels_count(&labels), 3);
    CHECK_STR(nlp_cls_labels_name(&labels, 0), "pos");
    CHECK_STR(nlp_cls_labels_name(&labels, 1), "neg");
    CHECK_STR(nlp_cls_labels_name(&labels, 2), "neutral");
    CHECK(nlp_cls_labels_name(&labels, 3) == NULL);
    CHECK_EQ_INT(nlp_cls_labels_find(&labels, "neg", 3), 1);
    CHECK_EQ_INT(nlp_cls_labels_find(&labels, "ne", 2), -1);
    const int32_t lab[] = {0, 1, 0, 2};
    CHECK(d.label && ids_eq(d.label, lab, 4));
    const int32_t a0[] = {ID_THE, ID_CAT, ID_SAT}, a3[] = {ID_THE, ID_MAT};
    CHECK_EQ_INT(d.a_off[1], 3);
    CHECK(ids_eq(d.a, a0, 3));
    CHECK_EQ_INT(d.a_off[4] - d.a_off[3], 2);
    CHECK(ids_eq(d.a + d.a_off[3], a3, 2));
    CHECK_EQ_INT(d.tokens, 3 + 3 + 3 + 2);
    CHECK_EQ_INT(d.repaired, 0);
    nlp_cls_data_free(&d);

    /* a dev file against the set: known labels map, unseen ones are named */
    rc = read_tsv(&d, "dev.tsv", "neg\tthe cat\nneutral\ta dog\npos\tthe mat\n", &labels, 1, 0, 1, tk);
    CHECK_MSG(rc == 0, "%s", nlp_errmsg());
    const int32_t dl[] = {1, 2, 0};
    CHECK(d.label && ids_eq(d.label, dl, 3));
    nlp_cls_data_free(&d);
    rc = read_tsv(&d, "dev2.tsv", "pos\tthe cat\nfoo\ta dog\nbar\tthe\nfoo\tcat\n", &labels, 1, 0, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "dev2.tsv': 2 labels not in the training data: 'foo' (line 2), 'bar' (line 3)"),
              "%s", nlp_errmsg());
    CHECK_EQ_INT(nlp_cls_labels_count(&labels), 3);
    CHECK(d.n == 0 && d.label == NULL);
    /* many unseen: ten named, then a count */
    char many[512] = "";
    for (int i = 0; i < 13; i++) snprintf(many + strlen(many), sizeof many - strlen(many), "L%d\tthe\n", i);
    rc = read_tsv(&d, "dev3.tsv", many, &labels, 1, 0, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "13 labels") && has(nlp_errmsg(), "'L9' (line 10) and 3 more") &&
                  !has(nlp_errmsg(), "'L10'"),
              "%s", nlp_errmsg());

    /* pairs */
    nlp_cls_labels pl = {0};
    rc = read_tsv(&d, "pair.tsv", "yes\tthe cat\tthe dog sat\nno\ta mat\tcats\n", &pl, 1, 1, 0, tk);
    CHECK_MSG(rc == 0, "%s", nlp_errmsg());
    CHECK_EQ_INT(d.pair, 1);
    CHECK_EQ_INT(d.n, 2);
    const int32_t b0[] = {ID_THE, ID_DOG, ID_SAT}, b1[] = {ID_CAT, ID_S};
    CHECK(d.b && d.b_off[1] == 3 && ids_eq(d.b, b0, 3));
    CHECK(d.b_off[2] - d.b_off[1] == 2 && ids_eq(d.b + d.b_off[1], b1, 2));
    CHECK_EQ_INT(d.tokens, 2 + 2 + 3 + 2);
    nlp_cls_data_free(&d);

    /* mixed field counts: file, line and both counts */
    rc = read_tsv(&d, "mixed.tsv", "yes\tthe cat\nno\tthe\tdog\n", &pl, 1, 1, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "'") && has(nlp_errmsg(), "mixed.tsv' line 2 has 3 fields but line 1 has 2"), "%s",
              nlp_errmsg());
    rc = read_tsv(&d, "mixed2.tsv", "yes\ta\tb\nno\tthe\tdog\nno\tthe\n", &pl, 1, 1, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "mixed2.tsv' line 3 has 2 fields but line 1 has 3"), "%s", nlp_errmsg());
    rc = read_tsv(&d, "four.tsv", "yes\ta\tb\tc\n", &pl, 1, 1, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "four.tsv' line 1: 4 fields"), "%s", nlp_errmsg());
    rc = read_tsv(&d, "one.tsv", "the cat\n", &pl, 1, 1, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "one.tsv' line 1: 1 field:"), "%s", nlp_errmsg());
    /* the caller asks for pairs (the training data had them) */
    rc = read_tsv(&d, "want2.tsv", "yes\tthe cat\n", &pl, 1, 0, 2, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "want2.tsv' line 1: 2 fields where 3 are expected"), "%s", nlp_errmsg());
    /* empty fields and lines */
    rc = read_tsv(&d, "e1.tsv", "yes\tthe\n\tthe cat\n", &pl, 1, 1, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "e1.tsv' line 2: empty label"), "%s", nlp_errmsg());
    rc = read_tsv(&d, "e2.tsv", "yes\tthe\nno\t\n", &pl, 1, 1, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "e2.tsv' line 2: empty text"), "%s", nlp_errmsg());
    rc = read_tsv(&d, "e3.tsv", "yes\tthe\ta\nno\tcat\t\n", &pl, 1, 1, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "e3.tsv' line 2: empty text_b"), "%s", nlp_errmsg());
    rc = read_tsv(&d, "e4.tsv", "yes\tthe\n\nno\tcat\n", &pl, 1, 1, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "e4.tsv' line 2: empty line"), "%s", nlp_errmsg());

    /* unlabelled input: text, or text_a<TAB>text_b */
    rc = read_tsv(&d, "in.txt", "the cat\na dog\n", NULL, 0, 0, 0, tk);
    CHECK_MSG(rc == 0, "%s", nlp_errmsg());
    CHECK(d.n == 2 && !d.labelled && !d.label && !d.pair);
    nlp_cls_data_free(&d);
    rc = read_tsv(&d, "in2.txt", "the cat\ta dog\nmat\tsat\n", NULL, 0, 0, 0, tk);
    CHECK_MSG(rc == 0, "%s", nlp_errmsg());
    CHECK(d.n == 2 && d.pair && !d.label);
    nlp_cls_data_free(&d);
    rc = read_tsv(&d, "in3.txt", "the\ta\tb\n", NULL, 0, 0, 0, tk);
    CHECK_EQ_INT(rc, NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "3 fields: expected text or text_a<TAB>text_b"), "%s", nlp_errmsg());
    rc = read_tsv(&d, "empty.txt", "", NULL, 0, 0, 0, tk);
    CHECK(rc == 0 && d.n == 0);
    nlp_cls_data_free(&d);

    /* invalid UTF-8: repaired (U+FFFD) in texts and labels, and counted; the
     * BERT normalizer then drops U+FFFD from the text (HF clean_text) */
    nlp_cls_labels ul = {0};
    rc = read_tsv(&d, "bad.tsv", "p\xff\tthe \xff cat\nq\tthe\n", &ul, 1, 1, 0, tk);
    CHECK_MSG(rc == 0, "%s", nlp_errmsg());
    CHECK_EQ_INT(d.repaired, 2);
    CHECK_STR(nlp_cls_labels_name(&ul, 0), "p\xef\xbf\xbd");
    const int32_t r0[] = {ID_THE, ID_CAT};
    CHECK(d.a_off[1] == 2 && ids_eq(d.a, r0, 2));
    nlp_cls_data_free(&d);

    /* a missing file */
    nlp_cls_read_opts o = {.tk = tk, .labelled = 1, .labels = &ul, .add_labels = 1, .threads = 1};
    CHECK_EQ_INT(nlp_cls_read(&d, "/nonexistent/x.tsv", &o), NLP_EIO);

    nlp_cls_labels_free(&ul);
    nlp_cls_labels_free(&pl);
    nlp_cls_labels_free(&labels);
    nlp_tokenizer_free(tk);
}

// --- encoding

static void test_truncate(void)
{
    size_t ka, kb;
    nlp_cls_truncate(3, 2, 5, &ka, &kb); /* fits */
    CHECK(ka == 3 && kb == 2);
    nlp_cls_truncate(10, 0, 4, &ka, &kb); /* single: keep the start */
    CHECK(ka == 4 && kb == 0);
    nlp_cls_truncate(5, 1, 4, &ka, &kb); /* the shorter fits: the longer gets the rest */
    CHECK(ka == 3 && kb == 1);
    nlp_cls_truncate(1, 5, 4, &ka, &kb);
    CHECK(ka == 1 && kb == 3);
    nlp_cls_truncate(5, 2, 3, &ka, &kb); /* both cut: max/2 to the shorter, the rest to the longer */
    CHECK(ka == 2 && kb == 1);
    nlp_cls_truncate(4, 4, 5, &ka, &kb); /* equal: text_b gets the odd id (HF tokenizers) */
    CHECK(ka == 2 && kb == 3);
    nlp_cls_truncate(9, 8, 6, &ka, &kb);
    CHECK(ka == 3 && kb == 3);
    nlp_cls_truncate(4, 3, 0, &ka, &kb);
    CHECK(ka == 0 && kb == 0);
}

static void test_encode_bert(void)
{
    nlp_tokenizer *tk = tokenizer(1), *nopad = tokenizer(0);
    CHECK(tk && nopad);
    if (!tk || !nopad) return;
    nlp_cls_encoder e;
    CHECK_EQ_INT(nlp_cls_encoder_bert(&e, nopad, 8), NLP_EFORMAT);
    CHECK_MSG(has(nlp_errmsg(), "no '[PAD]' token"), "%s", nlp_errmsg());
    CHECK_EQ_INT(nlp_cls_encoder_bert(&e, tk, 3), NLP_EINVAL);
    CHECK(nlp_cls_encoder_bert(&e, tk, 8) == 0);
    CHECK(e.cls == ID_CLS && e.sep == ID_SEP && e.pad == ID_PAD && e.kind == NLP_CLS_BERT);

    int32_t ids[10], type[10], mask[10], lab[10], pos = -1;
    const int32_t a[] = {ID_THE, ID_CAT, ID_SAT, ID_ON, ID_A, ID_MAT}, b[] = {ID_DOG, ID_RAN, ID_ON};
    /* single, padded to the row */
    CHECK_EQ_INT(nlp_cls_encode(&e, a, 3, NULL, 0, 8, ids, type, mask, lab, &pos), 5);
    const int32_t w1[] = {ID_CLS, ID_THE, ID_CAT, ID_SAT, ID_SEP, ID_PAD, ID_PAD, ID_PAD};
    const int32_t t1[8] = {0}, m1[] = {1, 1, 1, 1, 1, 0, 0, 0};
    CHECK(ids_eq(ids, w1, 8));
    CHECK(ids_eq(type, t1, 8));
    CHECK(ids_eq(mask, m1, 8));
    CHECK_EQ_INT(pos, 0);
    /* pair */
    CHECK(nlp_cls_encoder_bert(&e, tk, 10) == 0);
    CHECK_EQ_INT(nlp_cls_encode(&e, a, 2, b, 3, 10, ids, type, mask, NULL, NULL), 8);
    const int32_t w2[] = {ID_CLS, ID_THE, ID_CAT, ID_SEP, ID_DOG, ID_RAN, ID_ON, ID_SEP, ID_PAD, ID_PAD};
    const int32_t t2[] = {0, 0, 0, 0, 1, 1, 1, 1, 0, 0}, m2[] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
    CHECK(ids_eq(ids, w2, 10));
    CHECK(ids_eq(type, t2, 10));
    CHECK(ids_eq(mask, m2, 10));
    /* truncation: T 7 leaves 4 ids for 6 + 3: the shorter keeps 2 (max/2), the longer 2 */
    CHECK(nlp_cls_encoder_bert(&e, tk, 7) == 0);
    CHECK_EQ_INT(nlp_cls_encoded_len(&e, 6, 3, 1), 7);
    CHECK_EQ_INT(nlp_cls_encode(&e, a, 6, b, 3, 7, ids, type, NULL, NULL, NULL), 7);
    const int32_t w3[] = {ID_CLS, ID_THE, ID_CAT, ID_SEP, ID_DOG, ID_RAN, ID_SEP};
    const int32_t t3[] = {0, 0, 0, 0, 1, 1, 1};
    CHECK(ids_eq(ids, w3, 7));
    CHECK(ids_eq(type, t3, 7));
    /* single truncated to T - 2 */
    CHECK_EQ_INT(nlp_cls_encode(&e, a, 6, NULL, 0, 7, ids, NULL, NULL, NULL, NULL), 7);
    const int32_t w4[] = {ID_CLS, ID_THE, ID_CAT, ID_SAT, ID_ON, ID_A, ID_SEP};
    CHECK(ids_eq(ids, w4, 7));
    /* a row too narrow */
    CHECK_EQ_INT(nlp_cls_encode(&e, a, 6, NULL, 0, 6, ids, NULL, NULL, NULL, NULL), NLP_EINVAL);
    nlp_tokenizer_free(tk);
    nlp_tokenizer_free(nopad);
}

static void test_encode_gpt(void)
{
    enum { START = 20, DELIM = 21, EXTRACT = 22, PAD = 99 };
    nlp_cls_encoder e;
    CHECK_EQ_INT(nlp_cls_encoder_gpt(&e, START, DELIM, EXTRACT, PAD, 2), NLP_EINVAL);
    CHECK_EQ_INT(nlp_cls_encoder_gpt(&e, START, -1, EXTRACT, PAD, 8), NLP_EINVAL);
    CHECK(nlp_cls_encoder_gpt(&e, START, DELIM, EXTRACT, PAD, 8) == 0);
    int32_t ids[8], lab[8], pos = -1;
    const int32_t a[] = {5, 6, 7, 8, 9, 10}, b[] = {11, 12};
    CHECK_EQ_INT(nlp_cls_encode(&e, a, 3, NULL, 0, 7, ids, NULL, NULL, lab, &pos), 5);
    const int32_t w1[] = {START, 5, 6, 7, EXTRACT, PAD, PAD}, l1[] = {START, 5, 6, 7, EXTRACT, -100, -100};
    CHECK(ids_eq(ids, w1, 7));
    CHECK(ids_eq(lab, l1, 7));
    CHECK_EQ_INT(pos, 4);
    CHECK_EQ_INT(nlp_cls_encode(&e, a, 2, b, 2, 8, ids, NULL, NULL, lab, &pos), 7);
    const int32_t w2[] = {START, 5, 6, DELIM, 11, 12, EXTRACT, PAD}, l2[] = {START, 5, 6, DELIM, 11, 12, EXTRACT, -100};
    CHECK(ids_eq(ids, w2, 8));
    CHECK(ids_eq(lab, l2, 8));
    CHECK_EQ_INT(pos, 6);
    /* truncated: 5 ids for 6 + 2: b keeps 2, a 3; [EXTRACT] is last */
    CHECK_EQ_INT(nlp_cls_encode(&e, a, 6, b, 2, 8, ids, NULL, NULL, lab, &pos), 8);
    const int32_t w3[] = {START, 5, 6, 7, DELIM, 11, 12, EXTRACT};
    CHECK(ids_eq(ids, w3, 8));
    CHECK(ids_eq(lab, w3, 8));
    CHECK_EQ_INT(pos, 7);
}

// --- scoring

static void test_score_logits(void)
{
    const float logits[] = {1, 2, 0, /* -> 1 */ 0, 0, 0, /* tie -> 0 */ 3, -1, 3 /* tie -> 0 */};
    const int32_t gold[] = {1, 2, 0};
    int32_t pred[3];
    float prob[3], probs[9];
    uint64_t cm[9] = {0};
    double nll = 0.5; /* added to */
    CHECK(nlp_cls_score_logits(logits, 3, 3, gold, pred, prob, probs, cm, &nll) == 0);
    CHECK(pred[0] == 1 && pred[1] == 0 && pred[2] == 0);
    double z0 = exp(1) + exp(2) + 1, z2 = 2 * exp(3) + exp(-1);
    CHECK_NEAR(prob[0], exp(2) / z0, 1e-6);
    CHECK_NEAR(prob[1], 1.0 / 3.0, 1e-6);
    CHECK_NEAR(prob[2], exp(3) / z2, 1e-6);
    CHECK_NEAR(probs[0], exp(1) / z0, 1e-6);
    CHECK_NEAR(probs[7], exp(-1) / z2, 1e-6);
    CHECK_NEAR(probs[3] + probs[4] + probs[5], 1.0, 1e-6);
    double want = 0.5 + (log(z0) - 2) + log(3.0) + (log(z2) - 3);
    CHECK_NEAR(nll, want, 1e-9);
    CHECK(cm[1 * 3 + 1] == 1 && cm[2 * 3 + 0] == 1 && cm[0 * 3 + 0] == 1);
    CHECK_EQ_INT(nlp_classify_total(cm, 3), 3);
    /* no gold: predictions only, nothing counted */
    nll = 0;
    CHECK(nlp_cls_score_logits(logits, 3, 3, NULL, pred, NULL, NULL, cm, &nll) == 0);
    CHECK(nll == 0 && nlp_classify_total(cm, 3) == 3);
    const int32_t bad[] = {0, 3, 0};
    CHECK_EQ_INT(nlp_cls_score_logits(logits, 3, 3, bad, pred, NULL, NULL, cm, &nll), NLP_EDATA);
    CHECK_EQ_INT(nlp_classify_total(cm, 3), 3);
}

// --- the task

/* n examples of 1..maxlen ids: text_a of example i starts with 100 + i
 * (so a row tells which example it is), ids below 200; labels i % L. */
static void make_data(nlp_cls_data *d, size_t n, int maxlen, int pair, int L, uint64_t seed)
{
    nlp_rng r;
    nlp_rng_seed(&r, seed);
    memset(d, 0, sizeof *d);
    d->n = n, d->pair = pair, d->labelled = 1;
    d->label = malloc(n * sizeof *d->label);
    d->a = malloc(n * (size_t)maxlen * sizeof *d->a);
    d->b = pair ? malloc(n * (size_t)maxlen * sizeof *d->b) : NULL;
    d->a_off = malloc((n + 1) * sizeof *d->a_off);
    d->b_off = pair ? malloc((n + 1) * sizeof *d->b_off) : NULL;
    d->a_off[0] = 0;
    if (pair) d->b_off[0] = 0;
    for (size_t i = 0; i < n; i++) {
        int la = 1 + (int)nlp_rng_below(&r, (uint64_t)maxlen), lb = 1 + (int)nlp_rng_below(&r, (uint64_t)maxlen);
        d->a[d->a_off[i]] = 100 + (int32_t)i;
        for (int k = 1; k < la; k++) d->a[d->a_off[i] + k] = 5 + (int32_t)nlp_rng_below(&r, 90);
        d->a_off[i + 1] = d->a_off[i] + la;
        if (pair) {
            for (int k = 0; k < lb; k++) d->b[d->b_off[i] + k] = 5 + (int32_t)nlp_rng_below(&r, 90);
            d->b_off[i + 1] = d->b_off[i] + lb;
        }
        d->label[i] = (int32_t)(i % (size_t)L);
    }
}

static uint64_t batch_hash(const nlp_batch *b)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)b->B * 31 ^ (uint64_t)b->T;
    for (size_t i = 0; i < (size_t)b->B * b->T; i++) h = (h ^ (uint32_t)b->ids[i]) * 1099511628211ull;
    for (int i = 0; i < b->B; i++) h = (h ^ (uint32_t)b->cls_labels[i]) * 1099511628211ull;
    return h;
}

static void test_task_bert(void)
{
    enum { N = 23, B = 5, T = 12, L = 3 };
    nlp_cls_data d;
    make_data(&d, N, 14, 1, L, 1);
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_BERT) == 0);
    cfg.num_labels = L;
    nlp_cls_encoder e = {.kind = NLP_CLS_BERT, .T = T, .pad = 0, .cls = 2, .sep = 3};
    nlp_cls_task t;
    nlp_task task;
    CHECK(nlp_cls_task_init(&t, &task, &d, NULL, &e, &cfg, B) == 0);
    CHECK(task.evaluate == NULL && task.get_state && task.set_state);
    CHECK(task.best_metric == 1 && task.higher_is_better);
    CHECK_STR(task.eval_names[task.best_metric], "accuracy");
    nlp_rng r;
    nlp_rng_seed(&r, 42);
    /* three epochs: every example once in each, rows laid out as encoded,
     * padded to the batch's longest; epochs in different orders */
    int narrow = 0;
    uint32_t first_of_epoch[3];
    for (int ep = 0; ep < 3; ep++) {
        int seen[N] = {0};
        size_t rows = 0;
        for (int k = 0; k < 5; k++) {
            nlp_batch b;
            CHECK(task.next_batch(task.ctx, &r, &b) == 0);
            CHECK_EQ_INT(b.B, k < 4 ? B : N - 4 * B);
            CHECK(b.type_ids && b.mask && b.cls_labels && !b.cls_pos && !b.labels);
            int longest = 0;
            for (int j = 0; j < b.B; j++) {
                const int32_t *row = b.ids + (size_t)j * b.T;
                CHECK(row[0] == 2);
                int i = row[1] - 100;
                CHECK(i >= 0 && i < N);
                if (i < 0 || i >= N) continue;
                if (k == 0 && j == 0) first_of_epoch[ep] = (uint32_t)i;
                seen[i]++;
                CHECK_EQ_INT(b.cls_labels[j], i % L);
                size_t na = d.a_off[i + 1] - d.a_off[i], nb = d.b_off[i + 1] - d.b_off[i];
                int32_t want[T + 2], wt[T + 2], wm[T + 2];
                int len = nlp_cls_encode(&e, d.a + d.a_off[i], na, d.b + d.b_off[i], nb, b.T, want, wt, wm, NULL, NULL);
                CHECK(len > 0 && len <= T);
                if (len > longest) longest = len;
                CHECK(ids_eq(row, want, (size_t)b.T));
                CHECK(ids_eq(b.type_ids + (size_t)j * b.T, wt, (size_t)b.T));
                CHECK(ids_eq(b.mask + (size_t)j * b.T, wm, (size_t)b.T));
            }
            CHECK_EQ_INT(b.T, longest);
            narrow += b.T < T;
            rows += (size_t)b.B;
        }
        int once = 1;
        for (int i = 0; i < N; i++) once &= seen[i] == 1;
        CHECK(once);
        CHECK_EQ_INT(rows, N);
        CHECK_EQ_INT(t.ep.epoch, ep + 1);
    }
    CHECK(narrow > 0); /* padding to the batch, not always to T */
    CHECK(first_of_epoch[0] != first_of_epoch[1] || first_of_epoch[1] != first_of_epoch[2]);

    /* the same generator state gives the same batches, another another; a
     * task restored from its state (and the generator's) goes on alike */
    nlp_cls_task ta, tb, tc;
    nlp_task xa, xb, xc;
    CHECK(nlp_cls_task_init(&ta, &xa, &d, NULL, &e, &cfg, B) == 0);
    CHECK(nlp_cls_task_init(&tb, &xb, &d, NULL, &e, &cfg, B) == 0);
    CHECK(nlp_cls_task_init(&tc, &xc, &d, NULL, &e, &cfg, B) == 0);
    nlp_rng ra, rb, rc;
    nlp_rng_seed(&ra, 7), nlp_rng_seed(&rb, 7), nlp_rng_seed(&rc, 8);
    uint64_t hist[40];
    int same = 1, differ = 0;
    uint64_t st[4];
    nlp_rng saved_r = ra;
    for (int k = 0; k < 40; k++) {
        nlp_batch x, y, z;
        CHECK(xa.next_batch(xa.ctx, &ra, &x) == 0);
        hist[k] = batch_hash(&x);
        CHECK(xb.next_batch(xb.ctx, &rb, &y) == 0);
        CHECK(xc.next_batch(xc.ctx, &rc, &z) == 0);
        same &= hist[k] == batch_hash(&y);
        differ |= hist[k] != batch_hash(&z);
        if (k == 12) { /* in epoch 3, after 3 of its batches: a checkpoint */
            xa.get_state(xa.ctx, st);
            saved_r = ra;
        }
    }
    CHECK(same);
    CHECK(differ);
    CHECK(st[0] == 3 && st[1] == 15 && st[3] == N);
    nlp_cls_task tr;
    nlp_task xr;
    CHECK(nlp_cls_task_init(&tr, &xr, &d, NULL, &e, &cfg, B) == 0);
    CHECK(xr.set_state(xr.ctx, st) == 0);
    int resumed = 1;
    for (int k = 13; k < 40; k++) {
        nlp_batch x;
        CHECK(xr.next_batch(xr.ctx, &saved_r, &x) == 0);
        resumed &= batch_hash(&x) == hist[k];
    }
    CHECK(resumed);
    /* a state from other data is refused */
    uint64_t other[4] = {st[0], st[1], st[2], N + 1};
    CHECK_EQ_INT(xr.set_state(xr.ctx, other), NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "24 examples"), "%s", nlp_errmsg());
    nlp_cls_task_free(&ta), nlp_cls_task_free(&tb), nlp_cls_task_free(&tc), nlp_cls_task_free(&tr);

    /* what the task refuses */
    nlp_cls_task tx;
    nlp_task xx;
    nlp_cls_encoder big = e;
    big.T = cfg.max_positions + 1;
    CHECK_EQ_INT(nlp_cls_task_init(&tx, &xx, &d, NULL, &big, &cfg, B), NLP_EINVAL);
    nlp_cls_encoder g;
    CHECK(nlp_cls_encoder_gpt(&g, 200, 201, 202, 0, T) == 0);
    CHECK_EQ_INT(nlp_cls_task_init(&tx, &xx, &d, NULL, &g, &cfg, B), NLP_EINVAL);
    CHECK_MSG(has(nlp_errmsg(), "GPT inputs for a bert model"), "%s", nlp_errmsg());
    nlp_model_config c2 = cfg;
    c2.num_labels = 2; /* labels 0..2 do not fit */
    CHECK_EQ_INT(nlp_cls_task_init(&tx, &xx, &d, NULL, &e, &c2, B), NLP_EDATA);
    c2.num_labels = 0;
    CHECK_EQ_INT(nlp_cls_task_init(&tx, &xx, &d, NULL, &e, &c2, B), NLP_EINVAL);
    nlp_cls_data single;
    make_data(&single, 4, 3, 0, L, 2);
    CHECK_EQ_INT(nlp_cls_task_init(&tx, &xx, &d, &single, &e, &cfg, B), NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "two texts per example, the validation data one"), "%s", nlp_errmsg());
    single.labelled = 0;
    CHECK_EQ_INT(nlp_cls_task_init(&tx, &xx, &single, NULL, &e, &cfg, B), NLP_EDATA);
    nlp_cls_data_free(&single);
    nlp_cls_task_free(&t);
    nlp_cls_data_free(&d);
}

static void test_task_gpt(void)
{
    enum { N = 9, B = 4, T = 10, L = 2, START = 200, DELIM = 201, EXTRACT = 202, PAD = 0 };
    nlp_cls_data d;
    make_data(&d, N, 6, 0, L, 3);
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_GPT) == 0);
    cfg.num_labels = L;
    nlp_cls_encoder e;
    CHECK(nlp_cls_encoder_gpt(&e, START, DELIM, EXTRACT, PAD, T) == 0);
    nlp_cls_task t;
    nlp_task task;
    CHECK(nlp_cls_task_init(&t, &task, &d, NULL, &e, &cfg, B) == 0);
    nlp_rng r;
    nlp_rng_seed(&r, 1);
    for (int k = 0; k < 3; k++) {
        nlp_batch b;
        CHECK(task.next_batch(task.ctx, &r, &b) == 0);
        CHECK(b.cls_pos && b.labels && b.cls_labels && !b.type_ids && !b.mask);
        for (int j = 0; j < b.B; j++) {
            const int32_t *row = b.ids + (size_t)j * b.T, *lab = b.labels + (size_t)j * b.T;
            int i = row[1] - 100;
            CHECK(row[0] == START && i >= 0 && i < N);
            if (i < 0 || i >= N) continue;
            int len = (int)(d.a_off[i + 1] - d.a_off[i]) + 2;
            CHECK_EQ_INT(b.cls_pos[j], len - 1);
            CHECK_EQ_INT(row[len - 1], EXTRACT);
            int ok = 1;
            for (int q = 0; q < b.T; q++) ok &= q < len ? lab[q] == row[q] : lab[q] == -100 && row[q] == PAD;
            CHECK(ok);
        }
    }
    nlp_cls_task_free(&t);
    nlp_cls_data_free(&d);
}

// --- with models (skipped while the model has no classification head)

/* Validation and prediction against the model's own forward pass: the
 * loss from the logits equals the model's classification loss, the
 * figures are those of the confusion matrix. */
static void check_model_eval(enum nlp_arch arch)
{
    enum { N = 11, L = 3, T = 16 };
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", arch) == 0);
    cfg.num_labels = L;
    cfg.dropout = cfg.attention_dropout = 0;
    nlp_model *m = NULL;
    if (nlp_model_new(&m, &cfg, 5) != 0 || !m) {
        test_skip("no classification model (%s)", nlp_errmsg());
        return;
    }
    nlp_cls_data d;
    make_data(&d, N, 8, arch == NLP_ARCH_BERT, L, 4);
    nlp_cls_encoder e;
    if (arch == NLP_ARCH_BERT) e = (nlp_cls_encoder){.kind = NLP_CLS_BERT, .T = T, .pad = 0, .cls = 2, .sep = 3};
    else CHECK(nlp_cls_encoder_gpt(&e, 200, 201, 202, 0, T) == 0);
    /* one forward over everything, by hand */
    nlp_cls_task t;
    nlp_task task;
    CHECK(nlp_cls_task_init(&t, &task, &d, &d, &e, &cfg, N) == 0);
    nlp_rng r;
    nlp_rng_seed(&r, 1);
    nlp_batch b;
    CHECK(task.next_batch(task.ctx, &r, &b) == 0);
    b.labels = NULL; /* the classification loss alone */
    nlp_losses l;
    int rc = nlp_model_forward(m, &b, &l);
    const float *lg = nlp_model_cls_logits(m);
    if (rc || !lg) {
        test_skip("the model gives no classification logits (%s)", rc ? nlp_errmsg() : "");
        nlp_cls_task_free(&t), nlp_cls_data_free(&d), nlp_model_free(m);
        return;
    }
    /* prediction in batches of 4 (rows padded differently) */
    int32_t pred[N];
    float prob[N], probs[N * L];
    uint64_t cm[L * L] = {0};
    double loss = 0;
    CHECK(nlp_cls_predict(m, &e, &d, 4, pred, prob, probs, cm, &loss) == 0);
    CHECK_NEAR(loss, l.cls_loss, 1e-4);
    CHECK_EQ_INT(nlp_classify_total(cm, L), N);
    int ok = 1;
    for (int i = 0; i < N; i++) {
        ok &= prob[i] > 1.0f / L - 1e-6f && fabsf(probs[i * L] + probs[i * L + 1] + probs[i * L + 2] - 1) < 1e-5f;
        ok &= fabsf(probs[i * L + pred[i]] - prob[i]) < 1e-7f;
    }
    CHECK(ok);
    /* validation through the task: the same numbers */
    t.macro_f1 = nlp_classify_macro_f1;
    nlp_eval ev;
    CHECK(task.evaluate(task.ctx, m, &ev) == 0);
    CHECK_NEAR(ev.v[0], loss, 1e-6); /* batches of 11, not 4: other sums */
    CHECK_NEAR(ev.v[1], nlp_classify_accuracy(cm, L), 1e-12);
    CHECK_NEAR(ev.v[2], nlp_classify_macro_f1(cm, L, NULL), 1e-12);
    CHECK(memcmp(t.cm, cm, sizeof cm) == 0);
    t.macro_f1 = NULL;
    CHECK(task.evaluate(task.ctx, m, &ev) == 0 && isnan(ev.v[2]) && !isnan(ev.v[1]));
    /* unlabelled input: predictions, no loss */
    d.labelled = 0;
    int32_t pred2[N];
    CHECK(nlp_cls_predict(m, &e, &d, 3, pred2, NULL, NULL, NULL, &loss) == 0);
    CHECK(isnan(loss) && memcmp(pred, pred2, sizeof pred) == 0);
    d.labelled = 1;
    /* a training step runs on the task's batches */
    nlp_model_set_training(m, 1);
    CHECK(task.next_batch(task.ctx, &r, &b) == 0);
    CHECK(nlp_model_forward(m, &b, &l) == 0 && isfinite(l.loss) && nlp_model_backward(m) == 0);
    nlp_cls_task_free(&t);
    nlp_cls_data_free(&d);
    nlp_model_free(m);
}

/* GPT's similarity: a pair in both orders, the two rows' states added.
 * Batches hold an example as rows a·b, b·a; the prediction of (b, a) is
 * that of (a, b) bit for bit, wherever the pair sits in a batch and
 * whatever pads it; and it differs from a classifier of the one order. */
static void test_similarity(void)
{
    enum { N = 7, L = 3, T = 24, START = 200, DELIM = 201, EXTRACT = 202 };
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_GPT) == 0);
    cfg.num_labels = L;
    cfg.dropout = cfg.attention_dropout = 0;
    cfg.init_std = 0.2; /* states that differ from row to row */
    nlp_model *m = NULL;
    CHECK(nlp_model_new(&m, &cfg, 5) == 0);
    if (!m) return;
    nlp_cls_data d, sw;
    make_data(&d, N, 9, 1, L, 4);
    make_data(&sw, N, 9, 1, L, 4);
    /* sw: every pair swapped, and in the reverse order (other batches, other padding) */
    int32_t *ta = sw.a, *tb = sw.b;
    size_t *oa = sw.a_off, *ob = sw.b_off;
    sw.a = malloc((d.a_off[N] + d.b_off[N]) * sizeof *sw.a), sw.b = malloc((d.a_off[N] + d.b_off[N]) * sizeof *sw.b);
    sw.a_off = malloc((N + 1) * sizeof *sw.a_off), sw.b_off = malloc((N + 1) * sizeof *sw.b_off);
    sw.a_off[0] = sw.b_off[0] = 0;
    for (size_t i = 0; i < N; i++) {
        const size_t j = N - 1 - i, la = d.a_off[j + 1] - d.a_off[j], lb = d.b_off[j + 1] - d.b_off[j];
        memcpy(sw.a + sw.a_off[i], d.b + d.b_off[j], lb * sizeof *sw.a);
        memcpy(sw.b + sw.b_off[i], d.a + d.a_off[j], la * sizeof *sw.b);
        sw.a_off[i + 1] = sw.a_off[i] + lb, sw.b_off[i + 1] = sw.b_off[i] + la;
        sw.label[i] = d.label[j];
    }
    free(ta), free(tb), free(oa), free(ob);
    nlp_cls_encoder e;
    CHECK(nlp_cls_encoder_gpt(&e, START, DELIM, EXTRACT, 0, T) == 0);
    e.pair_sum = 1;
    /* the layout: two rows per example, b·a after a·b */
    nlp_cls_task t;
    nlp_task task;
    CHECK(nlp_cls_task_init(&t, &task, &d, NULL, &e, &cfg, 3) == 0);
    nlp_rng r;
    nlp_rng_seed(&r, 1);
    nlp_batch b;
    CHECK(task.next_batch(task.ctx, &r, &b) == 0);
    CHECK(b.B == 6 && b.pair_sum == 1 && b.cls_pos && b.labels);
    int ok = 1;
    for (int j = 0; j < 3; j++) { /* text_b's ids (5..94) come before text_a's (100 + i ...): b·a, then a·b */
        const int32_t *x = b.ids + (size_t)(2 * j) * b.T, *y = x + b.T;
        int i = -1, la = 0, lb = 0;
        for (int q = 0; q < b.T; q++)
            if (y[q] >= 100 && y[q] < 100 + N) i = y[q] - 100;
        if (i < 0) {
            ok = 0;
            continue;
        }
        la = (int)(d.a_off[i + 1] - d.a_off[i]), lb = (int)(d.b_off[i + 1] - d.b_off[i]);
        ok &= x[0] == START && x[1 + lb] == DELIM && x[2 + lb] == 100 + i && x[2 + la + lb] == EXTRACT;
        ok &= memcmp(x + 1, d.b + d.b_off[i], (size_t)lb * sizeof *x) == 0 && b.cls_pos[2 * j] == 2 + la + lb;
        ok &= y[0] == START && y[1] == 100 + i && y[1 + la] == DELIM && y[2 + la + lb] == EXTRACT;
        ok &= b.cls_pos[2 * j + 1] == 2 + la + lb && b.cls_labels[j] == d.label[i];
    }
    CHECK_MSG(ok, "similarity rows are not y·x, x·y in the order of their ids");
    nlp_cls_task_free(&t);
    /* the pairs swapped in place: the very same batches (the kernels see
     * the same rows in the same places) */
    nlp_cls_data s1 = d;
    s1.a = d.b, s1.b = d.a, s1.a_off = d.b_off, s1.b_off = d.a_off;
    nlp_cls_task t1, t2;
    nlp_task k1, k2;
    CHECK(nlp_cls_task_init(&t1, &k1, &d, NULL, &e, &cfg, 3) == 0);
    CHECK(nlp_cls_task_init(&t2, &k2, &s1, NULL, &e, &cfg, 3) == 0);
    nlp_rng r1, r2;
    nlp_rng_seed(&r1, 4), nlp_rng_seed(&r2, 4);
    int same_rows = 1;
    for (int q = 0; q < 3; q++) {
        nlp_batch b1, b2;
        CHECK(k1.next_batch(k1.ctx, &r1, &b1) == 0 && k2.next_batch(k2.ctx, &r2, &b2) == 0);
        same_rows &= b1.B == b2.B && b1.T == b2.T && !memcmp(b1.ids, b2.ids, (size_t)b1.B * b1.T * sizeof *b1.ids);
        same_rows &= !memcmp(b1.cls_pos, b2.cls_pos, (size_t)b1.B * sizeof *b1.cls_pos);
    }
    CHECK_MSG(same_rows, "(a, b) and (b, a) make different rows");
    nlp_cls_task_free(&t1), nlp_cls_task_free(&t2);
    /* predictions: the same bits, in batches of 3 and of 2 */
    float p1[N * L], p2[N * L];
    int32_t y1[N], y2[N];
    CHECK(nlp_cls_predict(m, &e, &d, 3, y1, NULL, p1, NULL, NULL) == 0);
    CHECK(nlp_cls_predict(m, &e, &sw, 2, y2, NULL, p2, NULL, NULL) == 0);
    int same = 1, spread = 0;
    for (int i = 0; i < N; i++) {
        same &= memcmp(p1 + i * L, p2 + (N - 1 - i) * L, L * sizeof *p1) == 0 && y1[i] == y2[N - 1 - i];
        spread |= fabsf(p1[i * L] - p1[0]) > 1e-6f;
    }
    CHECK_MSG(same, "swapping a and b changed a similarity prediction");
    CHECK(spread); /* the model tells the examples apart: not a constant */
    /* one order alone is not symmetric */
    e.pair_sum = 0;
    CHECK(nlp_cls_predict(m, &e, &d, 3, y1, NULL, p1, NULL, NULL) == 0);
    CHECK(nlp_cls_predict(m, &e, &sw, 2, y2, NULL, p2, NULL, NULL) == 0);
    int differ = 0;
    for (int i = 0; i < N; i++) differ |= memcmp(p1 + i * L, p2 + (N - 1 - i) * L, L * sizeof *p1) != 0;
    CHECK(differ);
    /* similarity is GPT's, on pairs */
    e.pair_sum = 1;
    d.pair = 0;
    CHECK_EQ_INT(nlp_cls_predict(m, &e, &d, 3, y1, NULL, NULL, NULL, NULL), NLP_EDATA);
    d.pair = 1;
    nlp_cls_data_free(&d), nlp_cls_data_free(&sw);
    nlp_model_free(m);
}

static void test_model_bert(void) { check_model_eval(NLP_ARCH_BERT); }
static void test_model_gpt(void) { check_model_eval(NLP_ARCH_GPT); }

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    omp_set_num_threads(1);
    RUN(test_metrics);
    RUN(test_metrics_json);
    RUN(test_read);
    RUN(test_truncate);
    RUN(test_encode_bert);
    RUN(test_encode_gpt);
    RUN(test_score_logits);
    RUN(test_task_bert);
    RUN(test_task_gpt);
    RUN(test_model_bert);
    RUN(test_model_gpt);
    RUN(test_similarity);
    return TEST_END();
}
