/*
 * test_base.c — lib/base: errors, buffers, arena, reader/writer, atomic
 * writes, YAML configs, RNG, hash map.
 */
#include "base/config.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/rng.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

static void write_raw(const char *path, const char *s, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(s, 1, n, f);
    fclose(f);
}

static void test_errors(void)
{
    CHECK_EQ_INT(nlp_error(NLP_EDATA, "'%s' line %d: bad", "x.txt", 3), NLP_EDATA);
    CHECK_STR(nlp_errmsg(), "'x.txt' line 3: bad");
    CHECK_EQ_INT(nlp_errcode(), NLP_EDATA);
    nlp_error_prefix(NLP_EFORMAT, "loading");
    CHECK_STR(nlp_errmsg(), "loading: 'x.txt' line 3: bad");
    CHECK_EQ_INT(nlp_exit_code(NLP_EFORMAT), 3);
    CHECK_EQ_INT(nlp_exit_code(NLP_EINVAL), 2);
    CHECK_EQ_INT(nlp_exit_code(NLP_EIO), 1);
    CHECK_EQ_INT(nlp_exit_code(NLP_OK), 0);
}

static void test_buf_arena(void)
{
    nlp_buf b = {0};
    for (int i = 0; i < 1000; i++) nlp_buf_printf(&b, "%d,", i);
    CHECK(b.len == strlen(b.data));
    CHECK(strncmp(b.data, "0,1,2,", 6) == 0);
    size_t n;
    char *d = nlp_buf_detach(&b, &n);
    CHECK(b.data == NULL && n > 3000);
    free(d);

    nlp_arena a = {0};
    char *p[2000];
    for (int i = 0; i < 2000; i++) {
        char tmp[32];
        int k = snprintf(tmp, sizeof tmp, "key%d", i);
        p[i] = nlp_arena_strndup(&a, tmp, (size_t)k);
    }
    void *big = nlp_arena_alloc(&a, 1 << 20);
    CHECK(big != NULL && ((uintptr_t)big & 15) == 0);
    CHECK_STR(p[1999], "key1999");
    CHECK_STR(p[0], "key0");
    nlp_arena_free(&a);
}

static void test_reader(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/lines.txt", test_tmpdir());
    /* LF, CRLF, lone CR, an empty line, an embedded NUL, no final newline */
    const char txt[] = "a\nbb\r\nc\rd\n\nnul\0x\nlast";
    write_raw(path, txt, sizeof txt - 1);

    nlp_reader *r;
    char *line;
    size_t len;
    CHECK_EQ_INT(nlp_reader_open(&r, path), 0);
    const char *want[] = {"a", "bb\r", "c\rd", "", "nul", "last"};
    size_t wantlen[] = {1, 3, 3, 0, 5, 4};
    for (int i = 0; i < 6; i++) {
        CHECK_EQ_INT(nlp_reader_line(r, &line, &len), 1);
        CHECK_EQ_INT(len, wantlen[i]);
        CHECK(memcmp(line, want[i], strlen(want[i])) == 0);
        CHECK_EQ_INT(nlp_reader_lineno(r), i + 1);
    }
    CHECK(!nlp_reader_had_newline(r));
    CHECK_EQ_INT(nlp_reader_line(r, &line, &len), 0);
    nlp_reader_close(r);

    /* universal newlines */
    CHECK_EQ_INT(nlp_reader_open(&r, path), 0);
    nlp_reader_set_newline(r, NLP_NL_UNIVERSAL);
    const char *uwant[] = {"a", "bb", "c", "d", ""};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(nlp_reader_line(r, &line, &len), 1);
        CHECK_STR(line, uwant[i]);
    }
    nlp_reader_close(r);

    /* a line far longer than the read chunk, and offsets */
    size_t big = 3u << 20;
    char *s = malloc(big + 8);
    memset(s, 'x', big);
    memcpy(s + big, "\ny\n", 3);
    write_raw(path, s, big + 3);
    CHECK_EQ_INT(nlp_reader_open(&r, path), 0);
    CHECK_EQ_INT(nlp_reader_line(r, &line, &len), 1);
    CHECK_EQ_INT(len, big);
    CHECK_EQ_INT(nlp_reader_line(r, &line, &len), 1);
    CHECK_STR(line, "y");
    CHECK_EQ_INT(nlp_reader_line_offset(r), big + 1);
    nlp_reader_close(r);
    free(s);

    CHECK_EQ_INT(nlp_reader_open(&r, "/nonexistent/file"), NLP_EIO);
    CHECK(strstr(nlp_errmsg(), "cannot open '/nonexistent/file'") != NULL);

    /* read_exact reports truncation with the offset */
    write_raw(path, "abc", 3);
    CHECK_EQ_INT(nlp_reader_open(&r, path), 0);
    char tmp[8];
    CHECK_EQ_INT(nlp_reader_read_exact(r, tmp, 2), 0);
    CHECK_EQ_INT(nlp_reader_read_exact(r, tmp, 4), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "truncated at byte 3") != NULL);
    nlp_reader_close(r);
}

