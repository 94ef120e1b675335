/*
 * model.c — the public model API over the architecture files. See model.h.
 */
#include "model/model.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/utf8.h"
#include "model/bert.h"
#include "model/encdec.h"
#include "model/gpt.h"
#include "model/net.h"
#include "nn/gemv.h"
#include "nn/embed.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* enum nlp_ft_task's names, as the metadata holds them */
static const char *const FT_TASKS[] = {"", "classify", "choice", "similarity", "span"};

static const nlp_arch_ops *ops_of(enum nlp_arch a)
{
    switch (a) {
    case NLP_ARCH_GPT: return &nlp_gpt_ops;
    case NLP_ARCH_BERT: return &nlp_bert_ops;
    case NLP_ARCH_TRANSFORMER: return &nlp_encdec_ops;
    case NLP_ARCH_LLAMA: return &nlp_gpt_ops;
    }
    return NULL;
}

/* Allocates the struct and declares the parameters (arena not yet allocated). */
static int model_build(nlp_model **out, const nlp_model_config *cfg)
{
    *out = NULL;
    int rc = nlp_model_config_validate(cfg);
    if (rc) return rc;
    nlp_model *m = nlp_calloc(1, sizeof *m);
    if (!m) return NLP_ENOMEM;
    m->cfg = *cfg;
    m->ops = ops_of(cfg->arch);
    m->tok_emb = m->pos_emb = m->type_emb = m->src_emb = m->src_pos = m->out_w = -1;
    m->emb_ln_g = m->emb_ln_b = m->mlm_ln_g = m->mlm_ln_b = m->mlm_bias = -1;
    m->stack[0].lnf_g = m->stack[0].lnf_b = m->stack[1].lnf_g = m->stack[1].lnf_b = -1;
    m->stack[0].rel = m->stack[1].rel = -1;
    m->cls = (nlp_lref){.w = -1, .b = -1};
    m->lm_weight = 0.5;
    nlp_rng_seed(&m->rng, 0);
    if (!(m->params = nlp_params_new())) rc = NLP_ENOMEM;
    if (!rc) rc = m->ops->build(m);
    if (rc) {
        nlp_model_free(m);
        return rc;
    }
    *out = m;
    return NLP_OK;
}

/* The sinusoidal table, once the weights are there: its size comes from the
 * configuration alone, so a file is checked before anything of that size is made. */
static int model_tables(nlp_model *m)
{
    const nlp_model_config *cfg = &m->cfg;
    if (cfg->arch != NLP_ARCH_TRANSFORMER || cfg->positions != NLP_POS_SINUSOIDAL) return NLP_OK;
    m->pe = nlp_malloc((size_t)cfg->max_positions * cfg->d_model * sizeof(float));
    if (!m->pe) return NLP_ENOMEM;
    nlp_sinusoid_table(m->pe, cfg->max_positions, cfg->d_model);
    return NLP_OK;
}

int nlp_model_new(nlp_model **out, const nlp_model_config *cfg, uint64_t seed)
{
    nlp_model *m;
    int rc = model_build(&m, cfg);
    if (rc) return rc;
    if ((rc = nlp_params_alloc(m->params)) || (rc = model_tables(m))) {
        nlp_model_free(m);
        return rc;
    }
    nlp_rng r;
    nlp_rng_seed(&r, seed);
    m->ops->init(m, &r);
    nlp_rng_seed(&m->rng, seed ^ 0x5eed0d0d5eed0d0dull);
    *out = m;
    return NLP_OK;
}

int nlp_model_train_memory(const nlp_model_config *cfg, int B, int T, int S, nlp_train_memory *out)
{
    memset(out, 0, sizeof *out);
    nlp_model *m;
    int rc = model_build(&m, cfg);
    if (rc) return rc;
    const uint64_t P = nlp_params_numel(m->params);
    m->infer = 0;
    uint64_t A = m->ops->layout(m, NULL, B, T, cfg->arch == NLP_ARCH_TRANSFORMER ? S : 0);
    /* relative positions: each stack's bias [H, T, S] of a training pass and
     * its gradient, on the heap beside the arena (nlp_net_relbias): the
     * encoder's over S × S, the decoder's over T × T */
    for (int i = 0; i < 2; i++)
        if (cfg->arch == NLP_ARCH_TRANSFORMER && m->stack[i].rel >= 0) {
            const uint64_t n = i == 0 ? (uint64_t)S : (uint64_t)T;
            A += 2 * (uint64_t)cfg->heads * n * n;
        }
    nlp_model_free(m);
    out->params = P * sizeof(float);
    out->grads = P * sizeof(float);
    out->optim = 2 * P * sizeof(float);
    out->acts = A * sizeof(float);
    return NLP_OK;
}

uint64_t nlp_model_act_bytes(const nlp_model *m)
{
    uint64_t n = m->act ? m->act_cap : 0;
    for (int i = 0; i < 2; i++) n += m->stack[i].pb_cap + m->stack[i].dpb_cap;
    return n * sizeof(float);
}

void nlp_model_free(nlp_model *m)
{
    if (!m) return;
    nlp_model_drop_packed(m); /* before the parameters: they count the slots */
    nlp_model_drop_int8(m);
    nlp_params_free(m->params);
    free(m->stack[0].sub);
    free(m->stack[1].sub);
    for (int i = 0; i < 2; i++) free(m->stack[i].pb), free(m->stack[i].dpb);
    free(m->pe);
    free(m->act);
    free(m->wbf);
    free(m->label_names);
    free(m->prefix);
    free(m);
}

/* "DIR/model.safetensors" for a directory, else a copy of path. */
static char *model_file(const char *path)
{
    if (!nlp_is_dir(path)) return nlp_strdup(path);
    size_t n = strlen(path);
    char *f = nlp_malloc(n + 24);
    if (f) snprintf(f, n + 24, "%s%smodel.safetensors", path, n && path[n - 1] == '/' ? "" : "/");
    return f;
}

/* The configuration of an open model file: its metadata, or config.json beside it. */
static int config_of(nlp_model_config *cfg, const nlp_st *f, const char *file)
{
    const char *yaml = nlp_st_meta(f, "nlpipe_config");
    if (yaml) {
        nlp_config c;
        char origin[600];
        snprintf(origin, sizeof origin, "%s (nlpipe_config)", file);
        int rc = nlp_config_parse(&c, yaml, strlen(yaml), origin);
        if (!rc) rc = nlp_model_config_build(cfg, NULL, &c, 1, NULL);
        nlp_config_free(&c);
        if (rc == NLP_EINVAL) rc = nlp_error_prefix(NLP_EFORMAT, "'%s'", file);
        return rc;
    }
    const char *json = nlp_st_meta(f, "config"), *kind = nlp_st_meta(f, "model");
    if (json) return nlp_model_config_from_json(cfg, kind, json, strlen(json), file);
    /* HF layout: config.json in the same directory */
    const char *slash = strrchr(file, '/');
    size_t dn = slash ? (size_t)(slash - file) + 1 : 0;
    char *cj = nlp_malloc(dn + 16);
    if (!cj) return NLP_ENOMEM;
    snprintf(cj, dn + 16, "%.*sconfig.json", (int)dn, file);
    int rc;
    if (!nlp_file_exists(cj)) {
        rc = nlp_error(NLP_EFORMAT, "'%s': no model configuration (no \"config\" in __metadata__ and no '%s')", file, cj);
    } else {
        char *text;
        size_t len;
        rc = nlp_read_file(cj, &text, &len);
        if (!rc) {
            rc = nlp_model_config_from_json(cfg, NULL, text, len, cj);
            free(text);
        }
    }
    free(cj);
    return rc;
}

