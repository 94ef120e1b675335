/*
 * cli.c — option tables, config files and messages for every tool. See cli.h.
 */
#include "common/cli.h"
#include "base/config.h"
#include "base/io.h"
#include "base/mem.h"

#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cli_verbosity = 0;
int cli_in_config = 0;
const char *cli_prog = "nlpipe";

static nlp_config *configs;
static size_t nconfigs;

/* The long built-ins get values of their own (L_*), not their short
 * letters: getopt reports an error through optopt, and only distinct values
 * tell "-c" without its argument from "--config" without one, or "-q" from
 * "--quiet=1". */
enum {
    B_HELP = 'h', B_VERSION = 'V', B_CONFIG = 'c', B_QUIET = 'q', B_VERBOSE = 'v',
    B_DUMP = 900, L_HELP, L_VERSION, L_CONFIG, L_QUIET, L_VERBOSE,
    OPT_BASE = 1000,  /* OPT_BASE + i: option i */
    NEG_BASE = 20000, /* NEG_BASE + i: --no-NAME of option i */
};

/* A data-parallel job (cli_set_dist): this process's rank, the ranks, and
 * how to end them all. Tools that train set it; the others stay one rank
 * and never link MPI. */
static int dist_rank, dist_size = 1;
static void (*dist_abort)(int), (*dist_abort_lead)(int), (*dist_finalize)(void);

void cli_set_dist(int rank, int size, void (*abort_job)(int), void (*abort_lead)(int), void (*finalize)(void))
{
    dist_rank = rank, dist_size = size, dist_abort = abort_job, dist_abort_lead = abort_lead, dist_finalize = finalize;
}

/* "prog: ", or "prog (rank N): " in a job of several ranks */
static void prefix(void)
{
    if (dist_size > 1) fprintf(stderr, "%s (rank %d): ", cli_prog, dist_rank);
    else fprintf(stderr, "%s: ", cli_prog);
}

static void vmsg(const char *fmt, va_list ap)
{
    prefix();
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

/* Exits; in a job of several ranks a failure ends every rank (the others
 * may be waiting for this one). */
static _Noreturn void leave(int status)
{
    fflush(stderr);
    if (status && dist_abort) dist_abort(status);
    if (dist_finalize) dist_finalize();
    exit(status);
}

void cli_warn(const char *fmt, ...)
{
    if (dist_rank > 0) return; /* the ranks would say it all alike */
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}

void cli_info(const char *fmt, ...)
{
    if (cli_verbosity < 0 || dist_rank > 0) return;
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}

void cli_debug(const char *fmt, ...)
{
    if (cli_verbosity < 1 || dist_rank > 0) return;
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
}

void cli_die(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(fmt, ap);
    va_end(ap);
    leave(status);
}

void cli_usage_error(const char *fmt, ...)
{
    if (dist_rank == 0) { /* every rank parses the same command line */
        va_list ap;
        va_start(ap, fmt);
        vmsg(fmt, ap);
        va_end(ap);
        fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
    }
    /* the other ranks leave it to rank 0 to end the job: ending it themselves
     * could kill rank 0 before its message is out */
    fflush(stderr);
    if (dist_size > 1 && dist_abort_lead) dist_abort_lead(NLP_EXIT_USAGE);
    leave(NLP_EXIT_USAGE);
}

void cli_fail(int rc)
{
    const char *m = nlp_errmsg();
    prefix();
    fprintf(stderr, "%s\n", *m ? m : nlp_status_name(rc));
    leave(nlp_exit_code(rc));
}

void cli_fail_file(int rc)
{
    cli_fail(rc == NLP_ENOMEM || rc == NLP_EINVAL ? rc : NLP_EFORMAT);
}

int cli_parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno) return nlp_error(NLP_EINVAL, "'%s' is not an integer", s);
    *out = v;
    return NLP_OK;
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno == ERANGE || !isfinite(v)) return nlp_error(NLP_EINVAL, "'%s' is not a finite number", s);
    *out = v;
    return NLP_OK;
}

