/*
 * spm.c — sentencepiece models, read and run as sentencepiece does. See
 * spm.h.
 *
 * Written from the algorithms of sentencepiece 0.1.97 (Debian 12's
 * spm_encode and spm_decode, which the tests compare against), to their
 * arithmetic: the unigram lattice keeps float path scores and compares
 * double candidates against them, as unigram_model.cc's optimized encoder
 * does, so that ties and near-ties fall the same way.
 */
#include "tok/spm.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/pb.h"
#include "text/utf8.h"
#include "tok/charsmap.h"
#include "tok/datrie.h"

#include <float.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SPACE_SYMBOL "\xE2\x96\x81" /* U+2581, sentencepiece's escaped space */
#define UNK_SURFACE " \xE2\x81\x87 " /* " ⁇ " */

// --- reading the file

struct rd {
    const char *name;
    nlp_spm_info *o;
    size_t cap;
    int has_trainer, has_norm;
};

static int bad_at(const struct rd *r, size_t at, const char *field, const char *what)
{
    return nlp_error(NLP_EFORMAT, "'%s' byte %zu: %s: %s", r->name, at, field, what);
}

/* A malformed field: the message names it and what is wrong. */
static int malformed(const struct rd *r, const nlp_pb *pb, const char *field)
{
    return bad_at(r, nlp_pb_offset(pb), field, nlp_pb_why(pb));
}

static int read_bool(const struct rd *r, nlp_pb *pb, int wire, const char *field, int *out)
{
    uint64_t v = 0;
    if (nlp_pb_varint(pb, wire, &v)) return malformed(r, pb, field);
    *out = v != 0;
    return NLP_OK;
}

static int read_int32(const struct rd *r, nlp_pb *pb, int wire, const char *field, int32_t *out)
{
    uint64_t v = 0;
    if (nlp_pb_varint(pb, wire, &v)) return malformed(r, pb, field);
    *out = (int32_t)(uint32_t)v; /* protobuf's int32: the low 32 bits of the varint */
    return NLP_OK;
}

static int read_str(const struct rd *r, nlp_pb *pb, int wire, const char *field, const char **s, size_t *n)
{
    const uint8_t *p = NULL;
    if (nlp_pb_bytes(pb, wire, &p, n)) return malformed(r, pb, field);
    *s = (const char *)p;
    return NLP_OK;
}

/* A field number this reader does not use: skipped. */
static int skip(const struct rd *r, nlp_pb *pb, int wire, const char *msg)
{
    return nlp_pb_skip(pb, wire) ? malformed(r, pb, msg) : NLP_OK;
}

static int next_key(const struct rd *r, nlp_pb *pb, uint32_t *f, int *w, const char *msg)
{
    int k = nlp_pb_next(pb, f, w);
    if (k < 0) {
        char what[256];
        snprintf(what, sizeof what, "%s: not a sentencepiece model (a protobuf message), or a damaged one",
                 nlp_pb_why(pb));
        return bad_at(r, nlp_pb_offset(pb), msg, what);
    }
    return k;
}

static int read_piece(const struct rd *r, nlp_pb *pb, size_t i)
{
    nlp_spm_info *o = r->o;
    char field[64];
    uint32_t f;
    int w, k;
    const char *s = NULL;
    size_t n = 0;
    while ((k = next_key(r, pb, &f, &w, "pieces")) == 1) {
        int rc = NLP_OK;
        if (f == 1) {
            snprintf(field, sizeof field, "pieces[%zu].piece", i);
            rc = read_str(r, pb, w, field, &s, &n);
        } else if (f == 2) {
            snprintf(field, sizeof field, "pieces[%zu].score", i);
            if (nlp_pb_float(pb, w, &o->score[i])) rc = malformed(r, pb, field);
        } else if (f == 3) {
            snprintf(field, sizeof field, "pieces[%zu].type", i);
            int32_t t = 0;
            size_t at = nlp_pb_offset(pb);
            if (!(rc = read_int32(r, pb, w, field, &t))) {
                if (t < NLP_SPM_NORMAL || t > NLP_SPM_BYTE) {
                    char what[96];
                    snprintf(what, sizeof what, "unknown piece type %d (1-6: normal, unknown, control, user-defined, "
                             "unused, byte)", (int)t);
                    rc = bad_at(r, at, field, what);
                } else {
                    o->type[i] = (uint8_t)t;
                }
            }
        } else {
            rc = skip(r, pb, w, "pieces");
        }
        if (rc) return rc;
    }
    if (k < 0) return k;
    if (n > UINT32_MAX) n = UINT32_MAX; /* a piece cannot be that long in a file under 4 GB anyway */
    o->piece[i] = s ? s : "";
    o->len[i] = (uint32_t)n;
    return NLP_OK;
}

static int read_trainer(const struct rd *r, nlp_pb *pb)
{
    nlp_spm_info *o = r->o;
    uint32_t f;
    int w, k;
    while ((k = next_key(r, pb, &f, &w, "trainer_spec")) == 1) {
        int rc = NLP_OK;
        int32_t v = 0;
        switch (f) {
        case 3:
            if (!(rc = read_int32(r, pb, w, "trainer_spec.model_type", &v))) o->model_type = v;
            break;
        case 35: rc = read_bool(r, pb, w, "trainer_spec.byte_fallback", &o->byte_fallback); break;
        case 24: rc = read_bool(r, pb, w, "trainer_spec.treat_whitespace_as_suffix", &o->treat_whitespace_as_suffix); break;
        case 40: rc = read_int32(r, pb, w, "trainer_spec.unk_id", &o->unk_id); break;
        case 41: rc = read_int32(r, pb, w, "trainer_spec.bos_id", &o->bos_id); break;
        case 42: rc = read_int32(r, pb, w, "trainer_spec.eos_id", &o->eos_id); break;
        case 43: rc = read_int32(r, pb, w, "trainer_spec.pad_id", &o->pad_id); break;
        case 44:
            if (!(rc = read_str(r, pb, w, "trainer_spec.unk_surface", &o->unk_surface, &o->unk_surface_len)) &&
                !o->unk_surface)
                o->unk_surface = "";
            break;
        default: rc = skip(r, pb, w, "trainer_spec");
        }
        if (rc) return rc;
    }
    return k < 0 ? k : NLP_OK;
}

