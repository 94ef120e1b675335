/*
 * test_data.c — GPT corpora (lib/train/data): token streams mapped with
 * 2- and 4-byte ids and llm.c shards read as the ids they hold, ids checked
 * where they are read, a mapped file that changes under the reader, the
 * text check, the cache (made, reused, remade for a changed text or another
 * tokenizer, nothing half-written), a pipe's shuffle buffer, and the
 * fingerprint of a large corpus.
 */
#include "test.h"

#include "base/err.h"
#include "base/io.h"
#include "tok/tokbin.h"
#include "tok/tokfiles.h"
#include "train/data.h"
#include "train/mt.h"
#include "train/cls.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

static const char *path_of(const char *name)
{
    static char p[8][600];
    static int k;
    char *s = p[k++ % 8];
    snprintf(s, sizeof p[0], "%s/%s", test_tmpdir(), name);
    return s;
}

static const char *put(const char *name, const void *d, size_t n)
{
    const char *path = path_of(name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f)) abort();
    return path;
}

static nlp_tokenizer *load_vocab(const char *name, const char *words)
{
    const char *p = put(name, words, strlen(words));
    nlp_tokenizer *t = NULL;
    if (nlp_tokfiles_load(p, NULL, &t)) return NULL;
    return t;
}

/* An nlpipe stream of ids (width 2 or 4 by the vocabulary) with separator eot. */
static const char *stream(const char *name, const int32_t *ids, size_t n, uint32_t vocab, int32_t eot, uint64_t fp)
{
    const char *path = path_of(name);
    nlp_writer *w = NULL;
    nlp_tokbin_writer *bw = NULL;
    if (nlp_writer_open(&w, path, 0) || nlp_tokbin_writer_new_fp(&bw, w, vocab, eot, fp)) abort();
    /* raw: one "document" written in pieces, the separators among the ids */
    if (nlp_tokbin_write_more(bw, ids, n) || nlp_tokbin_write_end(bw, 0)) abort();
    nlp_tokbin_writer_free(bw);
    if (nlp_writer_close(w)) abort();
    return path;
}

static int all_ids(const nlp_corpus *c, int32_t *out)
{
    return nlp_corpus_read(c, 0, c->n, out);
}

static void test_widths(void)
{
    int32_t ids[] = {5, 6, 1, 7, 8, 9, 1, 3};
    const size_t n = sizeof ids / sizeof *ids;
    int32_t got[16];
    for (int k = 0; k < 2; k++) {
        uint32_t vocab = k ? 70000 : 300; /* 4-byte and 2-byte ids */
        nlp_corpus c = NLP_CORPUS_INIT;
        CHECK_EQ_INT(nlp_corpus_add_stream(&c, stream("w.bin", ids, n, vocab, 1, 0), 0), 0);
        CHECK_EQ_INT(c.n, n);
        CHECK(c.mapped == n * (k ? 4 : 2));
        CHECK_EQ_INT(c.held, 0);
        CHECK_EQ_INT(all_ids(&c, got), 0);
        CHECK(memcmp(got, ids, sizeof ids) == 0);
        /* two inputs: joined by one end-of-text id */
        CHECK_EQ_INT(nlp_corpus_add_stream(&c, stream("w2.bin", ids, 3, vocab, 1, 0), 0), 0);
        CHECK_EQ_INT(c.n, n + 4);
        CHECK_EQ_INT(all_ids(&c, got), 0);
        CHECK(got[n] == 1 && got[n + 1] == 5 && got[n + 3] == 1);
        /* windows across the parts: the ids at their starts */
        nlp_rng r;
        nlp_rng_seed(&r, 3);
        int32_t win[4 * 5];
        CHECK_EQ_INT(nlp_corpus_windows(&c, &r, 4, 5, win), 0);
        nlp_rng_seed(&r, 3);
        for (int b = 0; b < 4; b++) {
            size_t s = (size_t)nlp_rng_below(&r, c.n - 5 + 1);
            CHECK(memcmp(win + 5 * b, got + s, 5 * sizeof *win) == 0);
        }
        nlp_corpus_free(&c);
    }
}