static void test_writer(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/out.txt", test_tmpdir());
    write_raw(path, "old", 3);
    nlp_writer *w;
    CHECK_EQ_INT(nlp_writer_open(&w, path, 0), 0);
    for (int i = 0; i < 100000; i++) nlp_writer_printf(w, "%d\n", i);
    /* before commit the old file is intact */
    char *d;
    size_t n;
    CHECK_EQ_INT(nlp_read_file(path, &d, &n), 0);
    CHECK_STR(d, "old");
    free(d);
    CHECK_EQ_INT(nlp_writer_close(w), 0);
    CHECK_EQ_INT(nlp_read_file(path, &d, &n), 0);
    CHECK(strncmp(d, "0\n1\n2\n", 6) == 0 && n == 588890);
    free(d);
    /* abort leaves the target untouched and no temp behind */
    CHECK_EQ_INT(nlp_writer_open(&w, path, 0), 0);
    nlp_writer_puts(w, "discard");
    nlp_writer_abort(w);
    CHECK_EQ_INT(nlp_read_file(path, &d, &n), 0);
    CHECK_EQ_INT(n, 588890);
    free(d);
    CHECK_EQ_INT(nlp_writer_open(&w, "/nonexistent/dir/x", 0), NLP_EIO);

    char **lines;
    size_t nl;
    CHECK_EQ_INT(nlp_read_lines(path, NLP_NL_LF, &lines, &nl), 0);
    CHECK_EQ_INT(nl, 100000);
    CHECK_STR(lines[99999], "99999");
    free(lines);

    nlp_map m;
    CHECK_EQ_INT(nlp_map_file(&m, path), 0);
    CHECK(m.mapped && m.len == 588890);
    nlp_unmap(&m);
}

/* A target that is not a regular file (a FIFO here; /dev/null, /dev/stdout
 * and the /dev/fd/N of a shell's >(...) alike) is written in place: a
 * temporary file renamed over it would replace the FIFO or device node with
 * a plain file (or fail where its directory is not writable). A directory is
 * refused when it is opened, not after all the output has been written. */
static void test_writer_special(void)
{
    char fifo[512], dir[512];
    snprintf(fifo, sizeof fifo, "%s/fifo", test_tmpdir());
    snprintf(dir, sizeof dir, "%s/adir", test_tmpdir());
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    /* our own reader end (O_RDWR does not block on Linux); non-blocking, so
     * that a FIFO replaced by a file fails the check instead of hanging */
    int rfd = open(fifo, O_RDWR | O_NONBLOCK);
    CHECK(rfd >= 0);
    nlp_writer *w;
    CHECK_EQ_INT(nlp_writer_open(&w, fifo, 0), 0);
    nlp_writer_puts(w, "through the fifo\n");
    CHECK_EQ_INT(nlp_writer_close(w), 0);
    char got[64] = "";
    ssize_t k = read(rfd, got, sizeof got - 1);
    CHECK_MSG(k == 17 && memcmp(got, "through the fifo\n", 17) == 0, "read %zd bytes: %s", k,
              k < 0 ? strerror(errno) : got);
    close(rfd);
    struct stat st;
    CHECK(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));

    CHECK_EQ_INT(mkdir(dir, 0700), 0);
    int rc = nlp_writer_open(&w, dir, 0);
    CHECK_EQ_INT(rc, NLP_EIO);
    if (rc == 0) nlp_writer_abort(w);
    else CHECK_MSG(strstr(nlp_errmsg(), "cannot create") && strstr(nlp_errmsg(), "adir"), "%s", nlp_errmsg());
}

