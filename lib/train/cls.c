/*
 * cls.c — sequence-classification data, encodings, scoring and the
 * training task. See cls.h.
 */
#include "train/cls.h"
#include "train/data.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "text/utf8.h"
#include "train/dist.h"
#include "train/mt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define IGNORE (-100)
#define MAX_UNKNOWN_NAMED 10

// --- the label set

int nlp_cls_labels_add(nlp_cls_labels *l, const char *s, size_t n, int32_t *index)
{
    if (!l->map && !(l->map = nlp_strmap_new(16))) return NLP_ENOMEM;
    int is_new;
    int64_t next = (int64_t)nlp_strmap_size(l->map);
    int64_t *v = nlp_strmap_slot(l->map, s, n, &is_new);
    if (!v) return NLP_ENOMEM;
    if (is_new) *v = next;
    if (index) *index = (int32_t)*v;
    return 0;
}

int32_t nlp_cls_labels_find(const nlp_cls_labels *l, const char *s, size_t n)
{
    int64_t v;
    return l->map && nlp_strmap_get(l->map, s, n, &v) ? (int32_t)v : -1;
}

int nlp_cls_labels_count(const nlp_cls_labels *l) { return l->map ? (int)nlp_strmap_size(l->map) : 0; }

const char *nlp_cls_labels_name(const nlp_cls_labels *l, int i)
{
    if (i < 0 || i >= nlp_cls_labels_count(l)) return NULL;
    return nlp_strmap_key(l->map, (size_t)i, NULL);
}

void nlp_cls_labels_free(nlp_cls_labels *l)
{
    nlp_strmap_free(l->map);
    l->map = NULL;
}

// --- reading

static int count_fields(const char *s, size_t n)
{
    int f = 1;
    for (const char *p = s, *e = s + n; (p = memchr(p, '\t', (size_t)(e - p))); p++) f++;
    return f;
}

static const char *form(int labelled, int texts)
{
    if (labelled) return texts == 2 ? "label<TAB>text_a<TAB>text_b" : "label<TAB>text";
    return texts == 2 ? "text_a<TAB>text_b" : "text";
}

/* Appends "'name' (line N)" for the unknown-label message. */
static int name_unknown(nlp_buf *msg, const char *s, size_t n, size_t line, int first)
{
    return nlp_buf_printf(msg, "%s'%.*s' (line %zu)", first ? "" : ", ", (int)n, s, line);
}

/* Lines line0 + 1 .. line0 + n of path into d (zeroed first): labels not
 * in o->labels go to *unknown (made when first needed) with the line they
 * are first on, and while there are any nothing is tokenized. */
