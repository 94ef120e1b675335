/*
 * span.c — extractive question answering: SQuAD data, windows, the best
 * span of each question, and the training task. See span.h.
 */
#include "train/span.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "tok/pretok.h"
#include "text/utf8.h"
#include "train/data.h"
#include "train/mt.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IGNORE (-100)

// --- building the data

/* What reading gathers before tokenizing: texts by pointer (into the JSON
 * document or the file), strings copied into d->str. Each array has its
 * capacity (nlp_grow). */
typedef struct builder {
    nlp_span_data *d;
    const char **ptxt;       /* passage texts */
    size_t *plen, cap_pt, cap_pl;
    const char **qtxt;       /* question texts */
    size_t *qlen, cap_qt, cap_ql, cap_qp, cap_qi, cap_qa;
    size_t str_used, str_cap;
    size_t na, cap_at, cap_ab, cap_ae; /* answers */
    char **own;              /* repaired texts the builder owns */
    size_t nown, cap_own;
} builder;

/* s (n bytes) copied into d->str with a NUL; *at gets where. */
static int add_str(builder *b, const char *s, size_t n, size_t *at)
{
    if (nlp_grow(&b->d->str, &b->str_cap, b->str_used + n + 1, 1)) return NLP_ENOMEM;
    memcpy(b->d->str + b->str_used, s, n);
    b->d->str[b->str_used + n] = 0;
    *at = b->str_used;
    b->str_used += n + 1;
    return 0;
}

static int add_passage(builder *b, const char *s, size_t n)
{
    nlp_span_data *d = b->d;
    if (nlp_grow(&b->ptxt, &b->cap_pt, d->np + 1, sizeof *b->ptxt) ||
        nlp_grow(&b->plen, &b->cap_pl, d->np + 1, sizeof *b->plen))
        return NLP_ENOMEM;
    b->ptxt[d->np] = s, b->plen[d->np] = n;
    d->np++;
    return 0;
}

/* A question of the last passage: its text, its id. */
static int add_question(builder *b, const char *q, size_t qn, const char *id, size_t idn)
{
    nlp_span_data *d = b->d;
    if (nlp_grow(&b->qtxt, &b->cap_qt, d->n + 1, sizeof *b->qtxt) ||
        nlp_grow(&b->qlen, &b->cap_ql, d->n + 1, sizeof *b->qlen) ||
        nlp_grow(&d->passage, &b->cap_qp, d->n + 1, sizeof *d->passage) ||
        nlp_grow(&d->qid, &b->cap_qi, d->n + 1, sizeof *d->qid) || nlp_grow(&d->ans, &b->cap_qa, d->n + 2, sizeof *d->ans))
        return NLP_ENOMEM;
    b->qtxt[d->n] = q, b->qlen[d->n] = qn;
    d->passage[d->n] = (uint32_t)(d->np - 1);
    int rc = add_str(b, id, idn, &d->qid[d->n]);
    if (rc) return rc;
    d->ans[d->n] = b->na, d->ans[d->n + 1] = b->na;
    d->n++;
    return 0;
}

/* An answer of the last question: its text and bytes [beg, end) in the passage. */
static int add_answer(builder *b, const char *s, size_t n, size_t beg, size_t end)
{
    nlp_span_data *d = b->d;
    if (nlp_grow(&d->atext, &b->cap_at, b->na + 1, sizeof *d->atext) ||
        nlp_grow(&d->abeg, &b->cap_ab, b->na + 1, sizeof *d->abeg) ||
        nlp_grow(&d->aend, &b->cap_ae, b->na + 1, sizeof *d->aend))
        return NLP_ENOMEM;
    int rc = add_str(b, s, n, &d->atext[b->na]);
    if (rc) return rc;
    d->abeg[b->na] = (uint32_t)beg, d->aend[b->na] = (uint32_t)end;
    b->na++;
    d->ans[d->n] = b->na;
    return 0;
}

static void builder_free(builder *b)
{
    free(b->ptxt), free(b->plen), free(b->qtxt), free(b->qlen);
    for (size_t i = 0; i < b->nown; i++) free(b->own[i]);
    free(b->own);
}