static void test_llmc(void)
{
    /* GPT-2 shard: 256 int32 header, then uint16 tokens, each document opened by 50256 */
    unsigned char b[1024 + 2 * 6] = {0};
    int32_t h[3] = {20240520, 1, 6};
    memcpy(b, h, sizeof h);
    uint16_t t[6] = {50256, 10, 11, 50256, 12, 13};
    memcpy(b + 1024, t, sizeof t);
    nlp_corpus c = NLP_CORPUS_INIT;
    c.eot = 50256;
    CHECK_EQ_INT(nlp_corpus_add_stream(&c, put("s.bin", b, sizeof b), 0), 0);
    int32_t got[8];
    CHECK_EQ_INT(c.n, 5);
    CHECK_EQ_INT(all_ids(&c, got), 0);
    CHECK(got[0] == 10 && got[1] == 11 && got[2] == 50256 && got[3] == 12 && got[4] == 13);
    /* the model's vocabulary is checked where ids are read, naming the byte */
    c.limit = 12;
    CHECK_EQ_INT(all_ids(&c, got), NLP_EDATA);
    CHECK_MSG(strstr(nlp_errmsg(), "s.bin' byte 1030: id 50256 is not below the vocabulary size 12") != NULL, "%s", nlp_errmsg());
    nlp_corpus_free(&c);
    /* a shard shorter than its count */
    CHECK_EQ_INT(nlp_corpus_add_stream(&c, put("s2.bin", b, sizeof b - 3), 0), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "truncated llm.c shard") != NULL);
    nlp_corpus_free(&c);
}

static void test_corrupt_and_changed(void)
{
    int32_t ids[64];
    for (int i = 0; i < 64; i++) ids[i] = 2 + i % 50;
    const char *p = stream("c.bin", ids, 64, 300, 1, 0);
    /* a partial id */
    FILE *f = fopen(p, "ab");
    fputc(7, f);
    fclose(f);
    nlp_corpus c = NLP_CORPUS_INIT;
    CHECK_EQ_INT(nlp_corpus_add_stream(&c, p, 0), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "truncated token stream: a partial id at byte 160") != NULL);
    nlp_corpus_free(&c);
    /* an id past the header's vocabulary: a corrupt stream, found where read */
    p = stream("c.bin", ids, 64, 300, 1, 0);
    int fd = open(p, O_WRONLY);
    unsigned char big[2] = {0x2C, 0x01}; /* 300 */
    CHECK(pwrite(fd, big, 2, 32 + 2 * 10) == 2);
    close(fd);
    CHECK_EQ_INT(nlp_corpus_add_stream(&c, p, 0), 0);
    int32_t got[64];
    CHECK_EQ_INT(all_ids(&c, got), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "byte 52: id 300 is not below the vocabulary size 300 of the header") != NULL);
    nlp_corpus_free(&c);
    /* replaced by rename while mapped: the old ids stay (safe) */
    p = stream("c.bin", ids, 64, 300, 1, 0);
    CHECK_EQ_INT(nlp_corpus_add_stream(&c, p, 0), 0);
    int32_t other[64] = {0};
    for (int i = 0; i < 64; i++) other[i] = 3;
    stream("c.bin", other, 64, 300, 1, 0); /* the writer renames into place */
    CHECK_EQ_INT(all_ids(&c, got), 0);
    CHECK(memcmp(got, ids, sizeof ids) == 0);
    nlp_corpus_free(&c);
    /* shrunk in place while mapped: an error naming it, not a crash */
    p = stream("c.bin", ids, 64, 300, 1, 0);
    CHECK_EQ_INT(nlp_corpus_add_stream(&c, p, 0), 0);
    CHECK(truncate(p, 40) == 0);
    CHECK_EQ_INT(all_ids(&c, got), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "c.bin' changed while it was being read (40 bytes, 160 when it was opened)") != NULL);
    nlp_corpus_free(&c);
    /* rewritten in place (same size): its time tells */
    p = stream("c.bin", ids, 64, 300, 1, 0);
    CHECK_EQ_INT(nlp_corpus_add_stream(&c, p, 0), 0);
    struct timespec ts[2] = {{0, UTIME_OMIT}, {1, 0}};
    CHECK(utimensat(AT_FDCWD, p, ts, 0) == 0);
    CHECK_EQ_INT(all_ids(&c, got), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "changed while it was being read (it was written to") != NULL);
    nlp_corpus_free(&c);
}

