/*
 * postproc.h — after the model: templates that add special tokens
 * ("[CLS] $A [SEP] $B [SEP]"), truncation and padding, as HF tokenizers'
 * post_processor, truncation and padding sections.
 *
 * Every post-processor is a template: a list of pieces for single inputs and
 * one for pairs, each piece a sequence (A or B) or a named special token,
 * with the token type id it gets. HF's BertProcessing and RobertaProcessing
 * are templates too (kept as such types so that files are written back the
 * way they were read):
 *   Bert     single [CLS]:0 $A:0 [SEP]:0, pair ... $B:1 [SEP]:1
 *   Roberta  single <s> $A </s>, pair <s> $A </s> </s> $B </s>, all type 0
 * A ByteLevel post-processor (GPT-2; it only adjusts offsets) is a flag.
 * Without add_special, a template still sets the type ids of A and B but
 * adds no tokens. Without any template, A has type 0 and B type 1.
 *
 * Truncation (HF's rules): the budget is max_length minus the tokens the
 * template will add; longest_first cuts the longer sequence first (if both
 * must be cut, they get max/2 and max - max/2, the longer one the larger
 * part); only_first/only_second cut one sequence and fail when it is too
 * short. A budget of 0 (the template's tokens fill max_length) empties both
 * sequences, whatever the strategy, as HF does. Direction: keep the start (right truncation) or the end (left).
 * Padding: to a fixed length or to the longest in the batch, rounded up to a
 * multiple; on the right or the left; attention 0 on pads.
 *
 * Not here: the special tokens' vocabulary entries (added.h), encoding the
 * sequences (tokenizer.h).
 */
#ifndef NLP_TOK_POSTPROC_H
#define NLP_TOK_POSTPROC_H

#include <stddef.h>
#include <stdint.h>

#include "tok/encoding.h"

typedef enum nlp_post_type {
    NLP_POST_NONE,
    NLP_POST_TEMPLATE,
    NLP_POST_BERT,
    NLP_POST_ROBERTA,
} nlp_post_type;

typedef struct nlp_tmpl_piece {
    int special;   /* 1: the special token `name`; 0: sequence `seq` */
    char *name;    /* owned */
    int seq;       /* 0 = A, 1 = B */
    int type_id;
} nlp_tmpl_piece;

typedef struct nlp_tmpl_special {
    char *name;     /* owned */
    int32_t *ids;   /* owned, n of them */
    char **tokens;  /* owned, n of them */
    size_t n;
} nlp_tmpl_special;

typedef struct nlp_postproc {
    nlp_post_type type;
    nlp_tmpl_piece *single, *pair;
    size_t n_single, n_pair;
    nlp_tmpl_special *specials;
    size_t n_specials;
    /* BERT / ROBERTA fields as HF writes them */
    char *cls, *sep;
    int32_t cls_id, sep_id;
    int trim_offsets, add_prefix_space;
    /* a ByteLevel post-processor too (alone, or first of a Sequence) */
    int bytelevel;
    int bl_add_prefix_space, bl_trim_offsets, bl_use_regex;
} nlp_postproc;

/* Frees everything p owns and zeroes it. */
void nlp_postproc_free(nlp_postproc *p);

/* Deep copy (dst is overwritten). Returns 0 or NLP_ENOMEM. */
int nlp_postproc_copy(nlp_postproc *dst, const nlp_postproc *src);

/* Makes p a Bert (roberta = 0) or Roberta template for the given tokens
 * (strings copied; p's previous template is freed, the ByteLevel flag kept).
 * Returns 0 or NLP_ENOMEM. */
int nlp_postproc_set_cls_sep(nlp_postproc *p, int roberta, const char *cls, int32_t cls_id, const char *sep,
                             int32_t sep_id);

/* Checks that every special piece names a defined special token. Returns 0
 * or NLP_EFORMAT naming the missing one. */
int nlp_postproc_check(const nlp_postproc *p);

/* Number of tokens the template adds to a single input or a pair. */
size_t nlp_postproc_added(const nlp_postproc *p, int pair);

/* out = template applied to a (and b if not NULL); out is reset first.
 * Returns 0 or NLP_ENOMEM. */
int nlp_postproc_apply(const nlp_postproc *p, const nlp_encoding *a, const nlp_encoding *b, int add_special,
                       nlp_encoding *out);

typedef enum nlp_trunc_strategy {
    NLP_TRUNC_LONGEST_FIRST,
    NLP_TRUNC_ONLY_FIRST,
    NLP_TRUNC_ONLY_SECOND,
} nlp_trunc_strategy;

typedef struct nlp_truncation {
    int enabled;
    size_t max_length, stride; /* stride is kept for files; nlpipe makes no overflow windows */
    nlp_trunc_strategy strategy;
    int left; /* 1: drop from the start ("Left" direction) */
} nlp_truncation;

/* Truncates a (and b) so that, with `added` template tokens, the total is at
 * most t->max_length (max_length == added empties both). Returns 0 or
 * NLP_EINVAL: max_length smaller than the added tokens, only_second without a
 * pair, or the chosen sequence too short (messages say which). */
int nlp_truncate(const nlp_truncation *t, size_t added, nlp_encoding *a, nlp_encoding *b);

typedef struct nlp_padding {
    int enabled;
    size_t length;      /* fixed length; 0 = the longest in the batch */
    size_t multiple_of; /* 0 = none */
    int left;           /* pad on the left */
    int32_t pad_id;
    int pad_type_id;
    char *pad_token;    /* owned; for files and messages */
} nlp_padding;

/* The length p pads to, given the longest encoding of the batch. */
size_t nlp_padding_target(const nlp_padding *p, size_t batch_longest);

#endif
