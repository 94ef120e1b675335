/*
 * test_tok.c — the tokenizer layers: character classes, GPT-2 byte map and
 * pre-tokenizer, BPE encoding (against a naive reference), added tokens,
 * normalizers, templates/truncation/padding, decoders, tokenizer.json round
 * trip and errors, token streams (ours and llm.c's), and the lecture's
 * classic-BPE encoding examples.
 */
#include "test.h"

#include "base/err.h"
#include "base/io.h"
#include "base/rng.h"

#include <sys/stat.h>
#include "text/bytelevel.h"
#include "text/uclass.h"
#include "tok/tokbin.h"
#include "tok/tokfiles.h"
#include "tok/tokjson.h"
#include "tok/wordcache.h"

// --- helpers

/* Joins the pieces of a pre-tokenizer run with '|'. */
static const char *split(const nlp_pretok_step *st, size_t n, const char *s)
{
    static char out[1024];
    nlp_buf work = {0};
    nlp_pieces p = {0};
    nlp_pretok_run(st, n, s, strlen(s), &work, &p);
    size_t k = 0;
    for (size_t i = 0; i < p.n; i++) {
        if (i) out[k++] = '|';
        memcpy(out + k, p.v[i].p, p.v[i].n);
        k += p.v[i].n;
    }
    out[k] = 0;
    nlp_buf_free(&work);
    nlp_pieces_free(&p);
    return out;
}

/* A spec over the given tokens (ids in order) and merges "a b". */
static void make_spec(nlp_tok_spec *s, const char *const *toks, size_t nt, const char *const *merges, size_t nm)
{
    memset(s, 0, sizeof *s);
    s->vocab = nlp_vocab_new(nt);
    for (size_t i = 0; i < nt; i++) nlp_vocab_add(s->vocab, toks[i], strlen(toks[i]), NULL);
    s->merges = nlp_malloc((nm ? 2 * nm : 1) * sizeof *s->merges);
    for (size_t i = 0; i < nm; i++) {
        const char *sp = strchr(merges[i], ' ');
        s->merges[2 * i] = nlp_vocab_find(s->vocab, merges[i], (size_t)(sp - merges[i]));
        s->merges[2 * i + 1] = nlp_vocab_find(s->vocab, sp + 1, strlen(sp + 1));
    }
    s->n_merges = nm;
}

/* Encodes text and returns the tokens joined with spaces. */
static const char *enc_pieces(const nlp_tokenizer *tk, const char *text)
{
    static char out[4096];
    nlp_tok_state *st = nlp_tok_state_new(tk);
    nlp_ids ids = {0};
    int rc = nlp_tokenizer_encode_ids(tk, st, text, strlen(text), 0, &ids);
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; rc == 0 && i < ids.n; i++) {
        size_t n;
        const char *t = nlp_tokenizer_id_to_token(tk, ids.v[i], &n);
        if (i) out[k++] = ' ';
        memcpy(out + k, t, n);
        k += n;
        out[k] = 0;
    }
    nlp_ids_free(&ids);
    nlp_tok_state_free(st);
    return rc ? "(error)" : out;
}

// --- tests

static void test_uclass(void)
{
    CHECK(nlp_uclass('a') & NLP_UCL_LETTER);
    CHECK(nlp_uclass(0x00E9) & NLP_UCL_LETTER);   /* é */
    CHECK(nlp_uclass(0x4E2D) & NLP_UCL_LETTER);   /* 中 */
    CHECK(nlp_uclass(0x0663) & NLP_UCL_NUMBER);   /* Arabic-Indic 3 */
    CHECK(nlp_uclass(0x00BD) & NLP_UCL_NUMBER);   /* ½ (No) */
    CHECK(nlp_uclass(0x00A0) & NLP_UCL_SPACE);    /* NBSP */
    CHECK(nlp_uclass(0x3000) & NLP_UCL_SPACE);
    CHECK(!(nlp_uclass(0x001F) & NLP_UCL_SPACE)); /* not White_Space */
    CHECK(nlp_uclass(0x0301) & NLP_UCL_MN);
    CHECK(nlp_uclass(0x1F917) == nlp_uclass_slow(0x1F917));
    CHECK(!(nlp_uclass(0x1F917) & (NLP_UCL_LETTER | NLP_UCL_NUMBER | NLP_UCL_SPACE)));
    CHECK(nlp_uclass('_') & NLP_UCL_WORD);
    CHECK(!(nlp_uclass('-') & NLP_UCL_WORD));
    CHECK(nlp_uclass(0x24B6) & NLP_UCL_WORD);   /* CIRCLED LATIN CAPITAL LETTER A: So, but Alphabetic */
    CHECK(nlp_uclass(0x1F189) & NLP_UCL_WORD);  /* NEGATIVE SQUARED LATIN CAPITAL LETTER Z */
    CHECK(!(nlp_uclass(0x24EA) & NLP_UCL_WORD)); /* CIRCLED DIGIT ZERO: No */
    nlp_buf b = {0};
    nlp_uclass_lower_append(&b, 0x130);
    nlp_uclass_lower_append(&b, 'Q');
    nlp_uclass_lower_append(&b, 0x3A3); /* Σ -> σ, no final-sigma rule */
    CHECK_STR(b.data, "i\xCC\x87q\xCF\x83");
    nlp_buf_free(&b);
}

static void test_bytelevel(void)
{
    CHECK_EQ_INT(nlp_bytelevel_cp(' '), 0x120);
    CHECK_EQ_INT(nlp_bytelevel_cp('\n'), 0x10A);
    CHECK_EQ_INT(nlp_bytelevel_cp('!'), '!');
    CHECK_EQ_INT(nlp_bytelevel_cp(0xAD), 0x143);
    CHECK_EQ_INT(nlp_bytelevel_cp(0), 0x100);
    int ok = 1;
    for (int b = 0; b < 256; b++) ok &= nlp_bytelevel_byte(nlp_bytelevel_cp((uint8_t)b)) == b;
    CHECK(ok);
    CHECK_EQ_INT(nlp_bytelevel_byte('A' + 0x200), -1);
    nlp_buf m = {0}, back = {0};
    const char raw[] = "a b\n\xC3\xA9\xFF";
    nlp_bytelevel_encode(raw, sizeof raw - 1, &m);
    CHECK_STR(m.data, "a\xC4\xA0" "b\xC4\x8A\xC3\x83\xC2\xA9\xC3\xBF");
    CHECK_EQ_INT(nlp_bytelevel_decode(m.data, m.len, &back), 1);
    CHECK(back.len == sizeof raw - 1 && memcmp(back.data, raw, back.len) == 0);
    nlp_buf_reset(&back);
    CHECK_EQ_INT(nlp_bytelevel_decode("a b", 3, &back), 0); /* ' ' is not a mapped character */
    CHECK_EQ_INT(back.len, 0);
    nlp_buf_free(&m);
    nlp_buf_free(&back);
}

