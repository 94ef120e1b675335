/*
 * train-wordpiece — learn a WordPiece (BERT) tokenizer from text: count the
 * words once under BERT's normalizer and pre-tokenizer, then merge by the
 * likelihood score freq(ab) / (freq(a) freq(b)) (or, with --score
 * frequency, by pair count as HF tokenizers' WordPieceTrainer does) until
 * the vocabulary is full.
 */
#include "base/config.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "common/cli.h"
#include "common/train.h"
#include "tok/tokfiles.h"
#include "tok/wordpiece_train.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: train-wordpiece [OPTION]... [FILE]...\n"
    "Learn a WordPiece vocabulary from text FILEs (default standard input) and write a\n"
    "BERT tokenizer.\n"
    "\n"
    "  -i, --input FILE          read FILE too (repeatable; also: FILE arguments)\n"
    "  -o, --output FILE         where to write (default standard output)\n"
    "      --in-place            when -o's directory is read-only but the file is\n"
    "                            writable, write the file in place (not atomically)\n"
    "      --format FMT          json (HF tokenizer.json, default) or vocab (BERT vocab.txt)\n"
    "      --score SCORE         likelihood (default): merge the pair with the highest\n"
    "                            freq(ab) / (freq(a) freq(b)); frequency: the most frequent\n"
    "                            pair, as HF's WordPiece trainer\n"
    "      --vocab-size N        size of the vocabulary, special tokens and alphabet\n"
    "                            included (default 30000)\n"
    "      --min-frequency N     never merge a pair seen fewer than N times (default 2)\n"
    "      --special-tokens LIST special tokens, separated by commas or spaces; they take\n"
    "                            the first ids (default '[PAD] [UNK] [CLS] [SEP] [MASK]';\n"
    "                            '' for none)\n"
    "      --unk-token TOKEN     the token for words that cannot be spelled (default [UNK];\n"
    "                            added to the special tokens when given and missing)\n"
    "      --prefix P            marks pieces that continue a word (default ##)\n"
    "      --lowercase           lowercase the text, as uncased BERT (default)\n"
    "      --no-lowercase        keep case, as cased BERT\n"
    "      --strip-accents       remove accents (NFD, drop nonspacing marks); default:\n"
    "                            when lowercasing\n"
    "      --no-strip-accents    keep accents\n"
    "      --limit-alphabet N    keep only the N most frequent characters\n"
    "      --max-sentences N     read at most N lines (0 = all; bounds memory)\n"
    "      --max-line-bytes N    the longest line read (default 16777216 = 16 MiB); a longer\n"
    "                            one is an error\n"
    "      --strict              invalid UTF-8 is an error (default: replaced by U+FFFD)\n"
    "  -t, --threads N           threads for counting (default: all CPUs); the result does\n"
    "                            not depend on it\n"
    "      --progress            show progress on standard error (default: on a terminal)\n"
    "      --no-progress         do not\n"
    "  -c, --config FILE         read options from a YAML file (keys = long option names)\n"
    "      --dump-config         print the effective configuration and exit\n"
    "  -q, --quiet               no warnings\n"
    "  -v, --verbose             more messages\n"
    "  -h, --help                display this help and exit\n"
    "  -V, --version             output version information and exit\n"
    "\n"
    "Exit status: 0 ok, 1 bad input data or I/O error, 2 usage error, 3 missing, unreadable\n"
    "or invalid config file (-c).\n";

static const char *const formats[] = {"json", "vocab", NULL};
static const char *const scores[] = {"likelihood", "frequency", NULL};

static struct {
    struct cli_list input;
    const char *output, *specials, *unk, *prefix;
    int format, score, lowercase, strip, strict, progress, in_place;
    long vocab_size, min_frequency, limit_alphabet, max_sentences, max_line_bytes, threads;
} o = {
    .output = "-",
    .max_line_bytes = CLI_MAX_LINE_BYTES,
    .specials = "[PAD] [UNK] [CLS] [SEP] [MASK]",
    .prefix = "##",
    .lowercase = 1,
    .strip = -1,
    .vocab_size = 30000,
    .min_frequency = 2,
};

/* --strip-accents is three-valued: on, off, or (auto) as --lowercase */
static int set_strip(const struct cli_opt *opt, const char *arg, void *ctx)
{
    (void)opt, (void)ctx;
    if (!arg && !cli_in_config) { /* the flag */
        o.strip = 1;
        return NLP_OK;
    }
    if (!arg || strcmp(arg, "auto") == 0) { /* `~` in a config: the default */
        o.strip = -1;
        return NLP_OK;
    }
    int b = nlp_parse_bool(arg);
    if (b < 0) return nlp_error(NLP_EINVAL, "'%s' is not true, false or auto", arg);
    o.strip = b;
    return NLP_OK;
}

