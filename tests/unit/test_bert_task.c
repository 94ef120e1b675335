/*
 * test_bert_task.c — the BERT pretraining task (lib/train/bert): documents
 * and sentences read from text (blocks or one document per line) and from
 * token streams; over many drawn examples the layout [CLS] A [SEP] B [SEP]
 * with its segments, mask and padding, A and B being the sentences the
 * example says (real next: consecutive in one document; random: two
 * documents), BERT's truncation, the NSP labels half and half, the MLM
 * share (round(15%) of the non-special tokens) and the 80/10/10 split,
 * special tokens never chosen nor drawn; the same batches from the same
 * generator, and the same after get_state/set_state; a fixed validation
 * that does not depend on the batch size.
 */
#include "base/err.h"
#include "base/io.h"
#include "base/rng.h"
#include "model/config.h"
#include "model/model.h"
#include "tok/tokbin.h"
#include "tok/tokfiles.h"
#include "train/bert.h"
#include "test.h"

#include <fcntl.h>

#define NDOC 8
#define WORDS 60 /* words per document in the vocabulary: d<k>w<j> */

static nlp_tokenizer *tk;
static char vocab_path[512];
static int32_t id_pad, id_unk, id_cls, id_sep, id_mask;

static const char *const extra_words[] = {".", "!", "?", "(", ")", ",", "3", "5", "version", "example", "org",
                                          "is", "out", "next", "see", "x", "foo", "c", "you", "of", "[", "]", "sep",
                                          "\xe4\xbd\xa0",
                                          "\xe5\xa5\xbd", "\xe5\x86\x8d", "\xe8\xa7\x81", "\xe3\x80\x82", NULL};