static void test_text_check(void)
{
    static const struct {
        const char *data;
        size_t n;
        const char *what; /* NULL: text */
    } cases[] = {
        {"\xFD" "7zXZ\0\0\x04", 8, "xz-compressed"},
        {"\x1F\x8B\x08\0\0\0", 6, "gzip-compressed"},
        {"\x28\xB5\x2F\xFD\x04", 5, "zstd-compressed"},
        {"BZh91AY&SY\x01", 11, "bzip2-compressed"},
        {"PK\x03\x04\x14\0", 6, "zip archive"},
        {"\x10\0\0\0\0\0\0\0{\"a\":{}} ", 17, "safetensors"},
        {"hello\0world\n", 12, "binary data"},
        {"12 34 5\n7 8\n9\n", 14, "numbers only"},
        {"Hello, world.\nA second line with 2 numbers: 3 4.\n", 49, NULL},
        {"12 34 5\n", 8, NULL},                         /* one line of numbers may be text */
        {"caf\xE9 cr\xE8me br\xFB" "l\xE9" "e, an old Latin-1 text of words\n", 43, NULL}, /* mostly valid */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = nlp_text_check("x", cases[i].data, cases[i].n);
        if (!cases[i].what) CHECK_MSG(rc == 0, "case %zu: %s", i, nlp_errmsg());
        else CHECK_MSG(rc == NLP_EDATA && strstr(nlp_errmsg(), cases[i].what), "case %zu: %d %s", i, rc, nlp_errmsg());
    }
    unsigned char junk[256];
    for (int i = 0; i < 256; i++) junk[i] = (unsigned char)(0x80 + (i * 37) % 128);
    CHECK_EQ_INT(nlp_text_check("x", junk, sizeof junk), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "mostly not UTF-8") != NULL);
    nlp_text_check_force(1);
    CHECK_EQ_INT(nlp_text_check("x", junk, sizeof junk), 0);
    nlp_text_check_force(0);
}

static size_t count_files(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += strstr(e->d_name, part) != NULL;
    if (d) closedir(d);
    return n;
}

