/*
 * bleu — BLEU, chrF and TER with sacreBLEU 2.5's numbers and command line.
 *
 * Thin main: options (sacreBLEU's multi-letter short flags such as -lc and
 * -tok are rewritten to long ones before getopt sees them), file reading,
 * then eval/metric, eval/signif and eval/report do the work. See
 * man/man1/bleu.1.
 */
#include "base/err.h"
#include "base/mem.h"
#include "common/cli.h"
#include "eval/metric.h"
#include "eval/ngram.h"
#include "eval/report.h"
#include "eval/signif.h"
#include "eval/textfile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

static const char usage[] =
    "Usage: bleu [OPTION]... REF... [-i HYP...]\n"
    "Score hypotheses (standard input, or the files after -i) against one or more\n"
    "reference files with sacreBLEU 2.5's BLEU, chrF and TER, or by exact match (the\n"
    "accuracy of labels a text-to-text model writes, one per line).\n"
    "\n"
    "Input:\n"
    "  -i, --input FILE...         hypothesis file(s); every file after -i is one (several\n"
    "                              systems: paired tests); on standard input a tab separates systems\n"
    "      --max-line-bytes N      the longest line read (default 16777216 = 16 MiB); a longer\n"
    "                              one is an error\n"
    "  -m, --metrics LIST          bleu, chrf, ter, exact (comma- or space-separated;\n"
    "                              default bleu)\n"
    "      --sentence-level        one score per line (one metric, one system)\n"
    "  -l, --language-pair SRC-TRG the languages, as sacreBLEU takes them with your own\n"
    "                              references: a zh target makes zh BLEU's default tokenizer\n"
    "  -e, --encoding ENC          the files' encoding: utf-8 (the only one, sacreBLEU's default)\n"
    "BLEU:\n"
    "      --tokenize TOK          13a (default; zh for a zh target of -l), intl, zh, char\n"
    "                              or none (also -tok)\n"
    "      --lowercase             case-insensitive BLEU and exact match (also -lc)\n"
    "  -s, --smooth-method M       exp (default), floor, add-k or none\n"
    "      --smooth-value V        floor's value (0.1) or add-k's k (1)\n"
    "      --max-ngram-order N     highest n-gram order (default 4)\n"
    "      --effective-order       average only orders with n-grams (always on with --sentence-level)\n"
    "      --force                 no warning about tokenized-looking input\n"
    "chrF:\n"
    "      --chrf-char-order N     character n-gram order (default 6)\n"
    "      --chrf-word-order N     word n-gram order (default 0; 2 is chrF++)\n"
    "      --chrf-beta N           recall weight (default 2)\n"
    "      --chrf-whitespace       keep whitespace in character n-grams\n"
    "      --chrf-lowercase        case-insensitive chrF\n"
    "      --chrf-eps-smoothing    epsilon smoothing instead of effective order\n"
    "Exact match (-m exact): the percentage of hypothesis lines equal to their reference\n"
    "line (to one of several), leading and trailing white space aside; --lowercase\n"
    "applies; --sentence-level gives each line 100 or 0\n"
    "TER (at most 10000 words per hypothesis or reference line):\n"
    "      --ter-case-sensitive    do not lowercase\n"
    "      --ter-asian-support     split CJK characters, remove CJK punctuation\n"
    "      --ter-no-punct          remove punctuation\n"
    "      --ter-normalized        tokenize and normalize punctuation\n"
    "Statistics (seed: SACREBLEU_SEED, default 12345):\n"
    "      --confidence            bootstrap 95% confidence interval\n"
    "      --confidence-n N        bootstrap resamples (default 1000)\n"
    "      --paired-bs             paired bootstrap test of each system against the first\n"
    "      --paired-bs-n N         resamples (default 1000)\n"
    "      --paired-ar             paired approximate randomization test\n"
    "      --paired-ar-n N         trials (default 10000)\n"
    "Output:\n"
    "  -f, --format FMT            json (default; SACREBLEU_FORMAT overrides) or text\n"
    "  -b, --score-only            print only the score\n"
    "  -w, --width N               decimals, 0 to 100 (default 1)\n"
    "      --short                 short signature\n"
    "      --no-color              no colors in tables (colors only go to a terminal)\n"
    "Common:\n"
    "  -c, --config FILE           YAML options (keys are long option names)\n"
    "      --dump-config           print the effective options and exit\n"
    "  -q, --quiet                 no warnings\n"
    "  -v, --verbose               more messages\n"
    "  -h, --help                  this help\n"
    "  -V, --version               version\n"
    "\n"
    "Exit status: 0 ok, 1 unreadable or inconsistent input, 2 usage error,\n"
    "3 missing, unreadable or invalid config file (-c).\n";

