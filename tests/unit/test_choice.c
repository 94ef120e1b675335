/*
 * test_choice.c — multiple choice (train/choice): the TSV reader (labels,
 * choices per line, empty fields, a line with another number of choices,
 * unlabelled lines, blocks read apart as one file), the rows of a batch (a
 * context with each of its choices, GPT's and BERT's layouts), the softmax
 * over an example's choices against a hand computation from the model's
 * scores of each row on its own, the loss and accuracy of validation, and
 * the training task's epochs and resumed state.
 */
#include "base/err.h"
#include "base/rng.h"
#include "model/config.h"
#include "model/model.h"
#include "tok/tokenizer.h"
#include "train/choice.h"
#include "test.h"

#include <omp.h>

// --- helpers

/* A BERT WordPiece tokenizer over a small vocabulary (ids in order). */
static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on",
                                    "mat",   "dog",   "ran",   "a",     "good",   "bad", "movie", "##s"};
enum { ID_PAD, ID_UNK, ID_CLS, ID_SEP, ID_MASK, ID_THE, ID_CAT, ID_SAT, ID_ON, ID_MAT, ID_DOG, ID_RAN, ID_A, ID_GOOD,
       ID_BAD, ID_MOVIE, ID_S, NVOCAB };

static nlp_tokenizer *tokenizer(void)
{
    nlp_tok_spec s = {0};
    s.vocab = nlp_vocab_new(NVOCAB);
    for (int i = 0; i < NVOCAB; i++) nlp_vocab_add(s.vocab, vocab[i], strlen(vocab[i]), NULL);
    s.model = NLP_MODEL_WORDPIECE;
    nlp_tok_spec_pipeline(&s, NLP_PIPE_BERT, NULL);
    nlp_tokenizer *tk = NULL;
    if (nlp_tokenizer_new(&tk, &s)) nlp_tok_spec_free(&s);
    return tk;
}

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

static int has(const char *msg, const char *part) { return strstr(msg, part) != NULL; }

/* Text j of example i as ids. */
static const int32_t *text(const nlp_choice_data *d, size_t i, int j, size_t *n)
{
    size_t at = i * ((size_t)d->k + 1) + (size_t)j;
    *n = d->off[at + 1] - d->off[at];
    return d->ids + d->off[at];
}

// --- reading

