/*
 * pretrain — train a model from scratch (or continue one): GPT as a causal
 * language model on token streams or text; BERT; the encoder-decoder on
 * parallel text (translation) or on monolingual text by T5's span
 * corruption or BART's denoising (--objective).
 *
 * Thin: the data (lib/train/data, lib/train/mt, lib/train/bert's documents
 * and lib/train/denoise's pairs), the tasks (lib/train/lm, lib/train/bert,
 * lib/train/mt) and the loop with its checkpoints (lib/train/loop) are the
 * library's; validation BLEU joins lib/decode and lib/eval through the MT
 * task's hook. This file turns options into them and prints progress.
 */
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "common/cli.h"
#include "common/modelio.h"
#include "common/run.h"
#include "decode/translate.h"
#include "eval/bleu.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/model.h"
#include "nn/gemm.h"
#include "text/utf8.h"
#include "tok/tokfiles.h"
#include "train/data.h"
#include "common/dist.h"
#include "train/bert.h"
#include "train/denoise.h"
#include "train/lm.h"
#include "train/loop.h"
#include "train/mt.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "Usage: pretrain [OPTION]... [FILE]...\n"
    "Train a model: GPT (or the LLaMA block: --arch llama) as a causal language model\n"
    "on unlabelled text, BERT by masked language modelling and next-sentence\n"
    "prediction (--arch bert), or the encoder-decoder (--arch transformer) on\n"
    "parallel text, or on unlabelled text by T5's span corruption or BART's\n"
    "denoising (--objective).\n"
    "GPT: FILEs (and --train) are token streams from 'tokenize --output-format bin' or,\n"
    "with --tokenizer, text with one document per line; '-' is standard input.\n"
    "BERT: FILEs are text (one paragraph or document per line, or documents of\n"
    "several lines between blank lines) or token streams, with a WordPiece --tokenizer.\n"
    "Transformer: --src and --tgt, two files aligned line by line, or FILEs (and\n"
    "--train) as TSV 'source<TAB>target' lines; with --objective span or denoise,\n"
    "FILEs are text or token streams as for BERT, with --tokenizer.\n"
    "Token streams are mapped, not read: memory does not grow with the corpus.\n"
    "Text files are tokenized once into a cache in DIR/data (-m), reused while the\n"
    "text and the tokenizer stay the same, and mapped. A pipe ('-' as the only\n"
    "training input) is read through a shuffle buffer (--buffer-tokens).\n"
    "\n"
    "Data:\n"
    "      --train FILE          training data (also: FILE arguments)\n"
    "      --valid FILE          validation data (gpt: loss, perplexity and bits per\n"
    "                            byte; bert: MLM + NSP loss, MLM loss, MLM and NSP\n"
    "                            accuracy; transformer: a TSV like --train; span and\n"
    "                            denoise: text like --train, corrupted once with a\n"
    "                            fixed seed: loss, perplexity and the accuracy of the\n"
    "                            target tokens)\n"
    "      --tokenizer FILE      tokenizer for text input (transformer: shared by both\n"
    "                            sides); copied into every checkpoint\n"
    "      --eot TOKEN           gpt: end-of-text token between documents of text input\n"
    "                            (default: <|endoftext|>, </s>, <eos> or [SEP])\n"
    "      --src FILE, --tgt FILE  transformer: parallel training text\n"
    "      --valid-src FILE, --valid-tgt FILE  transformer: parallel validation text:\n"
    "                            loss, perplexity and BLEU (greedy, detokenized, as\n"
    "                            'bleu' computes it) at every evaluation\n"
    "      --valid-bleu N        translate the first N validation pairs for BLEU\n"
    "                            (default 0: all; -1: no BLEU, loss only)\n"
    "      --prefix TEXT         transformer, translate objective: TEXT goes before every\n"
    "                            source, training and validation (T5's task prefix, such\n"
    "                            as 'translate English to German: ' or 'section: '),\n"
    "                            tokenized with it; recorded with the model, where\n"
    "                            'translate' puts it before each input (--init: the\n"
    "                            model's unless given; '' for none)\n"
    "      --src-tokenizer FILE, --tgt-tokenizer FILE  transformer: a tokenizer per side\n"
    "                            (separate vocabularies) instead of --tokenizer\n"
    "      --no-cache            tokenize text (and build BERT documents and translation\n"
    "                            pairs) in memory instead of a cache in DIR/data\n"
    "      --buffer-tokens N     gpt: the shuffle buffer of a pipe, in tokens (default\n"
    "                            67108864: 256 MiB); windows are drawn from it and it\n"
    "                            is refilled as they are; one pass over a pipe is one\n"
    "                            epoch\n"
    "      --max-line-bytes N    the longest line of text read (default 16777216 =\n"
    "                            16 MiB); a longer one is an error naming the file and line\n"
    "Model:\n"
    "      --arch ARCH           gpt (default), bert, transformer or llama (GPT's\n"
    "                            decoder with LLaMA's block: RMSNorm, SwiGLU, rotary\n"
    "                            positions, grouped-query attention, no biases)\n"
    "      --preset NAME         tiny, small (default), base, big (transformer: the\n"
    "                            paper's), t5-small (transformer: T5's small, relative\n"
    "                            positions, RMSNorm, no biases), gpt2 (124M), gpt2-medium\n"
    "                            (355M), bert-base or smollm-135m (llama)\n"
    "      --init PATH           start from a model: ours, a checkpoint or run directory,\n"
    "                            or a HuggingFace GPT-2, BERT or LLaMA-family directory\n"
    "                            (config.json + model.safetensors or its shards)\n"
    "      --vocab-size N        vocabulary (default: the tokenizer's, else the token\n"
    "                            streams', else the preset's)\n"
    "      --d-model N, --heads N, --d-ff N, --layers N, --max-positions N,\n"
    "      --ln-eps F, --init-std F   sizes and initialisation (default: the preset's)\n"
    "      --encoder-layers N, --decoder-layers N  transformer (--layers sets both)\n"
    "      --norm post|pre|rms   transformer: post-LN (the paper's, default), pre-LN, or\n"
    "                            rms: pre-norm RMSNorm, scale only (T5's)\n"
    "      --bias BOOL           transformer: biases in the linear layers (default true;\n"
    "                            T5: false)\n"
    "      --ffn dense|gated-gelu  transformer: feed-forward fc2(act(fc1 x)) (default) or\n"
    "                            T5 v1.1's fc2(gelu(gate x) * up x) (GELU's tanh form)\n"
    "      --positions P         transformer: sinusoidal (default), learned, rope or\n"
    "                            relative (T5's bucketed relative position bias, learned\n"
    "                            per head, one table per stack: bidirectional in the\n"
    "                            encoder, causal in the decoder; no absolute positions);\n"
    "                            gpt: learned (default) or rope (rotary, RoFormer)\n"
    "      --relative-buckets N  relative positions: buckets of offsets (32)\n"
    "      --relative-max-distance N  relative positions: offsets from N on share the\n"
    "                            last bucket (128)\n"
    "      --rope-theta F        rotary positions: base of the frequencies (10000)\n"
    "      --rope-layout L       rotary pairs: half (x_i, x_i+D/2: HF LLaMA, GPT-NeoX;\n"
    "                            default) or interleaved (x_2i, x_2i+1: RoFormer, GPT-J)\n"
    "      --kv-heads N          gpt, llama: key/value heads (grouped-query attention;\n"
    "                            default: llama presets 2, else --heads)\n"
    "      --tie-output BOOL     transformer, llama: output projection = (target)\n"
    "                            embedding (default true; llama without a preset: false)\n"
    "      --label-smoothing F   transformer: epsilon_ls (default: the preset's, 0.1)\n"
    "      --dropout F           dropout on embeddings and residual branches (default 0.1;\n"
    "                            llama 0)\n"
    "      --attention-dropout F dropout on attention probabilities (default 0.1;\n"
    "                            transformer presets and llama 0)\n"
    "Objective (transformer):\n"
    "      --objective OBJ       translate (default: parallel text), span (T5's span\n"
    "                            corruption) or denoise (BART's text infilling and\n"
    "                            sentence permutation) on unlabelled text; the\n"
    "                            corruptions are drawn afresh each epoch from --seed\n"
    "      --noise-density F     span: share of the tokens corrupted, in (0, 1)\n"
    "                            (default 0.15)\n"
    "      --mean-span F         span: mean length of a corrupted span (default 3)\n"
    "      --sentinels N         span: sentinel tokens <extra_id_0> ... <extra_id_N-1>,\n"
    "                            one per span, added to the tokenizer and the model\n"
    "                            when missing (default 100)\n"
    "      --poisson-lambda F    denoise: mean length of a masked span, in (0, 100]\n"
    "                            (default 3)\n"
    "      --mask-ratio F        denoise: share of the tokens masked, in [0, 1]\n"
    "                            (default 0.3); each span becomes one <mask>, added\n"
    "                            to the tokenizer and the model when missing\n"
    "      --permute-sentences, --no-permute-sentences  denoise: shuffle each text's\n"
    "                            sentences (default) or keep their order\n"
    "      --show-examples N     span, denoise: print N corrupted inputs and their\n"
    "                            targets as text on standard output and exit, training\n"
    "                            nothing and writing no run directory\n"
    "Batches (default auto: the architecture's, as below):\n"
    "      --max-length N        gpt: tokens per training window (default:\n"
    "                            --max-positions); bert: tokens per example, [CLS] A\n"
    "                            [SEP] B [SEP] (default 128, or the model's positions if\n"
    "                            fewer); transformer: longest sentence kept, per side\n"
    "                            with its end-of-sentence token (default 128, or the\n"
    "                            model's positions if fewer; longer pairs are dropped\n"
    "                            and counted; span, denoise: longer texts are cut,\n"
    "                            at sentence ends where they can be, so that input\n"
    "                            and target fit)\n"
    "  -B, --batch-size N        gpt: windows per micro-batch (default 8); bert:\n"
    "                            examples per micro-batch (default 32)\n"
    "      --batch-tokens N      gpt: tokens per optimizer step, reached by gradient\n"
    "                            accumulation over micro-batches (default: one\n"
    "                            micro-batch); transformer: a batch's size, sentences x\n"
    "                            the longer padded side (default 4500); pairs are\n"
    "                            bucketed by length and the batches shuffled per epoch\n"
    "Optimisation (default auto: the architecture's, given as gpt / bert / transformer):\n"
    "      --steps N             optimizer steps (default 0: until --max-time)\n"
    "      --max-time MIN        train MIN minutes (evaluation not counted); with\n"
    "                            --steps 0 the decay of cosine and linear follows the\n"
    "                            clock, reaching --min-lr at the end of the budget\n"
    "      --lr F                peak learning rate; noam: the scale factor\n"
    "                            (6e-4 / 1e-4 / 1)\n"
    "      --min-lr F            final learning rate of cosine and linear (default -1:\n"
    "                            --lr / 10)\n"
    "      --warmup N            linear warm-up steps (200 / 200 / 4000)\n"
    "      --schedule S          cosine, linear or constant after warm-up; noam (the\n"
    "                            paper's: lr x d^-0.5 x min(s^-0.5, s x warmup^-1.5)), or\n"
    "                            inverse-sqrt (warm-up to --lr, then x sqrt(warmup/s))\n"
    "                            (cosine / linear / noam)\n"
    "      --weight-decay F      AdamW decoupled weight decay, not on biases and\n"
    "                            LayerNorm (0.1 / 0.01 / 0: Adam)\n"
    "      --beta1 F, --beta2 F, --eps F   Adam (0.9, 0.95, 1e-8 / 0.9, 0.999, 1e-6 /\n"
    "                            0.9, 0.98, 1e-9)\n"
    "      --grad-clip F         clip the global gradient norm (1.0 / 0 = off)\n"
    "      --seed N              initialisation, dropout and data order (default 0)\n"
    "      --bf16                matrix products with bfloat16 operands and fp32\n"
    "                            accumulation (needs AVX-512 BF16; weights, gradients\n"
    "                            and Adam stay fp32)\n"
    "Run:\n"
    "  -m, --model DIR           run directory for checkpoints (default 'run'); with\n"
    "                            validation data, DIR/best holds the best model\n"
    "      --eval-every N        validate every N steps (default 500; 0 = at the end only)\n"
    "      --save-every N        checkpoint every N steps (default 1000; 0 = at the end only)\n"
    "      --keep N              keep the newest N checkpoints (default 3; 0 = all)\n"
    "      --average N           at the end, write the average of the newest N\n"
    "                            checkpoints to DIR/average (the paper averaged 5 or 20)\n"
    "      --resume DIR          continue a run (a run directory or a checkpoint): its\n"
    "                            options are read first, flags still win\n"
    "      --force               do what is refused otherwise: write a new run into a\n"
    "                            directory that holds another run or other files, read\n"
    "                            a file given as text that looks like something else\n"
    "                            (compressed, binary, token ids)\n"
    "      --log FILE            write a TSV log: step, tokens, minutes, lr, loss,\n"
    "                            grad_norm, tokens_per_s and the validation figures\n"
    "                            (gpt: valid_loss, valid_ppl, valid_bpb; bert:\n"
    "                            valid_loss, valid_mlm_loss, valid_mlm_acc,\n"
    "                            valid_nsp_acc; transformer: valid_loss, valid_ppl,\n"
    "                            valid_bleu; span, denoise: valid_loss, valid_ppl,\n"
    "                            valid_acc)\n"
    "      --log-every N         a progress line every N steps when not on a terminal\n"
    "                            (default 50)\n"
    "  -t, --threads N           threads (default: all CPUs; under mpirun the rank's\n"
    "                            share); results depend on it\n"
    "      --progress            a live progress line on standard error (default: on a\n"
    "                            terminal)\n"
    "      --no-progress         plain progress lines\n"
    "      --dry-run             print the memory the run will use (parameters,\n"
    "                            gradients, optimizer, activations of a micro-batch,\n"
    "                            data, the total) and what is available, and exit:\n"
    "                            0 when it fits, 1 when not\n"
    "      --no-memory-check     start even when the run does not fit in the memory\n"
    "                            available (default: refuse it, exit 1)\n"
    "  -c, --config FILE         read options from a YAML file (keys = long option names)\n"
    "      --dump-config         print the effective configuration and exit\n"
    "  -q, --quiet               no progress, no warnings\n"
    "  -v, --verbose             more messages\n"
    "  -h, --help                display this help and exit\n"
    "  -V, --version             output version information and exit\n"
    "\n"
    "Memory available is the smallest of MemAvailable (/proc/meminfo), what\n"
    "RLIMIT_AS (ulimit -v) and the cgroup's memory.max leave; the first progress lines\n"
    "state the run's memory beside it.\n"
    "SIGINT and SIGTERM save a checkpoint and exit with status 130 and 143.\n"
    "Exit status: 0 ok, 1 bad input data, I/O error or a non-finite loss, 2 usage error\n"
    "(also: text without a tokenizer), 3 missing, unreadable or incompatible model,\n"
    "checkpoint or tokenizer file, or a missing, unreadable or invalid config file (-c).\n";

