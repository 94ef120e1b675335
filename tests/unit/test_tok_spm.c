/*
 * test_tok_spm.c — sentencepiece models and HF's forms of them: the
 * protobuf reader, base64, the double-array trie, the character map,
 * sentencepiece's normalizer and models on the committed models of
 * tests/data/spm (expected values from spm_encode 0.1.97 and worked by hand
 * from normalizer.cc's rules), .model files built here field by field to be
 * refused with the field named, HF's Unigram model, Metaspace and the
 * decoders, against values worked out by hand from HF's code.
 */
#include "test.h"

#include "base/base64.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/io.h"
#include "base/pb.h"
#include "base/rng.h"
#include "tok/charsmap.h"
#include "tok/datrie.h"
#include "tok/spm.h"
#include "tok/tokenizer.h"
#include "tok/tokfiles.h"
#include "tok/tokjson.h"

#define SPMD "tests/data/spm/"

// --- a protobuf writer for the tests

static void pv(nlp_buf *b, uint64_t v)
{
    do {
        uint8_t c = v & 0x7F;
        v >>= 7;
        if (v) c |= 0x80;
        nlp_buf_putc(b, c);
    } while (v);
}
static void pkey(nlp_buf *b, uint32_t f, int w) { pv(b, (uint64_t)f << 3 | (uint64_t)w); }
static void pbytes(nlp_buf *b, uint32_t f, const void *p, size_t n)
{
    pkey(b, f, 2);
    pv(b, n);
    nlp_buf_append(b, p, n);
}
static void pstr(nlp_buf *b, uint32_t f, const char *s) { pbytes(b, f, s, strlen(s)); }
static void pfloat(nlp_buf *b, uint32_t f, float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    pkey(b, f, 5);
    for (int i = 0; i < 4; i++) nlp_buf_putc(b, (int)(u >> (8 * i) & 255));
}
static void pint(nlp_buf *b, uint32_t f, int64_t v)
{
    pkey(b, f, 0);
    pv(b, (uint64_t)v);
}
static void ppiece(nlp_buf *m, const char *piece, float score, int type)
{
    nlp_buf p = {0};
    pstr(&p, 1, piece);
    pfloat(&p, 2, score);
    if (type != 1) pint(&p, 3, type);
    pbytes(m, 1, p.data, p.len);
    nlp_buf_free(&p);
}
/* trainer_spec (model_type, byte_fallback) and normalizer_spec (identity) */
static void pspecs(nlp_buf *m, int model_type, int byte_fallback)
{
    nlp_buf t = {0}, n = {0};
    pint(&t, 3, model_type);
    if (byte_fallback) pint(&t, 35, 1);
    pbytes(m, 2, t.data ? t.data : "", t.len);
    pstr(&n, 1, "identity");
    pbytes(m, 3, n.data, n.len);
    nlp_buf_free(&t);
    nlp_buf_free(&n);
}

// --- base

