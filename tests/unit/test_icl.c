/*
 * test_icl.c — in-context learning (lib/decode/icl): templates (escapes,
 * placeholders per data shape, the candidates' leading space, every
 * misuse), the TSV reader (shapes, label sets, choice counts and indices,
 * empty fields, the shots' file setting the kind), label words, the draw of
 * shots (distinct, never skipped ones, reproducible per item and seed, the
 * first K' of K the draw of K'), and the evaluator on a random GPT with a
 * byte-level tokenizer: each candidate's score equal to nlp_score_batch
 * over the prompt written out by hand, the item never among its shots,
 * shots dropped whole when the context is short, the four normalizations.
 */
#include "base/err.h"
#include "base/mem.h"
#include "decode/icl.h"
#include "decode/score.h"
#include "model/config.h"
#include "model/model.h"
#include "tok/bpe_train.h"
#include "tok/tokenizer.h"
#include "tok/wordcount.h"
#include "test.h"

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

// --- templates

static void test_template(void)
{
    nlp_icl_template t;
    CHECK(nlp_icl_template_parse(&t, "Description: {context}\\nSection: {answer}\\n\\n", NLP_ICL_CLASSIFY) == 0);
    CHECK_EQ_INT(t.n, 5);
    CHECK(t.part[0].kind == 0 && t.part[0].n == 13 && !memcmp(t.part[0].s, "Description: ", 13));
    CHECK(t.part[1].kind == 1);
    CHECK(t.part[2].kind == 0 && t.part[2].n == 10 && !memcmp(t.part[2].s, "\nSection: ", 10));
    CHECK(t.part[3].kind == -1 && t.answer == 3);
    CHECK(t.part[4].n == 2 && !memcmp(t.part[4].s, "\n\n", 2));
    CHECK_EQ_INT((int)t.lead, 1); /* the space before {answer} goes with the candidates */
    nlp_icl_template_free(&t);
    /* braces, tabs, backslashes; spaces and a tab before {answer}; nothing after it */
    CHECK(nlp_icl_template_parse(&t, "{{x}} {context}\\t\\\\ \\t{answer}", NLP_ICL_CHOICE) == 0);
    CHECK(t.n == 4 && t.part[0].n == 4 && !memcmp(t.part[0].s, "{x} ", 4));
    CHECK(t.part[2].n == 4 && !memcmp(t.part[2].s, "\t\\ \t", 4) && t.lead == 2 && t.answer == 3);
    nlp_icl_template_free(&t);
    CHECK(nlp_icl_template_parse(&t, "{a} / {b} = {answer}", NLP_ICL_PAIR) == 0);
    CHECK(t.part[0].kind == 1 && t.part[2].kind == 2 && t.lead == 1);
    nlp_icl_template_free(&t);
    /* {answer} right after a field: no lead */
    CHECK(nlp_icl_template_parse(&t, "{context}{answer}", NLP_ICL_CLASSIFY) == 0);
    CHECK(t.lead == 0 && t.n == 2);
    nlp_icl_template_free(&t);
    /* the defaults parse for their shapes */
    for (int s = NLP_ICL_CLASSIFY; s <= NLP_ICL_CHOICE; s++) {
        CHECK(nlp_icl_template_parse(&t, nlp_icl_template_default(s), s) == 0);
        nlp_icl_template_free(&t);
    }
    /* misuse, each with its message */
    static const struct {
        const char *tpl;
        int shape;
        const char *msg;
    } bad[] = {
        {"Description: {context}\\nSection:", NLP_ICL_CLASSIFY, "no {answer}"},
        {"Section: {answer}", NLP_ICL_CLASSIFY, "no {context}"},
        {"{context} {answer} {answer}", NLP_ICL_CLASSIFY, "{answer} 2 times"},
        {"{answer} {context}", NLP_ICL_CHOICE, "{context} after {answer}"},
        {"{a} {answer}", NLP_ICL_PAIR, "no {b}"},
        {"{context} {answer}", NLP_ICL_PAIR, "{context} is not a placeholder of pair data"},
        {"{a} {b} {answer}", NLP_ICL_CLASSIFY, "{a} is not a placeholder of classify data"},
        {"{text} {answer}", NLP_ICL_CHOICE, "{text} is not a placeholder"},
        {"{context {answer}", NLP_ICL_CLASSIFY, "is not a placeholder"},
        {"{context} {answer", NLP_ICL_CLASSIFY, "not closed"},
        {"{context} } {answer}", NLP_ICL_CLASSIFY, "'}' without its '{'"},
        {"{context}\\q{answer}", NLP_ICL_CLASSIFY, "'\\q' is not an escape"},
        {"{context} {answer}\\", NLP_ICL_CLASSIFY, "a lone '\\'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&t, 0x55, sizeof t);
        int rc = nlp_icl_template_parse(&t, bad[i].tpl, bad[i].shape);
        CHECK_MSG(rc == NLP_EINVAL && strstr(nlp_errmsg(), bad[i].msg), "'%s': %d '%s'", bad[i].tpl, rc, nlp_errmsg());
        CHECK(t.text == NULL && t.part == NULL);
    }
}

// --- data

static void test_read(void)
{
    nlp_icl_labels l = {0};
    nlp_icl_data tr, ev;
    /* classify: labels in order of first appearance; a CR, an empty line */
    CHECK(nlp_icl_read(&tr, tmpfile_with("tr.tsv", "net\tssh client\r\n\nx11\ta window manager\nnet\tweb server\n"),
                       NULL, &l, 0) == 0);
    CHECK(tr.shape == NLP_ICL_CLASSIFY && tr.nf == 2 && tr.n == 3 && l.n == 2);
    CHECK_STR(l.name[0], "net");
    CHECK_STR(l.name[1], "x11");
    CHECK(tr.label[0] == 0 && tr.label[1] == 1 && tr.label[2] == 0);
    CHECK(tr.line[0] == 1 && tr.line[1] == 3 && tr.line[2] == 4);
    CHECK_STR(tr.field[1], "ssh client");
    CHECK(tr.flen[1] == 10);
    /* the evaluated file: its labels must be the shots' */
    CHECK(nlp_icl_read(&ev, tmpfile_with("ev.tsv", "x11\ta terminal\n"), &tr, &l, 0) == 0);
    CHECK(ev.n == 1 && ev.label[0] == 1 && l.n == 2);
    nlp_icl_data_free(&ev);
    CHECK(nlp_icl_read(&ev, tmpfile_with("ev.tsv", "x11\ta terminal\nsound\tan mp3 player\n"), &tr, &l, 0) ==
          NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "ev.tsv' line 2: label 'sound' is not among the 2 labels of '") != NULL);
    nlp_icl_data_free(&ev);
    /* and its kind */
    CHECK(nlp_icl_read(&ev, tmpfile_with("ev.tsv", "1\ta\tb\n"), &tr, &l, 0) == NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "line 1 has 3 fields (pair data) where '") &&
          strstr(nlp_errmsg(), "tr.tsv' has 2 (classify data)"));
    nlp_icl_data_free(&ev);
    nlp_icl_data_free(&tr);
    /* label words */
    CHECK(nlp_icl_labels_words(&l, "x11=graphics") == 0);
    CHECK_STR(l.word[1], "graphics");
    CHECK_STR(l.word[0], "net");
    CHECK(nlp_icl_labels_words(&l, "net=x,sound=y") == NLP_EINVAL && strstr(nlp_errmsg(), "no label 'sound'"));
    CHECK(nlp_icl_labels_words(&l, "net") == NLP_EINVAL && strstr(nlp_errmsg(), "not LABEL=WORD"));
    CHECK(nlp_icl_labels_words(&l, "net=") == NLP_EINVAL && strstr(nlp_errmsg(), "an empty word"));
    CHECK(nlp_icl_labels_words(&l, "net=a,net=b") == NLP_EINVAL && strstr(nlp_errmsg(), "twice"));
    CHECK(nlp_icl_labels_words(&l, "net=graphics") == NLP_EINVAL && strstr(nlp_errmsg(), "the same word"));
    nlp_icl_labels_free(&l);
    /* choice: indices from 0, the same count of choices on every line */
    CHECK(nlp_icl_read(&tr, tmpfile_with("c.tsv", "1\tctx\ta\tb\tc\n0\tctx2\td\te\tf\n"), NULL, &l, 0) == 0);
    CHECK(tr.shape == NLP_ICL_CHOICE && tr.nf == 5 && tr.label[0] == 1 && tr.label[1] == 0 && l.n == 0);
    nlp_icl_data_free(&tr);
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"1\tctx\ta\tb\tc\n0\tctx2\td\te\tf\tg\n", "c.tsv' line 2 has 4 choices where line 1 has 3"},
        {"3\tctx\ta\tb\tc\n", "line 1: label '3' is not the index of a choice (0 to 2, the first choice being 0)"},
        {"-1\tctx\ta\tb\tc\n", "label '-1' is not the index of a choice"},
        {"x\tctx\ta\tb\tc\n", "label 'x' is not the index"},
        {"0\tctx\ta\t\tc\n", "line 1: choice 1 is empty"},
        {"0\t\ta\tb\tc\n", "line 1: the context is empty"},
        {"\tctx\ta\tb\n", "line 1: the label is empty"},
        {"0\tctx\ta\tb\n1\tctx\ta\n", "line 2 has 3 fields where line 1 has 4 (choice data)"},
        {"just text\n", "line 1: no tab"},
        {"0\tctx\t\xff\tb\n", "line 1: invalid UTF-8 at byte 7"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = nlp_icl_read(&tr, tmpfile_with("c.tsv", bad[i].text), NULL, &l, 0);
        CHECK_MSG(rc == NLP_EDATA && strstr(nlp_errmsg(), bad[i].msg), "%zu: %d '%s'", i, rc, nlp_errmsg());
        nlp_icl_data_free(&tr);
    }
    /* an empty file: no examples */
    CHECK(nlp_icl_read(&tr, tmpfile_with("e.tsv", ""), NULL, &l, 0) == 0 && tr.n == 0);
    nlp_icl_data_free(&tr);
    nlp_icl_labels_free(&l);
}

