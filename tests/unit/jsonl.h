/*
 * jsonl.h — rows of a JSON-lines file of the reference data, for unit tests.
 *
 *   int n = jsonl_each("vectors/bleu/_units/tokenize.jsonl", fn);
 * calls fn(row, index) for every row (parsed with jansson, freed after the
 * call) of the file under shared/, else of its compact copy in
 * tests/data/golden (test_data), and returns the number of rows, or -1 when
 * neither has it (the test is then counted as skipped). A bad row fails a
 * check.
 */
#ifndef NLP_TEST_JSONL_H
#define NLP_TEST_JSONL_H

#include <jansson.h>

#include "test.h"

static inline int jsonl_each(const char *rel, void (*fn)(json_t *row, int index))
{
    const char *path = test_data(rel);
    if (!path) return -1;
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