static int parse_lines(nlp_cls_data *d, const char *const *line, const size_t *llen, size_t n, const char *path,
                       uint64_t line0, int *fields, const nlp_cls_read_opts *o, nlp_strmap **unknown)
{
    memset(d, 0, sizeof *d);
    const char **ta = NULL, **tb = NULL;
    size_t *na = NULL, *nb = NULL;
    nlp_buf fix = {0};
    int rc = 0;
    const int lab = o->labelled ? 1 : 0;
    if (o->texts < 0 || o->texts > 2) return nlp_error(NLP_EINVAL, "texts per example must be 1 or 2 (0: any)");
    if (lab && !o->labels) return nlp_error(NLP_EINVAL, "labelled examples need a label set");
    d->labelled = lab;
    d->pair = o->texts == 2;
    const size_t cap = n ? n : 1;
    if (!(ta = nlp_malloc(cap * sizeof *ta)) || !(tb = nlp_malloc(cap * sizeof *tb)) ||
        !(na = nlp_malloc(cap * sizeof *na)) || !(nb = nlp_malloc(cap * sizeof *nb)) ||
        (lab && !(d->label = nlp_malloc(cap * sizeof *d->label)))) {
        rc = NLP_ENOMEM;
        goto out;
    }
    /* fields: every line as line 1 has them (or as the caller wants) */
    int want = o->texts ? lab + o->texts : *fields;
    if (want) d->pair = want - lab == 2;
    for (size_t i = 0; i < n; i++) {
        const char *s = line[i];
        size_t m = llen[i];
        const unsigned long long ln = (unsigned long long)(line0 + i + 1);
        if (!m) {
            rc = nlp_error(NLP_EDATA, "'%s' line %llu: empty line: every line is an example (%s)", path, ln,
                           form(lab, want ? want - lab : 1));
            goto out;
        }
        int f = count_fields(s, m);
        if (!want) {
            if (f < lab + 1 || f > lab + 2) {
                rc = nlp_error(NLP_EDATA, "'%s' line %llu: %d field%s: expected %s or %s", path, ln, f,
                               f == 1 ? "" : "s", form(lab, 1), form(lab, 2));
                goto out;
            }
            want = f;
            d->pair = f - lab == 2;
        } else if (f != want) {
            if (o->texts)
                rc = nlp_error(NLP_EDATA, "'%s' line %llu: %d field%s where %d are expected (%s)", path, ln, f,
                               f == 1 ? "" : "s", want, form(lab, want - lab));
            else
                rc = nlp_error(NLP_EDATA, "'%s' line %llu has %d field%s but line 1 has %d: every line must have the "
                               "same fields (%s)", path, ln, f, f == 1 ? "" : "s", want, form(lab, want - lab));
            goto out;
        }
        /* cut the fields */
        const char *fld[3];
        size_t fl[3];
        const char *p = s, *e = s + m;
        for (int k = 0; k < f; k++) {
            const char *tab = k + 1 < f ? memchr(p, '\t', (size_t)(e - p)) : e;
            fld[k] = p, fl[k] = (size_t)(tab - p);
            p = tab + 1;
        }
        for (int k = 0; k < f; k++)
            if (!fl[k]) {
                const char *what = k < lab ? "label" : !d->pair ? "text" : k == lab ? "text_a" : "text_b";
                rc = nlp_error(NLP_EDATA, "'%s' line %llu: empty %s", path, ln, what);
                goto out;
            }
        ta[i] = fld[lab], na[i] = fl[lab];
        tb[i] = d->pair ? fld[lab + 1] : fld[lab] + fl[lab], nb[i] = d->pair ? fl[lab + 1] : 0;
        if (!lab) continue;
        /* the label */
        const char *ls = fld[0];
        size_t lnn = fl[0];
        if (!nlp_utf8_valid(ls, lnn, NULL)) {
            nlp_buf_reset(&fix);
            if ((rc = nlp_utf8_repair(ls, lnn, &fix, NULL))) goto out;
            ls = fix.data, lnn = fix.len;
            d->repaired++;
        }
        int32_t idx = nlp_cls_labels_find(o->labels, ls, lnn);
        if (idx < 0 && o->add_labels) {
            if ((rc = nlp_cls_labels_add(o->labels, ls, lnn, &idx))) goto out;
        } else if (idx < 0) {
            int is_new;
            int64_t *v;
            if ((!*unknown && !(*unknown = nlp_strmap_new(16))) || !(v = nlp_strmap_slot(*unknown, ls, lnn, &is_new))) {
                rc = NLP_ENOMEM;
                goto out;
            }
            if (is_new) *v = (int64_t)ln;
        }
        d->label[i] = idx;
    }
    *fields = want;
    if (*unknown) goto out;
    if (!n && !want) d->pair = o->texts == 2;
    /* tokenize each column (messages name the file's line) */
    if ((rc = nlp_tokenize_lines_at(o->tk, ta, na, n, path, line0, o->threads, &d->a, &d->a_off, &d->repaired)))
        goto out;
    if (d->pair &&
        (rc = nlp_tokenize_lines_at(o->tk, tb, nb, n, path, line0, o->threads, &d->b, &d->b_off, &d->repaired)))
        goto out;
    d->n = n;
    d->tokens = d->a_off[n] + (d->pair ? d->b_off[n] : 0);
out:
    free(ta), free(tb), free(na), free(nb);
    nlp_buf_free(&fix);
    if (rc) nlp_cls_data_free(d);
    return rc;
}

/* NLP_EDATA "'f': K labels not in X: 'a' (line N), ..." */
static int unknown_labels(const char *path, nlp_strmap *unknown, const nlp_cls_read_opts *o)
{
    nlp_buf msg = {0};
    size_t k = nlp_strmap_size(unknown);
    int rc = nlp_buf_printf(&msg, "'%s': %zu label%s not in %s: ", path, k, k == 1 ? "" : "s",
                            o->labels_from ? o->labels_from : "the training data");
    for (size_t j = 0; j < k && j < MAX_UNKNOWN_NAMED && !rc; j++) {
        size_t kl;
        const char *key = nlp_strmap_key(unknown, j, &kl);
        rc = name_unknown(&msg, key, kl, (size_t)nlp_strmap_value(unknown, j), j == 0);
    }
    if (!rc && k > MAX_UNKNOWN_NAMED) rc = nlp_buf_printf(&msg, " and %zu more", k - MAX_UNKNOWN_NAMED);
    rc = rc ? rc : nlp_error(NLP_EDATA, "%s", msg.data);
    nlp_buf_free(&msg);
    return rc;
}

