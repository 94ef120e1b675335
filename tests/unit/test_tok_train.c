/*
 * test_tok_train.c — word counting and BPE training: the lecture's worked
 * example, HF's results on the reference corpora (shared/vectors/tokenize/
 * train), tie-breaking, limits and errors, and thread independence.
 */
#include "test.h"

#include "base/err.h"
#include "base/io.h"
#include "base/rng.h"
#include "tok/bpe_train.h"
#include "tok/tokfiles.h"
#include "tok/tokjson.h"

static const char *merge_str(const nlp_tok_spec *s, size_t i)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "%s %s", nlp_vocab_token(s->vocab, s->merges[2 * i], NULL),
             nlp_vocab_token(s->vocab, s->merges[2 * i + 1], NULL));
    return buf;
}

/* hug x10, pug x5, pun x12, bun x4, hugs x5 */
static nlp_wordcount *lecture_counts(void)
{
    nlp_wordcount *wc = nlp_wordcount_new();
    nlp_wordcount_add(wc, "hug", 3, 10);
    nlp_wordcount_add(wc, "pug", 3, 5);
    nlp_wordcount_add(wc, "pun", 3, 12);
    nlp_wordcount_add(wc, "bun", 3, 4);
    nlp_wordcount_add(wc, "hugs", 4, 5);
    return wc;
}

static void test_lecture_training(void)
{
    nlp_wordcount *wc = lecture_counts();
    nlp_tok_spec s = {0};
    /* alphabet b g h n p s u (7) + 3 merges */
    nlp_bpe_train_opts o = {.vocab_size = 10};
    nlp_bpe_train_stats st;
    CHECK(nlp_bpe_train(wc, &o, &s, &st) == 0);
    CHECK_EQ_INT(st.alphabet, 7);
    CHECK_EQ_INT(s.n_merges, 3);
    /* u g: hug 10 + pug 5 + hugs 5 = 20; u n: pun 12 + bun 4 = 16; then h ug: 15 */
    CHECK_STR(merge_str(&s, 0), "u g");
    CHECK_STR(merge_str(&s, 1), "u n");
    CHECK_STR(merge_str(&s, 2), "h ug");
    CHECK_EQ_INT(st.last_count, 15);
    const char *want[] = {"b", "g", "h", "n", "p", "s", "u", "ug", "un", "hug"};
    int ok = nlp_vocab_size(s.vocab) == 10;
    for (int i = 0; ok && i < 10; i++) ok = strcmp(nlp_vocab_token(s.vocab, i, NULL), want[i]) == 0;
    CHECK(ok);
    /* with this vocabulary 'b' is known: "bug" -> b ug */
    nlp_tok_spec_pipeline(&s, NLP_PIPE_WHITESPACE, NULL);
    nlp_tokenizer *tk;
    CHECK(nlp_tokenizer_new(&tk, &s) == 0);
    nlp_tok_state *ts = nlp_tok_state_new(tk);
    nlp_ids ids = {0};
    nlp_tokenizer_encode_ids(tk, ts, "bug", 3, 0, &ids);
    CHECK(ids.n == 2 && ids.v[0] == 0 && ids.v[1] == 7);
    nlp_ids_free(&ids);
    nlp_tok_state_free(ts);
    nlp_tokenizer_free(tk);

    /* all the way: HF's hug.bpe result */
    o.vocab_size = 1000;
    o.min_frequency = 0;
    CHECK(nlp_bpe_train(wc, &o, &s, &st) == 0);
    const char *all[] = {"u g", "u n", "h ug", "p un", "p ug", "hug s", "b un"};
    ok = s.n_merges == 7;
    for (size_t i = 0; ok && i < 7; i++) ok = strcmp(merge_str(&s, i), all[i]) == 0;
    CHECK(ok);
    /* min_frequency stops early: "p ug" (5) is below 6 */
    o.min_frequency = 6;
    CHECK(nlp_bpe_train(wc, &o, &s, &st) == 0);
    CHECK_EQ_INT(s.n_merges, 4);
    nlp_tok_spec_free(&s);
    nlp_wordcount_free(wc);
}

