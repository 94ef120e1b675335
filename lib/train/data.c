/*
 * data.c — token corpora and their windows; text read in blocks and
 * tokenized in parallel; the text check; mapped files; caches. See data.h.
 */
#include "train/data.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "text/utf8.h"
#include "tok/tokbin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FNV0 1469598103934665603ull
#define FNVP 1099511628211ull
#define CACHE_VERSION 1 /* in the cache key: a new layout of the cache gives new names */

static uint64_t fnv_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * FNVP;
    return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
    for (int k = 0; k < 8; k++) h = (h ^ (unsigned char)(v >> (8 * k))) * FNVP;
    return h;
}

// --- mapped files

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

int nlp_mapped_open(nlp_mapped *m, const char *path)
{
    memset(m, 0, sizeof *m);
    m->fd = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nlp_error_errno(NLP_EIO, "cannot open '%s'", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = nlp_error_errno(NLP_EIO, "cannot read '%s'", path);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return nlp_error(NLP_EIO, "cannot map '%s': not a regular file", path);
    }
    if (!(m->path = nlp_strdup(path))) {
        close(fd);
        return NLP_ENOMEM;
    }
    m->fd = fd;
    m->len = (size_t)st.st_size;
    m->mtime_ns = mtime_ns(&st);
    m->ino = (uint64_t)st.st_ino;
    if (m->len) {
        void *p = mmap(NULL, m->len, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            int rc = nlp_error_errno(NLP_EIO, "cannot map '%s'", path);
            nlp_mapped_close(m);
            return rc;
        }
        madvise(p, m->len, MADV_RANDOM);
        m->data = p;
    }
    return 0;
}

int nlp_mapped_check(const nlp_mapped *m)
{
    struct stat st;
    if (m->fd < 0) return 0;
    if (fstat(m->fd, &st) != 0) return nlp_error_errno(NLP_EIO, "cannot read '%s'", m->path);
    if ((uint64_t)st.st_size < m->len)
        return nlp_error(NLP_EDATA, "'%s' changed while it was being read (%llu bytes, %zu when it was opened): "
                         "replace a file in use by renaming a new one over it, not by rewriting it",
                         m->path, (unsigned long long)st.st_size, m->len);
    if (mtime_ns(&st) != m->mtime_ns)
        return nlp_error(NLP_EDATA, "'%s' changed while it was being read (it was written to since it was opened): "
                         "replace a file in use by renaming a new one over it, not by rewriting it", m->path);
    return 0;
}

void nlp_mapped_release(const nlp_mapped *m, size_t off, size_t n)
{
    /* whole 2 MiB blocks: a fault maps more than its page (fault-around, and
     * the page cache's large folios, up to 2 MiB), and those pages count as
     * resident too */
    const size_t B = (size_t)2 << 20;
    if (!m->data || !n) return;
    size_t a = off / B * B, e = (off + n + B - 1) / B * B;
    if (e > m->len) e = m->len;
    if (e > a) madvise((void *)(m->data + a), e - a, MADV_DONTNEED);
}

void nlp_mapped_close(nlp_mapped *m)
{
    if (m->data) munmap((void *)m->data, m->len);
    if (m->fd >= 0) close(m->fd);
    free(m->path);
    memset(m, 0, sizeof *m);
    m->fd = -1;
}

// --- the text check

static int force_text;

void nlp_text_check_force(int force) { force_text = force; }

static int is_digit_line(const unsigned char *s, size_t n, int *numbers)
{
    int in = 0, any = 0;
    *numbers = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            if (!in) ++*numbers;
            in = 1, any = 1;
        } else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') in = 0;
        else return 0;
    }
    return any;
}

int nlp_text_check(const char *name, const void *data, size_t n)
{
    const unsigned char *p = data;
    if (force_text || !n) return 0;
    static const char tail[] = "; --force reads it as text anyway";
    const char *what = NULL;
    if (n >= 6 && memcmp(p, "\xFD" "7zXZ\0", 6) == 0) what = "xz-compressed data: decompress it first (xz -dc)";
    else if (n >= 2 && p[0] == 0x1F && p[1] == 0x8B) what = "gzip-compressed data: decompress it first (gzip -dc)";
    else if (n >= 4 && memcmp(p, "\x28\xB5\x2F\xFD", 4) == 0) what = "zstd-compressed data: decompress it first (zstd -dc)";
    else if (n >= 10 && memcmp(p, "BZh", 3) == 0 && p[3] >= '1' && p[3] <= '9' && memcmp(p + 4, "1AY&SY", 6) == 0)
        what = "bzip2-compressed data: decompress it first (bzip2 -dc)";
    else if (n >= 4 && memcmp(p, "PK\x03\x04", 4) == 0) what = "a zip archive (or a PyTorch checkpoint): not text";
    else if (n >= 6 && memcmp(p, "\x93NUMPY", 6) == 0) what = "a NumPy array file: not text";
    else if (n >= 4 && memcmp(p, "\x7F" "ELF", 4) == 0) what = "an executable (ELF): not text";
    else if (n >= 2 && p[0] == 0x80 && p[1] >= 2 && p[1] <= 5) what = "a Python pickle: not text";
    else if (n >= 2 && ((p[0] == 0xFF && p[1] == 0xFE) || (p[0] == 0xFE && p[1] == 0xFF)))
        what = "UTF-16 text: convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)";
    else if (n >= 10) {
        uint64_t h = 0;
        for (int k = 0; k < 8; k++) h |= (uint64_t)p[k] << (8 * k);
        if (h >= 2 && h < ((uint64_t)1 << 30) && p[8] == '{' && (p[9] == '"' || p[9] == '}'))
            what = "a safetensors file (model weights): not text";
    }
    if (!what && memchr(p, 0, n)) what = "binary data (it holds NUL bytes): not text";
    if (!what) {
        /* bytes of ill-formed UTF-8 */
        size_t bad = 0, i = 0, end = n;
        if (end > 4) end -= 4; /* a sequence cut by the end of the sample is not held against it */
        while (i < end) {
            if (p[i] < 0x80) {
                i++;
                continue;
            }
            size_t j = i;
            int32_t c = nlp_utf8_next((const char *)p, n, &j);
            if (c < 0 || c == 0xFFFD) bad += j - i;
            i = j > i ? j : i + 1;
        }
        if (end >= 64 && bad * 5 > end) what = "mostly not UTF-8: convert it to UTF-8 first (iconv -f ... -t UTF-8)";
    }
    if (!what) {
        /* every whole line numbers only: ids as `tokenize` prints them */
        size_t lines = 0, multi = 0, i = 0;
        int only = 1;
        while (i < n && only) {
            const unsigned char *e = memchr(p + i, '\n', n - i);
            if (!e) break; /* the last line of the sample may be cut */
            size_t len = (size_t)(e - (p + i));
            int k;
            if (len) {
                if (is_digit_line(p + i, len, &k)) lines++, multi += k > 1;
                else only = 0;
            }
            i += len + 1;
        }
        if (only && i < n) { /* a last line without a newline at the end of the file */
            int k;
            if (n - i < 4096 && is_digit_line(p + i, n - i, &k)) lines++, multi += k > 1;
            else if (n - i < 4096) only = 0;
        }
        if (only && lines >= 2 && multi)
            what = "lines of numbers only (token ids, as 'tokenize' prints them by default): give the text, or a "
                   "token stream made with 'tokenize --output-format bin'";
    }
    if (!what) return 0;
    return nlp_error(NLP_EDATA, "'%s' is %s%s", name, what, tail);
}

