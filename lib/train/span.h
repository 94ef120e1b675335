/*
 * span.h — extractive question answering for finetune (BERT's SQuAD
 * recipe, Devlin et al. 2019; HF BertForQuestionAnswering): questions and
 * passages read from SQuAD v1.1 JSON or question<TAB>passage lines, the
 * passages cut in windows, the training task, and the best answer span of
 * each question mapped back to its passage's own characters.
 *
 * Input: SQuAD v1.1 JSON (data[].paragraphs[].context and .qas[] with id,
 * question and answers[].text, .answer_start), answer_start counting Unicode
 * characters (code points, a Python string's index) of the context. Every
 * answer of a labelled file must be the context's text at its answer_start;
 * one that is not is NLP_EDATA naming the file, the question's id and its
 * place ("data[0].paragraphs[3].qas[1]"). Unlabelled input may also be
 * question<TAB>passage lines (ids "1", "2"... by line). Passages are
 * tokenized once, with each token's bytes in the passage
 * (nlp_tokenizer_encode_offsets: through the normalizer and WordPiece);
 * questions without offsets.
 *
 * Windows (Devlin et al.'s run_squad): a question keeps its first
 * max_query tokens (and no more than half of the T - 3 positions beside
 * the special tokens), and the
 * passage is cut into windows of at most T - 3 - (question tokens) tokens,
 * each starting `stride` tokens after the last (the last one ends with the
 * passage). A window is one row:
 *
 *   [CLS] question [SEP] passage window [SEP]     type ids 0 ... 0 1 ... 1
 *
 * with the span mask on the window's passage tokens (and on [CLS] in
 * training). The training target of a window is the first answer's first
 * and last token when the window holds both, else [CLS] (position 0: no
 * answer here), as run_squad does.
 *
 * Prediction: of every window, every start and end among its passage
 * tokens with start <= end < start + max_answer, the start in its "max
 * context" window (the window where it has the most tokens on its less
 * covered side, 0.01 per window token breaking ties: run_squad's rule),
 * scored by start logit + end logit; a question's answer is its best
 * span over all its windows, the passage's bytes from its first token's
 * first byte to its last token's last byte: always a substring of the
 * passage as given, accents, case and spacing included.
 *
 * Not here: the metrics (eval/squad.h, a layer beside: the caller hands
 * them in), the model's span head (model.h).
 */
#ifndef NLP_TRAIN_SPAN_H
#define NLP_TRAIN_SPAN_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "tok/tokenizer.h"
#include "train/cls.h"
#include "train/loop.h"

/* Questions and their passages. Question i reads passage passage[i]. */
typedef struct nlp_span_data {
    size_t n, np;            /* questions, passages */
    int labelled;            /* every question has its answers */
    char *text;              /* passage p: text[ptext[p] .. ptext[p+1]) (its bytes as given) */
    size_t *ptext;           /* [np + 1] */
    int32_t *pids;           /* passage p's tokens: pids[ptok[p] .. ptok[p+1]) */
    size_t *ptok;            /* [np + 1] */
    int32_t *poff;           /* token t's bytes in its passage: [poff[2t], poff[2t+1]) */
    uint32_t *passage;       /* [n] */
    int32_t *qids;           /* question i's tokens: qids[qtok[i] .. qtok[i+1]) */
    size_t *qtok;            /* [n + 1] */
    char *str;               /* NUL-terminated strings: ids, answer texts */
    size_t *qid;             /* [n] question i's id at str + qid[i] */
    size_t *ans;             /* [n + 1] question i's answers: ans[i] .. ans[i+1] (labelled) */
    size_t *atext;           /* answer a's text at str + atext[a] */
    uint32_t *abeg, *aend;   /* answer a's bytes in its passage */
    int32_t *tbeg, *tend;    /* [n] the first answer's first and last passage token (-1: none) */
} nlp_span_data;

typedef struct nlp_span_read_opts {
    const nlp_tokenizer *tk;
    int labelled;            /* answers required (training, eval); else they are ignored */
    int threads;             /* tokenizer threads; <= 0: all CPUs */
    size_t max_line;         /* question<TAB>passage lines: the longest (0 = no limit) */
} nlp_span_read_opts;