/* Writes a vocab.txt (the specials first, unless one is left out) and loads it. */
static nlp_tokenizer *load_vocab(const char *path, const char *leave_out)
{
    FILE *f = fopen(path, "w");
    if (!f) return NULL;
    const char *sp[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (int i = 0; i < 5; i++)
        if (!leave_out || strcmp(sp[i], leave_out) != 0) fprintf(f, "%s\n", sp[i]);
    for (int i = 0; extra_words[i]; i++) fprintf(f, "%s\n", extra_words[i]);
    for (int k = 0; k < NDOC; k++)
        for (int j = 0; j < WORDS; j++) fprintf(f, "d%dw%d\n", k, j);
    fclose(f);
    nlp_tokenizer *t = NULL;
    if (nlp_tokfiles_load(path, NULL, &t)) return NULL;
    return t;
}

static int32_t id_of(const char *s)
{
    return nlp_tokenizer_token_to_id(tk, s, strlen(s));
}

static void setup(void)
{
    snprintf(vocab_path, sizeof vocab_path, "%s/vocab.txt", test_tmpdir());
    tk = load_vocab(vocab_path, NULL);
    CHECK(tk != NULL);
    if (!tk) exit(1);
    id_pad = id_of("[PAD]"), id_unk = id_of("[UNK]"), id_cls = id_of("[CLS]");
    id_sep = id_of("[SEP]"), id_mask = id_of("[MASK]");
}

static int is_special_id(int32_t id)
{
    return id == id_pad || id == id_unk || id == id_cls || id == id_sep || id == id_mask;
}

/* The document a word belongs to (-1 for punctuation and other words). */
static int word_doc(int32_t id)
{
    const char *s = nlp_tokenizer_id_to_token(tk, id, NULL);
    int k, j;
    if (s && sscanf(s, "d%dw%d", &k, &j) == 2) return k;
    return -1;
}

/* The synthetic corpus, one document per line: documents 0 and 1 have one
 * sentence (1's longer than T), the others 2..7 sentences of 1..9 words
 * ending in '.', '!' or '?'; "zzz" (not in the vocabulary: [UNK]) here and
 * there. Every word is its document's. */
static char *corpus_text(size_t *len)
{
    nlp_buf b = {0};
    nlp_rng r;
    nlp_rng_seed(&r, 7);
    const char *ends[] = {".", "!", "?"};
    for (int k = 0; k < NDOC; k++) {
        int w = 0, ns = k < 2 ? 1 : k;
        for (int s = 0; s < ns; s++) {
            int nw = k == 1 ? 40 : 1 + (int)nlp_rng_below(&r, 9);
            for (int j = 0; j < nw && w < WORDS; j++) {
                nlp_buf_printf(&b, "%sd%dw%d", b.len && b.data[b.len - 1] != '\n' ? " " : "", k, w++);
                if ((k == 3 || k == 5) && j == 1) nlp_buf_puts(&b, " zzz");
            }
            nlp_buf_printf(&b, " %s", ends[(k + s) % 3]);
        }
        nlp_buf_putc(&b, '\n');
    }
    return nlp_buf_detach(&b, len);
}

static int read_corpus(nlp_bert_docs *d)
{
    size_t len;
    char *text = corpus_text(&len);
    int rc = nlp_bert_docs_add_text(d, text, len, "corpus", tk, 2);
    free(text);
    return rc;
}

// --- reading

/* The sentences of d as "w w w|w w||w" (| between sentences, || between documents). */
static const char *layout(const nlp_bert_docs *d)
{
    static char out[2048];
    size_t at = 0;
    out[0] = 0;
    for (size_t k = 0; k < d->ndoc; k++)
        for (size_t s = d->doc[k]; s < d->doc[k + 1]; s++) {
            if (s > 0) at += (size_t)snprintf(out + at, sizeof out - at, s == d->doc[k] ? "||" : "|");
            for (size_t i = d->sent[s]; i < d->sent[s + 1]; i++) {
                const char *t = nlp_tokenizer_id_to_token(tk, d->ids[i], NULL);
                at += (size_t)snprintf(out + at, sizeof out - at, "%s%s", i > d->sent[s] ? " " : "", t ? t : "?");
            }
        }
    return out;
}

static const char *read_text(const char *text)
{
    static char out[2048];
    nlp_bert_docs d = {0};
    int rc = nlp_bert_docs_add_text(&d, text, strlen(text), "t.txt", tk, 1);
    snprintf(out, sizeof out, "%s", rc ? "error" : layout(&d));
    nlp_bert_docs_free(&d);
    return out;
}

static void test_read_text(void)
{
    /* one document per line */
    CHECK_STR(read_text("see x. foo!\nyou\n"), "see x .|foo !||you");
    /* blank lines (white space only counts) make blocks; each line ends a sentence */
    CHECK_STR(read_text("see x. foo!\nyou\n \t\nnext? out\n"), "see x .|foo !|you||next ?|out");
    CHECK_STR(read_text("see x\nfoo\r\n\r\n\r\nyou\r\n"), "see x|foo||you");
    /* blank lines only at the ends do not make blocks */
    CHECK_STR(read_text("\n\nsee x\nfoo\n\n"), "see x||foo");
    /* a mark ends a sentence only before white space and more text */
    CHECK_STR(read_text("version 3.5 of example.org is out. next\n"),
              "version 3 . 5 of example . org is out .|next");
    CHECK_STR(read_text("see x.  \n"), "see x .");
    CHECK_STR(read_text("see x.foo. you\n"), "see x . foo .|you");
    /* closing brackets and quotes stay with their sentence */
    CHECK_STR(read_text("(see x.) you\n"), "( see x . )|you");
    /* full-width marks need no white space */
    CHECK_STR(read_text("\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82\xe5\x86\x8d\xe8\xa7\x81\n"),
              "\xe4\xbd\xa0 \xe5\xa5\xbd \xe3\x80\x82|\xe5\x86\x8d \xe8\xa7\x81");
    /* special-token text is plain text; lines of nothing are no documents */
    CHECK_STR(read_text("[SEP] x\n\n"), "[ sep ] x");
    CHECK_STR(read_text(""), "");
    /* documents from two inputs follow each other; counts */
    nlp_bert_docs d = {0};
    CHECK_EQ_INT(nlp_bert_docs_add_text(&d, "see x. you\n", 11, "a", tk, 1), 0);
    CHECK_EQ_INT(nlp_bert_docs_add_text(&d, "foo\n\xff out\n", 10, "b", tk, 3), 0);
    CHECK_STR(layout(&d), "see x .|you||foo||out"); /* U+FFFD: BERT's normalizer drops it */
    CHECK_EQ_INT(d.ndoc, 3);
    CHECK_EQ_INT(d.nsent, 4);
    CHECK_EQ_INT(d.n, 6);
    CHECK_EQ_INT(d.lines, 3);
    CHECK_EQ_INT(d.repaired, 1);
    nlp_bert_docs_free(&d);
    /* the synthetic corpus: the same whatever the thread count */
    nlp_bert_docs a = {0}, b = {0};
    size_t len;
    char *text = corpus_text(&len);
    CHECK_EQ_INT(nlp_bert_docs_add_text(&a, text, len, "c", tk, 1), 0);
    CHECK_EQ_INT(nlp_bert_docs_add_text(&b, text, len, "c", tk, 4), 0);
    free(text);
    CHECK_EQ_INT(a.ndoc, NDOC);
    CHECK_EQ_INT(a.nsent, 2 + 2 + 3 + 4 + 5 + 6 + 7);
    CHECK(a.n == b.n && a.nsent == b.nsent && a.ndoc == b.ndoc && memcmp(a.ids, b.ids, a.n * 4) == 0 &&
          memcmp(a.sent, b.sent, (a.nsent + 1) * sizeof *a.sent) == 0);
    nlp_bert_docs_free(&a);
    nlp_bert_docs_free(&b);
    /* a file, and a missing one */
    char p[600];
    snprintf(p, sizeof p, "%s/docs.txt", test_tmpdir());
    CHECK_EQ_INT(nlp_write_file(p, "see x\n\nfoo. you\n", 16), 0);
    CHECK_EQ_INT(nlp_bert_docs_add(&d, p, tk, 1), 0);
    CHECK_STR(layout(&d), "see x||foo .|you");
    nlp_bert_docs_free(&d);
    snprintf(p, sizeof p, "%s/absent.txt", test_tmpdir());
    CHECK_EQ_INT(nlp_bert_docs_add(&d, p, tk, 1), NLP_EIO);
}

/* A token stream of the documents "see x . foo ! you", "version 3 . 5 [CLS]"
 * and an empty one. */
static void test_read_stream(void)
{
    char p[600];
    snprintf(p, sizeof p, "%s/docs.bin", test_tmpdir());
    nlp_writer *w = NULL;
    nlp_tokbin_writer *bw = NULL;
    CHECK_EQ_INT(nlp_writer_open(&w, p, 0), 0);
    CHECK_EQ_INT(nlp_tokbin_writer_new(&bw, w, (uint32_t)nlp_tokenizer_vocab_size(tk), id_sep), 0);
    int32_t d1[] = {id_of("see"), id_of("x"), id_of("."), id_of("foo"), id_of("!"), id_of("you")};
    int32_t d2[] = {id_of("version"), id_of("3"), id_of("."), id_of("5"), id_cls};
    CHECK_EQ_INT(nlp_tokbin_write_doc(bw, d1, 6), 0);
    CHECK_EQ_INT(nlp_tokbin_write_doc(bw, d2, 5), 0);
    CHECK_EQ_INT(nlp_tokbin_write_doc(bw, d2, 0), 0);
    nlp_tokbin_writer_free(bw);
    CHECK_EQ_INT(nlp_writer_close(w), 0);
    nlp_bert_docs d = {0};
    CHECK_EQ_INT(nlp_bert_docs_add(&d, p, tk, 1), 0);
    /* WordPiece pieces do not carry white space: "3 . 5" is cut too */
    CHECK_STR(layout(&d), "see x .|foo !|you||version 3 .|5");
    CHECK_EQ_INT(d.dropped, 1);
    nlp_bert_docs_free(&d);

    /* an id beyond the tokenizer's vocabulary: an error naming it, d unchanged */
    CHECK_EQ_INT(nlp_writer_open(&w, p, 0), 0);
    CHECK_EQ_INT(nlp_tokbin_writer_new(&bw, w, 60000, -1), 0);
    int32_t d3[] = {id_of("see"), 59999};
    CHECK_EQ_INT(nlp_tokbin_write_doc(bw, d3, 2), 0);
    nlp_tokbin_writer_free(bw);
    CHECK_EQ_INT(nlp_writer_close(w), 0);
    CHECK_EQ_INT(nlp_bert_docs_add_text(&d, "see x\n", 6, "a", tk, 1), 0);
    CHECK_EQ_INT(nlp_bert_docs_add(&d, p, tk, 1), NLP_EDATA);
    CHECK_MSG(strstr(nlp_errmsg(), "docs.bin") && strstr(nlp_errmsg(), "vocabulary"), "%s", nlp_errmsg());
    CHECK_EQ_INT(d.ndoc, 1);
    CHECK_EQ_INT(d.n, 2);
    nlp_bert_docs_free(&d);

    /* a corrupt stream: an id its own header does not admit */
    unsigned char raw[32 + 8] = {'N', 'L', 'T', 'K', 1, 0, 0, 0, 4, 0, 0, 0};
    uint32_t V = (uint32_t)nlp_tokenizer_vocab_size(tk), big = V + 7, none = 0xFFFFFFFFu, see = (uint32_t)id_of("see");
    memcpy(raw + 12, &V, 4), memcpy(raw + 16, &none, 4), memcpy(raw + 32, &see, 4), memcpy(raw + 36, &big, 4);
    CHECK_EQ_INT(nlp_write_file(p, raw, sizeof raw), 0);
    CHECK_EQ_INT(nlp_bert_docs_add(&d, p, tk, 1), NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "docs.bin"), "%s", nlp_errmsg());
    CHECK_EQ_INT(d.ndoc, 0);
    nlp_bert_docs_free(&d);
}

