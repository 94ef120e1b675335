/*
 * generate — continue a prompt with a GPT model (ours or HuggingFace GPT-2),
 * streaming the new text as it comes; or score a text (--perplexity),
 * continuations of contexts (--score), or the model's in-context learning
 * of a task (--eval-choices).
 *
 * Thin: decoding strategies are lib/decode's, perplexity lib/train/lm's,
 * continuation scores lib/decode/score's, in-context learning
 * lib/decode/icl's.
 */
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "common/cli.h"
#include "common/lines.h"
#include "common/modelio.h"
#include "decode/decode.h"
#include "decode/icl.h"
#include "decode/score.h"
#include "eval/report.h"
#include "model/model.h"
#include "nn/gemm.h"
#include "text/utf8.h"
#include "train/data.h"
#include "train/lm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "Usage: generate -m MODEL [OPTION]... [FILE]...\n"
    "  or:  generate -m MODEL --score [OPTION]... [FILE]...\n"
    "  or:  generate -m MODEL --eval-choices FILE [--shots K --shots-from TRAIN] [OPTION]...\n"
    "Continue a prompt with a GPT or LLaMA-family model, printing the new text as it\n"
    "is generated.\n"
    "The prompt is -p TEXT, else the FILEs (default standard input) as one text, or\n"
    "one prompt per line with --batch.\n"
    "\n"
    "  -m, --model PATH          a model: ours (a file, checkpoint or run directory) or a\n"
    "                            HuggingFace GPT-2 or LLaMA-family (llama, mistral)\n"
    "                            directory: config.json, model.safetensors or its\n"
    "                            shards with model.safetensors.index.json (F32, F16,\n"
    "                            BF16), tokenizer.json (or vocab.json + merges.txt,\n"
    "                            tokenizer.model)\n"
    "      --tokenizer FILE      the tokenizer (default: the one beside the model)\n"
    "  -p, --prompt TEXT         the prompt\n"
    "  -i, --input FILE          read the prompt from FILE (also: FILE arguments)\n"
    "      --batch               one prompt per input line, one output line each\n"
    "  -n, --max-new-tokens N    tokens to generate at most (default 128)\n"
    "      --greedy              always the most probable token (= --temperature 0)\n"
    "      --temperature F       sampling temperature (default 0.8; 0 = greedy)\n"
    "      --top-k N             sample among the N most probable tokens (default 40;\n"
    "                            0 = all)\n"
    "      --top-p F             ... and among the fewest whose probability reaches F,\n"
    "                            in (0, 1] (default 0.95; 1 = all)\n"
    "      --repetition-penalty F  divide the logits of tokens already seen by F\n"
    "                            (default 1 = none; 1.1-1.3 are usual)\n"
    "  -b, --beam-size N         beam search with N hypotheses (default 1 = no beam)\n"
    "      --length-penalty F    beam search: GNMT length penalty alpha (default 0)\n"
    "      --seed N              random seed for sampling (default 0: reproducible)\n"
    "      --stop STR            stop when the text produces STR (not printed)\n"
    "      --ignore-eos          go on past the end-of-text token\n"
    "      --echo                print the prompt before its continuation\n"
    "      --input-format FMT    text (default) or id: prompts as token ids\n"
    "      --output-format FMT   text (default) or id: generated ids, one line per prompt\n"
    "      --perplexity          score the input text instead: one JSON line with tokens,\n"
    "                            bytes, loss (nats/token), perplexity and bits per byte\n"
    "      --max-length N        --perplexity: tokens per window, each predicted from up\n"
    "                            to N-1 before it (default auto: the model's positions;\n"
    "                            with rotary positions also longer windows); --score,\n"
    "                            --eval-choices: the positions of a context and its\n"
    "                            continuation together (default: the model's)\n"
    "      --max-line-bytes N    the longest input line (--batch, --score, TSV files),\n"
    "                            text scored (--perplexity) or prompt read (default\n"
    "                            16777216 = 16 MiB); a longer one is an error naming\n"
    "                            the file and line\n"
    "      --bf16                decode with the weights rounded to bfloat16: half the\n"
    "                            bytes read per token (fp32 arithmetic); the prompt's\n"
    "                            pass and --perplexity use the rounded weights too\n"
    "      --int8                decode with the weights quantized to int8 in blocks of\n"
    "                            32 (llama.cpp's Q8_0), activations likewise per row:\n"
    "                            about a quarter of the bytes of fp32 per token\n"
    "  -t, --threads N           threads (default: all CPUs); the output does not\n"
    "                            depend on it\n"
    "  -c, --config FILE         read options from a YAML file (keys = long option names)\n"
    "      --dump-config         print the effective configuration and exit\n"
    "  -q, --quiet               no warnings\n"
    "  -v, --verbose             more messages (-v: why a continuation ended early,\n"
    "                            speed figures)\n"
    "  -h, --help                display this help and exit\n"
    "  -V, --version             output version information and exit\n"
    "\n"
    "Scoring and in-context learning (log-probabilities are natural logs):\n"
    "      --score               score continuations: for each input line\n"
    "                            'context<TAB>continuation', one JSON line with the\n"
    "                            continuation's log-probability given the context, each\n"
    "                            of its tokens', its tokens and bytes; a context too\n"
    "                            long for the model loses its start (a warning)\n"
    "      --eval-choices FILE   in-context learning (GPT-3): each item of FILE after\n"
    "                            --shots solved examples, each candidate answer scored\n"
    "                            by its log-likelihood, the best chosen; prints the\n"
    "                            accuracy as JSON (-v: each item first). FILE is TSV:\n"
    "                            'label<TAB>text' or 'label<TAB>a<TAB>b' (the candidates\n"
    "                            are the labels) or 'label<TAB>context<TAB>choice_0<TAB>\n"
    "                            choice_1...' (label = the right choice's index, from 0)\n"
    "      --shots K             solved examples before each item (default 0); fewer\n"
    "                            where they would pass the model's context (a warning)\n"
    "      --shots-from TRAIN    the TSV the shots are drawn from, by --seed, without\n"
    "                            repeats and never the item itself; its labels are\n"
    "                            the candidates (default: FILE's when K is 0)\n"
    "      --template T          how an example reads: {context} (pairs: {a}, {b}) and\n"
    "                            {answer}, with \\n, \\t, \\\\, {{ and }} (default by the\n"
    "                            data: 'Description: {context}\\nSection: {answer}\\n\\n',\n"
    "                            'Summary: {a}\\nSentence: {b}\\nSame package: {answer}\\n\\n',\n"
    "                            'Summary: {context}\\nDescription: {answer}\\n\\n')\n"
    "      --normalize M         rank candidates by their log-likelihood: summed (none),\n"
    "                            per token (tokens, the default, as GPT-3 did for most\n"
    "                            tasks), per byte of their text (bytes), or less their\n"
    "                            log-likelihood after the template's text before\n"
    "                            {answer} alone (unconditional: GPT-3's for RACE)\n"
    "      --label-words LIST    the candidates' words for labels: LABEL=WORD,...\n"
    "                            (such as 0=no,1=yes; default: each label as it is)\n"
    "\n"
    "Exit status: 0 ok, 1 bad input (a prompt that fills the context, ids outside the\n"
    "vocabulary, a line or an item that cannot be scored) or I/O error, 2 usage\n"
    "error (also: no tokenizer for text, a bad --template), 3 missing,\n"
    "unreadable or incompatible model or tokenizer, or a missing, unreadable or\n"
    "invalid config file (-c).\n";

