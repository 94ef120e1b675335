/*
 * test_span.c — extractive question answering: token offsets through
 * BERT's normalizer and WordPiece (lib/tok: accents, case, decomposed
 * marks, dropped characters, Chinese characters, unknown words; the ids
 * those of nlp_tokenizer_encode_ids, every token's bytes normalizing to its
 * text), SQuAD's exact match and F1 (eval/squad) against numbers computed
 * by the official definitions' script, the SQuAD reader (answer_start in
 * characters, a mismatch an error naming file and item, question<TAB>
 * passage lines), run_squad's windows and targets, and the best span of a
 * tiny model against a search over its own logits, mapped back to the
 * passage's bytes, whole words only.
 */
#include "base/err.h"
#include "base/rng.h"
#include "eval/squad.h"
#include "model/config.h"
#include "model/model.h"
#include "tok/tokenizer.h"
#include "train/span.h"
#include "test.h"

#include <omp.h>

// --- helpers

/* A BERT WordPiece tokenizer (uncased, or cased) over a small vocabulary. */
static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", ",", "!", "the",
                                    "naive", "istanbul", "tower", "eiffel", "in", "paris", "is", "where", "?", "##s",
                                    "new", "york", "19", "##84", "ab", "Hello", "He", "##llo", ".", "(", ")", "-",
                                    "what", "city", "a", "built", "was", "when", "it", "609", "610", "–", "zurich",
                                    "##o", "##f"};
#define NV ((int)(sizeof vocab / sizeof *vocab))
enum { ID_PAD, ID_UNK, ID_CLS, ID_SEP };

