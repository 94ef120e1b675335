/*
 * config.h — YAML configuration files (libyaml), flat key → value.
 *
 * A config file is one YAML mapping whose keys are the tools' long option
 * names (`vocab-size: 32000`). Values are scalars or flow/block sequences of
 * scalars (kept as items, and joined with ','). `~`/`null` values are kept
 * as NULL so that
 * "unset" can be expressed. A file holds at most NLP_CONFIG_MAX_BYTES.
 * Nested mappings, anchors/aliases, several
 * documents and duplicate keys are rejected with the file, line and column.
 * Interpretation of keys and values (which keys exist, their types) belongs
 * to the caller; lib/ only parses and reports where things are.
 *
 * Not here: the option tables (bin/common/cli.c), model presets (lib/model).
 */
#ifndef NLP_BASE_CONFIG_H
#define NLP_BASE_CONFIG_H

#include <stddef.h>

#include "base/mem.h"

typedef struct nlp_config_entry {
    char *key;
    char *value;    /* NULL for ~/null; a list's items joined with ',' */
    int line;       /* 1-based line of the key */
    int is_list;    /* value came from a sequence */
    char **items;   /* a list's items (n_items of them, NULL-terminated); NULL otherwise */
    size_t n_items;
} nlp_config_entry;

/* The largest config file read (1 MiB): a config is a few dozen keys, and
 * an endless stream (-c /dev/zero) must not fill the memory. */
#define NLP_CONFIG_MAX_BYTES ((size_t)1 << 20)

typedef struct nlp_config {
    nlp_config_entry *e;
    size_t n, cap;
    char *path; /* file name for messages */
} nlp_config;

/* Parses `path` ("-" = stdin). On error returns NLP_EIO (cannot read) or
 * NLP_EFORMAT ("'f.yaml' line 3, column 5: ..."). The caller frees with
 * nlp_config_free, also after an error. */
int nlp_config_load(nlp_config *c, const char *path);

/* Called with each key as it is read, before its value: 0 to accept it, or
 * a negative status with a message (the caller of the parser prefixes the
 * file and line). */
typedef int (*nlp_config_check_fn)(void *ctx, const char *key);

/* nlp_config_load with keys checked as they are read: the first bad key
 * ends the parse (unknown keys in a huge file cost nothing). */
int nlp_config_load_checked(nlp_config *c, const char *path, nlp_config_check_fn check, void *ctx);

/* Same from a string already in memory; `name` is used in messages. */
int nlp_config_parse(nlp_config *c, const char *text, size_t len, const char *name);

void nlp_config_free(nlp_config *c);

/* The entry for `key`, or NULL. */
const nlp_config_entry *nlp_config_get(const nlp_config *c, const char *key);

/* Appends `s` as a YAML scalar that reads back as exactly s (plain when that
 * is safe, double-quoted otherwise, with escapes for control characters and
 * for what YAML takes as line breaks: U+0085, U+2028, U+2029). s must be
 * UTF-8, as YAML cannot carry other bytes. NULL is written as `~`. */
int nlp_yaml_scalar(nlp_buf *b, const char *s);

/* Parses a YAML boolean (true/false/yes/no/on/off/1/0, any case):
 * 1 or 0, or -1 if it is none of them. */
int nlp_parse_bool(const char *s);

#endif
