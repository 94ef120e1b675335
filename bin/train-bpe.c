/*
 * train-bpe — learn a BPE tokenizer from text: count the words once, then
 * merge the most frequent pair until the vocabulary is full, with the same
 * merges and vocabulary as HF tokenizers' BpeTrainer.
 */
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "common/cli.h"
#include "common/train.h"
#include "tok/bpe_train.h"
#include "tok/tokfiles.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: train-bpe [OPTION]... [FILE]...\n"
    "Learn BPE merges from text FILEs (default standard input) and write a tokenizer.\n"
    "\n"
    "  -i, --input FILE          read FILE too (repeatable; also: FILE arguments)\n"
    "  -o, --output PATH         where to write (default standard output; a directory\n"
    "                            for --format gpt2 and hf)\n"
    "      --in-place            when -o's directory is read-only but the file is\n"
    "                            writable, write the file in place (not atomically)\n"
    "      --format FMT          json (HF tokenizer.json, default), gpt2 (encoder.json +\n"
    "                            vocab.bpe), hf (vocab.json + merges.txt) or codes\n"
    "                            (subword-nmt)\n"
    "      --vocab-size N        size of the vocabulary, special tokens and alphabet\n"
    "                            included (default 30000)\n"
    "      --min-frequency N     stop when the best pair occurs fewer than N times (default 2)\n"
    "      --special-tokens LIST special tokens, separated by commas or spaces; they take\n"
    "                            the first ids and are never split (default none)\n"
    "      --unk-token TOKEN     classic BPE: the token for characters outside the alphabet\n"
    "                            (added to the special tokens if missing)\n"
    "      --limit-alphabet N    keep only the N most frequent characters\n"
    "      --byte-level          GPT-2 style: split with GPT-2's pattern, learn over bytes\n"
    "      --byte-alphabet       with --byte-level, start from all 256 bytes (default)\n"
    "      --no-byte-alphabet    with --byte-level, only the bytes seen (as HF's trainer\n"
    "                            without an initial alphabet)\n"
    "      --end-of-word-suffix S  classic BPE: mark word-final symbols with S, e.g. </w>\n"
    "                            (default for --format codes: </w>)\n"
    "      --continuing-subword-prefix P  mark symbols that continue a word with P, e.g. ##\n"
    "      --max-sentences N     read at most N lines (0 = all; bounds memory)\n"
    "      --max-line-bytes N    the longest line read (default 16777216 = 16 MiB); a longer\n"
    "                            one is an error\n"
    "      --strict              invalid UTF-8 is an error (default: replaced by U+FFFD)\n"
    "  -t, --threads N           threads (default: all CPUs); the result does not depend on it\n"
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

static const char *const formats[] = {"json", "gpt2", "hf", "codes", NULL};

static struct {
    struct cli_list input;
    const char *output, *specials, *unk, *suffix, *prefix;
    int format, byte_level, byte_alphabet, strict, progress, in_place;
    long vocab_size, min_frequency, limit_alphabet, max_sentences, max_line_bytes, threads;
} o = {
    .output = "-",
    .max_line_bytes = CLI_MAX_LINE_BYTES,
    .vocab_size = 30000,
    .min_frequency = 2,
    .byte_alphabet = 1,
};

static struct cli_opt opts[] = {
    {.name = "input", .key = 'i', .kind = CLI_LIST, .dest = &o.input, .flags = CLI_NONEMPTY},
    {.name = "output", .key = 'o', .kind = CLI_STR, .dest = &o.output, .flags = CLI_NONEMPTY},
    {.name = "in-place", .kind = CLI_BOOL, .dest = &o.in_place},
    {.name = "format", .kind = CLI_CHOICE, .dest = &o.format, .choices = formats},
    {.name = "vocab-size", .kind = CLI_INT, .dest = &o.vocab_size, .min = 1, .max = 2147483000},
    {.name = "min-frequency", .kind = CLI_INT, .dest = &o.min_frequency, .min = 0, .max = 1e18},
    {.name = "special-tokens", .kind = CLI_STR, .dest = &o.specials, .flags = CLI_COMMAS},
    {.name = "unk-token", .kind = CLI_STR, .dest = &o.unk},
    {.name = "limit-alphabet", .kind = CLI_INT, .dest = &o.limit_alphabet, .min = 0, .max = 2147483000},
    {.name = "byte-level", .kind = CLI_BOOL, .dest = &o.byte_level},
    {.name = "byte-alphabet", .kind = CLI_BOOL, .dest = &o.byte_alphabet, .flags = CLI_NEGATABLE},
    {.name = "end-of-word-suffix", .kind = CLI_STR, .dest = &o.suffix},
    {.name = "continuing-subword-prefix", .kind = CLI_STR, .dest = &o.prefix},
    {.name = "max-sentences", .kind = CLI_INT, .dest = &o.max_sentences, .min = 0, .max = 1e18},
    {.name = "max-line-bytes", .kind = CLI_INT, .dest = &o.max_line_bytes, .min = 1, .max = 1e15},
    {.name = "strict", .kind = CLI_BOOL, .dest = &o.strict},
    {.name = "threads", .key = 't', .kind = CLI_INT, .dest = &o.threads, .min = 0, .max = 4096},
    {.name = "progress", .kind = CLI_BOOL, .dest = &o.progress, .flags = CLI_NEGATABLE},
    {.name = NULL},
};

