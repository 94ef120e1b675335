/*
 * parity — runs a model of the PyTorch reference fixtures through the C
 * engine and writes what the reference wrote, for compare.py
 * (shared/parity/README.md, "Checking a parity output").
 *
 *   parity [-t THREADS] FIXTURE_DIR OUT.safetensors
 *
 * FIXTURE_DIR holds model.safetensors (weights; model kind and config in the
 * metadata), inputs.safetensors (the batch) and ref.safetensors (whose
 * metadata gives the AdamW hyperparameters and the number of steps, and whose
 * stored gradients feed the isolated optimizer steps). OUT receives:
 *   logits and the losses (gpt: logits, loss; bert: mlm_logits, nsp_logits,
 *   mlm_loss, nsp_loss, loss; encdec: logits, loss, nll_loss), grad.<param>;
 *   adamw.step1.<param>: one AdamW step from the initial weights with the
 *   stored grad.<param>;
 *   loss.stepK, grad.stepK.<param>: forward and backward at the weights after
 *   step K-1; adamw.stepK.<param>: step K with the stored grad.stepK.<param>.
 *
 * Exit status: 0 ok, 1 runtime failure, 2 usage, 3 unreadable or malformed
 * fixture file (the message names the file and what is wrong).
 */
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "common/cli.h"
#include "model/model.h"
#include "nn/optim.h"
#include "nn/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *prog = "parity";

static void die(int rc)
{
    fprintf(stderr, "%s: %s\n", prog, nlp_errmsg());
    exit(nlp_exit_code(rc));
}

/* A fixture file that cannot be opened is an unreadable model/data file:
 * exit 3 (shared/CLI.md), as tokenize does for its -m. */
static void die_input(int rc) { die(rc == NLP_EIO ? NLP_EFORMAT : rc); }

static const char usage[] =
    "Usage: parity [-t THREADS] FIXTURE_DIR OUT.safetensors\n"
    "Runs a parity fixture (model, inputs, reference) through nlpipe's engine and writes\n"
    "logits, losses, gradients and AdamW steps under the reference's tensor names.\n"
    "\n"
    "  -t, --threads N   threads, 0 to 4096 (default 0: all CPUs)\n"
    "  -h, --help        display this help and exit\n"
    "  -V, --version     output version information and exit\n"
    "\n"
    "Exit status: 0 ok, 1 runtime failure, 2 usage error, 3 unreadable or malformed fixture file.\n";

/* An I32 input tensor, converted; NULL when absent and not required. With
 * ndim > 0 its shape must be `shape` (the model reads that many ids). */
static int32_t *input(const nlp_st *f, const char *name, int required, int64_t *n_out, int ndim, const int64_t *shape)
{
    const nlp_st_tensor *t = nlp_st_find(f, name);
    if (!t) {
        if (required) die(nlp_error(NLP_EFORMAT, "'%s': missing tensor '%s'", nlp_st_path(f), name));
        return NULL;
    }
    if (ndim > 0) {
        int rc = nlp_st_expect(f, name, ndim, shape, NULL);
        if (rc) die(rc);
    }
    int32_t *v = nlp_malloc((size_t)(t->numel ? t->numel : 1) * sizeof *v);
    if (!v) die(NLP_ENOMEM);
    int rc = nlp_st_read_i32(f, t, v);
    if (rc) die(rc);
    if (n_out) *n_out = t->numel;
    return v;
}

/* A numeric metadata value in [lo, hi] (hi_open: [lo, hi)); integral when asked. */
static double meta_num(const nlp_st *f, const char *key, double dflt, double lo, double hi, int hi_open, int integral)
{
    const char *s = nlp_st_meta(f, key);
    if (!s) return dflt;
    char *end;
    double v = strtod(s, &end);
    if (*end || end == s) die(nlp_error(NLP_EFORMAT, "'%s': metadata '%s' is not a number: '%s'", nlp_st_path(f), key, s));
    if (!(v >= lo && (hi_open ? v < hi : v <= hi)) || (integral && v != (double)(long)v))
        die(nlp_error(NLP_EFORMAT, "'%s': metadata '%s' must be %s in [%g, %g%s, got '%s'", nlp_st_path(f), key,
                      integral ? "an integer" : "a number", lo, hi, hi_open ? ")" : "]", s));
    return v;
}

/* Everything written goes through one writer; the data must stay alive, so copies are kept here. */
static nlp_st_writer *W;
static void **keep;
static size_t nkeep, capkeep;

static float *keep_copy(const float *src, size_t n)
{
    float *d = nlp_malloc((n ? n : 1) * sizeof *d);
    if (!d || nlp_grow(&keep, &capkeep, nkeep + 1, sizeof *keep)) die(NLP_ENOMEM);
    memcpy(d, src, n * sizeof *d);
    keep[nkeep++] = d;
    return d;
}