static const char *const formats[] = {"text", "id", NULL};
static const char *const norms[] = {"none", "tokens", "bytes", "unconditional", NULL};

static struct {
    const char *model, *tokenizer, *prompt, *input, *stop;
    int batch, greedy, ignore_eos, echo, in_fmt, out_fmt, perplexity, bf16, int8;
    long max_new, top_k, beam, seed, max_length, threads, max_line_bytes;
    int score, normalize;
    const char *eval_choices, *shots_from, *template, *label_words;
    long shots;
    double temperature, top_p, rep, length_penalty;
} o = {
    .max_new = 128,
    .temperature = 0.8,
    .top_k = 40,
    .top_p = 0.95,
    .rep = 1.0,
    .beam = 1,
    .max_length = -1,
    .max_line_bytes = CLI_MAX_LINE_BYTES,
    .normalize = NLP_ICL_NORM_TOKENS,
};

static struct cli_opt opts[] = {
    {.name = "model", .key = 'm', .kind = CLI_STR, .dest = &o.model},
    {.name = "tokenizer", .kind = CLI_STR, .dest = &o.tokenizer},
    {.name = "prompt", .key = 'p', .kind = CLI_STR, .dest = &o.prompt},
    {.name = "input", .key = 'i', .kind = CLI_STR, .dest = &o.input},
    {.name = "batch", .kind = CLI_BOOL, .dest = &o.batch},
    {.name = "max-new-tokens", .key = 'n', .kind = CLI_INT, .dest = &o.max_new, .min = 0, .max = 1 << 24},
    {.name = "greedy", .kind = CLI_BOOL, .dest = &o.greedy},
    {.name = "temperature", .kind = CLI_DOUBLE, .dest = &o.temperature, .min = 0, .max = 1e6},
    {.name = "top-k", .kind = CLI_INT, .dest = &o.top_k, .min = 0, .max = 1 << 30},
    {.name = "top-p", .kind = CLI_DOUBLE, .dest = &o.top_p, .min = 1e-9, .max = 1},
    {.name = "repetition-penalty", .kind = CLI_DOUBLE, .dest = &o.rep, .min = 1e-6, .max = 1e6},
    {.name = "beam-size", .key = 'b', .kind = CLI_INT, .dest = &o.beam, .min = 1, .max = 1024},
    {.name = "length-penalty", .kind = CLI_DOUBLE, .dest = &o.length_penalty, .min = -100, .max = 100},
    {.name = "seed", .kind = CLI_INT, .dest = &o.seed, .min = 0, .max = 9.2e18},
    {.name = "stop", .kind = CLI_STR, .dest = &o.stop},
    {.name = "ignore-eos", .kind = CLI_BOOL, .dest = &o.ignore_eos},
    {.name = "echo", .kind = CLI_BOOL, .dest = &o.echo},
    {.name = "input-format", .kind = CLI_CHOICE, .dest = &o.in_fmt, .choices = formats},
    {.name = "output-format", .kind = CLI_CHOICE, .dest = &o.out_fmt, .choices = formats},
    {.name = "perplexity", .kind = CLI_BOOL, .dest = &o.perplexity},
    {.name = "max-length", .kind = CLI_INT, .dest = &o.max_length, .min = 2, .max = 1 << 20, .flags = CLI_AUTO},
    {.name = "score", .kind = CLI_BOOL, .dest = &o.score},
    {.name = "eval-choices", .kind = CLI_STR, .dest = &o.eval_choices},
    {.name = "shots", .kind = CLI_INT, .dest = &o.shots, .min = 0, .max = 4096},
    {.name = "shots-from", .kind = CLI_STR, .dest = &o.shots_from},
    {.name = "template", .kind = CLI_STR, .dest = &o.template},
    {.name = "normalize", .kind = CLI_CHOICE, .dest = &o.normalize, .choices = norms},
    {.name = "label-words", .kind = CLI_STR, .dest = &o.label_words},
    {.name = "max-line-bytes", .kind = CLI_INT, .dest = &o.max_line_bytes, .min = 1, .max = 1e15},
    {.name = "bf16", .kind = CLI_BOOL, .dest = &o.bf16},
    {.name = "int8", .kind = CLI_BOOL, .dest = &o.int8},
    {.name = "threads", .key = 't', .kind = CLI_INT, .dest = &o.threads, .min = 0, .max = 4096},
    {.name = NULL},
};

static nlp_model *model;
static nlp_tokenizer *tok;
static nlp_tok_state *tst;
static const char *model_name;
static int32_t eot = -1;
static int vocab_limit; /* the tokenizer's ids, when it has fewer than the model: the only ones generated */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void out_write(const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, stdout) != n) cli_die(NLP_EXIT_FAILURE, "cannot write to standard output: %s", strerror(errno));
}

static void out_flush(void)
{
    if (fflush(stdout) != 0) cli_die(NLP_EXIT_FAILURE, "cannot write to standard output: %s", strerror(errno));
}

// --- prompts

/* "'file' line N" or "'file'" (line 0: no line) for messages */
static const char *where(const char *name, uint64_t line)
{
    static char buf[4200];
    if (line) snprintf(buf, sizeof buf, "'%s' line %llu", name, (unsigned long long)line);
    else snprintf(buf, sizeof buf, "'%s'", name);
    return buf;
}

