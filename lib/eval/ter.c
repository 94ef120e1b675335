/*
 * ter.c — tercom tokenization and TER with shifts. See ter.h.
 *
 * Words are compared as small integers: per hypothesis/reference pair every
 * distinct word gets an id. The beam edit distance of the current
 * hypothesis is kept as a matrix (its trace gives the alignment that
 * filters shift candidates); a candidate shares its first p words with the
 * current hypothesis, so its distance starts from row p of that matrix and
 * needs only two rolling rows — the same saving sacreBLEU's prefix cache
 * makes, which never changes a result because all candidates have the same
 * length and hence the same beam.
 *
 * Only the beam is stored and computed: row i holds the cells [lo_i, hi_i)
 * (rows 0 and nh in full), every other cell is "infinite" as in sacreBLEU,
 * which fills them with 1e16. So memory is O(words x beam) and a distance
 * O(words x beam), not their square: 20,000-word lines need 10 MB, not
 * 3.5 GB.
 */
#include "eval/ter.h"
#include "base/err.h"
#include "eval/ngram.h"
#include "eval/pystr.h"
#include "eval/tok13a.h"
#include "text/utf8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SHIFT_SIZE 10
#define MAX_SHIFT_DIST 50
#define BEAM_WIDTH 25
#define MAX_SHIFT_CANDIDATES 1000
#define INF ((int64_t)10000000000000000LL) /* sacreBLEU's int(1e16) */

enum { OP_NOP = ' ', OP_SUB = 's', OP_INS = 'i', OP_DEL = 'd', OP_UNDEF = 'x' };

double nlp_ter_compute(const double *stats)
{
    double edits = stats[0], len = stats[1];
    if (len > 0) return 100 * (edits / len);
    return edits > 0 ? 100 * 1.0 : 100 * 0.0;
}

// --- tokenizer

static int is_asian_split(int32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x31C0 && c <= 0x31EF) ||
           (c >= 0x2E80 && c <= 0x2EFF) || (c >= 0x3300 && c <= 0x33FF) || (c >= 0xF900 && c <= 0xFAFF) ||
           (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0x3200 && c <= 0x3F22);
}

static int is_asian_punct(int32_t c)
{
    return c == 0x3001 || c == 0x3002 || (c >= 0x3008 && c <= 0x3011) || (c >= 0x3014 && c <= 0x301F) ||
           (c >= 0xFF61 && c <= 0xFF65) || c == 0x30FB;
}

static int is_fullwidth_punct(int32_t c)
{
    return c == 0xFF0E || c == 0xFF0C || c == 0xFF1F || c == 0xFF1A || c == 0xFF1B || c == 0xFF01 ||
           c == 0xFF02 || c == 0xFF08 || c == 0xFF09;
}

/* Rewrites buf: mode 0 puts spaces around the characters of `pick`, mode 1
 * deletes them. */
static int per_char(nlp_buf *buf, nlp_buf *tmp, int (*pick)(int32_t), int mode)
{
    nlp_buf_reset(tmp);
    if (nlp_buf_reserve(tmp, 3 * buf->len + 1)) return NLP_ENOMEM;
    size_t i = 0;
    while (i < buf->len) {
        size_t j = i;
        int32_t c = nlp_utf8_next(buf->data, buf->len, &j);
        int hit = pick(c);
        if (!hit) {
            memcpy(tmp->data + tmp->len, buf->data + i, j - i);
            tmp->len += j - i;
        } else if (mode == 0) {
            tmp->data[tmp->len++] = ' ';
            memcpy(tmp->data + tmp->len, buf->data + i, j - i);
            tmp->len += j - i;
            tmp->data[tmp->len++] = ' ';
        }
        i = j;
    }
    tmp->data[tmp->len] = 0;
    nlp_buf t = *buf;
    *buf = *tmp;
    *tmp = t;
    return NLP_OK;
}