static void test_read(void)
{
    nlp_tokenizer *tk = tokenizer();
    nlp_choice_read_opts o = {.tk = tk, .labelled = 1, .threads = 1};
    nlp_choice_data d;
    const char *p = tmpfile_with("c1.tsv", "2\tthe cat\ta dog\tthe mat\tcats sat\n0\tgood\tbad\ton\tran\r\n");
    CHECK_EQ_INT(nlp_choice_read(&d, p, &o), 0);
    CHECK_EQ_INT(d.n, 2);
    CHECK_EQ_INT(d.k, 3);
    CHECK(d.labelled && d.label[0] == 2 && d.label[1] == 0);
    size_t n;
    const int32_t *x = text(&d, 0, 3, &n); /* "cats sat": cat ##s sat */
    CHECK(n == 3 && x[0] == ID_CAT && x[1] == ID_S && x[2] == ID_SAT);
    x = text(&d, 1, 3, &n); /* "ran", its CR dropped */
    CHECK(n == 1 && x[0] == ID_RAN);
    x = text(&d, 1, 0, &n);
    CHECK(n == 1 && x[0] == ID_GOOD);
    CHECK_EQ_INT(d.tokens, 13);
    nlp_choice_data_free(&d);

    /* a line with another number of choices: the file and the line */
    p = tmpfile_with("c2.tsv", "1\tthe\ta\tcat\n0\tthe\ta\tcat\tdog\n");
    CHECK_EQ_INT(nlp_choice_read(&d, p, &o), NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "c2.tsv' line 2 has 3 choices but line 1 has 2"), "%s", nlp_errmsg());
    /* or another number than the caller's */
    p = tmpfile_with("c3.tsv", "1\tthe\ta\tcat\n");
    o.k = 4;
    CHECK_EQ_INT(nlp_choice_read(&d, p, &o), NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "c3.tsv' line 1 has 2 choices where 4 are expected"), "%s", nlp_errmsg());
    o.k = 0;
    /* too few fields, a label that is no choice, empty fields and lines */
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"1\tthe\ta\n", "line 1: 3 fields: expected label<TAB>context<TAB>choice_0<TAB>choice_1... (2 choices"},
        {"0\tthe\ta\tcat\n3\tthe\ta\tcat\n", "line 2: label '3' is not the index of a choice (0 to 1)"},
        {"-1\tthe\ta\tcat\n", "line 1: label '-1' is not the index of a choice"},
        {"one\tthe\ta\tcat\n", "line 1: label 'one' is not"},
        {"0\tthe\ta\t\n", "line 1: empty choice 1"},
        {"0\t\ta\tcat\n", "line 1: empty context"},
        {"\tthe\ta\tcat\n", "line 1: empty label"},
        {"0\tthe\ta\tcat\n\n", "line 2: empty line"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        p = tmpfile_with("bad.tsv", bad[i].text);
        CHECK_EQ_INT(nlp_choice_read(&d, p, &o), NLP_EDATA);
        CHECK_MSG(has(nlp_errmsg(), bad[i].msg) && has(nlp_errmsg(), "bad.tsv'"), "case %zu: %s", i, nlp_errmsg());
    }
    /* unlabelled lines: a context and its choices */
    o.labelled = 0;
    p = tmpfile_with("u.tsv", "the cat\tsat\ton\n");
    CHECK_EQ_INT(nlp_choice_read(&d, p, &o), 0);
    CHECK(d.n == 1 && d.k == 2 && !d.labelled && !d.label);
    nlp_choice_data_free(&d);
    /* an empty file: no examples */
    p = tmpfile_with("e.tsv", "");
    CHECK_EQ_INT(nlp_choice_read(&d, p, &o), 0);
    CHECK_EQ_INT(d.n, 0);
    nlp_choice_data_free(&d);
    /* lines parsed in blocks: line numbers and the choices of line 1 carry over */
    o.labelled = 1;
    const char *lines[] = {"0\tthe\ta\tcat", "1\tdog\tran\tsat", "1\tthe\ta\tcat\tmat"};
    const size_t len[] = {strlen(lines[0]), strlen(lines[1]), strlen(lines[2])};
    int k = 0;
    CHECK_EQ_INT(nlp_choice_parse(&d, lines, len, 2, "blk", 0, &k, &o), 0);
    CHECK_EQ_INT(k, 2);
    nlp_choice_data_free(&d);
    CHECK_EQ_INT(nlp_choice_parse(&d, lines + 2, len + 2, 1, "blk", 2, &k, &o), NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "'blk' line 3 has 3 choices but line 1 has 2"), "%s", nlp_errmsg());
    nlp_tokenizer_free(tk);
}

// --- data by hand

/* n examples of k choices: the context [100 + i, ...], choice c [150 + c, ...]. */
static void make_data(nlp_choice_data *d, size_t n, int k, int maxlen, uint64_t seed)
{
    nlp_rng r;
    nlp_rng_seed(&r, seed);
    memset(d, 0, sizeof *d);
    d->n = n, d->k = k, d->labelled = 1;
    const size_t K1 = (size_t)k + 1;
    d->label = malloc(n * sizeof *d->label);
    d->ids = malloc(n * K1 * (size_t)maxlen * sizeof *d->ids);
    d->off = malloc((n * K1 + 1) * sizeof *d->off);
    d->off[0] = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < K1; j++) {
            int len = 1 + (int)nlp_rng_below(&r, (uint64_t)maxlen);
            d->ids[at] = j ? 150 + (int32_t)j - 1 : 100 + (int32_t)i;
            for (int q = 1; q < len; q++) d->ids[at + q] = 5 + (int32_t)nlp_rng_below(&r, 90);
            at += (size_t)len;
            d->off[i * K1 + j + 1] = at;
        }
        d->label[i] = (int32_t)nlp_rng_below(&r, (uint64_t)k);
    }
    d->tokens = at;
}

// --- the rows of a batch

