/*
 * test_bleu_score.c — scores from counts (shared/vectors/bleu/_units/
 * compute_bleu.jsonl: every smoothing method, effective order, zero
 * precisions), n-gram statistics, chrF, TER with shifts, exact match
 * (hand cases), and Python's float repr used in the JSON output.
 */
#include "test.h"

#include "jsonl.h"

#include "eval/metric.h"
#include "eval/ngram.h"
#include "eval/report.h"

static void check_row(json_t *o, int index)
{
    nlp_bleu_params p = nlp_bleu_defaults();
    json_t *c = json_object_get(o, "correct"), *t = json_object_get(o, "total");
    p.max_order = (int)json_array_size(c);
    const char *m = json_string_value(json_object_get(o, "smooth_method"));
    for (int k = 0; nlp_bleu_smooth_names[k]; k++)
        if (strcmp(m, nlp_bleu_smooth_names[k]) == 0) p.smooth = (nlp_bleu_smooth)k;
    json_t *sv = json_object_get(o, "smooth_value");
    p.smooth_value = json_is_null(sv) ? NAN : json_number_value(sv);
    p.effective_order = json_is_true(json_object_get(o, "effective_order"));
    double st[2 + 2 * NLP_BLEU_MAX_ORDER];
    st[0] = json_number_value(json_object_get(o, "sys_len"));
    st[1] = json_number_value(json_object_get(o, "ref_len"));
    for (int n = 0; n < p.max_order; n++) {
        st[2 + n] = json_number_value(json_array_get(c, (size_t)n));
        st[2 + p.max_order + n] = json_number_value(json_array_get(t, (size_t)n));
    }
    nlp_bleu_result r;
    nlp_bleu_compute(&p, st, &r);
    double want = json_number_value(json_object_get(o, "score"));
    CHECK_MSG(want == 0 ? r.score == 0 : fabs(r.score - want) <= 1e-12 * fabs(want), "row %d (%s): score %.17g, want %.17g",
              index + 1, m, r.score, want);
    CHECK_REL(r.bp, json_number_value(json_object_get(o, "bp")), 1e-15);
    for (int n = 0; n < p.max_order; n++) {
        CHECK_REL(r.precisions[n], json_number_value(json_array_get(json_object_get(o, "precisions"), (size_t)n)), 1e-15);
        CHECK_REL(r.counts[n], json_number_value(json_array_get(json_object_get(o, "counts_after"), (size_t)n)), 1e-15);
        CHECK_REL(r.totals[n], json_number_value(json_array_get(json_object_get(o, "totals_after"), (size_t)n)), 1e-15);
    }
}

static void test_compute_vectors(void)
{
    int rows = jsonl_each("vectors/bleu/_units/compute_bleu.jsonl", check_row);
    if (rows >= 0) CHECK(rows >= (t_compact ? 30 : 160));
}

static nlp_units words(const char *s)
{
    nlp_units u = {0};
    nlp_units_words(&u, s, strlen(s));
    return u;
}

static void test_ngrams(void)
{
    nlp_ngrams *g = nlp_ngrams_new();
    nlp_units h = words("the the the the cat"), r1 = words("the cat the"), r2 = words("the the the x");
    int64_t m1[4] = {0}, m2[4] = {0}, c[4];
    nlp_ngrams_load(g, &h, 4);
    nlp_ngrams_probe(g, &r1, m1);
    CHECK_EQ_INT(m1[0], 3); /* the: min(4,2) + cat: 1 */
    CHECK_EQ_INT(m1[1], 1); /* "the cat" */
    nlp_ngrams_probe(g, &r2, m2);
    CHECK_EQ_INT(m2[0], 3); /* the: min(4,3) */
    CHECK_EQ_INT(m2[1], 2); /* "the the" x2 */
    CHECK_EQ_INT(m2[2], 1);
    nlp_ngrams_clipped(g, c);
    CHECK_EQ_INT(c[0], 4); /* the: max(2,3)=3, cat: 1 */
    CHECK_EQ_INT(c[1], 3); /* "the the": 2, "the cat": 1 */
    CHECK_EQ_INT(c[2], 1);
    CHECK_EQ_INT(c[3], 0);
    /* equal hashes are not enough: bytes decide */
    nlp_units a = words("ab ab"), b = words("ab ba");
    int64_t m3[2] = {0};
    nlp_ngrams_load(g, &a, 2);
    nlp_ngrams_probe(g, &b, m3);
    CHECK_EQ_INT(m3[0], 1);
    CHECK_EQ_INT(m3[1], 0);
    nlp_units_free(&h), nlp_units_free(&r1), nlp_units_free(&r2), nlp_units_free(&a), nlp_units_free(&b);
    nlp_ngrams_free(g);
}