static void test_cache(void)
{
    nlp_tokenizer *a = load_vocab("a-vocab.txt", "[PAD]\n[UNK]\n[SEP]\nthe\ncat\nsat\ndog\nran\n.\n");
    nlp_tokenizer *b = load_vocab("b-vocab.txt", "[PAD]\n[UNK]\n[SEP]\ncat\nthe\nsat\ndog\nran\n.\n");
    CHECK(a && b);
    if (!a || !b) return;
    CHECK(nlp_tokbin_fingerprint(a) != nlp_tokbin_fingerprint(b));
    const char *text = "the cat sat .\n\nthe dog ran .\nthe cat ran\n";
    const char *txt = put("t.txt", text, strlen(text));
    const char *dir = path_of("run/data");
    int32_t mem[64], got[64];
    nlp_corpus m = NLP_CORPUS_INIT, c = NLP_CORPUS_INIT;
    CHECK_MSG(nlp_corpus_add_text(&m, txt, a, 2, 1) == 0, "%s", nlp_errmsg());
    CHECK_EQ_INT(all_ids(&m, mem), 0);
    /* blocks of a few bytes (lines longer than a block, blocks of several lines): the same ids */
    for (size_t bs = 1; bs <= 64; bs *= 4) {
        nlp_text_blocks_set_size(bs);
        nlp_corpus k = NLP_CORPUS_INIT;
        CHECK_EQ_INT(nlp_corpus_add_text(&k, txt, a, 2, 2), 0);
        CHECK_EQ_INT(k.n, m.n);
        CHECK_EQ_INT(k.docs, m.docs);
        CHECK_EQ_INT(k.bytes, m.bytes);
        if (k.n == m.n) {
            CHECK_EQ_INT(all_ids(&k, got), 0);
            CHECK(memcmp(got, mem, m.n * sizeof *got) == 0);
        }
        nlp_corpus_free(&k);
    }
    nlp_text_blocks_set_size(0);
    CHECK_EQ_INT(m.docs, 3); /* the empty line is no document */
    int built = -2;
    /* --dry-run: nothing made */
    CHECK_EQ_INT(nlp_corpus_add_cached(&c, txt, a, 2, 0, 1, dir, 1, &built), 0);
    CHECK_EQ_INT(built, -1);
    CHECK_EQ_INT(c.n, 0);
    CHECK(!nlp_is_dir(dir));
    /* made, then mapped: the ids of the text in memory */
    CHECK_EQ_INT(nlp_corpus_add_cached(&c, txt, a, 2, 0, 1, dir, 0, &built), 0);
    CHECK_EQ_INT(built, 1);
    CHECK_EQ_INT(c.n, m.n);
    CHECK(c.mapped > 0 && c.held == 0);
    CHECK_EQ_INT(c.bytes, strlen(text));
    CHECK_EQ_INT(all_ids(&c, got), 0);
    CHECK(memcmp(got, mem, m.n * sizeof *got) == 0);
    nlp_corpus_free(&c);
    /* reused */
    CHECK_EQ_INT(nlp_corpus_add_cached(&c, txt, a, 2, 0, 1, dir, 0, &built), 0);
    CHECK_EQ_INT(built, 0);
    CHECK_EQ_INT(all_ids(&c, got), 0);
    CHECK(memcmp(got, mem, m.n * sizeof *got) == 0);
    nlp_corpus_free(&c);
    CHECK_EQ_INT(count_files(dir, "t.txt."), 1);
    /* another tokenizer: another cache (its own ids), the stale one removed */
    CHECK_EQ_INT(nlp_corpus_add_cached(&c, txt, b, 2, 0, 1, dir, 0, &built), 0);
    CHECK_EQ_INT(built, 1);
    CHECK_EQ_INT(all_ids(&c, got), 0);
    CHECK(got[0] == 4 && got[1] == 3); /* "the cat" in b */
    CHECK_EQ_INT(nlp_corpus_check_tokenizer(&c, b, "b", 2), 0);
    CHECK_EQ_INT(nlp_corpus_check_tokenizer(&c, a, "a", 2), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "was made by another tokenizer than 'a'") != NULL);
    nlp_corpus_free(&c);
    CHECK_EQ_INT(count_files(dir, "t.txt."), 1);
    /* a cache under b's name holding a's ids (as if renamed there) is not used: made anew */
    uint64_t key, pk;
    char nb[4400], na[4400];
    CHECK_EQ_INT(nlp_cache_key(txt, b, 2, &key, &pk), 0);
    nlp_cache_name(nb, sizeof nb, dir, txt, pk, key, "bin");
    CHECK_EQ_INT(nlp_cache_key(txt, a, 2, &key, &pk), 0);
    nlp_cache_name(na, sizeof na, dir, txt, pk, key, "bin");
    CHECK_EQ_INT(nlp_corpus_add_cached(&c, txt, a, 2, 0, 1, dir, 0, &built), 0); /* a's cache again */
    nlp_corpus_free(&c);
    CHECK(rename(na, nb) == 0);
    CHECK_EQ_INT(nlp_corpus_add_cached(&c, txt, b, 2, 0, 1, dir, 0, &built), 0);
    CHECK_EQ_INT(built, 1);
    CHECK_EQ_INT(all_ids(&c, got), 0);
    CHECK(got[0] == 4 && got[1] == 3);
    nlp_corpus_free(&c);
    /* a changed text: a new cache */
    txt = put("t.txt", "the dog sat .\n", 14);
    struct timespec ts[2] = {{0, UTIME_OMIT}, {12345, 0}};
    utimensat(AT_FDCWD, txt, ts, 0);
    CHECK_EQ_INT(nlp_corpus_add_cached(&c, txt, b, 2, 0, 1, dir, 0, &built), 0);
    CHECK_EQ_INT(built, 1);
    CHECK_EQ_INT(c.n, 4);
    nlp_corpus_free(&c);
    CHECK_EQ_INT(count_files(dir, "t.txt."), 1);
    /* a cache that cannot be written whole (a full disk; here a file size limit): an error, nothing left behind */
    txt = put("t.txt", text, strlen(text));
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 40;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    int rc = nlp_corpus_add_cached(&c, txt, b, 2, 0, 1, dir, 0, &built);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK_EQ_INT(rc, NLP_EIO);
    CHECK_MSG(strstr(nlp_errmsg(), "File too large") != NULL, "%s", nlp_errmsg());
    CHECK_EQ_INT(c.n, 0);
    CHECK_EQ_INT(count_files(dir, "t.txt."), 0); /* no temporary, no cache (the stale one went first) */
    nlp_corpus_free(&c);
    nlp_corpus_free(&m);
    nlp_tokenizer_free(a);
    nlp_tokenizer_free(b);
}

