/*
 * train.c — shared parts of the training tools. See train.h.
 */
#include "common/train.h"
#include "base/err.h"
#include "base/mem.h"
#include "common/cli.h"
#include "common/progress.h"
#include "text/utf8.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double t0;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void train_start(void) { t0 = now(); }
double train_elapsed(void) { return now() - t0; }

char **train_split_list(const char *s, size_t *n)
{
    char **v = nlp_calloc(strlen(s ? s : "") / 2 + 3, sizeof *v);
    if (!v) cli_fail(NLP_ENOMEM);
    *n = 0;
    while (s && *s) {
        size_t skip = strspn(s, ", \t\n");
        s += skip;
        size_t len = strcspn(s, ", \t\n");
        if (!len) break;
        if (!(v[(*n)++] = nlp_strndup(s, len))) cli_fail(NLP_ENOMEM);
        s += len;
    }
    return v;
}

void train_check_utf8(const char *name, const char *s)
{
    size_t bad;
    if (s && !nlp_utf8_valid(s, strlen(s), &bad)) cli_usage_error("--%s: invalid UTF-8 at byte %zu", name, bad);
}

const char **train_inputs(const struct cli_list *input, int argc, char **argv, int first, size_t *n)
{
    const char **v = nlp_calloc((size_t)argc + input->n + 2, sizeof *v);
    if (!v) cli_fail(NLP_ENOMEM);
    *n = 0;
    for (size_t i = 0; i < input->n; i++) v[(*n)++] = input->v[i];
    for (int i = first; i < argc; i++) v[(*n)++] = argv[i];
    if (!*n) v[(*n)++] = "-";
    return v;
}

/* the progress of counting: the inputs' size, when known */
struct count_progress {
    progress_line p;
    uint64_t total;
};

static void count_line(struct count_progress *c, uint64_t lines, uint64_t bytes, int final)
{
    char extra[48];
    snprintf(extra, sizeof extra, "%llu lines", (unsigned long long)lines);
    progress_show(&c->p, (double)bytes, (double)c->total, 1e6, "MB", (double)bytes, NULL, extra, final);
}

void train_count_progress(void *ctx, uint64_t lines, uint64_t bytes) { count_line(ctx, lines, bytes, 0); }

/* merging starts as counting ends (train_count_words starts its clock) */
static progress_line merge_line;

void train_merge_progress(void *ctx, size_t merges, size_t vocab, size_t vocab_size)
{
    progress_line *p = &merge_line;
    (void)ctx;
    char extra[48];
    snprintf(extra, sizeof extra, "%zu merges", merges);
    /* called every 256 merges and at the end: every call is shown */
    progress_show(p, (double)vocab, (double)vocab_size, 1, "tokens", (double)merges, "merges/s", extra, 1);
}

void train_merge_done(int ok, size_t merges, size_t vocab)
{
    if (ok) {
        /* the vocabulary it came to, without a share: training may stop
         * before --vocab-size when no pair is left */
        char extra[48];
        snprintf(extra, sizeof extra, "%zu merges", merges);
        progress_show(&merge_line, (double)vocab, 0, 1, "tokens", (double)merges, "merges/s", extra, 1);
    }
    progress_end(&merge_line);
}

nlp_wordcount_opts train_count_opts(const nlp_tok_spec *spec, char *const *specials, size_t n_specials, int strict,
                                    long max_lines, long max_line_bytes, int threads)
{
    return (nlp_wordcount_opts){
        .norm = spec->norm,
        .n_norm = spec->n_norm,
        .pretok = spec->pretok,
        .n_pretok = spec->n_pretok,
        .specials = (const char *const *)specials,
        .n_specials = n_specials,
        .strict = strict,
        .max_lines = (uint64_t)max_lines,
        .max_line_bytes = (size_t)max_line_bytes,
        .long_line_hint = "(--max-line-bytes raises the limit)",
        .threads = threads,
    };
}

void train_count_words(nlp_wordcount *wc, const char *const *inputs, size_t n, nlp_wordcount_opts *opts, int progress,
                       const char *what_else)
{
    struct count_progress cp = {0};
    progress_start(&cp.p, "counting words");
    /* the share done needs every input's size (not a pipe's), and all of
     * it read (not --max-sentences) */
    cp.total = opts->max_lines ? 0 : progress_input_size(inputs, n);
    opts->progress = progress ? train_count_progress : NULL;
    opts->progress_ctx = &cp;
    nlp_wordcount_stats ws = {0};
    int rc = nlp_wordcount_files(wc, inputs, n, opts, &ws);
    if (progress) {
        count_line(&cp, ws.lines, ws.bytes, 1); /* the final line, whatever was shown */
        progress_end(&cp.p);
    }
    if (rc) cli_fail(rc);
    if (ws.replaced)
        cli_info("warning: replaced %llu invalid UTF-8 sequence%s with U+FFFD (the first at %s); --strict makes "
                 "this an error",
                 (unsigned long long)ws.replaced, ws.replaced == 1 ? "" : "s", ws.first_bad);
    if (nlp_wordcount_size(wc) == 0)
        cli_die(NLP_EXIT_FAILURE, "no words to learn from: %s%s", ws.lines ? "the input has only " : "the input is empty",
                ws.lines ? what_else : "");
    cli_debug("%llu lines, %llu words, %zu distinct, %.2f s", (unsigned long long)ws.lines,
              (unsigned long long)ws.words, nlp_wordcount_size(wc), train_elapsed());
    progress_start(&merge_line, "merging");
}