static int read_norm(const struct rd *r, nlp_pb *pb, nlp_spm_normspec *ns, const char *msg)
{
    uint32_t f;
    int w, k;
    char field[64];
    while ((k = next_key(r, pb, &f, &w, msg)) == 1) {
        int rc = NLP_OK;
        const char *s = NULL;
        size_t n = 0;
        switch (f) {
        case 1:
            snprintf(field, sizeof field, "%s.name", msg);
            if (!(rc = read_str(r, pb, w, field, &s, &n))) ns->name = s, ns->name_len = n;
            break;
        case 2:
            snprintf(field, sizeof field, "%s.precompiled_charsmap", msg);
            if (!(rc = read_str(r, pb, w, field, &s, &n))) ns->charsmap = (const uint8_t *)s, ns->charsmap_len = n;
            break;
        case 3:
            snprintf(field, sizeof field, "%s.add_dummy_prefix", msg);
            rc = read_bool(r, pb, w, field, &ns->add_dummy_prefix);
            break;
        case 4:
            snprintf(field, sizeof field, "%s.remove_extra_whitespaces", msg);
            rc = read_bool(r, pb, w, field, &ns->remove_extra_whitespaces);
            break;
        case 5:
            snprintf(field, sizeof field, "%s.escape_whitespaces", msg);
            rc = read_bool(r, pb, w, field, &ns->escape_whitespaces);
            break;
        default: rc = skip(r, pb, w, msg);
        }
        if (rc) return rc;
    }
    return k < 0 ? k : NLP_OK;
}

static void norm_defaults(nlp_spm_normspec *ns)
{
    memset(ns, 0, sizeof *ns);
    ns->add_dummy_prefix = ns->remove_extra_whitespaces = ns->escape_whitespaces = 1;
}

void nlp_spm_info_free(nlp_spm_info *o)
{
    free(o->piece);
    free(o->len);
    free(o->score);
    free(o->type);
    memset(o, 0, sizeof *o);
}

/* <0xHH> with upper-case hex digits (spm's ByteToPiece): the byte, or -1. */
static int byte_piece(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') v = v * 16 + (c - '0');
        else if (c >= 'A' && c <= 'F') v = v * 16 + (c - 'A' + 10);
        else return -1;
    }
    return v;
}

/* spm's own load-time checks (model_interface.cc's InitializePieces), as
 * errors, and a few of ours. */
static int check(const struct rd *r)
{
    const nlp_spm_info *o = r->o;
    char what[256];
    if (o->n == 0) return nlp_error(NLP_EFORMAT, "'%s': no pieces: not a sentencepiece model", r->name);
    /* spm_train writes pieces, then trainer_spec, then normalizer_spec: a
     * file cut between two fields still parses, without them */
    if (!r->has_trainer || !r->has_norm)
        return nlp_error(NLP_EFORMAT, "'%s': no %s after the %zu pieces: a truncated sentencepiece model (every "
                         "model spm_train writes has trainer_spec and normalizer_spec)", r->name,
                         !r->has_trainer ? "trainer_spec" : "normalizer_spec", o->n);
    if (o->model_type < NLP_SPM_UNIGRAM || o->model_type > NLP_SPM_CHAR)
        return nlp_error(NLP_EFORMAT, "'%s': trainer_spec.model_type: unknown model type %d (1 unigram, 2 bpe, 3 word, "
                         "4 char)", r->name, o->model_type);
    if (o->n > (size_t)INT32_MAX - 2) return nlp_error(NLP_EFORMAT, "'%s': too many pieces", r->name);
    nlp_strmap *normal = nlp_strmap_new(o->n), *reserved = nlp_strmap_new(300);
    int rc = NLP_OK;
    if (!normal || !reserved) rc = NLP_ENOMEM;
    int32_t unk = -1;
    uint8_t seen[256] = {0};
    for (size_t i = 0; i < o->n && !rc; i++) {
        const char *p = o->piece[i];
        size_t n = o->len[i];
        int t = o->type[i];
        if (n == 0) {
            rc = nlp_error(NLP_EFORMAT, "'%s': pieces[%zu].piece: empty (a piece must not be empty)", r->name, i);
            break;
        }
        if (isnan(o->score[i])) {
            rc = nlp_error(NLP_EFORMAT, "'%s': pieces[%zu].score: not a number", r->name, i);
            break;
        }
        int is_normal = t == NLP_SPM_NORMAL || t == NLP_SPM_USER_DEFINED || t == NLP_SPM_UNUSED;
        int fresh;
        int64_t *slot = nlp_strmap_slot(is_normal ? normal : reserved, p, n, &fresh);
        if (!slot) {
            rc = NLP_ENOMEM;
            break;
        }
        if (!fresh) {
            snprintf(what, sizeof what, "'%.*s' is already piece %lld", (int)(n > 64 ? 64 : n), p, (long long)*slot);
            rc = nlp_error(NLP_EFORMAT, "'%s': pieces[%zu].piece: %s", r->name, i, what);
            break;
        }
        *slot = (int64_t)i;
        if (t == NLP_SPM_UNKNOWN) {
            if (unk >= 0) {
                rc = nlp_error(NLP_EFORMAT, "'%s': pieces[%zu].type: a second unknown piece (the first is %ld)", r->name,
                               i, (long)unk);
                break;
            }
            unk = (int32_t)i;
        }
        if (t == NLP_SPM_BYTE) {
            int b = byte_piece(p, n);
            if (!o->byte_fallback)
                rc = nlp_error(NLP_EFORMAT, "'%s': pieces[%zu]: a byte piece, but trainer_spec.byte_fallback is false",
                               r->name, i);
            else if (b < 0)
                rc = nlp_error(NLP_EFORMAT, "'%s': pieces[%zu]: byte piece '%.*s' is not <0x00>..<0xFF>", r->name, i,
                               (int)(n > 64 ? 64 : n), p);
            else
                seen[b] = 1;
        }
    }
    if (!rc && unk < 0) rc = nlp_error(NLP_EFORMAT, "'%s': no unknown piece (type 2): not a usable sentencepiece model", r->name);
    if (!rc && o->byte_fallback) {
        int missing = 0;
        for (int b = 0; b < 256; b++) missing += !seen[b];
        if (missing)
            rc = nlp_error(NLP_EFORMAT, "'%s': trainer_spec.byte_fallback is true but %d of the 256 byte pieces are "
                           "missing", r->name, missing);
    }
    nlp_strmap_free(normal);
    nlp_strmap_free(reserved);
    return rc;
}

