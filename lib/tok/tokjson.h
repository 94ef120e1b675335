/*
 * tokjson.h — HF tokenizers' tokenizer.json, read and written: nlpipe's
 * native tokenizer format.
 *
 * Read: version "1.0" files as HF tokenizers 0.13-0.23 write them (merges
 * as ["a", "b"] pairs or as "a b" strings; a model without "type" is BPE
 * when it has merges). Components understood: the BPE, WordPiece and
 * Unigram models; normalizers NFC NFD NFKC NFKD Lowercase StripAccents
 * Strip Prepend Replace (String, or a Regex of one repeated character)
 * Precompiled BertNormalizer Sequence; pre-tokenizers ByteLevel Whitespace
 * WhitespaceSplit BertPreTokenizer Metaspace Split(GPT-2's regex,
 * Isolated) Sequence; post-processors TemplateProcessing BertProcessing
 * RobertaProcessing ByteLevel Sequence; decoders ByteLevel BPEDecoder
 * WordPiece Metaspace ByteFallback Fuse Strip Replace Sequence; truncation
 * and padding. A model holding "nlpipe_sentencepiece_model" (base64 of a
 * sentencepiece .model, as nlpipe writes sentencepiece tokenizers) is that
 * sentencepiece model (tok/spm.h), whatever else the file says. Anything
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
 * NLP_EINVAL when a token holds a NUL byte or is not UTF-8 (see
 * nlp_tokjson_check_keys), or
 * NLP_ENOMEM. */
int nlp_tokjson_dump(const nlp_tok_spec *spec, nlp_buf *out);

/* The same; for a sentencepiece spec (NLP_MODEL_SPM) the file is HF's
 * view of the model (nlp_tokjson_spm_view) plus, unless hf_only, the .model
 * itself in base64 under model.nlpipe_sentencepiece_model, which is what
 * nlpipe reads back (HF ignores the key): nlpipe then encodes exactly as
 * sentencepiece does, HF as HF does with its view. */
int nlp_tokjson_dump_as(const nlp_tok_spec *spec, int hf_only, nlp_buf *out);

/* HF's view of a sentencepiece spec, as transformers' SpmConverter makes
 * it: Unigram (scores, unk_id, byte_fallback) or BPE (merges by piece score,
 * fuse_unk, byte_fallback); normalizer Precompiled (the model's character
 * map, when it has one), then with remove_extra_whitespaces Strip (right)
 * and Replace(Regex " {2,}", U+2581); pre-tokenizer Metaspace (always, or
 * never without add_dummy_prefix; split); decoder Metaspace, or with byte
 * fallback Replace(U+2581, " "), ByteFallback, Fuse, Strip(" ", 1, 0);
 * control pieces special added tokens, user-defined ones plain added
 * tokens. HF's tokenizers runs that view as HF does, which is close to but
 * not always sentencepiece's output. Returns 0, NLP_EINVAL (not a
 * sentencepiece spec) or NLP_ENOMEM. */
int nlp_tokjson_spm_view(const nlp_tok_spec *spm, nlp_tok_spec *view);

/* Writes spec to path ("-" = stdout) atomically. Returns 0, NLP_EINVAL (as
 * nlp_tokjson_dump; nothing is written), NLP_EIO or NLP_ENOMEM. */
int nlp_tokjson_write(const nlp_tok_spec *spec, const char *path);

/* 0 if every token of v can be a JSON object key as nlpipe writes and reads
 * them; NLP_EINVAL ("token N holds a NUL byte, ...", "token N is not UTF-8,
 * ...") for the first that cannot: jansson cuts keys at a NUL and refuses
 * "\u0000" in keys when reading; JSON text is UTF-8 (a sentencepiece piece
 * need not be). v may be NULL. */
int nlp_tokjson_check_keys(const nlp_vocab *v);

#endif