/* The byte offset of character (code point) c of s[0..n), or -1 beyond it. */
static long char_to_byte(const char *s, size_t n, long long c)
{
    size_t i = 0;
    for (long long k = 0; k < c; k++) {
        if (i >= n) return -1;
        nlp_utf8_next(s, n, &i);
    }
    return (long)i;
}

/* A member of object o: a string (*s, *n), or an error naming where. */
static int get_string(const char *path, json_t *o, const char *key, const char *where, const char **s, size_t *n)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return nlp_error(NLP_EDATA, "'%s': %s has %s %s", path, where, v ? "a non-string" : "no", key);
    *s = json_string_value(v), *n = json_string_length(v);
    return 0;
}

static int read_json(builder *b, const char *path, json_t *root, int labelled)
{
    nlp_span_data *d = b->d;
    json_t *data = json_object_get(root, "data"), *art, *para, *qa, *an;
    size_t i, j, k, a;
    char where[160];
    if (!json_is_array(data)) return nlp_error(NLP_EDATA, "'%s': no \"data\" array: not SQuAD JSON", path);
    json_array_foreach(data, i, art)
    {
        json_t *paras = json_object_get(art, "paragraphs");
        if (!json_is_array(paras)) return nlp_error(NLP_EDATA, "'%s': data[%zu] has no paragraphs array", path, i);
        json_array_foreach(paras, j, para)
        {
            const char *ctx, *id, *q;
            size_t cn, idn, qn;
            snprintf(where, sizeof where, "data[%zu].paragraphs[%zu]", i, j);
            int rc = get_string(path, para, "context", where, &ctx, &cn);
            if (rc || (rc = add_passage(b, ctx, cn))) return rc;
            json_t *qas = json_object_get(para, "qas");
            if (!json_is_array(qas)) return nlp_error(NLP_EDATA, "'%s': %s has no qas array", path, where);
            json_array_foreach(qas, k, qa)
            {
                snprintf(where, sizeof where, "data[%zu].paragraphs[%zu].qas[%zu]", i, j, k);
                if ((rc = get_string(path, qa, "id", where, &id, &idn)) ||
                    (rc = get_string(path, qa, "question", where, &q, &qn)))
                    return rc;
                if (!qn) return nlp_error(NLP_EDATA, "'%s': question '%s' (%s) is empty", path, id, where);
                if ((rc = add_question(b, q, qn, id, idn))) return rc;
                if (!labelled) continue;
                json_t *answers = json_object_get(qa, "answers");
                if (!json_is_array(answers) || !json_array_size(answers))
                    return nlp_error(NLP_EDATA, "'%s': question '%s' (%s) has no answers: training and eval need "
                                     "them", path, id, where);
                json_array_foreach(answers, a, an)
                {
                    const char *t;
                    size_t tn;
                    char w2[300];
                    snprintf(w2, sizeof w2, "question '%.60s' (%s) answer %zu", id, where, a + 1);
                    if ((rc = get_string(path, an, "text", w2, &t, &tn))) return rc;
                    json_t *st = json_object_get(an, "answer_start");
                    if (!json_is_integer(st))
                        return nlp_error(NLP_EDATA, "'%s': %s has no integer answer_start", path, w2);
                    long long c = json_integer_value(st);
                    long at = c >= 0 ? char_to_byte(ctx, cn, c) : -1;
                    if (!tn || at < 0 || (size_t)at + tn > cn || memcmp(ctx + at, t, tn) != 0) {
                        size_t show = at < 0 ? 0 : cn - (size_t)at < tn ? cn - (size_t)at : tn;
                        return nlp_error(NLP_EDATA, "'%s': %s: '%.80s' is not the context's text at character %lld "
                                         "('%.*s')", path, w2, t, c, (int)(show > 80 ? 80 : show), at < 0 ? "" : ctx + at);
                    }
                    if ((rc = add_answer(b, t, tn, (size_t)at, (size_t)at + tn))) return rc;
                }
            }
        }
    }
    d->labelled = labelled;
    return 0;
}

