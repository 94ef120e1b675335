/*
 * modelio.c — loading models and their tokenizers for the model tools. See modelio.h.
 */
#include "common/modelio.h"
#include "base/err.h"
#include "base/io.h"
#include "common/cli.h"
#include "tok/tokfiles.h"
#include "train/loop.h"

#include <stdio.h>
#include <string.h>

void mio_resolve(const char *path, char *buf, size_t cap)
{
    if (nlp_train_find_checkpoint(path, buf, cap)) snprintf(buf, cap, "%s", path);
}

nlp_model *mio_load_model(const char *path, int want)
{
    char p[4096];
    mio_resolve(path, p, sizeof p);
    if (!nlp_file_exists(p)) cli_die(NLP_EXIT_FAILURE, "cannot open '%s': No such file or directory", path);
    nlp_model *m = NULL;
    int rc = nlp_model_load(&m, p);
    if (rc) cli_fail(rc);
    if (want >= 0 && (int)nlp_model_cfg(m)->arch != want) {
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
    if (rc) cli_fail(rc);
    return tk;
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