/* The same documents through a cache (built a few lines at a time, then
 * mapped) as read into memory: text in blocks of lines that a small block
 * size cuts (a document of several lines across blocks), a stream, both
 * inputs in one cache; reused; remade when a text changes; a damaged cache
 * not used; memory held none. */
static void test_cache(void)
{
    char t1[600], t2[600], dir[600];
    snprintf(t1, sizeof t1, "%s/c1.txt", test_tmpdir());
    snprintf(t2, sizeof t2, "%s/c2.bin", test_tmpdir());
    snprintf(dir, sizeof dir, "%s/run/data", test_tmpdir());
    nlp_buf b = {0};
    for (int k = 0; k < 40; k++) {
        nlp_buf_printf(&b, "d%dw0 d%dw1 . d%dw2 !\n", k % NDOC, k % NDOC, k % NDOC);
        if (k % 3 == 0) nlp_buf_printf(&b, "version 3 . 5 ( see x . ) foo\n");
        if (k % 3 == 2) nlp_buf_puts(&b, "\n");
    }
    CHECK_EQ_INT(nlp_write_file(t1, b.data, b.len), 0);
    nlp_writer *w = NULL;
    nlp_tokbin_writer *bw = NULL;
    CHECK_EQ_INT(nlp_writer_open(&w, t2, 0), 0);
    CHECK_EQ_INT(nlp_tokbin_writer_new(&bw, w, (uint32_t)nlp_tokenizer_vocab_size(tk), id_sep), 0);
    int32_t d1[] = {id_of("see"), id_of("x"), id_of("."), id_of("foo"), id_of("!"), id_of("you")};
    CHECK_EQ_INT(nlp_tokbin_write_doc(bw, d1, 6), 0);
    CHECK_EQ_INT(nlp_tokbin_write_doc(bw, d1, 3), 0);
    nlp_tokbin_writer_free(bw);
    CHECK_EQ_INT(nlp_writer_close(w), 0);
    nlp_bert_docs m = {0}, c = {0};
    CHECK_EQ_INT(nlp_bert_docs_add(&m, t1, tk, 2), 0);
    CHECK_EQ_INT(nlp_bert_docs_add(&m, t2, tk, 2), 0);
    CHECK(m.ndoc > 10);
    const char *in[2] = {t1, t2};
    int built = 9;
    nlp_text_blocks_set_size(64);
    CHECK_EQ_INT(nlp_bert_docs_add_cached(&c, in, 2, tk, 2, dir, 1, &built), 0); /* dry: nothing made */
    CHECK_EQ_INT(built, -1);
    CHECK_EQ_INT(c.ndoc, 0);
    for (int round = 0; round < 2; round++) {
        int rc = nlp_bert_docs_add_cached(&c, in, 2, tk, 2, dir, 0, &built);
        CHECK_MSG(rc == 0, "%d %s", rc, nlp_errmsg());
        CHECK_EQ_INT(built, round == 0);
        CHECK(c.map.data != NULL);
        CHECK_EQ_INT(nlp_bert_docs_memory(&c), 0);
        CHECK_EQ_INT(c.n, m.n);
        CHECK_EQ_INT(c.nsent, m.nsent);
        CHECK_EQ_INT(c.ndoc, m.ndoc);
        CHECK_EQ_INT(c.lines, m.lines);
        CHECK_EQ_INT(c.dropped, m.dropped);
        if (c.n == m.n && c.nsent == m.nsent && c.ndoc == m.ndoc) {
            CHECK(memcmp(c.ids, m.ids, m.n * sizeof *m.ids) == 0);
            CHECK(memcmp(c.sent, m.sent, (m.nsent + 1) * sizeof *m.sent) == 0);
            CHECK(memcmp(c.doc, m.doc, (m.ndoc + 1) * sizeof *m.doc) == 0);
        }
        CHECK_STR(layout(&c), layout(&m));
        nlp_bert_docs_free(&c);
    }
    nlp_text_blocks_set_size(0);
    /* a damaged cache (an offset past the ids) is not used: made anew */
    char name[4400];
    uint64_t key = 1469598103934665603ull, pk = key, k1, p1;
    for (size_t i = 0; i < 2; i++) {
        CHECK_EQ_INT(nlp_cache_key(in[i], tk, 0x424552540001ull + i, &k1, &p1), 0);
        key = (key ^ k1) * 1099511628211ull, pk = (pk ^ p1) * 1099511628211ull;
    }
    nlp_cache_name(name, sizeof name, dir, t1, pk, key, "docs");
    int fd = open(name, O_WRONLY);
    CHECK(fd >= 0);
    uint64_t off = 16 + 4 * (uint64_t)m.n, bad = m.n + 5;
    off += (8 - off % 8) % 8;
    CHECK(pwrite(fd, &bad, 8, (off_t)(off + 8)) == 8);
    close(fd);
    CHECK_EQ_INT(nlp_bert_docs_add_cached(&c, in, 2, tk, 2, dir, 0, &built), 0);
    CHECK_EQ_INT(built, 1);
    CHECK_STR(layout(&c), layout(&m));
    nlp_bert_docs_free(&c);
    /* a changed text: another cache, the old one gone */
    nlp_buf_puts(&b, "\nsee x . foo !\n");
    CHECK_EQ_INT(nlp_write_file(t1, b.data, b.len), 0);
    CHECK_EQ_INT(nlp_bert_docs_add_cached(&c, in, 2, tk, 2, dir, 0, &built), 0);
    CHECK_EQ_INT(built, 1);
    CHECK_EQ_INT(c.ndoc, m.ndoc + 1);
    CHECK(access(name, F_OK) != 0);
    nlp_bert_docs_free(&c);
    nlp_bert_docs_free(&m);
    nlp_buf_free(&b);
}