static int asian_split(int32_t c) { return is_asian_split(c) || is_asian_punct(c) || is_fullwidth_punct(c); }
static int asian_remove(int32_t c) { return is_asian_punct(c) || is_fullwidth_punct(c); }
static int western_remove(int32_t c) { return c < 0x80 && c && strchr(".,?:;!\"()", (int)c); }

int nlp_ter_tokenize(const nlp_ter_params *p, const char *s, size_t n, nlp_buf *out, nlp_buf *tmp)
{
    nlp_buf a = {0};
    int rc = NLP_OK;
    n = nlp_py_rstrip(s, n);
    if (n == 0) return nlp_buf_reserve(out, 1);
    if (!p->case_sensitive) rc = nlp_py_lower(s, n, &a);
    else rc = nlp_buf_append(&a, s, n);
    if (!rc && p->normalized) {
        nlp_buf b = {0};
        rc = nlp_buf_putc(&b, ' ');
        if (!rc) rc = nlp_tok13a_unescape(a.data, a.len, &b);
        if (!rc) rc = nlp_buf_putc(&b, ' ');
        if (!rc) rc = nlp_tok13a_western(&b, tmp, 1);
        /* tokenizer_ter's Hiragana/Katakana rules are anchored at the start
         * of the string, which normalization has just padded with a space:
         * they never match, and are left out. */
        if (!rc && p->asian_support) rc = per_char(&b, tmp, asian_split, 0);
        nlp_buf_free(&a);
        a = b;
    }
    if (!rc && p->no_punct) {
        rc = per_char(&a, tmp, western_remove, 1);
        if (!rc && p->asian_support) rc = per_char(&a, tmp, asian_remove, 1);
    }
    if (!rc) rc = nlp_tok_join(a.data, a.len, out);
    nlp_buf_free(&a);
    return rc;
}

// --- edit distance with shifts

struct nlp_ter {
    nlp_ter_params p;
    nlp_buf htext, rtext, tmp;
    nlp_units hu, ru;
    uint32_t *map;
    size_t map_cap;
    int *hid, *rid;
    size_t id_cap;
    /* edit distance state for the current reference */
    const int *ref;
    int nr, nh;
    double ratio;
    int beam;
    int64_t *cost; /* row i: the cells [rlo[i], rhi[i]) at cost + roff[i] */
    char *op;
    size_t mat_cap;
    int *rlo, *rhi;
    size_t *roff, rows_cap;
    int64_t *row0, *row1;
    char *rop0, *rop1;
    size_t row_cap;
    int *cur, *cand, *best_words;
    char *trace;
    int *align, *herr, *rerr;
    size_t w_cap;
};

nlp_ter *nlp_ter_new(const nlp_ter_params *p)
{
    nlp_ter *t = nlp_calloc(1, sizeof *t);
    if (t) t->p = *p;
    return t;
}

void nlp_ter_free(nlp_ter *t)
{
    if (!t) return;
    nlp_buf_free(&t->htext);
    nlp_buf_free(&t->rtext);
    nlp_buf_free(&t->tmp);
    nlp_units_free(&t->hu);
    nlp_units_free(&t->ru);
    free(t->map);
    free(t->hid);
    free(t->rid);
    free(t->cost);
    free(t->op);
    free(t->rlo);
    free(t->rhi);
    free(t->roff);
    free(t->row0);
    free(t->row1);
    free(t->rop0);
    free(t->rop1);
    free(t->cur);
    free(t->cand);
    free(t->best_words);
    free(t->trace);
    free(t->align);
    free(t->herr);
    free(t->rerr);
    free(t);
}

/* Row bounds of the beam for row i (rows 0 and nh are whole). */
static void beam_bounds(const nlp_ter *t, int i, int *lo, int *hi)
{
    if (i == 0) {
        *lo = 0, *hi = t->nr + 1;
        return;
    }
    int pd = (int)floor(i * t->ratio);
    *lo = pd - t->beam > 0 ? pd - t->beam : 0;
    *hi = pd + t->beam < t->nr + 1 ? pd + t->beam : t->nr + 1;
    if (i == t->nh) *hi = t->nr + 1;
}

