/*
 * tokbin.c — binary token streams. See tokbin.h.
 */
#include "tok/tokbin.h"
#include "base/err.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* One id of the given width at p; returns the end. */
static inline unsigned char *put_id(unsigned char *p, uint32_t v, uint32_t width)
{
    if (width == 4) {
        put32(p, v);
        return p + 4;
    }
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    return p + 2;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// --- writer

struct nlp_tokbin_writer {
    nlp_writer *w;
    uint32_t vocab, width;
    int64_t eot;
    uint64_t docs;
    unsigned char *buf;
    size_t cap;
};

int nlp_tokbin_writer_new(nlp_tokbin_writer **out, nlp_writer *w, uint32_t vocab_size, int32_t eot)
{
    return nlp_tokbin_writer_new_fp(out, w, vocab_size, eot, 0);
}

uint64_t nlp_tokbin_fingerprint(const nlp_tokenizer *tk)
{
    uint64_t h = 1469598103934665603ull;
    const size_t V = nlp_tokenizer_vocab_size(tk);
    for (int k = 0; k < 8; k++) h = (h ^ (unsigned char)((uint64_t)V >> (8 * k))) * 1099511628211ull;
    for (size_t id = 0; id < V; id++) {
        size_t n = 0;
        const char *s = nlp_tokenizer_id_to_token(tk, (int32_t)id, &n);
        if (!s) h = (h ^ 0xFE) * 1099511628211ull;
        for (size_t i = 0; s && i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
        h = (h ^ 0xFF) * 1099511628211ull; /* never in UTF-8 text: ends a token */
    }
    return h ? h : 1;
}

int nlp_tokbin_writer_new_fp(nlp_tokbin_writer **out, nlp_writer *w, uint32_t vocab_size, int32_t eot,
                             uint64_t fingerprint)
{
    if (vocab_size == 0) return nlp_error(NLP_EINVAL, "token stream: vocabulary size 0");
    if (eot >= 0 && (uint32_t)eot >= vocab_size)
        return nlp_error(NLP_EINVAL, "token stream: end-of-text id %ld is not below the vocabulary size %lu",
                         (long)eot, (unsigned long)vocab_size);
    nlp_tokbin_writer *bw = nlp_calloc(1, sizeof *bw);
    if (!bw) return NLP_ENOMEM;
    bw->w = w;
    bw->vocab = vocab_size;
    bw->width = vocab_size < 65536 ? 2 : 4; /* 0xFFFF stays free for the marker */
    bw->eot = eot;
    unsigned char h[NLP_TOKBIN_HEADER] = {0};
    memcpy(h, NLP_TOKBIN_MAGIC, 4);
    put32(h + 4, NLP_TOKBIN_VERSION);
    put32(h + 8, bw->width);
    put32(h + 12, vocab_size);
    put32(h + 16, eot >= 0 ? (uint32_t)eot : NLP_TOKBIN_NO_EOT);
    put32(h + 20, (uint32_t)fingerprint);
    put32(h + 24, (uint32_t)(fingerprint >> 32));
    int rc = nlp_writer_write(w, h, sizeof h);
    if (rc) {
        free(bw);
        return rc;
    }
    *out = bw;
    return NLP_OK;
}

/* Writes ids, the separator first when sep. */
static int write_ids(nlp_tokbin_writer *bw, int sep, const int32_t *ids, size_t n)
{
    size_t total = n + (sep != 0);
    if (nlp_grow(&bw->buf, &bw->cap, total * bw->width, 1)) return NLP_ENOMEM;
    unsigned char *p = bw->buf;
    if (sep) p = put_id(p, (uint32_t)bw->eot, bw->width);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint32_t)ids[i] >= bw->vocab)
            return nlp_error(NLP_EDATA, "token stream: id %ld is outside the vocabulary (size %lu)", (long)ids[i],
                             (unsigned long)bw->vocab);
        p = put_id(p, (uint32_t)ids[i], bw->width);
    }
    return nlp_writer_write(bw->w, bw->buf, (size_t)(p - bw->buf));
}

