/*
 * classify.c — classification metrics from a confusion matrix. See classify.h.
 */
#include "eval/classify.h"
#include "base/err.h"
#include "eval/report.h"

#include <math.h>
#include <stdio.h>

int nlp_classify_count(uint64_t *cm, int L, const int32_t *gold, const int32_t *pred, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (gold[i] < 0 || gold[i] >= L)
            return nlp_error(NLP_EINVAL, "example %zu: gold label %d is outside [0, %d)", i, (int)gold[i], L);
        if (pred[i] < 0 || pred[i] >= L)
            return nlp_error(NLP_EINVAL, "example %zu: predicted label %d is outside [0, %d)", i, (int)pred[i], L);
    }
    for (size_t i = 0; i < n; i++) cm[(size_t)gold[i] * L + pred[i]]++;
    return 0;
}

uint64_t nlp_classify_total(const uint64_t *cm, int L)
{
    uint64_t n = 0;
    for (size_t i = 0; i < (size_t)L * L; i++) n += cm[i];
    return n;
}

double nlp_classify_accuracy(const uint64_t *cm, int L)
{
    uint64_t n = nlp_classify_total(cm, L), ok = 0;
    for (int k = 0; k < L; k++) ok += cm[(size_t)k * L + k];
    return n ? (double)ok / (double)n : NAN;
}

void nlp_classify_label(const uint64_t *cm, int L, int k, nlp_label_stats *out)
{
    uint64_t row = 0, col = 0, tp = cm[(size_t)k * L + k];
    for (int j = 0; j < L; j++) {
        row += cm[(size_t)k * L + j];
        col += cm[(size_t)j * L + k];
    }
    uint64_t fp = col - tp, fn = row - tp;
    out->tp = tp, out->support = row, out->predicted = col;
    out->precision = col ? (double)tp / (double)col : 0;
    out->recall = row ? (double)tp / (double)row : 0;
    /* sklearn (>= 1.3) computes F-beta from the counts, which is also
     * defined (0) when precision or recall is not */
    out->f1 = 2 * tp + fp + fn ? 2.0 * (double)tp / (double)(2 * tp + fp + fn) : 0;
}

double nlp_classify_macro_f1(const uint64_t *cm, int L, int *used)
{
    double sum = 0;
    int n = 0;
    for (int k = 0; k < L; k++) {
        nlp_label_stats s;
        nlp_classify_label(cm, L, k, &s);
        if (!s.support && !s.predicted) continue; /* not in unique_labels(y_true, y_pred) */
        sum += s.f1;
        n++;
    }
    if (used) *used = n;
    return n ? sum / n : NAN;
}

/* A JSON number: Python's repr, null for NaN and infinities. */
static int put_num(nlp_buf *out, double x)
{
    char r[40];
    return nlp_buf_puts(out, isfinite(x) ? nlp_py_repr(x, r) : "null");
}

int nlp_classify_json(const uint64_t *cm, int L, const char *const *names, nlp_buf *out)
{
    int rc = nlp_buf_printf(out, "{\n  \"examples\": %llu,\n  \"accuracy\": ",
                            (unsigned long long)nlp_classify_total(cm, L));
    if (!rc) rc = put_num(out, nlp_classify_accuracy(cm, L));
    if (!rc) rc = nlp_buf_puts(out, ",\n  \"macro_f1\": ");
    if (!rc) rc = put_num(out, nlp_classify_macro_f1(cm, L, NULL));
    if (!rc) rc = nlp_buf_puts(out, ",\n  \"labels\": {");
    for (int k = 0; k < L && !rc; k++) {
        nlp_label_stats s;
        nlp_classify_label(cm, L, k, &s);
        char idx[16];
        snprintf(idx, sizeof idx, "%d", k);
        rc = nlp_buf_puts(out, k ? ",\n    " : "\n    ");
        if (!rc) rc = nlp_json_string(out, names && names[k] ? names[k] : idx, 0);
        if (!rc) rc = nlp_buf_puts(out, ": {\"precision\": ");
        if (!rc) rc = put_num(out, s.precision);
        if (!rc) rc = nlp_buf_puts(out, ", \"recall\": ");
        if (!rc) rc = put_num(out, s.recall);
        if (!rc) rc = nlp_buf_puts(out, ", \"f1\": ");
        if (!rc) rc = put_num(out, s.f1);
        if (!rc) rc = nlp_buf_printf(out, ", \"support\": %llu}", (unsigned long long)s.support);
    }
    if (!rc) rc = nlp_buf_puts(out, L ? "\n  },\n  \"confusion\": [" : "},\n  \"confusion\": [");
    for (int g = 0; g < L && !rc; g++) {
        rc = nlp_buf_puts(out, g ? ", [" : "[");
        for (int p = 0; p < L && !rc; p++)
            rc = nlp_buf_printf(out, "%s%llu", p ? ", " : "", (unsigned long long)cm[(size_t)g * L + p]);
        if (!rc) rc = nlp_buf_putc(out, ']');
    }
    if (!rc) rc = nlp_buf_puts(out, "]\n}\n");
    return rc;
}