static void test_pipe(void)
{
    /* a stream longer than the buffer: windows from the buffer, which then takes in the next ids */
    int32_t ids[1000];
    for (int i = 0; i < 1000; i++) ids[i] = 2 + i % 200;
    const char *p = stream("p.bin", ids, 1000, 300, 1, 0);
    nlp_corpus c = NLP_CORPUS_INIT, d = NLP_CORPUS_INIT;
    CHECK_EQ_INT(nlp_corpus_open_pipe(&c, p, NULL, -1, 0, 100, 1), 0);
    CHECK_EQ_INT(c.n, 100);
    CHECK_EQ_INT(nlp_corpus_open_pipe(&d, p, NULL, -1, 0, 100, 1), 0);
    nlp_rng r1, r2;
    nlp_rng_seed(&r1, 9), nlp_rng_seed(&r2, 9);
    int32_t w1[2 * 10], w2[2 * 10], buf[100];
    uint64_t total = 0;
    int ended = 1;
    for (int step = 0; step < 60; step++) {
        CHECK_EQ_INT(nlp_corpus_read(&c, 0, 100, buf), 0);
        int first = buf[0]; /* the buffer holds consecutive ids of the stream (a window of it) */
        int ok = 1;
        for (int i = 0; i < 100; i++) ok &= buf[i] == 2 + (first - 2 + i) % 200;
        CHECK(ok);
        CHECK_EQ_INT(nlp_corpus_windows(&c, &r1, 2, 10, w1), 0);
        CHECK_EQ_INT(nlp_corpus_windows(&d, &r2, 2, 10, w2), 0);
        CHECK(memcmp(w1, w2, sizeof w1) == 0); /* the same stream, the same windows */
    }
    CHECK(nlp_corpus_is_pipe(&c, &total, &ended, NULL));
    CHECK_EQ_INT(total, 1000); /* 100 + 60 x 20 would be more: the stream ended */
    CHECK_EQ_INT(ended, 1);
    nlp_corpus_free(&c);
    nlp_corpus_free(&d);
    /* shorter than the buffer: the same windows as the file mapped */
    nlp_corpus f = NLP_CORPUS_INIT;
    CHECK_EQ_INT(nlp_corpus_open_pipe(&c, p, NULL, -1, 0, 5000, 1), 0);
    CHECK_EQ_INT(nlp_corpus_add_stream(&f, p, 0), 0);
    CHECK_EQ_INT(c.n, f.n);
    nlp_rng_seed(&r1, 4), nlp_rng_seed(&r2, 4);
    CHECK_EQ_INT(nlp_corpus_windows(&c, &r1, 2, 10, w1), 0);
    CHECK_EQ_INT(nlp_corpus_windows(&f, &r2, 2, 10, w2), 0);
    CHECK(memcmp(w1, w2, sizeof w1) == 0);
    nlp_corpus_free(&c);
    nlp_corpus_free(&f);
}

static void test_fingerprint(void)
{
    /* up to 2^24 ids: FNV-1a over every id (the value runs before mapping recorded) */
    int32_t ids[] = {5, 6, 1, 7};
    nlp_corpus c = NLP_CORPUS_INIT;
    CHECK_EQ_INT(nlp_corpus_add_stream(&c, stream("f.bin", ids, 4, 300, 1, 0), 0), 0);
    uint64_t h = 1469598103934665603ull, got;
    for (int i = 0; i < 4; i++) h = (h ^ (uint32_t)ids[i]) * 1099511628211ull;
    CHECK_EQ_INT(nlp_corpus_fingerprint(&c, &got), 0);
    CHECK(got == h);
    nlp_corpus_free(&c);
}

static int same_pairs(const nlp_pairs *a, const nlp_pairs *b)
{
    if (a->n != b->n || a->src_tokens != b->src_tokens || a->tgt_tokens != b->tgt_tokens || a->lines != b->lines ||
        a->empty != b->empty || a->too_long != b->too_long || a->src_max != b->src_max || a->tgt_max != b->tgt_max)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->src_off[i + 1] != b->src_off[i + 1] || a->tgt_off[i + 1] != b->tgt_off[i + 1] || a->line[i] != b->line[i])
            return 0;
    return memcmp(a->src, b->src, a->src_tokens * 4) == 0 && memcmp(a->tgt, b->tgt, a->tgt_tokens * 4) == 0;
}

/* Sentence pairs through a cache (mt.h): the pairs of memory, from two files
 * and from a TSV, read in blocks that cut lines; reused; a damaged cache
 * made anew; errors name the line across blocks. */
