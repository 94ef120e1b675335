/*
 * test_jscan.c — the fast path through vocabularies and merges (jscan.h)
 * against jansson, the reader it stands in for: on random texts full of
 * escapes, surrogates, multi-byte UTF-8, control characters, numbers of
 * every form, repeated keys and ids, the fast path either gives jansson's
 * very vocabulary or declines. And the tokenizer.json reader still names
 * errors where jansson finds them, after the parts the fast path emptied.
 */
#include "test.h"

#include "base/err.h"
#include "base/hash.h"
#include "base/mem.h"
#include "base/rng.h"
#include "tok/jscan.h"
#include "tok/tokenizer.h"
#include "tok/tokfiles.h"
#include "tok/tokjson.h"
#include "tok/vocab.h"

#include "jscan_ref.h"

#include <jansson.h>

static int same_vocab(const nlp_vocab *a, const nlp_vocab *b)
{
    if (nlp_vocab_size(a) != nlp_vocab_size(b) || nlp_vocab_count(a) != nlp_vocab_count(b)) return 0;
    for (size_t i = 0; i < nlp_vocab_size(a); i++) {
        size_t na = 0, nb = 0;
        const char *ta = nlp_vocab_token(a, (int32_t)i, &na), *tb = nlp_vocab_token(b, (int32_t)i, &nb);
        if (!ta != !tb || na != nb || (ta && memcmp(ta, tb, na) != 0)) return 0;
        if (ta && nlp_vocab_find(a, ta, na) != (int32_t)i) return 0;
    }
    return 1;
}

/* One random JSON string: mostly plain, sometimes with each kind of escape,
 * raw UTF-8 (well- and ill-formed) and control characters. */
static void rand_string(nlp_rng *r, nlp_buf *b)
{
    static const char *const parts[] = {
        "a", "b", "ab", "\\u0120", "\\u00e9", "\\\"", "\\\\", "\\/", "\\n", "\\t", "\\b", "\\f", "\\r",
        "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\\ud83d\\ude00", "\\uD83D\\uDE00", " ", "\\u0041",
        /* each of these makes the text invalid for jansson */
        "\\ud83d", "\\ude00", "\\ud83dx", "\\u0000", "\\x", "\\u12", "\x01", "\x1f", "\xC0\x80", "\xED\xA0\x80",
        "\xF4\x90\x80\x80", "\xC3", "\x80", "\xFF",
    };
    size_t np = sizeof parts / sizeof *parts, valid = 20;
    nlp_buf_putc(b, '"');
    size_t len = nlp_rng_below(r, 4);
    for (size_t i = 0; i < len; i++) {
        size_t k = nlp_rng_below(r, 50) == 0 ? valid + nlp_rng_below(r, np - valid) : nlp_rng_below(r, valid);
        nlp_buf_puts(b, parts[k]);
    }
    nlp_buf_putc(b, '"');
}

static void rand_ws(nlp_rng *r, nlp_buf *b)
{
    static const char ws[] = " \n\t\r";
    while (nlp_rng_below(r, 3) == 0) nlp_buf_putc(b, ws[nlp_rng_below(r, 4)]);
}

static void rand_number(nlp_rng *r, nlp_buf *b, int next)
{
    switch (nlp_rng_below(r, 40)) {
    case 0: nlp_buf_puts(b, "-1"); break;
    case 1: nlp_buf_puts(b, "1.0"); break;
    case 2: nlp_buf_puts(b, "1e2"); break;
    case 3: nlp_buf_puts(b, "01"); break;
    case 4: nlp_buf_puts(b, "-0"); break;
    case 5: nlp_buf_puts(b, "2147483646"); break;
    case 6: nlp_buf_puts(b, "99999999999999999999"); break;
    case 7: nlp_buf_puts(b, "\"3\""); break;
    case 8: nlp_buf_puts(b, "null"); break;
    case 9: nlp_buf_printf(b, "%d", (1 << 20) + 40); break;
    case 10: nlp_buf_printf(b, "%d", (int)nlp_rng_below(r, 8)); break; /* an id twice, now and then */
    default: nlp_buf_printf(b, "%d", next);
    }
}