static const char *const archs[] = {"gpt", "bert", "transformer", "llama", NULL};
static const char *const objectives[] = {"translate", "span", "denoise", NULL};
enum { OBJ_TRANSLATE = 0, OBJ_SPAN = 1, OBJ_DENOISE = 2 };
#define VALID_SEED 12345 /* the validation texts' corruptions, the same in every run */
static const char *const schedules[] = {"cosine", "linear", "constant", "noam", "inverse-sqrt", NULL};
enum { ARCH_GPT = 0, ARCH_BERT = 1, ARCH_TRANSFORMER = 2, ARCH_LLAMA = 3 }; /* llama: gpt's task and recipe */

/* Model keys: passed to nlp_model_config_resolve as they are. */
static const char *const model_keys[] = {"vocab-size",     "d-model",        "heads",          "d-ff",
                                         "layers",         "max-positions",  "ln-eps",         "init-std",
                                         "dropout",        "attention-dropout", "encoder-layers", "decoder-layers",
                                         "norm",           "positions",      "tie-output",     "label-smoothing",
                                         "kv-heads",       "rope-theta",     "rope-layout",    "relative-buckets",
                                         "relative-max-distance", "bias", "ffn", NULL};
#define NMK 23

static struct {
    const char *train, *valid, *tokenizer, *eot, *preset, *init, *model, *resume, *log;
    const char *src, *tgt, *valid_src, *valid_tgt, *src_tokenizer, *tgt_tokenizer, *prefix;
    const char *mk[NMK];
    int arch, schedule, progress, bf16, dry_run, memory_check, cache, force;
    long buffer_tokens;
    long max_length, batch_size, batch_tokens, steps, warmup, seed, eval_every, save_every, keep, log_every, threads;
    long valid_bleu, average, max_line_bytes;
    double max_time, lr, min_lr, weight_decay, beta1, beta2, eps, grad_clip;
    int objective, permute;
    double noise_density, mean_span, poisson_lambda, mask_ratio;
    long sentinels, show_examples;
} o = {
    .noise_density = 0.15,
    .mean_span = 3,
    .sentinels = 100,
    .poisson_lambda = 3,
    .mask_ratio = 0.3,
    .permute = 1,
    .model = "run",
    .preset = "small",
    .batch_size = -1,
    .batch_tokens = -1,
    .max_length = -1,
    .schedule = -1,
    .warmup = -1,
    .lr = -1,
    .min_lr = -1,
    .weight_decay = -1,
    .beta1 = 0.9,
    .beta2 = -1,
    .eps = -1,
    .grad_clip = -1,
    .eval_every = 500,
    .save_every = 1000,
    .keep = 3,
    .log_every = 50,
    .memory_check = 1,
    .cache = 1,
    .buffer_tokens = (long)NLP_CORPUS_BUFFER_DEFAULT,
    .max_line_bytes = CLI_MAX_LINE_BYTES,
};

/* --schedule: a name, or -1 (the architecture's default) until resolved */
static int set_schedule(const struct cli_opt *opt, const char *arg, void *ctx)
{
    (void)ctx;
    if (!arg || strcmp(arg, "default") == 0) {
        *(int *)opt->dest = -1;
        return 0;
    }
    for (int i = 0; schedules[i]; i++)
        if (strcmp(arg, schedules[i]) == 0) {
            *(int *)opt->dest = i;
            return 0;
        }
    return nlp_error(NLP_EINVAL, "'%s': expected cosine, linear, constant, noam or inverse-sqrt", arg);
}

static const char *show_schedule(const struct cli_opt *opt, void *ctx)
{
    (void)ctx;
    int v = *(int *)opt->dest;
    return v < 0 ? "default" : schedules[v];
}

/* --noise-density and --poisson-lambda: a number in (min, max), or (min,
 * max] for max > 1 */
static int set_open(const struct cli_opt *opt, const char *arg, void *ctx)
{
    (void)ctx;
    double v;
    if (!arg) return nlp_error(NLP_EINVAL, "a value is required");
    if (cli_parse_double(arg, &v)) return NLP_EINVAL;
    const int closed = opt->max > 1;
    if (!(v > opt->min && (closed ? v <= opt->max : v < opt->max)))
        return nlp_error(NLP_EINVAL, "%g is out of range (more than %g, %s %g)", v, opt->min,
                         closed ? "at most" : "less than", opt->max);
    *(double *)opt->dest = v;
    return 0;
}

static const char *show_open(const struct cli_opt *opt, void *ctx)
{
    (void)ctx;
    static char num[2][40];
    char *b = num[opt->max > 1];
    nlp_format_double(b, sizeof num[0], *(double *)opt->dest);
    return b;
}

static struct cli_opt opts[] = {
    {.name = "train", .kind = CLI_STR, .dest = &o.train},
    {.name = "valid", .kind = CLI_STR, .dest = &o.valid},
    {.name = "tokenizer", .kind = CLI_STR, .dest = &o.tokenizer},
    {.name = "eot", .kind = CLI_STR, .dest = &o.eot},
    {.name = "arch", .kind = CLI_CHOICE, .dest = &o.arch, .choices = archs},
    {.name = "preset", .kind = CLI_STR, .dest = &o.preset},
    {.name = "init", .kind = CLI_STR, .dest = &o.init},
    {.name = "vocab-size", .kind = CLI_STR, .dest = &o.mk[0]},
    {.name = "d-model", .kind = CLI_STR, .dest = &o.mk[1]},
    {.name = "heads", .kind = CLI_STR, .dest = &o.mk[2]},
    {.name = "d-ff", .kind = CLI_STR, .dest = &o.mk[3]},
    {.name = "layers", .kind = CLI_STR, .dest = &o.mk[4]},
    {.name = "max-positions", .kind = CLI_STR, .dest = &o.mk[5]},
    {.name = "ln-eps", .kind = CLI_STR, .dest = &o.mk[6]},
    {.name = "init-std", .kind = CLI_STR, .dest = &o.mk[7]},
    {.name = "dropout", .kind = CLI_STR, .dest = &o.mk[8]},
    {.name = "attention-dropout", .kind = CLI_STR, .dest = &o.mk[9]},
    {.name = "encoder-layers", .kind = CLI_STR, .dest = &o.mk[10]},
    {.name = "decoder-layers", .kind = CLI_STR, .dest = &o.mk[11]},
    {.name = "norm", .kind = CLI_STR, .dest = &o.mk[12]},
    {.name = "positions", .kind = CLI_STR, .dest = &o.mk[13]},
    {.name = "tie-output", .kind = CLI_STR, .dest = &o.mk[14]},
    {.name = "label-smoothing", .kind = CLI_STR, .dest = &o.mk[15]},
    {.name = "kv-heads", .kind = CLI_STR, .dest = &o.mk[16]},
    {.name = "rope-theta", .kind = CLI_STR, .dest = &o.mk[17]},
    {.name = "rope-layout", .kind = CLI_STR, .dest = &o.mk[18]},
    {.name = "relative-buckets", .kind = CLI_STR, .dest = &o.mk[19]},
    {.name = "relative-max-distance", .kind = CLI_STR, .dest = &o.mk[20]},
    {.name = "bias", .kind = CLI_STR, .dest = &o.mk[21]},
    {.name = "ffn", .kind = CLI_STR, .dest = &o.mk[22]},
    {.name = "objective", .kind = CLI_CHOICE, .dest = &o.objective, .choices = objectives},
    {.name = "noise-density", .kind = CLI_CALL, .dest = &o.noise_density, .min = 0, .max = 1, .call = set_open,
     .show = show_open},
    {.name = "mean-span", .kind = CLI_DOUBLE, .dest = &o.mean_span, .min = 1, .max = 1e6},
    {.name = "sentinels", .kind = CLI_INT, .dest = &o.sentinels, .min = 2, .max = 100000},
    {.name = "poisson-lambda", .kind = CLI_CALL, .dest = &o.poisson_lambda, .min = 0, .max = 100, .call = set_open,
     .show = show_open},
    {.name = "mask-ratio", .kind = CLI_DOUBLE, .dest = &o.mask_ratio, .min = 0, .max = 1},
    {.name = "permute-sentences", .kind = CLI_BOOL, .dest = &o.permute, .flags = CLI_NEGATABLE},
    {.name = "show-examples", .kind = CLI_INT, .dest = &o.show_examples, .min = 1, .max = 1e9, .flags = CLI_NOCONFIG},
    {.name = "src", .kind = CLI_STR, .dest = &o.src},
    {.name = "tgt", .kind = CLI_STR, .dest = &o.tgt},
    {.name = "valid-src", .kind = CLI_STR, .dest = &o.valid_src},
    {.name = "valid-tgt", .kind = CLI_STR, .dest = &o.valid_tgt},
    {.name = "valid-bleu", .kind = CLI_INT, .dest = &o.valid_bleu, .min = -1, .max = 1e12},
    {.name = "prefix", .kind = CLI_STR, .dest = &o.prefix},
    {.name = "src-tokenizer", .kind = CLI_STR, .dest = &o.src_tokenizer},
    {.name = "tgt-tokenizer", .kind = CLI_STR, .dest = &o.tgt_tokenizer},
    {.name = "max-line-bytes", .kind = CLI_INT, .dest = &o.max_line_bytes, .min = 1, .max = 1e15},
    {.name = "max-length", .kind = CLI_INT, .dest = &o.max_length, .min = 1, .max = 1 << 20, .flags = CLI_AUTO},
    {.name = "batch-size", .key = 'B', .kind = CLI_INT, .dest = &o.batch_size, .min = 1, .max = 1 << 20, .flags = CLI_AUTO},
    {.name = "batch-tokens", .kind = CLI_INT, .dest = &o.batch_tokens, .min = 0, .max = 1e12, .flags = CLI_AUTO},
    {.name = "steps", .kind = CLI_INT, .dest = &o.steps, .min = 0, .max = 1e15},
    {.name = "max-time", .kind = CLI_DOUBLE, .dest = &o.max_time, .min = 0, .max = 1e9},
    {.name = "lr", .kind = CLI_DOUBLE, .dest = &o.lr, .min = 0, .max = 1e3, .flags = CLI_AUTO},
    {.name = "min-lr", .kind = CLI_DOUBLE, .dest = &o.min_lr, .min = -1, .max = 1e3},
    {.name = "warmup", .kind = CLI_INT, .dest = &o.warmup, .min = 0, .max = 1e15, .flags = CLI_AUTO},
    {.name = "schedule", .kind = CLI_CALL, .dest = &o.schedule, .call = set_schedule, .show = show_schedule},
    {.name = "weight-decay", .kind = CLI_DOUBLE, .dest = &o.weight_decay, .min = 0, .max = 1e3, .flags = CLI_AUTO},
    {.name = "beta1", .kind = CLI_DOUBLE, .dest = &o.beta1, .min = 0, .max = 0.999999999},
    {.name = "beta2", .kind = CLI_DOUBLE, .dest = &o.beta2, .min = 0, .max = 0.999999999, .flags = CLI_AUTO},
    {.name = "eps", .kind = CLI_DOUBLE, .dest = &o.eps, .min = 1e-30, .max = 1, .flags = CLI_AUTO},
    {.name = "grad-clip", .kind = CLI_DOUBLE, .dest = &o.grad_clip, .min = 0, .max = 1e30, .flags = CLI_AUTO},
    {.name = "seed", .kind = CLI_INT, .dest = &o.seed, .min = 0, .max = 9.2e18},
    {.name = "bf16", .kind = CLI_BOOL, .dest = &o.bf16, .flags = CLI_NEGATABLE},
    {.name = "model", .key = 'm', .kind = CLI_STR, .dest = &o.model},
    {.name = "eval-every", .kind = CLI_INT, .dest = &o.eval_every, .min = 0, .max = 1e15},
    {.name = "save-every", .kind = CLI_INT, .dest = &o.save_every, .min = 0, .max = 1e15},
    {.name = "keep", .kind = CLI_INT, .dest = &o.keep, .min = 0, .max = 1e9},
    {.name = "average", .kind = CLI_INT, .dest = &o.average, .min = 0, .max = 1e6},
    {.name = "resume", .kind = CLI_STR, .dest = &o.resume, .flags = CLI_NOCONFIG},
    {.name = "force", .kind = CLI_BOOL, .dest = &o.force, .flags = CLI_NOCONFIG},
    {.name = "log", .kind = CLI_STR, .dest = &o.log},
    {.name = "log-every", .kind = CLI_INT, .dest = &o.log_every, .min = 1, .max = 1e15},
    {.name = "threads", .key = 't', .kind = CLI_INT, .dest = &o.threads, .min = 0, .max = 4096},
    {.name = "progress", .kind = CLI_BOOL, .dest = &o.progress, .flags = CLI_NEGATABLE},
    {.name = "dry-run", .kind = CLI_BOOL, .dest = &o.dry_run, .flags = CLI_NOCONFIG},
    {.name = "memory-check", .kind = CLI_BOOL, .dest = &o.memory_check, .flags = CLI_NEGATABLE},
    {.name = "cache", .kind = CLI_BOOL, .dest = &o.cache, .flags = CLI_NEGATABLE},
    {.name = "buffer-tokens", .kind = CLI_INT, .dest = &o.buffer_tokens, .min = 2, .max = 1e12},
    {.name = NULL},
};