int nlp_spm_parse(const void *data, size_t n, const char *name, nlp_spm_info *o)
{
    memset(o, 0, sizeof *o);
    o->model_type = NLP_SPM_UNIGRAM;
    o->unk_id = 0, o->bos_id = 1, o->eos_id = 2, o->pad_id = -1;
    norm_defaults(&o->norm);
    norm_defaults(&o->denorm);
    struct rd r = {name, o, 0, 0, 0};
    nlp_pb pb = nlp_pb_init(data, n);
    uint32_t f;
    int w, k, rc = NLP_OK;
    while ((k = next_key(&r, &pb, &f, &w, "model")) == 1) {
        nlp_pb sub;
        size_t at = nlp_pb_offset(&pb);
        if (f == 1) {
            if (nlp_pb_sub(&pb, w, &sub)) {
                char field[48];
                snprintf(field, sizeof field, "pieces[%zu]", o->n);
                rc = malformed(&r, &pb, field);
                break;
            }
            if (o->n == r.cap) {
                size_t cap = r.cap ? 2 * r.cap : 1024;
                const char **p = nlp_reallocarray(o->piece, cap, sizeof *p);
                if (p) o->piece = p;
                uint32_t *l = nlp_reallocarray(o->len, cap, sizeof *l);
                if (l) o->len = l;
                float *s = nlp_reallocarray(o->score, cap, sizeof *s);
                if (s) o->score = s;
                uint8_t *t = nlp_reallocarray(o->type, cap, sizeof *t);
                if (t) o->type = t;
                if (!p || !l || !s || !t) {
                    rc = NLP_ENOMEM;
                    break;
                }
                r.cap = cap;
            }
            o->score[o->n] = 0;
            o->type[o->n] = NLP_SPM_NORMAL;
            if ((rc = read_piece(&r, &sub, o->n))) break;
            o->n++;
        } else if (f == 2 || f == 3 || f == 5) {
            const char *field = f == 2 ? "trainer_spec" : f == 3 ? "normalizer_spec" : "denormalizer_spec";
            if (nlp_pb_sub(&pb, w, &sub)) {
                rc = malformed(&r, &pb, field);
                break;
            }
            if (f == 2) rc = read_trainer(&r, &sub), r.has_trainer = 1;
            else if (f == 3) rc = read_norm(&r, &sub, &o->norm, field), r.has_norm = 1;
            else {
                rc = read_norm(&r, &sub, &o->denorm, field);
                o->has_denorm = 1;
            }
            if (rc) break;
        } else if ((rc = skip(&r, &pb, w, "model"))) {
            break;
        }
        (void)at;
    }
    if (!rc && k < 0) rc = k;
    if (!rc) rc = check(&r);
    if (!rc && o->norm.charsmap_len) {
        nlp_charsmap cm;
        if ((rc = nlp_charsmap_init(&cm, o->norm.charsmap, o->norm.charsmap_len)) == NLP_EFORMAT)
            nlp_error_prefix(rc, "'%s': normalizer_spec.precompiled_charsmap", name);
        nlp_charsmap_free(&cm);
    }
    if (!rc && o->has_denorm && o->denorm.charsmap_len) {
        nlp_charsmap cm;
        if ((rc = nlp_charsmap_init(&cm, o->denorm.charsmap, o->denorm.charsmap_len)) == NLP_EFORMAT)
            nlp_error_prefix(rc, "'%s': denormalizer_spec.precompiled_charsmap", name);
        nlp_charsmap_free(&cm);
    }
    if (rc) nlp_spm_info_free(o);
    return rc;
}

int nlp_spm_sniff(const void *data, size_t n)
{
    const uint8_t *d = data;
    nlp_pb pb = nlp_pb_init(d, n < 4096 ? n : 4096), sub;
    uint32_t f;
    int w;
    /* the first piece may be cut by the 4 KiB window only if it is longer
     * than that, which no model's first piece is */
    if (nlp_pb_next(&pb, &f, &w) != 1 || f != 1 || w != NLP_PB_LEN || nlp_pb_sub(&pb, w, &sub)) return 0;
    return nlp_pb_next(&sub, &f, &w) == 1 && f == 1 && w == NLP_PB_LEN;
}

// --- the compiled model

struct norm {
    int on;                /* a normalizer (the denormalizer may be absent) */
    nlp_charsmap cm;
    int has_cm;
    int add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, suffix;
    int user;              /* user-defined pieces are kept whole (the model's matcher) */
    uint8_t plain[128];    /* ASCII byte that no rule and no user-defined piece starts */
    uint8_t plain_before_ascii[128]; /* ... nor does it when an ASCII byte (or the end) follows */
};