// --- options

typedef struct opts {
    int tokenize, tokenize_set, lowercase, smooth, effective_order, force, sentence_level;
    const char *langpair;
    double smooth_value;
    long max_order;
    const char *metrics;
    long chrf_char_order, chrf_word_order, chrf_beta;
    int chrf_whitespace, chrf_lowercase, chrf_eps;
    int ter_case, ter_asian, ter_nopunct, ter_norm;
    int confidence, paired_bs, paired_ar;
    long confidence_n, paired_bs_n, paired_ar_n;
    int format, score_only, short_sig, no_color;
    long width, max_line_bytes;
    struct cli_list input;
} opts;

static const char *const formats[] = {"json", "text", NULL};

static int set_smooth_value(const struct cli_opt *o, const char *arg, void *ctx)
{
    opts *op = ctx;
    (void)o;
    if (!arg || !*arg) {
        op->smooth_value = NAN;
        return NLP_OK;
    }
    int rc = cli_parse_double(arg, &op->smooth_value);
    /* floor's value and add-k's k are counts: a negative one makes log() of
     * a negative precision, and the score NaN */
    if (!rc && op->smooth_value < 0) rc = nlp_error(NLP_EINVAL, "'%s' is negative", arg);
    return rc;
}

static const char *show_smooth_value(const struct cli_opt *o, void *ctx)
{
    static char b[40];
    opts *op = ctx;
    (void)o;
    if (isnan(op->smooth_value)) return NULL; /* unset: the method's default, ~ in YAML */
    snprintf(b, sizeof b, "%.17g", op->smooth_value);
    return b;
}

/* --tokenize: remembered as given, since without it -l's target language
 * picks the tokenizer (`~` in a config file: not given) */
static int set_tokenize(const struct cli_opt *o, const char *arg, void *ctx)
{
    opts *op = ctx;
    (void)o;
    op->tokenize = 0;
    op->tokenize_set = arg != NULL;
    if (!arg) return NLP_OK;
    for (int i = 0; nlp_evtok_names[i]; i++)
        if (strcmp(arg, nlp_evtok_names[i]) == 0) {
            op->tokenize = i;
            return NLP_OK;
        }
    return nlp_error(NLP_EINVAL, "'%s' is not one of 13a, intl, zh, char or none%s", arg,
                     strncmp(arg, "ja-", 3) == 0 || strncmp(arg, "ko-", 3) == 0 || strncmp(arg, "spm", 3) == 0 ||
                             strncmp(arg, "flores", 6) == 0
                         ? " (sacreBLEU's MeCab and SentencePiece tokenizers are not provided)"
                         : "");
}

static const char *show_tokenize(const struct cli_opt *o, void *ctx)
{
    opts *op = ctx;
    (void)o;
    return op->tokenize_set ? nlp_evtok_names[op->tokenize] : NULL;
}

/* -l SRC-TRG: sacreBLEU takes it with the user's references too; it only
 * names the target language, which picks BLEU's default tokenizer */
static int set_langpair(const struct cli_opt *o, const char *arg, void *ctx)
{
    opts *op = ctx;
    (void)o;
    if (arg) {
        const char *dash = strchr(arg, '-');
        if (!dash || dash == arg || !dash[1] || strchr(dash + 1, '-'))
            return nlp_error(NLP_EINVAL, "'%s' is not a language pair such as en-de (source-target)", arg);
    }
    op->langpair = arg;
    return NLP_OK;
}

static const char *show_langpair(const struct cli_opt *o, void *ctx)
{
    (void)o;
    return ((opts *)ctx)->langpair;
}

/* -e: sacreBLEU opens files in this encoding (default utf-8); ours are
 * UTF-8, and saying so is accepted */
static int set_encoding(const struct cli_opt *o, const char *arg, void *ctx)
{
    (void)o, (void)ctx;
    if (arg && strcasecmp(arg, "utf-8") != 0 && strcasecmp(arg, "utf8") != 0 && strcasecmp(arg, "utf_8") != 0)
        return nlp_error(NLP_EINVAL, "'%s': bleu reads UTF-8 only (convert with iconv -t utf-8)", arg);
    return NLP_OK;
}

static const char *show_encoding(const struct cli_opt *o, void *ctx)
{
    (void)o, (void)ctx;
    return "utf-8";
}

