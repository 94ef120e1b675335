/*
 * tokjson.h — HF tokenizers' tokenizer.json, read and written: nlpipe's
 * native tokenizer format.
 *
 * Read: version "1.0" files as HF tokenizers 0.13-0.23 write them (merges
 * as ["a", "b"] pairs or as "a b" strings; a model without "type" is BPE
 * when it has merges). Components understood: the BPE model; normalizers
 * NFC NFD NFKC NFKD Lowercase StripAccents Strip Prepend Replace(String)
 * Sequence; pre-tokenizers ByteLevel Whitespace WhitespaceSplit
 * Split(GPT-2's regex, Isolated) Sequence; post-processors
 * TemplateProcessing BertProcessing RobertaProcessing ByteLevel Sequence;
 * decoders ByteLevel BPEDecoder Sequence; truncation and padding. Anything
 * else is an NLP_EFORMAT error that names the file, the JSON path (e.g.
 * "pre_tokenizer.pretokenizers[1].type") and what was found; JSON syntax
 * errors name the line and column.
 *
 * Written: the same schema, keys in HF's order, two-space indentation,
 * UTF-8 unescaped; vocab in id order. The output depends only on the spec,
 * so reading a written file and writing it again gives the same bytes.
 *
 * Not here: the other formats and format detection (tokfiles.h).
 */
#ifndef NLP_TOK_TOKJSON_H
#define NLP_TOK_TOKJSON_H

#include "base/mem.h"
#include "tok/jscan.h"
#include "tok/tokenizer.h"

/* Parses tokenizer.json text data[0..n) (`name` for messages) into *spec
 * (zeroed first; on error it is freed and zeroed again). Returns 0,
 * NLP_EFORMAT or NLP_ENOMEM. */
int nlp_tokjson_parse(const char *data, size_t n, const char *name, nlp_tok_spec *spec);

/* The same, with what nlp_jscan_tokenizer found in the text (after any
 * byte-order mark) given, so that it is not scanned twice. */
int nlp_tokjson_parse_scanned(const char *data, size_t n, const char *name, const nlp_jscan_tok *scanned,
                              nlp_tok_spec *spec);

/* Reads the file at path. Errors as nlp_tokjson_parse, plus NLP_EIO. */
int nlp_tokjson_read(const char *path, nlp_tok_spec *spec);

/* Appends the JSON text of spec to out (ends with a newline). Returns 0,
 * NLP_EINVAL when a token holds a NUL byte (see nlp_tokjson_check_keys), or
 * NLP_ENOMEM. */
int nlp_tokjson_dump(const nlp_tok_spec *spec, nlp_buf *out);

/* Writes spec to path ("-" = stdout) atomically. Returns 0, NLP_EINVAL (as
 * nlp_tokjson_dump; nothing is written), NLP_EIO or NLP_ENOMEM. */
int nlp_tokjson_write(const nlp_tok_spec *spec, const char *path);

/* 0 if every token of v can be a JSON object key as nlpipe writes and reads
 * them; NLP_EINVAL ("token N holds a NUL byte, ...") for the first that
 * cannot: jansson cuts keys at a NUL and refuses "\u0000" in keys when
 * reading. v may be NULL. */
int nlp_tokjson_check_keys(const nlp_vocab *v);

#endif