// --- text in blocks

int nlp_text_blocks_open(nlp_text_blocks *tb, const char *path)
{
    memset(tb, 0, sizeof *tb);
    nlp_reader *r = NULL;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    tb->r = r, tb->own = 1, tb->scanned = 1;
    return 0;
}

static void blocks_borrow(nlp_text_blocks *tb, nlp_reader *r)
{
    memset(tb, 0, sizeof *tb);
    tb->r = r, tb->scanned = 1;
}

const char *nlp_text_blocks_name(const nlp_text_blocks *tb) { return nlp_reader_name(tb->r); }

static size_t block_size = NLP_TEXT_BLOCK;

void nlp_text_blocks_set_size(size_t bytes) { block_size = bytes ? bytes : NLP_TEXT_BLOCK; }

int nlp_split_lines(char *text, size_t len, char ***line, size_t **llen, size_t *n)
{
    size_t cap = 0, lcap = 0, k = 0;
    char **l = NULL;
    size_t *ll = NULL;
    for (size_t i = 0; i < len;) {
        if (nlp_grow(&l, &cap, k + 1, sizeof *l) || nlp_grow(&ll, &lcap, k + 1, sizeof *ll)) {
            free(l), free(ll);
            return NLP_ENOMEM;
        }
        const char *e = memchr(text + i, '\n', len - i);
        size_t end = e ? (size_t)(e - text) : len, m = end - i;
        if (m && text[i + m - 1] == '\r') m--;
        l[k] = text + i, ll[k] = m, k++;
        i = e ? end + 1 : len;
    }
    *line = l, *llen = ll, *n = k;
    return 0;
}

int nlp_text_blocks_next(nlp_text_blocks *tb, const char **text, size_t *len, uint64_t *first_line)
{
    /* the last block out: its lines counted, its bytes dropped */
    for (size_t i = 0; i < tb->keep;) {
        const char *e = memchr(tb->buf + i, '\n', tb->keep - i);
        tb->line++;
        i = e ? (size_t)(e - tb->buf) + 1 : tb->keep;
    }
    if (tb->len > tb->keep) memmove(tb->buf, tb->buf + tb->keep, tb->len - tb->keep);
    tb->len -= tb->keep, tb->keep = 0;
    size_t want = block_size;
    for (;;) {
        if (tb->len >= want || tb->eof) {
            if (!tb->len) return 0;
            const char *nl = NULL;
            for (size_t i = tb->len; i > 0; i--)
                if (tb->buf[i - 1] == '\n') {
                    nl = tb->buf + i - 1;
                    break;
                }
            if (tb->eof) tb->keep = tb->len;
            else if (nl) tb->keep = (size_t)(nl - tb->buf) + 1;
            else { /* one line longer than a block: read on */
                want = tb->len + block_size;
                continue;
            }
            break;
        }
        if (nlp_grow(&tb->buf, &tb->cap, want + 1, 1)) return NLP_ENOMEM;
        size_t got;
        int rc = nlp_reader_read(tb->r, tb->buf + tb->len, want - tb->len, &got);
        if (rc) return rc;
        if (!got) tb->eof = 1;
        if (tb->max_line &&
            (rc = nlp_lines_check(nlp_reader_name(tb->r), tb->buf + tb->len, got, tb->max_line, &tb->cur, &tb->scanned)))
            return rc;
        tb->len += got, tb->bytes += got;
        if (!tb->checked && (tb->len >= 65536 || tb->eof)) {
            if ((rc = nlp_text_check(nlp_reader_name(tb->r), tb->buf, tb->len < 65536 ? tb->len : 65536))) return rc;
            tb->checked = 1;
        }
    }
    *text = tb->buf, *len = tb->keep, *first_line = tb->line;
    return 1;
}

void nlp_text_blocks_close(nlp_text_blocks *tb)
{
    if (tb->own) nlp_reader_close(tb->r);
    free(tb->buf);
    memset(tb, 0, sizeof *tb);
}

