/*
 * mt.c — parallel text and the translation task. See mt.h.
 */
#include "train/mt.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "text/utf8.h"
#include "tok/tokbin.h"
#include "train/data.h"
#include "train/dist.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// --- reading

/* nlp_tokenize_lines, its messages' line numbers from first + 1. */
static int tokenize_lines_at(const nlp_tokenizer *tk, const char *const *line, const size_t *len, size_t n,
                             const char *path, uint64_t first, int threads, int32_t **ids_out, size_t **off_out,
                             uint64_t *repaired, const char *prefix)
{
    const size_t plen = prefix ? strlen(prefix) : 0;
    if (threads <= 0) threads = nlp_cpu_count();
    size_t nchunk = (size_t)threads * 8;
    if (nchunk > n) nchunk = n ? n : 1;
    int rc = 0;
    nlp_ids *out = nlp_calloc(nchunk, sizeof *out);
    size_t *off = nlp_malloc((n + 1) * sizeof *off); /* per line: length, then prefix sums */
    uint64_t *fixed = nlp_calloc(nchunk, sizeof *fixed);
    int *err = nlp_calloc(nchunk, sizeof *err);
    char **msg = nlp_calloc(nchunk, sizeof *msg);
    size_t *bad = nlp_calloc(nchunk, sizeof *bad);
    int32_t *ids = NULL;
    if (!out || !off || !fixed || !err || !msg || !bad) {
        rc = NLP_ENOMEM;
        goto done;
    }
#pragma omp parallel num_threads(threads)
    {
        nlp_tok_state *st = nlp_tok_state_new(tk);
        nlp_buf fix = {0}, cat = {0};
#pragma omp for schedule(dynamic, 1)
        for (size_t k = 0; k < nchunk; k++) {
            if (!st) {
                err[k] = NLP_ENOMEM;
                continue;
            }
            size_t a = n * k / nchunk, b = n * (k + 1) / nchunk;
            for (size_t i = a; i < b && !err[k]; i++) {
                const char *s = line[i];
                size_t m = len[i];
                size_t before = out[k].n;
                if (m && !nlp_utf8_valid(s, m, NULL)) {
                    nlp_buf_reset(&fix);
                    if (nlp_utf8_repair(s, m, &fix, NULL)) {
                        err[k] = NLP_ENOMEM;
                        break;
                    }
                    s = fix.data, m = fix.len;
                    fixed[k]++;
                }
                if (m && plen) { /* the task prefix, T5's way: text before the line, tokenized with it */
                    nlp_buf_reset(&cat);
                    if (nlp_buf_append(&cat, prefix, plen) || nlp_buf_append(&cat, s, m)) {
                        err[k] = NLP_ENOMEM;
                        break;
                    }
                    s = cat.data, m = cat.len;
                }
                int r = m ? nlp_tokenizer_encode_ids(tk, st, s, m, 0, &out[k]) : 0;
                if (r) {
                    err[k] = r, bad[k] = i;
                    msg[k] = nlp_strdup(nlp_errmsg());
                }
                off[i] = out[k].n - before;
            }
        }
        nlp_buf_free(&fix);
        nlp_buf_free(&cat);
        nlp_tok_state_free(st);
    }
    size_t total = 0;
    for (size_t k = 0; k < nchunk; k++) {
        if (err[k]) {
            rc = msg[k] ? nlp_error(err[k], "'%s' line %llu: %s", path, (unsigned long long)(first + bad[k] + 1), msg[k])
                        : err[k];
            goto done;
        }
        total += out[k].n;
    }
    if (!(ids = nlp_malloc((total ? total : 1) * sizeof *ids))) {
        rc = NLP_ENOMEM;
        goto done;
    }
    size_t pos = 0;
    for (size_t k = 0; k < nchunk; k++) {
        if (out[k].n) memcpy(ids + pos, out[k].v, out[k].n * sizeof *ids);
        pos += out[k].n;
        if (repaired) *repaired += fixed[k];
    }
    size_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = off[i];
        off[i] = acc;
        acc += l;
    }
    off[n] = acc;
done:
    for (size_t k = 0; out && k < nchunk; k++) nlp_ids_free(&out[k]);
    for (size_t k = 0; msg && k < nchunk; k++) free(msg[k]);
    free(out), free(fixed), free(err), free(msg), free(bad);
    if (rc) {
        free(off), free(ids);
        return rc;
    }
    *ids_out = ids, *off_out = off;
    return 0;
}

int nlp_tokenize_lines(const nlp_tokenizer *tk, const char *const *line, const size_t *len, size_t n,
                       const char *path, int threads, int32_t **ids_out, size_t **off_out, uint64_t *repaired)
{
    return tokenize_lines_at(tk, line, len, n, path, 0, threads, ids_out, off_out, repaired, NULL);
}

int nlp_tokenize_lines_at(const nlp_tokenizer *tk, const char *const *line, const size_t *len, size_t n,
                          const char *path, uint64_t first, int threads, int32_t **ids_out, size_t **off_out,
                          uint64_t *repaired)
{
    return tokenize_lines_at(tk, line, len, n, path, first, threads, ids_out, off_out, repaired, NULL);
}