static nlp_tokenizer *tokenizer(int lowercase)
{
    nlp_tok_spec s = {0};
    s.vocab = nlp_vocab_new(NV);
    for (int i = 0; i < NV; i++) nlp_vocab_add(s.vocab, vocab[i], strlen(vocab[i]), NULL);
    s.model = NLP_MODEL_WORDPIECE;
    nlp_tok_spec_pipeline(&s, NLP_PIPE_BERT, NULL);
    nlp_tok_spec_bert_case(&s, lowercase, -1);
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

// --- offsets

/* Every token's bytes, normalized alone, are the token's text (## taken
 * off), unless it is [UNK] (a whole word); ids as encode_ids gives them;
 * tokens in order, within the text, not overlapping. */
static int check_offsets(const nlp_tokenizer *tk, const char *s, int verbose)
{
    nlp_tok_state *st = nlp_tok_state_new(tk);
    nlp_ids ids = {0}, off = {0}, ref = {0};
    int ok = nlp_tokenizer_encode_offsets(tk, st, s, strlen(s), &ids, &off) == 0;
    ok &= nlp_tokenizer_encode_ids(tk, st, s, strlen(s), 1, &ref) == 0;
    ok &= ids.n == ref.n && off.n == 2 * ids.n && (!ids.n || memcmp(ids.v, ref.v, ids.n * sizeof *ids.v) == 0);
    const nlp_tok_spec *sp = nlp_tokenizer_spec(tk);
    nlp_buf norm = {0}, tmp = {0};
    int32_t last = 0;
    for (size_t i = 0; ok && i < ids.n; i++) {
        const int32_t a = off.v[2 * i], b = off.v[2 * i + 1];
        ok &= a >= last && b > a && (size_t)b <= strlen(s);
        last = a;
        if (!ok) break;
        size_t tn;
        const char *t = nlp_tokenizer_id_to_token(tk, ids.v[i], &tn);
        if (ids.v[i] == ID_UNK) continue;
        if (tn > 2 && memcmp(t, "##", 2) == 0) t += 2, tn -= 2;
        ok &= nlp_normalize(sp->norm, sp->n_norm, s + a, (size_t)(b - a), &norm, &tmp) == 0;
        ok &= norm.len == tn && memcmp(norm.data, t, tn) == 0;
        if (!ok && verbose) printf("    '%s': token '%.*s' at [%d, %d) normalizes to '%.*s'\n", s, (int)tn, t, a, b,
                                   (int)norm.len, norm.data);
    }
    nlp_buf_free(&norm), nlp_buf_free(&tmp);
    nlp_ids_free(&ids), nlp_ids_free(&off), nlp_ids_free(&ref);
    nlp_tok_state_free(st);
    return ok;
}

/* The offsets of s as "a-b a-b ..." */
static void offsets_of(const nlp_tokenizer *tk, const char *s, char *out, size_t cap)
{
    nlp_tok_state *st = nlp_tok_state_new(tk);
    nlp_ids ids = {0}, off = {0};
    out[0] = 0;
    if (nlp_tokenizer_encode_offsets(tk, st, s, strlen(s), &ids, &off) == 0)
        for (size_t i = 0, k = 0; i < ids.n; i++)
            k += (size_t)snprintf(out + k, cap - k, "%s%d-%d", i ? " " : "", off.v[2 * i], off.v[2 * i + 1]);
    nlp_ids_free(&ids), nlp_ids_free(&off);
    nlp_tok_state_free(st);
}

static void test_offsets(void)
{
    nlp_tokenizer *tk = tokenizer(1), *cased = tokenizer(0);
    char got[512];
    /* case and an accent folded: "Héllo" is one token of 6 bytes */
    offsets_of(tk, "H\xc3\xa9llo, WORLD!", got, sizeof got);
    CHECK_STR(got, "0-6 6-7 8-13 13-14");
    /* a decomposed accent (e + U+0308) stays inside its token, as does the
     * dotted capital I whose lowercase is two characters */
    offsets_of(tk, "nai\xcc\x88ve \xc4\xb0stanbul", got, sizeof got);
    CHECK_STR(got, "0-7 8-17");
    /* a word piece after its head; a number cut in two pieces */
    offsets_of(tk, "towers 1984", got, sizeof got);
    CHECK_STR(got, "0-5 5-6 7-9 9-11");
    /* a zero-width space (deleted by the normalizer) inside "ab"; white space runs */
    offsets_of(tk, "a\xe2\x80\x8b" "b  \t the", got, sizeof got);
    CHECK_STR(got, "0-5 9-12");
    /* an unknown word covers its word; Chinese characters are words of one character */
    offsets_of(tk, "xyzzy \xe6\x9d\xb1\xe4\xba\xac!", got, sizeof got);
    CHECK_STR(got, "0-5 6-9 9-12 12-13");
    /* special tokens' text is text here */
    offsets_of(tk, "[CLS] the", got, sizeof got);
    CHECK_STR(got, "0-1 1-4 4-5 6-9");
    /* cased: "Hello" whole, "HELLO" unknown */
    offsets_of(cased, "Hello HELLO", got, sizeof got);
    CHECK_STR(got, "0-5 6-11");
    static const char *const texts[] = {
        "H\xc3\xa9llo, WORLD! The Eiffel tower is in Paris.",
        "Z\xc3\xbcrich (609\xe2\x80\x93" "610) was built when?",
        "  leading and trailing  ",
        "nai\xcc\x88ve NA\xc3\x8fVE na\xc3\xafve",
        "\xe6\x9d\xb1\xe4\xba\xac\xe3\x81\xa8 Tokyo",
        "tab\tnew\nline\r\nend \xc2\xa0nbsp",
        "ab\xe2\x80\x8b\xe2\x80\x8b" "cd \xef\xbb\xbf" "bom",
        "",
        "!!!...",
        "Hello HELLO hello",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        CHECK_MSG(check_offsets(tk, texts[i], 1), "uncased: '%s'", texts[i]);
        CHECK_MSG(check_offsets(cased, texts[i], 1), "cased: '%s'", texts[i]);
    }
    /* random text from a mixed alphabet: the ids are encode_ids' and the
     * offsets round-trip */
    static const char *const parts[] = {"hello", "World", "\xc3\xa9", "e\xcc\x81", " ", "  ", ",", "!", "\xe6\x9d\xb1",
                                        "\xe2\x80\x8b", "N\xc3\xaf", "19", "84", "(", "\t", "\xc4\xb0", "\xce\xa3"};
    nlp_rng r;
    nlp_rng_seed(&r, 7);
    int ok = 1;
    for (int k = 0; k < 300 && ok; k++) {
        char s[256] = "";
        int parts_n = 1 + (int)nlp_rng_below(&r, 20);
        for (int j = 0; j < parts_n; j++) strcat(s, parts[nlp_rng_below(&r, sizeof parts / sizeof *parts)]);
        ok &= check_offsets(tk, s, 1) && check_offsets(cased, s, 1);
    }
    CHECK(ok);
    nlp_tokenizer_free(tk), nlp_tokenizer_free(cased);
}

// --- SQuAD's metrics

static void test_metric(void)
{
    /* Golden values: the official v1.1 definitions as shared/data/qa/
     * squad_eval.py has them, run with /usr/bin/python3 on these pairs:
     *   import squad_eval as S; print(S.exact(p, g), S.token_f1(p, g))
     * (prediction, gold, exact match, F1). */
    static const struct {
        const char *pred, *gold;
        double em, f1;
    } cases[] = {
        {"The Eiffel Tower", "Eiffel tower", 1, 1},
        {"a cat, the dog", "cat dog", 1, 1},
        {"an apple", "An Apple!", 1, 1},
        {"Paris", "London", 0, 0},
        {"New York City", "New York", 0, 0.8},
        {"the the the", "the", 1, 0},
        {"A", ".", 1, 0},
        {"", "A", 1, 0},
        {"609\xe2\x80\x93" "610", "609", 0, 0},
        {"(609\xe2\x80\x93" "610)", "609\xe2\x80\x93" "610", 1, 1},
        {"Th\xc3\xa9 cat", "th\xc3\xa9 CAT", 1, 1},
        {"the\xcc\x81 end", "end", 0, 0.6666666666666666},
        {"\xc4\xb0stanbul", "i\xcc\x87stanbul", 1, 1},
        {"\xce\xa3\xce\x9f\xce\xa6\xce\x9f\xce\xa3", "\xcf\x83\xce\xbf\xcf\x86\xce\xbf\xcf\x82", 1, 1},
        {"a_b c", "ab c", 1, 1},
        {"the3 dogs", "dogs", 0, 0.6666666666666666},
        {"na\xc3\xafve\xc2\xa0" "approach", "naive approach", 0, 0.5},
        {"red red blue", "red blue blue", 0, 0.6666666666666666},
        {"don't stop", "dont stop", 1, 1},
        {"\xc3\x9c" "ber-cool", "\xc3\xbc" "bercool", 1, 1},
        {"an.the,a", "", 0, 0},
        {"anthem", "them", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double em = -1, f1 = -1;
        CHECK_EQ_INT(nlp_squad_score(cases[i].pred, strlen(cases[i].pred), cases[i].gold, strlen(cases[i].gold), &em, &f1), 0);
        CHECK_MSG(em == cases[i].em && fabs(f1 - cases[i].f1) < 1e-12, "'%s' / '%s': em %g f1 %.17g, want %g %.17g",
                  cases[i].pred, cases[i].gold, em, f1, cases[i].em, cases[i].f1);
    }
    nlp_buf b = {0};
    CHECK_EQ_INT(nlp_squad_normalize("the\xcc\x81 end", strlen("the\xcc\x81 end"), &b), 0);
    CHECK(b.len == 6 && memcmp(b.data, "\xcc\x81 end", 6) == 0);
    nlp_buf_free(&b);
    /* the maximum over gold answers, each figure apart */
    const char *gold[] = {"New York", "the city of New York City", "NYC"};
    const size_t glen[] = {8, 25, 3};
    double em, f1;
    CHECK_EQ_INT(nlp_squad_score_max("New York City", 13, gold, glen, 3, &em, &f1), 0);
    /* squad_eval: max(0.8, 2·(3/3)(3/5)/(3/3+3/5) = 0.75, 0) = 0.8; em 0 */
    CHECK(em == 0);
    CHECK_NEAR(f1, 0.8, 1e-12);
    CHECK_EQ_INT(nlp_squad_score_max("NYC", 3, gold, glen, 3, &em, &f1), 0);
    CHECK(em == 1 && f1 == 1);
}

// --- reading SQuAD

static const char squad[] =
    "{\"version\": \"1.1\", \"data\": [{\"title\": \"t\", \"paragraphs\": ["
    "{\"context\": \"Z\xc3\xbcrich (609\xe2\x80\x93" "610) was built. The Eiffel tower is in Paris.\", \"qas\": ["
    "{\"id\": \"q1\", \"question\": \"When was it built?\", \"answers\": [{\"text\": \"609\xe2\x80\x93" "610\", "
    "\"answer_start\": 8}, {\"text\": \"609\", \"answer_start\": 8}]},"
    "{\"id\": \"q2\", \"question\": \"Where is the Eiffel tower?\", \"answers\": [{\"text\": \"Paris\", \"answer_start\": 51}]}]},"
    "{\"context\": \"Hello world\", \"qas\": [{\"id\": \"q3\", \"question\": \"what\", \"answers\": [{\"text\": \"world\", "
    "\"answer_start\": 6}]}]}]}]}";

static void test_read(void)
{
    nlp_tokenizer *tk = tokenizer(1);
    nlp_span_read_opts o = {.tk = tk, .labelled = 1, .threads = 2};
    nlp_span_data d;
    const char *p = tmpfile_with("s.json", squad);
    if (nlp_span_read(&d, p, &o) != 0) {
        CHECK_MSG(0, "%s", nlp_errmsg());
        nlp_tokenizer_free(tk);
        return;
    }
    CHECK(d.n == 3 && d.np == 2 && d.labelled);
    CHECK(d.passage[0] == 0 && d.passage[1] == 0 && d.passage[2] == 1);
    CHECK_STR(d.str + d.qid[1], "q2");
    CHECK(d.ans[0] == 0 && d.ans[1] == 2 && d.ans[2] == 3 && d.ans[3] == 4);
    /* answer_start counts characters: "Zürich (" is 8 of them and 9 bytes */
    CHECK(d.abeg[0] == 9 && d.aend[0] == 9 + 9);
    CHECK_STR(d.str + d.atext[1], "609");
    const char *ctx = d.text + d.ptext[0];
    CHECK(memcmp(ctx + d.abeg[2], "Paris", 5) == 0);
    /* the first answer's tokens: 609 – 610 */
    const size_t t0 = d.ptok[0];
    CHECK(d.tbeg[0] >= 0 && d.pids[t0 + (size_t)d.tbeg[0]] == 39 && d.pids[t0 + (size_t)d.tend[0]] == 40);
    CHECK(d.tend[0] - d.tbeg[0] == 2);
    CHECK(d.pids[t0 + (size_t)d.tbeg[1]] == 15 && d.tbeg[1] == d.tend[1]); /* paris */
    nlp_span_data_free(&d);

    /* an answer_start that does not point at the text: file, id and place */
    char bad[sizeof squad + 8];
    snprintf(bad, sizeof bad, "%s", squad);
    char *at = strstr(bad, "\"answer_start\": 51");
    memcpy(at, "\"answer_start\": 50", 18);
    p = tmpfile_with("bad.json", bad);
    CHECK_EQ_INT(nlp_span_read(&d, p, &o), NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "bad.json': question 'q2' (data[0].paragraphs[0].qas[1]) answer 1: 'Paris' is not the "
                                "context's text at character 50 (' Pari')"), "%s", nlp_errmsg());
    /* beyond the context, and other damage */
    static const struct {
        const char *from, *to, *msg;
    } edits[] = {
        {"\"answer_start\": 6}", "\"answer_start\": 9}", "question 'q3' (data[0].paragraphs[1].qas[0]) answer 1: 'world' is not"},
        {"\"answer_start\": 6}", "\"answer_start\": \"6\"}", "answer 1 has no integer answer_start"},
        {"\"question\": \"what\"", "\"question\": 7", "data[0].paragraphs[1].qas[0] has a non-string question"},
        {"\"context\": \"Hello world\"", "\"contxt\": \"Hello world\"", "data[0].paragraphs[1] has no context"},
        {"[{\"text\": \"world\", \"answer_start\": 6}]", "[]", "question 'q3' (data[0].paragraphs[1].qas[0]) has no answers"},
        {"\"version\"", "version", "line 1 column"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        char buf[sizeof squad + 64];
        const char *f = strstr(squad, edits[i].from);
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(f - squad), squad, edits[i].to, f + strlen(edits[i].from));
        p = tmpfile_with("bad.json", buf);
        CHECK_EQ_INT(nlp_span_read(&d, p, &o), NLP_EDATA);
        CHECK_MSG(has(nlp_errmsg(), edits[i].msg) && has(nlp_errmsg(), "bad.json'"), "case %zu: %s", i, nlp_errmsg());
    }
    /* unlabelled: answers not needed; or question<TAB>passage lines (ids by line) */
    o.labelled = 0;
    p = tmpfile_with("nolab.json", "{\"data\": [{\"paragraphs\": [{\"context\": \"Hello world\", \"qas\": [{\"id\": "
                                   "\"x\", \"question\": \"what\"}]}]}]}");
    CHECK_EQ_INT(nlp_span_read(&d, p, &o), 0);
    CHECK(d.n == 1 && !d.labelled);
    nlp_span_data_free(&d);
    p = tmpfile_with("q.tsv", "what city?\tThe tower is in Paris.\nwhen\tIn 1984\n");
    CHECK_EQ_INT(nlp_span_read(&d, p, &o), 0);
    CHECK(d.n == 2 && d.np == 2 && d.passage[1] == 1);
    CHECK_STR(d.str + d.qid[1], "2");
    nlp_span_data_free(&d);
    p = tmpfile_with("q.tsv", "what city?\tThe tower\nno tab here\n");
    CHECK_EQ_INT(nlp_span_read(&d, p, &o), NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "q.tsv' line 2: expected question<TAB>passage"), "%s", nlp_errmsg());
    o.labelled = 1;
    p = tmpfile_with("q.tsv", "what city?\tThe tower\n");
    CHECK_EQ_INT(nlp_span_read(&d, p, &o), NLP_EDATA);
    CHECK_MSG(has(nlp_errmsg(), "is not SQuAD JSON"), "%s", nlp_errmsg());
    nlp_tokenizer_free(tk);
}

