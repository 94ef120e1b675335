/*
 * report.c — sacreBLEU's output formats. See report.h.
 */
#include "eval/report.h"
#include "base/err.h"
#include "text/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *nlp_py_repr(double x, char *out)
{
    if (isnan(x)) return strcpy(out, "nan");
    if (isinf(x)) return strcpy(out, x < 0 ? "-inf" : "inf");
    if (x == 0) return strcpy(out, signbit(x) ? "-0.0" : "0.0");
    char e[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, x);
        if (strtod(e, NULL) == x) break;
    }
    /* e = [-]d[.ddd]e[+-]XX */
    char digits[24];
    int nd = 0, neg = e[0] == '-';
    const char *p = e + neg;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    int exp10 = atoi(p + 1), decpt = exp10 + 1;
    char *o = out;
    if (neg) *o++ = '-';
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            o += sprintf(o, "0.");
            for (int i = 0; i < -decpt; i++) *o++ = '0';
            memcpy(o, digits, (size_t)nd);
            o += nd;
        } else if (decpt >= nd) {
            memcpy(o, digits, (size_t)nd);
            o += nd;
            for (int i = nd; i < decpt; i++) *o++ = '0';
            o += sprintf(o, ".0");
        } else {
            memcpy(o, digits, (size_t)decpt);
            o += decpt;
            *o++ = '.';
            memcpy(o, digits + decpt, (size_t)(nd - decpt));
            o += nd - decpt;
        }
    } else {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(nd - 1));
            o += nd - 1;
        }
        o += sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    }
    *o = 0;
    return out;
}

int nlp_json_string(nlp_buf *out, const char *s, int ascii_only)
{
    size_t n = strlen(s), i = 0;
    if (nlp_buf_putc(out, '"')) return NLP_ENOMEM;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        int rc = 0;
        if (c == '"') rc = nlp_buf_puts(out, "\\\"");
        else if (c == '\\') rc = nlp_buf_puts(out, "\\\\");
        else if (c == '\n') rc = nlp_buf_puts(out, "\\n");
        else if (c == '\r') rc = nlp_buf_puts(out, "\\r");
        else if (c == '\t') rc = nlp_buf_puts(out, "\\t");
        else if (c == '\b') rc = nlp_buf_puts(out, "\\b");
        else if (c == '\f') rc = nlp_buf_puts(out, "\\f");
        else if (c < 0x20 || (ascii_only && c == 0x7F)) rc = nlp_buf_printf(out, "\\u%04x", c);
        else if (c >= 0x80 && ascii_only) {
            int32_t cp = nlp_utf8_next(s, n, &i);
            if (cp < 0) cp = 0xFFFD;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                rc = nlp_buf_printf(out, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                rc = nlp_buf_printf(out, "\\u%04x", (unsigned)cp);
            }
            if (rc) return NLP_ENOMEM;
            continue;
        } else rc = nlp_buf_putc(out, (char)c);
        if (rc) return NLP_ENOMEM;
        i++;
    }
    return nlp_buf_putc(out, '"');
}

/* float(f'{x:.{w}f}') as JSON */
static int json_fixed(nlp_buf *out, double x, int width)
{
    char f[512], r[40];
    snprintf(f, sizeof f, "%.*f", width, x);
    return nlp_buf_puts(out, nlp_py_repr(strtod(f, NULL), r));
}