/* Cell j of a stored row [lo, hi), or infinite outside it. */
static inline int64_t cell(const int64_t *row, int lo, int hi, int j) { return j >= lo && j < hi ? row[j - lo] : INF; }

/* Computes row i (cur, cop: its cells [lo_i, hi_i)) from row i-1 (prev,
 * cells [plo, phi)) for hypothesis words h. */
static void ed_row(const nlp_ter *t, const int *h, int i, const int64_t *prev, int plo, int phi, int64_t *cur,
                   char *cop)
{
    int lo = t->rlo[i], hi = t->rhi[i];
    for (int j = lo; j < hi; j++) {
        int64_t *cj = cur + (j - lo);
        char *oj = cop + (j - lo);
        *cj = INF;
        *oj = OP_UNDEF;
        if (j == 0) {
            *cj = cell(prev, plo, phi, 0) + 1;
            *oj = OP_DEL;
            continue;
        }
        int same = h[i - 1] == t->ref[j - 1];
        int64_t c = cell(prev, plo, phi, j - 1) + (same ? 0 : 1);
        if (*cj > c) {
            *cj = c;
            *oj = same ? OP_NOP : OP_SUB;
        }
        c = cell(prev, plo, phi, j) + 1;
        if (*cj > c) {
            *cj = c;
            *oj = OP_DEL;
        }
        c = (j - 1 >= lo ? cj[-1] : INF) + 1;
        if (*cj > c) {
            *cj = c;
            *oj = OP_INS;
        }
    }
}

/* The whole (banded) matrix for hypothesis h (t->nh words); returns the distance. */
static int64_t ed_full(nlp_ter *t, const int *h)
{
    for (int j = 0; j <= t->nr; j++) {
        t->cost[j] = j;
        t->op[j] = OP_INS;
    }
    for (int i = 1; i <= t->nh; i++)
        ed_row(t, h, i, t->cost + t->roff[i - 1], t->rlo[i - 1], t->rhi[i - 1], t->cost + t->roff[i],
               t->op + t->roff[i]);
    return t->cost[t->roff[t->nh] + (size_t)(t->nr - t->rlo[t->nh])];
}

/* Distance of a candidate h that equals the current hypothesis in its first
 * p words: continues from row p of the matrix. */
static int64_t ed_from(nlp_ter *t, const int *h, int p)
{
    if (p >= t->nh) return t->cost[t->roff[t->nh] + (size_t)(t->nr - t->rlo[t->nh])];
    const int64_t *prev = t->cost + t->roff[p];
    int plo = t->rlo[p], phi = t->rhi[p];
    int64_t *a = t->row0, *b = t->row1;
    for (int i = p + 1; i <= t->nh; i++) {
        ed_row(t, h, i, prev, plo, phi, a, t->rop0);
        prev = a, plo = t->rlo[i], phi = t->rhi[i];
        int64_t *x = a;
        a = b;
        b = x;
    }
    return prev[t->nr - plo];
}

/* Trace of the full matrix, then the alignment of the flipped trace
 * (sacreBLEU's _flip_trace + trace_to_alignment). */
static void alignment(nlp_ter *t)
{
    size_t len = 0;
    int i = t->nh, j = t->nr;
    while (i > 0 || j > 0) {
        char o = j >= t->rlo[i] && j < t->rhi[i] ? t->op[t->roff[i] + (size_t)(j - t->rlo[i])] : OP_UNDEF;
        t->trace[len++] = o;
        if (o == OP_NOP || o == OP_SUB) i--, j--;
        else if (o == OP_INS) j--;
        else if (o == OP_DEL) i--;
        else NLP_ASSERT(!"undefined edit operation on the trace");
    }
    int ph = -1, pr = -1;
    while (len > 0) {
        char o = t->trace[--len]; /* forward order */
        if (o == OP_NOP || o == OP_SUB) {
            ph++, pr++;
            t->align[pr] = ph;
            t->herr[ph] = t->rerr[pr] = o == OP_SUB;
        } else if (o == OP_DEL) { /* flipped: an insertion into the hypothesis */
            ph++;
            t->herr[ph] = 1;
        } else { /* OP_INS flipped: a deletion */
            pr++;
            t->align[pr] = ph;
            t->rerr[pr] = 1;
        }
    }
}

