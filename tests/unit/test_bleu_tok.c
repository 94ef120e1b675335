/*
 * test_bleu_tok.c — sacreBLEU's tokenizers and Python string semantics:
 * every row of shared/vectors/bleu/_units/tokenize.jsonl (13a, intl, zh,
 * char, none, each plain and lowercased), plus lowercasing and whitespace
 * corner cases written here.
 */
#include "test.h"

#include "jsonl.h"

#include "eval/pystr.h"
#include "eval/tokenize.h"

static nlp_evtok_buf sb;

static void check_row(json_t *o, int index)
{
    (void)index;
    const char *in = json_string_value(json_object_get(o, "input"));
    size_t inlen = json_string_length(json_object_get(o, "input"));
    nlp_buf low = {0};
    nlp_py_lower(in, inlen, &low);
    for (int k = 0; nlp_evtok_names[k]; k++) {
        for (int lc = 0; lc < 2; lc++) {
            char key[32];
            snprintf(key, sizeof key, "%s%s", nlp_evtok_names[k], lc ? "_lc" : "");
            json_t *want = json_object_get(o, key);
            if (!want) continue;
            nlp_buf got = {0};
            nlp_evtok_string((nlp_evtok)k, lc ? (low.data ? low.data : "") : in, lc ? low.len : inlen, &got, &sb);
            const char *w = json_string_value(want);
            int ok = got.len == json_string_length(want) && memcmp(got.data ? got.data : "", w, got.len) == 0;
            CHECK_MSG(ok, "%s of \"%s\": got \"%s\", want \"%s\"", key, in, got.data ? got.data : "", w);
            nlp_buf_free(&got);
        }
    }
    nlp_buf_free(&low);
}

static void test_vectors(void)
{
    int rows = jsonl_each("vectors/bleu/_units/tokenize.jsonl", check_row);
    if (rows >= 0) CHECK(rows >= (t_compact ? 50 : 200));
    nlp_evtok_buf_free(&sb);
}

static const char *lower(const char *s)
{
    static nlp_buf b;
    nlp_buf_reset(&b);
    nlp_py_lower(s, strlen(s), &b);
    return b.data ? b.data : "";
}

static void test_lower(void)
{
    CHECK_STR(lower("ABC xyz"), "abc xyz");
    CHECK_STR(lower("\xC4\xB0"), "i\xCC\x87");                  /* İ -> i̇ */
    CHECK_STR(lower("\xCE\xA3"), "\xCF\x83");                   /* Σ alone: σ */
    CHECK_STR(lower("\xCE\x91\xCE\xA3"), "\xCE\xB1\xCF\x82");   /* ΑΣ: final ς */
    CHECK_STR(lower("\xCE\x91\xCE\xA3\xCE\x91"), "\xCE\xB1\xCF\x83\xCE\xB1"); /* ΑΣΑ: σ */
    CHECK_STR(lower("\xCE\x91\xCE\xA3."), "\xCE\xB1\xCF\x82."); /* punctuation after: final */
    CHECK_STR(lower("\xCE\x91'\xCE\xA3"), "\xCE\xB1'\xCF\x82"); /* ' is case-ignorable */
    CHECK_STR(lower("\xCE\xA3\xCE\x91"), "\xCF\x83\xCE\xB1");   /* not preceded by a cased letter */
    CHECK_STR(lower("\xC7\x85"), "\xC7\x86");                   /* ǅ -> ǆ */
    CHECK_STR(lower("STRASSE Stra\xC3\x9F" "e"), "strasse stra\xC3\x9F" "e");
    CHECK(nlp_py_is_cased('a') && nlp_py_is_cased(0x2160) && !nlp_py_is_cased('1'));
    CHECK(nlp_py_is_case_ignorable('\'') && nlp_py_is_case_ignorable(0x0301) && !nlp_py_is_case_ignorable('a'));
}

static void test_space(void)
{
    const char *s = "a\xC2\xA0" "b\xE3\x80\x80" "c\x1f" "d \xE2\x80\xA8";
    size_t pos = 0, tb, te, n = strlen(s);
    int k = 0;
    char got[8] = {0};
    while (nlp_py_next_token(s, n, &pos, &tb, &te)) got[k++] = s[tb];
    CHECK_STR(got, "abcd");
    CHECK_EQ_INT(nlp_py_rstrip(s, n), strlen(s) - 4);
    CHECK_EQ_INT(nlp_py_lstrip("\t\xC2\x85x", 4), 3);
    CHECK_EQ_INT(nlp_py_space_len("\xE2\x80\x8B", 3, 0), 0); /* ZWSP is not whitespace */
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_vectors);
    RUN(test_lower);
    RUN(test_space);
    return TEST_END();
}