static void test_specials_unk_and_variants(void)
{
    nlp_wordcount *wc = lecture_counts();
    nlp_tok_spec s = {0};
    const char *sp[] = {"[UNK]", "[PAD]"};
    nlp_bpe_train_opts o = {.vocab_size = 100, .specials = sp, .n_specials = 2, .unk_token = "[UNK]",
                            .end_of_word_suffix = "</w>"};
    CHECK(nlp_bpe_train(wc, &o, &s, NULL) == 0);
    CHECK_STR(nlp_vocab_token(s.vocab, 0, NULL), "[UNK]");
    CHECK_STR(nlp_vocab_token(s.vocab, 1, NULL), "[PAD]");
    CHECK_STR(nlp_vocab_token(s.vocab, 2, NULL), "b");
    /* the suffixed forms follow the alphabet, by code point: g</w> n</w> s</w> */
    CHECK_STR(nlp_vocab_token(s.vocab, 9, NULL), "g</w>");
    CHECK_STR(nlp_vocab_token(s.vocab, 10, NULL), "n</w>");
    CHECK_STR(nlp_vocab_token(s.vocab, 11, NULL), "s</w>");
    CHECK_STR(merge_str(&s, 0), "p u"); /* p u: 17, u n</w>: 16, u g</w>: 15 */
    CHECK_EQ_INT(s.n_added, 2);
    CHECK(s.added[0].special && s.added[0].id == 0);
    CHECK_STR(s.bpe.unk_token, "[UNK]");
    nlp_tok_spec_free(&s);

    /* continuing-subword prefix (HF's WordPiece trainer is this) */
    nlp_bpe_train_opts p = {.vocab_size = 100, .continuing_subword_prefix = "##"};
    CHECK(nlp_bpe_train(wc, &p, &s, NULL) == 0);
    CHECK_STR(nlp_vocab_token(s.vocab, 7, NULL), "##g");
    CHECK_STR(merge_str(&s, 0), "##u ##g");
    CHECK_STR(nlp_vocab_token(s.vocab, 11, NULL), "##ug"); /* after ##g ##n ##s ##u; the prefix of b is dropped */
    nlp_tok_spec_free(&s);

    /* errors */
    nlp_bpe_train_opts small = {.vocab_size = 6};
    /* it depends on the data: NLP_EDATA, with the size needed */
    CHECK_EQ_INT(nlp_bpe_train(wc, &small, &s, NULL), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "vocabulary size 6 is smaller than the 0 special tokens plus the 7 characters") != NULL);
    CHECK(strstr(nlp_errmsg(), "needs a vocabulary of at least 7") != NULL);
    nlp_bpe_train_opts nounk = {.vocab_size = 100, .unk_token = "[UNK]"};
    CHECK_EQ_INT(nlp_bpe_train(wc, &nounk, &s, NULL), NLP_EINVAL);
    nlp_wordcount *empty = nlp_wordcount_new();
    CHECK_EQ_INT(nlp_bpe_train(empty, &small, &s, NULL), NLP_EDATA);
    nlp_wordcount_free(empty);
    /* limit_alphabet keeps the most frequent characters: u (36) g (20) p (17) n (16) */
    nlp_bpe_train_opts lim = {.vocab_size = 100, .limit_alphabet = 4};
    CHECK(nlp_bpe_train(wc, &lim, &s, NULL) == 0);
    CHECK_STR(nlp_vocab_token(s.vocab, 0, NULL), "g");
    CHECK_STR(nlp_vocab_token(s.vocab, 3, NULL), "u");
    CHECK_STR(merge_str(&s, 0), "u g");
    nlp_tok_spec_free(&s);
    nlp_wordcount_free(wc);
}

/* Count one corpus file of shared/vectors/tokenize/train and train it the
 * way the vectors were made; compare with HF's files. */
