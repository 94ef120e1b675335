/*
 * translate — translate sentences with an encoder-decoder: one source
 * sentence per input line, its translation on the same line of the output,
 * streamed in batches.
 *
 * Thin: the search is lib/decode's (translate.h), tokenization lib/tok's.
 */
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "common/cli.h"
#include "common/lines.h"
#include "common/modelio.h"
#include "decode/translate.h"
#include "model/model.h"
#include "nn/gemm.h"
#include "text/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "Usage: translate -m MODEL [OPTION]... [FILE]...\n"
    "Translate each line of the FILEs (default standard input) with an encoder-decoder\n"
    "model; each translation is written on its own line, in order, as soon as its batch\n"
    "is done. An empty line gives an empty line.\n"
    "\n"
    "  -m, --model PATH          the model: a run directory (its newest checkpoint), a\n"
    "                            checkpoint, or a directory or file with model.safetensors\n"
    "      --tokenizer FILE      target (and shared) tokenizer (default: tokenizer.json\n"
    "                            beside the model)\n"
    "      --src-tokenizer FILE  source tokenizer (default: src-tokenizer.json beside the\n"
    "                            model, else the shared one)\n"
    "      --prefix TEXT         put TEXT before each input line, as T5's task prefixes\n"
    "                            ('translate English to German: '); default: the prefix\n"
    "                            the model was trained with (pretrain --prefix), if any;\n"
    "                            '' for none\n"
    "  -i, --input FILE          read FILE (also: FILE arguments)\n"
    "  -b, --beam-size N         hypotheses kept per sentence (default 4; 1 = greedy)\n"
    "      --length-penalty F    GNMT length penalty alpha: hypotheses are ranked by\n"
    "                            log-probability / ((5 + length) / 6)^alpha (default 0.6)\n"
    "      --max-length N        generate at most N tokens per sentence (default auto:\n"
    "                            A x source tokens + B, see below)\n"
    "      --max-length-a A      (default 1.5)\n"
    "      --max-length-b B      (default 10)\n"
    "      --n-best N            write the N best hypotheses of each sentence as\n"
    "                            'i ||| hypothesis ||| score' lines (i from 0; default\n"
    "                            auto: one plain translation per line)\n"
    "      --scores              prefix each translation with its score and a tab: the\n"
    "                            log-probability divided by the length penalty\n"
    "      --batch-size N        sentences decoded together (default 16)\n"
    "      --attention FILE      write each sentence's cross-attention (last decoder layer,\n"
    "                            mean over heads) as TSV blocks; tools/plot-attention\n"
    "                            draws one as a heatmap\n"
    "      --input-format FMT    text (default) or id: sources as token ids, fed as they\n"
    "                            are (no end-of-sentence added)\n"
    "      --output-format FMT   text (default, detokenized) or id\n"
    "      --max-line-bytes N    the longest input line read (default 16777216 = 16 MiB);\n"
    "                            a longer one is an error naming the file and line\n"
    "      --bf16                matrix products with bfloat16 operands and fp32\n"
    "                            accumulation (needs AVX-512 BF16)\n"
    "      --int8                weights quantized to int8 in blocks of 32 (llama.cpp's\n"
    "                            Q8_0), activations likewise per row\n"
    "  -t, --threads N           threads (default: all CPUs); the output does not depend\n"
    "                            on it, nor on --batch-size\n"
    "  -c, --config FILE         read options from a YAML file (keys = long option names)\n"
    "      --dump-config         print the effective configuration and exit\n"
    "  -q, --quiet               no warnings\n"
    "  -v, --verbose             more messages (-v: speed figures)\n"
    "  -h, --help                display this help and exit\n"
    "  -V, --version             output version information and exit\n"
    "\n"
    "Exit status: 0 ok, 1 bad input (ids outside the vocabulary, a sentence longer than\n"
    "the model's positions) or I/O error, 2 usage error (also: no tokenizer for text),\n"
    "3 missing, unreadable or incompatible model or tokenizer (a GPT or BERT model, a\n"
    "tokenizer with more ids than the model), or a missing, unreadable or invalid\n"
    "config file (-c).\n";

static const char *const formats[] = {"text", "id", NULL};