int nlp_tokenize_block(const nlp_tokenizer *tk, const char *text, size_t len, const char *name, uint64_t first_line,
                       int32_t eot, int threads, nlp_ids *res, uint64_t *ndocs, uint64_t *repaired)
{
    int rc = 0;
    *ndocs = 0;
    /* line starts */
    size_t nl = 0, cap = 0;
    size_t *start = NULL;
    for (size_t i = 0; i < len;) {
        if (nlp_grow(&start, &cap, nl + 2, sizeof *start)) return NLP_ENOMEM;
        start[nl++] = i;
        const char *e = memchr(text + i, '\n', len - i);
        i = e ? (size_t)(e - text) + 1 : len;
    }
    if (!nl) return 0;
    start[nl] = len;

    if (threads <= 0) threads = nlp_cpu_count();
    size_t nchunk = (size_t)threads * 8;
    if (nchunk > nl) nchunk = nl;
    nlp_ids *out = nlp_calloc(nchunk, sizeof *out);
    uint64_t *docs = nlp_calloc(nchunk, sizeof *docs), *fixed = nlp_calloc(nchunk, sizeof *fixed);
    int *err = nlp_calloc(nchunk, sizeof *err);
    char **msg = nlp_calloc(nchunk, sizeof *msg); /* the tokenizer's message (per thread) */
    size_t *bad = nlp_calloc(nchunk, sizeof *bad);  /* and the 0-based line it is about */
    if (!out || !docs || !fixed || !err || !msg || !bad) {
        rc = NLP_ENOMEM;
        goto done;
    }
#pragma omp parallel num_threads(threads)
    {
        nlp_tok_state *st = nlp_tok_state_new(tk);
        nlp_buf fix = {0};
#pragma omp for schedule(dynamic, 1)
        for (size_t k = 0; k < nchunk; k++) {
            if (!st) {
                err[k] = NLP_ENOMEM;
                continue;
            }
            size_t a = nl * k / nchunk, b = nl * (k + 1) / nchunk;
            for (size_t l = a; l < b && !err[k]; l++) {
                const char *s = text + start[l];
                size_t n = start[l + 1] - start[l];
                if (n && s[n - 1] == '\n') n--;
                if (n && s[n - 1] == '\r') n--;
                if (!n) continue;
                if (!nlp_utf8_valid(s, n, NULL)) {
                    nlp_buf_reset(&fix);
                    if (nlp_utf8_repair(s, n, &fix, NULL)) {
                        err[k] = NLP_ENOMEM;
                        break;
                    }
                    s = fix.data, n = fix.len;
                    fixed[k]++;
                }
                if (docs[k]++ && eot >= 0 && nlp_ids_push(&out[k], eot)) err[k] = NLP_ENOMEM;
                int r = nlp_tokenizer_encode_ids(tk, st, s, n, 0, &out[k]);
                if (r) {
                    err[k] = r, bad[k] = l;
                    msg[k] = nlp_strdup(nlp_errmsg());
                }
            }
        }
        nlp_buf_free(&fix);
        nlp_tok_state_free(st);
    }
    for (size_t k = 0; k < nchunk; k++) {
        if (err[k]) {
            rc = msg[k] ? nlp_error(err[k], "'%s' line %llu: %s", name, (unsigned long long)(first_line + bad[k] + 1),
                                    msg[k])
                        : err[k];
            goto done;
        }
    }
    for (size_t k = 0; k < nchunk; k++) {
        if (!docs[k]) continue;
        if ((*ndocs && eot >= 0 && nlp_ids_push(res, eot)) || nlp_ids_append(res, out[k].v, out[k].n)) {
            rc = NLP_ENOMEM;
            goto done;
        }
        *ndocs += docs[k];
        *repaired += fixed[k];
    }
done:
    for (size_t k = 0; out && k < nchunk; k++) nlp_ids_free(&out[k]);
    for (size_t k = 0; msg && k < nchunk; k++) free(msg[k]);
    free(out), free(docs), free(fixed), free(err), free(msg), free(bad), free(start);
    return rc;
}

// --- parts

static nlp_corpus_part *new_part(nlp_corpus *c)
{
    if (nlp_grow(&c->part, &c->parts_cap, c->nparts + 1, sizeof *c->part)) return NULL;
    nlp_corpus_part *p = &c->part[c->nparts++];
    memset(p, 0, sizeof *p);
    p->map.fd = -1;
    p->start = c->n;
    p->eot = -1;
    return p;
}

/* Appends ids to the corpus's in-memory tail. */
static int push(nlp_corpus *c, const int32_t *ids, size_t n)
{
    nlp_corpus_part *p = c->nparts ? &c->part[c->nparts - 1] : NULL;
    if (!p || p->map.data || p->is_stream || p->start + p->n != c->n) {
        if (!n) return 0;
        if (!(p = new_part(c))) return NLP_ENOMEM;
    }
    if (nlp_grow(&p->ids, &p->cap, p->n + n + 1, sizeof *p->ids)) return NLP_ENOMEM;
    if (n) memcpy(p->ids + p->n, ids, n * sizeof *ids); /* an empty document has no ids (NULL) */
    p->n += n, c->n += n;
    c->held += n * sizeof *ids;
    for (size_t i = 0; i < n; i++)
        if ((uint32_t)ids[i] + 1 > c->max_id) c->max_id = (uint32_t)ids[i] + 1;
    return 0;
}

/* A new document: the separator first unless the corpus is empty. */
static int begin_doc(nlp_corpus *c)
{
    c->docs++;
    if (c->n == 0 || c->eot < 0) return 0;
    return push(c, &c->eot, 1);
}

static int eot_agrees(nlp_corpus *c, const nlp_tokbin_info *in, const char *path)
{
    if (in->eot >= 0) {
        if (c->eot >= 0 && c->n && in->eot != c->eot)
            return nlp_error(NLP_EDATA, "'%s': its end-of-text id is %lld, the earlier inputs' %d: were they made "
                             "with another tokenizer?", path, (long long)in->eot, c->eot);
        c->eot = (int32_t)in->eot;
    }
    return 0;
}

static int vocab_fits(const nlp_tokbin_info *in, const char *path, uint32_t vocab)
{
    if (vocab && in->vocab_size > vocab)
        return nlp_error(NLP_EDATA, "'%s': a stream of a %u-token vocabulary, but the model has %u tokens: was it "
                         "made with another tokenizer?", path, in->vocab_size, vocab);
    return 0;
}

