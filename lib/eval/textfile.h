/*
 * textfile.h — hypothesis and reference files read as sacreBLEU reads
 * them, with errors that name the file, line and byte.
 *
 * Files given by name are split on "\n" only (Python's newline="\n": a "\r"
 * stays in the line and is stripped as whitespace); standard input is read
 * with universal newlines ("\n", "\r\n" and a lone "\r" all end a line), as
 * sacreBLEU's stdin is. Lines must be well-formed UTF-8. A final line
 * without a newline counts; an empty file has no lines.
 *
 * Not here: scoring (eval/metric.h).
 */
#ifndef NLP_EVAL_TEXTFILE_H
#define NLP_EVAL_TEXTFILE_H

#include <stddef.h>

#include "base/io.h"

/* Lines as (pointer, length) pairs into storage someone else owns. */
typedef struct nlp_lines {
    size_t n;
    const char **s;
    size_t *len;
} nlp_lines;

void nlp_lines_free(nlp_lines *l); /* frees the arrays, not the text */

typedef struct nlp_textfile {
    char *name;    /* as given ("-" for standard input) */
    char *data;    /* the file's bytes */
    nlp_lines lines;
} nlp_textfile;

/* Reads `path` ("-" = standard input) into f. With rstrip, each line loses
 * its trailing Python whitespace (sacreBLEU's line.rstrip()). Lines are read
 * one at a time: f holds the file, but a line longer than max_line bytes (0
 * = no limit) is an error before more of it is read. Errors: NLP_EIO
 * "cannot open 'path': reason", NLP_EDATA "'path' line N (byte B): invalid
 * UTF-8" or "'path' line N: longer than M bytes, ... <hint>" (hint may be
 * NULL), NLP_ENOMEM. Free with nlp_textfile_free. */
int nlp_textfile_read(nlp_textfile *f, const char *path, enum nlp_newline mode, int rstrip, size_t max_line,
                      const char *hint);
void nlp_textfile_free(nlp_textfile *f);

/* sacreBLEU's systems on standard input: the first line's tab-separated
 * fields (after rstrip of the line) fix the number of systems; every later
 * line is rstripped, split on tabs and each field rstripped. Fills
 * (*sys)[0..*nsys) with lines pointing into f (free each with
 * nlp_lines_free, then free(*sys)). An input without lines gives one system
 * with one empty line, as sacreBLEU's readline() gives. NLP_EDATA "'name' line N: 3 tab-separated fields, expected
 * 2 (one per system, as on line 1)" on a mismatch. */
int nlp_textfile_split_tabs(const nlp_textfile *f, nlp_lines **sys, int *nsys);

#endif