static double score1(nlp_metric_kind kind, const char *hyp, const char *ref)
{
    nlp_metric_params p = {kind, nlp_bleu_defaults(), nlp_chrf_defaults(), {0, 0, 0, 0}, {0}};
    nlp_metric *m = nlp_metric_new(&p);
    double st[64];
    size_t rl = strlen(ref);
    nlp_metric_segment(m, hyp, strlen(hyp), &ref, &rl, 1, st);
    nlp_score sc;
    nlp_metric_score(m, st, &sc);
    nlp_metric_free(m);
    return sc.score;
}

static void test_ter(void)
{
    nlp_ter_params tp = {0, 0, 0, 0};
    nlp_ter *t = nlp_ter_new(&tp);
    int h[] = {3, 4, 5, 6, 7, 0, 1, 2}, r[] = {0, 1, 2, 3, 4, 5, 6, 7};
    CHECK_EQ_INT(nlp_ter_edits(t, h, 8, r, 8), 1); /* one block shift */
    CHECK_EQ_INT(nlp_ter_edits(t, h, 0, r, 3), 3);
    CHECK_EQ_INT(nlp_ter_edits(t, h, 2, r, 0), 2);
    nlp_ter_free(t);
    CHECK_NEAR(score1(NLP_METRIC_TER, "d e f g h a b c", "a b c d e f g h"), 12.5, 1e-12);
    CHECK_NEAR(score1(NLP_METRIC_TER, "A B C", "a b c"), 0.0, 0);
    nlp_buf b = {0}, tmp = {0};
    nlp_ter_params norm = {1, 1, 0, 0};
    nlp_ter_tokenize(&norm, "John's car, (new)!", 18, &b, &tmp);
    CHECK_STR(b.data, "john 's car new");
    nlp_buf_free(&b), nlp_buf_free(&tmp);
}

static void test_chrf(void)
{
    CHECK_NEAR(score1(NLP_METRIC_CHRF, "abc", "abc"), 100.0, 1e-12);
    CHECK_NEAR(score1(NLP_METRIC_CHRF, "xyz", "abc"), 0.0, 0);
    double s = score1(NLP_METRIC_CHRF, "the cat", "the hat");
    CHECK(s > 0 && s < 100);
}

static void test_repr(void)
{
    char b[40];
    CHECK_STR(nlp_py_repr(54.5, b), "54.5");
    CHECK_STR(nlp_py_repr(100.0, b), "100.0");
    CHECK_STR(nlp_py_repr(0.0, b), "0.0");
    CHECK_STR(nlp_py_repr(5e-15, b), "5e-15");
    CHECK_STR(nlp_py_repr(0.0001, b), "0.0001");
    CHECK_STR(nlp_py_repr(0.00001, b), "1e-05");
    CHECK_STR(nlp_py_repr(1e16, b), "1e+16");
    CHECK_STR(nlp_py_repr(1234567890123456.0, b), "1234567890123456.0");
    CHECK_STR(nlp_py_repr(54.47243667957213, b), "54.47243667957213");
    CHECK_STR(nlp_py_repr(0.1 + 0.2, b), "0.30000000000000004");
}

/* exact match of hyp against refs (nrefs of them): the segment's correct count */
static double exact1(int lowercase, const char *hyp, const char *const *refs, int nrefs)
{
    nlp_metric_params p;
    memset(&p, 0, sizeof p);
    p.kind = NLP_METRIC_EXACT;
    p.exact.lowercase = lowercase;
    nlp_metric *m = nlp_metric_new(&p);
    size_t rl[4];
    for (int k = 0; k < nrefs; k++) rl[k] = strlen(refs[k]);
    double st[NLP_EXACT_NSTATS] = {-1, -1};
    CHECK_EQ_INT(nlp_metric_segment(m, hyp, strlen(hyp), refs, rl, nrefs, st), 0);
    CHECK(st[1] == 1);
    nlp_metric_free(m);
    return st[0];
}

