/*
 * cls.h — sequence classification for finetune: examples read from a TSV,
 * the label set, the inputs BERT and GPT classifiers read, the training
 * task (shuffled micro-batches; validation by loss, accuracy and
 * macro-F1), and prediction over a file.
 *
 * Files: one example per line, no header line, fields separated by tabs:
 *
 *   labelled     label<TAB>text          or  label<TAB>text_a<TAB>text_b
 *   unlabelled   text                    or  text_a<TAB>text_b
 *
 * Every line of a file has the same number of fields; a line that differs,
 * an empty line, an empty label or an empty text is NLP_EDATA naming the
 * file and line. A final "\r" of a line is dropped. Invalid UTF-8 in a
 * label or a text is repaired (each ill-formed subpart becomes U+FFFD, as
 * parallel text is: train/mt.h) and counted; a label is otherwise kept
 * byte for byte (no trimming, no case folding).
 *
 * Labels: the label set of a run is taken from the training file, in the
 * order of first appearance (label index 0 is the label of line 1), unless
 * the caller fills it first (finetune --labels, or the label names saved
 * with a model). Validation and test files are read against it: a label
 * not in it is NLP_EDATA naming the file and the unknown labels.
 *
 * Texts are tokenized without the tokenizer's template (no special tokens
 * of its own), then each example is laid out for the model, at most T
 * positions, in one of two ways:
 *
 *   BERT   [CLS] a [SEP]               type ids 0 ... 0
 *          [CLS] a [SEP] b [SEP]       type ids 0 for [CLS] a [SEP], 1 for b [SEP]
 *          mask 1 on these, 0 on padding; padding [PAD]; the model
 *          classifies the pooled [CLS] (position 0).
 *   GPT    [START] a [EXTRACT]         (Radford et al. 2018: the ids of the
 *          [START] a [DELIM] b [EXTRACT] three tokens finetune appends to the
 *          vocabulary, V, V+1, V+2)
 *          cls_pos = the position of [EXTRACT]; LM labels (the auxiliary
 *          objective) = the ids on real positions, -100 on padding (the
 *          model shifts them); padding with the caller's pad id.
 *
 * Truncation when the texts do not fit beside the special tokens (2 single,
 * 3 pair): HF tokenizers' longest_first, as nlp_truncate (tok/postproc.h)
 * does it: a single text keeps its first T-2 ids; of a pair, with s the
 * shorter and l the longer, s keeps its length when l can still get as
 * many ids and l gets the rest, otherwise they get max/2 and max - max/2
 * (max = T - 3), the longer one the larger part (on equal lengths text_b).
 * Truncation keeps the start of a text.
 *
 * Similarity (GPT, encoder pair_sum): a pair is laid out twice, as
 * [START] x [DELIM] y [EXTRACT] and [START] y [DELIM] x [EXTRACT], two
 * consecutive rows of a batch whose final states at [EXTRACT] the model
 * adds before the head (Radford et al. 2018: similarity has no inherent
 * order); x is the text whose ids come first (the first id that differs,
 * else the shorter), so (a, b) and (b, a) make the same two rows: the
 * prediction is symmetric to the bit, whatever a kernel does with a row's
 * place in a batch.
 *
 * Training batches: B examples, in an order shuffled at the start of each
 * epoch with a seed drawn from the generator next_batch is given (the
 * loop's data generator, saved in checkpoints), padded to the longest
 * example of the batch; the last batch of an epoch holds the rest (fewer
 * rows when B does not divide the examples), as a PyTorch DataLoader
 * without drop_last. The task's state (epoch, position, the epoch's seed,
 * the number of examples) makes a resumed run draw the same batches.
 *
 * Not here: the model's heads (model.h), metrics from the confusion matrix
 * (eval/classify.h, a layer above: the caller hands macro-F1 in), the
 * loop (loop.h).
 */
#ifndef NLP_TRAIN_CLS_H
#define NLP_TRAIN_CLS_H

#include <stddef.h>
#include <stdint.h>

