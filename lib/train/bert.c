/*
 * bert.c — the BERT pretraining task: documents, sentences, NSP + MLM
 * examples, batches and validation. See bert.h.
 */
#include "train/bert.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "text/utf8.h"
#include "tok/tokbin.h"
#include "train/data.h"
#include "train/dist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IGNORE (-100)

// --- sentence marks

/* Sentence-final punctuation. */
static int is_final(int32_t c)
{
    switch (c) {
    case '.': case '!': case '?':
    case 0x2026:                                      /* … */
    case 0x3002: case 0xFF01: case 0xFF1F: case 0xFF0E: case 0xFF61: /* 。！？．｡ */
        return 1;
    default:
        return 0;
    }
}

/* The full-width ones end a sentence without white space after them. */
static int is_wide_final(int32_t c)
{
    return c == 0x3002 || c == 0xFF01 || c == 0xFF1F || c == 0xFF0E || c == 0xFF61;
}

/* Closing brackets and quotes that stay with the sentence before them.
 * Straight quotes only on text, where the white space after them tells
 * that they close: a WordPiece token '"' may as well open the next one. */
static int is_closer(int32_t c, int straight_quotes)
{
    switch (c) {
    case ')': case ']': case '}':
    case 0x2019: case 0x201D:                         /* ’ ” */
    case 0x300D: case 0x300F: case 0xFF09: case 0xFF3D: /* 」 』 ） ］ */
        return 1;
    case '"': case '\'':
        return straight_quotes;
    default:
        return 0;
    }
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

// --- documents: growing and rolling back

#define FLUSH_IDS ((size_t)1 << 20) /* ids a cache being built holds before they go to its file */

/* Building a cache: the ids held go to the file. */
static int flush_ids(nlp_bert_docs *d)
{
    if (d->n == d->ids_base) return 0;
    int rc = nlp_writer_write(d->sink, d->ids, (d->n - d->ids_base) * sizeof *d->ids);
    if (!rc) d->ids_base = d->n;
    return rc;
}

static int docs_reserve(nlp_bert_docs *d, size_t ids, size_t sents, size_t docs)
{
    int rc;
    if (d->sink && d->n - d->ids_base >= FLUSH_IDS && (rc = flush_ids(d))) return rc;
    if (nlp_grow(&d->ids, &d->ids_cap, d->n - d->ids_base + ids + 1, sizeof *d->ids) ||
        nlp_grow(&d->sent, &d->sent_cap, d->nsent + sents + 1, sizeof *d->sent) ||
        nlp_grow(&d->doc, &d->doc_cap, d->ndoc + docs + 1, sizeof *d->doc))
        return NLP_ENOMEM;
    if (!d->nsent) d->sent[0] = d->n;
    if (!d->ndoc && !d->nsent) d->doc[0] = 0; /* (a document left open by the last block keeps its start) */
    return 0;
}

/* Appends a sentence of ids already at d->ids[sent[nsent] ..+ len). */
static void close_sentence(nlp_bert_docs *d, size_t len)
{
    d->sent[d->nsent + 1] = d->sent[d->nsent] + len;
    d->nsent++;
}

/* Ends the current document if it has a sentence. */
static void close_doc(nlp_bert_docs *d)
{
    if (d->nsent > d->doc[d->ndoc]) {
        d->doc[d->ndoc + 1] = d->nsent;
        d->ndoc++;
    }
}

// --- text

/* One part of the text's lines, tokenized by one thread. */
typedef struct part {
    nlp_ids ids;
    size_t *slen, ns, scap;   /* sentence lengths */
    uint64_t fixed;
    int err;
    size_t bad;               /* the 0-based line of err */
    char *msg;
} part;

static int part_sentence(part *p, const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n)
{
    size_t before = p->ids.n;
    int rc = nlp_tokenizer_encode_ids(tk, st, s, n, 1, &p->ids);
    if (rc) return rc;
    if (p->ids.n == before) return 0;
    if (nlp_grow(&p->slen, &p->scap, p->ns + 1, sizeof *p->slen)) return NLP_ENOMEM;
    p->slen[p->ns++] = p->ids.n - before;
    return 0;
}

/* Tokenizes one line sentence by sentence (see bert.h: text). */
static int line_sentences(part *p, const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n)
{
    size_t start = 0, i = 0;
    int rc;
    while (i < n) {
        int32_t c = nlp_utf8_next(s, n, &i);
        if (!is_final(c)) continue;
        int wide = is_wide_final(c);
        size_t j = i;
        while (j < n) {
            size_t k = j;
            int32_t c2 = nlp_utf8_next(s, n, &k);
            if (is_final(c2)) wide |= is_wide_final(c2);
            else if (!is_closer(c2, 1)) break;
            j = k;
        }
        i = j;
        if (j >= n || !(wide || is_space(s[j]))) continue;
        size_t k = j;
        while (k < n && is_space(s[k])) k++;
        if (k == n) continue;
        if ((rc = part_sentence(p, tk, st, s + start, j - start))) return rc;
        start = j;
    }
    return part_sentence(p, tk, st, s + start, n - start);
}

/* Blank: white space only. */
static int blank_line(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_space(s[i])) return 0;
    return 1;
}

/* Whether blank lines separate documents: a blank line between two
 * non-blank ones. The state runs over consecutive blocks of one text. */
typedef struct blank_scan {
    int seen, gap, blocks;
} blank_scan;

static void scan_blanks(blank_scan *b, const char *text, size_t len)
{
    for (size_t i = 0; i < len;) {
        const char *e = memchr(text + i, '\n', len - i);
        size_t end = e ? (size_t)(e - text) + 1 : len;
        if (blank_line(text + i, end - i)) b->gap = b->seen;
        else {
            if (b->gap) b->blocks = 1;
            b->seen = 1, b->gap = 0;
        }
        i = end;
    }
}

