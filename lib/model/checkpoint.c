/*
 * checkpoint.c — training checkpoints. See checkpoint.h.
 */
#include "model/checkpoint.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "model/net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

uint64_t nlp_params_layout_hash(const nlp_params *p)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < nlp_params_count(p); i++) {
        const nlp_param_info *t = nlp_params_info(p, i);
        for (const char *c = t->name; *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
        for (int d = 0; d < t->ndim; d++) h = (h ^ (uint64_t)t->shape[d]) * 0x100000001b3ull;
        h = (h ^ 0xff) * 0x100000001b3ull;
    }
    return h;
}

static int path_in(char *buf, size_t cap, const char *dir, const char *name)
{
    size_t n = strlen(dir);
    if ((size_t)snprintf(buf, cap, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name) >= cap)
        return nlp_error(NLP_EINVAL, "path too long: '%s'", dir);
    return NLP_OK;
}

int nlp_checkpoint_save(const char *dir, const nlp_model *m, const nlp_optim *o, const nlp_train_state *s)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return nlp_error_errno(NLP_EIO, "cannot create '%s'", dir);
    if (!nlp_is_dir(dir)) return nlp_error(NLP_EIO, "cannot write checkpoint '%s': not a directory", dir);
    const nlp_params *p = m->params;
    size_t n = nlp_params_numel(p);
    if (o->n != n) return nlp_error(NLP_EINVAL, "optimizer holds %zu floats, the model %zu", o->n, n);
    char path[4096], num[64], b1[40], b2[40], eps[40], wd[40], cnt[32], hash[32], ranks[16], run[24];
    int rc = path_in(path, sizeof path, dir, "train_state.safetensors");
    if (rc) return rc;
    nlp_st_writer *w = nlp_st_writer_new();
    if (!w) return NLP_ENOMEM;
    snprintf(num, sizeof num, "%ld", o->step);
    nlp_format_double(b1, sizeof b1, o->cfg.beta1);
    nlp_format_double(b2, sizeof b2, o->cfg.beta2);
    nlp_format_double(eps, sizeof eps, o->cfg.eps);
    nlp_format_double(wd, sizeof wd, o->cfg.weight_decay);
    snprintf(cnt, sizeof cnt, "%zu", n);
    snprintf(ranks, sizeof ranks, "%d", s->ranks > 1 ? s->ranks : 1);
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)nlp_params_layout_hash(p));
    const char *meta[] = {"format", "nlpipe-train-state", "version", "1", "step", num, "optimizer",
                          o->cfg.kind == NLP_OPTIM_ADAM ? "adam" : "adamw", "beta1", b1, "beta2", b2, "eps", eps,
                          "weight_decay", wd, "params", cnt, "layout", hash, "ranks", ranks, NULL};
    for (int i = 0; meta[i] && !rc; i += 2) rc = nlp_st_writer_meta(w, meta[i], meta[i + 1]);
    snprintf(run, sizeof run, "%016llx", (unsigned long long)s->run_id);
    if (!rc && s->run_id) rc = nlp_st_writer_meta(w, "run", run);
    int64_t sn[1] = {(int64_t)n}, s4[1] = {4};
    if (!rc) rc = nlp_st_writer_add(w, "optim.m", NLP_DT_F32, 1, sn, o->m, NLP_DT_F32);
    if (!rc) rc = nlp_st_writer_add(w, "optim.v", NLP_DT_F32, 1, sn, o->v, NLP_DT_F32);
    if (!rc) rc = nlp_st_writer_add(w, "rng.model", NLP_DT_U64, 1, s4, m->rng.s, NLP_DT_U64);
    if (!rc) rc = nlp_st_writer_add(w, "rng.data", NLP_DT_U64, 1, s4, s->data_rng.s, NLP_DT_U64);
    if (!rc) rc = nlp_st_writer_add(w, "data.position", NLP_DT_U64, 1, s4, s->data_position, NLP_DT_U64);
    if (!rc) rc = nlp_st_writer_add(w, "data.task", NLP_DT_U64, 1, s4, s->task_state, NLP_DT_U64);
    int64_t s8[1] = {8};
    if (!rc) rc = nlp_st_writer_add(w, "train.clock", NLP_DT_U64, 1, s8, s->clock, NLP_DT_U64);
    if (!rc) rc = nlp_st_writer_save(w, path);
    nlp_st_writer_free(w);
    if (rc) return rc;
    /* the model, with the same step */
    const char *extra[] = {"step", num, NULL};
    if (!(rc = path_in(path, sizeof path, dir, "model.safetensors"))) rc = nlp_model_save_meta(m, path, NLP_DT_F32, extra);
    return rc;
}