static void test_gpt2_pretok(void)
{
    nlp_pretok_step bl = {.type = NLP_PRETOK_BYTELEVEL, .use_regex = 1};
    CHECK_STR(split(&bl, 1, "Hello world"), "Hello| world");
    CHECK_STR(split(&bl, 1, "I'm here's they'll we've it'd"), "I|'m| here|'s| they|'ll| we|'ve| it|'d");
    CHECK_STR(split(&bl, 1, "I'M 'S"), "I|'|M| '|S"); /* contractions are case-sensitive */
    CHECK_STR(split(&bl, 1, "  x"), " | x");          /* \s+(?!\S) leaves one space to the word */
    CHECK_STR(split(&bl, 1, "x  "), "x|  ");          /* trailing white space stays whole */
    CHECK_STR(split(&bl, 1, "a \n b"), "a| \n| b");
    CHECK_STR(split(&bl, 1, "1234 12ab"), "1234| 12|ab");
    CHECK_STR(split(&bl, 1, "x?!'s"), "x|?!'|s");
    CHECK_STR(split(&bl, 1, "a\xC2\xA0" "b"), "a|\xC2\xA0|b"); /* NBSP is \s but not the optional space */
    CHECK_STR(split(&bl, 1, "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87"), "caf\xC3\xA9| \xE4\xB8\xAD\xE6\x96\x87");
    CHECK_STR(split(&bl, 1, " \xF0\x9F\xA4\x97!"), " \xF0\x9F\xA4\x97!");
    CHECK_STR(split(&bl, 1, "\t\tx"), "\t|\t|x"); /* a tab is white space, not the optional space */
    nlp_pretok_step pre = {.type = NLP_PRETOK_BYTELEVEL, .use_regex = 1, .add_prefix_space = 1};
    CHECK_STR(split(&pre, 1, "Hi there"), " Hi| there");
    CHECK_STR(split(&pre, 1, " Hi"), " Hi");
    nlp_pretok_step ws = {.type = NLP_PRETOK_WHITESPACE}, wss = {.type = NLP_PRETOK_WHITESPACE_SPLIT};
    CHECK_STR(split(&ws, 1, "Hey, you_2!  ok"), "Hey|,|you_2|!|ok");
    /* \w is Alphabetic: the circled and squared letters (So) are word
     * characters, a circled digit (No) is not */
    CHECK_STR(split(&ws, 1, "a\xE2\x92\xB6" "b x\xF0\x9F\x85\x90" "y 1\xE2\x93\xAA" "2"),
              "a\xE2\x92\xB6" "b|x\xF0\x9F\x85\x90" "y|1|\xE2\x93\xAA" "|2");
    CHECK_STR(split(&wss, 1, " Hey, you!\tok\n"), "Hey,|you!|ok");
    nlp_pretok_step seq[2] = {{.type = NLP_PRETOK_WHITESPACE_SPLIT}, {.type = NLP_PRETOK_BYTELEVEL, .add_prefix_space = 1}};
    CHECK_STR(split(seq, 2, "a bc"), " a| bc");
    CHECK_STR(split(&bl, 1, ""), "");
}

/* The vocabulary against a string map: random tokens of 0..20 bytes (NUL
 * bytes included, many sharing the 7 bytes a slot holds, so that the
 * comparison of longer ones is exercised), added, set at ids with holes,
 * found one and many at a time, cloned, from a hint of 1 (the table grows). */
static void test_vocab_random(void)
{
    nlp_rng r;
    nlp_rng_seed(&r, 5);
    nlp_vocab *v = nlp_vocab_new(1);
    nlp_strmap *ref = nlp_strmap_new(16);
    enum { N = 30000 };
    static char keys[N][24];
    static size_t klen[N];
    int ok = 1;
    int32_t next = 0;
    for (int i = 0; i < N; i++) {
        size_t n = nlp_rng_u64(&r) % 21;
        for (size_t k = 0; k < n; k++) keys[i][k] = k < 5 ? "abcde"[k] : (char)(nlp_rng_u64(&r) % 4); /* a shared start */
        if (n > 5 && nlp_rng_u64(&r) % 3 == 0) keys[i][n - 1] = 0;
        klen[i] = n;
        int64_t have;
        int known = nlp_strmap_get(ref, keys[i], n, &have);
        if (nlp_rng_u64(&r) % 2) { /* add */
            int32_t id;
            ok &= nlp_vocab_add(v, keys[i], n, &id) == 0;
            if (!known) {
                nlp_strmap_put(ref, keys[i], n, id);
                next = id + 1 > next ? id + 1 : next;
            } else ok &= id == have;
        } else { /* set at an id past a hole, or fail as a second id */
            int32_t id = next + (int32_t)(nlp_rng_u64(&r) % 3);
            int rc = nlp_vocab_set(v, id, keys[i], n);
            if (known) ok &= rc == NLP_EFORMAT && strstr(nlp_errmsg(), "has two ids") != NULL;
            else {
                ok &= rc == 0;
                nlp_strmap_put(ref, keys[i], n, id);
                next = id + 1;
            }
        }
    }
    CHECK(ok);
    CHECK(nlp_vocab_count(v) == nlp_strmap_size(ref));
    CHECK(nlp_vocab_set(v, 0, "zzzzzzzzzzzz", 12) == NLP_EFORMAT && strstr(nlp_errmsg(), "given to two tokens"));
    nlp_vocab *c = nlp_vocab_clone(v);
    nlp_span sp[N];
    int32_t got[N];
    for (int i = 0; i < N; i++) sp[i] = (nlp_span){keys[i], klen[i]};
    int found = 1;
    for (int pass = 0; pass < 2; pass++) {
        nlp_vocab *u = pass ? c : v;
        nlp_vocab_find_many(u, sp, N, got);
        for (int i = 0; i < N; i++) {
            int64_t want;
            nlp_strmap_get(ref, keys[i], klen[i], &want);
            size_t tl;
            const char *t = nlp_vocab_token(u, (int32_t)want, &tl);
            found &= got[i] == want && nlp_vocab_find(u, keys[i], klen[i]) == want && t && tl == klen[i] &&
                     memcmp(t, keys[i], tl) == 0 && t[tl] == 0;
        }
        /* absent keys: one byte more or less than a present one */
        for (int i = 0; i < 2000; i++) {
            char k[25];
            memcpy(k, keys[i], klen[i]);
            k[klen[i]] = 9;
            int64_t x;
            if (!nlp_strmap_get(ref, k, klen[i] + 1, &x)) found &= nlp_vocab_find(u, k, klen[i] + 1) == -1;
            if (klen[i] && !nlp_strmap_get(ref, k, klen[i] - 1, &x)) found &= nlp_vocab_find(u, k, klen[i] - 1) == -1;
        }
    }
    CHECK(found);
    nlp_vocab_free(c);
    nlp_vocab_free(v);
    nlp_strmap_free(ref);
}

/* The word cache against a string map of what was put since it was last
 * emptied: words of 0-40 bytes (past the 16 kept in an entry), 0-9 ids (past
 * the 4), a bound of 1,000 words (emptied and refilled many times, the
 * index growing each time), and words seen again after it was emptied. */