/* Replacing an existing file keeps its permission bits: a private 0600
 * file must not come back 0644, nor an executable lose its x bits. A new
 * file gets 0666 & ~umask. */
static void test_writer_mode(void)
{
    char path[512], fresh[512];
    snprintf(path, sizeof path, "%s/private.txt", test_tmpdir());
    snprintf(fresh, sizeof fresh, "%s/fresh.txt", test_tmpdir());
    mode_t old = umask(022);
    write_raw(path, "old", 3);
    CHECK_EQ_INT(chmod(path, 0600), 0);
    CHECK_EQ_INT(nlp_write_file(path, "new", 3), 0);
    struct stat st;
    CHECK(stat(path, &st) == 0);
    CHECK_EQ_INT(st.st_mode & 07777, 0600);
    CHECK_EQ_INT(chmod(path, 0750), 0);
    CHECK_EQ_INT(nlp_write_file(path, "newer", 5), 0);
    CHECK(stat(path, &st) == 0);
    CHECK_EQ_INT(st.st_mode & 07777, 0750);
    CHECK_EQ_INT(nlp_write_file(fresh, "x", 1), 0);
    CHECK(stat(fresh, &st) == 0);
    CHECK_EQ_INT(st.st_mode & 07777, 0644);
    umask(old);
}

static void map_timeout(int sig)
{
    (void)sig;
    static const char m[] = "not ok test_map_fifo: nlp_map_file hung on a FIFO\n";
    if (write(1, m, sizeof m - 1)) _exit(1);
    _exit(1);
}

/* nlp_map_file on a FIFO (or any file it cannot map) reads what it opened:
 * closing and reopening made the writer die of SIGPIPE once the pipe was
 * full and left the reader waiting for a writer that never came. */
static void map_fifo_once(const char *fifo)
{
    enum { BIG = 300000 };
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        static char buf[BIG];
        memset(buf, 'x', sizeof buf);
        int fd = open(fifo, O_WRONLY); /* then write at once: the pipe fills while the reader looks */
        size_t done = 0;
        while (fd >= 0 && done < sizeof buf) {
            ssize_t k = write(fd, buf + done, sizeof buf - done);
            if (k <= 0) _exit(3);
            done += (size_t)k;
        }
        _exit(fd >= 0 ? 0 : 2);
    }
    signal(SIGALRM, map_timeout);
    alarm(20);
    nlp_map m;
    CHECK_EQ_INT(nlp_map_file(&m, fifo), 0);
    alarm(0);
    CHECK_EQ_INT(m.len, BIG);
    nlp_unmap(&m);
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer: %s %d", WIFSIGNALED(st) ? "signal" : "exit",
              WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/* The failure was a race (a few percent of runs lost it), hence the repeats. */
static void test_map_fifo(void)
{
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/mapfifo", test_tmpdir());
    CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
    for (int i = 0; i < 100; i++) map_fifo_once(fifo);
}

