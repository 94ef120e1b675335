/*
 * tokfiles.h — every tokenizer file format nlpipe reads and writes, and
 * finding the tokenizer behind a -m path.
 *
 * Formats:
 *   JSON   HF tokenizer.json (tokjson.h), the native format: the whole
 *          pipeline in one file.
 *   GPT2   GPT-2's encoder.json (token -> id, JSON) + vocab.bpe (merges,
 *          "#version: 0.2" then "a b" per line, in rank order). Read as
 *          GPT-2's tokenizer: byte-level BPE, GPT-2 pattern, no prefix
 *          space, <|endoftext|> (when present) a special token.
 *   HF     HF's BPE model files vocab.json + merges.txt (same syntax as
 *          GPT2). They do not say which pipeline they belong to: a
 *          vocabulary with a token holding one of GPT-2's remapped
 *          characters (U+0100-U+0143, such as 'Ġ') is read as byte-level
 *          (like GPT2); otherwise as classic BPE on white-space-split words,
 *          with end-of-word suffix </w> if tokens end with it.
 *   CODES  subword-nmt codes: optional "#version: 0.2", then "a b" merges
 *          where a word-final symbol carries "</w>". There are no ids in
 *          such a file; they are assigned as: 0 = <unk> (the unknown
 *          token), then every character the merges use, plain then with
 *          </w>, by code point, then each merge's result in rank order.
 *          Classic BPE: white-space split, suffix </w>, BPEDecoder.
 *          A character that no merge uses has no id (<unk> stands for it);
 *          writers of pieces pass it through as apply-bpe does
 *          (nlp_encode_opts.unk_passthrough).
 *   VOCAB  BERT's vocab.txt: one token per line, the id is the line number
 *          minus one (trailing white space of a line is not part of the
 *          token, as in HF's reader). Read as BERT's tokenizer: WordPiece
 *          ([UNK], ##, 100 characters), BertNormalizer with the uncased
 *          settings (lowercase, strip accents) unless opts->cased,
 *          BertPreTokenizer, [CLS] $A [SEP] / [CLS] $A [SEP] $B [SEP] when
 *          both are tokens, WordPiece decoder; [PAD] [UNK] [CLS] [SEP] [MASK]
 *          (those present) are special tokens. Empty lines, duplicate
 *          tokens and NUL bytes are errors.
 *   SPM    a sentencepiece model (spm_train's .model, HF's tokenizer.model,
 *          spiece.model): the protobuf file, read by tok/spm.h and run as
 *          spm_encode and spm_decode do (unigram, bpe, word or char, its
 *          own normalization and byte fallback). Ids are the pieces'
 *          positions; the control pieces are the special tokens.
 *
 * A -m path may be a file or a directory. A directory is searched for
 * tokenizer.json, then encoder.json + vocab.bpe, then vocab.json +
 * merges.txt, then codes / bpe.codes, then vocab.txt, then
 * tokenizer.model / spiece.model / sentencepiece.bpe.model. A file is
 * recognised by name and content: a file whose name ends in .model, or
 * whose bytes start as a sentencepiece model's do (a protobuf piece), is a
 * sentencepiece model; a file named vocab.txt is a BERT vocab.txt; one
 * that starts with '{' is JSON: an object with "model" is tokenizer.json, a
 * JSON vocabulary needs its merges file beside it (vocab.bpe or
 * merges.txt); a text file whose first line holds no space and is no
 * "#version" line (every merges line has a space) is a BERT vocab.txt;
 * another text file is a merges file of a pair when the vocabulary file is
 * beside it, else subword-nmt codes.
 *
 * A UTF-8 byte-order mark before JSON is skipped (as HF does). A file named
 * *.json is JSON whatever it starts with: anything but a tokenizer.json
 * object is an error there, never read as a vocab.txt. A file larger than
 * NLP_TOKFILE_MAX_BYTES, an empty file, a vocab.txt with a CR inside a line
 * (CR line ends) and a tokenizer that cannot encode every word (a
 * WordPiece vocabulary without its unknown token) are errors when loaded.
 *
 * Errors name the file and line (or JSON path) and what was expected:
 * NLP_EFORMAT, NLP_EIO (cannot open), NLP_ENOMEM. A file read as vocab.txt
 * or codes by elimination that is neither says which formats were tried; a
 * token stream (tokbin.h's magics) or a safetensors file is named as such.
 *
 * Not here: the JSON schema itself (tokjson.h).
 */
