/*
 * wordpiece.c — greedy longest-match-first WordPiece. See wordpiece.h.
 */
#include "tok/wordpiece.h"
#include "base/err.h"
#include "base/mem.h"
#include "tok/wordcache.h"

#include <stdlib.h>
#include <string.h>

/* One table: token bytes (pointing into the vocabulary) -> id. */
struct ent {
    uint64_t h; /* 0 = empty */
    const char *s;
    uint32_t n;
    int32_t id;
};

struct table {
    struct ent *e;
    size_t mask;
    size_t maxlen; /* longest key, bytes */
};

struct nlp_wordpiece {
    struct table start, cont;
    int32_t unk;
    size_t max_chars;
    char *unk_name;
};

static int table_init(struct table *t, size_t count)
{
    size_t ns = 16;
    while (ns < count * 2) ns *= 2;
    t->e = nlp_calloc_dense(ns, sizeof *t->e); /* written all over: its pages made at once */
    t->mask = ns - 1;
    t->maxlen = 0;
    return t->e ? NLP_OK : NLP_ENOMEM;
}

static void table_put(struct table *t, const char *s, size_t n, int32_t id)
{
    uint64_t h = nlp_wordcache_hash(s, n);
    size_t j = h & t->mask;
    while (t->e[j].h) {
        if (t->e[j].h == h && t->e[j].n == n && memcmp(t->e[j].s, s, n) == 0) return; /* first id wins */
        j = (j + 1) & t->mask;
    }
    t->e[j] = (struct ent){h, s, (uint32_t)n, id};
    if (n > t->maxlen) t->maxlen = n;
}

static inline int32_t table_get(const struct table *t, const char *s, size_t n)
{
    uint64_t h = nlp_wordcache_hash(s, n);
    for (size_t j = h & t->mask; t->e[j].h; j = (j + 1) & t->mask)
        if (t->e[j].h == h && t->e[j].n == n && nlp_word_eq(t->e[j].s, s, n)) return t->e[j].id;
    return -1;
}

int nlp_wordpiece_new(nlp_wordpiece **out, const nlp_vocab *vocab, const nlp_wordpiece_opts *o)
{
    nlp_wordpiece *m = nlp_calloc(1, sizeof *m);
    if (!m) return NLP_ENOMEM;
    const char *prefix = o->continuing_subword_prefix ? o->continuing_subword_prefix : NLP_WORDPIECE_PREFIX;
    const char *unk = o->unk_token ? o->unk_token : NLP_WORDPIECE_UNK;
    size_t pl = strlen(prefix), size = nlp_vocab_size(vocab), ncont = 0;
    m->max_chars = o->max_input_chars_per_word ? o->max_input_chars_per_word : NLP_WORDPIECE_MAX_CHARS;
    for (size_t i = 0; i < size; i++) {
        size_t n;
        const char *t = nlp_vocab_token(vocab, (int32_t)i, &n);
        if (t && n >= pl && memcmp(t, prefix, pl) == 0) ncont++;
    }
    if (table_init(&m->start, nlp_vocab_count(vocab)) || table_init(&m->cont, ncont) ||
        !(m->unk_name = nlp_strdup(unk))) {
        nlp_wordpiece_free(m);
        return NLP_ENOMEM;
    }
    for (size_t i = 0; i < size; i++) {
        size_t n;
        const char *t = nlp_vocab_token(vocab, (int32_t)i, &n);
        if (!t) continue;
        table_put(&m->start, t, n, (int32_t)i);
        if (n >= pl && memcmp(t, prefix, pl) == 0) table_put(&m->cont, t + pl, n - pl, (int32_t)i);
    }
    m->unk = nlp_vocab_find(vocab, unk, strlen(unk));
    /* HF fails only at the first word that needs it; a file that cannot
     * encode every word is refused when it is loaded instead */
    if (nlp_vocab_count(vocab) == 0 || m->unk < 0) {
        int rc = nlp_vocab_count(vocab) == 0
                     ? nlp_error(NLP_EFORMAT, "model.vocab is empty: a WordPiece model needs at least its unknown token")
                     : nlp_error(NLP_EFORMAT, "unk_token '%s' is not in the vocabulary", unk);
        nlp_wordpiece_free(m);
        return rc;
    }
    *out = m;
    return NLP_OK;
}

void nlp_wordpiece_free(nlp_wordpiece *m)
{
    if (!m) return;
    free(m->start.e);
    free(m->cont.e);
    free(m->unk_name);
    free(m);
}

int32_t nlp_wordpiece_unk_id(const nlp_wordpiece *m) { return m->unk; }

static int push_unk(const nlp_wordpiece *m, const char *w, size_t n, nlp_ids *out)
{
    if (m->unk < 0)
        return nlp_error(NLP_EDATA, "the word '%.*s' needs the unknown token '%s', which is not in the vocabulary",
                         (int)(n > 60 ? 60 : n), w, m->unk_name);
    return nlp_ids_push(out, m->unk);
}

/* Start of the UTF-8 character that ends just before w[e] (e > 0). */
static inline size_t prev_char(const char *w, size_t e)
{
    do e--;
    while (e > 0 && ((unsigned char)w[e] & 0xC0) == 0x80);
    return e;
}

int nlp_wordpiece_encode_word(const nlp_wordpiece *m, const char *w, size_t n, nlp_ids *out)
{
    /* more than max_chars characters: count lead bytes, stopping early */
    if (n > m->max_chars) {
        size_t chars = 0;
        for (size_t i = 0; i < n && chars <= m->max_chars; i++) chars += ((unsigned char)w[i] & 0xC0) != 0x80;
        if (chars > m->max_chars) return push_unk(m, w, n, out);
    }
    size_t at = out->n, start = 0;
    while (start < n) {
        const struct table *t = start ? &m->cont : &m->start;
        size_t end = n;
        if (end - start > t->maxlen) {
            /* no token is longer: begin at the last character boundary
             * within reach */
            end = start + t->maxlen + 1;
            end = prev_char(w, end);
            if (end == start) {
                out->n = at;
                return push_unk(m, w, n, out);
            }
        }
        int32_t id = -1;
        while (end > start && (id = table_get(t, w + start, end - start)) < 0) end = prev_char(w, end);
        if (id < 0 || end <= start) {
            out->n = at;
            return push_unk(m, w, n, out);
        }
        if (nlp_ids_push(out, id)) return NLP_ENOMEM;
        start = end;
    }
    return NLP_OK;
}