/* sacreBLEU's _perform_shift with Python's slice clamping. */
static void perform_shift(const int *w, int n, int start, int len, int target, int *out)
{
    int k = 0;
#define COPY(a, b)                                                                                 \
    do {                                                                                           \
        int a_ = (a) < 0 ? 0 : (a) > n ? n : (a), b_ = (b) < 0 ? 0 : (b) > n ? n : (b);            \
        for (int q = a_; q < b_; q++) out[k++] = w[q];                                             \
    } while (0)
    if (target < start) {
        COPY(0, target);
        COPY(start, start + len);
        COPY(target, start);
        COPY(start + len, n);
    } else if (target > start + len) {
        COPY(0, start);
        COPY(start + len, target);
        COPY(start, start + len);
        COPY(target, n);
    } else {
        COPY(0, start);
        COPY(start + len, len + target);
        COPY(start, start + len);
        COPY(len + target, n);
    }
#undef COPY
}

/* Sizes the matrix for nh x nr words (t->ratio and t->beam set): the row
 * bounds and offsets, the cells, the rolling rows. */
static int grow_ter(nlp_ter *t, int nh, int nr)
{
    if ((size_t)nh + 1 > t->rows_cap) {
        free(t->rlo), free(t->rhi), free(t->roff);
        t->rlo = nlp_malloc(((size_t)nh + 1) * sizeof *t->rlo);
        t->rhi = nlp_malloc(((size_t)nh + 1) * sizeof *t->rhi);
        t->roff = nlp_malloc(((size_t)nh + 2) * sizeof *t->roff);
        t->rows_cap = (size_t)nh + 1;
        if (!t->rlo || !t->rhi || !t->roff) {
            t->rows_cap = 0;
            return NLP_ENOMEM;
        }
    }
    size_t mat = 0, widest = 0;
    for (int i = 0; i <= nh; i++) {
        beam_bounds(t, i, &t->rlo[i], &t->rhi[i]);
        size_t w = (size_t)(t->rhi[i] - t->rlo[i]);
        t->roff[i] = mat;
        mat += w;
        if (w > widest) widest = w;
    }
    if (mat > t->mat_cap) {
        /* Past half of the machine's memory the kernel would kill the
         * process instead of failing the allocation, so stop here with a
         * message instead (with the beam, only for lines of many millions
         * of words). */
        double need = (double)mat * (sizeof *t->cost + 1);
        long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
        if (pages > 0 && psize > 0 && need > 0.5 * (double)pages * (double)psize)
            return nlp_error(NLP_ENOMEM,
                             "TER of a %d-word hypothesis against a %d-word reference needs %.1f GiB, more "
                             "than half of this machine's memory; split such long lines",
                             nh, nr, need / (1u << 30));
        int64_t *c = realloc(t->cost, mat * sizeof *c);
        if (c) t->cost = c;
        char *o = realloc(t->op, mat);
        if (o) t->op = o;
        if (!c || !o) return nlp_error(NLP_ENOMEM, "out of memory (TER matrix of %zu cells)", mat);
        t->mat_cap = mat;
    }
    size_t row = widest;
    if (row > t->row_cap) {
        free(t->row0), free(t->row1), free(t->rop0), free(t->rop1);
        t->row0 = nlp_malloc(row * sizeof *t->row0);
        t->row1 = nlp_malloc(row * sizeof *t->row1);
        t->rop0 = nlp_malloc(row);
        t->rop1 = nlp_malloc(row);
        t->row_cap = row;
        if (!t->row0 || !t->row1 || !t->rop0 || !t->rop1) {
            t->row_cap = 0;
            return NLP_ENOMEM;
        }
    }
    size_t w = (size_t)nh + (size_t)nr + 2;
    if (w > t->w_cap) {
        free(t->cur), free(t->cand), free(t->best_words), free(t->trace), free(t->align), free(t->herr),
            free(t->rerr);
        t->cur = nlp_malloc(w * sizeof(int));
        t->cand = nlp_malloc(w * sizeof(int));
        t->best_words = nlp_malloc(w * sizeof(int));
        t->trace = nlp_malloc(w);
        t->align = nlp_malloc(w * sizeof(int));
        t->herr = nlp_malloc(w * sizeof(int));
        t->rerr = nlp_malloc(w * sizeof(int));
        t->w_cap = w;
        if (!t->cur || !t->cand || !t->best_words || !t->trace || !t->align || !t->herr || !t->rerr) {
            t->w_cap = 0;
            return NLP_ENOMEM;
        }
    }
    return NLP_OK;
}