static void wordcache_case(size_t max, uint64_t distinct, int puts_min, int clears_min)
{
    nlp_rng r;
    nlp_rng_seed(&r, 11);
    nlp_wordcache *c = nlp_wordcache_new(max);
    nlp_strmap *ref = nlp_strmap_new(16);
    int ok = 1, hits = 0, cleared = 0;
    size_t since = 0;
    for (int i = 0; i < 40000; i++) {
        char w[48];
        uint64_t pick = nlp_rng_u64(&r) % distinct; /* words come back */
        size_t n = pick % 41;
        for (size_t k = 0; k < n; k++) w[k] = (char)('a' + (pick * 7 + k * (pick % 5 + 1)) % 26);
        if (n) w[0] = (char)('A' + pick % 26);
        if (n > 2) w[1] = (char)('0' + pick / 26 % 64), w[2] = (char)('0' + pick / 1664 % 64); /* pick in the word */
        uint64_t h = nlp_wordcache_hash(w, n);
        size_t k;
        const int32_t *got = nlp_wordcache_get(c, w, n, h, &k);
        int64_t want;
        int known = nlp_strmap_get(ref, w, n, &want);
        if (got) {
            hits++;
            /* the ids of a word are (pick, n, length) repeated: check them all */
            ok &= known && k == (size_t)(want % 10);
            for (size_t q = 0; q < k && ok; q++) ok &= got[q] == (int32_t)(want / 10 + (int64_t)q);
            continue;
        }
        ok &= !known;
        int32_t ids[9];
        size_t ni = nlp_rng_u64(&r) % 10;
        int64_t base = (int64_t)(nlp_rng_u64(&r) % 100000);
        for (size_t q = 0; q < ni; q++) ids[q] = (int32_t)(base + (int64_t)q);
        if (since == max) { /* this put empties the cache first */
            nlp_strmap_free(ref);
            ref = nlp_strmap_new(16);
            since = 0;
            cleared++;
        }
        ok &= nlp_wordcache_put(c, w, n, h, ids, ni) == 0;
        nlp_strmap_put(ref, w, n, base * 10 + (int64_t)ni);
        since++;
    }
    CHECK(ok);
    CHECK(hits > 5000 && (int)(cleared * max + since) >= puts_min && cleared >= clears_min);
    nlp_wordcache_free(c);
    nlp_strmap_free(ref);
}

static void test_wordcache(void)
{
    wordcache_case(1000, 1500, 0, 5);   /* emptied over and over */
    wordcache_case(131072, 9000, 8200, 0); /* past 2,048 and 8,192 words: the index grows twice */
}

/* Naive BPE: merge the lowest-rank adjacent pair (leftmost) until none. */
static size_t naive_bpe(const nlp_bpe *m, int32_t *s, size_t n)
{
    for (;;) {
        int64_t best = -1;
        size_t at = 0;
        int32_t nid = -1;
        for (size_t i = 0; i + 1 < n; i++) {
            int32_t id;
            int64_t r = nlp_bpe_merge_rank(m, s[i], s[i + 1], &id);
            if (r >= 0 && (best < 0 || r < best)) {
                best = r;
                at = i;
                nid = id;
            }
        }
        if (best < 0) return n;
        s[at] = nid;
        memmove(s + at + 1, s + at + 2, (n - at - 2) * sizeof *s);
        n--;
    }
}

static void test_bpe_against_naive(void)
{
    /* random merges over a 4-letter alphabet; the tokens are the strings */
    nlp_rng rng;
    nlp_rng_seed(&rng, 7);
    nlp_vocab *v = nlp_vocab_new(64);
    const char *alpha[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) nlp_vocab_add(v, alpha[i], 1, NULL);
    int32_t merges[2 * 60];
    size_t nm = 0;
    nlp_buf t = {0};
    while (nm < 60) {
        size_t size = nlp_vocab_size(v);
        int32_t a = (int32_t)(nlp_rng_u64(&rng) % size), b = (int32_t)(nlp_rng_u64(&rng) % size);
        size_t la, lb;
        const char *sa = nlp_vocab_token(v, a, &la), *sb = nlp_vocab_token(v, b, &lb);
        if (la + lb > 12) continue;
        nlp_buf_reset(&t);
        nlp_buf_append(&t, sa, la);
        nlp_buf_append(&t, sb, lb);
        if (nlp_vocab_find(v, t.data, t.len) >= 0) continue;
        nlp_vocab_add(v, t.data, t.len, NULL);
        merges[2 * nm] = a;
        merges[2 * nm + 1] = b;
        nm++;
    }
    /* the same merges over three layouts of the vocabulary: merged tokens
     * in merge order (nlp_bpe_new's guess of the next id holds), in a
     * shuffled order (every guess fails: looked up), and after 70,000 other
     * tokens (ids past 65535: the table's 16-byte slots) */
    for (int layout = 0; layout < 3; layout++) {
        nlp_vocab *u = nlp_vocab_new(64);
        size_t vn = nlp_vocab_size(v), *perm = malloc(vn * sizeof *perm);
        for (size_t i = 0; i < vn; i++) perm[i] = i;
        if (layout == 1)
            for (size_t i = vn - 1; i > 4; i--) { /* shuffle the merged tokens, keep the letters first */
                size_t j = 4 + nlp_rng_u64(&rng) % (i - 3), x = perm[i];
                perm[i] = perm[j], perm[j] = x;
            }
        if (layout == 2)
            for (int i = 0; i < 70000; i++) {
                char f[16];
                int fl = snprintf(f, sizeof f, "#%d", i);
                nlp_vocab_add(u, f, (size_t)fl, NULL);
            }
        for (size_t i = 0; i < vn; i++) {
            size_t l;
            const char *tk = nlp_vocab_token(v, (int32_t)perm[i], &l);
            nlp_vocab_add(u, tk, l, NULL);
        }
        int32_t um[2 * 60], letter[4];
        for (size_t i = 0; i < 2 * nm; i++) {
            size_t l;
            const char *tk = nlp_vocab_token(v, merges[i], &l);
            um[i] = nlp_vocab_find(u, tk, l);
        }
        for (int i = 0; i < 4; i++) letter[i] = nlp_vocab_find(u, alpha[i], 1);
        nlp_bpe *m;
        CHECK(nlp_bpe_new(&m, u, um, nm, NULL, 0) == 0);
        /* every merge: its rank and the id of the joined strings */
        int table_ok = 1;
        for (size_t r = 0; r < nm; r++) {
            size_t la, lb;
            const char *sa = nlp_vocab_token(u, um[2 * r], &la), *sb = nlp_vocab_token(u, um[2 * r + 1], &lb);
            nlp_buf_reset(&t);
            nlp_buf_append(&t, sa, la);
            nlp_buf_append(&t, sb, lb);
            int32_t id = -5;
            table_ok &= nlp_bpe_merge_rank(m, um[2 * r], um[2 * r + 1], &id) == (int64_t)r &&
                        id == nlp_vocab_find(u, t.data, t.len);
        }
        CHECK(table_ok);
        CHECK(nlp_bpe_merge_rank(m, letter[3], letter[3] + 1000, NULL) < 0);
        nlp_bpe_scratch sc = {0};
        int same = 1;
        for (int trial = 0; trial < 400; trial++) {
            size_t n = 1 + nlp_rng_u64(&rng) % 120;
            char w[128];
            int32_t ref[128];
            for (size_t i = 0; i < n; i++) {
                int c = (int)(nlp_rng_u64(&rng) % 4);
                w[i] = (char)('a' + c);
                ref[i] = letter[c];
            }
            nlp_ids ids = {0};
            nlp_bpe_encode_word(m, &sc, w, n, &ids);
            size_t k = naive_bpe(m, ref, n);
            same &= ids.n == k && memcmp(ids.v, ref, k * sizeof *ref) == 0;
            nlp_ids_free(&ids);
        }
        CHECK(same); /* short words (scan) and long ones (heap) agree with the reference */
        nlp_bpe_scratch_free(&sc);
        nlp_bpe_free(m);
        nlp_vocab_free(u);
        free(perm);
    }
    nlp_vocab_free(v);
    nlp_buf_free(&t);
}

