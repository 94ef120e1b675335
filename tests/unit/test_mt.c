/*
 * test_mt.c — the translation task's batches (lib/train/mt): every pair once
 * an epoch, within the token budget, bucketed by length, padded as the model
 * expects; the same sequence for the same seed, another for another seed; a
 * task restored from its saved state continues the same sequence; and
 * batched translation (lib/decode/translate) that does not depend on the
 * batch it ran in; the task prefix a model carries (saved, loaded, checked).
 */
#include "base/err.h"
#include "base/rng.h"
#include "decode/translate.h"
#include "model/config.h"
#include "model/model.h"
#include "train/mt.h"
#include "test.h"

#include <omp.h>

/* n random pairs of 1..maxlen ids in [3, 50) (0 pad, 1 bos, 2 eos) */
static void make_pairs(nlp_pairs *p, size_t n, int maxlen, uint64_t seed)
{
    nlp_rng r;
    nlp_rng_seed(&r, seed);
    memset(p, 0, sizeof *p);
    p->src_off = malloc((n + 1) * sizeof *p->src_off);
    p->tgt_off = malloc((n + 1) * sizeof *p->tgt_off);
    p->src = malloc(n * (size_t)maxlen * sizeof *p->src);
    p->tgt = malloc(n * (size_t)maxlen * sizeof *p->tgt);
    p->line = malloc(n * sizeof *p->line);
    p->src_off[0] = p->tgt_off[0] = 0;
    for (size_t i = 0; i < n; i++) {
        int a = 1 + (int)nlp_rng_below(&r, (uint64_t)maxlen), b = 1 + (int)nlp_rng_below(&r, (uint64_t)maxlen);
        for (int k = 0; k < a; k++) p->src[p->src_off[i] + k] = 3 + (int32_t)nlp_rng_below(&r, 47);
        for (int k = 0; k < b; k++) p->tgt[p->tgt_off[i] + k] = 3 + (int32_t)nlp_rng_below(&r, 47);
        p->src_off[i + 1] = p->src_off[i] + a, p->tgt_off[i + 1] = p->tgt_off[i] + b;
        if (a > p->src_max) p->src_max = a;
        if (b > p->tgt_max) p->tgt_max = b;
        p->line[i] = i + 1;
    }
    p->n = p->lines = n;
}

/* Which pair a batch row is: its target without EOS identifies it here. */
static size_t which(const nlp_pairs *p, const nlp_batch *b, int row)
{
    for (size_t i = 0; i < p->n; i++) {
        size_t len = p->tgt_off[i + 1] - p->tgt_off[i];
        const int32_t *to = b->tgt_out + (size_t)row * b->T;
        if ((int)len + 1 > b->T || to[len] != 2) continue;
        if (memcmp(to, p->tgt + p->tgt_off[i], len * sizeof *to) == 0 &&
            ((int)len + 1 == b->T || to[len + 1] == 0)) {
            size_t sl = p->src_off[i + 1] - p->src_off[i];
            const int32_t *s = b->src + (size_t)row * b->S;
            if ((int)sl + 1 <= b->S && memcmp(s, p->src + p->src_off[i], sl * sizeof *s) == 0 && s[sl] == 2) return i;
        }
    }
    return (size_t)-1;
}

static uint64_t batch_hash(const nlp_batch *b)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)b->B * 31 ^ (uint64_t)b->S * 7 ^ (uint64_t)b->T;
    for (size_t i = 0; i < (size_t)b->B * b->S; i++) h = (h ^ (uint32_t)b->src[i]) * 1099511628211ull;
    for (size_t i = 0; i < (size_t)b->B * b->T; i++) h = (h ^ (uint32_t)b->tgt_in[i]) * 1099511628211ull;
    return h;
}