int nlp_pairs_read(nlp_pairs *p, const char *src_path, const char *tgt_path, const nlp_pairs_opts *o)
{
    memset(p, 0, sizeof *p);
    char *st = NULL, *tt = NULL;
    size_t sl, tl, ns = 0, nt = 0;
    char **sline = NULL, **tline = NULL;
    size_t *slen = NULL, *tlen = NULL;
    int32_t *sids = NULL, *tids = NULL;
    size_t *soff = NULL, *toff = NULL;
    const char *tname = tgt_path ? tgt_path : src_path;
    int rc;
    if ((rc = nlp_read_file_lines(src_path, o->max_line, &st, &sl)) ||
        (rc = nlp_split_lines(st, sl, &sline, &slen, &ns)))
        goto out;
    if (tgt_path) {
        if ((rc = nlp_read_file_lines(tgt_path, o->max_line, &tt, &tl)) ||
            (rc = nlp_split_lines(tt, tl, &tline, &tlen, &nt)))
            goto out;
        if (ns != nt) {
            rc = nlp_error(NLP_EDATA, "'%s' has %zu line%s and '%s' has %zu: the files of a parallel corpus must "
                           "align line by line", src_path, ns, ns == 1 ? "" : "s", tgt_path, nt);
            goto out;
        }
    } else { /* TSV: source<TAB>target */
        nt = ns;
        if (!(tline = nlp_malloc((ns ? ns : 1) * sizeof *tline)) || !(tlen = nlp_malloc((ns ? ns : 1) * sizeof *tlen))) {
            rc = NLP_ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < ns; i++) {
            const char *tab = memchr(sline[i], '\t', slen[i]);
            if (!tab) {
                if (!slen[i]) { /* an empty line: an empty pair */
                    tline[i] = sline[i], tlen[i] = 0;
                    continue;
                }
                rc = nlp_error(NLP_EDATA, "'%s' line %zu: no tab: a TSV of parallel text has 'source<TAB>target' "
                               "lines", src_path, i + 1);
                goto out;
            }
            size_t a = (size_t)(tab - sline[i]);
            tline[i] = (char *)tab + 1, tlen[i] = slen[i] - a - 1;
            if (memchr(tline[i], '\t', tlen[i])) {
                rc = nlp_error(NLP_EDATA, "'%s' line %zu: more than one tab: a TSV of parallel text has "
                               "'source<TAB>target' lines", src_path, i + 1);
                goto out;
            }
            slen[i] = a;
        }
    }
    if ((rc = tokenize_lines_at(o->src_tk, (const char *const *)sline, slen, ns, src_path, 0, o->threads, &sids, &soff,
                                &p->repaired, o->src_prefix)) ||
        (rc = nlp_tokenize_lines(o->tgt_tk, (const char *const *)tline, tlen, nt, tname, o->threads, &tids, &toff,
                                 &p->repaired)))
        goto out;
    /* filter, compacting in place */
    p->lines = ns;
    if (!(p->src_off = nlp_malloc((ns + 1) * sizeof *p->src_off)) ||
        !(p->tgt_off = nlp_malloc((ns + 1) * sizeof *p->tgt_off)) ||
        !(p->line = nlp_malloc((ns ? ns : 1) * sizeof *p->line)) ||
        (o->keep_text && !(p->ref = nlp_calloc(ns ? ns : 1, sizeof *p->ref)))) {
        rc = NLP_ENOMEM;
        goto out;
    }
    size_t k = 0, spos = 0, tpos = 0;
    p->src_off[0] = p->tgt_off[0] = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t a = soff[i + 1] - soff[i], b = toff[i + 1] - toff[i];
        if (!o->keep_empty && (!a || !b)) {
            p->empty++;
            continue;
        }
        if (o->max_len > 0 && (a + 1 > (size_t)o->max_len || b + 1 > (size_t)o->max_len)) {
            p->too_long++;
            continue;
        }
        memmove(sids + spos, sids + soff[i], a * sizeof *sids);
        memmove(tids + tpos, tids + toff[i], b * sizeof *tids);
        spos += a, tpos += b;
        if ((int)a > p->src_max) p->src_max = (int)a;
        if ((int)b > p->tgt_max) p->tgt_max = (int)b;
        p->line[k] = i + 1;
        if (o->keep_text) {
            char *s = nlp_malloc(tlen[i] + 1);
            if (!s) {
                rc = NLP_ENOMEM;
                goto out;
            }
            memcpy(s, tline[i], tlen[i]);
            s[tlen[i]] = 0;
            p->ref[k] = s;
        }
        k++;
        p->src_off[k] = spos, p->tgt_off[k] = tpos;
    }
    p->n = k;
    p->src = sids, p->tgt = tids, sids = tids = NULL;
    p->src_tokens = spos, p->tgt_tokens = tpos;
out:
    free(st), free(tt), free(sline), free(tline), free(slen), free(tlen);
    free(sids), free(tids), free(soff), free(toff);
    if (rc) nlp_pairs_free(p);
    return rc;
}