static struct {
    const char *model, *tokenizer, *src_tokenizer, *input, *attention, *prefix;
    int in_fmt, out_fmt, scores, bf16, int8;
    long beam, max_length, len_b, nbest, batch, threads, max_line_bytes;
    double length_penalty, len_a;
} o = {
    .beam = 4,
    .max_length = -1,
    .length_penalty = 0.6,
    .len_a = 1.5,
    .len_b = 10,
    .nbest = -1,
    .batch = 16,
    .max_line_bytes = CLI_MAX_LINE_BYTES,
};

static struct cli_opt opts[] = {
    {.name = "model", .key = 'm', .kind = CLI_STR, .dest = &o.model},
    {.name = "tokenizer", .kind = CLI_STR, .dest = &o.tokenizer},
    {.name = "src-tokenizer", .kind = CLI_STR, .dest = &o.src_tokenizer},
    {.name = "prefix", .kind = CLI_STR, .dest = &o.prefix},
    {.name = "input", .key = 'i', .kind = CLI_STR, .dest = &o.input},
    {.name = "beam-size", .key = 'b', .kind = CLI_INT, .dest = &o.beam, .min = 1, .max = 256},
    {.name = "length-penalty", .kind = CLI_DOUBLE, .dest = &o.length_penalty, .min = -100, .max = 100},
    {.name = "max-length", .kind = CLI_INT, .dest = &o.max_length, .min = 1, .max = 1 << 20, .flags = CLI_AUTO},
    {.name = "max-length-a", .kind = CLI_DOUBLE, .dest = &o.len_a, .min = 0, .max = 1000},
    {.name = "max-length-b", .kind = CLI_INT, .dest = &o.len_b, .min = 0, .max = 1 << 20},
    {.name = "n-best", .kind = CLI_INT, .dest = &o.nbest, .min = 1, .max = 256, .flags = CLI_AUTO},
    {.name = "scores", .kind = CLI_BOOL, .dest = &o.scores},
    {.name = "batch-size", .kind = CLI_INT, .dest = &o.batch, .min = 1, .max = 1 << 16},
    {.name = "attention", .kind = CLI_STR, .dest = &o.attention},
    {.name = "input-format", .kind = CLI_CHOICE, .dest = &o.in_fmt, .choices = formats},
    {.name = "output-format", .kind = CLI_CHOICE, .dest = &o.out_fmt, .choices = formats},
    {.name = "max-line-bytes", .kind = CLI_INT, .dest = &o.max_line_bytes, .min = 1, .max = 1e15},
    {.name = "bf16", .kind = CLI_BOOL, .dest = &o.bf16},
    {.name = "int8", .kind = CLI_BOOL, .dest = &o.int8},
    {.name = "threads", .key = 't', .kind = CLI_INT, .dest = &o.threads, .min = 0, .max = 4096},
    {.name = NULL},
};

static nlp_model *model;
static nlp_tokenizer *tgt_tok, *src_tok;
static nlp_tok_state *src_st;
static const char *prefix; /* before each input line (NULL: none) */
static size_t prefix_len;
static nlp_writer *attw; /* --attention: atomic, in place at the end */
static nlp_buf att;      /* one sentence's block */
static uint64_t sentences, src_tokens, out_tokens;
static double seconds;

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

// --- one chunk of sentences

typedef struct chunk {
    nlp_ids *src; /* as fed to the encoder */
    size_t n, cap;
} chunk;

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
    const int V = nlp_model_cfg(model)->src_vocab_size;
    size_t i = 0;
    out->n = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) i++;
        if (i >= n) break;
        long v = 0;
        size_t st = i;
        while (i < n && s[i] >= '0' && s[i] <= '9' && v <= 1L << 31) v = v * 10 + (s[i++] - '0');
        if (i == st || (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\r'))
            cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: '%.*s' is not a token id", name, (unsigned long long)line,
                    word_len(s + st, n - st), s + st);
        if (v >= V)
            cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: id %ld is not below the model's source vocabulary size %d", name,
                    (unsigned long long)line, v, V);
        if (nlp_ids_push(out, (int32_t)v)) cli_fail(NLP_ENOMEM);
    }
}