/* The lines of text[0..len) (first_line: the 0-based number of its first),
 * documents by lines or by blocks of lines; the last document is closed
 * when `last` (a block of lines may go on in the next part of the text). */
static int add_text_part(nlp_bert_docs *d, const char *text, size_t len, const char *name, uint64_t first_line,
                         const nlp_tokenizer *tk, int threads, int blocks, int last)
{
    int rc = 0;
    size_t nl = 0, cap = 0;
    size_t *start = NULL, *nsl = NULL;
    uint8_t *blank = NULL;
    part *parts = NULL;
    size_t nchunk = 0;
    /* line starts and blank lines */
    for (size_t i = 0; i < len;) {
        if (nlp_grow(&start, &cap, nl + 2, sizeof *start)) {
            rc = NLP_ENOMEM;
            goto done;
        }
        start[nl++] = i;
        const char *e = memchr(text + i, '\n', len - i);
        i = e ? (size_t)(e - text) + 1 : len;
    }
    if (!start && !(start = nlp_malloc(sizeof *start))) {
        rc = NLP_ENOMEM;
        goto done;
    }
    start[nl] = len;
    blank = nlp_malloc(nl ? nl : 1);
    nsl = nlp_calloc(nl ? nl : 1, sizeof *nsl);
    if (!blank || !nsl) {
        rc = NLP_ENOMEM;
        goto done;
    }
    for (size_t l = 0; l < nl; l++) blank[l] = (uint8_t)blank_line(text + start[l], start[l + 1] - start[l]);

    if (threads <= 0) threads = nlp_cpu_count();
    nchunk = (size_t)threads * 8;
    if (nchunk > nl) nchunk = nl ? nl : 1;
    if (!(parts = nlp_calloc(nchunk, sizeof *parts))) {
        rc = NLP_ENOMEM;
        goto done;
    }
#pragma omp parallel num_threads(threads)
    {
        nlp_tok_state *st = nlp_tok_state_new(tk);
        nlp_buf fix = {0};
#pragma omp for schedule(dynamic, 1)
        for (size_t k = 0; k < nchunk; k++) {
            part *p = &parts[k];
            if (!st) {
                p->err = NLP_ENOMEM;
                continue;
            }
            size_t a = nl * k / nchunk, b = nl * (k + 1) / nchunk;
            for (size_t l = a; l < b && !p->err; l++) {
                if (blank[l]) continue;
                const char *s = text + start[l];
                size_t n = start[l + 1] - start[l];
                if (n && s[n - 1] == '\n') n--;
                if (n && s[n - 1] == '\r') n--;
                if (!nlp_utf8_valid(s, n, NULL)) {
                    nlp_buf_reset(&fix);
                    if (nlp_utf8_repair(s, n, &fix, NULL)) {
                        p->err = NLP_ENOMEM;
                        break;
                    }
                    s = fix.data, n = fix.len;
                    p->fixed++;
                }
                size_t ns = p->ns;
                int r = line_sentences(p, tk, st, s, n);
                if (r) {
                    p->err = r, p->bad = l;
                    p->msg = nlp_strdup(nlp_errmsg());
                }
                nsl[l] = p->ns - ns;
            }
        }
        nlp_buf_free(&fix);
        nlp_tok_state_free(st);
    }
    size_t tot_ids = 0, tot_sent = 0;
    for (size_t k = 0; k < nchunk; k++) {
        if (parts[k].err) {
            rc = parts[k].msg ? nlp_error(parts[k].err, "'%s' line %llu: %s", name,
                                          (unsigned long long)(first_line + parts[k].bad + 1), parts[k].msg)
                              : parts[k].err;
            goto done;
        }
        tot_ids += parts[k].ids.n, tot_sent += parts[k].ns;
    }
    if ((rc = docs_reserve(d, tot_ids, tot_sent, nl))) goto done;
    /* nothing fails from here on: d changes */
    size_t at = d->n;
    for (size_t k = 0; k < nchunk; k++) {
        if (parts[k].ids.n) memcpy(d->ids + (at - d->ids_base), parts[k].ids.v, parts[k].ids.n * sizeof *d->ids);
        at += parts[k].ids.n;
        nlp_ids_free(&parts[k].ids);
    }
    size_t k = 0, j = 0; /* the part of line l, and its next sentence */
    for (size_t l = 0; l < nl; l++) {
        while (l >= nl * (k + 1) / nchunk) k++, j = 0;
        if (blank[l]) {
            if (blocks) close_doc(d);
            continue;
        }
        for (size_t q = 0; q < nsl[l]; q++) close_sentence(d, parts[k].slen[j++]);
        if (!blocks) close_doc(d);
    }
    if (last) close_doc(d);
    d->n = at;
    NLP_ASSERT(d->sent[d->nsent] == d->n);
    d->lines += nl;
    for (size_t q = 0; q < nchunk; q++) d->repaired += parts[q].fixed;
done:
    for (size_t q = 0; parts && q < nchunk; q++) {
        nlp_ids_free(&parts[q].ids);
        free(parts[q].slen), free(parts[q].msg);
    }
    free(parts), free(start), free(nsl), free(blank);
    return rc;
}

int nlp_bert_docs_add_text(nlp_bert_docs *d, const char *text, size_t len, const char *name,
                           const nlp_tokenizer *tk, int threads)
{
    if (d->map.data) return nlp_error(NLP_EINVAL, "mapped documents cannot grow");
    blank_scan b = {0};
    scan_blanks(&b, text, len);
    return add_text_part(d, text, len, name, 0, tk, threads, b.blocks, 1);
}

// --- token streams

enum { PIECE_FINAL = 1, PIECE_CLOSER = 2, PIECE_SPACE = 4 };

