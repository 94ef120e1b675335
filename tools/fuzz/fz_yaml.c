/* tools/fuzz/fz_yaml.c — libFuzzer target: YAML config files
 * (lib/base/config: the tools' -c FILE and run.yaml) parsed; an accepted
 * file's entries must write back with nlp_yaml_scalar and parse again to
 * the same keys and values; its model keys are resolved as a model
 * configuration would be (lib/model/config) and an accepted configuration
 * dumps and resolves back to itself. Build and run: tools/fuzz/run yaml. */
#include "fz_common.h"
#include "base/config.h"
#include "model/config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    nlp_config c;
    if (nlp_config_parse(&c, (const char *)d, n, "fuzz.yaml") == 0) {
        /* round trip of every entry through the writer */
        nlp_buf b = {0};
        int ok = 1;
        for (size_t i = 0; i < c.n && ok; i++)
            ok = !nlp_yaml_scalar(&b, c.e[i].key) && !nlp_buf_puts(&b, ": ") &&
                 !nlp_yaml_scalar(&b, c.e[i].is_list ? NULL : c.e[i].value) && !nlp_buf_putc(&b, '\n');
        nlp_config c2;
        if (ok && nlp_config_parse(&c2, b.data ? b.data : "", b.len, "again") == 0) {
            if (c2.n != c.n) abort();
            for (size_t i = 0; i < c.n; i++) {
                if (strcmp(c.e[i].key, c2.e[i].key)) abort();
                const char *v = c.e[i].is_list ? NULL : c.e[i].value;
                if (!v != !c2.e[i].value || (v && strcmp(v, c2.e[i].value))) abort();
            }
        }
        if (ok) nlp_config_free(&c2);
        nlp_buf_free(&b);
        /* model keys, as a tool hands them over */
        nlp_model_config m;
        if (nlp_model_config_build(&m, NULL, &c, 1, NULL) == 0) {
            nlp_buf y = {0};
            nlp_config f;
            nlp_model_config back;
            if (nlp_model_config_dump(&m, &y) == 0 && nlp_config_parse(&f, y.data, y.len, "dump") == 0) {
                if (nlp_model_config_build(&back, NULL, &f, 1, NULL) != 0 || !nlp_model_config_equal(&m, &back))
                    abort();
                nlp_config_free(&f);
            }
            nlp_buf_free(&y);
        }
    }
    nlp_config_free(&c);
    return 0;
}
