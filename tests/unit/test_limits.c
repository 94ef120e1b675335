/*
 * test_limits.c — what issue 15 asked of the library: bounded memory on any
 * stream (lines in parts, file size caps, TER's banded matrices), a set of
 * files replaced as one, stale temporaries removed, config keys checked as
 * they are read, and tokenizer and token-stream files refused when loaded.
 */
#include "base/config.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/rng.h"
#include "eval/ter.h"
#include "text/bytelevel.h"
#include "tok/bpe_train.h"
#include "tok/tokbin.h"
#include "tok/tokenizer.h"
#include "tok/tokfiles.h"
#include "tok/tokjson.h"
#include "tok/wordcount.h"
#include "tok/wordpiece_train.h"
#include "test.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>

static void put(const char *path, const char *s, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (n) fwrite(s, 1, n, f);
    fclose(f);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static char *slurp(const char *path)
{
    char *d = NULL;
    size_t n;
    return nlp_read_file(path, &d, &n) == 0 ? d : NULL;
}

// --- reader: long lines in parts

static void test_reader_parts(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/parts.txt", test_tmpdir());
    /* line 1: 10 bytes; line 2: 25 bytes; line 3: exactly 8; line 4: 17 without a newline */
    const char text[] = "0123456789\nabcdefghijklmnopqrstuvwxy\nABCDEFGH\nqwertyuiopasdfghj";
    put(path, text, sizeof text - 1);
    nlp_reader *r;
    CHECK(nlp_reader_open(&r, path) == 0);
    nlp_reader_set_max_line(r, 8);
    char *line;
    size_t len;
    /* expected parts: (line, text, partial, offset) */
    struct {
        int no;
        const char *s;
        int part;
        int off;
    } want[] = {
        {1, "01234567", 1, 0},  {1, "89", 0, 8},        {2, "abcdefgh", 1, 11}, {2, "ijklmnop", 1, 19},
        {2, "qrstuvwx", 1, 27}, {2, "y", 0, 35},        {3, "ABCDEFGH", 0, 37}, {4, "qwertyui", 1, 46},
        {4, "opasdfgh", 1, 54}, {4, "j", 0, 62},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        CHECK_EQ_INT(nlp_reader_line(r, &line, &len), 1);
        CHECK(len == strlen(want[i].s) && memcmp(line, want[i].s, len) == 0);
        CHECK_EQ_INT(line[len], 0); /* NUL-terminated in place, also a part */
        CHECK_EQ_INT(nlp_reader_lineno(r), want[i].no);
        CHECK_EQ_INT(nlp_reader_partial(r), want[i].part);
        CHECK_EQ_INT(nlp_reader_line_offset(r), want[i].off);
    }
    CHECK_EQ_INT(nlp_reader_line(r, &line, &len), 0);
    nlp_reader_close(r);

    /* a part's terminator does not eat the next byte, for raw reads either */
    CHECK(nlp_reader_open(&r, path) == 0);
    nlp_reader_set_max_line(r, 4);
    CHECK_EQ_INT(nlp_reader_line(r, &line, &len), 1);
    CHECK(len == 4 && memcmp(line, "0123", 4) == 0);
    char b[4];
    size_t got;
    CHECK(nlp_reader_read(r, b, 3, &got) == 0 && got == 3 && memcmp(b, "456", 3) == 0);
    const char *p;
    CHECK(nlp_reader_peek(r, 2, &p, &got) == 0 && got == 2 && memcmp(p, "78", 2) == 0);
    nlp_reader_close(r);

    /* universal newlines: CR LF and a lone CR end lines; a CR right after a part */
    put(path, "abcd\r\nefgh\rij", 13);
    CHECK(nlp_reader_open(&r, path) == 0);
    nlp_reader_set_newline(r, NLP_NL_UNIVERSAL);
    nlp_reader_set_max_line(r, 3);
    const char *ws[] = {"abc", "d", "efg", "h", "ij"};
    const int wp[] = {1, 0, 1, 0, 0};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(nlp_reader_line(r, &line, &len), 1);
        CHECK(len == strlen(ws[i]) && memcmp(line, ws[i], len) == 0);
        CHECK_EQ_INT(nlp_reader_partial(r), wp[i]);
    }
    CHECK_EQ_INT(nlp_reader_lineno(r), 3);
    CHECK_EQ_INT(nlp_reader_line(r, &line, &len), 0);
    nlp_reader_close(r);

    /* an endless line from a pipe: parts of max bytes, the memory bounded */
    int fd[2];
    CHECK(pipe(fd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        char z[65536];
        memset(z, 'z', sizeof z);
        for (int i = 0; i < 64; i++)
            if (write(fd[1], z, sizeof z) < 0) _exit(1);
        _exit(0);
    }
    close(fd[1]);
    CHECK(nlp_reader_from_fd(&r, fd[0], "pipe", 1) == 0);
    nlp_reader_set_max_line(r, 100000);
    size_t total = 0, parts = 0;
    while (nlp_reader_line(r, &line, &len) == 1) {
        total += len;
        parts++;
        if (nlp_reader_partial(r)) CHECK_EQ_INT(len, 100000);
    }
    CHECK_EQ_INT(total, 64 * 65536);
    CHECK_EQ_INT(parts, (64 * 65536 + 99999) / 100000);
    nlp_reader_close(r);
    waitpid(pid, NULL, 0);
}

// --- whole files with a size cap

static void test_file_caps(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cap.txt", test_tmpdir());
    put(path, "0123456789", 10);
    char *d;
    size_t n;
    CHECK(nlp_read_file_max(path, 10, &d, &n) == 0 && n == 10);
    free(d);
    CHECK_EQ_INT(nlp_read_file_max(path, 9, &d, &n), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "cap.txt': larger than 9 bytes") != NULL);
    nlp_map m;
    CHECK_EQ_INT(nlp_map_file_max(&m, path, 9), NLP_EFORMAT);
    CHECK(nlp_map_file_max(&m, path, 10) == 0 && m.len == 10);
    nlp_unmap(&m);
    /* a stream is cut off after the cap, not read to its end */
    int fd[2];
    CHECK(pipe(fd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        char z[65536] = {0};
        for (;;)
            if (write(fd[1], z, sizeof z) < 0) _exit(0); /* until the reader is gone */
    }
    close(fd[1]);
    char dev[64];
    snprintf(dev, sizeof dev, "/dev/fd/%d", fd[0]);
    CHECK_EQ_INT(nlp_map_file_max(&m, dev, (size_t)1 << 20), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "larger than 1048576 bytes") != NULL);
    close(fd[0]);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

// --- writers: a set replaced as one, stale temporaries

static void test_writer_set(void)
{
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/set-a.txt", test_tmpdir());
    snprintf(b, sizeof b, "%s/set-b.txt", test_tmpdir());
    put(a, "old a\n", 6);
    put(b, "old b\n", 6);
    nlp_writer *w[2];
    CHECK(nlp_writer_open(&w[0], a, 0) == 0 && nlp_writer_open(&w[1], b, 0) == 0);
    nlp_writer_puts(w[0], "new a\n");
    nlp_writer_puts(w[1], "new b\n");
    CHECK(nlp_writer_close_set(w, 2) == 0);
    char *x = slurp(a), *y = slurp(b);
    CHECK_STR(x, "new a\n");
    CHECK_STR(y, "new b\n");
    free(x), free(y);

    /* the second file of the set fails (a full disk: /dev/full): the first
     * target keeps its old content and no temporary is left */
    if (access("/dev/full", W_OK) == 0) {
        CHECK(nlp_writer_open(&w[0], a, 0) == 0 && nlp_writer_open(&w[1], "/dev/full", 0) == 0);
        nlp_writer_puts(w[0], "newer a\n");
        nlp_writer_puts(w[1], "anything\n");
        CHECK_EQ_INT(nlp_writer_close_set(w, 2), NLP_EIO);
        x = slurp(a);
        CHECK_STR(x, "new a\n");
        free(x);
        DIR *d = opendir(test_tmpdir());
        struct dirent *e;
        int tmps = 0;
        while ((e = readdir(d))) tmps += strstr(e->d_name, "set-a.txt.tmp.") != NULL;
        closedir(d);
        CHECK_EQ_INT(tmps, 0);
    }
}

static void test_stale_temps(void)
{
    char target[512], dead[600], live[600], other[600], odd[600];
    snprintf(target, sizeof target, "%s/stale.json", test_tmpdir());
    /* a process that is gone: a child that has exited and been reaped */
    pid_t gone = fork();
    if (gone == 0) _exit(0);
    waitpid(gone, NULL, 0);
    snprintf(dead, sizeof dead, "%s.tmp.%ld-7", target, (long)gone);
    snprintf(live, sizeof live, "%s.tmp.%ld-0", target, (long)getppid());
    snprintf(other, sizeof other, "%s/other.json.tmp.%ld-0", test_tmpdir(), (long)gone);
    snprintf(odd, sizeof odd, "%s.tmp.%ld-x", target, (long)gone);
    put(dead, "half", 4);
    put(live, "half", 4);
    put(other, "half", 4);
    put(odd, "half", 4);
    CHECK(nlp_write_file(target, "{}\n", 3) == 0);
    CHECK(!exists(dead));  /* its writer is gone: removed */
    CHECK(exists(live));   /* a live process's temporary: kept */
    CHECK(exists(other));  /* another target's: not this write's business */
    CHECK(exists(odd));    /* not a name the writer makes */
    unlink(live), unlink(other), unlink(odd);
}

// --- config files

static int no_x_keys(void *ctx, const char *key)
{
    (*(int *)ctx)++;
    if (key[0] == 'x') return nlp_error(NLP_EFORMAT, "unknown key '%s'", key);
    return NLP_OK;
}

static void test_config_keys(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/c.yaml", test_tmpdir());
    /* an unknown key is found where it is read, before a later syntax error */
    put(path, "a: 1\nxyz: 2\nb: [1, 2\n", 21);
    nlp_config c;
    int seen = 0;
    CHECK_EQ_INT(nlp_config_load_checked(&c, path, no_x_keys, &seen), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "c.yaml' line 2: unknown key 'xyz'") != NULL);
    CHECK_EQ_INT(seen, 2);
    nlp_config_free(&c);

    /* many keys: duplicates found through a hash, with their line */
    nlp_buf b = {0};
    for (int i = 0; i < 50000; i++) nlp_buf_printf(&b, "k%d: %d\n", i, i);
    nlp_buf_puts(&b, "k31337: again\n");
    CHECK_EQ_INT(nlp_config_parse(&c, b.data, b.len, "many.yaml"), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "'many.yaml' line 50001, column 1: duplicate key 'k31337'") != NULL);
    nlp_config_free(&c);
    b.len -= strlen("k31337: again\n");
    CHECK(nlp_config_parse(&c, b.data, b.len, "many.yaml") == 0);
    CHECK_EQ_INT(c.n, 50000);
    nlp_config_free(&c);
    nlp_buf_free(&b);

    /* lists keep their items */
    const char *y = "input: [a.txt, 'b, c.txt']\nmodel: m\nnone: []\n";
    CHECK(nlp_config_parse(&c, y, strlen(y), "l.yaml") == 0);
    const nlp_config_entry *e = nlp_config_get(&c, "input");
    CHECK(e && e->is_list && e->n_items == 2);
    if (e && e->n_items == 2) {
        CHECK_STR(e->items[0], "a.txt");
        CHECK_STR(e->items[1], "b, c.txt");
        CHECK_STR(e->value, "a.txt,b, c.txt");
    }
    e = nlp_config_get(&c, "model");
    CHECK(e && !e->is_list && !e->items);
    e = nlp_config_get(&c, "none");
    CHECK(e && e->is_list && e->n_items == 0);
    nlp_config_free(&c);

    /* a file larger than NLP_CONFIG_MAX_BYTES is refused */
    nlp_buf big = {0};
    while (big.len <= NLP_CONFIG_MAX_BYTES) nlp_buf_puts(&big, "# a comment line of a config file\n");
    put(path, big.data, big.len);
    nlp_buf_free(&big);
    CHECK_EQ_INT(nlp_config_load(&c, path), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "larger than 1048576 bytes") != NULL);
    nlp_config_free(&c);
}