/* file scope: reachable at an error exit */
static nlp_model *model;
static nlp_tokenizer *tok;     /* gpt; transformer: the target side's (or shared) */
static nlp_tokenizer *src_tok; /* transformer: the source side's (== tok when shared) */
static nlp_pairs ptrain, pvalid;
static nlp_bert_docs btrain, bvalid;   /* bert; transformer span, denoise */
static nlp_denoise dtrain, dvalid;     /* transformer span, denoise: the pieces and the epoch's pairs */
static int32_t *sentinel_ids;          /* span: <extra_id_0> ... */
static int32_t mask_id = -1;           /* denoise: <mask> */
static nlp_corpus train = NLP_CORPUS_INIT, valid = NLP_CORPUS_INIT;
static nlp_model_config newcfg; /* a new model's configuration */
static int pending_train, pending_valid; /* GPT: text whose cache is still to be made */
static const char **inputs;
static size_t ninputs;
static int live; /* a live progress line is showing */

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

static void report(void *ctx, const nlp_train_event *e)
{
    (void)ctx;
    if (e->kind == NLP_TRAIN_RESUME && e->ranks_before != nlp_dist_size()) /* a warning: even with -q */
        cli_warn("the run was trained on %d process%s until now, it goes on with %d: the same batches, "
                 "summed in another order (results differ in the last bits)", e->ranks_before,
                 e->ranks_before == 1 ? "" : "es", nlp_dist_size());
    if (cli_verbosity < 0) return;
    char eta[32], el[32], tot[32];
    fmt_time(eta, sizeof eta, e->eta);
    fmt_time(el, sizeof el, e->seconds);
    if (e->total) snprintf(tot, sizeof tot, "/%ld", e->total);
    else tot[0] = 0;
    switch (e->kind) {
    case NLP_TRAIN_STEP:
        if (o.progress) {
            fprintf(stderr, "\r\033[Kstep %ld%s  loss %.4f  lr %.3g  |g| %.3f  %.0f tok/s  %s  ETA %s", e->step, tot,
                    e->loss, e->lr, e->grad_norm, e->tokens_per_s, el, eta);
            live = 1;
        } else if (e->step % o.log_every == 0 || e->step == 1)
            fprintf(stderr, "pretrain: step %ld%s loss %.4f lr %.3g grad_norm %.3f tokens/s %.0f elapsed %s eta %s\n",
                    e->step, tot, e->loss, e->lr, e->grad_norm, e->tokens_per_s, el, eta);
        break;
    case NLP_TRAIN_EVAL:
        end_live();
        if (o.arch == ARCH_BERT)
            fprintf(stderr, "pretrain: step %ld valid loss %.4f mlm %.4f mlm_acc %.4f nsp_acc %.4f%s\n", e->step,
                    e->eval->v[0], e->eval->v[1], e->eval->v[2], e->eval->v[3], e->best ? " (best)" : "");
        else if (o.arch == ARCH_TRANSFORMER && o.objective != OBJ_TRANSLATE)
            fprintf(stderr, "pretrain: step %ld valid loss %.4f ppl %.2f acc %.4f%s\n", e->step, e->eval->v[0],
                    e->eval->v[1], e->eval->v[2], e->best ? " (best)" : "");
        else if (o.arch == ARCH_TRANSFORMER && !isnan(e->eval->v[2]))
            fprintf(stderr, "pretrain: step %ld valid loss %.4f ppl %.2f BLEU %.2f%s\n", e->step, e->eval->v[0],
                    e->eval->v[1], e->eval->v[2], e->best ? " (best)" : "");
        else if (isnan(e->eval->v[2]))
            fprintf(stderr, "pretrain: step %ld valid loss %.4f ppl %.2f%s\n", e->step, e->eval->v[0], e->eval->v[1],
                    e->best ? " (best)" : "");
        else
            fprintf(stderr, "pretrain: step %ld valid loss %.4f ppl %.2f bits/byte %.4f%s\n", e->step, e->eval->v[0],
                    e->eval->v[1], e->eval->v[2], e->best ? " (best)" : "");
        break;
    case NLP_TRAIN_SAVE:
        end_live();
        cli_info("step %ld: saved '%s'", e->step, e->path);
        break;
    case NLP_TRAIN_RESUME:
        cli_info("resuming '%s' at step %ld (%llu tokens trained)", e->path, e->step,
                 (unsigned long long)e->tokens);
        if (!o.steps && o.max_time > 0 && e->eta == 0)
            cli_warn("the run has trained %.2f minutes, its --max-time %g is used: nothing to train; give a larger "
                     "--max-time to go on", e->seconds / 60, o.max_time);
        break;
    case NLP_TRAIN_PLAN:
        end_live();
        mio_report_plan(e, o.warmup, o.steps ? 0 : o.max_time);
        break;
    }
    fflush(stderr);
}

// --- checkpoints: the tokenizer and the options go along

static char *run_yaml;
static double min_lr_given; /* -1: --lr / 10, whatever --lr a resumed run gives */

/* Tells a resumed run whether it has its data back (data.h). */
static uint64_t fingerprint(const nlp_corpus *c)
{
    uint64_t h;
    if (nlp_corpus_fingerprint(c, &h)) cli_fail(nlp_errcode());
    return h;
}

/* Over every id up to 2^24 on a side (as before caches were mapped);
 * over the counts and 256 blocks of each side beyond. */
static uint64_t pairs_fingerprint(const nlp_pairs *p)
{
    uint64_t h = 1469598103934665603ull;
    const size_t ns = p->src_off[p->n], nt = p->tgt_off[p->n], big = (size_t)1 << 24, blk = 4096;
    if (ns <= big && nt <= big) {
        for (size_t i = 0; i < ns; i++) h = (h ^ (uint32_t)p->src[i]) * 1099511628211ull;
        for (size_t i = 0; i < nt; i++) h = (h ^ (uint32_t)p->tgt[i]) * 1099511628211ull;
        return h ^ p->n;
    }
    h = (h ^ ns ^ (uint64_t)nt << 32) * 1099511628211ull;
    for (int side = 0; side < 2; side++) {
        const int32_t *v = side ? p->tgt : p->src;
        const size_t n = side ? nt : ns;
        for (size_t j = 0; j < 256 && n >= blk; j++)
            for (size_t i = (n - blk) / 255 * j, e = i + blk; i < e; i++) h = (h ^ (uint32_t)v[i]) * 1099511628211ull;
    }
    if (p->map.data) nlp_mapped_release(&p->map, 0, p->map.len);
    return h ^ p->n;
}

/* Over everything up to 2^24 tokens (as before caches were mapped); over
 * the counts and 256 blocks spread evenly beyond, so that a large mapped
 * cache is not read through. */
static uint64_t docs_fingerprint(const nlp_bert_docs *d)
{
    uint64_t h = 1469598103934665603ull;
    const size_t big = (size_t)1 << 24, blk = 4096;
    if (d->n <= big) {
        for (size_t i = 0; i < d->n; i++) h = (h ^ (uint32_t)d->ids[i]) * 1099511628211ull;
        for (size_t i = 0; i <= d->nsent && d->sent; i++) h = (h ^ d->sent[i]) * 1099511628211ull;
    } else {
        h = (h ^ d->n ^ (uint64_t)d->nsent << 32) * 1099511628211ull;
        for (size_t j = 0; j < 256; j++) {
            size_t at = (d->n - blk) / 255 * j, s = (d->nsent - 1) / 255 * j;
            for (size_t i = at; i < at + blk; i++) h = (h ^ (uint32_t)d->ids[i]) * 1099511628211ull;
            h = (h ^ d->sent[s]) * 1099511628211ull;
        }
        nlp_bert_docs_release(d);
    }
    return h ^ d->ndoc;
}

static int save_extra(void *ctx, const char *dir)
{
    (void)ctx;
    char p[4200];
    int rc;
    if (tok) {
        snprintf(p, sizeof p, "%s/tokenizer.json", dir);
        if ((rc = nlp_tokfiles_write(nlp_tokenizer_spec(tok), NLP_TOKF_JSON, p))) return rc;
    }
    if (src_tok && src_tok != tok) {
        snprintf(p, sizeof p, "%s/src-tokenizer.json", dir);
        if ((rc = nlp_tokfiles_write(nlp_tokenizer_spec(src_tok), NLP_TOKF_JSON, p))) return rc;
    }
    snprintf(p, sizeof p, "%s/run.yaml", dir);
    return nlp_write_file(p, run_yaml, strlen(run_yaml));
}

static void yaml_kv(nlp_buf *b, const char *k, const char *v)
{
    if (!v) return;
    if (nlp_buf_printf(b, "%s: ", k) || nlp_yaml_scalar(b, v) || nlp_buf_putc(b, '\n')) cli_fail(NLP_ENOMEM);
}

/* Paths go into run.yaml absolute, so a run resumes from any directory. */
static void yaml_path(nlp_buf *b, const char *k, const char *v)
{
    if (!v || strcmp(v, "-") == 0) return;
    char cwd[4096], abs[8200];
    if (v[0] != '/' && getcwd(cwd, sizeof cwd)) {
        snprintf(abs, sizeof abs, "%s/%s", cwd, v);
        v = abs;
    }
    yaml_kv(b, k, v);
}

static void yaml_int(nlp_buf *b, const char *k, long v)
{
    if (nlp_buf_printf(b, "%s: %ld\n", k, v)) cli_fail(NLP_ENOMEM);
}

static void yaml_num(nlp_buf *b, const char *k, double v)
{
    char num[40];
    nlp_format_double(num, sizeof num, v);
    if (nlp_buf_printf(b, "%s: %s\n", k, num)) cli_fail(NLP_ENOMEM);
}

/* The options a resumed run needs to continue the same way (the model's
 * own configuration travels in model.safetensors). */
static char *make_run_yaml(const nlp_model_config *mc)
{
    nlp_buf b = {0};
    if (nlp_buf_puts(&b, "# pretrain options of this run: 'pretrain --resume DIR' reads them first\n"))
        cli_fail(NLP_ENOMEM);
    yaml_kv(&b, "arch", archs[o.arch]);
    yaml_path(&b, "model", o.model);
    yaml_path(&b, "train", ninputs == 1 ? inputs[0] : NULL);
    yaml_path(&b, "valid", o.valid);
    yaml_path(&b, "src", o.src);
    yaml_path(&b, "tgt", o.tgt);
    yaml_path(&b, "valid-src", o.valid_src);
    yaml_path(&b, "valid-tgt", o.valid_tgt);
    if (o.arch == ARCH_TRANSFORMER && o.objective == OBJ_TRANSLATE) yaml_int(&b, "valid-bleu", o.valid_bleu);
    if (o.objective != OBJ_TRANSLATE) yaml_kv(&b, "objective", objectives[o.objective]);
    if (o.prefix && *o.prefix) yaml_kv(&b, "prefix", o.prefix);
    if (o.objective == OBJ_SPAN) {
        yaml_num(&b, "noise-density", o.noise_density);
        yaml_num(&b, "mean-span", o.mean_span);
        yaml_int(&b, "sentinels", o.sentinels);
    } else if (o.objective == OBJ_DENOISE) {
        yaml_num(&b, "poisson-lambda", o.poisson_lambda);
        yaml_num(&b, "mask-ratio", o.mask_ratio);
        yaml_kv(&b, "permute-sentences", o.permute ? "true" : "false");
    }
    yaml_kv(&b, "eot", o.eot);
    yaml_int(&b, "max-length", o.max_length);
    yaml_int(&b, "batch-size", o.batch_size);
    yaml_int(&b, "batch-tokens", o.batch_tokens);
    yaml_int(&b, "steps", o.steps);
    yaml_num(&b, "max-time", o.max_time);
    yaml_num(&b, "lr", o.lr);
    yaml_num(&b, "min-lr", min_lr_given);
    yaml_int(&b, "warmup", o.warmup);
    yaml_kv(&b, "schedule", schedules[o.schedule]);
    yaml_num(&b, "weight-decay", o.weight_decay);
    yaml_num(&b, "beta1", o.beta1);
    yaml_num(&b, "beta2", o.beta2);
    yaml_num(&b, "eps", o.eps);
    yaml_num(&b, "grad-clip", o.grad_clip);
    yaml_int(&b, "seed", o.seed);
    yaml_kv(&b, "bf16", o.bf16 ? "true" : "false");
    yaml_int(&b, "eval-every", o.eval_every);
    yaml_int(&b, "save-every", o.save_every);
    yaml_int(&b, "keep", o.keep);
    yaml_int(&b, "average", o.average);
    if (!o.cache) yaml_kv(&b, "cache", "false");
    if (o.buffer_tokens != (long)NLP_CORPUS_BUFFER_DEFAULT) yaml_int(&b, "buffer-tokens", o.buffer_tokens);
    yaml_path(&b, "log", o.log);
    yaml_int(&b, "log-every", o.log_every);
    char num[40];
    nlp_format_double(num, sizeof num, mc->dropout);
    yaml_kv(&b, "dropout", num);
    nlp_format_double(num, sizeof num, mc->attention_dropout);
    yaml_kv(&b, "attention-dropout", num);
    if (o.arch == ARCH_TRANSFORMER && o.objective != OBJ_TRANSLATE) {
        if (nlp_buf_printf(&b, "# data: %zu documents, %zu training tokens, fingerprint %016llx\n", btrain.ndoc,
                           btrain.n, (unsigned long long)docs_fingerprint(&btrain)))
            cli_fail(NLP_ENOMEM);
    } else if (o.arch == ARCH_TRANSFORMER) {
        if (nlp_buf_printf(&b, "# data: %zu training pairs, fingerprint %016llx\n", ptrain.n,
                           (unsigned long long)pairs_fingerprint(&ptrain)))
            cli_fail(NLP_ENOMEM);
    } else if (o.arch == ARCH_BERT) {
        if (nlp_buf_printf(&b, "# data: %zu documents, %zu training tokens, fingerprint %016llx\n", btrain.ndoc,
                           btrain.n, (unsigned long long)docs_fingerprint(&btrain)))
            cli_fail(NLP_ENOMEM);
    } else if (nlp_buf_printf(&b, "# data: %zu training tokens, fingerprint %016llx\n", train.n,
                              (unsigned long long)fingerprint(&train)))
        cli_fail(NLP_ENOMEM);
    return nlp_buf_detach(&b, NULL);
}

