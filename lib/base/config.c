/*
 * config.c — flat YAML configs through libyaml's event parser. See config.h.
 */
#include "base/config.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/io.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

static int ferr(const nlp_config *c, const yaml_mark_t *m, const char *what)
{
    return nlp_error(NLP_EFORMAT, "'%s' line %zu, column %zu: %s", c->path, m->line + 1, m->column + 1,
                     what);
}

static int add(nlp_config *c, const char *key, const char *val, int line, int is_list, const nlp_buf *items,
               size_t n_items)
{
    if (nlp_grow(&c->e, &c->cap, c->n + 1, sizeof *c->e)) return NLP_ENOMEM;
    nlp_config_entry *e = &c->e[c->n];
    memset(e, 0, sizeof *e);
    e->key = nlp_strdup(key);
    e->value = val ? nlp_strdup(val) : NULL;
    int oom = !e->key || (val && !e->value);
    if (!oom && is_list) {
        /* the items, NUL-separated in items->data */
        e->items = nlp_calloc(n_items + 1, sizeof *e->items);
        char *blk = n_items ? nlp_malloc(items->len) : NULL;
        if (!e->items || (n_items && !blk)) {
            free(e->items);
            free(blk);
            e->items = NULL;
            oom = 1;
        } else if (n_items) {
            memcpy(blk, items->data, items->len);
            for (size_t i = 0, at = 0; i < n_items; i++) {
                e->items[i] = blk + at;
                at += strlen(blk + at) + 1;
            }
        }
    }
    if (oom) {
        free(e->key);
        free(e->value);
        return NLP_ENOMEM;
    }
    e->line = line;
    e->is_list = is_list;
    e->n_items = n_items;
    c->n++;
    return NLP_OK;
}

static int is_null_scalar(const yaml_event_t *ev)
{
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *v = (const char *)ev->data.scalar.value;
    return ev->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* The parser behind nlp_config_parse and nlp_config_load_checked: check
 * (may be NULL) sees each key as it is read. */
static int parse(nlp_config *c, const char *text, size_t len, const char *name, nlp_config_check_fn check,
                 void *ctx)
{
    memset(c, 0, sizeof *c);
    c->path = nlp_strdup(name);
    if (!c->path) return NLP_ENOMEM;
    /* keys seen, for duplicates: a hash, so that a file of many keys is
     * not quadratic */
    nlp_strmap *seen = nlp_strmap_new(16);
    if (!seen) return NLP_ENOMEM;

    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        nlp_strmap_free(seen);
        return nlp_error(NLP_ENOMEM, "out of memory (yaml parser)");
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);

    /* states: 0 before mapping, 1 expecting key, 2 expecting value, 3 in list, 4 after mapping */
    int state = 0, docs = 0, rc = NLP_OK;
    char *key = NULL;
    int key_line = 0;
    nlp_buf list = {0}, items = {0};
    int list_items = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = nlp_error(NLP_EFORMAT, "'%s' line %zu, column %zu: %s%s%s", c->path, p.problem_mark.line + 1,
                           p.problem_mark.column + 1, p.problem ? p.problem : "syntax error",
                           p.context ? " " : "", p.context ? p.context : "");
            break;
        }
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        switch (t) {
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_END_EVENT:
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) rc = ferr(c, &ev.start_mark, "more than one YAML document");
            break;
        case YAML_ALIAS_EVENT:
            rc = ferr(c, &ev.start_mark, "aliases are not supported in config files");
            break;
        case YAML_MAPPING_START_EVENT:
            if (state == 0) state = 1;
            else rc = ferr(c, &ev.start_mark, key ? "nested mappings are not allowed (expected a scalar or a list)"
                                                  : "a key must be a plain name");
            break;
        case YAML_MAPPING_END_EVENT:
            state = 4;
            break;
        case YAML_SEQUENCE_START_EVENT:
            if (state == 2) {
                state = 3;
                nlp_buf_reset(&list);
                nlp_buf_reset(&items);
                list_items = 0;
            } else if (state == 0) {
                rc = ferr(c, &ev.start_mark, "expected a mapping of option names to values, found a list");
            } else {
                rc = ferr(c, &ev.start_mark, state == 3 ? "nested lists are not allowed" : "a key must be a plain name");
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
            if (state == 3) {
                rc = add(c, key, list.data ? list.data : "", key_line, 1, &items, (size_t)list_items);
                free(key);
                key = NULL;
                state = 1;
            }
            break;
        case YAML_SCALAR_EVENT: {
            const char *v = (const char *)ev.data.scalar.value;
            if (state == 0) {
                if (is_null_scalar(&ev)) break; /* empty document */
                rc = ferr(c, &ev.start_mark, "expected a mapping of option names to values");
            } else if (state == 1) {
                int is_new;
                if (!nlp_strmap_slot(seen, v, strlen(v), &is_new)) {
                    rc = NLP_ENOMEM;
                    break;
                }
                if (!is_new) {
                    char msg[300];
                    snprintf(msg, sizeof msg, "duplicate key '%.200s'", v);
                    rc = ferr(c, &ev.start_mark, msg);
                    break;
                }
                /* checked as it is read: an unknown key on line 1 of a long
                 * file is reported before the rest is parsed */
                if (check && (rc = check(ctx, v))) {
                    nlp_error_prefix(rc, "'%s' line %zu", c->path, ev.start_mark.line + 1);
                    break;
                }
                key = nlp_strdup(v);
                if (!key) rc = NLP_ENOMEM;
                key_line = (int)ev.start_mark.line + 1;
                state = 2;
            } else if (state == 2) {
                rc = add(c, key, is_null_scalar(&ev) ? NULL : v, key_line, 0, NULL, 0);
                free(key);
                key = NULL;
                state = 1;
            } else if (state == 3) {
                if (list_items++ && nlp_buf_putc(&list, ',')) rc = NLP_ENOMEM;
                else if (nlp_buf_append(&list, v, ev.data.scalar.length)) rc = NLP_ENOMEM;
                /* an item with a NUL byte ends at it; the file had no NULs */
                else if (nlp_buf_append(&items, v, strlen(v)) || nlp_buf_putc(&items, 0)) rc = NLP_ENOMEM;
            } else {
                rc = ferr(c, &ev.start_mark, "unexpected content after the mapping");
            }
            break;
        }
        default:
            break;
        }
        yaml_event_delete(&ev);
        if (rc) break;
    }
    free(key);
    nlp_buf_free(&list);
    nlp_buf_free(&items);
    nlp_strmap_free(seen);
    yaml_parser_delete(&p);
    return rc;
}