static void test_bpe_leftmost(void)
{
    /* "aaa" with only "a a": the leftmost pair goes first */
    const char *toks[] = {"a", "aa"}, *merges[] = {"a a"};
    nlp_tok_spec s;
    make_spec(&s, toks, 2, merges, 1);
    nlp_tok_spec_pipeline(&s, NLP_PIPE_WHITESPACE, NULL);
    nlp_tokenizer *tk;
    CHECK(nlp_tokenizer_new(&tk, &s) == 0);
    CHECK_STR(enc_pieces(tk, "aaa aaaa a"), "aa a aa aa a");
    nlp_tokenizer_free(tk);
}

/* The lecture's example: merges "u g", "u n", "h ug" over the characters of
 * those merges, with [UNK] for any other character. */
static void test_lecture_classic_encoding(void)
{
    const char *toks[] = {"[UNK]", "g", "h", "n", "u", "ug", "un", "hug"};
    const char *merges[] = {"u g", "u n", "h ug"};
    nlp_tok_spec s;
    make_spec(&s, toks, 8, merges, 3);
    s.bpe.unk_token = nlp_strdup("[UNK]");
    nlp_tok_spec_pipeline(&s, NLP_PIPE_WHITESPACE, NULL);
    nlp_tokenizer *tk;
    CHECK(nlp_tokenizer_new(&tk, &s) == 0);
    CHECK_STR(enc_pieces(tk, "bug"), "[UNK] ug");
    CHECK_STR(enc_pieces(tk, "thug"), "[UNK] hug");
    CHECK_STR(enc_pieces(tk, "unhug"), "un hug");
    CHECK_STR(enc_pieces(tk, "hugs hug"), "hug [UNK] hug");
    nlp_tokenizer_free(tk);

    /* fuse_unk: consecutive unknown characters become one [UNK] */
    make_spec(&s, toks, 8, merges, 3);
    s.bpe.unk_token = nlp_strdup("[UNK]");
    s.bpe.fuse_unk = 1;
    nlp_tok_spec_pipeline(&s, NLP_PIPE_WHITESPACE, NULL);
    CHECK(nlp_tokenizer_new(&tk, &s) == 0);
    CHECK_STR(enc_pieces(tk, "xyhug"), "[UNK] hug");
    nlp_tokenizer_free(tk);

    /* byte fallback: an unknown character becomes its bytes' <0xHH> tokens */
    const char *t3[] = {"[UNK]", "a", "<0xC3>", "<0xA9>"};
    make_spec(&s, t3, 4, NULL, 0);
    s.bpe.unk_token = nlp_strdup("[UNK]");
    s.bpe.byte_fallback = 1;
    nlp_tok_spec_pipeline(&s, NLP_PIPE_WHITESPACE, NULL);
    CHECK(nlp_tokenizer_new(&tk, &s) == 0);
    CHECK_STR(enc_pieces(tk, "a\xC3\xA9\xC3\xB1" "a"), "a <0xC3> <0xA9> [UNK] a"); /* no <0xB1>: [UNK] */
    nlp_tokenizer_free(tk);

    /* end-of-word suffix: the last character is spelled with </w> */
    const char *t2[] = {"l", "o", "w", "w</w>", "lo", "low</w>", "e", "r</w>", "er</w>"};
    const char *m2[] = {"l o", "lo w</w>", "e r</w>"};
    make_spec(&s, t2, 9, m2, 3);
    s.bpe.end_of_word_suffix = nlp_strdup("</w>");
    nlp_tok_spec_pipeline(&s, NLP_PIPE_WHITESPACE, "</w>");
    CHECK(nlp_tokenizer_new(&tk, &s) == 0);
    CHECK_STR(enc_pieces(tk, "low lower"), "low</w> lo w er</w>");
    nlp_ids ids = {0};
    nlp_tok_state *st = nlp_tok_state_new(tk);
    nlp_tokenizer_encode_ids(tk, st, "low lower", 9, 0, &ids);
    nlp_buf text = {0};
    CHECK(nlp_tokenizer_decode(tk, ids.v, ids.n, 0, &text, NULL) == 0);
    CHECK_STR(text.data, "low lower");
    nlp_buf_free(&text);
    nlp_ids_free(&ids);
    nlp_tok_state_free(st);
    nlp_tokenizer_free(tk);
}

static void test_added_tokens(void)
{
    const char *toks[] = {"a", "b", " ", "<s>", "[X]"};
    nlp_tok_spec s;
    make_spec(&s, toks, 5, NULL, 0);
    nlp_tok_spec_pipeline(&s, NLP_PIPE_WHITESPACE, NULL);
    s.added = nlp_calloc(2, sizeof *s.added);
    s.n_added = 2;
    s.added[0] = (nlp_added_token){.id = 3, .content = nlp_strdup("<s>"), .special = 1};
    s.added[1] = (nlp_added_token){.id = 5, .content = nlp_strdup("<mask>"), .special = 1, .lstrip = 1, .rstrip = 1};
    nlp_tokenizer *tk;
    int rc = nlp_tokenizer_new(&tk, &s);
    CHECK_MSG(rc == 0, "%s", nlp_errmsg());
    if (rc) return;
    CHECK_EQ_INT(nlp_tokenizer_vocab_size(tk), 6);
    CHECK(nlp_tokenizer_is_special(tk, 5));
    CHECK_STR(enc_pieces(tk, "a<s>b"), "a <s> b");
    CHECK_STR(enc_pieces(tk, "a  <mask>  b"), "a <mask> b");
    nlp_tok_state *st = nlp_tok_state_new(tk);
    nlp_ids ids = {0};
    nlp_tokenizer_encode_ids(tk, st, "a<s>", 4, 1, &ids); /* split: "<s>" is plain text, unknown chars dropped */
    CHECK_EQ_INT(ids.n, 1);
    nlp_ids_free(&ids);
    nlp_tok_state_free(st);
    nlp_buf text = {0};
    int32_t d[] = {0, 3, 1};
    CHECK(nlp_tokenizer_decode(tk, d, 3, 1, &text, NULL) == 0);
    CHECK_STR(text.data, "a b"); /* no decoder: tokens joined with spaces; special skipped */
    nlp_buf_reset(&text);
    int32_t bad[] = {0, 99};
    size_t where = 0;
    CHECK_EQ_INT(nlp_tokenizer_decode(tk, bad, 2, 0, &text, &where), NLP_EDATA);
    CHECK_EQ_INT(where, 1);
    CHECK(strstr(nlp_errmsg(), "id 99 is out of range (vocabulary size 6)") != NULL);
    nlp_buf_free(&text);
    nlp_tokenizer_free(tk);

    /* single_word: only when not glued to word characters */
    nlp_added_token sw = {.id = 0, .content = "ab", .single_word = 1};
    nlp_added_matcher *m = nlp_added_matcher_new(&sw, 1, 0);
    size_t a, e;
    int32_t id;
    CHECK_EQ_INT(nlp_added_next(m, "xab ab", 6, 0, 0, 0, &a, &e, &id), 1);
    CHECK_EQ_INT(a, 4);
    nlp_added_matcher_free(m);
}