/* Byte-level pieces carry their white space: a stream is cut only where
 * the next token starts with a space, as text is. */
static void test_read_stream_bytelevel(void)
{
    const char *sh = test_root("vectors/tokenize/gpt2");
    if (!sh) return;
    char p[600], q[600];
    snprintf(p, sizeof p, "%s/vectors/tokenize/gpt2", sh);
    snprintf(q, sizeof q, "%s/gpt2.bin", test_tmpdir());
    nlp_tokenizer *g = NULL;
    if (!CHECK(nlp_tokfiles_load(p, NULL, &g) == 0)) return;
    const char *text = "Version 3.5 of example.org is out. Next one! (See foo.c.) The end";
    nlp_tok_state *st = nlp_tok_state_new(g);
    nlp_ids ids = {0};
    CHECK_EQ_INT(nlp_tokenizer_encode_ids(g, st, text, strlen(text), 0, &ids), 0);
    nlp_writer *w = NULL;
    nlp_tokbin_writer *bw = NULL;
    CHECK_EQ_INT(nlp_writer_open(&w, q, 0), 0);
    CHECK_EQ_INT(nlp_tokbin_writer_new(&bw, w, (uint32_t)nlp_tokenizer_vocab_size(g), 50256), 0);
    CHECK_EQ_INT(nlp_tokbin_write_doc(bw, ids.v, ids.n), 0);
    nlp_tokbin_writer_free(bw);
    CHECK_EQ_INT(nlp_writer_close(w), 0);
    nlp_bert_docs s = {0}, t = {0};
    CHECK_EQ_INT(nlp_bert_docs_add(&s, q, g, 1), 0);
    CHECK_EQ_INT(nlp_bert_docs_add_text(&t, text, strlen(text), "t", g, 1), 0);
    const char *want[] = {"Version 3.5 of example.org is out.", " Next one!", " (See foo.c.)", " The end"};
    for (int k = 0; k < 2; k++) {
        nlp_bert_docs *d = k ? &t : &s;
        CHECK_EQ_INT(d->ndoc, 1);
        CHECK_EQ_INT(d->nsent, 4);
        /* the same ids as the whole text's */
        CHECK(d->n == ids.n && memcmp(d->ids, ids.v, ids.n * 4) == 0);
        for (size_t i = 0; i < d->nsent && i < 4; i++) {
            nlp_buf b = {0};
            nlp_tokenizer_decode(g, d->ids + d->sent[i], d->sent[i + 1] - d->sent[i], 0, &b, NULL);
            nlp_buf_putc(&b, 0);
            CHECK_STR(b.data, want[i]);
            nlp_buf_free(&b);
        }
    }
    nlp_bert_docs_free(&s), nlp_bert_docs_free(&t);
    nlp_ids_free(&ids);
    nlp_tok_state_free(st);
    nlp_tokenizer_free(g);
}