static void check_vector(const char *sh, const char *corpus, int byte_level)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/vectors/tokenize/train/%s.corpus.txt", sh, corpus);
    nlp_tok_spec s = {0};
    nlp_tok_spec_pipeline(&s, byte_level ? NLP_PIPE_BYTELEVEL : NLP_PIPE_WHITESPACE, NULL);
    nlp_wordcount *wc = nlp_wordcount_new();
    nlp_wordcount_opts wo = {.pretok = s.pretok, .n_pretok = s.n_pretok, .threads = 1};
    nlp_wordcount_stats ws = {0};
    const char *paths[] = {path};
    CHECK(nlp_wordcount_files(wc, paths, 1, &wo, &ws) == 0);
    nlp_bpe_train_opts o = {.vocab_size = 30000, .byte_level = byte_level, .threads = 1};
    CHECK(nlp_bpe_train(wc, &o, &s, NULL) == 0);
    const char *kind = byte_level ? "bytebpe" : "bpe";
    snprintf(path, sizeof path, "%s/vectors/tokenize/train/%s.%s.merges.txt", sh, corpus, kind);
    char **lines;
    size_t n;
    CHECK(nlp_read_lines(path, NLP_NL_LF, &lines, &n) == 0);
    int ok = n == s.n_merges;
    for (size_t i = 0; ok && i < n; i++) ok = strcmp(lines[i], merge_str(&s, i)) == 0;
    CHECK_MSG(ok, "%s %s: merges differ", corpus, kind);
    free(lines);
    snprintf(path, sizeof path, "%s/vectors/tokenize/train/%s.%s.vocab.tsv", sh, corpus, kind);
    CHECK(nlp_read_lines(path, NLP_NL_LF, &lines, &n) == 0);
    ok = n == nlp_vocab_size(s.vocab);
    for (size_t i = 0; ok && i < n; i++) {
        char want[256];
        snprintf(want, sizeof want, "%s\t%zu", nlp_vocab_token(s.vocab, (int32_t)i, NULL), i);
        ok = strcmp(lines[i], want) == 0;
    }
    CHECK_MSG(ok, "%s %s: vocabularies differ", corpus, kind);
    free(lines);
    nlp_wordcount_free(wc);
    nlp_tok_spec_free(&s);
}

static void test_hf_vectors(void)
{
    const char *sh = test_root("vectors/tokenize/train");
    if (!sh) return;
    const char *corpora[] = {"hug", "ties", "overlap"};
    for (int i = 0; i < 3; i++) {
        check_vector(sh, corpora[i], 0);
        check_vector(sh, corpora[i], 1);
    }
}

static void test_ties(void)
{
    /* equal counts: the smaller (id_a, id_b) first; ids by code point */
    nlp_wordcount *wc = nlp_wordcount_new();
    nlp_wordcount_add(wc, "zy", 2, 3);
    nlp_wordcount_add(wc, "ab", 2, 3);
    nlp_wordcount_add(wc, "ba", 2, 3);
    nlp_tok_spec s = {0};
    nlp_bpe_train_opts o = {.vocab_size = 100};
    CHECK(nlp_bpe_train(wc, &o, &s, NULL) == 0);
    CHECK_STR(merge_str(&s, 0), "a b");
    CHECK_STR(merge_str(&s, 1), "b a");
    CHECK_STR(merge_str(&s, 2), "z y");
    nlp_tok_spec_free(&s);
    nlp_wordcount_free(wc);
}