/* "DIR/name" into a new string. */
static char *in_dir(const char *dir, const char *name)
{
    size_t n = strlen(dir), k = n + strlen(name) + 2;
    char *p = nlp_malloc(k);
    if (p) snprintf(p, k, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
    return p;
}

/* HF's sharded checkpoint: DIR/model.safetensors.index.json maps every
 * tensor to one of DIR's model-0000N-of-0000M.safetensors. Opens each shard
 * the map names once (*f, *nf: free them with nlp_st_close) after checking
 * that the map is an object of tensor names to file names in DIR and that
 * each shard holds the tensors the map puts in it. */
static int open_shards(const char *dir, const char *index, nlp_st ***f, size_t *nf)
{
    *f = NULL, *nf = 0;
    char *text;
    size_t len;
    int rc = nlp_read_file(index, &text, &len);
    if (rc) return rc;
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je), *wm = o ? json_object_get(o, "weight_map") : NULL;
    free(text);
    if (!o) return nlp_error(NLP_EFORMAT, "'%s': bad JSON at line %d, column %d: %s", index, je.line, je.column, je.text);
    if (!json_is_object(wm) || !json_object_size(wm)) {
        json_decref(o);
        return nlp_error(NLP_EFORMAT, "'%s': no \"weight_map\" object of tensor names to shard files", index);
    }
    const char **names = nlp_calloc(json_object_size(wm), sizeof *names);
    nlp_st **files = nlp_calloc(json_object_size(wm), sizeof *files);
    size_t n = 0;
    rc = names && files ? NLP_OK : NLP_ENOMEM;
    const char *key;
    json_t *v;
    json_object_foreach(wm, key, v) {
        if (rc) break;
        const char *fn = json_is_string(v) ? json_string_value(v) : NULL;
        if (!fn || !*fn || strchr(fn, '/') || strcmp(fn, ".") == 0 || strcmp(fn, "..") == 0) {
            rc = nlp_error(NLP_EFORMAT, "'%s': tensor '%s' maps to %s%s%s, not the name of a file beside it", index, key,
                           fn ? "'" : "", fn ? fn : "no string", fn ? "'" : "");
            break;
        }
        size_t k = 0;
        while (k < n && strcmp(names[k], fn) != 0) k++;
        if (k == n) { /* a shard not seen yet */
            char *sp = in_dir(dir, fn);
            if (!sp) {
                rc = NLP_ENOMEM;
                break;
            }
            rc = nlp_st_open(&files[n], sp);
            free(sp);
            if (rc == NLP_EIO) /* a shard the map names is missing: the checkpoint is incomplete */
                rc = nlp_error_prefix(NLP_EFORMAT, "'%s' names shard '%s'", index, fn);
            if (rc) break;
            names[n++] = fn;
        }
        if (!nlp_st_find(files[k], key))
            rc = nlp_error(NLP_EFORMAT, "'%s': tensor '%s' is not in '%s', where the map puts it", index, key, fn);
    }
    free(names);
    json_decref(o);
    if (rc) {
        for (size_t k = 0; k < n; k++) nlp_st_close(files[k]);
        free(files);
        return rc;
    }
    *f = files, *nf = n;
    return NLP_OK;
}

int nlp_model_load(nlp_model **out, const char *path)
{
    *out = NULL;
    char *file = model_file(path);
    if (!file) return NLP_ENOMEM;
    nlp_st *one = NULL, **f = &one;
    size_t nf = 1;
    int rc;
    char *index = nlp_is_dir(path) ? in_dir(path, "model.safetensors.index.json") : NULL;
    if (index && !nlp_file_exists(file) && nlp_file_exists(index)) {
        rc = open_shards(path, index, &f, &nf);
        if (!rc) { /* the configuration is config.json beside the shards */
            free(file);
            file = nlp_strdup(nlp_st_path(f[0]));
            if (!file) rc = NLP_ENOMEM;
        }
    } else {
        rc = nlp_st_open(&one, file);
    }
    free(index);
    if (rc) {
        for (size_t k = 0; f && k < nf; k++) nlp_st_close(f[k]);
        if (f != &one) free(f);
        free(file);
        return rc;
    }
    nlp_model_config cfg;
    nlp_model *m = NULL;
    if ((rc = config_of(&cfg, f[0], file)) || (rc = model_build(&m, &cfg))) {
        for (size_t k = 0; k < nf; k++) nlp_st_close(f[k]);
        if (f != &one) free(f);
        free(file);
        return rc;
    }
    /* sizes the configuration asks for beyond the file's tensors (which are
     * checked against their shapes below): the sinusoidal position table,
     * max-positions x d-model floats, is made at load; a corrupt or hostile
     * max-positions must not allocate gigabytes. Bounded by 4 times the
     * weights, and at least 64 MiB (32768 positions of 512, say) */
    if (cfg.arch == NLP_ARCH_TRANSFORMER && cfg.positions == NLP_POS_SINUSOIDAL) {
        const uint64_t table = (uint64_t)cfg.max_positions * (uint64_t)cfg.d_model * sizeof(float);
        const uint64_t weights = (uint64_t)nlp_params_numel(m->params) * sizeof(float);
        const uint64_t most = 4 * weights > ((uint64_t)64 << 20) ? 4 * weights : (uint64_t)64 << 20;
        if (table > most)
            rc = nlp_error(NLP_EFORMAT, "'%s': max-positions %d asks for a position table of %.0f MiB, more than "
                           "%.0f MiB for weights of %.1f MiB: the configuration does not fit the model", file,
                           cfg.max_positions, (double)table / (1 << 20), (double)most / (1 << 20),
                           (double)weights / (1 << 20));
    }
    const char *labels = nlp_st_meta(f[0], "labels");
    if (!rc && labels && cfg.num_labels > 0) rc = nlp_model_set_labels_text(m, labels, file);
    const char *len = nlp_st_meta(f[0], "input_length"), *texts = nlp_st_meta(f[0], "input_texts");
    if (!rc && texts) {
        char *end;
        long v = strtol(texts, &end, 10);
        if (*end || end == texts || v < 1 || v > NLP_MAX_INPUT_TEXTS)
            rc = nlp_error(NLP_EFORMAT, "'%s': input_texts '%s' is not a number of texts from 1 to %d", file, texts,
                           NLP_MAX_INPUT_TEXTS);
        else m->input_texts = (int)v;
    }
    const char *task = nlp_st_meta(f[0], "task");
    if (task && !rc) {
        int t = nlp_ft_task_from_name(task);
        if (t < 0 || (t == NLP_FT_SPAN) != (cfg.head == NLP_HEAD_SPAN))
            rc = nlp_error(NLP_EFORMAT, "'%s': task '%s' is not %s", file, task,
                           cfg.head == NLP_HEAD_SPAN ? "span (the model has a span head)"
                                                     : "classify, choice or similarity");
        else m->ft_task = t;
    }
    const char *prefix = nlp_st_meta(f[0], "prefix");
    if (prefix && !rc && (rc = nlp_model_set_prefix(m, prefix)) == NLP_EINVAL)
        rc = nlp_error_prefix(NLP_EFORMAT, "'%s': metadata 'prefix'", file);
    if (len && !rc) {
        char *end;
        long n = strtol(len, &end, 10);
        if (*end || n < 1 || n > cfg.max_positions)
            rc = nlp_error(NLP_EFORMAT, "'%s': input_length '%s' is not a number of positions from 1 to %d", file, len,
                           cfg.max_positions);
        else m->input_length = (int)n;
    }
    if (rc) {
        for (size_t k = 0; k < nf; k++) nlp_st_close(f[k]);
        if (f != &one) free(f);
        free(file);
        nlp_model_free(m);
        return rc;
    }
    rc = nlp_params_load_files(m->params, f, nf); /* consumes the files */
    if (f != &one) free(f);
    free(file);
    if (!rc) rc = model_tables(m);
    if (rc) {
        nlp_model_free(m);
        return rc;
    }
    *out = m;
    return NLP_OK;
}