void nlp_pairs_free(nlp_pairs *p)
{
    if (p->ref)
        for (size_t i = 0; i < p->n; i++) free(p->ref[i]);
    free(p->ref);
    if (p->map.data) nlp_mapped_close(&p->map);
    else free(p->src), free(p->tgt), free(p->src_off), free(p->tgt_off), free(p->line);
    memset(p, 0, sizeof *p);
    p->map.fd = -1;
}

uint64_t nlp_pairs_memory(const nlp_pairs *p)
{
    if (p->map.data) return 0;
    return 4 * (uint64_t)(p->src_tokens + p->tgt_tokens) + 24 * (uint64_t)p->n;
}

// --- the cache (mt.h)

#define PAIRS_TRAILER 72

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static void wr32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (8 * k));
}

static void wr64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++) p[k] = (unsigned char)(v >> (8 * k));
}

/* Maps a cache into p (empty), checking it through. */
static int pairs_load(nlp_pairs *p, const char *path, uint64_t sfp, uint64_t tfp)
{
    _Static_assert(sizeof(size_t) == 8, "the cache's offsets are read as size_t");
    nlp_mapped m;
    const char *why = "not a cache of sentence pairs (its magic, version or size)";
    int rc = nlp_mapped_open(&m, path);
    if (rc) return rc;
    const unsigned char *b = m.data;
    if (m.len < 24 + PAIRS_TRAILER || memcmp(b, "NLPR", 4) != 0 || rd32(b + 4) != 1) goto bad;
    why = "made with other tokenizers";
    if (rd64(b + 8) != sfp || rd64(b + 16) != tfp) goto bad;
    why = "damaged (its trailer)";
    const unsigned char *t = b + m.len - PAIRS_TRAILER;
    uint64_t h[7];
    for (int k = 0; k < 7; k++) h[k] = rd64(t + 8 * k);
    if (memcmp(t + 64, "NLPE", 4) != 0 || rd32(t + 68) != 1) goto bad;
    const uint64_t n = h[0], ns = h[1], nt = h[2];
    const uint32_t smax = rd32(t + 56), tmax = rd32(t + 60);
    if (n > m.len / 8 || ns > m.len / 4 || nt > m.len / 4 || smax > INT32_MAX || tmax > INT32_MAX) goto bad;
    uint64_t a = 24 + 4 * ns;
    a += a % 8;
    uint64_t c = a + 4 * nt;
    c += c % 8;
    if (c + 8 * (2 * (n + 1) + n) + PAIRS_TRAILER != m.len) goto bad;
    why = "damaged (its offsets)";
    const size_t *so = (const size_t *)(const void *)(b + c), *to = so + n + 1;
    if (so[0] != 0 || so[n] != ns || to[0] != 0 || to[n] != nt) goto bad;
    uint64_t ms = 0, mt = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (so[i + 1] < so[i] || to[i + 1] < to[i]) goto bad;
        if (so[i + 1] - so[i] > ms) ms = so[i + 1] - so[i];
        if (to[i + 1] - to[i] > mt) mt = to[i + 1] - to[i];
    }
    if (ms != smax || mt != tmax) goto bad;
    nlp_mapped_release(&m, 0, m.len);
    memset(p, 0, sizeof *p);
    p->n = n;
    p->src = (int32_t *)(const void *)(b + 24), p->tgt = (int32_t *)(const void *)(b + a);
    p->src_off = (size_t *)so, p->tgt_off = (size_t *)to, p->line = (uint64_t *)(const void *)(to + n + 1);
    p->lines = h[3], p->empty = h[4], p->too_long = h[5], p->repaired = h[6];
    p->src_tokens = ns, p->tgt_tokens = nt, p->src_max = (int)smax, p->tgt_max = (int)tmax;
    p->map = m;
    return 0;
bad:
    nlp_mapped_close(&m);
    return nlp_error(NLP_EFORMAT, "'%s': not a cache of sentence pairs to use: %s", path, why);
}

/* One side of the pairs being cached: its ids in an unnamed scratch file,
 * the length of each line in memory. */
typedef struct side {
    int fd;
    uint32_t *len;
    size_t n, cap;
    uint64_t tokens;
} side;

static int side_open(side *s, const char *dir)
{
    memset(s, 0, sizeof *s);
    s->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600); /* gone when closed, or at a crash */
    if (s->fd < 0) {
        char p[4300];
        snprintf(p, sizeof p, "%s/.pairs-scratch-XXXXXX", dir);
        if ((s->fd = mkstemp(p)) >= 0) unlink(p);
    }
    if (s->fd < 0) return nlp_error_errno(NLP_EIO, "cannot create a scratch file in '%s'", dir);
    return 0;
}

static void side_close(side *s)
{
    if (s->fd >= 0) close(s->fd);
    free(s->len);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

static int write_all(int fd, const void *buf, size_t n, const char *dir)
{
    const char *p = buf;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return nlp_error_errno(NLP_EIO, "cannot write a scratch file in '%s'", dir);
        p += k, n -= (size_t)k;
    }
    return 0;
}