long nlp_ter_edits(nlp_ter *t, const int *hyp, int nh, const int *ref, int nr)
{
    if (nr == 0) return nh;
    t->ref = ref;
    t->nr = nr;
    t->nh = nh;
    t->ratio = nh ? (double)nr / nh : 1.0;
    t->beam = BEAM_WIDTH < t->ratio / 2 ? (int)ceil(t->ratio / 2 + BEAM_WIDTH) : BEAM_WIDTH;
    if (grow_ter(t, nh, nr)) return -1;
    memcpy(t->cur, hyp, (size_t)nh * sizeof *hyp);

    long shifts = 0;
    int checked = 0;
    for (;;) {
        /* _shift: the best shift of t->cur */
        int64_t pre = ed_full(t, t->cur);
        alignment(t);
        int have = 0, b_len = 0, b_start = 0, b_idx = 0;
        int64_t b_gain = 0;
        const int *w = t->cur;
        for (int sh = 0; sh < nh && checked < MAX_SHIFT_CANDIDATES; sh++) {
            /* only |sr - sh| <= MAX_SHIFT_DIST, in the same order */
            int sr0 = sh - MAX_SHIFT_DIST > 0 ? sh - MAX_SHIFT_DIST : 0;
            int sr1 = sh + MAX_SHIFT_DIST + 1 < nr ? sh + MAX_SHIFT_DIST + 1 : nr;
            for (int sr = sr0; sr < sr1 && checked < MAX_SHIFT_CANDIDATES; sr++) {
                for (int len = 1; len <= MAX_SHIFT_SIZE && w[sh + len - 1] == ref[sr + len - 1]; len++) {
                    /* candidate (sh, sr, len) */
                    int herr = 0, rerr = 0;
                    for (int q = 0; q < len; q++) herr += t->herr[sh + q], rerr += t->rerr[sr + q];
                    if (herr && rerr && !(sh <= t->align[sr] && t->align[sr] < sh + len)) {
                        int prev_idx = -1;
                        for (int off = -1; off < len; off++) {
                            int idx = sr + off == -1 ? 0 : t->align[sr + off] + 1;
                            if (idx == prev_idx) continue;
                            prev_idx = idx;
                            perform_shift(w, nh, sh, len, idx, t->cand);
                            int p = 0;
                            while (p < nh && t->cand[p] == w[p]) p++;
                            int64_t gain = pre - ed_from(t, t->cand, p);
                            checked++;
                            if (!have || gain > b_gain ||
                                (gain == b_gain && (len > b_len || (len == b_len && (-sh > -b_start ||
                                                    (-sh == -b_start && -idx > -b_idx)))))) {
                                have = 1;
                                b_gain = gain, b_len = len, b_start = sh, b_idx = idx;
                            }
                        }
                    }
                    /* sacreBLEU checks the candidate limit after each pair's
                     * offsets, and stops the pair's extension when a
                     * sequence is used up */
                    if (checked >= MAX_SHIFT_CANDIDATES) break;
                    if (nh == sh + len || nr == sr + len) break;
                }
            }
        }
        if (checked >= MAX_SHIFT_CANDIDATES) break;
        if (!have || b_gain <= 0) break;
        shifts++;
        perform_shift(w, nh, b_start, b_len, b_idx, t->best_words);
        memcpy(t->cur, t->best_words, (size_t)nh * sizeof(int));
    }
    return shifts + (long)ed_full(t, t->cur);
}