/* Each id's class (PIECE_*) from its text decoded alone; *aware = the
 * pieces carry their white space (some piece starts with it). */
static int piece_classes(const nlp_tokenizer *tk, uint8_t **out, int *aware)
{
    size_t V = nlp_tokenizer_vocab_size(tk);
    uint8_t *c = nlp_calloc(V ? V : 1, 1);
    nlp_buf b = {0};
    if (!c) return NLP_ENOMEM;
    *aware = 0;
    for (size_t id = 0; id < V; id++) {
        int32_t i = (int32_t)id;
        if (nlp_tokenizer_is_special(tk, i) || !nlp_tokenizer_id_to_token(tk, i, NULL)) continue;
        nlp_buf_reset(&b);
        if (nlp_tokenizer_decode(tk, &i, 1, 1, &b, NULL) || !b.len) continue;
        const char *s = b.data;
        size_t n = b.len, a = 0;
        if (is_space(s[0])) c[id] |= PIECE_SPACE, *aware = 1;
        while (a < n && is_space(s[a])) a++;
        while (n > a && is_space(s[n - 1])) n--;
        if (a == n || !nlp_utf8_valid(s + a, n - a, NULL)) continue;
        int finals = 0, closers = 0, other = 0;
        for (size_t k = a; k < n;) {
            int32_t cp = nlp_utf8_next(s, n, &k);
            if (is_final(cp)) finals++;
            else if (is_closer(cp, 0)) closers++;
            else other++;
        }
        if (!other) c[id] |= finals ? PIECE_FINAL : PIECE_CLOSER;
    }
    nlp_buf_free(&b);
    *out = c;
    return 0;
}

static int add_stream(nlp_bert_docs *d, nlp_reader *r, const char *path, const nlp_tokenizer *tk)
{
    size_t V = nlp_tokenizer_vocab_size(tk);
    nlp_tokbin_reader *br = NULL;
    nlp_ids doc = {0};
    uint8_t *cls = NULL;
    int aware = 0, rc;
    const size_t n0 = d->n, s0 = d->nsent, d0 = d->ndoc;
    const uint64_t drop0 = d->dropped;
    int32_t eot = -1;
    for (size_t i = 0; nlp_eot_tokens[i] && eot < 0; i++)
        eot = nlp_tokenizer_token_to_id(tk, nlp_eot_tokens[i], strlen(nlp_eot_tokens[i]));
    if ((rc = nlp_tokbin_reader_new(&br, r, eot))) goto out;
    const nlp_tokbin_info *in = nlp_tokbin_reader_info(br);
    if (in->vocab_size > V) {
        rc = nlp_error(NLP_EDATA, "'%s': a stream of a %u-token vocabulary, but the tokenizer has %zu tokens: was it "
                       "made with another tokenizer?", path, in->vocab_size, V);
        goto out;
    }
    if ((rc = piece_classes(tk, &cls, &aware))) goto out;
    uint64_t seen = 0;
    while ((rc = nlp_tokbin_next_doc(br, &doc)) == 1) {
        size_t m = 0;
        for (size_t i = 0; i < doc.n; i++) {
            if ((uint32_t)doc.v[i] >= V) {
                rc = nlp_error(NLP_EDATA, "'%s': token %llu is id %u, not below the tokenizer's vocabulary size %zu",
                               path, (unsigned long long)(seen + i), (uint32_t)doc.v[i], V);
                goto out;
            }
            if (nlp_tokenizer_is_special(tk, doc.v[i])) d->dropped++;
            else doc.v[m++] = doc.v[i];
        }
        seen += doc.n + 1;
        if (!m) continue;
        if ((rc = docs_reserve(d, m, m, 1))) goto out;
        memcpy(d->ids + (d->n - d->ids_base), doc.v, m * sizeof *d->ids);
        const int32_t *v = doc.v;
        size_t a = 0;
        for (size_t i = 0; i < m;) {
            if (!(cls[v[i]] & PIECE_FINAL)) {
                i++;
                continue;
            }
            size_t j = i + 1;
            while (j < m && (cls[v[j]] & (PIECE_FINAL | PIECE_CLOSER))) j++;
            if (j < m && (!aware || (cls[v[j]] & PIECE_SPACE))) {
                close_sentence(d, j - a);
                a = j;
            }
            i = j;
        }
        close_sentence(d, m - a);
        close_doc(d);
        d->n += m;
    }
out:
    if (rc < 0) { /* d as it was */
        d->n = n0, d->nsent = s0, d->ndoc = d0, d->dropped = drop0;
    }
    free(cls);
    nlp_ids_free(&doc);
    nlp_tokbin_reader_free(br);
    return rc < 0 ? rc : 0;
}

int nlp_bert_docs_add(nlp_bert_docs *d, const char *path, const nlp_tokenizer *tk, int threads)
{
    if (d->map.data) return nlp_error(NLP_EINVAL, "mapped documents cannot grow");
    nlp_reader *r = NULL;
    const char *p;
    size_t got;
    int rc = nlp_reader_open(&r, path);
    if (rc) return rc;
    if ((rc = nlp_reader_peek(r, 4, &p, &got))) goto out;
    if (got == 4 && nlp_tokbin_sniff((const unsigned char *)p)) {
        rc = add_stream(d, r, path, tk);
        goto out;
    }
    char *text;
    size_t len;
    if ((rc = nlp_reader_read_lines(r, d->max_line, &text, &len))) goto out;
    rc = nlp_text_check(path, text, len < 65536 ? len : 65536); /* not compressed, binary, ids */
    if (!rc) rc = nlp_bert_docs_add_text(d, text, len, path, tk, threads);
    free(text);
out:
    nlp_reader_close(r);
    return rc;
}

