/*
 * test_safetensors.c — lib/nn safetensors and the parameter arena: round
 * trips of every written dtype with metadata, conversions, the reference
 * fixtures, precise errors for truncated files, bad headers, wrong shapes and
 * missing tensors, and in-place (mapped) loading.
 */
#include "base/err.h"
#include "base/io.h"
#include "nn/params.h"
#include "nn/safetensors.h"
#include "test.h"

static char *tmp_path(const char *name)
{
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

/* Builds a file from a header text and data bytes. */
static void write_st(const char *path, const char *hdr, const void *data, size_t n)
{
    uint64_t len = strlen(hdr);
    FILE *f = fopen(path, "wb");
    fwrite(&len, 8, 1, f);
    fwrite(hdr, 1, len, f);
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

static void test_roundtrip(void)
{
    float f[6] = {1, -2.5f, 3.25f, 1e-3f, -0.0f, 65504};
    int32_t i32[3] = {-7, 0, 2147483647};
    int64_t i64[2] = {-5, 1ll << 40};
    uint64_t u64[4] = {1, 2, 0xffffffffffffffffull, 4};
    float scalar = 42;
    nlp_st_writer *w = nlp_st_writer_new();
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2}, s4[1] = {4}, s0[1] = {0};
    CHECK_EQ_INT(nlp_st_writer_meta(w, "model", "gpt"), 0);
    CHECK_EQ_INT(nlp_st_writer_meta(w, "quote", "a \"b\" \\ c\n"), 0);
    CHECK_EQ_INT(nlp_st_writer_add(w, "f32", NLP_DT_F32, 2, s23, f, NLP_DT_F32), 0);
    CHECK_EQ_INT(nlp_st_writer_add(w, "bf16", NLP_DT_BF16, 2, s23, f, NLP_DT_F32), 0);
    CHECK_EQ_INT(nlp_st_writer_add(w, "i32", NLP_DT_I32, 1, s3, i32, NLP_DT_I32), 0);
    CHECK_EQ_INT(nlp_st_writer_add(w, "i64", NLP_DT_I64, 1, s2, i64, NLP_DT_I64), 0);
    CHECK_EQ_INT(nlp_st_writer_add(w, "u64", NLP_DT_U64, 1, s4, u64, NLP_DT_U64), 0);
    CHECK_EQ_INT(nlp_st_writer_add(w, "scalar", NLP_DT_F32, 0, NULL, &scalar, NLP_DT_F32), 0);
    CHECK_EQ_INT(nlp_st_writer_add(w, "empty", NLP_DT_F32, 1, s0, f, NLP_DT_F32), 0);
    CHECK_EQ_INT(nlp_st_writer_add(w, "f32", NLP_DT_F32, 1, s3, f, NLP_DT_F32), NLP_EINVAL); /* duplicate */
    CHECK_EQ_INT(nlp_st_writer_add(w, "x", NLP_DT_I32, 1, s3, f, NLP_DT_F32), NLP_EINVAL);   /* no such conversion */
    const char *path = tmp_path("rt.safetensors");
    CHECK_EQ_INT(nlp_st_writer_save(w, path), 0);
    nlp_st_writer_free(w);

    nlp_st *r;
    CHECK_EQ_INT(nlp_st_open(&r, path), 0);
    if (!r) return;
    CHECK_EQ_INT(nlp_st_count(r), 7);
    CHECK_STR(nlp_st_meta(r, "model"), "gpt");
    CHECK_STR(nlp_st_meta(r, "quote"), "a \"b\" \\ c\n");
    float g[6];
    const nlp_st_tensor *t = nlp_st_find(r, "f32");
    CHECK(t && t->ndim == 2 && t->shape[1] == 3 && t->dtype == NLP_DT_F32);
    CHECK_EQ_INT(nlp_st_read_f32(r, t, g), 0);
    CHECK(memcmp(g, f, sizeof f) == 0);
    t = nlp_st_find(r, "bf16");
    CHECK_EQ_INT(nlp_st_read_f32(r, t, g), 0);
    for (int i = 0; i < 6; i++) CHECK_NEAR(g[i], f[i], fabs(f[i]) / 128);
    int32_t j[3];
    CHECK_EQ_INT(nlp_st_read_i32(r, nlp_st_find(r, "i32"), j), 0);
    CHECK(memcmp(j, i32, sizeof j) == 0);
    int64_t k[2];
    CHECK_EQ_INT(nlp_st_read_i64(r, nlp_st_find(r, "i64"), k), 0);
    CHECK(k[0] == -5 && k[1] == (1ll << 40));
    CHECK_EQ_INT(nlp_st_read_i32(r, nlp_st_find(r, "i64"), j), NLP_EFORMAT); /* 2^40 does not fit */
    CHECK(strstr(nlp_errmsg(), "'i64' element 1") != NULL);
    uint64_t u[4];
    CHECK_EQ_INT(nlp_st_read_u64(r, nlp_st_find(r, "u64"), u), 0);
    CHECK(memcmp(u, u64, sizeof u) == 0);
    t = nlp_st_find(r, "scalar");
    CHECK(t && t->ndim == 0 && t->numel == 1);
    CHECK_EQ_INT(nlp_st_read_f32(r, t, g), 0);
    CHECK(g[0] == 42);
    t = nlp_st_find(r, "empty");
    CHECK(t && t->numel == 0);
    CHECK_EQ_INT(nlp_st_read_f32(r, nlp_st_find(r, "i32"), g), NLP_EFORMAT);
    nlp_st_close(r);

    /* the header is padded to 8 and the file size is exact */
    nlp_map mp;
    CHECK_EQ_INT(nlp_map_file(&mp, path), 0);
    uint64_t n;
    memcpy(&n, mp.data, 8);
    CHECK((8 + n) % 8 == 0);
    CHECK(((const char *)mp.data)[8] == '{');
    nlp_unmap(&mp);

    /* conversions */
    CHECK(nlp_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(nlp_bf16_to_f32(0xc020) == -2.5f);
    CHECK(nlp_f32_to_bf16(1.00390625f) == 0x3f80);      /* tie rounds to even */
    CHECK(nlp_f32_to_bf16(1.01171875f) == 0x3f82);      /* tie rounds to even (up) */
    CHECK(isnan(nlp_bf16_to_f32(nlp_f32_to_bf16(NAN))));
    CHECK(nlp_f16_to_f32(0x3c00) == 1.0f && nlp_f16_to_f32(0xc000) == -2.0f && nlp_f16_to_f32(0x0001) == 0x1p-24f);
}

/* Every malformed file is NLP_EFORMAT with a message naming the file and the problem. */
static void expect_bad(const char *what, const char *hdr, size_t data_len, const char *needle)
{
    const char *path = tmp_path("bad.safetensors");
    char data[64] = {0};
    write_st(path, hdr, data, data_len);
    nlp_st *r = NULL;
    int rc = nlp_st_open(&r, path);
    CHECK_MSG(rc == NLP_EFORMAT, "%s: status %d", what, rc);
    CHECK_MSG(strstr(nlp_errmsg(), needle) && strstr(nlp_errmsg(), "bad.safetensors"), "%s: message '%s'", what,
              nlp_errmsg());
    CHECK(r == NULL);
}

static void test_errors(void)
{
    expect_bad("not JSON", "{\"a\": [1,", 0, "JSON error at header byte");
    expect_bad("not an object", "[1, 2]", 0, "does not start with '{'");
    expect_bad("no dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "lacks \"dtype\"");
    expect_bad("unknown dtype", "{\"a\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype 'Q7'");
    expect_bad("shape vs bytes", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "needs 12");
    expect_bad("past the end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "truncated");
    expect_bad("hole", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "a hole");
    expect_bad("overlap",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               8, "overlapping");
    expect_bad("trailing", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 12, "not indexed");
    expect_bad("metadata value", "{\"__metadata__\":{\"k\":1}}", 0, "is not a string");
    expect_bad("negative shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "shape entry 0");
    expect_bad("duplicate", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                            "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
               4, "JSON error");
    /* shapes whose byte size wraps around 2^64 (2^62 elements of 4 or 8 bytes
     * "fit" in data_offsets [0, 0]) must not pass as tiny tensors */
    expect_bad("byte size overflows (F32)",
               "{\"a\":{\"dtype\":\"F32\",\"shape\":[2147483648,2147483648],\"data_offsets\":[0,0]}}", 0,
               "shape too large");
    expect_bad("byte size overflows (F64)",
               "{\"a\":{\"dtype\":\"F64\",\"shape\":[1073741824,1073741824,4],\"data_offsets\":[0,0]}}", 0,
               "shape too large");
    expect_bad("byte size overflows (I16, 2^63 elements)",
               "{\"a\":{\"dtype\":\"I16\",\"shape\":[4294967296,2147483648],\"data_offsets\":[0,0]}}", 0,
               "shape too large");

    /* a good file cut short anywhere */
    float f[16] = {0};
    int64_t s[1] = {16};
    nlp_st_writer *w = nlp_st_writer_new();
    nlp_st_writer_add(w, "w", NLP_DT_F32, 1, s, f, NLP_DT_F32);
    const char *good = tmp_path("good.safetensors");
    nlp_st_writer_save(w, good);
    nlp_st_writer_free(w);
    char *buf;
    size_t len;
    nlp_read_file(good, &buf, &len);
    size_t cuts[] = {0, 5, 8, 20, len - 64, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        const char *p = tmp_path("cut.safetensors");
        write_bytes(p, buf, cuts[i]);
        nlp_st *r = NULL;
        int rc = nlp_st_open(&r, p);
        CHECK_MSG(rc == NLP_EFORMAT, "cut at %zu: status %d", cuts[i], rc);
        CHECK_MSG(strstr(nlp_errmsg(), "truncated") || strstr(nlp_errmsg(), "shorter"), "cut at %zu: '%s'", cuts[i],
                  nlp_errmsg());
    }
    free(buf);
    nlp_st *r = NULL;
    CHECK_EQ_INT(nlp_st_open(&r, tmp_path("no-such-file")), NLP_EIO);
    CHECK(strstr(nlp_errmsg(), "cannot open") != NULL);
    /* a directory (or a FIFO) is not a model file: a format error, not I/O */
    CHECK_EQ_INT(nlp_st_open(&r, test_tmpdir()), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "is a directory, not a safetensors file") != NULL);

    /* expect: missing and wrong shape */
    CHECK_EQ_INT(nlp_st_open(&r, good), 0);
    int64_t want[2] = {4, 4};
    CHECK_EQ_INT(nlp_st_expect(r, "nope", 1, s, NULL), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "missing tensor 'nope'") != NULL);
    CHECK_EQ_INT(nlp_st_expect(r, "w", 2, want, NULL), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "tensor 'w' has shape [16], expected [4, 4]") != NULL);
    nlp_st_close(r);
}

static void test_params(void)
{
    nlp_params *p = nlp_params_new();
    int64_t a[2] = {3, 4}, b[1] = {5};
    CHECK_EQ_INT(nlp_params_add(p, "layer.weight", 2, a, 0), 0);
    CHECK_EQ_INT(nlp_params_add(p, "layer.LayerNorm.weight", 1, b, 1), 1);
    CHECK_EQ_INT(nlp_params_add(p, "layer.weight", 1, b, 0), NLP_EINVAL);
    CHECK_EQ_INT(nlp_params_alloc(p), 0);
    CHECK_EQ_INT(nlp_params_numel(p), 17);
    CHECK_EQ_INT(nlp_params_info(p, 1)->off, 12);
    for (size_t i = 0; i < 17; i++) nlp_params_data(p)[i] = (float)i;
    const char *path = tmp_path("params.safetensors");
    const char *meta[] = {"k", "v", NULL};
    CHECK_EQ_INT(nlp_params_save(p, path, meta, NLP_DT_F32), 0);

    /* same layout: mapped in place */
    nlp_params *q = nlp_params_new();
    nlp_params_add(q, "layer.weight", 2, a, 0);
    nlp_params_add(q, "layer.LayerNorm.weight", 1, b, 1);
    nlp_st *f;
    CHECK_EQ_INT(nlp_st_open(&f, path), 0);
    CHECK_EQ_INT(nlp_params_load(q, f), 0);
    CHECK(nlp_params_is_mapped(q));
    CHECK(memcmp(nlp_params_data(q), nlp_params_data(p), 17 * 4) == 0);
    nlp_params_data(q)[0] = 99; /* copy-on-write: the file keeps 0 */
    nlp_params_free(q);

    /* another order, aliases ("transformer." prefix, LayerNorm "gamma") and BF16: copied */
    nlp_st_writer *w = nlp_st_writer_new();
    float g[5] = {9, 8, 7, 6, 5}, m[12] = {0}, extra[1] = {1};
    int64_t e[1] = {1};
    nlp_st_writer_add(w, "layer.LayerNorm.gamma", NLP_DT_BF16, 1, b, g, NLP_DT_F32);
    nlp_st_writer_add(w, "lm_head.weight", NLP_DT_F32, 1, e, extra, NLP_DT_F32);
    nlp_st_writer_add(w, "transformer.layer.weight", NLP_DT_F32, 2, a, m, NLP_DT_F32);
    const char *p2 = tmp_path("alias.safetensors");
    nlp_st_writer_save(w, p2);
    nlp_st_writer_free(w);
    q = nlp_params_new();
    nlp_params_add(q, "layer.weight", 2, a, 0);
    nlp_params_add(q, "layer.LayerNorm.weight", 1, b, 1);
    CHECK_EQ_INT(nlp_st_open(&f, p2), 0);
    int rc = nlp_params_load(q, f);
    CHECK_MSG(rc == 0, "%s", nlp_errmsg());
    CHECK(!nlp_params_is_mapped(q));
    CHECK(rc == 0 && nlp_params_at(q, 1)[0] == 9 && nlp_params_at(q, 1)[4] == 5);
    nlp_params_free(q);

    /* missing and wrong shapes name the tensor */
    q = nlp_params_new();
    int64_t a2[2] = {4, 3};
    nlp_params_add(q, "layer.weight", 2, a2, 0);
    CHECK_EQ_INT(nlp_st_open(&f, path), 0);
    CHECK_EQ_INT(nlp_params_load(q, f), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "tensor 'layer.weight' has shape [3, 4], expected [4, 3]") != NULL);
    nlp_params_free(q);
    q = nlp_params_new();
    nlp_params_add(q, "other.bias", 1, b, 1);
    CHECK_EQ_INT(nlp_st_open(&f, path), 0);
    CHECK_EQ_INT(nlp_params_load(q, f), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "missing tensor 'other.bias'") != NULL);
    nlp_params_free(q);
    nlp_params_free(p);
}

static void test_fixtures(void)
{
    const char *sh = test_shared();
    if (!sh) return;
    const char *sets[] = {"gpt", "bert", "encdec"};
    char path[1024];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/parity/fixtures/%s/ref.safetensors", sh, sets[i]);
        nlp_st *r;
        CHECK_EQ_INT(nlp_st_open(&r, path), 0);
        if (!r) continue;
        CHECK(nlp_st_count(r) > 50);
        CHECK(nlp_st_meta(r, "lr") && strcmp(nlp_st_meta(r, "model"), sets[i]) == 0);
        const nlp_st_tensor *t = nlp_st_find(r, "loss");
        CHECK(t && t->ndim == 0);
        nlp_st_close(r);
    }
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_roundtrip);
    RUN(test_errors);
    RUN(test_params);
    RUN(test_fixtures);
    return TEST_END();
}