static void test_pairs_cache(void)
{
    nlp_tokenizer *tk = load_vocab("p-vocab.txt", "[PAD]\n[UNK]\n[SEP]\nthe\ncat\nsat\ndog\nran\n.\n");
    CHECK(tk != NULL);
    if (!tk) return;
    nlp_buf a = {0}, b = {0}, t = {0};
    static const char *const w[] = {"the", "cat", "sat", "dog", "ran", "."};
    for (int i = 0; i < 200; i++) {
        int na = i % 7, nb = (i * 3) % 11;
        for (int k = 0; k < na; k++) nlp_buf_printf(&a, "%s%s", k ? " " : "", w[(i + k) % 6]);
        for (int k = 0; k < nb; k++) nlp_buf_printf(&b, "%s%s", k ? " " : "", w[(i * 5 + k) % 6]);
        nlp_buf_putc(&a, '\n'), nlp_buf_putc(&b, '\n');
    }
    const char *src = put("p.src", a.data, a.len), *tgt = put("p.tgt", b.data, b.len);
    for (size_t i = 0, j = 0, ia = 0, ib = 0; i < 200; i++) { /* the TSV of the same pairs */
        const char *ea = memchr(a.data + ia, '\n', a.len - ia), *eb = memchr(b.data + ib, '\n', b.len - ib);
        nlp_buf_printf(&t, "%.*s\t%.*s\n", (int)(ea - (a.data + ia)), a.data + ia, (int)(eb - (b.data + ib)), b.data + ib);
        ia = (size_t)(ea - a.data) + 1, ib = (size_t)(eb - b.data) + 1, j++;
    }
    const char *tsv = put("p.tsv", t.data, t.len);
    const char *dir = path_of("prun/data");
    nlp_pairs_opts po = {.src_tk = tk, .tgt_tk = tk, .max_len = 8, .threads = 2};
    nlp_pairs m, c;
    CHECK_EQ_INT(nlp_pairs_read(&m, src, tgt, &po), 0);
    CHECK(m.n > 50 && m.empty > 0 && m.too_long > 0);
    int built = 9;
    nlp_text_blocks_set_size(40);
    for (int round = 0; round < 2; round++) {
        CHECK_EQ_INT(nlp_pairs_read_cached(&c, src, tgt, &po, dir, 0, &built), 0);
        CHECK_EQ_INT(built, round == 0);
        CHECK(c.map.data != NULL && nlp_pairs_memory(&c) == 0);
        CHECK(same_pairs(&m, &c));
        nlp_pairs_free(&c);
        CHECK_EQ_INT(nlp_pairs_read_cached(&c, tsv, NULL, &po, dir, 0, &built), 0);
        CHECK_EQ_INT(built, round == 0);
        CHECK(same_pairs(&m, &c));
        nlp_pairs_free(&c);
    }
    /* --dry-run of another --max-length: nothing made */
    po.max_len = 9;
    CHECK_EQ_INT(nlp_pairs_read_cached(&c, src, tgt, &po, dir, 1, &built), 0);
    CHECK_EQ_INT(built, -1);
    CHECK_EQ_INT(c.n, 0);
    po.max_len = 8;
    /* a damaged cache (an offset past the ids) is made anew */
    DIR *d = opendir(dir);
    struct dirent *e;
    char name[4400] = "";
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, "p.src.")) snprintf(name, sizeof name, "%s/%s", dir, e->d_name);
    if (d) closedir(d);
    int fd = open(name, O_WRONLY);
    CHECK(fd >= 0);
    uint64_t at = 24 + 4 * (uint64_t)m.src_tokens, big = 1u << 30;
    at += at % 8;
    at += 4 * (uint64_t)m.tgt_tokens;
    at += at % 8;
    CHECK(pwrite(fd, &big, 8, (off_t)(at + 8 * 3)) == 8);
    close(fd);
    CHECK_EQ_INT(nlp_pairs_read_cached(&c, src, tgt, &po, dir, 0, &built), 0);
    CHECK_EQ_INT(built, 1);
    CHECK(same_pairs(&m, &c));
    nlp_pairs_free(&c);
    /* errors: files that do not align, a TSV line without a tab (its number, counted across blocks) */
    nlp_buf_puts(&a, "the cat\n");
    src = put("p.src", a.data, a.len);
    CHECK_EQ_INT(nlp_pairs_read_cached(&c, src, tgt, &po, dir, 0, &built), NLP_EDATA);
    CHECK_MSG(strstr(nlp_errmsg(), "p.src' has 201 lines and ") != NULL, "%s", nlp_errmsg());
    nlp_pairs_free(&c);
    nlp_buf_puts(&t, "the cat\n");
    tsv = put("p.tsv", t.data, t.len);
    CHECK_EQ_INT(nlp_pairs_read_cached(&c, tsv, NULL, &po, dir, 0, &built), NLP_EDATA);
    CHECK_MSG(strstr(nlp_errmsg(), "p.tsv' line 201: no tab") != NULL, "%s", nlp_errmsg());
    nlp_pairs_free(&c);
    CHECK_EQ_INT(count_files(dir, ".tmp."), 0);
    nlp_text_blocks_set_size(0);
    nlp_pairs_free(&m);
    nlp_buf_free(&a), nlp_buf_free(&b), nlp_buf_free(&t);
    nlp_tokenizer_free(tk);
}