static void encode_line(const char *s, size_t n, const char *name, uint64_t line, nlp_ids *out)
{
    if (n && s[n - 1] == '\r') n--;
    out->n = 0;
    if (o.in_fmt == 1) {
        parse_ids(s, n, name, line, out);
        return;
    }
    size_t blank = 0; /* a blank line stays empty; other lines go as they are, as pretrain read them */
    while (blank < n && (s[blank] == ' ' || s[blank] == '\t')) blank++;
    if (blank == n) return;
    nlp_buf fix = {0};
    if (!nlp_utf8_valid(s, n, NULL)) {
        if (nlp_utf8_repair(s, n, &fix, NULL)) cli_fail(NLP_ENOMEM);
        cli_warn("'%s' line %llu: invalid UTF-8 replaced by U+FFFD", name, (unsigned long long)line);
        s = fix.data, n = fix.len;
    }
    static nlp_buf cat; /* the prefix and the line, tokenized together as pretrain --prefix did */
    if (prefix) {
        nlp_buf_reset(&cat);
        if (nlp_buf_append(&cat, prefix, prefix_len) || nlp_buf_append(&cat, s, n)) cli_fail(NLP_ENOMEM);
        s = cat.data, n = cat.len;
    }
    int rc = nlp_tokenizer_encode_ids(src_tok, src_st, s, n, 0, out);
    nlp_buf_free(&fix);
    if (rc) cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: %s", name, (unsigned long long)line, nlp_errmsg());
    if (nlp_ids_push(out, nlp_model_cfg(model)->eos_id)) cli_fail(NLP_ENOMEM);
    const int P = nlp_model_cfg(model)->max_positions;
    if (out->n > (size_t)P) {
        cli_warn("'%s' line %llu: %zu tokens, more than the model's %d positions: translating the first %d", name,
                 (unsigned long long)line, out->n, P, P);
        out->v[P - 1] = nlp_model_cfg(model)->eos_id;
        out->n = (size_t)P;
    }
}

/* A token for the attention table: its text as decoding gives it, with
 * spaces written as U+2581 (SentencePiece's mark), when that is whole UTF-8;
 * else its stored piece (a byte-level token in the middle of a character),
 * tabs and newlines as spaces; its id when there is no tokenizer. */
static void put_piece(const nlp_tokenizer *tk, int32_t id)
{
    static nlp_buf t;
    size_t n;
    int rc = 0;
    nlp_buf_reset(&t);
    if (tk && nlp_tokenizer_decode(tk, &id, 1, 0, &t, NULL) == 0 && t.len && nlp_utf8_valid(t.data, t.len, NULL)) {
        for (size_t i = 0; i < t.len && !rc; i++)
            rc = t.data[i] == ' ' ? nlp_buf_puts(&att, "\u2581")
                                  : nlp_buf_putc(&att, t.data[i] == '\t' || t.data[i] == '\n' || t.data[i] == '\r' ? ' ' : t.data[i]);
        if (rc) cli_fail(NLP_ENOMEM);
        return;
    }
    const char *s = tk ? nlp_tokenizer_id_to_token(tk, id, &n) : NULL;
    if (!s) rc = nlp_buf_printf(&att, "%d", id);
    for (size_t i = 0; s && i < n && !rc; i++)
        rc = nlp_buf_putc(&att, s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ? ' ' : s[i]);
    if (rc) cli_fail(NLP_ENOMEM);
}