// --- shots

static int skip_mod3(void *ctx, size_t j)
{
    (void)ctx;
    return j % 3 == 0;
}

static void test_draw(void)
{
    size_t a[64], b[64];
    int distinct = 1, skipped = 0, prefix = 1, same = 1, differ = 0;
    for (uint64_t item = 0; item < 50; item++) {
        CHECK(nlp_icl_draw(7, item, 100, 8, skip_mod3, NULL, a) == 8);
        for (int i = 0; i < 8; i++) {
            skipped += a[i] % 3 == 0 || a[i] >= 100;
            for (int j = 0; j < i; j++) distinct &= a[i] != a[j];
        }
        /* the same item and seed: the same shots; the first 3 of 8 are the draw of 3 */
        nlp_icl_draw(7, item, 100, 8, skip_mod3, NULL, b);
        same &= !memcmp(a, b, 8 * sizeof *a);
        nlp_icl_draw(7, item, 100, 3, skip_mod3, NULL, b);
        prefix &= !memcmp(a, b, 3 * sizeof *a);
        /* another seed: other shots */
        nlp_icl_draw(8, item, 100, 8, skip_mod3, NULL, b);
        differ += memcmp(a, b, 8 * sizeof *a) != 0;
    }
    CHECK(distinct && !skipped && same && prefix);
    CHECK(differ >= 45);
    /* all there are: 66 of 100 not skipped, in some order; fewer than asked */
    CHECK_EQ_INT(nlp_icl_draw(1, 0, 100, 64, skip_mod3, NULL, a), 64);
    CHECK_EQ_INT(nlp_icl_draw(1, 0, 10, 64, skip_mod3, NULL, a), 6);
    int seen[10] = {0};
    for (int i = 0; i < 6; i++) seen[a[i]]++;
    CHECK(seen[1] == 1 && seen[2] == 1 && seen[4] == 1 && seen[5] == 1 && seen[7] == 1 && seen[8] == 1);
    CHECK_EQ_INT(nlp_icl_draw(1, 0, 0, 4, NULL, NULL, a), 0);
    /* the best of scores: the first on ties, NaN never */
    double s[4] = {NAN, -2, -1, -1};
    CHECK_EQ_INT(nlp_icl_best(s, 4), 2);
}