static void test_threads_and_counting(void)
{
    /* a synthetic corpus large enough for the parallel merge path */
    const char *dir = test_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/corpus.txt", dir);
    nlp_rng r;
    nlp_rng_seed(&r, 3);
    nlp_buf text = {0};
    for (int line = 0; line < 3000; line++) {
        for (int w = 0; w < 12; w++) {
            int len = 1 + (int)nlp_rng_below(&r, 9);
            for (int k = 0; k < len; k++) nlp_buf_putc(&text, "etaoinshrdlu"[nlp_rng_below(&r, 12)]);
            nlp_buf_putc(&text, w == 11 ? '\n' : ' ');
        }
    }
    CHECK(nlp_write_file(path, text.data, text.len) == 0);
    nlp_buf j[2] = {{0}};
    for (int t = 0; t < 2; t++) {
        nlp_tok_spec s = {0};
        nlp_tok_spec_pipeline(&s, NLP_PIPE_BYTELEVEL, NULL);
        nlp_wordcount *wc = nlp_wordcount_new();
        nlp_wordcount_opts wo = {.pretok = s.pretok, .n_pretok = s.n_pretok, .threads = t + 1};
        nlp_wordcount_stats ws = {0};
        const char *paths[] = {path};
        CHECK(nlp_wordcount_files(wc, paths, 1, &wo, &ws) == 0);
        CHECK_EQ_INT(ws.lines, 3000);
        CHECK_EQ_INT(ws.words, 3000 * 13); /* 12 words and the newline */
        nlp_bpe_train_opts o = {.vocab_size = 400, .byte_level = 1, .byte_alphabet = 1, .threads = t + 1};
        CHECK(nlp_bpe_train(wc, &o, &s, NULL) == 0);
        CHECK_EQ_INT(nlp_vocab_size(s.vocab), 400);
        nlp_tokjson_dump(&s, &j[t]);
        nlp_wordcount_free(wc);
        nlp_tok_spec_free(&s);
    }
    CHECK(j[0].len == j[1].len && memcmp(j[0].data, j[1].data, j[0].len) == 0);
    /* the written tokenizer.json reads back to the same bytes */
    nlp_tok_spec back;
    CHECK(nlp_tokjson_parse(j[0].data, j[0].len, "trained.json", &back) == 0);
    nlp_buf again = {0};
    CHECK(nlp_tokjson_dump(&back, &again) == 0);
    CHECK(again.len == j[0].len && memcmp(again.data, j[0].data, again.len) == 0);
    nlp_buf_free(&again);
    nlp_tok_spec_free(&back);
    /* max_lines and special tokens cut out of the text */
    nlp_wordcount *wc = nlp_wordcount_new();
    const char *sp[] = {"<|endoftext|>"};
    nlp_pretok_step ws1 = {.type = NLP_PRETOK_WHITESPACE_SPLIT};
    nlp_wordcount_opts wo = {.pretok = &ws1, .n_pretok = 1, .specials = sp, .n_specials = 1, .max_lines = 2};
    CHECK(nlp_write_file(path, "a<|endoftext|>b\nc\nd\n", 20) == 0);
    nlp_wordcount_stats ws = {0};
    const char *paths[] = {path};
    CHECK(nlp_wordcount_files(wc, paths, 1, &wo, &ws) == 0);
    CHECK_EQ_INT(nlp_wordcount_size(wc), 3); /* a b c; d is past max_lines */
    nlp_wordcount_free(wc);
    /* invalid UTF-8: repaired and counted, or an error with --strict */
    CHECK(nlp_write_file(path, "ok\nbad \xFF here\n", 15) == 0);
    wc = nlp_wordcount_new();
    memset(&ws, 0, sizeof ws);
    wo.max_lines = 0;
    CHECK(nlp_wordcount_files(wc, paths, 1, &wo, &ws) == 0);
    CHECK_EQ_INT(ws.replaced, 1);
    CHECK(strstr(ws.first_bad, "line 2 byte 7") != NULL);
    nlp_wordcount_free(wc);
    wc = nlp_wordcount_new();
    wo.strict = 1;
    CHECK_EQ_INT(nlp_wordcount_files(wc, paths, 1, &wo, &ws), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "line 2 byte 7: invalid UTF-8") != NULL);
    nlp_wordcount_free(wc);
    nlp_buf_free(&text);
    nlp_buf_free(&j[0]);
    nlp_buf_free(&j[1]);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_lecture_training);
    RUN(test_specials_unk_and_variants);
    RUN(test_hf_vectors);
    RUN(test_ties);
    RUN(test_threads_and_counting);
    return TEST_END();
}
