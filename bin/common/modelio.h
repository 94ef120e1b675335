/*
 * modelio.h — what the model tools (pretrain, generate, and later finetune,
 * translate) share: finding and loading a model behind a -m/--init path
 * (a model file, a checkpoint, a run directory, a HuggingFace directory),
 * the tokenizer that goes with it, and the end-of-text id.
 *
 * Like cli.h this lives in bin/: it prints and exits.
 */
#ifndef NLP_BIN_MODELIO_H
#define NLP_BIN_MODELIO_H

#include <stddef.h>

#include "model/model.h"
#include "tok/tokenizer.h"
#include "train/loop.h"

/* Resolves a run directory to its newest checkpoint (else the path itself)
 * into buf. */
void mio_resolve(const char *path, char *buf, size_t cap);

/* --resume PATH of tool ("pretrain", "finetune"): exits 3 unless PATH is
 * a checkpoint of a run of this tool, or a run directory holding one (it
 * does not exist, holds no checkpoint, is a model without
 * train_state.safetensors: --init starts from one, or is a run of the
 * other tool). Writes the checkpoint's directory into ck. */
void mio_check_resume(const char *path, const char *tool, char *ck, size_t cap);

/* A training run's memory: the model's (nlp_model_train_memory: parameters,
 * gradients, optimizer, the activations of a micro-batch of B x T, S source
 * positions) and `data` bytes of training data, against nlp_mem_available().
 * With dry_run: prints the figures on standard output and exits, 0 when
 * they fit, 1 when they do not. Otherwise logs them (cli_info) and, when
 * they do not fit and `check` is set, exits 1 with the figures and what
 * limits the memory (--no-memory-check goes on regardless). */
void mio_memory_check(const nlp_model_config *cfg, int B, int T, int S, uint64_t data, int dry_run, int check);
/* Said after the data figure of mio_memory_check when set: what is not
 * counted in it (token streams mapped from disk, say). */
extern const char *mio_data_note;
/* "12.7 MiB": b bytes in the unit that fits, into buf. */
const char *mio_human(char *buf, size_t cap, uint64_t b);

/* Loads the model behind path (resolved as above); exits 3 when it is
 * missing, unreadable or bad (cli_fail_file's rule). With want >= 0, a
 * model of another architecture is refused (exit 3) naming what it is; gpt
 * and llama (the decoder-only language models) both do for either. */
nlp_model *mio_load_model(const char *path, int want);

/* The tokenizer of a model directory (tokenizer.json, GPT-2's or HF's
 * pair, vocab.txt, else sentencepiece's tokenizer.model), or NULL when it
 * has none. Exits 3 on a bad one. */
nlp_tokenizer *mio_load_tokenizer_beside(const char *model_dir);

/* Loads a tokenizer file or directory; exits 3 when it is missing,
 * unreadable or bad (cli_fail_file's rule). */
nlp_tokenizer *mio_load_tokenizer(const char *path);

/* A tool needs a tokenizer that it was not given and that is not beside the
 * model: a usage error (exit 2), "'MODEL' has no SIDEtokenizer beside it
 * (FILES): give --tokenizerALSO" (side: "", "source " or "target "; files:
 * what was looked for; also: what else would do, or ""). */
_Noreturn void mio_no_tokenizer(const char *model, const char *side, const char *files, const char *also);

/* Exits 3 when the tokenizer has more ids than the model's vocabulary
 * ("'tok': N ids, but the model 'm' has V"). */
void mio_check_vocab(const nlp_tokenizer *tk, const char *tk_name, const nlp_model *m, const char *m_name);

/* The text of ids (special tokens dropped) into out (reset first), as one
 * line: newlines become spaces, and bytes that are no UTF-8 (a byte-level
 * model may end a character halfway) become U+FFFD, as HF's decode with
 * errors="replace" does. 0 or the tokenizer's error status. */
int mio_decode_line(const nlp_tokenizer *tk, const int32_t *ids, size_t n, nlp_buf *out);
/* The same, keeping special tokens when skip_special is 0 (T5's sentinels,
 * BART's <mask> and </s> shown as their text). */
int mio_decode_text(const nlp_tokenizer *tk, const int32_t *ids, size_t n, int skip_special, nlp_buf *out);

/* A translation tokenizer's padding, start and end-of-sentence ids
 * (<pad>/[PAD], <s>/<bos>/[BOS]/[CLS], </s>/<eos>/[EOS]/<|endoftext|>/[SEP];
 * the start defaults to the end-of-sentence token, as fairseq starts its
 * decoder); -1 for one it lacks. */
void mio_special_ids(const nlp_tokenizer *tk, int32_t id[3]);

/* A training run's NLP_TRAIN_PLAN event (train/loop.h): with a time budget
 * of `minutes` (0: none), the steps it holds at the pace so far (with -v);
 * a warning when the warm-up's `warmup` steps last the whole run or longer
 * (the rate would neither reach its peak nor decay). */
void mio_report_plan(const nlp_train_event *e, long warmup, double minutes);

/* The end-of-text id: the token `name` when given (usage error if absent),
 * else <|endoftext|>, </s>, <eos> or [SEP], else -1. */
int mio_eot(const nlp_tokenizer *tk, const char *name, const char *tk_name);

#endif