#include "base/hash.h"
#include "model/model.h"
#include "tok/tokenizer.h"
#include "train/loop.h"

// --- the label set

/* Label names and their indices, in insertion order. Zero-initialize; free
 * with nlp_cls_labels_free. */
typedef struct nlp_cls_labels {
    nlp_strmap *map; /* name -> index; NULL while empty */
} nlp_cls_labels;

/* Adds label s[0..n) (copied) with the next index unless present; *index
 * (may be NULL) gets its index either way. 0 or NLP_ENOMEM. */
int nlp_cls_labels_add(nlp_cls_labels *l, const char *s, size_t n, int32_t *index);
/* Index of label s[0..n), or -1. */
int32_t nlp_cls_labels_find(const nlp_cls_labels *l, const char *s, size_t n);
int nlp_cls_labels_count(const nlp_cls_labels *l);
/* Name of label i (NUL-terminated, owned by l), or NULL out of range. */
const char *nlp_cls_labels_name(const nlp_cls_labels *l, int i);
void nlp_cls_labels_free(nlp_cls_labels *l);

// --- examples

/* Examples as ids (no special tokens); example i is line i + 1. */
typedef struct nlp_cls_data {
    size_t n;              /* examples (= lines) */
    int pair;              /* 1: text_a and text_b per example */
    int labelled;
    int32_t *label;        /* [n] label indices (labelled), else NULL */
    int32_t *a, *b;        /* ids of every text_a, text_b (b: pair only) */
    size_t *a_off, *b_off; /* [n + 1]: example i's text_a is a[a_off[i] .. a_off[i+1]) */
    uint64_t repaired;     /* fields whose invalid UTF-8 was replaced */
    size_t tokens;         /* ids of all texts, before truncation */
} nlp_cls_data;

typedef struct nlp_cls_read_opts {
    const nlp_tokenizer *tk;
    int labelled;            /* the first field of every line is the label */
    int texts;               /* text fields per line: 1 or 2; 0 = as line 1 has them */
    nlp_cls_labels *labels;  /* labelled files: the label set */
    int add_labels;          /* 1: labels not in the set are added (the training file); 0: they are an error */
    const char *labels_from; /* names the label set in that error; NULL = "the training data" */
    int threads;             /* tokenizer threads; <= 0: all CPUs */
    size_t max_line;         /* a longer line is NLP_EDATA naming file and line (0 = no limit) */
} nlp_cls_read_opts;

/* Reads a TSV of examples (path "-" = standard input) into d (zeroed
 * first; free with nlp_cls_data_free). Errors, all naming the file:
 * NLP_EDATA "'f' line N has 3 fields but line 1 has 2: ...", "'f' line N:
 * 4 fields where 2 are expected (...)", "'f' line N: empty label" (empty
 * line, empty text, empty text_a/text_b likewise), "'f': 2 labels not in
 * the training data: 'x' (line 3), 'y' (line 8)" (at most 10 named, then
 * "and N more"); the tokenizer's errors with file and line; NLP_EIO;
 * NLP_ENOMEM. With add_labels, labels read before a failure stay in the
 * set. An empty file is 0 examples (texts: o->texts, or 1). */
int nlp_cls_read(nlp_cls_data *d, const char *path, const nlp_cls_read_opts *o);
/* The examples of n lines already read (line[i], llen[i] bytes, no
 * newline), lines line0 + 1 .. line0 + n of file `path`, as nlp_cls_read
 * reads a whole file: a file read in blocks (a stream answered as it
 * comes) is checked as if whole. *fields: the fields every line must have,
 * 0 to take line 1's (pass 0 with the first block only); set on success
 * for the next block. d is zeroed first; errors as nlp_cls_read's. */
int nlp_cls_parse(nlp_cls_data *d, const char *const *line, const size_t *llen, size_t n, const char *path,
                  uint64_t line0, int *fields, const nlp_cls_read_opts *o);
void nlp_cls_data_free(nlp_cls_data *d);

// --- encoding

typedef enum nlp_cls_kind {
    NLP_CLS_BERT = 0,
    NLP_CLS_GPT = 1,
} nlp_cls_kind;