/* A stream read whole into memory (standard input). */
static int add_stream_mem(nlp_corpus *c, nlp_reader *r, const char *path, uint32_t vocab)
{
    nlp_tokbin_reader *br = NULL;
    nlp_ids doc = {0};
    int rc;
    if ((rc = nlp_tokbin_reader_new(&br, r, c->eot))) goto out;
    const nlp_tokbin_info *in = nlp_tokbin_reader_info(br);
    if ((rc = eot_agrees(c, in, path)) || (rc = vocab_fits(in, path, vocab))) goto out;
    if (in->vocab_size > c->vocab) c->vocab = in->vocab_size;
    /* its header, for the tokenizer check */
    nlp_corpus_part *h = new_part(c);
    if (!h || !(h->name = nlp_strdup(path))) {
        rc = NLP_ENOMEM;
        goto out;
    }
    h->is_stream = 1, h->llmc = in->kind == NLP_TOKBIN_LLMC;
    h->vocab = h->llmc ? 0 : in->vocab_size;
    h->eot = in->eot, h->tokenizer = in->tokenizer;
    uint64_t seen = 0;
    while ((rc = nlp_tokbin_next_doc(br, &doc)) == 1) {
        for (size_t i = 0; i < doc.n; i++)
            if (vocab && (uint32_t)doc.v[i] >= vocab) {
                rc = nlp_error(NLP_EDATA, "'%s': token %llu is id %u, not below the model's vocabulary size %u",
                               path, (unsigned long long)(seen + i), (uint32_t)doc.v[i], vocab);
                goto out;
            }
        seen += doc.n + 1;
        if ((rc = begin_doc(c)) || (rc = push(c, doc.v, doc.n))) goto out;
    }
out:
    nlp_ids_free(&doc);
    nlp_tokbin_reader_free(br);
    return rc < 0 ? rc : 0;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A stream file, mapped. */
static int add_mapped(nlp_corpus *c, const char *path, uint32_t vocab)
{
    nlp_reader *r = NULL;
    nlp_tokbin_reader *br = NULL;
    nlp_mapped m;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    rc = nlp_tokbin_reader_new(&br, r, c->eot); /* the header, checked */
    if (rc) {
        nlp_reader_close(r);
        return rc;
    }
    nlp_tokbin_info in = *nlp_tokbin_reader_info(br);
    nlp_tokbin_reader_free(br);
    nlp_reader_close(r);
    if ((rc = vocab_fits(&in, path, vocab))) return rc;
    if ((rc = nlp_mapped_open(&m, path))) return rc;
    const int llmc = in.kind == NLP_TOKBIN_LLMC;
    const size_t w = in.width, head = llmc ? NLP_LLMC_HEADER : NLP_TOKBIN_HEADER;
    size_t off = head, n;
    if (m.len < head) { /* the file shrank since its header was read */
        rc = nlp_error(NLP_EFORMAT, "'%s': truncated token stream header (%zu bytes)", path, m.len);
        goto fail;
    }
    if (llmc) {
        if (in.count > (m.len - head) / w) {
            rc = nlp_error(NLP_EFORMAT, "'%s': truncated llm.c shard: %llu of %llu tokens missing at byte %zu", path,
                           (unsigned long long)(in.count - (m.len - head) / w), (unsigned long long)in.count,
                           head + (m.len - head) / w * w);
            goto fail;
        }
        n = (size_t)in.count;
        /* each document opens with the end-of-text id: the first one separates nothing */
        if (n && in.eot >= 0) {
            const unsigned char *p = m.data + off;
            uint32_t v = w == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : get32(p);
            if (v == (uint64_t)in.eot) off += w, n--;
        }
    } else {
        if ((m.len - head) % w) {
            rc = nlp_error(NLP_EFORMAT, "'%s': truncated token stream: a partial id at byte %zu", path,
                           head + (m.len - head) / w * w);
            goto fail;
        }
        n = (m.len - head) / w;
        if (n) { /* the no-final-newline marker is not an id */
            const unsigned char *p = m.data + off + (n - 1) * w;
            uint32_t v = w == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : get32(p);
            uint32_t mark = w == 2 ? NLP_TOKBIN_UNTERMINATED_2 : NLP_TOKBIN_UNTERMINATED_4;
            if (v == mark && v >= in.vocab_size) n--;
        }
        nlp_mapped_release(&m, 0, head + 2 * w);
    }
    if ((rc = eot_agrees(c, &in, path))) goto fail;
    if (in.vocab_size > c->vocab) c->vocab = in.vocab_size;
    if (!n) { /* no document */
        nlp_mapped_close(&m);
        return 0;
    }
    if (c->n && c->eot >= 0 && (rc = push(c, &c->eot, 1))) goto fail;
    nlp_corpus_part *p = new_part(c);
    if (!p || !(p->name = nlp_strdup(path))) {
        rc = NLP_ENOMEM;
        goto fail;
    }
    p->map = m;
    p->off = off, p->width = (uint32_t)w, p->n = n;
    p->is_stream = 1, p->llmc = llmc;
    p->vocab = llmc ? 0 : in.vocab_size;
    p->limit = vocab;
    p->eot = in.eot, p->tokenizer = in.tokenizer;
    c->n += n;
    c->mapped += (uint64_t)n * w;
    return 0;
fail:
    nlp_mapped_close(&m);
    return rc;
}

static int is_regular(const char *path)
{
    struct stat st;
    return strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int nlp_corpus_add_stream(nlp_corpus *c, const char *path, uint32_t vocab)
{
    if (is_regular(path)) return add_mapped(c, path, vocab);
    nlp_reader *r = NULL;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    rc = add_stream_mem(c, r, path, vocab);
    nlp_reader_close(r);
    return rc;
}

/* Text from tb into memory. */
static int add_text_blocks(nlp_corpus *c, nlp_text_blocks *tb, const nlp_tokenizer *tk, int32_t eot, int threads)
{
    const char *text;
    size_t len;
    uint64_t line;
    nlp_ids ids = {0};
    int rc;
    c->eot = eot;
    while ((rc = nlp_text_blocks_next(tb, &text, &len, &line)) == 1) {
        uint64_t docs = 0;
        ids.n = 0;
        if ((rc = nlp_tokenize_block(tk, text, len, nlp_text_blocks_name(tb), line, eot, threads, &ids, &docs,
                                     &c->repaired)))
            break;
        if (!docs) continue;
        if ((rc = begin_doc(c)) || (rc = push(c, ids.v, ids.n))) break;
        c->docs += docs - 1;
    }
    c->bytes += tb->bytes;
    nlp_ids_free(&ids);
    return rc < 0 ? rc : 0;
}

int nlp_corpus_add_text(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, int threads)
{
    nlp_text_blocks tb;
    int rc = nlp_text_blocks_open(&tb, path);
    if (rc) return rc;
    tb.max_line = c->max_line;
    rc = add_text_blocks(c, &tb, tk, eot, threads);
    nlp_text_blocks_close(&tb);
    return rc;
}

/* Without a tokenizer: text is a usage error (the tokenizer was not given),
 * anything else bad data. r is the file's reader, at its start, or NULL. */
static int not_a_stream(const char *path, nlp_reader *r)
{
    const size_t look = 1024;
    const char *p = NULL;
    size_t got = 0, bad;
    nlp_reader *own = NULL;
    int rc = r ? 0 : nlp_reader_open(&own, path);
    if (rc) return rc;
    if ((rc = nlp_reader_peek(r ? r : own, look, &p, &got))) goto out;
    if (got && !memchr(p, 0, got) && (nlp_utf8_valid(p, got, &bad) || (got == look && bad + 4 > got)))
        rc = nlp_error(NLP_EINVAL, "'%s' is text, not a token stream: give a tokenizer for text input", path);
    else
        rc = nlp_error(NLP_EDATA, "'%s' is not a token stream (%s): give a tokenizer for text input", path,
                       got ? "no NLTK or llm.c header" : "it is empty");
out:
    nlp_reader_close(own);
    return rc;
}

int nlp_corpus_add(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, uint32_t vocab, int threads)
{
    nlp_reader *r = NULL;
    const char *p;
    size_t got;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    if ((rc = nlp_reader_peek(r, 4, &p, &got))) goto out;
    if (got == 4 && nlp_tokbin_sniff((const unsigned char *)p)) {
        if (is_regular(path)) {
            nlp_reader_close(r);
            return add_mapped(c, path, vocab);
        }
        rc = add_stream_mem(c, r, path, vocab);
        goto out;
    }
    if (!tk) {
        rc = not_a_stream(path, r);
        goto out;
    }
    nlp_text_blocks tb;
    blocks_borrow(&tb, r);
    tb.max_line = c->max_line;
    rc = add_text_blocks(c, &tb, tk, eot, threads);
    nlp_text_blocks_close(&tb);
out:
    nlp_reader_close(r);
    return rc;
}

// --- caches

int nlp_cache_key(const char *path, const nlp_tokenizer *tk, uint64_t extra, uint64_t *key, uint64_t *path_key)
{
    struct stat st;
    char abs[PATH_MAX];
    if (stat(path, &st) != 0) return nlp_error_errno(NLP_EIO, "cannot open '%s'", path);
    if (!realpath(path, abs)) snprintf(abs, sizeof abs, "%s", path);
    uint64_t pk = fnv_bytes(FNV0, abs, strlen(abs));
    uint64_t h = fnv_u64(pk, (uint64_t)st.st_size);
    h = fnv_u64(h, (uint64_t)mtime_ns(&st));
    h = fnv_u64(h, (uint64_t)st.st_ino);
    h = fnv_u64(h, tk ? nlp_tokbin_fingerprint(tk) : 0);
    h = fnv_u64(h, extra);
    h = fnv_u64(h, CACHE_VERSION);
    *key = h, *path_key = pk;
    return 0;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void nlp_cache_name(char *buf, size_t cap, const char *dir, const char *path, uint64_t path_key, uint64_t key,
                    const char *suffix)
{
    snprintf(buf, cap, "%s/%s.%08x.%016llx.%s", dir, base_name(path), (unsigned)(path_key & 0xFFFFFFFFu),
             (unsigned long long)key, suffix);
}

void nlp_cache_remove_stale(const char *dir, const char *path, uint64_t path_key, uint64_t key, const char *suffix)
{
    char prefix[512], keep[600], full[4200];
    snprintf(prefix, sizeof prefix, "%s.%08x.", base_name(path), (unsigned)(path_key & 0xFFFFFFFFu));
    snprintf(keep, sizeof keep, "%s%016llx.%s", prefix, (unsigned long long)key, suffix);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    const size_t pl = strlen(prefix), sl = strlen(suffix);
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        size_t l = strlen(nm);
        if (strncmp(nm, prefix, pl) != 0 || strcmp(nm, keep) == 0) continue;
        const char *tmp = strstr(nm, ".tmp.");
        if (tmp) { /* a temporary of a writer: only when its process is gone */
            long pid = strtol(tmp + 5, NULL, 10);
            if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;
        } else if (l < sl + 1 || strcmp(nm + l - sl, suffix) != 0 || nm[l - sl - 1] != '.')
            continue;
        snprintf(full, sizeof full, "%s/%s", dir, nm);
        unlink(full);
    }
    closedir(d);
}

int nlp_cache_mkdir(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || !*s) {
            char ch = *s;
            *s = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) return nlp_error_errno(NLP_EIO, "cannot create '%s'", p);
            *s = ch;
            if (!ch) break;
        }
    }
    if (!nlp_is_dir(dir)) return nlp_error(NLP_EIO, "cannot create '%s': not a directory", dir);
    return 0;
}