/* sacreBLEU's multi-letter short flags, as getopt cannot read them */
static const char *const aliases[][2] = {
    {"-tok", "--tokenize"}, {"-lc", "--lowercase"}, {"-sv", "--smooth-value"}, {"-sl", "--sentence-level"},
    {"-cc", "--chrf-char-order"}, {"-cw", "--chrf-word-order"}, {"-ci", "--confidence"}, {"-cin", "--confidence-n"},
    {"-pbs", "--paired-bs"}, {"-par", "--paired-ar"}, {"-pbsn", "--paired-bs-n"}, {"-parn", "--paired-ar-n"},
    {"-sh", "--short"}, {"-nc", "--no-color"},
};

static const char *const metric_names[] = {"bleu", "chrf", "ter", "exact", NULL};
#define NMETRICS 4

/* the index of a metric's name (any case), or -1 */
static int metric_index(const char *s)
{
    for (int k = 0; k < NMETRICS; k++)
        if (strcasecmp(s, metric_names[k]) == 0) return k;
    return -1;
}

static int is_metric_name(const char *s) { return metric_index(s) >= 0; }

/* --metrics is checked as it is set, so that a bad value in a config file
 * is reported with the file and line, like any other option's */
static int set_metrics(const struct cli_opt *o, const char *arg, void *ctx)
{
    opts *op = ctx;
    (void)o;
    char *list = nlp_strdup(arg ? arg : ""), *save = NULL;
    if (!list) return NLP_ENOMEM;
    int rc = NLP_OK, n = 0;
    for (char *t = strtok_r(list, ", ", &save); t && !rc; t = strtok_r(NULL, ", ", &save), n++)
        if (!is_metric_name(t)) rc = nlp_error(NLP_EINVAL, "'%s' is not one of bleu, chrf, ter or exact", t);
    if (!rc && n == 0) rc = nlp_error(NLP_EINVAL, "no metric given");
    free(list);
    if (!rc) op->metrics = arg;
    return rc;
}

static const char *show_metrics(const struct cli_opt *o, void *ctx)
{
    (void)o;
    return ((opts *)ctx)->metrics;
}

/* Rewrites argv as getopt needs it: aliases to long options, "-i A B" to
 * "-i A -i B" (argparse's nargs='*'), "-m bleu chrf" to "-m bleu,chrf". */
static char **rewrite_argv(int argc, char **argv, int *out_argc, char ***owned, int *nowned)
{
    char **v = nlp_calloc(2 * (size_t)argc + 1, sizeof *v);
    *owned = nlp_calloc((size_t)argc + 1, sizeof **owned);
    if (!v || !*owned) cli_fail(NLP_ENOMEM);
    int n = 0, opts_done = 0;
    *nowned = 0;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (i == 0 || opts_done) {
            v[n++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            opts_done = 1;
            v[n++] = a;
            continue;
        }
        /* sacreBLEU's test-set download options: say why they are refused
         * rather than misreading them (-t is --threads elsewhere in nlpipe) */
        if (strcmp(a, "-t") == 0 || strncmp(a, "--test-set", 10) == 0 || strcmp(a, "--echo") == 0)
            cli_usage_error("'%s': bleu does not download test sets; give the reference files as arguments", a);
        for (size_t k = 0; k < sizeof aliases / sizeof *aliases; k++)
            if (strcmp(a, aliases[k][0]) == 0) a = (char *)aliases[k][1];
        v[n++] = a;
        if (strcmp(a, "-i") == 0 || strcmp(a, "--input") == 0) {
            /* the file after -i, then every further non-option as another -i */
            if (i + 1 < argc) v[n++] = argv[++i];
            while (i + 1 < argc && (argv[i + 1][0] != '-' || strcmp(argv[i + 1], "-") == 0)) {
                v[n++] = "-i";
                v[n++] = argv[++i];
            }
        } else if ((strcmp(a, "-m") == 0 || strcmp(a, "--metrics") == 0) && i + 1 < argc) {
            nlp_buf list = {0}; /* kept until exit, as argv strings are */
            nlp_buf_puts(&list, argv[++i]);
            while (i + 1 < argc && is_metric_name(argv[i + 1])) nlp_buf_printf(&list, ",%s", argv[++i]);
            if (!list.data) cli_fail(NLP_ENOMEM);
            v[n++] = list.data;
            (*owned)[(*nowned)++] = list.data;
        }
    }
    *out_argc = n;
    return v;
}

// --- reading

typedef struct system {
    const char *name;
    const char *file; /* where its lines are, for messages */
    nlp_lines lines;
} system_t;

/* What main allocates, also reachable from here: cli_die() exits from the
 * middle of main, and LeakSanitizer should not call that a leak. (Not
 * static: the compiler would drop stores to a static nobody reads.) */
struct bleu_keep {
    nlp_textfile *refs, *hypf;
    system_t *sys;
};
struct bleu_keep bleu_keep;