/* question<TAB>passage lines of text[0..len), each its own passage. */
static int read_lines(builder *b, const char *path, char *text, size_t len)
{
    char **line = NULL;
    size_t *llen = NULL, nl;
    int rc = nlp_split_lines(text, len, &line, &llen, &nl);
    nlp_buf fix = {0};
    for (size_t i = 0; i < nl && !rc; i++) {
        char *s = line[i];
        size_t m = llen[i];
        if (!nlp_utf8_valid(s, m, NULL)) { /* repaired, as every TSV of finetune */
            nlp_buf_reset(&fix);
            if ((rc = nlp_utf8_repair(s, m, &fix, NULL))) break;
            char *copy = nlp_strndup(fix.data, fix.len);
            if (!copy || nlp_grow(&b->own, &b->cap_own, b->nown + 1, sizeof *b->own)) {
                free(copy);
                rc = NLP_ENOMEM;
                break;
            }
            b->own[b->nown++] = copy;
            s = copy, m = fix.len;
        }
        const char *tab = memchr(s, '\t', m);
        if (!tab || memchr(tab + 1, '\t', m - (size_t)(tab + 1 - s)) || tab == s || tab + 1 == s + m) {
            rc = nlp_error(NLP_EDATA, "'%s' line %zu: expected question<TAB>passage%s", path, i + 1,
                           !m ? " (an empty line)" : "");
            break;
        }
        char id[32];
        int idn = snprintf(id, sizeof id, "%zu", i + 1);
        if ((rc = add_passage(b, tab + 1, m - (size_t)(tab + 1 - s)))) break;
        rc = add_question(b, s, (size_t)(tab - s), id, (size_t)idn);
    }
    free(line), free(llen);
    nlp_buf_free(&fix);
    return rc;
}

/* Passages (with offsets) and questions tokenized on `threads` threads. */
static int tokenize(builder *b, const nlp_span_read_opts *o, const char *path)
{
    nlp_span_data *d = b->d;
    const size_t items = d->np + d->n;
    int threads = o->threads > 0 ? o->threads : nlp_cpu_count();
    nlp_ids *ids = nlp_calloc(items ? items : 1, sizeof *ids), *off = nlp_calloc(d->np ? d->np : 1, sizeof *off);
    int *err = nlp_calloc(items ? items : 1, sizeof *err);
    char **msg = nlp_calloc(items ? items : 1, sizeof *msg);
    int rc = 0;
    if (!ids || !off || !err || !msg) rc = NLP_ENOMEM;
    if (!rc) {
#pragma omp parallel num_threads(threads)
        {
            nlp_tok_state *st = nlp_tok_state_new(o->tk);
#pragma omp for schedule(dynamic, 8)
            for (size_t i = 0; i < items; i++) {
                if (!st) {
                    err[i] = NLP_ENOMEM;
                    continue;
                }
                int r = i < d->np ? nlp_tokenizer_encode_offsets(o->tk, st, b->ptxt[i], b->plen[i], &ids[i], &off[i])
                                  : nlp_tokenizer_encode_ids(o->tk, st, b->qtxt[i - d->np], b->qlen[i - d->np], 1,
                                                             &ids[i]);
                if (r) err[i] = r, msg[i] = nlp_strdup(nlp_errmsg());
            }
            nlp_tok_state_free(st);
        }
    }
    for (size_t i = 0; i < items && !rc; i++)
        if (err[i]) {
            if (i < d->np) rc = nlp_error(err[i], "'%s': passage %zu: %s", path, i + 1, msg[i] ? msg[i] : "");
            else rc = nlp_error(err[i], "'%s': question '%s': %s", path, d->str + d->qid[i - d->np], msg[i] ? msg[i] : "");
        }
    size_t pt = 0, qt = 0;
    for (size_t i = 0; i < items && !rc; i++) *(i < d->np ? &pt : &qt) += ids[i].n;
    if (!rc && (!(d->ptext = nlp_malloc((d->np + 1) * sizeof *d->ptext)) ||
                !(d->ptok = nlp_malloc((d->np + 1) * sizeof *d->ptok)) ||
                !(d->pids = nlp_malloc((pt + 1) * sizeof *d->pids)) || !(d->poff = nlp_malloc((2 * pt + 1) * sizeof *d->poff)) ||
                !(d->qtok = nlp_malloc((d->n + 1) * sizeof *d->qtok)) || !(d->qids = nlp_malloc((qt + 1) * sizeof *d->qids))))
        rc = NLP_ENOMEM;
    size_t tb = 0;
    for (size_t p = 0; p < d->np && !rc; p++) tb += b->plen[p];
    if (!rc && !(d->text = nlp_malloc(tb + 1))) rc = NLP_ENOMEM;
    if (!rc) {
        size_t at = 0, tat = 0;
        d->ptok[0] = 0, d->ptext[0] = 0;
        for (size_t p = 0; p < d->np; p++) {
            memcpy(d->pids + at, ids[p].v, ids[p].n * sizeof *d->pids);
            memcpy(d->poff + 2 * at, off[p].v, 2 * ids[p].n * sizeof *d->poff);
            at += ids[p].n;
            d->ptok[p + 1] = at;
            memcpy(d->text + tat, b->ptxt[p], b->plen[p]);
            tat += b->plen[p];
            d->ptext[p + 1] = tat;
        }
        at = 0;
        d->qtok[0] = 0;
        for (size_t q = 0; q < d->n; q++) {
            memcpy(d->qids + at, ids[d->np + q].v, ids[d->np + q].n * sizeof *d->qids);
            at += ids[d->np + q].n;
            d->qtok[q + 1] = at;
        }
    }
    for (size_t i = 0; ids && i < items; i++) nlp_ids_free(&ids[i]);
    for (size_t i = 0; off && i < d->np; i++) nlp_ids_free(&off[i]);
    for (size_t i = 0; msg && i < items; i++) free(msg[i]);
    free(ids), free(off), free(err), free(msg);
    return rc;
}