/* Reads path ("-" = standard input) into d (zeroed first; free with
 * nlp_span_data_free): SQuAD JSON when its first non-blank byte is '{',
 * else (unlabelled only) question<TAB>passage lines. Errors, naming the
 * file: NLP_EDATA for JSON that does not parse ("'f' line L column C:
 * ..."), a member missing or of the wrong type ("'f': data[0].paragraphs[2]
 * has no context"), a question without answers in a labelled file, an
 * answer that is not its context's text at its answer_start ("'f': question
 * 'ID' (data[0].paragraphs[1].qas[3]) answer 1: 'x' is not the context's
 * text at character 24 ('y')"), a line without a tab or with an empty
 * field, lines given where answers are needed; the tokenizer's errors
 * (NLP_EINVAL for one without offsets); NLP_EIO; NLP_ENOMEM. */
int nlp_span_read(nlp_span_data *d, const char *path, const nlp_span_read_opts *o);
void nlp_span_data_free(nlp_span_data *d);

/* How questions and passages become rows. */
typedef struct nlp_span_layout {
    nlp_cls_encoder enc;     /* BERT's [CLS], [SEP], [PAD] and T (nlp_cls_encoder_bert) */
    int stride;              /* tokens from a window's start to the next's (>= 1) */
    int max_query;           /* question tokens kept (>= 1) */
    int max_answer;          /* tokens of an answer at most (prediction, >= 1) */
} nlp_span_layout;

/* The windows of every question of d, in question order. */
typedef struct nlp_span_windows {
    size_t n;
    uint32_t *q;             /* [n] the question */
    uint32_t *start, *len;   /* [n] its passage tokens start[w] .. start[w] + len[w] */
} nlp_span_windows;

/* Cuts d's passages into windows for layout l. NLP_EINVAL for a layout
 * that leaves no room (T < 5, stride or max_query < 1); NLP_ENOMEM. Free
 * with nlp_span_windows_free. */
int nlp_span_windows_make(nlp_span_windows *w, const nlp_span_data *d, const nlp_span_layout *l);
void nlp_span_windows_free(nlp_span_windows *w);

/* A question's answer: bytes [beg, end) of its passage, or beg = end = 0
 * with score -inf when it had no window (never for a read file). */
typedef struct nlp_span_answer {
    uint32_t beg, end;
    float score;
} nlp_span_answer;

/* Runs m (dropout off; a span head, BERT) over windows w of d, B windows
 * at a time, and gives every question its best answer (ans[d->n]). With
 * labelled d and loss != NULL, *loss gets the mean span loss of the
 * windows (their training targets). Errors: NLP_EINVAL (no span head,
 * fewer positions than the layout's T), the model's, NLP_ENOMEM. */
int nlp_span_predict(nlp_model *m, const nlp_span_layout *l, const nlp_span_data *d, const nlp_span_windows *w,
                     int B, nlp_span_answer *ans, double *loss);

/* The metric of one prediction against k gold answers: eval/squad.h's
 * nlp_squad_score_max, which this layer cannot call itself. */
typedef int (*nlp_span_metric)(const char *pred, size_t np, const char *const *gold, const size_t *glen, int k,
                               double *em, double *f1);

/* Exact match and F1 of the answers of labelled d, means over the
 * questions in percent (SQuAD's convention). 0 or the metric's error. */
int nlp_span_score(const nlp_span_data *d, const nlp_span_answer *ans, nlp_span_metric metric, double *em,
                   double *f1);

typedef struct nlp_span_task {
    const nlp_span_data *train, *valid;
    nlp_span_layout layout;
    nlp_span_windows wtrain, wvalid;
    int B;                   /* windows per micro-batch */
    nlp_span_metric metric;  /* validation's exact match and F1; NULL: NaN */
    nlp_epochs ep;           /* over the training windows */
    int32_t *buf;            /* batch arrays */
    nlp_span_answer *answers; /* validation's */
} nlp_span_task;

/* Sets up t and the nlp_task that drives it: micro-batches of B windows of
 * train (labelled, not empty) for a model of configuration cfg (BERT with
 * a span head, at least T positions, 2 token types); validation on valid
 * (labelled; NULL = none) gives {loss, exact_match, f1} (percent), F1 the
 * best figure. The task's state (its epochs over the windows) goes into
 * checkpoints. NLP_EINVAL or NLP_EDATA naming what does not fit;
 * NLP_ENOMEM. Free with nlp_span_task_free. */
int nlp_span_task_init(nlp_span_task *t, nlp_task *task, const nlp_span_data *train, const nlp_span_data *valid,
                       const nlp_span_layout *l, const nlp_model_config *cfg, int B, nlp_span_metric metric);
void nlp_span_task_free(nlp_span_task *t);

#endif