// --- token streams

static int open_stream(const char *path, const unsigned char *d, size_t n, nlp_reader **r, nlp_tokbin_reader **br)
{
    put(path, (const char *)d, n);
    if (nlp_reader_open(r, path)) return -1;
    int rc = nlp_tokbin_reader_new(br, *r, 0);
    if (rc) nlp_reader_close(*r);
    return rc;
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void test_tokbin_checks(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/s.bin", test_tmpdir());
    unsigned char h[44] = {'N', 'L', 'T', 'K'};
    put32(h + 4, 1), put32(h + 8, 4), put32(h + 12, 300), put32(h + 16, 300);
    put32(h + 32, 5), put32(h + 36, 299), put32(h + 40, 7);
    nlp_reader *r;
    nlp_tokbin_reader *br;
    /* the end-of-text id must be below the header's own vocabulary size */
    CHECK_EQ_INT(open_stream(path, h, sizeof h, &r, &br), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "byte 16: end-of-text id 300 is not below the vocabulary size 300") != NULL);
    put32(h + 12, 0);
    CHECK_EQ_INT(open_stream(path, h, sizeof h, &r, &br), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "byte 12: vocabulary size 0") != NULL);
    /* a reader's own limit: the byte of the first id past it */
    put32(h + 12, 300), put32(h + 16, 0xFFFFFFFF);
    CHECK(open_stream(path, h, sizeof h, &r, &br) == 0);
    nlp_tokbin_reader_limit(br, 200, "tok.json");
    nlp_ids ids = {0};
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "byte 36: id 299 is not below the vocabulary size 200 of 'tok.json'") != NULL);
    nlp_tokbin_reader_free(br);
    nlp_reader_close(r);
    /* an llm.c shard (uint32 ids): 0xFFFFFFFF is no id, not -1 */
    unsigned char l[1024 + 12] = {0};
    put32(l, NLP_LLMC_MAGIC_LLAMA3), put32(l + 4, 7), put32(l + 8, 3);
    put32(l + 1024, 5), put32(l + 1028, 0xFFFFFFFF), put32(l + 1032, 7);
    CHECK(open_stream(path, l, sizeof l, &r, &br) == 0);
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "byte 1028: id 4294967295 is not below") != NULL);
    nlp_tokbin_reader_free(br);
    nlp_reader_close(r);
    nlp_ids_free(&ids);
}