int nlp_cls_parse(nlp_cls_data *d, const char *const *line, const size_t *llen, size_t n, const char *path,
                  uint64_t line0, int *fields, const nlp_cls_read_opts *o)
{
    nlp_strmap *unknown = NULL;
    int rc = parse_lines(d, line, llen, n, path, line0, fields, o, &unknown);
    if (!rc && unknown) {
        rc = unknown_labels(path, unknown, o);
        nlp_cls_data_free(d);
    }
    nlp_strmap_free(unknown);
    return rc;
}

/* The ids of one column of a block appended: ids[*n ..), off[base + 1 ..]. */
static int append_column(int32_t **ids, size_t *n, size_t *cap, size_t **off, size_t *ocap, size_t base,
                         const int32_t *bids, const size_t *boff, size_t k)
{
    if (nlp_grow(ids, cap, *n + boff[k] + 1, sizeof **ids) || nlp_grow(off, ocap, base + k + 1, sizeof **off))
        return NLP_ENOMEM;
    if (boff[k]) memcpy(*ids + *n, bids, boff[k] * sizeof **ids);
    if (!base) (*off)[0] = 0;
    for (size_t i = 0; i < k; i++) (*off)[base + i + 1] = (*off)[base] + boff[i + 1];
    *n += boff[k];
    return 0;
}

/* The file is read and parsed a block of lines at a time (train/data.h):
 * memory holds one block of text, and the ids. */
int nlp_cls_read(nlp_cls_data *d, const char *path, const nlp_cls_read_opts *o)
{
    memset(d, 0, sizeof *d);
    nlp_cls_data part = {0};
    nlp_strmap *unknown = NULL;
    nlp_text_blocks blk;
    const char *text;
    char **line = NULL;
    size_t *llen = NULL;
    size_t len, k, n = 0, an = 0, bn = 0, acap = 0, bcap = 0, aocap = 0, bocap = 0, lcap = 0;
    uint64_t first;
    int fields = 0, rc;
    const int lab = o->labelled ? 1 : 0;
    if (o->texts < 0 || o->texts > 2) return nlp_error(NLP_EINVAL, "texts per example must be 1 or 2 (0: any)");
    if (lab && !o->labels) return nlp_error(NLP_EINVAL, "labelled examples need a label set");
    if ((rc = nlp_text_blocks_open(&blk, path))) return rc;
    blk.max_line = o->max_line;
    blk.checked = 1; /* a TSV's fields say what is wrong with it (no text check) */
    d->labelled = lab;
    d->pair = o->texts == 2;
    while ((rc = nlp_text_blocks_next(&blk, &text, &len, &first)) == 1) {
        free(line), free(llen);
        line = NULL, llen = NULL;
        if ((rc = nlp_split_lines((char *)text, len, &line, &llen, &k)) ||
            (rc = parse_lines(&part, (const char *const *)line, llen, k, path, first, &fields, o, &unknown)))
            goto out;
        if (!unknown) {
            d->pair = part.pair;
            if ((lab && nlp_grow(&d->label, &lcap, n + k + 1, sizeof *d->label)) ||
                (rc = append_column(&d->a, &an, &acap, &d->a_off, &aocap, n, part.a, part.a_off, k)) ||
                (part.pair && (rc = append_column(&d->b, &bn, &bcap, &d->b_off, &bocap, n, part.b, part.b_off, k)))) {
                rc = rc ? rc : NLP_ENOMEM;
                goto out;
            }
            if (lab && k) memcpy(d->label + n, part.label, k * sizeof *d->label);
            d->repaired += part.repaired;
        }
        nlp_cls_data_free(&part);
        n += k;
    }
    if (rc < 0) goto out;
    rc = 0;
    if (unknown) {
        rc = unknown_labels(path, unknown, o);
        goto out;
    }
    if (!n) {
        d->pair = fields ? fields - lab == 2 : o->texts == 2;
        if (!(d->a_off = nlp_calloc(1, sizeof *d->a_off)) || (d->pair && !(d->b_off = nlp_calloc(1, sizeof *d->b_off)))) {
            rc = NLP_ENOMEM;
            goto out;
        }
    }
    if ((!d->a && !(d->a = nlp_malloc(sizeof *d->a))) || (lab && !d->label && !(d->label = nlp_malloc(sizeof *d->label))) ||
        (d->pair && !d->b && !(d->b = nlp_malloc(sizeof *d->b)))) {
        rc = NLP_ENOMEM;
        goto out;
    }
    d->n = n;
    d->tokens = d->a_off[n] + (d->pair ? d->b_off[n] : 0);
out:
    nlp_text_blocks_close(&blk);
    nlp_cls_data_free(&part);
    free(line), free(llen);
    nlp_strmap_free(unknown);
    if (rc) nlp_cls_data_free(d);
    return rc;
}

