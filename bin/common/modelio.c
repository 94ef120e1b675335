/*
 * modelio.c — loading models and their tokenizers for the model tools. See modelio.h.
 */
#include "common/modelio.h"
#include "text/utf8.h"
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "common/cli.h"
#include "tok/tokfiles.h"
#include "train/loop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void mio_resolve(const char *path, char *buf, size_t cap)
{
    if (nlp_train_find_checkpoint(path, buf, cap)) snprintf(buf, cap, "%s", path);
}

void mio_check_resume(const char *path, const char *tool, char *ck, size_t cap)
{
    struct stat st;
    if (stat(path, &st) != 0) cli_die(NLP_EXIT_FORMAT, "cannot open '%s': %s", path, strerror(errno));
    if (nlp_train_find_checkpoint(path, ck, cap)) cli_fail_file(NLP_EFORMAT);
    char p[4200];
    snprintf(p, sizeof p, "%s/train_state.safetensors", ck);
    if (!nlp_is_dir(ck) || !nlp_file_exists(p))
        cli_die(NLP_EXIT_FORMAT, "'%s' is not a checkpoint to resume (no training state: '%s'); --init starts from a "
                "model", path, p);
    /* run.yaml's first line names the tool that wrote it */
    snprintf(p, sizeof p, "%s/run.yaml", ck);
    char *text;
    size_t len;
    if (nlp_file_exists(p) && nlp_read_file(p, &text, &len) == 0) {
        char other[32];
        if (sscanf(text, "# %31s options", other) == 1 && strcmp(other, tool) != 0)
            cli_die(NLP_EXIT_FORMAT, "'%s' is a checkpoint of %s, not of %s: %s", path, other, tool,
                    strcmp(tool, "finetune") == 0 ? "fine-tune its model with --init" : "continue it with that tool");
        free(text);
    }
}

/* "12.3 MiB" */
const char *mio_data_note;

const char *mio_human(char *buf, size_t cap, uint64_t b)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 5) v /= 1024, u++;
    if (u == 0) snprintf(buf, cap, "%llu bytes", (unsigned long long)b);
    else snprintf(buf, cap, "%.1f %s", v, unit[u]);
    return buf;
}

void mio_memory_check(const nlp_model_config *cfg, int B, int T, int S, uint64_t data, int dry_run, int check)
{
    nlp_train_memory m;
    int rc = nlp_model_train_memory(cfg, B, T, S, &m);
    if (rc) cli_fail(rc);
    const uint64_t total = m.params + m.grads + m.optim + m.acts + data;
    const char *what;
    const uint64_t avail = nlp_mem_available(&what);
    const int fits = total <= avail;
    char p[32], g[32], op[32], a[32], d[32], t[32], av[32], shape[64];
    mio_human(p, sizeof p, m.params), mio_human(g, sizeof g, m.grads), mio_human(op, sizeof op, m.optim);
    mio_human(a, sizeof a, m.acts), mio_human(d, sizeof d, data), mio_human(t, sizeof t, total);
    if (what) mio_human(av, sizeof av, avail);
    else snprintf(av, sizeof av, "unknown");
    if (S > 0) snprintf(shape, sizeof shape, "%d x %d target, %d source positions", B, T, S);
    else snprintf(shape, sizeof shape, "%d x %d positions", B, T);
    if (dry_run) {
        printf("parameters: %s (%llu floats)\ngradients: %s\noptimizer: %s (Adam's two moments)\n"
               "activations: %s (a micro-batch of %s)\ndata: %s%s%s%s\ntotal: %s\navailable: %s%s%s%s\n",
               p, (unsigned long long)(m.params / sizeof(float)), g, op, a, shape, d, mio_data_note ? " (" : "",
               mio_data_note ? mio_data_note : "", mio_data_note ? ")" : "", t, av, what ? " (" : "",
               what ? what : "", what ? ")" : "");
        if (fflush(stdout) != 0 || ferror(stdout))
            cli_die(NLP_EXIT_FAILURE, "cannot write to standard output: %s", strerror(errno));
        if (!fits) cli_die(NLP_EXIT_FAILURE, "the run needs %s of memory, %s are available (%s)", t, av, what);
        exit(0);
    }
    cli_info("memory: parameters %s, gradients %s, optimizer %s, activations %s, data %s%s%s%s: %s in all, %s "
             "available", p, g, op, a, d, mio_data_note ? " (" : "", mio_data_note ? mio_data_note : "",
             mio_data_note ? ")" : "", t, av);
    if (!fits && check)
        cli_die(NLP_EXIT_FAILURE, "the run needs %s of memory (parameters %s, gradients %s, optimizer %s, activations "
                "%s for a micro-batch of %s, data %s), but %s are available (%s): make the model or the batch smaller, "
                "or --no-memory-check to try anyway", t, p, g, op, a, shape, d, av, what);
}

nlp_model *mio_load_model(const char *path, int want)
{
    char p[4096];
    mio_resolve(path, p, sizeof p);
    if (!nlp_file_exists(p)) cli_die(NLP_EXIT_FORMAT, "cannot open '%s': No such file or directory", path);
    nlp_model *m = NULL;
    int rc = nlp_model_load(&m, p);
    if (rc) cli_fail_file(rc);
    /* gpt and llama are both decoder-only language models: one does for the other */
    const int lm_ok = want >= 0 && nlp_arch_is_lm((enum nlp_arch)want) && nlp_arch_is_lm(nlp_model_cfg(m)->arch);
    if (want >= 0 && (int)nlp_model_cfg(m)->arch != want && !lm_ok) {
        const char *is = nlp_arch_name(nlp_model_cfg(m)->arch);
        nlp_model_free(m);
        cli_die(NLP_EXIT_FORMAT, "'%s' holds a %s model, not %s", p, is, nlp_arch_name((enum nlp_arch)want));
    }
    return m;
}

