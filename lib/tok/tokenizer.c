/*
 * tokenizer.c — the tokenizer pipeline. See tokenizer.h.
 */
#include "tok/tokenizer.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/mem.h"
#include "text/bytelevel.h"
#include "text/unicode.h"
#include "text/utf8.h"
#include "tok/wordcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const char *const nlp_eot_tokens[] = {"<|endoftext|>", "</s>", "<eos>", "[SEP]", NULL};

struct nlp_tokenizer {
    nlp_tok_spec s;
    nlp_vocab *all; /* model vocabulary + added tokens, by id */
    int all_shared; /* all is s.vocab (nothing added to it): not freed apart */
    size_t vsize;
    uint8_t *special; /* by id */
    nlp_bpe *bpe;
    nlp_wordpiece *wp;
    nlp_unigram *uni;
    nlp_spm *spm;
    nlp_added_matcher *raw, *norm;
    /* decoder [ByteLevel] fast path: the bytes of id i are
     * blob[boff[i] .. boff[i+1]), built at the first decode (encoding never
     * needs them: a millisecond saved at every start); dec_state 0 not yet,
     * 1 built, 2 not this tokenizer's decoder */
    int dec_state;
    pthread_mutex_t dec_lock;
    char *blob;
    uint32_t *boff;
    int cuttable; /* see nlp_tokenizer_cuttable */
    int gpt2_only; /* nlp_pretok_is_gpt2_only: words are encoded as the split finds them */
};

struct nlp_tok_state {
    const nlp_tokenizer *tk;
    nlp_wordcache *cache;
    nlp_bpe_scratch bsc;
    nlp_unigram_scratch usc;
    nlp_spm_scratch ssc;
    nlp_buf norm, ntmp, work;
    nlp_pieces pieces;
    nlp_ids word;
    nlp_encoding ea, eb;
    int passthrough; /* nlp_encode_opts.unk_passthrough of the encoding under way */
};

// --- spec

void nlp_tok_spec_free(nlp_tok_spec *s)
{
    nlp_vocab_free(s->vocab);
    free(s->merges);
    free(s->bpe.unk_token);
    free(s->bpe.continuing_subword_prefix);
    free(s->bpe.end_of_word_suffix);
    free(s->wp.unk_token);
    free(s->wp.continuing_subword_prefix);
    free(s->scores);
    free(s->spm_data);
    nlp_norm_steps_free(s->norm, s->n_norm);
    free(s->pretok);
    nlp_postproc_free(&s->post);
    nlp_dec_steps_free(s->dec, s->n_dec);
    nlp_added_free(s->added, s->n_added);
    free(s->pad.pad_token);
    memset(s, 0, sizeof *s);
}

static int dup_str(char **dst, const char *src)
{
    *dst = NULL;
    if (!src) return NLP_OK;
    return (*dst = nlp_strdup(src)) ? NLP_OK : NLP_ENOMEM;
}

int nlp_tok_spec_copy(nlp_tok_spec *d, const nlp_tok_spec *s)
{
    memset(d, 0, sizeof *d);
    d->model = s->model;
    d->trunc = s->trunc;
    d->pad = s->pad;
    d->pad.pad_token = NULL;
    d->bpe = s->bpe;
    d->bpe.unk_token = d->bpe.continuing_subword_prefix = d->bpe.end_of_word_suffix = NULL;
    d->wp = s->wp;
    d->wp.unk_token = d->wp.continuing_subword_prefix = NULL;
    d->uni = s->uni;
    if (s->vocab && !(d->vocab = nlp_vocab_clone(s->vocab))) goto oom;
    if (s->n_merges) {
        d->merges = nlp_malloc(2 * s->n_merges * sizeof *d->merges);
        if (!d->merges) goto oom;
        memcpy(d->merges, s->merges, 2 * s->n_merges * sizeof *d->merges);
        d->n_merges = s->n_merges;
    }
    if (s->n_scores) {
        if (!(d->scores = nlp_malloc(s->n_scores * sizeof *d->scores))) goto oom;
        memcpy(d->scores, s->scores, s->n_scores * sizeof *d->scores);
        d->n_scores = s->n_scores;
    }
    if (s->spm_len) {
        if (!(d->spm_data = nlp_malloc(s->spm_len))) goto oom;
        memcpy(d->spm_data, s->spm_data, s->spm_len);
        d->spm_len = s->spm_len;
    }
    if (dup_str(&d->bpe.unk_token, s->bpe.unk_token) ||
        dup_str(&d->bpe.continuing_subword_prefix, s->bpe.continuing_subword_prefix) ||
        dup_str(&d->bpe.end_of_word_suffix, s->bpe.end_of_word_suffix) || dup_str(&d->pad.pad_token, s->pad.pad_token) ||
        dup_str(&d->wp.unk_token, s->wp.unk_token) ||
        dup_str(&d->wp.continuing_subword_prefix, s->wp.continuing_subword_prefix))
        goto oom;
    if (nlp_norm_steps_copy(s->norm, s->n_norm, &d->norm)) goto oom;
    d->n_norm = s->n_norm;
    if (s->n_pretok) {
        d->pretok = nlp_malloc(s->n_pretok * sizeof *d->pretok);
        if (!d->pretok) goto oom;
        memcpy(d->pretok, s->pretok, s->n_pretok * sizeof *d->pretok);
        d->n_pretok = s->n_pretok;
    }
    if (nlp_postproc_copy(&d->post, &s->post)) goto oom;
    if (nlp_dec_steps_copy(s->dec, s->n_dec, &d->dec)) goto oom;
    d->n_dec = s->n_dec;
    if (nlp_added_copy(s->added, s->n_added, &d->added)) goto oom;
    d->n_added = s->n_added;
    return NLP_OK;
oom:
    nlp_tok_spec_free(d);
    return NLP_ENOMEM;
}