/* The training target of every question: the first answer's first and
 * last token (the tokens its bytes overlap), -1 when it has none. */
static int targets(nlp_span_data *d)
{
    if (!(d->tbeg = nlp_malloc((d->n + 1) * sizeof *d->tbeg)) || !(d->tend = nlp_malloc((d->n + 1) * sizeof *d->tend)))
        return NLP_ENOMEM;
    for (size_t i = 0; i < d->n; i++) {
        d->tbeg[i] = d->tend[i] = -1;
        if (!d->labelled || d->ans[i] == d->ans[i + 1]) continue;
        const size_t a = d->ans[i], p = d->passage[i], t0 = d->ptok[p], nt = d->ptok[p + 1] - t0;
        const int32_t *po = d->poff + 2 * t0;
        int32_t s = -1, e = -1;
        for (size_t t = 0; t < nt; t++)
            if (po[2 * t + 1] > (int32_t)d->abeg[a] && po[2 * t] < (int32_t)d->aend[a]) {
                if (s < 0) s = (int32_t)t;
                e = (int32_t)t;
            }
        d->tbeg[i] = s, d->tend[i] = e;
    }
    return 0;
}

int nlp_span_read(nlp_span_data *d, const char *path, const nlp_span_read_opts *o)
{
    memset(d, 0, sizeof *d);
    char *text = NULL;
    size_t len = 0;
    int rc = nlp_read_file(path, &text, &len);
    if (rc) return rc;
    builder b = {.d = d};
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) i++;
    const char *name = strcmp(path, "-") ? path : "standard input";
    json_t *root = NULL;
    if (i < len && text[i] == '{') {
        json_error_t je;
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!root) rc = nlp_error(NLP_EDATA, "'%s' line %d column %d: %s", name, je.line, je.column, je.text);
        else rc = read_json(&b, name, root, o->labelled);
    } else if (o->labelled) {
        rc = len ? nlp_error(NLP_EDATA, "'%s' is not SQuAD JSON (it does not start with '{'): training and eval read "
                             "questions with their answers from SQuAD v1.1 JSON", name)
                 : nlp_error(NLP_EDATA, "'%s' is empty: no questions", name);
    } else {
        if (o->max_line) {
            size_t cur = 0;
            uint64_t line = 1;
            rc = nlp_lines_check(name, text, len, o->max_line, &cur, &line);
        }
        if (!rc) rc = read_lines(&b, name, text, len);
    }
    if (!rc && !d->n && !d->ans && (d->ans = nlp_calloc(1, sizeof *d->ans)) == NULL) rc = NLP_ENOMEM;
    if (!rc && d->n > UINT32_MAX) rc = nlp_error(NLP_EDATA, "'%s': more than %u questions", name, (unsigned)UINT32_MAX);
    if (!rc) rc = tokenize(&b, o, name);
    if (!rc) rc = targets(d);
    json_decref(root);
    builder_free(&b);
    free(text);
    if (rc) nlp_span_data_free(d);
    return rc;
}