/* Lines line[0..k) of `path` (from line first + 1) tokenized onto s. */
static int side_add(side *s, const nlp_tokenizer *tk, const char *const *line, const size_t *len, size_t k,
                    const char *path, uint64_t first, int threads, uint64_t *repaired, const char *dir,
                    const char *prefix)
{
    int32_t *ids = NULL;
    size_t *off = NULL;
    int rc = tokenize_lines_at(tk, line, len, k, path, first, threads, &ids, &off, repaired, prefix);
    if (rc) return rc;
    if (nlp_grow(&s->len, &s->cap, s->n + k + 1, sizeof *s->len)) rc = NLP_ENOMEM;
    for (size_t i = 0; i < k && !rc; i++) {
        if (off[i + 1] - off[i] > UINT32_MAX)
            rc = nlp_error(NLP_EDATA, "'%s' line %llu: more than 2^32 tokens", path, (unsigned long long)(first + i + 1));
        else s->len[s->n + i] = (uint32_t)(off[i + 1] - off[i]);
    }
    if (!rc) rc = write_all(s->fd, ids, off[k] * sizeof *ids, dir);
    if (!rc) s->n += k, s->tokens += off[k];
    free(ids), free(off);
    return rc;
}

/* One text file onto s, a block of lines at a time. */
static int side_file(side *s, const char *path, const nlp_tokenizer *tk, int threads, size_t max_line,
                     uint64_t *repaired, const char *dir, const char *prefix)
{
    nlp_text_blocks tb;
    const char *text;
    size_t len, n;
    uint64_t line;
    char **l = NULL;
    size_t *ll = NULL;
    int rc = nlp_text_blocks_open(&tb, path);
    if (rc) return rc;
    tb.max_line = max_line;
    while ((rc = nlp_text_blocks_next(&tb, &text, &len, &line)) == 1) {
        if ((rc = nlp_split_lines((char *)text, len, &l, &ll, &n)) ||
            (rc = side_add(s, tk, (const char *const *)l, ll, n, path, line, threads, repaired, dir, prefix)))
            break;
        free(l), free(ll);
        l = NULL, ll = NULL;
    }
    free(l), free(ll);
    nlp_text_blocks_close(&tb);
    return rc < 0 ? rc : 0;
}

/* A TSV onto both sides, a block of lines at a time. */
static int sides_tsv(side *a, side *b, const char *path, const nlp_pairs_opts *o, uint64_t *repaired,
                     const char *dir)
{
    nlp_text_blocks tb;
    const char *text;
    size_t len, n = 0;
    uint64_t line;
    char **sl = NULL, **tl = NULL;
    size_t *slen = NULL, *tlen = NULL;
    int rc = nlp_text_blocks_open(&tb, path);
    if (rc) return rc;
    tb.max_line = o->max_line;
    while ((rc = nlp_text_blocks_next(&tb, &text, &len, &line)) == 1) {
        if ((rc = nlp_split_lines((char *)text, len, &sl, &slen, &n))) break;
        if (!(tl = nlp_malloc((n ? n : 1) * sizeof *tl)) || !(tlen = nlp_malloc((n ? n : 1) * sizeof *tlen))) {
            rc = NLP_ENOMEM;
            break;
        }
        for (size_t i = 0; i < n && !rc; i++) {
            const char *tab = memchr(sl[i], '\t', slen[i]);
            if (!tab) {
                if (slen[i]) rc = nlp_error(NLP_EDATA, "'%s' line %llu: no tab: a TSV of parallel text has "
                                            "'source<TAB>target' lines", path, (unsigned long long)(line + i + 1));
                tl[i] = sl[i], tlen[i] = 0;
                continue;
            }
            size_t k = (size_t)(tab - sl[i]);
            tl[i] = (char *)tab + 1, tlen[i] = slen[i] - k - 1;
            if (memchr(tl[i], '\t', tlen[i]))
                rc = nlp_error(NLP_EDATA, "'%s' line %llu: more than one tab: a TSV of parallel text has "
                               "'source<TAB>target' lines", path, (unsigned long long)(line + i + 1));
            slen[i] = k;
        }
        if (rc || (rc = side_add(a, o->src_tk, (const char *const *)sl, slen, n, path, line, o->threads, repaired,
                                 dir, o->src_prefix)) ||
            (rc = side_add(b, o->tgt_tk, (const char *const *)tl, tlen, n, path, line, o->threads, repaired, dir,
                           NULL)))
            break;
        free(sl), free(tl), free(slen), free(tlen);
        sl = tl = NULL, slen = tlen = NULL;
    }
    free(sl), free(tl), free(slen), free(tlen);
    nlp_text_blocks_close(&tb);
    return rc < 0 ? rc : 0;
}

/* Buffered little-endian values to a writer. */
typedef struct vals {
    nlp_writer *w;
    unsigned char buf[1 << 15];
    size_t n;
    int rc;
} vals;

static void put64(vals *v, uint64_t x)
{
    if (v->n + 8 > sizeof v->buf) {
        if (!v->rc) v->rc = nlp_writer_write(v->w, v->buf, v->n);
        v->n = 0;
    }
    wr64(v->buf + v->n, x);
    v->n += 8;
}

static int vals_flush(vals *v)
{
    if (!v->rc && v->n) v->rc = nlp_writer_write(v->w, v->buf, v->n);
    v->n = 0;
    return v->rc;
}