int nlp_model_save(const nlp_model *m, const char *path, enum nlp_dtype dtype)
{
    return nlp_model_save_meta(m, path, dtype, NULL);
}

int nlp_model_save_meta(const nlp_model *m, const char *path, enum nlp_dtype dtype, const char *const *extra)
{
    if (m->inference_layout)
        return nlp_error(NLP_EINVAL, "a model prepared for decoding (nlp_model_set_inference_layout) cannot be saved");
    nlp_buf json = {0}, yaml = {0};
    const char *kind;
    int rc = nlp_model_config_to_json(&m->cfg, &json, &kind);
    if (!rc) rc = nlp_model_config_dump(&m->cfg, &yaml);
    char *file = rc ? NULL : model_file(path);
    if (!rc && !file) rc = NLP_ENOMEM;
    const int llama = m->cfg.arch == NLP_ARCH_LLAMA;
    const char *f32 = !rc && llama && dtype == NLP_DT_BF16 ? strstr(json.data, "\"float32\"") : NULL;
    if (f32) { /* config.json's torch_dtype says how the weights are stored */
        nlp_buf b = {0};
        if ((rc = nlp_buf_printf(&b, "%.*s\"bfloat16\"%s", (int)(f32 - json.data), json.data, f32 + 9)) == 0) {
            nlp_buf_free(&json);
            json = b;
        } else nlp_buf_free(&b);
    }
    if (!rc) {
        /* llama: HF transformers loads the file, which it accepts with format pt only */
        const char *meta[32] = {"format", llama ? "pt" : "nlpipe", "model", kind, "config", json.data,
                                "nlpipe_config", yaml.data};
        int k = 8;
        char len[16];
        if (m->label_names) meta[k++] = "labels", meta[k++] = m->label_names;
        if (m->input_length > 0) {
            snprintf(len, sizeof len, "%d", m->input_length);
            meta[k++] = "input_length", meta[k++] = len;
        }
        char texts[16];
        snprintf(texts, sizeof texts, "%d", m->input_texts);
        if (m->input_texts > 0) meta[k++] = "input_texts", meta[k++] = texts;
        if (m->ft_task > 0) meta[k++] = "task", meta[k++] = FT_TASKS[m->ft_task];
        if (m->prefix) meta[k++] = "prefix", meta[k++] = m->prefix;
        for (int i = 0; extra && extra[i] && extra[i + 1] && k < 30; i += 2) meta[k++] = extra[i], meta[k++] = extra[i + 1];
        meta[k] = NULL;
        rc = nlp_params_save(m->params, file, meta, dtype);
    }
    /* llama: HF's config.json beside a model.safetensors, so that the
     * directory (a checkpoint with its tokenizer.json) loads in HF as it is */
    const char *base = file ? strrchr(file, '/') : NULL;
    if (!rc && llama && strcmp(base ? base + 1 : file, "model.safetensors") == 0) {
        char *cj = nlp_malloc(strlen(file) + 16);
        if (!cj) rc = NLP_ENOMEM;
        else {
            snprintf(cj, strlen(file) + 16, "%.*sconfig.json", base ? (int)(base - file + 1) : 0, file);
            if (!(rc = nlp_buf_putc(&json, '\n'))) rc = nlp_write_file(cj, json.data, json.len);
            free(cj);
        }
    }
    free(file);
    nlp_buf_free(&json);
    nlp_buf_free(&yaml);
    return rc;
}

const nlp_model_config *nlp_model_cfg(const nlp_model *m) { return &m->cfg; }
nlp_params *nlp_model_params(nlp_model *m) { return m->params; }
void nlp_model_set_training(nlp_model *m, int on)
{
    m->training = on;
    if (on) nlp_model_drop_packed(m), nlp_model_drop_int8(m); /* the weights are about to change */
}
void nlp_model_seed(nlp_model *m, uint64_t seed) { nlp_rng_seed(&m->rng, seed); }
nlp_rng *nlp_model_rng(nlp_model *m) { return &m->rng; }

static int check_shape(const nlp_model *m, const nlp_batch *b)
{
    if (b->B < 1 || b->T < 1) return nlp_error(NLP_EINVAL, "empty batch (%d x %d)", b->B, b->T);
    if (m->cfg.arch == NLP_ARCH_TRANSFORMER && b->S < 1) return nlp_error(NLP_EINVAL, "empty source batch");
    const int g = nlp_batch_group(b);
    if (b->choices < 0 || (b->choices > 1 && b->pair_sum))
        return nlp_error(NLP_EINVAL, "a batch of %d choices and pair sums", b->choices);
    if (b->B % g) return nlp_error(NLP_EINVAL, "a batch of %d rows is no whole number of examples of %d rows", b->B, g);
    const int span = m->cfg.head == NLP_HEAD_SPAN;
    if (b->choices > 1 && (m->cfg.num_labels != 1 || span))
        return nlp_error(NLP_EINVAL, "multiple choice needs a head of one output, the model has %d", m->cfg.num_labels);
    if (b->pair_sum && (!nlp_arch_is_lm(m->cfg.arch) || m->cfg.num_labels <= 0))
        return nlp_error(NLP_EINVAL, "pair sums are gpt's similarity head: the model is a %s %s", nlp_arch_name(m->cfg.arch),
                         m->cfg.num_labels > 0 ? "classifier" : "without a classification head");
    if ((b->span_start || b->span_end || b->span_mask) && !span)
        return nlp_error(NLP_EINVAL, "span positions for a model without a span head");
    if (!b->span_start != !b->span_end) return nlp_error(NLP_EINVAL, "span start positions without end positions");
    if (span && (b->cls_labels || g > 1)) return nlp_error(NLP_EINVAL, "class labels or groups for a span head");
    return NLP_OK;
}