struct nlp_spm {
    uint8_t *data;
    size_t ndata;
    nlp_spm_info info;
    nlp_datrie trie;     /* normal, user-defined and unused pieces (spm's pieces_) */
    nlp_datrie reserved; /* unknown, control and byte pieces (spm's reserved_id_map_) */
    uint8_t user_first[32];
    int has_user;
    struct norm norm, denorm;
    double *uscore; /* unigram: the score the lattice gives each id */
    float unk_score;
    int32_t unk_id;
    int32_t byte_id[256];
    int32_t *canon; /* decoding: PieceToId(IdToPiece(id)) */
};

const nlp_spm_info *nlp_spm_info_of(const nlp_spm *m) { return &m->info; }

static inline int is_user_first(const nlp_spm *m, uint8_t c) { return m->user_first[c >> 3] >> (c & 7) & 1; }

/* The trie's values: a piece's id, or -(id + 2) for an unused piece (which
 * the unigram lattice skips with the same test as no piece at all: < 0);
 * -1 is no piece. This gives the id of any piece, or -1. */
static inline int32_t trie_id(int32_t v) { return v >= -1 ? v : -v - 2; }

/* spm's PieceToId: reserved pieces first, then the others, else unknown. */
static int32_t piece_to_id(const nlp_spm *m, const char *s, size_t n)
{
    int32_t id = nlp_datrie_find(&m->reserved, s, n);
    if (id >= 0) return id;
    id = trie_id(nlp_datrie_find(&m->trie, s, n));
    return id >= 0 ? id : m->unk_id;
}

static int norm_init(struct norm *z, const nlp_spm_normspec *ns, int suffix, const nlp_spm *user)
{
    memset(z, 0, sizeof *z);
    z->on = 1;
    z->add_dummy_prefix = ns->add_dummy_prefix;
    z->remove_extra_whitespaces = ns->remove_extra_whitespaces;
    z->escape_whitespaces = ns->escape_whitespaces;
    z->suffix = suffix;
    z->user = user && user->has_user;
    if (ns->charsmap_len) {
        int rc = nlp_charsmap_init(&z->cm, ns->charsmap, ns->charsmap_len);
        if (rc) return rc;
        z->has_cm = 1;
    }
    for (int c = 0; c < 128; c++) {
        int u = z->user && is_user_first(user, (uint8_t)c);
        z->plain[c] = !(z->has_cm && nlp_charsmap_starts(&z->cm, (uint8_t)c)) && !u;
        z->plain_before_ascii[c] = z->plain[c] || (!u && !nlp_charsmap_ascii_tail(&z->cm, (uint8_t)c));
    }
    return NLP_OK;
}

void nlp_spm_free(nlp_spm *m)
{
    if (!m) return;
    nlp_spm_info_free(&m->info);
    nlp_datrie_free(&m->trie);
    nlp_datrie_free(&m->reserved);
    nlp_charsmap_free(&m->norm.cm);
    nlp_charsmap_free(&m->denorm.cm);
    free(m->uscore);
    free(m->canon);
    free(m->data);
    free(m);
}

int nlp_spm_new(nlp_spm **out, const void *data, size_t n, const char *name)
{
    nlp_spm *m = nlp_calloc(1, sizeof *m);
    if (!m) return NLP_ENOMEM;
    int rc = NLP_ENOMEM;
    nlp_span *keys = NULL, *rkeys = NULL;
    int32_t *vals = NULL, *rvals = NULL;
    if (!(m->data = nlp_malloc(n ? n : 1))) goto fail;
    memcpy(m->data, data, n);
    m->ndata = n;
    if ((rc = nlp_spm_parse(m->data, n, name, &m->info))) goto fail;
    const nlp_spm_info *o = &m->info;
    rc = NLP_ENOMEM;
    keys = nlp_malloc(o->n * sizeof *keys);
    vals = nlp_malloc(o->n * sizeof *vals);
    rkeys = nlp_malloc(o->n * sizeof *rkeys);
    rvals = nlp_malloc(o->n * sizeof *rvals);
    m->uscore = nlp_malloc(o->n * sizeof *m->uscore);
    m->canon = nlp_malloc(o->n * sizeof *m->canon);
    if (!keys || !vals || !rkeys || !rvals || !m->uscore || !m->canon) goto fail;
    size_t nk = 0, nr = 0;
    float min_score = FLT_MAX, max_score = FLT_MIN; /* spm's starting values, FLT_MIN included */
    for (size_t i = 0; i < o->n; i++) {
        int t = o->type[i];
        if (t == NLP_SPM_NORMAL || t == NLP_SPM_USER_DEFINED || t == NLP_SPM_UNUSED) {
            keys[nk] = (nlp_span){o->piece[i], o->len[i]};
            vals[nk++] = t == NLP_SPM_UNUSED ? -(int32_t)i - 2 : (int32_t)i; /* see trie_id */
        } else {
            rkeys[nr] = (nlp_span){o->piece[i], o->len[i]};
            rvals[nr++] = (int32_t)i;
        }
        if (t == NLP_SPM_UNKNOWN) m->unk_id = (int32_t)i;
        if (t == NLP_SPM_USER_DEFINED) {
            uint8_t c = (uint8_t)o->piece[i][0];
            m->user_first[c >> 3] |= (uint8_t)(1u << (c & 7));
            m->has_user = 1;
        }
        if (t == NLP_SPM_NORMAL) {
            if (o->score[i] < min_score) min_score = o->score[i];
            if (o->score[i] > max_score) max_score = o->score[i];
        }
    }
    /* unigram_model.cc: kUnkPenalty 10 in float; a user-defined piece's
     * (size_t length * float max) - 0.1 is a double */
    m->unk_score = min_score - 10.0f;
    for (size_t i = 0; i < o->n; i++)
        m->uscore[i] = o->type[i] == NLP_SPM_USER_DEFINED ? (double)((float)o->len[i] * max_score) - 0.1
                                                          : (double)o->score[i];
    if ((rc = nlp_datrie_build(&m->trie, keys, vals, nk)) || (rc = nlp_datrie_build(&m->reserved, rkeys, rvals, nr)))
        goto fail;
    for (int b = 0; b < 256; b++) {
        char p[8];
        snprintf(p, sizeof p, "<0x%02X>", b);
        m->byte_id[b] = piece_to_id(m, p, 6);
    }
    /* PieceToId(IdToPiece(id)) is id, except for a normal piece whose string
     * is also a reserved one's (spm allows it): the reserved one wins */
    for (size_t i = 0; i < o->n; i++) m->canon[i] = (int32_t)i;
    for (size_t i = 0; i < nr; i++) {
        int32_t id = trie_id(nlp_datrie_find(&m->trie, rkeys[i].s, rkeys[i].n));
        if (id >= 0) m->canon[id] = rvals[i];
    }
    if ((rc = norm_init(&m->norm, &o->norm, o->treat_whitespace_as_suffix, m))) goto charsmap;
    if (o->has_denorm && o->denorm.charsmap_len && (rc = norm_init(&m->denorm, &o->denorm, 0, NULL))) goto charsmap;
    free(keys);
    free(vals);
    free(rkeys);
    free(rvals);
    *out = m;
    return NLP_OK;
charsmap:
    if (rc == NLP_EFORMAT) nlp_error_prefix(rc, "'%s': a precompiled_charsmap", name);
fail:
    free(keys);
    free(vals);
    free(rkeys);
    free(rvals);
    nlp_spm_free(m);
    return rc;
}