static void test_pb(void)
{
    nlp_buf b = {0};
    pint(&b, 1, 0);
    pint(&b, 2, 300);
    pint(&b, 3, -1); /* ten bytes */
    pstr(&b, 4, "hello");
    pfloat(&b, 5, 1.5f);
    nlp_pb r = nlp_pb_init(b.data, b.len);
    uint32_t f;
    int w;
    uint64_t v;
    CHECK(nlp_pb_next(&r, &f, &w) == 1 && f == 1 && w == 0 && nlp_pb_varint(&r, w, &v) == 0 && v == 0);
    CHECK(nlp_pb_next(&r, &f, &w) == 1 && f == 2 && nlp_pb_varint(&r, w, &v) == 0 && v == 300);
    CHECK(nlp_pb_next(&r, &f, &w) == 1 && f == 3 && nlp_pb_varint(&r, w, &v) == 0 && v == UINT64_MAX);
    const uint8_t *p;
    size_t n;
    CHECK(nlp_pb_next(&r, &f, &w) == 1 && f == 4 && nlp_pb_bytes(&r, w, &p, &n) == 0 && n == 5 && !memcmp(p, "hello", 5));
    float x;
    CHECK(nlp_pb_next(&r, &f, &w) == 1 && f == 5 && nlp_pb_float(&r, w, &x) == 0 && x == 1.5f);
    CHECK_EQ_INT(nlp_pb_next(&r, &f, &w), 0);
    /* errors: a wrong wire type, a length past the end (truncated), a
     * varint of 11 bytes, field number 0, a group */
    r = nlp_pb_init(b.data, b.len);
    CHECK(nlp_pb_next(&r, &f, &w) == 1 && nlp_pb_float(&r, w, &x) == NLP_EFORMAT && r.why == NLP_PB_EWIRE);
    r = nlp_pb_init(b.data, b.len - 3); /* inside the float */
    for (int i = 0; i < 4; i++) CHECK(nlp_pb_next(&r, &f, &w) == 1 && nlp_pb_skip(&r, w) == 0);
    CHECK(nlp_pb_next(&r, &f, &w) == 1 && nlp_pb_skip(&r, w) == NLP_EFORMAT && r.why == NLP_PB_EEND);
    CHECK(strstr(nlp_pb_why(&r), "truncated") != NULL);
    static const uint8_t longv[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    r = nlp_pb_init(longv, sizeof longv);
    CHECK(nlp_pb_next(&r, &f, &w) == 1 && nlp_pb_varint(&r, w, &v) == NLP_EFORMAT && r.why == NLP_PB_EVARINT);
    static const uint8_t zero[] = {0x00, 0x01}, group[] = {0x0b};
    r = nlp_pb_init(zero, 2);
    CHECK(nlp_pb_next(&r, &f, &w) == NLP_EFORMAT && r.why == NLP_PB_EKEY);
    r = nlp_pb_init(group, 1);
    CHECK(nlp_pb_next(&r, &f, &w) == NLP_EFORMAT && r.why == NLP_PB_EKEY);
    /* a sub-message's length past its parent, though within the data */
    nlp_buf o = {0}, in = {0};
    pstr(&in, 1, "abc");
    in.data[1] = 4; /* "abc" claims 4 bytes: past its message (3 left), not past the data (5 left) */
    pbytes(&o, 1, in.data, in.len);
    pint(&o, 2, 7);
    nlp_pb sub;
    r = nlp_pb_init(o.data, o.len);
    CHECK(nlp_pb_next(&r, &f, &w) == 1 && nlp_pb_sub(&r, w, &sub) == 0);
    CHECK(nlp_pb_next(&sub, &f, &w) == 1 && nlp_pb_bytes(&sub, w, &p, &n) == NLP_EFORMAT && sub.why == NLP_PB_EPAST);
    nlp_buf_free(&b);
    nlp_buf_free(&o);
    nlp_buf_free(&in);
}

static void test_base64(void)
{
    static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"}; /* RFC 4648 */
    for (int i = 0; i < 7; i++) {
        nlp_buf e = {0}, d = {0};
        size_t bad;
        CHECK(nlp_base64_encode(plain[i], strlen(plain[i]), &e) == 0);
        CHECK_STR(e.data ? e.data : "", enc[i]);
        CHECK(nlp_base64_decode(enc[i], strlen(enc[i]), &d, &bad) == 0);
        CHECK(d.len == strlen(plain[i]) && (!d.len || memcmp(d.data, plain[i], d.len) == 0));
        nlp_buf_free(&e);
        nlp_buf_free(&d);
    }
    nlp_buf d = {0};
    size_t bad = 0;
    CHECK(nlp_base64_decode("Zm9", 3, &d, &bad) == NLP_EFORMAT && bad == 3);
    CHECK(nlp_base64_decode("Zm=v", 4, &d, &bad) == NLP_EFORMAT && bad == 2);
    CHECK(nlp_base64_decode("Zg==Zg==", 8, &d, &bad) == NLP_EFORMAT && bad == 2);
    CHECK(nlp_base64_decode("Z!9v", 4, &d, &bad) == NLP_EFORMAT && bad == 1);
    nlp_buf_free(&d);
}

/* the trie against a hash map over random keys (shared prefixes, a NUL
 * byte, duplicates: the first value kept) */
static void test_datrie(void)
{
    nlp_rng r;
    nlp_rng_seed(&r, 27);
    enum { N = 3000 };
    static char store[N][12];
    nlp_span keys[N];
    int32_t vals[N];
    nlp_strmap *m = nlp_strmap_new(N);
    for (int i = 0; i < N; i++) {
        size_t len = 1 + nlp_rng_u32(&r) % 10;
        for (size_t k = 0; k < len; k++) store[i][k] = "abcde\0\xe2\x96\x81z"[nlp_rng_u32(&r) % 10];
        keys[i] = (nlp_span){store[i], len};
        vals[i] = i;
        int fresh;
        int64_t *v = nlp_strmap_slot(m, store[i], len, &fresh);
        if (fresh) *v = i;
    }
    nlp_datrie t;
    CHECK(nlp_datrie_build(&t, keys, vals, N) == 0);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int64_t want;
        nlp_strmap_get(m, keys[i].s, keys[i].n, &want);
        bad += nlp_datrie_find(&t, keys[i].s, keys[i].n) != (int32_t)want;
        /* every proper prefix: its value if it is a key, else -1 */
        for (size_t k = 1; k < keys[i].n; k++) {
            int64_t pw;
            int32_t got = nlp_datrie_find(&t, keys[i].s, k);
            bad += nlp_strmap_get(m, keys[i].s, k, &pw) ? got != (int32_t)pw : got != -1;
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(nlp_datrie_find(&t, "q", 1), -1);
    CHECK_EQ_INT(nlp_datrie_find(&t, "abcdeabcdeabcde", 15), -1);
    nlp_datrie_free(&t);
    nlp_strmap_free(m);
    /* no keys: the root only */
    CHECK(nlp_datrie_build(&t, NULL, NULL, 0) == 0);
    CHECK_EQ_INT(nlp_datrie_find(&t, "a", 1), -1);
    nlp_datrie_free(&t);
}

// --- sentencepiece

static nlp_spm *load_spm(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, SPMD "%s.model", name);
    nlp_map f;
    nlp_spm *m = NULL;
    if (nlp_map_file(&f, path)) return NULL;
    if (nlp_spm_new(&m, f.data, f.len, path)) m = NULL;
    nlp_unmap(&f);
    return m;
}

/* the character map of bpe-rules (tests/data/spm/rules.tsv): A -> a, AB ->
 * X, ABC -> "Y Z", soft hyphen -> "", 1 2 3 -> U+2460, two spaces -> one */
static void test_charsmap(void)
{
    nlp_map f;
    CHECK(nlp_map_file(&f, SPMD "bpe-rules.model") == 0);
    nlp_spm_info in;
    CHECK(nlp_spm_parse(f.data, f.len, "bpe-rules", &in) == 0);
    CHECK_STR(in.norm.name ? "user_defined" : "", "user_defined");
    nlp_charsmap cm;
    CHECK(nlp_charsmap_init(&cm, in.norm.charsmap, in.norm.charsmap_len) == 0);
    const char *r;
    size_t rn;
    CHECK_EQ_INT(nlp_charsmap_longest(&cm, "ABCD", 4, &r, &rn), 3);
    CHECK(rn == 3 && memcmp(r, "Y Z", 3) == 0);
    CHECK_EQ_INT(nlp_charsmap_longest(&cm, "ABD", 3, &r, &rn), 2);
    CHECK(rn == 1 && r[0] == 'X');
    CHECK_EQ_INT(nlp_charsmap_longest(&cm, "AD", 2, &r, &rn), 1);
    CHECK(rn == 1 && r[0] == 'a');
    CHECK_EQ_INT(nlp_charsmap_longest(&cm, "\xc2\xad", 2, &r, &rn), 2);
    CHECK_EQ_INT(rn, 0);
    CHECK_EQ_INT(nlp_charsmap_longest(&cm, "BA", 2, &r, &rn), 0);
    /* HF's reading: the first (shortest) key */
    CHECK(nlp_charsmap_first(&cm, "ABC", 3, &r, &rn) == 1 && rn == 1 && r[0] == 'a');
    CHECK(nlp_charsmap_first(&cm, "12", 2, &r, &rn) == 0);
    /* ASCII fast path: A alone is a key, 1 goes on with ASCII ("123"),
     * space goes on with a space; B starts nothing */
    CHECK_EQ_INT(nlp_charsmap_ascii_tail(&cm, 'A'), 3);
    CHECK_EQ_INT(nlp_charsmap_ascii_tail(&cm, '1'), 2);
    CHECK_EQ_INT(nlp_charsmap_ascii_tail(&cm, ' '), 2);
    CHECK_EQ_INT(nlp_charsmap_ascii_tail(&cm, 'B'), 0);
    /* HF's normalizer: one grapheme at a time ("ABC" is three: a B C) */
    nlp_buf b = {0};
    CHECK(nlp_charsmap_normalize_hf(&cm, "ABC 123\xc2\xad!", 11, &b) == 0);
    CHECK_STR(b.data, "aBC 123!");
    nlp_buf_free(&b);
    nlp_charsmap_free(&cm);
    /* broken maps are refused, never read past */
    CHECK(nlp_charsmap_init(&cm, "\x04\0\0", 3) == NLP_EFORMAT);
    CHECK(nlp_charsmap_init(&cm, "\x08\0\0\0abcd", 8) == NLP_EFORMAT); /* trie of 8 in 4 */
    CHECK(nlp_charsmap_init(&cm, "\x05\0\0\0abcde", 9) == NLP_EFORMAT); /* not whole units */
    /* a map whose units point anywhere: lookups stay inside it */
    static const uint8_t junk[] = {8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x41, 0x01, 0, 0, 'x', 0};
    CHECK(nlp_charsmap_init(&cm, junk, sizeof junk) == 0);
    nlp_charsmap_longest(&cm, "AAAA", 4, &r, &rn);
    nlp_charsmap_first(&cm, "AAAA", 4, &r, &rn);
    nlp_charsmap_free(&cm);
    nlp_spm_info_free(&in);
    nlp_unmap(&f);
}

static void check_norm(nlp_spm *m, const char *in, const char *want)
{
    nlp_buf b = {0};
    CHECK(nlp_spm_normalize(m, in, strlen(in), &b) == 0);
    CHECK_MSG(b.len == strlen(want) && memcmp(b.data ? b.data : "", want, b.len) == 0, "'%s': got '%.*s', want '%s'",
              in, (int)b.len, b.data ? b.data : "", want);
    nlp_buf_free(&b);
}

#define U "\xe2\x96\x81" /* U+2581 */

/* normalizer.cc's rules, worked by hand (and what spm_encode's pieces join to) */
static void test_spm_normalize(void)
{
    nlp_spm *nfkc = load_spm("uni-nfkc"), *br = load_spm("bpe-rules"), *ur = load_spm("uni-rules");
    CHECK(nfkc && br && ur);
    if (!nfkc || !br || !ur) return;
    /* nmt_nfkc: dummy prefix, spaces squeezed and trimmed, NFKC */
    check_norm(nfkc, "  AB\tc", U "AB" U "c");
    check_norm(nfkc, " ABC  x ", U "ABC" U "x");
    check_norm(nfkc, "\xef\xbc\xa1\xef\xac\x81 e\xcc\x81", U "Afi" U "\xc3\xa9"); /* fullwidth A, fi, e + acute */
    check_norm(nfkc, "   ", "");
    check_norm(nfkc, "", "");
    check_norm(nfkc, "a\xffz", U "a\xef\xbf\xbdz"); /* an ill-formed byte: U+FFFD */
    /* bpe-rules: no dummy prefix, no squeezing; the rule table; user-defined
     * pieces kept as they are */
    check_norm(br, "  AB\tc", U "X" U "c");
    check_norm(br, "ABCD\xc2\xadz", "Y" U "ZDz");
    check_norm(br, "123 foo<sep>ab", "\xe2\x91\xa0" U "foo<sep>ab");
    check_norm(br, "\xe3\x80\x80" "a" U "b", U "a_b");
    /* uni-rules: white space as a suffix */
    check_norm(ur, " ABC  x ", "Y" U "Z" U "x" U);
    check_norm(ur, "x", "x" U);
    nlp_spm_free(nfkc);
    nlp_spm_free(br);
    nlp_spm_free(ur);
}

static void check_ids(nlp_spm *m, const char *text, const char *want)
{
    nlp_spm_scratch sc = {0};
    nlp_ids ids = {0};
    CHECK(nlp_spm_encode(m, &sc, text, strlen(text), 0, &ids) == 0);
    char got[512] = "";
    size_t at = 0;
    for (size_t i = 0; i < ids.n && at < sizeof got - 16; i++)
        at += (size_t)snprintf(got + at, sizeof got - at, "%s%d", i ? " " : "", (int)ids.v[i]);
    CHECK_MSG(strcmp(got, want) == 0, "'%s': got '%s', want '%s'", text, got, want);
    nlp_ids_free(&ids);
    nlp_spm_scratch_free(&sc);
}

/* ids from spm_encode 0.1.97 (tests/data/spm/make.sh's models) */
static void test_spm_encode(void)
{
    nlp_spm *nfkc = load_spm("uni-nfkc"), *br = load_spm("bpe-rules"), *ur = load_spm("uni-rules"),
            *ub = load_spm("uni-id-bf");
    CHECK(nfkc && br && ur && ub);
    if (!nfkc || !br || !ur || !ub) return;
    check_ids(nfkc, "  AB\tc", "62 139 218");
    check_ids(nfkc, "ABCD\xc2\xadz", "62 139 93 94 0 102"); /* the soft hyphen is unknown */
    check_ids(nfkc, "123 foo<sep>ab", "3 434 135 86 13 13 998 130 17 470 266");
    check_ids(br, "  AB\tc", "306 370 16");
    check_ids(br, "123 foo<sep>ab", "0 306 5 4 6"); /* user-defined foo, <sep>, ab */
    check_ids(ur, " ABC  x ", "281 6 254 6 93 6");
    check_ids(ur, "123 foo<sep>ab", "0 6 21 10 10 4 211 6");
    /* byte fallback: an unknown character is its UTF-8 bytes' <0xNN> ids
     * (3 + byte, after 259 for U+2581); a run of unknown characters without
     * it is one <unk> (0) */
    check_ids(ub, "\xe9\xbe\x8d", "259 236 193 144");
    check_ids(nfkc, "\xe9\xbe\x8d\xe9\xbe\x8d x", "3 0 3 63");
    /* passed through (for writing pieces): the run's characters, the last final */
    nlp_spm_scratch sc = {0};
    nlp_ids ids = {0};
    CHECK(nlp_spm_encode(nfkc, &sc, "\xe9\xbe\x8d\xe9\xbe\x8d x", 8, 1, &ids) == 0);
    int32_t cp;
    int fin;
    CHECK(ids.n == 5 && ids.v[0] == 3 && nlp_tok_passthrough_char(ids.v[1], &cp, &fin) && cp == 0x9F8D && !fin &&
          nlp_tok_passthrough_char(ids.v[2], &cp, &fin) && cp == 0x9F8D && fin && ids.v[3] == 3 && ids.v[4] == 63);
    nlp_ids_free(&ids);
    nlp_spm_scratch_free(&sc);
    /* decoding: control ids vanish, <unk> is " ⁇ ", bytes gather into UTF-8,
     * an ill-formed one is U+FFFD, the first piece's U+2581 goes */
    nlp_buf b = {0};
    const int32_t d1[] = {1, 236, 193, 144, 2, 0, 231}; /* <s> bytes of 龍 </s> <unk> a lone 0xE4 (spm_decode's) */
    CHECK(nlp_spm_decode(ub, d1, 7, &b) == 0);
    CHECK_STR(b.data, "\xe9\xbe\x8d \xe2\x81\x87 \xef\xbf\xbd");
    nlp_buf_free(&b);
    nlp_spm_free(nfkc);
    nlp_spm_free(br);
    nlp_spm_free(ur);
    nlp_spm_free(ub);
}

/* ties, unused pieces and the user-defined bonus, in models built here: spm_encode
 * 0.1.97 gives these (checked with this very file): "▁ ab" and "▁ a b" both
 * score -3, and the path found first (ab, from the earlier start) stays;
 * xy (user-defined) scores 2 x max - 0.1, where max is spm's FLT_MIN floor
 * (every normal score is negative) */
static void test_spm_ties(void)
{
    nlp_buf m = {0};
    ppiece(&m, "<unk>", 0, 2);
    ppiece(&m, U, -1, 1);
    ppiece(&m, "a", -1, 1);
    ppiece(&m, "b", -1, 1);
    ppiece(&m, "ab", -2, 1);
    ppiece(&m, U "a", -3, 1);
    ppiece(&m, "xy", -5, 4);
    pspecs(&m, 1, 0);
    nlp_spm *sp = NULL;
    CHECK(nlp_spm_new(&sp, m.data, m.len, "tie.model") == 0);
    if (sp) {
        check_ids(sp, "ab", "1 4");
        check_ids(sp, "abab", "1 4 4");
        check_ids(sp, "xyz", "1 6 0");
        check_ids(sp, "bab", "1 3 4");
        nlp_spm_free(sp);
    }
    nlp_buf_free(&m);
    /* bpe: equal scores merge leftmost first ("▁ ab a", not "▁ a ba"); an
     * unused piece (aba) is merged, then split back into what made it */
    for (int unused = 0; unused < 2; unused++) {
        nlp_buf b = {0};
        ppiece(&b, "<unk>", 0, 2);
        ppiece(&b, U, -1, 1);
        ppiece(&b, "a", -1, 1);
        ppiece(&b, "b", -1, 1);
        ppiece(&b, "ab", -2, 1);
        ppiece(&b, "ba", -2, 1);
        if (unused) ppiece(&b, "aba", -3, 5);
        pspecs(&b, 2, 0);
        CHECK(nlp_spm_new(&sp, b.data, b.len, "btie.model") == 0);
        if (sp) {
            check_ids(sp, "aba", "1 4 2");
            check_ids(sp, "bab", "1 5 3");
            check_ids(sp, "ababa", "1 4 4 2");
            nlp_spm_free(sp);
        }
        nlp_buf_free(&b);
    }
}

/* a piece both control and normal ("<s>", as spm allows): encoding finds
 * the normal one (4), decoding any id of that string gives what
 * PieceToId gives, the control one, which vanishes (spm_encode and
 * spm_decode on these bytes: "2 3 4 3" and "aa ") */
static void test_spm_dup_piece(void)
{
    nlp_buf m = {0};
    ppiece(&m, "<unk>", 0, 2);
    ppiece(&m, "<s>", 0, 3);
    ppiece(&m, U, -1, 1);
    ppiece(&m, "a", -1, 1);
    ppiece(&m, "<s>", -1, 1);
    ppiece(&m, "<", -2, 1);
    ppiece(&m, "s", -2, 1);
    ppiece(&m, ">", -2, 1);
    pspecs(&m, 1, 0);
    nlp_spm *sp = NULL;
    CHECK(nlp_spm_new(&sp, m.data, m.len, "dup.model") == 0);
    if (sp) {
        check_ids(sp, "a<s>a", "2 3 4 3");
        nlp_buf b = {0};
        const int32_t ids[] = {3, 4, 3, 1, 2};
        CHECK(nlp_spm_decode(sp, ids, 5, &b) == 0);
        CHECK_STR(b.data, "aa ");
        nlp_buf_free(&b);
        nlp_spm_free(sp);
    }
    /* the tokenizer's vocabulary keeps the first of the two */
    nlp_tok_spec s;
    CHECK(nlp_tokfiles_spm_spec(m.data, m.len, "dup.model", &s) == 0);
    CHECK_EQ_INT(nlp_vocab_find(s.vocab, "<s>", 3), 1);
    nlp_tok_spec_free(&s);
    nlp_buf_free(&m);
}

/* a .model built field by field: refused with the field named */
static void expect_bad(const nlp_buf *m, const char *needle)
{
    nlp_spm_info in;
    int rc = nlp_spm_parse(m->data ? m->data : "", m->len, "t.model", &in);
    CHECK_EQ_INT(rc, NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), needle) != NULL, "message '%s' lacks '%s'", nlp_errmsg(), needle);
    if (!rc) nlp_spm_info_free(&in);
}