/* finetune's TSVs are read a block of lines at a time: blocks that cut
 * lines give the same examples, and errors name the file's line. */
static void test_cls_blocks(void)
{
    nlp_tokenizer *tk = load_vocab("c-vocab.txt", "[PAD]\n[UNK]\n[SEP]\nthe\ncat\nsat\ndog\nran\n.\n");
    CHECK(tk != NULL);
    if (!tk) return;
    nlp_buf t = {0};
    static const char *const w[] = {"the", "cat", "sat", "dog", "ran", "."};
    for (int i = 0; i < 120; i++) {
        nlp_buf_printf(&t, "%s\t", i % 3 ? "yes" : "no");
        for (int k = 0; k <= i % 9; k++) nlp_buf_printf(&t, "%s%s", k ? " " : "", w[(i + k) % 6]);
        nlp_buf_puts(&t, "\t");
        for (int k = 0; k <= i % 4; k++) nlp_buf_printf(&t, "%s%s", k ? " " : "", w[(i * 7 + k) % 6]);
        nlp_buf_puts(&t, "\n");
    }
    const char *p = put("c.tsv", t.data, t.len);
    nlp_cls_data ref, got;
    nlp_cls_labels l1 = {0}, l2 = {0};
    nlp_cls_read_opts o = {.tk = tk, .labelled = 1, .labels = &l1, .add_labels = 1, .threads = 2};
    CHECK_EQ_INT(nlp_cls_read(&ref, p, &o), 0);
    CHECK(ref.n == 120 && ref.pair);
    for (size_t bs = 7; bs <= 700; bs *= 10) {
        nlp_text_blocks_set_size(bs);
        o.labels = &l2;
        CHECK_EQ_INT(nlp_cls_read(&got, p, &o), 0);
        CHECK(got.n == ref.n && got.tokens == ref.tokens && got.pair == ref.pair);
        if (got.n == ref.n && got.tokens == ref.tokens) {
            CHECK(memcmp(got.label, ref.label, ref.n * sizeof *ref.label) == 0);
            CHECK(memcmp(got.a_off, ref.a_off, (ref.n + 1) * sizeof *ref.a_off) == 0);
            CHECK(memcmp(got.b_off, ref.b_off, (ref.n + 1) * sizeof *ref.b_off) == 0);
            CHECK(memcmp(got.a, ref.a, ref.a_off[ref.n] * sizeof *ref.a) == 0);
            CHECK(memcmp(got.b, ref.b, ref.b_off[ref.n] * sizeof *ref.b) == 0);
        }
        nlp_cls_data_free(&got);
    }
    nlp_buf_puts(&t, "yes\tthe cat\n");
    p = put("c.tsv", t.data, t.len);
    CHECK_EQ_INT(nlp_cls_read(&got, p, &o), NLP_EDATA);
    CHECK_MSG(strstr(nlp_errmsg(), "c.tsv' line 121 has 2 fields but line 1 has 3") != NULL, "%s", nlp_errmsg());
    nlp_text_blocks_set_size(0);
    nlp_cls_data_free(&ref);
    nlp_cls_labels_free(&l1), nlp_cls_labels_free(&l2);
    nlp_buf_free(&t);
    nlp_tokenizer_free(tk);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_widths);
    RUN(test_llmc);
    RUN(test_corrupt_and_changed);
    RUN(test_text_check);
    RUN(test_cache);
    RUN(test_pipe);
    RUN(test_fingerprint);
    RUN(test_pairs_cache);
    RUN(test_cls_blocks);
    return TEST_END();
}