/* Tokenizes text file `path` into the token stream `out` (atomically). */
static int build_cache(const char *path, const char *out, const nlp_tokenizer *tk, int32_t eot, int threads,
                       size_t max_line, uint64_t *docs, uint64_t *repaired, uint64_t *bytes)
{
    nlp_text_blocks tb;
    nlp_writer *w = NULL;
    nlp_tokbin_writer *bw = NULL;
    nlp_ids ids = {0};
    int rc = nlp_text_blocks_open(&tb, path);
    if (rc) return rc;
    tb.max_line = max_line;
    if ((rc = nlp_writer_open(&w, out, 0)) ||
        (rc = nlp_tokbin_writer_new_fp(&bw, w, (uint32_t)nlp_tokenizer_vocab_size(tk), eot,
                                       nlp_tokbin_fingerprint(tk))))
        goto out;
    const char *text;
    size_t len;
    uint64_t line;
    *docs = 0;
    while ((rc = nlp_text_blocks_next(&tb, &text, &len, &line)) == 1) {
        uint64_t nd = 0;
        ids.n = 0;
        if ((rc = nlp_tokenize_block(tk, text, len, path, line, eot, threads, &ids, &nd, repaired))) break;
        if (!nd) continue;
        /* a separator before the block's first document unless it is the first */
        rc = eot >= 0 ? nlp_tokbin_write_doc(bw, ids.v, ids.n) : nlp_tokbin_write_more(bw, ids.v, ids.n);
        if (rc) break;
        *docs += nd;
    }
    *bytes = tb.bytes;
out:
    nlp_tokbin_writer_free(bw);
    if (w) {
        if (rc < 0) nlp_writer_abort(w);
        else rc = nlp_writer_close(w);
    }
    nlp_ids_free(&ids);
    nlp_text_blocks_close(&tb);
    return rc < 0 ? rc : 0;
}

/* The cache's header says it is the tokenizer's, as its name does. */
static int cache_fits(const char *name, const nlp_tokenizer *tk, int32_t eot)
{
    nlp_reader *r = NULL;
    nlp_tokbin_reader *br = NULL;
    int ok = 0;
    if (nlp_reader_open(&r, name) == 0 && nlp_tokbin_reader_new(&br, r, -1) == 0) {
        const nlp_tokbin_info *in = nlp_tokbin_reader_info(br);
        ok = in->kind == NLP_TOKBIN_NLPIPE && in->vocab_size == nlp_tokenizer_vocab_size(tk) &&
             in->tokenizer == nlp_tokbin_fingerprint(tk) && in->eot == (eot >= 0 ? eot : -1);
    }
    nlp_tokbin_reader_free(br);
    nlp_reader_close(r);
    nlp_error_clear();
    return ok;
}