/* file scope, so that memory still held at an error exit is reachable */
static const char **inputs;
static char **specials;
static nlp_tok_spec spec;
static nlp_wordcount *wc;

int main(int argc, char **argv)
{
    nlp_threads_passive(argc, argv);
    o.progress = isatty(2);
    struct cli c = {"train-bpe", usage, opts, NULL};
    int first = cli_parse(&c, argc, argv);
    nlp_writer_set_in_place(o.in_place);

    if (o.format == 3 && o.byte_level) cli_usage_error("--format codes holds classic BPE: drop --byte-level");
    if (o.format == 1 && !o.byte_level) cli_usage_error("--format gpt2 holds byte-level BPE: add --byte-level");
    if ((o.format == 1 || o.format == 2) && strcmp(o.output, "-") == 0)
        cli_usage_error("--format %s writes two files: give a directory with -o", formats[o.format]);
    if (o.format == 3 && !o.suffix) o.suffix = "</w>";
    if (o.format == 3 && (strcmp(o.suffix, "</w>") != 0 || o.prefix))
        cli_usage_error("--format codes needs --end-of-word-suffix '</w>' and no --continuing-subword-prefix");
    if (o.byte_level && o.unk) cli_usage_error("--unk-token is for classic BPE: byte-level BPE needs none");
    if ((o.suffix && !*o.suffix) || (o.prefix && !*o.prefix))
        cli_usage_error("--end-of-word-suffix and --continuing-subword-prefix must not be empty");
    /* an empty token cannot be in a vocabulary: tokenize would refuse the file */
    if (o.unk && !*o.unk) cli_usage_error("--unk-token must not be empty");

    train_check_utf8("special-tokens", o.specials);
    train_check_utf8("unk-token", o.unk);
    train_check_utf8("end-of-word-suffix", o.suffix);
    train_check_utf8("continuing-subword-prefix", o.prefix);
    size_t nspecial;
    specials = train_split_list(o.specials, &nspecial);
    if (o.unk) {
        int found = 0;
        for (size_t i = 0; i < nspecial; i++) found |= strcmp(specials[i], o.unk) == 0;
        if (!found && !(specials[nspecial++] = nlp_strdup(o.unk))) cli_fail(NLP_ENOMEM);
    }

    size_t ninputs;
    inputs = train_inputs(&o.input, argc, argv, first, &ninputs);

    int nthreads = nlp_threads_set((int)o.threads);
    cli_debug("%d thread%s", nthreads, nthreads == 1 ? "" : "s");
    train_start();

    if (nlp_tok_spec_pipeline(&spec, o.byte_level ? NLP_PIPE_BYTELEVEL : NLP_PIPE_WHITESPACE, o.suffix))
        cli_fail(NLP_ENOMEM);

    wc = nlp_wordcount_new();
    if (!wc) cli_fail(NLP_ENOMEM);
    nlp_wordcount_opts wo = train_count_opts(&spec, specials, nspecial, o.strict, o.max_sentences, o.max_line_bytes, nthreads);
    /* classic BPE learns characters as tokens, and a JSON vocabulary
     * (tokenizer.json, vocab.json) cannot hold one that is NUL: say so as
     * the line is read, not after the whole count */
    if (!o.byte_level && (o.format == 0 || o.format == 2))
        wo.nul_error = "a JSON vocabulary cannot hold it as a token; --byte-level learns bytes (NUL included), "
                       "or remove NUL bytes from the text (tr -d '\\000')";
    train_count_words(wc, inputs, ninputs, &wo, o.progress, "white space or special tokens");

    nlp_bpe_train_opts to = {
        .vocab_size = (size_t)o.vocab_size,
        .min_frequency = (uint64_t)o.min_frequency,
        .specials = (const char *const *)specials,
        .n_specials = nspecial,
        .limit_alphabet = (size_t)o.limit_alphabet,
        .byte_level = o.byte_level,
        .byte_alphabet = o.byte_alphabet,
        .continuing_subword_prefix = o.prefix,
        .end_of_word_suffix = o.suffix,
        .unk_token = o.unk,
        .threads = nthreads,
        .progress = o.progress ? train_merge_progress : NULL,
    };
    nlp_bpe_train_stats st;
    int rc = nlp_bpe_train(wc, &to, &spec, &st);
    if (o.progress) train_merge_done(rc == 0, rc ? 0 : st.merges, rc ? 0 : nlp_vocab_count(spec.vocab));
    if (rc == NLP_EINVAL) cli_usage_error("%s", nlp_errmsg());
    if (rc) cli_fail(rc);
    nlp_wordcount_free(wc);
    cli_debug("%zu merges (the last seen %llu times), vocabulary %zu, alphabet %zu, %.2f s", st.merges,
              (unsigned long long)st.last_count, nlp_vocab_count(spec.vocab), st.alphabet, train_elapsed());
    if ((size_t)o.vocab_size > nlp_vocab_count(spec.vocab))
        cli_info("vocabulary of %zu tokens, not %ld: no pair left %s", nlp_vocab_count(spec.vocab), o.vocab_size,
                 o.min_frequency > 1 ? "that reaches --min-frequency" : "to merge");

    rc = nlp_tokfiles_write(&spec, (nlp_tok_format)o.format, o.output);
    if (rc) cli_fail(rc);
    nlp_tok_spec_free(&spec);
    for (size_t i = 0; i < nspecial; i++) free(specials[i]);
    free(specials);
    free(inputs);
    cli_free();
    return 0;
}