static int no_strip(const struct cli_opt *opt, const char *arg, void *ctx)
{
    (void)opt, (void)arg, (void)ctx;
    o.strip = 0;
    return NLP_OK;
}

static const char *show_strip(const struct cli_opt *opt, void *ctx)
{
    (void)opt, (void)ctx;
    return o.strip < 0 ? "auto" : o.strip ? "true" : "false";
}

static struct cli_opt opts[] = {
    {.name = "input", .key = 'i', .kind = CLI_LIST, .dest = &o.input, .flags = CLI_NONEMPTY},
    {.name = "output", .key = 'o', .kind = CLI_STR, .dest = &o.output, .flags = CLI_NONEMPTY},
    {.name = "in-place", .kind = CLI_BOOL, .dest = &o.in_place},
    {.name = "format", .kind = CLI_CHOICE, .dest = &o.format, .choices = formats},
    {.name = "score", .kind = CLI_CHOICE, .dest = &o.score, .choices = scores},
    {.name = "vocab-size", .kind = CLI_INT, .dest = &o.vocab_size, .min = 1, .max = 2147483000},
    {.name = "min-frequency", .kind = CLI_INT, .dest = &o.min_frequency, .min = 0, .max = 1e18},
    {.name = "special-tokens", .kind = CLI_STR, .dest = &o.specials, .flags = CLI_COMMAS},
    {.name = "unk-token", .kind = CLI_STR, .dest = &o.unk},
    {.name = "prefix", .kind = CLI_STR, .dest = &o.prefix},
    {.name = "lowercase", .kind = CLI_BOOL, .dest = &o.lowercase, .flags = CLI_NEGATABLE},
    {.name = "strip-accents", .kind = CLI_CALL, .flags = CLI_NOARG, .call = set_strip, .show = show_strip},
    {.name = "no-strip-accents", .kind = CLI_CALL, .flags = CLI_NOARG | CLI_NOCONFIG, .call = no_strip},
    {.name = "limit-alphabet", .kind = CLI_INT, .dest = &o.limit_alphabet, .min = 0, .max = 2147483000},
    {.name = "max-sentences", .kind = CLI_INT, .dest = &o.max_sentences, .min = 0, .max = 1e18},
    {.name = "max-line-bytes", .kind = CLI_INT, .dest = &o.max_line_bytes, .min = 1, .max = 1e15},
    {.name = "strict", .kind = CLI_BOOL, .dest = &o.strict},
    {.name = "threads", .key = 't', .kind = CLI_INT, .dest = &o.threads, .min = 0, .max = 4096},
    {.name = "progress", .kind = CLI_BOOL, .dest = &o.progress, .flags = CLI_NEGATABLE},
    {.name = NULL},
};

/* -vv: every merge with its score */
static void log_merge(void *ctx, const nlp_vocab *v, int32_t a, int32_t b, int32_t c, uint64_t count, uint64_t fa,
                      uint64_t fb)
{
    (void)ctx;
    fprintf(stderr, "%s: merge %s %s -> %s: %llu / (%llu * %llu) = %.6g\n", cli_prog, nlp_vocab_token(v, a, NULL),
            nlp_vocab_token(v, b, NULL), nlp_vocab_token(v, c, NULL), (unsigned long long)count, (unsigned long long)fa,
            (unsigned long long)fb, (double)count / ((double)fa * (double)fb));
}

/* file scope, so that memory still held at an error exit is reachable */
static const char **inputs;
static char **specials;
static nlp_tok_spec spec;
static nlp_wordcount *wc;