// --- tokenizers: cutting long texts, refusing bad files at load

/* A tokenizer trained on text with pipeline `kind` (specials for BERT). */
static nlp_tokenizer *trained(nlp_tok_pipeline kind, const char *path)
{
    nlp_tok_spec s = {0};
    nlp_tok_spec_pipeline(&s, kind, kind == NLP_PIPE_WHITESPACE ? "</w>" : NULL);
    nlp_wordcount *wc = nlp_wordcount_new();
    nlp_wordcount_opts wo = {.norm = s.norm, .n_norm = s.n_norm, .pretok = s.pretok, .n_pretok = s.n_pretok,
                             .threads = 1};
    nlp_wordcount_stats ws = {0};
    const char *paths[] = {path};
    CHECK(nlp_wordcount_files(wc, paths, 1, &wo, &ws) == 0);
    int rc;
    if (kind == NLP_PIPE_BERT) {
        const char *sp[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]"};
        nlp_wordpiece_train_opts o = {.vocab_size = 300, .specials = sp, .n_specials = 4, .unk_token = "[UNK]",
                                      .prefix = "##", .threads = 1};
        rc = nlp_wordpiece_train(wc, &o, &s, NULL);
        if (!rc) rc = nlp_tok_spec_bert_post(&s, "[CLS]", "[SEP]") < 0;
    } else {
        const char *sp[] = {"<|endoftext|>"};
        nlp_bpe_train_opts o = {.vocab_size = 400, .byte_level = kind == NLP_PIPE_BYTELEVEL, .byte_alphabet = 1,
                                .specials = sp, .n_specials = 1, .threads = 1,
                                .end_of_word_suffix = kind == NLP_PIPE_WHITESPACE ? "</w>" : NULL};
        rc = nlp_bpe_train(wc, &o, &s, NULL);
    }
    CHECK_EQ_INT(rc, 0);
    nlp_wordcount_free(wc);
    nlp_tokenizer *tk = NULL;
    CHECK(nlp_tokenizer_new(&tk, &s) == 0);
    if (!tk) nlp_tok_spec_free(&s);
    return tk;
}