static void test_normalizers(void)
{
    nlp_norm_step st[3] = {{.type = NLP_NORM_STEP_NFD}, {.type = NLP_NORM_STEP_STRIP_ACCENTS}, {.type = NLP_NORM_STEP_LOWERCASE}};
    nlp_buf out = {0}, tmp = {0};
    const char *s = "Caf\xC3\xA9 \xC3\x85NGSTR\xC3\x96M";
    CHECK(nlp_normalize(st, 3, s, strlen(s), &out, &tmp) == 0);
    CHECK_STR(out.data, "cafe angstrom");
    nlp_norm_step strip = {.type = NLP_NORM_STEP_STRIP, .left = 1, .right = 1};
    CHECK(nlp_normalize(&strip, 1, " \t x y \xE3\x80\x80", 10, &out, &tmp) == 0);
    CHECK_STR(out.data, "x y");
    nlp_norm_step rep[2] = {{.type = NLP_NORM_STEP_REPLACE, .a = " ", .b = "\xE2\x96\x81"},
                            {.type = NLP_NORM_STEP_PREPEND, .a = "\xE2\x96\x81"}};
    CHECK(nlp_normalize(rep, 2, "a b", 3, &out, &tmp) == 0);
    CHECK_STR(out.data, "\xE2\x96\x81" "a\xE2\x96\x81" "b");
    CHECK(nlp_normalize(rep, 2, "", 0, &out, &tmp) == 0);
    CHECK_EQ_INT(out.len, 0); /* Prepend leaves empty text empty */
    nlp_norm_step nfkc = {.type = NLP_NORM_STEP_NFKC};
    CHECK(nlp_normalize(&nfkc, 1, "\xEF\xAC\x81", 3, &out, &tmp) == 0); /* ﬁ ligature */
    CHECK_STR(out.data, "fi");
    nlp_buf_free(&out);
    nlp_buf_free(&tmp);
}

static void test_template_truncation_padding(void)
{
    nlp_postproc p = {0};
    CHECK(nlp_postproc_set_cls_sep(&p, 0, "[CLS]", 101, "[SEP]", 102) == 0);
    CHECK_EQ_INT(nlp_postproc_added(&p, 0), 2);
    CHECK_EQ_INT(nlp_postproc_added(&p, 1), 3);
    nlp_encoding a = {0}, b = {0}, out = {0};
    int32_t ia[] = {5, 6}, ib[] = {7};
    nlp_encoding_append(&a, ia, 2, 0, 0);
    nlp_encoding_append(&b, ib, 1, 1, 0);
    CHECK(nlp_postproc_apply(&p, &a, &b, 1, &out) == 0);
    int32_t want[] = {101, 5, 6, 102, 7, 102};
    uint8_t wtype[] = {0, 0, 0, 0, 1, 1}, wspec[] = {1, 0, 0, 1, 0, 1};
    CHECK(out.n == 6 && memcmp(out.ids, want, sizeof want) == 0 && memcmp(out.type_ids, wtype, 6) == 0 &&
          memcmp(out.special, wspec, 6) == 0);
    CHECK(nlp_postproc_apply(&p, &a, &b, 0, &out) == 0);
    CHECK(out.n == 3 && out.ids[2] == 7 && out.type_ids[2] == 1);

    /* longest-first: budget 7 - 3 = 4 for lengths 5 and 3 -> 2 and 2 */
    nlp_encoding x = {0}, y = {0};
    int32_t ix[] = {1, 2, 3, 4, 5}, iy[] = {6, 7, 8};
    nlp_encoding_append(&x, ix, 5, 0, 0);
    nlp_encoding_append(&y, iy, 3, 1, 0);
    nlp_truncation t = {.enabled = 1, .max_length = 7};
    CHECK(nlp_truncate(&t, 3, &x, &y) == 0);
    CHECK_EQ_INT(x.n, 2);
    CHECK_EQ_INT(y.n, 2);
    /* budget 6 for 5 and 1: the short one stays, the long one takes the rest */
    nlp_encoding_reset(&x);
    nlp_encoding_reset(&y);
    nlp_encoding_append(&x, ix, 5, 0, 0);
    nlp_encoding_append(&y, iy, 1, 1, 0);
    t.max_length = 6;
    CHECK(nlp_truncate(&t, 0, &x, &y) == 0);
    CHECK_EQ_INT(x.n, 5);
    nlp_encoding_reset(&x);
    nlp_encoding_append(&x, ix, 5, 0, 0);
    t.max_length = 4;
    CHECK(nlp_truncate(&t, 0, &x, &y) == 0);
    CHECK(x.n == 3 && y.n == 1);
    /* The table of HF's own unit test (truncate_encodings_longest_first,
     * max_length 7; lengths 0, 2, 4 and 8): the longer keeps the odd token */
    {
        static const int len[4] = {0, 2, 4, 8};
        static const int hf_want[4][4][2] = {
            {{0, 0}, {0, 2}, {0, 4}, {0, 7}},
            {{2, 0}, {2, 2}, {2, 4}, {2, 5}},
            {{4, 0}, {4, 2}, {3, 4}, {3, 4}},
            {{7, 0}, {5, 2}, {4, 3}, {3, 4}},
        };
        int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        int bad = 0;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                nlp_encoding_reset(&x);
                nlp_encoding_reset(&y);
                nlp_encoding_append(&x, ids, (size_t)len[i], 0, 0);
                nlp_encoding_append(&y, ids, (size_t)len[j], 1, 0);
                nlp_truncation tt = {.enabled = 1, .max_length = 7};
                if (nlp_truncate(&tt, 0, &x, &y) || (int)x.n != hf_want[i][j][0] || (int)y.n != hf_want[i][j][1]) {
                    bad++;
                    printf("    lengths %d, %d: got %zu, %zu\n", len[i], len[j], x.n, y.n);
                }
            }
        CHECK_EQ_INT(bad, 0);
    }
    /* left direction keeps the end */
    nlp_encoding_reset(&x);
    nlp_encoding_append(&x, ix, 5, 0, 0);
    t = (nlp_truncation){.enabled = 1, .max_length = 2, .left = 1};
    CHECK(nlp_truncate(&t, 0, &x, NULL) == 0);
    CHECK(x.n == 2 && x.ids[0] == 4 && x.ids[1] == 5);
    /* only-second without a pair, and too-short errors */
    t = (nlp_truncation){.enabled = 1, .max_length = 1, .strategy = NLP_TRUNC_ONLY_SECOND};
    CHECK_EQ_INT(nlp_truncate(&t, 0, &x, NULL), NLP_EINVAL);
    t = (nlp_truncation){.enabled = 1, .max_length = 1, .strategy = NLP_TRUNC_ONLY_SECOND};
    CHECK_EQ_INT(nlp_truncate(&t, 0, &x, &y), NLP_EINVAL);
    t = (nlp_truncation){.enabled = 1, .max_length = 1};
    CHECK_EQ_INT(nlp_truncate(&t, 2, &x, NULL), NLP_EINVAL);
    /* no room left beside the template: HF empties both sequences, whatever
     * the strategy */
    t = (nlp_truncation){.enabled = 1, .max_length = 3, .strategy = NLP_TRUNC_ONLY_FIRST};
    CHECK(nlp_truncate(&t, 3, &x, &y) == 0);
    CHECK(x.n == 0 && y.n == 0);
    nlp_encoding_append(&x, ix, 2, 0, 0);
    nlp_encoding_append(&y, iy, 2, 1, 0);
    t.strategy = NLP_TRUNC_ONLY_SECOND;
    CHECK(nlp_truncate(&t, 3, &x, &y) == 0);
    CHECK(x.n == 0 && y.n == 0);

    /* padding */
    nlp_padding pd = {.enabled = 1, .multiple_of = 4};
    CHECK_EQ_INT(nlp_padding_target(&pd, 5), 8);
    nlp_encoding_reset(&x);
    nlp_encoding_append(&x, ix, 2, 0, 0);
    CHECK(nlp_encoding_pad(&x, 4, 0, 0, 1) == 0);
    CHECK(x.n == 4 && x.ids[0] == 0 && x.ids[2] == 1 && x.attention[1] == 0 && x.attention[2] == 1);
    nlp_encoding_free(&a);
    nlp_encoding_free(&b);
    nlp_encoding_free(&out);
    nlp_encoding_free(&x);
    nlp_encoding_free(&y);
    nlp_postproc_free(&p);
}

