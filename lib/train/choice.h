/*
 * choice.h — multiple choice for finetune (Radford et al. 2018's Story
 * Cloze and RACE; HF BertForMultipleChoice): examples read from a TSV, each
 * laid out as one row per candidate, the training task, and prediction.
 *
 * Files: one example per line, no header line, fields separated by tabs:
 *
 *   labelled     label<TAB>context<TAB>choice_0<TAB>...<TAB>choice_k-1
 *   unlabelled   context<TAB>choice_0<TAB>...<TAB>choice_k-1
 *
 * with k >= 2 and the label the index of the right choice, 0 .. k-1
 * (decimal, no sign). Every line of a file has as many choices as its first
 * line (or as the caller asks); a line with another number is NLP_EDATA
 * naming the file and line, as are an empty line, an empty field and a label
 * that is no choice's index. A final "\r" is dropped; invalid UTF-8 in a
 * text is repaired (U+FFFD) and counted, as cls.h's reader does.
 *
 * Layout: candidate i of an example is the pair (context, choice_i) laid out
 * by cls.h's encoder — GPT [START] context [DELIM] choice_i [EXTRACT], BERT
 * [CLS] context [SEP] choice_i [SEP] — truncated as cls.h truncates pairs;
 * an example is k consecutive rows of a batch (nlp_batch.choices = k), the
 * model's head of one unit scores each and the softmax runs over the k
 * scores (the cross-entropy of the right one, plus GPT's λ-weighted
 * language-modelling loss over the rows).
 *
 * Training batches: B examples (B·k rows) in the shuffled epochs of cls.h's
 * nlp_epochs, whose state makes a resumed run draw the same batches.
 *
 * Not here: the model's head (model.h), the loop (loop.h).
 */
#ifndef NLP_TRAIN_CHOICE_H
#define NLP_TRAIN_CHOICE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "tok/tokenizer.h"
#include "train/cls.h"
#include "train/loop.h"

/* Examples as ids (no special tokens): example i's text j (0 the context,
 * 1 + c choice c) is ids[off[i·(k+1) + j] .. off[i·(k+1) + j + 1]). */
typedef struct nlp_choice_data {
    size_t n;              /* examples (= lines) */
    int k;                 /* choices per example */
    int labelled;
    int32_t *label;        /* [n] the right choice (labelled), else NULL */
    int32_t *ids;
    size_t *off;           /* [n·(k+1) + 1] */
    uint64_t repaired;     /* fields whose invalid UTF-8 was replaced */
    size_t tokens;         /* ids of all texts, before truncation */
} nlp_choice_data;

typedef struct nlp_choice_read_opts {
    const nlp_tokenizer *tk;
    int labelled;            /* the first field of every line is the label */
    int k;                   /* choices per line; 0 = as line 1 has them */
    int threads;             /* tokenizer threads; <= 0: all CPUs */
    size_t max_line;         /* a longer line is NLP_EDATA naming file and line (0 = no limit) */
} nlp_choice_read_opts;

/* Reads a file of examples (path "-" = standard input) into d (zeroed
 * first; free with nlp_choice_data_free). Errors, all naming the file and
 * line: NLP_EDATA "'f' line N has 4 choices but line 1 has 3" (or "where 3
 * are expected", with o->k), "'f' line N: 2 fields: expected
 * label<TAB>context<TAB>choice_0<TAB>choice_1...", "'f' line N: empty
 * choice 2", "'f' line N: label 'x' is not the index of a choice (0 to
 * 3)"; the tokenizer's errors; NLP_EIO; NLP_ENOMEM. An empty file is 0
 * examples. */
int nlp_choice_read(nlp_choice_data *d, const char *path, const nlp_choice_read_opts *o);
/* The examples of n lines already read (line[i], llen[i] bytes, no
 * newline), lines line0 + 1 .. line0 + n of `path`, as nlp_choice_read
 * reads a whole file. *k: the choices every line must have, 0 to take line
 * 1's (o->k, when set, wins); set on success for the next block. */
int nlp_choice_parse(nlp_choice_data *d, const char *const *line, const size_t *llen, size_t n, const char *path,
                     uint64_t line0, int *k, const nlp_choice_read_opts *o);
void nlp_choice_data_free(nlp_choice_data *d);

/* Examples of d that truncation shortens (at least one of their rows). */
size_t nlp_choice_truncated(const nlp_cls_encoder *e, const nlp_choice_data *d);

/* Runs m (dropout off) over every example of d, B examples at a time in
 * file order. Per example i (each array may be NULL): pred[i] the chosen
 * index (the first of the largest scores), prob[i] its softmax
 * probability, probs[i·k ..] every choice's. Labelled d: *correct (may be
 * NULL) gets the examples chosen right, *loss (may be NULL) the mean
 * cross-entropy of the right choices (NaN for unlabelled or empty d).
 * Scoring alone (pred, prob and probs NULL) is shared out among the ranks
 * of a data-parallel job, and the figures are everyone's. Errors:
 * NLP_EINVAL (m is no multiple-choice model of e's architecture, or has
 * fewer positions than e->T), the model's errors, NLP_ENOMEM. */
int nlp_choice_predict(nlp_model *m, const nlp_cls_encoder *e, const nlp_choice_data *d, int B, int32_t *pred,
                       float *prob, float *probs, uint64_t *correct, double *loss);

typedef struct nlp_choice_task {
    const nlp_choice_data *train, *valid;
    nlp_cls_encoder enc;
    int B;                     /* examples per micro-batch */
    nlp_epochs ep;
    int32_t *buf;              /* batch arrays */
} nlp_choice_task;

/* Sets up t and the nlp_task that drives it: micro-batches of B examples of
 * train (labelled, not empty) for a model of configuration cfg (a head of
 * one unit, num-labels 1; e's architecture; at least e->T positions; BERT:
 * 2 token types); validation on valid (labelled, as many choices as train;
 * NULL = none) gives {loss, accuracy}, accuracy the best figure. t keeps the
 * pointers and copies e. NLP_EINVAL or NLP_EDATA naming what does not fit;
 * NLP_ENOMEM. Free with nlp_choice_task_free. */
int nlp_choice_task_init(nlp_choice_task *t, nlp_task *task, const nlp_choice_data *train,
                         const nlp_choice_data *valid, const nlp_cls_encoder *e, const nlp_model_config *cfg, int B);
void nlp_choice_task_free(nlp_choice_task *t);

#endif