static void test_config(void)
{
    nlp_config c;
    const char *y = "# comment\nvocab-size: 32000\nlr: 3.0e-4\nspecial-tokens: [\"[CLS]\", \"[SEP]\"]\n"
                    "name: ~\nflag: yes\nlist:\n  - a\n  - b\n";
    CHECK_EQ_INT(nlp_config_parse(&c, y, strlen(y), "c.yaml"), 0);
    CHECK_EQ_INT(c.n, 6);
    CHECK_STR(nlp_config_get(&c, "vocab-size")->value, "32000");
    CHECK_EQ_INT(nlp_config_get(&c, "vocab-size")->line, 2);
    CHECK_STR(nlp_config_get(&c, "special-tokens")->value, "[CLS],[SEP]");
    CHECK(nlp_config_get(&c, "name")->value == NULL);
    CHECK_STR(nlp_config_get(&c, "list")->value, "a,b");
    CHECK_EQ_INT(nlp_parse_bool(nlp_config_get(&c, "flag")->value), 1);
    nlp_config_free(&c);

    const char *bad[] = {"a: [1, 2\n", "a:\n  b: 1\n", "- 1\n- 2\n", "a: 1\na: 2\n", "a: &x 1\nb: *x\n",
                         "a: b: c\n"};
    const char *why[] = {"line", "nested mappings", "found a list", "duplicate key 'a'", "aliases", "line 1"};
    for (int i = 0; i < 6; i++) {
        CHECK_MSG(nlp_config_parse(&c, bad[i], strlen(bad[i]), "bad.yaml") == NLP_EFORMAT, "case %d", i);
        CHECK_MSG(strstr(nlp_errmsg(), "'bad.yaml' line") && strstr(nlp_errmsg(), why[i]), "case %d: %s", i,
                  nlp_errmsg());
        nlp_config_free(&c);
    }
    CHECK_EQ_INT(nlp_config_parse(&c, "", 0, "empty.yaml"), 0);
    CHECK_EQ_INT(c.n, 0);
    nlp_config_free(&c);

    /* scalars written by nlp_yaml_scalar read back unchanged */
    const char *vals[] = {"plain", "", "true", "a: b", "#x", "  lead", "tab\there", "quote\"s", "[x]", "-", "-1.5",
                          "~", "ünï", "back\\slash", "x #y"};
    for (int i = 0; i < 15; i++) {
        nlp_buf b = {0};
        nlp_buf_puts(&b, "k: ");
        nlp_yaml_scalar(&b, vals[i]);
        nlp_buf_putc(&b, '\n');
        int rc = nlp_config_parse(&c, b.data, b.len, "rt.yaml");
        CHECK_MSG(rc == 0 && c.n == 1 && c.e[0].value && strcmp(c.e[0].value, vals[i]) == 0, "value '%s' as %s",
                  vals[i], b.data);
        nlp_config_free(&c);
        nlp_buf_free(&b);
    }
    /* characters YAML reads as line breaks (NEL, LS, PS) or refuses as
     * unprintable (C1 controls, U+FFFE, U+FFFF) must be escaped too */
    const char *uvals[] = {"\xc2\x85", "a\xe2\x80\xa8" "b", "a\xe2\x80\xa9", "\xc2\x80x", "x\xc2\x9f",
                           "\xef\xbf\xbe", "\xef\xbf\xbf", "ok\xc2\xa0\xe2\x80\xa7\xef\xbf\xbd"};
    for (size_t i = 0; i < sizeof uvals / sizeof *uvals; i++) {
        nlp_buf b = {0};
        nlp_buf_puts(&b, "k: ");
        nlp_yaml_scalar(&b, uvals[i]);
        nlp_buf_putc(&b, '\n');
        int rc = nlp_config_parse(&c, b.data, b.len, "rt.yaml");
        CHECK_MSG(rc == 0 && c.n == 1 && c.e[0].value && strcmp(c.e[0].value, uvals[i]) == 0, "value %zu as %s: %s", i,
                  b.data, rc ? nlp_errmsg() : "read back different");
        nlp_config_free(&c);
        nlp_buf_free(&b);
    }
}