// --- windows

static void test_windows(void)
{
    nlp_tokenizer *tk = tokenizer(1);
    /* a passage of 20 tokens ("hello world" x 10), the answer "world" at token 13 */
    char ctx[256] = "";
    for (int i = 0; i < 10; i++) strcat(ctx, i ? " hello world" : "hello world");
    char json[1024];
    snprintf(json, sizeof json, "{\"data\": [{\"paragraphs\": [{\"context\": \"%s\", \"qas\": [{\"id\": \"a\", "
             "\"question\": \"where the\", \"answers\": [{\"text\": \"world\", \"answer_start\": %d}]}]}]}]}", ctx, 6 * 12 + 6);
    nlp_span_read_opts o = {.tk = tk, .labelled = 1, .threads = 1};
    nlp_span_data d;
    if (nlp_span_read(&d, tmpfile_with("w.json", json), &o) != 0) {
        CHECK_MSG(0, "%s", nlp_errmsg());
        nlp_tokenizer_free(tk);
        return;
    }
    CHECK(d.tbeg[0] == 13 && d.tend[0] == 13);
    /* T 12: [CLS] where the [SEP] + 7 passage tokens + [SEP]; stride 5:
     * windows at 0, 5, 10, 15 (run_squad: each min(stride, its length)
     * after the last, the last ending with the passage) */
    nlp_span_layout l = {.stride = 5, .max_query = 64, .max_answer = 3};
    CHECK_EQ_INT(nlp_cls_encoder_bert(&l.enc, tk, 12), 0);
    nlp_span_windows w;
    CHECK_EQ_INT(nlp_span_windows_make(&w, &d, &l), 0);
    CHECK_EQ_INT(w.n, 4);
    const uint32_t starts[] = {0, 5, 10, 15}, lens[] = {7, 7, 7, 5};
    int ok = w.n == 4;
    for (size_t i = 0; ok && i < 4; i++) ok &= w.start[i] == starts[i] && w.len[i] == lens[i] && w.q[i] == 0;
    CHECK(ok);
    /* a question longer than max_query keeps its first tokens; and no more
     * than half the positions beside the special tokens (T 9: 3 of 6) */
    l.max_query = 1;
    nlp_span_windows w1;
    CHECK_EQ_INT(nlp_span_windows_make(&w1, &d, &l), 0);
    CHECK(w1.len[0] == 8);
    nlp_span_windows_free(&w1);
    l.max_query = 64;
    nlp_span_layout l9 = l;
    CHECK_EQ_INT(nlp_cls_encoder_bert(&l9.enc, tk, 9), 0);
    char qlong[512];
    snprintf(qlong, sizeof qlong, "{\"data\": [{\"paragraphs\": [{\"context\": \"%s\", \"qas\": [{\"id\": \"a\", "
             "\"question\": \"where is the tower in paris\"}]}]}]}", ctx);
    nlp_span_read_opts ou = {.tk = tk, .threads = 1};
    nlp_span_data dq;
    CHECK_EQ_INT(nlp_span_read(&dq, tmpfile_with("ql.json", qlong), &ou), 0);
    CHECK_EQ_INT(nlp_span_windows_make(&w1, &dq, &l9), 0);
    CHECK(w1.n == 7 && w1.len[0] == 3 && w1.start[6] == 18 && w1.len[6] == 2); /* 20 tokens: 0, 3, ... 18 */
    nlp_span_windows_free(&w1);
    nlp_span_data_free(&dq);
    /* the task's rows: targets inside a window, [CLS] outside */
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_BERT) == 0);
    cfg.num_labels = 2, cfg.head = NLP_HEAD_SPAN, cfg.vocab_size = NV;
    nlp_span_task t;
    nlp_task task;
    CHECK_EQ_INT(nlp_span_task_init(&t, &task, &d, NULL, &l, &cfg, 4, NULL), 0);
    nlp_rng r;
    nlp_rng_seed(&r, 1);
    nlp_batch b;
    CHECK(task.next_batch(task.ctx, &r, &b) == 0);
    CHECK(b.B == 4 && b.T == 12 && b.span_start && b.span_mask && b.type_ids && b.mask);
    int inside = 0;
    for (int j = 0; j < b.B; j++) {
        const int32_t *x = b.ids + (size_t)j * b.T;
        int len = 0;
        while (len < b.T && b.mask[(size_t)j * b.T + len]) len++;
        ok &= len == 12 || len == 10; /* the last window holds 5 passage tokens */
        ok &= x[0] == ID_CLS && x[3] == ID_SEP && x[len - 1] == ID_SEP && b.type_ids[(size_t)j * b.T + 4] == 1;
        ok &= b.type_ids[(size_t)j * b.T + 3] == 0 && b.span_mask[(size_t)j * b.T] == 1 && !b.span_mask[(size_t)j * b.T + 3];
        if (b.span_start[j]) { /* the window at 10 holds token 13 */
            inside++;
            ok &= x[b.span_start[j]] == 6 && b.span_start[j] == b.span_end[j];
        }
    }
    CHECK(ok);
    CHECK_EQ_INT(inside, 1);
    uint64_t st[4];
    task.get_state(task.ctx, st);
    CHECK(st[3] == 4);
    nlp_span_task_free(&t);
    nlp_span_windows_free(&w);
    nlp_span_data_free(&d);
    nlp_tokenizer_free(tk);
}