/* Random text of n bytes (well-formed UTF-8) from pieces that stress the
 * places a cut could go wrong: runs of spaces, tabs, no-break spaces, CJK,
 * accents, contractions, punctuation, special tokens. */
static void random_text(nlp_rng *r, size_t n, nlp_buf *out)
{
    static const char *const bits[] = {"low", "lower", "new", "est", " ", " ", " ", "  ", "   ", "\t", " \t ",
                                       "\xc2\xa0", "\xe3\x80\x80", "\xe6\x9d\xb1\xe4\xba\xac", "caf\xc3\xa9",
                                       "Stra\xc3\x9f" "e", "'s", "'ll", "n't", "!!", ", ", ".", "123", "4.5",
                                       "<|endoftext|>", "[CLS]", "\xcc\x81", "\xce\xa3", "x"};
    nlp_buf_reset(out);
    while (out->len < n) nlp_buf_puts(out, bits[nlp_rng_below(r, sizeof bits / sizeof *bits)]);
}

/* The ids of s encoded in pieces: parts of random size, each encoded up to
 * its last cut point, the rest carried to the next part (as tokenize does). */
static void encode_cut(const nlp_tokenizer *tk, nlp_tok_state *st, nlp_rng *r, const char *s, size_t n, nlp_ids *out)
{
    size_t start = 0, end = 0;
    out->n = 0;
    while (start < n) {
        end += 1 + nlp_rng_below(r, 40);
        if (end >= n) end = n;
        size_t cut = end < n ? nlp_tokenizer_cut(s + start, end - start) : end - start;
        if (cut == 0) continue;
        nlp_tokenizer_encode_ids(tk, st, s + start, cut, 0, out);
        start += cut;
    }
}

