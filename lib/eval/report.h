/*
 * report.h — sacreBLEU's output formats, byte for byte: the score line
 * (Score.format), the single-system JSON and text (print_single_results),
 * and the multi-system JSON and table (print_results_table).
 *
 * Numbers are printed as Python prints them: "%.{w}f" for fixed widths and
 * repr() — the shortest string that reads back to the same double — for
 * JSON numbers (which are float(f'{x:.{w}f}') in sacreBLEU).
 *
 * Not here: computing scores (eval/metric.h).
 */
#ifndef NLP_EVAL_REPORT_H
#define NLP_EVAL_REPORT_H

#include <stddef.h>

#include "base/mem.h"
#include "eval/metric.h"

/* Python's repr(float(x)) into out (at least 32 bytes): "54.5", "100.0",
 * "5e-15", "1e+16", "inf", "nan". Returns out. */
char *nlp_py_repr(double x, char *out);

/* Appends JSON for a string (quotes, escapes; non-ASCII as \u escapes of four hex digits
 * when ascii_only, as json.dumps does by default, raw UTF-8 otherwise). */
int nlp_json_string(nlp_buf *out, const char *s, int ascii_only);

/* sacreBLEU's Score.format(width, score_only, signature, is_json) for score
 * sc with signature text sig, appended to out (no final newline). */
int nlp_report_score(const nlp_score *sc, const char *sig, int width, int score_only, int json, nlp_buf *out);

/* print_single_results: the formatted lines of one system's metrics
 * (lines[i] from nlp_report_score), appended to out with final newlines. */
int nlp_report_single(char *const *lines, int n, int json, nlp_buf *out);

/* One cell of the multi-system table. */
typedef struct nlp_report_cell {
    double score;
    double p_value, mean, ci; /* NAN = absent */
} nlp_report_cell;

/* Multi-system results: systems x metrics cells, and each metric's name
 * and signature text. */
typedef struct nlp_report_table {
    int nsys, nmetrics;
    const char *const *sys_names;
    const char *const *metric_names;
    const char *const *signatures;
    const nlp_report_cell *cells; /* [sys * nmetrics + metric] */
    int paired;                   /* 0 none, 1 bootstrap, 2 approximate randomization */
    long paired_n;
} nlp_report_table;

/* print_results_table in JSON (json.dumps(..., indent=4)): without a
 * paired test each cell is the score formatted with `width`; with one, an
 * object {score, p_value, mean, ci}. Appended to out with a final newline. */
int nlp_report_table_json(const nlp_report_table *t, int width, nlp_buf *out);

/* print_results_table as text: tabulate's "fancy_grid" table, the paired
 * test's explanation, and the signatures; `color` adds sacreBLEU's ANSI
 * colors. Appended to out. */
int nlp_report_table_text(const nlp_report_table *t, int width, int color, nlp_buf *out);

#endif
