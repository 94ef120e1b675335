/*
 * safetensors.h — read and write safetensors files (the HuggingFace format).
 *
 * The format, byte by byte (https://github.com/huggingface/safetensors):
 *
 *   offset 0   u64 little-endian N, the length of the header
 *   offset 8   N bytes of UTF-8 JSON: one object whose members are
 *                "__metadata__": {"key": "string value", ...}     (optional)
 *                "<tensor name>": {"dtype": "F32", "shape": [d0, d1, ...],
 *                                  "data_offsets": [begin, end]}
 *              begin/end are byte offsets into the data area (end exclusive);
 *              writers pad the JSON with spaces so that 8 + N is a multiple of 8
 *   offset 8+N the data area: every tensor's raw little-endian C-order bytes,
 *              packed with no holes and nothing after the last tensor
 *
 * Shape [] is a scalar (one element); a 0 in the shape is an empty tensor.
 * The reader checks all of it and names the file and what is wrong: a file
 * shorter than its header says (truncated), a header that is not JSON (with the
 * byte), a member without dtype/shape/data_offsets, an unknown dtype, offsets
 * that do not match the shape, data past the end of the file, holes, overlaps
 * and trailing bytes. Every such error is NLP_EFORMAT (exit 3 at the tools).
 *
 * Reading maps the file copy-on-write (MAP_PRIVATE), so tensors can be used in
 * place, even modified in memory, without a copy and without touching the file.
 * Writing goes through nlp_writer: a temporary file fsynced and renamed, so a
 * reader never sees half a file.
 *
 * dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL are recognised;
 * floats convert to fp32 on read (nlp_st_read_f32), integers to int32/int64
 * (nlp_st_read_i32/_i64, with a range check). The writer stores F32, BF16 (from
 * fp32, round to nearest even), I32, I64 and U64.
 *
 * Not here: which tensors a model has (lib/model), the parameter arena (params.h).
 */
#ifndef NLP_NN_SAFETENSORS_H
#define NLP_NN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

enum nlp_dtype {
    NLP_DT_F64, NLP_DT_F32, NLP_DT_F16, NLP_DT_BF16,
    NLP_DT_I64, NLP_DT_I32, NLP_DT_I16, NLP_DT_I8,
    NLP_DT_U64, NLP_DT_U32, NLP_DT_U16, NLP_DT_U8, NLP_DT_BOOL,
    NLP_DT_COUNT
};

/* "F32", ... and the element size in bytes. */
const char *nlp_dtype_name(enum nlp_dtype t);
size_t nlp_dtype_size(enum nlp_dtype t);

#define NLP_ST_MAXDIM 8

typedef struct nlp_st_tensor {
    const char *name;      /* owned by the file handle */
    enum nlp_dtype dtype;
    int ndim;
    int64_t shape[NLP_ST_MAXDIM];
    int64_t numel;         /* product of shape (1 for a scalar) */
    uint64_t begin, end;   /* byte range in the data area */
    void *data;            /* the bytes, in the (copy-on-write) mapping */
} nlp_st_tensor;

typedef struct nlp_st nlp_st;

/* Opens and validates `path`. On success *out holds the mapping; free it with
 * nlp_st_close (tensor pointers die with it). Errors: NLP_EIO (cannot open or
 * read), NLP_EFORMAT (everything about the content, see the top of this file,
 * and a path that is no regular file: a directory, a FIFO, which is not
 * waited on, a device), NLP_ENOMEM. */
int nlp_st_open(nlp_st **out, const char *path);

/* Validates a file already in memory (`buf` is copied); `name` is used in
 * messages. Same errors as nlp_st_open. */
int nlp_st_open_mem(nlp_st **out, const void *buf, size_t len, const char *name);

void nlp_st_close(nlp_st *f);

const char *nlp_st_path(const nlp_st *f);
/* Tensors in the order of their data (ascending begin). */
size_t nlp_st_count(const nlp_st *f);
const nlp_st_tensor *nlp_st_at(const nlp_st *f, size_t i);
/* The tensor called `name`, or NULL. */
const nlp_st_tensor *nlp_st_find(const nlp_st *f, const char *name);
/* The data area (all tensors, contiguous) and its length in bytes. */
void *nlp_st_data(const nlp_st *f, size_t *len);

/* A __metadata__ value, or NULL when the key is absent. */
const char *nlp_st_meta(const nlp_st *f, const char *key);
size_t nlp_st_meta_count(const nlp_st *f);
/* The i-th metadata pair (in header order). */
void nlp_st_meta_at(const nlp_st *f, size_t i, const char **key, const char **value);

/* Finds `name` and checks its shape (ndim dimensions; a negative entry in
 * shape[] matches any size). Errors (NLP_EFORMAT): "'file': missing tensor
 * 'name'", "'file': tensor 'name' has shape [..], expected [..]". */
int nlp_st_expect(const nlp_st *f, const char *name, int ndim, const int64_t *shape, const nlp_st_tensor **out);

/* Copies a tensor into dst (t->numel elements) converting to fp32 from F32,
 * F64, F16 or BF16; NLP_EFORMAT for any other dtype. */
int nlp_st_read_f32(const nlp_st *f, const nlp_st_tensor *t, float *dst);
/* Same into int32 from any integer dtype or BOOL; values outside int32 are
 * NLP_EFORMAT naming the tensor and the element. */
int nlp_st_read_i32(const nlp_st *f, const nlp_st_tensor *t, int32_t *dst);
/* Same into int64 (U64 above INT64_MAX is an error; read raw bits with
 * nlp_st_read_u64). */
int nlp_st_read_i64(const nlp_st *f, const nlp_st_tensor *t, int64_t *dst);
int nlp_st_read_u64(const nlp_st *f, const nlp_st_tensor *t, uint64_t *dst);

// --- writer

typedef struct nlp_st_writer nlp_st_writer;

/* A new, empty writer (NULL on ENOMEM). Free with nlp_st_writer_free. */
nlp_st_writer *nlp_st_writer_new(void);
void nlp_st_writer_free(nlp_st_writer *w);

/* Adds (or replaces) a metadata pair; both strings are copied. */
int nlp_st_writer_meta(nlp_st_writer *w, const char *key, const char *value);

/* Adds a tensor `name` stored as `dtype` with the given shape (ndim 0 = a
 * scalar). `data` holds the elements as `src` dtype and is NOT copied: it must
 * stay valid until nlp_st_writer_save returns. Conversions: src == dtype (raw
 * bytes), or src F32 with dtype BF16. Duplicate names are NLP_EINVAL. */
int nlp_st_writer_add(nlp_st_writer *w, const char *name, enum nlp_dtype dtype, int ndim, const int64_t *shape,
                      const void *data, enum nlp_dtype src);

/* Writes the file atomically: tensors in the order added, metadata first in
 * the header, the JSON padded with spaces to a multiple of 8. NLP_EIO on failure
 * (the target is then untouched). */
int nlp_st_writer_save(nlp_st_writer *w, const char *path);

// --- conversions

static inline float nlp_bf16_to_f32(uint16_t h)
{
    union { uint32_t u; float f; } v = {.u = (uint32_t)h << 16};
    return v.f;
}
/* fp32 to bf16, round to nearest even; NaN stays NaN (quiet). */
static inline uint16_t nlp_f32_to_bf16(float f)
{
    union { float f; uint32_t u; } v = {.f = f};
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40);
    return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1)) >> 16);
}
float nlp_f16_to_f32(uint16_t h);

#endif