static void test_cut_equivalence(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/train.txt", test_tmpdir());
    nlp_rng r;
    nlp_rng_seed(&r, 15);
    nlp_buf text = {0}, all = {0};
    for (int i = 0; i < 400; i++) {
        random_text(&r, 60, &text);
        nlp_buf_append(&all, text.data, text.len);
        nlp_buf_putc(&all, '\n');
    }
    put(path, all.data, all.len);
    nlp_tok_pipeline kinds[3] = {NLP_PIPE_BYTELEVEL, NLP_PIPE_WHITESPACE, NLP_PIPE_BERT};
    for (int k = 0; k < 3; k++) {
        nlp_tokenizer *tk = trained(kinds[k], path);
        if (!tk) continue;
        CHECK(nlp_tokenizer_cuttable(tk));
        nlp_tok_state *st = nlp_tok_state_new(tk);
        nlp_ids whole = {0}, cut = {0};
        int same = 1;
        for (int t = 0; t < 300 && same; t++) {
            random_text(&r, 50 + nlp_rng_below(&r, 600), &text);
            whole.n = 0;
            nlp_tokenizer_encode_ids(tk, st, text.data, text.len, 0, &whole);
            encode_cut(tk, st, &r, text.data, text.len, &cut);
            same = whole.n == cut.n && memcmp(whole.v, cut.v, whole.n * sizeof *whole.v) == 0;
            CHECK_MSG(same, "pipeline %d: text '%s' differs when cut", k, text.data);
        }
        nlp_ids_free(&whole);
        nlp_ids_free(&cut);
        nlp_tok_state_free(st);
        nlp_tokenizer_free(tk);
    }
    nlp_buf_free(&text);
    nlp_buf_free(&all);

    /* the places: a space after a non-space character */
    CHECK_EQ_INT(nlp_tokenizer_cut("ab cd ef", 8), 5);
    CHECK_EQ_INT(nlp_tokenizer_cut("ab  cd", 6), 2);              /* the first space of a run */
    CHECK_EQ_INT(nlp_tokenizer_cut("abcdef", 6), 0);
    CHECK_EQ_INT(nlp_tokenizer_cut(" abc", 4), 0);                /* nothing before it */
    CHECK_EQ_INT(nlp_tokenizer_cut("a\xc2\xa0 b", 5), 0);         /* after a no-break space: white space */
    CHECK_EQ_INT(nlp_tokenizer_cut("\xe6\x9d\xb1 b", 5), 3);      /* after a CJK character */
    CHECK_EQ_INT(nlp_tokenizer_cut("a\tb c", 5), 3);
}