// --- examples

static nlp_bert_opts opts(int B, int T)
{
    nlp_bert_opts o = NLP_BERT_OPTS_INIT;
    o.B = B, o.T = T, o.tokenizer_path = vocab_path;
    return o;
}

static void test_init_errors(void)
{
    nlp_bert_docs d = {0}, one = {0}, flat = {0};
    CHECK_EQ_INT(read_corpus(&d), 0);
    CHECK_EQ_INT(nlp_bert_docs_add_text(&one, "see x. you\n", 11, "a", tk, 1), 0);
    CHECK_EQ_INT(nlp_bert_docs_add_text(&flat, "see x\nyou\n", 10, "a", tk, 1), 0);
    nlp_bert_task t;
    nlp_task task;
    nlp_bert_opts o = opts(4, 32);
    CHECK_EQ_INT(nlp_bert_task_init(&t, &task, &one, NULL, tk, &o), NLP_EDATA);
    CHECK_MSG(strstr(nlp_errmsg(), "training data holds 1 document"), "%s", nlp_errmsg());
    CHECK_EQ_INT(nlp_bert_task_init(&t, &task, &flat, NULL, tk, &o), NLP_EDATA);
    CHECK_MSG(strstr(nlp_errmsg(), "two sentences"), "%s", nlp_errmsg());
    CHECK_EQ_INT(nlp_bert_task_init(&t, &task, &d, &flat, tk, &o), NLP_EDATA);
    CHECK_MSG(strstr(nlp_errmsg(), "validation"), "%s", nlp_errmsg());
    o.T = 4;
    CHECK_EQ_INT(nlp_bert_task_init(&t, &task, &d, NULL, tk, &o), NLP_EINVAL);
    o = opts(4, 32);
    o.mlm_prob = 0;
    CHECK_EQ_INT(nlp_bert_task_init(&t, &task, &d, NULL, tk, &o), NLP_EINVAL);
    /* a tokenizer without [MASK] */
    char p[600];
    snprintf(p, sizeof p, "%s/nomask-vocab.txt", test_tmpdir());
    nlp_tokenizer *t2 = load_vocab(p, "[MASK]");
    CHECK(t2 != NULL);
    o = opts(4, 32);
    o.tokenizer_path = p;
    nlp_bert_docs d2 = {0};
    CHECK_EQ_INT(nlp_bert_docs_add_text(&d2, "see x. you\nfoo\n", 15, "a", t2, 1), 0);
    CHECK_EQ_INT(nlp_bert_task_init(&t, &task, &d2, NULL, t2, &o), NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "[MASK]") && strstr(nlp_errmsg(), "nomask-vocab.txt"), "%s", nlp_errmsg());
    /* documents of another, larger vocabulary */
    d2.ids[0] = 100000;
    CHECK_EQ_INT(nlp_bert_task_init(&t, &task, &d2, NULL, tk, &o), NLP_EDATA);
    nlp_bert_docs_free(&d2);
    nlp_tokenizer_free(t2);
    nlp_bert_docs_free(&d), nlp_bert_docs_free(&one), nlp_bert_docs_free(&flat);
}