void nlp_cls_data_free(nlp_cls_data *d)
{
    free(d->label), free(d->a), free(d->b), free(d->a_off), free(d->b_off);
    memset(d, 0, sizeof *d);
}

// --- encoding

static int encoder_check(const nlp_cls_encoder *e)
{
    if (e->T < 4)
        return nlp_error(NLP_EINVAL, "a classifier's inputs need at least 4 positions (3 special tokens and a "
                         "token of a pair), not %d", e->T);
    return 0;
}

int nlp_cls_encoder_bert(nlp_cls_encoder *e, const nlp_tokenizer *tk, int T)
{
    static const char *const name[3] = {"[CLS]", "[SEP]", "[PAD]"};
    int32_t id[3];
    memset(e, 0, sizeof *e);
    e->kind = NLP_CLS_BERT, e->T = T;
    int rc = encoder_check(e);
    if (rc) return rc;
    for (int k = 0; k < 3; k++)
        if ((id[k] = nlp_tokenizer_token_to_id(tk, name[k], strlen(name[k]))) < 0)
            return nlp_error(NLP_EFORMAT, "the tokenizer has no '%s' token: a BERT classifier needs [CLS], [SEP] "
                             "and [PAD]", name[k]);
    e->cls = id[0], e->sep = id[1], e->pad = id[2];
    return 0;
}

int nlp_cls_encoder_gpt(nlp_cls_encoder *e, int32_t start, int32_t delim, int32_t extract, int32_t pad, int T)
{
    memset(e, 0, sizeof *e);
    e->kind = NLP_CLS_GPT, e->T = T;
    e->start = start, e->delim = delim, e->extract = extract, e->pad = pad;
    if (start < 0 || delim < 0 || extract < 0 || pad < 0)
        return nlp_error(NLP_EINVAL, "negative token id for [START], [DELIM], [EXTRACT] or padding");
    return encoder_check(e);
}

void nlp_cls_truncate(size_t na, size_t nb, size_t max, size_t *ka, size_t *kb)
{
    if (na + nb <= max) {
        *ka = na, *kb = nb;
        return;
    }
    /* nlp_truncate's longest_first (HF tokenizers' rule): s the shorter
     * text keeps its length if it fits, l the longer gets the rest but no
     * less than s; if that is too much both get half, l the odd id */
    int swap = na > nb;
    size_t s = swap ? nb : na, l;
    l = s > max ? s : (max - s > s ? max - s : s);
    if (s + l > max) {
        s = max / 2;
        l = s + max % 2;
    }
    *ka = swap ? l : s, *kb = swap ? s : l;
}

/* BERT and GPT both add 2 special tokens to a single text, 3 to a pair */
static int specials(int pair)
{
    return pair ? 3 : 2;
}

int nlp_cls_encoded_len(const nlp_cls_encoder *e, size_t na, size_t nb, int pair)
{
    size_t ka, kb, sp = (size_t)specials(pair);
    nlp_cls_truncate(na, pair ? nb : 0, (size_t)e->T > sp ? (size_t)e->T - sp : 0, &ka, &kb);
    return (int)(ka + kb + sp);
}