int nlp_tok_spec_pipeline(nlp_tok_spec *s, nlp_tok_pipeline kind, const char *suffix)
{
    nlp_norm_steps_free(s->norm, s->n_norm);
    free(s->pretok);
    nlp_dec_steps_free(s->dec, s->n_dec);
    nlp_postproc_free(&s->post);
    s->norm = NULL;
    s->pretok = NULL;
    s->dec = NULL;
    s->n_norm = s->n_pretok = s->n_dec = 0;
    s->pretok = nlp_calloc(1, sizeof *s->pretok);
    if (!s->pretok) return NLP_ENOMEM;
    s->n_pretok = 1;
    if (kind == NLP_PIPE_BERT) {
        s->pretok[0] = (nlp_pretok_step){.type = NLP_PRETOK_BERT};
        s->norm = nlp_calloc(1, sizeof *s->norm);
        s->dec = nlp_calloc(1, sizeof *s->dec);
        if (!s->norm || !s->dec) return NLP_ENOMEM;
        s->norm[0] = nlp_norm_bert(1);
        s->n_norm = 1;
        s->dec[0] = (nlp_dec_step){.type = NLP_DEC_WORDPIECE, .cleanup = 1};
        s->n_dec = 1;
        if (!(s->dec[0].suffix = nlp_strdup(suffix ? suffix : NLP_WORDPIECE_PREFIX))) return NLP_ENOMEM;
        return NLP_OK;
    }
    if (kind == NLP_PIPE_BYTELEVEL) {
        s->pretok[0] = (nlp_pretok_step){.type = NLP_PRETOK_BYTELEVEL, .trim_offsets = 1, .use_regex = 1};
        s->post.bytelevel = 1;
        s->post.bl_add_prefix_space = 1;
        s->post.bl_use_regex = 1;
        s->dec = nlp_calloc(1, sizeof *s->dec);
        if (!s->dec) return NLP_ENOMEM;
        s->dec[0] = (nlp_dec_step){.type = NLP_DEC_BYTELEVEL, .add_prefix_space = 1, .trim_offsets = 1, .use_regex = 1};
        s->n_dec = 1;
        return NLP_OK;
    }
    s->pretok[0] = (nlp_pretok_step){.type = NLP_PRETOK_WHITESPACE_SPLIT};
    if (suffix) {
        s->dec = nlp_calloc(1, sizeof *s->dec);
        if (!s->dec || !(s->dec[0].suffix = nlp_strdup(suffix))) return NLP_ENOMEM;
        s->dec[0].type = NLP_DEC_BPE;
        s->n_dec = 1;
    }
    return NLP_OK;
}

void nlp_tok_spec_bert_case(nlp_tok_spec *s, int lowercase, int strip_accents)
{
    for (size_t i = 0; i < s->n_norm; i++)
        if (s->norm[i].type == NLP_NORM_STEP_BERT) {
            s->norm[i].lowercase = lowercase;
            s->norm[i].strip_accents = strip_accents;
        }
}

/* Id of token t in the spec's added tokens or vocabulary, or -1. */
static int32_t spec_find(const nlp_tok_spec *s, const char *t)
{
    for (size_t i = 0; i < s->n_added; i++)
        if (strcmp(s->added[i].content, t) == 0) return s->added[i].id;
    return s->vocab ? nlp_vocab_find(s->vocab, t, strlen(t)) : -1;
}

int nlp_tok_spec_bert_post(nlp_tok_spec *s, const char *cls, const char *sep)
{
    int32_t c = spec_find(s, cls), p = spec_find(s, sep);
    if (c < 0 || p < 0) return 0;
    int rc = nlp_postproc_set_cls_sep(&s->post, 0, cls, c, sep, p);
    return rc ? rc : 1;
}

// --- compile

void nlp_tokenizer_free(nlp_tokenizer *tk)
{
    if (!tk) return;
    nlp_tok_spec_free(&tk->s);
    if (!tk->all_shared) nlp_vocab_free(tk->all);
    free(tk->special);
    nlp_bpe_free(tk->bpe);
    nlp_wordpiece_free(tk->wp);
    nlp_unigram_free(tk->uni);
    nlp_spm_free(tk->spm);
    nlp_added_matcher_free(tk->raw);
    nlp_added_matcher_free(tk->norm);
    free(tk->blob);
    free(tk->boff);
    pthread_mutex_destroy(&tk->dec_lock);
    free(tk);
}

/* Builds tk->all (model vocabulary plus added tokens) and the special flags. */
static int build_ids(nlp_tokenizer *tk)
{
    const nlp_tok_spec *s = &tk->s;
    /* where every added token is in the model's vocabulary already (GPT-2's
     * <|endoftext|>, BERT's [CLS]...), that vocabulary serves: a copy of
     * 50,000 tokens would cost a millisecond at every start */
    int all_in = 1;
    for (size_t i = 0; i < s->n_added && all_in; i++) {
        size_t hn, n = strlen(s->added[i].content);
        const char *have = nlp_vocab_token(s->vocab, s->added[i].id, &hn);
        all_in = have && hn == n && memcmp(have, s->added[i].content, n) == 0;
    }
    tk->all_shared = all_in;
    tk->all = all_in ? s->vocab : nlp_vocab_clone(s->vocab);
    if (!tk->all) return NLP_ENOMEM;
    for (size_t i = 0; i < s->n_added; i++) {
        const nlp_added_token *t = &s->added[i];
        size_t n = strlen(t->content), hn;
        const char *have = nlp_vocab_token(tk->all, t->id, &hn);
        if (have) {
            if (hn != n || memcmp(have, t->content, n) != 0)
                return nlp_error(NLP_EFORMAT, "added token '%s' has id %ld, which is the token '%s'", t->content,
                                 (long)t->id, have);
            continue;
        }
        int32_t other = nlp_vocab_find(tk->all, t->content, n);
        if (other >= 0)
            return nlp_error(NLP_EFORMAT, "added token '%s' has id %ld but the vocabulary gives it id %ld",
                             t->content, (long)t->id, (long)other);
        int rc = nlp_vocab_set(tk->all, t->id, t->content, n);
        if (rc) return rc;
    }
    tk->vsize = nlp_vocab_size(tk->all);
    tk->special = nlp_calloc(tk->vsize ? tk->vsize : 1, 1);
    if (!tk->special) return NLP_ENOMEM;
    for (size_t i = 0; i < s->n_added; i++)
        if (s->added[i].special) tk->special[s->added[i].id] = 1;
    return NLP_OK;
}

