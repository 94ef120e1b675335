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

int nlp_textfile_read(nlp_textfile *f, const char *path, enum nlp_newline mode, int rstrip, size_t max_line,
                      const char *hint)
{
    memset(f, 0, sizeof *f);
    if (!(f->name = nlp_strdup(path))) return NLP_ENOMEM;
    nlp_reader *r;
    int rc = nlp_reader_open(&r, path);
    if (rc) {
        nlp_textfile_free(f);
        return rc;
    }
    nlp_reader_set_newline(r, mode);
    nlp_reader_set_max_line(r, max_line);
    const char *shown = strcmp(path, "-") == 0 ? "<stdin>" : path;
    nlp_buf text = {0};
    size_t cap = 0, *offs = NULL, ocap = 0;
    char *line;
    size_t len;
    /* lines are read one at a time (so a line without end cannot fill the
     * memory) into one block; their offsets become pointers at the end */
    while ((rc = nlp_reader_line(r, &line, &len)) == 1) {
        size_t no = f->lines.n + 1, bad;
        if (nlp_reader_partial(r)) {
            rc = nlp_error(NLP_EDATA, "'%s' line %zu: longer than %zu bytes, the longest line allowed%s%s", shown, no,
                           max_line, hint ? " " : "", hint ? hint : "");
            break;
        }
        if (!nlp_utf8_valid(line, len, &bad)) {
            rc = nlp_error(NLP_EDATA, "'%s' line %zu (byte %llu): invalid UTF-8", shown, no,
                           (unsigned long long)(nlp_reader_line_offset(r) + bad));
            break;
        }
        size_t n = rstrip ? nlp_py_rstrip(line, len) : len;
        if (nlp_grow(&offs, &ocap, f->lines.n + 1, sizeof *offs) || nlp_buf_append(&text, line, n) ||
            nlp_buf_putc(&text, 0) || (rc = push(&f->lines, &cap, NULL, n))) {
            rc = NLP_ENOMEM;
            break;
        }
        offs[f->lines.n - 1] = text.len - n - 1;
    }
    nlp_reader_close(r);
    if (rc < 0) {
        free(offs);
        nlp_buf_free(&text);
        nlp_textfile_free(f);
        return rc;
    }
    if (nlp_buf_reserve(&text, 1)) {
        free(offs);
        nlp_buf_free(&text);
        nlp_textfile_free(f);
        return NLP_ENOMEM;
    }
    f->data = nlp_buf_detach(&text, NULL);
    for (size_t i = 0; i < f->lines.n; i++) f->lines.s[i] = f->data + offs[i];
    free(offs);
    return NLP_OK;
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