int nlp_corpus_add_cached(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, uint32_t vocab,
                          int threads, const char *dir, int dry, int *built)
{
    if (built) *built = 0;
    if (!dir || !is_regular(path)) return nlp_corpus_add(c, path, tk, eot, vocab, threads);
    unsigned char head[4];
    size_t got = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return nlp_error_errno(NLP_EIO, "cannot open '%s'", path);
    got = fread(head, 1, 4, f);
    fclose(f);
    if (got == 4 && nlp_tokbin_sniff(head)) return add_mapped(c, path, vocab);
    if (!tk) return not_a_stream(path, NULL);
    uint64_t key, pk;
    char name[4400];
    int rc = nlp_cache_key(path, tk, (uint64_t)(int64_t)eot, &key, &pk);
    if (rc) return rc;
    nlp_cache_name(name, sizeof name, dir, path, pk, key, "bin");
    if (nlp_file_exists(name) && !cache_fits(name, tk, eot)) unlink(name); /* not this tokenizer's: made anew */
    if (!nlp_file_exists(name)) {
        if (dry) {
            if (built) *built = -1;
            return 0;
        }
        uint64_t docs = 0, repaired = 0, bytes = 0;
        if ((rc = nlp_cache_mkdir(dir))) return rc;
        nlp_cache_remove_stale(dir, path, pk, key, "bin");
        if ((rc = build_cache(path, name, tk, eot, threads, c->max_line, &docs, &repaired, &bytes))) return rc;
        c->repaired += repaired;
        if (built) *built = 1;
    }
    if ((rc = add_mapped(c, name, vocab))) return rc;
    struct stat st;
    if (stat(path, &st) == 0) c->bytes += (uint64_t)st.st_size;
    return 0;
}

// --- pipes

struct nlp_corpus_pipe {
    nlp_reader *r;
    nlp_tokbin_reader *br;      /* a stream */
    nlp_text_blocks tb;         /* or text */
    int text;
    const nlp_tokenizer *tk;
    int32_t eot;
    int threads;
    nlp_ids pend;               /* ids made, not yet taken: pend.v[at..] */
    size_t at;
    int started, ended, wrapped;
    uint64_t total;
    /* the buffer: a ring of cap ids once full, its oldest at head */
    int32_t *ring;
    size_t cap, size, filled, head;
    char *name;
    nlp_tokbin_info info;       /* a stream's header */
};

/* More ids into p->pend: 1, 0 at the end, or an error. */
static int pipe_more(nlp_corpus_pipe *p, nlp_corpus *c)
{
    p->pend.n = 0, p->at = 0;
    if (p->text) {
        const char *text;
        size_t len;
        uint64_t line, docs = 0;
        for (;;) {
            int rc = nlp_text_blocks_next(&p->tb, &text, &len, &line);
            if (rc <= 0) return rc;
            if (p->started && p->eot >= 0 && (rc = nlp_ids_push(&p->pend, p->eot))) return rc;
            size_t sep = p->pend.n;
            if ((rc = nlp_tokenize_block(p->tk, text, len, p->name, line, p->eot, p->threads, &p->pend, &docs,
                                         &c->repaired)))
                return rc;
            c->bytes += len;
            if (docs) {
                c->docs += docs;
                p->started = 1;
                return 1;
            }
            p->pend.n = sep ? sep - 1 : 0; /* no document: no separator */
        }
    }
    nlp_ids doc = {0};
    int rc = nlp_tokbin_next_doc(p->br, &doc);
    if (rc == 1) {
        c->docs++;
        if ((p->started && p->eot >= 0 && nlp_ids_push(&p->pend, p->eot)) || nlp_ids_append(&p->pend, doc.v, doc.n))
            rc = NLP_ENOMEM;
        p->started = 1;
    }
    nlp_ids_free(&doc);
    return rc;
}

/* Takes up to n ids into dst; *got < n only at the end of the pipe. */
static int pipe_take(nlp_corpus_pipe *p, nlp_corpus *c, int32_t *dst, size_t n, size_t *got)
{
    *got = 0;
    while (*got < n && !p->ended) {
        if (p->at == p->pend.n) {
            int rc = pipe_more(p, c);
            if (rc < 0) return rc;
            if (rc == 0) {
                p->ended = 1;
                break;
            }
            continue;
        }
        size_t k = p->pend.n - p->at;
        if (k > n - *got) k = n - *got;
        memcpy(dst + *got, p->pend.v + p->at, k * sizeof *dst);
        p->at += k, *got += k;
    }
    p->total += *got;
    return 0;
}

int nlp_corpus_open_pipe(nlp_corpus *c, const char *path, const nlp_tokenizer *tk, int32_t eot, uint32_t vocab,
                         size_t buffer, int threads)
{
    if (c->n || c->pipe) return nlp_error(NLP_EINVAL, "'%s': a pipe must be the only training input", path);
    if (buffer < 2) buffer = 2;
    nlp_corpus_pipe *p = nlp_calloc(1, sizeof *p);
    const char *s;
    size_t got;
    if (!p) return NLP_ENOMEM;
    int rc = nlp_reader_open(&p->r, path);
    if (rc) {
        free(p);
        return rc;
    }
    c->pipe = p;
    p->cap = buffer, p->tk = tk, p->threads = threads;
    if (!(p->name = nlp_strdup(path))) return NLP_ENOMEM;
    if ((rc = nlp_reader_peek(p->r, 4, &s, &got))) return rc;
    if (got == 4 && nlp_tokbin_sniff((const unsigned char *)s)) {
        if ((rc = nlp_tokbin_reader_new(&p->br, p->r, c->eot))) return rc;
        p->info = *nlp_tokbin_reader_info(p->br);
        if ((rc = vocab_fits(&p->info, path, vocab)) || (rc = eot_agrees(c, &p->info, path))) return rc;
        if (vocab) nlp_tokbin_reader_limit(p->br, vocab, NULL);
        if (p->info.vocab_size > c->vocab) c->vocab = p->info.vocab_size;
        p->eot = c->eot;
    } else {
        if (!tk) return not_a_stream(path, p->r);
        blocks_borrow(&p->tb, p->r);
        p->tb.max_line = c->max_line;
        p->text = 1;
        p->eot = c->eot = eot;
    }
    /* the first fill: the whole buffer, or the whole pipe */
    while (p->filled < p->cap && !p->ended) {
        size_t want = p->cap - p->filled;
        if (want > ((size_t)1 << 20)) want = (size_t)1 << 20;
        if (p->filled + want > p->size) { /* doubling, to the buffer's size at most */
            size_t sz = p->size * 2 > p->filled + want ? p->size * 2 : p->filled + want;
            if (sz > p->cap) sz = p->cap;
            int32_t *nr = realloc(p->ring, sz * sizeof *nr);
            if (!nr) return NLP_ENOMEM;
            p->ring = nr, p->size = sz;
        }
        if ((rc = pipe_take(p, c, p->ring + p->filled, want, &got))) return rc;
        p->filled += got;
    }
    c->n = p->filled;
    c->held = (uint64_t)p->size * sizeof *p->ring;
    for (size_t i = 0; i < p->filled; i++)
        if ((uint32_t)p->ring[i] + 1 > c->max_id) c->max_id = (uint32_t)p->ring[i] + 1;
    return 0;
}

