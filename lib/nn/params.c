/*
 * params.c — parameter arena, gradients, safetensors load/save. See params.h.
 */
#include "nn/params.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/mem.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nlp_params {
    nlp_param_info *t;
    size_t n, cap;
    size_t total;
    float *data, *grad;
    uint8_t *lazy;  /* [n]: gradient marked zero, not yet written (nlp_params_zero_grad_lazy) */
    size_t nlazy;   /* how many are marked */
    int data_owned;
    nlp_st *mapped; /* file holding the arena when loaded in place */
    nlp_strmap *index;
    nlp_arena names;
};

nlp_params *nlp_params_new(void)
{
    nlp_params *p = nlp_calloc(1, sizeof *p);
    if (!p) return NULL;
    if (!(p->index = nlp_strmap_new(64))) {
        free(p);
        return NULL;
    }
    return p;
}

void nlp_params_free(nlp_params *p)
{
    if (!p) return;
    if (p->data_owned) free(p->data);
    free(p->grad);
    free(p->lazy);
    nlp_st_close(p->mapped);
    nlp_strmap_free(p->index);
    nlp_arena_free(&p->names);
    free(p->t);
    free(p);
}

int nlp_params_add(nlp_params *p, const char *name, int ndim, const int64_t *shape, int no_decay)
{
    if (p->data || p->mapped) return nlp_error(NLP_EINVAL, "parameter '%s' declared after allocation", name);
    if (ndim < 1 || ndim > NLP_PARAM_MAXDIM) return nlp_error(NLP_EINVAL, "parameter '%s': %d dimensions", name, ndim);
    if (nlp_params_find(p, name) >= 0) return nlp_error(NLP_EINVAL, "parameter '%s' declared twice", name);
    if (nlp_grow(&p->t, &p->cap, p->n + 1, sizeof *p->t)) return NLP_ENOMEM;
    nlp_param_info *t = &p->t[p->n];
    memset(t, 0, sizeof *t);
    t->ndim = ndim;
    t->numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 0) return nlp_error(NLP_EINVAL, "parameter '%s': size %lld", name, (long long)shape[i]);
        t->shape[i] = shape[i];
        t->numel *= (size_t)shape[i];
    }
    t->off = p->total;
    t->no_decay = no_decay;
    if (!(t->name = nlp_arena_strndup(&p->names, name, strlen(name)))) return NLP_ENOMEM;
    if (nlp_strmap_put(p->index, t->name, strlen(t->name), (int64_t)p->n)) return NLP_ENOMEM;
    p->total += t->numel;
    return (int)p->n++;
}

static float *alloc_floats(size_t n)
{
    void *m = NULL;
    size_t bytes = (n ? n : 1) * sizeof(float);
    bytes = (bytes + 63) & ~(size_t)63;
    if (posix_memalign(&m, 64, bytes) != 0) {
        nlp_error(NLP_ENOMEM, "out of memory (%zu bytes)", bytes);
        return NULL;
    }
    memset(m, 0, bytes);
    return m;
}

int nlp_params_alloc(nlp_params *p)
{
    if (p->data) return NLP_OK;
    if (!(p->data = alloc_floats(p->total))) return NLP_ENOMEM;
    p->data_owned = 1;
    return NLP_OK;
}

size_t nlp_params_count(const nlp_params *p) { return p->n; }
const nlp_param_info *nlp_params_info(const nlp_params *p, size_t i) { return &p->t[i]; }
size_t nlp_params_numel(const nlp_params *p) { return p->total; }
float *nlp_params_data(const nlp_params *p) { return p->data; }
float *nlp_params_grad(const nlp_params *p) { return p->grad; }
int nlp_params_is_mapped(const nlp_params *p) { return p->mapped != NULL; }

int nlp_params_find(const nlp_params *p, const char *name)
{
    int64_t i;
    return nlp_strmap_get(p->index, name, strlen(name), &i) ? (int)i : -1;
}

int nlp_params_enable_grad(nlp_params *p)
{
    if (p->grad) return NLP_OK;
    if (!(p->lazy = nlp_calloc(p->n ? p->n : 1, 1))) return NLP_ENOMEM;
    return (p->grad = alloc_floats(p->total)) ? NLP_OK : NLP_ENOMEM;
}

void nlp_params_zero_grad(nlp_params *p)
{
    if (!p->grad) return;
    memset(p->grad, 0, p->total * sizeof(float));
    memset(p->lazy, 0, p->n);
    p->nlazy = 0;
}

void nlp_params_zero_grad_lazy(nlp_params *p)
{
    if (!p->grad) return;
    memset(p->lazy, 1, p->n);
    p->nlazy = p->n;
}

/* Tensor i's gradient made true zeros, if it is marked. */
static void unmark(nlp_params *p, size_t i, int zero)
{
    if (!p->lazy[i]) return;
    if (zero) memset(p->grad + p->t[i].off, 0, p->t[i].numel * sizeof(float));
    p->lazy[i] = 0;
    p->nlazy--;
}

int nlp_params_grad_claim(nlp_params *p, size_t i, size_t n)
{
    int all = p->nlazy > 0;
    for (size_t k = i; k < i + n && all; k++) all = p->lazy[k];
    for (size_t k = i; k < i + n; k++) unmark(p, k, !all);
    return all;
}

float *nlp_params_grad_at(nlp_params *p, size_t i)
{
    if (p->nlazy) unmark(p, i, 1);
    return p->grad + p->t[i].off;
}

void nlp_params_grad_settle(nlp_params *p, size_t off)
{
    for (size_t i = 0; i < p->n && p->nlazy; i++)
        if (p->t[i].off >= off) unmark(p, i, 1);
}