nlp_tokenizer *mio_load_tokenizer(const char *path)
{
    nlp_tokenizer *tk = NULL;
    int rc = nlp_tokfiles_load(path, NULL, &tk);
    if (rc) cli_fail_file(rc);
    return tk;
}

void mio_no_tokenizer(const char *model, const char *side, const char *files, const char *also)
{
    cli_usage_error("'%s' has no %stokenizer beside it (%s): give --tokenizer%s", model, side, files, also);
}

nlp_tokenizer *mio_load_tokenizer_beside(const char *model_path)
{
    char dir[4096];
    mio_resolve(model_path, dir, sizeof dir);
    if (!nlp_is_dir(dir)) {
        char *slash = strrchr(dir, '/');
        if (!slash) snprintf(dir, sizeof dir, ".");
        else *slash = 0;
    }
    static const char *names[] = {"tokenizer.json", "encoder.json", "vocab.json", "vocab.txt"};
    char p[4200];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (nlp_file_exists(p)) return mio_load_tokenizer(dir);
    }
    /* a LLaMA-family directory with sentencepiece's model only */
    snprintf(p, sizeof p, "%s/tokenizer.model", dir);
    if (nlp_file_exists(p)) return mio_load_tokenizer(p);
    return NULL;
}

void mio_check_vocab(const nlp_tokenizer *tk, const char *tk_name, const nlp_model *m, const char *m_name)
{
    size_t tv = nlp_tokenizer_vocab_size(tk);
    int mv = nlp_model_cfg(m)->vocab_size;
    if (tv > (size_t)mv)
        cli_die(NLP_EXIT_FORMAT, "'%s' has %zu token ids, but the model '%s' has a vocabulary of %d: they do not "
                "belong together", tk_name, tv, m_name, mv);
}

void mio_report_plan(const nlp_train_event *e, long warmup, double minutes)
{
    char budget[128] = "";
    if (minutes > 0 && e->step > 0) {
        char m[40];
        nlp_format_double(m, sizeof m, minutes);
        snprintf(budget, sizeof budget, "about %ld steps in --max-time %s at the pace so far", e->total, m);
        cli_debug("%s", budget);
    }
    if (warmup <= 0 || e->total > warmup || e->step >= warmup) return;
    if (budget[0])
        cli_warn("the warm-up (--warmup %ld) outlasts the run (%s): the learning rate would neither reach its "
                 "peak nor decay; give a smaller --warmup", warmup, budget);
    else
        cli_warn("the warm-up (--warmup %ld) outlasts the run (%ld step%s): the learning rate would neither reach its "
                 "peak nor decay; give a smaller --warmup", warmup, e->total, e->total == 1 ? "" : "s");
}

int mio_eot(const nlp_tokenizer *tk, const char *name, const char *tk_name)
{
    if (name) {
        int32_t id = nlp_tokenizer_token_to_id(tk, name, strlen(name));
        if (id < 0) cli_usage_error("--eot: '%s' is not a token of '%s'", name, tk_name);
        return id;
    }
    for (size_t i = 0; nlp_eot_tokens[i]; i++) {
        int32_t id = nlp_tokenizer_token_to_id(tk, nlp_eot_tokens[i], strlen(nlp_eot_tokens[i]));
        if (id >= 0) return id;
    }
    return -1;
}

int mio_decode_line(const nlp_tokenizer *tk, const int32_t *ids, size_t n, nlp_buf *out)
{
    return mio_decode_text(tk, ids, n, 1, out);
}

int mio_decode_text(const nlp_tokenizer *tk, const int32_t *ids, size_t n, int skip_special, nlp_buf *out)
{
    nlp_buf_reset(out);
    int rc = nlp_tokenizer_decode(tk, ids, n, skip_special, out, NULL);
    if (rc) return rc;
    if (out->len && !nlp_utf8_valid(out->data, out->len, NULL)) {
        nlp_buf fix = {0};
        if (nlp_utf8_repair(out->data, out->len, &fix, NULL)) {
            nlp_buf_free(&fix);
            return NLP_ENOMEM;
        }
        nlp_buf_reset(out);
        if (nlp_buf_append(out, fix.data, fix.len)) rc = NLP_ENOMEM;
        nlp_buf_free(&fix);
    }
    for (size_t i = 0; i < out->len; i++)
        if (out->data[i] == '\n' || out->data[i] == '\r') out->data[i] = ' ';
    return rc;
}

static int32_t find_token(const nlp_tokenizer *tk, const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        int32_t id = nlp_tokenizer_token_to_id(tk, names[i], strlen(names[i]));
        if (id >= 0) return id;
    }
    return -1;
}

void mio_special_ids(const nlp_tokenizer *tk, int32_t id[3])
{
    static const char *const pad[] = {"<pad>", "[PAD]", "<|pad|>", NULL};
    static const char *const bos[] = {"<s>", "<bos>", "[BOS]", "<|startoftext|>", "[CLS]", NULL};
    static const char *const eos[] = {"</s>", "<eos>", "[EOS]", "<|endoftext|>", "[SEP]", NULL};
    id[0] = find_token(tk, pad);
    id[1] = find_token(tk, bos);
    id[2] = find_token(tk, eos);
    if (id[1] < 0) id[1] = id[2];
}