void nlp_bert_docs_free(nlp_bert_docs *d)
{
    if (d->map.data) nlp_mapped_close(&d->map);
    else free(d->ids), free(d->sent), free(d->doc);
    memset(d, 0, sizeof *d);
    d->map.fd = -1;
}

// --- the cache (bert.h)

#define DOCS_TRAILER 56

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static void wr64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++) p[k] = (unsigned char)(v >> (8 * k));
}

/* Maps a cache into d (empty), checking it through. */
static int docs_load(nlp_bert_docs *d, const char *path, uint64_t fp)
{
    _Static_assert(sizeof(size_t) == 8, "the cache's offsets are read as size_t");
    nlp_mapped m;
    const char *why = "not a document cache (its magic, version or size)";
    int rc = nlp_mapped_open(&m, path);
    if (rc) return rc;
    const unsigned char *p = m.data;
    if (m.len < 16 + DOCS_TRAILER || memcmp(p, "NLBD", 4) != 0 || rd32(p + 4) != 1) goto bad;
    why = "made with another tokenizer";
    if (rd64(p + 8) != fp) goto bad;
    why = "damaged (its trailer)";
    const unsigned char *t = p + m.len - DOCS_TRAILER;
    uint64_t h[6];
    for (int k = 0; k < 6; k++) h[k] = rd64(t + 8 * k);
    if (memcmp(t + 48, "NLBE", 4) != 0 || rd32(t + 52) != 1) goto bad;
    const uint64_t n = h[0], S = h[1], D = h[2];
    if (n > m.len / 4 || S > m.len / 8 || D > m.len / 8) goto bad;
    uint64_t A = 16 + 4 * n;
    A += (8 - A % 8) % 8;
    if (A + 8 * (S + 1) + 8 * (D + 1) + DOCS_TRAILER != m.len) goto bad;
    why = "damaged (its offsets)";
    const size_t *sent = (const size_t *)(const void *)(p + A), *doc = sent + S + 1;
    if (sent[0] != 0 || sent[S] != n || doc[0] != 0 || doc[D] != S) goto bad;
    for (uint64_t i = 0; i < S; i++)
        if (sent[i + 1] <= sent[i]) goto bad;
    for (uint64_t i = 0; i < D; i++)
        if (doc[i + 1] <= doc[i]) goto bad;
    nlp_mapped_release(&m, 0, m.len);
    memset(d, 0, sizeof *d);
    d->ids = (int32_t *)(const void *)(p + 16);
    d->sent = S ? (size_t *)sent : NULL, d->doc = D ? (size_t *)doc : NULL;
    d->n = n, d->nsent = S, d->ndoc = D;
    d->lines = h[3], d->repaired = h[4], d->dropped = h[5];
    d->map = m;
    return 0;
bad:
    nlp_mapped_close(&m);
    return nlp_error(NLP_EFORMAT, "'%s': not a document cache to use: %s", path, why);
}

