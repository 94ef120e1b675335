/*
 * test_bleu_signif.c — numpy's default_rng draws, reproduced: the values
 * below were printed by numpy 1.24 (Debian 12's python3-numpy), e.g.
 *   numpy.random.default_rng(12345).choice(100000, size=6)
 * and numpy's / Python's means.
 */
#include "test.h"

#include "eval/signif.h"

static void test_raw(void)
{
    nlp_pcg64 r;
    nlp_pcg64_seed(&r, 12345);
    CHECK(nlp_pcg64_next64(&r) == 4193609425186963869ull);
    CHECK(nlp_pcg64_next64(&r) == 5843160025838961886ull);
}

static void test_choice(void)
{
    nlp_pcg64 r;
    uint32_t out[8];
    const uint32_t a[] = {69921, 22733, 78864, 31675, 20417, 79736};
    nlp_pcg64_seed(&r, 12345);
    nlp_pcg64_choice(&r, 100000, 6, out);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(out[i], a[i]);
    const uint32_t b[] = {6, 2, 7, 3, 2, 7, 6, 6, 9, 3};
    uint32_t o2[10];
    nlp_pcg64_seed(&r, 12345);
    nlp_pcg64_choice(&r, 10, 10, o2);
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(o2[i], b[i]);
    const uint32_t c[] = {5, 4, 3, 1, 2, 0, 0, 0};
    nlp_pcg64_seed(&r, 0);
    nlp_pcg64_choice(&r, 7, 8, out);
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(out[i], c[i]);
    const uint32_t d[] = {3322827587u, 4277174884u, 2032287965u}; /* 64-bit path, 2-word seed */
    nlp_pcg64_seed(&r, (1ull << 40) + 3);
    nlp_pcg64_choice(&r, (1ull << 32) + 5, 3, out);
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(out[i], d[i]);
}

static void test_bools(void)
{
    const char *want = "1011100110000011111111110100110110110001";
    unsigned char b[40];
    nlp_pcg64 r;
    nlp_pcg64_seed(&r, 12345);
    nlp_pcg64_bools(&r, 40, b);
    for (int i = 0; i < 40; i++) CHECK_EQ_INT(b[i], want[i] - '0');
}

static void test_means(void)
{
    double x[1000];
    for (int i = 0; i < 1000; i++) x[i] = (i * 7919 % 1000) / 10.0 + 1e-9 * i;
    double s = 0;
    for (int i = 0; i < 1000; i++) s += x[i];
    CHECK_REL(nlp_np_mean(x, 1000), s / 1000, 1e-14);
    CHECK_REL(nlp_py_mean(x, 1000), s / 1000, 1e-14);
    double y[3] = {1e16, 1.0, -1e16};
    CHECK_NEAR(nlp_py_mean(y, 3), 1.0 / 3, 1e-16); /* exact partials */
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_raw);
    RUN(test_choice);
    RUN(test_bools);
    RUN(test_means);
    return TEST_END();
}