static void test_spm_bad_files(void)
{
    nlp_buf m = {0};
    ppiece(&m, "<unk>", 0, 2);
    ppiece(&m, "a", -1, 1);
    pspecs(&m, 1, 0);
    nlp_spm_info in;
    CHECK(nlp_spm_parse(m.data, m.len, "t.model", &in) == 0 && in.n == 2 && in.model_type == 1);
    nlp_spm_info_free(&in);
    CHECK(nlp_spm_sniff(m.data, m.len) == 1);
    CHECK(nlp_spm_sniff("{\"model\": 1}", 12) == 0);
    /* cut anywhere: an error, never a smaller model */
    int refused = 0;
    for (size_t k = 0; k < m.len; k++) {
        nlp_buf c = {0};
        nlp_buf_append(&c, m.data, k);
        if (nlp_spm_parse(c.data ? c.data : "", c.len, "t.model", &in) == NLP_EFORMAT) refused++;
        else nlp_spm_info_free(&in);
        nlp_buf_free(&c);
    }
    CHECK_EQ_INT(refused, m.len);
    nlp_buf b = {0};
    ppiece(&b, "<unk>", 0, 2);
    ppiece(&b, "a", -1, 1);
    expect_bad(&b, "no trainer_spec after the 2 pieces: a truncated sentencepiece model");
    nlp_buf_reset(&b);
    ppiece(&b, "<unk>", 0, 2);
    ppiece(&b, "a", -1, 1);
    ppiece(&b, "a", -2, 1);
    pspecs(&b, 1, 0);
    expect_bad(&b, "pieces[2].piece: 'a' is already piece 1");
    nlp_buf_reset(&b);
    ppiece(&b, "<unk>", 0, 2);
    ppiece(&b, "<unk2>", 0, 2);
    pspecs(&b, 1, 0);
    expect_bad(&b, "pieces[1].type: a second unknown piece");
    nlp_buf_reset(&b);
    ppiece(&b, "a", 0, 1);
    pspecs(&b, 1, 0);
    expect_bad(&b, "no unknown piece");
    nlp_buf_reset(&b);
    ppiece(&b, "<unk>", 0, 2);
    ppiece(&b, "a", 0, 9);
    pspecs(&b, 1, 0);
    expect_bad(&b, "pieces[1].type: unknown piece type 9");
    nlp_buf_reset(&b);
    ppiece(&b, "<unk>", 0, 2);
    ppiece(&b, "<0x41>", 0, 6);
    pspecs(&b, 1, 0);
    expect_bad(&b, "pieces[1]: a byte piece, but trainer_spec.byte_fallback is false");
    nlp_buf_reset(&b);
    ppiece(&b, "<unk>", 0, 2);
    ppiece(&b, "<0x41>", 0, 6);
    pspecs(&b, 1, 1);
    expect_bad(&b, "byte_fallback is true but 255 of the 256 byte pieces are missing");
    nlp_buf_reset(&b);
    ppiece(&b, "<unk>", 0, 2);
    ppiece(&b, "<0xzz>", 0, 6);
    pspecs(&b, 1, 1);
    expect_bad(&b, "byte piece '<0xzz>' is not <0x00>..<0xFF>");
    nlp_buf_reset(&b);
    ppiece(&b, "<unk>", 0, 2);
    ppiece(&b, "", 0, 1);
    pspecs(&b, 1, 0);
    expect_bad(&b, "pieces[1].piece: empty");
    nlp_buf_reset(&b);
    ppiece(&b, "<unk>", 0, 2);
    ppiece(&b, "a", NAN, 1);
    pspecs(&b, 1, 0);
    expect_bad(&b, "pieces[1].score: not a number");
    nlp_buf_reset(&b);
    ppiece(&b, "<unk>", 0, 2);
    pspecs(&b, 7, 0);
    expect_bad(&b, "trainer_spec.model_type: unknown model type 7");
    /* a score given as a varint: the wrong wire type */
    nlp_buf_reset(&b);
    {
        nlp_buf p = {0};
        pstr(&p, 1, "<unk>");
        pint(&p, 2, 5);
        pbytes(&b, 1, p.data, p.len);
        nlp_buf_free(&p);
    }
    pspecs(&b, 1, 0);
    expect_bad(&b, "pieces[0].score: a value of the wrong wire type");
    /* a broken character map */
    nlp_buf_reset(&b);
    ppiece(&b, "<unk>", 0, 2);
    pspecs(&b, 1, 0);
    {
        nlp_buf n = {0};
        pbytes(&n, 2, "\x40\0\0\0abcd", 8);
        pbytes(&b, 3, n.data, n.len);
        nlp_buf_free(&n);
    }
    expect_bad(&b, "normalizer_spec.precompiled_charsmap: the trie's size (64 bytes) does not fit");
    /* text and JSON are no models */
    nlp_buf_reset(&b);
    nlp_buf_puts(&b, "hello world\n");
    expect_bad(&b, "not a sentencepiece model");
    nlp_buf_free(&b);
    nlp_buf_free(&m);
}