static void test_rng(void)
{
    nlp_rng a, b;
    nlp_rng_seed(&a, 42);
    nlp_rng_seed(&b, 42);
    for (int i = 0; i < 100; i++) CHECK(nlp_rng_u64(&a) == nlp_rng_u64(&b));
    nlp_rng_seed(&b, 43);
    CHECK(nlp_rng_u64(&a) != nlp_rng_u64(&b));
    /* uniform and normal moments */
    double s = 0, s2 = 0, u = 0;
    int N = 200000, hist[10] = {0};
    for (int i = 0; i < N; i++) {
        double z = nlp_rng_normal(&a);
        s += z;
        s2 += z * z;
        double x = nlp_rng_double(&a);
        u += x;
        hist[nlp_rng_below(&a, 10)]++;
        if (x < 0 || x >= 1) CHECK(!"uniform out of [0,1)");
    }
    CHECK_NEAR(s / N, 0.0, 0.01);
    CHECK_NEAR(s2 / N, 1.0, 0.02);
    CHECK_NEAR(u / N, 0.5, 0.005);
    for (int i = 0; i < 10; i++) CHECK_NEAR(hist[i] / (double)N, 0.1, 0.005);
    /* jump gives a different stream; split is deterministic */
    nlp_rng c = a;
    nlp_rng_jump(&c);
    CHECK(nlp_rng_u64(&c) != nlp_rng_u64(&a));
    nlp_rng s1 = nlp_rng_split(&a, 1), s1b = nlp_rng_split(&a, 1), s2r = nlp_rng_split(&a, 2);
    CHECK(nlp_rng_u64(&s1) == nlp_rng_u64(&s1b));
    CHECK(s1b.s[0] != s2r.s[0]);
    /* a state of all zeros (only a corrupt saved one) stays zero: a draw
     * below n ends (biased) instead of rejecting for ever */
    nlp_rng z = {{0, 0, 0, 0}};
    CHECK(nlp_rng_below(&z, 3) < 3);
    CHECK(nlp_rng_below(&z, 1000003) < 1000003);
    CHECK(nlp_rng_below(&z, ((uint64_t)1 << 63) + 1) <= ((uint64_t)1 << 63));
}

static void test_strmap(void)
{
    nlp_strmap *m = nlp_strmap_new(4);
    char k[32];
    int putfail = 0;
    for (int i = 0; i < 50000; i++) {
        int n = snprintf(k, sizeof k, "k%d", i);
        putfail += nlp_strmap_put(m, k, (size_t)n, i * 3) != 0;
    }
    CHECK_EQ_INT(putfail, 0);
    CHECK_EQ_INT(nlp_strmap_size(m), 50000);
    int64_t v;
    int bad = 0;
    for (int i = 0; i < 50000; i++) {
        int n = snprintf(k, sizeof k, "k%d", i);
        if (!nlp_strmap_get(m, k, (size_t)n, &v) || v != i * 3) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(!nlp_strmap_get(m, "nope", 4, &v));
    /* keys with NUL bytes, insertion order */
    CHECK_EQ_INT(nlp_strmap_put(m, "a\0b", 3, 7), 0);
    CHECK(!nlp_strmap_get(m, "a", 1, &v));
    CHECK(nlp_strmap_get(m, "a\0b", 3, &v) && v == 7);
    size_t n;
    CHECK_STR(nlp_strmap_key(m, 0, &n), "k0");
    CHECK_EQ_INT(nlp_strmap_value(m, 50000), 7);
    int is_new;
    int64_t *slot = nlp_strmap_slot(m, "k5", 2, &is_new);
    CHECK(slot && !is_new && *slot == 15);
    nlp_strmap_free(m);
    CHECK(nlp_hash("abc", 3, 0) != nlp_hash("abd", 3, 0));
    CHECK(nlp_hash("abc", 3, 0) == nlp_hash("abc", 3, 0));
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_errors);
    RUN(test_buf_arena);
    RUN(test_reader);
    RUN(test_writer);
    RUN(test_writer_special);
    RUN(test_writer_mode);
    RUN(test_map_fifo);
    RUN(test_config);
    RUN(test_rng);
    RUN(test_strmap);
    return TEST_END();
}