static int is_file(const char *path)
{
    struct stat st;
    return strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Text path into d a block at a time (d->sink set: its ids go there). */
static int docs_add_blocks(nlp_bert_docs *d, const char *path, const nlp_tokenizer *tk, int threads)
{
    nlp_text_blocks tb;
    blank_scan b = {0};
    const char *text;
    size_t len;
    uint64_t line;
    int rc = nlp_text_blocks_open(&tb, path); /* first: are documents blocks of lines? */
    if (rc) return rc;
    tb.max_line = d->max_line;
    while ((rc = nlp_text_blocks_next(&tb, &text, &len, &line)) == 1) scan_blanks(&b, text, len);
    nlp_text_blocks_close(&tb);
    if (rc < 0 || (rc = nlp_text_blocks_open(&tb, path))) return rc;
    tb.max_line = d->max_line;
    while ((rc = nlp_text_blocks_next(&tb, &text, &len, &line)) == 1)
        if ((rc = add_text_part(d, text, len, path, line, tk, threads, b.blocks, 0))) break;
    nlp_text_blocks_close(&tb);
    if (rc < 0) return rc;
    if (d->doc) close_doc(d);
    return 0;
}

/* Builds the cache `out` of paths[0..n) (d is scratch: left empty). */
static int docs_build(nlp_bert_docs *d, const char *const *paths, size_t n, const nlp_tokenizer *tk, int threads,
                      const char *out, uint64_t fp)
{
    nlp_writer *w = NULL;
    unsigned char h[16];
    int rc = nlp_writer_open(&w, out, 0);
    if (rc) return rc;
    memcpy(h, "NLBD", 4);
    h[4] = 1, h[5] = h[6] = h[7] = 0;
    wr64(h + 8, fp);
    if ((rc = nlp_writer_write(w, h, sizeof h))) goto out;
    d->sink = w;
    for (size_t i = 0; i < n && !rc; i++) {
        unsigned char head[4];
        FILE *f = fopen(paths[i], "rb");
        size_t got = f ? fread(head, 1, 4, f) : 0;
        if (f) fclose(f);
        if (got == 4 && nlp_tokbin_sniff(head)) {
            nlp_reader *r = NULL;
            if (!(rc = nlp_reader_open(&r, paths[i]))) rc = add_stream(d, r, paths[i], tk);
            nlp_reader_close(r);
        } else
            rc = docs_add_blocks(d, paths[i], tk, threads);
    }
    if (rc || (rc = flush_ids(d))) goto out;
    static const unsigned char zero[8];
    size_t at = 16 + 4 * d->n;
    if ((rc = nlp_writer_write(w, zero, (8 - at % 8) % 8))) goto out;
    /* the offsets (a lone 0 for no sentence or document) */
    if (d->nsent) rc = nlp_writer_write(w, d->sent, (d->nsent + 1) * sizeof *d->sent);
    else rc = nlp_writer_write(w, zero, 8);
    if (!rc && d->ndoc) rc = nlp_writer_write(w, d->doc, (d->ndoc + 1) * sizeof *d->doc);
    else if (!rc) rc = nlp_writer_write(w, zero, 8);
    if (rc) goto out;
    unsigned char t[DOCS_TRAILER];
    const uint64_t v[6] = {d->n, d->nsent, d->ndoc, d->lines, d->repaired, d->dropped};
    for (int k = 0; k < 6; k++) wr64(t + 8 * k, v[k]);
    memcpy(t + 48, "NLBE", 4);
    t[52] = 1, t[53] = t[54] = t[55] = 0;
    rc = nlp_writer_write(w, t, sizeof t);
out:
    d->sink = NULL;
    if (rc) nlp_writer_abort(w);
    else rc = nlp_writer_close(w);
    nlp_bert_docs_free(d);
    return rc;
}

int nlp_bert_docs_add_cached(nlp_bert_docs *d, const char *const *paths, size_t n, const nlp_tokenizer *tk,
                             int threads, const char *dir, int dry, int *built)
{
    if (built) *built = 0;
    int files = dir && n && !d->n && !d->ndoc;
    for (size_t i = 0; i < n && files; i++) files = is_file(paths[i]);
    int rc = 0;
    if (!files) {
        for (size_t i = 0; i < n && !rc; i++) rc = nlp_bert_docs_add(d, paths[i], tk, threads);
        return rc;
    }
    uint64_t key = 1469598103934665603ull, pk = key;
    for (size_t i = 0; i < n; i++) {
        uint64_t k1, p1;
        if ((rc = nlp_cache_key(paths[i], tk, 0x424552540001ull + i, &k1, &p1))) return rc;
        key = (key ^ k1) * 1099511628211ull, pk = (pk ^ p1) * 1099511628211ull;
    }
    char name[4400];
    nlp_cache_name(name, sizeof name, dir, paths[0], pk, key, "docs");
    const uint64_t fp = nlp_tokbin_fingerprint(tk);
    if (nlp_file_exists(name)) {
        if (docs_load(d, name, fp) == 0) return 0;
        unlink(name); /* not this tokenizer's, or damaged: made anew */
        nlp_error_clear();
    }
    if (dry) {
        if (built) *built = -1;
        return 0;
    }
    if ((rc = nlp_cache_mkdir(dir))) return rc;
    nlp_cache_remove_stale(dir, paths[0], pk, key, "docs");
    nlp_bert_docs scratch;
    memset(&scratch, 0, sizeof scratch);
    scratch.map.fd = -1;
    scratch.max_line = d->max_line;
    if ((rc = docs_build(&scratch, paths, n, tk, threads, name, fp))) return rc;
    if ((rc = docs_load(d, name, fp))) return rc;
    if (built) *built = 1;
    return 0;
}

uint64_t nlp_bert_docs_memory(const nlp_bert_docs *d)
{
    if (d->map.data || (!d->n && !d->ndoc)) return 0;
    return 4 * (uint64_t)d->n + 8 * (uint64_t)(d->nsent + d->ndoc + 2);
}

void nlp_bert_docs_release(const nlp_bert_docs *d)
{
    if (d->map.data) nlp_mapped_release(&d->map, 0, d->map.len);
}

// --- chunks

static size_t ntok(const nlp_bert_docs *d, size_t s0, size_t s1)
{
    return d->sent[s1] - d->sent[s0];
}

static void chunks_free(nlp_bert_chunks *c)
{
    free(c->c), free(c->multi);
    memset(c, 0, sizeof *c);
}

/* Groups each document's sentences into chunks of about `target` tokens. */
static int chunks_build(nlp_bert_chunks *c, const nlp_bert_docs *d, size_t target, const char *what)
{
    memset(c, 0, sizeof *c);
    c->docs = d;
    if (d->ndoc < 2)
        return nlp_error(NLP_EDATA, "the %s data holds %zu document%s: next-sentence prediction needs two or more",
                         what, d->ndoc, d->ndoc == 1 ? "" : "s");
    size_t cap = 0, mcap = 0;
    for (size_t k = 0; k < d->ndoc; k++) {
        int multi = d->doc[k + 1] - d->doc[k] >= 2;
        for (size_t s = d->doc[k]; s < d->doc[k + 1];) {
            size_t e = s + 1;
            while (e < d->doc[k + 1] && ntok(d, s, e) < target) e++;
            if (nlp_grow(&c->c, &cap, c->n + 1, sizeof *c->c) ||
                (multi && nlp_grow(&c->multi, &mcap, c->nmulti + 1, sizeof *c->multi))) {
                chunks_free(c);
                return NLP_ENOMEM;
            }
            if (multi) c->multi[c->nmulti++] = c->n;
            c->c[c->n++] = (nlp_bert_chunk){k, s, e};
            s = e;
        }
    }
    nlp_bert_docs_release(d); /* the offsets of a mapped cache were read through */
    if (!c->nmulti) {
        chunks_free(c);
        return nlp_error(NLP_EDATA, "no document of the %s data has two sentences: next-sentence prediction needs "
                         "one at least (documents are split after '.', '!' or '?' followed by white space)", what);
    }
    return 0;
}

// --- examples

static inline uint64_t below(nlp_rng *r, uint64_t n)
{
    return nlp_rng_below(r, n);
}

/* The example of chunk ci of c into row arrays of T entries (bert.h). */
static int make_example(const nlp_bert_task *t, const nlp_bert_chunks *c, size_t ci, nlp_rng *r, int32_t *ids,
                        int32_t *labels, int32_t *types, int32_t *mask, int32_t *nsp, nlp_bert_example *info)
{
    const nlp_bert_docs *d = c->docs;
    const int T = t->o.T;
    const size_t max = (size_t)T - 3;
    size_t target = max;
    if (t->o.short_prob > 0 && nlp_rng_double(r) < t->o.short_prob) target = 2 + (size_t)below(r, max - 1);
    int is_next = below(r, 2) == 0;
    nlp_bert_chunk ch = c->c[ci];
    if (is_next && d->doc[ch.doc + 1] - d->doc[ch.doc] < 2) {
        ci = c->multi[below(r, c->nmulti)];
        ch = c->c[ci];
    }
    size_t s0 = ch.first, s1 = s0 + 1;
    while (s1 < ch.end && ntok(d, s0, s1) < target) s1++;
    size_t a_end, b0, b1, doc_b;
    if (is_next) {
        if (s1 - s0 < 2) {
            if (s1 < d->doc[ch.doc + 1]) s1++;
            else s0--; /* the document has two sentences: one is before */
        }
        a_end = s0 + 1 + (size_t)below(r, s1 - s0 - 1);
        b0 = a_end, b1 = s1, doc_b = ch.doc;
    } else {
        a_end = s1 - s0 >= 2 ? s0 + 1 + (size_t)below(r, s1 - s0 - 1) : s1;
        size_t la = ntok(d, s0, a_end), tb = target > la ? target - la : 1;
        doc_b = (size_t)below(r, d->ndoc - 1);
        if (doc_b >= ch.doc) doc_b++;
        size_t f = d->doc[doc_b], e = d->doc[doc_b + 1];
        b0 = f + (size_t)below(r, e - f);
        b1 = b0 + 1;
        while (b1 < e && ntok(d, b0, b1) < tb) b1++;
    }
    /* BERT's truncate_seq_pair */
    size_t la = ntok(d, s0, a_end), lb = ntok(d, b0, b1);
    size_t fa = 0, ba = 0, fb = 0, bb = 0;
    while (la + lb > max) {
        int front = (nlp_rng_u64(r) >> 63) != 0;
        if (la > lb) {
            if (front) fa++;
            else ba++;
            la--;
        } else {
            if (front) fb++;
            else bb++;
            lb--;
        }
    }
    /* the row */
    const int LA = (int)la, LB = (int)lb, len = LA + LB + 3;
    ids[0] = t->cls;
    memcpy(ids + 1, d->ids + d->sent[s0] + fa, la * sizeof *ids);
    ids[LA + 1] = t->sep;
    memcpy(ids + LA + 2, d->ids + d->sent[b0] + fb, lb * sizeof *ids);
    ids[len - 1] = t->sep;
    for (int p = 0; p < T; p++) {
        labels[p] = IGNORE;
        types[p] = p >= LA + 2 && p < len;
        mask[p] = p < len;
        if (p >= len) ids[p] = t->pad;
    }
    *nsp = is_next ? 0 : 1;
    /* MLM */
    int *pos = t->pos, n = 0;
    for (int p = 1; p < len - 1; p++)
        if (p != LA + 1 && ((size_t)ids[p] >= t->V || !t->special[ids[p]])) pos[n++] = p;
    int k = 0;
    if (n) {
        long want = lround(t->o.mlm_prob * n);
        k = want < 1 ? 1 : want > n ? n : (int)want;
    }
    for (int j = 0; j < k; j++) {
        int q = j + (int)below(r, (uint64_t)(n - j)), p = pos[q];
        pos[q] = pos[j], pos[j] = p;
        labels[p] = ids[p];
        uint64_t u = below(r, 10);
        if (u < 8) ids[p] = t->mask;
        else if (u == 8) ids[p] = t->normal[below(r, t->nnormal)];
    }
    if (info) {
        *info = (nlp_bert_example){.len = len, .len_a = LA, .len_b = LB, .nsp = *nsp, .predicted = k, .chunk = ci,
                                   .doc_a = ch.doc, .a_first = s0, .a_end = a_end, .doc_b = doc_b, .b_first = b0,
                                   .b_end = b1, .cut_a_front = (int)fa, .cut_a_back = (int)ba,
                                   .cut_b_front = (int)fb, .cut_b_back = (int)bb};
    }
    return len;
}

int nlp_bert_task_example(nlp_bert_task *t, size_t chunk, nlp_rng *r, int32_t *ids, int32_t *labels,
                          int32_t *type_ids, int32_t *mask, int32_t *nsp, nlp_bert_example *info)
{
    NLP_ASSERT(chunk < t->train.n);
    return make_example(t, &t->train, chunk, r, ids, labels, type_ids, mask, nsp, info);
}

// --- batches

/* The batch's arrays in t->buf, rows of stride T. */
typedef struct rows {
    int32_t *ids, *labels, *types, *mask, *nsp;
} rows;

static rows batch_rows(const nlp_bert_task *t)
{
    const size_t BT = (size_t)t->o.B * t->o.T;
    int32_t *p = t->buf;
    return (rows){p, p + BT, p + 2 * BT, p + 3 * BT, p + 4 * BT};
}

/* Packs n rows of stride T to stride Tb (the longest) and describes them. */
static void pack(const nlp_bert_task *t, int n, int Tb, nlp_batch *b)
{
    rows w = batch_rows(t);
    int32_t *arr[4] = {w.ids, w.labels, w.types, w.mask};
    const int T = t->o.T;
    if (Tb < T)
        for (int a = 0; a < 4; a++)
            for (int i = 1; i < n; i++)
                memmove(arr[a] + (size_t)i * Tb, arr[a] + (size_t)i * T, (size_t)Tb * sizeof(int32_t));
    memset(b, 0, sizeof *b);
    b->B = n, b->T = Tb;
    b->ids = w.ids, b->labels = w.labels, b->type_ids = w.types, b->mask = w.mask, b->nsp_labels = w.nsp;
}

/* A new epoch: its seed from r, the training chunks shuffled by it. */
static void build_order(nlp_bert_task *t)
{
    nlp_rng s;
    nlp_rng_seed(&s, t->epoch_seed);
    size_t n = t->train.n;
    for (size_t i = 0; i < n; i++) t->order[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)nlp_rng_below(&s, i), tmp = t->order[i - 1];
        t->order[i - 1] = t->order[j], t->order[j] = tmp;
    }
}