void nlp_spm_scratch_free(nlp_spm_scratch *s)
{
    nlp_buf_free(&s->norm);
    free(s->a);
    free(s->b);
    free(s->c);
    memset(s, 0, sizeof *s);
}

// --- normalizing (normalizer.cc)

/* string_util::OneCharLen */
static inline size_t one_char_len(uint8_t c) { return (size_t)"\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[c >> 4]; }

/* The longest user-defined piece that s[0..n) starts with (spm's
 * PrefixMatcher: the longest of the first 64 matches), or 0. */
static size_t user_match(const nlp_spm *m, const char *s, size_t n)
{
    int32_t node = 0;
    size_t best = 0;
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (!nlp_datrie_step(&m->trie, &node, (uint8_t)s[i])) break;
        int32_t v = nlp_datrie_value(&m->trie, node);
        if (v >= 0 && m->info.type[v] == NLP_SPM_USER_DEFINED) {
            best = i + 1;
            if (++seen >= 64) break;
        }
    }
    return best;
}

/* Normalizer::NormalizePrefix: the text s[0..n) starts with (n > 0): its
 * normalized form *r[0..*rn) and how many bytes it takes. */
static size_t norm_prefix(const nlp_spm *m, const struct norm *z, const char *s, size_t n, const char **r, size_t *rn)
{
    uint8_t c = (uint8_t)s[0];
    if (z->user && is_user_first(m, c)) {
        size_t k = user_match(m, s, n);
        if (k) {
            *r = s, *rn = k;
            return k;
        }
    }
    if (z->has_cm && nlp_charsmap_starts(&z->cm, c)) {
        size_t k = nlp_charsmap_longest(&z->cm, s, n, r, rn);
        if (k) return k;
    }
    size_t k = c < 0x80 ? 1 : nlp_utf8_seq_len(s, n, 0);
    if (!k) {
        *r = "\xEF\xBF\xBD", *rn = 3;
        return 1;
    }
    *r = s, *rn = k;
    return k;
}

static int normalize(const nlp_spm *m, const struct norm *z, const char *s, size_t n, nlp_buf *out)
{
    nlp_buf_reset(out);
    if (n == 0) return NLP_OK;
    const char *r;
    size_t rn, i = 0;
    if (z->remove_extra_whitespaces)
        while (i < n) {
            size_t k = norm_prefix(m, z, s + i, n - i, &r, &rn);
            if (!(rn == 1 && r[0] == ' ')) break;
            i += k;
        }
    if (i == n) return NLP_OK;
    if (nlp_buf_reserve(out, 3 * (n - i) + 8)) return NLP_ENOMEM;
    const char *ws = z->escape_whitespaces ? SPACE_SYMBOL : " ";
    size_t wsn = z->escape_whitespaces ? 3 : 1;
    char *o = out->data;
    size_t len = 0, cap = out->cap;
#define ROOM(k)                                                                                                        \
    do {                                                                                                               \
        if (len + (k) >= cap) { /* and the NUL after */                                                                \
            out->len = len;                                                                                            \
            if (nlp_buf_reserve(out, (k) + (n - i) + 16)) return NLP_ENOMEM;                                           \
            o = out->data, cap = out->cap;                                                                             \
        }                                                                                                              \
    } while (0)
    if (!z->suffix && z->add_dummy_prefix) {
        ROOM(3);
        memcpy(o + len, ws, wsn);
        len += wsn;
    }
    int prev_space = z->remove_extra_whitespaces;
    while (i < n) {
        uint8_t c = (uint8_t)s[i];
        /* the common case: an ASCII byte no rule touches (letters start rules
         * only with a combining mark after them) */
        if (c < 0x80 && (z->plain[c] || (z->plain_before_ascii[c] && (i + 1 == n || (uint8_t)s[i + 1] < 0x80)))) {
            if (c == ' ') {
                if (!prev_space) {
                    ROOM(3);
                    memcpy(o + len, ws, wsn);
                    len += wsn;
                }
                prev_space = z->remove_extra_whitespaces;
            } else {
                ROOM(1);
                o[len++] = (char)c;
                prev_space = 0;
            }
            i++;
            continue;
        }
        size_t k = norm_prefix(m, z, s + i, n - i, &r, &rn);
        if (prev_space)
            while (rn && r[0] == ' ') r++, rn--;
        if (rn) {
            ROOM(3 * rn);
            for (size_t j = 0; j < rn; j++) {
                if (z->escape_whitespaces && r[j] == ' ') {
                    memcpy(o + len, SPACE_SYMBOL, 3);
                    len += 3;
                } else {
                    o[len++] = r[j];
                }
            }
            prev_space = r[rn - 1] == ' ';
        }
        i += k;
        if (!z->remove_extra_whitespaces) prev_space = 0;
    }
    if (z->remove_extra_whitespaces)
        while (len >= wsn && memcmp(o + len - wsn, ws, wsn) == 0) len -= wsn;
    if (z->suffix && z->add_dummy_prefix) {
        ROOM(3);
        memcpy(o + len, ws, wsn);
        len += wsn;
    }
#undef ROOM
    out->len = len;
    o[len] = 0;
    return NLP_OK;
}

