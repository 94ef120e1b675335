/*
 * pb.c — protocol buffers wire-format reader. See pb.h.
 */
#include "base/pb.h"
#include "base/err.h"

#include <string.h>

/* A varint at r->p: at most 10 bytes, the tenth holding one bit. */
static int read_varint(nlp_pb *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end) return NLP_EFORMAT;
        uint8_t b = *r->p++;
        if (i == 9 && b > 1) return NLP_EFORMAT;
        x |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return NLP_OK;
        }
    }
    return NLP_EFORMAT;
}

int nlp_pb_next(nlp_pb *r, uint32_t *field, int *wire)
{
    if (r->p >= r->end) return 0;
    uint64_t key;
    if (read_varint(r, &key)) return NLP_EFORMAT;
    uint64_t f = key >> 3;
    int w = (int)(key & 7);
    if (f == 0 || f > (1u << 29) - 1) return NLP_EFORMAT;
    if (w != NLP_PB_VARINT && w != NLP_PB_FIXED64 && w != NLP_PB_LEN && w != NLP_PB_FIXED32) return NLP_EFORMAT;
    *field = (uint32_t)f;
    *wire = w;
    return 1;
}

int nlp_pb_varint(nlp_pb *r, int wire, uint64_t *v)
{
    if (wire != NLP_PB_VARINT) return NLP_EFORMAT;
    return read_varint(r, v);
}

int nlp_pb_fixed32(nlp_pb *r, int wire, uint32_t *v)
{
    if (wire != NLP_PB_FIXED32 || r->end - r->p < 4) return NLP_EFORMAT;
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
    if (wire != NLP_PB_LEN || read_varint(r, &len) || len > (uint64_t)(r->end - r->p)) return NLP_EFORMAT;
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
    *sub = (nlp_pb){p, p + n, r->base};
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
        if (r->end - r->p < 8) return NLP_EFORMAT;
        r->p += 8;
        return NLP_OK;
    case NLP_PB_FIXED32:
        if (r->end - r->p < 4) return NLP_EFORMAT;
        r->p += 4;
        return NLP_OK;
    case NLP_PB_LEN: return nlp_pb_bytes(r, wire, &p, &n);
    }
    return NLP_EFORMAT;
}
