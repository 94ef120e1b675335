/*
 * safetensors.c — safetensors reader (validating, mmap) and atomic writer.
 * See safetensors.h for the format.
 */
#include "nn/safetensors.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/io.h"
#include "base/mem.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *name;
    size_t size;
} DT[NLP_DT_COUNT] = {
    [NLP_DT_F64] = {"F64", 8}, [NLP_DT_F32] = {"F32", 4}, [NLP_DT_F16] = {"F16", 2}, [NLP_DT_BF16] = {"BF16", 2},
    [NLP_DT_I64] = {"I64", 8}, [NLP_DT_I32] = {"I32", 4}, [NLP_DT_I16] = {"I16", 2}, [NLP_DT_I8] = {"I8", 1},
    [NLP_DT_U64] = {"U64", 8}, [NLP_DT_U32] = {"U32", 4}, [NLP_DT_U16] = {"U16", 2}, [NLP_DT_U8] = {"U8", 1},
    [NLP_DT_BOOL] = {"BOOL", 1},
};

const char *nlp_dtype_name(enum nlp_dtype t) { return (unsigned)t < NLP_DT_COUNT ? DT[t].name : "?"; }
size_t nlp_dtype_size(enum nlp_dtype t) { return (unsigned)t < NLP_DT_COUNT ? DT[t].size : 0; }

static int dtype_parse(const char *s)
{
    for (int i = 0; i < NLP_DT_COUNT; i++)
        if (strcmp(s, DT[i].name) == 0) return i;
    return -1;
}

float nlp_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0) {
        if (man == 0) u = sign;
        else { /* subnormal: renormalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) u = sign | 0x7f800000u | (man << 13);
    else u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    union { uint32_t u; float f; } v = {.u = u};
    return v.f;
}

// --- reader

struct nlp_st {
    char *path;
    unsigned char *base; /* whole file */
    size_t len;
    int mapped;
    unsigned char *data; /* data area */
    size_t data_len;
    nlp_st_tensor *t;
    size_t n;
    char **meta; /* key, value pairs */
    size_t nmeta;
    nlp_strmap *index;
    nlp_arena names;
};

static int fmt_err(const nlp_st *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fmt_err(const nlp_st *f, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nlp_error(NLP_EFORMAT, "'%s': %s", f->path, msg);
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++) {
        if (shape[i] < 0) k += (size_t)snprintf(buf + k, cap - k, "%s*", i ? ", " : "");
        else k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    }
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

static int cmp_begin(const void *a, const void *b)
{
    const nlp_st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* An integer JSON value that fits in [0, 2^53): 1, else 0. */
static int json_uint(json_t *v, uint64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0) return 0;
        *out = (uint64_t)x;
        return 1;
    }
    return 0;
}

static int parse_tensor(nlp_st *f, const char *name, json_t *v, nlp_st_tensor *t)
{
    if (!json_is_object(v)) return fmt_err(f, "header entry '%s' is not an object", name);
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
           *off = json_object_get(v, "data_offsets");
    if (!dt || !sh || !off)
        return fmt_err(f, "tensor '%s' lacks %s", name, !dt ? "\"dtype\"" : !sh ? "\"shape\"" : "\"data_offsets\"");
    if (!json_is_string(dt)) return fmt_err(f, "tensor '%s': dtype is not a string", name);
    int d = dtype_parse(json_string_value(dt));
    if (d < 0) return fmt_err(f, "tensor '%s': unknown dtype '%s'", name, json_string_value(dt));
    t->dtype = (enum nlp_dtype)d;
    if (!json_is_array(sh) || json_array_size(sh) > NLP_ST_MAXDIM)
        return fmt_err(f, "tensor '%s': shape is not a list of at most %d sizes", name, NLP_ST_MAXDIM);
    t->ndim = (int)json_array_size(sh);
    uint64_t numel = 1;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t s;
        if (!json_uint(json_array_get(sh, (size_t)i), &s) || s > (1ull << 48))
            return fmt_err(f, "tensor '%s': shape entry %d is not a size", name, i);
        t->shape[i] = (int64_t)s;
        if (s && numel > (1ull << 62) / s) return fmt_err(f, "tensor '%s': shape too large", name);
        numel *= s;
    }
    if (numel > UINT64_MAX / DT[d].size) return fmt_err(f, "tensor '%s': shape too large", name);
    t->numel = (int64_t)numel;
    if (!json_is_array(off) || json_array_size(off) != 2 || !json_uint(json_array_get(off, 0), &t->begin) ||
        !json_uint(json_array_get(off, 1), &t->end) || t->end < t->begin)
        return fmt_err(f, "tensor '%s': data_offsets is not [begin, end] with begin <= end", name);
    uint64_t bytes = numel * DT[d].size;
    if (t->end - t->begin != bytes) {
        char s[160];
        shape_str(s, sizeof s, t->ndim, t->shape);
        return fmt_err(f, "tensor '%s': data_offsets [%llu, %llu) hold %llu bytes, but %s%s needs %llu", name,
                       (unsigned long long)t->begin, (unsigned long long)t->end,
                       (unsigned long long)(t->end - t->begin), DT[d].name, s, (unsigned long long)bytes);
    }
    if (t->end > f->data_len)
        return fmt_err(f, "tensor '%s' ends at data byte %llu, but the file has only %zu data bytes (truncated?)",
                       name, (unsigned long long)t->end, f->data_len);
    t->data = f->data + t->begin;
    return NLP_OK;
}