/* Lays the activation arena out for (B, T, S), growing it when needed. */
static int ensure_layout(nlp_model *m, int B, int T, int S, int infer)
{
    m->infer = infer;
    size_t need = m->ops->layout(m, NULL, B, T, S);
    if (need > m->act_cap) {
        free(m->act);
        m->act = NULL;
        m->act_cap = 0;
        void *p = NULL;
        if (posix_memalign(&p, 64, need * sizeof(float)) != 0)
            return nlp_error(NLP_ENOMEM, "out of memory (activations, %zu MiB)", need * sizeof(float) >> 20);
        m->act = p;
        m->act_cap = need;
    }
    m->ops->layout(m, m->act, B, T, S);
    m->B = B;
    m->T = T;
    m->S = S;
    return NLP_OK;
}

int nlp_model_forward(nlp_model *m, const nlp_batch *b, nlp_losses *out)
{
    nlp_losses dummy;
    if (!out) out = &dummy;
    memset(out, 0, sizeof *out);
    m->have_loss = 0;
    m->logits_grad = 0;
    int rc = check_shape(m, b);
    if (!rc) rc = m->ops->check(m, b);
    if (rc) return rc;
    int S = m->cfg.arch == NLP_ARCH_TRANSFORMER ? b->S : 0;
    if ((rc = ensure_layout(m, b->B, b->T, S, 0))) return rc;
    m->pass_seed = 0;
    if (m->training && (m->cfg.dropout > 0 || m->cfg.attention_dropout > 0)) m->pass_seed = nlp_rng_u64(&m->rng);
    m->row0 = b->row0;
    return m->ops->forward(m, b, out);
}

int nlp_model_backward(nlp_model *m)
{
    if (!m->have_loss) return nlp_error(NLP_EINVAL, "backward without a forward pass that computed a loss");
    int rc = nlp_params_enable_grad(m->params);
    if (rc) return rc;
    m->have_loss = 0;
    rc = m->ops->backward(m);
    nlp_params_grad_settle(m->params, 0); /* gradients nothing wrote are zeros */
    return rc;
}

/* W[in,out] → W[out,in] in place (tmp holds in·out floats). */
static void transpose_lref(nlp_model *m, nlp_lref *r, float *tmp)
{
    if (r->w < 0 || r->layout != NLP_W_IN_OUT) return;
    float *w = nlp_params_at(m->params, (size_t)r->w);
    const size_t in = (size_t)r->in, out = (size_t)r->out;
    memcpy(tmp, w, in * out * sizeof *tmp);
    for (size_t o = 0; o < out; o++)
        for (size_t i = 0; i < in; i++) w[o * in + i] = tmp[i * out + o];
    r->layout = NLP_W_OUT_IN;
}

int nlp_model_set_inference_layout(nlp_model *m)
{
    if (m->inference_layout) return 0;
    size_t big = 0;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < m->stack[s].n; i++) {
            const nlp_sub *u = &m->stack[s].sub[i];
            const nlp_lref *l[] = {&u->qkv, &u->q, &u->k, &u->v, &u->o, &u->fc1, &u->up, &u->fc2};
            for (size_t j = 0; j < sizeof l / sizeof *l; j++)
                if (l[j]->w >= 0 && (size_t)l[j]->in * (size_t)l[j]->out > big) big = (size_t)l[j]->in * l[j]->out;
        }
    float *tmp = big ? nlp_malloc(big * sizeof *tmp) : NULL;
    if (big && !tmp) return NLP_ENOMEM;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < m->stack[s].n; i++) {
            nlp_sub *u = &m->stack[s].sub[i];
            nlp_lref *l[] = {&u->qkv, &u->q, &u->k, &u->v, &u->o, &u->fc1, &u->up, &u->fc2};
            for (size_t j = 0; j < sizeof l / sizeof *l; j++) transpose_lref(m, l[j], tmp);
        }
    free(tmp);
    m->inference_layout = 1;
    if (m->wpk) { /* the packed copies follow the new layout */
        nlp_model_drop_packed(m);
        int rc = nlp_model_pack_weights(m);
        if (rc) return rc;
    }
    if (m->wbf) return nlp_model_set_inference_bf16(m); /* the copy follows the new layout */
    return 0;
}

// --- int8 weights

/* Quantizes the N×K matrix at parameter i (and those after it) into its
 * slot; a weight that is not finite makes the model unusable in int8:
 * NLP_EFORMAT naming the tensor. */
static int q8_param(nlp_model *m, int i, int N, int K)
{
    int rc = nlp_q8_quantize(&m->wq8[i], nlp_net_w(m, i), N, K, K);
    if (rc == NLP_EDATA)
        return nlp_error_prefix(NLP_EFORMAT, "tensor '%s' (int8)", nlp_params_info(m->params, (size_t)i)->name);
    return rc;
}

/* Quantizes the n adjacent layers starting at l[0] (or l[0] alone) into its slot. */
static int q8_lref(nlp_model *m, const nlp_lref *l, int n)
{
    if (l->w < 0 || l->in <= 0 || l->out <= 0 || m->wq8[l->w].q) return 0;
    if (l->layout != NLP_W_OUT_IN) return 0; /* not after the inference layout: stays fp32 */
    return q8_param(m, l->w, l->out * n, l->in);
}

int nlp_model_set_inference_int8(nlp_model *m)
{
    if (m->wq8) return 0;
    int rc = nlp_model_set_inference_layout(m);
    if (rc) return rc;
    const size_t np = nlp_params_count(m->params);
    if (!(m->wq8 = nlp_calloc(np ? np : 1, sizeof *m->wq8))) return NLP_ENOMEM;
    for (int s = 0; s < 2 && !rc; s++)
        for (int i = 0; i < m->stack[s].n && !rc; i++) {
            const nlp_sub *u = &m->stack[s].sub[i];
            const nlp_lref *qkv[3] = {&u->q, &u->k, &u->v};
            /* as nlp_model_pack_weights: q|k|v (cross: k|v) as one matrix where they lie together */
            if (u->kind == NLP_SUB_SELF && !u->fused && nlp_net_adjacent(m, qkv, 3)) rc = q8_lref(m, &u->q, 3);
            if (!rc && u->kind == NLP_SUB_CROSS && nlp_net_adjacent(m, qkv + 1, 2)) rc = q8_lref(m, &u->k, 2);
            const nlp_lref *one[] = {&u->qkv, &u->q, &u->k, &u->v, &u->o, &u->fc1, &u->fc2};
            for (size_t j = 0; j < sizeof one / sizeof *one && !rc; j++) rc = q8_lref(m, one[j], 1);
        }
    const int table = m->out_w >= 0 ? m->out_w : m->tok_emb;
    if (!rc && table >= 0 && !m->wq8[table].q) /* logits = h · tableᵀ, table [V, C] */
        rc = q8_param(m, table, m->cfg.vocab_size, m->cfg.d_model);
    if (rc) nlp_model_drop_int8(m);
    return rc;
}

void nlp_model_drop_int8(nlp_model *m)
{
    if (!m->wq8) return;
    const size_t np = nlp_params_count(m->params);
    for (size_t i = 0; i < np; i++) nlp_q8_free(&m->wq8[i]);
    free(m->wq8);
    m->wq8 = NULL;
}