static void test_layout(void)
{
    enum { N = 5, K = 3, B = 2, T = 12, START = 200, DELIM = 201, EXTRACT = 202 };
    nlp_choice_data d;
    make_data(&d, N, K, 5, 2);
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_GPT) == 0);
    cfg.num_labels = 1;
    nlp_cls_encoder e;
    CHECK(nlp_cls_encoder_gpt(&e, START, DELIM, EXTRACT, 0, T) == 0);
    nlp_choice_task t;
    nlp_task task;
    CHECK_EQ_INT(nlp_choice_task_init(&t, &task, &d, NULL, &e, &cfg, B), 0);
    nlp_rng r;
    nlp_rng_seed(&r, 3);
    int seen[N] = {0}, ok = 1;
    for (int s = 0; s < 3; s++) { /* one epoch: 2 + 2 + 1 examples */
        nlp_batch b;
        CHECK(task.next_batch(task.ctx, &r, &b) == 0);
        CHECK_EQ_INT(b.choices, K);
        CHECK_EQ_INT(b.B, (s < 2 ? B : 1) * K);
        CHECK(b.cls_pos && b.labels && b.cls_labels && !b.type_ids);
        for (int row = 0; row < b.B; row++) {
            const int32_t *x = b.ids + (size_t)row * b.T;
            const int i = x[1] - 100, c = row % K;
            if (i < 0 || i >= N) {
                ok = 0;
                continue;
            }
            size_t nc, nx;
            text(&d, (size_t)i, 0, &nc);
            const int32_t *ch = text(&d, (size_t)i, 1 + c, &nx);
            size_t kc, kx; /* truncated as cls.h truncates a pair */
            nlp_cls_truncate(nc, nx, T - 3, &kc, &kx);
            ok &= x[0] == START && x[1 + kc] == DELIM && memcmp(x + 2 + kc, ch, kx * sizeof *x) == 0;
            ok &= x[2 + kc + kx] == EXTRACT && b.cls_pos[row] == (int32_t)(2 + kc + kx);
            if (c == 0) seen[i]++, ok &= b.cls_labels[row / K] == d.label[i];
        }
    }
    CHECK_MSG(ok, "rows are not [START] context [DELIM] choice [EXTRACT]");
    int once = 1;
    for (int i = 0; i < N; i++) once &= seen[i] == 1;
    CHECK_MSG(once, "an epoch does not draw every example once");
    /* the epoch's state resumes to the same batches */
    uint64_t st[4];
    task.get_state(task.ctx, st);
    nlp_rng r2 = r;
    nlp_batch b1, b2;
    CHECK(task.next_batch(task.ctx, &r, &b1) == 0);
    int32_t first[B * K * T];
    memcpy(first, b1.ids, (size_t)b1.B * b1.T * sizeof *first);
    const int B1 = b1.B, T1 = b1.T;
    nlp_choice_task t2;
    nlp_task task2;
    CHECK_EQ_INT(nlp_choice_task_init(&t2, &task2, &d, NULL, &e, &cfg, B), 0);
    CHECK_EQ_INT(task2.set_state(task2.ctx, st), 0);
    CHECK(task2.next_batch(task2.ctx, &r2, &b2) == 0);
    CHECK(b2.B == B1 && b2.T == T1 && memcmp(first, b2.ids, (size_t)B1 * T1 * sizeof *first) == 0);
    st[3] = N + 1;
    CHECK_EQ_INT(task2.set_state(task2.ctx, st), NLP_EDATA);
    nlp_choice_task_free(&t2);
    nlp_choice_task_free(&t);
    /* BERT: [CLS] context [SEP] choice [SEP], the choice of segment 1 */
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_BERT) == 0);
    cfg.num_labels = 1;
    e = (nlp_cls_encoder){.kind = NLP_CLS_BERT, .T = T, .pad = ID_PAD, .cls = ID_CLS, .sep = ID_SEP};
    CHECK_EQ_INT(nlp_choice_task_init(&t, &task, &d, NULL, &e, &cfg, B), 0);
    nlp_batch b;
    CHECK(task.next_batch(task.ctx, &r, &b) == 0);
    const int32_t *x = b.ids, *ty = b.type_ids;
    const int i = x[1] - 100;
    size_t nc, nx, kc, kx;
    text(&d, (size_t)i, 0, &nc);
    text(&d, (size_t)i, 1, &nx);
    nlp_cls_truncate(nc, nx, T - 3, &kc, &kx);
    CHECK(x[0] == ID_CLS && x[1 + kc] == ID_SEP && x[2 + kc + kx] == ID_SEP && ty[1 + kc] == 0 && ty[2 + kc] == 1);
    CHECK(b.mask && !b.cls_pos && !b.labels);
    nlp_choice_task_free(&t);
    /* a head of more than one unit is no multiple-choice head */
    cfg.num_labels = 2;
    CHECK_EQ_INT(nlp_choice_task_init(&t, &task, &d, NULL, &e, &cfg, B), NLP_EINVAL);
    nlp_choice_data_free(&d);
}

// --- the softmax over choices, against the model's scores row by row