static const char *resume_yaml, *resume_train;
static char resume_ckpt[4096]; /* the checkpoint --resume names */
static char **resume_argv;   /* argv with the run's run.yaml first */
static nlp_config resume_cf; /* that run.yaml, for its 'train' */

/* --resume DIR: DIR's run.yaml is read as the first config file, so the
 * run continues with its own options unless flags say otherwise. */
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
    cli_prog = "pretrain"; /* before cli_parse: messages of the check below */
    mio_check_resume(dir, "pretrain", ck, sizeof resume_ckpt);
    snprintf(yaml, sizeof yaml, "%s/run.yaml", ck);
    if (!nlp_file_exists(yaml)) return argv;
    resume_yaml = yaml;
    if (nlp_config_load(&resume_cf, yaml) == 0) {
        const nlp_config_entry *e = nlp_config_get(&resume_cf, "train");
        if (e && e->value) resume_train = e->value;
    }
    char **nv = resume_argv = nlp_calloc((size_t)*argc + 3, sizeof *nv);
    if (!nv) cli_fail(NLP_ENOMEM);
    nv[0] = argv[0];
    nv[1] = "-c";
    nv[2] = yaml;
    for (int i = 1; i < *argc; i++) nv[i + 2] = argv[i];
    *argc += 2;
    return nv;
}

// --- signals

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

/* A mapped data file cut short between the check before a read and the
 * read itself (data.h): a clear message, not a bare "Bus error"; the run's
 * checkpoints are whole (written by rename). */
static void on_bus(int sig)
{
    static const char m[] = "pretrain: a mapped file (the data, or the model) was cut short while it was read: the run "
                            "stops; its checkpoints are whole (continue with --resume once the file is back)\n";
    (void)sig;
    nlp_writer_unlink_pending();
    if (write(2, m, sizeof m - 1) < 0) _exit(1);
    _exit(1);
}

static void catch_signals(void)
{
    struct sigaction bus = {0};
    bus.sa_handler = on_bus;
    sigemptyset(&bus.sa_mask);
    sigaction(SIGBUS, &bus, NULL);
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < 2; i++) {
        struct sigaction old, sa = {0};
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

// --- data

static char cache_dir[4200]; /* DIR/data: text tokenized once ("" = --no-cache) */

/* Reads path into c: a pipe through the shuffle buffer, text through the
 * cache. With `dry`, a cache is not made: 1 is returned for text whose
 * cache is still to be made (nothing appended), else 0. */
static int read_data(nlp_corpus *c, const char *path, int32_t eot, int threads, int pipe, int dry)
{
    size_t before = c->n;
    int built = 0, rc;
    c->max_line = (size_t)o.max_line_bytes;
    if (c->eot < 0) c->eot = eot; /* an llm.c shard does not name its own */
    if (pipe) /* --dry-run reads the header (or the text's start) only */
        rc = nlp_corpus_open_pipe(c, path, tok, eot, 0, o.dry_run ? 2 : (size_t)o.buffer_tokens, threads);
    else
        rc = nlp_corpus_add_cached(c, path, tok, eot, 0, threads, cache_dir[0] ? cache_dir : NULL, dry, &built);
    if (rc) cli_fail(rc);
    if (built == 1) cli_info("'%s': tokenized into a cache in '%s' (%zu tokens)", path, cache_dir, c->n - before);
    else if (built < 0 && o.dry_run) cli_debug("'%s': to be tokenized into a cache in '%s', then mapped", path, cache_dir);
    else if (pipe && !o.dry_run) cli_info("'%s': %zu tokens in the shuffle buffer to start with", path, c->n);
    else if (built >= 0) cli_debug("'%s': %zu tokens", path, c->n - before);
    return built < 0;
}

/* Caches are made after the memory check (a first, dry pass maps what is
 * there and finds what is not). Under mpirun rank 0 makes them, the others
 * then find them (or make their own): the ranks meet before and after. */
static void dist_before(int dry)
{
    if (!dry && nlp_dist_size() > 1 && nlp_dist_rank() != 0 && nlp_dist_barrier()) cli_fail(nlp_errcode());
}

static int dist_after(int dry, int pending)
{
    if (!dry && nlp_dist_size() > 1 && nlp_dist_rank() == 0 && nlp_dist_barrier()) cli_fail(nlp_errcode());
    if (dry && nlp_dist_size() > 1) { /* every rank goes on to the same barriers */
        double x = pending;
        if (nlp_dist_max_f64(&x, 1)) cli_fail(nlp_errcode());
        pending = x > 0;
    }
    return pending;
}

/* The training (or validation) data of a GPT run. */
static int read_gpt_data(nlp_corpus *c, const char *const *in, size_t n, int32_t eot, int threads, int pipe, int dry)
{
    int pending = 0;
    dist_before(dry);
    for (size_t i = 0; i < n; i++) pending |= read_data(c, in[i], eot, threads, pipe, dry);
    return dist_after(dry, pending);
}

static void report_pairs(const char *what, const nlp_pairs *p, long max_len);

/* The training pairs of a transformer run. */
static int read_mt_data(int threads, int dry)
{
    int built = 0;
    nlp_pairs_opts po = {.src_tk = src_tok, .tgt_tk = tok, .max_len = (int)o.max_length, .threads = threads,
                         .max_line = (size_t)o.max_line_bytes, .src_prefix = o.prefix};
    dist_before(dry);
    const char *src = o.src ? o.src : inputs[0];
    if (nlp_pairs_read_cached(&ptrain, src, o.src ? o.tgt : NULL, &po, cache_dir[0] ? cache_dir : NULL, dry, &built))
        cli_fail(nlp_errcode());
    if (built == 1) cli_info("'%s': %zu pairs built into a cache in '%s'", src, ptrain.n, cache_dir);
    if (built >= 0) report_pairs(src, &ptrain, o.max_length);
    return dist_after(dry, built < 0);
}

/* The documents of a BERT run (one cache for all of in[]). */
static int read_bert_data(nlp_bert_docs *d, const char *const *in, size_t n, int threads, int dry)
{
    int built = 0;
    dist_before(dry);
    if (nlp_bert_docs_add_cached(d, in, n, tok, threads, cache_dir[0] ? cache_dir : NULL, dry, &built))
        cli_fail(nlp_errcode());
    if (built == 1)
        cli_info("'%s'%s: %zu documents built into a cache in '%s' (%zu tokens, %zu sentences)", in[0],
                 n > 1 ? " and the rest" : "", d->ndoc, cache_dir, d->n, d->nsent);
    return dist_after(dry, built < 0);
}

/* Every id of a corpus must have a row in the model's embedding: ids held
 * in memory are checked now, so are streams whose header admits larger
 * ones; the rest as windows are read (c->limit). */
static void check_ids(nlp_corpus *c, const char *what, int vocab)
{
    int scan = c->max_id > (uint32_t)vocab;
    for (size_t q = 0; q < c->nparts; q++) scan |= c->part[q].n && c->part[q].vocab > (uint32_t)vocab;
    if (scan) {
        enum { K = 1 << 16 };
        static int32_t buf[K];
        for (size_t at = 0; at < c->n; at += K) {
            size_t k = c->n - at < K ? c->n - at : K;
            if (nlp_corpus_read(c, at, k, buf)) cli_fail(nlp_errcode());
            for (size_t i = 0; i < k; i++)
                if (buf[i] >= vocab)
                    cli_die(NLP_EXIT_FAILURE, "%s: token %zu is id %d, not below the model's vocabulary size %d (was "
                            "it made with another tokenizer?)", what, at + i, buf[i], vocab);
        }
    }
    c->limit = (uint32_t)vocab;
}

/* A pipe (or a FIFO): read through the shuffle buffer, not mapped. */
static int is_pipe(const char *path)
{
    struct stat st;
    return strcmp(path, "-") == 0 || (stat(path, &st) == 0 && S_ISFIFO(st.st_mode));
}

/* The data cache of a run directory this process made goes again when the
 * run fails before training (nothing made, as for other errors); the
 * directory itself goes with its lock (run_dir_begin). */
static char made_dir[4200];

static void remove_made_dir(void)
{
    if (!made_dir[0] || !cache_dir[0]) return;
    DIR *d = opendir(made_dir);
    if (!d) return;
    struct dirent *e;
    int other = 0;
    while ((e = readdir(d)))
        other |= strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "data") &&
                 strcmp(e->d_name, ".lock");
    closedir(d);
    if (other) return; /* a checkpoint, a log: the run happened */
    d = opendir(cache_dir);
    if (d) {
        char p[8600];
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') {
                snprintf(p, sizeof p, "%s/%s", cache_dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(cache_dir);
}

// --- translation: special tokens, data, validation BLEU

/* pad, bos and eos of a translation tokenizer: without a padding token
 * real text would be masked, so it is required. */
static void special_ids(const nlp_tokenizer *tk, const char *name, int32_t id[3])
{
    mio_special_ids(tk, id);
    if (id[0] < 0 || id[2] < 0)
        cli_die(NLP_EXIT_FORMAT, "'%s' has no %s token (%s): the transformer needs them; train the tokenizer with "
                "--special-tokens '<pad>,<s>,</s>'", name, id[0] < 0 ? "padding" : "end-of-sentence",
                id[0] < 0 ? "<pad>, [PAD]" : "</s>, <eos>, [EOS], <|endoftext|>");
}

static nlp_ids *vsrc; /* validation sources with EOS, for BLEU */
static size_t nvsrc;

/* Python's str.rstrip() for ASCII whitespace (as 'bleu' reads lines). */
static size_t rstrip_len(const char *s, size_t n)
{
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n' || s[n - 1] == '\v' ||
                 s[n - 1] == '\f'))
        n--;
    return n;
}

/* Greedy translations of the first validation sources, scored against
 * their references with sacreBLEU's default BLEU (what `bleu` prints). Each
 * rank of a data-parallel job translates its share; BLEU comes from the
 * sum of every sentence's statistics, so the score is the same. */
static int valid_bleu(void *ctx, nlp_model *m, double *out)
{
    (void)ctx;
    nlp_translate_opts to = nlp_translate_defaults();
    to.beams = 1, to.batch = 64;
    nlp_ids *hyp = nlp_calloc(nvsrc, sizeof *hyp);
    nlp_bleu_params bp = nlp_bleu_defaults();
    nlp_bleu *b = nlp_bleu_new(&bp);
    double sum[2 + 2 * NLP_BLEU_MAX_ORDER] = {0}, seg[2 + 2 * NLP_BLEU_MAX_ORDER];
    nlp_buf text = {0}, fix = {0};
    const size_t R = (size_t)nlp_dist_size(), me = (size_t)nlp_dist_rank();
    const size_t i0 = nvsrc * me / R, i1 = nvsrc * (me + 1) / R;
    int rc = !hyp || !b ? NLP_ENOMEM : nlp_translate(m, vsrc + i0, i1 - i0, &to, hyp + i0, NULL);
    for (size_t i = i0; i < i1 && !rc; i++) {
        if ((rc = mio_decode_line(tok, hyp[i].v, hyp[i].n, &text))) break;
        const char *ref = pvalid.ref[i];
        size_t rl = strlen(ref);
        if (!nlp_utf8_valid(ref, rl, NULL)) {
            nlp_buf_reset(&fix);
            if ((rc = nlp_utf8_repair(ref, rl, &fix, NULL))) break;
            ref = fix.data, rl = fix.len;
        }
        rl = rstrip_len(ref, rl);
        if ((rc = nlp_bleu_segment(b, text.data ? text.data : "", rstrip_len(text.data, text.len), &ref, &rl, 1, seg)))
            break;
        for (int k = 0; k < nlp_bleu_nstats(&bp); k++) sum[k] += seg[k];
    }
    if (!rc) rc = nlp_dist_sum_f64(sum, (size_t)nlp_bleu_nstats(&bp));
    if (!rc) {
        nlp_bleu_result r;
        nlp_bleu_compute(&bp, sum, &r);
        *out = r.score;
    }
    for (size_t i = 0; hyp && i < nvsrc; i++) nlp_ids_free(&hyp[i]);
    free(hyp);
    nlp_bleu_free(b);
    nlp_buf_free(&text);
    nlp_buf_free(&fix);
    return rc;
}