size_t nlp_model_int8_bytes(const nlp_model *m)
{
    size_t b = 0;
    if (!m->wq8) return 0;
    for (size_t i = 0; i < nlp_params_count(m->params); i++) b += nlp_q8_bytes(&m->wq8[i]);
    return b;
}

// --- packed weights

/* Packs the n adjacent layers l[0..n) (or l[0] alone) into l[0]'s slot. */
static int pack_lref(nlp_model *m, const nlp_lref *const *ls, int n)
{
    const nlp_lref *l = ls[0];
    if (l->w < 0 || l->in <= 0 || l->out <= 0 || m->wpk[l->w].p) return 0; /* unused references are zero */
    const float *w = nlp_net_w(m, l->w);
    int out = 0;
    for (int i = 0; i < n; i++) out += ls[i]->out;
    /* op(W) for y = x·op(W): Wᵀ of W[out,in], or W[in,out] itself */
    const int tb = l->layout == NLP_W_OUT_IN;
    return nlp_sgemm_pack_b(&m->wpk[l->w], tb, l->in, out, w, tb ? l->in : out);
}

int nlp_model_pack_weights(nlp_model *m)
{
    if (m->wpk) return 0;
    const size_t np = nlp_params_count(m->params);
    if (!(m->wpk = nlp_calloc(np ? np : 1, sizeof *m->wpk))) return NLP_ENOMEM;
    int rc = 0;
    for (int s = 0; s < 2 && !rc; s++)
        for (int i = 0; i < m->stack[s].n && !rc; i++) {
            const nlp_sub *u = &m->stack[s].sub[i];
            const nlp_lref *qkv[3] = {&u->q, &u->k, &u->v}, *gu[2] = {&u->fc1, &u->up};
            if (u->kind == NLP_SUB_SELF && !u->fused && nlp_net_adjacent(m, qkv, 3)) rc = pack_lref(m, qkv, 3);
            if (!rc && u->kind == NLP_SUB_CROSS && nlp_net_adjacent(m, qkv + 1, 2)) rc = pack_lref(m, qkv + 1, 2);
            if (!rc && u->gated && nlp_net_adjacent(m, gu, 2)) rc = pack_lref(m, gu, 2);
            const nlp_lref *one[] = {&u->qkv, &u->q, &u->k, &u->v, &u->o, &u->fc1, &u->up, &u->fc2};
            for (size_t j = 0; j < sizeof one / sizeof *one && !rc; j++) rc = pack_lref(m, one + j, 1);
        }
    const nlp_lref *heads[] = {&m->pool, &m->mlm_dense, &m->nsp};
    for (size_t j = 0; j < sizeof heads / sizeof *heads && !rc; j++)
        if (heads[j]->w >= 0 && heads[j]->in > 0) rc = pack_lref(m, heads + j, 1);
    const int table = m->out_w >= 0 ? m->out_w : m->tok_emb;
    if (!rc && table >= 0 && !m->wpk[table].p) /* logits = h · tableᵀ, table [V, C] */
        rc = nlp_sgemm_pack_b(&m->wpk[table], 1, m->cfg.d_model, m->cfg.vocab_size, nlp_net_w(m, table),
                              m->cfg.d_model);
    if (rc) nlp_model_drop_packed(m);
    return rc;
}

void nlp_model_drop_packed(nlp_model *m)
{
    if (!m->wpk) return;
    const size_t np = nlp_params_count(m->params);
    for (size_t i = 0; i < np; i++) nlp_sgemm_b_free(&m->wpk[i]);
    free(m->wpk);
    m->wpk = NULL;
}

int nlp_model_has_packed(const nlp_model *m) { return m->wpk != NULL; }

int nlp_model_set_inference_bf16(nlp_model *m)
{
    size_t n = nlp_params_numel(m->params);
    if (!m->wbf && !(m->wbf = nlp_malloc(n * sizeof *m->wbf))) return NLP_ENOMEM;
    nlp_to_bf16(nlp_params_data(m->params), m->wbf, n);
    return 0;
}

void nlp_model_round_bf16(nlp_model *m)
{
    float *w = nlp_params_data(m->params);
    const size_t n = nlp_params_numel(m->params);
    for (size_t i = 0; i < n; i++) w[i] = nlp_bf16_to_f32(nlp_f32_to_bf16(w[i]));
}

int nlp_model_set_dropout(nlp_model *m, double dropout, double attention_dropout)
{
    if (!(dropout >= 0 && dropout < 1) || !(attention_dropout >= 0 && attention_dropout < 1))
        return nlp_error(NLP_EINVAL, "dropout must be in [0, 1)");
    m->cfg.dropout = dropout;
    m->cfg.attention_dropout = attention_dropout;
    return 0;
}

const float *nlp_model_logits(const nlp_model *m, int *rows, int *cols)
{
    if (rows) *rows = m->B * m->T;
    if (cols) *cols = m->cfg.vocab_size;
    return m->logits;
}

const float *nlp_model_nsp_logits(const nlp_model *m) { return m->nsp_logits; }

const float *nlp_model_cls_logits(const nlp_model *m)
{
    return m->cfg.num_labels > 0 && m->cfg.head != NLP_HEAD_SPAN ? m->cls_logits : NULL;
}

const float *nlp_model_span_logits(const nlp_model *m) { return m->cfg.head == NLP_HEAD_SPAN ? m->span_logits : NULL; }

void nlp_model_set_lm_weight(nlp_model *m, double lambda) { m->lm_weight = lambda; }

void nlp_model_loss_counts(const nlp_model *m, const nlp_batch *b, double n[2]) { m->ops->counts(m, b, n); }

void nlp_model_set_loss_norm(nlp_model *m, const double norm[2])
{
    m->loss_norm[0] = norm ? norm[0] : 0;
    m->loss_norm[1] = norm ? norm[1] : 0;
}

void nlp_model_set_grad_hook(nlp_model *m, void (*fn)(void *ctx, size_t off), void *ctx)
{
    m->grad_hook = fn;
    m->grad_hook_ctx = ctx;
}

void nlp_model_skip_forward(nlp_model *m)
{
    if (m->training && (m->cfg.dropout > 0 || m->cfg.attention_dropout > 0)) (void)nlp_rng_u64(&m->rng);
}

nlp_batch nlp_batch_rows(const nlp_batch *b, int r0, int r1)
{
    nlp_batch s = *b;
    const size_t T = (size_t)b->T, S = (size_t)b->S, r = (size_t)r0;
#define ROWS(f, w) s.f = b->f ? b->f + r * (w) : NULL
    ROWS(ids, T);
    ROWS(labels, T);
    ROWS(type_ids, T);
    ROWS(mask, T);
    ROWS(nsp_labels, 1);
    ROWS(src, S);
    ROWS(tgt_in, T);
    ROWS(tgt_out, T);
    ROWS(cls_pos, 1);
    ROWS(span_start, 1);
    ROWS(span_end, 1);
    ROWS(span_mask, T);
#undef ROWS
    s.cls_labels = b->cls_labels ? b->cls_labels + r / (size_t)nlp_batch_group(b) : NULL; /* one per example */
    s.B = r1 - r0;
    s.row0 = b->row0 + r0;
    return s;
}