/* What a file that is no safetensors file seems to be, for the message:
 * " (it looks like ...)" or "". */
static const char *looks_like(const nlp_st *f)
{
    const unsigned char *p = f->base;
    size_t n = f->len, i = 0, k, text = 0;
    if (n >= 4 && memcmp(p, "NLTK", 4) == 0) return " (it is a token stream)";
    while (i < n && i < 64 && (p[i] == ' ' || p[i] == '\n' || p[i] == '\t' || p[i] == '\r')) i++;
    if (i < n && (p[i] == '{' || p[i] == '[')) return " (it looks like JSON: a tokenizer or a configuration?)";
    for (k = 0; k < n && k < 512; k++) text += (p[k] >= 32 && p[k] != 127) || p[k] == '\n' || p[k] == '\t' || p[k] == '\r';
    return k && text == k ? " (it looks like text)" : "";
}

static int parse_header(nlp_st *f)
{
    if (f->len < 8)
        return fmt_err(f, "not a safetensors file%s: %zu bytes, shorter than the 8-byte header length", looks_like(f),
                       f->len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->base[i];
    if (n > 100000000ull)
        return fmt_err(f, "not a safetensors file%s: header length %llu at byte 0 is implausible", looks_like(f),
                       (unsigned long long)n);
    if (n > f->len - 8)
        return fmt_err(f, "truncated safetensors file: the header needs %llu bytes, the file has %zu after the length",
                       (unsigned long long)n, f->len - 8);
    if (n < 2 || f->base[8] != '{')
        return fmt_err(f, "not a safetensors file%s: the header does not start with '{' at byte 8", looks_like(f));
    f->data = f->base + 8 + n;
    f->data_len = f->len - 8 - (size_t)n;

    json_error_t je;
    json_t *root = json_loadb((const char *)f->base + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root) return fmt_err(f, "bad safetensors header: JSON error at header byte %d: %s", je.position, je.text);
    int rc = NLP_OK;
    if (!json_is_object(root)) {
        rc = fmt_err(f, "bad safetensors header: not a JSON object");
        goto out;
    }
    size_t cap = json_object_size(root);
    f->t = nlp_calloc(cap ? cap : 1, sizeof *f->t);
    f->index = nlp_strmap_new(cap);
    if (!f->t || !f->index) {
        rc = NLP_ENOMEM;
        goto out;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if (!json_is_object(v)) {
                rc = fmt_err(f, "bad safetensors header: __metadata__ is not an object");
                goto out;
            }
            size_t m = json_object_size(v);
            f->meta = nlp_calloc(2 * (m ? m : 1), sizeof *f->meta);
            if (!f->meta) {
                rc = NLP_ENOMEM;
                goto out;
            }
            const char *mk;
            json_t *mv;
            json_object_foreach(v, mk, mv) {
                if (!json_is_string(mv)) {
                    rc = fmt_err(f, "bad safetensors header: __metadata__ value of '%s' is not a string", mk);
                    goto out;
                }
                f->meta[2 * f->nmeta] = nlp_arena_strndup(&f->names, mk, strlen(mk));
                f->meta[2 * f->nmeta + 1] = nlp_arena_strndup(&f->names, json_string_value(mv), json_string_length(mv));
                if (!f->meta[2 * f->nmeta] || !f->meta[2 * f->nmeta + 1]) {
                    rc = NLP_ENOMEM;
                    goto out;
                }
                f->nmeta++;
            }
            continue;
        }
        nlp_st_tensor *t = &f->t[f->n];
        if ((rc = parse_tensor(f, key, v, t))) goto out;
        if (!(t->name = nlp_arena_strndup(&f->names, key, strlen(key)))) {
            rc = NLP_ENOMEM;
            goto out;
        }
        f->n++;
    }
    qsort(f->t, f->n, sizeof *f->t, cmp_begin);
    uint64_t pos = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (f->t[i].begin != pos) {
            rc = fmt_err(f, "bad safetensors header: tensor '%s' starts at data byte %llu, expected %llu (%s)",
                         f->t[i].name, (unsigned long long)f->t[i].begin, (unsigned long long)pos,
                         f->t[i].begin > pos ? "a hole" : "overlapping another tensor");
            goto out;
        }
        pos = f->t[i].end;
        if (nlp_strmap_put(f->index, f->t[i].name, strlen(f->t[i].name), (int64_t)i)) {
            rc = NLP_ENOMEM;
            goto out;
        }
    }
    if (pos != f->data_len)
        rc = fmt_err(f, "bad safetensors file: %llu bytes after the last tensor are not indexed by the header",
                     (unsigned long long)(f->data_len - pos));