static void report_pairs(const char *what, const nlp_pairs *p, long max_len)
{
    cli_info("%s: %llu pairs read, %zu kept (%zu + %zu tokens)%s", what, (unsigned long long)p->lines, p->n,
             p->src_tokens, p->tgt_tokens, p->empty || p->too_long ? "; dropped:" : "");
    if (p->empty) cli_info("  %llu with an empty side", (unsigned long long)p->empty);
    if (p->too_long)
        cli_info("  %llu longer than %ld tokens (--max-length, with end-of-sentence) on a side",
                 (unsigned long long)p->too_long, max_len);
    if (p->repaired) cli_warn("%s: %llu lines of invalid UTF-8 repaired (U+FFFD)", what, (unsigned long long)p->repaired);
}

// --- span and denoise: their tokens, texts and examples

/* The objective's tokens (span: <extra_id_0> ... <extra_id_N-1>; denoise:
 * <mask>), added to the tokenizer as special tokens where it lacks them,
 * with ids from `first` on; with `add` 0 (a resumed run, whose model cannot
 * grow) one missing is an error. Sets sentinel_ids or mask_id; returns how
 * many were added. */
static size_t objective_tokens(const char *tk_name, int32_t first, int add)
{
    const size_t n = o.objective == OBJ_SPAN ? (size_t)o.sentinels : 1;
    const char **names = nlp_calloc(n, sizeof *names);
    char *text = nlp_malloc(n * 24);
    if (!names || !text) cli_fail(NLP_ENOMEM);
    for (size_t k = 0; k < n; k++) {
        if (o.objective == OBJ_SPAN) snprintf(text + 24 * k, 24, "<extra_id_%d>", (int)k);
        else snprintf(text + 24 * k, 24, "<mask>");
        names[k] = text + 24 * k;
    }
    const char *what = o.objective == OBJ_SPAN ? "the sentinel tokens" : "<mask>";
    size_t missing = 0;
    for (size_t k = 0; k < n; k++) missing += nlp_tokenizer_token_to_id(tok, names[k], strlen(names[k])) < 0;
    if (missing && !add) {
        char first_name[24];
        snprintf(first_name, sizeof first_name, "%s", names[0]);
        free(names), free(text);
        cli_die(NLP_EXIT_FORMAT, "'%s' lacks %s (%s first): the run was trained with a tokenizer that has them; "
                "resume with its own (leave out --tokenizer)", tk_name, what, first_name);
    }
    if (missing) {
        nlp_tokenizer *nt;
        int rc = nlp_tokenizer_add_special(&nt, tok, names, n, first, NULL);
        if (rc) free(names), free(text);
        if (rc == NLP_ENOMEM) cli_fail(rc);
        if (rc) cli_die(NLP_EXIT_FORMAT, "'%s': cannot add %s: %s", tk_name, what, nlp_errmsg());
        if (src_tok == tok) src_tok = nt;
        nlp_tokenizer_free(tok);
        tok = nt;
        if (o.objective == OBJ_DENOISE) cli_info("'%s' has no <mask>: added as a special token, id %d", tk_name, (int)first);
        else if (missing == n)
            cli_info("'%s' has no sentinel tokens: %s ... %s added as special tokens (ids %d-%d)", tk_name, names[0],
                     names[n - 1], (int)first, (int)(first + (int32_t)missing - 1));
        else
            cli_info("'%s' lacks %zu of the %zu sentinel tokens: added as special tokens (ids %d-%d)", tk_name, missing,
                     n, (int)first, (int)(first + (int32_t)missing - 1));
    }
    if (o.objective == OBJ_SPAN) {
        if (!(sentinel_ids = nlp_malloc(n * sizeof *sentinel_ids))) cli_fail(NLP_ENOMEM);
        for (size_t k = 0; k < n; k++) sentinel_ids[k] = nlp_tokenizer_token_to_id(tok, names[k], strlen(names[k]));
    } else
        mask_id = nlp_tokenizer_token_to_id(tok, names[0], strlen(names[0]));
    free(names), free(text);
    return missing;
}

/* The documents of a span or denoise run cut into pieces (d), and what was
 * cut and skipped. */
static nlp_denoise_opts denoise_opts(int threads)
{
    return (nlp_denoise_opts){.kind = o.objective == OBJ_SPAN ? NLP_DENOISE_SPAN : NLP_DENOISE_BART,
                              .density = o.noise_density, .mean_span = o.mean_span, .sentinel = sentinel_ids,
                              .n_sentinel = (size_t)o.sentinels, .lambda = o.poisson_lambda, .ratio = o.mask_ratio,
                              .permute = o.permute, .mask = mask_id, .max_len = (int)o.max_length, .threads = threads};
}

static void make_pieces(nlp_denoise *d, const nlp_bert_docs *docs, const char *what, uint64_t seed, int threads)
{
    nlp_denoise_opts dop = denoise_opts(threads);
    int rc = nlp_denoise_init(d, docs, &dop, seed);
    if (rc == NLP_EINVAL) cli_usage_error("--max-length %ld: %s", o.max_length, nlp_errmsg());
    if (rc == NLP_EDATA) cli_die(NLP_EXIT_FAILURE, "%s: %s", what, nlp_errmsg());
    if (rc) cli_fail(rc);
    cli_info("%s: %zu documents (%zu tokens), %zu texts of at most %zu tokens to corrupt", what, docs->ndoc, docs->n,
             d->n, d->max_piece);
    if (d->docs_cut)
        cli_info("  %zu document%s longer than --max-length %ld allows cut in several, at sentence ends (%zu "
                 "sentence%s cut inside)", d->docs_cut, d->docs_cut == 1 ? "" : "s", o.max_length, d->sents_cut,
                 d->sents_cut == 1 ? "" : "s");
    if (d->skipped)
        cli_info("  %zu text%s of fewer than 2 tokens skipped, too short to corrupt (%zu whole document%s)", d->skipped,
                 d->skipped == 1 ? "" : "s", d->skipped_docs, d->skipped_docs == 1 ? "" : "s");
}

/* --show-examples: epoch 1's first pairs, as text with their special tokens
 * and EOS, on standard output. */
static void show_examples(int32_t eos)
{
    nlp_ids src = {0}, tgt = {0};
    nlp_buf a = {0}, b = {0};
    const size_t n = (size_t)o.show_examples < dtrain.n ? (size_t)o.show_examples : dtrain.n;
    for (size_t i = 0; i < n; i++) {
        src.n = tgt.n = 0;
        int rc = nlp_denoise_example(&dtrain, i, 1, &src, &tgt);
        if (!rc) rc = nlp_ids_push(&src, eos);
        if (!rc) rc = nlp_ids_push(&tgt, eos);
        if (!rc) rc = mio_decode_text(tok, src.v, src.n, 0, &a);
        if (!rc) rc = mio_decode_text(tok, tgt.v, tgt.n, 0, &b);
        if (rc) cli_fail(rc);
        const nlp_denoise_piece *p = &dtrain.piece[i];
        printf("%s==> example %zu: document %zu, %zu tokens <==\ninput:  %.*s\ntarget: %.*s\n", i ? "\n" : "", i + 1,
               dtrain.doc[i] + 1, p->b - p->a, (int)a.len, a.data ? a.data : "", (int)b.len, b.data ? b.data : "");
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        cli_die(NLP_EXIT_FAILURE, "cannot write to standard output: %s", strerror(errno));
    if (n < (size_t)o.show_examples)
        cli_info("--show-examples %ld: the training data has %zu texts to corrupt", o.show_examples, dtrain.n);
    nlp_ids_free(&src), nlp_ids_free(&tgt);
    nlp_buf_free(&a), nlp_buf_free(&b);
}

// --- model keys: their values checked where they come from

/* Model key k's value as a setting: its config file and line, or the flag. */
static nlp_setting mk_setting(int k)
{
    static char flag[NMK][40];
    const char *file;
    int line;
    if (cli_value_origin(o.mk[k], &file, &line)) return (nlp_setting){model_keys[k], o.mk[k], file, line};
    snprintf(flag[k], sizeof flag[k], "--%s", model_keys[k]);
    return (nlp_setting){model_keys[k], o.mk[k], flag[k], 0};
}

/* A model configuration that does not resolve: when a config file's value is
 * at fault (the message names its file and line, or the key it holds),
 * exit 3 naming them, as every bad value of a config file does; else a
 * usage error (a flag's value, or the preset's sizes that do not fit). */
static _Noreturn void config_error(int rc, const nlp_setting *set, size_t n)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", nlp_errmsg());
    for (size_t i = 0; i < n; i++) {
        if (set[i].line <= 0) continue;
        char at[4200];
        snprintf(at, sizeof at, "'%s' line %d: ", set[i].origin, set[i].line);
        if (rc == NLP_EFORMAT && strncmp(msg, at, strlen(at)) == 0) cli_die(NLP_EXIT_FORMAT, "%s", msg);
        if (rc == NLP_EINVAL && strstr(msg, set[i].key))
            cli_die(NLP_EXIT_FORMAT, "'%s' line %d: %s", set[i].origin, set[i].line, msg);
    }
    cli_usage_error("%s", msg);
}

/* --dropout or --attention-dropout (model key k) for a loaded model: into
 * *out when given, checked as the model's configuration checks it. */
static void mk_dropout(int k, double *out)
{
    if (!o.mk[k]) return;
    nlp_setting s[2] = {{"arch", archs[o.arch], "--arch", 0}, mk_setting(k)};
    nlp_model_config tmp;
    int rc = nlp_model_config_resolve(&tmp, s, 2);
    if (rc) config_error(rc, s + 1, 1);
    *out = k == 8 ? tmp.dropout : tmp.attention_dropout;
}

/* Architecture defaults of the optimisation options left at -1: GPT-2's
 * recipe, BERT's (Devlin et al.: AdamW β2 0.999 ε 1e-6, weight decay 0.01,
 * warm-up then linear decay, lr 1e-4), the paper's for the transformer. */
static void arch_defaults(void)
{
    const int mt = o.arch == ARCH_TRANSFORMER, bert = o.arch == ARCH_BERT;
    if (o.schedule < 0) o.schedule = mt ? NLP_SCHED_NOAM : bert ? NLP_SCHED_LINEAR : NLP_SCHED_COSINE;
    if (o.lr < 0) o.lr = o.schedule == NLP_SCHED_NOAM ? 1.0 : mt ? 7e-4 : bert ? 1e-4 : 6e-4;
    if (o.warmup < 0) o.warmup = mt ? 4000 : 200;
    if (o.weight_decay < 0) o.weight_decay = mt ? 0 : bert ? 0.01 : 0.1;
    if (o.beta2 < 0) o.beta2 = mt ? 0.98 : bert ? 0.999 : 0.95;
    if (o.eps < 0) o.eps = mt ? 1e-9 : bert ? 1e-6 : 1e-8;
    if (o.grad_clip < 0) o.grad_clip = mt ? 0 : 1.0;
    if (o.batch_tokens < 0) o.batch_tokens = mt ? 4500 : 0;
    if (o.batch_size < 0) o.batch_size = bert ? 32 : 8;
    if (o.max_length < 0 && !mt && !bert) o.max_length = 0; /* transformer, bert: 128, or the model's positions if fewer */
}