int nlp_batch_group(const nlp_batch *b) { return b->choices > 1 ? b->choices : b->pair_sum ? 2 : 1; }

int nlp_model_set_labels_text(nlp_model *m, const char *text, const char *origin)
{
    int n = 0;
    for (const char *p = text; *p; p++) n += *p == '\n';
    if (*text && text[strlen(text) - 1] != '\n') n++;
    if (n != m->cfg.num_labels)
        return nlp_error(NLP_EFORMAT, "'%s': %d label names for a classifier of %d labels", origin ? origin : "model", n,
                         m->cfg.num_labels);
    char *copy = nlp_strdup(text);
    if (!copy) return NLP_ENOMEM;
    size_t len = strlen(copy);
    if (len && copy[len - 1] == '\n') copy[len - 1] = 0;
    free(m->label_names);
    m->label_names = copy;
    return NLP_OK;
}

int nlp_model_set_labels(nlp_model *m, const char *const *names, int n)
{
    if (n != m->cfg.num_labels)
        return nlp_error(NLP_EINVAL, "%d label names for a classifier of %d labels", n, m->cfg.num_labels);
    nlp_buf b = {0};
    int rc = NLP_OK;
    for (int i = 0; i < n && !rc; i++) {
        if (!names[i][0] || strchr(names[i], '\n'))
            rc = nlp_error(NLP_EINVAL, "label %d is empty or holds a newline", i);
        else rc = nlp_buf_printf(&b, "%s%s", i ? "\n" : "", names[i]);
    }
    if (!rc) {
        free(m->label_names);
        m->label_names = nlp_buf_detach(&b, NULL);
        if (!m->label_names) rc = NLP_ENOMEM;
    }
    nlp_buf_free(&b);
    return rc;
}

int nlp_prefix_check(const char *p)
{
    if (!p) return NLP_OK;
    size_t n = strlen(p), at;
    if (n > NLP_MAX_PREFIX) return nlp_error(NLP_EINVAL, "a prefix of %zu bytes, more than %d", n, NLP_MAX_PREFIX);
    if (!nlp_utf8_valid(p, n, &at)) return nlp_error(NLP_EINVAL, "the prefix is not valid UTF-8 (byte %zu)", at + 1);
    if (strpbrk(p, "\t\n\r"))
        return nlp_error(NLP_EINVAL, "the prefix holds a tab or a line break: it goes before each line of input");
    return NLP_OK;
}

int nlp_model_set_prefix(nlp_model *m, const char *p)
{
    int rc = nlp_prefix_check(p);
    if (rc) return rc;
    char *copy = NULL;
    if (p && *p && !(copy = nlp_strdup(p))) return NLP_ENOMEM;
    free(m->prefix);
    m->prefix = copy;
    return NLP_OK;
}

const char *nlp_model_prefix(const nlp_model *m) { return m->prefix; }

int nlp_model_set_input_length(nlp_model *m, int n)
{
    if (n < 1 || n > m->cfg.max_positions)
        return nlp_error(NLP_EINVAL, "input length %d: the model has %d positions", n, m->cfg.max_positions);
    m->input_length = n;
    return NLP_OK;
}

int nlp_model_input_length(const nlp_model *m) { return m->input_length; }

int nlp_model_set_input_texts(nlp_model *m, int n)
{
    if (n < 1 || n > NLP_MAX_INPUT_TEXTS)
        return nlp_error(NLP_EINVAL, "%d texts per example: 1, 2 (a pair) or up to %d (a context and its choices)", n,
                         NLP_MAX_INPUT_TEXTS);
    m->input_texts = n;
    return NLP_OK;
}

int nlp_model_input_texts(const nlp_model *m) { return m->input_texts; }

const char *nlp_ft_task_name(enum nlp_ft_task t) { return (unsigned)t <= NLP_FT_SPAN ? FT_TASKS[t] : ""; }

int nlp_ft_task_from_name(const char *s)
{
    for (int t = NLP_FT_CLASSIFY; t <= NLP_FT_SPAN; t++)
        if (strcmp(s, FT_TASKS[t]) == 0) return t;
    return -1;
}

int nlp_model_set_task(nlp_model *m, enum nlp_ft_task t)
{
    if ((unsigned)t > NLP_FT_SPAN) return nlp_error(NLP_EINVAL, "unknown fine-tuning task %d", (int)t);
    if ((t == NLP_FT_SPAN) != (m->cfg.head == NLP_HEAD_SPAN) && t != NLP_FT_NONE)
        return nlp_error(NLP_EINVAL, "the task %s needs %s head", FT_TASKS[t], t == NLP_FT_SPAN ? "a span" : "a sequence");
    m->ft_task = t;
    return NLP_OK;
}

enum nlp_ft_task nlp_model_task(const nlp_model *m) { return (enum nlp_ft_task)m->ft_task; }

int nlp_model_label(const nlp_model *m, int i, char *buf, size_t cap)
{
    if (i < 0 || i >= m->cfg.num_labels) return -1;
    const char *p = m->label_names;
    for (int k = 0; p && k < i; k++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p) return snprintf(buf, cap, "%d", i), 0;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    snprintf(buf, cap, "%.*s", (int)n, p);
    return 0;
}

int nlp_model_extend(nlp_model **out, const nlp_model *src, const nlp_model_config *cfg, uint64_t seed)
{
    *out = NULL;
    if (cfg->arch != src->cfg.arch) return nlp_error(NLP_EINVAL, "cannot turn a %s model into a %s", nlp_arch_name(src->cfg.arch), nlp_arch_name(cfg->arch));
    nlp_model *m;
    int rc = nlp_model_new(&m, cfg, seed);
    if (rc) return rc;
    const nlp_params *sp = src->params;
    for (size_t i = 0; i < nlp_params_count(m->params) && !rc; i++) {
        const nlp_param_info *t = nlp_params_info(m->params, i);
        int j = nlp_params_find(sp, t->name);
        if (j < 0) continue; /* new: keeps its initialisation */
        const nlp_param_info *u = nlp_params_info(sp, (size_t)j);
        float *dst = nlp_params_at(m->params, i);
        const float *from = nlp_params_at(sp, (size_t)j);
        int same = t->ndim == u->ndim;
        for (int d = 1; d < t->ndim && same; d++) same = t->shape[d] == u->shape[d];
        if (!same || u->shape[0] > t->shape[0]) {
            rc = nlp_error(NLP_EINVAL, "tensor '%s' cannot grow from its %lld rows", t->name, (long long)u->shape[0]);
            break;
        }
        memcpy(dst, from, u->numel * sizeof(float)); /* the first rows; added rows keep their initialisation */
    }
    if (!rc && src->label_names && cfg->num_labels == src->cfg.num_labels) rc = nlp_model_set_labels_text(m, src->label_names, NULL);
    if (!rc) rc = nlp_model_set_prefix(m, src->prefix);
    if (rc) {
        nlp_model_free(m);
        return rc;
    }
    m->lm_weight = src->lm_weight;
    m->input_length = src->input_length <= cfg->max_positions ? src->input_length : 0;
    m->input_texts = src->input_texts;
    m->ft_task = src->ft_task;
    *out = m;
    return NLP_OK;
}