/* Cross-attention of one sentence: a teacher-forced pass over its output. */
static void write_attention(uint64_t index, const nlp_ids *src, const nlp_ids *hyp)
{
    const nlp_model_config *cfg = nlp_model_cfg(model);
    nlp_buf_reset(&att);
    const int S = (int)src->n, T = (int)hyp->n + 1;
    if (nlp_buf_printf(&att, "sentence\t%llu\n", (unsigned long long)index)) cli_fail(NLP_ENOMEM);
    if (!src->n || T > cfg->max_positions) {
        if (nlp_buf_putc(&att, '\n') || nlp_writer_write(attw, att.data, att.len)) cli_fail(nlp_errcode());
        return;
    }
    int32_t *tin = nlp_malloc((size_t)T * sizeof *tin);
    if (!tin) cli_fail(NLP_ENOMEM);
    tin[0] = cfg->bos_id;
    if (hyp->n) memcpy(tin + 1, hyp->v, hyp->n * sizeof *tin); /* an empty translation has no array */
    nlp_batch b = {.B = 1, .S = S, .T = T, .src = src->v, .tgt_in = tin};
    int rc = nlp_model_forward(model, &b, NULL), H;
    if (rc) cli_fail(rc);
    const float *P = nlp_model_cross_attention(model, -1, &H);
    if (!P) cli_die(NLP_EXIT_FAILURE, "no cross-attention to write");
    for (int s = 0; s < S; s++) {
        if (nlp_buf_putc(&att, '\t')) cli_fail(NLP_ENOMEM);
        put_piece(src_tok, src->v[s]);
    }
    rc = nlp_buf_putc(&att, '\n');
    for (int t = 0; t < T && !rc; t++) {
        put_piece(tgt_tok, t < (int)hyp->n ? hyp->v[t] : cfg->eos_id);
        for (int s = 0; s < S && !rc; s++) {
            double a = 0;
            for (int h = 0; h < H; h++) a += P[((size_t)h * T + t) * S + s];
            rc = nlp_buf_printf(&att, "\t%.4f", a / H);
        }
        if (!rc) rc = nlp_buf_putc(&att, '\n');
    }
    if (rc || nlp_buf_putc(&att, '\n')) cli_fail(NLP_ENOMEM);
    free(tin);
    if ((rc = nlp_writer_write(attw, att.data, att.len))) cli_fail(rc);
}

static void write_hyp(const nlp_ids *h, nlp_buf *text)
{
    if (o.out_fmt == 1) {
        for (size_t i = 0; i < h->n; i++) printf(i ? " %d" : "%d", h->v[i]);
        return;
    }
    int rc = mio_decode_line(tgt_tok, h->v, h->n, text);
    if (rc) cli_fail(rc);
    out_write(text->data, text->len);
}

static void run_chunk(chunk *c, const nlp_translate_opts *to)
{
    if (!c->n) return;
    const int NB = to->nbest > 1 ? to->nbest : 1;
    nlp_ids *hyp = nlp_calloc(c->n * NB, sizeof *hyp);
    float *score = nlp_malloc(c->n * NB * sizeof *score);
    if (!hyp || !score) cli_fail(NLP_ENOMEM);
    double t0 = now();
    int rc = nlp_translate(model, c->src, c->n, to, hyp, score);
    if (rc) cli_fail(rc);
    seconds += now() - t0;
    nlp_buf text = {0};
    for (size_t i = 0; i < c->n; i++) {
        src_tokens += c->src[i].n;
        out_tokens += hyp[i * NB].n;
        if (o.nbest > 0) {
            for (int j = 0; j < NB; j++) {
                if (!c->src[i].n && j) break;
                printf("%llu ||| ", (unsigned long long)sentences);
                write_hyp(&hyp[i * NB + j], &text);
                printf(" ||| %.6f\n", (double)score[i * NB + j]);
            }
        } else {
            if (o.scores) printf("%.6f\t", (double)score[i * NB]);
            write_hyp(&hyp[i * NB], &text);
            out_write("\n", 1);
        }
        if (attw) write_attention(sentences, &c->src[i], &hyp[i * NB]);
        sentences++;
    }
    out_flush();
    nlp_buf_free(&text);
    for (size_t i = 0; i < c->n * NB; i++) nlp_ids_free(&hyp[i]);
    free(hyp), free(score);
}

static void translate_input(const char *name, const nlp_translate_opts *to, chunk *c)
{
    lines_in r;
    lines_open(&r, name, (size_t)o.max_line_bytes);
    /* a chunk is sorted by length inside nlp_translate: gather several
     * batches when they are there, but never wait for input while holding
     * sentences */
    const size_t most = (size_t)o.batch * 8;
    const char *line;
    size_t n;
    for (;;) {
        int got = lines_next(&r, c->n == 0, &line, &n);
        if (got) {
            if (nlp_grow(&c->src, &c->cap, c->n + 1, sizeof *c->src)) cli_fail(NLP_ENOMEM);
            memset(&c->src[c->n], 0, sizeof *c->src);
            encode_line(line, n, r.name, r.lineno, &c->src[c->n]);
            c->n++;
        }
        if ((!got || c->n >= most) && c->n) {
            run_chunk(c, to);
            for (size_t i = 0; i < c->n; i++) nlp_ids_free(&c->src[i]);
            c->n = 0;
        }
        if (!got && lines_done(&r)) break;
    }
    lines_close(&r);
}