out:
    json_decref(root);
    return rc;
}

static nlp_st *st_alloc(const char *name)
{
    nlp_st *f = nlp_calloc(1, sizeof *f);
    if (!f) return NULL;
    if (!(f->path = nlp_strdup(name))) {
        free(f);
        return NULL;
    }
    return f;
}

int nlp_st_open(nlp_st **out, const char *path)
{
    *out = NULL;
    nlp_st *f = st_alloc(path);
    if (!f) return NLP_ENOMEM;
    /* O_NONBLOCK: a FIFO opens at once instead of waiting for a writer
     * (for ever, when none comes), and is then refused as what it is */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        nlp_st_close(f);
        return nlp_error_errno(NLP_EIO, "cannot open '%s'", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        nlp_st_close(f);
        errno = e;
        return nlp_error_errno(NLP_EIO, "cannot read '%s'", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        nlp_st_close(f);
        return nlp_error(NLP_EFORMAT, "'%s' is %s, not a safetensors file: it must be a regular file", path,
                         S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                         : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
    }
    f->len = (size_t)st.st_size;
    if (f->len > 0) {
        void *p = mmap(NULL, f->len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            nlp_st_close(f);
            return nlp_error_errno(NLP_EIO, "cannot map '%s'", path);
        }
        f->base = p;
        f->mapped = 1;
    }
    close(fd);
    int rc = parse_header(f);
    if (rc) {
        nlp_st_close(f);
        return rc;
    }
    *out = f;
    return NLP_OK;
}

int nlp_st_open_mem(nlp_st **out, const void *buf, size_t len, const char *name)
{
    *out = NULL;
    nlp_st *f = st_alloc(name);
    if (!f) return NLP_ENOMEM;
    f->base = nlp_malloc(len ? len : 1);
    if (!f->base) {
        nlp_st_close(f);
        return NLP_ENOMEM;
    }
    memcpy(f->base, buf, len);
    f->len = len;
    int rc = parse_header(f);
    if (rc) {
        nlp_st_close(f);
        return rc;
    }
    *out = f;
    return NLP_OK;
}

void nlp_st_close(nlp_st *f)
{
    if (!f) return;
    if (f->mapped) munmap(f->base, f->len);
    else free(f->base);
    free(f->t);
    free(f->meta);
    nlp_strmap_free(f->index);
    nlp_arena_free(&f->names);
    free(f->path);
    free(f);
}

const char *nlp_st_path(const nlp_st *f) { return f->path; }
size_t nlp_st_count(const nlp_st *f) { return f->n; }
const nlp_st_tensor *nlp_st_at(const nlp_st *f, size_t i) { return i < f->n ? &f->t[i] : NULL; }

const nlp_st_tensor *nlp_st_find(const nlp_st *f, const char *name)
{
    int64_t i;
    if (!f->index || !nlp_strmap_get(f->index, name, strlen(name), &i)) return NULL;
    return &f->t[i];
}

void *nlp_st_data(const nlp_st *f, size_t *len)
{
    if (len) *len = f->data_len;
    return f->data;
}

const char *nlp_st_meta(const nlp_st *f, const char *key)
{
    for (size_t i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta[2 * i], key) == 0) return f->meta[2 * i + 1];
    return NULL;
}

size_t nlp_st_meta_count(const nlp_st *f) { return f->nmeta; }

void nlp_st_meta_at(const nlp_st *f, size_t i, const char **key, const char **value)
{
    *key = f->meta[2 * i];
    *value = f->meta[2 * i + 1];
}

int nlp_st_expect(const nlp_st *f, const char *name, int ndim, const int64_t *shape, const nlp_st_tensor **out)
{
    const nlp_st_tensor *t = nlp_st_find(f, name);
    if (out) *out = t;
    if (!t) return fmt_err(f, "missing tensor '%s'", name);
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = shape[i] < 0 || shape[i] == t->shape[i];
    if (!ok) {
        char a[160], b[160];
        shape_str(a, sizeof a, t->ndim, t->shape);
        shape_str(b, sizeof b, ndim, shape);
        return fmt_err(f, "tensor '%s' has shape %s, expected %s", name, a, b);
    }
    return NLP_OK;
}

/* Unaligned little-endian loads (the data area need not be aligned for every dtype). */
#define LOAD(T, p, i) ({ T v_; memcpy(&v_, (const unsigned char *)(p) + (size_t)(i) * sizeof(T), sizeof(T)); v_; })

int nlp_st_read_f32(const nlp_st *f, const nlp_st_tensor *t, float *dst)
{
    size_t n = (size_t)t->numel;
    switch (t->dtype) {
    case NLP_DT_F32: memcpy(dst, t->data, n * 4); return NLP_OK;
    case NLP_DT_F64: for (size_t i = 0; i < n; i++) dst[i] = (float)LOAD(double, t->data, i); return NLP_OK;
    case NLP_DT_BF16: for (size_t i = 0; i < n; i++) dst[i] = nlp_bf16_to_f32(LOAD(uint16_t, t->data, i)); return NLP_OK;
    case NLP_DT_F16: for (size_t i = 0; i < n; i++) dst[i] = nlp_f16_to_f32(LOAD(uint16_t, t->data, i)); return NLP_OK;
    default: return fmt_err(f, "tensor '%s' has dtype %s, expected a floating-point dtype", t->name, DT[t->dtype].name);
    }
}

/* Element i of an integer tensor as a wide signed value; *big set when a U64 exceeds INT64_MAX. */
static int64_t int_at(const nlp_st_tensor *t, size_t i, int *big)
{
    switch (t->dtype) {
    case NLP_DT_I64: return LOAD(int64_t, t->data, i);
    case NLP_DT_I32: return LOAD(int32_t, t->data, i);
    case NLP_DT_I16: return LOAD(int16_t, t->data, i);
    case NLP_DT_I8: return LOAD(int8_t, t->data, i);
    case NLP_DT_U64: {
        uint64_t u = LOAD(uint64_t, t->data, i);
        if (u > INT64_MAX) *big = 1;
        return (int64_t)u;
    }
    case NLP_DT_U32: return LOAD(uint32_t, t->data, i);
    case NLP_DT_U16: return LOAD(uint16_t, t->data, i);
    default: return LOAD(uint8_t, t->data, i); /* U8, BOOL */
    }
}

static int is_int(enum nlp_dtype d) { return d >= NLP_DT_I64 && d <= NLP_DT_BOOL; }

int nlp_st_read_i32(const nlp_st *f, const nlp_st_tensor *t, int32_t *dst)
{
    if (!is_int(t->dtype))
        return fmt_err(f, "tensor '%s' has dtype %s, expected an integer dtype", t->name, DT[t->dtype].name);
    for (size_t i = 0; i < (size_t)t->numel; i++) {
        int big = 0;
        int64_t v = int_at(t, i, &big);
        if (big || v < INT32_MIN || v > INT32_MAX)
            return fmt_err(f, "tensor '%s' element %zu does not fit in 32 bits", t->name, i);
        dst[i] = (int32_t)v;
    }
    return NLP_OK;
}

int nlp_st_read_i64(const nlp_st *f, const nlp_st_tensor *t, int64_t *dst)
{
    if (!is_int(t->dtype))
        return fmt_err(f, "tensor '%s' has dtype %s, expected an integer dtype", t->name, DT[t->dtype].name);
    for (size_t i = 0; i < (size_t)t->numel; i++) {
        int big = 0;
        dst[i] = int_at(t, i, &big);
        if (big) return fmt_err(f, "tensor '%s' element %zu does not fit in 63 bits", t->name, i);
    }
    return NLP_OK;
}

int nlp_st_read_u64(const nlp_st *f, const nlp_st_tensor *t, uint64_t *dst)
{
    if (t->dtype != NLP_DT_U64 && t->dtype != NLP_DT_I64)
        return fmt_err(f, "tensor '%s' has dtype %s, expected U64", t->name, DT[t->dtype].name);
    memcpy(dst, t->data, (size_t)t->numel * 8);
    return NLP_OK;
}

// --- writer

struct wtensor {
    char *name;
    enum nlp_dtype dtype, src;
    int ndim;
    int64_t shape[NLP_ST_MAXDIM];
    uint64_t numel;
    const void *data;
};

struct nlp_st_writer {
    struct wtensor *t;
    size_t n, cap;
    char **meta;
    size_t nmeta, mcap;
};

nlp_st_writer *nlp_st_writer_new(void) { return nlp_calloc(1, sizeof(nlp_st_writer)); }

void nlp_st_writer_free(nlp_st_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free(w->t[i].name);
    for (size_t i = 0; i < 2 * w->nmeta; i++) free(w->meta[i]);
    free(w->t);
    free(w->meta);
    free(w);
}

int nlp_st_writer_meta(nlp_st_writer *w, const char *key, const char *value)
{
    for (size_t i = 0; i < w->nmeta; i++)
        if (strcmp(w->meta[2 * i], key) == 0) {
            char *v = nlp_strdup(value);
            if (!v) return NLP_ENOMEM;
            free(w->meta[2 * i + 1]);
            w->meta[2 * i + 1] = v;
            return NLP_OK;
        }
    size_t need = 2 * (w->nmeta + 1);
    if (nlp_grow(&w->meta, &w->mcap, need, sizeof *w->meta)) return NLP_ENOMEM;
    char *k = nlp_strdup(key), *v = nlp_strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return NLP_ENOMEM;
    }
    w->meta[2 * w->nmeta] = k;
    w->meta[2 * w->nmeta + 1] = v;
    w->nmeta++;
    return NLP_OK;
}