void nlp_span_data_free(nlp_span_data *d)
{
    free(d->text), free(d->ptext), free(d->pids), free(d->ptok), free(d->poff), free(d->passage), free(d->qids);
    free(d->qtok), free(d->str), free(d->qid), free(d->ans), free(d->atext), free(d->abeg), free(d->aend);
    free(d->tbeg), free(d->tend);
    memset(d, 0, sizeof *d);
}

// --- windows

/* Question tokens a row keeps: at most max_query, and at most half the
 * positions beside the special tokens, so that a long question leaves the
 * passage windows of some size (not one token each, and a window per
 * passage token). */
static size_t query_len(const nlp_span_data *d, size_t q, const nlp_span_layout *l)
{
    size_t n = d->qtok[q + 1] - d->qtok[q];
    if (n > (size_t)l->max_query) n = (size_t)l->max_query;
    if (n > ((size_t)l->enc.T - 3) / 2) n = ((size_t)l->enc.T - 3) / 2;
    return n;
}

static int layout_check(const nlp_span_layout *l)
{
    if (l->enc.T < 5 || l->stride < 1 || l->max_query < 1 || l->max_answer < 1)
        return nlp_error(NLP_EINVAL, "span layout: %d positions (at least 5), stride %d, question tokens %d, answer "
                         "tokens %d (at least 1 each)", l->enc.T, l->stride, l->max_query, l->max_answer);
    return 0;
}

int nlp_span_windows_make(nlp_span_windows *w, const nlp_span_data *d, const nlp_span_layout *l)
{
    memset(w, 0, sizeof *w);
    int rc = layout_check(l);
    if (rc) return rc;
    size_t cap = 0, c2 = 0, c3 = 0;
    for (size_t q = 0; q < d->n; q++) {
        const size_t p = d->passage[q], nt = d->ptok[p + 1] - d->ptok[p];
        const size_t room = (size_t)l->enc.T - 3 - query_len(d, q, l);
        for (size_t start = 0;;) { /* run_squad's doc spans */
            size_t len = nt - start < room ? nt - start : room;
            if (nlp_grow(&w->q, &cap, w->n + 1, sizeof *w->q) || nlp_grow(&w->start, &c2, w->n + 1, sizeof *w->start) ||
                nlp_grow(&w->len, &c3, w->n + 1, sizeof *w->len)) {
                nlp_span_windows_free(w);
                return NLP_ENOMEM;
            }
            w->q[w->n] = (uint32_t)q, w->start[w->n] = (uint32_t)start, w->len[w->n] = (uint32_t)len;
            w->n++;
            if (start + len >= nt) break;
            start += len < (size_t)l->stride ? len : (size_t)l->stride;
        }
    }
    return 0;
}

void nlp_span_windows_free(nlp_span_windows *w)
{
    free(w->q), free(w->start), free(w->len);
    memset(w, 0, sizeof *w);
}

/* Batch arrays for B rows of T positions. */
static int32_t *batch_buf(int B, int T)
{
    return nlp_malloc(((size_t)4 * B * T + 2 * (size_t)B) * sizeof(int32_t));
}

/* Fills b with windows ex[0..n) (ex NULL: first, first+1 ...) of w, padded
 * to the longest; training: [CLS] may be a target (a window without the
 * answer), and the targets are set when d is labelled. */