/* Parses a line of ids ("12 7 305"), checking each against the vocabulary. */
/* Length of the word at s (at most 40 bytes shown), within the n bytes of
 * the line: a line need not be NUL-terminated (translate reads a buffer). */
static int word_len(const char *s, size_t n)
{
    size_t k = 0;
    while (k < n && k < 40 && s[k] != ' ' && s[k] != '\t' && s[k] != '\r' && s[k] != '\n') k++;
    return (int)k;
}

static void parse_ids(const char *s, size_t n, const char *name, uint64_t line, nlp_ids *out)
{
    int V = nlp_model_cfg(model)->vocab_size;
    size_t i = 0;
    out->n = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) i++;
        if (i >= n) break;
        long v = 0;
        size_t st = i;
        while (i < n && s[i] >= '0' && s[i] <= '9' && v <= 1L << 31) v = v * 10 + (s[i++] - '0');
        if (i == st || (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\r'))
            cli_die(NLP_EXIT_FAILURE, "%s: '%.*s' is not a token id", where(name, line),
                    word_len(s + st, n - st), s + st);
        if (v >= V)
            cli_die(NLP_EXIT_FAILURE, "%s: id %ld is not below the model's vocabulary size %d", where(name, line), v,
                    V);
        if (nlp_ids_push(out, (int32_t)v)) cli_fail(NLP_ENOMEM);
    }
}

/* Encodes a prompt (context 1: as HF's tokenizer(prompt) does, with the
 * template's special tokens, LLaMA's <s> first, which the model was trained
 * to see) or a continuation (context 0: the text alone). */
static void encode_as(const char *s, size_t n, const char *name, uint64_t line, int context, nlp_ids *out)
{
    out->n = 0;
    nlp_buf fix = {0};
    if (!nlp_utf8_valid(s, n, NULL)) {
        if (nlp_utf8_repair(s, n, &fix, NULL)) cli_fail(NLP_ENOMEM);
        cli_warn("%s: invalid UTF-8 replaced by U+FFFD", where(name, line));
        s = fix.data, n = fix.len;
    }
    int rc = nlp_score_encode(tok, tst, model, s, n, context, out);
    nlp_buf_free(&fix);
    if (rc) cli_fail(rc);
}

static void encode_text(const char *s, size_t n, const char *name, uint64_t line, nlp_ids *out)
{
    encode_as(s, n, name, line, 1, out);
}

// --- streaming text out

typedef struct stream {
    nlp_ids gen;      /* generated ids of the current prompt */
    nlp_buf text;     /* their decoded text */
    size_t printed;   /* bytes of text already written */
    int stopped;      /* the stop string was reached */
} stream;

static stream st;

/* Length of the longest prefix of t[0..n) that is whole UTF-8 characters. */
static size_t whole_utf8(const char *t, size_t n)
{
    size_t k = n;
    while (k > 0 && k > n - 4 && ((unsigned char)t[k - 1] & 0xC0) == 0x80) k--;
    if (k > 0) {
        unsigned char c = (unsigned char)t[k - 1];
        size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        if (n - (k - 1) < need) return k - 1;
    }
    return n;
}

/* Writes what can be written of the decoded text: whole characters, and not
 * what might be the start of the stop string. final: everything. */
static void stream_flush(int final)
{
    const char *t = st.text.data ? st.text.data : "";
    size_t n = st.text.len;
    if (o.stop) {
        const char *hit = memmem(t, n, o.stop, strlen(o.stop));
        if (hit) n = (size_t)(hit - t), st.stopped = 1, final = 1;
    }
    size_t upto = n;
    if (!final) {
        upto = whole_utf8(t, n);
        size_t sl = o.stop ? strlen(o.stop) : 0;
        if (sl > 1) /* hold back a tail that may grow into the stop string */
            for (size_t k = sl - 1; k > 0; k--)
                if (k <= upto && memcmp(t + upto - k, o.stop, k) == 0) {
                    upto -= k;
                    break;
                }
    }
    if (upto > st.printed) {
        const char *p = t + st.printed;
        size_t m = upto - st.printed;
        if (o.batch) { /* one line per prompt */
            for (size_t i = 0; i < m; i++) {
                char c = p[i] == '\n' || p[i] == '\r' ? ' ' : p[i];
                out_write(&c, 1);
            }
        } else out_write(p, m);
        st.printed = upto;
        out_flush();
    }
}

static int on_token(void *ctx, int row, int32_t id)
{
    (void)ctx, (void)row;
    if (o.out_fmt == 1) {
        char num[16];
        int k = snprintf(num, sizeof num, "%s%d", st.gen.n ? " " : "", id);
        if (nlp_ids_push(&st.gen, id)) cli_fail(NLP_ENOMEM);
        out_write(num, (size_t)k);
        out_flush();
        return 0;
    }
    if (nlp_ids_push(&st.gen, id)) cli_fail(NLP_ENOMEM);
    nlp_buf_reset(&st.text);
    int rc = nlp_tokenizer_decode(tok, st.gen.v, st.gen.n, 1, &st.text, NULL);
    if (rc) cli_fail(rc);
    stream_flush(0);
    return st.stopped;
}

// --- one prompt

static double gen_seconds, prompt_seconds;
static uint64_t gen_tokens, prompt_tokens;