static int bert_next(void *ctx, nlp_rng *r, nlp_batch *b)
{
    nlp_bert_task *t = ctx;
    rows w = batch_rows(t);
    const int T = t->o.T;
    int Tb = 0;
    for (int i = 0; i < t->o.B; i++) {
        if (!t->epoch || t->drawn >= t->train.n) {
            t->epoch_seed = nlp_rng_u64(r);
            t->epoch++, t->drawn = 0;
            build_order(t);
        }
        size_t o = (size_t)i * T;
        int len = make_example(t, &t->train, t->order[t->drawn++], r, w.ids + o, w.labels + o, w.types + o,
                               w.mask + o, w.nsp + i, NULL);
        if (len > Tb) Tb = len;
    }
    pack(t, t->o.B, Tb, b);
    t->batches++;
    nlp_bert_docs_release(t->train.docs); /* mapped pages read at random go again (they stay in the page cache) */
    return 0;
}

static void bert_get_state(void *ctx, uint64_t s[4])
{
    nlp_bert_task *t = ctx;
    s[0] = t->epoch, s[1] = t->drawn, s[2] = t->epoch_seed, s[3] = t->train.n;
}

static int bert_set_state(void *ctx, const uint64_t s[4])
{
    nlp_bert_task *t = ctx;
    if (s[3] != t->train.n || s[1] > t->train.n)
        return nlp_error(NLP_EDATA, "the checkpoint was made with %llu training chunks (at chunk %llu), this data "
                         "has %zu: resume with the same training data, tokenizer and --max-length",
                         (unsigned long long)s[3], (unsigned long long)s[1], t->train.n);
    t->epoch = s[0], t->drawn = s[1], t->epoch_seed = s[2];
    if (t->epoch) build_order(t);
    return 0;
}