static void test_vocab_against_jansson(void)
{
    nlp_rng r;
    nlp_rng_seed(&r, 7);
    nlp_buf b = {0};
    int handled = 0, agreed = 1, declined_valid = 0, cases = 20000;
    for (int c = 0; c < cases; c++) {
        nlp_buf_reset(&b);
        rand_ws(&r, &b);
        nlp_buf_putc(&b, '{');
        size_t n = nlp_rng_below(&r, 6);
        for (size_t i = 0; i < n; i++) {
            rand_ws(&r, &b);
            rand_string(&r, &b);
            rand_ws(&r, &b);
            nlp_buf_putc(&b, ':');
            rand_ws(&r, &b);
            rand_number(&r, &b, (int)i);
            rand_ws(&r, &b);
            if (i + 1 < n || nlp_rng_below(&r, 100) == 0) nlp_buf_putc(&b, ','); /* a trailing comma now and then */
        }
        nlp_buf_putc(&b, '}');
        rand_ws(&r, &b);
        if (nlp_rng_below(&r, 100) == 0) nlp_buf_puts(&b, nlp_rng_below(&r, 2) ? "x" : "{}");
        nlp_vocab *ref = jscan_reference(b.data, b.len), *fast = NULL;
        size_t o0 = nlp_jscan_ws(b.data, b.len, 0), o1 = o0;
        int rc = 0;
        if (nlp_jscan_skip(b.data, b.len, &o1) && nlp_jscan_ws(b.data, b.len, o1) == b.len)
            rc = nlp_jscan_vocab(b.data, o0, o1, NULL, &fast);
        if (rc == 1) {
            handled++;
            if (!ref || !same_vocab(fast, ref)) {
                if (agreed) printf("    differs from jansson on: %s\n", b.data);
                agreed = 0;
            }
        } else if (ref && nlp_vocab_count(ref) == n) {
            /* declined, though no key repeats */
            if (!declined_valid) printf("    declined: %s\n", b.data);
            declined_valid++;
        }
        nlp_vocab_free(fast);
        nlp_vocab_free(ref);
    }
    CHECK(agreed);
    /* it takes every valid one but where a key repeats */
    CHECK_EQ_INT(declined_valid, 0);
    CHECK_MSG(handled > cases / 4, "handled %d", handled);
    nlp_buf_free(&b);
}