static void test_batches(void)
{
    nlp_pairs p;
    make_pairs(&p, 300, 20, 1);
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_TRANSFORMER) == 0);
    cfg.pad_id = 0, cfg.bos_id = 1, cfg.eos_id = 2;
    nlp_mt_task t;
    nlp_task task;
    const long budget = 200;
    CHECK(nlp_mt_task_init(&t, &task, &p, NULL, &cfg, budget, 42) == 0);
    size_t nb = nlp_mt_epoch_batches(&t);
    CHECK(nb > 300 * 2 / 200 && nb < 300);
    /* two epochs: every pair exactly once in each, batches within budget,
     * rows padded as the model expects */
    for (int e = 0; e < 2; e++) {
        int *seen = calloc(p.n, sizeof *seen);
        size_t rows = 0;
        do {
            nlp_batch b;
            CHECK(task.next_batch(task.ctx, NULL, &b) == 0);
            CHECK((long)b.B * (b.S > b.T ? b.S : b.T) <= budget);
            for (int r = 0; r < b.B; r++) {
                size_t i = which(&p, &b, r);
                CHECK(i != (size_t)-1);
                if (i == (size_t)-1) continue;
                seen[i]++;
                CHECK(b.tgt_in[(size_t)r * b.T] == 1);
            }
            rows += (size_t)b.B;
        } while (t.drawn < t.nbatch);
        int once = 1;
        for (size_t i = 0; i < p.n; i++) once &= seen[i] == 1;
        CHECK(once);
        CHECK(rows == p.n);
        CHECK(t.epoch == (uint64_t)e + 1);
        free(seen);
    }
    /* the same seed gives the same batches, another seed others; a task
     * restored from a saved state goes on with the same sequence */
    nlp_mt_task a, b2, c;
    nlp_task ta, tb, tc;
    CHECK(nlp_mt_task_init(&a, &ta, &p, NULL, &cfg, budget, 7) == 0);
    CHECK(nlp_mt_task_init(&b2, &tb, &p, NULL, &cfg, budget, 7) == 0);
    CHECK(nlp_mt_task_init(&c, &tc, &p, NULL, &cfg, budget, 8) == 0);
    int same = 1, differ = 0;
    uint64_t st[4];
    uint64_t hist[200];
    for (int k = 0; k < 200; k++) {
        nlp_batch x, y, z;
        CHECK(ta.next_batch(ta.ctx, NULL, &x) == 0);
        hist[k] = batch_hash(&x);
        CHECK(tb.next_batch(tb.ctx, NULL, &y) == 0);
        same &= hist[k] == batch_hash(&y);
        CHECK(tc.next_batch(tc.ctx, NULL, &z) == 0);
        differ |= hist[k] != batch_hash(&z);
        if (k == 87) ta.get_state(ta.ctx, st);
    }
    CHECK(same);
    CHECK(differ);
    nlp_mt_task d;
    nlp_task td;
    CHECK(nlp_mt_task_init(&d, &td, &p, NULL, &cfg, budget, 7) == 0);
    CHECK(td.set_state(td.ctx, st) == 0);
    int resumed = 1;
    for (int k = 88; k < 200; k++) {
        nlp_batch x;
        CHECK(td.next_batch(td.ctx, NULL, &x) == 0);
        resumed &= hist[k] == batch_hash(&x);
    }
    CHECK(resumed);
    /* a budget below the longest pair is refused */
    nlp_mt_task e;
    nlp_task te;
    CHECK(nlp_mt_task_init(&e, &te, &p, NULL, &cfg, 15, 7) == NLP_EINVAL);
    nlp_mt_task_free(&t), nlp_mt_task_free(&a), nlp_mt_task_free(&b2), nlp_mt_task_free(&c), nlp_mt_task_free(&d);
    nlp_pairs_free(&p);
}

/* A sentence translated alone, in batches of 2 or 5, with 1 or 2 threads:
 * the same tokens and scores, bit for bit. */
static void test_translate_invariant(void)
{
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_TRANSFORMER) == 0);
    cfg.vocab_size = cfg.src_vocab_size = 60;
    cfg.pad_id = 0, cfg.bos_id = 1, cfg.eos_id = 2;
    nlp_model *m;
    CHECK(nlp_model_new(&m, &cfg, 3) == 0);
    nlp_rng r;
    nlp_rng_seed(&r, 5);
    enum { N = 9 };
    nlp_ids src[N] = {{0}};
    for (int i = 0; i < N; i++) {
        int len = i == 4 ? 0 : 1 + (int)nlp_rng_below(&r, 12); /* one empty source */
        for (int k = 0; k < len; k++) nlp_ids_push(&src[i], 3 + (int32_t)nlp_rng_below(&r, 57));
        if (len) nlp_ids_push(&src[i], 2);
    }
    for (int beams = 1; beams <= 4; beams += 3) {
        nlp_translate_opts o = nlp_translate_defaults();
        o.beams = beams, o.nbest = beams, o.max_len = 0, o.len_a = 1.2, o.len_b = 3;
        nlp_ids ref[N * 4] = {{0}}, got[N * 4] = {{0}};
        float rs[N * 4], gs[N * 4];
        o.batch = 1;
        omp_set_num_threads(1);
        CHECK(nlp_translate(m, src, N, &o, ref, rs) == 0);
        CHECK(ref[4 * beams].n == 0 && rs[4 * beams] == 0);
        int ok = 1;
        for (int bs = 2; bs <= 5; bs += 3)
            for (int th = 1; th <= 2; th++) {
                o.batch = bs;
                omp_set_num_threads(th);
                CHECK(nlp_translate(m, src, N, &o, got, gs) == 0);
                for (int i = 0; i < N * beams; i++) {
                    ok &= got[i].n == ref[i].n && gs[i] == rs[i];
                    if (got[i].n == ref[i].n && got[i].n) ok &= memcmp(got[i].v, ref[i].v, got[i].n * sizeof(int32_t)) == 0;
                }
            }
        CHECK(ok);
        /* each sentence's limit is its own: a.len + b tokens at most */
        for (int i = 0; i < N; i++)
            for (int j = 0; j < beams; j++) CHECK(ref[i * beams + j].n <= (size_t)(1.2 * (double)src[i].n + 3));
        /* n-best: ranked by score */
        for (int i = 0; i < N && beams > 1; i++)
            for (int j = 1; j < beams; j++) CHECK(rs[i * beams + j] <= rs[i * beams + j - 1]);
        for (int i = 0; i < N * 4; i++) nlp_ids_free(&ref[i]), nlp_ids_free(&got[i]);
    }
    omp_set_num_threads(2);
    for (int i = 0; i < N; i++) nlp_ids_free(&src[i]);
    nlp_model_free(m);
}