int nlp_report_score(const nlp_score *sc, const char *sig, int width, int score_only, int json, nlp_buf *out)
{
    char s[512], cm[512], cv[512], conf[1100] = "";
    snprintf(s, sizeof s, "%.*f", width, sc->score);
    if (sc->mean > 0) {
        snprintf(cm, sizeof cm, "%.*f", width, sc->mean);
        snprintf(cv, sizeof cv, "%.*f", width, sc->ci);
        snprintf(conf, sizeof conf, "\xCE\xBC = %s \xC2\xB1 %s", cm, cv);
    }
    if (score_only) return nlp_buf_printf(out, "%s%s%s%s", s, *conf ? " (" : "", conf, *conf ? ")" : "");
    if (!json) {
        int rc = nlp_buf_puts(out, sc->name);
        if (!rc && *sig) rc = nlp_buf_printf(out, "|%s", sig);
        if (!rc) rc = nlp_buf_printf(out, " = %s", s);
        if (!rc && *conf) rc = nlp_buf_printf(out, " (%s)", conf);
        if (!rc && *sc->verbose) rc = nlp_buf_printf(out, " %s", sc->verbose);
        return rc;
    }
    int rc = nlp_buf_puts(out, "{\n \"name\": ");
    rc = rc || nlp_json_string(out, sc->name, 0) || nlp_buf_puts(out, ",\n \"score\": ") ||
         json_fixed(out, sc->score, width) || nlp_buf_puts(out, ",\n \"signature\": ") || nlp_json_string(out, sig, 0);
    if (!rc && *conf) {
        rc = nlp_buf_puts(out, ",\n \"confidence_mean\": ") || json_fixed(out, sc->mean, width) ||
             nlp_buf_puts(out, ",\n \"confidence_var\": ") || json_fixed(out, sc->ci, width) ||
             nlp_buf_puts(out, ",\n \"confidence\": ") || nlp_json_string(out, conf, 0);
    }
    if (!rc && *sc->verbose)
        rc = nlp_buf_puts(out, ",\n \"verbose_score\": ") || nlp_json_string(out, sc->verbose, 0);
    if (!rc && sc->counted) /* exact match: the counts, as numbers */
        rc = nlp_buf_printf(out, ",\n \"correct\": %.0f,\n \"lines\": %.0f", sc->correct, sc->lines);
    /* the signature's pairs as keys */
    const char *p = sig;
    while (!rc && *p) {
        const char *bar = strchr(p, '|'), *end = bar ? bar : p + strlen(p);
        const char *colon = memchr(p, ':', (size_t)(end - p));
        char key[64] = "", val[128] = "";
        if (colon) {
            snprintf(key, sizeof key, "%.*s", (int)(colon - p), p);
            snprintf(val, sizeof val, "%.*s", (int)(end - colon - 1), colon + 1);
        }
        rc = nlp_buf_puts(out, ",\n ") || nlp_json_string(out, key, 0) || nlp_buf_puts(out, ": ") ||
             nlp_json_string(out, val, 0);
        p = bar ? bar + 1 : end;
    }
    return rc || nlp_buf_puts(out, "\n}");
}

/* number of code points of s, ANSI escape sequences left out */
static size_t visible_width(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0x1B && i + 1 < n && s[i + 1] == '[') {
            i += 2;
            while (i < n && !(s[i] >= 0x40 && s[i] <= 0x7E)) i++;
            continue;
        }
        if ((c & 0xC0) != 0x80) w++;
    }
    return w;
}

int nlp_report_single(char *const *lines, int n, int json, nlp_buf *out)
{
    if (json) {
        if (n > 1) {
            int rc = nlp_buf_puts(out, "[\n");
            for (int i = 0; i < n && !rc; i++) rc = nlp_buf_printf(out, "%s%s", i ? ",\n" : "", lines[i]);
            return rc || nlp_buf_puts(out, "\n]\n");
        }
        return n ? nlp_buf_printf(out, "%s\n", lines[0]) : NLP_OK;
    }
    if (n == 1) return nlp_buf_printf(out, "%s\n", lines[0]);
    /* align on '=': lines without one are printed as they come */
    size_t w = 0, lens[64];
    int nl = 0;
    for (int i = 0; i < n && nl < 64; i++) {
        const char *eq = strchr(lines[i], '=');
        if (!eq) {
            if (nlp_buf_printf(out, "%s\n", lines[i])) return NLP_ENOMEM;
            continue;
        }
        lens[nl] = (size_t)(eq - lines[i]) - 1;
        size_t vw = visible_width(lines[i], lens[nl]);
        if (vw > w) w = vw;
        nl++;
    }
    for (int i = 0; i < nl; i++) {
        size_t vw = visible_width(lines[i], lens[i]);
        if (nlp_buf_printf(out, "%*s%s\n", (int)(w - vw), "", lines[i])) return NLP_ENOMEM;
    }
    return NLP_OK;
}