static void test_vocab_cases(void)
{
    static const struct {
        const char *text;
        int handled;
    } cases[] = {
        {"{}", 1},
        {"{\"a\": 0, \"\\u0120b\": 1, \"\\ud83d\\ude00\": 2}", 1},
        {"{\"a\": 0, \"b\": 0}", 0},          /* an id twice */
        {"{\"a\": 0, \"a\": 1}", 0},          /* a key twice: jansson keeps the last */
        {"{\"a\": 0,}", 0},                   /* trailing comma */
        {"{\"a\": 1.0}", 0},                  /* a real */
        {"{\"a\": 01}", 0},                   /* a leading zero */
        {"{\"a\": -1}", 0},
        {"{\"\\u0000\": 0}", 0},              /* NUL: jansson refuses it */
        {"{\"\\udc00\": 0}", 0},              /* a lone low surrogate */
        {"{\"\\ud800x\": 0}", 0},             /* a high one without its pair */
        {"{\"\x01\": 0}", 0},                 /* a control character */
        {"{\"\xC0\xAF\": 0}", 0},             /* overlong UTF-8 */
        {"{\"a\": 0, \"b\": 1048577}", 1},    /* 2^20 holes at most */
        {"{\"a\": 0, \"b\": 1048578}", 0},
        {"{\"a\": 2147483646}", 0},           /* INT32_MAX - 1: out of range */
        {"{\"a\": 0} x", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *t = cases[i].text;
        size_t n = strlen(t), o1 = 0;
        nlp_vocab *v = NULL;
        int rc = nlp_jscan_skip(t, n, &o1) && nlp_jscan_ws(t, n, o1) == n ? nlp_jscan_vocab(t, 0, o1, NULL, &v) : 0;
        CHECK_MSG(rc == cases[i].handled, "%s: got %d", t, rc);
        nlp_vocab *ref = jscan_reference(t, n);
        if (rc == 1) CHECK_MSG(ref && same_vocab(v, ref), "%s", t);
        nlp_vocab_free(v);
        nlp_vocab_free(ref);
    }
}

/* Keys of up to 60 bytes (and now and then of thousands) made mostly of two-byte characters, as GPT-2's
 * vocabulary is, and escapes (the raw runs between them are copied 8 bytes
 * a step and checked when they end), with now and then a byte or character that breaks the
 * 16-byte UTF-8 steps (a lone lead or continuation byte, a lead at a
 * step's end, longer forms, overlong and out-of-range bytes): jscan must
 * take exactly the keys jansson takes, with the same bytes. */
static void test_utf8_steps(void)
{
    static const char *const common[] = {"\xC4\xA0", "a", "\xC3\xA9", "\xDF\xBF", "\xC2\x80", "z", "\\u0120", "\\n"};
    static const char *const rare[] = {"\xC4", "\xA0", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xC0\xAF", "\xC1\xBF",
                                       "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF", "\xC4\xC4",
                                       "\xE2\x82", "\xF0\x9F\x98"};
    nlp_rng r;
    nlp_rng_seed(&r, 11);
    nlp_buf b = {0}, key = {0};
    int handled = 0, refused = 0, wrong = 0, cases = 20000;
    for (int c = 0; c < cases; c++) {
        nlp_buf_reset(&b);
        nlp_buf_reset(&key);
        /* one key in 50 long (the decoding buffer grows while escapes
         * and 8-byte steps are written into it) */
        const int longkey = nlp_rng_below(&r, 50) == 0;
        size_t len = longkey ? 200 + nlp_rng_below(&r, 1000) : nlp_rng_below(&r, 40), most = longkey ? 3000 : 60;
        int odd = !longkey && nlp_rng_below(&r, 3) == 0;
        for (size_t i = 0; i < len && key.len < most; i++) {
            const size_t nrare = sizeof rare / sizeof *rare, ncommon = sizeof common / sizeof *common;
            nlp_buf_puts(&key, odd && nlp_rng_below(&r, 8) == 0 ? rare[nlp_rng_below(&r, nrare)]
                                                                : common[nlp_rng_below(&r, ncommon)]);
        }
        nlp_buf_puts(&b, "{\"");
        nlp_buf_append(&b, key.data, key.len);
        nlp_buf_puts(&b, "\": 0}");
        if (nlp_rng_below(&r, 2)) nlp_buf_puts(&b, "                "); /* room for a step past the key, or not */
        nlp_vocab *ref = jscan_reference(b.data, b.len), *fast = NULL;
        size_t o1 = 0;
        int rc = nlp_jscan_skip(b.data, b.len, &o1) && nlp_jscan_ws(b.data, b.len, o1) == b.len
                     ? nlp_jscan_vocab(b.data, 0, o1, NULL, &fast)
                     : 0;
        if (rc == 1) handled++;
        else refused++;
        if ((rc == 1) != (ref != NULL) || (rc == 1 && !same_vocab(fast, ref))) {
            if (!wrong)
                printf("    jscan %d, jansson %s on a key of %zu bytes\n", rc, ref ? "takes it" : "refuses it",
                       key.len);
            wrong++;
        }
        nlp_vocab_free(fast);
        nlp_vocab_free(ref);
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK_MSG(handled > cases / 2 && refused > cases / 20, "handled %d, refused %d", handled, refused);
    nlp_buf_free(&b);
    nlp_buf_free(&key);
}

static void test_merges(void)
{
    const char *vt = "{\"a\": 0, \"b\": 1, \"a b\": 2, \"\xC4\xA0\": 3}";
    nlp_vocab *v = NULL;
    size_t o1 = 0;
    CHECK(nlp_jscan_skip(vt, strlen(vt), &o1));
    CHECK(nlp_jscan_vocab(vt, 0, o1, NULL, &v) == 1);
    static const struct {
        const char *text;
        int handled;
        size_t n;
        int32_t first[2];
    } cases[] = {
        {"[]", 1, 0, {0, 0}},
        {"[\"a b\", [\"b\", \"a\"], \"\\u0120 a\"]", 1, 3, {0, 1}},
        {"[[\"a b\", \"a\"]]", 1, 1, {2, 0}}, /* a pair's tokens may hold spaces */
        {"[\"a  b\"]", 0, 0, {0, 0}},         /* two spaces */
        {"[\"ab\"]", 0, 0, {0, 0}},
        {"[\"a c\"]", 0, 0, {0, 0}},          /* c is no token */
        {"[[\"a\"]]", 0, 0, {0, 0}},
        {"[[\"a\", \"b\", \"a\"]]", 0, 0, {0, 0}},
        {"[\"a b\",]", 0, 0, {0, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *t = cases[i].text;
        size_t n = strlen(t), a1 = 0, count = 99;
        int32_t *m = NULL;
        CHECK(nlp_jscan_skip(t, n, &a1) || !cases[i].handled);
        int rc = nlp_jscan_merges(t, 0, a1 ? a1 : n, v, &m, &count);
        CHECK_MSG(rc == cases[i].handled, "%s: got %d", t, rc);
        if (rc == 1) {
            CHECK_EQ_INT(count, cases[i].n);
            if (count) CHECK(m[0] == cases[i].first[0] && m[1] == cases[i].first[1]);
        }
        free(m);
    }
    /* escaped "a b" strings: both halves of each outlive the next one's
     * decoding (the fuzzer's find: the second half pointed into a reused
     * buffer, and was read after it was freed) */
    const char *esc = "[\"\\u0061 b\", \"b \\u0061\", \"\\u0061\\u0020\\u0061\"]";
    size_t a1 = 0, count = 0;
    int32_t *m = NULL;
    CHECK(nlp_jscan_skip(esc, strlen(esc), &a1));
    CHECK(nlp_jscan_merges(esc, 0, a1, v, &m, &count) == 1);
    CHECK(count == 3 && m && m[0] == 0 && m[1] == 1 && m[2] == 1 && m[3] == 0 && m[4] == 0 && m[5] == 0);
    free(m);
    nlp_vocab_free(v);
}

static void test_members_and_skip(void)
{
    const char *t = " {\"a\": [1, {\"x\": \"]}\"}], \"m\\u006fdel\": {\"q\": 1}, \"model\": \"last\", \"b\": null} \n";
    static const char *const keys[] = {"model", "b", "none"};
    size_t sp[3][2];
    CHECK_EQ_INT(nlp_jscan_doc_members(t, strlen(t), keys, 3, sp), 1);
    /* the key written with an escape is the same key; the last one counts */
    CHECK(sp[0][1] > sp[0][0] && strncmp(t + sp[0][0], "\"last\"", 6) == 0);
    CHECK(strncmp(t + sp[1][0], "null", 4) == 0 && sp[1][1] - sp[1][0] == 4);
    CHECK(sp[2][0] == 0 && sp[2][1] == 0);
    CHECK_EQ_INT(nlp_jscan_doc_members("[1]", 3, keys, 3, sp), -1);
    CHECK_EQ_INT(nlp_jscan_doc_members("{\"a\": 1} 2", 10, keys, 3, sp), -1);
    CHECK_EQ_INT(nlp_jscan_doc_members("{\"a\": [1}", 9, keys, 3, sp), -1);
    /* nesting: jansson's limit is 2048 levels */
    nlp_buf b = {0};
    for (int d = 0; d < 2048; d++) nlp_buf_putc(&b, '[');
    for (int d = 0; d < 2048; d++) nlp_buf_putc(&b, ']');
    size_t i = 0;
    CHECK(nlp_jscan_skip(b.data, b.len, &i) && i == b.len);
    nlp_buf_reset(&b);
    for (int d = 0; d < 2049; d++) nlp_buf_putc(&b, '[');
    for (int d = 0; d < 2049; d++) nlp_buf_putc(&b, ']');
    i = 0;
    CHECK(!nlp_jscan_skip(b.data, b.len, &i));
    nlp_buf_free(&b);
    i = 0;
    CHECK(nlp_jscan_skip("\"a\\\\\" ,", 8, &i) && i == 5); /* the quote after an escaped backslash ends it */
    i = 0;
    CHECK(!nlp_jscan_skip("\"a\\\"", 4, &i));             /* an escaped quote does not */
    /* a text that ends in a backslash inside a string, in an object (the
     * fuzzer's find: the scan read past the end; make asan sees it, the
     * text being a heap block of its exact size) */
    char *b5 = malloc(5);
    memcpy(b5, "{\"ab\\", 5);
    i = 0;
    CHECK(!nlp_jscan_skip(b5, 5, &i));
    CHECK_EQ_INT(nlp_jscan_doc_members(b5, 5, keys, 3, sp), -1);
    free(b5);
}

/* The end of the value at s[i], byte by byte: what nlp_jscan_skip must
 * find (its 64-byte steps are a faster way to the same answer). */
static int skip_ref(const char *s, size_t n, size_t *i)
{
    size_t j = nlp_jscan_ws(s, n, *i);
    if (j >= n || (s[j] != '{' && s[j] != '[')) return -1; /* not a container: not compared */
    char stack[2048];
    int depth = 0, in_str = 0;
    for (; j < n; j++) {
        char c = s[j];
        if (in_str) {
            if (c == '\\') j++;
            else if (c == '"') in_str = 0;
        } else if (c == '"') in_str = 1;
        else if (c == '{' || c == '[') {
            if (depth == 2048) return 0;
            stack[depth++] = c == '{' ? '}' : ']';
        } else if (c == '}' || c == ']') {
            if (!depth || stack[depth - 1] != c) return 0;
            if (--depth == 0) {
                *i = j + 1;
                return 1;
            }
        }
    }
    return 0;
}

static void test_skip_steps(void)
{
    /* containers of every length around the 64-byte step, made of strings
     * that hold brackets, quotes escaped or not, backslashes at a step's
     * last byte, strings across steps, unbalanced and cut-off texts */
    static const char *const parts[] = {"{", "}", "[", "]", "\"a\"", "\"[}\"", "\"\\\"\"", "\"\\\\\"", ", ",
                                        "1", "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"", "\"\xC4\xA0the\"", ": ", "\"\\u0041]\""};
    nlp_rng r;
    nlp_rng_seed(&r, 99);
    nlp_buf b = {0};
    int same = 1, ends = 0;
    for (int trial = 0; trial < 20000 && same; trial++) {
        nlp_buf_reset(&b);
        nlp_buf_putc(&b, nlp_rng_u64(&r) % 2 ? '{' : '[');
        size_t np = nlp_rng_u64(&r) % 60;
        for (size_t k = 0; k < np; k++) nlp_buf_puts(&b, parts[nlp_rng_u64(&r) % (sizeof parts / sizeof *parts)]);
        if (nlp_rng_u64(&r) % 4) { /* mostly closed, so that many texts have an end */
            int d = 0;
            for (size_t q = 0; q < b.len; q++) d += b.data[q] == '{' || b.data[q] == '[';
            for (int q = 0; q < d; q++) nlp_buf_putc(&b, nlp_rng_u64(&r) % 2 ? '}' : ']');
        }
        size_t cut = b.len - nlp_rng_u64(&r) % (b.len < 3 ? 1 : 3);
        char *t = malloc(cut ? cut : 1); /* its exact size: make asan sees a read past the end */
        memcpy(t, b.data, cut);
        size_t i1 = 0, i2 = 0;
        int want = skip_ref(t, cut, &i1), got = nlp_jscan_skip(t, cut, &i2);
        same &= want == got && (!want || i1 == i2);
        ends += want == 1;
        free(t);
    }
    CHECK(same);
    CHECK(ends > 2000); /* enough texts had an end to compare it */
    nlp_buf_free(&b);
}

/* A tokenizer.json on one line: an error after the vocabulary (which the
 * fast path read and emptied) is named at jansson's line and column. */
static void test_tokjson_positions(void)
{
    const char *t = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\xC3\xA9\xE2\x82\xAC\": 0, \"b\\u00e9\": 1}, "
                    "\"merges\": [[\"\xC3\xA9\xE2\x82\xAC\", \"b\\u00e9\"]]}, \"normalizer\": {\"type\": tru}}";
    json_error_t err;
    json_t *j = json_loadb(t, strlen(t), JSON_DECODE_ANY, &err);
    CHECK(!j);
    char want[256];
    snprintf(want, sizeof want, "'t.json' line %d column %d: %s", err.line, err.column, err.text);
    nlp_tok_spec s;
    CHECK(nlp_tokjson_parse(t, strlen(t), "t.json", &s) == NLP_EFORMAT);
    CHECK_STR(nlp_errmsg(), want);
    /* and the same file made right reads with the fast path's vocabulary and merges */
    const char *ok = "{\"model\": {\"type\": \"BPE\", \"merges\": [[\"\xC3\xA9\", \"b\\u00e9\"]], \"vocab\": "
                     "{\"\xC3\xA9\": 0, \"b\\u00e9\": 1, \"\xC3\xA9" "b\xC3\xA9\": 2}}, \"normalizer\": null}";
    CHECK(nlp_tokjson_parse(ok, strlen(ok), "ok.json", &s) == 0);
    CHECK(s.vocab && nlp_vocab_count(s.vocab) == 3 && nlp_vocab_find(s.vocab, "b\xC3\xA9", 3) == 1);
    CHECK(s.n_merges == 1 && s.merges[0] == 0 && s.merges[1] == 1);
    nlp_tok_spec_free(&s);
    /* an error the fast path leaves to the readers: a merge of unknown tokens */
    const char *bad = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a a\", \"a z\"]}}";
    CHECK(nlp_tokjson_parse(bad, strlen(bad), "bad.json", &s) == NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "model.merges[1]: token 'z' is not in the vocabulary") != NULL);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
}

/* GPT-2's pair of files through the fast path: the errors of a merges file
 * (checked for UTF-8 only where a line is wrong) name the file and line. */
static void test_pair_errors(void)
{
    const char *tmp = getenv("NLPIPE_TMP") ? getenv("NLPIPE_TMP") : "/tmp";
    char vj[512], mb[512];
    snprintf(vj, sizeof vj, "%s/jscan-encoder.json", tmp);
    snprintf(mb, sizeof mb, "%s/jscan-vocab.bpe", tmp);
    write_file(vj, "{\"a\": 0, \"b\": 1, \"\\u0120\": 2, \"ab\": 3, \"\\u0120a\": 4}");
    nlp_tok_spec s;
    write_file(mb, "#version: 0.2\na b\n\xC4\xA0 a\n");
    CHECK(nlp_tokfiles_read_pair(vj, mb, 1, &s) == 0);
    CHECK(s.n_merges == 2 && s.merges[0] == 0 && s.merges[1] == 1 && s.merges[2] == 2 && s.merges[3] == 0);
    nlp_tok_spec_free(&s);
    write_file(mb, "#version: 0.2\na b\na c\n");
    CHECK(nlp_tokfiles_read_pair(vj, mb, 1, &s) == NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "vocab.bpe' line 3: token 'c' is not in") != NULL, "%s", nlp_errmsg());
    write_file(mb, "#version: 0.2\na b\na \xFF\n");
    CHECK(nlp_tokfiles_read_pair(vj, mb, 1, &s) == NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "vocab.bpe' byte 20: invalid UTF-8 (line 3)") != NULL, "%s", nlp_errmsg());
    write_file(mb, "#version: 0.2\nab\n\xFF\n");
    CHECK(nlp_tokfiles_read_pair(vj, mb, 1, &s) == NLP_EFORMAT); /* invalid UTF-8 is named first */
    CHECK_MSG(strstr(nlp_errmsg(), "invalid UTF-8 (line 3)") != NULL, "%s", nlp_errmsg());
    write_file(mb, "#version: 0.2\nab\n");
    CHECK(nlp_tokfiles_read_pair(vj, mb, 1, &s) == NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "line 2: expected two tokens separated by one space") != NULL, "%s", nlp_errmsg());
    /* lines are scanned 16 bytes a step: long tokens, a space on either
     * side of a step, CRLF, no newline at the end, and two spaces that lie
     * in different steps */
    char big[4096];
    write_file(vj, "{\"aaaaaaaaaaaaaaaaaaaa\": 0, \"b\": 1, \"aaaaaaaaaaaaaaaaaaaab\": 2, \"baaaaaaaaaaaaaaaaaaaa\": 3, "
                   "\"c\": 4, \"bc\": 5}");
    write_file(mb, "aaaaaaaaaaaaaaaaaaaa b\r\nb aaaaaaaaaaaaaaaaaaaa\n\nb c");
    CHECK(nlp_tokfiles_read_pair(vj, mb, 1, &s) == 0);
    CHECK(s.n_merges == 3 && s.merges[0] == 0 && s.merges[1] == 1 && s.merges[2] == 1 && s.merges[3] == 0 &&
          s.merges[4] == 1 && s.merges[5] == 4);
    nlp_tok_spec_free(&s);
    write_file(mb, "b c\naaaaaaaaaaaaaaa b aaaaaaaaaaaaaaaaaaaa\n");
    CHECK(nlp_tokfiles_read_pair(vj, mb, 1, &s) == NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "line 2: expected two tokens separated by one space") != NULL, "%s", nlp_errmsg());
    snprintf(big, sizeof big, "b c\n%s\n", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    write_file(mb, big);
    CHECK(nlp_tokfiles_read_pair(vj, mb, 1, &s) == NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "line 2: expected two tokens separated by one space") != NULL, "%s", nlp_errmsg());
    remove(vj);
    remove(mb);
}