// --- the evaluator

/* A byte-level BPE tokenizer trained on text (at most 300 ids). */
static nlp_tokenizer *bytelevel(const char *text)
{
    nlp_tok_spec s = {0};
    nlp_tok_spec_pipeline(&s, NLP_PIPE_BYTELEVEL, NULL);
    nlp_wordcount *wc = nlp_wordcount_new();
    nlp_wordcount_opts wo = {.norm = s.norm, .n_norm = s.n_norm, .pretok = s.pretok, .n_pretok = s.n_pretok,
                             .threads = 1};
    nlp_wordcount_stats ws = {0};
    const char *paths[] = {tmpfile_with("corpus.txt", text)};
    CHECK(nlp_wordcount_files(wc, paths, 1, &wo, &ws) == 0);
    const char *sp[] = {"<|endoftext|>"};
    nlp_bpe_train_opts o = {.vocab_size = 300, .byte_level = 1, .byte_alphabet = 1, .specials = sp, .n_specials = 1,
                            .threads = 1};
    CHECK(nlp_bpe_train(wc, &o, &s, NULL) == 0);
    nlp_wordcount_free(wc);
    nlp_tokenizer *tk = NULL;
    CHECK(nlp_tokenizer_new(&tk, &s) == 0);
    if (!tk) nlp_tok_spec_free(&s);
    return tk;
}

