/*
 * textfile.c — reading files as sacreBLEU does. See textfile.h.
 */
#include "eval/textfile.h"
#include "base/err.h"
#include "base/mem.h"
#include "eval/pystr.h"
#include "text/utf8.h"

#include <stdlib.h>
#include <string.h>

void nlp_lines_free(nlp_lines *l)
{
    free(l->s);
    free(l->len);
    memset(l, 0, sizeof *l);
}

void nlp_textfile_free(nlp_textfile *f)
{
    free(f->name);
    free(f->data);
    nlp_lines_free(&f->lines);
}

static int push(nlp_lines *l, size_t *cap, const char *s, size_t n)
{
    if (l->n == *cap) {
        size_t c = *cap;
        if (nlp_grow(&l->s, &c, l->n + 1, sizeof *l->s)) return NLP_ENOMEM;
        if (nlp_grow(&l->len, cap, l->n + 1, sizeof *l->len)) return NLP_ENOMEM;
        if (c > *cap) *cap = c;
    }
    l->s[l->n] = s;
    l->len[l->n] = n;
    l->n++;
    return NLP_OK;
}

int nlp_textfile_read(nlp_textfile *f, const char *path, enum nlp_newline mode, int rstrip)
{
    memset(f, 0, sizeof *f);
    size_t n;
    if (!(f->name = nlp_strdup(path))) return NLP_ENOMEM;
    int rc = nlp_read_file(path, &f->data, &n);
    if (rc) {
        nlp_textfile_free(f);
        return rc;
    }
    const char *shown = strcmp(path, "-") == 0 ? "<stdin>" : path;
    size_t cap = 0, i = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && f->data[e] != '\n' && !(mode == NLP_NL_UNIVERSAL && f->data[e] == '\r')) e++;
        size_t bad;
        if (!nlp_utf8_valid(f->data + i, e - i, &bad)) {
            rc = nlp_error(NLP_EDATA, "'%s' line %zu (byte %zu): invalid UTF-8", shown, f->lines.n + 1, i + bad);
            break;
        }
        size_t len = rstrip ? nlp_py_rstrip(f->data + i, e - i) : e - i;
        if ((rc = push(&f->lines, &cap, f->data + i, len))) break;
        if (e < n && f->data[e] == '\r' && e + 1 < n && f->data[e + 1] == '\n') e++;
        i = e + 1;
    }
    if (rc) nlp_textfile_free(f);
    return rc;
}

int nlp_textfile_split_tabs(const nlp_textfile *f, nlp_lines **sys, int *nsys)
{
    const nlp_lines *in = &f->lines;
    const char *shown = strcmp(f->name, "-") == 0 ? "<stdin>" : f->name;
    /* the first line fixes the number of systems */
    const char *s0 = in->n ? in->s[0] : "";
    size_t n0 = in->n ? nlp_py_rstrip(s0, in->len[0]) : 0;
    int k = 1;
    for (size_t i = 0; i < n0; i++) k += s0[i] == '\t';
    nlp_lines *out = nlp_calloc((size_t)k, sizeof *out);
    size_t *cap = nlp_calloc((size_t)k, sizeof *cap);
    int rc = out && cap ? NLP_OK : NLP_ENOMEM;
    for (size_t l = 0; l < (in->n ? in->n : 1) && !rc; l++) {
        const char *s = l < in->n ? in->s[l] : "";
        size_t n = l < in->n ? nlp_py_rstrip(s, in->len[l]) : 0;
        int fields = 1;
        for (size_t i = 0; i < n; i++) fields += s[i] == '\t';
        if (fields != k) {
            rc = nlp_error(NLP_EDATA, "'%s' line %zu: %d tab-separated fields, expected %d (one per system, as on line 1)",
                           shown, l + 1, fields, k);
            break;
        }
        size_t b = 0;
        for (int c = 0; c < k && !rc; c++) {
            size_t e = b;
            while (e < n && s[e] != '\t') e++;
            size_t len = l == 0 ? e - b : nlp_py_rstrip(s + b, e - b);
            rc = push(&out[c], &cap[c], s + b, len);
            b = e + 1;
        }
    }
    free(cap);
    if (rc) {
        for (int c = 0; out && c < k; c++) nlp_lines_free(&out[c]);
        free(out);
        return rc;
    }
    *sys = out;
    *nsys = k;
    return NLP_OK;
}