// --- the best span, against the model's own logits

static void test_predict(void)
{
    nlp_tokenizer *tk = tokenizer(1);
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_BERT) == 0);
    cfg.num_labels = 2, cfg.head = NLP_HEAD_SPAN, cfg.vocab_size = NV, cfg.dropout = cfg.attention_dropout = 0;
    cfg.init_std = 0.5; /* logits far apart */
    nlp_model *m = NULL;
    CHECK(nlp_model_new(&m, &cfg, 11) == 0);
    if (!m) return;
    nlp_span_read_opts o = {.tk = tk, .labelled = 1, .threads = 1};
    nlp_span_data d;
    if (nlp_span_read(&d, tmpfile_with("p.json", squad), &o) != 0) {
        CHECK_MSG(0, "%s", nlp_errmsg());
        nlp_model_free(m), nlp_tokenizer_free(tk);
        return;
    }
    nlp_span_layout l = {.stride = 128, .max_query = 64, .max_answer = 4};
    CHECK_EQ_INT(nlp_cls_encoder_bert(&l.enc, tk, 40), 0);
    nlp_span_windows w;
    CHECK_EQ_INT(nlp_span_windows_make(&w, &d, &l), 0);
    CHECK_EQ_INT(w.n, 3); /* one window each */
    nlp_span_answer ans[3];
    double loss;
    CHECK_EQ_INT(nlp_span_predict(m, &l, &d, &w, 2, ans, &loss), 0);
    CHECK(isfinite(loss) && loss > 0);
    /* by hand: each question's row alone, every span of up to 4 passage tokens */
    int ok = 1;
    for (size_t q = 0; q < d.n; q++) {
        const size_t nq = d.qtok[q + 1] - d.qtok[q], p = d.passage[q], nt = d.ptok[p + 1] - d.ptok[p];
        int32_t ids[64], type[64], mask[64];
        int T = 0;
        ids[T++] = ID_CLS;
        for (size_t i = 0; i < nq; i++) ids[T++] = d.qids[d.qtok[q] + i];
        ids[T++] = ID_SEP;
        const int p0 = T;
        for (size_t i = 0; i < nt; i++) ids[T++] = d.pids[d.ptok[p] + i];
        ids[T++] = ID_SEP;
        for (int i = 0; i < T; i++) type[i] = i >= p0, mask[i] = 1;
        nlp_batch b = {.B = 1, .T = T, .ids = ids, .type_ids = type, .mask = mask};
        CHECK(nlp_model_forward(m, &b, NULL) == 0);
        const float *S = nlp_model_span_logits(m), *E = S + T;
        float best = -INFINITY;
        size_t bs = 0, be = 0;
        for (size_t s = 0; s < nt; s++)
            for (size_t e = s; e < nt && e < s + 4; e++)
                if (S[p0 + s] + E[p0 + e] > best) best = S[p0 + s] + E[p0 + e], bs = s, be = e;
        const int32_t *po = d.poff + 2 * d.ptok[p];
        ok &= ans[q].beg == (uint32_t)po[2 * bs] && ans[q].end == (uint32_t)po[2 * be + 1];
        ok &= fabsf(ans[q].score - best) < 1e-4f;
        if (!ok) printf("    q%zu: [%u, %u) %g, by hand [%d, %d) %g\n", q, ans[q].beg, ans[q].end, ans[q].score,
                        po[2 * bs], po[2 * be + 1], best);
    }
    CHECK_MSG(ok, "the best spans are not those of the model's logits");
    /* the exact match and F1 of those answers: the metric over each question's golds */
    double em, f1;
    CHECK_EQ_INT(nlp_span_score(&d, ans, nlp_squad_score_max, &em, &f1), 0);
    double se = 0, sf = 0;
    for (size_t q = 0; q < d.n; q++) {
        const char *ctx = d.text + d.ptext[d.passage[q]];
        const char *g[2];
        size_t gl[2];
        int k = 0;
        for (size_t a = d.ans[q]; a < d.ans[q + 1]; a++, k++) g[k] = d.str + d.atext[a], gl[k] = strlen(g[k]);
        double e, f;
        nlp_squad_score_max(ctx + ans[q].beg, ans[q].end - ans[q].beg, g, gl, k, &e, &f);
        se += e, sf += f;
    }
    CHECK_NEAR(em, 100 * se / 3, 1e-9);
    CHECK_NEAR(f1, 100 * sf / 3, 1e-9);
    nlp_span_windows_free(&w);

    /* windows of a long passage: answers of at most 4 tokens, substrings of
     * the passage as given, from whichever window */
    l.stride = 3;
    CHECK_EQ_INT(nlp_cls_encoder_bert(&l.enc, tk, 16), 0);
    CHECK_EQ_INT(nlp_span_windows_make(&w, &d, &l), 0);
    CHECK(w.n > 3);
    CHECK_EQ_INT(nlp_span_predict(m, &l, &d, &w, 3, ans, NULL), 0);
    for (size_t q = 0; q < d.n; q++) {
        const size_t p = d.passage[q], t0 = d.ptok[p], nt = d.ptok[p + 1] - t0;
        size_t first = nt, last = 0;
        for (size_t t = 0; t < nt; t++) {
            if ((uint32_t)d.poff[2 * (t0 + t)] == ans[q].beg && first == nt) first = t;
            if ((uint32_t)d.poff[2 * (t0 + t) + 1] == ans[q].end) last = t;
        }
        ok &= first < nt && last >= first && last < first + 4 && ans[q].end <= d.ptext[p + 1] - d.ptext[p];
    }
    CHECK_MSG(ok, "an answer across windows is no span of at most 4 passage tokens");
    nlp_span_windows_free(&w);
    nlp_span_data_free(&d);
    nlp_model_free(m);
    nlp_tokenizer_free(tk);
}