// --- validation

static int bert_eval(void *ctx, nlp_model *m, nlp_eval *out)
{
    nlp_bert_task *t = ctx;
    const nlp_bert_chunks *c = &t->valid;
    const int B = t->o.B, T = t->o.T;
    size_t n = c->n < (size_t)t->o.valid_max ? c->n : (size_t)t->o.valid_max;
    nlp_rng r;
    nlp_rng_seed(&r, t->o.valid_seed);
    rows w = batch_rows(t);
    double mlm = 0, nsp = 0, mlm_ok = 0, nsp_ok = 0, npred = 0, nrows = 0;
    const int ranks = nlp_dist_size(), me = nlp_dist_rank();
    nlp_model_set_training(m, 0);
    for (size_t i0 = 0, batch = 0; i0 < n; i0 += (size_t)B, batch++) {
        int rowsn = n - i0 < (size_t)B ? (int)(n - i0) : B, Tb = 0;
        for (int i = 0; i < rowsn; i++) {
            size_t o = (size_t)i * T, ci = (i0 + (size_t)i) * c->n / n;
            int len = make_example(t, c, ci, &r, w.ids + o, w.labels + o, w.types + o, w.mask + o, w.nsp + i, NULL);
            if (len > Tb) Tb = len;
        }
        /* every rank draws every example (one generator), each scores its share */
        if (!nlp_dist_mine(batch, me, ranks)) continue;
        nlp_batch b;
        nlp_losses l;
        pack(t, rowsn, Tb, &b);
        int rc = nlp_model_forward(m, &b, &l);
        if (rc) return rc;
        int R, V;
        const float *lg = nlp_model_logits(m, &R, &V), *nl = nlp_model_nsp_logits(m);
        double lab = 0; /* the batch's predicted positions (the loss's count) */
        for (int p = 0; p < R; p++) {
            if (b.labels[p] == IGNORE) continue;
            lab++;
            const float *x = lg + (size_t)p * V;
            int best = 0;
            for (int v = 1; v < V; v++)
                if (x[v] > x[best]) best = v;
            mlm_ok += best == b.labels[p];
        }
        for (int i = 0; i < rowsn; i++) nsp_ok += (nl[2 * i + 1] > nl[2 * i]) == (b.nsp_labels[i] == 1);
        mlm += l.mlm_loss * lab;
        nsp += l.nsp_loss * rowsn;
        npred += lab;
        nrows += rowsn;
    }
    double sums[6] = {mlm, nsp, mlm_ok, nsp_ok, npred, nrows};
    int rc = nlp_dist_sum_f64(sums, 6);
    if (rc) return rc;
    mlm = sums[0], nsp = sums[1], mlm_ok = sums[2], nsp_ok = sums[3], npred = sums[4], nrows = sums[5];
    for (int k = 0; k < NLP_TRAIN_MAX_METRICS; k++) out->v[k] = NAN;
    double ml = npred ? mlm / npred : NAN, nsl = nrows ? nsp / nrows : NAN;
    out->v[0] = ml + nsl;
    out->v[1] = ml;
    out->v[2] = npred ? mlm_ok / npred : NAN;
    out->v[3] = nrows ? nsp_ok / nrows : NAN;
    return 0;
}

static const char *const bert_names[] = {"loss", "mlm_loss", "mlm_acc", "nsp_acc", NULL};

// --- set-up