int nlp_tokbin_write_doc(nlp_tokbin_writer *bw, const int32_t *ids, size_t n)
{
    if (bw->docs > 0 && bw->eot < 0)
        return nlp_error(NLP_EINVAL, "token stream: no end-of-text id to separate documents");
    int rc = write_ids(bw, bw->docs > 0, ids, n);
    if (!rc) bw->docs++;
    return rc;
}

int nlp_tokbin_write_more(nlp_tokbin_writer *bw, const int32_t *ids, size_t n)
{
    if (bw->docs == 0) return nlp_tokbin_write_doc(bw, ids, n);
    return write_ids(bw, 0, ids, n);
}

int nlp_tokbin_write_end(nlp_tokbin_writer *bw, int unterminated)
{
    if (!unterminated || bw->docs == 0) return NLP_OK;
    unsigned char m[4];
    put_id(m, bw->width == 2 ? NLP_TOKBIN_UNTERMINATED_2 : NLP_TOKBIN_UNTERMINATED_4, bw->width);
    return nlp_writer_write(bw->w, m, bw->width);
}

void nlp_tokbin_writer_free(nlp_tokbin_writer *bw)
{
    if (!bw) return;
    free(bw->buf);
    free(bw);
}

// --- reader

struct nlp_tokbin_reader {
    nlp_reader *r;
    nlp_tokbin_info info;
    uint64_t left;  /* llm.c: tokens not yet read */
    int started, done, unterminated;
    int32_t pending; /* a separator already read (llm.c), or -1 */
    unsigned char buf[1 << 14];
    size_t have, at;
    uint64_t offset; /* stream offset of buf[at] */
    uint64_t limit;       /* ids must be below it (0: the header's size only) */
    const char *limit_of; /* whose vocabulary that is, for messages */
};

int nlp_tokbin_sniff(const unsigned char *p)
{
    uint32_t m = get32(p);
    return memcmp(p, NLP_TOKBIN_MAGIC, 4) == 0 || m == NLP_LLMC_MAGIC_GPT2 || m == NLP_LLMC_MAGIC_LLAMA3;
}

