/*
 * cli.h — the command-line layer every tool shares: one declarative option
 * table per tool, parsed by getopt_long, with YAML config files whose keys
 * are the long option names, --dump-config, --help/--version, and the
 * message/exit conventions of shared/CLI.md.
 *
 * Order of precedence: built-in defaults < config files (-c, repeatable, later
 * wins) < flags. One rule for config files, in every tool: a -c file that is
 * missing, unreadable or not YAML, or holds an unknown key or a bad value,
 * exits 3 with a message naming the file (and line); bad flag values are
 * usage errors (exit 2).
 * A YAML list is accepted where an option repeats (CLI_LIST: one value per
 * item) or takes a comma-separated list (CLI_COMMAS: the items joined with
 * ','); for any other option it is an error naming the key's line.
 *
 * This lives in bin/ because it prints and exits; lib/ never does.
 */
#ifndef NLP_BIN_CLI_H
#define NLP_BIN_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "base/err.h"

enum cli_kind {
    CLI_BOOL,   /* int*: flag sets 1; with CLI_NEGATABLE also --no-NAME sets 0 */
    CLI_INT,    /* long*: integer, range [min, max] when min < max */
    CLI_DOUBLE, /* double*: finite number, range [min, max] when min < max */
    CLI_STR,    /* char**: the string (not copied: argv or config storage, alive until cli_free) */
    CLI_CHOICE, /* int*: index into choices */
    CLI_CALL,   /* custom: call(opt, arg, ctx) returns 0 or an NLP_E* status with nlp_error set */
    CLI_LIST,   /* struct cli_list*: a repeatable option (-i A -i B, or `input: [A, B]`); the values of
                   a later config file, or of the flags, replace the earlier ones */
};

/* Default of --max-line-bytes (tokenize, train-bpe, train-wordpiece, bleu):
 * the longest input line a tool holds at once (16 MiB). */
#define CLI_MAX_LINE_BYTES (16L << 20)

/* The values of a CLI_LIST option (strings as for CLI_STR). Zero-initialize. */
struct cli_list {
    const char **v;
    size_t n, cap;
    int src; /* where the values came from (internal) */
};

enum {
    CLI_NOCONFIG = 1,  /* flag only: not accepted in config files, not dumped */
    CLI_NEGATABLE = 2, /* CLI_BOOL: also accept --no-NAME */
    CLI_OPTARG = 4,    /* the argument is optional (--name[=ARG]); CLI_CALL gets NULL when absent */
    CLI_NOARG = 8,     /* CLI_CALL takes no argument (called with NULL) */
    CLI_CONFIGONLY = 16, /* a config-file key only (a run's record, such as a positional argument): no flag */
    CLI_COMMAS = 32,     /* the value is a comma-separated list: a YAML list is accepted, joined with ',' */
    CLI_NONEMPTY = 64,   /* an empty value is refused (file names: `-o ""` is a usage error) */
    CLI_AUTO = 128,      /* CLI_INT, CLI_DOUBLE: the value -1 means "auto" (the tool decides, from the
                            architecture say); it is given as `auto` (or `~` in a config file) and
                            shown so by --dump-config, and every number given must lie in [min, max] */
};

struct cli_opt {
    const char *name;  /* long name and YAML key */
    int key;           /* short option character, or 0 */
    enum cli_kind kind;
    void *dest;
    const char *const *choices; /* CLI_CHOICE: NULL-terminated list */
    double min, max;
    int flags;
    int (*call)(const struct cli_opt *o, const char *arg, void *ctx);
    /* CLI_CALL: how --dump-config shows the current value (NULL = not dumped) */
    const char *(*show)(const struct cli_opt *o, void *ctx);
};

struct cli {
    const char *prog;   /* tool name used in messages */
    const char *usage;  /* the whole --help text */
    struct cli_opt *opts; /* terminated by an entry with name == NULL */
    void *ctx;          /* passed to call/show */
};

/* 1 while values from config files are applied, 0 for flags: a CLI_CALL
 * handler gets NULL both for a flag without argument and for `~` in a file,
 * and tells them apart by this (`~` means "the default"). */
extern int cli_in_config;

/* Verbosity from -q/-v (built in): -1 quiet, 0 normal, 1+ verbose. */
extern int cli_verbosity;
extern const char *cli_prog;

/* Parses argv. Handles -h/--help, -V/--version, -c/--config, --dump-config,
 * -q/--quiet and -v/--verbose itself. Exits 0 after help/version/dump-config
 * (1 if that output could not be written), 2 on usage errors, 3 on
 * any config-file error. Returns the index of the first
 * positional argument (argv is permuted as getopt_long does). */
int cli_parse(struct cli *c, int argc, char **argv);

/* Whether option `name` (its long name) was given: 2 as a flag, 1 in a
 * config file, 0 not at all (its built-in value), after cli_parse. */
int cli_given(const char *name);

/* Where the value of a CLI_STR option came from: 1, with the config file
 * and the line of its key, when `value` is a config file's (a CLI_STR holds
 * the config's own string); 0 for a flag's or a built-in value. For a tool
 * that checks such a value itself, to say where a bad one is (exit 3 for
 * a config file's, a usage error for a flag's). */
int cli_value_origin(const char *value, const char **file, int *line);

/* Exits 2 when output `out` of option `opt` (such as "--log") is one of the
 * inputs (the same file, by device and inode: a training file, a
 * tokenizer, a config file): it would be replaced. "-", a path that does
 * not exist yet and a NULL input are no input. */
void cli_check_output(const char *opt, const char *out, const char *const *inputs, size_t n);

/* Releases config storage (strings from config files stay valid until then)
 * and the values of CLI_LIST options. */
void cli_free(void);

/* "prog: message" on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Like cli_warn but only when not quiet / when verbose. */
void cli_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "prog: message" and exit with `status`. */
_Noreturn void cli_die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Usage error: "prog: message" + "Try 'prog --help' for more information.", exit 2. */
_Noreturn void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Library failure: prints nlp_errmsg() and exits with nlp_exit_code(rc). */
_Noreturn void cli_fail(int rc);

/* The one exit rule for the files a tool is given to work with (a model,
 * checkpoint, run directory, tokenizer or config file: -m, --init,
 * --resume, --tokenizer, -c...): one that cannot be used exits 3, whatever
 * the reason (missing, unreadable, a directory without one, corrupt,
 * incompatible), as the conventions' "unreadable, corrupt or incompatible
 * model, tokenizer or config file" says; only out of memory (1) and a usage
 * error (2) keep their statuses. Data files (the text, streams and TSV a
 * tool reads or writes) fail with cli_fail: 1 for I/O. A file a tool needs
 * but was not given is a usage error (2: modelio.h's mio_no_tokenizer). */
_Noreturn void cli_fail_file(int rc);

/* A data-parallel job (bin/common/dist.h sets it): messages name the rank,
 * cli_info, cli_debug, cli_warn and usage errors come from rank 0 only,
 * and an exit with a failure status ends every rank (abort_job; a usage
 * error through abort_lead, which has rank 0 end the job after its message). */
void cli_set_dist(int rank, int size, void (*abort_job)(int), void (*abort_lead)(int), void (*finalize)(void));

/* Parses helpers for CLI_CALL handlers: 0 or NLP_EINVAL with message set. */
int cli_parse_long(const char *s, long *out);
int cli_parse_double(const char *s, double *out);

#endif