int nlp_spm_normalize(const nlp_spm *m, const char *s, size_t n, nlp_buf *out)
{
    return normalize(m, &m->norm, s, n, out);
}

// --- the models

/* One piece of the normalized text: bytes [start, start + len), its id. */
struct piece {
    int32_t start, len, id;
};

static int pieces_room(nlp_spm_scratch *sc, size_t n)
{
    return nlp_grow(&sc->b, &sc->bcap, n, sizeof(struct piece));
}

struct node {
    float score;
    int32_t start, id;
};

/* unigram_model.cc's EncodeOptimized over t[0..n): the pieces, in order,
 * into sc->b; returns how many or NLP_ENOMEM. */
static long unigram(const nlp_spm *m, nlp_spm_scratch *sc, const char *t, size_t n)
{
    if (nlp_grow(&sc->a, &sc->acap, n + 1, sizeof(struct node))) return NLP_ENOMEM;
    struct node *best = sc->a;
    for (size_t i = 0; i <= n; i++) best[i] = (struct node){0.0f, -1, -1};
    const nlp_da_cell *C = m->trie.c;
    const double *us = m->uscore;
    const float unk_score = m->unk_score;
    for (size_t start = 0; start < n;) {
        const float till = best[start].score;
        size_t mblen = one_char_len((uint8_t)t[start]);
        if (mblen > n - start) mblen = n - start;
        int single = 0;
        int32_t node = 0;
        for (size_t k = start; k < n;) {
            /* the trie's step, inline: every base + byte is a cell */
            int32_t nx = C[node].base + (uint8_t)t[k];
            if (C[nx].check != node) break;
            node = nx;
            k++;
            int32_t id = C[node].value;
            if (id < 0) continue; /* no piece, or an unused one */
            struct node *tg = &best[k];
            const double cand = us[id] + (double)till;
            if (tg->start == -1 || cand > (double)tg->score) {
                tg->score = (float)cand;
                tg->start = (int32_t)start;
                tg->id = id;
            }
            single |= k - start == mblen;
        }
        if (!single) {
            struct node *tg = &best[start + mblen];
            const float cand = unk_score + till;
            if (tg->start == -1 || cand > tg->score) {
                tg->score = cand;
                tg->start = (int32_t)start;
                tg->id = m->unk_id;
            }
        }
        start += mblen;
    }
    /* the path, read backwards */
    size_t np = 0;
    for (size_t e = n; e > 0; e = (size_t)best[e].start) np++;
    if (pieces_room(sc, np)) return NLP_ENOMEM;
    struct piece *p = sc->b;
    size_t k = np;
    for (size_t e = n; e > 0; e = (size_t)best[e].start) {
        size_t s = (size_t)best[e].start;
        p[--k] = (struct piece){(int32_t)s, (int32_t)(e - s), best[e].id};
    }
    return (long)np;
}

struct sym {
    int32_t start, len, prev, next;
    int freeze;
};

struct pair {
    float score;
    int32_t left, right;
    uint32_t size;
};