static int fill(int32_t *buf, const nlp_span_layout *l, const nlp_span_data *d, const nlp_span_windows *w,
                const uint32_t *ex, size_t first, int n, int train, nlp_batch *b)
{
    int W = 0;
    for (int j = 0; j < n; j++) {
        const size_t k = ex ? ex[j] : first + (size_t)j;
        const int len = (int)(query_len(d, w->q[k], l) + w->len[k] + 3);
        if (len > W) W = len;
    }
    const size_t nw = (size_t)n * W;
    int32_t *ids = buf, *type = ids + nw, *mask = type + nw, *smask = mask + nw, *ss = smask + nw, *se = ss + n;
    for (int j = 0; j < n; j++) {
        const size_t k = ex ? ex[j] : first + (size_t)j, q = w->q[k], p = d->passage[q];
        const size_t nq = query_len(d, q, l), s0 = w->start[k], ln = w->len[k];
        int32_t *x = ids + (size_t)j * W, *ty = type + (size_t)j * W, *mk = mask + (size_t)j * W;
        int32_t *sm = smask + (size_t)j * W;
        int at = 0;
        x[at++] = l->enc.cls;
        memcpy(x + at, d->qids + d->qtok[q], nq * sizeof *x);
        at += (int)nq;
        x[at++] = l->enc.sep;
        const int p0 = at; /* the window's first passage token */
        memcpy(x + at, d->pids + d->ptok[p] + s0, ln * sizeof *x);
        at += (int)ln;
        x[at++] = l->enc.sep;
        for (int t = 0; t < W; t++) {
            if (t >= at) x[t] = l->enc.pad;
            ty[t] = t >= p0 && t < at;
            mk[t] = t < at;
            sm[t] = (t >= p0 && t < p0 + (int)ln) || (train && t == 0);
        }
        ss[j] = se[j] = IGNORE;
        if (d->labelled && train) {
            const int32_t tb = d->tbeg[q], te = d->tend[q];
            const int inside = tb >= 0 && (size_t)tb >= s0 && (size_t)te < s0 + ln;
            ss[j] = inside ? p0 + tb - (int32_t)s0 : 0;
            se[j] = inside ? p0 + te - (int32_t)s0 : 0;
        }
    }
    memset(b, 0, sizeof *b);
    b->B = n, b->T = W;
    b->ids = ids, b->type_ids = type, b->mask = mask, b->span_mask = smask;
    if (d->labelled && train) b->span_start = ss, b->span_end = se;
    return 0;
}

// --- prediction

/* Is window k the "max context" window of its passage token j (run_squad:
 * the most tokens on the token's shorter side, 0.01 per window token
 * breaking ties; the first such window)? The question's windows are
 * consecutive. */
static int max_context(const nlp_span_windows *w, size_t k, size_t j)
{
    size_t a = k, e = k + 1;
    while (a > 0 && w->q[a - 1] == w->q[k]) a--;
    while (e < w->n && w->q[e] == w->q[k]) e++;
    double best = -1;
    size_t bw = k;
    for (size_t v = a; v < e; v++) {
        if (j < w->start[v] || j >= w->start[v] + w->len[v]) continue;
        const size_t left = j - w->start[v], right = w->start[v] + w->len[v] - 1 - j;
        const double s = (double)(left < right ? left : right) + 0.01 * (double)w->len[v];
        if (s > best) best = s, bw = v;
    }
    return bw == k;
}

/* Does a word of s[0..n) go on across byte offset at (the characters before
 * and after it both in one word, as BERT's pre-tokenizer splits text)? An answer neither starts nor ends there:
 * a predicted span is whole words of the passage, as SQuAD's answers are. */
static int inside_word(const char *s, size_t n, size_t at)
{
    if (at == 0 || at >= n) return 0;
    size_t a = at - 1, i = at;
    while (a > 0 && ((unsigned char)s[a] & 0xC0) == 0x80) a--;
    const int32_t c1 = nlp_utf8_next(s, n, &i);
    const int32_t c0 = nlp_utf8_next(s, n, &a);
    return c0 >= 0 && c1 >= 0 && nlp_pretok_bert_class(c0) == 0 && nlp_pretok_bert_class(c1) == 0;
}