/* Statistics over many examples. */
static void test_examples(void)
{
    enum { T = 32, N = 20000 };
    nlp_bert_docs d = {0};
    CHECK_EQ_INT(read_corpus(&d), 0);
    nlp_bert_task t;
    nlp_task task;
    nlp_bert_opts o = opts(4, T);
    if (!CHECK(nlp_bert_task_init(&t, &task, &d, NULL, tk, &o) == 0)) return;
    CHECK(t.train.n > NDOC); /* the long documents make several chunks */
    int32_t ids[T], labels[T], types[T], mask[T], nsp, orig[T];
    nlp_rng r;
    nlp_rng_seed(&r, 42);
    long bad_layout = 0, bad_source = 0, bad_tokens = 0, bad_labels = 0, bad_count = 0, bad_doc_words = 0;
    long next = 0, truncated = 0, short_ex = 0, unk_seen = 0, unk_chosen = 0, single_a_doc = 0;
    long content = 0, chosen = 0, as_mask = 0, as_orig = 0, as_random = 0, random_special = 0;
    long half_tok[2] = {0, 0}, half_chosen[2] = {0, 0};
    long cut_front = 0, cut_back = 0;
    long doc_b_seen[NDOC] = {0};
    for (int e = 0; e < N; e++) {
        nlp_bert_example x;
        size_t chunk = (size_t)e % t.train.n;
        int len = nlp_bert_task_example(&t, chunk, &r, ids, labels, types, mask, &nsp, &x);
        /* layout */
        int LA = x.len_a, LB = x.len_b;
        int ok = len == x.len && len == LA + LB + 3 && len <= T && LA >= 1 && LB >= 1 && ids[0] == id_cls &&
                 ids[LA + 1] == id_sep && ids[len - 1] == id_sep && nsp == x.nsp && (nsp == 0 || nsp == 1);
        for (int p = 0; p < T; p++) {
            int seg = p >= LA + 2 && p < len;
            if (types[p] != seg || mask[p] != (p < len)) ok = 0;
            if (p >= len && (ids[p] != id_pad || labels[p] != -100)) ok = 0;
        }
        bad_layout += !ok;
        /* where A and B come from */
        const size_t *D = d.doc;
        ok = x.doc_a < d.ndoc && x.doc_b < d.ndoc && D[x.doc_a] <= x.a_first && x.a_first < x.a_end &&
             x.a_end <= D[x.doc_a + 1] && D[x.doc_b] <= x.b_first && x.b_first < x.b_end &&
             x.b_end <= D[x.doc_b + 1];
        if (nsp == 0) ok &= x.doc_a == x.doc_b && x.a_end == x.b_first;
        else ok &= x.doc_a != x.doc_b;
        bad_source += !ok;
        next += nsp == 0;
        if (nsp == 1) doc_b_seen[x.doc_b]++;
        if (D[x.doc_a + 1] - D[x.doc_a] == 1) single_a_doc++;
        /* A and B are those sentences, less what truncation cut */
        size_t a0 = d.sent[x.a_first], a1 = d.sent[x.a_end], b0 = d.sent[x.b_first], b1 = d.sent[x.b_end];
        ok = (size_t)LA + x.cut_a_front + x.cut_a_back == a1 - a0 &&
             (size_t)LB + x.cut_b_front + x.cut_b_back == b1 - b0;
        if (ok) {
            memcpy(orig, ids, sizeof orig);
            memcpy(orig + 1, d.ids + a0 + x.cut_a_front, (size_t)LA * 4);
            memcpy(orig + LA + 2, d.ids + b0 + x.cut_b_front, (size_t)LB * 4);
        }
        bad_tokens += !ok;
        if (!ok) continue;
        if (x.cut_a_front + x.cut_a_back + x.cut_b_front + x.cut_b_back) {
            truncated++;
            cut_front += x.cut_a_front + x.cut_b_front, cut_back += x.cut_a_back + x.cut_b_back;
            /* BERT's truncation leaves the sides within one token of each other, or the shorter whole */
            if (!(LA + LB == T - 3 && (abs(LA - LB) <= 1 || (x.cut_a_front + x.cut_a_back == 0 && LA < LB) ||
                                       (x.cut_b_front + x.cut_b_back == 0 && LB < LA))))
                bad_tokens++;
        } else if (LA + LB < T - 3 && x.a_end - x.a_first + x.b_end - x.b_first >= 2 && nsp == 0)
            short_ex += x.b_end < D[x.doc_b + 1]; /* stopped before the document's end: a short target */
        /* the words are their documents' */
        for (int p = 1; p < len - 1; p++) {
            int wd = word_doc(orig[p]);
            if (wd >= 0 && wd != (int)(p <= LA ? x.doc_a : x.doc_b)) bad_doc_words++;
        }
        /* MLM */
        int n = 0, k = 0, at = 0;
        for (int p = 1; p < len - 1; p++)
            if (p != LA + 1 && !is_special_id(orig[p])) n++;
        for (int p = 0; p < len; p++) {
            int is_content = p > 0 && p < len - 1 && p != LA + 1;
            if (labels[p] == -100) {
                if (ids[p] != orig[p]) bad_labels++;
                if (orig[p] == id_unk) unk_seen++;
                if (is_content && !is_special_id(orig[p])) half_tok[2 * at++ >= n]++;
                continue;
            }
            k++;
            if (!is_content || labels[p] != orig[p]) bad_labels++;
            if (is_special_id(orig[p])) unk_chosen++;
            else {
                half_tok[2 * at >= n]++, half_chosen[2 * at >= n]++;
                at++;
            }
            if (ids[p] == id_mask) as_mask++;
            else if (ids[p] == orig[p]) as_orig++;
            else {
                as_random++;
                if (is_special_id(ids[p]) || (size_t)ids[p] >= nlp_tokenizer_vocab_size(tk)) random_special++;
            }
        }
        long want = n ? lround(0.15 * n) : 0;
        if (n && want < 1) want = 1;
        if (k != want || k != x.predicted) bad_count++;
        content += n, chosen += k;
    }
    CHECK_EQ_INT(bad_layout, 0);
    CHECK_EQ_INT(bad_source, 0);
    CHECK_EQ_INT(bad_tokens, 0);
    CHECK_EQ_INT(bad_doc_words, 0);
    CHECK_EQ_INT(bad_labels, 0);
    CHECK_EQ_INT(bad_count, 0);
    /* the cases were met */
    CHECK(truncated > 100);
    /* each truncated token from the front or the back, half and half */
    CHECK_MSG(cut_front > 1000 && fabs((double)cut_front / (double)(cut_front + cut_back) - 0.5) < 0.03,
              "%ld front, %ld back", cut_front, cut_back);
    CHECK(short_ex > 100);
    CHECK(unk_seen > 100);
    CHECK(single_a_doc > 100); /* one-sentence documents give A of random pairs */
    for (int k = 0; k < NDOC; k++) CHECK_MSG(doc_b_seen[k] > 100, "document %d as random B: %ld", k, doc_b_seen[k]);
    /* NSP half and half: sd 0.0035 */
    CHECK_NEAR((double)next / N, 0.5, 0.015);
    /* MLM: 15% of the non-special tokens (round() moves it a little), never [UNK] */
    CHECK_NEAR((double)chosen / (double)content, 0.15, 0.01);
    CHECK_EQ_INT(unk_chosen, 0);
    /* 80/10/10 (a random id equals the original now and then: ~1/500); sd ~0.0013 for 80%, 0.001 for 10% */
    CHECK_NEAR((double)as_mask / chosen, 0.8, 0.006);
    CHECK_NEAR((double)as_orig / chosen, 0.1, 0.005);
    CHECK_NEAR((double)as_random / chosen, 0.1, 0.005);
    CHECK_EQ_INT(random_special, 0);
    /* uniform choice: the first and second half of each example's tokens alike */
    double r0 = (double)half_chosen[0] / half_tok[0], r1 = (double)half_chosen[1] / half_tok[1];
    CHECK_MSG(fabs(r0 - r1) < 0.01, "chosen in the first half %.4f, second %.4f", r0, r1);
    nlp_bert_task_free(&t);
    nlp_bert_docs_free(&d);
}