static int keep_pair(const nlp_pairs_opts *o, uint32_t a, uint32_t b)
{
    return a && b && (o->max_len <= 0 || ((uint64_t)a + 1 <= (uint64_t)o->max_len && (uint64_t)b + 1 <= (uint64_t)o->max_len));
}

/* The ids of the kept lines of side s (mapped from its scratch file). */
static int write_kept(nlp_writer *w, const side *s, const side *a, const side *b, const nlp_pairs_opts *o,
                      const char *dir)
{
    if (!s->tokens) return 0;
    const size_t bytes = s->tokens * sizeof(int32_t);
    void *m = mmap(NULL, bytes, PROT_READ, MAP_SHARED, s->fd, 0);
    if (m == MAP_FAILED) return nlp_error_errno(NLP_EIO, "cannot map a scratch file in '%s'", dir);
    madvise(m, bytes, MADV_SEQUENTIAL);
    const int32_t *ids = m;
    uint64_t at = 0, done = 0;
    int rc = 0;
    for (size_t i = 0; i < s->n && !rc; i++) {
        if (keep_pair(o, a->len[i], b->len[i])) rc = nlp_writer_write(w, ids + at, s->len[i] * sizeof *ids);
        at += s->len[i];
        if ((at - done) * sizeof *ids >= ((size_t)32 << 20)) { /* what was copied goes from memory */
            size_t from = done * sizeof *ids / 4096 * 4096, to = at * sizeof *ids / 4096 * 4096;
            madvise((char *)m + from, to - from, MADV_DONTNEED);
            done = at;
        }
    }
    munmap(m, bytes);
    return rc;
}

static int pairs_build(const char *src_path, const char *tgt_path, const nlp_pairs_opts *o, const char *dir,
                       const char *out, uint64_t sfp, uint64_t tfp)
{
    side a, b;
    uint64_t repaired = 0;
    nlp_writer *w = NULL;
    int rc;
    a.fd = b.fd = -1, a.len = b.len = NULL;
    if ((rc = side_open(&a, dir)) || (rc = side_open(&b, dir))) goto out;
    if (tgt_path) {
        if ((rc = side_file(&a, src_path, o->src_tk, o->threads, o->max_line, &repaired, dir, o->src_prefix)) ||
            (rc = side_file(&b, tgt_path, o->tgt_tk, o->threads, o->max_line, &repaired, dir, NULL)))
            goto out;
        if (a.n != b.n) {
            rc = nlp_error(NLP_EDATA, "'%s' has %zu line%s and '%s' has %zu: the files of a parallel corpus must "
                           "align line by line", src_path, a.n, a.n == 1 ? "" : "s", tgt_path, b.n);
            goto out;
        }
    } else if ((rc = sides_tsv(&a, &b, src_path, o, &repaired, dir)))
        goto out;
    /* the filter: what is kept and its figures */
    uint64_t n = 0, ns = 0, nt = 0, empty = 0, too_long = 0;
    uint32_t smax = 0, tmax = 0;
    for (size_t i = 0; i < a.n; i++) {
        uint32_t x = a.len[i], y = b.len[i];
        if (!x || !y) empty++;
        else if (!keep_pair(o, x, y)) too_long++;
        else {
            n++, ns += x, nt += y;
            if (x > smax) smax = x;
            if (y > tmax) tmax = y;
        }
    }
    if ((rc = nlp_writer_open(&w, out, 0))) goto out;
    unsigned char h[24];
    static const unsigned char zero[8];
    memcpy(h, "NLPR", 4);
    wr32(h + 4, 1), wr64(h + 8, sfp), wr64(h + 16, tfp);
    if ((rc = nlp_writer_write(w, h, sizeof h)) || (rc = write_kept(w, &a, &a, &b, o, dir)) ||
        (rc = nlp_writer_write(w, zero, (24 + 4 * ns) % 8)) || (rc = write_kept(w, &b, &a, &b, o, dir)))
        goto out;
    uint64_t c = 24 + 4 * ns;
    c += c % 8;
    if ((rc = nlp_writer_write(w, zero, (c + 4 * nt) % 8))) goto out;
    static vals v;
    v.w = w, v.n = 0, v.rc = 0;
    for (int k = 0; k < 2; k++) { /* the offsets of each side */
        const side *s = k ? &b : &a;
        uint64_t acc = 0;
        put64(&v, 0);
        for (size_t i = 0; i < a.n; i++)
            if (keep_pair(o, a.len[i], b.len[i])) put64(&v, acc += s->len[i]);
    }
    for (size_t i = 0; i < a.n; i++)
        if (keep_pair(o, a.len[i], b.len[i])) put64(&v, i + 1);
    if ((rc = vals_flush(&v))) goto out;
    unsigned char t[PAIRS_TRAILER];
    const uint64_t f[7] = {n, ns, nt, a.n, empty, too_long, repaired};
    for (int k = 0; k < 7; k++) wr64(t + 8 * k, f[k]);
    wr32(t + 56, smax), wr32(t + 60, tmax);
    memcpy(t + 64, "NLPE", 4);
    wr32(t + 68, 1);
    rc = nlp_writer_write(w, t, sizeof t);
out:
    if (w) {
        if (rc) nlp_writer_abort(w);
        else rc = nlp_writer_close(w);
    }
    side_close(&a), side_close(&b);
    return rc;
}