static int check_model(const nlp_model_config *cfg, const nlp_span_layout *l)
{
    if (cfg->arch != NLP_ARCH_BERT || cfg->head != NLP_HEAD_SPAN || cfg->num_labels != 2)
        return nlp_error(NLP_EINVAL, "question answering needs a bert model with a span head (head: span)");
    if (l->enc.T > cfg->max_positions)
        return nlp_error(NLP_EINVAL, "inputs of %d positions for a model of %d", l->enc.T, cfg->max_positions);
    if (cfg->type_vocab_size < 2)
        return nlp_error(NLP_EINVAL, "a question and a passage need 2 token types, the model has %d", cfg->type_vocab_size);
    return layout_check(l);
}

int nlp_span_predict(nlp_model *m, const nlp_span_layout *l, const nlp_span_data *d, const nlp_span_windows *w,
                     int B, nlp_span_answer *ans, double *loss)
{
    if (loss) *loss = NAN;
    if (B < 1) return nlp_error(NLP_EINVAL, "a batch needs at least 1 row, not %d", B);
    int rc = check_model(nlp_model_cfg(m), l);
    if (rc) return rc;
    int32_t *buf = batch_buf(B, l->enc.T);
    if (!buf) return NLP_ENOMEM;
    for (size_t q = 0; q < d->n; q++) ans[q] = (nlp_span_answer){0, 0, -INFINITY};
    nlp_model_set_training(m, 0);
    double sum = 0;
    for (size_t i = 0; i < w->n && !rc; i += (size_t)B) {
        const int n = w->n - i < (size_t)B ? (int)(w->n - i) : B;
        nlp_batch b;
        nlp_losses ls;
        /* with a loss, the windows' training targets ([CLS] among the
         * positions): the other logits are the same either way */
        if ((rc = fill(buf, l, d, w, NULL, i, n, loss != NULL, &b))) break;
        if ((rc = nlp_model_forward(m, &b, &ls))) break;
        if (loss && d->labelled) sum += ls.loss * n;
        const float *lg = nlp_model_span_logits(m), *S = lg, *E = lg + (size_t)n * b.T;
        for (int j = 0; j < n; j++) {
            const size_t k = i + (size_t)j, q = w->q[k], p0 = 2 + query_len(d, q, l);
            const float *s = S + (size_t)j * b.T, *e = E + (size_t)j * b.T;
            const size_t t0 = d->ptok[d->passage[q]];
            const char *pt = d->text + d->ptext[d->passage[q]];
            const size_t pn = d->ptext[d->passage[q] + 1] - d->ptext[d->passage[q]];
            for (size_t a = 0; a < w->len[k]; a++) {
                if (!max_context(w, k, w->start[k] + a)) continue;
                const size_t ta = t0 + w->start[k] + a;
                if (inside_word(pt, pn, (size_t)d->poff[2 * ta])) continue;
                for (size_t z = a; z < w->len[k] && z < a + (size_t)l->max_answer; z++) {
                    const float sc = s[p0 + a] + e[p0 + z];
                    if (!(sc > ans[q].score)) continue;
                    const size_t tz = t0 + w->start[k] + z;
                    if (inside_word(pt, pn, (size_t)d->poff[2 * tz + 1])) continue;
                    ans[q] = (nlp_span_answer){(uint32_t)d->poff[2 * ta], (uint32_t)d->poff[2 * tz + 1], sc};
                }
            }
        }
    }
    free(buf);
    if (!rc && loss && d->labelled && w->n) *loss = sum / (double)w->n;
    return rc;
}

int nlp_span_score(const nlp_span_data *d, const nlp_span_answer *ans, nlp_span_metric metric, double *em, double *f1)
{
    *em = *f1 = NAN;
    if (!d->labelled || !d->n) return 0;
    const char **gold = NULL;
    size_t *glen = NULL, cap = 0, cap2 = 0;
    double se = 0, sf = 0;
    int rc = 0;
    for (size_t q = 0; q < d->n && !rc; q++) {
        const size_t a0 = d->ans[q], k = d->ans[q + 1] - a0;
        if (nlp_grow(&gold, &cap, k + 1, sizeof *gold) || nlp_grow(&glen, &cap2, k + 1, sizeof *glen)) {
            rc = NLP_ENOMEM;
            break;
        }
        for (size_t a = 0; a < k; a++) gold[a] = d->str + d->atext[a0 + a], glen[a] = strlen(gold[a]);
        const char *p = d->text + d->ptext[d->passage[q]] + ans[q].beg;
        double e, f;
        if ((rc = metric(p, ans[q].end - ans[q].beg, gold, glen, (int)k, &e, &f))) break;
        se += e, sf += f;
    }
    free(gold), free(glen);
    if (!rc) *em = 100.0 * se / (double)d->n, *f1 = 100.0 * sf / (double)d->n;
    return rc;
}