static int u64xn(const nlp_st *f, const char *name, int64_t n, uint64_t *dst)
{
    int64_t shape[1] = {n};
    const nlp_st_tensor *t;
    int rc = nlp_st_expect(f, name, 1, shape, &t);
    return rc ? rc : nlp_st_read_u64(f, t, dst);
}

static int u64x4(const nlp_st *f, const char *name, uint64_t *dst)
{
    return u64xn(f, name, 4, dst);
}

/* A generator's state read from a checkpoint: xoshiro256** never leaves
 * the all-zero state (every draw is 0, and a draw below n rejects for
 * ever), and no seeding gives it, so it can only come from a corrupt file. */
static int rng_state(const nlp_st *f, const char *name, uint64_t *s)
{
    int rc = u64x4(f, name, s);
    if (!rc && !(s[0] | s[1] | s[2] | s[3]))
        rc = nlp_error(NLP_EFORMAT, "'%s': tensor '%s': the random generator's state is all zeros, which no run "
                       "writes: the training state is corrupt", nlp_st_path(f), name);
    return rc;
}

/* Adam's moments: finite, and the second (a mean of squares) not negative. */
static int moments_ok(const nlp_st *f, const float *m, const float *v, size_t n)
{
    size_t k = nlp_nonfinite_index(m, n);
    const char *what = "optim.m";
    if (k == n) k = nlp_nonfinite_index(v, n), what = "optim.v";
    if (k < n)
        return nlp_error(NLP_EFORMAT, "'%s': tensor '%s' holds a non-finite value at index %zu: the training state "
                         "is corrupt", nlp_st_path(f), what, k);
    for (size_t i = 0; i < n; i++)
        if (v[i] < 0)
            return nlp_error(NLP_EFORMAT, "'%s': tensor 'optim.v' holds %g at index %zu, but Adam's second moment "
                             "is never negative: the training state is corrupt", nlp_st_path(f), (double)v[i], i);
    return NLP_OK;
}

/* The "run" metadata: 16 hex digits, or none (0). */
static int run_of(const nlp_st *f, uint64_t *id)
{
    const char *v = nlp_st_meta(f, "run");
    *id = 0;
    if (!v) return NLP_OK;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 16);
    if (errno || *end || end == v || strlen(v) != 16)
        return nlp_error(NLP_EFORMAT, "'%s': metadata 'run' is '%s', not a run id of 16 hex digits", nlp_st_path(f), v);
    *id = x;
    return NLP_OK;
}

int nlp_checkpoint_run_id(const char *dir, uint64_t *id)
{
    char path[4096];
    nlp_st *f = NULL;
    *id = 0;
    int rc = path_in(path, sizeof path, dir, "train_state.safetensors");
    if (rc || (rc = nlp_st_open(&f, path))) return rc;
    rc = run_of(f, id);
    nlp_st_close(f);
    return rc;
}

static int meta_double(const nlp_st *f, const char *key, double *out)
{
    const char *v = nlp_st_meta(f, key);
    char *end;
    if (!v || (*out = strtod(v, &end), *end) || end == v)
        return nlp_error(NLP_EFORMAT, "'%s': metadata '%s' is missing or not a number", nlp_st_path(f), key);
    return NLP_OK;
}