/* spm's agenda order: the higher score first, then the leftmost. */
static inline int before(const struct pair *a, const struct pair *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

struct heap {
    struct pair *v;
    size_t n, cap;
};

static int heap_push(struct heap *h, struct pair x)
{
    if (nlp_grow(&h->v, &h->cap, h->n + 1, sizeof *h->v)) return NLP_ENOMEM;
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&x, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = x;
    return NLP_OK;
}

static struct pair heap_pop(struct heap *h)
{
    struct pair top = h->v[0], x = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) c++;
        if (!before(&h->v[c], &x)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = x;
    return top;
}

/* An unused piece's last recorded split (bpe_model.cc's rev_merge): id ->
 * the left part's length. Few entries: a list, searched from its end. */
struct revm {
    int32_t id, left;
};

struct bpe_ctx {
    const nlp_spm *m;
    const char *t;
    struct sym *s;
    struct heap h;
    struct revm *rev;
    size_t nrev, caprev;
};

static int maybe_pair(struct bpe_ctx *x, int32_t l, int32_t r)
{
    if (l < 0 || r < 0 || x->s[l].freeze || x->s[r].freeze) return NLP_OK;
    int32_t len = x->s[l].len + x->s[r].len;
    int32_t id = trie_id(nlp_datrie_find(&x->m->trie, x->t + x->s[l].start, (size_t)len));
    if (id < 0) return NLP_OK;
    if (heap_push(&x->h, (struct pair){x->m->info.score[id], l, r, (uint32_t)len})) return NLP_ENOMEM;
    if (x->m->info.type[id] == NLP_SPM_UNUSED) {
        if (nlp_grow(&x->rev, &x->caprev, x->nrev + 1, sizeof *x->rev)) return NLP_ENOMEM;
        x->rev[x->nrev++] = (struct revm){id, x->s[l].len};
    }
    return NLP_OK;
}

/* bpe_model.cc's Encode (no dropout) over t[0..n): pieces into sc->b. */
static long bpe(const nlp_spm *m, nlp_spm_scratch *sc, const char *t, size_t n)
{
    if (nlp_grow(&sc->a, &sc->acap, n + 1, sizeof(struct sym))) return NLP_ENOMEM;
    struct bpe_ctx x = {m, t, sc->a, {sc->c, 0, sc->ccap / sizeof(struct pair)}, NULL, 0, 0};
    long rc = NLP_OK;
    size_t ns = 0;
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        int freeze = 0;
        if (m->has_user && is_user_first(m, (uint8_t)t[i]) && (k = user_match(m, t + i, n - i))) freeze = 1;
        if (!k) {
            k = one_char_len((uint8_t)t[i]);
            if (k > n - i) k = n - i;
        }
        x.s[ns] = (struct sym){(int32_t)i, (int32_t)k, (int32_t)ns - 1, i + k < n ? (int32_t)ns + 1 : -1, freeze};
        ns++;
        i += k;
    }
    for (size_t i = 1; i < ns && !rc; i++) rc = maybe_pair(&x, (int32_t)i - 1, (int32_t)i);
    while (x.h.n && !rc) {
        struct pair top = heap_pop(&x.h);
        struct sym *L = &x.s[top.left], *R = &x.s[top.right];
        if (!L->len || !R->len || (uint32_t)(L->len + R->len) != top.size) continue;
        L->len += R->len;
        L->next = R->next;
        if (R->next >= 0) x.s[R->next].prev = top.left;
        R->len = 0;
        if ((rc = maybe_pair(&x, L->prev, top.left))) break;
        rc = maybe_pair(&x, top.left, L->next);
    }
    sc->c = x.h.v;
    sc->ccap = x.h.cap * sizeof(struct pair);
    /* the symbols left, unused pieces split back (a stack, not recursion:
     * a piece from a file may be long) */
    size_t np = 0;
    struct piece stack[64], *stk = stack;
    size_t nstk = 0, capstk = 64;
    for (int32_t i = ns ? 0 : -1; i >= 0 && !rc; i = x.s[i].next) {
        nstk = 0;
        stk[nstk++] = (struct piece){x.s[i].start, x.s[i].len, 0};
        while (nstk && !rc) {
            struct piece w = stk[--nstk];
            int32_t id = piece_to_id(m, t + w.start, (size_t)w.len);
            int32_t left = -1;
            if (m->info.type[id] == NLP_SPM_UNUSED)
                for (size_t q = x.nrev; q-- > 0;)
                    if (x.rev[q].id == id) {
                        left = x.rev[q].left;
                        break;
                    }
            if (left <= 0 || left >= w.len) {
                if (pieces_room(sc, np + 1)) {
                    rc = NLP_ENOMEM;
                    break;
                }
                ((struct piece *)sc->b)[np++] = (struct piece){w.start, w.len, id};
                continue;
            }
            if (nstk + 2 > capstk) {
                size_t nc = capstk * 2;
                struct piece *ns2 = nlp_malloc(nc * sizeof *ns2);
                if (!ns2) {
                    rc = NLP_ENOMEM;
                    break;
                }
                memcpy(ns2, stk, nstk * sizeof *stk);
                if (stk != stack) free(stk);
                stk = ns2;
                capstk = nc;
            }
            stk[nstk++] = (struct piece){w.start + left, w.len - left, 0}; /* right part after the left */
            stk[nstk++] = (struct piece){w.start, left, 0};
        }
    }
    if (stk != stack) free(stk);
    free(x.rev);
    return rc ? rc : (long)np;
}

/* char_model.cc and word_model.cc */
static long chars_or_words(const nlp_spm *m, nlp_spm_scratch *sc, const char *t, size_t n, int words)
{
    size_t np = 0;
    for (size_t i = 0; i < n;) {
        size_t k;
        if (words) {
            /* SplitIntoWords: a word starts at the text's start and at each U+2581 */
            k = 0;
            do {
                size_t c = one_char_len((uint8_t)t[i + k]);
                if (c > n - i - k) c = n - i - k;
                k += c;
            } while (i + k < n && !(n - i - k >= 3 && memcmp(t + i + k, SPACE_SYMBOL, 3) == 0 &&
                                    one_char_len((uint8_t)t[i + k]) == 3));
        } else {
            k = 0;
            if (m->has_user && is_user_first(m, (uint8_t)t[i])) k = user_match(m, t + i, n - i);
            if (!k) {
                k = one_char_len((uint8_t)t[i]);
                if (k > n - i) k = n - i;
            }
        }
        if (pieces_room(sc, np + 1)) return NLP_ENOMEM;
        ((struct piece *)sc->b)[np++] = (struct piece){(int32_t)i, (int32_t)k, piece_to_id(m, t + i, k)};
        i += k;
    }
    return (long)np;
}

/* The characters of an unknown piece as passed-through ids, the last final. */
static int put_chars(nlp_ids *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int32_t cp = nlp_utf8_next(s, n, &i);
        if (cp < 0) cp = NLP_UTF8_REPLACEMENT;
        if (nlp_ids_push(out, NLP_TOK_PASSTHROUGH(cp, i >= n))) return NLP_ENOMEM;
    }
    return NLP_OK;
}

/* SentencePieceProcessor::PopulateSentencePieceText, the ids of it. */
static int populate(const nlp_spm *m, const char *t, const struct piece *p, size_t np, int passthrough, nlp_ids *out)
{
    const uint8_t *type = m->info.type;
    int prev_unk = 0;
    for (size_t i = 0; i < np; i++) {
        int32_t id = p[i].id;
        int unk = type[id] == NLP_SPM_UNKNOWN;
        int rc = NLP_OK;
        if (type[id] == NLP_SPM_CONTROL) {
            rc = nlp_ids_push(out, id);
        } else if (unk && m->info.byte_fallback) {
            for (int32_t k = 0; k < p[i].len && !rc; k++) rc = nlp_ids_push(out, m->byte_id[(uint8_t)t[p[i].start + k]]);
        } else if (unk && prev_unk) {
            /* merged into the run before it */
            if (passthrough) {
                int32_t cp;
                int fin;
                if (out->n && nlp_tok_passthrough_char(out->v[out->n - 1], &cp, &fin))
                    out->v[out->n - 1] = NLP_TOK_PASSTHROUGH(cp, 0);
                rc = put_chars(out, t + p[i].start, (size_t)p[i].len);
            }
        } else if (unk && passthrough) {
            rc = put_chars(out, t + p[i].start, (size_t)p[i].len);
        } else if (out->n < out->cap) {
            out->v[out->n++] = id;
        } else {
            rc = nlp_ids_push(out, id);
        }
        if (rc) return rc;
        prev_unk = unk;
    }
    return NLP_OK;
}