static void put(const char *name, int ndim, const int64_t *shape, const float *data)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    int rc = nlp_st_writer_add(W, name, NLP_DT_F32, ndim, shape, keep_copy(data, n), NLP_DT_F32);
    if (rc) die(rc);
}

static void put_scalar(const char *name, double v)
{
    float f = (float)v;
    put(name, 0, NULL, &f);
}

static void put_params(nlp_params *p, const char *prefix, const float *arena)
{
    char name[600];
    for (size_t i = 0; i < nlp_params_count(p); i++) {
        const nlp_param_info *t = nlp_params_info(p, i);
        snprintf(name, sizeof name, "%s%s", prefix, t->name);
        put(name, t->ndim, t->shape, arena + t->off);
    }
}

/* The stored gradient arena for step k (1: grad.*, k > 1: grad.stepK.*). */
static void stored_grads(const nlp_st *ref, nlp_params *p, int k, float *dst)
{
    char name[600];
    for (size_t i = 0; i < nlp_params_count(p); i++) {
        const nlp_param_info *t = nlp_params_info(p, i);
        if (k == 1) snprintf(name, sizeof name, "grad.%s", t->name);
        else snprintf(name, sizeof name, "grad.step%d.%s", k, t->name);
        const nlp_st_tensor *s;
        int rc = nlp_st_expect(ref, name, t->ndim, t->shape, &s);
        if (!rc) rc = nlp_st_read_f32(ref, s, dst + t->off);
        if (rc) die(rc);
    }
}