/* Answers are whole words: no span starts at a WordPiece continuation
 * ("##84" of "1984") or ends before one. Against a search over the model's
 * logits that knows words only by the vocabulary's "##", over models whose
 * unconstrained best span would cut a word (some of the seeds must). */
static void test_predict_words(void)
{
    static const char json[] =
        "{\"data\": [{\"paragraphs\": [{\"context\": \"Towers in Paris 1984, towers (1984).\", \"qas\": ["
        "{\"id\": \"w\", \"question\": \"where\", \"answers\": [{\"text\": \"Paris\", \"answer_start\": 10}]}]}]}]}";
    nlp_tokenizer *tk = tokenizer(1);
    nlp_span_read_opts o = {.tk = tk, .labelled = 1, .threads = 1};
    nlp_span_data d;
    if (nlp_span_read(&d, tmpfile_with("w.json", json), &o) != 0) {
        CHECK_MSG(0, "%s", nlp_errmsg());
        nlp_tokenizer_free(tk);
        return;
    }
    const size_t nt = d.ptok[1], nq = d.qtok[1];
    CHECK_EQ_INT(nt, 14); /* tower ##s in paris 19 ##84 , tower ##s ( 19 ##84 ) . */
    nlp_span_layout l = {.stride = 128, .max_query = 64, .max_answer = 4};
    CHECK_EQ_INT(nlp_cls_encoder_bert(&l.enc, tk, 40), 0);
    nlp_span_windows w;
    CHECK_EQ_INT(nlp_span_windows_make(&w, &d, &l), 0);
    int ok = 1, cut = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        nlp_model_config cfg;
        CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_BERT) == 0);
        cfg.num_labels = 2, cfg.head = NLP_HEAD_SPAN, cfg.vocab_size = NV, cfg.dropout = cfg.attention_dropout = 0;
        cfg.init_std = 0.5;
        nlp_model *m = NULL;
        CHECK(nlp_model_new(&m, &cfg, seed) == 0);
        if (!m) break;
        nlp_span_answer ans;
        CHECK_EQ_INT(nlp_span_predict(m, &l, &d, &w, 1, &ans, NULL), 0);
        int32_t ids[64], type[64], mask[64];
        int T = 0;
        ids[T++] = ID_CLS;
        for (size_t i = 0; i < nq; i++) ids[T++] = d.qids[i];
        ids[T++] = ID_SEP;
        const int p0 = T;
        for (size_t i = 0; i < nt; i++) ids[T++] = d.pids[i];
        ids[T++] = ID_SEP;
        for (int i = 0; i < T; i++) type[i] = i >= p0, mask[i] = 1;
        nlp_batch b = {.B = 1, .T = T, .ids = ids, .type_ids = type, .mask = mask};
        CHECK(nlp_model_forward(m, &b, NULL) == 0);
        const float *S = nlp_model_span_logits(m), *E = S + T;
        float best = -INFINITY, any = -INFINITY;
        size_t bs = 0, be = 0;
        for (size_t s = 0; s < nt; s++)
            for (size_t e = s; e < nt && e < s + 4; e++) {
                const float sc = S[p0 + s] + E[p0 + e];
                if (sc > any) any = sc;
                if (!strncmp(vocab[d.pids[s]], "##", 2) || (e + 1 < nt && !strncmp(vocab[d.pids[e + 1]], "##", 2)))
                    continue;
                if (sc > best) best = sc, bs = s, be = e;
            }
        cut += any > best;
        ok &= ans.beg == (uint32_t)d.poff[2 * bs] && ans.end == (uint32_t)d.poff[2 * be + 1];
        ok &= fabsf(ans.score - best) < 1e-4f;
        if (!ok) printf("    seed %d: [%u, %u), by hand [%d, %d)\n", (int)seed, ans.beg, ans.end, d.poff[2 * bs],
                        d.poff[2 * be + 1]);
        nlp_model_free(m);
    }
    CHECK_MSG(ok, "the best whole-word spans are not those of the model's logits");
    CHECK_MSG(cut > 0, "no model's best span cut a word: the test does not test");
    nlp_span_windows_free(&w);
    nlp_span_data_free(&d);
    nlp_tokenizer_free(tk);
}