static int is_file(const char *path)
{
    struct stat st;
    return path && strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int nlp_pairs_read_cached(nlp_pairs *p, const char *src_path, const char *tgt_path, const nlp_pairs_opts *o,
                          const char *dir, int dry, int *built)
{
    if (built) *built = 0;
    if (!dir || o->keep_empty || o->keep_text || !is_file(src_path) || (tgt_path && !is_file(tgt_path)))
        return nlp_pairs_read(p, src_path, tgt_path, o);
    memset(p, 0, sizeof *p);
    p->map.fd = -1;
    uint64_t key, pk, k2 = 0, p2 = 0;
    int rc = nlp_cache_key(src_path, o->src_tk, (uint64_t)o->max_len, &key, &pk);
    if (!rc && tgt_path) rc = nlp_cache_key(tgt_path, o->tgt_tk, 0x5447540001ull, &k2, &p2);
    if (rc) return rc;
    const uint64_t sfp = nlp_tokbin_fingerprint(o->src_tk), tfp = nlp_tokbin_fingerprint(o->tgt_tk);
    key = ((key ^ k2) * 1099511628211ull ^ tfp) * 1099511628211ull;
    if (o->src_prefix && *o->src_prefix) /* the sources' task prefix (none: the key of before) */
        for (const unsigned char *c = (const unsigned char *)o->src_prefix; *c; c++) key = (key ^ *c) * 1099511628211ull;
    pk = (pk ^ p2) * 1099511628211ull;
    char name[4400];
    nlp_cache_name(name, sizeof name, dir, src_path, pk, key, "pairs");
    if (nlp_file_exists(name)) {
        if (pairs_load(p, name, sfp, tfp) == 0) return 0;
        unlink(name); /* other tokenizers', or damaged: made anew */
        nlp_error_clear();
    }
    if (dry) {
        if (built) *built = -1;
        return 0;
    }
    if ((rc = nlp_cache_mkdir(dir))) return rc;
    nlp_cache_remove_stale(dir, src_path, pk, key, "pairs");
    if ((rc = pairs_build(src_path, tgt_path, o, dir, name, sfp, tfp)) || (rc = pairs_load(p, name, sfp, tfp)))
        return rc;
    if (built) *built = 1;
    return 0;
}

// --- batches

static inline int slen(const nlp_pairs *p, size_t i) { return (int)(p->src_off[i + 1] - p->src_off[i]) + 1; }
static inline int tlen(const nlp_pairs *p, size_t i) { return (int)(p->tgt_off[i + 1] - p->tgt_off[i]) + 1; }

typedef struct key {
    uint32_t t, s, r, i;
} key;

static int key_cmp(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->s != y->s) return x->s < y->s ? -1 : 1;
    if (x->r != y->r) return x->r < y->r ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Cuts pairs idx[0..n) (sorted) into batches within max_tokens: cut[k] is
 * where batch k starts, cut[nb] = n; cut NULL only counts them. */
static size_t cut_batches(const nlp_pairs *p, const uint32_t *idx, size_t n, long max_tokens, size_t *cut)
{
    size_t nb = 0, cur = 0;
    long ms = 0, mt = 0;
    for (size_t j = 0; j < n; j++) {
        long s = slen(p, idx[j]), t = tlen(p, idx[j]);
        long ms2 = ms > s ? ms : s, mt2 = mt > t ? mt : t;
        if (cur && (long)(cur + 1) * (ms2 > mt2 ? ms2 : mt2) > max_tokens) {
            if (cut) cut[nb] = j - cur;
            nb++;
            cur = 0, ms2 = s, mt2 = t;
        }
        cur++, ms = ms2, mt = mt2;
    }
    if (cur) {
        if (cut) cut[nb] = n - cur;
        nb++;
    }
    if (cut) cut[nb] = n;
    return nb;
}

/* Builds epoch e's batches (1-based) into t->order / t->cut. The memory of
 * the sort (16 bytes a pair) is gone before the order is made (4 bytes a
 * pair, and the sorted indices as much). */
static int build_epoch(nlp_mt_task *t, uint64_t e)
{
    free(t->order), free(t->cut);
    t->order = NULL, t->cut = NULL, t->nbatch = 0, t->epoch = 0;
    int rc;
    if (t->refresh && (rc = t->refresh(t->refresh_ctx, e))) return rc;
    const nlp_pairs *p = t->train;
    size_t n = p->n, nb;
    key *k = nlp_malloc(n * sizeof *k);
    uint32_t *sorted = nlp_malloc(n * sizeof *sorted), *order = NULL;
    size_t *cut = NULL, *bo = NULL;
    if (!k || !sorted) goto oom;
    nlp_rng base, r;
    nlp_rng_seed(&base, t->seed);
    r = nlp_rng_split(&base, e);
    for (size_t i = 0; i < n; i++) k[i] = (key){(uint32_t)tlen(p, i), (uint32_t)slen(p, i), nlp_rng_u32(&r), (uint32_t)i};
    if (p->map.data) nlp_mapped_release(&p->map, 0, p->map.len); /* the offsets were read through */
    qsort(k, n, sizeof *k, key_cmp);
    for (size_t i = 0; i < n; i++) sorted[i] = k[i].i;
    free(k);
    k = NULL;
    nb = cut_batches(p, sorted, n, t->max_tokens, NULL);
    if (!(cut = nlp_malloc((nb + 1) * sizeof *cut)) || !(bo = nlp_malloc((nb ? nb : 1) * sizeof *bo))) goto oom;
    cut_batches(p, sorted, n, t->max_tokens, cut);
    if (p->map.data) nlp_mapped_release(&p->map, 0, p->map.len);
    /* shuffle the batches, then lay them out in their new order */
    for (size_t b = 0; b < nb; b++) bo[b] = b;
    for (size_t b = nb; b > 1; b--) {
        size_t j = (size_t)nlp_rng_below(&r, b), tmp = bo[b - 1];
        bo[b - 1] = bo[j], bo[j] = tmp;
    }
    if (!(order = nlp_malloc((n ? n : 1) * sizeof *order)) || !(t->cut = nlp_malloc((nb + 1) * sizeof *t->cut)))
        goto oom;
    size_t pos = 0;
    for (size_t b = 0; b < nb; b++) {
        t->cut[b] = pos;
        for (size_t j = cut[bo[b]]; j < cut[bo[b] + 1]; j++) order[pos++] = sorted[j];
    }
    t->cut[nb] = pos;
    t->order = order;
    t->nbatch = nb, t->epoch = e;
    free(sorted), free(cut), free(bo);
    return 0;
oom:
    free(k), free(sorted), free(order), free(cut), free(bo);
    free(t->cut);
    t->cut = NULL;
    return NLP_ENOMEM;
}

/* Fills b with pairs idx[0..n) of p, padded. */
static int fill(nlp_mt_task *t, const nlp_pairs *p, const uint32_t *idx, size_t n, nlp_batch *b)
{
    int S = 0, T = 0;
    for (size_t j = 0; j < n; j++) {
        if (slen(p, idx[j]) > S) S = slen(p, idx[j]);
        if (tlen(p, idx[j]) > T) T = tlen(p, idx[j]);
    }
    size_t need = n * ((size_t)S + 2 * (size_t)T);
    if (need > t->buf_cap) {
        free(t->buf);
        if (!(t->buf = nlp_malloc(need * sizeof *t->buf))) {
            t->buf_cap = 0;
            return NLP_ENOMEM;
        }
        t->buf_cap = need;
    }
    int32_t *src = t->buf, *tin = src + n * S, *tout = tin + n * T;
    for (size_t j = 0; j < n; j++) {
        size_t i = idx[j];
        int a = slen(p, i) - 1, c = tlen(p, i) - 1;
        int32_t *s = src + j * S, *ti = tin + j * T, *to = tout + j * T;
        memcpy(s, p->src + p->src_off[i], (size_t)a * sizeof *s);
        s[a] = t->eos;
        for (int q = a + 1; q < S; q++) s[q] = t->pad;
        ti[0] = t->bos;
        memcpy(ti + 1, p->tgt + p->tgt_off[i], (size_t)c * sizeof *ti);
        memcpy(to, p->tgt + p->tgt_off[i], (size_t)c * sizeof *to);
        to[c] = t->eos;
        for (int q = c + 1; q < T; q++) ti[q] = to[q] = t->pad;
    }
    memset(b, 0, sizeof *b);
    b->B = (int)n, b->S = S, b->T = T;
    b->src = src, b->tgt_in = tin, b->tgt_out = tout;
    return 0;
}

static int mt_next(void *ctx, nlp_rng *r, nlp_batch *b)
{
    (void)r; /* the order is a function of (seed, epoch): see mt.h */
    nlp_mt_task *t = ctx;
    int rc;
    if (!t->epoch && (rc = build_epoch(t, 1))) return rc;
    if (t->drawn >= t->nbatch) {
        if ((rc = build_epoch(t, t->epoch + 1))) return rc;
        t->drawn = 0;
    }
    size_t k = t->drawn++;
    rc = fill(t, t->train, t->order + t->cut[k], t->cut[k + 1] - t->cut[k], b);
    if (t->train->map.data) nlp_mapped_release(&t->train->map, 0, t->train->map.len); /* pages read at random go */
    return rc;
}

static void mt_get_state(void *ctx, uint64_t s[4])
{
    nlp_mt_task *t = ctx;
    s[0] = t->epoch, s[1] = t->drawn, s[2] = s[3] = 0;
}

static int mt_set_state(void *ctx, const uint64_t s[4])
{
    nlp_mt_task *t = ctx;
    int rc;
    t->epoch = 0, t->drawn = 0;
    if (s[0] && (rc = build_epoch(t, s[0]))) return rc;
    t->drawn = s[1];
    return 0;
}

int nlp_mt_score(nlp_mt_task *t, nlp_model *m, const nlp_pairs *p, nlp_eval *out, size_t *skipped)
{
    const nlp_model_config *cfg = nlp_model_cfg(m);
    size_t n = p->n, ns = 0, nskip = 0;
    key *k = nlp_malloc((n ? n : 1) * sizeof *k);
    uint32_t *idx = nlp_malloc((n ? n : 1) * sizeof *idx);
    size_t *cut = nlp_malloc((n + 1) * sizeof *cut);
    int rc = 0;
    if (!k || !idx || !cut) {
        rc = NLP_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (slen(p, i) > cfg->max_positions || tlen(p, i) > cfg->max_positions || tlen(p, i) < 2 ||
            slen(p, i) < 2) {
            nskip++;
            continue;
        }
        k[ns++] = (key){(uint32_t)tlen(p, i), (uint32_t)slen(p, i), 0, (uint32_t)i};
    }
    qsort(k, ns, sizeof *k, key_cmp);
    for (size_t i = 0; i < ns; i++) idx[i] = k[i].i;
    size_t nb = cut_batches(p, idx, ns, t->max_tokens, cut);
    double nll = 0, tok = 0, right = 0;
    const int R = nlp_dist_size(), me = nlp_dist_rank();
    for (size_t b = 0; b < nb; b++) {
        if (!nlp_dist_mine(b, me, R)) continue; /* another rank's share of the validation */
        nlp_batch batch;
        nlp_losses l;
        if ((rc = fill(t, p, idx + cut[b], cut[b + 1] - cut[b], &batch)) || (rc = nlp_model_forward(m, &batch, &l)))
            goto out;
        nll += l.nll * l.tokens;
        tok += l.tokens;
        if (t->accuracy) { /* the argmax of each target position's logits (no padding) */
            int rows, V;
            const float *lg = nlp_model_logits(m, &rows, &V);
            for (int j = 0; j < batch.B; j++) {
                const int len = tlen(p, idx[cut[b] + (size_t)j]);
                for (int q = 0; q < len; q++) {
                    const float *x = lg + ((size_t)j * batch.T + (size_t)q) * (size_t)V;
                    int best = 0;
                    for (int v = 1; v < V; v++)
                        if (x[v] > x[best]) best = v;
                    right += best == batch.tgt_out[(size_t)j * batch.T + (size_t)q];
                }
            }
        }
    }
    double sums[3] = {nll, tok, right};
    if ((rc = nlp_dist_sum_f64(sums, 3))) goto out;
    nll = sums[0], tok = sums[1], right = sums[2];
    out->v[0] = tok ? nll / tok : NAN;
    out->v[1] = exp(out->v[0]);
    if (t->accuracy) out->v[2] = tok ? right / tok : NAN;
    if (skipped) *skipped = nskip;
out:
    free(k), free(idx), free(cut);
    return rc;
}

static int mt_eval(void *ctx, nlp_model *m, nlp_eval *out)
{
    nlp_mt_task *t = ctx;
    for (int i = 0; i < NLP_TRAIN_MAX_METRICS; i++) out->v[i] = NAN;
    int rc = nlp_mt_score(t, m, t->valid, out, NULL);
    if (!rc && t->bleu) rc = t->bleu(t->bleu_ctx, m, &out->v[2]);
    return rc;
}

static const char *const mt_names[] = {"loss", "ppl", "bleu", NULL};
static const char *const mt_acc_names[] = {"loss", "ppl", "acc", NULL};

int nlp_mt_task_init(nlp_mt_task *t, nlp_task *task, const nlp_pairs *train, const nlp_pairs *valid,
                     const nlp_model_config *cfg, long max_tokens, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    if (!train->n) return nlp_error(NLP_EDATA, "no training pairs left after filtering");
    long longest = (train->src_max > train->tgt_max ? train->src_max : train->tgt_max) + 1;
    if (longest > max_tokens)
        return nlp_error(NLP_EINVAL, "a batch of %ld tokens cannot hold the longest sentence (%ld tokens with EOS)",
                         max_tokens, longest);
    if (longest > cfg->max_positions)
        return nlp_error(NLP_EINVAL, "the longest sentence (%ld tokens with EOS) exceeds the model's %d positions",
                         longest, cfg->max_positions);
    t->train = train, t->valid = valid;
    t->pad = cfg->pad_id, t->bos = cfg->bos_id, t->eos = cfg->eos_id;
    t->max_tokens = max_tokens, t->seed = seed;
    memset(task, 0, sizeof *task);
    task->ctx = t;
    task->next_batch = mt_next;
    task->evaluate = valid && valid->n ? mt_eval : NULL;
    task->eval_names = mt_names;
    task->get_state = mt_get_state;
    task->set_state = mt_set_state;
    return 0;
}

void nlp_mt_task_refresh(nlp_mt_task *t, nlp_task *task, int (*refresh)(void *ctx, uint64_t epoch), void *ctx)
{
    t->refresh = refresh, t->refresh_ctx = ctx;
    t->accuracy = 1;
    task->eval_names = mt_acc_names;
}

size_t nlp_mt_epoch_batches(nlp_mt_task *t)
{
    if (!t->epoch && build_epoch(t, 1)) return 0;
    return t->nbatch;
}

void nlp_mt_task_free(nlp_mt_task *t)
{
    free(t->order), free(t->cut), free(t->buf);
    memset(t, 0, sizeof *t);
}