int main(int argc, char **argv)
{
    nlp_threads_passive(argc, argv);
    /* the tools' option layer: -t is range-checked (a huge thread count
     * overflowed OpenMP's stacks), and "-t abc" is a usage error */
    long threads = 0;
    struct cli_opt opts[] = {
        {.name = "threads", .key = 't', .kind = CLI_INT, .dest = &threads, .min = 0, .max = 4096, .flags = CLI_NOCONFIG},
        {.name = NULL},
    };
    struct cli c = {prog, usage, opts, NULL};
    int i = cli_parse(&c, argc, argv);
    if (argc - i != 2) cli_usage_error("expected FIXTURE_DIR and OUT.safetensors");
    const char *dir = argv[i], *out = argv[i + 1];
    if (threads > 0) nlp_threads_set((int)threads);
    if (!nlp_is_dir(dir)) die_input(nlp_error(NLP_EIO, "cannot open '%s': not a directory", dir));

    char path[4096];
    nlp_model *m;
    int rc = nlp_model_load(&m, dir);
    if (rc) die_input(rc);
    const nlp_model_config *cfg = nlp_model_cfg(m);
    nlp_st *in, *ref;
    snprintf(path, sizeof path, "%s/inputs.safetensors", dir);
    if ((rc = nlp_st_open(&in, path))) die_input(rc);
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    if ((rc = nlp_st_open(&ref, path))) die_input(rc);

    /* the batch */
    nlp_batch b = {0};
    const char *first = cfg->arch == NLP_ARCH_TRANSFORMER ? "tgt_in" : "input_ids";
    const nlp_st_tensor *t0 = nlp_st_find(in, first);
    if (!t0 || t0->ndim != 2)
        die(nlp_error(NLP_EFORMAT, "'%s': missing tensor '%s' of shape [B, T]", nlp_st_path(in), first));
    if (t0->shape[0] < 1 || t0->shape[0] > INT32_MAX || t0->shape[1] < 1 || t0->shape[1] > INT32_MAX)
        die(nlp_error(NLP_EFORMAT, "'%s': tensor '%s' has shape [%lld, %lld], expected a non-empty batch [B, T]",
                      nlp_st_path(in), first, (long long)t0->shape[0], (long long)t0->shape[1]));
    b.B = (int)t0->shape[0];
    b.T = (int)t0->shape[1];
    const int64_t bt[2] = {b.B, b.T};
    int64_t n;
    if (nlp_arch_is_lm(cfg->arch)) {
        b.ids = input(in, "input_ids", 1, NULL, 2, bt);
        b.labels = input(in, "labels", 1, NULL, 2, bt);
    } else if (cfg->arch == NLP_ARCH_BERT) {
        b.ids = input(in, "input_ids", 1, NULL, 2, bt);
        b.type_ids = input(in, "token_type_ids", 0, NULL, 2, bt);
        b.mask = input(in, "attention_mask", 0, NULL, 2, bt);
        b.labels = input(in, "mlm_labels", 1, NULL, 2, bt);
        b.nsp_labels = input(in, "nsp_labels", 1, &n, 0, NULL);
        if (n != b.B) die(nlp_error(NLP_EFORMAT, "'%s': nsp_labels has %lld entries, expected %d", nlp_st_path(in), (long long)n, b.B));
    } else {
        b.tgt_in = input(in, "tgt_in", 1, NULL, 2, bt);
        b.tgt_out = input(in, "tgt_out", 1, NULL, 2, bt);
        const nlp_st_tensor *s = nlp_st_find(in, "src");
        if (!s || s->ndim != 2 || s->shape[0] != b.B || s->shape[1] < 1 || s->shape[1] > INT32_MAX)
            die(nlp_error(NLP_EFORMAT, "'%s': missing tensor 'src' of shape [%d, S]", nlp_st_path(in), b.B));
        b.S = (int)s->shape[1];
        b.src = input(in, "src", 1, NULL, 0, NULL);
    }

    if (!(W = nlp_st_writer_new())) die(NLP_ENOMEM);
    nlp_params *p = nlp_model_params(m);
    const size_t np = nlp_params_numel(p);
    nlp_losses L;

    /* step 0: outputs and gradients at the fixture's weights */
    if ((rc = nlp_model_forward(m, &b, &L)) || (rc = nlp_model_backward(m))) die(rc);
    int rows, V;
    const float *logits = nlp_model_logits(m, &rows, &V);
    int64_t ls[3] = {b.B, b.T, V};
    if (cfg->arch == NLP_ARCH_BERT) {
        /* backward reused the logits buffer: run the forward again for the outputs */
        if ((rc = nlp_model_forward(m, &b, &L))) die(rc);
        logits = nlp_model_logits(m, &rows, &V);
        put("mlm_logits", 3, ls, logits);
        int64_t ns[2] = {b.B, 2};
        put("nsp_logits", 2, ns, nlp_model_nsp_logits(m));
        put_scalar("mlm_loss", L.mlm_loss);
        put_scalar("nsp_loss", L.nsp_loss);
        put_scalar("loss", L.loss);
    } else {
        if ((rc = nlp_model_forward(m, &b, &L))) die(rc);
        logits = nlp_model_logits(m, &rows, &V);
        put("logits", 3, ls, logits);
        put_scalar("loss", L.loss);
        if (cfg->arch == NLP_ARCH_TRANSFORMER) put_scalar("nll_loss", L.nll);
    }
    put_params(p, "grad.", nlp_params_grad(p));

    /* AdamW from the stored gradients, steps 1..K; between steps, our own
     * forward/backward at the new weights */
    nlp_optim_config oc = nlp_optim_default();
    oc.beta1 = meta_num(ref, "beta1", 0.9, 0, 1, 1, 0);
    oc.beta2 = meta_num(ref, "beta2", 0.999, 0, 1, 1, 0);
    oc.eps = meta_num(ref, "eps", 1e-8, 0, 1, 0, 0);
    oc.weight_decay = meta_num(ref, "wd", 0.01, 0, 1e6, 0, 0);
    double lr = meta_num(ref, "lr", 1e-3, 0, 1e6, 0, 0);
    int steps = (int)meta_num(ref, "adam_steps", 2, 0, 1000, 0, 1);
    nlp_optim opt;
    if ((rc = nlp_optim_init(&opt, &oc, np))) die(rc);
    float *g = nlp_malloc(np * sizeof *g);
    if (!g) die(NLP_ENOMEM);
    char name[64];
    for (int k = 1; k <= steps; k++) {
        if (k > 1) {
            nlp_params_zero_grad(p);
            if ((rc = nlp_model_forward(m, &b, &L)) || (rc = nlp_model_backward(m))) die(rc);
            snprintf(name, sizeof name, "loss.step%d", k);
            put_scalar(name, L.loss);
            snprintf(name, sizeof name, "grad.step%d.", k);
            put_params(p, name, nlp_params_grad(p));
        }
        stored_grads(ref, p, k, g);
        /* the reference decays every parameter: one update over the whole arena */
        nlp_adam_update(nlp_params_data(p), g, opt.m, opt.v, np, &oc, k, lr, oc.weight_decay);
        snprintf(name, sizeof name, "adamw.step%d.", k);
        put_params(p, name, nlp_params_data(p));
    }
    if ((rc = nlp_st_writer_save(W, out))) die(rc);

    nlp_st_writer_free(W);
    for (size_t k = 0; k < nkeep; k++) free(keep[k]);
    free(keep);
    free(g);
    nlp_optim_free(&opt);
    free((void *)b.ids);
    free((void *)b.labels);
    free((void *)b.type_ids);
    free((void *)b.mask);
    free((void *)b.nsp_labels);
    free((void *)b.src);
    free((void *)b.tgt_in);
    free((void *)b.tgt_out);
    nlp_st_close(in);
    nlp_st_close(ref);
    nlp_model_free(m);
    cli_free();
    return 0;
}