// --- the training task

static int span_next(void *ctx, nlp_rng *r, nlp_batch *b)
{
    nlp_span_task *t = ctx;
    const uint32_t *ex;
    int n = nlp_epochs_next(&t->ep, r, t->B, &ex);
    return fill(t->buf, &t->layout, t->train, &t->wtrain, ex, 0, n, 1, b);
}

static void span_get_state(void *ctx, uint64_t s[4])
{
    nlp_span_task *t = ctx;
    nlp_epochs_get_state(&t->ep, s);
}

static int span_set_state(void *ctx, const uint64_t s[4])
{
    nlp_span_task *t = ctx;
    return nlp_epochs_set_state(&t->ep, s, "windows");
}

static int span_eval(void *ctx, nlp_model *m, nlp_eval *out)
{
    nlp_span_task *t = ctx;
    for (int i = 0; i < NLP_TRAIN_MAX_METRICS; i++) out->v[i] = NAN;
    double loss;
    int rc = nlp_span_predict(m, &t->layout, t->valid, &t->wvalid, t->B, t->answers, &loss);
    if (rc) return rc;
    out->v[0] = loss;
    if (t->metric) rc = nlp_span_score(t->valid, t->answers, t->metric, &out->v[1], &out->v[2]);
    return rc;
}

static const char *const span_names[] = {"loss", "exact_match", "f1", NULL};

int nlp_span_task_init(nlp_span_task *t, nlp_task *task, const nlp_span_data *train, const nlp_span_data *valid,
                       const nlp_span_layout *l, const nlp_model_config *cfg, int B, nlp_span_metric metric)
{
    memset(t, 0, sizeof *t);
    int rc;
    if (B < 1) return nlp_error(NLP_EINVAL, "a batch needs at least 1 window, not %d", B);
    if (!train->labelled) return nlp_error(NLP_EDATA, "the training data has no answers");
    if (!train->n) return nlp_error(NLP_EDATA, "the training data holds no question");
    if (valid && !valid->labelled) return nlp_error(NLP_EDATA, "the validation data has no answers");
    if (valid && !valid->n) return nlp_error(NLP_EDATA, "the validation data holds no question");
    if ((rc = check_model(cfg, l))) return rc;
    t->train = train, t->valid = valid, t->layout = *l, t->B = B, t->metric = metric;
    if ((rc = nlp_span_windows_make(&t->wtrain, train, l)) || (valid && (rc = nlp_span_windows_make(&t->wvalid, valid, l))) ||
        (rc = nlp_epochs_init(&t->ep, t->wtrain.n, "training windows"))) {
        nlp_span_task_free(t);
        return rc;
    }
    if (!(t->buf = batch_buf(B, l->enc.T)) || (valid && !(t->answers = nlp_malloc(valid->n * sizeof *t->answers)))) {
        nlp_span_task_free(t);
        return NLP_ENOMEM;
    }
    memset(task, 0, sizeof *task);
    task->ctx = t;
    task->next_batch = span_next;
    task->evaluate = valid ? span_eval : NULL;
    task->eval_names = span_names;
    task->best_metric = 2, task->higher_is_better = 1;
    task->get_state = span_get_state;
    task->set_state = span_set_state;
    return 0;
}

void nlp_span_task_free(nlp_span_task *t)
{
    nlp_span_windows_free(&t->wtrain);
    nlp_span_windows_free(&t->wvalid);
    nlp_epochs_free(&t->ep);
    free(t->buf), free(t->answers);
    memset(t, 0, sizeof *t);
}