/* A tokenizer from a .model: ids are pieces' positions, control pieces
 * special, no added tokens; its tokenizer.json (HF's view + the model)
 * reads back as the same tokenizer */
static void test_spm_tokenizer(void)
{
    nlp_tokenizer *tk;
    nlp_tokfiles_opts o = {0};
    CHECK(nlp_tokfiles_load(SPMD "bpe-rules.model", &o, &tk) == 0);
    if (o.fmt != NLP_TOKF_SPM) return;
    CHECK_EQ_INT(nlp_tokenizer_vocab_size(tk), 400);
    CHECK_EQ_INT(nlp_tokenizer_token_to_id(tk, "<unk>", 5), 0);
    CHECK_EQ_INT(nlp_tokenizer_token_to_id(tk, "<s>", 3), 1);
    CHECK_EQ_INT(nlp_tokenizer_token_to_id(tk, "<ctl>", 5), 3);
    CHECK(nlp_tokenizer_is_special(tk, 1) && nlp_tokenizer_is_special(tk, 2) && nlp_tokenizer_is_special(tk, 3));
    CHECK(!nlp_tokenizer_is_special(tk, 0) && !nlp_tokenizer_is_special(tk, 4)); /* <unk>, <sep> (user-defined) */
    nlp_tok_state *st = nlp_tok_state_new(tk);
    nlp_ids a = {0}, b = {0};
    /* "<s>" in a text is text, as in sentencepiece; "<sep>" is its piece */
    const char *text = "<s>x<sep> 123 foo";
    CHECK(nlp_tokenizer_encode_ids(tk, st, text, strlen(text), 0, &a) == 0);
    CHECK(a.n > 0 && a.v[0] != 1);
    int has_sep = 0;
    for (size_t i = 0; i < a.n; i++) has_sep |= a.v[i] == 4;
    CHECK(has_sep);
    nlp_buf j = {0};
    CHECK(nlp_tokjson_dump(nlp_tokenizer_spec(tk), &j) == 0);
    CHECK(strstr(j.data, "\"nlpipe_sentencepiece_model\"") != NULL);
    CHECK(strstr(j.data, "\"Precompiled\"") != NULL && strstr(j.data, "\"Metaspace\"") != NULL);
    nlp_tok_spec s2;
    CHECK(nlp_tokjson_parse(j.data, j.len, "t.json", &s2) == 0);
    CHECK(s2.model == NLP_MODEL_SPM);
    nlp_tokenizer *t2;
    CHECK(nlp_tokenizer_new(&t2, &s2) == 0);
    nlp_tok_state *st2 = nlp_tok_state_new(t2);
    CHECK(nlp_tokenizer_encode_ids(t2, st2, text, strlen(text), 0, &b) == 0);
    CHECK(a.n == b.n && memcmp(a.v, b.v, a.n * sizeof *a.v) == 0);
    /* and writing that again gives the same file */
    nlp_buf j2 = {0};
    CHECK(nlp_tokjson_dump(nlp_tokenizer_spec(t2), &j2) == 0);
    CHECK(j.len == j2.len && memcmp(j.data, j2.data, j.len) == 0);
    /* the .model itself back out */
    char path[600];
    snprintf(path, sizeof path, "%s/copy.model", test_tmpdir());
    CHECK(nlp_tokfiles_write(nlp_tokenizer_spec(t2), NLP_TOKF_SPM, path) == 0);
    nlp_map f1, f2;
    CHECK(nlp_map_file(&f1, path) == 0 && nlp_map_file(&f2, SPMD "bpe-rules.model") == 0);
    CHECK(f1.len == f2.len && memcmp(f1.data, f2.data, f1.len) == 0);
    nlp_unmap(&f1);
    nlp_unmap(&f2);
    CHECK(nlp_tokfiles_write(nlp_tokenizer_spec(t2), NLP_TOKF_VOCAB, path) == NLP_EINVAL);
    /* decoding skips nothing but control ids with skip_special */
    nlp_buf d = {0};
    const int32_t ids[] = {1, 0, 2};
    CHECK(nlp_tokenizer_decode(tk, ids, 3, 1, &d, NULL) == 0);
    CHECK_STR(d.data, " \xe2\x81\x87 ");
    int32_t out_of_range = 400;
    CHECK(nlp_tokenizer_decode(tk, &out_of_range, 1, 0, &d, NULL) == NLP_EDATA);
    nlp_buf_free(&d);
    nlp_buf_free(&j);
    nlp_buf_free(&j2);
    nlp_ids_free(&a);
    nlp_ids_free(&b);
    nlp_tok_state_free(st);
    nlp_tok_state_free(st2);
    nlp_tokenizer_free(tk);
    nlp_tokenizer_free(t2);
}