int nlp_cls_encode(const nlp_cls_encoder *e, const int32_t *a, size_t na, const int32_t *b, size_t nb, int W,
                   int32_t *ids, int32_t *type_ids, int32_t *mask, int32_t *lm_labels, int32_t *cls_pos)
{
    const int pair = b != NULL;
    size_t ka, kb, sp = (size_t)specials(pair);
    nlp_cls_truncate(na, pair ? nb : 0, (size_t)e->T > sp ? (size_t)e->T - sp : 0, &ka, &kb);
    const int len = (int)(ka + kb + sp);
    if (len > W) return nlp_error(NLP_EINVAL, "an example of %d positions does not fit a row of %d", len, W);
    const int bert = e->kind == NLP_CLS_BERT;
    int p = 0, seg_b = len; /* seg_b: where segment 1 (text_b [SEP]) starts */
    ids[p++] = bert ? e->cls : e->start;
    memcpy(ids + p, a, ka * sizeof *ids);
    p += (int)ka;
    if (pair) {
        ids[p++] = bert ? e->sep : e->delim;
        seg_b = p;
        memcpy(ids + p, b, kb * sizeof *ids);
        p += (int)kb;
    }
    ids[p++] = bert ? e->sep : e->extract;
    for (int q = p; q < W; q++) ids[q] = e->pad;
    for (int q = 0; q < W; q++) {
        if (type_ids) type_ids[q] = q >= seg_b && q < len;
        if (mask) mask[q] = q < len;
        if (lm_labels) lm_labels[q] = q < len ? ids[q] : IGNORE;
    }
    if (cls_pos) *cls_pos = bert ? 0 : len - 1;
    return len;
}

static inline size_t alen(const nlp_cls_data *d, size_t i) { return d->a_off[i + 1] - d->a_off[i]; }
static inline size_t blen(const nlp_cls_data *d, size_t i) { return d->pair ? d->b_off[i + 1] - d->b_off[i] : 0; }

size_t nlp_cls_truncated(const nlp_cls_encoder *e, const nlp_cls_data *d)
{
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++)
        k += (size_t)nlp_cls_encoded_len(e, alen(d, i), blen(d, i), d->pair) <
             alen(d, i) + blen(d, i) + (size_t)specials(d->pair);
    return k;
}

/* Rows per example: 2 for similarity's two orders. */
static int rows_per(const nlp_cls_encoder *e) { return e->pair_sum ? 2 : 1; }

/* Batch arrays for B examples of T positions, carved from one block. */
static int32_t *batch_buf(const nlp_cls_encoder *e, int B, int T)
{
    const size_t R = (size_t)B * rows_per(e);
    return nlp_malloc(((size_t)4 * R * T + 2 * R) * sizeof(int32_t));
}

/* Ids a[0..na) before b[0..nb) (the first id that differs, else the
 * shorter first). */
static int ids_before(const int32_t *a, size_t na, const int32_t *b, size_t nb)
{
    for (size_t i = 0; i < na && i < nb; i++)
        if (a[i] != b[i]) return a[i] < b[i];
    return na < nb;
}

/* Fills b with examples ex(0..n) of d (ex(j) = order[first + j], or
 * first + j without an order), padded to the longest; lm: GPT's LM labels.
 * Similarity: example j is rows 2j (x·y) and 2j+1 (y·x), x the text whose
 * ids come first (ids_before): (a, b) and (b, a) give the same rows, and so
 * the same numbers whatever the matrix kernels do with a row's place. */
static int fill(int32_t *buf, const nlp_cls_encoder *e, const nlp_cls_data *d, const uint32_t *order, size_t first,
                int n, int lm, nlp_batch *b)
{
    int W = 0;
    const int g = rows_per(e);
    for (int j = 0; j < n; j++) {
        size_t i = order ? order[first + j] : first + j;
        int l = nlp_cls_encoded_len(e, alen(d, i), blen(d, i), d->pair);
        if (l > W) W = l;
    }
    const int R = n * g;
    const size_t nw = (size_t)R * W;
    int32_t *ids = buf, *type = ids + nw, *mask = type + nw, *lab = mask + nw, *cl = lab + nw, *cp = cl + R;
    for (int j = 0; j < n; j++) {
        size_t i = order ? order[first + j] : first + j;
        const int32_t *ta = d->a + d->a_off[i], *tb = d->pair ? d->b + d->b_off[i] : NULL;
        size_t na = alen(d, i), nb = blen(d, i);
        if (g == 2 && ids_before(tb, nb, ta, na)) { /* similarity: the pair in its own order */
            const int32_t *tt = ta;
            ta = tb, tb = tt;
            na = blen(d, i), nb = alen(d, i);
        }
        for (int k = 0; k < g; k++) { /* the second row of a similarity pair: y·x */
            const size_t r = (size_t)j * g + k, o = r * W;
            int rc = nlp_cls_encode(e, k ? tb : ta, k ? nb : na, k ? ta : tb, k ? na : nb, W, ids + o, type + o,
                                    mask + o, lab + o, cp + r);
            if (rc < 0) return rc;
        }
        if (d->labelled) cl[j] = d->label[i];
    }
    memset(b, 0, sizeof *b);
    b->B = R, b->T = W;
    b->pair_sum = e->pair_sum;
    b->ids = ids;
    if (e->kind == NLP_CLS_BERT) {
        b->type_ids = type, b->mask = mask;
    } else {
        b->cls_pos = cp;
        if (lm) b->labels = lab;
    }
    if (d->labelled) b->cls_labels = cl;
    return 0;
}