static int choices_msg(const struct cli_opt *o, const char *arg)
{
    nlp_buf b = {0};
    for (int i = 0; o->choices[i]; i++) {
        if (i) nlp_buf_puts(&b, o->choices[i + 1] ? ", " : " or ");
        nlp_buf_puts(&b, o->choices[i]);
    }
    int rc = nlp_error(NLP_EINVAL, "'%s' is not one of %s", arg, b.data ? b.data : "");
    nlp_buf_free(&b);
    return rc;
}

/* Applies `arg` to option o. Returns 0 or NLP_EINVAL with a message. */
/* Built-in values of the CLI_STR options, recorded before any config file
 * or flag is applied (index = option index). */
static const char **str_defaults;

static const char *str_default(const struct cli *c, const struct cli_opt *o)
{
    return str_defaults ? str_defaults[o - c->opts] : NULL;
}

/* Where the values being applied come from: 1 + the config file's index,
 * or INT_MAX for the flags (a CLI_LIST starts over when it changes). */
static int apply_src;

/* Whether each option was given (index = option index): 1 in a config
 * file, 2 as a flag (cli_given). */
static unsigned char *given;
static size_t ngiven;

static int apply(struct cli *c, const struct cli_opt *o, const char *arg, int from_config)
{
    if (given && (size_t)(o - c->opts) < ngiven) given[o - c->opts] = from_config ? 1 : 2;
    if ((o->flags & CLI_NONEMPTY) && arg && !*arg) return nlp_error(NLP_EINVAL, "an empty name is not a file name");
    switch (o->kind) {
    case CLI_BOOL: {
        if (!from_config) {
            *(int *)o->dest = 1;
            return NLP_OK;
        }
        int b = arg ? nlp_parse_bool(arg) : -1;
        if (b < 0) return nlp_error(NLP_EINVAL, "'%s' is not a boolean (true or false)", arg ? arg : "~");
        *(int *)o->dest = b;
        return NLP_OK;
    }
    case CLI_INT: {
        long v;
        const char *or_auto = o->flags & CLI_AUTO ? ", or auto" : "";
        if ((o->flags & CLI_AUTO) && (arg ? strcmp(arg, "auto") == 0 : from_config)) {
            *(long *)o->dest = -1;
            return NLP_OK;
        }
        if (!arg) return nlp_error(NLP_EINVAL, "a value is required");
        if (cli_parse_long(arg, &v)) return NLP_EINVAL;
        if (o->min < o->max && (v < o->min || v > o->max))
            return nlp_error(NLP_EINVAL, "%ld is out of range (%.0f to %.0f%s)", v, o->min, o->max, or_auto);
        *(long *)o->dest = v;
        return NLP_OK;
    }
    case CLI_DOUBLE: {
        double v;
        const char *or_auto = o->flags & CLI_AUTO ? ", or auto" : "";
        if ((o->flags & CLI_AUTO) && (arg ? strcmp(arg, "auto") == 0 : from_config)) {
            *(double *)o->dest = -1;
            return NLP_OK;
        }
        if (!arg) return nlp_error(NLP_EINVAL, "a value is required");
        if (cli_parse_double(arg, &v)) return NLP_EINVAL;
        if (o->min < o->max && (v < o->min || v > o->max))
            return nlp_error(NLP_EINVAL, "%g is out of range (%g to %g%s)", v, o->min, o->max, or_auto);
        *(double *)o->dest = v;
        return NLP_OK;
    }
    case CLI_STR:
        /* `~` in a config file restores the built-in default (which may be
         * NULL, "unset"); it never leaves NULL where a tool has a default */
        if (!arg && from_config) arg = str_default(c, o);
        *(const char **)o->dest = arg;
        return NLP_OK;
    case CLI_CHOICE:
        if (!arg) return choices_msg(o, "~");
        for (int i = 0; o->choices[i]; i++)
            if (strcmp(arg, o->choices[i]) == 0) {
                *(int *)o->dest = i;
                return NLP_OK;
            }
        return choices_msg(o, arg);
    case CLI_CALL: {
        int rc = o->call(o, arg, c->ctx);
        if (rc && !*nlp_errmsg()) nlp_error(rc, "invalid value '%s'", arg ? arg : "");
        return rc;
    }
    case CLI_LIST: {
        struct cli_list *l = o->dest;
        if (l->src != apply_src) { /* a later file or the flags: start over */
            l->n = 0;
            l->src = apply_src;
        }
        if (!arg) { /* `~`: the default, none */
            l->n = 0;
            return NLP_OK;
        }
        if (nlp_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) return NLP_ENOMEM;
        l->v[l->n++] = arg;
        return NLP_OK;
    }
    }
    return NLP_EINVAL;
}

