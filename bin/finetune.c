/*
 * finetune — turns a pretrained BERT or GPT model into a sequence
 * classifier (train), and uses it (predict, eval).
 *
 *   finetune [train] --init MODEL [OPTION]... TRAIN.tsv
 *   finetune predict -m MODEL [FILE]...
 *   finetune eval -m MODEL FILE...
 *
 * Training adds the head the lectures describe: BERT's [CLS] → pooler →
 * linear + softmax (HF BertForSequenceClassification), or GPT's input
 * transformation (Radford et al. 2018: [START] text [EXTRACT], [START] a
 * [DELIM] b [EXTRACT], three tokens appended to the vocabulary and the
 * embeddings) with a linear + softmax on the final state at [EXTRACT] and the
 * loss L3 = L2 + λ·L1 (--lm-weight). It runs on lib/train's loop, with
 * validation after every epoch, checkpoints, resume and signals as pretrain.
 */
#include "base/config.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "common/cli.h"
#include "common/lines.h"
#include "common/modelio.h"
#include "common/run.h"
#include "model/checkpoint.h"
#include "eval/classify.h"
#include "model/model.h"
#include "nn/gemm.h"
#include "tok/tokfiles.h"
#include "eval/squad.h"
#include "train/choice.h"
#include "train/cls.h"
#include "train/span.h"
#include "common/dist.h"
#include "train/loop.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: finetune [train] --init MODEL [OPTION]... TRAIN.tsv\n"
    "  or:  finetune predict -m MODEL [OPTION]... [FILE]...\n"
    "  or:  finetune eval -m MODEL [OPTION]... FILE...\n"
    "Fine-tune a pretrained BERT, GPT or LLaMA-family model into a sequence\n"
    "classifier, a multiple-choice model or (BERT) a question-answering model, and\n"
    "use it.\n"
    "Tasks (--task; by default from the training data):\n"
    "  classify    'label<TAB>text' or 'label<TAB>text_a<TAB>text_b' lines; predict\n"
    "              reads 'text' or 'text_a<TAB>text_b' lines and prints\n"
    "              'label<TAB>probability'; eval prints the accuracy, macro-F1 and\n"
    "              per-label precision and recall\n"
    "  choice      'label<TAB>context<TAB>choice_0<TAB>...<TAB>choice_k-1' lines (4\n"
    "              fields or more), label the right choice's index from 0; each\n"
    "              choice is scored with the context, a softmax over the k;\n"
    "              predict reads 'context<TAB>choice_0...' lines and prints\n"
    "              'index<TAB>probability'; eval prints the accuracy\n"
    "  similarity  gpt: pairs as classify reads them, each read in both orders and\n"
    "              the two states added before the classifier (symmetric in a, b)\n"
    "  span        bert, extractive question answering: SQuAD v1.1 JSON (chosen when\n"
    "              the file is JSON); '[CLS] question [SEP] passage [SEP]' in windows\n"
    "              of the passage, start and end logits over its tokens; predict\n"
    "              reads the same JSON (or 'question<TAB>passage' lines) and writes\n"
    "              {\"id\": \"answer\"} JSON, the answers whole words of the passages'\n"
    "              own text; eval prints SQuAD's exact match and F1\n"
    "Predict and eval read '-' or no FILE as standard input. BERT classifies the\n"
    "pooled [CLS] ('[CLS] a [SEP] b [SEP]'); GPT reads '[START] text [EXTRACT]'\n"
    "(pairs and choices: '[START] a [DELIM] b [EXTRACT]', the three tokens added to\n"
    "the vocabulary) and trains on L3 = L2 + lambda * L1, L1 its language-modelling\n"
    "loss.\n"
    "\n"
    "Training:\n"
    "      --init PATH           the pretrained model: ours (a model file, checkpoint or\n"
    "                            run directory) or a HuggingFace BERT, GPT-2 or\n"
    "                            LLaMA-family (llama, mistral) directory\n"
    "      --from-scratch        fresh random weights of --init's architecture and sizes\n"
    "                            (its tokenizer too): the baseline that shows what\n"
    "                            pretraining is worth\n"
    "      --tokenizer FILE      its tokenizer (default: the one saved with --init)\n"
    "      --valid FILE          labelled validation data: loss, accuracy, macro-F1 and\n"
    "                            per-label precision and recall after every epoch; the\n"
    "                            best epoch's model goes to DIR/best\n"
    "      --task T              auto (default: span for JSON, choice for lines of 4\n"
    "                            fields or more, else classify), classify, choice,\n"
    "                            similarity or span\n"
    "      --labels FILE         the label set, one per line, in this order (default:\n"
    "                            the training file's labels as they first appear)\n"
    "      --epochs N            passes over the training data (default 3)\n"
    "  -B, --batch-size N        examples per step (default 32)\n"
    "      --max-length N        positions per example, special tokens included\n"
    "                            (default 128, span 384, or the model's positions if\n"
    "                            fewer; longer texts are truncated, the longer text\n"
    "                            first, a span's passage is cut in windows;\n"
    "                            predict and eval: the length it was trained with)\n"
    "      --lr F                peak learning rate (default 5e-5; gpt 6.25e-5)\n"
    "      --warmup N            linear warm-up steps (default -1: 10% of the steps;\n"
    "                            gpt 0.2%)\n"
    "      --schedule S          after warm-up: linear to zero (default), cosine or\n"
    "                            constant\n"
    "      --weight-decay F      AdamW decoupled weight decay, not on biases and\n"
    "                            LayerNorm (default 0.01)\n"
    "      --grad-clip F         clip the global gradient norm (default 1.0; 0 = off)\n"
    "      --dropout F           dropout during fine-tuning (default: the model's)\n"
    "      --lm-weight F         gpt: lambda, the weight of the auxiliary language-\n"
    "                            modelling loss (default 0.5; 0: none)\n"
    "      --doc-stride N        span: tokens from a passage window's start to the\n"
    "                            next's (default 128)\n"
    "      --max-query-length N  span: question tokens kept (default 64)\n"
    "      --max-answer-length N span: tokens of an answer at most (default 30)\n"
    "                            These three also for predict and eval, by default\n"
    "                            those of the run.yaml beside the model\n"
    "      --seed N              the classifier's initialisation, dropout and data\n"
    "                            order (default 0)\n"
    "  -m, --model DIR           run directory (default 'classifier'); predict and\n"
    "                            eval: the model to use (a run directory means its\n"
    "                            best model, else its newest checkpoint)\n"
    "      --save-every N        a checkpoint every N steps (default 0: at the end of\n"
    "                            every epoch)\n"
    "      --keep N              keep the newest N checkpoints (default 2; 0 = all)\n"
    "      --resume DIR          continue a run: its options are read first, flags\n"
    "                            still win\n"
    "      --force               write a new run into a directory that holds another\n"
    "                            run or other files (refused otherwise)\n"
    "      --log FILE            TSV log: step, tokens, minutes, lr, loss, grad_norm,\n"
    "                            tokens_per_s, valid_loss, valid_accuracy, valid_macro_f1\n"
    "      --dry-run             print the memory the run will use (parameters,\n"
    "                            gradients, optimizer, activations of a batch, data, the\n"
    "                            total) and what is available, and exit: 0 when it\n"
    "                            fits, 1 when not\n"
    "      --no-memory-check     start even when the run does not fit in the memory\n"
    "                            available (default: refuse it, exit 1)\n"
    "Predict and eval:\n"
    "      --json                eval: one JSON object per FILE (accuracy, macro_f1,\n"
    "                            per-label precision, recall, f1, support, confusion;\n"
    "                            choice: examples, choices, accuracy, loss; span:\n"
    "                            questions, windows, exact_match, f1, loss)\n"
    "      --all                 predict: every label's (choice's) probability,\n"
    "                            'label:p' after the best\n"
    "Common:\n"
    "      --max-line-bytes N    the longest line read (default 16777216 = 16 MiB); a\n"
    "                            longer one is an error naming the file and line\n"
    "      --bf16                matrix products with bfloat16 operands and fp32\n"
    "                            accumulation (needs AVX-512 BF16; weights, gradients\n"
    "                            and Adam stay fp32); a resumed run keeps it unless\n"
    "                            --no-bf16\n"
    "  -t, --threads N           threads (default: all CPUs; under mpirun the rank's\n"
    "                            share); training results depend on it, predict and\n"
    "                            eval output does not\n"
    "      --progress            a live progress line on standard error (default: on a\n"
    "                            terminal)\n"
    "      --no-progress         plain progress lines\n"
    "  -c, --config FILE         read options from a YAML file (keys = long option names)\n"
    "      --dump-config         print the effective configuration and exit\n"
    "  -q, --quiet               no progress, no warnings\n"
    "  -v, --verbose             more messages (the per-label table after every epoch)\n"
    "  -h, --help                display this help and exit\n"
    "  -V, --version             output version information and exit\n"
    "\n"
    "Memory available is the smallest of MemAvailable (/proc/meminfo), what\n"
    "RLIMIT_AS (ulimit -v) and the cgroup's memory.max leave.\n"
    "SIGINT and SIGTERM save a checkpoint and exit with status 130 and 143.\n"
    "Exit status: 0 ok, 1 bad input data or I/O error, 2 usage error (also: no\n"
    "tokenizer), 3 missing, unreadable or incompatible model or tokenizer file, or a\n"
    "missing, unreadable or invalid config file (-c).\n";

static const char *const schedules[] = {"cosine", "linear", "constant", NULL};
/* --task: index = enum nlp_ft_task (auto: from the data) */
static const char *const tasks[] = {"auto", "classify", "choice", "similarity", "span", NULL};