static void test_strmap_clone(void)
{
    nlp_strmap *m = nlp_strmap_new(4);
    char k[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "k%d", i);
        nlp_strmap_put(m, k, strlen(k), i * 3);
    }
    nlp_strmap *c = nlp_strmap_clone(m);
    CHECK(c && nlp_strmap_size(c) == 1000);
    int ok = 1;
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "k%d", i);
        int64_t v;
        size_t n;
        ok &= nlp_strmap_get(c, k, strlen(k), &v) && v == i * 3;
        ok &= strcmp(nlp_strmap_key(c, (size_t)i, &n), k) == 0 && n == strlen(k);
    }
    CHECK(ok);
    nlp_strmap_put(c, "new", 3, 1);
    int64_t v;
    CHECK(!nlp_strmap_get(m, "new", 3, &v) && nlp_strmap_get(c, "new", 3, &v) && v == 1);
    nlp_strmap_free(m);
    CHECK(nlp_strmap_get(c, "k999", 4, &v) && v == 2997); /* owns its keys */
    nlp_strmap_free(c);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_vocab_cases);
    RUN(test_vocab_against_jansson);
    RUN(test_utf8_steps);
    RUN(test_merges);
    RUN(test_members_and_skip);
    RUN(test_skip_steps);
    RUN(test_tokjson_positions);
    RUN(test_pair_errors);
    RUN(test_strmap_clone);
    return TEST_END();
}