/* The task prefix: kept through save and load byte for byte (quotes,
 * backslashes, UTF-8, a trailing space), none when not set or set empty,
 * copied by nlp_model_extend; bad ones refused, in memory and in a file. */
static void test_prefix(void)
{
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_TRANSFORMER) == 0);
    cfg.vocab_size = cfg.src_vocab_size = 40;
    cfg.pad_id = 0, cfg.bos_id = 1, cfg.eos_id = 2;
    nlp_model *m, *l;
    CHECK(nlp_model_new(&m, &cfg, 1) == 0);
    CHECK(nlp_model_prefix(m) == NULL);
    char path[4200];
    snprintf(path, sizeof path, "%s/m.safetensors", test_tmpdir());
    /* none: no key, and none back */
    CHECK(nlp_model_save(m, path, NLP_DT_F32) == 0);
    CHECK(nlp_model_load(&l, path) == 0);
    CHECK(nlp_model_prefix(l) == NULL);
    nlp_model_free(l);
    const char *p = "say \"\xC3\xA9t\xC3\xA9\" \\ in French: ";
    CHECK(nlp_model_set_prefix(m, p) == 0);
    CHECK_STR(nlp_model_prefix(m), p);
    CHECK(nlp_model_save(m, path, NLP_DT_F32) == 0);
    CHECK(nlp_model_load(&l, path) == 0);
    CHECK(nlp_model_prefix(l) && strcmp(nlp_model_prefix(l), p) == 0);
    nlp_model_free(l);
    nlp_model *x;
    cfg.vocab_size = cfg.src_vocab_size = 44;
    CHECK(nlp_model_extend(&x, m, &cfg, 2) == 0);
    CHECK(nlp_model_prefix(x) && strcmp(nlp_model_prefix(x), p) == 0);
    nlp_model_free(x);
    /* refused: the old one stays */
    CHECK(nlp_model_set_prefix(m, "a\tb") == NLP_EINVAL);
    CHECK(strstr(nlp_errmsg(), "tab or a line break") != NULL);
    CHECK(nlp_model_set_prefix(m, "a\nb") == NLP_EINVAL);
    CHECK(nlp_model_set_prefix(m, "\xC3(") == NLP_EINVAL);
    CHECK(strstr(nlp_errmsg(), "not valid UTF-8 (byte 1)") != NULL);
    char *big = malloc(NLP_MAX_PREFIX + 2);
    memset(big, 'a', NLP_MAX_PREFIX + 1);
    big[NLP_MAX_PREFIX + 1] = 0;
    CHECK(nlp_model_set_prefix(m, big) == NLP_EINVAL);
    big[NLP_MAX_PREFIX] = 0;
    CHECK(nlp_prefix_check(big) == 0);
    free(big);
    CHECK_STR(nlp_model_prefix(m), p);
    /* "" removes it */
    CHECK(nlp_model_set_prefix(m, "") == 0);
    CHECK(nlp_model_prefix(m) == NULL);
    /* a file whose prefix holds a newline: a bad model file (NLP_EFORMAT) naming it */
    const char *meta[] = {"prefix", "a\nb", NULL};
    CHECK(nlp_model_save_meta(m, path, NLP_DT_F32, meta) == 0);
    CHECK(nlp_model_load(&l, path) == NLP_EFORMAT);
    CHECK(strstr(nlp_errmsg(), "metadata 'prefix'") != NULL && strstr(nlp_errmsg(), "m.safetensors") != NULL);
    nlp_model_free(m);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_batches);
    RUN(test_translate_invariant);
    RUN(test_prefix);
    return TEST_END();
}