static void run_prompt(nlp_ids *prompt, const char *name, uint64_t line, nlp_rng *rng)
{
    /* the context: the model's positions (a Mistral-style window may be shorter) */
    const nlp_model_config *mc = nlp_model_cfg(model);
    const int P = nlp_model_config_max_len(mc) < mc->max_positions ? nlp_model_config_max_len(mc) : mc->max_positions;
    if (prompt->n == 0) { /* nothing to continue: start a document, as GPT-2 samples unconditionally */
        if (eot < 0)
            cli_die(NLP_EXIT_FAILURE, "%s: the prompt is empty and the model has no end-of-text token to start "
                    "from: give at least one token", where(name, line));
        if (nlp_ids_push(prompt, eot)) cli_fail(NLP_ENOMEM);
    }
    if (prompt->n >= (size_t)P)
        cli_die(NLP_EXIT_FAILURE, "%s: the prompt has %zu tokens; the model's context is %d, leaving no room to "
                "generate", where(name, line), prompt->n, P);
    long n = o.max_new;
    if ((size_t)n > (size_t)P - prompt->n) {
        cli_warn("%s: -n %ld: only %zu tokens fit in the model's context of %d after the prompt", where(name, line),
                 n, (size_t)P - prompt->n, P);
        n = (long)((size_t)P - prompt->n);
    }
    st.gen.n = 0, st.printed = 0, st.stopped = 0;
    nlp_buf_reset(&st.text);
    if (o.echo) {
        if (o.out_fmt == 1)
            for (size_t i = 0; i < prompt->n; i++) printf(i ? " %d" : "%d", prompt->v[i]);
        else {
            nlp_buf pt = {0};
            if (nlp_tokenizer_decode(tok, prompt->v, prompt->n, 0, &pt, NULL)) cli_fail(nlp_errcode());
            out_write(pt.data, pt.len);
            nlp_buf_free(&pt);
        }
        if (o.out_fmt == 1 && n) putchar(' ');
    }
    if (n == 0) return;
    const int K = (int)o.beam;
    nlp_cache *c = NULL;
    int rc = nlp_cache_new(&c, model, K, (int)(prompt->n + (size_t)n));
    if (rc) cli_fail(rc);
    double t0 = now();
    /* the prompt, once per beam row */
    int32_t *rows = nlp_malloc((size_t)K * prompt->n * sizeof *rows);
    if (!rows) cli_fail(NLP_ENOMEM);
    for (int k = 0; k < K; k++) memcpy(rows + (size_t)k * prompt->n, prompt->v, prompt->n * sizeof *rows);
    if ((rc = nlp_decode_feed(model, c, K, (int)prompt->n, rows))) cli_fail(rc);
    free(rows);
    double t1 = now();
    prompt_seconds += t1 - t0;
    prompt_tokens += prompt->n;
    if (K == 1) {
        nlp_ids hist = {0};
        if (nlp_ids_append(&hist, prompt->v, prompt->n)) cli_fail(NLP_ENOMEM);
        nlp_gen_opts g = {.max_new = (int)n, .eos = o.ignore_eos ? -1 : eot, .on_token = on_token,
                          .vocab_limit = vocab_limit};
        g.sampler = nlp_sampler_greedy();
        if (!o.greedy && o.temperature > 0) {
            g.sampler.temperature = o.temperature;
            g.sampler.top_k = (int)o.top_k;
            g.sampler.top_p = o.top_p;
        }
        g.sampler.repetition_penalty = o.rep;
        g.sampler.rng = *rng;
        if ((rc = nlp_generate_rows(model, c, 1, &g, &hist))) cli_fail(rc);
        *rng = g.sampler.rng; /* nlp_generate_rows works on a copy */
        nlp_ids_free(&hist);
    } else {
        nlp_beam_opts bo = {.beams = K, .max_new = (int)n, .alpha = o.length_penalty,
                            .eos = o.ignore_eos ? -1 : eot, .early_stop = 1, .vocab_limit = vocab_limit};
        nlp_ids best = {0};
        if ((rc = nlp_beam_search(model, c, 1, &bo, &best, NULL, NULL))) cli_fail(rc);
        for (size_t i = 0; i < best.n && !st.stopped; i++) on_token(NULL, 0, best.v[i]);
        nlp_ids_free(&best);
    }
    gen_seconds += now() - t1;
    gen_tokens += st.gen.n;
    if (o.out_fmt == 0) stream_flush(1);
    nlp_cache_free(c);
    /* why the continuation ended before -n (-v): the end-of-text token (not printed), or --stop */
    if (st.stopped)
        cli_debug("%s: stopped at --stop after %zu tokens", where(name, line), st.gen.n);
    else if (eot >= 0 && !o.ignore_eos && st.gen.n < (size_t)n)
        cli_debug("%s: stopped at the end-of-text token after %zu of %ld tokens (--ignore-eos goes on)",
                  where(name, line), st.gen.n, n);
}

// --- perplexity

/* The positions a window (--perplexity) or a context and its continuation
 * (--score, --eval-choices) take at most: the model's, or --max-length,
 * beyond the model's positions with rotary ones (they extrapolate, a table
 * ends). */
static int context_len(const char *what)
{
    const nlp_model_config *mc = nlp_model_cfg(model);
    const int lim = nlp_model_config_max_len(mc);
    int T = o.max_length > 0 ? (int)o.max_length : mc->max_positions < lim ? mc->max_positions : lim;
    if (T < 2 || T > lim) {
        if (lim == mc->max_positions && T >= 2)
            cli_usage_error("--max-length %d: the model has %d %s positions, there is none for a window longer than "
                            "that", T, lim, mc->arch == NLP_ARCH_TRANSFORMER && mc->positions == NLP_POS_SINUSOIDAL
                                                ? "sinusoidal" : "learned");
        cli_usage_error("--max-length %d: must be in [2, %d]", T, lim);
    }
    if (T > mc->max_positions)
        cli_info("%s of %d tokens, beyond the %d positions the model was made for: rotary positions extrapolate",
                 what, T, mc->max_positions);
    return T;
}

static void perplexity(const char **inputs, size_t n, int threads)
{
    nlp_corpus c = NLP_CORPUS_INIT;
    c.eot = eot; /* an llm.c shard does not name its own */
    c.max_line = (size_t)o.max_line_bytes;
    for (size_t i = 0; i < n; i++) {
        /* with a tokenizer, a stream's header is checked against it below (which names the tokenizer) */
        int rc = nlp_corpus_add(&c, inputs[i], tok, eot, tok ? 0 : (uint32_t)nlp_model_cfg(model)->vocab_size, threads);
        if (rc) cli_fail(rc);
    }
    if (c.repaired)
        cli_warn("%llu line%s of invalid UTF-8 repaired (U+FFFD)", (unsigned long long)c.repaired,
                 c.repaired == 1 ? "" : "s");
    /* a stream must be this tokenizer's: its ids decoded with another give a wrong bits-per-byte */
    if (tok && nlp_corpus_check_tokenizer(&c, tok, o.tokenizer ? o.tokenizer : o.model, eot)) cli_fail(nlp_errcode());
    c.limit = (uint32_t)nlp_model_cfg(model)->vocab_size; /* every id is checked where it is read */
    if (!c.bytes && tok && nlp_corpus_count_bytes(&c, tok)) cli_fail(nlp_errcode());
    if (c.n < 2)
        cli_die(NLP_EXIT_FAILURE, "%s%s%s holds %zu token%s: nothing to score", n == 1 ? "'" : "",
                n == 1 ? (strcmp(inputs[0], "-") ? inputs[0] : "standard input") : "the input", n == 1 ? "'" : "", c.n,
                c.n == 1 ? "" : "s");
    const int T = context_len("windows");
    nlp_eval ev;
    uint64_t scored;
    int rc = nlp_lm_score(model, &c, 8, T, &ev, &scored);
    if (rc) cli_fail(rc);
    if (!isfinite(ev.v[0]))
        cli_die(NLP_EXIT_FAILURE, "the loss of '%s' is %s: the model's scores are not finite for this text (are its "
                "weights corrupt?)", model_name, isnan(ev.v[0]) ? "NaN" : "infinite");
    printf("{\"tokens\": %llu, \"bytes\": %llu, \"loss\": %.6f, \"perplexity\": %.6f", (unsigned long long)scored,
           (unsigned long long)c.bytes, ev.v[0], ev.v[1]);
    if (isnan(ev.v[2])) printf(", \"bits_per_byte\": null}\n");
    else printf(", \"bits_per_byte\": %.6f}\n", ev.v[2]);
    out_flush();
    nlp_corpus_free(&c);
}