// --- the span head saved and loaded

static void test_save_load(void)
{
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_BERT) == 0);
    cfg.num_labels = 2, cfg.head = NLP_HEAD_SPAN;
    nlp_model *m = NULL, *back = NULL;
    CHECK(nlp_model_new(&m, &cfg, 3) == 0);
    if (!m) return;
    CHECK_EQ_INT(nlp_model_set_task(m, NLP_FT_CHOICE), NLP_EINVAL); /* a span head is for span */
    CHECK_EQ_INT(nlp_model_set_task(m, NLP_FT_SPAN), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/span.safetensors", test_tmpdir());
    CHECK_EQ_INT(nlp_model_save(m, path, NLP_DT_F32), 0);
    CHECK_EQ_INT(nlp_model_load(&back, path), 0);
    if (back) {
        CHECK(nlp_model_cfg(back)->head == NLP_HEAD_SPAN && nlp_model_cfg(back)->num_labels == 2);
        CHECK(nlp_model_task(back) == NLP_FT_SPAN);
        CHECK(nlp_params_find(nlp_model_params(back), "qa_outputs.weight") >= 0);
        CHECK(nlp_params_find(nlp_model_params(back), "classifier.weight") < 0);
        CHECK(nlp_model_cls_logits(back) == NULL);
    }
    nlp_model_free(back), nlp_model_free(m);
    /* YAML: head span is named in the dump and reads back; a sequence head is not named */
    nlp_buf y = {0};
    CHECK(nlp_model_config_dump(&cfg, &y) == 0 && strstr(y.data, "head: span\n"));
    nlp_buf_free(&y);
    cfg.head = NLP_HEAD_SEQUENCE;
    CHECK(nlp_model_config_dump(&cfg, &y) == 0 && !strstr(y.data, "head:"));
    nlp_buf_free(&y);
    /* HF's BertForQuestionAnswering config.json */
    const char *hf = "{\"architectures\": [\"BertForQuestionAnswering\"], \"model_type\": \"bert\", \"vocab_size\": 99, "
                     "\"hidden_size\": 32, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"intermediate_size\": 64}";
    CHECK_EQ_INT(nlp_model_config_from_json(&cfg, NULL, hf, strlen(hf), "config.json"), 0);
    CHECK(cfg.head == NLP_HEAD_SPAN && cfg.num_labels == 2);
    /* span is bert's, with two outputs */
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_GPT) == 0);
    cfg.num_labels = 2, cfg.head = NLP_HEAD_SPAN;
    CHECK_EQ_INT(nlp_model_config_validate(&cfg), NLP_EINVAL);
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_BERT) == 0);
    cfg.num_labels = 3, cfg.head = NLP_HEAD_SPAN;
    CHECK_EQ_INT(nlp_model_config_validate(&cfg), NLP_EINVAL);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    omp_set_num_threads(1);
    RUN(test_offsets);
    RUN(test_metric);
    RUN(test_read);
    RUN(test_windows);
    RUN(test_predict);
    RUN(test_predict_words);
    RUN(test_save_load);
    return TEST_END();
}