static const char train_tsv[] = "net\tan ssh client for the network\n"
                                "x11\ta window manager for the desktop\n"
                                "net\ta web server and proxy\n"
                                "x11\ta terminal emulator with tabs\n"
                                "sound\ta music player for mp3 files\n"
                                "net\ta mail transfer agent\n";

static void test_eval(void)
{
    nlp_tokenizer *tk = bytelevel(train_tsv);
    if (!tk) return;
    nlp_tok_state *st = nlp_tok_state_new(tk);
    char vs[16];
    snprintf(vs, sizeof vs, "vocab-size=%zu", nlp_tokenizer_vocab_size(tk));
    const char *ov[] = {"arch=gpt", vs, "d-model=16", "heads=2", "d-ff=32", "layers=2", "max-positions=128",
                        "init-std=0.3", NULL};
    nlp_model_config cfg;
    nlp_model *m = NULL;
    CHECK(nlp_model_config_build(&cfg, NULL, NULL, 0, ov) == 0);
    CHECK(nlp_model_new(&m, &cfg, 9) == 0);
    nlp_icl_labels l = {0};
    nlp_icl_data tr, ev;
    /* the evaluated file is the shots' file: an item is never its own shot */
    const char *path = tmpfile_with("train.tsv", train_tsv);
    CHECK(nlp_icl_read(&tr, path, NULL, &l, 0) == 0);
    CHECK(nlp_icl_read(&ev, path, &tr, &l, 0) == 0);
    nlp_icl_template tpl;
    CHECK(nlp_icl_template_parse(&tpl, "Description: {context}\\nSection: {answer}\\n\\n", NLP_ICL_CLASSIFY) == 0);
    nlp_icl *e = NULL;
    nlp_icl_opts o = {.shots = 2, .seed = 4, .norm = NLP_ICL_NORM_NONE, .max_len = 128, .max_rows = 2};
    CHECK(nlp_icl_new(&e, m, tk, &tr, &ev, &l, &tpl, &o) == 0);
    int own = 0, scores = 0, best = 0;
    nlp_buf text = {0};
    nlp_ids p = {0}, c = {0};
    for (size_t i = 0; e && i < ev.n; i++) {
        nlp_icl_result r;
        if (!CHECK(nlp_icl_item(e, i, &r) == 0)) break;
        CHECK(r.k == 3 && r.shots == 2 && r.cut == 0 && r.gold == ev.label[i]);
        for (int s = 0; s < r.shots; s++) own += r.shot[s] == i;
        /* the prompt written out: the shots whole, the item up to its answer's space */
        nlp_buf_reset(&text);
        for (int s = 0; s < r.shots; s++)
            nlp_buf_printf(&text, "Description: %s\nSection: %s\n\n", tr.field[r.shot[s] * 2 + 1],
                           l.name[tr.label[r.shot[s]]]);
        nlp_buf_printf(&text, "Description: %s\nSection:", ev.field[i * 2 + 1]);
        CHECK(nlp_score_encode(tk, st, m, text.data, text.len, 1, &p) == 0);
        CHECK(p.n == r.prompt_tokens);
        for (int k = 0; k < r.k; k++) {
            char cand[32];
            snprintf(cand, sizeof cand, " %s", l.name[k]);
            CHECK(nlp_score_encode(tk, st, m, cand, strlen(cand), 0, &c) == 0);
            nlp_score_item it = {p.v, p.n, c.v, c.n};
            double lp[16], sum = 0;
            CHECK(nlp_score_batch(m, &it, 1, 0, 0, lp, NULL) == 0);
            for (size_t j = 0; j < c.n; j++) sum += lp[j];
            scores += fabs(sum - r.logprob[k]) < 1e-4 && r.tokens[k] == c.n && r.bytes[k] == strlen(cand) &&
                      r.score[k] == r.logprob[k];
        }
        best += r.choice == nlp_icl_best(r.score, r.k);
    }
    CHECK_EQ_INT(own, 0);
    CHECK_EQ_INT(scores, 18);
    CHECK_EQ_INT(best, 6);
    nlp_icl_free(e);
    /* a short context: shots dropped whole, never more positions than the context */
    o.shots = 4, o.max_len = 40, o.norm = NLP_ICL_NORM_TOKENS;
    CHECK(nlp_icl_new(&e, m, tk, &tr, &ev, &l, &tpl, &o) == 0);
    int lowered = 0, fits = 0, norm = 0;
    for (size_t i = 0; e && i < ev.n; i++) {
        nlp_icl_result r;
        if (!CHECK(nlp_icl_item(e, i, &r) == 0)) break;
        lowered += r.shots < 4;
        size_t longest = 0;
        for (int k = 0; k < r.k; k++) {
            if (r.tokens[k] > longest) longest = r.tokens[k];
            norm += r.score[k] == r.logprob[k] / (double)r.tokens[k];
        }
        fits += r.prompt_tokens + longest <= 40;
    }
    CHECK(lowered == 6 && fits == 6 && norm == 18);
    nlp_icl_free(e);
    /* an item too long alone: its text loses its end, the template stays whole */
    nlp_icl_data lg;
    CHECK(nlp_icl_read(&lg, tmpfile_with("long.tsv", "x11\ta window manager for the desktop, with tabs, a terminal "
                                         "emulator, a music player for mp3 files, a web server and proxy, and a "
                                         "mail transfer agent for the network\n"), &tr, &l, 0) == 0);
    o.shots = 0, o.max_len = 32;
    CHECK(nlp_icl_new(&e, m, tk, NULL, &lg, &l, &tpl, &o) == 0);
    nlp_icl_result r;
    CHECK(e && nlp_icl_item(e, 0, &r) == 0);
    if (e) {
        size_t longest = 0;
        for (int k = 0; k < r.k; k++) longest = r.tokens[k] > longest ? r.tokens[k] : longest;
        CHECK(r.cut > 0 && !r.cut_start && r.prompt_tokens + longest <= 32);
        nlp_buf_reset(&text);
        CHECK(nlp_tokenizer_decode(tk, r.prompt, r.prompt_tokens, 0, &text, NULL) == 0);
        nlp_buf_putc(&text, 0);
        /* whole words from the start, the template's end whole */
        const char *full = lg.field[1], *sec = strstr(text.data, "\nSection:");
        const size_t kept = sec ? (size_t)(sec - text.data) - 13 : 0;
        CHECK_MSG(sec && !strcmp(sec, "\nSection:") && !strncmp(text.data, "Description: ", 13) && kept > 0 &&
                  !strncmp(text.data + 13, full, kept) && full[kept] == ' ', "'%s'", text.data);
        /* and as many as fit: one word more does not */
        if (sec && full[kept] == ' ') {
            const char *next = strchr(full + kept + 1, ' ');
            nlp_buf more = {0};
            nlp_buf_printf(&more, "Description: %.*s\nSection:", (int)(next - full), full);
            CHECK(nlp_score_encode(tk, st, m, more.data, more.len, 1, &p) == 0);
            CHECK(p.n + longest > 32);
            nlp_buf_free(&more);
        }
    }
    nlp_icl_free(e);
    nlp_icl_data_free(&lg);
    /* bytes; and no shots at all */
    o.shots = 0, o.max_len = 128, o.norm = NLP_ICL_NORM_BYTES;
    CHECK(nlp_icl_new(&e, m, tk, NULL, &ev, &l, &tpl, &o) == 0);
    CHECK(e && nlp_icl_item(e, 0, &r) == 0 && r.shots == 0);
    CHECK(e && r.score[1] == r.logprob[1] / 4.0); /* " x11" */
    nlp_icl_free(e);
    /* unconditional: less each candidate's log-likelihood after "Section:" alone */
    o.norm = NLP_ICL_NORM_UNCOND, o.start = -1;
    CHECK(nlp_icl_new(&e, m, tk, NULL, &ev, &l, &tpl, &o) == 0);
    CHECK(e && nlp_icl_item(e, 2, &r) == 0 && r.uncond);
    int unc = 0;
    CHECK(nlp_score_encode(tk, st, m, "Section:", 8, 1, &p) == 0);
    for (int k = 0; e && r.uncond && k < r.k; k++) {
        char cand[32];
        snprintf(cand, sizeof cand, " %s", l.name[k]);
        CHECK(nlp_score_encode(tk, st, m, cand, strlen(cand), 0, &c) == 0);
        nlp_score_item it = {p.v, p.n, c.v, c.n};
        double lp[16], sum = 0;
        CHECK(nlp_score_batch(m, &it, 1, 0, 0, lp, NULL) == 0);
        for (size_t j = 0; j < c.n; j++) sum += lp[j];
        unc += fabs(r.uncond[k] - sum) < 1e-4 && r.score[k] == r.logprob[k] - r.uncond[k];
    }
    CHECK_EQ_INT(unc, 3);
    nlp_icl_free(e);
    /* a template with no text before {answer}: the start token, else an error */
    nlp_icl_template bare;
    CHECK(nlp_icl_template_parse(&bare, "{context}\n{answer}", NLP_ICL_CLASSIFY) == 0);
    CHECK(nlp_icl_new(&e, m, tk, NULL, &ev, &l, &bare, &o) == NLP_EINVAL && !e);
    CHECK(strstr(nlp_errmsg(), "no start token") != NULL);
    o.start = 0;
    CHECK(nlp_icl_new(&e, m, tk, NULL, &ev, &l, &bare, &o) == 0);
    nlp_icl_free(e);
    nlp_icl_template_free(&bare);
    /* misuse */
    o.shots = 1;
    CHECK(nlp_icl_new(&e, m, tk, NULL, &ev, &l, &tpl, &o) == NLP_EINVAL && !e);
    nlp_buf_free(&text);
    nlp_ids_free(&p), nlp_ids_free(&c);
    nlp_icl_template_free(&tpl);
    nlp_icl_data_free(&ev), nlp_icl_data_free(&tr);
    nlp_icl_labels_free(&l);
    nlp_model_free(m);
    nlp_tok_state_free(st);
    nlp_tokenizer_free(tk);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_template);
    RUN(test_read);
    RUN(test_draw);
    RUN(test_eval);
    return TEST_END();
}
