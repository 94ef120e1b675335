/*
 * jsonl.h — rows of a JSON-lines file under shared/, for unit tests.
 *
 *   int n = jsonl_each("vectors/bleu/_units/tokenize.jsonl", fn);
 * calls fn(row, index) for every row (parsed with jansson, freed after the
 * call) and returns the number of rows, or -1 when shared/ is absent (the
 * test is then counted as skipped). A missing file or a bad row fails a check.
 */
#ifndef NLP_TEST_JSONL_H
#define NLP_TEST_JSONL_H

#include <jansson.h>

#include "test.h"

static inline int jsonl_each(const char *rel, void (*fn)(json_t *row, int index))
{
    const char *sh = test_shared();
    if (!sh) return -1;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", sh, rel);
    FILE *f = fopen(path, "r");
    if (!CHECK(f != NULL)) return 0;
    char *line = NULL;
    size_t cap = 0;
    int rows = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t err;
        json_t *o = json_loads(line, 0, &err);
        if (!CHECK(o != NULL)) continue;
        fn(o, rows++);
        json_decref(o);
    }
    free(line);
    fclose(f);
    return rows;
}

#endif