/* How examples become model inputs (a plain value; fill it with the two
 * functions below or by hand). */
typedef struct nlp_cls_encoder {
    nlp_cls_kind kind;
    int T;                          /* positions at most, special tokens included */
    int pair_sum;                   /* GPT's similarity: a pair (a, b) is read in both orders, a·b and
                                       b·a, two rows whose states at [EXTRACT] the model adds before
                                       its head (nlp_batch.pair_sum) */
    int32_t pad;                    /* padding id */
    int32_t cls, sep;               /* BERT */
    int32_t start, delim, extract;  /* GPT */
} nlp_cls_encoder;

/* BERT: [CLS], [SEP] and [PAD] from tk. T >= 4 (three special tokens and
 * one id of a pair): otherwise NLP_EINVAL. A token missing from tk is
 * NLP_EFORMAT "the tokenizer has no '[PAD]' token: ..." (not a BERT
 * tokenizer). */
int nlp_cls_encoder_bert(nlp_cls_encoder *e, const nlp_tokenizer *tk, int T);
/* GPT: the caller's [START], [DELIM], [EXTRACT] and padding ids (>= 0), T >= 4;
 * NLP_EINVAL otherwise. (Set pair_sum afterwards for similarity.) */
int nlp_cls_encoder_gpt(nlp_cls_encoder *e, int32_t start, int32_t delim, int32_t extract, int32_t pad, int T);

/* Longest-first truncation (see above) of texts of na and nb ids (nb = 0:
 * a single text) to a budget of max ids in all: *ka, *kb get the ids each
 * keeps. */
void nlp_cls_truncate(size_t na, size_t nb, size_t max, size_t *ka, size_t *kb);

/* Positions an example of na (and nb, with pair) ids takes, truncated, with
 * its special tokens: at most e->T. */
int nlp_cls_encoded_len(const nlp_cls_encoder *e, size_t na, size_t nb, int pair);

/* Lays one example out in a row of W positions (W >= its encoded length):
 * text a (na ids) and, when b != NULL, text b (nb ids, may be 0). Fills
 * ids[0..W) (padded), and, each when not NULL, type_ids, mask (1 real, 0
 * padding), lm_labels (the ids on real positions, -100 on padding) and
 * *cls_pos (GPT: the position of [EXTRACT]; BERT: 0). Returns the encoded
 * length, or NLP_EINVAL when W is too small. */
int nlp_cls_encode(const nlp_cls_encoder *e, const int32_t *a, size_t na, const int32_t *b, size_t nb, int W,
                   int32_t *ids, int32_t *type_ids, int32_t *mask, int32_t *lm_labels, int32_t *cls_pos);

/* Examples of d that truncation shortens. */
size_t nlp_cls_truncated(const nlp_cls_encoder *e, const nlp_cls_data *d);

// --- scoring

/* One batch of classification logits [B, L]: row r's prediction is the
 * first index of its largest logit (torch.argmax). Each output may be
 * NULL: pred[r] the prediction, prob[r] its softmax probability, probs
 * [B, L] every probability. With gold labels (gold != NULL): cm [L·L]
 * (gold-major, eval/classify.h's layout) is added to and *nll gets the
 * sum of -ln softmax(logits)[gold] added. Returns 0, or NLP_EDATA for a
 * gold label outside [0, L) (nothing counted for that batch). */
int nlp_cls_score_logits(const float *logits, int B, int L, const int32_t *gold, int32_t *pred, float *prob,
                         float *probs, uint64_t *cm, double *nll);