/* The spec of a small byte-level BPE with one step changed. */
static int cuttable_with(void (*change)(nlp_tok_spec *))
{
    nlp_tok_spec s = {0};
    nlp_tok_spec_pipeline(&s, NLP_PIPE_BYTELEVEL, NULL);
    s.model = NLP_MODEL_BPE;
    s.vocab = nlp_vocab_new(300);
    for (int c = 0; c < 256; c++) {
        nlp_buf b = {0};
        nlp_bytelevel_encode((const char *)&(unsigned char){(unsigned char)c}, 1, &b);
        nlp_vocab_add(s.vocab, b.data, b.len, NULL);
        nlp_buf_free(&b);
    }
    change(&s);
    nlp_tokenizer *tk;
    if (nlp_tokenizer_new(&tk, &s)) {
        nlp_tok_spec_free(&s);
        return -1;
    }
    int yes = nlp_tokenizer_cuttable(tk);
    nlp_tokenizer_free(tk);
    return yes;
}

static void no_change(nlp_tok_spec *s) { (void)s; }
static void no_regex(nlp_tok_spec *s) { s->pretok[0].use_regex = 0; }
static void prepend(nlp_tok_spec *s)
{
    s->norm = nlp_calloc(1, sizeof *s->norm);
    s->norm[0].type = NLP_NORM_STEP_PREPEND;
    s->norm[0].a = nlp_strdup("_");
    s->n_norm = 1;
}
static void strip_accents(nlp_tok_spec *s)
{
    s->norm = nlp_calloc(1, sizeof *s->norm);
    s->norm[0].type = NLP_NORM_STEP_STRIP_ACCENTS;
    s->n_norm = 1;
}
static void nfc(nlp_tok_spec *s)
{
    s->norm = nlp_calloc(1, sizeof *s->norm);
    s->norm[0].type = NLP_NORM_STEP_NFC;
    s->n_norm = 1;
}
static void added(nlp_tok_spec *s, const char *content, int rstrip)
{
    s->added = nlp_calloc(1, sizeof *s->added);
    s->added[0].content = nlp_strdup(content);
    s->added[0].id = 256;
    s->added[0].special = 1;
    s->added[0].rstrip = rstrip;
    s->n_added = 1;
}
static void added_rstrip(nlp_tok_spec *s) { added(s, "<s>", 1); }
static void added_space(nlp_tok_spec *s) { added(s, "a b", 0); }
static void added_plain(nlp_tok_spec *s) { added(s, "<s>", 0); }