// --- multi-system

int nlp_report_table_json(const nlp_report_table *t, int width, nlp_buf *out)
{
    char r[40];
    int rc = nlp_buf_puts(out, "[");
    for (int s = 0; s < t->nsys && !rc; s++) {
        rc = nlp_buf_puts(out, s ? ",\n    {\n        \"system\": " : "\n    {\n        \"system\": ") ||
             nlp_json_string(out, t->sys_names[s], 1);
        for (int m = 0; m < t->nmetrics && !rc; m++) {
            const nlp_report_cell *c = &t->cells[s * t->nmetrics + m];
            rc = nlp_buf_puts(out, ",\n        ") || nlp_json_string(out, t->metric_names[m], 1) || nlp_buf_puts(out, ": ");
            if (rc) break;
            if (!t->paired) {
                char f[512];
                snprintf(f, sizeof f, "%.*f", width, c->score);
                rc = nlp_json_string(out, f, 1);
                continue;
            }
            rc = nlp_buf_printf(out, "{\n            \"score\": %s", nlp_py_repr(c->score, r));
            const char *keys[] = {"p_value", "mean", "ci"};
            double vals[] = {c->p_value, c->mean, c->ci};
            for (int k = 0; k < 3 && !rc; k++)
                rc = nlp_buf_printf(out, ",\n            \"%s\": %s", keys[k], isnan(vals[k]) ? "null" : nlp_py_repr(vals[k], r));
            rc = rc || nlp_buf_puts(out, "\n        }");
        }
        rc = rc || nlp_buf_puts(out, "\n    }");
    }
    return rc || nlp_buf_puts(out, t->nsys ? "\n]\n" : "]\n");
}

#define C_RESET "\x1b[0m"
static const char *colored(nlp_buf *b, const char *s, const char *code, int color)
{
    nlp_buf_reset(b);
    if (color) nlp_buf_printf(b, "%s%s%s", code, s, C_RESET);
    else nlp_buf_puts(b, s);
    return b->data;
}

/* Appends `n` copies of UTF-8 string s. */
static int repeat(nlp_buf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (nlp_buf_puts(out, s)) return NLP_ENOMEM;
    return NLP_OK;
}

