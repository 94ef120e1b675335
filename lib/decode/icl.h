/*
 * icl.h — in-context learning (GPT-3, Brown et al. 2020): a task shown to a
 * language model as K solved examples in its prompt ("shots"), then the
 * item; the answer is the candidate the model finds most likely after that
 * prompt. No training: zero-shot (K = 0), one-shot, few-shot.
 *
 * Data: TSV files, one example a line, no header; the shape from the
 * fields of the first line, every line the same:
 *   classify  label<TAB>text                      the candidates are the label set
 *   pair      label<TAB>a<TAB>b                    the same
 *   choice    label<TAB>context<TAB>c_0<TAB>...<TAB>c_{k-1}   (k >= 2) the candidates
 *             are the item's own c_i; label is the index of the right one, from 0
 * The label set of classify and pair is that of the shots' file (TRAIN), in
 * order of first appearance, each label written as it is unless a label
 * word is given for it ("0=no,1=yes").
 *
 * Template: text with the placeholders {context} (classify: the text;
 * choice: the context), {a} and {b} (pair) and {answer}; escapes \n, \t, \\,
 * and {{ }} for braces. A shot is the whole template filled with a solved
 * example (its answer: its label word, or its right choice); the item is
 * the template up to {answer}. Spaces and tabs just before {answer} belong
 * to each candidate, as a word's leading space does in GPT-2's tokens
 * ("Section: {answer}": the prompt ends with "Section:", the candidates
 * are " net", " python", ...). The item's fields must all come before
 * {answer}.
 *
 * Prompt: the shots, in the order drawn, then the item, encoded as one
 * text (score.h nlp_score_encode: as `generate` encodes a prompt), each
 * candidate encoded alone; the candidate's log-likelihood is the sum of its
 * tokens' log-probabilities after the prompt (score.h, the prompt decoded
 * once for all candidates). The best score wins (the first on ties), the
 * score normalized by: none (the sum), tokens (the mean per token, GPT-3's
 * choice for most tasks), bytes (per byte of the candidate's text, its
 * leading space included: independent of the tokenizer) or unconditional
 * (the sum minus the candidate's log-likelihood after the answer's own
 * prompt alone, log P(c | prompt) − log P(c | answer prompt): GPT-3's for
 * ARC, OpenBookQA and RACE, where some answers are likely whatever the
 * question). The answer prompt is the template's text between the item's
 * last field and {answer}, without its leading white space ("Section:");
 * when there is none, the start token alone (opts.start).
 *
 * Shots: K examples of TRAIN drawn uniformly without repeats, from a
 * generator seeded by (seed, item index): the same seed gives the same
 * shots, whatever the order items are scored in, and the first K' of K
 * shots are the K' shots drawn with that seed. Never an example whose
 * fields other than label and answer equal the item's (the item itself
 * when TRAIN is the file evaluated, or a duplicate of it).
 *
 * The model's context: the prompt and the longest candidate must fit
 * max_len positions. When they do not, the prompt drops its last shots,
 * whole, until they do (never an example cut in the middle); with no shot
 * left the item's own text is cut at its end (reported as cut): its fields
 * at most cap bytes each (whole words, or whole characters in a word longer
 * than that; the longest field loses most),
 * the largest cap that fits, so that the item's start and the template's
 * text, "Section:" included, stay; only when the template alone does not
 * fit does the prompt lose its start instead.
 *
 * Not here: reading options, printing (bin/generate.c), the scores
 * themselves (score.h).
 */
#ifndef NLP_DECODE_ICL_H
#define NLP_DECODE_ICL_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "decode/score.h"
#include "model/model.h"
#include "tok/tokenizer.h"

enum nlp_icl_shape {
    NLP_ICL_CLASSIFY = 1,
    NLP_ICL_PAIR = 2,
    NLP_ICL_CHOICE = 3,
};

enum nlp_icl_norm {
    NLP_ICL_NORM_NONE = 0,
    NLP_ICL_NORM_TOKENS = 1,
    NLP_ICL_NORM_BYTES = 2,
    NLP_ICL_NORM_UNCOND = 3,
};

/* The shape's name ("classify", "pair", "choice"). */
const char *nlp_icl_shape_name(int shape);

// --- labels (classify, pair)

typedef struct nlp_icl_labels {
    int n;
    char **name;   /* [n] as in the data */
    char **word;   /* [n] the candidate text: the name, or its label word */
} nlp_icl_labels;

/* Gives labels words from a list "LABEL=WORD,LABEL=WORD,..." (labels not
 * named keep their name). NLP_EINVAL naming the entry: no '=', an empty
 * word, a label not in the set, a label named twice, two labels with the
 * same word (the choice between them would be void). */
int nlp_icl_labels_words(nlp_icl_labels *l, const char *list);
void nlp_icl_labels_free(nlp_icl_labels *l);

// --- data

typedef struct nlp_icl_data {
    char *path;            /* for messages */
    int shape;
    int nf;                /* fields per line: 2, 3, or 2 + choices */
    size_t n;              /* examples */
    char *buf;             /* the file; fields are NUL-terminated in place */
    const char **field;    /* [n·nf] field j of example i at field[i·nf + j] (0 = the label) */
    size_t *flen;          /* [n·nf] their lengths */
    uint64_t *line;        /* [n] example i's line in the file (from 1) */
    int32_t *label;        /* [n] classify, pair: the index in the label set; choice: the right choice */
} nlp_icl_data;