/* Runs m (training mode switched off; dropout off) over every example of
 * d, B at a time in file order, each batch padded to its longest example,
 * with encoder e. Per example i (each array may be NULL): pred[i] the
 * predicted label index, prob[i] its softmax probability, probs[i·L ..]
 * all L probabilities (L = the model's num-labels). For labelled d: cm
 * [L·L] (may be NULL) is added to, and *loss (may be NULL) gets the mean
 * cross-entropy of the gold labels (NaN when d is unlabelled or empty).
 * Scoring alone (pred, prob and probs NULL) is shared out among the ranks
 * of a data-parallel job (train/dist.h), each running its share of the
 * batches, and cm and *loss are their combined figures on every rank.
 * Errors: NLP_EINVAL (m has no classification head, is not the encoder's
 * architecture, or has fewer positions than e->T), NLP_EDATA (a gold
 * label outside the model's labels), the model's errors, NLP_ENOMEM. */
int nlp_cls_predict(nlp_model *m, const nlp_cls_encoder *e, const nlp_cls_data *d, int B, int32_t *pred, float *prob,
                    float *probs, uint64_t *cm, double *loss);

// --- epochs of shuffled examples

/* The order training draws examples 0..n-1 in, shared by the classification,
 * multiple-choice and span tasks: epoch after epoch, each in an order
 * shuffled (Fisher-Yates) with a seed drawn from the loop's data generator
 * when it starts, B at a time, the last batch of an epoch holding the rest.
 * Its state (epoch, position, seed, n) goes into checkpoints, so that a
 * resumed run draws the same batches. Zero-initialize, then
 * nlp_epochs_init; free with nlp_epochs_free. */
typedef struct nlp_epochs {
    size_t n;
    uint64_t epoch;            /* 1-based; 0 = none yet */
    uint64_t pos;              /* examples of it drawn */
    uint64_t seed;             /* its order's seed */
    uint32_t *order;           /* [n] its order */
} nlp_epochs;

/* n examples (1 .. UINT32_MAX: NLP_EDATA otherwise, naming `what`, e.g.
 * "training examples"); NLP_ENOMEM. */
int nlp_epochs_init(nlp_epochs *e, size_t n, const char *what);
/* The next batch: *ex gets its example indices (into e->order, valid until
 * the next call), the return value their number (1 .. B). */
int nlp_epochs_next(nlp_epochs *e, nlp_rng *r, int B, const uint32_t **ex);
void nlp_epochs_get_state(const nlp_epochs *e, uint64_t s[4]);
/* Restores a saved state: NLP_EDATA when it was saved for another number
 * of examples ("the checkpoint was trained on N <what>, ..."), NLP_EFORMAT
 * for a position beyond them. */
int nlp_epochs_set_state(nlp_epochs *e, const uint64_t s[4], const char *what);
void nlp_epochs_free(nlp_epochs *e);

// --- the training task

typedef struct nlp_cls_task {
    const nlp_cls_data *train, *valid;
    nlp_cls_encoder enc;
    int B, L;                  /* examples per micro-batch, the model's labels */
    /* validation's macro-F1 from the confusion matrix (gold-major [L·L]):
     * eval/classify.h's nlp_classify_macro_f1, which this layer cannot
     * call itself; NULL: the figure is NaN */
    double (*macro_f1)(const uint64_t *cm, int L, int *used);
    uint64_t *cm;              /* [L·L] of the last validation */
    nlp_epochs ep;             /* the examples' order */
    int32_t *buf;              /* batch arrays */
} nlp_cls_task;

/* Sets up t and the nlp_task that drives it: micro-batches of B examples of
 * train (labelled, not empty) encoded with e for a model of configuration
 * cfg (num-labels > 0, e's architecture, at least e->T positions; BERT
 * with pairs: at least 2 token types); validation on valid (labelled, the
 * same number of texts as train, not empty; NULL = none) gives
 * {loss, accuracy, macro_f1} with accuracy the best figure (higher better).
 * t keeps the pointers (train, valid) and copies e. NLP_EINVAL or
 * NLP_EDATA naming what does not fit; NLP_ENOMEM. Free with
 * nlp_cls_task_free. */
int nlp_cls_task_init(nlp_cls_task *t, nlp_task *task, const nlp_cls_data *train, const nlp_cls_data *valid,
                      const nlp_cls_encoder *e, const nlp_model_config *cfg, int B);
void nlp_cls_task_free(nlp_cls_task *t);

#endif