/* tokens added to a sentencepiece tokenizer (finetune's [START] [DELIM]
 * [EXTRACT], ids 400-402 past the 400 pieces): cut out of the text, decoded
 * as their text (or dropped as special), kept through tokenizer.json */
static void test_spm_added(void)
{
    nlp_tok_spec s;
    CHECK(nlp_tokfiles_read(SPMD "bpe-rules.model", NULL, &s) == 0);
    static const char *names[3] = {"[START]", "[DELIM]", "[EXTRACT]"};
    s.added = nlp_calloc(3, sizeof *s.added);
    for (int k = 0; k < 3; k++) s.added[k] = (nlp_added_token){.id = 400 + k, .content = nlp_strdup(names[k]), .special = 1};
    s.n_added = 3;
    nlp_tokenizer *tk;
    CHECK(nlp_tokenizer_new(&tk, &s) == 0);
    CHECK_EQ_INT(nlp_tokenizer_vocab_size(tk), 403);
    nlp_tok_state *st = nlp_tok_state_new(tk);
    nlp_ids a = {0}, x = {0}, y = {0};
    const char *text = "[START]ab x[DELIM]foo[EXTRACT]";
    CHECK(nlp_tokenizer_encode_ids(tk, st, text, strlen(text), 0, &a) == 0);
    CHECK(nlp_tokenizer_encode_ids(tk, st, "ab x", 4, 0, &x) == 0);
    CHECK(nlp_tokenizer_encode_ids(tk, st, "foo", 3, 0, &y) == 0);
    CHECK(a.n == x.n + y.n + 3 && a.v[0] == 400 && a.v[1 + x.n] == 401 && a.v[a.n - 1] == 402);
    nlp_buf d = {0};
    CHECK(nlp_tokenizer_decode(tk, a.v, a.n, 0, &d, NULL) == 0);
    CHECK_STR(d.data, "[START]ab x[DELIM]foo[EXTRACT]");
    nlp_buf_reset(&d);
    CHECK(nlp_tokenizer_decode(tk, a.v, a.n, 1, &d, NULL) == 0);
    CHECK_STR(d.data, "ab xfoo");
    /* split_special: their text is text */
    nlp_ids b = {0};
    CHECK(nlp_tokenizer_encode_ids(tk, st, text, strlen(text), 1, &b) == 0);
    int added = 0;
    for (size_t i = 0; i < b.n; i++) added += b.v[i] >= 400;
    CHECK_EQ_INT(added, 0);
    nlp_buf j = {0};
    CHECK(nlp_tokjson_dump(nlp_tokenizer_spec(tk), &j) == 0);
    nlp_tok_spec s2;
    nlp_tokenizer *t2 = NULL;
    CHECK(nlp_tokjson_parse(j.data, j.len, "t.json", &s2) == 0 && s2.n_added == 3 && nlp_tokenizer_new(&t2, &s2) == 0);
    if (t2) {
        nlp_tok_state *st2 = nlp_tok_state_new(t2);
        b.n = 0;
        CHECK(nlp_tokenizer_encode_ids(t2, st2, text, strlen(text), 0, &b) == 0);
        CHECK(a.n == b.n && memcmp(a.v, b.v, a.n * sizeof *a.v) == 0);
        nlp_tok_state_free(st2);
        nlp_tokenizer_free(t2);
    }
    nlp_buf_free(&j);
    nlp_buf_free(&d);
    nlp_ids_free(&a);
    nlp_ids_free(&b);
    nlp_ids_free(&x);
    nlp_ids_free(&y);
    nlp_tok_state_free(st);
    nlp_tokenizer_free(tk);
}