// --- batches: determinism, epochs, resume

typedef struct snap {
    int B, T;
    int32_t v[4 * 4 * 32 + 4];
} snap;

static snap take(const nlp_batch *b)
{
    snap s;
    memset(&s, 0, sizeof s);
    s.B = b->B, s.T = b->T;
    size_t n = (size_t)b->B * b->T;
    memcpy(s.v, b->ids, n * 4);
    memcpy(s.v + n, b->labels, n * 4);
    memcpy(s.v + 2 * n, b->type_ids, n * 4);
    memcpy(s.v + 3 * n, b->mask, n * 4);
    memcpy(s.v + 4 * n, b->nsp_labels, (size_t)b->B * 4);
    return s;
}

static int same(const snap *a, const snap *b)
{
    return a->B == b->B && a->T == b->T && memcmp(a->v, b->v, sizeof a->v) == 0;
}

static void test_batches(void)
{
    enum { NB = 60 };
    nlp_bert_docs d = {0};
    CHECK_EQ_INT(read_corpus(&d), 0);
    nlp_bert_task t1, t2;
    nlp_task k1, k2;
    nlp_bert_opts o = opts(4, 32);
    if (!CHECK(nlp_bert_task_init(&t1, &k1, &d, NULL, tk, &o) == 0)) return;
    if (!CHECK(nlp_bert_task_init(&t2, &k2, &d, NULL, tk, &o) == 0)) return;
    CHECK(k1.get_state && k1.set_state && k1.next_batch && !k1.evaluate);
    static snap a[NB], b[NB];
    nlp_rng r1, r2;
    nlp_batch bt;
    nlp_rng_seed(&r1, 5), nlp_rng_seed(&r2, 5);
    int ok = 1, padded = 0, maxT = 0;
    for (int i = 0; i < NB; i++) {
        CHECK_EQ_INT(k1.next_batch(k1.ctx, &r1, &bt), 0);
        a[i] = take(&bt);
        padded += bt.T < 32;
        if (bt.T > maxT) maxT = bt.T;
        /* rows padded to the longest one: some row fills every position */
        int full = 0;
        for (int j = 0; j < bt.B; j++) full |= bt.mask[(size_t)j * bt.T + bt.T - 1] == 1;
        ok &= full;
        CHECK_EQ_INT(k2.next_batch(k2.ctx, &r2, &bt), 0);
        b[i] = take(&bt);
        ok &= same(&a[i], &b[i]);
    }
    CHECK(ok);         /* same generator, same batches */
    CHECK(padded > 0); /* batches shorter than T */
    CHECK_EQ_INT(maxT, 32);
    /* an epoch is every chunk once, in a shuffled order; the next one in another */
    size_t n = t1.train.n;
    CHECK(t1.epoch >= 2);
    char *seen = calloc(n, 1);
    int perm = 1, moved = 0;
    for (size_t i = 0; i < n; i++) {
        perm &= t1.order[i] < n && !seen[t1.order[i]];
        if (t1.order[i] < n) seen[t1.order[i]] = 1;
        moved += t1.order[i] != i;
    }
    free(seen);
    CHECK(perm);
    CHECK(moved > 0);
    CHECK_EQ_INT(t1.drawn, (uint64_t)(NB * 4 - (t1.epoch - 1) * n));
    /* another seed, other batches */
    nlp_rng_seed(&r2, 6);
    nlp_bert_task_free(&t2);
    CHECK_EQ_INT(nlp_bert_task_init(&t2, &k2, &d, NULL, tk, &o), 0);
    int differ = 0;
    for (int i = 0; i < 5; i++) {
        k2.next_batch(k2.ctx, &r2, &bt);
        snap s = take(&bt);
        differ += !same(&s, &a[i]);
    }
    CHECK_EQ_INT(differ, 5);

    /* resume: the state after batch 17 (mid-epoch) and the generator give batches 18.. again */
    for (int cut = 17; cut <= 18; cut++) {
        nlp_bert_task t3, t4;
        nlp_task k3, k4;
        CHECK_EQ_INT(nlp_bert_task_init(&t3, &k3, &d, NULL, tk, &o), 0);
        nlp_rng r3;
        nlp_rng_seed(&r3, 5);
        for (int i = 0; i < cut; i++) k3.next_batch(k3.ctx, &r3, &bt);
        uint64_t st[4];
        k3.get_state(k3.ctx, st);
        nlp_rng saved = r3;
        nlp_bert_task_free(&t3);
        CHECK_EQ_INT(nlp_bert_task_init(&t4, &k4, &d, NULL, tk, &o), 0);
        nlp_rng other;
        nlp_rng_seed(&other, 99); /* a task that drew batches of its own */
        for (int i = 0; i < 23; i++) k4.next_batch(k4.ctx, &other, &bt);
        CHECK_EQ_INT(k4.set_state(k4.ctx, st), 0);
        int eq = 1;
        for (int i = cut; i < NB; i++) {
            k4.next_batch(k4.ctx, &saved, &bt);
            snap s = take(&bt);
            eq &= same(&s, &a[i]);
        }
        CHECK_MSG(eq, "resumed after batch %d", cut);
        /* a state from other data is refused */
        st[3]++;
        CHECK_EQ_INT(k4.set_state(k4.ctx, st), NLP_EDATA);
        nlp_bert_task_free(&t4);
    }
    nlp_bert_task_free(&t1);
    nlp_bert_task_free(&t2);
    nlp_bert_docs_free(&d);
}