static void check_softmax(enum nlp_arch arch)
{
    enum { N = 6, K = 4, T = 16 };
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", arch) == 0);
    cfg.num_labels = 1;
    cfg.dropout = cfg.attention_dropout = 0;
    cfg.init_std = 0.2;
    nlp_model *m = NULL;
    CHECK(nlp_model_new(&m, &cfg, 7) == 0);
    if (!m) return;
    nlp_choice_data d;
    make_data(&d, N, K, 6, 5);
    nlp_cls_encoder e;
    if (arch == NLP_ARCH_BERT) e = (nlp_cls_encoder){.kind = NLP_CLS_BERT, .T = T, .pad = 0, .cls = 2, .sep = 3};
    else CHECK(nlp_cls_encoder_gpt(&e, 200, 201, 202, 0, T) == 0);
    int32_t pred[N];
    float prob[N], probs[N * K];
    uint64_t correct = 0;
    double loss;
    CHECK_EQ_INT(nlp_choice_predict(m, &e, &d, 4, pred, prob, probs, &correct, &loss), 0);
    /* by hand: each (context, choice) row alone through the model (no
     * choices: a head of one unit gives its score), softmax in double */
    int32_t ids[T], type[T], mask[T], pos;
    double nll = 0, worst = 0;
    uint64_t right = 0;
    int argmax_ok = 1;
    for (int i = 0; i < N; i++) {
        double s[K], mx = -1e300, z = 0;
        size_t nc, nx;
        const int32_t *ctx = text(&d, (size_t)i, 0, &nc);
        for (int c = 0; c < K; c++) {
            const int32_t *x = text(&d, (size_t)i, 1 + c, &nx);
            int len = nlp_cls_encode(&e, ctx, nc, x, nx, T, ids, type, mask, NULL, &pos);
            nlp_batch b = {.B = 1, .T = len, .ids = ids};
            if (arch == NLP_ARCH_BERT) b.type_ids = type, b.mask = mask;
            else b.cls_pos = &pos;
            CHECK(nlp_model_forward(m, &b, NULL) == 0);
            s[c] = nlp_model_cls_logits(m)[0];
            if (s[c] > mx) mx = s[c];
        }
        int best = 0;
        for (int c = 0; c < K; c++) {
            z += exp(s[c] - mx);
            if (s[c] > s[best]) best = c;
        }
        for (int c = 0; c < K; c++) worst = fmax(worst, fabs(exp(s[c] - mx) / z - probs[i * K + c]));
        argmax_ok &= pred[i] == best && fabsf(prob[i] - probs[i * K + best]) == 0;
        nll += log(z) + mx - s[d.label[i]];
        right += best == d.label[i];
    }
    CHECK_MSG(worst < 2e-6, "%s: choice probabilities off by %.3g from the rows' own scores", nlp_arch_name(arch), worst);
    CHECK(argmax_ok);
    CHECK_NEAR(loss, nll / N, 1e-5);
    CHECK_EQ_INT(correct, right);
    /* the probabilities are not uniform: the test compares something */
    CHECK(fabsf(probs[0] - 0.25f) > 1e-4f || fabsf(probs[1] - 0.25f) > 1e-4f);
    /* validation gives the same figures; the training loss is that cross-entropy */
    nlp_choice_task t;
    nlp_task task;
    CHECK_EQ_INT(nlp_choice_task_init(&t, &task, &d, &d, &e, &cfg, N), 0);
    nlp_eval ev;
    CHECK(task.evaluate(task.ctx, m, &ev) == 0);
    CHECK_NEAR(ev.v[0], loss, 1e-5);
    CHECK_NEAR(ev.v[1], (double)right / N, 1e-12);
    nlp_rng r;
    nlp_rng_seed(&r, 1);
    nlp_batch b;
    nlp_losses l;
    CHECK(task.next_batch(task.ctx, &r, &b) == 0);
    b.labels = NULL; /* the choice loss alone (GPT's LM loss is model.h's) */
    CHECK(nlp_model_forward(m, &b, &l) == 0);
    CHECK_NEAR(l.cls_loss, nll / N, 1e-5);
    nlp_choice_task_free(&t);
    nlp_choice_data_free(&d);
    nlp_model_free(m);
}

static void test_softmax_gpt(void) { check_softmax(NLP_ARCH_GPT); }
static void test_softmax_bert(void) { check_softmax(NLP_ARCH_BERT); }

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    omp_set_num_threads(1);
    RUN(test_read);
    RUN(test_layout);
    RUN(test_softmax_gpt);
    RUN(test_softmax_bert);
    return TEST_END();
}