static void test_exact(void)
{
    const char *pos[] = {"pos"}, *two[] = {"neg", "Pos"}, *empty[] = {""}, *sp[] = {" \t pos \r"};
    CHECK(exact1(0, "pos", pos, 1) == 1);
    CHECK(exact1(0, "neg", pos, 1) == 0);
    CHECK(exact1(0, "po", pos, 1) == 0);       /* a prefix is not a match */
    CHECK(exact1(0, "pos s", pos, 1) == 0);
    CHECK(exact1(0, "  pos\t", pos, 1) == 1);  /* surrounding white space aside */
    CHECK(exact1(0, "pos", sp, 1) == 1);
    CHECK(exact1(0, "p os", pos, 1) == 0);     /* inner white space counts */
    CHECK(exact1(0, "Pos", pos, 1) == 0);      /* case counts, */
    CHECK(exact1(1, "Pos", pos, 1) == 1);      /* unless lowercased */
    CHECK(exact1(1, "\xC3\x89T\xC3\x89", (const char *[]){"\xC3\xA9t\xC3\xA9"}, 1) == 1); /* ÉTÉ ~ été */
    CHECK(exact1(0, "\xC3\x89T\xC3\x89", (const char *[]){"\xC3\xA9t\xC3\xA9"}, 1) == 0);
    CHECK(exact1(0, "Pos", two, 2) == 1);      /* any reference */
    CHECK(exact1(0, "neg", two, 2) == 1);
    CHECK(exact1(0, "pos", two, 2) == 0);
    CHECK(exact1(1, "pos", two, 2) == 1);
    CHECK(exact1(0, "", empty, 1) == 1);       /* two empty lines match */
    CHECK(exact1(0, "  ", empty, 1) == 1);
    CHECK(exact1(0, "", pos, 1) == 0);
    CHECK(exact1(0, "pos", empty, 1) == 0);
    /* the score from summed statistics, its name, verbose part and signature */
    nlp_metric_params p;
    memset(&p, 0, sizeof p);
    p.kind = NLP_METRIC_EXACT;
    nlp_metric *m = nlp_metric_new(&p);
    CHECK_EQ_INT(nlp_metric_nstats(m), 2);
    CHECK_STR(nlp_metric_name(m), "Exact");
    double sum[2] = {3, 8};
    nlp_score sc;
    nlp_metric_score(m, sum, &sc);
    CHECK_NEAR(sc.score, 37.5, 1e-12);
    CHECK(sc.counted && sc.correct == 3 && sc.lines == 8);
    CHECK_STR(sc.verbose, "(correct = 3 lines = 8)");
    nlp_sig sig;
    nlp_buf b = {0};
    nlp_metric_signature(m, 2, NULL, &sig);
    CHECK_EQ_INT(nlp_sig_format(&sig, 0, &b), 0);
    CHECK_STR(b.data, "nrefs:2|case:mixed|version:" NLP_SACREBLEU_VERSION);
    nlp_buf_reset(&b);
    CHECK_EQ_INT(nlp_report_score(&sc, "nrefs:1", 1, 0, 0, &b), 0);
    CHECK_STR(b.data, "Exact|nrefs:1 = 37.5 (correct = 3 lines = 8)");
    nlp_buf_reset(&b);
    CHECK_EQ_INT(nlp_report_score(&sc, "nrefs:1", 1, 0, 1, &b), 0);
    CHECK_STR(b.data, "{\n \"name\": \"Exact\",\n \"score\": 37.5,\n \"signature\": \"nrefs:1\",\n \"verbose_score\": "
                      "\"(correct = 3 lines = 8)\",\n \"correct\": 3,\n \"lines\": 8,\n \"nrefs\": \"1\"\n}");
    sum[0] = sum[1] = 0; /* no lines: 0, not NaN */
    nlp_metric_score(m, sum, &sc);
    CHECK(sc.score == 0);
    nlp_buf_free(&b);
    nlp_metric_free(m);
    p.exact.lowercase = 1;
    m = nlp_metric_new(&p);
    nlp_metric_signature(m, 1, NULL, &sig);
    CHECK_EQ_INT(nlp_sig_format(&sig, 1, &b), 0);
    CHECK_STR(b.data, "#:1|c:lc|v:" NLP_SACREBLEU_VERSION);
    nlp_buf_free(&b);
    nlp_metric_free(m);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_compute_vectors);
    RUN(test_ngrams);
    RUN(test_ter);
    RUN(test_chrf);
    RUN(test_exact);
    RUN(test_repr);
    return TEST_END();
}
