/* tools/fuzz/fz_jscan.c — libFuzzer target, differential: the fast path
 * through vocabularies and merges (lib/tok/jscan.c) against jansson, which
 * it stands in for. Where the fast path reads a {"token": id} object, the
 * vocabulary must be the one the jansson readers build; where it reads an
 * array of merges, the pairs must be jansson's. The input is split at its
 * first NUL byte: an object, then an array of merges read against it.
 * Build and run: tools/fuzz/run jscan. */
#include "tok/jscan.h"
#include "tok/vocab.h"
#include "base/err.h"
#include "../../tests/unit/jscan_ref.h"
#include <jansson.h>
#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* tokjson.c read_merge through jansson: 1 and the ids, or 0. */
static int ref_merges(const char *s, size_t n, const nlp_vocab *v, int32_t **out, size_t *count)
{
    json_t *a = json_loadb(s, n, 0, NULL);
    int ok = json_is_array(a);
    size_t k = ok ? json_array_size(a) : 0;
    int32_t *m = malloc((k ? 2 * k : 1) * sizeof *m);
    for (size_t i = 0; ok && i < k; i++) {
        json_t *e = json_array_get(a, i);
        const char *x, *y;
        size_t lx, ly;
        if (json_is_string(e)) {
            const char *t = json_string_value(e), *sp = strchr(t, ' ');
            if (!sp || strchr(sp + 1, ' ')) {
                ok = 0;
                break;
            }
            x = t, lx = (size_t)(sp - t), y = sp + 1, ly = strlen(y);
        } else if (json_is_array(e) && json_array_size(e) == 2 && json_is_string(json_array_get(e, 0)) &&
                   json_is_string(json_array_get(e, 1))) {
            x = json_string_value(json_array_get(e, 0)), lx = json_string_length(json_array_get(e, 0));
            y = json_string_value(json_array_get(e, 1)), ly = json_string_length(json_array_get(e, 1));
        } else {
            ok = 0;
            break;
        }
        m[2 * i] = nlp_vocab_find(v, x, lx);
        m[2 * i + 1] = nlp_vocab_find(v, y, ly);
        ok = m[2 * i] >= 0 && m[2 * i + 1] >= 0;
    }
    json_decref(a);
    if (!ok) {
        free(m);
        return 0;
    }
    *out = m;
    *count = k;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    const char *s = (const char *)d;
    const char *z = memchr(s, 0, n);
    size_t nv = z ? (size_t)(z - s) : n, o0 = nlp_jscan_ws(s, nv, 0), end = 0;
    nlp_vocab *fast = NULL, *ref = jscan_reference(s, nv);
    int r = nlp_jscan_vocab(s, o0, nv, &end, &fast);
    assert(r == 0 || r == 1);
    if (r == 1 && nlp_jscan_ws(s, nv, end) == nv) {
        assert(ref);
        assert(nlp_vocab_size(fast) == nlp_vocab_size(ref) && nlp_vocab_count(fast) == nlp_vocab_count(ref));
        for (size_t i = 0; i < nlp_vocab_size(ref); i++) {
            size_t na = 0, nb = 0;
            const char *ta = nlp_vocab_token(fast, (int32_t)i, &na), *tb = nlp_vocab_token(ref, (int32_t)i, &nb);
            assert(!ta == !tb && na == nb && (!ta || memcmp(ta, tb, na) == 0));
        }
    }
    /* the structural scans never read past the end, and agree with jansson
     * where it reads an object */
    static const char *const k2[] = {"model", "vocab"};
    size_t sp[2][2];
    int m = nlp_jscan_doc_members(s, nv, k2, 2, sp);
    json_t *root = json_loadb(s, nv, JSON_DECODE_ANY, NULL);
    if (json_is_object(root)) assert(m == 1);
    json_decref(root);
    nlp_jscan_tok t;
    (void)nlp_jscan_tokenizer(s, nv, &t);
    if (z && ref) {
        const char *a = z + 1;
        size_t na = n - nv - 1, a0 = nlp_jscan_ws(a, na, 0), a1 = a0, count = 0, rcount = 0;
        int32_t *fm = NULL, *rm = NULL;
        if (nlp_jscan_skip(a, na, &a1) && nlp_jscan_ws(a, na, a1) == na &&
            nlp_jscan_merges(a, a0, a1, ref, &fm, &count) == 1) {
            assert(ref_merges(a, na, ref, &rm, &rcount) == 1);
            assert(rcount == count && memcmp(fm, rm, 2 * count * sizeof *fm) == 0);
        }
        free(fm);
        free(rm);
    }
    nlp_vocab_free(fast);
    nlp_vocab_free(ref);
    return 0;
}