/* Reads a TSV file (path "-" = standard input) into d (zeroed first; free
 * with nlp_icl_data_free), its shape from line 1 (2 fields: classify, 3:
 * pair, 4 or more: choice) or, with `like` (a file read before: the
 * shots'), like's. Labels of classify and pair are looked up in `labels`:
 * without `like` new ones are added (this file makes the label set), with
 * it they are an error naming like. Empty lines are skipped; a final CR is
 * dropped. Errors, all NLP_EDATA naming the file and the line: no tab, a
 * line of another number of fields than line 1 ("has 5 choices where line
 * 1 has 4") or than like's, an empty field, a choice label that is not the
 * index of a choice, a label not in the set, invalid UTF-8, a line longer
 * than max_line bytes (0: no limit); NLP_EIO; NLP_ENOMEM. An empty file is
 * 0 examples (shape 0). */
int nlp_icl_read(nlp_icl_data *d, const char *path, const nlp_icl_data *like, nlp_icl_labels *labels,
                 size_t max_line);
void nlp_icl_data_free(nlp_icl_data *d);

// --- templates

typedef struct nlp_icl_part {
    int kind;              /* 0 text, else the field index it is filled with (1 = context or a, 2 = b), -1 answer */
    const char *s;         /* text */
    size_t n;
} nlp_icl_part;

typedef struct nlp_icl_template {
    char *text;            /* the unescaped text the parts point into */
    nlp_icl_part *part;
    int n;
    int answer;            /* the index of the {answer} part */
    size_t lead;           /* spaces and tabs before {answer} that go with the candidates */
} nlp_icl_template;

/* Parses a template for data of `shape` into t (free with
 * nlp_icl_template_free). NLP_EINVAL naming what is wrong: an unknown
 * escape or placeholder (the shape's are listed), a brace not closed, no
 * {answer} or two, no {context} (pair: {a}, {b}), a field after {answer}. */
int nlp_icl_template_parse(nlp_icl_template *t, const char *s, int shape);
void nlp_icl_template_free(nlp_icl_template *t);
/* The default template of a shape (written for this project's Debian data:
 * classify/section, classify/pair and choice in ../shared/data). */
const char *nlp_icl_template_default(int shape);

// --- shots

/* Draws K distinct indices from [0, n) into out, skipping those for which
 * skip(ctx, j) is non-zero, from the generator nlp_rng_split(seed's, item):
 * reproducible per item, and the first K' of a draw of K are the draw of
 * K'. Returns K, or fewer (all there are) when fewer than K indices are
 * not skipped. */
int nlp_icl_draw(uint64_t seed, uint64_t item, size_t n, int K, int (*skip)(void *ctx, size_t j), void *ctx,
                 size_t *out);

// --- evaluation

typedef struct nlp_icl_opts {
    int shots;             /* K */
    uint64_t seed;
    int norm;              /* enum nlp_icl_norm */
    int max_len;           /* the model's context: prompt + candidate positions at most */
    int max_rows;          /* candidates a decoding pass (0 = 16) */
    int32_t start;         /* the token a context starts from when it has no text (unconditional
                              normalization with no answer prompt: GPT-2's end-of-text); -1 none */
} nlp_icl_opts;

typedef struct nlp_icl nlp_icl;

/* One item's outcome: arrays of k candidates, owned by the evaluator,
 * valid until its next item. */
typedef struct nlp_icl_result {
    int k;                 /* candidates */
    int gold, choice;      /* candidate indices: the right one, the chosen one */
    int shots;             /* shots in the prompt (<= opts.shots: fewer when it did not fit) */
    const size_t *shot;    /* [shots] their indices in TRAIN, in prompt order */
    size_t prompt_tokens;  /* the prompt as scored */
    const int32_t *prompt; /* [prompt_tokens] its ids */
    size_t cut;            /* tokens the item's prompt lost to fit (0: none) */
    int cut_start;         /* 1: lost at the prompt's start (the template alone does not fit); 0: the
                              ends of the item's fields */
    const double *logprob; /* [k] summed log-probability of each candidate */
    const double *score;   /* [k] the normalized figure compared */
    const double *uncond;  /* [k] unconditional: each candidate's log-likelihood after the answer
                              prompt alone; NULL otherwise */
    const size_t *tokens;  /* [k] each candidate's tokens */
    const size_t *bytes;   /* [k] and bytes */
} nlp_icl_result;

/* An evaluator of the items of `eval` with shots from `train` (may be NULL
 * when opts->shots is 0; same shape and fields as eval), candidates of
 * classify and pair from `labels`, prompts formatted by `tpl` and scored by
 * model m (gpt or llama) with tokenizer tk. Everything given must outlive
 * the evaluator. NLP_EINVAL: shapes that differ, shots without TRAIN, an
 * empty TRAIN with shots, unconditional normalization with neither an
 * answer prompt nor a start token; NLP_EDATA: a candidate (label word)
 * that is empty once encoded; NLP_ENOMEM. */
int nlp_icl_new(nlp_icl **out, nlp_model *m, const nlp_tokenizer *tk, const nlp_icl_data *train,
                const nlp_icl_data *eval, const nlp_icl_labels *labels, const nlp_icl_template *tpl,
                const nlp_icl_opts *opts);
void nlp_icl_free(nlp_icl *e);

/* Scores item i of eval: *r gets its result. Errors name the file and the
 * item's line: NLP_EDATA when even the item's candidate alone does not fit
 * the context, or a candidate encodes to no token; TRAIN holding fewer
 * examples that differ from the item than the shots asked; the model's and
 * the tokenizer's errors. */
int nlp_icl_item(nlp_icl *e, size_t i, nlp_icl_result *r);

/* The index of the best of k scores (the first on ties; NaN never wins). */
int nlp_icl_best(const double *score, int k);

#endif