// --- scoring

int nlp_cls_score_logits(const float *logits, int B, int L, const int32_t *gold, int32_t *pred, float *prob,
                         float *probs, uint64_t *cm, double *nll)
{
    if (gold)
        for (int r = 0; r < B; r++)
            if (gold[r] < 0 || gold[r] >= L)
                return nlp_error(NLP_EDATA, "row %d: gold label %d is outside the classifier's %d labels", r,
                                 (int)gold[r], L);
    double sum = 0;
    for (int r = 0; r < B; r++) {
        const float *x = logits + (size_t)r * L;
        int best = 0;
        for (int k = 1; k < L; k++)
            if (x[k] > x[best]) best = k;
        double z = 0;
        for (int k = 0; k < L; k++) z += exp((double)x[k] - (double)x[best]);
        if (pred) pred[r] = best;
        if (prob) prob[r] = (float)(1.0 / z);
        if (probs)
            for (int k = 0; k < L; k++) probs[(size_t)r * L + k] = (float)(exp((double)x[k] - (double)x[best]) / z);
        if (gold) {
            sum += log(z) + (double)x[best] - (double)x[gold[r]];
            if (cm) cm[(size_t)gold[r] * L + best]++;
        }
    }
    if (gold && nll) *nll += sum;
    return 0;
}

/* That m can classify inputs of e (and d's gold labels). */
static int check_model(const nlp_model_config *cfg, const nlp_cls_encoder *e, const nlp_cls_data *d)
{
    if (cfg->num_labels <= 0) return nlp_error(NLP_EINVAL, "the model has no classification head (num-labels 0)");
    if ((e->kind == NLP_CLS_BERT) != (cfg->arch == NLP_ARCH_BERT) ||
        (e->kind == NLP_CLS_GPT) != nlp_arch_is_lm(cfg->arch))
        return nlp_error(NLP_EINVAL, "%s inputs for a %s model", e->kind == NLP_CLS_BERT ? "BERT" : "GPT",
                         nlp_arch_name(cfg->arch));
    if (e->T > nlp_model_config_max_len(cfg))
        return nlp_error(NLP_EINVAL, "inputs of %d positions for a model of %d", e->T, cfg->max_positions);
    if (e->pair_sum && (e->kind != NLP_CLS_GPT || (d && !d->pair)))
        return nlp_error(NLP_EDATA, "similarity reads pairs of texts (label<TAB>text_a<TAB>text_b) with gpt");
    if (d && d->labelled)
        for (size_t i = 0; i < d->n; i++)
            if (d->label[i] < 0 || d->label[i] >= cfg->num_labels)
                return nlp_error(NLP_EDATA, "example %zu: label index %d, but the model has %d labels", i + 1,
                                 (int)d->label[i], cfg->num_labels);
    return 0;
}

