/*
 * mkmodel — writes a model with freshly initialised weights, for benchmarks
 * and tests that need a model of a given shape but no training.
 *
 *   tools/mkmodel PRESET OUT.safetensors [key=value]... [seed=N]
 *
 * Keys are the model configuration keys (model/config.h): arch=gpt,
 * layers=12, vocab-size=50257...
 */
#include "base/err.h"
#include "model/config.h"
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: mkmodel PRESET OUT.safetensors [key=value]... [seed=N]\n");
        return 2;
    }
    const char *ov[64];
    int n = 0;
    unsigned long long seed = 0;
    for (int i = 3; i < argc && n < 63; i++) {
        if (strncmp(argv[i], "seed=", 5) == 0) seed = strtoull(argv[i] + 5, NULL, 10);
        else ov[n++] = argv[i];
    }
    ov[n] = NULL;
    nlp_model_config cfg;
    nlp_model *m;
    int rc = nlp_model_config_build(&cfg, argv[1], NULL, 0, ov);
    if (!rc) rc = nlp_model_new(&m, &cfg, seed);
    if (!rc) rc = nlp_model_save(m, argv[2], NLP_DT_F32);
    if (rc) {
        fprintf(stderr, "mkmodel: %s\n", nlp_errmsg());
        return nlp_exit_code(rc);
    }
    nlp_model_free(m);
    return 0;
}