/* May a text be cut before a space that follows a non-space character
 * (nlp_tokenizer_cut) and its pieces encoded apart, with the same ids?
 * Yes when no step looks across such a place:
 *  - the first pre-tokenizer step splits there: GPT-2's pattern (no match
 *    holds a non-space character followed by white space, and a match
 *    starting at the space depends only on what follows), or one of the
 *    steps that split at white space and drop it; later steps work on
 *    those pieces;
 *  - the normalizers work character by character and keep the space a
 *    space (Unicode normalization: a space starts a new segment; Lowercase);
 *    with a pre-tokenizer that drops white space, also StripAccents and
 *    BertNormalizer, which may remove characters or add spaces (around
 *    CJK) but never join words; not Strip, Prepend or Replace, which look
 *    at the text's ends or at strings;
 *  - no added token holds white space or strips it (lstrip, rstrip). */
static int cuttable(const nlp_tok_spec *s)
{
    if (s->n_pretok == 0) return 0;
    nlp_pretok_type t0 = s->pretok[0].type;
    int drops = t0 == NLP_PRETOK_WHITESPACE || t0 == NLP_PRETOK_WHITESPACE_SPLIT || t0 == NLP_PRETOK_BERT;
    if (!drops && t0 != NLP_PRETOK_GPT2_SPLIT && !(t0 == NLP_PRETOK_BYTELEVEL && s->pretok[0].use_regex)) return 0;
    for (size_t i = 0; i < s->n_norm; i++) {
        nlp_norm_type t = s->norm[i].type;
        if (t == NLP_NORM_STEP_NFC || t == NLP_NORM_STEP_NFD || t == NLP_NORM_STEP_NFKC ||
            t == NLP_NORM_STEP_NFKD || t == NLP_NORM_STEP_LOWERCASE)
            continue;
        if (drops && (t == NLP_NORM_STEP_STRIP_ACCENTS || t == NLP_NORM_STEP_BERT)) continue;
        return 0;
    }
    for (size_t i = 0; i < s->n_added; i++) {
        const nlp_added_token *a = &s->added[i];
        if (a->lstrip || a->rstrip) return 0;
        size_t n = strlen(a->content), k = 0;
        while (k < n) {
            int32_t cp = nlp_utf8_next(a->content, n, &k);
            if (nlp_uc_is_white_space(cp)) return 0;
        }
    }
    return 1;
}

/* Every id the post-processor adds must be a token: a template naming id
 * 99999999 would otherwise encode fine and fail only in a token stream or
 * when decoded. */
static int check_post_ids(const nlp_tokenizer *tk)
{
    const nlp_postproc *p = &tk->s.post;
    for (size_t i = 0; i < p->n_specials; i++)
        for (size_t k = 0; k < p->specials[i].n; k++) {
            int32_t id = p->specials[i].ids[k];
            if (id < 0 || (size_t)id >= tk->vsize || !nlp_vocab_token(tk->all, id, NULL))
                return nlp_error(NLP_EFORMAT, "post_processor: special token '%s' has id %ld, which is not in the "
                                 "vocabulary (size %zu)", p->specials[i].name, (long)id, tk->vsize);
        }
    if (p->type == NLP_POST_BERT || p->type == NLP_POST_ROBERTA) {
        const int32_t ids[2] = {p->cls_id, p->sep_id};
        const char *names[2] = {"cls", "sep"};
        for (int k = 0; k < 2; k++)
            if (ids[k] < 0 || (size_t)ids[k] >= tk->vsize || !nlp_vocab_token(tk->all, ids[k], NULL))
                return nlp_error(NLP_EFORMAT, "post_processor: '%s' has id %ld, which is not in the vocabulary "
                                 "(size %zu)", names[k], (long)ids[k], tk->vsize);
    }
    return NLP_OK;
}

static int build_decode_bytes(nlp_tokenizer *tk)
{
    tk->boff = nlp_calloc(tk->vsize + 1, sizeof *tk->boff);
    if (!tk->boff) return NLP_ENOMEM;
    nlp_buf b = {0};
    for (size_t i = 0; i < tk->vsize; i++) {
        size_t n;
        const char *t = nlp_vocab_token(tk->all, (int32_t)i, &n);
        if (t) {
            int r = nlp_bytelevel_decode(t, n, &b);
            if (r < 0 || (r == 0 && nlp_buf_append(&b, t, n))) {
                nlp_buf_free(&b);
                return NLP_ENOMEM;
            }
        }
        if (b.len > UINT32_MAX) {
            nlp_buf_free(&b);
            return nlp_error(NLP_ENOMEM, "vocabulary too large");
        }
        tk->boff[i + 1] = (uint32_t)b.len;
    }
    tk->blob = nlp_buf_detach(&b, NULL);
    if (!tk->blob) return NLP_ENOMEM;
    return NLP_OK;
}

/* Is the byte table there (built now if need be)? 1, 0 (not this
 * tokenizer's decoder), or NLP_ENOMEM. Any thread may ask first. */