static long max_line_bytes;

static int read_or_die(nlp_textfile *f, const char *path, enum nlp_newline mode, int rstrip)
{
    int rc = nlp_textfile_read(f, path, mode, rstrip, (size_t)max_line_bytes, "(--max-line-bytes raises the limit)");
    if (rc) cli_fail(rc);
    return rc;
}

static uint64_t seed_from_env(char *shown, size_t size, int *is_none)
{
    const char *s = getenv("SACREBLEU_SEED");
    if (!s) s = "12345";
    *is_none = strcasecmp(s, "none") == 0;
    snprintf(shown, size, "%s", s);
    for (char *p = shown; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p += 32;
    if (*is_none) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) r = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull;
        return r;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || errno || s[0] == '-')
        cli_usage_error("SACREBLEU_SEED='%s' is not a seed (an integer from 0 to 2^64-1, or 'none')", s);
    return v;
}

static void put(nlp_buf *b)
{
    if (b->len && fwrite(b->data, 1, b->len, stdout) != b->len) cli_die(1, "cannot write to standard output: %s", strerror(errno));
    nlp_buf_reset(b);
}

/* Per-segment statistics of a system for metric m (nseg x nstats); errors
 * name the system's file and line. */
static double *segment_stats(nlp_metric *m, const system_t *sy, const nlp_textfile *refs, int nrefs)
{
    const nlp_lines *hyp = &sy->lines;
    int ns = nlp_metric_nstats(m);
    double *st = nlp_malloc((hyp->n ? hyp->n : 1) * (size_t)ns * sizeof *st);
    const char **r = nlp_malloc((size_t)nrefs * sizeof *r);
    size_t *rl = nlp_malloc((size_t)nrefs * sizeof *rl);
    if (!st || !r || !rl) cli_fail(NLP_ENOMEM);
    for (size_t i = 0; i < hyp->n; i++) {
        for (int k = 0; k < nrefs; k++) {
            r[k] = refs[k].lines.s[i];
            rl[k] = refs[k].lines.len[i];
        }
        int rc = nlp_metric_segment(m, hyp->s[i], hyp->len[i], r, rl, nrefs, st + i * (size_t)ns);
        if (rc) cli_fail(nlp_error_prefix(rc, "'%s' line %zu", sy->file, i + 1));
    }
    free(r);
    free(rl);
    return st;
}

static void sum_stats(const double *st, size_t nseg, int ns, double *sum)
{
    memset(sum, 0, (size_t)ns * sizeof *sum);
    for (size_t i = 0; i < nseg; i++)
        for (int k = 0; k < ns; k++) sum[k] += st[i * (size_t)ns + (size_t)k];
}