static void print_number(FILE *f, double v)
{
    char tmp[64];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    /* keep it a float for YAML readers: 1 → 1.0 */
    if (!strpbrk(tmp, ".eEin")) strcat(tmp, ".0");
    fputs(tmp, f);
}

static void dump_config(struct cli *c)
{
    printf("# %s (nlpipe) %s: effective configuration\n", c->prog, NLP_VERSION);
    for (struct cli_opt *o = c->opts; o->name; o++) {
        if (o->flags & (CLI_NOCONFIG | CLI_CONFIGONLY)) continue;
        nlp_buf b = {0};
        switch (o->kind) {
        case CLI_BOOL: nlp_buf_puts(&b, *(int *)o->dest ? "true" : "false"); break;
        case CLI_INT:
            if ((o->flags & CLI_AUTO) && *(long *)o->dest == -1) nlp_buf_puts(&b, "auto");
            else nlp_buf_printf(&b, "%ld", *(long *)o->dest);
            break;
        case CLI_DOUBLE: break;
        case CLI_STR: nlp_yaml_scalar(&b, *(const char **)o->dest); break;
        case CLI_CHOICE: nlp_yaml_scalar(&b, o->choices[*(int *)o->dest]); break;
        case CLI_CALL:
            if (!o->show) continue;
            nlp_yaml_scalar(&b, o->show(o, c->ctx));
            break;
        case CLI_LIST: {
            const struct cli_list *l = o->dest;
            nlp_buf_putc(&b, '[');
            for (size_t i = 0; i < l->n; i++) {
                if (i) nlp_buf_puts(&b, ", ");
                nlp_yaml_scalar(&b, l->v[i]);
            }
            nlp_buf_putc(&b, ']');
            break;
        }
        }
        printf("%s: ", o->name);
        if (o->kind == CLI_DOUBLE && (o->flags & CLI_AUTO) && *(double *)o->dest == -1) fputs("auto", stdout);
        else if (o->kind == CLI_DOUBLE) print_number(stdout, *(double *)o->dest);
        else fputs(b.data ? b.data : "", stdout);
        putchar('\n');
        nlp_buf_free(&b);
    }
}

/* Exits 0 after --help, --version or --dump-config, or 1 when their output
 * did not reach standard output (a full disk, a closed pipe): a truncated
 * --dump-config > file must not look like a success. */
static _Noreturn void exit_printed(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) cli_die(NLP_EXIT_FAILURE, "cannot write to standard output: %s", strerror(errno));
    exit(0);
}

/* Edit distance (Levenshtein, an adjacent swap counting one) between a and
 * b[0..nb), capped: an option name a typo may be of. */
static size_t edit_distance(const char *a, const char *b, size_t nb)
{
    enum { MAXLEN = 64 };
    size_t na = strlen(a);
    if (na >= MAXLEN || nb >= MAXLEN) return MAXLEN;
    size_t d[MAXLEN + 1][MAXLEN + 1];
    for (size_t i = 0; i <= na; i++) d[i][0] = i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[na][nb];
}

/* "; did you mean '--x'?" (or "'--x' or '--y'") for a name that is a typo of
 * one or two of names[] (NULL-ended; `prefix` before each, "--" or ""), else
 * "". A typo: at most 1 edit in 4 characters, and not the whole name. */
static const char *did_you_mean(const char *name, size_t n, const char *const *names, const char *prefix)
{
    static char buf[256];
    size_t best = (size_t)-1, hits = 0;
    const char *first = NULL, *second = NULL;
    for (int i = 0; names[i]; i++) {
        size_t d = edit_distance(names[i], name, n);
        if (d < best) best = d, hits = 0, first = second = NULL;
        if (d == best && ++hits <= 2) *(hits == 1 ? &first : &second) = names[i];
    }
    buf[0] = 0;
    if (!first || best == 0 || best > 1 + n / 4 || best >= n || hits > 2) return buf;
    if (second) snprintf(buf, sizeof buf, "; did you mean '%s%s' or '%s%s'?", prefix, first, prefix, second);
    else snprintf(buf, sizeof buf, "; did you mean '%s%s'?", prefix, first);
    return buf;
}

