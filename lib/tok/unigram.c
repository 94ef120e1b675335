/*
 * unigram.c — HF tokenizers' Unigram model. See unigram.h.
 */
#include "tok/unigram.h"
#include "base/err.h"
#include "base/mem.h"
#include "tok/datrie.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nlp_unigram {
    const nlp_vocab *vocab;
    const double *score;
    nlp_datrie trie;
    double unk_score;
    nlp_unigram_opts o;
    int32_t byte_id[256];
    int bytes_ok; /* all 256 <0xNN> tokens exist */
};

struct best {
    double score;
    int32_t start, id;
};

void nlp_unigram_scratch_free(nlp_unigram_scratch *s)
{
    free(s->best);
    memset(s, 0, sizeof *s);
}

void nlp_unigram_free(nlp_unigram *m)
{
    if (!m) return;
    nlp_datrie_free(&m->trie);
    free(m);
}

int nlp_unigram_new(nlp_unigram **out, const nlp_vocab *vocab, const double *scores, const nlp_unigram_opts *o)
{
    size_t n = nlp_vocab_size(vocab);
    if (n == 0) return nlp_error(NLP_EFORMAT, "model.vocab: empty: a Unigram model needs at least its unknown token");
    if (o->unk_id >= 0 && (size_t)o->unk_id >= n)
        return nlp_error(NLP_EFORMAT, "model.unk_id: %ld is not below the vocabulary size %zu", (long)o->unk_id, n);
    nlp_unigram *m = nlp_calloc(1, sizeof *m);
    nlp_span *keys = nlp_malloc(n * sizeof *keys);
    int32_t *vals = nlp_malloc(n * sizeof *vals);
    int rc = NLP_ENOMEM;
    if (!m || !keys || !vals) goto fail;
    m->vocab = vocab;
    m->score = scores;
    m->o = *o;
    double min = INFINITY;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *t = nlp_vocab_token(vocab, (int32_t)i, &len);
        if (!t) {
            rc = nlp_error(NLP_EFORMAT, "model.vocab: id %zu has no token (a Unigram vocabulary is a list)", i);
            goto fail;
        }
        keys[i] = (nlp_span){t, len};
        vals[i] = (int32_t)i;
        if (scores[i] < min) min = scores[i];
    }
    m->unk_score = min - 10.0;
    if ((rc = nlp_datrie_build(&m->trie, keys, vals, n))) goto fail;
    m->bytes_ok = 1;
    for (int b = 0; b < 256; b++) {
        char p[8];
        snprintf(p, sizeof p, "<0x%02X>", b);
        m->byte_id[b] = nlp_vocab_find(vocab, p, 6);
        if (m->byte_id[b] < 0) m->bytes_ok = 0;
    }
    free(keys);
    free(vals);
    *out = m;
    return NLP_OK;
fail:
    free(keys);
    free(vals);
    nlp_unigram_free(m);
    return rc;
}

/* Length of the UTF-8 character at w[i] (Rust's char::len_utf8 on a str:
 * the text is well-formed; a stray byte counts as one). */
static inline size_t char_len(const char *w, size_t n, size_t i)
{
    unsigned char c = (unsigned char)w[i];
    size_t k = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return k > n - i ? n - i : k;
}

/* The ids of one fused string s[0..n) (a run of unknown pieces). */
static int put_fused(const nlp_unigram *m, const char *s, size_t n, nlp_ids *out)
{
    int32_t id = nlp_vocab_find(m->vocab, s, n);
    if (id >= 0) return nlp_ids_push(out, id);
    if (m->o.byte_fallback && m->bytes_ok) {
        for (size_t i = 0; i < n; i++)
            if (nlp_ids_push(out, m->byte_id[(unsigned char)s[i]])) return NLP_ENOMEM;
        return NLP_OK;
    }
    if (m->o.unk_id < 0)
        return nlp_error(NLP_EDATA, "'%.*s' needs the unknown token, but the Unigram model has no unk_id",
                         (int)(n > 40 ? 40 : n), s);
    return nlp_ids_push(out, m->o.unk_id);
}

int nlp_unigram_encode_word(const nlp_unigram *m, nlp_unigram_scratch *sc, const char *w, size_t n, nlp_ids *out)
{
    if (n == 0) return NLP_OK;
    if (nlp_grow(&sc->best, &sc->cap, n + 1, sizeof(struct best))) return NLP_ENOMEM;
    struct best *b = sc->best;
    for (size_t i = 0; i <= n; i++) b[i] = (struct best){0.0, -1, -1};
    for (size_t start = 0; start < n;) {
        const double till = b[start].score;
        size_t mblen = char_len(w, n, start);
        int single = 0;
        int32_t node = 0;
        for (size_t k = start; k < n;) {
            if (!nlp_datrie_step(&m->trie, &node, (uint8_t)w[k])) break;
            k++;
            int32_t id = nlp_datrie_value(&m->trie, node);
            if (id < 0) continue;
            double cand = m->score[id] + till;
            if (b[k].start < 0 || cand > b[k].score) b[k] = (struct best){cand, (int32_t)start, id};
            if (k - start == mblen) single = 1;
        }
        if (!single) {
            double cand = m->unk_score + till;
            struct best *t = &b[start + mblen];
            if (t->start < 0 || cand > t->score) {
                if (m->o.unk_id < 0) /* HF fails here, when the unknown piece would be on the path */
                    return nlp_error(NLP_EDATA, "'%.*s' needs the unknown token, but the Unigram model has no unk_id",
                                     (int)mblen, w + start);
                *t = (struct best){cand, (int32_t)start, m->o.unk_id};
            }
        }
        start += mblen;
    }
    /* the path backwards: count, then write it forwards, fusing unknowns */
    size_t np = 0;
    for (size_t e = n; e > 0; e = (size_t)b[e].start) np++;
    size_t *ends = nlp_malloc(np * sizeof *ends);
    if (!ends) return NLP_ENOMEM;
    size_t k = np;
    for (size_t e = n; e > 0; e = (size_t)b[e].start) ends[--k] = e;
    int rc = NLP_OK;
    for (size_t i = 0; i < np && !rc;) {
        size_t e = ends[i], s = (size_t)b[e].start;
        if (m->o.unk_id >= 0 && b[e].id == m->o.unk_id) {
            size_t j = i + 1;
            while (j < np && b[ends[j]].id == m->o.unk_id) j++;
            rc = put_fused(m, w + s, ends[j - 1] - s, out);
            i = j;
            continue;
        }
        rc = nlp_ids_push(out, b[e].id);
        i++;
    }
    free(ends);
    return rc;
}