static void test_decoders(void)
{
    nlp_dec_step bpe = {.type = NLP_DEC_BPE, .suffix = "</w>"};
    nlp_dec_token t[] = {{"hel", 3}, {"lo</w>", 6}, {"wor", 3}, {"ld</w>", 6}};
    nlp_buf out = {0};
    CHECK(nlp_decode_tokens(&bpe, 1, t, 4, &out) == 0);
    CHECK_STR(out.data, "hello world");
    nlp_buf_reset(&out);
    nlp_dec_step bl = {.type = NLP_DEC_BYTELEVEL};
    nlp_dec_token g[] = {{"Hello", 5}, {"\xC4\xA0" "world", 7}, {"<|x|>", 5}, {"a b", 3}};
    CHECK(nlp_decode_tokens(&bl, 1, g, 4, &out) == 0);
    CHECK_STR(out.data, "Hello world<|x|>a b");
    nlp_buf_reset(&out);
    nlp_dec_step seq[2] = {{.type = NLP_DEC_BPE, .suffix = "</w>"}, {.type = NLP_DEC_BYTELEVEL}};
    nlp_dec_token h[] = {{"a</w>", 5}, {"\xC4\x8A", 2}};
    CHECK(nlp_decode_tokens(seq, 2, h, 2, &out) == 0);
    CHECK_STR(out.data, "a \n");
    nlp_buf_free(&out);
}

/* A spec with most components, through tokenizer.json and back. */
static void test_tokjson_round_trip(void)
{
    const char *toks[] = {"[PAD]", "[CLS]", "[SEP]", "a", "b", "ab", "\xC4\xA0", "\xC4\xA0" "ab"};
    const char *merges[] = {"a b", "\xC4\xA0 ab"};
    nlp_tok_spec s;
    make_spec(&s, toks, 8, merges, 2);
    nlp_tok_spec_pipeline(&s, NLP_PIPE_BYTELEVEL, NULL);
    s.norm = nlp_calloc(2, sizeof *s.norm);
    s.norm[0].type = NLP_NORM_STEP_NFKC;
    s.norm[1] = (nlp_norm_step){.type = NLP_NORM_STEP_REPLACE, .a = nlp_strdup("x"), .b = nlp_strdup("a")};
    s.n_norm = 2;
    nlp_postproc_set_cls_sep(&s.post, 0, "[CLS]", 1, "[SEP]", 2);
    s.post.type = NLP_POST_TEMPLATE; /* write it as a TemplateProcessing */
    s.added = nlp_calloc(3, sizeof *s.added);
    s.n_added = 3;
    s.added[0] = (nlp_added_token){.id = 0, .content = nlp_strdup("[PAD]"), .special = 1};
    s.added[1] = (nlp_added_token){.id = 1, .content = nlp_strdup("[CLS]"), .special = 1};
    s.added[2] = (nlp_added_token){.id = 2, .content = nlp_strdup("[SEP]"), .special = 1, .lstrip = 1};
    s.trunc = (nlp_truncation){.enabled = 1, .max_length = 16, .strategy = NLP_TRUNC_ONLY_FIRST, .left = 1};
    s.pad = (nlp_padding){.enabled = 1, .length = 16, .pad_id = 0, .pad_token = nlp_strdup("[PAD]")};
    nlp_buf j1 = {0}, j2 = {0};
    CHECK(nlp_tokjson_dump(&s, &j1) == 0);
    nlp_tok_spec r;
    int rc = nlp_tokjson_parse(j1.data, j1.len, "mem", &r);
    CHECK_MSG(rc == 0, "%s", nlp_errmsg());
    if (rc) return;
    CHECK(nlp_tokjson_dump(&r, &j2) == 0);
    CHECK(j1.len == j2.len && memcmp(j1.data, j2.data, j1.len) == 0);
    CHECK(strstr(j1.data, "\"TemplateProcessing\"") && strstr(j1.data, "\"merges\": [\n      [\n        \"a\""));
    nlp_tokenizer *tk;
    rc = nlp_tokenizer_new(&tk, &r);
    CHECK_MSG(rc == 0, "%s", nlp_errmsg());
    if (!rc) {
        nlp_tok_state *st = nlp_tok_state_new(tk);
        nlp_encoding e = {0};
        CHECK(nlp_tokenizer_encode(tk, st, "xb ab", 5, NULL, 0, NULL, &e) == 0);
        int32_t want[] = {1, 5, 7, 2};
        CHECK(e.n == 4 && memcmp(e.ids, want, sizeof want) == 0);
        nlp_encoding_free(&e);
        nlp_tok_state_free(st);
        nlp_tokenizer_free(tk);
    }
    nlp_tok_spec_free(&s);
    nlp_tok_spec_free(&r);
    nlp_buf_free(&j1);
    nlp_buf_free(&j2);
}