// --- HF's forms

static nlp_tokenizer *json_tok(const char *json)
{
    nlp_tok_spec s;
    if (nlp_tokjson_parse(json, strlen(json), "t.json", &s)) {
        printf("    %s\n", nlp_errmsg());
        return NULL;
    }
    nlp_tokenizer *tk;
    if (nlp_tokenizer_new(&tk, &s)) {
        printf("    %s\n", nlp_errmsg());
        nlp_tok_spec_free(&s);
        return NULL;
    }
    return tk;
}

static void check_enc(nlp_tokenizer *tk, const char *text, const char *want)
{
    nlp_tok_state *st = nlp_tok_state_new(tk);
    nlp_ids ids = {0};
    int rc = nlp_tokenizer_encode_ids(tk, st, text, strlen(text), 0, &ids);
    char got[512] = "";
    size_t at = 0;
    if (rc) snprintf(got, sizeof got, "error %d", rc);
    for (size_t i = 0; !rc && i < ids.n && at < sizeof got - 16; i++)
        at += (size_t)snprintf(got + at, sizeof got - at, "%s%d", i ? " " : "", (int)ids.v[i]);
    CHECK_MSG(strcmp(got, want) == 0, "'%s': got '%s', want '%s'", text, got, want);
    nlp_ids_free(&ids);
    nlp_tok_state_free(st);
}