const float *nlp_model_cross_attention(const nlp_model *m, int layer, int *H)
{
    if (m->cfg.arch != NLP_ARCH_TRANSFORMER || m->infer || !m->act) return NULL;
    const nlp_stack *st = &m->stack[1];
    int n = 0, want = layer < 0 ? m->cfg.decoder_layers - 1 : layer;
    for (int i = 0; i < st->n; i++)
        if (st->sub[i].kind == NLP_SUB_CROSS && n++ == want) {
            *H = m->cfg.heads;
            return st->sub[i].P;
        }
    return NULL;
}

// --- incremental decoding

int nlp_cache_new(nlp_cache **out, const nlp_model *m, int B, int max_len)
{
    *out = NULL;
    if (!m->ops->decode) return nlp_error(NLP_EINVAL, "a %s model has no incremental decoding", nlp_arch_name(m->cfg.arch));
    if (B < 1 || max_len < 1) return nlp_error(NLP_EINVAL, "cache of %d rows x %d positions", B, max_len);
    nlp_cache *c = nlp_calloc(1, sizeof *c);
    if (!c) return NLP_ENOMEM;
    c->m = m;
    c->B = B;
    c->group = 1;
    c->max_len = max_len;
    c->C = m->cfg.d_model;
    c->Ckv = nlp_net_kv_dim(m);
    const nlp_stack *dec = &m->stack[m->cfg.arch == NLP_ARCH_TRANSFORMER ? 1 : 0];
    for (int i = 0; i < dec->n; i++) {
        c->n_self += dec->sub[i].kind == NLP_SUB_SELF;
        c->n_cross += dec->sub[i].kind == NLP_SUB_CROSS;
    }
    c->self = nlp_malloc((size_t)c->n_self * B * max_len * 2 * c->Ckv * sizeof(float));
    c->rows = nlp_malloc((size_t)B * max_len * sizeof *c->rows);
    if (!c->self || !c->rows) {
        free(c->self), free(c->rows), free(c);
        return NLP_ENOMEM;
    }
    *out = c;
    return NLP_OK;
}

void nlp_cache_free(nlp_cache *c)
{
    if (!c) return;
    free(c->self);
    free(c->rows);
    free(c->cross);
    free(c->src_mask);
    free(c->tmp);
    free(c);
}

int nlp_cache_len(const nlp_cache *c) { return c->len; }

void nlp_cache_reset(nlp_cache *c)
{
    c->len = 0;
    c->S = 0;
    c->moved = 0;
}

/* In each of n blocks of B rows `stride` floats apart, row i takes the first
 * `row` floats of row rows[i]. */
/* Row i of each of the n blocks takes row rows[i]'s contents; only the
 * rows that change are copied (beam search keeps most rows in place). */
static int permute_rows(nlp_cache *c, float *base, int n, size_t stride, size_t row, const int32_t *rows)
{
    int moved = 0;
    for (int i = 0; i < c->B && !moved; i++) moved = rows[i] != i;
    if (!moved || !row) return NLP_OK;
    size_t need = (size_t)c->B * row;
    if (need > c->tmp_cap) {
        float *t = nlp_realloc(c->tmp, need * sizeof(float));
        if (!t) return NLP_ENOMEM;
        c->tmp = t;
        c->tmp_cap = need;
    }
    uint8_t *src = nlp_calloc((size_t)c->B, 1); /* rows whose contents another row takes */
    if (!src) return NLP_ENOMEM;
    for (int i = 0; i < c->B; i++)
        if (rows[i] != i) src[rows[i]] = 1;
    for (int l = 0; l < n; l++) {
        float *blk = base + (size_t)l * c->B * stride;
        for (int i = 0; i < c->B; i++)
            if (src[i]) memcpy(c->tmp + (size_t)i * row, blk + (size_t)i * stride, row * sizeof(float));
        for (int i = 0; i < c->B; i++)
            if (rows[i] != i) memcpy(blk + (size_t)i * stride, c->tmp + (size_t)rows[i] * row, row * sizeof(float));
    }
    free(src);
    return NLP_OK;
}

/* The keys and values of every row moved to where c->rows says they are,
 * so that the table is the identity again (before a pass of many new
 * positions, whose attention reads each row's keys as one block). */
static int materialize(nlp_cache *c)
{
    if (!c->moved) return NLP_OK;
    const size_t C2 = 2 * (size_t)c->Ckv, row = (size_t)c->len * C2, stride = (size_t)c->max_len * C2;
    size_t need = (size_t)c->B * row;
    if (need > c->tmp_cap) {
        float *t = nlp_realloc(c->tmp, need * sizeof(float));
        if (!t) return NLP_ENOMEM;
        c->tmp = t;
        c->tmp_cap = need;
    }
    for (int l = 0; l < c->n_self; l++) {
        float *blk = c->self + (size_t)l * c->B * stride;
        for (int b = 0; b < c->B; b++)
            for (int p = 0; p < c->len; p++)
                memcpy(c->tmp + (size_t)b * row + (size_t)p * C2,
                       blk + (size_t)c->rows[(size_t)b * c->max_len + p] * stride + (size_t)p * C2, C2 * sizeof(float));
        for (int b = 0; b < c->B; b++) memcpy(blk + (size_t)b * stride, c->tmp + (size_t)b * row, row * sizeof(float));
    }
    for (int b = 0; b < c->B; b++)
        for (int p = 0; p < c->len; p++) c->rows[(size_t)b * c->max_len + p] = b;
    c->moved = 0;
    return NLP_OK;
}

int nlp_cache_reorder_self(nlp_cache *c, const int32_t *rows)
{
    for (int i = 0; i < c->B; i++)
        if (rows[i] < 0 || rows[i] >= c->B) return nlp_error(NLP_EINVAL, "reorder: row %d out of range", rows[i]);
    int moved = 0;
    for (int i = 0; i < c->B && !moved; i++) moved = rows[i] != i;
    if (!moved || !c->len) return NLP_OK;
    /* only the table moves: row i's positions become row rows[i]'s */
    const size_t L = (size_t)c->len, need = (size_t)c->B * L;
    int32_t *t = nlp_malloc(need * sizeof *t);
    if (!t) return NLP_ENOMEM;
    for (int i = 0; i < c->B; i++) memcpy(t + (size_t)i * L, c->rows + (size_t)rows[i] * c->max_len, L * sizeof *t);
    for (int i = 0; i < c->B; i++) memcpy(c->rows + (size_t)i * c->max_len, t + (size_t)i * L, L * sizeof *t);
    free(t);
    c->moved = 1;
    return NLP_OK;
}

