/*
 * test_text_utf8.c — lib/text/utf8 and unicode: maximal-subpart repair
 * (Unicode Standard, chapter 3, U+FFFD substitution), validation offsets,
 * encoding round trips, categories and whitespace sets.
 */
#include "base/err.h"
#include "text/unicode.h"
#include "text/utf8.h"
#include "test.h"

static char *repair(const char *s, size_t n, size_t *cnt)
{
    nlp_buf b = {0};
    nlp_utf8_repair(s, n, &b, cnt);
    return nlp_buf_detach(&b, NULL);
}

static void test_repair_standard_example(void)
{
    /* The Standard's example: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64
     * → a FFFD FFFD FFFD b FFFD c FFFD FFFD d */
    const char in[] = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
    size_t cnt;
    char *out = repair(in, sizeof in - 1, &cnt);
    CHECK_STR(out, "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD" "d");
    CHECK_EQ_INT(cnt, 6);
    free(out);
}

static void test_repair_cases(void)
{
    /* input, expected count of U+FFFD; the cases were checked against
     * Python's bytes.decode("utf-8", "replace"). */
    struct {
        const char *in;
        size_t len;
        size_t fffd;
        const char *rest; /* expected output with U+FFFD written as '?' */
    } t[] = {
        {"\xC0\x80", 2, 2, "??"},             /* overlong NUL: C0 is never valid */
        {"\xE0\x80\x80", 3, 3, "???"},        /* overlong 3-byte: E0 needs A0..BF */
        {"\xED\xA0\x80", 3, 3, "???"},        /* surrogate D800 */
        {"\xF4\x90\x80\x80", 4, 4, "????"},   /* above U+10FFFF */
        {"\xF0\x9F\x98", 3, 1, "?"},          /* truncated 4-byte at end */
        {"\xF0\x9F\x98x", 4, 1, "?x"},        /* truncated 4-byte before ASCII */
        {"\xE2\x82", 2, 1, "?"},              /* truncated 3-byte */
        {"\xFF", 1, 1, "?"},
        {"\x80\x80", 2, 2, "??"},             /* lone continuations */
        {"a\xC3\xA9z", 4, 0, "a\xC3\xA9z"},   /* valid é */
        {"\xF0\x9F\x98\x80", 4, 0, "\xF0\x9F\x98\x80"},
        {"\xEF\xBF\xBD", 3, 0, "\xEF\xBF\xBD"}, /* U+FFFD itself is valid */
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        size_t cnt;
        char *out = repair(t[i].in, t[i].len, &cnt);
        /* map U+FFFD to '?' for comparison */
        nlp_buf b = {0};
        for (size_t k = 0; out[k];) {
            if (strncmp(out + k, "\xEF\xBF\xBD", 3) == 0 && t[i].fffd) {
                nlp_buf_putc(&b, '?');
                k += 3;
            } else {
                nlp_buf_putc(&b, out[k++]);
            }
        }
        CHECK_MSG(cnt == t[i].fffd, "case %zu: %zu replacements, expected %zu", i, cnt, t[i].fffd);
        CHECK_MSG(b.data && strcmp(b.data, t[i].rest) == 0, "case %zu: got '%s'", i, b.data ? b.data : "");
        nlp_buf_free(&b);
        free(out);
    }
}

static void test_valid_offsets(void)
{
    size_t bad = 99;
    CHECK(nlp_utf8_valid("plain ascii text, long enough for the fast path", 47, &bad));
    CHECK(!nlp_utf8_valid("0123456789abcdef\xC3(", 18, &bad));
    CHECK_EQ_INT(bad, 16);
    CHECK(!nlp_utf8_valid("\xC3\xA9\xED\xA0\x80", 5, &bad));
    CHECK_EQ_INT(bad, 2);
    CHECK(nlp_utf8_valid("", 0, &bad));
}

static void test_encode_roundtrip(void)
{
    int bad = 0;
    for (int32_t cp = 0; cp <= 0x10FFFF; cp++) {
        char b[4];
        int k = nlp_utf8_encode(cp, b);
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            bad += k != 0;
            continue;
        }
        size_t i = 0;
        bad += k == 0 || nlp_utf8_next(b, (size_t)k, &i) != cp || i != (size_t)k;
    }
    CHECK_EQ_INT(bad, 0);
    char b[4];
    CHECK_EQ_INT(nlp_utf8_encode(0x110000, b), 0);
    CHECK_EQ_INT(nlp_utf8_count("h\xC3\xA9llo \xF0\x9F\x98\x80", 11), 7);
}

static void test_properties(void)
{
    CHECK(nlp_uc_is_letter('a') && nlp_uc_is_letter(0x4E00) && !nlp_uc_is_letter('1'));
    CHECK(nlp_uc_is_number('7') && nlp_uc_is_number(0x00BD) && nlp_uc_is_number(0x2163));
    CHECK(nlp_uc_is_punct('!') && nlp_uc_is_punct(0x00BF) && !nlp_uc_is_punct('$') && !nlp_uc_is_punct(0x20AC));
    CHECK_STR(nlp_uc_category_name(nlp_uc_category(0x20AC)), "Sc");
    CHECK_STR(nlp_uc_category_name(nlp_uc_category(0x200B)), "Cf");
    /* White_Space vs Python isspace: they differ exactly on 1C..1F */
    int differ = 0;
    for (int32_t cp = 0; cp < 0x3100; cp++) differ += nlp_uc_is_white_space(cp) != nlp_uc_is_py_space(cp);
    CHECK_EQ_INT(differ, 4);
    CHECK(nlp_uc_is_white_space(0x3000) && nlp_uc_is_white_space(0x85) && !nlp_uc_is_white_space(0x200B));
    CHECK_EQ_INT(nlp_uc_tolower(0x0130), 0x0069); /* simple mapping */
    CHECK_EQ_INT(nlp_uc_tolower('A'), 'a');

    nlp_buf b = {0};
    CHECK_EQ_INT(nlp_uc_normalize("e\xCC\x81", 3, NLP_NORM_NFC, &b), 0);
    CHECK_STR(b.data, "\xC3\xA9");
    nlp_buf_reset(&b);
    CHECK_EQ_INT(nlp_uc_normalize("\xEF\xAC\x81", 3, NLP_NORM_NFKC, &b), 0); /* ﬁ ligature */
    CHECK_STR(b.data, "fi");
    nlp_buf_reset(&b);
    CHECK_EQ_INT(nlp_uc_normalize("\xC3\xA9", 2, NLP_NORM_NFD, &b), 0);
    CHECK_STR(b.data, "e\xCC\x81");
    nlp_buf_reset(&b);
    CHECK_EQ_INT(nlp_uc_normalize("\xC3(", 2, NLP_NORM_NFC, &b), NLP_EDATA);
    nlp_buf_free(&b);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_repair_standard_example);
    RUN(test_repair_cases);
    RUN(test_valid_offsets);
    RUN(test_encode_roundtrip);
    RUN(test_properties);
    return TEST_END();
}