static int special_id(const nlp_tokenizer *tk, const char *tok, const char *path, int32_t *id)
{
    *id = nlp_tokenizer_token_to_id(tk, tok, strlen(tok));
    if (*id >= 0) return 0;
    if (path)
        return nlp_error(NLP_EFORMAT, "the tokenizer '%s' has no %s token: BERT pretraining needs [CLS], [SEP], [MASK] "
                         "and [PAD]", path, tok);
    return nlp_error(NLP_EFORMAT, "the tokenizer has no %s token: BERT pretraining needs [CLS], [SEP], [MASK] and "
                     "[PAD]", tok);
}

static int check_ids(const nlp_bert_docs *d, size_t V, const char *what)
{
    if (d->map.data) return 0; /* a cache of this tokenizer (its fingerprint): not read through for nothing */
    for (size_t i = 0; i < d->n; i++)
        if ((uint32_t)d->ids[i] >= V)
            return nlp_error(NLP_EDATA, "the %s data holds id %u, not below the tokenizer's vocabulary size %zu: was "
                             "it read with another tokenizer?", what, (uint32_t)d->ids[i], V);
    return 0;
}

int nlp_bert_task_init(nlp_bert_task *t, nlp_task *task, const nlp_bert_docs *train, const nlp_bert_docs *valid,
                       const nlp_tokenizer *tk, const nlp_bert_opts *o)
{
    memset(t, 0, sizeof *t);
    if (o->B < 1) return nlp_error(NLP_EINVAL, "the batch size must be at least 1 (not %d)", o->B);
    if (o->T < 5 || o->T > (1 << 20))
        return nlp_error(NLP_EINVAL, "a BERT example needs a length of 5 positions or more (not %d)", o->T);
    if (!(o->mlm_prob > 0 && o->mlm_prob <= 1))
        return nlp_error(NLP_EINVAL, "the masked share must be in (0, 1] (not %g)", o->mlm_prob);
    if (!(o->short_prob >= 0 && o->short_prob <= 1))
        return nlp_error(NLP_EINVAL, "the short-sequence probability must be in [0, 1] (not %g)", o->short_prob);
    if (o->valid_max < 1)
        return nlp_error(NLP_EINVAL, "the number of validation examples must be at least 1 (not %d)", o->valid_max);
    t->o = *o;
    int rc;
    const char *path = o->tokenizer_path;
    if ((rc = special_id(tk, "[CLS]", path, &t->cls)) || (rc = special_id(tk, "[SEP]", path, &t->sep)) ||
        (rc = special_id(tk, "[MASK]", path, &t->mask)) || (rc = special_id(tk, "[PAD]", path, &t->pad)))
        return rc;
    /* special ids: the tokenizer's, every added token, [UNK], holes */
    const size_t V = t->V = nlp_tokenizer_vocab_size(tk);
    if (!(t->special = nlp_calloc(V, 1)) || !(t->normal = nlp_malloc(V * sizeof *t->normal))) {
        rc = NLP_ENOMEM;
        goto fail;
    }
    const nlp_tok_spec *sp = nlp_tokenizer_spec(tk);
    for (size_t i = 0; i < sp->n_added; i++)
        if (sp->added[i].id >= 0 && (size_t)sp->added[i].id < V) t->special[sp->added[i].id] = 1;
    const char *unk[2] = {"[UNK]", sp->model == NLP_MODEL_WORDPIECE ? sp->wp.unk_token : sp->bpe.unk_token};
    for (int i = 0; i < 2; i++) {
        int32_t id = unk[i] ? nlp_tokenizer_token_to_id(tk, unk[i], strlen(unk[i])) : -1;
        if (id >= 0 && (size_t)id < V) t->special[id] = 1;
    }
    int32_t four[4] = {t->cls, t->sep, t->mask, t->pad};
    for (int i = 0; i < 4; i++) t->special[four[i]] = 1;
    for (size_t i = 0; i < V; i++) {
        if (nlp_tokenizer_is_special(tk, (int32_t)i) || !nlp_tokenizer_id_to_token(tk, (int32_t)i, NULL))
            t->special[i] = 1;
        if (!t->special[i]) t->normal[t->nnormal++] = (int32_t)i;
    }
    if (!t->nnormal) {
        rc = nlp_error(NLP_EDATA, "the tokenizer has only special tokens: nothing to predict");
        goto fail;
    }
    if ((rc = check_ids(train, V, "training")) || (valid && (rc = check_ids(valid, V, "validation")))) goto fail;
    if ((rc = chunks_build(&t->train, train, (size_t)o->T - 3, "training"))) goto fail;
    if (valid && valid->ndoc && (rc = chunks_build(&t->valid, valid, (size_t)o->T - 3, "validation"))) goto fail;
    const size_t BT = (size_t)o->B * o->T;
    if (!(t->order = nlp_malloc(t->train.n * sizeof *t->order)) ||
        !(t->buf = nlp_malloc((4 * BT + (size_t)o->B) * sizeof *t->buf)) ||
        !(t->pos = nlp_malloc((size_t)o->T * sizeof *t->pos))) {
        rc = NLP_ENOMEM;
        goto fail;
    }
    memset(task, 0, sizeof *task);
    task->ctx = t;
    task->next_batch = bert_next;
    task->evaluate = t->valid.n ? bert_eval : NULL;
    task->eval_names = bert_names;
    task->best_metric = 0;
    task->higher_is_better = 0;
    task->get_state = bert_get_state;
    task->set_state = bert_set_state;
    return 0;
fail:
    nlp_bert_task_free(t);
    return rc;
}

void nlp_bert_task_free(nlp_bert_task *t)
{
    chunks_free(&t->train);
    chunks_free(&t->valid);
    free(t->special), free(t->normal), free(t->order), free(t->buf), free(t->pos);
    memset(t, 0, sizeof *t);
}