int nlp_config_parse(nlp_config *c, const char *text, size_t len, const char *name)
{
    return parse(c, text, len, name, NULL, NULL);
}

int nlp_config_load_checked(nlp_config *c, const char *path, nlp_config_check_fn check, void *ctx)
{
    char *text;
    size_t len;
    memset(c, 0, sizeof *c);
    int rc = nlp_read_file_max(path, NLP_CONFIG_MAX_BYTES, &text, &len);
    if (rc) return rc;
    if (memchr(text, 0, len)) {
        free(text);
        c->path = nlp_strdup(path);
        return nlp_error(NLP_EFORMAT, "'%s': not a YAML text file (contains NUL bytes)", path);
    }
    rc = parse(c, text, len, strcmp(path, "-") == 0 ? "<stdin>" : path, check, ctx);
    free(text);
    return rc;
}

int nlp_config_load(nlp_config *c, const char *path) { return nlp_config_load_checked(c, path, NULL, NULL); }

void nlp_config_free(nlp_config *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->e[i].key);
        free(c->e[i].value);
        if (c->e[i].items) free(c->e[i].items[0]);
        free(c->e[i].items);
    }
    free(c->e);
    free(c->path);
    memset(c, 0, sizeof *c);
}

const nlp_config_entry *nlp_config_get(const nlp_config *c, const char *key)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->e[i].key, key) == 0) return &c->e[i];
    return NULL;
}

/* The code point of a UTF-8 sequence at p that YAML reads as a line break
 * (U+0085, U+2028, U+2029) or refuses as unprintable (C1 controls, U+FFFE,
 * U+FFFF), with its length in *len; 0 for anything else. */
static unsigned yaml_special(const unsigned char *p, int *len)
{
    if (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
        *len = 2;
        return p[1];
    }
    if ((p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) ||
        (p[0] == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF))) {
        *len = 3;
        return (unsigned)(p[0] & 0x0F) << 12 | (unsigned)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    }
    return 0;
}

static int plain_safe(const char *s)
{
    if (!*s) return 0;
    static const char *reserved[] = {"~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False",
                                     "FALSE", "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON",
                                     "off", "Off", "OFF", NULL};
    for (int i = 0; reserved[i]; i++)
        if (strcmp(s, reserved[i]) == 0) return 0;
    if (strchr("-?:,[]{}#&*!|>'\"%@` \t", s[0])) {
        /* a leading '-' is fine for numbers like -1 or -0.5 */
        if (!(s[0] == '-' && s[1] >= '0' && s[1] <= '9')) return 0;
    }
    size_t n = strlen(s);
    if (s[n - 1] == ' ' || s[n - 1] == ':') return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\') return 0;
        int k;
        if (*p >= 0x80 && yaml_special(p, &k)) return 0;
        if (*p == ':' && (p[1] == ' ' || p[1] == 0)) return 0;
        if (*p == '#' && p > (const unsigned char *)s && p[-1] == ' ') return 0;
        if (*p == ',' || *p == '[' || *p == ']' || *p == '{' || *p == '}') return 0;
    }
    return 1;
}

int nlp_yaml_scalar(nlp_buf *b, const char *s)
{
    if (!s) return nlp_buf_puts(b, "~");
    if (plain_safe(s)) return nlp_buf_puts(b, s);
    if (nlp_buf_putc(b, '"')) return NLP_ENOMEM;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int rc;
        switch (*p) {
        case '"': rc = nlp_buf_puts(b, "\\\""); break;
        case '\\': rc = nlp_buf_puts(b, "\\\\"); break;
        case '\n': rc = nlp_buf_puts(b, "\\n"); break;
        case '\t': rc = nlp_buf_puts(b, "\\t"); break;
        case '\r': rc = nlp_buf_puts(b, "\\r"); break;
        default: {
            int k;
            unsigned cp = *p >= 0x80 ? yaml_special(p, &k) : 0;
            if (*p < 0x20 || *p == 0x7f) rc = nlp_buf_printf(b, "\\x%02x", *p);
            else if (cp) rc = nlp_buf_printf(b, "\\u%04x", cp), p += k - 1;
            else rc = nlp_buf_putc(b, *p);
        }
        }
        if (rc) return rc;
    }
    return nlp_buf_putc(b, '"');
}

int nlp_parse_bool(const char *s)
{
    static const char *t[] = {"true", "yes", "on", "1"}, *f[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, t[i]) == 0) return 1;
        if (strcasecmp(s, f[i]) == 0) return 0;
    }
    return -1;
}