static void test_cuttable(void)
{
    CHECK_EQ_INT(cuttable_with(no_change), 1);
    CHECK_EQ_INT(cuttable_with(nfc), 1);
    CHECK_EQ_INT(cuttable_with(added_plain), 1);
    CHECK_EQ_INT(cuttable_with(no_regex), 0);       /* the whole text is one word */
    CHECK_EQ_INT(cuttable_with(prepend), 0);        /* looks at the text's start */
    CHECK_EQ_INT(cuttable_with(strip_accents), 0);  /* may leave white space at a piece's end */
    CHECK_EQ_INT(cuttable_with(added_rstrip), 0);   /* eats the space after it */
    CHECK_EQ_INT(cuttable_with(added_space), 0);    /* holds white space */
}

static void test_load_checks(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/t.json", test_tmpdir());
    nlp_tokenizer *tk;
    /* a template naming an id past the vocabulary */
    const char *post = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"<s>\": 1}, \"merges\": []},"
                       " \"post_processor\": {\"type\": \"TemplateProcessing\","
                       " \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}},"
                       " {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [],"
                       " \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [99999999], \"tokens\": [\"<s>\"]}}}}";
    put(path, post, strlen(post));
    CHECK_EQ_INT(nlp_tokfiles_load(path, NULL, &tk), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "special token '<s>' has id 99999999, which is not in the vocabulary") != NULL);
    /* a byte-order mark before the JSON */
    const char *bom = "\xef\xbb\xbf{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}";
    put(path, bom, strlen(bom));
    CHECK(nlp_tokfiles_load(path, NULL, &tk) == 0);
    nlp_tokenizer_free(tk);
    /* JSON that is no tokenizer, in a file named *.json */
    const char *notok[] = {"null", "[]", "1e999999", "\"x\"", "42"};
    for (int i = 0; i < 5; i++) {
        put(path, notok[i], strlen(notok[i]));
        CHECK_EQ_INT(nlp_tokfiles_load(path, NULL, &tk), NLP_EFORMAT);
    }
    /* an empty added token */
    const char *empty = "{\"added_tokens\": [{\"id\": 1, \"content\": \"\"}],"
                        " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}";
    put(path, empty, strlen(empty));
    CHECK_EQ_INT(nlp_tokfiles_load(path, NULL, &tk), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "added_tokens[0]: 'content' is empty") != NULL);
    /* the file size cap */
    CHECK(NLP_TOKFILE_MAX_BYTES == (size_t)256 << 20);
}

// --- TER

static void test_ter_bounds(void)
{
    nlp_ter_params p = {0};
    nlp_ter *t = nlp_ter_new(&p);
    /* 10,000 words each way: accepted (banded matrices: memory linear) */
    nlp_buf h = {0}, r = {0};
    for (int i = 0; i < NLP_TER_MAX_WORDS; i++) {
        nlp_buf_printf(&h, "w%d ", i % 97);
        nlp_buf_printf(&r, "w%d ", i % 97);
    }
    const char *refs[1] = {r.data};
    size_t lens[1] = {r.len};
    double st[2];
    CHECK(nlp_ter_segment(t, h.data, h.len, refs, lens, 1, st) == 0);
    CHECK(st[0] == 0 && st[1] == NLP_TER_MAX_WORDS);
    /* one more is refused, naming the side */
    nlp_buf_puts(&h, "extra");
    CHECK_EQ_INT(nlp_ter_segment(t, h.data, h.len, refs, lens, 1, st), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "the hypothesis has 10001 words, more than the 10000 that TER takes") != NULL);
    refs[0] = h.data, lens[0] = h.len;
    CHECK_EQ_INT(nlp_ter_segment(t, "a b", 3, refs, lens, 1, st), NLP_EDATA);
    CHECK(strstr(nlp_errmsg(), "reference 1 has 10001 words") != NULL);
    nlp_buf_free(&h);
    nlp_buf_free(&r);
    nlp_ter_free(t);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_reader_parts);
    RUN(test_file_caps);
    RUN(test_writer_set);
    RUN(test_stale_temps);
    RUN(test_config_keys);
    RUN(test_tokbin_checks);
    RUN(test_cut_equivalence);
    RUN(test_cuttable);
    RUN(test_load_checks);
    RUN(test_ter_bounds);
    return TEST_END();
}