int nlp_corpus_is_pipe(const nlp_corpus *c, uint64_t *total, int *ended, int *text)
{
    if (!c->pipe) return 0;
    if (total) *total = c->pipe->total;
    if (ended) *ended = c->pipe->ended;
    if (text) *text = c->pipe->text;
    return 1;
}

/* After a micro-batch: the oldest `n` ids replaced by the pipe's next. */
static int pipe_refill(nlp_corpus *c, size_t n)
{
    nlp_corpus_pipe *p = c->pipe;
    if (p->ended || p->filled < p->cap) return 0;
    while (n && !p->ended) {
        size_t k = p->cap - p->head, got;
        if (k > n) k = n;
        int rc = pipe_take(p, c, p->ring + p->head, k, &got);
        if (rc) return rc;
        for (size_t i = 0; i < got; i++)
            if ((uint32_t)p->ring[p->head + i] + 1 > c->max_id) c->max_id = (uint32_t)p->ring[p->head + i] + 1;
        p->head = (p->head + got) % p->cap;
        n -= got;
        p->wrapped = 1;
    }
    return 0;
}

static void pipe_free(nlp_corpus_pipe *p)
{
    if (!p) return;
    nlp_tokbin_reader_free(p->br);
    if (p->text) nlp_text_blocks_close(&p->tb);
    nlp_reader_close(p->r);
    nlp_ids_free(&p->pend);
    free(p->ring), free(p->name), free(p);
}

// --- reading

static int bad_id(const nlp_corpus_part *p, size_t i, uint32_t v, uint64_t limit, int header)
{
    if (p->map.data) /* past the header's vocabulary: a corrupt stream; past the model's: another tokenizer's */
        return nlp_error(header ? NLP_EFORMAT : NLP_EDATA, "'%s' byte %llu: id %lu is not below the vocabulary size "
                         "%llu%s", p->name, (unsigned long long)(p->off + i * p->width), (unsigned long)v,
                         (unsigned long long)limit, header ? " of the header" : " of the model");
    return nlp_error(NLP_EDATA, "token %zu is id %lu, not below the model's vocabulary size %llu", p->start + i,
                     (unsigned long)v, (unsigned long long)limit);
}

/* Ids [a, a + n) of part p (relative to it) into dst. */
static int read_part(const nlp_corpus *c, const nlp_corpus_part *p, size_t a, size_t n, int32_t *dst)
{
    uint64_t lim = (uint64_t)INT32_MAX + 1;
    if (c->limit && c->limit < lim) lim = c->limit;
    if (p->limit && p->limit < lim) lim = p->limit;
    if (!n) return 0;
    if (!p->map.data) {
        memcpy(dst, p->ids + a, n * sizeof *dst);
        for (size_t i = 0; i < n; i++)
            if ((uint64_t)(uint32_t)dst[i] >= lim) return bad_id(p, a + i, (uint32_t)dst[i], lim, 0);
        return 0;
    }
    int rc = nlp_mapped_check(&p->map);
    if (rc) return rc;
    const uint64_t hv = p->vocab ? p->vocab : lim;
    const unsigned char *s = p->map.data + p->off + a * p->width;
    uint32_t bad = 0;
    if (p->width == 2) {
        const uint16_t *u = (const uint16_t *)(const void *)s; /* little-endian machines only (as the rest) */
        for (size_t i = 0; i < n; i++) {
            uint32_t v = u[i];
            bad |= v >= hv || v >= lim;
            dst[i] = (int32_t)v;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, s + 4 * i, 4);
            bad |= v >= hv || v >= lim;
            dst[i] = (int32_t)v;
        }
    }
    nlp_mapped_release(&p->map, p->off + a * p->width, n * p->width);
    if (bad)
        for (size_t i = 0; i < n; i++) {
            uint32_t v = (uint32_t)dst[i];
            if (v >= hv) return bad_id(p, a + i, v, hv, p->vocab != 0);
            if (v >= lim) return bad_id(p, a + i, v, lim, 0);
        }
    return 0;
}

/* The part holding id i. */
static size_t find_part(const nlp_corpus *c, size_t i)
{
    size_t lo = 0, hi = c->nparts;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (c->part[mid].start <= i) lo = mid;
        else hi = mid;
    }
    return lo;
}

int nlp_corpus_read(const nlp_corpus *c, size_t at, size_t n, int32_t *dst)
{
    NLP_ASSERT(at + n <= c->n);
    if (c->pipe) {
        const nlp_corpus_pipe *p = c->pipe;
        size_t s = (p->head + at) % p->cap, k = p->cap - s < n ? p->cap - s : n;
        memcpy(dst, p->ring + s, k * sizeof *dst);
        if (k < n) memcpy(dst + k, p->ring, (n - k) * sizeof *dst);
        return 0;
    }
    for (size_t q = n ? find_part(c, at) : 0; n; q++) {
        const nlp_corpus_part *p = &c->part[q];
        size_t a = at - p->start, k = p->n - a < n ? p->n - a : n;
        int rc = read_part(c, p, a, k, dst);
        if (rc) return rc;
        dst += k, at += k, n -= k;
    }
    return 0;
}