/* The tensor for parameter `name`: the name itself or one of the aliases real checkpoints use. */
static const nlp_st_tensor *find_alias(const nlp_st *f, const char *name)
{
    const nlp_st_tensor *t = nlp_st_find(f, name);
    if (t) return t;
    char buf[512];
    snprintf(buf, sizeof buf, "transformer.%s", name);
    if ((t = nlp_st_find(f, buf))) return t;
    size_t n = strlen(name);
    static const char *from[] = {"LayerNorm.weight", "LayerNorm.bias"}, *to[] = {"LayerNorm.gamma", "LayerNorm.beta"};
    for (int i = 0; i < 2; i++) {
        size_t k = strlen(from[i]);
        if (n >= k && n - k + strlen(to[i]) < sizeof buf && strcmp(name + n - k, from[i]) == 0) {
            snprintf(buf, sizeof buf, "%.*s%s", (int)(n - k), name, to[i]);
            if ((t = nlp_st_find(f, buf))) return t;
        }
    }
    return NULL;
}

size_t nlp_nonfinite_index(const float *x, size_t n)
{
    /* x - x is 0 for every finite x, NaN for NaN and ±inf: one vectorised
     * pass that sums it, and only when that sum is NaN a second one to say
     * where */
    float acc = 0;
#pragma omp simd reduction(+ : acc)
    for (size_t i = 0; i < n; i++) acc += x[i] - x[i];
    if (acc == 0) return n;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return n;
}

/* NLP_EFORMAT naming the first tensor of p that holds a NaN or an infinity
 * (src: the files' tensors, for their names as the files spell them; tensor
 * i is in f[in[i]]). */
static int check_finite(const nlp_params *p, nlp_st *const *f, const size_t *in, const nlp_st_tensor *const *src)
{
    for (size_t i = 0; i < p->n; i++) {
        const size_t n = p->t[i].numel, k = nlp_nonfinite_index(p->data + p->t[i].off, n);
        if (k == n) continue;
        const float v = p->data[p->t[i].off + k];
        return nlp_error(NLP_EFORMAT, "'%s': tensor '%s' holds %s at index %zu of %zu: the model is corrupt (a "
                         "finite weight is needed everywhere)", nlp_st_path(f[in[i]]), src[i]->name,
                         isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf", k, n);
    }
    return NLP_OK;
}

int nlp_params_load(nlp_params *p, nlp_st *f) { return nlp_params_load_files(p, &f, 1); }

int nlp_params_load_files(nlp_params *p, nlp_st *const *f, size_t nf)
{
    const nlp_st_tensor **src = nlp_calloc(p->n ? p->n : 1, sizeof *src);
    size_t *in = nlp_calloc(p->n ? p->n : 1, sizeof *in); /* the file each comes from */
    int rc = src && in ? NLP_OK : NLP_ENOMEM, in_place = p->n > 0 && nf == 1;
    for (size_t i = 0; i < p->n && !rc; i++) {
        const nlp_param_info *t = &p->t[i];
        const nlp_st_tensor *s = NULL;
        for (size_t k = 0; k < nf && !s; k++)
            if ((s = find_alias(f[k], t->name))) in[i] = k;
        if (!s && nf > 1) {
            rc = nlp_error(NLP_EFORMAT, "'%s': missing tensor '%s' (in none of the %zu shards)", nlp_st_path(f[0]),
                           t->name, nf);
            break;
        }
        rc = nlp_st_expect(f[in[i]], s ? s->name : t->name, t->ndim, t->shape, &src[i]);
        if (rc) break;
        if (src[i]->dtype != NLP_DT_F32 || src[i]->begin != src[0]->begin + t->off * sizeof(float)) in_place = 0;
    }
    if (!rc && in_place && ((uintptr_t)src[0]->data & 3) == 0) {
        /* the file is this arena: use the mapping itself */
        if (p->data_owned) free(p->data);
        nlp_st_close(p->mapped);
        p->data = src[0]->data;
        p->data_owned = 0;
        p->mapped = f[0];
        rc = check_finite(p, f, in, src);
        free(src);
        free(in);
        return rc;
    }
    if (!rc) rc = nlp_params_alloc(p);
    for (size_t i = 0; i < p->n && !rc; i++) rc = nlp_st_read_f32(f[in[i]], src[i], p->data + p->t[i].off);
    if (!rc) rc = check_finite(p, f, in, src);
    free(src);
    free(in);
    for (size_t k = 0; k < nf; k++) nlp_st_close(f[k]);
    return rc;
}

int nlp_params_to_writer(const nlp_params *p, nlp_st_writer *w, const char *prefix, const float *src,
                         enum nlp_dtype dtype)
{
    char name[600];
    for (size_t i = 0; i < p->n; i++) {
        snprintf(name, sizeof name, "%s%s", prefix, p->t[i].name);
        int rc = nlp_st_writer_add(w, name, dtype, p->t[i].ndim, p->t[i].shape, src + p->t[i].off, NLP_DT_F32);
        if (rc) return rc;
    }
    return NLP_OK;
}

int nlp_params_save(const nlp_params *p, const char *path, const char *const *meta, enum nlp_dtype dtype)
{
    nlp_st_writer *w = nlp_st_writer_new();
    if (!w) return NLP_ENOMEM;
    int rc = NLP_OK;
    for (size_t i = 0; meta && meta[i] && meta[i + 1] && !rc; i += 2) rc = nlp_st_writer_meta(w, meta[i], meta[i + 1]);
    if (!rc) rc = nlp_params_to_writer(p, w, "", p->data, dtype);
    if (!rc) rc = nlp_st_writer_save(w, path);
    nlp_st_writer_free(w);
    return rc;
}