static void check_dec(nlp_tokenizer *tk, const int32_t *ids, size_t n, const char *want)
{
    nlp_buf b = {0};
    CHECK(nlp_tokenizer_decode(tk, ids, n, 0, &b, NULL) == 0);
    CHECK_MSG(strcmp(b.data ? b.data : "", want) == 0, "got '%s', want '%s'", b.data ? b.data : "", want);
    nlp_buf_free(&b);
}

/* HF's Unigram: best path (f64), ties to the path found first, unknown
 * pieces (min score - 10) fused, byte fallback; Metaspace around it */
static void test_hf_unigram(void)
{
    nlp_tokenizer *tk = json_tok(
        "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0], [\"a\", -1], [\"b\", -1], "
        "[\"ab\", -2], [\"c\", -1.5], [\"abc\", -4], [\"" U "\", -0.5], [\"" U "a\", -1.2]]},"
        "\"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"" U "\", \"prepend_scheme\": \"always\", "
        "\"split\": true},"
        "\"decoder\": {\"type\": \"Metaspace\", \"replacement\": \"" U "\", \"prepend_scheme\": \"always\", \"split\": "
        "true}}");
    CHECK(tk != NULL);
    if (!tk) return;
    /* "▁ab": ▁a b (-2.2) beats ▁ ab (-2.5) and ▁ a b (-2.5) */
    check_enc(tk, "ab", "7 2");
    /* "▁abc": ▁a b c = -3.7 beats ▁ abc = -4.5; "ab" ties "a b" at -2: the
     * path found first (ab from 0) stays */
    check_enc(tk, "abc", "7 2 4");
    /* unknown x y fused into one <unk>; min score is -4, so each costs -14 */
    check_enc(tk, "xy a", "6 0 7");
    /* split: "a  b" -> ▁a ▁ ▁b */
    check_enc(tk, "a  b", "7 6 6 2");
    const int32_t d[] = {7, 2, 6, 1};
    check_dec(tk, d, 4, "ab a");
    nlp_tokenizer_free(tk);
    /* ties: "ab" (-2) against "a" + "b" (-1 + -1) without Metaspace */
    tk = json_tok("{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0], [\"a\", -1], [\"b\", "
                  "-1], [\"ab\", -2]]}}");
    if (tk) check_enc(tk, "ab", "3");
    nlp_tokenizer_free(tk);
    /* byte fallback: an unknown run's bytes when all 256 <0xNN> are tokens */
    nlp_buf j = {0};
    nlp_buf_puts(&j, "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"byte_fallback\": true, \"vocab\": [[\"<unk>\", "
                     "0], [\"a\", -1]");
    for (int b = 0; b < 256; b++) nlp_buf_printf(&j, ", [\"<0x%02X>\", -20]", b);
    nlp_buf_puts(&j, "]}, \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteFallback\"}, {\"type\": "
                     "\"Fuse\"}, {\"type\": \"Strip\", \"content\": \"a\", \"start\": 1, \"stop\": 1}]}}");
    tk = json_tok(j.data);
    CHECK(tk != NULL);
    if (tk) {
        check_enc(tk, "a\xc3\xa9", "1 197 171"); /* é = C3 A9: ids 2 + byte */
        /* "<0x41>" as text is that token (HF's trie holds every token) */
        check_enc(tk, "<0x41>", "67");
        /* decoders: bytes gathered into UTF-8 (an ill-formed run: U+FFFD per
         * byte), fused, one leading and one trailing 'a' stripped */
        const int32_t d1[] = {1, 197, 171, 1, 1};
        check_dec(tk, d1, 5, "\xc3\xa9" "a");
        const int32_t d2[] = {197, 1};
        check_dec(tk, d2, 2, "\xef\xbf\xbd");
    }
    nlp_tokenizer_free(tk);
    nlp_buf_free(&j);
    /* no unk_id: a word that needs it is an error, as in HF */
    tk = json_tok("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", -1]]}}");
    CHECK(tk != NULL);
    if (tk) {
        check_enc(tk, "aa", "0 0");
        check_enc(tk, "ax", "error -5");
    }
    nlp_tokenizer_free(tk);
}