static struct {
    const char *init, *tokenizer, *valid, *labels, *model, *resume, *log, *train;
    int schedule, progress, json, all, from_scratch, dry_run, memory_check, force, bf16, task;
    long epochs, batch_size, max_length, warmup, seed, keep, threads, save_every, max_line_bytes;
    long doc_stride, max_answer, max_query;
    double lr, weight_decay, grad_clip, dropout, lm_weight;
} o = {
    .schedule = 1,
    .epochs = 3,
    .batch_size = 32,
    .max_length = -1,
    .warmup = -1,
    .keep = 2,
    .lr = -1,
    .weight_decay = 0.01,
    .grad_clip = 1.0,
    .dropout = -1,
    .lm_weight = 0.5,
    .memory_check = 1,
    .max_line_bytes = CLI_MAX_LINE_BYTES,
    .doc_stride = 128,
    .max_answer = 30,
    .max_query = 64,
};

static struct cli_opt opts[] = {
    {.name = "init", .kind = CLI_STR, .dest = &o.init},
    {.name = "from-scratch", .kind = CLI_BOOL, .dest = &o.from_scratch, .flags = CLI_NEGATABLE},
    {.name = "tokenizer", .kind = CLI_STR, .dest = &o.tokenizer},
    {.name = "valid", .kind = CLI_STR, .dest = &o.valid},
    {.name = "task", .kind = CLI_CHOICE, .dest = &o.task, .choices = tasks},
    {.name = "labels", .kind = CLI_STR, .dest = &o.labels},
    {.name = "epochs", .kind = CLI_INT, .dest = &o.epochs, .min = 1, .max = 1e9},
    {.name = "batch-size", .key = 'B', .kind = CLI_INT, .dest = &o.batch_size, .min = 1, .max = 1 << 20},
    {.name = "max-line-bytes", .kind = CLI_INT, .dest = &o.max_line_bytes, .min = 1, .max = 1e15},
    {.name = "max-length", .kind = CLI_INT, .dest = &o.max_length, .min = -1, .max = 1 << 20},
    {.name = "lr", .kind = CLI_DOUBLE, .dest = &o.lr, .min = -1, .max = 1e3},
    {.name = "warmup", .kind = CLI_INT, .dest = &o.warmup, .min = -1, .max = 1e15},
    {.name = "schedule", .kind = CLI_CHOICE, .dest = &o.schedule, .choices = schedules},
    {.name = "weight-decay", .kind = CLI_DOUBLE, .dest = &o.weight_decay, .min = 0, .max = 1e3},
    {.name = "grad-clip", .kind = CLI_DOUBLE, .dest = &o.grad_clip, .min = 0, .max = 1e30},
    {.name = "dropout", .kind = CLI_DOUBLE, .dest = &o.dropout, .min = -1, .max = 0.999999},
    {.name = "lm-weight", .kind = CLI_DOUBLE, .dest = &o.lm_weight, .min = 0, .max = 1e6},
    {.name = "doc-stride", .kind = CLI_INT, .dest = &o.doc_stride, .min = 1, .max = 1 << 20},
    {.name = "max-answer-length", .kind = CLI_INT, .dest = &o.max_answer, .min = 1, .max = 1 << 20},
    {.name = "max-query-length", .kind = CLI_INT, .dest = &o.max_query, .min = 1, .max = 1 << 20},
    {.name = "seed", .kind = CLI_INT, .dest = &o.seed, .min = 0, .max = 9.2e18},
    {.name = "model", .key = 'm', .kind = CLI_STR, .dest = &o.model},
    {.name = "save-every", .kind = CLI_INT, .dest = &o.save_every, .min = 0, .max = 1e15},
    {.name = "keep", .kind = CLI_INT, .dest = &o.keep, .min = 0, .max = 1e9},
    {.name = "resume", .kind = CLI_STR, .dest = &o.resume, .flags = CLI_NOCONFIG},
    {.name = "force", .kind = CLI_BOOL, .dest = &o.force, .flags = CLI_NOCONFIG},
    {.name = "train", .kind = CLI_STR, .dest = &o.train, .flags = CLI_CONFIGONLY}, /* run.yaml's record */
    {.name = "log", .kind = CLI_STR, .dest = &o.log},
    {.name = "json", .kind = CLI_BOOL, .dest = &o.json, .flags = CLI_NEGATABLE},
    {.name = "all", .kind = CLI_BOOL, .dest = &o.all, .flags = CLI_NEGATABLE},
    {.name = "bf16", .kind = CLI_BOOL, .dest = &o.bf16, .flags = CLI_NEGATABLE},
    {.name = "threads", .key = 't', .kind = CLI_INT, .dest = &o.threads, .min = 0, .max = 4096},
    {.name = "progress", .kind = CLI_BOOL, .dest = &o.progress, .flags = CLI_NEGATABLE},
    {.name = "dry-run", .kind = CLI_BOOL, .dest = &o.dry_run, .flags = CLI_NOCONFIG},
    {.name = "memory-check", .kind = CLI_BOOL, .dest = &o.memory_check, .flags = CLI_NEGATABLE},
    {.name = NULL},
};

/* file scope: reachable at an error exit and from the callbacks */
static nlp_model *model;
static nlp_tokenizer *tok;
static const char *tk_name;
static nlp_cls_labels labels;
static nlp_cls_data dtrain, dvalid;
static nlp_cls_task ctask;
static nlp_choice_data chtrain, chvalid;
static nlp_choice_task chtask;
static nlp_span_data sptrain, spvalid;
static nlp_span_task sptask;
static enum nlp_ft_task task_kind; /* the run's task, or the model's */
static char *run_yaml;
static int live;
static long steps_per_epoch;

/* The tokens GPT's input transformation adds (Radford et al. 2018). */
static const char *const GPT_TOKENS[3] = {"[START]", "[DELIM]", "[EXTRACT]"};

// --- progress