int nlp_report_table_text(const nlp_report_table *t, int width, int color, nlp_buf *out)
{
    int ncol = t->nmetrics + 1, nrow = t->nsys, rc = 0;
    size_t ncell = (size_t)ncol * (size_t)(nrow + 1);
    char **cell = nlp_calloc(ncell, sizeof *cell); /* [row][col], row 0 = header */
    size_t *colw = nlp_calloc((size_t)ncol, sizeof *colw);
    nlp_buf tmp = {0}, c1 = {0};
    if (!cell || !colw) {
        free(cell);
        free(colw);
        return NLP_ENOMEM;
    }
    int is_bootstrap = 0;
    char *baseline = NULL;
    for (int col = 0; col < ncol; col++) {
        for (int row = 0; row < nrow; row++) {
            nlp_buf_reset(&tmp);
            if (col == 0) {
                nlp_buf_puts(&tmp, t->sys_names[row]);
            } else {
                const nlp_report_cell *c = &t->cells[row * t->nmetrics + col - 1];
                nlp_buf_printf(&tmp, "%.*f", width, c->score);
                if (t->paired && !isnan(c->mean)) {
                    is_bootstrap = 1;
                    nlp_buf_printf(&tmp, " (%.*f \xC2\xB1 %.*f)", width, c->mean, width, c->ci);
                }
                if (t->paired && !isnan(c->p_value)) {
                    char pv[64];
                    snprintf(pv, sizeof pv, "(p = %.4f)", c->p_value);
                    if (c->p_value > 0.05) nlp_buf_printf(&tmp, "\n%s", colored(&c1, pv, "\x1b[31m", color));
                    else nlp_buf_printf(&tmp, "\n%s*", pv);
                }
            }
            if (t->paired && row == 0) {
                if (col == 0) baseline = nlp_strdup(tmp.data);
                colored(&c1, tmp.data, "\x1b[33m", color);
                cell[(size_t)(row + 1) * ncol + col] = nlp_strdup(c1.data);
            } else {
                cell[(size_t)(row + 1) * ncol + col] = nlp_strdup(tmp.data ? tmp.data : "");
            }
        }
        nlp_buf_reset(&tmp);
        nlp_buf_puts(&tmp, col == 0 ? "System" : t->metric_names[col - 1]);
        if (col > 0 && is_bootstrap) nlp_buf_puts(&tmp, " (\xCE\xBC \xC2\xB1 95% CI)");
        cell[col] = nlp_strdup(colored(&c1, tmp.data, "\x1b[36m", color));
    }
    /* widths: header + 2, at least every cell line */
    for (int col = 0; col < ncol; col++) {
        colw[col] = visible_width(cell[col], strlen(cell[col])) + 2;
        for (int row = 1; row <= nrow; row++) {
            const char *s = cell[(size_t)row * ncol + col];
            while (s) {
                const char *nl = strchr(s, '\n');
                size_t w = visible_width(s, nl ? (size_t)(nl - s) : strlen(s));
                if (w > colw[col]) colw[col] = w;
                s = nl ? nl + 1 : NULL;
            }
        }
    }
    const char *rules[4][4] = {{"\xE2\x95\x92", "\xE2\x95\x90", "\xE2\x95\xA4", "\xE2\x95\x95"}, /* ╒═╤╕ */
                               {"\xE2\x95\x9E", "\xE2\x95\x90", "\xE2\x95\xAA", "\xE2\x95\xA1"}, /* ╞═╪╡ */
                               {"\xE2\x94\x9C", "\xE2\x94\x80", "\xE2\x94\xBC", "\xE2\x94\xA4"}, /* ├─┼┤ */
                               {"\xE2\x95\x98", "\xE2\x95\x90", "\xE2\x95\xA7", "\xE2\x95\x9B"}}; /* ╘═╧╛ */
    for (int row = 0; row <= nrow && !rc; row++) {
        const char **r = rules[row == 0 ? 0 : row == 1 ? 1 : 2];
        rc = nlp_buf_puts(out, r[0]);
        for (int col = 0; col < ncol && !rc; col++)
            rc = repeat(out, r[1], colw[col] + 2) || nlp_buf_puts(out, col + 1 < ncol ? r[2] : r[3]);
        rc = rc || nlp_buf_putc(out, '\n');
        /* the row's lines */
        int height = 1;
        for (int col = 0; col < ncol; col++) {
            int h = 1;
            for (const char *s = cell[(size_t)row * ncol + col]; (s = strchr(s, '\n')); s++) h++;
            if (h > height) height = h;
        }
        for (int line = 0; line < height && !rc; line++) {
            rc = nlp_buf_puts(out, "\xE2\x94\x82"); /* │ */
            for (int col = 0; col < ncol && !rc; col++) {
                const char *s = cell[(size_t)row * ncol + col];
                for (int k = 0; k < line && s; k++) {
                    s = strchr(s, '\n');
                    if (s) s++;
                }
                size_t len = s ? (strchr(s, '\n') ? (size_t)(strchr(s, '\n') - s) : strlen(s)) : 0;
                size_t w = s ? visible_width(s, len) : 0, pad = colw[col] - w;
                size_t left = col == 0 ? pad : pad / 2, right = pad - left;
                rc = nlp_buf_printf(out, " %*s%.*s%*s \xE2\x94\x82", (int)left, "", (int)len, s ? s : "", (int)right, "");
            }
            rc = rc || nlp_buf_putc(out, '\n');
        }
    }
    if (!rc) {
        rc = nlp_buf_puts(out, rules[3][0]);
        for (int col = 0; col < ncol && !rc; col++)
            rc = repeat(out, rules[3][1], colw[col] + 2) || nlp_buf_puts(out, col + 1 < ncol ? rules[3][2] : rules[3][3]);
        rc = rc || nlp_buf_puts(out, "\n\n");
    }
    if (!rc && t->paired) {
        char msg[160];
        int bs = t->paired == 1;
        snprintf(msg, sizeof msg, "Paired %s test with %ld %s", bs ? "bootstrap resampling" : "approximate randomization",
                 t->paired_n, bs ? "resampling trials" : "trials");
        nlp_buf bl = {0}, bn = {0}, nh = {0}, pc = {0};
        colored(&bl, "baseline", "\x1b[33m", color);
        colored(&bn, baseline ? baseline : "", "\x1b[33m", color);
        colored(&nh, "Null hypothesis", "\x1b[32m", color);
        char nh_lower[64];
        /* Color.format(...).lower(): the escape codes have no letters to change */
        snprintf(nh_lower, sizeof nh_lower, "%s", nh.data);
        for (char *q = nh_lower; *q; q++)
            if (*q >= 'A' && *q <= 'Z') *q += 32;
        colored(&pc, "highlighted in red", "\x1b[31m", color);
        size_t ml = strlen(msg);
        rc = repeat(out, "-", ml) || nlp_buf_printf(out, "\n%s\n", msg) || repeat(out, "-", ml) ||
             nlp_buf_printf(out, "\n - Each system is pairwise compared to %s.\n", bn.data) ||
             nlp_buf_puts(out, bs ? "   Actual system score / bootstrap estimated true mean / 95% CI are provided for each metric.\n"
                                  : "   Actual system score is provided for each metric.\n") ||
             nlp_buf_printf(out, "\n - %s: the system and the %s translations are essentially\n", nh.data, bl.data) ||
             nlp_buf_printf(out, "   generated by the same underlying process. For a given system and the %s,\n", bl.data) ||
             nlp_buf_puts(out, "   the p-value is roughly the probability of the absolute score difference (delta)\n") ||
             nlp_buf_printf(out, "   or higher occurring due to chance, under the assumption that the %s is correct.\n\n", nh_lower) ||
             nlp_buf_printf(out, " - Assuming a significance threshold of 0.05, the %s can be rejected\n", nh_lower) ||
             nlp_buf_puts(out, "   for p-values < 0.05 (marked with \"*\"). This means that the delta is unlikely to be attributed\n") ||
             nlp_buf_printf(out, "   to chance, hence the system is significantly \"different\" than the %s.\n", bl.data) ||
             nlp_buf_printf(out, "   Otherwise, the p-values are %s.\n\n", pc.data) ||
             nlp_buf_printf(out, " - NOTE: Significance does not tell whether a system is \"better\" than the %s but rather\n", bl.data) ||
             nlp_buf_puts(out, "   emphasizes the \"difference\" of the systems in terms of the replicability of the delta.\n\n");
        nlp_buf_free(&bl);
        nlp_buf_free(&bn);
        nlp_buf_free(&nh);
        nlp_buf_free(&pc);
    }
    if (!rc) rc = nlp_buf_puts(out, "-----------------\nMetric signatures\n-----------------\n");
    for (int m = 0; m < t->nmetrics && !rc; m++)
        rc = nlp_buf_printf(out, " - %-10s %s\n", t->metric_names[m], t->signatures[m]);
    for (size_t i = 0; i < ncell; i++) free(cell[i]);
    free(cell);
    free(colw);
    free(baseline);
    nlp_buf_free(&tmp);
    nlp_buf_free(&c1);
    return rc;
}