int main(int argc, char **argv)
{
    nlp_threads_passive(argc, argv);
    cli_dist_start(&argc, &argv);
    o.progress = isatty(2) && nlp_dist_size() == 1;
    argv = with_resume_config(&argc, argv);
    struct cli c = {"pretrain", usage, opts, NULL};
    int first = cli_parse(&c, argc, argv);
    if (cli_verbosity < 0) o.progress = 0;
    const int mt = o.arch == ARCH_TRANSFORMER;
    const int dn = mt && o.objective != OBJ_TRANSLATE; /* span or denoise: pairs from unlabelled text */

    const int bert = o.arch == ARCH_BERT;
    arch_defaults();
    if (o.resume && resume_yaml && mt) { /* the objective is the run's: its model has that objective's tokens */
        const nlp_config_entry *e = nlp_config_get(&resume_cf, "objective");
        const char *was = e && e->value ? e->value : "translate";
        if (strcmp(was, objectives[o.objective]) != 0)
            cli_usage_error("--objective %s: the run '%s' trains with --objective %s; continue it so, or start a new "
                            "run from it with --init", objectives[o.objective], o.resume, was);
    }
    /* --prefix: the sources' task prefix, for parallel text; a resumed run
     * keeps its own (its caches and checkpoints were made with it) */
    if (cli_given("prefix") && (!mt || dn))
        cli_usage_error("--prefix is for --arch transformer --objective translate: it goes before the sources of "
                        "parallel text");
    if (nlp_prefix_check(o.prefix)) {
        const char *pf;
        int pl;
        if (cli_value_origin(o.prefix, &pf, &pl)) cli_die(NLP_EXIT_FORMAT, "'%s' line %d: prefix: %s", pf, pl, nlp_errmsg());
        cli_usage_error("--prefix: %s", nlp_errmsg());
    }
    if (o.prefix && !*o.prefix) o.prefix = NULL; /* '' is none */
    if (o.resume && resume_yaml && mt && !dn) {
        const nlp_config_entry *e = nlp_config_get(&resume_cf, "prefix");
        const char *was = e && e->value && *e->value ? e->value : NULL;
        if (!was != !o.prefix || (was && strcmp(was, o.prefix) != 0))
            cli_usage_error("--prefix '%s': the run '%s' trains with %s%s%s; continue it so, or start a new run from it "
                            "with --init", o.prefix ? o.prefix : "", o.resume, was ? "--prefix '" : "no prefix",
                            was ? was : "", was ? "'" : "");
    }
    /* the objectives' options: each with its own */
    {
        static const struct {
            const char *name;
            int objective; /* -1: span or denoise */
        } oo[] = {{"noise-density", OBJ_SPAN},      {"mean-span", OBJ_SPAN},     {"sentinels", OBJ_SPAN},
                  {"poisson-lambda", OBJ_DENOISE}, {"mask-ratio", OBJ_DENOISE}, {"permute-sentences", OBJ_DENOISE},
                  {"show-examples", -1}};
        if (!mt && cli_given("objective"))
            cli_usage_error("--objective is for --arch transformer (the encoder-decoder's pretraining)");
        for (size_t k = 0; k < sizeof oo / sizeof *oo; k++) {
            if (!cli_given(oo[k].name)) continue;
            if (oo[k].objective < 0 ? !dn : o.objective != oo[k].objective)
                cli_usage_error("--%s is for --arch transformer --objective %s", oo[k].name,
                                oo[k].objective < 0 ? "span or denoise" : objectives[oo[k].objective]);
        }
        if (o.objective == OBJ_DENOISE && o.mask_ratio == 0 && !o.permute)
            cli_usage_error("--mask-ratio 0 with --no-permute-sentences: nothing to denoise");
    }
    size_t cap = (size_t)(argc - first) + 2;
    if (!(inputs = nlp_calloc(cap, sizeof *inputs))) cli_fail(NLP_ENOMEM);
    /* a resumed run's recorded --train gives way to FILE arguments */
    if (o.train && !(o.resume && first < argc && resume_train && strcmp(o.train, resume_train) == 0))
        inputs[ninputs++] = o.train;
    for (int i = first; i < argc; i++) inputs[ninputs++] = argv[i];
    if (dn) {
        if (o.src || o.tgt || o.valid_src || o.valid_tgt || o.src_tokenizer || o.tgt_tokenizer || cli_given("valid-bleu"))
            cli_usage_error("--src, --tgt, --valid-src, --valid-tgt, --src-tokenizer, --tgt-tokenizer and --valid-bleu "
                            "are for parallel text (--objective translate); --objective %s reads unlabelled text: "
                            "FILEs and --valid", objectives[o.objective]);
        if (!ninputs && !o.resume)
            cli_usage_error("no training data: give text files or token streams (or '-' for standard input)");
        if (o.eot) cli_usage_error("--eot is for gpt; --objective %s reads documents and sentences", objectives[o.objective]);
        if (o.batch_tokens == 0) cli_usage_error("--batch-tokens 0: a transformer batch holds up to N tokens; give N > 0");
    } else if (mt) {
        if (!o.src != !o.tgt) cli_usage_error("--src and --tgt go together: the two sides of a parallel corpus");
        if (o.src && strcmp(o.src, "-") == 0 && strcmp(o.tgt, "-") == 0)
            cli_usage_error("--src and --tgt cannot both be standard input");
        if (!o.valid_src != !o.valid_tgt) cli_usage_error("--valid-src and --valid-tgt go together");
        if (o.src && ninputs) cli_usage_error("give parallel text as --src/--tgt or as TSV files, not both");
        if (o.valid && o.valid_src) cli_usage_error("give validation text as --valid-src/--valid-tgt or --valid, not both");
        if (ninputs > 1) cli_usage_error("one TSV of parallel text (or --src and --tgt)");
        if (!o.src && !ninputs) cli_usage_error("no training data: give --src FILE --tgt FILE, or a TSV file");
        if (o.eot) cli_usage_error("--eot is for gpt; a transformer ends sentences with its tokenizer's </s>");
        if (o.batch_tokens == 0) cli_usage_error("--batch-tokens 0: a transformer batch holds up to N tokens; give N > 0");
        if (o.tokenizer && (o.src_tokenizer || o.tgt_tokenizer))
            cli_usage_error("--tokenizer (shared) and --src-tokenizer/--tgt-tokenizer exclude each other");
        if (!o.src_tokenizer != !o.tgt_tokenizer)
            cli_usage_error("--src-tokenizer and --tgt-tokenizer go together (or one shared --tokenizer)");
    } else {
        if (o.src || o.tgt || o.valid_src || o.valid_tgt || o.src_tokenizer || o.tgt_tokenizer)
            cli_usage_error("--src, --tgt, --valid-src, --valid-tgt, --src-tokenizer and --tgt-tokenizer are for "
                            "--arch transformer");
        if (o.schedule == NLP_SCHED_NOAM) cli_usage_error("--schedule noam is the transformer's");
        if (bert && o.eot) cli_usage_error("--eot is for gpt; BERT examples are built from documents and sentences");
        if (bert && o.batch_tokens > 0) cli_usage_error("--batch-tokens: BERT batches are -B examples");
    }
    if (!ninputs && !o.src && o.resume)
        cli_usage_error("no training data: the run was trained on several inputs or standard input; give them again");
    if (!ninputs && !mt) cli_usage_error("no training data: give token streams or text files (or '-' for standard input)");
    for (size_t i = 0; i < ninputs; i++)
        if (strcmp(inputs[i], "-") == 0 && o.valid && strcmp(o.valid, "-") == 0)
            cli_usage_error("--valid and the training data cannot both be standard input");
    if (nlp_dist_size() > 1) { /* every rank reads the data: files, not a stream only rank 0 gets */
        const char *in[] = {o.src, o.tgt, o.valid, o.valid_src, o.valid_tgt};
        int dash = 0;
        for (size_t i = 0; i < ninputs; i++) dash |= strcmp(inputs[i], "-") == 0;
        for (size_t i = 0; i < sizeof in / sizeof *in; i++) dash |= in[i] && strcmp(in[i], "-") == 0;
        if (dash) cli_usage_error("standard input cannot feed %d ranks: every rank reads the data, give files", nlp_dist_size());
    }
    if (o.init && o.resume) cli_usage_error("--init and --resume exclude each other: --resume continues a run");
    if (o.steps == 0 && o.max_time <= 0 && !o.show_examples) cli_usage_error("give --steps N or --max-time MINUTES");
    if (o.keep && o.average > o.keep)
        cli_usage_error("--average %ld: only --keep %ld checkpoints are kept; raise --keep", o.average, o.keep);
    min_lr_given = o.min_lr;
    if (o.min_lr < 0) o.min_lr = o.lr / 10;

    /* a new model's sizes, checked before anything is read (the vocabulary
     * comes later, from the tokenizer or the data) */
    if (!o.resume && !o.init) {
        nlp_setting all[NMK + 2];
        size_t ns = 0;
        const char *pf;
        int pl;
        all[ns++] = (nlp_setting){"preset", o.preset, "--preset", 0};
        if (cli_value_origin(o.preset, &pf, &pl)) all[0].origin = pf, all[0].line = pl;
        all[ns++] = (nlp_setting){"arch", archs[o.arch], "--arch", 0};
        for (int k = 0; k < NMK; k++)
            if (o.mk[k]) all[ns++] = mk_setting(k);
        nlp_model_config tmp;
        int rc = nlp_model_config_resolve(&tmp, all, ns);
        if (rc) config_error(rc, all, ns);
    }

    /* the run directory, before any data is read: where a resumed run goes
     * on, its lock, and no new run into another's directory */
    int own_dir = 0, legacy = 0;
    const uint64_t run_id = run_identify(o.resume, resume_ckpt, resume_yaml, &o.model, &o.log, &own_dir, &legacy);
    {
        const char *in[] = {o.valid, o.src, o.tgt, o.valid_src, o.valid_tgt, o.tokenizer, o.src_tokenizer,
                            o.tgt_tokenizer, o.init};
        cli_check_output("--log", o.log, in, sizeof in / sizeof *in);
        cli_check_output("--log", o.log, inputs, ninputs);
    }
    if (!o.show_examples) run_dir_begin(o.model, run_id, !own_dir, legacy, o.force, o.dry_run);

    int threads = nlp_threads_set(cli_dist_threads(o.threads));
    nlp_text_check_force(o.force);
    if (o.cache && !o.show_examples) { /* --show-examples writes nothing: its documents in memory */
        snprintf(cache_dir, sizeof cache_dir, "%s/data", o.model);
        if (run_dir_created()) { /* registered after the lock's release: runs before it */
            snprintf(made_dir, sizeof made_dir, "%s", o.model);
            atexit(remove_made_dir);
        }
    }
    if (o.bf16 && nlp_gemm_set_mode(NLP_GEMM_BF16)) cli_usage_error("--bf16: %s", nlp_errmsg());
    cli_debug("%d thread%s", threads, threads == 1 ? "" : "s");

    const char *tk_name = o.tokenizer ? o.tokenizer : o.tgt_tokenizer, *src_name = NULL;
    if (tk_name) tok = mio_load_tokenizer(tk_name);
    if (o.src_tokenizer) src_tok = mio_load_tokenizer(src_name = o.src_tokenizer);
    char resume_ck[4096] = "";
    const char *from = NULL; /* where the model (and its tokenizers) come from */
    if (o.resume) {
        if (nlp_train_find_checkpoint(o.resume, resume_ck, sizeof resume_ck)) cli_fail_file(NLP_EIO);
        from = resume_ck;
    } else if (o.init)
        from = o.init;
    if (from && !tok && (tok = mio_load_tokenizer_beside(from))) tk_name = from;
    if (from && mt && !src_tok) {
        char ck[4096], p[4200];
        mio_resolve(from, ck, sizeof ck);
        snprintf(p, sizeof p, "%s/src-tokenizer.json", ck);
        if (nlp_is_dir(ck) && nlp_file_exists(p)) src_tok = mio_load_tokenizer(p), src_name = p;
    }
    if (mt && !src_tok) src_tok = tok, src_name = tk_name;
    if (o.resume || o.init)
        for (int k = 0; k < NMK; k++)
            if (o.mk[k] && strcmp(model_keys[k], "dropout") != 0 && strcmp(model_keys[k], "attention-dropout") != 0)
                cli_usage_error("--%s: the model comes from %s '%s' and keeps its sizes", model_keys[k],
                                o.resume ? "--resume" : "--init", o.resume ? o.resume : o.init);
    int32_t eot = -1, sp[3] = {-1, -1, -1};
    if (dn && !tok) cli_usage_error("--objective %s reads text: give --tokenizer", objectives[o.objective]);
    if (dn && src_tok != tok)
        cli_die(NLP_EXIT_FORMAT, "'%s' has a source tokenizer of its own ('%s'): --objective %s reads and writes one "
                "text, with one tokenizer", from, src_name, objectives[o.objective]);
    if (mt) {
        if (!tok) cli_usage_error("the transformer reads text: give --tokenizer (or --src-tokenizer and --tgt-tokenizer)");
        special_ids(tok, tk_name, sp);
        if (src_tok != tok) {
            int32_t ssp[3];
            special_ids(src_tok, src_name, ssp);
            if (ssp[0] != sp[0] || ssp[2] != sp[2])
                cli_die(NLP_EXIT_FORMAT, "'%s' and '%s' give padding and end-of-sentence different ids (%d/%d and "
                        "%d/%d): train both with the same --special-tokens first", src_name, tk_name, ssp[0], ssp[2],
                        sp[0], sp[2]);
        }
    } else if (bert) {
        if (!tok) cli_usage_error("BERT pretraining builds its examples with a WordPiece tokenizer: give --tokenizer");
    } else {
        eot = tok ? mio_eot(tok, o.eot, tk_name) : -1;
        if (o.eot && !tok) cli_usage_error("--eot needs --tokenizer");
        if (tok && eot < 0)
            cli_warn("'%s' has no end-of-text token (<|endoftext|>, </s>, <eos>, [SEP]): documents of text input are "
                     "joined without a separator; name one with --eot", tk_name);
        if (!tok)
            cli_warn("no tokenizer (--tokenizer): the run's checkpoints will hold none, and 'generate' will need one "
                     "given; give the tokenizer that made the token streams with --tokenizer, to store it with the "
                     "model and check the streams against it");
    }

    /* data (the transformer's after its model: --max-length defaults to its positions) */
    if (bert) { /* what is there now; the caches to make after the memory check */
        btrain.max_line = bvalid.max_line = (size_t)o.max_line_bytes;
        pending_train = read_bert_data(&btrain, inputs, ninputs, threads, 1);
        if (o.valid) pending_valid = read_bert_data(&bvalid, &o.valid, 1, threads, 1);
    } else if (!mt) {
        const int pipe = ninputs == 1 && is_pipe(inputs[0]);
        if (pipe && o.resume)
            cli_warn("'%s' is a pipe: a resumed run cannot replay it; it trains on what the pipe gives now, through a "
                     "new shuffle buffer (not the batches the run would have drawn)", inputs[0]);
        /* what is there now (streams, caches made before); the caches to make after the memory check */
        pending_train = read_gpt_data(&train, inputs, ninputs, eot, threads, pipe, 1);
        if (o.valid) pending_valid = read_gpt_data(&valid, &o.valid, 1, eot, threads, 0, 1);
    }
    /* the model: a resumed run's, a loaded one, or a new one */
    const char *mname = o.resume ? o.resume : o.init ? o.init : "(new model)";
    if (o.resume) {
        model = mio_load_model(resume_ck, o.arch); /* checks the kind; nlp_train loads it again with its state */
        if (nlp_arch_is_lm(nlp_model_cfg(model)->arch)) o.arch = (int)nlp_model_cfg(model)->arch;
        if (dn) objective_tokens(tk_name, 0, 0);
    } else if (o.init) {
        model = mio_load_model(o.init, o.arch);
        if (nlp_arch_is_lm(nlp_model_cfg(model)->arch)) o.arch = (int)nlp_model_cfg(model)->arch; /* gpt or llama */
        /* the prefix the model was trained with goes on, unless --prefix says another (or '') */
        const char *had = nlp_model_prefix(model);
        if (mt && !dn && !cli_given("prefix") && had) {
            if (!(o.prefix = nlp_strdup(had))) cli_fail(NLP_ENOMEM); /* the model's own copy is replaced below */
            cli_info("'%s' was trained with --prefix '%s': its sources get it too (--prefix '' for none)", o.init, had);
        }
        if (dn && had) nlp_model_set_prefix(model, NULL); /* unlabelled text has no task prefix */
        const nlp_model_config *ic = nlp_model_cfg(model);
        if (dn && !ic->shared_vocab)
            cli_die(NLP_EXIT_FORMAT, "'%s' has a source and a target vocabulary: --objective %s needs one, shared",
                    o.init, objectives[o.objective]);
        const size_t tv = dn ? nlp_tokenizer_vocab_size(tok) : 0;
        const int32_t id0 = (int32_t)(tv > (size_t)ic->vocab_size ? tv : (size_t)ic->vocab_size);
        size_t added = dn ? objective_tokens(tk_name, id0, 1) : 0;
        if (added) { /* the embeddings grow by the rows of the new tokens */
            nlp_model_config nc = *ic;
            nc.vocab_size = nc.src_vocab_size = id0 + (int32_t)added;
            const int was = ic->vocab_size;
            nlp_model *m2;
            int rc = nlp_model_extend(&m2, model, &nc, (uint64_t)o.seed);
            if (rc) cli_fail(rc);
            nlp_model_free(model);
            model = m2;
            cli_info("'%s': its vocabulary grows from %d to %d ids", o.init, was, nc.vocab_size);
        }
    } else {
        if (dn) objective_tokens(tk_name, (int32_t)nlp_tokenizer_vocab_size(tok), 1);
        nlp_setting set[NMK + 8];
        size_t ns = 0;
        static char vs[32], svs[32], ids[3][16];
        set[ns++] = (nlp_setting){"arch", archs[o.arch], "--arch", 0};
        if (mt) {
            snprintf(vs, sizeof vs, "%zu", nlp_tokenizer_vocab_size(tok));
            snprintf(svs, sizeof svs, "%zu", nlp_tokenizer_vocab_size(src_tok));
            set[ns++] = (nlp_setting){"vocab-size", vs, tk_name, 0};
            set[ns++] = (nlp_setting){"src-vocab-size", svs, src_name, 0};
            set[ns++] = (nlp_setting){"shared-vocab", src_tok == tok ? "true" : "false", tk_name, 0};
            static const char *const idk[3] = {"pad-id", "bos-id", "eos-id"};
            for (int k = 0; k < 3; k++) {
                snprintf(ids[k], sizeof ids[k], "%d", sp[k]);
                set[ns++] = (nlp_setting){idk[k], ids[k], tk_name, 0};
            }
        } else if (bert && !o.mk[0]) {
            snprintf(vs, sizeof vs, "%zu", nlp_tokenizer_vocab_size(tok));
            set[ns++] = (nlp_setting){"vocab-size", vs, tk_name, 0};
        } else if (!o.mk[0] && (tok || train.vocab)) { /* the tokenizer's vocabulary, else the streams' */
            snprintf(vs, sizeof vs, "%zu", tok ? nlp_tokenizer_vocab_size(tok) : (size_t)train.vocab);
            set[ns++] = (nlp_setting){"vocab-size", vs, tok ? o.tokenizer : inputs[0], 0};
        }
        for (int k = 0; k < NMK; k++)
            if (o.mk[k]) set[ns++] = mk_setting(k);
        nlp_setting all[NMK + 9];
        all[0] = (nlp_setting){"preset", o.preset, "--preset", 0};
        const char *pf;
        int pl;
        if (cli_value_origin(o.preset, &pf, &pl)) all[0].origin = pf, all[0].line = pl;
        memcpy(all + 1, set, ns * sizeof *set);
        int rc = nlp_model_config_resolve(&newcfg, all, ns + 1);
        if (rc) config_error(rc, all, ns + 1);
        /* made once its memory is known to fit (below) */
    }
    if (o.init || o.resume) {
        const nlp_model_config *mc = nlp_model_cfg(model);
        double d = mc->dropout, ad = mc->attention_dropout;
        mk_dropout(8, &d);
        mk_dropout(9, &ad);
        if (nlp_model_set_dropout(model, d, ad)) cli_usage_error("--dropout: %s", nlp_errmsg());
    }
    const nlp_model_config *mc = model ? nlp_model_cfg(model) : &newcfg;
    if (dn) {
        if (o.max_length < 0) o.max_length = mc->max_positions < 128 ? mc->max_positions : 128;
        if (o.max_length > mc->max_positions)
            cli_usage_error("--max-length %ld: the model has %d positions", o.max_length, mc->max_positions);
        nlp_denoise_opts dop = denoise_opts(threads);
        if (nlp_denoise_max_piece(&dop) < 2)
            cli_usage_error("--max-length %ld: too short for a corrupted text of 2 tokens and its target, each with "
                            "its end-of-sentence token", o.max_length);
        if (o.batch_tokens < o.max_length && !o.show_examples)
            cli_usage_error("--batch-tokens %ld: a batch must hold a text of --max-length %ld", o.batch_tokens,
                            o.max_length);
        /* the documents there are now; their caches to make after the memory check */
        btrain.max_line = bvalid.max_line = (size_t)o.max_line_bytes;
        pending_train = read_bert_data(&btrain, inputs, ninputs, threads, 1);
        if (o.valid) pending_valid = read_bert_data(&bvalid, &o.valid, 1, threads, 1);
        if (o.show_examples) { /* the documents were read into memory: no cache, nothing written */
            char what[4200];
            snprintf(what, sizeof what, "'%s'%s", inputs[0], ninputs > 1 ? " and the rest" : "");
            make_pieces(&dtrain, &btrain, what, (uint64_t)o.seed, threads);
            if (nlp_dist_rank() == 0) show_examples(sp[2]); /* every rank made the same */
            nlp_denoise_free(&dtrain);
            nlp_bert_docs_free(&btrain);
            nlp_bert_docs_free(&bvalid);
            nlp_model_free(model);
            nlp_tokenizer_free(tok);
            free(sentinel_ids);
            free(inputs);
            free(resume_argv);
            nlp_config_free(&resume_cf);
            cli_free();
            nlp_dist_finalize();
            return 0;
        }
    } else if (mt) {
        if (o.max_length < 0) o.max_length = mc->max_positions < 128 ? mc->max_positions : 128;
        /* what is there now; a cache to make after the memory check */
        pending_train = read_mt_data(threads, 1);
        if (o.valid_src || o.valid) {
            nlp_pairs_opts po = {.src_tk = src_tok, .tgt_tk = tok, .keep_text = 1, .threads = threads,
                                 .max_line = (size_t)o.max_line_bytes, .src_prefix = o.prefix};
            int rc = o.valid_src ? nlp_pairs_read(&pvalid, o.valid_src, o.valid_tgt, &po)
                             : nlp_pairs_read(&pvalid, o.valid, NULL, &po);
            if (rc) cli_fail(rc);
            if (pvalid.empty) cli_info("validation: %llu pairs with an empty side skipped", (unsigned long long)pvalid.empty);
            if (!pvalid.n) cli_die(NLP_EXIT_FAILURE, "'%s': no validation pairs", o.valid_src ? o.valid_src : o.valid);
        }
    }
    /* the memory of the run (--dry-run stops here), before the model's arenas are made */
    {
        long T = o.max_length, B = o.batch_size, S = 0;
        uint64_t data;
        if (dn) {
            S = T, B = o.batch_tokens / T > 1 ? o.batch_tokens / T : 1; /* the widest batch's shape */
            /* the documents in memory (none when mapped), an epoch's pairs (about twice the documents' tokens,
             * 4 bytes each, and 24 bytes a pair; twice that while the next epoch's are made) and its order */
            const uint64_t tokens = btrain.n + bvalid.n, texts = btrain.ndoc + bvalid.ndoc + tokens / (uint64_t)T;
            data = nlp_bert_docs_memory(&btrain) + nlp_bert_docs_memory(&bvalid) + 2 * (8 * tokens + 24 * texts) +
                   (32 + 8 + 28) * texts;
            if (btrain.map.data || bvalid.map.data) {
                static char note[160];
                char h[32];
                mio_human(h, sizeof h, (uint64_t)(btrain.map.len + bvalid.map.len));
                snprintf(note, sizeof note, "and %s of document caches mapped, read once an epoch", h);
                mio_data_note = note;
            } else if (pending_train || pending_valid)
                mio_data_note = "text to be built into a document cache, then mapped";
        } else if (mt) {
            if (T > mc->max_positions) cli_usage_error("--max-length %ld: the model has %d positions", T, mc->max_positions);
            S = T, B = o.batch_tokens / T > 1 ? o.batch_tokens / T : 1; /* the widest batch's shape */
            /* the pairs in memory (none when mapped), and an epoch's batches: 4 bytes a pair for its order,
             * 28 while it is made */
            data = nlp_pairs_memory(&ptrain) + nlp_pairs_memory(&pvalid) + 28 * (uint64_t)ptrain.n;
            if (ptrain.map.data) {
                static char note[160];
                char h[32];
                mio_human(h, sizeof h, (uint64_t)ptrain.map.len);
                snprintf(note, sizeof note, "and %s of sentence pairs mapped, read a batch at a time", h);
                mio_data_note = note;
            } else if (pending_train)
                mio_data_note = "text to be tokenized into a cache of pairs, then mapped";
        } else if (bert) {
            if (T < 0) T = mc->max_positions < 128 ? mc->max_positions : 128;
            if (T < 5 || T > mc->max_positions)
                cli_usage_error("--max-length %ld: must be in [5, %d], the model's positions", T, mc->max_positions);
            /* the documents in memory (none when mapped), and the task's chunks: 32 bytes each, about a
             * document each, or a window of T - 3 tokens of a longer one */
            data = nlp_bert_docs_memory(&btrain) + nlp_bert_docs_memory(&bvalid) +
                   32 * (uint64_t)(btrain.ndoc + bvalid.ndoc + (btrain.n + bvalid.n) / (uint64_t)(T - 3));
            if (btrain.map.data || bvalid.map.data) {
                static char note[160];
                char h[32];
                mio_human(h, sizeof h, (uint64_t)(btrain.map.len + bvalid.map.len));
                snprintf(note, sizeof note, "and %s of document caches mapped, read an example at a time", h);
                mio_data_note = note;
            } else if (pending_train || pending_valid)
                mio_data_note = "text to be built into a document cache, then mapped";
        } else {
            if (!T) T = mc->max_positions;
            if (T < 2 || T > mc->max_positions)
                cli_usage_error("--max-length %ld: must be in [2, %d], the model's positions", T, mc->max_positions);
            data = nlp_corpus_memory(&train) + nlp_corpus_memory(&valid);
            if (o.dry_run && nlp_corpus_is_pipe(&train, NULL, NULL, NULL)) data += 4 * (uint64_t)o.buffer_tokens;
            int text = 0;
            if (nlp_corpus_is_pipe(&train, NULL, NULL, &text) && text) /* a block of text and its ids */
                data += o.dry_run ? 2 * (uint64_t)NLP_TEXT_BLOCK : 0;
            if (train.mapped + valid.mapped) {
                static char note[160];
                char h[32];
                mio_human(h, sizeof h, train.mapped + valid.mapped);
                snprintf(note, sizeof note, "and %s of token streams mapped, read a window at a time", h);
                mio_data_note = note;
            } else if (pending_train || pending_valid)
                mio_data_note = "text to be tokenized into the cache, then mapped";
        }
        mio_memory_check(mc, (int)B, (int)T, (int)S, data, o.dry_run, o.memory_check);
    }
    if (mt && !dn && pending_train) { /* the cache made, the pairs mapped */
        nlp_pairs_free(&ptrain);
        read_mt_data(threads, 0);
    }
    if (bert || dn) { /* the caches made, the documents mapped */
        if (pending_train) {
            nlp_bert_docs_free(&btrain);
            read_bert_data(&btrain, inputs, ninputs, threads, 0);
        }
        if (pending_valid) {
            nlp_bert_docs_free(&bvalid);
            read_bert_data(&bvalid, &o.valid, 1, threads, 0);
        }
        if (btrain.repaired + bvalid.repaired)
            cli_warn("%llu line%s of invalid UTF-8 repaired (U+FFFD)",
                     (unsigned long long)(btrain.repaired + bvalid.repaired),
                     btrain.repaired + bvalid.repaired == 1 ? "" : "s");
        if (btrain.dropped + bvalid.dropped)
            cli_info("%llu special tokens inside documents of token streams dropped",
                     (unsigned long long)(btrain.dropped + bvalid.dropped));
    }
    if (!mt && !bert) { /* GPT: the caches made, the data read again */
        if (pending_train || pending_valid) nlp_error_clear();
        if (pending_train) { /* never a pipe */
            nlp_corpus_free(&train);
            read_gpt_data(&train, inputs, ninputs, eot, threads, 0, 0);
        }
        if (pending_valid) {
            nlp_corpus_free(&valid);
            read_gpt_data(&valid, &o.valid, 1, eot, threads, 0, 0);
        }
        if (o.valid && !valid.bytes && tok && nlp_corpus_count_bytes(&valid, tok)) cli_fail(nlp_errcode());
        if (o.valid && !valid.bytes) cli_info("no tokenizer for the validation stream: bits per byte are not reported");
        if (train.repaired + valid.repaired)
            cli_warn("%llu line%s of invalid UTF-8 repaired (U+FFFD)",
                     (unsigned long long)(train.repaired + valid.repaired),
                     train.repaired + valid.repaired == 1 ? "" : "s");
    }
    if (!model) {
        int rc = nlp_model_new(&model, &newcfg, (uint64_t)o.seed);
        if (rc) cli_fail(rc);
        mc = nlp_model_cfg(model);
    }
    if (mt && !dn && !o.resume) { /* recorded with every checkpoint; a resumed run's model has it already */
        int rc = nlp_model_set_prefix(model, o.prefix);
        if (rc) cli_fail(rc);
    }
    nlp_task task;
    nlp_lm_task lm;
    nlp_mt_task mtt;
    nlp_bert_task bt;
    memset(&lm, 0, sizeof lm), memset(&mtt, 0, sizeof mtt), memset(&bt, 0, sizeof bt);
    long accum = 1;
    if (bert) {
        mio_check_vocab(tok, tk_name, model, mname);
        if (o.max_length < 0) o.max_length = mc->max_positions < 128 ? mc->max_positions : 128;
        if (o.max_length < 5 || o.max_length > mc->max_positions)
            cli_usage_error("--max-length %ld: must be in [5, %d], the model's positions", o.max_length,
                            mc->max_positions);
        nlp_bert_opts bo = NLP_BERT_OPTS_INIT;
        bo.B = (int)o.batch_size, bo.T = (int)o.max_length, bo.tokenizer_path = tk_name;
        int rc = nlp_bert_task_init(&bt, &task, &btrain, o.valid ? &bvalid : NULL, tok, &bo);
        if (rc == NLP_EDATA) { /* too few documents or sentences: name the file */
            const char *f = strstr(nlp_errmsg(), "validation") ? o.valid : ninputs == 1 ? inputs[0] : NULL;
            if (f) cli_die(NLP_EXIT_FAILURE, "'%s': %s", f, nlp_errmsg());
        }
        if (rc) cli_fail(rc);
        cli_info("bert: %zu parameters, %zu training tokens in %zu documents (%zu sentences)%s",
                 nlp_model_param_count(model), btrain.n, btrain.ndoc, btrain.nsent, o.valid ? "" : "; no validation data");
    } else if (dn) {
        mio_check_vocab(tok, tk_name, model, mname);
        if (mc->pad_id != sp[0] || mc->eos_id != sp[2])
            cli_die(NLP_EXIT_FORMAT, "'%s' pads with id %d and ends sentences with %d, the model '%s' with %d and %d: "
                    "not its tokenizer", tk_name, sp[0], sp[2], mname, mc->pad_id, mc->eos_id);
        char what[4200];
        snprintf(what, sizeof what, "'%s'%s", ninputs ? inputs[0] : "", ninputs > 1 ? " and the rest" : "");
        make_pieces(&dtrain, &btrain, what, (uint64_t)o.seed, threads);
        if (o.valid) {
            snprintf(what, sizeof what, "'%s'", o.valid);
            make_pieces(&dvalid, &bvalid, what, VALID_SEED, threads);
            if (nlp_denoise_epoch(&dvalid, 1)) cli_fail(nlp_errcode());
        }
        if (nlp_denoise_epoch(&dtrain, 1)) cli_fail(nlp_errcode());
        int rc = nlp_mt_task_init(&mtt, &task, &dtrain.pairs, o.valid ? &dvalid.pairs : NULL, mc, o.batch_tokens,
                                  (uint64_t)o.seed);
        if (rc) cli_fail(rc);
        nlp_mt_task_refresh(&mtt, &task, nlp_denoise_refresh, &dtrain);
        cli_info("transformer, %s: %zu parameters, %zu texts to corrupt, %zu batches per epoch of at most %ld tokens%s",
                 objectives[o.objective], nlp_model_param_count(model), dtrain.n, nlp_mt_epoch_batches(&mtt),
                 o.batch_tokens, o.valid ? "" : "; no validation data");
    } else if (mt) {
        mio_check_vocab(tok, tk_name, model, mname);
        if (nlp_tokenizer_vocab_size(src_tok) > (size_t)mc->src_vocab_size)
            cli_die(NLP_EXIT_FORMAT, "'%s': %zu ids, but the model '%s' has a source vocabulary of %d", src_name,
                    nlp_tokenizer_vocab_size(src_tok), mname, mc->src_vocab_size);
        if (mc->pad_id != sp[0] || mc->eos_id != sp[2])
            cli_die(NLP_EXIT_FORMAT, "'%s' pads with id %d and ends sentences with %d, the model '%s' with %d and %d: "
                    "not its tokenizer", tk_name, sp[0], sp[2], mname, mc->pad_id, mc->eos_id);
        if (o.max_length > mc->max_positions)
            cli_usage_error("--max-length %ld: the model has %d positions", o.max_length, mc->max_positions);
        if (!ptrain.n)
            cli_die(NLP_EXIT_FAILURE, "'%s': no training pairs (%llu read: %llu with an empty side, %llu longer than "
                    "--max-length %ld)", o.src ? o.src : inputs[0], (unsigned long long)ptrain.lines,
                    (unsigned long long)ptrain.empty, (unsigned long long)ptrain.too_long, o.max_length);
        int rc = nlp_mt_task_init(&mtt, &task, &ptrain, pvalid.n ? &pvalid : NULL, mc, o.batch_tokens,
                                  (uint64_t)o.seed);
        if (rc) cli_fail(rc);
        if (pvalid.n && o.valid_bleu >= 0) {
            nvsrc = o.valid_bleu > 0 && (size_t)o.valid_bleu < pvalid.n ? (size_t)o.valid_bleu : pvalid.n;
            if (!(vsrc = nlp_calloc(nvsrc, sizeof *vsrc))) cli_fail(NLP_ENOMEM);
            for (size_t i = 0; i < nvsrc; i++) {
                size_t a = pvalid.src_off[i], n = pvalid.src_off[i + 1] - a;
                if (n + 1 > (size_t)mc->max_positions) n = (size_t)mc->max_positions - 1;
                if (nlp_ids_append(&vsrc[i], pvalid.src + a, n) || nlp_ids_push(&vsrc[i], mc->eos_id))
                    cli_fail(NLP_ENOMEM);
            }
            mtt.bleu = valid_bleu;
            task.best_metric = 2, task.higher_is_better = 1;
        }
        cli_info("transformer: %zu parameters, %zu training pairs, %zu batches per epoch of at most %ld tokens%s",
                 nlp_model_param_count(model), ptrain.n, nlp_mt_epoch_batches(&mtt), o.batch_tokens,
                 pvalid.n ? "" : "; no validation data");
        if (o.prefix) cli_info("every source begins with the prefix '%s'", o.prefix);
    } else {
        if (tok) mio_check_vocab(tok, tk_name, model, mname);
        /* streams made by another tokenizer than the run's are refused */
        if (tok && (nlp_corpus_check_tokenizer(&train, tok, tk_name, eot) ||
                    nlp_corpus_check_tokenizer(&valid, tok, tk_name, eot)))
            cli_fail(nlp_errcode());
        if (!o.max_length) o.max_length = mc->max_positions;
        if (o.max_length < 2 || o.max_length > mc->max_positions)
            cli_usage_error("--max-length %ld: must be in [2, %d], the model's positions", o.max_length,
                            mc->max_positions);
        const long micro = o.batch_size * o.max_length;
        accum = o.batch_tokens > 0 ? (o.batch_tokens + micro / 2) / micro : 1;
        if (accum < 1) accum = 1;
        if (o.batch_tokens > 0 && accum * micro != o.batch_tokens)
            cli_info("--batch-tokens %ld: %ld micro-batches of %ld tokens make %ld", o.batch_tokens, accum, micro,
                     accum * micro);
        check_ids(&train, ninputs == 1 ? inputs[0] : "the training data", mc->vocab_size);
        check_ids(&valid, o.valid ? o.valid : "", mc->vocab_size);
        if (train.mapped)
            cli_info("%s: %zu tokens mapped (%.1f MiB on disk)", ninputs == 1 ? inputs[0] : "the training data",
                     train.n, (double)train.mapped / (1 << 20));
        if (train.n < (size_t)o.max_length)
            cli_die(NLP_EXIT_FAILURE, "%s: %zu tokens, fewer than one training window of %ld (--max-length)",
                    ninputs == 1 ? inputs[0] : "the training data", train.n, o.max_length);
        if (o.valid && valid.n < 2)
            cli_die(NLP_EXIT_FAILURE, "'%s': %zu tokens: nothing to validate on", o.valid, valid.n);
        if (train.mapped || train.pipe)
            cli_info("%s: %zu parameters, %zu training tokens%s%s", archs[o.arch], nlp_model_param_count(model),
                     train.n, train.pipe ? " in the buffer" : "", o.valid ? "" : "; no validation data");
        else
            cli_info("%s: %zu parameters, %zu training tokens (%llu documents)%s", archs[o.arch],
                     nlp_model_param_count(model), train.n, (unsigned long long)train.docs,
                     o.valid ? "" : "; no validation data");
        if (o.valid) cli_debug("validation: %zu tokens, %llu bytes", valid.n, (unsigned long long)valid.bytes);
        int rc = nlp_lm_task_init(&lm, &task, &train, o.valid ? &valid : NULL, (int)o.batch_size, (int)o.max_length);
        if (rc) cli_fail(rc);
    }
    run_yaml = make_run_yaml(mc);
    if (!run_yaml) cli_fail(NLP_ENOMEM);
    if (resume_yaml) { /* the same data, or a continuation that cannot match */
        char *old = NULL;
        size_t len;
        const char *line = strrchr(run_yaml, '#');
        if (nlp_read_file(resume_yaml, &old, &len) == 0 && line && !strstr(old, line))
            cli_warn("the training data differs from the run's (%s): the run continues, but not as it would have",
                     "see '# data' in its run.yaml");
        free(old);
    }

    nlp_optim_config oc = nlp_optim_default();
    oc.beta1 = o.beta1, oc.beta2 = o.beta2, oc.eps = o.eps, oc.weight_decay = o.weight_decay;
    if (o.weight_decay == 0) oc.kind = NLP_OPTIM_ADAM;
    nlp_train_opts to = {
        .out_dir = o.model,
        .steps = o.steps,
        .max_seconds = o.max_time * 60,
        .accum = (int)accum,
        .schedule = (enum nlp_schedule)o.schedule,
        .lr = o.lr,
        .lr_min = o.min_lr,
        .warmup = o.warmup,
        .clip = o.grad_clip,
        .optim = oc,
        .eval_every = o.eval_every,
        .save_every = o.save_every,
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
    int rc = nlp_train(&model, &task, &to, o.resume, &res);
    end_live();
    if (rc) cli_fail(rc);
    int status = 0;
    if (res.signal && !res.last_checkpoint[0]) {
        cli_warn("stopped by %s before the first step; nothing was saved", res.signal == SIGINT ? "SIGINT" : "SIGTERM");
        status = 128 + res.signal;
    } else if (res.signal) {
        cli_warn("stopped by %s at step %ld; '%s' holds the run (continue with --resume %s)",
                 res.signal == SIGINT ? "SIGINT" : "SIGTERM", res.step, res.last_checkpoint, o.model);
        status = 128 + res.signal;
    } else {
        cli_info("done: step %ld, checkpoint '%s'", res.step, res.last_checkpoint);
        if (nlp_dist_size() > 1)
            cli_info("%d ranks: %.1f s of %.1f s of training waiting for the others (gradient sums not hidden by "
                     "the backward pass)", nlp_dist_size(), res.comm_seconds, res.seconds);
        if (task.evaluate && !isnan(res.best))
            cli_info("best validation %s %.4f: '%s/best'", task.eval_names[task.best_metric], res.best, o.model);
        if (o.average > 1 && nlp_dist_rank() == 0) {
            int used;
            to.run_id = res.run_id;
            if ((rc = nlp_train_average(&to, (int)o.average, &used))) cli_fail(rc);
            if (used < o.average) cli_warn("--average %ld: the run has %d checkpoints", o.average, used);
            cli_info("average of the newest %d checkpoints: '%s/average'", used, o.model);
        }
    }
    nlp_lm_task_free(&lm);
    nlp_mt_task_free(&mtt);
    nlp_bert_task_free(&bt);
    nlp_denoise_free(&dtrain);
    nlp_denoise_free(&dvalid);
    free(sentinel_ids);
    nlp_bert_docs_free(&btrain);
    nlp_bert_docs_free(&bvalid);
    for (size_t i = 0; i < nvsrc; i++) nlp_ids_free(&vsrc[i]);
    free(vsrc);
    nlp_pairs_free(&ptrain);
    nlp_pairs_free(&pvalid);
    nlp_model_free(model);
    if (src_tok != tok) nlp_tokenizer_free(src_tok);
    nlp_tokenizer_free(tok);
    nlp_corpus_free(&train);
    nlp_corpus_free(&valid);
    free(run_yaml);
    free(inputs);
    free(resume_argv);
    nlp_config_free(&resume_cf);
    cli_free();
    nlp_dist_finalize();
    return status;
}