static void fmt_time(char *buf, size_t cap, double s)
{
    if (s < 0 || !isfinite(s)) snprintf(buf, cap, "?");
    else if (s < 3600) snprintf(buf, cap, "%d:%02d", (int)s / 60, (int)s % 60);
    else snprintf(buf, cap, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
}

static void end_live(void)
{
    if (live) fputc('\n', stderr), live = 0;
}

/* The per-label table of a confusion matrix, on standard error. */
static void label_table(const uint64_t *cm, int L)
{
    char name[256];
    fprintf(stderr, "  %-24s %9s %9s %9s %9s\n", "label", "precision", "recall", "f1", "support");
    for (int k = 0; k < L; k++) {
        nlp_label_stats st;
        nlp_classify_label(cm, L, k, &st);
        nlp_model_label(model, k, name, sizeof name);
        fprintf(stderr, "  %-24s %9.4f %9.4f %9.4f %9llu\n", name, st.precision, st.recall, st.f1,
                (unsigned long long)st.support);
    }
}

static void report(void *ctx, const nlp_train_event *e)
{
    (void)ctx;
    if (e->kind == NLP_TRAIN_RESUME && e->ranks_before != nlp_dist_size()) /* a warning: even with -q */
        cli_warn("the run was trained on %d process%s until now, it goes on with %d: the same batches, "
                 "summed in another order (results differ in the last bits)", e->ranks_before,
                 e->ranks_before == 1 ? "" : "es", nlp_dist_size());
    if (cli_verbosity < 0) return;
    char eta[32], el[32];
    fmt_time(eta, sizeof eta, e->eta);
    fmt_time(el, sizeof el, e->seconds);
    const long epoch = steps_per_epoch ? (e->step + steps_per_epoch - 1) / steps_per_epoch : 0;
    switch (e->kind) {
    case NLP_TRAIN_STEP:
        if (o.progress) {
            fprintf(stderr, "\r\033[Kepoch %ld/%ld step %ld/%ld  loss %.4f  lr %.3g  %.0f tok/s  %s  ETA %s", epoch,
                    o.epochs, e->step, e->total, e->loss, e->lr, e->tokens_per_s, el, eta);
            live = 1;
        } else if (e->step % 50 == 0 || e->step == 1) {
            fprintf(stderr, "finetune: epoch %ld/%ld step %ld/%ld loss %.4f lr %.3g tokens/s %.0f elapsed %s eta %s\n",
                    epoch, o.epochs, e->step, e->total, e->loss, e->lr, e->tokens_per_s, el, eta);
        }
        break;
    case NLP_TRAIN_EVAL:
        end_live();
        if (task_kind == NLP_FT_CHOICE)
            fprintf(stderr, "finetune: epoch %ld valid loss %.4f accuracy %.4f%s\n", epoch, e->eval->v[0], e->eval->v[1],
                    e->best ? " (best)" : "");
        else if (task_kind == NLP_FT_SPAN)
            fprintf(stderr, "finetune: epoch %ld valid loss %.4f exact match %.2f F1 %.2f%s\n", epoch, e->eval->v[0],
                    e->eval->v[1], e->eval->v[2], e->best ? " (best)" : "");
        else
            fprintf(stderr, "finetune: epoch %ld valid loss %.4f accuracy %.4f macro-F1 %.4f%s\n", epoch, e->eval->v[0],
                    e->eval->v[1], e->eval->v[2], e->best ? " (best)" : "");
        if (cli_verbosity > 0 && ctask.cm) label_table(ctask.cm, ctask.L);
        break;
    case NLP_TRAIN_SAVE:
        end_live();
        cli_debug("step %ld: saved '%s'", e->step, e->path);
        break;
    case NLP_TRAIN_RESUME:
        cli_info("resuming '%s' at step %ld", e->path, e->step);
        break;
    case NLP_TRAIN_PLAN:
        end_live();
        mio_report_plan(e, o.warmup, 0);
        break;
    }
    fflush(stderr);
}

// --- checkpoints: the tokenizer and the options go along

static int save_extra(void *ctx, const char *dir)
{
    (void)ctx;
    char p[4200];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    int rc = nlp_tokfiles_write(nlp_tokenizer_spec(tok), NLP_TOKF_JSON, p);
    if (rc) return rc;
    snprintf(p, sizeof p, "%s/run.yaml", dir);
    return nlp_write_file(p, run_yaml, strlen(run_yaml));
}

static void yaml_line(nlp_buf *b, const char *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void yaml_line(nlp_buf *b, const char *k, const char *fmt, ...)
{
    char v[4200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    if (nlp_buf_printf(b, "%s: %s\n", k, v)) cli_fail(NLP_ENOMEM);
}

/* An absolute path in double quotes (run.yaml must work from any directory). */
static void yaml_path(nlp_buf *b, const char *k, const char *path)
{
    if (!path) return;
    char abs[4096];
    if (path[0] == '/' || strcmp(path, "-") == 0 || !realpath(path, abs)) snprintf(abs, sizeof abs, "%s", path);
    nlp_buf q = {0};
    for (const char *c = abs; *c; c++)
        if (nlp_buf_printf(&q, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c)) cli_fail(NLP_ENOMEM);
    yaml_line(b, k, "\"%s\"", q.data ? q.data : "");
    nlp_buf_free(&q);
}

static char *make_run_yaml(const char *train)
{
    nlp_buf b = {0};
    if (nlp_buf_puts(&b, "# finetune options of this run: 'finetune --resume DIR' reads them first\n"))
        cli_fail(NLP_ENOMEM);
    yaml_path(&b, "init", o.init);
    yaml_line(&b, "task", "%s", tasks[task_kind]);
    if (o.from_scratch) yaml_line(&b, "from-scratch", "true");
    yaml_path(&b, "train", train);
    yaml_path(&b, "valid", o.valid);
    yaml_path(&b, "labels", o.labels);
    yaml_path(&b, "model", o.model);
    yaml_line(&b, "epochs", "%ld", o.epochs);
    yaml_line(&b, "batch-size", "%ld", o.batch_size);
    yaml_line(&b, "max-length", "%ld", o.max_length);
    yaml_line(&b, "lr", "%.17g", o.lr);
    yaml_line(&b, "warmup", "%ld", o.warmup);
    yaml_line(&b, "schedule", "%s", schedules[o.schedule]);
    yaml_line(&b, "weight-decay", "%.17g", o.weight_decay);
    yaml_line(&b, "grad-clip", "%.17g", o.grad_clip);
    yaml_line(&b, "dropout", "%.17g", o.dropout);
    yaml_line(&b, "lm-weight", "%.17g", o.lm_weight);
    if (task_kind == NLP_FT_SPAN) {
        yaml_line(&b, "doc-stride", "%ld", o.doc_stride);
        yaml_line(&b, "max-answer-length", "%ld", o.max_answer);
        yaml_line(&b, "max-query-length", "%ld", o.max_query);
    }
    yaml_line(&b, "seed", "%ld", o.seed);
    if (o.bf16) yaml_line(&b, "bf16", "true");
    yaml_line(&b, "save-every", "%ld", o.save_every);
    yaml_line(&b, "keep", "%ld", o.keep);
    yaml_path(&b, "log", o.log);
    return nlp_buf_detach(&b, NULL);
}

static char **resume_argv;

static char resume_ckpt[4096];  /* the checkpoint --resume names */
static const char *resume_yaml; /* its run.yaml, read first */

/* With --resume DIR, argv with "-c DIR/run.yaml" put first. */
static char **with_resume_config(int *argc, char **argv)
{
    const char *dir = NULL;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--resume") == 0 && i + 1 < *argc) dir = argv[i + 1];
        else if (strncmp(argv[i], "--resume=", 9) == 0) dir = argv[i] + 9;
    }
    if (!dir) return argv;
    static char yaml[4200];
    char *ck = resume_ckpt;
    cli_prog = "finetune"; /* before cli_parse: messages of the check below */
    mio_check_resume(dir, "finetune", ck, sizeof resume_ckpt);
    snprintf(yaml, sizeof yaml, "%s/run.yaml", ck);
    if (!nlp_file_exists(yaml)) return argv;
    resume_yaml = yaml;
    char **nv = resume_argv = nlp_calloc((size_t)*argc + 3, sizeof *nv);
    if (!nv) cli_fail(NLP_ENOMEM);
    nv[0] = argv[0];
    nv[1] = "-c";
    nv[2] = yaml;
    for (int i = 1; i < *argc; i++) nv[i + 2] = argv[i];
    *argc += 2;
    return nv;
}

static void on_stop(int sig)
{
    static volatile sig_atomic_t seen;
    if (seen) { /* a second signal: stop now, the last checkpoint stays */
        nlp_writer_unlink_pending();
        signal(sig, SIG_DFL);
        raise(sig);
    }
    seen = 1;
    nlp_train_request_stop(sig);
}

static void catch_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < 2; i++) {
        struct sigaction old, sa = {0};
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

// --- the model and its tokens

/* GPT: the ids of [START], [DELIM], [EXTRACT] in tok, or -1 each. */
static void gpt_token_ids(const nlp_tokenizer *tk, int32_t id[3])
{
    for (int k = 0; k < 3; k++) id[k] = nlp_tokenizer_token_to_id(tk, GPT_TOKENS[k], strlen(GPT_TOKENS[k]));
}

/* GPT: adds the three tokens to the tokenizer as special tokens with ids
 * V, V+1, V+2 (the model's vocabulary V grows by three). */
static void add_gpt_tokens(int32_t V)
{
    nlp_tokenizer *nt;
    int rc = nlp_tokenizer_add_special(&nt, tok, GPT_TOKENS, 3, V, NULL);
    if (rc == NLP_ENOMEM) cli_fail(rc);
    if (rc) cli_die(NLP_EXIT_FORMAT, "'%s': cannot add GPT's classification tokens: %s", tk_name, nlp_errmsg());
    nlp_tokenizer_free(tok);
    tok = nt;
}

/* The encoder of the model's architecture for T positions. */
static nlp_cls_encoder encoder_for(const nlp_model *m, int T)
{
    nlp_cls_encoder e;
    int rc;
    if (nlp_model_cfg(m)->arch == NLP_ARCH_BERT) {
        rc = nlp_cls_encoder_bert(&e, tok, T);
    } else {
        int32_t id[3];
        gpt_token_ids(tok, id);
        if (id[0] < 0 || id[1] < 0 || id[2] < 0)
            cli_die(NLP_EXIT_FORMAT, "'%s' has no %s, %s and %s tokens: not a fine-tuned GPT's tokenizer", tk_name,
                    GPT_TOKENS[0], GPT_TOKENS[1], GPT_TOKENS[2]);
        rc = nlp_cls_encoder_gpt(&e, id[0], id[1], id[2], id[2], T);
    }
    if (rc == NLP_EFORMAT) cli_die(NLP_EXIT_FORMAT, "'%s': %s", tk_name, nlp_errmsg());
    if (rc) cli_fail(rc);
    e.pair_sum = task_kind == NLP_FT_SIMILARITY;
    return e;
}

static int default_length(const nlp_model *m)
{
    const int p = nlp_model_cfg(m)->max_positions, n = nlp_model_input_length(m);
    const int d = task_kind == NLP_FT_SPAN ? 384 : 128; /* span: BERT's SQuAD windows */
    return o.max_length > 0 ? (int)o.max_length : n > 0 ? n : p < d ? p : d;
}

/* The span task's layout: BERT's tokens, T positions, the windows' options. */
static nlp_span_layout span_layout(const nlp_model *m, int T)
{
    nlp_span_layout l = {.enc = encoder_for(m, T), .stride = (int)o.doc_stride, .max_query = (int)o.max_query,
                         .max_answer = (int)o.max_answer};
    if (T < 5) cli_usage_error("--max-length %d: a question and a window of its passage need at least 5 positions", T);
    return l;
}

static void check_arch(const nlp_model *m, const char *name)
{
    enum nlp_arch a = nlp_model_cfg(m)->arch;
    if (a != NLP_ARCH_BERT && !nlp_arch_is_lm(a))
        cli_die(NLP_EXIT_FORMAT, "'%s' holds a %s model: finetune trains and uses bert, gpt and llama classifiers", name,
                nlp_arch_name(a));
    /* the length a classifier was trained with: no classifier reads fewer
     * than 4 positions (its 3 special tokens and a token of a pair) */
    const int n = nlp_model_input_length(m);
    if (n > 0 && n < 4)
        cli_die(NLP_EXIT_FORMAT, "'%s': its metadata's input_length %d is no classifier's (at least 4 positions: "
                "the special tokens and a token of each text)", name, n);
}

// --- train

/* The label set given by --labels: one per line. */
static void read_label_file(const char *path)
{
    char *text;
    size_t len;
    if (nlp_read_file_lines(path, (size_t)o.max_line_bytes, &text, &len)) cli_fail(nlp_errcode());
    size_t line = 0;
    for (char *p = text; p < text + len;) {
        char *e = memchr(p, '\n', (size_t)(text + len - p));
        size_t n = e ? (size_t)(e - p) : (size_t)(text + len - p);
        line++;
        if (n && p[n - 1] == '\r') n--;
        if (n == 0) cli_die(NLP_EXIT_FAILURE, "'%s' line %zu: empty label", path, line);
        if (memchr(p, '\t', n)) cli_die(NLP_EXIT_FAILURE, "'%s' line %zu: a label cannot hold a tab", path, line);
        if (nlp_cls_labels_find(&labels, p, n) >= 0)
            cli_die(NLP_EXIT_FAILURE, "'%s' line %zu: label '%.*s' given twice", path, line, (int)n, p);
        if (nlp_cls_labels_add(&labels, p, n, NULL)) cli_fail(NLP_ENOMEM);
        p = e ? e + 1 : text + len;
    }
    free(text);
    if (!nlp_cls_labels_count(&labels)) cli_die(NLP_EXIT_FAILURE, "'%s': no labels", path);
}

/* The task a training file's data say when --task does not: JSON (SQuAD)
 * is question answering, lines of 4 fields or more (a label, a context and
 * 2 choices or more) multiple choice, the rest classification (a pair is
 * classified as it is: GPT's similarity is asked for by name). Standard
 * input is not read ahead. */
static enum nlp_ft_task sniff_task(const char *path)
{
    if (strcmp(path, "-") == 0) return NLP_FT_CLASSIFY;
    FILE *f = fopen(path, "rb");
    if (!f) return NLP_FT_CLASSIFY; /* the reader says why */
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t i = 0;
    while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r')) i++;
    if (i < n && buf[i] == '{') return NLP_FT_SPAN; /* SQuAD JSON */
    int fields = 1;
    for (i = 0; i < n && buf[i] != '\n'; i++) fields += buf[i] == '\t';
    return fields >= 4 ? NLP_FT_CHOICE : NLP_FT_CLASSIFY;
}

/* The run's task: a resumed run's (its checkpoint's model says it; --task
 * may only repeat it), else --task, else what the training data look like. */
static enum nlp_ft_task resolve_task(const char *train, const nlp_model *resumed, const char *from)
{
    if (resumed) {
        enum nlp_ft_task t = nlp_model_task(resumed);
        if (t == NLP_FT_NONE) t = NLP_FT_CLASSIFY; /* a run of before tasks were recorded */
        if (o.task != NLP_FT_NONE && (enum nlp_ft_task)o.task != t)
            cli_usage_error("--task %s: the run in '%s' is of task %s", tasks[o.task], from, tasks[t]);
        return t;
    }
    if (o.task != NLP_FT_NONE) return (enum nlp_ft_task)o.task;
    enum nlp_ft_task t = sniff_task(train);
    if (t != NLP_FT_CLASSIFY)
        cli_info("'%s': task %s (%s; --task says otherwise)", train, tasks[t],
                 t == NLP_FT_SPAN ? "it is JSON" : "its lines' fields");
    return t;
}

/* Classification (and similarity) data: the training file, its labels (a
 * resumed run's in its order, or --labels), --valid; the number of labels. */
static int read_cls_data(const char *train, int threads, const char *resume_ck)
{
    if (o.labels) read_label_file(o.labels);
    nlp_cls_read_opts ro = {.tk = tok, .labelled = 1, .labels = &labels, .add_labels = !o.labels,
                            .labels_from = o.labels, .threads = threads, .max_line = (size_t)o.max_line_bytes};
    if (task_kind == NLP_FT_SIMILARITY) ro.texts = 2;
    if (o.resume) { /* the checkpoint's labels, in its order */
        char name[4096];
        for (int k = 0; k < nlp_model_cfg(model)->num_labels && !o.labels; k++) {
            nlp_model_label(model, k, name, sizeof name);
            if (nlp_cls_labels_add(&labels, name, strlen(name), NULL)) cli_fail(NLP_ENOMEM);
        }
        ro.add_labels = 0, ro.labels_from = resume_ck;
    }
    int rc = nlp_cls_read(&dtrain, train, &ro);
    if (rc) cli_fail(rc);
    if (!dtrain.n) cli_die(NLP_EXIT_FAILURE, "'%s': no examples", train);
    const int L = nlp_cls_labels_count(&labels);
    if (L < 2) cli_die(NLP_EXIT_FAILURE, "'%s': one label ('%s'): nothing to tell apart", train, nlp_cls_labels_name(&labels, 0));
    if (o.valid) {
        ro.add_labels = 0, ro.texts = dtrain.pair ? 2 : 1;
        if (!ro.labels_from) ro.labels_from = train;
        if ((rc = nlp_cls_read(&dvalid, o.valid, &ro))) cli_fail(rc);
        if (!dvalid.n) cli_die(NLP_EXIT_FAILURE, "'%s': no examples", o.valid);
    }
    if (dtrain.repaired + dvalid.repaired)
        cli_warn("%llu fields of invalid UTF-8 repaired (U+FFFD)", (unsigned long long)(dtrain.repaired + dvalid.repaired));
    return L;
}

/* Question answering: SQuAD JSON to train on, and --valid. */
static void read_span_data(const char *train, int threads)
{
    if (o.labels) cli_usage_error("--labels: question answering has no label set (answers are spans of the passage)");
    nlp_span_read_opts ro = {.tk = tok, .labelled = 1, .threads = threads, .max_line = (size_t)o.max_line_bytes};
    int rc = nlp_span_read(&sptrain, train, &ro);
    if (rc == NLP_EINVAL) cli_die(NLP_EXIT_FORMAT, "'%s': %s", tk_name, nlp_errmsg()); /* no offsets */
    if (rc) cli_fail(rc);
    if (!sptrain.n) cli_die(NLP_EXIT_FAILURE, "'%s': no questions", train);
    if (o.valid) {
        if ((rc = nlp_span_read(&spvalid, o.valid, &ro))) cli_fail(rc);
        if (!spvalid.n) cli_die(NLP_EXIT_FAILURE, "'%s': no questions", o.valid);
    }
}

/* Multiple-choice data: the training file and --valid, with as many choices. */
static void read_choice_data(const char *train, int threads)
{
    if (o.labels) cli_usage_error("--labels: multiple choice has no label set (a label is the right choice's index)");
    nlp_choice_read_opts ro = {.tk = tok, .labelled = 1, .threads = threads, .max_line = (size_t)o.max_line_bytes};
    int rc = nlp_choice_read(&chtrain, train, &ro);
    if (rc) cli_fail(rc);
    if (!chtrain.n) cli_die(NLP_EXIT_FAILURE, "'%s': no examples", train);
    if (chtrain.k + 1 > NLP_MAX_INPUT_TEXTS)
        cli_die(NLP_EXIT_FAILURE, "'%s': %d choices per example, more than %d", train, chtrain.k, NLP_MAX_INPUT_TEXTS - 1);
    if (o.valid) {
        ro.k = chtrain.k;
        if ((rc = nlp_choice_read(&chvalid, o.valid, &ro))) cli_fail(rc);
        if (!chvalid.n) cli_die(NLP_EXIT_FAILURE, "'%s': no examples", o.valid);
    }
    if (chtrain.repaired + chvalid.repaired)
        cli_warn("%llu fields of invalid UTF-8 repaired (U+FFFD)", (unsigned long long)(chtrain.repaired + chvalid.repaired));
}

static int train_main(int argc, char **argv, int explicit_sub)
{
    argv = with_resume_config(&argc, argv);
    struct cli c = {"finetune", usage, opts, NULL};
    o.model = "classifier";
    int first = cli_parse(&c, argc, argv);
    if (cli_verbosity < 0) o.progress = 0;
    const char *train = NULL;
    if (explicit_sub) first++; /* "train" */
    if (first < argc) train = argv[first++];
    else if (o.resume && o.train) train = o.train;
    if (first < argc) cli_usage_error("one training file (got '%s' too)", argv[first]);
    if (!train) cli_usage_error("no training data: give a TSV of 'label<TAB>text' lines");
    if (!o.init && !o.resume) cli_usage_error("give --init MODEL: the pretrained model to fine-tune");
    if (o.json || o.all) cli_usage_error("--json and --all are for eval and predict");
    if (o.valid && strcmp(o.valid, "-") == 0 && strcmp(train, "-") == 0)
        cli_usage_error("--valid and the training data cannot both be standard input");
    if (nlp_dist_size() > 1 && (strcmp(train, "-") == 0 || (o.valid && strcmp(o.valid, "-") == 0)))
        cli_usage_error("standard input cannot feed %d ranks: every rank reads the data, give files", nlp_dist_size());
    if (o.from_scratch && o.resume)
        cli_usage_error("--from-scratch starts new weights; --resume continues a run's: one or the other");

    /* the run directory, before any data is read: where a resumed run goes
     * on, its lock, and no new run into another's directory (--init's
     * pretraining run among them) */
    int own_dir = 0, legacy = 0;
    const uint64_t run_id = run_identify(o.resume, resume_ckpt, resume_yaml, &o.model, &o.log, &own_dir, &legacy);
    {
        const char *in[] = {train, o.valid, o.labels, o.tokenizer, o.init};
        cli_check_output("--log", o.log, in, sizeof in / sizeof *in);
    }
    run_dir_begin(o.model, run_id, !own_dir, legacy, o.force, o.dry_run);
    int threads = nlp_threads_set(cli_dist_threads(o.threads));
    if (o.bf16 && nlp_gemm_set_mode(NLP_GEMM_BF16)) cli_usage_error("--bf16: %s", nlp_errmsg());

    /* the model: a resumed run's checkpoint, or the pretrained one */
    char resume_ck[4096] = "";
    if (o.resume && nlp_train_find_checkpoint(o.resume, resume_ck, sizeof resume_ck)) cli_fail_file(NLP_EIO);
    const char *from = o.resume ? resume_ck : o.init;
    model = mio_load_model(from, -1);
    check_arch(model, from);
    if (o.from_scratch && !o.resume) { /* the ablation: same shapes, no pretraining */
        nlp_model *fresh;
        int frc = nlp_model_new(&fresh, nlp_model_cfg(model), (uint64_t)o.seed);
        if (frc) cli_fail(frc);
        nlp_model_free(model);
        model = fresh;
        cli_info("'%s': its architecture and sizes with fresh random weights (--from-scratch, seed %ld)", from, o.seed);
    }
    const int gpt = nlp_arch_is_lm(nlp_model_cfg(model)->arch); /* gpt or llama: the same classifier */
    tk_name = o.tokenizer ? o.tokenizer : from;
    tok = o.tokenizer ? mio_load_tokenizer(o.tokenizer) : mio_load_tokenizer_beside(from);
    if (!tok) mio_no_tokenizer(from, "", "tokenizer.json, vocab.json + merges.txt, vocab.txt", "");
    if (o.lr < 0) o.lr = gpt ? 6.25e-5 : 5e-5;

    /* the task: the resumed run's, --task, or what the data look like */
    task_kind = resolve_task(train, o.resume ? model : NULL, from);
    if (task_kind == NLP_FT_SIMILARITY && !gpt)
        cli_usage_error("--task similarity is GPT's (both orders of a pair, their states added): '%s' holds a %s "
                        "model, whose classifier reads a pair as it is (--task classify)", from,
                        nlp_arch_name(nlp_model_cfg(model)->arch));
    if (task_kind != NLP_FT_SPAN &&
        (cli_given("doc-stride") == 2 || cli_given("max-answer-length") == 2 || cli_given("max-query-length") == 2))
        cli_usage_error("--doc-stride, --max-answer-length and --max-query-length are for --task span");
    if (task_kind == NLP_FT_SPAN && gpt)
        cli_usage_error("--task span is BERT's (start and end logits over the passage): '%s' holds a %s model", from,
                        nlp_arch_name(nlp_model_cfg(model)->arch));

    /* the data, and the head they need: L outputs, rows per example */
    int rc, L, rows = 1;
    size_t n_train;
    uint64_t data_bytes;
    if (task_kind == NLP_FT_CHOICE) {
        read_choice_data(train, threads);
        L = 1, rows = chtrain.k, n_train = chtrain.n;
        data_bytes = 4 * (uint64_t)(chtrain.tokens + chvalid.tokens) + 8 * (uint64_t)(chtrain.k + 2) * (chtrain.n + chvalid.n);
    } else if (task_kind == NLP_FT_SPAN) {
        read_span_data(train, threads);
        L = 2, n_train = sptrain.n; /* questions; the steps count windows (below) */
        const nlp_span_data *sd[2] = {&sptrain, &spvalid};
        data_bytes = 0;
        for (int k = 0; k < 2; k++)
            if (sd[k]->n) /* text, tokens with their offsets, questions */
                data_bytes += sd[k]->ptext[sd[k]->np] + 12 * (uint64_t)sd[k]->ptok[sd[k]->np] +
                              4 * (uint64_t)sd[k]->qtok[sd[k]->n] + 64 * (uint64_t)sd[k]->n;
    } else {
        L = read_cls_data(train, threads, resume_ck);
        rows = task_kind == NLP_FT_SIMILARITY ? 2 : 1, n_train = dtrain.n;
        data_bytes = 4 * (uint64_t)(dtrain.tokens + dvalid.tokens) + 24 * (uint64_t)(dtrain.n + dvalid.n);
    }

    /* the head (and GPT's tokens), unless the checkpoint has them */
    const nlp_model_config *mc = nlp_model_cfg(model);
    if (mc->num_labels > 0 && !o.resume && mc->head == NLP_HEAD_SPAN)
        cli_die(NLP_EXIT_FORMAT, "'%s' is a question-answering model already: fine-tune its pretrained model instead, "
                "or continue its run with --resume", from);
    if (mc->num_labels > 0 && !o.resume && nlp_model_task(model) == NLP_FT_CHOICE)
        cli_die(NLP_EXIT_FORMAT, "'%s' is a multiple-choice model already: fine-tune its pretrained model instead, or "
                "continue its run with --resume", from);
    if (mc->num_labels > 0 && !o.resume)
        cli_die(NLP_EXIT_FORMAT, "'%s' is a classifier already (%d labels): fine-tune its pretrained model instead, or "
                "continue its run with --resume", from, mc->num_labels);
    if (o.resume && mc->num_labels != L)
        cli_die(NLP_EXIT_FORMAT, "'%s' classifies %d labels, the data have %d", resume_ck, mc->num_labels, L);
    /* the memory of the run (--dry-run stops here), before the classifier's arenas are made */
    {
        nlp_model_config nc = *mc;
        nc.num_labels = L;
        if (task_kind == NLP_FT_SPAN) nc.head = NLP_HEAD_SPAN;
        if (gpt && !o.resume) nc.vocab_size += 3;
        if (o.max_length > mc->max_positions)
            cli_usage_error("--max-length %ld: the model has %d positions", o.max_length, mc->max_positions);
        mio_memory_check(&nc, (int)o.batch_size * rows, default_length(model), 0, data_bytes, o.dry_run, o.memory_check);
    }
    if (!o.resume) {
        nlp_model_config nc = *mc;
        nc.num_labels = L;
        if (task_kind == NLP_FT_SPAN) nc.head = NLP_HEAD_SPAN;
        if (gpt) {
            int32_t id[3];
            gpt_token_ids(tok, id);
            if (id[0] >= 0 || id[1] >= 0 || id[2] >= 0)
                cli_die(NLP_EXIT_FORMAT, "'%s' has %s tokens already: give the pretrained model's tokenizer", tk_name,
                        GPT_TOKENS[id[0] >= 0 ? 0 : id[1] >= 0 ? 1 : 2]);
            mio_check_vocab(tok, tk_name, model, from);
            add_gpt_tokens(mc->vocab_size);
            nc.vocab_size = mc->vocab_size + 3;
        } else {
            mio_check_vocab(tok, tk_name, model, from);
        }
        nlp_model *m2;
        if ((rc = nlp_model_extend(&m2, model, &nc, (uint64_t)o.seed))) cli_fail(rc);
        nlp_model_free(model);
        model = m2;
        if (task_kind != NLP_FT_CHOICE && task_kind != NLP_FT_SPAN) { /* the label names; a choice is its index */
            const char **names = nlp_calloc((size_t)L, sizeof *names);
            if (!names) cli_fail(NLP_ENOMEM);
            for (int k = 0; k < L; k++) names[k] = nlp_cls_labels_name(&labels, k);
            rc = nlp_model_set_labels(model, names, L);
            free(names);
            if (rc) cli_fail(rc);
        }
        if ((rc = nlp_model_set_task(model, task_kind))) cli_fail(rc);
    } else {
        mio_check_vocab(tok, tk_name, model, from);
    }
    mc = nlp_model_cfg(model);
    nlp_model_set_lm_weight(model, gpt ? o.lm_weight : 0);
    if (o.dropout >= 0 && (rc = nlp_model_set_dropout(model, o.dropout, o.dropout))) cli_usage_error("--dropout: %s", nlp_errmsg());
    if (o.max_length > mc->max_positions)
        cli_usage_error("--max-length %ld: the model has %d positions", o.max_length, mc->max_positions);
    o.max_length = default_length(model);
    const int texts = task_kind == NLP_FT_CHOICE ? chtrain.k + 1 : task_kind == NLP_FT_SPAN ? 2 : dtrain.pair ? 2 : 1;
    if ((rc = nlp_model_set_input_length(model, (int)o.max_length)) || (rc = nlp_model_set_input_texts(model, texts)))
        cli_fail(rc);
    nlp_cls_encoder enc = encoder_for(model, (int)o.max_length);
    size_t cut = task_kind == NLP_FT_CHOICE ? nlp_choice_truncated(&enc, &chtrain)
                 : task_kind == NLP_FT_SPAN ? 0 : nlp_cls_truncated(&enc, &dtrain);
    if (cut) cli_info("%zu of %zu training examples truncated to %ld positions (--max-length)", cut, n_train, o.max_length);

    nlp_task task;
    size_t n_steps = n_train; /* what an epoch draws: examples, or span windows */
    if (task_kind == NLP_FT_SPAN) {
        nlp_span_layout sl = span_layout(model, (int)o.max_length);
        rc = nlp_span_task_init(&sptask, &task, &sptrain, o.valid ? &spvalid : NULL, &sl, mc, (int)o.batch_size,
                                nlp_squad_score_max);
        n_steps = sptask.wtrain.n;
    } else if (task_kind == NLP_FT_CHOICE) {
        rc = nlp_choice_task_init(&chtask, &task, &chtrain, o.valid ? &chvalid : NULL, &enc, mc, (int)o.batch_size);
    } else {
        rc = nlp_cls_task_init(&ctask, &task, &dtrain, o.valid ? &dvalid : NULL, &enc, mc, (int)o.batch_size);
        ctask.macro_f1 = nlp_classify_macro_f1;
    }
    if (rc) cli_fail(rc);
    steps_per_epoch = (long)((n_steps + (size_t)o.batch_size - 1) / (size_t)o.batch_size);
    const long total = steps_per_epoch * o.epochs;
    if (o.warmup < 0) o.warmup = (long)ceil(total * (gpt ? 0.002 : 0.1));
    if (task_kind == NLP_FT_SPAN)
        cli_info("bert question answering: %zu parameters, %zu training questions in %zu windows of %ld positions "
                 "(%ld steps per epoch)", nlp_model_param_count(model), n_train, n_steps, o.max_length, steps_per_epoch);
    else if (task_kind == NLP_FT_CHOICE)
        cli_info("%s multiple choice: %zu parameters, %zu training examples of %d choices (%ld steps per epoch)",
                 nlp_arch_name(mc->arch), nlp_model_param_count(model), n_train, chtrain.k, steps_per_epoch);
    else
        cli_info("%s %s: %zu parameters, %d labels, %zu training examples%s (%ld steps per epoch)",
                 nlp_arch_name(mc->arch), task_kind == NLP_FT_SIMILARITY ? "similarity classifier" : "classifier",
                 nlp_model_param_count(model), L, n_train, dtrain.pair ? " of text pairs" : "", steps_per_epoch);
    if (!(run_yaml = make_run_yaml(train))) cli_fail(NLP_ENOMEM);

    nlp_optim_config oc = nlp_optim_default();
    oc.weight_decay = o.weight_decay, oc.beta2 = 0.999, oc.eps = 1e-8;
    if (o.weight_decay == 0) oc.kind = NLP_OPTIM_ADAM;
    nlp_train_opts to = {
        .out_dir = o.model,
        .steps = total,
        .accum = 1,
        .schedule = o.schedule == 0 ? NLP_SCHED_COSINE : o.schedule == 1 ? NLP_SCHED_LINEAR : NLP_SCHED_CONSTANT,
        .lr = o.lr,
        .lr_min = 0,
        .warmup = o.warmup,
        .clip = o.grad_clip,
        .optim = oc,
        .eval_every = steps_per_epoch,
        .save_every = o.save_every > 0 ? o.save_every : steps_per_epoch,
        .keep = (int)o.keep,
        .save_best = task.evaluate != NULL,
        .log_path = o.log,
        .seed = (uint64_t)o.seed,
        .save_extra = save_extra,
        .report = report,
        .run_id = run_id,
    };
    if (o.resume) {
        nlp_model_free(model);
        model = NULL;
    }
    catch_signals();
    nlp_train_result res;
    rc = nlp_train(&model, &task, &to, o.resume ? resume_ck : NULL, &res);
    end_live();
    if (rc) cli_fail(rc);
    int status = 0;
    if (res.signal) {
        if (res.last_checkpoint[0])
            cli_warn("stopped by %s at step %ld; '%s' holds the run (continue with --resume %s)",
                     res.signal == SIGINT ? "SIGINT" : "SIGTERM", res.step, res.last_checkpoint, o.model);
        else cli_warn("stopped by %s before the first step; nothing was saved", res.signal == SIGINT ? "SIGINT" : "SIGTERM");
        status = 128 + res.signal;
    } else {
        cli_info("done: %ld epoch%s, checkpoint '%s'", o.epochs, o.epochs == 1 ? "" : "s", res.last_checkpoint);
        if (task.evaluate && !isnan(res.best))
            cli_info("best validation %s %.4f: '%s/best'", task.eval_names[task.best_metric], res.best, o.model);
    }
    nlp_cls_task_free(&ctask);
    nlp_choice_task_free(&chtask);
    nlp_span_task_free(&sptask);
    free(run_yaml);
    return status;
}

// --- predict and eval

/* The model to use behind -m: a run directory's best model, else what
 * mio_resolve finds. */
static void use_path(const char *m, char *buf, size_t cap)
{
    char best[4200];
    snprintf(best, sizeof best, "%s/best", m);
    if (nlp_is_dir(m) && nlp_is_dir(best)) snprintf(buf, cap, "%s", best);
    else mio_resolve(m, buf, cap);
}

/* What eval adds up over a file's batches. */
typedef struct file_sum {
    uint64_t examples, repaired, correct;
    double loss_sum;
    uint64_t *cm; /* classification: the confusion matrix [L·L] */
    int fields;   /* the fields (classification) or choices every line has; 0 until line 1 is read */
} file_sum;

static char model_path[4300]; /* the model load_classifier loaded */

static void load_classifier(void)
{
    if (!o.model) cli_usage_error("give -m MODEL: a fine-tuned model or run directory");
    char *path = model_path;
    use_path(o.model, path, sizeof model_path);
    model = mio_load_model(path, -1);
    check_arch(model, path);
    if (nlp_model_cfg(model)->num_labels <= 0)
        cli_die(NLP_EXIT_FORMAT, "'%s' has no classification head: fine-tune it first ('finetune --init %s ...')", path,
                o.model);
    static char tkp[4300];
    snprintf(tkp, sizeof tkp, "%s", o.tokenizer ? o.tokenizer : path);
    tk_name = tkp;
    tok = o.tokenizer ? mio_load_tokenizer(o.tokenizer) : mio_load_tokenizer_beside(path);
    if (!tok) mio_no_tokenizer(path, "", "tokenizer.json, vocab.json + merges.txt, vocab.txt", "");
    mio_check_vocab(tok, tk_name, model, path);
    task_kind = nlp_model_task(model) ? nlp_model_task(model) : NLP_FT_CLASSIFY;
    if (task_kind == NLP_FT_CHOICE && (nlp_model_cfg(model)->num_labels != 1 || nlp_model_input_texts(model) < 3))
        cli_die(NLP_EXIT_FORMAT, "'%s': a multiple-choice model needs a head of one unit and its number of choices "
                "(input_texts in its metadata)", path);
    if (task_kind == NLP_FT_SPAN && nlp_model_cfg(model)->head != NLP_HEAD_SPAN)
        cli_die(NLP_EXIT_FORMAT, "'%s': its task is span but it has no span head", path);
    if (nlp_model_cfg(model)->head == NLP_HEAD_SPAN) task_kind = NLP_FT_SPAN; /* a HF BertForQuestionAnswering */
    if (task_kind == NLP_FT_CHOICE || task_kind == NLP_FT_SPAN) return; /* no label names */
    /* the model's labels, for reading labelled files against them */
    char name[4096];
    for (int k = 0; k < nlp_model_cfg(model)->num_labels; k++) {
        nlp_model_label(model, k, name, sizeof name);
        if (nlp_cls_labels_add(&labels, name, strlen(name), NULL)) cli_fail(NLP_ENOMEM);
    }
    if (nlp_cls_labels_count(&labels) != nlp_model_cfg(model)->num_labels)
        cli_die(NLP_EXIT_FORMAT, "'%s': its label names are not distinct", path);
}

/* Inputs of the kind the model was fine-tuned on: a model of single texts
 * given pairs would read a labelled file ('label<TAB>text') given to
 * predict as a pair and answer as if it made sense. */
static void check_texts(nlp_cls_data *d, const char *file, int eval)
{
    const int want = nlp_model_input_texts(model), got = d->pair ? 2 : 1;
    if (!want || !d->n || want == got) return;
    const int pair = d->pair;
    nlp_cls_data_free(d); /* freed before the exit (LeakSanitizer) */
    const char *fields = eval ? (pair ? "'label<TAB>text_a<TAB>text_b'" : "'label<TAB>text'")
                              : (pair ? "'text_a<TAB>text_b'" : "'text'");
    if (want == 1 && !eval)
        cli_die(NLP_EXIT_FAILURE, "'%s' has lines of two fields (%s), but '%s' was fine-tuned on single texts: is it a "
                "labelled file? 'finetune eval' scores one; predict reads a text a line", file, fields, o.model);
    cli_die(NLP_EXIT_FAILURE, "'%s' has lines of %s, but '%s' was fine-tuned on %s", file, fields, o.model,
            want == 2 ? (eval ? "'label<TAB>text_a<TAB>text_b' pairs" : "pairs ('text_a<TAB>text_b')")
                      : (eval ? "single texts ('label<TAB>text')" : "single texts"));
}

/* Writes out (a batch's lines) to standard output, flushed: each answer as
 * soon as its batch is done. */
static void put_out(nlp_buf *out)
{
    if (out->len && fwrite(out->data, 1, out->len, stdout) != out->len)
        cli_die(NLP_EXIT_FAILURE, "cannot write the output: %s", strerror(errno));
    if (fflush(stdout) != 0) cli_die(NLP_EXIT_FAILURE, "cannot write the output: %s", strerror(errno));
    nlp_buf_reset(out);
}

/* One batch of examples read from `name` (lines line0 + 1 ...): predict
 * appends its answer lines to out; eval adds to the confusion matrix cm
 * and the summed loss. */
static void predict_batch(const nlp_cls_data *d, const nlp_cls_encoder *enc, int eval, int L, uint64_t *cm,
                          double *loss_sum, nlp_buf *out)
{
    int32_t *pred = nlp_calloc(d->n ? d->n : 1, sizeof *pred);
    float *prob = nlp_calloc(d->n ? d->n : 1, sizeof *prob);
    float *probs = o.all ? nlp_calloc((d->n ? d->n : 1) * (size_t)L, sizeof *probs) : NULL;
    if (!pred || !prob || (o.all && !probs)) cli_fail(NLP_ENOMEM);
    double loss = NAN;
    int rc = nlp_cls_predict(model, enc, d, (int)o.batch_size, pred, prob, probs, cm, eval ? &loss : NULL);
    if (rc) cli_fail(rc);
    for (size_t i = 0; i < d->n; i++)
        if (isnan(prob[i]))
            cli_die(NLP_EXIT_FAILURE, "the model's scores are not finite (NaN): are its weights corrupt?");
    if (eval) *loss_sum += loss * (double)d->n;
    char name[4096];
    for (size_t i = 0; !eval && i < d->n; i++) {
        nlp_model_label(model, pred[i], name, sizeof name);
        if (nlp_buf_printf(out, "%s\t%.6f", name, prob[i])) cli_fail(NLP_ENOMEM);
        for (int k = 0; probs && k < L; k++) {
            nlp_model_label(model, k, name, sizeof name);
            if (nlp_buf_printf(out, "\t%s:%.6f", name, probs[i * (size_t)L + k])) cli_fail(NLP_ENOMEM);
        }
        if (nlp_buf_putc(out, '\n')) cli_fail(NLP_ENOMEM);
    }
    free(pred), free(prob), free(probs);
}

/* eval's report of one file: n examples, their confusion matrix and mean loss. */
static void eval_report(const char *file, uint64_t n, const uint64_t *cm, int L, double loss, nlp_buf *out)
{
    char name[4096];
    int rc;
    if (o.json) {
        const char **names = nlp_calloc((size_t)L, sizeof *names);
        char (*store)[256] = nlp_calloc((size_t)L, sizeof *store);
        if (!names || !store) cli_fail(NLP_ENOMEM);
        for (int k = 0; k < L; k++) nlp_model_label(model, k, store[k], sizeof store[k]), names[k] = store[k];
        nlp_buf j = {0};
        if ((rc = nlp_classify_json(cm, L, names, &j))) cli_fail(rc);
        if (nlp_buf_printf(out, "%s\n", j.data)) cli_fail(NLP_ENOMEM);
        nlp_buf_free(&j);
        free(names), free(store);
        return;
    }
    int used;
    double f1 = nlp_classify_macro_f1(cm, L, &used);
    if (nlp_buf_printf(out, "%s: %llu examples, accuracy %.4f, macro-F1 %.4f, loss %.4f\n", file,
                       (unsigned long long)n, nlp_classify_accuracy(cm, L), f1, loss))
        cli_fail(NLP_ENOMEM);
    if (nlp_buf_printf(out, "%-24s %9s %9s %9s %9s\n", "label", "precision", "recall", "f1", "support"))
        cli_fail(NLP_ENOMEM);
    for (int k = 0; k < L; k++) {
        nlp_label_stats st;
        nlp_classify_label(cm, L, k, &st);
        nlp_model_label(model, k, name, sizeof name);
        if (nlp_buf_printf(out, "%-24s %9.4f %9.4f %9.4f %9llu\n", name, st.precision, st.recall, st.f1,
                           (unsigned long long)st.support))
            cli_fail(NLP_ENOMEM);
    }
}

/* One batch of classification lines: parsed (lines line0 + 1 ... of file),
 * predicted into out (predict) or added to sum (eval). */
static void cls_lines(const char **ptr, const size_t *len, size_t nb, const char *file, uint64_t line0, int eval,
                      const nlp_cls_encoder *enc, int threads, int L, file_sum *sum, nlp_buf *out)
{
    nlp_cls_read_opts ro = {.tk = tok, .labelled = eval, .labels = &labels, .labels_from = o.model, .threads = threads};
    if (task_kind == NLP_FT_SIMILARITY) ro.texts = 2;
    nlp_cls_data d;
    int rc = nlp_cls_parse(&d, ptr, len, nb, file, line0, &sum->fields, &ro);
    if (rc) cli_fail(rc);
    check_texts(&d, file, eval);
    predict_batch(&d, enc, eval, L, sum->cm, &sum->loss_sum, out);
    sum->repaired += d.repaired;
    sum->examples += d.n;
    nlp_cls_data_free(&d);
}

/* The same for multiple choice: 'index<TAB>probability' lines (--all: every
 * choice's 'i:p' after them), or the right choices counted. */
static void choice_lines(const char **ptr, const size_t *len, size_t nb, const char *file, uint64_t line0, int eval,
                         const nlp_cls_encoder *enc, int threads, file_sum *sum, nlp_buf *out)
{
    const int k = nlp_model_input_texts(model) - 1;
    nlp_choice_read_opts ro = {.tk = tok, .labelled = eval, .threads = threads};
    /* a line of the wrong number of fields: a labelled file given to
     * predict, or examples of another number of choices than trained */
    for (size_t i = 0; i < nb; i++) {
        int f = 1;
        for (size_t j = 0; j < len[i]; j++) f += ptr[i][j] == '\t';
        if (len[i] && f != k + 1 + eval)
            cli_die(NLP_EXIT_FAILURE, "'%s' line %llu has %d fields, but '%s' was fine-tuned on %d choices: it reads %s "
                    "lines%s", file, (unsigned long long)(line0 + i + 1), f, o.model, k,
                    eval ? "'label<TAB>context<TAB>choice_0...'" : "'context<TAB>choice_0...'",
                    !eval && f == k + 2 ? " (is it a labelled file? 'finetune eval' scores one)" : "");
    }
    nlp_choice_data d;
    int rc = nlp_choice_parse(&d, ptr, len, nb, file, line0, &sum->fields, &ro);
    if (rc) cli_fail(rc);
    int32_t *pred = nlp_calloc(d.n ? d.n : 1, sizeof *pred);
    float *prob = nlp_calloc(d.n ? d.n : 1, sizeof *prob);
    float *probs = o.all ? nlp_calloc((d.n ? d.n : 1) * (size_t)k, sizeof *probs) : NULL;
    if (!pred || !prob || (o.all && !probs)) cli_fail(NLP_ENOMEM);
    uint64_t ok = 0;
    double loss = NAN;
    if ((rc = nlp_choice_predict(model, enc, &d, (int)o.batch_size, pred, prob, probs, eval ? &ok : NULL,
                                 eval ? &loss : NULL)))
        cli_fail(rc);
    for (size_t i = 0; i < d.n; i++)
        if (isnan(prob[i])) cli_die(NLP_EXIT_FAILURE, "the model's scores are not finite (NaN): are its weights corrupt?");
    for (size_t i = 0; !eval && i < d.n; i++) {
        if (nlp_buf_printf(out, "%d\t%.6f", (int)pred[i], prob[i])) cli_fail(NLP_ENOMEM);
        for (int c = 0; probs && c < k; c++)
            if (nlp_buf_printf(out, "\t%d:%.6f", c, probs[i * (size_t)k + (size_t)c])) cli_fail(NLP_ENOMEM);
        if (nlp_buf_putc(out, '\n')) cli_fail(NLP_ENOMEM);
    }
    if (eval) sum->correct += ok, sum->loss_sum += loss * (double)d.n;
    sum->repaired += d.repaired;
    sum->examples += d.n;
    free(pred), free(prob), free(probs);
    nlp_choice_data_free(&d);
}

/* eval's report of a file of multiple-choice examples. */
static void choice_report(const char *file, const file_sum *sum, nlp_buf *out)
{
    const double acc = (double)sum->correct / (double)sum->examples, loss = sum->loss_sum / (double)sum->examples;
    int rc = o.json ? nlp_buf_printf(out, "{\"examples\": %llu, \"choices\": %d, \"accuracy\": %.6f, \"loss\": %.6f}\n",
                                     (unsigned long long)sum->examples, nlp_model_input_texts(model) - 1, acc, loss)
                    : nlp_buf_printf(out, "%s: %llu examples of %d choices, accuracy %.4f, loss %.4f\n", file,
                                     (unsigned long long)sum->examples, nlp_model_input_texts(model) - 1, acc, loss);
    if (rc) cli_fail(NLP_ENOMEM);
}

/* Question answering: each FILE (SQuAD JSON, or question<TAB>passage
 * lines for predict) read whole, its questions answered; predict writes
 * {"id": "answer", ...}, eval the exact match and F1. */
static void span_files(const char *const *files, int nfiles, int eval, int threads)
{
    nlp_span_layout l = span_layout(model, default_length(model));
    nlp_buf out = {0};
    for (int f = 0; f < nfiles; f++) {
        const char *name = strcmp(files[f], "-") ? files[f] : "standard input";
        nlp_span_read_opts ro = {.tk = tok, .labelled = eval, .threads = threads, .max_line = (size_t)o.max_line_bytes};
        nlp_span_data d;
        nlp_span_windows w;
        int rc = nlp_span_read(&d, files[f], &ro);
        if (rc == NLP_EINVAL) cli_die(NLP_EXIT_FORMAT, "'%s': %s", tk_name, nlp_errmsg());
        if (rc) cli_fail(rc);
        if (eval && !d.n) cli_die(NLP_EXIT_FAILURE, "'%s' holds no questions: nothing to evaluate", name);
        if ((rc = nlp_span_windows_make(&w, &d, &l))) cli_fail(rc);
        nlp_span_answer *ans = nlp_malloc((d.n ? d.n : 1) * sizeof *ans);
        if (!ans) cli_fail(NLP_ENOMEM);
        double loss = NAN;
        if ((rc = nlp_span_predict(model, &l, &d, &w, (int)o.batch_size, ans, eval ? &loss : NULL))) cli_fail(rc);
        for (size_t q = 0; q < d.n; q++)
            if (isnan(ans[q].score)) cli_die(NLP_EXIT_FAILURE, "the model's scores are not finite (NaN): are its weights corrupt?");
        if (eval) {
            double em, f1;
            if ((rc = nlp_span_score(&d, ans, nlp_squad_score_max, &em, &f1))) cli_fail(rc);
            rc = o.json ? nlp_buf_printf(&out, "{\"questions\": %zu, \"windows\": %zu, \"exact_match\": %.17g, \"f1\": "
                                         "%.17g, \"loss\": %.6f}\n", d.n, w.n, em, f1, loss)
                        : nlp_buf_printf(&out, "%s: %zu questions (%zu windows), exact match %.2f, F1 %.2f, loss %.4f\n",
                                         files[f], d.n, w.n, em, f1, loss);
            if (rc) cli_fail(NLP_ENOMEM);
        } else { /* {"id": "answer"}: the passage's own bytes */
            json_t *obj = json_object();
            for (size_t q = 0; obj && q < d.n; q++) {
                const char *p = d.text + d.ptext[d.passage[q]] + ans[q].beg;
                json_t *v = json_stringn(p, ans[q].end - ans[q].beg);
                if (!v || json_object_set_new(obj, d.str + d.qid[q], v)) obj = (json_decref(obj), NULL);
            }
            char *js = obj ? json_dumps(obj, JSON_PRESERVE_ORDER) : NULL;
            if (!js || nlp_buf_printf(&out, "%s\n", js)) cli_fail(NLP_ENOMEM);
            free(js);
            json_decref(obj);
        }
        free(ans);
        nlp_span_windows_free(&w);
        nlp_span_data_free(&d);
        put_out(&out);
    }
    nlp_buf_free(&out);
}

/* The training options (given as flags, they mean nothing to predict and eval). */
static const char *const training_only[] = {"init", "from-scratch", "task", "valid", "labels", "resume", "log", "dry-run",
                                            "epochs", "lr", "warmup", "schedule", "weight-decay", "grad-clip",
                                            "dropout", "lm-weight", "seed", "save-every", "keep", "force", NULL};

/* A span model's --doc-stride, --max-query-length and --max-answer-length,
 * unless given (as flags or in -c): those its training run recorded in the
 * run.yaml beside the model (a checkpoint's, or its directory's), so
 * predict and eval cut and answer as validation did. */
static void span_settings_from_run(void)
{
    char yaml[4400];
    if (nlp_is_dir(model_path)) snprintf(yaml, sizeof yaml, "%s/run.yaml", model_path);
    else {
        const char *slash = strrchr(model_path, '/');
        snprintf(yaml, sizeof yaml, "%.*s/run.yaml", slash ? (int)(slash - model_path) : 1, slash ? model_path : ".");
    }
    if (!nlp_file_exists(yaml)) return;
    nlp_config c;
    int rc = nlp_config_load(&c, yaml);
    if (rc) {
        cli_warn("%s (its span settings not used)", nlp_errmsg());
        nlp_config_free(&c);
        return;
    }
    static const char *const keys[] = {"doc-stride", "max-query-length", "max-answer-length"};
    long *dest[] = {&o.doc_stride, &o.max_query, &o.max_answer};
    for (int k = 0; k < 3; k++) {
        const nlp_config_entry *e = nlp_config_get(&c, keys[k]);
        long v;
        if (!e || cli_given(keys[k])) continue;
        if (!e->value || cli_parse_long(e->value, &v) || v < 1 || v > 1 << 20)
            cli_die(NLP_EXIT_FORMAT, "'%s' line %d: %s: '%s' is not a count of tokens", yaml, e->line, keys[k],
                    e->value ? e->value : "~");
        *dest[k] = v;
    }
    nlp_config_free(&c);
}

static int predict_main(int argc, char **argv, int eval)
{
    struct cli c = {"finetune", usage, opts, NULL};
    int first = cli_parse(&c, argc, argv);
    first++; /* the subcommand */
    for (int k = 0; training_only[k]; k++)
        if (cli_given(training_only[k]) == 2)
            cli_usage_error("--%s: the training options are for training, not %s", training_only[k],
                            eval ? "eval" : "predict");
    if (o.init || o.valid || o.labels || o.resume || o.log || o.from_scratch || o.dry_run)
        cli_usage_error("--init, --from-scratch, --valid, --labels, --resume, --log and --dry-run are for training");
    if (eval && o.all) cli_usage_error("--all is for predict");
    if (!eval && o.json) cli_usage_error("--json is for eval");
    if (eval && first >= argc) cli_usage_error("eval needs a labelled FILE");
    if (nlp_dist_size() > 1) cli_usage_error("%s runs in one process: mpirun is for training", eval ? "eval" : "predict");
    int threads = nlp_threads_set((int)o.threads);
    if (o.bf16 && nlp_gemm_set_mode(NLP_GEMM_BF16)) cli_usage_error("--bf16: %s", nlp_errmsg());
    load_classifier();
    const int L = nlp_model_cfg(model)->num_labels;
    if (o.max_length > nlp_model_cfg(model)->max_positions)
        cli_usage_error("--max-length %ld: the model has %d positions", o.max_length, nlp_model_cfg(model)->max_positions);
    if (task_kind != NLP_FT_SPAN && (cli_given("doc-stride") == 2 || cli_given("max-answer-length") == 2 ||
                                      cli_given("max-query-length") == 2))
        cli_usage_error("--doc-stride, --max-answer-length and --max-query-length are for question answering (a span model)");
    if (task_kind == NLP_FT_SPAN) {
        if (o.all) cli_usage_error("--all is for classifiers and multiple choice: a span model answers with its best span");
        span_settings_from_run();
        const char *stdin_only[] = {"-"};
        span_files(first < argc ? (const char *const *)argv + first : stdin_only, first < argc ? argc - first : 1, eval,
                   threads);
        return 0;
    }
    nlp_cls_encoder enc = encoder_for(model, default_length(model));
    const char *stdin_only[] = {"-"};
    const char *const *files = first < argc ? (const char *const *)argv + first : stdin_only;
    const int nfiles = first < argc ? argc - first : 1;
    /* static: still reachable when bad input exits mid-stream (cli_die) */
    static nlp_buf out, held;
    static const char **ptr;
    static size_t *len, *at;
    static uint64_t *cm;
    ptr = nlp_malloc((size_t)o.batch_size * sizeof *ptr);
    len = nlp_malloc((size_t)o.batch_size * sizeof *len), at = nlp_malloc((size_t)o.batch_size * sizeof *at);
    cm = eval && task_kind != NLP_FT_CHOICE ? nlp_calloc((size_t)L * L, sizeof *cm) : NULL;
    if (!ptr || !len || !at || (eval && task_kind != NLP_FT_CHOICE && !cm)) cli_fail(NLP_ENOMEM);
    for (int f = 0; f < nfiles; f++) {
        /* streamed: lines gathered while more are waiting (up to -B), each
         * batch answered and flushed before the next is read, so a line
         * typed or piped in is answered at once and the memory is that of
         * a batch, whatever the input */
        lines_in r;
        lines_open(&r, files[f], (size_t)o.max_line_bytes);
        file_sum sum = {.cm = cm};
        uint64_t line0 = 0;
        size_t nb = 0;
        if (cm) memset(cm, 0, (size_t)L * L * sizeof *cm);
        nlp_buf_reset(&held);
        for (;;) {
            const char *line;
            size_t n;
            int got = lines_next(&r, nb == 0, &line, &n);
            if (got) {
                if (n && line[n - 1] == '\r') n--;
                at[nb] = held.len, len[nb] = n;
                if (nlp_buf_append(&held, line, n)) cli_fail(NLP_ENOMEM);
                nb++;
            }
            if ((!got || nb == (size_t)o.batch_size) && nb) {
                for (size_t i = 0; i < nb; i++) ptr[i] = held.data + at[i];
                if (task_kind == NLP_FT_CHOICE) choice_lines(ptr, len, nb, files[f], line0, eval, &enc, threads, &sum, &out);
                else cls_lines(ptr, len, nb, files[f], line0, eval, &enc, threads, L, &sum, &out);
                line0 += nb;
                nb = 0;
                nlp_buf_reset(&held);
                if (!eval) put_out(&out);
            }
            if (!got && lines_done(&r)) break;
        }
        lines_close(&r);
        if (sum.repaired)
            cli_warn("'%s': %llu fields of invalid UTF-8 repaired (U+FFFD)", files[f], (unsigned long long)sum.repaired);
        if (eval && !sum.examples)
            cli_die(NLP_EXIT_FAILURE, "'%s' holds no examples: nothing to evaluate",
                    strcmp(files[f], "-") ? files[f] : "standard input");
        if (eval && task_kind == NLP_FT_CHOICE) choice_report(files[f], &sum, &out);
        else if (eval) eval_report(files[f], sum.examples, cm, L, sum.loss_sum / (double)sum.examples, &out);
    }
    put_out(&out);
    nlp_buf_free(&out), nlp_buf_free(&held);
    free(ptr), free(len), free(at), free(cm);
    return 0;
}

int main(int argc, char **argv)
{
    nlp_threads_passive(argc, argv);
    cli_dist_start(&argc, &argv);
    o.progress = isatty(2) && nlp_dist_size() == 1;
    /* the subcommand, when there is one, comes first (as git's) */
    const char *sub = argc > 1 && (!strcmp(argv[1], "predict") || !strcmp(argv[1], "eval") || !strcmp(argv[1], "train"))
                          ? argv[1]
                          : NULL;
    int status;
    if (sub && strcmp(sub, "train") != 0) status = predict_main(argc, argv, !strcmp(sub, "eval"));
    else status = train_main(argc, argv, sub != NULL);
    nlp_cls_data_free(&dtrain);
    nlp_cls_data_free(&dvalid);
    nlp_choice_data_free(&chtrain);
    nlp_choice_data_free(&chvalid);
    nlp_span_data_free(&sptrain);
    nlp_span_data_free(&spvalid);
    nlp_cls_labels_free(&labels);
    nlp_model_free(model);
    nlp_tokenizer_free(tok);
    free(resume_argv);
    cli_free();
    nlp_dist_finalize();
    return status;
}