int main(int argc, char **argv)
{
    nlp_threads_passive(argc, argv);
    o.progress = isatty(2);
    struct cli c = {"train-wordpiece", usage, opts, NULL};
    int first = cli_parse(&c, argc, argv);
    nlp_writer_set_in_place(o.in_place);

    if (!o.prefix || !*o.prefix) cli_usage_error("--prefix must not be empty");
    if (strpbrk(o.prefix, " \t\n\r")) cli_usage_error("--prefix must not hold white space");
    if (o.unk && !*o.unk) cli_usage_error("--unk-token must not be empty");
    /* a vocab.txt stores only the tokens: its readers assume [UNK] and ##
     * (checked again when writing, but say it before a long training run) */
    if (o.format == 1 && (strcmp(o.prefix, "##") != 0 || (o.unk && strcmp(o.unk, "[UNK]") != 0)))
        cli_usage_error("--format vocab: a vocab.txt assumes the unknown token [UNK], the prefix ## and words of "
                        "at most 100 characters; write tokenizer.json (--format json) for --prefix '%s'%s%s%s", o.prefix, o.unk ? " and --unk-token '" : "",
                        o.unk ? o.unk : "", o.unk ? "'" : "");
    train_check_utf8("special-tokens", o.specials);
    train_check_utf8("unk-token", o.unk);
    train_check_utf8("prefix", o.prefix);
    size_t nspecial;
    specials = train_split_list(o.specials, &nspecial);
    const char *unk = o.unk ? o.unk : "[UNK]";
    int unk_special = 0;
    for (size_t i = 0; i < nspecial; i++) unk_special |= strcmp(specials[i], unk) == 0;
    if (o.unk && !unk_special) {
        if (!(specials[nspecial++] = nlp_strdup(o.unk))) cli_fail(NLP_ENOMEM);
        unk_special = 1;
    }
    /* HF's trainer makes such a vocabulary too (the reference token sets are
     * learned that way), but tokenize refuses to load it: say so */
    if (!unk_special)
        cli_info("warning: the unknown token '%s' is not a special token, so the vocabulary will not hold it and "
                 "tokenize will refuse the file (add it with --unk-token)",
                 unk);

    size_t ninputs;
    inputs = train_inputs(&o.input, argc, argv, first, &ninputs);

    int nthreads = nlp_threads_set((int)o.threads);
    cli_debug("%d thread%s", nthreads, nthreads == 1 ? "" : "s");
    train_start();

    if (nlp_tok_spec_pipeline(&spec, NLP_PIPE_BERT, o.prefix)) cli_fail(NLP_ENOMEM);
    nlp_tok_spec_bert_case(&spec, o.lowercase, o.strip);

    wc = nlp_wordcount_new();
    if (!wc) cli_fail(NLP_ENOMEM);
    nlp_wordcount_opts wo = train_count_opts(&spec, specials, nspecial, o.strict, o.max_sentences, o.max_line_bytes, nthreads);
    train_count_words(wc, inputs, ninputs, &wo, o.progress, "white space, control characters or special tokens");

    nlp_wordpiece_train_opts to = {
        .score = o.score == 1 ? NLP_WP_SCORE_FREQUENCY : NLP_WP_SCORE_LIKELIHOOD,
        .vocab_size = (size_t)o.vocab_size,
        .min_frequency = (uint64_t)o.min_frequency,
        .specials = (const char *const *)specials,
        .n_specials = nspecial,
        .limit_alphabet = (size_t)o.limit_alphabet,
        .prefix = o.prefix,
        .unk_token = unk,
        .threads = nthreads,
        .progress = o.progress ? train_merge_progress : NULL,
    };
    if (cli_verbosity >= 2 && o.score == 0) to.on_merge = log_merge;
    nlp_wordpiece_train_stats st;
    int rc = nlp_wordpiece_train(wc, &to, &spec, &st);
    if (o.progress) train_merge_done(rc == 0, rc ? 0 : st.merges, rc ? 0 : nlp_vocab_count(spec.vocab));
    if (rc == NLP_EINVAL) cli_usage_error("%s", nlp_errmsg());
    if (rc) cli_fail(rc);
    nlp_wordcount_free(wc);
    cli_debug("%zu merges, vocabulary %zu, initial alphabet %zu, %.2f s", st.merges, nlp_vocab_count(spec.vocab),
              st.alphabet, train_elapsed());
    if ((size_t)o.vocab_size > nlp_vocab_count(spec.vocab))
        cli_info("vocabulary of %zu tokens, not %ld: no pair left %s", nlp_vocab_count(spec.vocab), o.vocab_size,
                 o.min_frequency > 1 ? "that reaches --min-frequency" : "to merge");
    if ((rc = nlp_tok_spec_bert_post(&spec, "[CLS]", "[SEP]")) < 0) cli_fail(rc);

    if (o.format == 1) {
        int strip = o.strip < 0 ? o.lowercase : o.strip;
        if (!o.lowercase || strip != o.lowercase)
            cli_info("warning: a vocab.txt does not record the normalizer: load it with %s",
                     !o.lowercase && !strip ? "tokenize --cased"
                                            : "care (these settings are neither cased nor uncased BERT; "
                                              "--format json keeps them)");
    }
    rc = nlp_tokfiles_write(&spec, o.format == 1 ? NLP_TOKF_VOCAB : NLP_TOKF_JSON, o.output);
    if (rc == NLP_EINVAL) cli_usage_error("%s", nlp_errmsg());
    if (rc) cli_fail(rc);
    nlp_tok_spec_free(&spec);
    for (size_t i = 0; i < nspecial; i++) free(specials[i]);
    free(specials);
    free(inputs);
    cli_free();
    return 0;
}