int nlp_cls_predict(nlp_model *m, const nlp_cls_encoder *e, const nlp_cls_data *d, int B, int32_t *pred, float *prob,
                    float *probs, uint64_t *cm, double *loss)
{
    const nlp_model_config *cfg = nlp_model_cfg(m);
    const int L = cfg->num_labels;
    if (loss) *loss = NAN;
    if (B < 1) return nlp_error(NLP_EINVAL, "a batch needs at least 1 row, not %d", B);
    int rc = check_model(cfg, e, d);
    if (rc) return rc;
    int32_t *buf = batch_buf(e, B, e->T);
    if (!buf) return NLP_ENOMEM;
    nlp_model_set_training(m, 0);
    double nll = 0;
    const int shared = !pred && !prob && !probs && nlp_dist_size() > 1;
    const int R = shared ? nlp_dist_size() : 1, me = shared ? nlp_dist_rank() : 0;
    const size_t LL = (size_t)L * L;
    uint64_t *cm_run = cm; /* shared: this rank's counts alone, then everyone's added to cm */
    if (shared && cm && !(cm_run = nlp_calloc(LL, sizeof *cm_run))) {
        free(buf);
        return NLP_ENOMEM;
    }
    for (size_t i = 0, batch = 0; i < d->n && !rc; i += (size_t)B, batch++) {
        int n = d->n - i < (size_t)B ? (int)(d->n - i) : B;
        if (!nlp_dist_mine(batch, me, R)) continue;
        nlp_batch b;
        nlp_losses l;
        if ((rc = fill(buf, e, d, NULL, i, n, 0, &b))) break;
        b.cls_labels = NULL; /* the loss comes from the logits: no backward follows */
        if ((rc = nlp_model_forward(m, &b, &l))) break;
        const float *logits = nlp_model_cls_logits(m);
        if (!logits) {
            rc = nlp_error(NLP_EINVAL, "the model gave no classification logits");
            break;
        }
        rc = nlp_cls_score_logits(logits, n, L, d->labelled ? d->label + i : NULL, pred ? pred + i : NULL,
                                  prob ? prob + i : NULL, probs ? probs + i * (size_t)L : NULL, cm_run, &nll);
    }
    free(buf);
    if (!rc && shared) { /* the ranks' figures combined */
        double *v = nlp_calloc(LL + 1, sizeof *v);
        if (!v) rc = NLP_ENOMEM;
        for (size_t k = 0; v && cm && k < LL; k++) v[k] = (double)cm_run[k];
        if (v) v[LL] = nll;
        if (v && !(rc = nlp_dist_sum_f64(v, LL + 1))) {
            for (size_t k = 0; cm && k < LL; k++) cm[k] += (uint64_t)v[k];
            nll = v[LL];
        }
        free(v);
    }
    if (cm_run != cm) free(cm_run);
    if (!rc && loss && d->labelled && d->n) *loss = nll / (double)d->n;
    return rc;
}

// --- epochs

/* Epoch order from its seed: a Fisher-Yates shuffle of 0..n-1. */
static void shuffle(uint32_t *order, size_t n, uint64_t seed)
{
    nlp_rng r;
    nlp_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)nlp_rng_below(&r, i);
        uint32_t tmp = order[i - 1];
        order[i - 1] = order[j], order[j] = tmp;
    }
}

int nlp_epochs_init(nlp_epochs *e, size_t n, const char *what)
{
    memset(e, 0, sizeof *e);
    if (!n) return nlp_error(NLP_EDATA, "no %s", what);
    if (n > UINT32_MAX) return nlp_error(NLP_EDATA, "more than %u %s", (unsigned)UINT32_MAX, what);
    e->n = n;
    return (e->order = nlp_malloc(n * sizeof *e->order)) ? 0 : NLP_ENOMEM;
}

int nlp_epochs_next(nlp_epochs *e, nlp_rng *r, int B, const uint32_t **ex)
{
    if (!e->epoch || e->pos >= e->n) {
        e->epoch++;
        e->pos = 0;
        e->seed = nlp_rng_u64(r);
        shuffle(e->order, e->n, e->seed);
    }
    int k = e->n - e->pos < (size_t)B ? (int)(e->n - e->pos) : B;
    *ex = e->order + e->pos;
    e->pos += (uint64_t)k;
    return k;
}

void nlp_epochs_get_state(const nlp_epochs *e, uint64_t s[4])
{
    s[0] = e->epoch, s[1] = e->pos, s[2] = e->seed, s[3] = e->n;
}

int nlp_epochs_set_state(nlp_epochs *e, const uint64_t s[4], const char *what)
{
    if (s[3] != e->n)
        return nlp_error(NLP_EDATA, "the checkpoint was trained on %llu %s, the training data has %zu: "
                         "resume with the same data", (unsigned long long)s[3], what, e->n);
    if (s[1] > s[3]) return nlp_error(NLP_EFORMAT, "the checkpoint's data position %llu is beyond its %llu %s",
                                      (unsigned long long)s[1], (unsigned long long)s[3], what);
    e->epoch = s[0], e->pos = s[1], e->seed = s[2];
    if (e->epoch) shuffle(e->order, e->n, e->seed);
    return 0;
}

void nlp_epochs_free(nlp_epochs *e)
{
    free(e->order);
    memset(e, 0, sizeof *e);
}

// --- the training task