// --- validation

static nlp_model *tiny_bert(void)
{
    nlp_model_config c;
    char vs[64];
    snprintf(vs, sizeof vs, "vocab-size=%zu", nlp_tokenizer_vocab_size(tk));
    const char *ov[] = {"arch=bert", vs, "d-model=16", "heads=2", "d-ff=32", "layers=1", "max-positions=32",
                        "type-vocab-size=2", "dropout=0.1", "attention-dropout=0.1", NULL};
    if (nlp_model_config_build(&c, "tiny", NULL, 0, ov)) return NULL;
    nlp_model *m = NULL;
    if (nlp_model_new(&m, &c, 3)) return NULL;
    return m;
}

static void test_evaluate(void)
{
    nlp_bert_docs d = {0}, v = {0};
    CHECK_EQ_INT(read_corpus(&d), 0);
    CHECK_EQ_INT(read_corpus(&v), 0);
    nlp_model *m = tiny_bert();
    if (!CHECK(m != NULL)) return;
    nlp_bert_task t1, t2;
    nlp_task k1, k2;
    nlp_bert_opts o = opts(2, 32);
    o.valid_max = 25;
    CHECK_EQ_INT(nlp_bert_task_init(&t1, &k1, &d, &v, tk, &o), 0);
    o.B = 7;
    CHECK_EQ_INT(nlp_bert_task_init(&t2, &k2, &d, &v, tk, &o), 0);
    CHECK(k1.evaluate != NULL);
    CHECK_STR(k1.eval_names[0], "loss");
    CHECK_STR(k1.eval_names[1], "mlm_loss");
    CHECK_STR(k1.eval_names[2], "mlm_acc");
    CHECK_STR(k1.eval_names[3], "nsp_acc");
    CHECK(k1.eval_names[4] == NULL);
    CHECK(k1.best_metric == 0 && !k1.higher_is_better);
    nlp_model_set_training(m, 1);
    nlp_eval e1, e1b, e2;
    CHECK_EQ_INT(k1.evaluate(k1.ctx, m, &e1), 0);
    CHECK_EQ_INT(k1.evaluate(k1.ctx, m, &e1b), 0); /* dropout off: nothing random */
    CHECK_EQ_INT(k2.evaluate(k2.ctx, m, &e2), 0);
    CHECK(memcmp(&e1, &e1b, sizeof e1) == 0);
    /* the same examples whatever the batch size (padding takes no part) */
    for (int i = 0; i < 4; i++) CHECK_NEAR(e1.v[i], e2.v[i], 1e-4 * (1 + fabs(e1.v[i])));
    /* an untrained model: about ln V for MLM, ln 2 for NSP */
    double lnv = log((double)nlp_tokenizer_vocab_size(tk));
    CHECK_NEAR(e1.v[1], lnv, 0.5);
    CHECK_NEAR(e1.v[0] - e1.v[1], log(2.0), 0.2);
    CHECK(e1.v[2] >= 0 && e1.v[2] < 0.2);
    CHECK(e1.v[3] >= 0 && e1.v[3] <= 1);
    /* a mismatched model size is the model's error, passed on */
    nlp_bert_task_free(&t1);
    nlp_bert_task_free(&t2);
    nlp_model_free(m);
    nlp_bert_docs_free(&d), nlp_bert_docs_free(&v);
}

/* The shared corpus's validation text, one paragraph per line, with BERT's vocabulary. */
static void test_shared_corpus(void)
{
    const char *sh = test_shared();
    if (!sh) return;
    char p[600], q[600];
    snprintf(p, sizeof p, "%s/vectors/tokenize/bert-base-uncased-vocab.txt", sh);
    snprintf(q, sizeof q, "%s/data/lm/valid.txt", sh);
    nlp_tokenizer *bt = NULL;
    if (!CHECK(nlp_tokfiles_load(p, NULL, &bt) == 0)) return;
    nlp_bert_docs d = {0};
    CHECK_EQ_INT(nlp_bert_docs_add(&d, q, bt, 2), 0);
    CHECK(d.lines > 1000);
    CHECK(d.ndoc > 1000 && d.ndoc <= d.lines);
    CHECK(d.nsent > d.ndoc);
    nlp_bert_task t;
    nlp_task k;
    nlp_bert_opts o = NLP_BERT_OPTS_INIT;
    o.tokenizer_path = p;
    CHECK_EQ_INT(nlp_bert_task_init(&t, &k, &d, NULL, bt, &o), 0);
    nlp_rng r;
    nlp_rng_seed(&r, 1);
    nlp_batch b;
    CHECK_EQ_INT(k.next_batch(k.ctx, &r, &b), 0);
    CHECK(b.B == 8 && b.T <= 128 && b.ids[0] == nlp_tokenizer_token_to_id(bt, "[CLS]", 5));
    nlp_bert_task_free(&t);
    nlp_bert_docs_free(&d);
    nlp_tokenizer_free(bt);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    setup();
    RUN(test_read_text);
    RUN(test_read_stream);
    RUN(test_read_stream_bytelevel);
    RUN(test_cache);
    RUN(test_init_errors);
    RUN(test_examples);
    RUN(test_batches);
    RUN(test_evaluate);
    RUN(test_shared_corpus);
    nlp_tokenizer_free(tk);
    return TEST_END();
}
