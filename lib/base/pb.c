/*
 * pb.c — protocol buffers wire-format reader. See pb.h.
 */
#include "base/pb.h"
#include "base/err.h"

#include <string.h>

static int fail(nlp_pb *r, int why)
{
    r->why = why;
    return NLP_EFORMAT;
}

/* A value of n bytes needed where r->p is: past the message's end is past
 * the data's too (truncated) or just past this message. */
static int short_of(nlp_pb *r, uint64_t n)
{
    return fail(r, n > (uint64_t)(r->limit - r->p) ? NLP_PB_EEND : NLP_PB_EPAST);
}

const char *nlp_pb_why(const nlp_pb *r)
{
    switch (r->why) {
    case NLP_PB_EEND: return "the data ends inside this field (truncated)";
    case NLP_PB_EPAST: return "a length runs past the end of the message it is in";
    case NLP_PB_EVARINT: return "a varint longer than 10 bytes";
    case NLP_PB_EWIRE: return "a value of the wrong wire type";
    case NLP_PB_EKEY: return "not a protobuf field key (field number 0, a group or a reserved wire type)";
    }
    return "malformed";
}

/* A varint at r->p: at most 10 bytes, the tenth holding one bit. */
static int read_varint(nlp_pb *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end) return short_of(r, 1);
        uint8_t b = *r->p++;
        if (i == 9 && b > 1) return fail(r, NLP_PB_EVARINT);
        x |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return NLP_OK;
        }
    }
    return fail(r, NLP_PB_EVARINT);
}

int nlp_pb_next(nlp_pb *r, uint32_t *field, int *wire)
{
    if (r->p >= r->end) return 0;
    uint64_t key;
    if (read_varint(r, &key)) return NLP_EFORMAT;
    uint64_t f = key >> 3;
    int w = (int)(key & 7);
    if (f == 0 || f > (1u << 29) - 1) return fail(r, NLP_PB_EKEY);
    if (w != NLP_PB_VARINT && w != NLP_PB_FIXED64 && w != NLP_PB_LEN && w != NLP_PB_FIXED32) return fail(r, NLP_PB_EKEY);
    *field = (uint32_t)f;
    *wire = w;
    return 1;
}

int nlp_pb_varint(nlp_pb *r, int wire, uint64_t *v)
{
    if (wire != NLP_PB_VARINT) return fail(r, NLP_PB_EWIRE);
    return read_varint(r, v);
}

int nlp_pb_fixed32(nlp_pb *r, int wire, uint32_t *v)
{
    if (wire != NLP_PB_FIXED32) return fail(r, NLP_PB_EWIRE);
    if (r->end - r->p < 4) return short_of(r, 4);
    *v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;
    r->p += 4;
    return NLP_OK;
}

int nlp_pb_float(nlp_pb *r, int wire, float *v)
{
    uint32_t u;
    int rc = nlp_pb_fixed32(r, wire, &u);
    if (!rc) memcpy(v, &u, sizeof *v);
    return rc;
}

int nlp_pb_bytes(nlp_pb *r, int wire, const uint8_t **p, size_t *n)
{
    uint64_t len;
    if (wire != NLP_PB_LEN) return fail(r, NLP_PB_EWIRE);
    if (read_varint(r, &len)) return NLP_EFORMAT;
    if (len > (uint64_t)(r->end - r->p)) return short_of(r, len);
    *p = r->p;
    *n = (size_t)len;
    r->p += len;
    return NLP_OK;
}

int nlp_pb_sub(nlp_pb *r, int wire, nlp_pb *sub)
{
    const uint8_t *p;
    size_t n;
    int rc = nlp_pb_bytes(r, wire, &p, &n);
    if (rc) return rc;
    *sub = (nlp_pb){p, p + n, r->base, r->limit, 0};
    return NLP_OK;
}

int nlp_pb_skip(nlp_pb *r, int wire)
{
    uint64_t v;
    const uint8_t *p;
    size_t n;
    switch (wire) {
    case NLP_PB_VARINT: return read_varint(r, &v);
    case NLP_PB_FIXED64:
        if (r->end - r->p < 8) return short_of(r, 8);
        r->p += 8;
        return NLP_OK;
    case NLP_PB_FIXED32:
        if (r->end - r->p < 4) return short_of(r, 4);
        r->p += 4;
        return NLP_OK;
    case NLP_PB_LEN: return nlp_pb_bytes(r, wire, &p, &n);
    }
    return fail(r, NLP_PB_EWIRE);
}