// --- continuation scores

/* lines a forward pass, padded to the longest, and their positions at most
 * (GPT-2's logits of 2048 positions take 400 MB) */
enum { SCORE_ROWS = 8, SCORE_POSITIONS = 2048 };

typedef struct score_line {
    nlp_ids ctx, cont;
    long long bytes; /* the continuation's, -1 unknown (ids without a tokenizer) */
} score_line;

static score_line pending[SCORE_ROWS];
static int npending;

/* Scores the lines waiting and prints one JSON line each. */
static void score_flush(void)
{
    if (!npending) return;
    nlp_score_item it[SCORE_ROWS];
    size_t total = 0;
    for (int i = 0; i < npending; i++) {
        it[i] = (nlp_score_item){pending[i].ctx.v, pending[i].ctx.n, pending[i].cont.v, pending[i].cont.n};
        total += pending[i].cont.n;
    }
    double *lp = nlp_malloc(total * sizeof *lp);
    uint8_t *top = nlp_malloc(total);
    if (!lp || !top) cli_fail(NLP_ENOMEM);
    int rc = nlp_score_batch(model, it, (size_t)npending, SCORE_ROWS, SCORE_POSITIONS, lp, top);
    if (rc) cli_fail(rc);
    size_t at = 0;
    nlp_buf b = {0};
    for (int i = 0; i < npending; i++) {
        double sum = 0;
        int greedy = 1;
        for (size_t j = 0; j < it[i].ncont; j++) sum += lp[at + j], greedy &= top[at + j];
        nlp_buf_reset(&b);
        if (nlp_buf_printf(&b, "{\"logprob\": %.6f, \"tokens\": %zu, \"bytes\": ", sum, it[i].ncont) ||
            (pending[i].bytes < 0 ? nlp_buf_puts(&b, "null") : nlp_buf_printf(&b, "%lld", pending[i].bytes)) ||
            nlp_buf_printf(&b, ", \"context_tokens\": %zu, \"greedy\": %s, \"token_logprobs\": [", it[i].nctx,
                           greedy ? "true" : "false"))
            cli_fail(NLP_ENOMEM);
        for (size_t j = 0; j < it[i].ncont; j++)
            if (nlp_buf_printf(&b, "%s%.6f", j ? ", " : "", lp[at + j])) cli_fail(NLP_ENOMEM);
        if (nlp_buf_puts(&b, "]}\n")) cli_fail(NLP_ENOMEM);
        out_write(b.data, b.len);
        at += it[i].ncont;
    }
    out_flush();
    nlp_buf_free(&b);
    free(lp), free(top);
    npending = 0;
}

/* One 'context<TAB>continuation' line into the pending batch: encoded, the
 * context cut from its start to fit the model's context of P. */
static void score_add(const char *line, size_t len, const char *name, uint64_t ln, int P)
{
    const char *tab = memchr(line, '\t', len);
    if (!tab)
        cli_die(NLP_EXIT_FAILURE, "%s: no tab: --score reads 'context<TAB>continuation' lines", where(name, ln));
    const size_t nc = (size_t)(tab - line), nk = len - nc - 1;
    if (memchr(tab + 1, '\t', nk))
        cli_die(NLP_EXIT_FAILURE, "%s: more than one tab: --score reads 'context<TAB>continuation' lines, the context "
                "without tabs", where(name, ln));
    score_line *x = &pending[npending];
    if (o.in_fmt == 1) {
        parse_ids(line, nc, name, ln, &x->ctx);
        parse_ids(tab + 1, nk, name, ln, &x->cont);
        x->bytes = -1;
        if (tok) {
            nlp_buf t = {0};
            if (nlp_tokenizer_decode(tok, x->cont.v, x->cont.n, 0, &t, NULL)) cli_fail(nlp_errcode());
            x->bytes = (long long)t.len;
            nlp_buf_free(&t);
        }
    } else {
        encode_as(line, nc, name, ln, 1, &x->ctx);
        encode_as(tab + 1, nk, name, ln, 0, &x->cont);
        x->bytes = (long long)nk;
    }
    if (!x->cont.n) cli_die(NLP_EXIT_FAILURE, "%s: an empty continuation: nothing to score", where(name, ln));
    if (!x->ctx.n) { /* nothing before it: a document starts, as in training after the end-of-text token */
        if (eot < 0)
            cli_die(NLP_EXIT_FAILURE, "%s: an empty context and the model has no end-of-text token to start from: "
                    "give at least one token", where(name, ln));
        if (nlp_ids_push(&x->ctx, eot)) cli_fail(NLP_ENOMEM);
    }
    if (x->cont.n >= (size_t)P)
        cli_die(NLP_EXIT_FAILURE, "%s: the continuation has %zu tokens; the model's context of %d leaves none for "
                "the context", where(name, ln), x->cont.n, P);
    if (x->ctx.n + x->cont.n > (size_t)P) { /* the context's end is what the continuation follows */
        const size_t keep = (size_t)P - x->cont.n, cut = x->ctx.n - keep;
        cli_info("%s: the context loses its first %zu of %zu tokens: with the continuation's %zu they pass the "
                 "model's context of %d", where(name, ln), cut, x->ctx.n, x->cont.n, P);
        memmove(x->ctx.v, x->ctx.v + cut, keep * sizeof *x->ctx.v);
        x->ctx.n = keep;
    }
    if (++npending == SCORE_ROWS) score_flush();
}