// --- segments

/* Word ids for hyp units and ref units: equal words, equal ids. */
static int word_ids(nlp_ter *t, const nlp_units *h, const nlp_units *r)
{
    size_t total = h->n + r->n, size = 16;
    while (size < 2 * total) size *= 2;
    if (size > t->map_cap) {
        free(t->map);
        t->map = nlp_malloc(size * sizeof *t->map);
        if (!t->map) {
            t->map_cap = 0;
            return NLP_ENOMEM;
        }
        t->map_cap = size;
    }
    if (total + 1 > t->id_cap) {
        free(t->hid), free(t->rid);
        t->hid = nlp_malloc((total + 1) * sizeof(int));
        t->rid = nlp_malloc((total + 1) * sizeof(int));
        t->id_cap = total + 1;
        if (!t->hid || !t->rid) {
            t->id_cap = 0;
            return NLP_ENOMEM;
        }
    }
    memset(t->map, 0, size * sizeof *t->map); /* entry: unit index + 1 into hyp then ref */
    int next = 0;
    for (size_t k = 0; k < total; k++) {
        const nlp_unit *u = k < h->n ? &h->u[k] : &r->u[k - h->n];
        size_t s = (size_t)u->hash & (size - 1);
        int id = -1;
        while (t->map[s]) {
            size_t e = t->map[s] - 1;
            const nlp_unit *v = e < h->n ? &h->u[e] : &r->u[e - h->n];
            if (nlp_unit_eq(u, v)) {
                id = e < h->n ? t->hid[e] : t->rid[e - h->n];
                break;
            }
            s = (s + 1) & (size - 1);
        }
        if (id < 0) {
            id = next++;
            t->map[s] = (uint32_t)k + 1;
        }
        if (k < h->n) t->hid[k] = id;
        else t->rid[k - h->n] = id;
    }
    return NLP_OK;
}

int nlp_ter_segment(nlp_ter *t, const char *hyp, size_t hyp_len, const char *const *refs,
                    const size_t *ref_lens, int nrefs, double *stats)
{
    nlp_buf_reset(&t->htext);
    if (nlp_ter_tokenize(&t->p, hyp, hyp_len, &t->htext, &t->tmp) ||
        nlp_units_words(&t->hu, t->htext.data, t->htext.len))
        return NLP_ENOMEM;
    if (t->hu.n > NLP_TER_MAX_WORDS)
        return nlp_error(NLP_EDATA, "the hypothesis has %zu words, more than the %d that TER takes (its time grows "
                         "with the words times its 1,000 shift candidates): split such long lines", t->hu.n,
                         NLP_TER_MAX_WORDS);
    long best = -1;
    double lengths = 0;
    for (int r = 0; r < nrefs; r++) {
        nlp_buf_reset(&t->rtext);
        if (nlp_ter_tokenize(&t->p, refs[r], ref_lens[r], &t->rtext, &t->tmp) ||
            nlp_units_words(&t->ru, t->rtext.data, t->rtext.len))
            return NLP_ENOMEM;
        if (t->ru.n > NLP_TER_MAX_WORDS)
            return nlp_error(NLP_EDATA, "reference %d has %zu words, more than the %d that TER takes (its time grows "
                             "with the words times its 1,000 shift candidates): split such long lines", r + 1, t->ru.n,
                             NLP_TER_MAX_WORDS);
        if (word_ids(t, &t->hu, &t->ru)) return NLP_ENOMEM;
        long e = nlp_ter_edits(t, t->hid, (int)t->hu.n, t->rid, (int)t->ru.n);
        if (e < 0) return NLP_ENOMEM;
        lengths += (double)t->ru.n;
        if (best < 0 || e < best) best = e;
    }
    stats[0] = (double)best;
    stats[1] = lengths / nrefs;
    return NLP_OK;
}