int main(int argc, char **argv)
{
    opts o = {.tokenize = 0, .smooth = 0, .smooth_value = NAN, .max_order = 4, .metrics = "bleu",
              .chrf_char_order = 6, .chrf_word_order = 0, .chrf_beta = 2, .confidence_n = 1000,
              .paired_bs_n = 1000, .paired_ar_n = 10000, .width = 1, .max_line_bytes = CLI_MAX_LINE_BYTES};
    struct cli_opt table[] = {
        {"input", 'i', CLI_LIST, &o.input, NULL, 0, 0, CLI_NONEMPTY, NULL, NULL},
        {"max-line-bytes", 0, CLI_INT, &o.max_line_bytes, NULL, 1, 1e15, 0, NULL, NULL},
        {"metrics", 'm', CLI_CALL, NULL, NULL, 0, 0, CLI_COMMAS, set_metrics, show_metrics},
        {"sentence-level", 0, CLI_BOOL, &o.sentence_level, NULL, 0, 0, 0, NULL, NULL},
        {"language-pair", 'l', CLI_CALL, NULL, NULL, 0, 0, 0, set_langpair, show_langpair},
        {"encoding", 'e', CLI_CALL, NULL, NULL, 0, 0, 0, set_encoding, show_encoding},
        {"tokenize", 0, CLI_CALL, NULL, NULL, 0, 0, 0, set_tokenize, show_tokenize},
        {"lowercase", 0, CLI_BOOL, &o.lowercase, NULL, 0, 0, 0, NULL, NULL},
        {"smooth-method", 's', CLI_CHOICE, &o.smooth, nlp_bleu_smooth_names, 0, 0, 0, NULL, NULL},
        {"smooth-value", 0, CLI_CALL, NULL, NULL, 0, 0, 0, set_smooth_value, show_smooth_value},
        {"max-ngram-order", 0, CLI_INT, &o.max_order, NULL, 1, NLP_BLEU_MAX_ORDER, 0, NULL, NULL},
        {"effective-order", 0, CLI_BOOL, &o.effective_order, NULL, 0, 0, 0, NULL, NULL},
        {"force", 0, CLI_BOOL, &o.force, NULL, 0, 0, 0, NULL, NULL},
        {"chrf-char-order", 0, CLI_INT, &o.chrf_char_order, NULL, 0, NLP_NGRAM_MAX_ORDER, 0, NULL, NULL},
        {"chrf-word-order", 0, CLI_INT, &o.chrf_word_order, NULL, 0, NLP_NGRAM_MAX_ORDER, 0, NULL, NULL},
        {"chrf-beta", 0, CLI_INT, &o.chrf_beta, NULL, 0, 1000, 0, NULL, NULL},
        {"chrf-whitespace", 0, CLI_BOOL, &o.chrf_whitespace, NULL, 0, 0, 0, NULL, NULL},
        {"chrf-lowercase", 0, CLI_BOOL, &o.chrf_lowercase, NULL, 0, 0, 0, NULL, NULL},
        {"chrf-eps-smoothing", 0, CLI_BOOL, &o.chrf_eps, NULL, 0, 0, 0, NULL, NULL},
        {"ter-case-sensitive", 0, CLI_BOOL, &o.ter_case, NULL, 0, 0, 0, NULL, NULL},
        {"ter-asian-support", 0, CLI_BOOL, &o.ter_asian, NULL, 0, 0, 0, NULL, NULL},
        {"ter-no-punct", 0, CLI_BOOL, &o.ter_nopunct, NULL, 0, 0, 0, NULL, NULL},
        {"ter-normalized", 0, CLI_BOOL, &o.ter_norm, NULL, 0, 0, 0, NULL, NULL},
        {"confidence", 0, CLI_BOOL, &o.confidence, NULL, 0, 0, 0, NULL, NULL},
        {"confidence-n", 0, CLI_INT, &o.confidence_n, NULL, 1, 10000000, 0, NULL, NULL},
        {"paired-bs", 0, CLI_BOOL, &o.paired_bs, NULL, 0, 0, 0, NULL, NULL},
        {"paired-bs-n", 0, CLI_INT, &o.paired_bs_n, NULL, 1, 10000000, 0, NULL, NULL},
        {"paired-ar", 0, CLI_BOOL, &o.paired_ar, NULL, 0, 0, 0, NULL, NULL},
        {"paired-ar-n", 0, CLI_INT, &o.paired_ar_n, NULL, 1, 10000000, 0, NULL, NULL},
        {"format", 'f', CLI_CHOICE, &o.format, formats, 0, 0, 0, NULL, NULL},
        {"score-only", 'b', CLI_BOOL, &o.score_only, NULL, 0, 0, 0, NULL, NULL},
        {"width", 'w', CLI_INT, &o.width, NULL, 0, 100, 0, NULL, NULL},
        {"short", 0, CLI_BOOL, &o.short_sig, NULL, 0, 0, 0, NULL, NULL},
        {"no-color", 0, CLI_BOOL, &o.no_color, NULL, 0, 0, 0, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, 0, 0, 0, NULL, NULL},
    };
    struct cli c = {"bleu", usage, table, &o};
    int nargc, nowned;
    char **owned;
    cli_prog = "bleu"; /* rewrite_argv may already report a usage error */
    char **nargv = rewrite_argv(argc, argv, &nargc, &owned, &nowned);
    int first = cli_parse(&c, nargc, nargv);
    max_line_bytes = o.max_line_bytes;
    const char **inputs = o.input.v;
    size_t ninputs = o.input.n;

    const char *env_fmt = getenv("SACREBLEU_FORMAT");
    if (env_fmt && strcasecmp(env_fmt, "json") == 0) o.format = 0;
    if (env_fmt && strcasecmp(env_fmt, "text") == 0) o.format = 1;
    int json = o.format == 0;

    // --- which metrics
    int want[NMETRICS] = {0}, order[NMETRICS], nm = 0;
    {
        /* metrics: ~ (or an empty value) in a config file leaves NULL */
        char *list = nlp_strdup(o.metrics ? o.metrics : ""), *save = NULL;
        if (!list) cli_fail(NLP_ENOMEM);
        for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
            int k = metric_index(t);
            if (k < 0) cli_usage_error("invalid value for --metrics: '%s' is not one of bleu, chrf, ter or exact", t);
            if (!want[k]) order[nm++] = k;
            want[k] = 1;
        }
        free(list);
        if (nm == 0) cli_usage_error("invalid value for --metrics: no metric given");
    }
    int nrefs = argc > 0 ? nargc - first : 0;
    if (nrefs <= 0)
        cli_usage_error("no reference file given (references come before -i, which takes every file after it)");
    if (o.paired_bs && o.paired_ar) cli_usage_error("--paired-bs and --paired-ar cannot be used together");
    if (o.sentence_level && nm > 1) cli_usage_error("--sentence-level takes exactly one metric");
    if (o.sentence_level && (o.confidence || o.paired_bs || o.paired_ar))
        cli_usage_error("statistical tests are unavailable with --sentence-level");
    if (o.chrf_char_order + o.chrf_word_order < 1) cli_usage_error("chrF needs --chrf-char-order + --chrf-word-order >= 1");

    /* sacreBLEU's default tokenizer for the target language of -l: zh for
     * Chinese, ja-mecab and ko-mecab (MeCab) for Japanese and Korean */
    if (o.langpair && !o.tokenize_set && want[0]) {
        const char *trg = strchr(o.langpair, '-') + 1;
        if (strcmp(trg, "zh") == 0) o.tokenize = NLP_EVTOK_ZH;
        else if (strcmp(trg, "ja") == 0 || strcmp(trg, "ko") == 0)
            cli_usage_error("-l %s: sacreBLEU scores %s with its %s tokenizer (MeCab), which bleu does not provide; "
                            "name one with --tokenize", o.langpair, trg, strcmp(trg, "ja") == 0 ? "ja-mecab" : "ko-mecab");
    }

    // --- read
    nlp_textfile *refs = nlp_calloc((size_t)nrefs, sizeof *refs);
    if (!refs) cli_fail(NLP_ENOMEM);
    bleu_keep.refs = refs;
    for (int k = 0; k < nrefs; k++) read_or_die(&refs[k], nargv[first + k], NLP_NL_LF, 1);
    int paired = o.paired_bs ? 1 : o.paired_ar ? 2 : 0;
    system_t *sys = NULL;
    int nsys = 0;
    nlp_textfile *hypf = nlp_calloc(ninputs ? ninputs : 1, sizeof *hypf);
    if (!hypf) cli_fail(NLP_ENOMEM);
    bleu_keep.hypf = hypf;
    if (ninputs == 0) {
        read_or_die(&hypf[0], "-", NLP_NL_UNIVERSAL, 0);
        if (hypf[0].lines.n == 0) cli_die(1, "standard input is empty: no hypotheses to score");
        nlp_lines *cols;
        int rc = nlp_textfile_split_tabs(&hypf[0], &cols, &nsys);
        if (rc) cli_fail(rc);
        sys = nlp_calloc((size_t)nsys, sizeof *sys);
        if (!sys) cli_fail(NLP_ENOMEM);
        bleu_keep.sys = sys;
        for (int s = 0; s < nsys; s++) {
            char name[48];
            if (paired && s == 0) snprintf(name, sizeof name, "Baseline");
            else snprintf(name, sizeof name, "System %d", paired ? s : s + 1);
            sys[s].name = nlp_strdup(name);
            sys[s].file = "<stdin>";
            sys[s].lines = cols[s];
        }
        free(cols);
    } else {
        sys = nlp_calloc(ninputs, sizeof *sys);
        if (!sys) cli_fail(NLP_ENOMEM);
        bleu_keep.sys = sys;
        for (size_t f = 0; f < ninputs; f++) {
            int dup = 0;
            for (int s = 0; s < nsys; s++) /* the files loaded so far (a skipped one is not) */
                if (strcmp(inputs[f], hypf[s].name) == 0) dup = 1 + s;
            if (dup && paired && dup == 1) {
                cli_info("ignoring '%s': it is also the baseline", inputs[f]);
                continue;
            }
            if (dup) cli_usage_error("'%s' is given twice as a system", inputs[f]);
            read_or_die(&hypf[nsys], inputs[f], NLP_NL_LF, 1);
            if (hypf[nsys].lines.n == 0) cli_die(1, "'%s' is empty: no hypotheses to score", inputs[f]);
            sys[nsys].lines = hypf[nsys].lines;
            sys[nsys].file = hypf[nsys].name;
            if (paired && nsys == 0) {
                nlp_buf b = {0};
                nlp_buf_printf(&b, "Baseline: %s", inputs[f]);
                sys[nsys].name = nlp_buf_detach(&b, NULL);
            } else {
                sys[nsys].name = nlp_strdup(inputs[f]);
            }
            nsys++;
        }
    }
    if (o.sentence_level && nsys > 1) cli_usage_error("--sentence-level scores one system only");
    if (paired && nsys < 2) cli_usage_error("paired tests need several systems: give them to -i (or as tab-separated columns)");
    if (o.confidence && nsys > 1) cli_usage_error("--confidence takes one system; use --paired-bs or --paired-ar for several");
    for (int s = 0; s < nsys; s++)
        for (int k = 0; k < nrefs; k++)
            if (refs[k].lines.n != sys[s].lines.n)
                cli_die(1, "'%s' has %zu lines but '%s' has %zu", ninputs ? hypf[s].name : "<stdin>", sys[s].lines.n,
                        refs[k].name, refs[k].lines.n);

    // --- metrics
    nlp_metric_params mp[NMETRICS];
    for (int k = 0; k < NMETRICS; k++) {
        memset(&mp[k], 0, sizeof mp[k]);
        mp[k].kind = (nlp_metric_kind)k;
    }
    mp[0].bleu = (nlp_bleu_params){(nlp_evtok)o.tokenize, o.lowercase, (nlp_bleu_smooth)o.smooth, o.smooth_value,
                                   (int)o.max_order, o.effective_order || o.sentence_level};
    mp[1].chrf = (nlp_chrf_params){(int)o.chrf_char_order, (int)o.chrf_word_order, (int)o.chrf_beta,
                                   o.chrf_lowercase, o.chrf_whitespace, o.chrf_eps};
    mp[2].ter = (nlp_ter_params){o.ter_norm, o.ter_nopunct, o.ter_asian, o.ter_case};
    mp[3].exact = (nlp_exact_params){o.lowercase};
    /* single-system and plain multi-system output sort the metrics by name
     * (BLEU, CHRF, TER, then exact match); paired tests keep the order given */
    int seq[NMETRICS], nseq = 0;
    for (int k = 0; k < NMETRICS; k++)
        if (want[k]) seq[nseq++] = k;
    if (paired)
        for (int k = 0; k < nm; k++) seq[k] = order[k];
    nlp_metric *m[NMETRICS];
    for (int k = 0; k < nm; k++)
        if (!(m[k] = nlp_metric_new(&mp[seq[k]]))) cli_fail(NLP_ENOMEM);

    if (want[0] && !o.force && !o.sentence_level) {
        size_t tok = 0;
        for (size_t i = 0; i < sys[0].lines.n; i++)
            tok += sys[0].lines.len[i] >= 2 && memcmp(sys[0].lines.s[i] + sys[0].lines.len[i] - 2, " .", 2) == 0;
        if (tok >= 100) {
            cli_info("warning: that's 100 lines that end in a tokenized period ('.')");
            cli_info("warning: it looks like you forgot to detokenize your test data, which may hurt your score");
            cli_info("warning: if you insist your data is detokenized, or don't care, use --force");
        }
    }

    nlp_buf out = {0}, sigb = {0};
    nlp_sig sig;
    double sum[3 * 2 * NLP_NGRAM_MAX_ORDER + 2];
    (void)sum;
    char seed_shown[64];
    int seed_none = 0;
    uint64_t seed = (o.confidence || paired) ? seed_from_env(seed_shown, sizeof seed_shown, &seed_none) : 0;

    // --- sentence level
    if (o.sentence_level) {
        nlp_metric *mm = m[0];
        int ns = nlp_metric_nstats(mm);
        double *st = segment_stats(mm, &sys[0], refs, nrefs);
        nlp_metric_signature(mm, nrefs, NULL, &sig);
        nlp_sig_format(&sig, o.short_sig, &sigb);
        for (size_t i = 0; i < sys[0].lines.n; i++) {
            nlp_score sc;
            nlp_metric_score(mm, st + i * (size_t)ns, &sc);
            if (nlp_report_score(&sc, sigb.data, (int)o.width, o.score_only, 0, &out) || nlp_buf_putc(&out, '\n'))
                cli_fail(NLP_ENOMEM);
            if (out.len > 65536) put(&out);
        }
        put(&out);
        free(st);
        goto done;
    }

    // --- one system
    if (nsys == 1) {
        char *lines[NMETRICS];
        for (int k = 0; k < nm; k++) {
            int ns = nlp_metric_nstats(m[k]);
            double *st = segment_stats(m[k], &sys[0], refs, nrefs);
            sum_stats(st, sys[0].lines.n, ns, sum);
            nlp_score sc;
            nlp_metric_score(m[k], sum, &sc);
            nlp_sig_test test = {0, 0, NULL};
            if (o.confidence && o.confidence_n > 1) {
                nlp_segstats ss = {sys[0].lines.n, ns, st};
                if (nlp_signif_bootstrap(m[k], &ss, o.confidence_n, seed, 1, &sc.mean, &sc.ci)) cli_fail(NLP_ENOMEM);
                test.bs = o.confidence_n;
                test.seed = seed_shown;
            }
            nlp_metric_signature(m[k], nrefs, &test, &sig);
            nlp_buf_reset(&sigb);
            nlp_sig_format(&sig, json ? 0 : o.short_sig, &sigb);
            nlp_buf line = {0};
            if (nlp_report_score(&sc, sigb.data, (int)o.width, o.score_only, json, &line)) cli_fail(NLP_ENOMEM);
            lines[k] = line.data;
            free(st);
        }
        if (nlp_report_single(lines, nm, json, &out)) cli_fail(NLP_ENOMEM);
        put(&out);
        for (int k = 0; k < nm; k++) free(lines[k]);
        goto done;
    }

    // --- several systems
    nlp_report_cell *cells = nlp_calloc((size_t)nsys * (size_t)nm, sizeof *cells);
    const char **names = nlp_calloc((size_t)nsys, sizeof *names);
    const char *mnames[NMETRICS];
    char *sigs[NMETRICS];
    if (!cells || !names) cli_fail(NLP_ENOMEM);
    for (int s = 0; s < nsys; s++) names[s] = sys[s].name;
    char seed_int[32];
    snprintf(seed_int, sizeof seed_int, "%llu", (unsigned long long)seed);
    for (int k = 0; k < nm; k++) {
        int ns = nlp_metric_nstats(m[k]);
        mnames[k] = nlp_metric_name(m[k]);
        double *bl = NULL;
        for (int s = 0; s < nsys; s++) {
            double *st = segment_stats(m[k], &sys[s], refs, nrefs);
            nlp_report_cell *cl = &cells[s * nm + k];
            sum_stats(st, sys[s].lines.n, ns, sum);
            nlp_score sc;
            nlp_metric_score(m[k], sum, &sc);
            *cl = (nlp_report_cell){sc.score, NAN, NAN, NAN};
            nlp_segstats cur = {sys[s].lines.n, ns, st}, base = {sys[0].lines.n, ns, bl};
            int rc = 0;
            if (paired == 1 && s == 0) rc = nlp_signif_bootstrap(m[k], &cur, o.paired_bs_n, seed, 0, &cl->mean, &cl->ci);
            if (paired == 1 && s > 0)
                rc = nlp_signif_paired_bs(m[k], &base, &cur, o.paired_bs_n, seed, &cl->p_value, &cl->mean, &cl->ci);
            if (paired == 2 && s > 0) rc = nlp_signif_paired_ar(m[k], &base, &cur, o.paired_ar_n, seed, &cl->p_value);
            if (rc) cli_fail(rc);
            if (s == 0) bl = st;
            else free(st);
        }
        free(bl);
        nlp_sig_test test = {paired == 1 ? o.paired_bs_n : 0, paired == 2 ? o.paired_ar_n : 0,
                             paired ? (seed_none ? "none" : seed_int) : NULL};
        nlp_metric_signature(m[k], nrefs, &test, &sig);
        nlp_buf sb = {0};
        nlp_sig_format(&sig, o.short_sig, &sb);
        sigs[k] = sb.data;
    }
    nlp_report_table t = {nsys, nm, names, mnames, (const char *const *)sigs, cells, paired,
                          paired == 1 ? o.paired_bs_n : o.paired_ar_n};
    int color = !o.no_color && !getenv("NO_COLOR") && isatty(1);
    int rc = json ? nlp_report_table_json(&t, (int)o.width, &out) : nlp_report_table_text(&t, (int)o.width, color, &out);
    if (rc) cli_fail(rc);
    put(&out);
    for (int k = 0; k < nm; k++) free(sigs[k]);
    free(cells);
    free(names);

done:
    if (fflush(stdout) != 0 || ferror(stdout)) cli_die(1, "cannot write to standard output: %s", strerror(errno));
    for (int k = 0; k < nm; k++) nlp_metric_free(m[k]);
    for (int s = 0; s < nsys; s++) {
        free((char *)sys[s].name);
        if (ninputs == 0) nlp_lines_free(&sys[s].lines);
    }
    free(sys);
    for (size_t f = 0; f < (ninputs ? ninputs : 1); f++) nlp_textfile_free(&hypf[f]);
    free(hypf);
    for (int k = 0; k < nrefs; k++) nlp_textfile_free(&refs[k]);
    free(refs);
    nlp_buf_free(&out);
    nlp_buf_free(&sigb);
    for (int i = 0; i < nowned; i++) free(owned[i]);
    free(owned);
    free(nargv);
    cli_free();
    return 0;
}