static void score_text(const char **inputs, size_t n)
{
    if (!tok && o.in_fmt == 0) mio_no_tokenizer(o.model, "", "tokenizer.json, vocab.json + merges.txt", ", or use --input-format id");
    const int P = context_len("contexts");
    for (size_t f = 0; f < n; f++) {
        lines_in r;
        lines_open(&r, inputs[f], (size_t)o.max_line_bytes);
        const char *line;
        size_t len;
        for (;;) {
            /* a batch while lines are waiting; what has come is answered before waiting for more */
            int got = lines_next(&r, 0, &line, &len);
            if (!got) {
                score_flush();
                if ((got = lines_next(&r, 1, &line, &len)) != 1) break;
            }
            if (len && line[len - 1] == '\r') len--;
            score_add(line, len, inputs[f], r.lineno, P);
        }
        lines_close(&r);
    }
    score_flush();
    for (int i = 0; i < SCORE_ROWS; i++) nlp_ids_free(&pending[i].ctx), nlp_ids_free(&pending[i].cont);
}

// --- in-context learning

/* A JSON string into b. */
static void json_str(nlp_buf *b, const char *s)
{
    if (nlp_json_string(b, s, 0)) cli_fail(NLP_ENOMEM);
}

static void eval_choices(void)
{
    if (!tok) mio_no_tokenizer(o.model, "", "tokenizer.json, vocab.json + merges.txt", "");
    const int P = context_len("contexts");
    nlp_icl_labels labels = {0};
    nlp_icl_data train = {0}, eval = {0};
    const nlp_icl_data *tr = NULL;
    const size_t maxl = (size_t)o.max_line_bytes;
    int rc;
    if (o.shots_from) {
        if ((rc = nlp_icl_read(&train, o.shots_from, NULL, &labels, maxl))) cli_fail(rc);
        if (train.n) tr = &train;
        else if (o.shots > 0)
            cli_die(NLP_EXIT_FAILURE, "'%s' holds no examples: no shots to draw (--shots %ld)", train.path, o.shots);
    }
    if ((rc = nlp_icl_read(&eval, o.eval_choices, tr, &labels, maxl))) cli_fail(rc);
    if (!eval.n) cli_die(NLP_EXIT_FAILURE, "'%s' holds no examples: nothing to evaluate", eval.path);
    if (o.label_words) {
        if (eval.shape == NLP_ICL_CHOICE)
            cli_usage_error("--label-words names labels of classification data; '%s' is choice data (its candidates "
                            "are its choices)", eval.path);
        if (nlp_icl_labels_words(&labels, o.label_words)) cli_usage_error("--label-words: %s", nlp_errmsg());
    }
    nlp_icl_template tpl;
    const char *ts = o.template ? o.template : nlp_icl_template_default(eval.shape);
    if (nlp_icl_template_parse(&tpl, ts, eval.shape))
        cli_usage_error("--template '%s': %s", ts, nlp_errmsg());
    nlp_icl_opts io = {.shots = (int)o.shots, .seed = (uint64_t)o.seed, .norm = o.normalize, .max_len = P,
                       .start = eot};
    nlp_icl *e;
    if ((rc = nlp_icl_new(&e, model, tok, tr, &eval, &labels, &tpl, &io))) {
        if (rc == NLP_EINVAL) cli_usage_error("--normalize unconditional: %s", nlp_errmsg());
        cli_fail(rc);
    }
    cli_debug("%zu %s items of '%s', %d candidates each, %ld shots from %s, context %d", eval.n,
              nlp_icl_shape_name(eval.shape), eval.path, eval.shape == NLP_ICL_CHOICE ? eval.nf - 2 : labels.n,
              o.shots, tr ? train.path : "none", P);
    size_t correct = 0, lowered = 0, cut = 0, shots = 0, warned = 0, cwarned = 0;
    nlp_buf b = {0};
    double t0 = now();
    for (size_t i = 0; i < eval.n; i++) {
        nlp_icl_result r;
        if ((rc = nlp_icl_item(e, i, &r))) cli_fail(rc);
        correct += r.choice == r.gold;
        shots += (size_t)r.shots;
        const char *w = where(eval.path, eval.line[i]);
        if (r.shots < o.shots) {
            lowered++;
            if (cli_verbosity > 0 || warned < 3)
                cli_info("%s: --shots %ld lowered to %d: more shots and the item would pass the model's context of "
                         "%d tokens", w, o.shots, r.shots, P);
            else if (warned == 3)
                cli_info("further items with fewer shots are counted, not named (-v names each)");
            warned++;
        }
        if (r.cut) {
            cut++;
            if ((cli_verbosity > 0 || cwarned < 3) && r.cut_start)
                cli_info("%s: the item's prompt loses its first %zu tokens: even without its text, with its longest "
                         "candidate it passes the model's context of %d", w, r.cut, P);
            else if (cli_verbosity > 0 || cwarned < 3)
                cli_info("%s: the item's text loses its end (%zu tokens): with its longest candidate it passes the "
                         "model's context of %d", w, r.cut, P);
            else if (cwarned == 3)
                cli_info("further items cut are counted, not named (-v names each)");
            cwarned++;
        }
        if (cli_verbosity <= 0) continue;
        /* the item: its line, gold and chosen answers, shots (TRAIN's lines) and each candidate's figures */
        nlp_buf_reset(&b);
        if (nlp_buf_printf(&b, "{\"line\": %llu, \"gold\": ", (unsigned long long)eval.line[i])) cli_fail(NLP_ENOMEM);
        if (eval.shape == NLP_ICL_CHOICE) rc = nlp_buf_printf(&b, "%d, \"choice\": %d", r.gold, r.choice);
        else {
            json_str(&b, labels.name[r.gold]);
            rc = nlp_buf_puts(&b, ", \"choice\": ");
            json_str(&b, labels.name[r.choice]);
        }
        if (rc || nlp_buf_printf(&b, ", \"correct\": %s, \"shots\": [", r.choice == r.gold ? "true" : "false"))
            cli_fail(NLP_ENOMEM);
        for (int s = 0; s < r.shots; s++)
            if (nlp_buf_printf(&b, "%s%llu", s ? ", " : "", (unsigned long long)train.line[r.shot[s]]))
                cli_fail(NLP_ENOMEM);
        if (nlp_buf_printf(&b, "], \"prompt_tokens\": %zu, \"logprob\": [", r.prompt_tokens)) cli_fail(NLP_ENOMEM);
        for (int c = 0; c < r.k; c++)
            if (nlp_buf_printf(&b, "%s%.6f", c ? ", " : "", r.logprob[c])) cli_fail(NLP_ENOMEM);
        if (nlp_buf_puts(&b, "], \"tokens\": [")) cli_fail(NLP_ENOMEM);
        for (int c = 0; c < r.k; c++)
            if (nlp_buf_printf(&b, "%s%zu", c ? ", " : "", r.tokens[c])) cli_fail(NLP_ENOMEM);
        if (nlp_buf_puts(&b, "], \"bytes\": [")) cli_fail(NLP_ENOMEM);
        for (int c = 0; c < r.k; c++)
            if (nlp_buf_printf(&b, "%s%zu", c ? ", " : "", r.bytes[c])) cli_fail(NLP_ENOMEM);
        if (r.uncond) {
            if (nlp_buf_puts(&b, "], \"unconditional\": [")) cli_fail(NLP_ENOMEM);
            for (int c = 0; c < r.k; c++)
                if (nlp_buf_printf(&b, "%s%.6f", c ? ", " : "", r.uncond[c])) cli_fail(NLP_ENOMEM);
        }
        if (nlp_buf_puts(&b, "], \"score\": [")) cli_fail(NLP_ENOMEM);
        for (int c = 0; c < r.k; c++)
            if (nlp_buf_printf(&b, "%s%.6f", c ? ", " : "", r.score[c])) cli_fail(NLP_ENOMEM);
        if (nlp_buf_puts(&b, "]}\n")) cli_fail(NLP_ENOMEM);
        out_write(b.data, b.len);
        out_flush();
    }
    if (lowered)
        cli_info("--shots %ld lowered on %zu of %zu items (the model's context of %d tokens): %.2f shots on average",
                 o.shots, lowered, eval.n, P, (double)shots / (double)eval.n);
    if (cut)
        cli_info("%zu of %zu items cut: alone with their longest candidate they pass the model's context of %d "
                 "tokens", cut, eval.n, P);
    cli_debug("%zu items in %.2f s", eval.n, now() - t0);
    nlp_buf_reset(&b);
    if (nlp_buf_printf(&b, "{\"items\": %zu, \"correct\": %zu, \"accuracy\": %.6f, \"shots\": %ld, \"mean_shots\": "
                       "%.4f, \"lowered\": %zu, \"cut\": %zu, \"candidates\": %d, \"normalize\": \"%s\"}\n",
                       eval.n, correct, (double)correct / (double)eval.n, o.shots, (double)shots / (double)eval.n,
                       lowered, cut, eval.shape == NLP_ICL_CHOICE ? eval.nf - 2 : labels.n, norms[o.normalize]))
        cli_fail(NLP_ENOMEM);
    out_write(b.data, b.len);
    out_flush();
    nlp_buf_free(&b);
    nlp_icl_free(e);
    nlp_icl_template_free(&tpl);
    nlp_icl_data_free(&eval), nlp_icl_data_free(&train);
    nlp_icl_labels_free(&labels);
}