int nlp_st_writer_add(nlp_st_writer *w, const char *name, enum nlp_dtype dtype, int ndim, const int64_t *shape,
                      const void *data, enum nlp_dtype src)
{
    if (ndim < 0 || ndim > NLP_ST_MAXDIM) return nlp_error(NLP_EINVAL, "tensor '%s': %d dimensions", name, ndim);
    if (!(src == dtype || (src == NLP_DT_F32 && dtype == NLP_DT_BF16)))
        return nlp_error(NLP_EINVAL, "tensor '%s': cannot store %s as %s", name, DT[src].name, DT[dtype].name);
    if (strcmp(name, "__metadata__") == 0) return nlp_error(NLP_EINVAL, "'__metadata__' is not a tensor name");
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->t[i].name, name) == 0) return nlp_error(NLP_EINVAL, "tensor '%s' added twice", name);
    if (nlp_grow(&w->t, &w->cap, w->n + 1, sizeof *w->t)) return NLP_ENOMEM;
    struct wtensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    if (!(t->name = nlp_strdup(name))) return NLP_ENOMEM;
    t->dtype = dtype;
    t->src = src;
    t->ndim = ndim;
    t->numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            free(t->name);
            return nlp_error(NLP_EINVAL, "tensor '%s': negative size", name);
        }
        t->shape[i] = shape[i];
        t->numel *= (uint64_t)shape[i];
    }
    t->data = data;
    w->n++;
    return NLP_OK;
}