int nlp_spm_encode(const nlp_spm *m, nlp_spm_scratch *sc, const char *s, size_t n, int passthrough, nlp_ids *out)
{
    int rc = normalize(m, &m->norm, s, n, &sc->norm);
    if (rc) return rc;
    const char *t = sc->norm.data;
    size_t tn = sc->norm.len;
    if (tn == 0) return NLP_OK;
    if (tn > INT32_MAX / 2) return nlp_error(NLP_ENOMEM, "a text of %zu bytes is too long to encode at once", n);
    long np;
    switch (m->info.model_type) {
    case NLP_SPM_BPE: np = bpe(m, sc, t, tn); break;
    case NLP_SPM_WORD: np = chars_or_words(m, sc, t, tn, 1); break;
    case NLP_SPM_CHAR: np = chars_or_words(m, sc, t, tn, 0); break;
    default: np = unigram(m, sc, t, tn); break;
    }
    if (np < 0) return (int)np;
    return populate(m, t, sc->b, (size_t)np, passthrough, out);
}

// --- decoding (SentencePieceProcessor::Decode)

/* Byte pieces ids[b..e) as UTF-8, each ill-formed byte a U+FFFD. */
static int put_bytes(const nlp_spm *m, const int32_t *canon_ids, size_t b, size_t e, nlp_buf *out)
{
    if (b >= e) return NLP_OK;
    char small[256], *buf = e - b <= sizeof small ? small : nlp_malloc(e - b);
    if (!buf) return NLP_ENOMEM;
    size_t k = 0;
    for (size_t i = b; i < e; i++) buf[k++] = (char)byte_piece(m->info.piece[canon_ids[i]], m->info.len[canon_ids[i]]);
    int rc = NLP_OK;
    for (size_t i = 0; i < k && !rc;) {
        size_t c = nlp_utf8_seq_len(buf, k, i);
        if (c) {
            rc = nlp_buf_append(out, buf + i, c);
            i += c;
        } else {
            rc = nlp_buf_append(out, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
    if (buf != small) free(buf);
    return rc;
}

static int decode_into(const nlp_spm *m, const int32_t *ids, size_t n, nlp_buf *out)
{
    const nlp_spm_info *o = &m->info;
    size_t t0 = out->len;
    const char *unk = o->unk_surface ? o->unk_surface : UNK_SURFACE;
    size_t unkn = o->unk_surface ? o->unk_surface_len : strlen(UNK_SURFACE);
    int strip_first = o->norm.add_dummy_prefix || o->norm.remove_extra_whitespaces;
    int32_t *cid = nlp_malloc((n ? n : 1) * sizeof *cid);
    if (!cid) return NLP_ENOMEM;
    for (size_t i = 0; i < n; i++) cid[i] = m->canon[ids[i]];
    int is_bos_ws = 1, bos_ws_seen = 0, rc = NLP_OK;
    size_t byte_start = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        int32_t id = cid[i];
        int t = o->type[id];
        if (t == NLP_SPM_BYTE) continue;
        if ((rc = put_bytes(m, cid, byte_start, i, out))) break;
        if (bos_ws_seen || out->len > t0) is_bos_ws = 0;
        byte_start = i + 1;
        bos_ws_seen = 0;
        if (t == NLP_SPM_CONTROL) continue;
        if (t == NLP_SPM_UNKNOWN) {
            if (nlp_buf_append(out, unk, unkn)) rc = NLP_ENOMEM;
            continue;
        }
        const char *p = o->piece[id];
        size_t pn = o->len[id];
        if (is_bos_ws && strip_first && pn >= 3 && memcmp(p, SPACE_SYMBOL, 3) == 0) {
            p += 3, pn -= 3;
            bos_ws_seen = !o->norm.remove_extra_whitespaces;
        }
        for (size_t k = 0; k < pn && !rc;) {
            if (pn - k >= 3 && memcmp(p + k, SPACE_SYMBOL, 3) == 0) {
                rc = nlp_buf_putc(out, ' ');
                k += 3;
            } else {
                const char *e = pn - k >= 3 ? memmem(p + k, pn - k, SPACE_SYMBOL, 3) : NULL;
                size_t upto = e ? (size_t)(e - p) : pn;
                rc = nlp_buf_append(out, p + k, upto - k);
                k = upto;
            }
        }
    }
    if (!rc) rc = put_bytes(m, cid, byte_start, n, out);
    if (!rc) rc = nlp_buf_reserve(out, 0);
    free(cid);
    return rc;
}

int nlp_spm_decode(const nlp_spm *m, const int32_t *ids, size_t n, nlp_buf *out)
{
    if (!m->denorm.on) return decode_into(m, ids, n, out);
    nlp_buf a = {0}, b = {0};
    int rc = decode_into(m, ids, n, &a);
    if (!rc) rc = normalize(m, &m->denorm, a.data ? a.data : "", a.len, &b);
    if (!rc && nlp_buf_append(out, b.data ? b.data : "", b.len)) rc = NLP_ENOMEM;
    if (!rc) rc = nlp_buf_reserve(out, 0);
    nlp_buf_free(&a);
    nlp_buf_free(&b);
    return rc;
}