int main(int argc, char **argv)
{
    /* no nlp_threads_passive: decoding wants libgomp's bounded spinning (thread.h) */
    struct cli c = {"generate", usage, opts, NULL};
    int first = cli_parse(&c, argc, argv);
    if (!o.model) cli_usage_error("no model: give -m MODEL");
    if (o.prompt && (first < argc || o.input)) cli_usage_error("-p and input files exclude each other");
    if (o.prompt && o.batch) cli_usage_error("--batch reads prompts from input lines, not -p");
    if (o.perplexity + o.score + !!o.eval_choices > 1)
        cli_usage_error("--perplexity, --score and --eval-choices exclude each other");
    if (o.perplexity && (o.prompt || o.beam > 1 || o.echo))
        cli_usage_error("--perplexity scores input files; -p, --beam-size and --echo do not apply");
    if (o.score && (o.prompt || o.batch || o.beam > 1 || o.echo || o.out_fmt == 1 || o.stop))
        cli_usage_error("--score reads 'context<TAB>continuation' lines and prints JSON; -p, --batch, --beam-size, "
                        "--echo, --output-format id and --stop do not apply");
    if (o.eval_choices && (o.prompt || o.input || first < argc || o.batch || o.beam > 1 || o.echo || o.in_fmt == 1 ||
                           o.out_fmt == 1 || o.stop))
        cli_usage_error("--eval-choices reads its FILE (and --shots-from) and prints JSON; input files, -p, --batch, "
                        "--beam-size, --echo, --input-format, --output-format and --stop do not apply");
    if (!o.eval_choices) {
        static const char *const icl[] = {"shots", "shots-from", "template", "normalize", "label-words"};
        for (size_t i = 0; i < sizeof icl / sizeof *icl; i++)
            if (cli_given(icl[i])) cli_usage_error("--%s is for --eval-choices FILE", icl[i]);
    }
    if (o.shots > 0 && !o.shots_from)
        cli_usage_error("--shots %ld: the shots are drawn from --shots-from TRAIN; give it", o.shots);
    if (o.beam > 1 && o.rep != 1.0) cli_usage_error("--repetition-penalty applies to sampling and greedy search, not --beam-size");
    if (o.beam > 1 && !o.greedy && o.temperature > 0 && (o.temperature != 0.8 || o.top_k != 40 || o.top_p != 0.95))
        cli_usage_error("--beam-size searches; it does not sample: drop --temperature, --top-k and --top-p");
    if (o.greedy && ((cli_given("temperature") && o.temperature > 0) || cli_given("top-k") || cli_given("top-p")))
        cli_usage_error("--greedy takes the most probable token; it does not sample: drop --temperature, --top-k "
                        "and --top-p (or --greedy)");
    if (o.max_length > 0 && !o.perplexity && !o.score && !o.eval_choices)
        cli_usage_error("--max-length is for --perplexity, --score and --eval-choices (-n bounds what is generated)");
    if (o.bf16 && o.int8) cli_usage_error("--bf16 and --int8 exclude each other");
    int threads = nlp_threads_set((int)o.threads);

    model_name = o.model;
    double t0 = now();
    model = mio_load_model(o.model, NLP_ARCH_GPT); /* or llama */
    if (o.bf16) nlp_model_round_bf16(model); /* the prompt's pass and --perplexity too */
    int lrc = nlp_model_set_inference_layout(model);
    if (!lrc && o.bf16) lrc = nlp_model_set_inference_bf16(model);
    if (!lrc && o.int8) lrc = nlp_model_set_inference_int8(model);
    if (lrc) cli_die(nlp_exit_code(lrc), "'%s': %s", o.model, nlp_errmsg());
    cli_debug("model '%s': %zu parameters, loaded in %.2f s%s", o.model, nlp_model_param_count(model), now() - t0,
              o.int8 ? " (int8 weights)" : o.bf16 ? " (bf16 weights)" : "");
    /* text needs the tokenizer; ids use it for the end-of-text token when there is one */
    int need_tok = o.eval_choices || (!o.perplexity && (o.in_fmt == 0 || (!o.score && o.out_fmt == 0)));
    if (o.tokenizer) tok = mio_load_tokenizer(o.tokenizer);
    else tok = mio_load_tokenizer_beside(o.model);
    if (!tok && need_tok)
        mio_no_tokenizer(o.model, "", "tokenizer.json, vocab.json + merges.txt",
                         ", or use --input-format id --output-format id");
    if (tok) {
        mio_check_vocab(tok, o.tokenizer ? o.tokenizer : o.model, model, o.model);
        const size_t tv = nlp_tokenizer_vocab_size(tok);
        if (tv < (size_t)nlp_model_cfg(model)->vocab_size) {
            /* a vocabulary padded past the tokenizer's ids (llm.c pads GPT-2's 50257
             * to 50304): the model never saw the others, and they have no text */
            vocab_limit = (int)tv;
            cli_debug("'%s' has %zu ids, the model %d: only the tokenizer's are generated",
                      o.tokenizer ? o.tokenizer : o.model, tv, nlp_model_cfg(model)->vocab_size);
        }
        eot = mio_eot(tok, NULL, o.model);
        if (!(tst = nlp_tok_state_new(tok))) cli_fail(NLP_ENOMEM);
    }

    size_t ninputs = 0;
    static const char **inputs; /* static: still reachable when a usage error exits below */
    inputs = nlp_calloc((size_t)(argc - first) + 2, sizeof *inputs);
    if (!inputs) cli_fail(NLP_ENOMEM);
    if (o.input) inputs[ninputs++] = o.input;
    for (int i = first; i < argc; i++) inputs[ninputs++] = argv[i];
    if (!ninputs && !o.prompt) inputs[ninputs++] = "-";

    if (o.perplexity) {
        if (o.in_fmt == 1) cli_usage_error("--perplexity reads text or token streams, not --input-format id");
        perplexity(inputs, ninputs, threads);
        goto done;
    }
    if (o.score) {
        score_text(inputs, ninputs);
        goto done;
    }
    if (o.eval_choices) {
        eval_choices();
        goto done;
    }

    nlp_rng rng;
    nlp_rng_seed(&rng, (uint64_t)o.seed);
    nlp_ids prompt = {0};
    if (o.prompt) {
        if (o.in_fmt == 1) parse_ids(o.prompt, strlen(o.prompt), "-p", 0, &prompt);
        else encode_text(o.prompt, strlen(o.prompt), "-p", 0, &prompt);
        run_prompt(&prompt, "-p", 0, &rng);
        if (o.out_fmt == 1 || o.batch || isatty(1)) out_write("\n", 1);
    } else if (o.batch || o.in_fmt == 1) {
        /* one prompt per line (ids are always one prompt per line) */
        for (size_t f = 0; f < ninputs; f++) {
            lines_in r;
            lines_open(&r, inputs[f], (size_t)o.max_line_bytes);
            const char *line;
            size_t len;
            while (lines_next(&r, 1, &line, &len) == 1) {
                uint64_t ln = r.lineno;
                if (len && line[len - 1] == '\r') len--;
                if (o.in_fmt == 1) parse_ids(line, len, inputs[f], ln, &prompt);
                else encode_text(line, len, inputs[f], ln, &prompt);
                run_prompt(&prompt, inputs[f], ln, &rng);
                out_write("\n", 1);
                out_flush();
            }
            lines_close(&r);
        }
    } else {
        nlp_buf all = {0};
        for (size_t f = 0; f < ninputs; f++) {
            /* a prompt fills at most the model's context: more text than
             * --max-line-bytes is refused before it fills the memory */
            char *d;
            size_t len, room = (size_t)o.max_line_bytes - all.len;
            int rc = nlp_read_file_max(inputs[f], room, &d, &len);
            if (rc == NLP_EFORMAT)
                cli_die(NLP_EXIT_FAILURE, "'%s': the prompt is longer than %ld bytes (--max-line-bytes raises the "
                        "limit)", strcmp(inputs[f], "-") ? inputs[f] : "standard input", o.max_line_bytes);
            if (rc) cli_fail(rc);
            if (nlp_buf_append(&all, d, len)) cli_fail(NLP_ENOMEM);
            free(d);
        }
        while (all.len && (all.data[all.len - 1] == '\n' || all.data[all.len - 1] == '\r')) all.len--;
        encode_text(all.data ? all.data : "", all.len, ninputs == 1 ? inputs[0] : "input", 0, &prompt);
        nlp_buf_free(&all);
        run_prompt(&prompt, ninputs == 1 ? inputs[0] : "input", 0, &rng);
        if (o.out_fmt == 1 || isatty(1)) out_write("\n", 1);
    }
    nlp_ids_free(&prompt);
    if (cli_verbosity > 0)
        cli_debug("prompt: %llu tokens in %.3f s (%.1f tokens/s); generated %llu tokens in %.3f s (%.2f tokens/s); "
                  "%.2f new tokens/s with the prompt's time included",
                  (unsigned long long)prompt_tokens, prompt_seconds,
                  prompt_seconds > 0 ? (double)prompt_tokens / prompt_seconds : 0, (unsigned long long)gen_tokens,
                  gen_seconds, gen_seconds > 0 ? (double)gen_tokens / gen_seconds : 0,
                  (double)gen_tokens / (prompt_seconds + gen_seconds));
done:
    out_flush();
    nlp_ids_free(&st.gen);
    nlp_buf_free(&st.text);
    nlp_tok_state_free(tst);
    nlp_tokenizer_free(tok);
    nlp_model_free(model);
    free(inputs);
    cli_free();
    return 0;
}
