/*
 * jscan_ref.h — what the jansson readers make of a {"token": id} object
 * (tokfiles.c read_vocab_json, tokjson.c read_vocab), for checking the fast
 * path of lib/tok/jscan.c against them: tests/unit/test_jscan.c and the
 * fuzz target tools/fuzz/fz_jscan.c. Header-only.
 */
#ifndef NLP_TEST_JSCAN_REF_H
#define NLP_TEST_JSCAN_REF_H

#include "tok/vocab.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

/* The vocabulary, or NULL where the readers refuse the text. */
static inline nlp_vocab *jscan_reference(const char *s, size_t n)
{
    json_t *root = json_loadb(s, n, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return NULL;
    }
    nlp_vocab *v = nlp_vocab_new(json_object_size(root));
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 || json_integer_value(val) >= INT32_MAX - 1 ||
            (size_t)json_integer_value(val) >= json_object_size(root) + NLP_VOCAB_MAX_HOLES ||
            nlp_vocab_set(v, (int32_t)json_integer_value(val), key, strlen(key))) {
            nlp_vocab_free(v);
            v = NULL;
            break;
        }
    }
    json_decref(root);
    return v;
}

#endif