static void expect_json_error(const char *json, const char *needle)
{
    nlp_tok_spec s;
    int rc = nlp_tokjson_parse(json, strlen(json), "t.json", &s);
    CHECK_EQ_INT(rc, NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), needle) != NULL, "message '%s' lacks '%s'", nlp_errmsg(), needle);
}

static void test_tokjson_errors(void)
{
    expect_json_error("{\"model\": {\n  \"type\": \"BPE\",, }}", "'t.json' line 2 column");
    expect_json_error("[1, 2]", "expected a JSON object");
    expect_json_error("{\"version\": \"1.0\"}", "no \"model\"");
    expect_json_error("{\"model\": {\"type\": \"WordLevel\", \"vocab\": {}}}", "model: model type 'WordLevel' is not supported");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}}",
                      "model.merges[0]: token 'b' is not in the vocabulary");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"x\"}, \"merges\": []}}",
                      "model.vocab: the id of 'a'");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}, \"pre_tokenizer\": {\"type\": "
                      "\"Sequence\", \"pretokenizers\": [{\"type\": \"Punctuation\"}]}}",
                      "pre_tokenizer.pretokenizers[0]: pre-tokenizer type 'Punctuation' is not supported");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}, \"normalizer\": {\"type\": "
                      "\"Replace\", \"pattern\": {\"Regex\": \"[ab]+\"}, \"content\": \"\"}}",
                      "the Regex pattern '[ab]+' is not supported");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}, \"added_tokens\": [{\"content\": "
                      "\"x\"}]}",
                      "added_tokens[0]: missing 'id'");
    /* a far-off id would cost memory for every id below it (12 bytes each,
     * twice): refused, in the model's vocabulary and in the added tokens */
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 16777216}, \"merges\": []}}",
                      "model.vocab: the id of 'b' (16777216) leaves more than 1048576 ids without a token");
    expect_json_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"added_tokens\": "
                      "[{\"id\": 16777216, \"content\": \"x\"}]}",
                      "added_tokens[0]: the id of 'x' (16777216) leaves more than 1048576 ids without a token");
    /* merges given as "a b" strings (older files) are read too */
    const char *old = "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}}";
    nlp_tok_spec s;
    CHECK(nlp_tokjson_parse(old, strlen(old), "old.json", &s) == 0);
    CHECK_EQ_INT(s.n_merges, 1);
    nlp_tok_spec_free(&s);
}

static void test_tokbin(void)
{
    const char *dir = test_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/t.bin", dir);
    nlp_writer *w;
    CHECK(nlp_writer_open(&w, path, 0) == 0);
    nlp_tokbin_writer *bw;
    CHECK(nlp_tokbin_writer_new(&bw, w, 70000, 69999) == 0);
    int32_t d1[] = {1, 65537}, d3[] = {7};
    CHECK(nlp_tokbin_write_doc(bw, d1, 2) == 0);
    CHECK(nlp_tokbin_write_doc(bw, NULL, 0) == 0);
    CHECK(nlp_tokbin_write_doc(bw, d3, 1) == 0);
    int32_t bad[] = {70000};
    CHECK_EQ_INT(nlp_tokbin_write_doc(bw, bad, 1), NLP_EDATA);
    nlp_tokbin_writer_free(bw);
    CHECK(nlp_writer_close(w) == 0);
    char *data;
    size_t n;
    nlp_read_file(path, &data, &n);
    CHECK_EQ_INT(n, 32 + 4 * 5); /* 3 documents: 3 ids + 2 separators of 4 bytes */
    CHECK(memcmp(data, "NLTK\1\0\0\0\4\0\0\0\x70\x11\1\0\x6f\x11\1\0", 20) == 0);
    free(data);

    nlp_reader *r;
    CHECK(nlp_reader_open(&r, path) == 0);
    nlp_tokbin_reader *br;
    CHECK(nlp_tokbin_reader_new(&br, r, -1) == 0);
    CHECK_EQ_INT(nlp_tokbin_reader_info(br)->vocab_size, 70000);
    nlp_ids ids = {0};
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), 1);
    CHECK(ids.n == 2 && ids.v[1] == 65537);
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), 1);
    CHECK_EQ_INT(ids.n, 0);
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), 1);
    CHECK(ids.n == 1 && ids.v[0] == 7);
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), 0);
    nlp_tokbin_reader_free(br);
    nlp_reader_close(r);

    /* a text whose last line has no terminator: the marker after the last
     * document (all ones of the width), seen by the reader, read once */
    for (int wide = 0; wide < 2; wide++) {
        uint32_t vs = wide ? 65536 : 65535; /* 65536 tokens no longer fit width 2 */
        CHECK(nlp_writer_open(&w, path, 0) == 0);
        CHECK(nlp_tokbin_writer_new(&bw, w, vs, 3) == 0);
        int32_t a[] = {65534}, b2[] = {5, 6};
        CHECK(nlp_tokbin_write_doc(bw, a, 1) == 0);
        CHECK(nlp_tokbin_write_doc(bw, b2, 2) == 0);
        CHECK(nlp_tokbin_write_end(bw, 1) == 0);
        nlp_tokbin_writer_free(bw);
        CHECK(nlp_writer_close(w) == 0);
        nlp_read_file(path, &data, &n);
        size_t wd = wide ? 4 : 2;
        CHECK_EQ_INT(n, 32 + wd * 5);
        CHECK((unsigned char)data[8] == wd && memcmp(data + n - wd, "\xff\xff\xff\xff", wd) == 0);
        free(data);
        CHECK(nlp_reader_open(&r, path) == 0);
        CHECK(nlp_tokbin_reader_new(&br, r, -1) == 0);
        CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), 1);
        CHECK(ids.n == 1 && ids.v[0] == 65534 && !nlp_tokbin_reader_unterminated(br));
        CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), 1);
        CHECK(ids.n == 2 && ids.v[1] == 6);
        CHECK(nlp_tokbin_reader_unterminated(br));
        CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), 0);
        nlp_tokbin_reader_free(br);
        nlp_reader_close(r);
    }
    /* the marker anywhere but last is a format error; a terminated text has none */
    CHECK(nlp_writer_open(&w, path, 0) == 0);
    CHECK(nlp_tokbin_writer_new(&bw, w, 100, 3) == 0);
    int32_t one[] = {9};
    CHECK(nlp_tokbin_write_doc(bw, one, 1) == 0);
    CHECK(nlp_tokbin_write_end(bw, 1) == 0);
    CHECK(nlp_tokbin_write_doc(bw, one, 1) == 0);
    nlp_tokbin_writer_free(bw);
    CHECK(nlp_writer_close(w) == 0);
    CHECK(nlp_reader_open(&r, path) == 0);
    CHECK(nlp_tokbin_reader_new(&br, r, -1) == 0);
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "byte 34: the no-final-newline marker is not the last value") != NULL);
    nlp_tokbin_reader_free(br);
    nlp_reader_close(r);

    /* an llm.c GPT-2 shard: EOT before each document */
    unsigned char shard[1024 + 2 * 6] = {0};
    int32_t hdr[3] = {20240520, 1, 6};
    memcpy(shard, hdr, sizeof hdr);
    uint16_t toks[] = {50256, 15496, 995, 50256, 31373, 0};
    memcpy(shard + 1024, toks, sizeof toks);
    snprintf(path, sizeof path, "%s/llmc.bin", dir);
    CHECK(nlp_write_file(path, shard, sizeof shard) == 0);
    CHECK(nlp_reader_open(&r, path) == 0);
    CHECK(nlp_tokbin_reader_new(&br, r, 50256) == 0);
    CHECK_EQ_INT(nlp_tokbin_reader_info(br)->kind, NLP_TOKBIN_LLMC);
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), 1);
    CHECK(ids.n == 2 && ids.v[0] == 15496);
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), 1);
    CHECK(ids.n == 2 && ids.v[0] == 31373 && ids.v[1] == 0);
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), 0);
    nlp_tokbin_reader_free(br);
    nlp_reader_close(r);
    /* a shard that is shorter than its count */
    CHECK(nlp_write_file(path, shard, sizeof shard - 2) == 0);
    CHECK(nlp_reader_open(&r, path) == 0);
    CHECK(nlp_tokbin_reader_new(&br, r, 50256) == 0);
    nlp_tokbin_next_doc(br, &ids);
    CHECK_EQ_INT(nlp_tokbin_next_doc(br, &ids), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "truncated llm.c shard") != NULL);
    nlp_tokbin_reader_free(br);
    nlp_reader_close(r);
    /* not a token stream at all */
    CHECK(nlp_write_file(path, "hello world\n", 12) == 0);
    CHECK(nlp_reader_open(&r, path) == 0);
    CHECK_EQ_INT(nlp_tokbin_reader_new(&br, r, -1), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "not a token stream") != NULL);
    nlp_reader_close(r);
    nlp_ids_free(&ids);
}