static void option_error(int ch, char **argv, const struct option *lopts, const char *shortopts)
{
    /* argv[optind - 1] is the long option at fault; for a short one in the
     * middle of a cluster it is the argument before (optopt names it) */
    const char *bad = argv[optind - 1];
    if (ch == ':') {
        if (optopt && optopt < 256) cli_usage_error("option requires an argument -- '%c'", optopt);
        cli_usage_error("option '%s' requires an argument", bad);
    }
    if (optopt && optopt < 256) cli_usage_error("invalid option -- '%c'", optopt);
    if (optopt >= 256) {
        /* a long option given an argument it does not take */
        for (int i = 0; lopts[i].name; i++)
            if (lopts[i].val == optopt) cli_usage_error("option '--%s' doesn't allow an argument", lopts[i].name);
    }
    (void)shortopts;
    if (bad[0] == '-' && bad[1] == '-') {
        /* prefix of several options, or unknown */
        const char *name = bad + 2;
        size_t n = strcspn(name, "="), hits = 0, len = 0;
        const char *names[512];
        char list[1024] = "";
        for (int i = 0; lopts[i].name && i < 511; i++) {
            names[i] = lopts[i].name, names[i + 1] = NULL;
            if (strncmp(lopts[i].name, name, n) != 0) continue;
            hits++;
            len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0, " '--%s'", lopts[i].name);
            if (len >= sizeof list) len = sizeof list;
        }
        if (hits > 1) cli_usage_error("option '%.*s' is ambiguous; possibilities:%s", (int)(n + 2), bad, list);
        cli_usage_error("unrecognized option '%.*s'%s", (int)(n + 2), bad, did_you_mean(name, n, names, "--"));
    }
    cli_usage_error("invalid option '%s'", bad);
}

/* SIGINT, SIGTERM, SIGHUP: remove the temporaries of open atomic writers,
 * then die of the same signal as before (the shell sees the usual status). */