#ifndef NLP_TOK_TOKFILES_H
#define NLP_TOK_TOKFILES_H

#include "tok/tokenizer.h"

/* The largest tokenizer file read (256 MiB; the largest public
 * tokenizer.json files are tens of MB): an endless stream or a wrong file
 * given to -m must not fill the memory. */
#define NLP_TOKFILE_MAX_BYTES ((size_t)256 << 20)

typedef enum nlp_tok_format {
    NLP_TOKF_JSON,
    NLP_TOKF_GPT2,
    NLP_TOKF_HF,
    NLP_TOKF_CODES,
    NLP_TOKF_VOCAB,
    NLP_TOKF_SPM,
} nlp_tok_format;

typedef struct nlp_tokfiles_opts {
    int cased;          /* in: a bare vocab.txt keeps case and accents */
    nlp_tok_format fmt; /* out: the format that was read */
} nlp_tokfiles_opts;

/* Reads the tokenizer at path (file or directory, see above) into *spec
 * (zeroed first). opts may be NULL (defaults; nothing reported). Returns 0
 * or an error as above. */
int nlp_tokfiles_read(const char *path, nlp_tokfiles_opts *opts, nlp_tok_spec *spec);

/* Reads a BERT vocab.txt (see VOCAB above). */
int nlp_tokfiles_read_vocab_txt(const char *path, int cased, nlp_tok_spec *spec);

/* Reads GPT-2's pair (or HF's vocab.json + merges.txt when gpt2 = 0). */
int nlp_tokfiles_read_pair(const char *vocab_path, const char *merges_path, int gpt2, nlp_tok_spec *spec);

/* Reads subword-nmt codes. */
int nlp_tokfiles_read_codes(const char *path, nlp_tok_spec *spec);

/* Reads a sentencepiece .model file (see SPM above). */
int nlp_tokfiles_read_spm(const char *path, nlp_tok_spec *spec);

/* The spec of a sentencepiece model from its bytes data[0..n) (copied;
 * `name` for messages). */
int nlp_tokfiles_spm_spec(const void *data, size_t n, const char *name, nlp_tok_spec *spec);

/* Reads the file or directory and compiles it (opts as nlp_tokfiles_read). */
int nlp_tokfiles_load(const char *path, nlp_tokfiles_opts *opts, nlp_tokenizer **tk);

/* Writes spec in a format. JSON, CODES and VOCAB write the file `path` ("-"
 * = stdout); GPT2 and HF write two files into the directory `path` (created
 * if missing). GPT2 needs a byte-level BPE; CODES a classic BPE with
 * end-of-word suffix "</w>"; the merge formats cannot hold tokens with
 * spaces or newlines, the JSON ones (JSON, GPT2, HF) tokens with a NUL
 * byte. VOCAB needs a WordPiece model with HF's defaults
 * ([UNK], ##, 100), ids without gaps, no token with a line break or
 * trailing white space, and every added token in the vocabulary; the
 * pipeline is not written (a reader assumes BERT's, cased or not as it is
 * told). SPM writes the .model file of a sentencepiece tokenizer (only
 * those: its bytes as they were read). Returns 0, NLP_EINVAL (format cannot
 * hold this tokenizer; the message says why), NLP_EIO, NLP_ENOMEM. */
int nlp_tokfiles_write(const nlp_tok_spec *spec, nlp_tok_format fmt, const char *path);

#endif