static int cls_next(void *ctx, nlp_rng *r, nlp_batch *b)
{
    nlp_cls_task *t = ctx;
    const uint32_t *ex;
    int k = nlp_epochs_next(&t->ep, r, t->B, &ex);
    return fill(t->buf, &t->enc, t->train, ex, 0, k, 1, b);
}

static void cls_get_state(void *ctx, uint64_t s[4])
{
    nlp_cls_task *t = ctx;
    nlp_epochs_get_state(&t->ep, s);
}

static int cls_set_state(void *ctx, const uint64_t s[4])
{
    nlp_cls_task *t = ctx;
    return nlp_epochs_set_state(&t->ep, s, "examples");
}

static int cls_eval(void *ctx, nlp_model *m, nlp_eval *out)
{
    nlp_cls_task *t = ctx;
    for (int i = 0; i < NLP_TRAIN_MAX_METRICS; i++) out->v[i] = NAN;
    memset(t->cm, 0, (size_t)t->L * t->L * sizeof *t->cm);
    double loss;
    int rc = nlp_cls_predict(m, &t->enc, t->valid, t->B, NULL, NULL, NULL, t->cm, &loss);
    if (rc) return rc;
    uint64_t n = 0, ok = 0;
    for (int g = 0; g < t->L; g++)
        for (int p = 0; p < t->L; p++) {
            n += t->cm[(size_t)g * t->L + p];
            if (g == p) ok += t->cm[(size_t)g * t->L + p];
        }
    out->v[0] = loss;
    out->v[1] = n ? (double)ok / (double)n : NAN;
    if (t->macro_f1) out->v[2] = t->macro_f1(t->cm, t->L, NULL);
    return 0;
}

/* Figure 0 is the loss: the loop falls back on it (lower better) when the
 * best figure is NaN. */
static const char *const cls_names[] = {"loss", "accuracy", "macro_f1", NULL};

int nlp_cls_task_init(nlp_cls_task *t, nlp_task *task, const nlp_cls_data *train, const nlp_cls_data *valid,
                      const nlp_cls_encoder *e, const nlp_model_config *cfg, int B)
{
    memset(t, 0, sizeof *t);
    int rc;
    if (B < 1) return nlp_error(NLP_EINVAL, "a batch needs at least 1 example, not %d", B);
    if (!train->labelled) return nlp_error(NLP_EDATA, "the training data has no labels");
    if (!train->n) return nlp_error(NLP_EDATA, "the training data holds no example");
    if (train->n > UINT32_MAX) return nlp_error(NLP_EDATA, "more than %u training examples", (unsigned)UINT32_MAX);
    if (valid) {
        if (!valid->labelled) return nlp_error(NLP_EDATA, "the validation data has no labels");
        if (!valid->n) return nlp_error(NLP_EDATA, "the validation data holds no example");
        if (valid->pair != train->pair)
            return nlp_error(NLP_EDATA, "the training data has %s per example, the validation data %s",
                             train->pair ? "two texts" : "one text", valid->pair ? "two" : "one");
    }
    if ((rc = encoder_check(e)) || (rc = check_model(cfg, e, train)) || (valid && (rc = check_model(cfg, e, valid))))
        return rc;
    if (e->kind == NLP_CLS_BERT && train->pair && cfg->type_vocab_size < 2)
        return nlp_error(NLP_EINVAL, "pairs of texts need 2 token types, the model has %d", cfg->type_vocab_size);
    t->train = train, t->valid = valid, t->enc = *e, t->B = B, t->L = cfg->num_labels;
    if ((rc = nlp_epochs_init(&t->ep, train->n, "training examples"))) return rc;
    if (!(t->buf = batch_buf(e, B, e->T)) || !(t->cm = nlp_calloc((size_t)t->L * t->L, sizeof *t->cm))) {
        nlp_cls_task_free(t);
        return NLP_ENOMEM;
    }
    memset(task, 0, sizeof *task);
    task->ctx = t;
    task->next_batch = cls_next;
    task->evaluate = valid ? cls_eval : NULL;
    task->eval_names = cls_names;
    task->best_metric = 1, task->higher_is_better = 1;
    task->get_state = cls_get_state;
    task->set_state = cls_set_state;
    return 0;
}

void nlp_cls_task_free(nlp_cls_task *t)
{
    nlp_epochs_free(&t->ep);
    free(t->buf), free(t->cm);
    memset(t, 0, sizeof *t);
}