static void on_fatal_signal(int sig)
{
    nlp_writer_unlink_pending();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signal_cleanup(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        /* an ignored signal (nohup, a background job) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        struct sigaction sa = {0};
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* Config keys are checked as the parser reads them (nlp_config_load_checked). */
struct key_check {
    const struct cli *c;
    size_t nopt;
};

static const struct cli_opt *find_key(const struct key_check *k, const char *key)
{
    for (size_t i = 0; i < k->nopt; i++)
        if (strcmp(k->c->opts[i].name, key) == 0 && !(k->c->opts[i].flags & CLI_NOCONFIG)) return &k->c->opts[i];
    return NULL;
}

static int check_key(void *ctx, const char *key)
{
    const struct key_check *k = ctx;
    if (find_key(k, key)) return NLP_OK;
    const char *names[512];
    size_t m = 0;
    for (size_t i = 0; i < k->nopt && m < 511; i++)
        if (!(k->c->opts[i].flags & CLI_NOCONFIG)) names[m++] = k->c->opts[i].name;
    names[m] = NULL;
    return nlp_error(NLP_EFORMAT, "unknown key '%s' (keys are the long option names of '%s --help')%s", key,
                     k->c->prog, did_you_mean(key, strlen(key), names, ""));
}

/* The options of the last cli_parse, for cli_free to release CLI_LIST values. */
/* the option table parsed last (static in every tool), for cli_free: not
 * the struct cli, which a tool may keep on a stack frame that has returned */
static struct cli_opt *parsed;

int cli_parse(struct cli *c, int argc, char **argv)
{
    cli_prog = c->prog;
    parsed = c->opts;
    install_signal_cleanup();
    size_t nopt = 0;
    while (c->opts[nopt].name) nopt++;

    /* getopt tables: each option, its --no- form, and the built-ins */
    struct option *lo = nlp_calloc(2 * nopt + 8, sizeof *lo);
    char *so = nlp_malloc(3 * nopt + 32);
    int *short_to = nlp_calloc(256, sizeof *short_to);
    if (!lo || !so || !short_to) cli_fail(NLP_ENOMEM);
    size_t k = 0;
    char *sp = so;
    sp += sprintf(sp, ":hVc:qv");
    for (size_t i = 0; i < nopt; i++) {
        const struct cli_opt *o = &c->opts[i];
        if (o->flags & CLI_CONFIGONLY) continue;
        int has = (o->kind == CLI_BOOL || (o->flags & CLI_NOARG)) ? no_argument
                  : (o->flags & CLI_OPTARG)                        ? optional_argument
                                                                   : required_argument;
        lo[k++] = (struct option){o->name, has, NULL, OPT_BASE + (int)i};
        if (o->kind == CLI_BOOL && (o->flags & CLI_NEGATABLE)) {
            char *neg = nlp_malloc(strlen(o->name) + 4);
            if (!neg) cli_fail(NLP_ENOMEM);
            sprintf(neg, "no-%s", o->name);
            lo[k++] = (struct option){neg, no_argument, NULL, NEG_BASE + (int)i};
        }
        if (o->key > 0 && o->key < 256) {
            short_to[o->key] = (int)i + 1;
            *sp++ = (char)o->key;
            if (has == required_argument) *sp++ = ':';
            if (has == optional_argument) {
                *sp++ = ':';
                *sp++ = ':';
            }
        }
    }
    *sp = 0;
    lo[k++] = (struct option){"help", no_argument, NULL, L_HELP};
    lo[k++] = (struct option){"version", no_argument, NULL, L_VERSION};
    lo[k++] = (struct option){"config", required_argument, NULL, L_CONFIG};
    lo[k++] = (struct option){"dump-config", no_argument, NULL, B_DUMP};
    lo[k++] = (struct option){"quiet", no_argument, NULL, L_QUIET};
    lo[k++] = (struct option){"verbose", no_argument, NULL, L_VERBOSE};
    lo[k] = (struct option){0};

    /* pass 1: syntax, built-ins, config files */
    int help = 0, version = 0, dump = 0, ch;
    const char **cfg = nlp_calloc((size_t)argc + 1, sizeof *cfg);
    size_t ncfg = 0;
    if (!cfg) cli_fail(NLP_ENOMEM);
    opterr = 0;
    optind = 0;
    while ((ch = getopt_long(argc, argv, so, lo, NULL)) != -1) {
        switch (ch) {
        case B_HELP:
        case L_HELP: help = 1; break;
        case B_VERSION:
        case L_VERSION: version = 1; break;
        case B_CONFIG:
        case L_CONFIG: cfg[ncfg++] = optarg; break;
        case B_DUMP: dump = 1; break;
        case '?':
        case ':': option_error(ch, argv, lo, so);
        default: break;
        }
    }
    if (help) {
        fputs(c->usage, stdout);
        exit_printed();
    }
    if (version) {
        printf("%s (nlpipe) %s\n", c->prog, NLP_VERSION);
        exit_printed();
    }

    str_defaults = nlp_calloc(nopt + 1, sizeof *str_defaults);
    free(given);
    given = nlp_calloc(nopt + 1, 1);
    ngiven = nopt;
    if (!str_defaults || !given) cli_fail(NLP_ENOMEM);
    for (size_t i = 0; i < nopt; i++)
        if (c->opts[i].kind == CLI_STR) str_defaults[i] = *(const char **)c->opts[i].dest;
    configs = nlp_calloc(ncfg + 1, sizeof *configs);
    if (!configs) cli_fail(NLP_ENOMEM);
    struct key_check kc = {c, nopt};
    for (size_t f = 0; f < ncfg; f++) {
        nlp_config *cf = &configs[nconfigs++];
        /* one rule for config files: missing, unreadable, not YAML, an
         * unknown key or a bad value all exit 3 (shared/CLI.md's
         * unreadable or corrupt file), whatever the tool */
        int rc = nlp_config_load_checked(cf, cfg[f], check_key, &kc);
        if (rc) cli_die(NLP_EXIT_FORMAT, "%s", nlp_errmsg());
        apply_src = (int)f + 1;
        for (size_t e = 0; e < cf->n; e++) {
            const nlp_config_entry *en = &cf->e[e];
            const struct cli_opt *o = find_key(&kc, en->key);
            int bad = 0;
            cli_in_config = 1;
            if (en->is_list && o->kind == CLI_LIST) {
                bad = en->n_items == 0 ? apply(c, o, NULL, 1) : 0;
                for (size_t it = 0; it < en->n_items && !bad; it++) bad = apply(c, o, en->items[it], 1);
            } else if (en->is_list && !(o->flags & CLI_COMMAS)) {
                cli_in_config = 0;
                cli_die(NLP_EXIT_FORMAT, "'%s' line %d: '%s' takes one value, not a list", cf->path, en->line,
                        en->key);
            } else {
                bad = apply(c, o, en->value, 1);
            }
            cli_in_config = 0;
            if (bad)
                cli_die(NLP_EXIT_FORMAT, "'%s' line %d: invalid value for '%s': %s", cf->path, en->line, en->key,
                        nlp_errmsg());
        }
    }

    /* pass 2: flags override config */
    apply_src = INT_MAX;
    optind = 0;
    while ((ch = getopt_long(argc, argv, so, lo, NULL)) != -1) {
        const struct cli_opt *o = NULL;
        const char *shown = NULL;
        if (ch == B_QUIET || ch == L_QUIET) cli_verbosity = -1;
        else if (ch == B_VERBOSE || ch == L_VERBOSE) cli_verbosity = cli_verbosity < 0 ? 1 : cli_verbosity + 1;
        else if (ch >= NEG_BASE) {
            *(int *)c->opts[ch - NEG_BASE].dest = 0;
            if (given) given[ch - NEG_BASE] = 2;
            continue;
        } else if (ch >= OPT_BASE) o = &c->opts[ch - OPT_BASE];
        else if (ch > 0 && ch < 256 && short_to[ch]) o = &c->opts[short_to[ch] - 1];
        if (!o) continue;
        if (apply(c, o, optarg, 0)) {
            static char flag[80];
            if (ch < 256) snprintf(flag, sizeof flag, "-%c", ch);
            else snprintf(flag, sizeof flag, "--%s", o->name);
            shown = flag;
            cli_usage_error("invalid value for %s: %s", shown, nlp_errmsg());
        }
    }
    int first = optind;
    /* freed before --dump-config exits, so LeakSanitizer has nothing to report */
    for (size_t i = 0; i < k; i++)
        if (lo[i].val >= NEG_BASE) free((char *)lo[i].name);
    free(lo);
    free(so);
    free(short_to);
    free(cfg);
    if (dump) {
        dump_config(c);
        exit_printed();
    }
    return first;
}

void cli_check_output(const char *opt, const char *out, const char *const *inputs, size_t n)
{
    struct stat so, si;
    if (!out || !strcmp(out, "-") || stat(out, &so) != 0 || S_ISCHR(so.st_mode) || S_ISFIFO(so.st_mode)) return;
    for (size_t i = 0; i < n; i++)
        if (inputs[i] && strcmp(inputs[i], "-") && stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev &&
            si.st_ino == so.st_ino)
            cli_usage_error("%s '%s' is also an input ('%s'): writing it would replace it", opt, out, inputs[i]);
}

int cli_given(const char *name)
{
    for (size_t i = 0; parsed && given && i < ngiven; i++)
        if (strcmp(parsed[i].name, name) == 0) return given[i];
    return 0;
}

int cli_value_origin(const char *value, const char **file, int *line)
{
    for (size_t i = 0; value && i < nconfigs; i++)
        for (size_t e = 0; e < configs[i].n; e++)
            if (configs[i].e[e].value == value) {
                *file = configs[i].path;
                *line = configs[i].e[e].line;
                return 1;
            }
    return 0;
}

void cli_free(void)
{
    for (struct cli_opt *o = parsed; o && o->name; o++)
        if (o->kind == CLI_LIST) {
            struct cli_list *l = o->dest;
            free(l->v);
            memset(l, 0, sizeof *l);
        }
    parsed = NULL;
    for (size_t i = 0; i < nconfigs; i++) nlp_config_free(&configs[i]);
    free(configs);
    configs = NULL;
    nconfigs = 0;
    free(str_defaults);
    str_defaults = NULL;
    free(given);
    given = NULL;
    ngiven = 0;
}