int nlp_cache_reorder(nlp_cache *c, const int32_t *rows)
{
    for (int i = 0; i < c->B; i++)
        if (rows[i] < 0 || rows[i] >= c->B) return nlp_error(NLP_EINVAL, "reorder: row %d out of range", rows[i]);
    if (c->group > 1) { /* a shared source: rows may only move within their group */
        for (int i = 0; i < c->B; i++)
            if (rows[i] / c->group != i / c->group)
                return nlp_error(NLP_EINVAL, "reorder: row %d takes row %d of another source", i, rows[i]);
        return nlp_cache_reorder_self(c, rows);
    }
    size_t C2 = 2 * (size_t)c->C;
    int rc = nlp_cache_reorder_self(c, rows);
    if (rc || !c->S) return rc;
    if ((rc = permute_rows(c, c->cross, c->n_cross, (size_t)c->S * C2, (size_t)c->S * C2, rows))) return rc;
    uint8_t *m = nlp_malloc((size_t)c->B * c->S);
    if (!m) return NLP_ENOMEM;
    for (int i = 0; i < c->B; i++) memcpy(m + (size_t)i * c->S, c->src_mask + (size_t)rows[i] * c->S, (size_t)c->S);
    memcpy(c->src_mask, m, (size_t)c->B * c->S);
    free(m);
    return NLP_OK;
}

int nlp_cache_share(nlp_cache *dst, const nlp_cache *src, int row)
{
    if (dst->m != src->m) return nlp_error(NLP_EINVAL, "cache share: the caches are of different models");
    if (dst->n_cross || src->n_cross) return nlp_error(NLP_EINVAL, "cache share: a cache with a source side");
    if (row < 0 || row >= src->B) return nlp_error(NLP_EINVAL, "cache share: row %d of a cache of %d", row, src->B);
    if (src->len > dst->max_len)
        return nlp_error(NLP_EINVAL, "cache share: %d positions do not fit a cache of %d", src->len, dst->max_len);
    const int L = src->len;
    const size_t C2 = 2 * (size_t)src->Ckv, ss = (size_t)src->max_len * C2, ds = (size_t)dst->max_len * C2;
    for (int l = 0; l < src->n_self; l++) {
        const float *sb = src->self + (size_t)l * src->B * ss;
        float *db = dst->self + (size_t)l * dst->B * ds;
        for (int p = 0; p < L; p++) {
            const int from = src->moved ? src->rows[(size_t)row * src->max_len + p] : row;
            memcpy(db + (size_t)p * C2, sb + (size_t)from * ss + (size_t)p * C2, C2 * sizeof(float));
        }
    }
    /* every row reads row 0's positions (nlp_cache_reorder_self's table) */
    for (int b = 0; b < dst->B; b++)
        for (int p = 0; p < L; p++) dst->rows[(size_t)b * dst->max_len + p] = 0;
    dst->len = L;
    dst->moved = dst->B > 1 && L > 0;
    return NLP_OK;
}

int nlp_model_encode(nlp_model *m, const nlp_batch *b, nlp_cache *c)
{
    if (!m->ops->encode) return nlp_error(NLP_EINVAL, "a %s model has no encoder to run for decoding", nlp_arch_name(m->cfg.arch));
    if (c->m != m || b->B < 1 || c->B % b->B != 0)
        return nlp_error(NLP_EINVAL, "the cache is for another model or batch size");
    if (!b->src || b->S < 1) return nlp_error(NLP_EINVAL, "encode: no source");
    if (b->S > nlp_model_config_max_len(&m->cfg))
        return nlp_error(NLP_EDATA, "source of %d positions is longer than max-positions %d", b->S, m->cfg.max_positions);
    int rc = nlp_net_check_ids(b->src, b->B, b->S, m->cfg.src_vocab_size, INT32_MIN, "source");
    if (rc) return rc;
    if (b->S != c->S || !c->cross || c->group != c->B / b->B) {
        free(c->cross);
        free(c->src_mask);
        c->cross = nlp_malloc((size_t)c->n_cross * b->B * b->S * 2 * c->C * sizeof(float));
        c->src_mask = nlp_malloc((size_t)b->B * b->S);
        if (!c->cross || !c->src_mask) {
            free(c->cross), free(c->src_mask);
            c->cross = NULL, c->src_mask = NULL, c->S = 0;
            return NLP_ENOMEM;
        }
    }
    c->S = b->S;
    c->group = c->B / b->B;
    c->len = 0;
    int training = m->training;
    m->training = 0;
    m->have_loss = 0;
    if (!(rc = ensure_layout(m, b->B, 1, b->S, 1))) rc = m->ops->encode(m, b, c);
    m->training = training;
    return rc;
}

int nlp_model_decode(nlp_model *m, const nlp_batch *b, nlp_cache *c)
{
    if (!m->ops->decode) return nlp_error(NLP_EINVAL, "a %s model has no incremental decoding", nlp_arch_name(m->cfg.arch));
    if (c->m != m || b->B != c->B) return nlp_error(NLP_EINVAL, "the cache is for another model or batch size");
    int tr = m->cfg.arch == NLP_ARCH_TRANSFORMER;
    const int32_t *ids = tr ? b->tgt_in : b->ids;
    if (!ids || b->T < 1) return nlp_error(NLP_EINVAL, "decode: no new positions");
    if (tr && !c->S) return nlp_error(NLP_EINVAL, "decode before nlp_model_encode");
    if (c->len + b->T > c->max_len || c->len + b->T > nlp_model_config_max_len(&m->cfg))
        return nlp_error(NLP_EDATA, "%d positions do not fit: the cache holds %d of %d (%s %d)", b->T, c->len,
                         c->max_len, m->cfg.sliding_window ? "sliding window" : "max-positions",
                         m->cfg.sliding_window ? m->cfg.sliding_window : m->cfg.max_positions);
    int rc = nlp_net_check_ids(ids, b->B, b->T, m->cfg.vocab_size, INT32_MIN, "input");
    if (rc) return rc;
    /* many new positions read each row's keys as one block (nn/attn.h) */
    if (b->T > NLP_ATTN_SMALL_ROWS && (rc = materialize(c))) return rc;
    int training = m->training;
    m->training = 0;
    m->have_loss = 0;
    if (!(rc = ensure_layout(m, b->B, b->T, tr ? c->S : 0, 1))) rc = m->ops->decode(m, b, c);
    m->training = training;
    if (!rc) c->len += b->T;
    return rc;
}

size_t nlp_model_param_count(const nlp_model *m) { return nlp_params_numel(m->params); }

size_t nlp_model_config_param_count(const nlp_model_config *cfg)
{
    nlp_model *m;
    if (model_build(&m, cfg)) return 0;
    size_t n = nlp_params_numel(m->params);
    nlp_model_free(m);
    return n;
}

double nlp_model_train_flops(const nlp_model *m, int B, int T)
{
    const nlp_model_config *c = &m->cfg;
    double n = (double)nlp_params_numel(m->params);
    int skip[] = {m->pos_emb, m->src_pos, m->type_emb, c->arch == NLP_ARCH_TRANSFORMER ? m->src_emb : -1,
                  m->out_w >= 0 ? m->tok_emb : -1};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (skip[i] >= 0) n -= (double)nlp_params_info(m->params, (size_t)skip[i])->numel;
    double tokens = (double)B * T, attn = 0;
    if (c->arch == NLP_ARCH_TRANSFORMER) { /* source length taken equal to the target length */
        attn = 12.0 * c->d_model * B * ((double)c->encoder_layers + 2.0 * c->decoder_layers) * T * T;
    } else {
        attn = 12.0 * c->d_model * B * (double)c->layers * T * T;
    }
    return 6.0 * n * tokens + attn;
}
