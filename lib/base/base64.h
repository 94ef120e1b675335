/*
 * base64.h — base64 (RFC 4648's standard alphabet, with = padding), as
 * tokenizer.json holds binary blobs (HF's Precompiled normalizer, the
 * sentencepiece model nlpipe embeds).
 *
 * Not here: the URL-safe alphabet, line breaks (none are written; none are
 * accepted).
 */
#ifndef NLP_BASE_BASE64_H
#define NLP_BASE_BASE64_H

#include <stddef.h>

#include "base/mem.h"

/* Appends the base64 text of p[0..n) to out. Returns 0 or NLP_ENOMEM. */
int nlp_base64_encode(const void *p, size_t n, nlp_buf *out);

/* Decodes s[0..n) (padded to a multiple of 4, standard alphabet) and
 * appends the bytes to out. Returns 0, NLP_EFORMAT with *bad the offset of
 * the first character that is wrong (or n when the length is), or
 * NLP_ENOMEM. No message is set: the caller names the field. */
int nlp_base64_decode(const char *s, size_t n, nlp_buf *out, size_t *bad);

#endif
