/*
 * spm.h — sentencepiece models (.model files) read and run exactly as
 * sentencepiece's own encoder and decoder (spm_encode, spm_decode) run them.
 *
 * The file is a protocol buffer (sentencepiece_model.proto's ModelProto);
 * the fields read:
 *   pieces (1)            repeated: piece (1, string), score (2, float),
 *                         type (3: 1 normal, 2 unknown, 3 control,
 *                         4 user-defined, 5 unused, 6 byte); id = position
 *   trainer_spec (2)      model_type (3: 1 unigram, 2 bpe, 3 word, 4 char),
 *                         byte_fallback (35), treat_whitespace_as_suffix
 *                         (24), unk_id (40), bos_id (41), eos_id (42),
 *                         pad_id (43), unk_surface (44), and the names of
 *                         the four special pieces (45-48, for reference)
 *   normalizer_spec (3)   name (1), precompiled_charsmap (2, tok/charsmap.h),
 *                         add_dummy_prefix (3), remove_extra_whitespaces
 *                         (4), escape_whitespaces (5); proto2 defaults
 *                         (true, true, true) when absent
 *   denormalizer_spec (5) the same, applied to decoded text when its map is
 *                         not empty
 * Other fields (self-test data, training options) are skipped. A field seen
 * twice keeps its last value; a message seen twice is merged, as protobuf
 * does.
 *
 * Refused (NLP_EFORMAT, naming the file, the field and the byte offset): a
 * truncated or malformed message, a field of the wrong wire type, no pieces,
 * an empty piece, a piece given twice, no or two unknown pieces, an unknown
 * piece type or model type, a NaN score, byte pieces without byte_fallback
 * or that are not <0x00>..<0xFF>, byte_fallback without all 256, a broken
 * character map. These are the checks spm's own loader makes (it refuses
 * the same files), plus NaN.
 *
 * Encoding one text (sentencepiece_processor.cc, normalizer.cc,
 * unigram_model.cc, bpe_model.cc, char_model.cc, word_model.cc):
 *   1. normalize: at each position, a user-defined piece (longest) is kept
 *      as it is; else the character map's longest rule applies; else the
 *      character is kept (an ill-formed byte becomes U+FFFD). With
 *      remove_extra_whitespaces, leading spaces go, runs of spaces become
 *      one and trailing ones go; add_dummy_prefix puts one space first (last
 *      with treat_whitespace_as_suffix); escape_whitespaces writes spaces as
 *      U+2581.
 *   2. the model: unigram — the best path over the pieces that match at
 *      each position (spm's optimized Viterbi, to its float/double rounding
 *      and its tie order: the earliest start wins a tie); an unknown
 *      character costs min score - 10; a user-defined piece scores
 *      length_in_bytes * max score - 0.1 and unused pieces are never used.
 *      bpe — characters (user-defined pieces whole and frozen) merged pair
 *      by pair, the pair whose merged piece scores highest first (leftmost
 *      of equals); an unused piece is split back into what made it. char —
 *      one piece per character. word — one piece per U+2581-prefixed word.
 *   3. pieces to ids: an unknown piece is the unknown id, consecutive ones
 *      merged into one; with byte_fallback it is its UTF-8 bytes' <0xNN>
 *      ids instead.
 * Decoding: control ids vanish, the unknown id is unk_surface (" ⁇ "),
 * byte pieces are gathered into UTF-8 (U+FFFD per ill-formed byte), U+2581
 * becomes a space, and the first piece loses its leading one (all leading
 * ones while nothing was written, with remove_extra_whitespaces).
 *
 * The model is immutable after nlp_spm_new: share it between threads, each
 * with its own nlp_spm_scratch.
 *
 * Not here: the tokenizer pipeline (tokenizer.h), HF's tokenizer.json form
 * of such models (unigram.h, tokjson.h), the character map (charsmap.h).
 */
#ifndef NLP_TOK_SPM_H
#define NLP_TOK_SPM_H

#include <stddef.h>
#include <stdint.h>

#include "base/mem.h"
#include "tok/encoding.h"