/* Metaspace's schemes, LLaMA's normalizer and decoder, the Precompiled
 * normalizer from a .model's map, Replace with a Regex */
static void test_hf_pipeline(void)
{
    const char *v = "\"vocab\": [[\"<unk>\", 0], [\"" U "\", -1], [\"a\", -1], [\"" U "a\", -1], [\"b\", -1], "
                    "[\"" U "b\", -1], [\"<s>\", 0]]";
    char j[2048];
    /* first: only the text's first piece gets U+2581, not one after <s> */
    snprintf(j, sizeof j, "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, %s}, \"added_tokens\": [{\"id\": 6, "
             "\"content\": \"<s>\", \"special\": true}], \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": "
             "\"" U "\", \"prepend_scheme\": \"first\", \"split\": false}}", v);
    nlp_tokenizer *tk = json_tok(j);
    if (tk) {
        check_enc(tk, "a", "3");
        check_enc(tk, "<s>a", "6 2");
        check_enc(tk, "a<s>b", "3 6 4");
    }
    nlp_tokenizer_free(tk);
    /* never */
    snprintf(j, sizeof j, "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, %s}, \"pre_tokenizer\": {\"type\": "
             "\"Metaspace\", \"replacement\": \"" U "\", \"add_prefix_space\": false, \"prepend_scheme\": \"never\"}}", v);
    if ((tk = json_tok(j))) check_enc(tk, "a b", "2 5");
    nlp_tokenizer_free(tk);
    /* add_prefix_space false against the default scheme (always): HF refuses it */
    snprintf(j, sizeof j, "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, %s}, \"pre_tokenizer\": {\"type\": "
             "\"Metaspace\", \"replacement\": \"" U "\", \"add_prefix_space\": false}}", v);
    nlp_tok_spec s;
    CHECK(nlp_tokjson_parse(j, strlen(j), "t.json", &s) == NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "add_prefix_space does not match declared prepend_scheme") != NULL);
    /* LLaMA: Prepend + Replace, no pre-tokenizer; its decoder */
    snprintf(j, sizeof j, "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, %s}, \"normalizer\": {\"type\": "
             "\"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"" U "\"}, {\"type\": \"Replace\", "
             "\"pattern\": {\"String\": \" \"}, \"content\": \"" U "\"}]}, \"decoder\": {\"type\": \"Sequence\", "
             "\"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"" U "\"}, \"content\": \" \"}, "
             "{\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}, {\"type\": \"Strip\", \"content\": \" \", \"start\": "
             "1, \"stop\": 0}]}}", v);
    if ((tk = json_tok(j))) {
        check_enc(tk, "a  b", "3 1 5");
        const int32_t d[] = {3, 1, 5};
        check_dec(tk, d, 3, "a  b");
    }
    nlp_tokenizer_free(tk);
    /* Replace with a Regex: runs of 2 or more spaces -> one */
    snprintf(j, sizeof j, "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 0, %s}, \"normalizer\": {\"type\": "
             "\"Replace\", \"pattern\": {\"Regex\": \" {2,}\"}, \"content\": \" \"}, \"pre_tokenizer\": {\"type\": "
             "\"Metaspace\", \"replacement\": \"" U "\", \"prepend_scheme\": \"always\", \"split\": true}}", v);
    if ((tk = json_tok(j))) {
        check_enc(tk, "a   b", "3 5");
        check_enc(tk, "a b", "3 5");
    }
    nlp_tokenizer_free(tk);
    /* the written file reads back the same (the writer knows every component) */
    if ((tk = json_tok(j))) {
        nlp_buf a = {0}, b = {0};
        CHECK(nlp_tokjson_dump(nlp_tokenizer_spec(tk), &a) == 0);
        nlp_tok_spec s2;
        CHECK(nlp_tokjson_parse(a.data, a.len, "w.json", &s2) == 0);
        CHECK(nlp_tokjson_dump(&s2, &b) == 0);
        CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
        CHECK(strstr(a.data, "\"Regex\": \" {2,}\"") != NULL);
        nlp_tok_spec_free(&s2);
        nlp_buf_free(&a);
        nlp_buf_free(&b);
    }
    nlp_tokenizer_free(tk);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_pb);
    RUN(test_base64);
    RUN(test_datrie);
    RUN(test_charsmap);
    RUN(test_spm_normalize);
    RUN(test_spm_encode);
    RUN(test_spm_ties);
    RUN(test_spm_dup_piece);
    RUN(test_spm_bad_files);
    RUN(test_spm_tokenizer);
    RUN(test_spm_added);
    RUN(test_hf_unigram);
    RUN(test_hf_pipeline);
    return TEST_END();
}