int nlp_tokbin_reader_new(nlp_tokbin_reader **out, nlp_reader *r, int64_t eot)
{
    const char *name = nlp_reader_name(r);
    unsigned char h[NLP_LLMC_HEADER];
    size_t got;
    int rc = nlp_reader_read(r, h, 4, &got);
    if (rc) return rc;
    if (got < 4) return nlp_error(NLP_EFORMAT, "'%s': not a token stream (%zu bytes, too short for a header)", name, got);
    nlp_tokbin_reader *br = nlp_calloc(1, sizeof *br);
    if (!br) return NLP_ENOMEM;
    br->r = r;
    br->pending = -1;
    nlp_tokbin_info *in = &br->info;
    uint32_t magic = get32(h);
    if (memcmp(h, NLP_TOKBIN_MAGIC, 4) == 0) {
        rc = nlp_reader_read(r, h + 4, NLP_TOKBIN_HEADER - 4, &got);
        if (!rc && got < NLP_TOKBIN_HEADER - 4)
            rc = nlp_error(NLP_EFORMAT, "'%s': truncated token stream header (%zu of %d bytes)", name, got + 4,
                           NLP_TOKBIN_HEADER);
        if (rc) goto fail;
        in->kind = NLP_TOKBIN_NLPIPE;
        in->version = get32(h + 4);
        in->width = get32(h + 8);
        in->vocab_size = get32(h + 12);
        uint32_t e = get32(h + 16);
        in->eot = e == NLP_TOKBIN_NO_EOT ? -1 : (int64_t)e;
        in->tokenizer = (uint64_t)get32(h + 20) | (uint64_t)get32(h + 24) << 32;
        if (in->version != NLP_TOKBIN_VERSION) {
            rc = nlp_error(NLP_EFORMAT, "'%s': token stream version %lu is not supported (this nlpipe reads version %d)",
                           name, (unsigned long)in->version, NLP_TOKBIN_VERSION);
            goto fail;
        }
        if (in->width != 2 && in->width != 4) {
            rc = nlp_error(NLP_EFORMAT, "'%s': id width %lu (expected 2 or 4)", name, (unsigned long)in->width);
            goto fail;
        }
        if (in->vocab_size == 0) {
            rc = nlp_error(NLP_EFORMAT, "'%s' byte 12: vocabulary size 0", name);
            goto fail;
        }
        if (in->eot >= (int64_t)in->vocab_size) {
            rc = nlp_error(NLP_EFORMAT, "'%s' byte 16: end-of-text id %lld is not below the vocabulary size %lu of the "
                           "header", name, (long long)in->eot, (unsigned long)in->vocab_size);
            goto fail;
        }
        br->offset = NLP_TOKBIN_HEADER;
    } else if (magic == NLP_LLMC_MAGIC_GPT2 || magic == NLP_LLMC_MAGIC_LLAMA3) {
        rc = nlp_reader_read(r, h + 4, NLP_LLMC_HEADER - 4, &got);
        if (!rc && got < NLP_LLMC_HEADER - 4)
            rc = nlp_error(NLP_EFORMAT, "'%s': truncated llm.c shard header (%zu of %d bytes)", name, got + 4,
                           NLP_LLMC_HEADER);
        if (rc) goto fail;
        in->kind = NLP_TOKBIN_LLMC;
        in->version = get32(h + 4);
        uint32_t want = magic == NLP_LLMC_MAGIC_GPT2 ? 1 : 7;
        if (in->version != want) {
            rc = nlp_error(NLP_EFORMAT, "'%s': llm.c shard version %lu is not supported (expected %lu)", name,
                           (unsigned long)in->version, (unsigned long)want);
            goto fail;
        }
        in->width = magic == NLP_LLMC_MAGIC_GPT2 ? 2 : 4;
        int32_t cnt = (int32_t)get32(h + 8);
        if (cnt < 0) {
            rc = nlp_error(NLP_EFORMAT, "'%s': negative token count in llm.c header", name);
            goto fail;
        }
        in->count = (uint64_t)cnt;
        in->eot = eot;
        br->left = in->count;
        br->offset = NLP_LLMC_HEADER;
    } else {
        rc = nlp_error(NLP_EFORMAT,
                       "'%s': not a token stream (magic %02x %02x %02x %02x; expected \"NLTK\" or an llm.c shard)",
                       name, h[0], h[1], h[2], h[3]);
        goto fail;
    }
    *out = br;
    return NLP_OK;
fail:
    free(br);
    return rc;
}

const nlp_tokbin_info *nlp_tokbin_reader_info(const nlp_tokbin_reader *br) { return &br->info; }

void nlp_tokbin_reader_limit(nlp_tokbin_reader *br, uint64_t vocab_size, const char *of)
{
    br->limit = vocab_size;
    br->limit_of = of;
}