static int json_str(nlp_buf *b, const char *s)
{
    int rc = nlp_buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
        if (*p == '"' || *p == '\\') {
            rc = nlp_buf_putc(b, '\\');
            if (!rc) rc = nlp_buf_putc(b, *p);
        } else if (*p < 0x20) rc = nlp_buf_printf(b, "\\u%04x", *p);
        else rc = nlp_buf_putc(b, *p);
    }
    return rc ? rc : nlp_buf_putc(b, '"');
}

int nlp_st_writer_save(nlp_st_writer *w, const char *path)
{
    nlp_buf h = {0};
    int rc = nlp_buf_putc(&h, '{');
    int first = 1;
    if (w->nmeta) {
        rc = rc ? rc : nlp_buf_puts(&h, "\"__metadata__\":{");
        for (size_t i = 0; i < w->nmeta && !rc; i++) {
            if (i) rc = nlp_buf_putc(&h, ',');
            if (!rc) rc = json_str(&h, w->meta[2 * i]);
            if (!rc) rc = nlp_buf_putc(&h, ':');
            if (!rc) rc = json_str(&h, w->meta[2 * i + 1]);
        }
        rc = rc ? rc : nlp_buf_putc(&h, '}');
        first = 0;
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n && !rc; i++) {
        struct wtensor *t = &w->t[i];
        if (!first) rc = nlp_buf_putc(&h, ',');
        first = 0;
        if (!rc) rc = json_str(&h, t->name);
        if (!rc) rc = nlp_buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", DT[t->dtype].name);
        for (int d = 0; d < t->ndim && !rc; d++) rc = nlp_buf_printf(&h, d ? ",%lld" : "%lld", (long long)t->shape[d]);
        uint64_t bytes = t->numel * DT[t->dtype].size;
        if (!rc) rc = nlp_buf_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                                     (unsigned long long)(off + bytes));
        off += bytes;
    }
    if (!rc) rc = nlp_buf_putc(&h, '}');
    while (!rc && (8 + h.len) % 8) rc = nlp_buf_putc(&h, ' ');
    if (rc) {
        nlp_buf_free(&h);
        return rc;
    }
    nlp_writer *out;
    if ((rc = nlp_writer_open(&out, path, 0))) {
        nlp_buf_free(&h);
        return rc;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    rc = nlp_writer_write(out, len8, 8);
    if (!rc) rc = nlp_writer_write(out, h.data, h.len);
    nlp_buf_free(&h);
    for (size_t i = 0; i < w->n && !rc; i++) {
        struct wtensor *t = &w->t[i];
        if (t->src == t->dtype) {
            rc = nlp_writer_write(out, t->data, t->numel * DT[t->dtype].size);
            continue;
        }
        /* F32 -> BF16 in chunks */
        uint16_t tmp[4096];
        const float *src = t->data;
        for (uint64_t j = 0; j < t->numel && !rc; j += 4096) {
            size_t k = t->numel - j < 4096 ? (size_t)(t->numel - j) : 4096;
            for (size_t q = 0; q < k; q++) tmp[q] = nlp_f32_to_bf16(src[j + q]);
            rc = nlp_writer_write(out, tmp, k * 2);
        }
    }
    if (rc) {
        nlp_writer_abort(out);
        return rc;
    }
    return nlp_writer_close(out);
}