static void test_formats_errors(void)
{
    const char *dir = test_tmpdir();
    char p[512], q[512];
    snprintf(p, sizeof p, "%s/codes", dir);
    CHECK(nlp_write_file(p, "#version: 0.2\nl o\nlo w</w>\nx\n", 29) == 0);
    nlp_tok_spec s;
    CHECK_EQ_INT(nlp_tokfiles_read(p, NULL, &s), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "codes' line 4: expected two tokens") != NULL);
    CHECK(nlp_write_file(p, "l o\nlo w</w>\nxy z\n", 18) == 0);
    CHECK_EQ_INT(nlp_tokfiles_read(p, NULL, &s), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "line 3: 'xy' is neither a character nor made by an earlier merge") != NULL);
    CHECK(nlp_write_file(p, "#version: 0.2\nl o\nlo w</w>\n", 27) == 0);
    nlp_tokenizer *tk;
    CHECK(nlp_tokfiles_load(p, NULL, &tk) == 0);
    CHECK_STR(enc_pieces(tk, "low lol"), "low</w> lo l</w>");
    nlp_tokenizer_free(tk);
    snprintf(p, sizeof p, "%s/vocab.json", dir);
    snprintf(q, sizeof q, "%s/merges.txt", dir);
    CHECK(nlp_write_file(p, "{\"a\": 0, \"b\": 1}", 16) == 0);
    CHECK(nlp_write_file(q, "#version: 0.2\na c\n", 18) == 0);
    CHECK_EQ_INT(nlp_tokfiles_read(dir, NULL, &s), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "merges.txt' line 2: token 'c' is not in") != NULL);
    CHECK(nlp_write_file(p, "{\"a\": 0, \"b\": 16777216}", 23) == 0);
    CHECK(nlp_write_file(q, "#version: 0.2\na b\n", 18) == 0);
    CHECK_EQ_INT(nlp_tokfiles_read(dir, NULL, &s), NLP_EFORMAT);
    CHECK_MSG(strstr(nlp_errmsg(), "vocab.json': the id of 'b' (16777216) leaves more than 1048576 ids without a token"),
              "%s", nlp_errmsg());
    snprintf(p, sizeof p, "%s/empty-dir", dir);
    mkdir(p, 0777);
    CHECK_EQ_INT(nlp_tokfiles_read(p, NULL, &s), NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "no tokenizer in this directory") != NULL);
    snprintf(p, sizeof p, "%s/missing.json", dir);
    CHECK_EQ_INT(nlp_tokfiles_read(p, NULL, &s), NLP_EIO);
}

/* A token holding a NUL byte (classic BPE learns one from a corpus with NUL
 * bytes) cannot be a JSON vocabulary key: the writers refuse it rather than
 * write the key cut at the NUL (a broken file that nlpipe cannot read back). */
static void test_writers_nul_token(void)
{
    const char *toks[] = {"a", "b", "ab"};
    nlp_tok_spec s;
    make_spec(&s, toks, 3, NULL, 0);
    nlp_vocab_add(s.vocab, "x\0y", 3, NULL);
    nlp_tok_spec_pipeline(&s, NLP_PIPE_WHITESPACE, NULL);
    nlp_buf j = {0};
    CHECK_EQ_INT(nlp_tokjson_dump(&s, &j), NLP_EINVAL);
    CHECK_MSG(strstr(nlp_errmsg(), "token 3 holds a NUL byte") != NULL, "%s", nlp_errmsg());
    const char *dir = test_tmpdir();
    char p[512];
    snprintf(p, sizeof p, "%s/nul.json", dir);
    CHECK_EQ_INT(nlp_tokfiles_write(&s, NLP_TOKF_JSON, p), NLP_EINVAL);
    CHECK(access(p, F_OK) != 0);
    snprintf(p, sizeof p, "%s/nul-hf", dir);
    CHECK_EQ_INT(nlp_tokfiles_write(&s, NLP_TOKF_HF, p), NLP_EINVAL);
    CHECK_MSG(strstr(nlp_errmsg(), "token 3 holds a NUL byte") != NULL, "%s", nlp_errmsg());
    nlp_buf_free(&j);
    nlp_tok_spec_free(&s);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_uclass);
    RUN(test_vocab_random);
    RUN(test_wordcache);
    RUN(test_bytelevel);
    RUN(test_gpt2_pretok);
    RUN(test_bpe_against_naive);
    RUN(test_bpe_leftmost);
    RUN(test_lecture_classic_encoding);
    RUN(test_added_tokens);
    RUN(test_normalizers);
    RUN(test_template_truncation_padding);
    RUN(test_decoders);
    RUN(test_tokjson_round_trip);
    RUN(test_tokjson_errors);
    RUN(test_tokbin);
    RUN(test_formats_errors);
    RUN(test_writers_nul_token);
    return TEST_END();
}