int main(int argc, char **argv)
{
    struct cli c = {"translate", usage, opts, NULL};
    int first = cli_parse(&c, argc, argv);
    if (!o.model) cli_usage_error("no model: give -m MODEL");
    if (nlp_prefix_check(o.prefix)) {
        const char *pf;
        int pl;
        if (cli_value_origin(o.prefix, &pf, &pl)) cli_die(NLP_EXIT_FORMAT, "'%s' line %d: prefix: %s", pf, pl, nlp_errmsg());
        cli_usage_error("--prefix: %s", nlp_errmsg());
    }
    if (o.prefix && *o.prefix && o.in_fmt == 1)
        cli_usage_error("--prefix is text: with --input-format id, put its ids in the input");
    if (o.nbest > o.beam) cli_usage_error("--n-best %ld: at most --beam-size (%ld) hypotheses are kept", o.nbest, o.beam);
    if (o.nbest > 0 && o.scores) cli_usage_error("--n-best lines carry their scores already; drop --scores");
    if (o.bf16 && o.int8) cli_usage_error("--bf16 and --int8 exclude each other");
    int threads = nlp_threads_set((int)o.threads);
    cli_debug("%d thread%s", threads, threads == 1 ? "" : "s");
    if (o.bf16 && nlp_gemm_set_mode(NLP_GEMM_BF16)) cli_usage_error("--bf16: %s", nlp_errmsg());

    double t0 = now();
    model = mio_load_model(o.model, NLP_ARCH_TRANSFORMER);
    int qrc = o.int8 ? nlp_model_set_inference_int8(model) : 0;
    if (qrc) cli_die(nlp_exit_code(qrc), "'%s': %s", o.model, nlp_errmsg());
    cli_debug("model '%s': %zu parameters, loaded in %.2f s%s", o.model, nlp_model_param_count(model), now() - t0,
              o.int8 ? " (int8 weights)" : o.bf16 ? " (bf16 products)" : "");
    const int need_src = o.in_fmt == 0, need_tgt = o.out_fmt == 0;
    const char *tname = o.tokenizer ? o.tokenizer : o.model, *sname = tname;
    tgt_tok = o.tokenizer ? mio_load_tokenizer(o.tokenizer) : mio_load_tokenizer_beside(o.model);
    if (o.src_tokenizer) src_tok = mio_load_tokenizer(o.src_tokenizer), sname = o.src_tokenizer;
    else {
        char ck[4096], p[4200];
        mio_resolve(o.model, ck, sizeof ck);
        snprintf(p, sizeof p, "%s/src-tokenizer.json", nlp_is_dir(ck) ? ck : ".");
        if (nlp_is_dir(ck) && nlp_file_exists(p)) src_tok = mio_load_tokenizer(p), sname = p;
    }
    const nlp_model_config *cfg = nlp_model_cfg(model);
    /* the task prefix: --prefix, else the model's own */
    prefix = cli_given("prefix") ? o.prefix : nlp_model_prefix(model);
    if (prefix && !*prefix) prefix = NULL;
    if (prefix && o.in_fmt == 1) { /* the model's: --prefix was refused above */
        cli_warn("'%s' was trained with the prefix '%s', which ids are not given (--input-format id): put its ids in "
                 "the input, or --prefix '' to say none", o.model, prefix);
        prefix = NULL;
    }
    prefix_len = prefix ? strlen(prefix) : 0;
    if (prefix) cli_debug("prefix '%s'%s", prefix, cli_given("prefix") ? "" : " (the model's)");
    if (!src_tok && tgt_tok && cfg->shared_vocab) src_tok = tgt_tok;
    if ((need_tgt && !tgt_tok) || (need_src && !src_tok))
        mio_no_tokenizer(o.model, need_src && !src_tok ? "source " : "target ",
                         cfg->shared_vocab ? "tokenizer.json" : "tokenizer.json, src-tokenizer.json",
                         cfg->shared_vocab ? ", or use --input-format id --output-format id"
                                           : " and --src-tokenizer, or use --input-format id --output-format id");
    if (tgt_tok && nlp_tokenizer_vocab_size(tgt_tok) > (size_t)cfg->vocab_size)
        cli_die(NLP_EXIT_FORMAT, "'%s': %zu ids, but the model '%s' has a target vocabulary of %d: not its tokenizer",
                tname, nlp_tokenizer_vocab_size(tgt_tok), o.model, cfg->vocab_size);
    if (src_tok && nlp_tokenizer_vocab_size(src_tok) > (size_t)cfg->src_vocab_size)
        cli_die(NLP_EXIT_FORMAT, "'%s': %zu ids, but the model '%s' has a source vocabulary of %d: not its tokenizer",
                sname, nlp_tokenizer_vocab_size(src_tok), o.model, cfg->src_vocab_size);
    if (src_tok && !(src_st = nlp_tok_state_new(src_tok))) cli_fail(NLP_ENOMEM);
    /* the special tokens the model was trained with must be the tokenizer's */
    for (int side = 0; side < 2; side++) {
        const nlp_tokenizer *tk = side ? src_tok : tgt_tok;
        if (!tk || (side && tk == tgt_tok)) continue;
        int32_t sp[3];
        mio_special_ids(tk, sp);
        if (sp[0] != cfg->pad_id || sp[2] != cfg->eos_id)
            cli_die(NLP_EXIT_FORMAT, "'%s' is not this model's tokenizer: its padding and end-of-sentence ids are %d "
                    "and %d, the model's %d and %d", side ? sname : tname, sp[0], sp[2], cfg->pad_id, cfg->eos_id);
    }
    int rc;
    {
        const char *in[] = {o.input, o.tokenizer, o.src_tokenizer, o.model};
        cli_check_output("--attention", o.attention, in, sizeof in / sizeof *in);
        cli_check_output("--attention", o.attention, (const char *const *)argv + first, (size_t)(argc - first));
    }
    if (o.attention && (rc = nlp_writer_open(&attw, o.attention, 0))) cli_fail(rc);

    nlp_translate_opts to = nlp_translate_defaults();
    to.beams = (int)o.beam;
    to.alpha = o.length_penalty;
    to.max_len = (int)o.max_length;
    to.len_a = o.len_a, to.len_b = (int)o.len_b;
    to.nbest = (int)(o.nbest > 0 ? o.nbest : 1);
    to.batch = (int)o.batch;
    /* a target tokenizer with fewer ids than the model (a padded vocabulary):
     * only ids it can write are produced */
    if (tgt_tok && nlp_tokenizer_vocab_size(tgt_tok) < (size_t)cfg->vocab_size)
        to.vocab_limit = (int)nlp_tokenizer_vocab_size(tgt_tok);

    chunk ch = {0};
    size_t ninputs = 0;
    if (o.input) translate_input(o.input, &to, &ch), ninputs++;
    for (int i = first; i < argc; i++) translate_input(argv[i], &to, &ch), ninputs++;
    if (!ninputs) translate_input("-", &to, &ch);
    if (attw && (rc = nlp_writer_close(attw))) cli_fail(rc);
    nlp_buf_free(&att);
    cli_debug("%llu sentences, %llu source and %llu output tokens in %.3f s: %.2f sentences/s, %.1f output tokens/s",
              (unsigned long long)sentences, (unsigned long long)src_tokens, (unsigned long long)out_tokens, seconds,
              seconds > 0 ? (double)sentences / seconds : 0, seconds > 0 ? (double)out_tokens / seconds : 0);
    out_flush();
    free(ch.src);
    nlp_tok_state_free(src_st);
    if (src_tok != tgt_tok) nlp_tokenizer_free(src_tok);
    nlp_tokenizer_free(tgt_tok);
    nlp_model_free(model);
    cli_free();
    return 0;
}