static int decode_bytes(const nlp_tokenizer *ctk)
{
    nlp_tokenizer *tk = (nlp_tokenizer *)ctk; /* the table is a cache: the tokenizer does not change */
    int st = __atomic_load_n(&tk->dec_state, __ATOMIC_ACQUIRE);
    if (st) return st == 1;
    int rc = NLP_OK;
    pthread_mutex_lock(&tk->dec_lock);
    if (!tk->dec_state) {
        rc = build_decode_bytes(tk);
        if (rc) {
            free(tk->boff);
            tk->boff = NULL;
        } else __atomic_store_n(&tk->dec_state, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&tk->dec_lock);
    return rc ? rc : 1;
}

int nlp_tokenizer_new(nlp_tokenizer **out, nlp_tok_spec *spec)
{
    if (!spec->vocab) return nlp_error(NLP_EFORMAT, "tokenizer has no vocabulary");
    nlp_tokenizer *tk = nlp_calloc(1, sizeof *tk);
    if (!tk) return NLP_ENOMEM;
    pthread_mutex_init(&tk->dec_lock, NULL);
    tk->s = *spec; /* borrowed until success */
    int rc = build_ids(tk);
    if (!rc) rc = nlp_postproc_check(&tk->s.post);
    if (!rc) rc = check_post_ids(tk);
    if (!rc) {
        switch (tk->s.model) {
        case NLP_MODEL_BPE:
            rc = nlp_bpe_new(&tk->bpe, tk->s.vocab, tk->s.merges, tk->s.n_merges, &tk->s.bpe,
                             nlp_pretok_is_byte_level(tk->s.pretok, tk->s.n_pretok));
            break;
        case NLP_MODEL_WORDPIECE: rc = nlp_wordpiece_new(&tk->wp, tk->s.vocab, &tk->s.wp); break;
        case NLP_MODEL_UNIGRAM:
            if (tk->s.n_scores < nlp_vocab_size(tk->s.vocab))
                rc = nlp_error(NLP_EFORMAT, "Unigram model: %zu scores for %zu tokens", tk->s.n_scores,
                               nlp_vocab_size(tk->s.vocab));
            else
                rc = nlp_unigram_new(&tk->uni, tk->s.vocab, tk->s.scores, &tk->s.uni);
            break;
        case NLP_MODEL_SPM:
            if (!tk->s.spm_len) rc = nlp_error(NLP_EFORMAT, "sentencepiece model: no model");
            else rc = nlp_spm_new(&tk->spm, tk->s.spm_data, tk->s.spm_len, "sentencepiece model");
            if (!rc) {
                /* the control pieces are the special ids */
                const nlp_spm_info *in = nlp_spm_info_of(tk->spm);
                for (size_t i = 0; i < in->n && i < tk->vsize; i++)
                    if (in->type[i] == NLP_SPM_CONTROL) tk->special[i] = 1;
            }
            break;
        }
    }
    if (!rc) {
        tk->raw = nlp_added_matcher_new(tk->s.added, tk->s.n_added, 0);
        tk->norm = nlp_added_matcher_new(tk->s.added, tk->s.n_added, 1);
        if (!tk->raw || !tk->norm) rc = NLP_ENOMEM;
    }
    if (!rc) tk->dec_state = tk->s.n_dec == 1 && tk->s.dec[0].type == NLP_DEC_BYTELEVEL ? 0 : 2;
    if (!rc) tk->cuttable = cuttable(&tk->s);
    if (!rc) tk->gpt2_only = nlp_pretok_is_gpt2_only(tk->s.pretok, tk->s.n_pretok);
    if (rc) {
        memset(&tk->s, 0, sizeof tk->s); /* the caller keeps the spec */
        nlp_tokenizer_free(tk);
        return rc;
    }
    memset(spec, 0, sizeof *spec);
    *out = tk;
    return NLP_OK;
}

int nlp_tokenizer_add_special(nlp_tokenizer **out, const nlp_tokenizer *tk, const char *const *names, size_t n,
                              int32_t first, size_t *added)
{
    *out = NULL;
    if (added) *added = 0;
    if (first < 0 || (size_t)first < tk->vsize)
        return nlp_error(NLP_EINVAL, "added tokens from id %ld: the tokenizer has ids up to %zu", (long)first,
                         tk->vsize);
    size_t missing = 0;
    for (size_t i = 0; i < n; i++) {
        if (!names[i][0]) return nlp_error(NLP_EINVAL, "an added token cannot be empty");
        missing += nlp_tokenizer_token_to_id(tk, names[i], strlen(names[i])) < 0;
    }
    if (missing && tk->s.model == NLP_MODEL_SPM)
        return nlp_error(NLP_EFORMAT, "a sentencepiece model takes no added tokens (it lacks '%s')", names[0]);
    nlp_tok_spec spec = {0};
    if (nlp_tok_spec_copy(&spec, &tk->s)) return NLP_ENOMEM;
    nlp_added_token *a = missing ? nlp_reallocarray(spec.added, spec.n_added + missing, sizeof *a) : spec.added;
    if (missing && !a) {
        nlp_tok_spec_free(&spec);
        return NLP_ENOMEM;
    }
    spec.added = a;
    int32_t id = first;
    for (size_t i = 0; i < n; i++) {
        if (nlp_tokenizer_token_to_id(tk, names[i], strlen(names[i])) >= 0) continue;
        nlp_added_token *t = &spec.added[spec.n_added];
        memset(t, 0, sizeof *t);
        t->id = id++;
        t->special = 1;
        if (!(t->content = nlp_strdup(names[i]))) {
            nlp_tok_spec_free(&spec);
            return NLP_ENOMEM;
        }
        spec.n_added++;
    }
    int rc = nlp_tokenizer_new(out, &spec);
    if (rc) {
        nlp_tok_spec_free(&spec);
        return rc;
    }
    if (added) *added = missing;
    return NLP_OK;
}

const nlp_tok_spec *nlp_tokenizer_spec(const nlp_tokenizer *tk) { return &tk->s; }

int nlp_tokenizer_cuttable(const nlp_tokenizer *tk) { return tk->cuttable; }

size_t nlp_tokenizer_cut(const char *s, size_t n)
{
    for (size_t p = n; p-- > 1;) {
        if (s[p] != ' ') continue;
        size_t q = p - 1;
        while (q > 0 && ((unsigned char)s[q] & 0xC0) == 0x80 && p - q < 4) q--;
        size_t i = q;
        int32_t cp = nlp_utf8_next(s, p, &i);
        if (i != p) cp = -1; /* not one character that ends at p: an ill-formed byte */
        if (!nlp_uc_is_white_space(cp)) return p;
    }
    return 0;
}
size_t nlp_tokenizer_vocab_size(const nlp_tokenizer *tk) { return tk->vsize; }

const char *nlp_tokenizer_id_to_token(const nlp_tokenizer *tk, int32_t id, size_t *n)
{
    return nlp_vocab_token(tk->all, id, n);
}

int32_t nlp_tokenizer_token_to_id(const nlp_tokenizer *tk, const char *s, size_t n)
{
    return nlp_vocab_find(tk->all, s, n);
}

int nlp_tokenizer_is_special(const nlp_tokenizer *tk, int32_t id)
{
    return id >= 0 && (size_t)id < tk->vsize && tk->special[id];
}

// --- encoding

nlp_tok_state *nlp_tok_state_new(const nlp_tokenizer *tk)
{
    nlp_tok_state *st = nlp_calloc(1, sizeof *st);
    if (!st) return NULL;
    st->tk = tk;
    st->cache = nlp_wordcache_new(0);
    if (!st->cache) {
        free(st);
        return NULL;
    }
    return st;
}

void nlp_tok_state_free(nlp_tok_state *st)
{
    if (!st) return;
    nlp_wordcache_free(st->cache);
    nlp_bpe_scratch_free(&st->bsc);
    nlp_unigram_scratch_free(&st->usc);
    nlp_spm_scratch_free(&st->ssc);
    nlp_buf_free(&st->norm);
    nlp_buf_free(&st->ntmp);
    nlp_buf_free(&st->work);
    nlp_pieces_free(&st->pieces);
    nlp_ids_free(&st->word);
    nlp_encoding_free(&st->ea);
    nlp_encoding_free(&st->eb);
    free(st);
}

/* The model on one word, through the cache. */
static int model_word(const nlp_tokenizer *tk, nlp_tok_state *st, const char *w, size_t n, nlp_ids *out)
{
    uint64_t h = nlp_wordcache_hash(w, n);
    size_t k;
    const int32_t *hit = nlp_wordcache_get(st->cache, w, n, h, &k);
    if (hit) {
        if (out->n + k > out->cap && nlp_grow(&out->v, &out->cap, out->n + k, sizeof *out->v)) return NLP_ENOMEM;
        for (size_t i = 0; i < k; i++) out->v[out->n + i] = hit[i];
        out->n += k;
        return NLP_OK;
    }
    size_t at = out->n;
    int rc = NLP_OK;
    switch (tk->s.model) {
    case NLP_MODEL_BPE: rc = nlp_bpe_encode_word(tk->bpe, &st->bsc, w, n, out); break;
    case NLP_MODEL_WORDPIECE: rc = nlp_wordpiece_encode_word(tk->wp, w, n, out); break;
    case NLP_MODEL_UNIGRAM: rc = nlp_unigram_encode_word(tk->uni, &st->usc, w, n, out); break;
    case NLP_MODEL_SPM: rc = nlp_spm_encode(tk->spm, &st->ssc, w, n, 0, out); break; /* not reached: encode_ids */
    }
    if (rc) return rc;
    return nlp_wordcache_put(st->cache, w, n, h, out->v + at, out->n - at);
}

/* unk_passthrough: replaces the unknown tokens among the ids v[0..k) of
 * word w[0..n) by the characters they stand for. The pieces are walked
 * along the word (prefix and suffix taken off as the model adds them); an
 * unknown token of an unfused classic BPE stands for one character. A word
 * the pieces do not spell is left as it is. */
static void pass_through(const nlp_tokenizer *tk, const char *w, size_t n, int32_t *v, size_t k)
{
    const nlp_bpe_opts *o = &tk->s.bpe;
    if (tk->s.model != NLP_MODEL_BPE || !o->unk_token || o->fuse_unk || o->byte_fallback) return;
    int32_t unk = nlp_vocab_find(tk->s.vocab, o->unk_token, strlen(o->unk_token));
    size_t plen = o->continuing_subword_prefix ? strlen(o->continuing_subword_prefix) : 0;
    size_t slen = o->end_of_word_suffix ? strlen(o->end_of_word_suffix) : 0;
    size_t p = 0;
    for (size_t i = 0; i < k && p < n; i++) {
        if (v[i] == unk) {
            size_t q = p;
            int32_t cp = nlp_utf8_next(w, n, &q);
            if (cp < 0) return;
            v[i] = NLP_TOK_PASSTHROUGH(cp, q == n);
            p = q;
            continue;
        }
        size_t tn;
        const char *t = nlp_vocab_token(tk->s.vocab, v[i], &tn);
        if (!t) return;
        if (p > 0 && plen && tn >= plen && memcmp(t, o->continuing_subword_prefix, plen) == 0) t += plen, tn -= plen;
        if (slen && tn >= slen && memcmp(t + tn - slen, o->end_of_word_suffix, slen) == 0) tn -= slen;
        if (tn > n - p || memcmp(w + p, t, tn) != 0) return;
        p += tn;
    }
}

/* One piece of pre-tokenized text through the model. */
static int piece(const nlp_tokenizer *tk, nlp_tok_state *st, const char *w, size_t n, nlp_ids *out)
{
    const size_t at = out->n;
    int rc = model_word(tk, st, w, n, out);
    if (!rc && st->passthrough) pass_through(tk, w, n, out->v + at, out->n - at);
    return rc;
}

/* Pre-tokenizer and model on normalized text (at_start: the text begins
 * the input, for Metaspace's "first" scheme). */
static int words(const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n, int at_start, nlp_ids *out)
{
    int rc = NLP_OK;
    if (tk->gpt2_only) { /* the same pieces in the same order, and no list of them (a long line's is MBs) */
        for (size_t i = 0, e; i < n && !rc; i = e) {
            e = nlp_pretok_gpt2_next(s, n, i);
            rc = piece(tk, st, s + i, e - i, out);
        }
        return rc;
    }
    st->pieces.n = 0;
    rc = nlp_pretok_run_at(tk->s.pretok, tk->s.n_pretok, s, n, &st->work, &st->pieces, at_start);
    for (size_t i = 0; i < st->pieces.n && !rc; i++) rc = piece(tk, st, st->pieces.v[i].p, st->pieces.v[i].n, out);
    return rc;
}

/* Normalizer, normalized added tokens, then words(), on raw text between
 * special tokens. */
static int segment(const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n, int split_special,
                   int at_start, nlp_ids *out)
{
    if (n == 0) return NLP_OK;
    const char *t = s;
    size_t tn = n;
    if (tk->s.n_norm) {
        int rc = nlp_normalize(tk->s.norm, tk->s.n_norm, s, n, &st->norm, &st->ntmp);
        if (rc) return rc;
        t = st->norm.data;
        tn = st->norm.len;
    }
    if (nlp_added_matcher_empty(tk->norm, split_special)) return words(tk, st, t, tn, at_start, out);
    size_t pos = 0, ms, me;
    int32_t id;
    while (nlp_added_next(tk->norm, t, tn, pos, pos, split_special, &ms, &me, &id)) {
        int rc = words(tk, st, t + pos, ms - pos, at_start && pos == 0, out);
        if (rc || (rc = nlp_ids_push(out, id))) return rc;
        pos = me;
    }
    return words(tk, st, t + pos, tn - pos, at_start && pos == 0, out);
}

/* sentencepiece: the whole text through the model, as spm_encode; tokens
 * added to the model (finetune's [START]...: ids past its pieces) are cut
 * out of the raw text first, normalized or not, and the text between them
 * goes through the model piece by piece. */
static int spm_encode_ids(const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n, int split_special,
                          nlp_ids *out)
{
    if (nlp_added_matcher_empty(tk->raw, split_special) && nlp_added_matcher_empty(tk->norm, split_special))
        return nlp_spm_encode(tk->spm, &st->ssc, s, n, st->passthrough, out);
    size_t pos = 0;
    while (pos < n) {
        size_t a0 = n, a1 = n, b0 = n, b1 = n;
        int32_t ida = -1, idb = -1;
        int ha = nlp_added_next(tk->raw, s, n, pos, pos, split_special, &a0, &a1, &ida);
        int hb = nlp_added_next(tk->norm, s, n, pos, pos, split_special, &b0, &b1, &idb);
        if (!ha && !hb) break;
        int use_a = ha && (!hb || a0 <= b0);
        size_t ms = use_a ? a0 : b0, me = use_a ? a1 : b1;
        int rc = ms > pos ? nlp_spm_encode(tk->spm, &st->ssc, s + pos, ms - pos, st->passthrough, out) : NLP_OK;
        if (rc || (rc = nlp_ids_push(out, use_a ? ida : idb))) return rc;
        pos = me;
    }
    return pos < n ? nlp_spm_encode(tk->spm, &st->ssc, s + pos, n - pos, st->passthrough, out) : NLP_OK;
}

int nlp_tokenizer_encode_ids(const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n,
                             int split_special, nlp_ids *out)
{
    if (tk->spm) return spm_encode_ids(tk, st, s, n, split_special, out);
    if (nlp_added_matcher_empty(tk->raw, split_special)) return segment(tk, st, s, n, split_special, 1, out);
    size_t pos = 0, ms, me;
    int32_t id;
    while (nlp_added_next(tk->raw, s, n, pos, pos, split_special, &ms, &me, &id)) {
        int rc = segment(tk, st, s + pos, ms - pos, split_special, pos == 0, out);
        if (rc || (rc = nlp_ids_push(out, id))) return rc;
        pos = me;
    }
    return segment(tk, st, s + pos, n - pos, split_special, pos == 0, out);
}

// --- offsets

/* The normalized text of s[0..n) with, for each of its bytes, the bytes of
 * s it comes from (a unit [from, to) of s). Units are first a character
 * with the combining marks that follow it (the normalizers in use work on
 * such units: case, accents, NFC/NFD, BERT's cleaning), each normalized on
 * its own; when their concatenation is not what the whole text normalizes
 * to, units are words with their trailing white space, and else the whole
 * text (always right, and coarse). `base` is added to every offset. */
static int norm_map(const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n, size_t base, nlp_buf *N,
                    uint32_t **from, uint32_t **to, size_t cap[2])
{
    nlp_buf whole = {0};
    int rc = tk->s.n_norm ? nlp_normalize(tk->s.norm, tk->s.n_norm, s, n, &whole, &st->ntmp) : nlp_buf_append(&whole, s, n);
    for (int level = 0; level < 3 && !rc; level++) {
        nlp_buf_reset(N);
        for (size_t u0 = 0, u1; u0 < n && !rc; u0 = u1) {
            u1 = u0;
            if (level == 2) u1 = n;
            else {
                int32_t cp = nlp_utf8_next(s, n, &u1); /* the unit's first character */
                for (size_t q = u1; q < n;) {
                    size_t r = q;
                    int32_t c = nlp_utf8_next(s, n, &r);
                    int more = level == 0 ? nlp_uc_cat_is_mark(nlp_uc_category(c))
                                          : !(nlp_uc_is_white_space(cp) && !nlp_uc_is_white_space(c));
                    if (!more) break;
                    cp = c, q = u1 = r;
                }
            }
            const size_t at = N->len;
            if (tk->s.n_norm) {
                if ((rc = nlp_normalize(tk->s.norm, tk->s.n_norm, s + u0, u1 - u0, &st->norm, &st->ntmp))) break;
                rc = nlp_buf_append(N, st->norm.data ? st->norm.data : "", st->norm.len);
            } else {
                rc = nlp_buf_append(N, s + u0, u1 - u0);
            }
            if (rc || nlp_grow(from, &cap[0], N->len + 1, sizeof **from) || nlp_grow(to, &cap[1], N->len + 1, sizeof **to)) {
                rc = rc ? rc : NLP_ENOMEM;
                break;
            }
            for (size_t k = at; k < N->len; k++) (*from)[k] = (uint32_t)(base + u0), (*to)[k] = (uint32_t)(base + u1);
        }
        if (!rc && N->len == whole.len && (!N->len || memcmp(N->data, whole.data, N->len) == 0)) break;
    }
    nlp_buf_free(&whole);
    return rc;
}

/* The model's tokens of one piece p[0..pn) of N (at N offset at) and their
 * offsets: each token's text walked along the piece (a continuing prefix
 * or end-of-word suffix taken off); a piece its tokens do not spell (an
 * unknown token, byte fallback) gives each of them the whole piece. */
static int piece_offsets(const nlp_tokenizer *tk, nlp_tok_state *st, const char *p, size_t pn, size_t at,
                         const uint32_t *from, const uint32_t *to, nlp_ids *ids, nlp_ids *off)
{
    const size_t k0 = ids->n;
    int rc = model_word(tk, st, p, pn, ids);
    if (rc) return rc;
    const int wp = tk->s.model == NLP_MODEL_WORDPIECE;
    const char *pre = wp ? (tk->s.wp.continuing_subword_prefix ? tk->s.wp.continuing_subword_prefix : NLP_WORDPIECE_PREFIX)
                         : tk->s.bpe.continuing_subword_prefix;
    const char *suf = wp ? NULL : tk->s.bpe.end_of_word_suffix;
    const size_t plen = pre ? strlen(pre) : 0, slen = suf ? strlen(suf) : 0;
    size_t pos = 0;
    int spelled = 1;
    for (size_t i = k0; i < ids->n && spelled; i++) {
        size_t tn;
        const char *t = nlp_vocab_token(tk->s.vocab, ids->v[i], &tn);
        if (!t) {
            spelled = 0;
            break;
        }
        if (i > k0 && plen && tn > plen && memcmp(t, pre, plen) == 0) t += plen, tn -= plen;
        if (slen && tn > slen && memcmp(t + tn - slen, suf, slen) == 0 && pos + tn - slen == pn) tn -= slen;
        if (!tn || tn > pn - pos || memcmp(p + pos, t, tn) != 0) spelled = 0;
        else pos += tn;
    }
    spelled &= pos == pn;
    pos = 0;
    for (size_t i = k0; i < ids->n; i++) {
        size_t a = 0, b = pn; /* the token's bytes in the piece */
        if (spelled) {
            size_t tn;
            const char *t = nlp_vocab_token(tk->s.vocab, ids->v[i], &tn);
            if (i > k0 && plen && tn > plen && memcmp(t, pre, plen) == 0) tn -= plen;
            if (slen && tn > slen && memcmp(t + tn - slen, suf, slen) == 0 && pos + tn - slen == pn) tn -= slen;
            a = pos, b = pos + tn, pos = b;
        }
        if ((rc = nlp_ids_push(off, (int32_t)from[at + a])) || (rc = nlp_ids_push(off, (int32_t)to[at + b - 1])))
            return rc;
    }
    return NLP_OK;
}

/* One segment s[0..n) between raw added tokens (at byte base of the whole
 * text): normalized with its map, normalized added tokens cut out, the rest
 * pre-tokenized and through the model. */
static int segment_offsets(const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n, size_t base,
                           int at_start, nlp_ids *ids, nlp_ids *off)
{
    if (!n) return NLP_OK;
    nlp_buf N = {0};
    uint32_t *from = NULL, *to = NULL;
    size_t cap[2] = {0, 0};
    int rc = norm_map(tk, st, s, n, base, &N, &from, &to, cap);
    size_t pos = 0, ms = 0, me = 0;
    int32_t id;
    while (!rc && pos <= N.len) {
        int hit = nlp_added_next(tk->norm, N.data ? N.data : "", N.len, pos, pos, 1, &ms, &me, &id);
        if (!hit) ms = me = N.len;
        if (ms > pos) { /* the words before it */
            st->pieces.n = 0;
            rc = nlp_pretok_run_at(tk->s.pretok, tk->s.n_pretok, N.data + pos, ms - pos, &st->work, &st->pieces,
                                   at_start && pos == 0);
            for (size_t i = 0; i < st->pieces.n && !rc; i++) {
                const nlp_piece *pc = &st->pieces.v[i];
                if (pc->p < N.data || pc->p + pc->n > N.data + N.len)
                    rc = nlp_error(NLP_EINVAL, "token offsets: the pre-tokenizer rewrites the text (byte-level, "
                                   "metaspace), so its pieces are not the text's bytes");
                else if (pc->n)
                    rc = piece_offsets(tk, st, pc->p, pc->n, (size_t)(pc->p - N.data), from, to, ids, off);
            }
        }
        if (!hit || rc) break;
        if (!(rc = nlp_ids_push(ids, id)) && !(rc = nlp_ids_push(off, (int32_t)from[ms])))
            rc = nlp_ids_push(off, (int32_t)to[me - 1]);
        pos = me;
    }
    nlp_buf_free(&N);
    free(from), free(to);
    return rc;
}

int nlp_tokenizer_encode_offsets(const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n, nlp_ids *ids,
                                 nlp_ids *off)
{
    if (tk->spm || (tk->s.model != NLP_MODEL_WORDPIECE && tk->s.model != NLP_MODEL_BPE))
        return nlp_error(NLP_EINVAL, "token offsets are computed for WordPiece and BPE tokenizers, not sentencepiece "
                         "or unigram ones");
    if (n > INT32_MAX) return nlp_error(NLP_EINVAL, "token offsets: a text of %zu bytes (at most 2 GiB)", n);
    const int passthrough = st->passthrough;
    st->passthrough = 0;
    int rc = NLP_OK;
    size_t pos = 0, ms, me;
    int32_t id;
    while (!rc && nlp_added_next(tk->raw, s, n, pos, pos, 1, &ms, &me, &id)) {
        rc = segment_offsets(tk, st, s + pos, ms - pos, pos, pos == 0, ids, off);
        if (!rc && !(rc = nlp_ids_push(ids, id)) && !(rc = nlp_ids_push(off, (int32_t)ms)))
            rc = nlp_ids_push(off, (int32_t)me);
        pos = me;
    }
    if (!rc) rc = segment_offsets(tk, st, s + pos, n - pos, pos, pos == 0, ids, off);
    st->passthrough = passthrough;
    return rc;
}

static int encode_one(const nlp_tokenizer *tk, nlp_tok_state *st, const char *s, size_t n, int split_special,
                      int type_id, nlp_encoding *e)
{
    nlp_encoding_reset(e);
    st->word.n = 0;
    int rc = nlp_tokenizer_encode_ids(tk, st, s, n, split_special, &st->word);
    if (rc) return rc;
    return nlp_encoding_append(e, st->word.v, st->word.n, type_id, 0);
}

int nlp_tokenizer_encode(const nlp_tokenizer *tk, nlp_tok_state *st, const char *a, size_t na, const char *b,
                         size_t nb, const nlp_encode_opts *opt, nlp_encoding *out)
{
    static const nlp_encode_opts defaults = {.add_special = 1};
    if (!opt) opt = &defaults;
    st->passthrough = opt->unk_passthrough;
    int rc = encode_one(tk, st, a, na, opt->split_special, 0, &st->ea);
    if (!rc && b) rc = encode_one(tk, st, b, nb, opt->split_special, 1, &st->eb);
    st->passthrough = 0;
    if (rc) return rc;
    const nlp_truncation *tr = opt->trunc ? opt->trunc : &tk->s.trunc;
    size_t added = opt->add_special ? nlp_postproc_added(&tk->s.post, b != NULL) : 0;
    if ((rc = nlp_truncate(tr, added, &st->ea, b ? &st->eb : NULL))) return rc;
    if (tk->s.post.type == NLP_POST_NONE && !b) {
        /* nothing to add: the encoding is handed over, not copied (type ids
         * are already 0, as nlp_postproc_apply would write them) */
        nlp_encoding t = *out;
        *out = st->ea;
        st->ea = t;
        return NLP_OK;
    }
    return nlp_postproc_apply(&tk->s.post, &st->ea, b ? &st->eb : NULL, opt->add_special, out);
}

// --- decoding

int nlp_tokenizer_decode(const nlp_tokenizer *tk, const int32_t *ids, size_t n, int skip_special, nlp_buf *out,
                         size_t *bad)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= tk->vsize ||
            (!nlp_vocab_token(tk->all, ids[i], NULL) && !(tk->spm && (size_t)ids[i] < nlp_spm_info_of(tk->spm)->n))) {
            if (bad) *bad = i;
            if (ids[i] >= 0 && (size_t)ids[i] < tk->vsize)
                return nlp_error(NLP_EDATA, "id %ld has no token", (long)ids[i]);
            return nlp_error(NLP_EDATA, "id %ld is out of range (vocabulary size %zu)", (long)ids[i], tk->vsize);
        }
    if (tk->spm) {
        /* the model's ids in runs, as spm_decode; an added token (an id past
         * the pieces) as its text */
        size_t np = nlp_spm_info_of(tk->spm)->n;
        int32_t *kept = nlp_malloc((n ? n : 1) * sizeof *kept);
        if (!kept) return NLP_ENOMEM;
        size_t k = 0;
        int rc = NLP_OK;
        for (size_t i = 0; i <= n && !rc; i++) {
            if (i < n && skip_special && tk->special[ids[i]]) continue;
            if (i < n && (size_t)ids[i] < np) {
                kept[k++] = ids[i];
                continue;
            }
            if (k) rc = nlp_spm_decode(tk->spm, kept, k, out);
            k = 0;
            size_t tn;
            const char *t = i < n ? nlp_vocab_token(tk->all, ids[i], &tn) : NULL;
            if (!rc && t && nlp_buf_append(out, t, tn)) rc = NLP_ENOMEM;
        }
        free(kept);
        return rc ? rc : nlp_buf_reserve(out, 0);
    }
    int table = decode_bytes(tk);
    if (table < 0) return table;
    if (table) {
        for (size_t i = 0; i < n; i++) {
            int32_t id = ids[i];
            if (skip_special && tk->special[id]) continue;
            if (nlp_buf_append(out, tk->blob + tk->boff[id], tk->boff[id + 1] - tk->boff[id])) return NLP_ENOMEM;
        }
        return nlp_buf_reserve(out, 0);
    }
    nlp_dec_token *t = nlp_malloc((n ? n : 1) * sizeof *t);
    if (!t) return NLP_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (skip_special && tk->special[ids[i]]) continue;
        t[k].s = nlp_vocab_token(tk->all, ids[i], &t[k].n);
        k++;
    }
    int rc = nlp_decode_tokens(tk->s.dec, tk->s.n_dec, t, k, out);
    free(t);
    return rc;
}