int nlp_corpus_check_tokenizer(const nlp_corpus *c, const nlp_tokenizer *tk, const char *tk_name, int32_t eot)
{
    const uint64_t fp = nlp_tokbin_fingerprint(tk);
    const size_t V = nlp_tokenizer_vocab_size(tk);
    size_t np = c->nparts;
    for (size_t q = 0; q <= np; q++) {
        const char *name;
        uint64_t tfp;
        uint32_t vocab;
        int64_t seot;
        if (q < np) {
            const nlp_corpus_part *p = &c->part[q];
            if (!p->name || p->llmc || !p->vocab) continue;
            name = p->name, tfp = p->tokenizer, vocab = p->vocab, seot = p->eot;
        } else {
            if (!c->pipe || c->pipe->text || c->pipe->info.kind != NLP_TOKBIN_NLPIPE) continue;
            name = c->pipe->name, tfp = c->pipe->info.tokenizer, vocab = c->pipe->info.vocab_size;
            seot = c->pipe->info.eot;
        }
        if (tfp && tfp != fp)
            return nlp_error(NLP_EDATA, "'%s' was made by another tokenizer than '%s' (its header records the "
                             "fingerprint of another vocabulary): re-make it with 'tokenize -m %s --output-format "
                             "bin'", name, tk_name, tk_name);
        if (!tfp && vocab != V)
            return nlp_error(NLP_EDATA, "'%s' holds ids of a %u-token vocabulary, '%s' has %zu tokens: it was made by "
                             "another tokenizer", name, vocab, tk_name, V);
        if (seot >= 0 && eot >= 0 && seot != eot) {
            size_t n1 = 0, n2 = 0;
            const char *a = nlp_tokenizer_id_to_token(tk, (int32_t)seot, &n1);
            const char *b = nlp_tokenizer_id_to_token(tk, eot, &n2);
            return nlp_error(NLP_EDATA, "'%s' separates documents with id %lld ('%.*s'), but '%s' ends text with id %d "
                             "('%.*s'): give --eot '%.*s', or re-make the stream", name, (long long)seot,
                             (int)(a ? n1 : 1), a ? a : "?", tk_name, eot, (int)(b ? n2 : 1), b ? b : "?",
                             (int)(a ? n1 : 1), a ? a : "?");
        }
    }
    return 0;
}

/* Ids read at a time by the scans below. */
#define SCAN_CHUNK ((size_t)1 << 16)

int nlp_corpus_count_bytes(nlp_corpus *c, const nlp_tokenizer *tk)
{
    nlp_buf b = {0};
    nlp_ids doc = {0};
    uint64_t bytes = 0;
    int32_t *buf = nlp_malloc(SCAN_CHUNK * sizeof *buf);
    int rc = buf ? 0 : NLP_ENOMEM;
    for (size_t at = 0; at < c->n && !rc; at += SCAN_CHUNK) {
        size_t k = c->n - at < SCAN_CHUNK ? c->n - at : SCAN_CHUNK;
        if ((rc = nlp_corpus_read(c, at, k, buf))) break;
        for (size_t i = 0; i < k && !rc; i++) {
            if (buf[i] != c->eot) {
                if (nlp_ids_push(&doc, buf[i])) rc = NLP_ENOMEM;
                continue;
            }
            nlp_buf_reset(&b);
            if (!(rc = nlp_tokenizer_decode(tk, doc.v, doc.n, 1, &b, NULL))) bytes += b.len + 1;
            doc.n = 0;
        }
    }
    if (!rc && c->n) { /* the last document */
        nlp_buf_reset(&b);
        if (!(rc = nlp_tokenizer_decode(tk, doc.v, doc.n, 1, &b, NULL))) bytes += b.len + 1;
    }
    free(buf);
    nlp_ids_free(&doc);
    nlp_buf_free(&b);
    if (!rc) c->bytes += bytes;
    return rc;
}

int nlp_corpus_fingerprint(const nlp_corpus *c, uint64_t *out)
{
    uint64_t h = FNV0;
    int32_t *buf = nlp_malloc(SCAN_CHUNK * sizeof *buf);
    if (!buf) return NLP_ENOMEM;
    int rc = 0;
    const size_t all = (size_t)1 << 24, blk = 4096, nb = 256;
    if (c->n <= all) {
        for (size_t at = 0; at < c->n && !rc; at += SCAN_CHUNK) {
            size_t k = c->n - at < SCAN_CHUNK ? c->n - at : SCAN_CHUNK;
            if ((rc = nlp_corpus_read(c, at, k, buf))) break;
            for (size_t i = 0; i < k; i++) h = (h ^ (uint32_t)buf[i]) * FNVP;
        }
    } else {
        h = fnv_u64(h, c->n);
        for (size_t j = 0; j < nb && !rc; j++) {
            size_t at = (c->n - blk) / (nb - 1) * j;
            if ((rc = nlp_corpus_read(c, at, blk, buf))) break;
            for (size_t i = 0; i < blk; i++) h = (h ^ (uint32_t)buf[i]) * FNVP;
        }
    }
    free(buf);
    *out = h;
    return rc;
}

uint64_t nlp_corpus_memory(const nlp_corpus *c)
{
    return c->pipe ? (uint64_t)c->pipe->size * sizeof(int32_t) + c->pipe->pend.cap * sizeof(int32_t) + c->pipe->tb.cap
                   : c->held;
}

void nlp_corpus_free(nlp_corpus *c)
{
    for (size_t q = 0; q < c->nparts; q++) {
        free(c->part[q].ids);
        free(c->part[q].name);
        nlp_mapped_close(&c->part[q].map);
    }
    free(c->part);
    pipe_free(c->pipe);
    memset(c, 0, sizeof *c);
    c->eot = -1;
}

int nlp_corpus_windows(nlp_corpus *c, nlp_rng *r, int B, int T, int32_t *ids)
{
    NLP_ASSERT((size_t)T <= c->n);
    for (int b = 0; b < B; b++) {
        size_t s = (size_t)nlp_rng_below(r, c->n - (size_t)T + 1);
        int rc = nlp_corpus_read(c, s, (size_t)T, ids + (size_t)b * T);
        if (rc) return rc;
    }
    return c->pipe ? pipe_refill(c, (size_t)B * T) : 0;
}

size_t nlp_corpus_eval_windows(const nlp_corpus *c, int T)
{
    if (c->n < 2 || T < 2) return 0;
    return (c->n - 1 + (size_t)T - 2) / (size_t)(T - 1);
}

int nlp_corpus_eval_window(const nlp_corpus *c, int T, size_t k, int32_t *dst, int *len)
{
    size_t s = k * (size_t)(T - 1), n = c->n - s;
    *len = n < (size_t)T ? (int)n : T;
    return nlp_corpus_read(c, s, (size_t)*len, dst);
}