/* Next id: 1, 0 at the end, or an error. */
static int next_id(nlp_tokbin_reader *br, uint32_t *v)
{
    size_t w = br->info.width;
    if (br->info.kind == NLP_TOKBIN_LLMC && br->left == 0) return 0;
    if (br->have - br->at < w) {
        size_t rest = br->have - br->at;
        memmove(br->buf, br->buf + br->at, rest);
        br->have = rest;
        br->at = 0;
        while (br->have < w) {
            size_t got;
            int rc = nlp_reader_read(br->r, br->buf + br->have, sizeof br->buf - br->have, &got);
            if (rc) return rc;
            if (got == 0) break;
            br->have += got;
        }
        if (br->have == 0) {
            if (br->info.kind == NLP_TOKBIN_LLMC)
                return nlp_error(NLP_EFORMAT, "'%s': truncated llm.c shard: %llu of %llu tokens missing at byte %llu",
                                 nlp_reader_name(br->r), (unsigned long long)br->left,
                                 (unsigned long long)br->info.count, (unsigned long long)br->offset);
            return 0;
        }
        if (br->have < w)
            return nlp_error(NLP_EFORMAT, "'%s': truncated token stream: a partial id at byte %llu",
                             nlp_reader_name(br->r), (unsigned long long)br->offset);
    }
    const unsigned char *p = br->buf + br->at;
    *v = w == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : get32(p);
    if (br->info.kind == NLP_TOKBIN_NLPIPE && *v == (w == 2 ? NLP_TOKBIN_UNTERMINATED_2 : NLP_TOKBIN_UNTERMINATED_4) &&
        *v >= br->info.vocab_size) {
        /* the marker (never an id: older streams of 65536 tokens in
         * width 2 hold FFFF as one): the last value, after the last
         * document */
        uint64_t at = br->offset;
        br->at += w;
        br->offset += w;
        uint32_t more;
        int rc = next_id(br, &more);
        if (rc < 0) return rc;
        if (rc > 0 || br->unterminated)
            return nlp_error(NLP_EFORMAT, "'%s' byte %llu: the no-final-newline marker is not the last value",
                             nlp_reader_name(br->r), (unsigned long long)at);
        br->unterminated = 1;
        return 0;
    }
    if (br->info.kind == NLP_TOKBIN_NLPIPE && *v >= br->info.vocab_size)
        return nlp_error(NLP_EFORMAT, "'%s' byte %llu: id %lu is not below the vocabulary size %lu of the header",
                         nlp_reader_name(br->r), (unsigned long long)br->offset, (unsigned long)*v,
                         (unsigned long)br->info.vocab_size);
    /* ids are int32 in memory: an llm.c shard's 0xFFFFFFFF must not become -1 */
    if (*v > INT32_MAX || (br->limit && *v >= br->limit))
        return nlp_error(NLP_EFORMAT, "'%s' byte %llu: id %lu is not below the vocabulary size %llu%s%s%s",
                         nlp_reader_name(br->r), (unsigned long long)br->offset, (unsigned long)*v,
                         (unsigned long long)(br->limit ? br->limit : (uint64_t)INT32_MAX + 1),
                         br->limit_of ? " of '" : "", br->limit_of ? br->limit_of : "", br->limit_of ? "'" : "");
    br->at += w;
    br->offset += w;
    if (br->info.kind == NLP_TOKBIN_LLMC) br->left--;
    return 1;
}

int nlp_tokbin_next_doc(nlp_tokbin_reader *br, nlp_ids *out)
{
    out->n = 0;
    if (br->done) return 0;
    int64_t eot = br->info.eot;
    int llmc = br->info.kind == NLP_TOKBIN_LLMC;
    int got_any = 0;
    for (;;) {
        uint32_t v = 0;
        int rc = next_id(br, &v);
        if (rc < 0) return rc;
        if (rc == 0) {
            br->done = 1;
            /* nlpipe: the last document (none in an empty stream);
             * llm.c: the document after the last separator */
            if (!br->started && !got_any) return 0;
            br->started = 1;
            return 1;
        }
        if (eot >= 0 && v == (uint64_t)eot) {
            if (llmc && !br->started && !got_any) {
                br->started = 1; /* the separator that opens the first document */
                continue;
            }
            br->started = 1;
            return 1;
        }
        got_any = 1;
        if (nlp_ids_push(out, (int32_t)v)) return NLP_ENOMEM;
    }
}

int nlp_tokbin_reader_unterminated(const nlp_tokbin_reader *br) { return br->unterminated && br->done; }

void nlp_tokbin_reader_free(nlp_tokbin_reader *br) { free(br); }