enum {
    NLP_SPM_NORMAL = 1,
    NLP_SPM_UNKNOWN = 2,
    NLP_SPM_CONTROL = 3,
    NLP_SPM_USER_DEFINED = 4,
    NLP_SPM_UNUSED = 5,
    NLP_SPM_BYTE = 6,
};

enum { NLP_SPM_UNIGRAM = 1, NLP_SPM_BPE = 2, NLP_SPM_WORD = 3, NLP_SPM_CHAR = 4 };

/* A NormalizerSpec. Pointers into the file's bytes. */
typedef struct nlp_spm_normspec {
    const char *name;
    size_t name_len;
    const uint8_t *charsmap;
    size_t charsmap_len;
    int add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces;
} nlp_spm_normspec;

/* What a .model file says. Pointers into the bytes it was read from, which
 * must outlive it; free with nlp_spm_info_free. */
typedef struct nlp_spm_info {
    size_t n;              /* pieces; ids 0..n) */
    const char **piece;    /* piece[i], len[i] bytes (not NUL-terminated) */
    uint32_t *len;
    float *score;
    uint8_t *type;         /* NLP_SPM_* */
    int model_type;        /* NLP_SPM_UNIGRAM.. */
    int byte_fallback, treat_whitespace_as_suffix;
    int32_t unk_id, bos_id, eos_id, pad_id; /* trainer_spec's (ids in the file: -1 = none) */
    const char *unk_surface; /* NULL: the default " ⁇ " */
    size_t unk_surface_len;
    nlp_spm_normspec norm, denorm;
    int has_denorm;
} nlp_spm_info;

/* Parses data[0..n) (`name` for messages) and checks it as above. Returns
 * 0, NLP_EFORMAT ("'NAME' byte B: FIELD: what is wrong") or NLP_ENOMEM. */
int nlp_spm_parse(const void *data, size_t n, const char *name, nlp_spm_info *out);
void nlp_spm_info_free(nlp_spm_info *info);

/* 1 if data[0..n) looks like a sentencepiece model: a protobuf message
 * whose first field is a piece (field 1, a length-delimited message whose
 * own first field is a string). A cheap test, for telling formats apart. */
int nlp_spm_sniff(const void *data, size_t n);

typedef struct nlp_spm nlp_spm;

/* Builds the model from the file's bytes data[0..n) (copied). Errors as
 * nlp_spm_parse. Free with nlp_spm_free. */
int nlp_spm_new(nlp_spm **out, const void *data, size_t n, const char *name);
void nlp_spm_free(nlp_spm *m);

/* What the model was read from. */
const nlp_spm_info *nlp_spm_info_of(const nlp_spm *m);

/* Per-thread scratch; zero-initialize, free with nlp_spm_scratch_free. */
typedef struct nlp_spm_scratch {
    nlp_buf norm;
    void *a, *b, *c;
    size_t acap, bcap, ccap;
} nlp_spm_scratch;
void nlp_spm_scratch_free(nlp_spm_scratch *s);

/* Appends the ids of text s[0..n) to out, as spm_encode --output_format=id
 * writes them. passthrough: an unknown run (no byte fallback) comes out as
 * NLP_TOK_PASSTHROUGH ids of its characters (final on the last), for
 * writing spm_encode's pieces; the ids are otherwise the same. Returns 0 or
 * NLP_ENOMEM. */
int nlp_spm_encode(const nlp_spm *m, nlp_spm_scratch *sc, const char *s, size_t n, int passthrough, nlp_ids *out);

/* The normalized text of s[0..n) (step 1 above), into out (reset first), as
 * spm_normalize writes it. Returns 0 or NLP_ENOMEM. */
int nlp_spm_normalize(const nlp_spm *m, const char *s, size_t n, nlp_buf *out);

/* Appends the text of ids[0..n) to out, as spm_decode writes it. Every id
 * must be in 0..info->n (the caller checks). Returns 0 or NLP_ENOMEM. */
int nlp_spm_decode(const nlp_spm *m, const int32_t *ids, size_t n, nlp_buf *out);

#endif
