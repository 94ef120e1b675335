/*
 * pb.h — a reader of the protocol buffers wire format (proto2/proto3
 * encoding), over a byte range in memory: enough to read a message field by
 * field, as sentencepiece's .model files need (tok/spm.h).
 *
 * The wire format, as the reader takes it:
 *   message  := field*
 *   field    := key value, key = varint (field_number << 3 | wire_type)
 *   wire_type 0 varint (up to 10 bytes, 7 bits each, little end first)
 *             1 fixed64 (8 bytes, little-endian)
 *             2 length-delimited: varint length, then that many bytes
 *               (strings, bytes, embedded messages, packed repeated fields)
 *             5 fixed32 (4 bytes, little-endian; floats)
 *             3, 4 groups (deprecated): refused
 * Field number 0, a varint longer than 10 bytes, a length past the end of
 * the range, or a wire type 3, 4, 6 or 7 is an error. Unknown fields are the
 * caller's to skip (nlp_pb_skip); nothing is allocated.
 *
 * Errors are returned as NLP_EFORMAT without a message: the caller knows
 * which file and field it was reading and says so (nlp_pb_offset gives the
 * byte offset where the reader stopped, nlp_pb_why what went wrong).
 *
 * Not here: writing; schemas (the caller's switch over field numbers).
 */
#ifndef NLP_BASE_PB_H
#define NLP_BASE_PB_H

#include <stddef.h>
#include <stdint.h>

enum { NLP_PB_VARINT = 0, NLP_PB_FIXED64 = 1, NLP_PB_LEN = 2, NLP_PB_FIXED32 = 5 };

/* A message being read: bytes [p, end) left; base is where the outermost
 * message began (for offsets). Plain struct: a sub-message is read with a
 * reader made by nlp_pb_sub. */
typedef struct nlp_pb {
    const uint8_t *p, *end, *base, *limit; /* limit: the outermost message's end */
    int why;                               /* the last error: NLP_PB_E* */
} nlp_pb;

enum {
    NLP_PB_EEND = 1,  /* a value runs past the end of the data (truncated) */
    NLP_PB_EPAST,     /* a length runs past the end of the message it is in */
    NLP_PB_EVARINT,   /* a varint longer than 10 bytes */
    NLP_PB_EWIRE,     /* a wire type the field cannot have */
    NLP_PB_EKEY,      /* field number 0 or above 2^29-1, a group or a reserved wire type */
};

/* What the last error was, in words ("the data ends inside this field
 * (truncated)", ...). */
const char *nlp_pb_why(const nlp_pb *r);

/* A reader over data[0..n). */
static inline nlp_pb nlp_pb_init(const void *data, size_t n)
{
    const uint8_t *d = (const uint8_t *)data; /* the cast and no compound literal: C++ reads it too */
    nlp_pb r;
    r.p = d, r.end = d + n, r.base = d, r.limit = d + n, r.why = 0;
    return r;
}

/* Byte offset of the reader's position from the outermost message's start. */
static inline size_t nlp_pb_offset(const nlp_pb *r) { return (size_t)(r->p - r->base); }

/* The next field's number and wire type: 1, 0 at the end of the message, or
 * NLP_EFORMAT (a bad key: field 0, an overlong varint, a field number above
 * 2^29-1, or a group / reserved wire type). */
int nlp_pb_next(nlp_pb *r, uint32_t *field, int *wire);

/* Values of the field whose key was just read; each checks the wire type
 * (NLP_EFORMAT if it differs or the value runs past the end). */
int nlp_pb_varint(nlp_pb *r, int wire, uint64_t *v);
int nlp_pb_fixed32(nlp_pb *r, int wire, uint32_t *v);
int nlp_pb_float(nlp_pb *r, int wire, float *v);
/* Length-delimited: *p points into the message, *n bytes. */
int nlp_pb_bytes(nlp_pb *r, int wire, const uint8_t **p, size_t *n);
/* A length-delimited field read as a message: *sub reads its bytes (with the
 * same base, so that offsets stay those of the whole file). */
int nlp_pb_sub(nlp_pb *r, int wire, nlp_pb *sub);

/* Skips the value of a field of any (non-group) wire type. */
int nlp_pb_skip(nlp_pb *r, int wire);

#endif