int nlp_checkpoint_load(const char *dir, nlp_model **out, nlp_optim *o, nlp_train_state *s)
{
    *out = NULL;
    memset(o, 0, sizeof *o);
    char path[4096];
    int rc = path_in(path, sizeof path, dir, "train_state.safetensors");
    nlp_st *f = NULL;
    if (rc || (rc = nlp_st_open(&f, path))) return rc;
    nlp_model *m = NULL;
    const char *fmt = nlp_st_meta(f, "format"), *ver = nlp_st_meta(f, "version");
    if (!fmt || strcmp(fmt, "nlpipe-train-state") != 0) {
        rc = nlp_error(NLP_EFORMAT, "'%s': not an nlpipe training state (format '%s')", path, fmt ? fmt : "none");
        goto fail;
    }
    if (!ver || strcmp(ver, "1") != 0) {
        rc = nlp_error(NLP_EFORMAT, "'%s': training state version '%s', this build reads version 1", path,
                       ver ? ver : "none");
        goto fail;
    }
    if ((rc = nlp_model_load(&m, dir))) goto fail;
    /* the pair must belong together */
    const char *step = nlp_st_meta(f, "step"), *kind = nlp_st_meta(f, "optimizer"), *lay = nlp_st_meta(f, "layout");
    char mpath[4096];
    path_in(mpath, sizeof mpath, dir, "model.safetensors");
    nlp_st *mf = NULL;
    if ((rc = nlp_st_open(&mf, mpath))) goto fail;
    /* the model's step is copied out: its header is freed with the file */
    char mstep[32];
    const char *ms = nlp_st_meta(mf, "step");
    snprintf(mstep, sizeof mstep, "%s", ms ? ms : "none");
    int same = step && ms && strcmp(step, ms) == 0;
    char *end;
    long st = step ? strtol(step, &end, 10) : -1;
    nlp_st_close(mf);
    if (!step || *end || st < 0 || st > (long)1e15) {
        rc = nlp_error(NLP_EFORMAT, "'%s': metadata 'step' is missing or not a count of steps", path);
        goto fail;
    }
    if (!same) {
        rc = nlp_error(NLP_EFORMAT, "checkpoint '%s' is inconsistent: the training state is at step %s, the model at %s",
                       dir, step, mstep);
        goto fail;
    }
    char hash[32];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)nlp_params_layout_hash(m->params));
    if (!lay || strcmp(lay, hash) != 0) {
        rc = nlp_error(NLP_EFORMAT, "'%s': the training state belongs to another model layout", path);
        goto fail;
    }
    nlp_optim_config c = nlp_optim_default();
    if (!kind || (strcmp(kind, "adamw") && strcmp(kind, "adam"))) {
        rc = nlp_error(NLP_EFORMAT, "'%s': unknown optimizer '%s'", path, kind ? kind : "none");
        goto fail;
    }
    c.kind = strcmp(kind, "adam") == 0 ? NLP_OPTIM_ADAM : NLP_OPTIM_ADAMW;
    if ((rc = meta_double(f, "beta1", &c.beta1)) || (rc = meta_double(f, "beta2", &c.beta2)) ||
        (rc = meta_double(f, "eps", &c.eps)) || (rc = meta_double(f, "weight_decay", &c.weight_decay)))
        goto fail;
    size_t n = nlp_params_numel(m->params);
    if ((rc = nlp_optim_init(o, &c, n))) goto fail;
    o->step = st;
    int64_t sn[1] = {(int64_t)n};
    const nlp_st_tensor *tm, *tv;
    if ((rc = nlp_st_expect(f, "optim.m", 1, sn, &tm)) || (rc = nlp_st_expect(f, "optim.v", 1, sn, &tv)) ||
        (rc = nlp_st_read_f32(f, tm, o->m)) || (rc = nlp_st_read_f32(f, tv, o->v)) ||
        (rc = moments_ok(f, o->m, o->v, n)) || (rc = rng_state(f, "rng.model", m->rng.s)) ||
        (rc = rng_state(f, "rng.data", s->data_rng.s)) || (rc = u64x4(f, "data.position", s->data_position)))
        goto fail;
    memset(s->task_state, 0, sizeof s->task_state);
    if (nlp_st_find(f, "data.task") && (rc = u64x4(f, "data.task", s->task_state))) goto fail;
    memset(s->clock, 0, sizeof s->clock);
    if (nlp_st_find(f, "train.clock") && (rc = u64xn(f, "train.clock", 8, s->clock))) goto fail;
    const char *rk = nlp_st_meta(f, "ranks");
    s->ranks = rk && atoi(rk) > 0 ? atoi(rk) : 1;
    if ((rc = run_of(f, &s->run_id))) goto fail;
    nlp_st_close(f);
    *out = m;
    return NLP_OK;
fail:
    nlp_st_close(f);
    nlp_model_free(m);
    nlp_optim_free(o);
    return rc;
}
