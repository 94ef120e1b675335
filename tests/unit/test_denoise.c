/*
 * test_denoise.c — the denoising objectives' pairs (lib/train/denoise):
 * documents cut into pieces that fit (at sentence boundaries, a long
 * sentence in near-equal parts, short pieces skipped and counted); T5's
 * pairs give the piece back from input and target, with the sentinels in
 * order; BART's target is the piece, its input the piece's sentences with
 * spans masked; an epoch's pairs depend on (seed, epoch) alone (not the
 * threads), differ between epochs, and the translation task with the
 * refresh hook resumes them from its state; validation's token accuracy is
 * the argmax of the logits of the cached decoder's steps.
 */
#include "base/err.h"
#include "base/rng.h"
#include "model/config.h"
#include "model/model.h"
#include "train/denoise.h"
#include "train/mt.h"
#include "train/noise.h"
#include "test.h"

#include <math.h>

enum { PAD = 0, BOS = 1, EOS = 2, MASK = 3, SENT0 = 200, NSENT = 100 };

/* Documents of sentences of the given lengths: lens[] lists each
 * document's sentence lengths, a 0 ends a document; ids are 10 + the
 * token's index mod 150 (never a special id). */
static void make_docs(nlp_bert_docs *d, const int *lens, size_t nlens)
{
    memset(d, 0, sizeof *d);
    d->map.fd = -1;
    size_t tokens = 0, sents = 0, docs = 0;
    for (size_t i = 0; i < nlens; i++) tokens += (size_t)lens[i], sents += lens[i] > 0, docs += lens[i] == 0;
    d->ids = malloc((tokens + 1) * sizeof *d->ids);
    d->sent = malloc((sents + 1) * sizeof *d->sent);
    d->doc = malloc((docs + 1) * sizeof *d->doc);
    for (size_t i = 0; i < tokens; i++) d->ids[i] = 10 + (int32_t)(i % 150);
    d->sent[0] = 0, d->doc[0] = 0;
    size_t at = 0;
    for (size_t i = 0; i < nlens; i++) {
        if (lens[i] == 0) {
            d->doc[++d->ndoc] = d->nsent;
            continue;
        }
        at += (size_t)lens[i];
        d->sent[++d->nsent] = at;
    }
    d->n = tokens;
}

/* n random documents of 1..6 sentences of 1..maxs tokens */
static void random_docs(nlp_bert_docs *d, size_t ndoc, int maxs, uint64_t seed)
{
    nlp_rng r;
    nlp_rng_seed(&r, seed);
    int *lens = malloc(ndoc * 8 * sizeof *lens);
    size_t k = 0;
    for (size_t i = 0; i < ndoc; i++) {
        int s = 1 + (int)nlp_rng_below(&r, 6);
        for (int j = 0; j < s; j++) lens[k++] = 1 + (int)nlp_rng_below(&r, (uint64_t)maxs);
        lens[k++] = 0;
    }
    make_docs(d, lens, k);
    for (size_t i = 0; i < d->n; i++) d->ids[i] = 10 + (int32_t)nlp_rng_below(&r, 150);
    free(lens);
}

static int32_t sentinels[NSENT];

static nlp_denoise_opts span_opts(int max_len)
{
    for (int i = 0; i < NSENT; i++) sentinels[i] = SENT0 + i;
    return (nlp_denoise_opts){.kind = NLP_DENOISE_SPAN, .density = 0.15, .mean_span = 3, .sentinel = sentinels,
                              .n_sentinel = NSENT, .mask = -1, .max_len = max_len, .threads = 1};
}

static nlp_denoise_opts bart_opts(int max_len)
{
    return (nlp_denoise_opts){.kind = NLP_DENOISE_BART, .lambda = 3, .ratio = 0.3, .permute = 1, .mask = MASK,
                              .max_len = max_len, .threads = 1};
}

static void test_max_piece(void)
{
    /* n = 141: k = round(21.15) = 21, s = 7, input 141 - 21 + 7 + 1 = 128;
     * n = 142: k = 21, s = 7, input 129 */
    nlp_denoise_opts o = span_opts(128);
    CHECK_EQ_INT((int)nlp_denoise_max_piece(&o), 141);
    /* every length up to it fits, the next does not */
    int ok = 1;
    for (size_t n = 2; n <= 142; n++) {
        size_t k, s;
        nlp_noise_t5_counts(n, 0.15, 3, &k, &s);
        ok &= (n - k + s + 1 <= 128 && k + s + 2 <= 128) == (n <= 141);
    }
    CHECK(ok);
    /* two sentinels: one span at most; n = 30 has k = round(4.5) = 4 (half
     * to even), s = round(4/3) = 1; n = 31 has k = 5, s = 2 */
    o.n_sentinel = 2, o.max_len = 1000;
    CHECK_EQ_INT((int)nlp_denoise_max_piece(&o), 30);
    /* 3 tokens a side: 2 tokens give an input of 3 but a target of 4 */
    o = span_opts(3);
    CHECK_EQ_INT((int)nlp_denoise_max_piece(&o), 0);
    nlp_bert_docs d;
    const int lens[] = {5, 0};
    make_docs(&d, lens, 2);
    nlp_denoise dn;
    CHECK_EQ_INT(nlp_denoise_init(&dn, &d, &o, 1), NLP_EINVAL);
    CHECK(strstr(nlp_errmsg(), "a side of 3 tokens") != NULL);
    /* 4: n = 3 has k = 1, s = 1, input 3 - 1 + 1 + 1 = 4, target 4; n = 4
     * an input of 5 */
    o = span_opts(4);
    CHECK_EQ_INT((int)nlp_denoise_max_piece(&o), 3);
    /* denoise: the target is the piece and EOS */
    o = bart_opts(128);
    CHECK_EQ_INT((int)nlp_denoise_max_piece(&o), 127);
    o.ratio = 1.5;
    CHECK_EQ_INT(nlp_denoise_init(&dn, &d, &o, 1), NLP_EINVAL);
    CHECK(strstr(nlp_errmsg(), "mask ratio") != NULL);
    o = span_opts(128), o.density = 1;
    CHECK_EQ_INT(nlp_denoise_init(&dn, &d, &o, 1), NLP_EINVAL);
    CHECK(strstr(nlp_errmsg(), "noise density") != NULL);
    nlp_bert_docs_free(&d);
}

static void test_pieces(void)
{
    /* max_len 12 for denoise: pieces of 11 tokens at most */
    const int lens[] = {4, 5, 3, 0,   /* 12: [4 5] [3] */
                        1, 0,         /* too short: skipped */
                        25, 2, 0,     /* 25 cut in 3 (8, 8, 9), then [2] */
                        6, 5, 1, 0,   /* 12: [6 5] and [1] too short */
                        11, 0};       /* exactly one piece */
    nlp_bert_docs d;
    make_docs(&d, lens, sizeof lens / sizeof *lens);
    nlp_denoise_opts o = bart_opts(12);
    nlp_denoise dn;
    CHECK_EQ_INT(nlp_denoise_init(&dn, &d, &o, 1), 0);
    CHECK_EQ_INT((int)dn.max_piece, 11);
    const size_t want[][2] = {{0, 9}, {9, 12}, {13, 21}, {21, 29}, {29, 38}, {38, 40}, {40, 51}, {52, 63}};
    CHECK_EQ_INT((int)dn.n, 8);
    int ok = dn.n == 8;
    for (size_t i = 0; i < dn.n && ok; i++) ok &= dn.piece[i].a == want[i][0] && dn.piece[i].b == want[i][1];
    CHECK(ok);
    const size_t docs[] = {0, 0, 2, 2, 2, 2, 3, 4};
    for (size_t i = 0; i < dn.n && i < 8; i++) CHECK_EQ_INT((int)dn.doc[i], (int)docs[i]);
    CHECK_EQ_INT((int)dn.docs_cut, 3);   /* documents 0, 2 and 3 */
    CHECK_EQ_INT((int)dn.sents_cut, 1);
    CHECK_EQ_INT((int)dn.skipped, 2);    /* document 1, and document 3's last sentence */
    CHECK_EQ_INT((int)dn.skipped_docs, 1);
    nlp_denoise_free(&dn);
    nlp_bert_docs_free(&d);

    /* random documents: the pieces of a document cover it in order (but
     * for skipped pieces of 1 token), each within the longest
     * piece, each starting at a sentence start unless inside a sentence
     * cut, and packed: a piece of whole sentences could not take the next
     * piece's first sentence too */
    random_docs(&d, 300, 40, 5);
    o = span_opts(32);
    CHECK_EQ_INT(nlp_denoise_init(&dn, &d, &o, 1), 0);
    ok = 1;
    int packed = 1, bounds = 1, fits = 1;
    size_t at = 0, cut_seen = 0;
    for (size_t i = 0; i < dn.n; i++) {
        const nlp_denoise_piece *p = &dn.piece[i];
        fits &= p->b - p->a <= dn.max_piece && p->b - p->a >= 2;
        ok &= p->a == at || p->a == at + 1; /* or after a skipped piece: a sentence of 1 token */
        at = p->b;
        const int whole = p->a == d.sent[p->s0] && p->b == d.sent[p->s1];
        if (!whole) {
            bounds &= p->s1 == p->s0 + 1 && d.sent[p->s1] - d.sent[p->s0] > dn.max_piece;
            cut_seen++;
        }
        if (whole && i + 1 < dn.n && dn.doc[i + 1] == dn.doc[i] && dn.piece[i + 1].a == d.sent[dn.piece[i + 1].s0]) {
            const size_t next = d.sent[dn.piece[i + 1].s0 + 1] - d.sent[dn.piece[i + 1].s0];
            packed &= p->b - p->a + next > dn.max_piece;
        }
    }
    CHECK(ok);
    CHECK(fits);
    CHECK(bounds);
    CHECK(packed);
    CHECK(cut_seen > 0 && dn.sents_cut > 0);
    nlp_denoise_free(&dn);
    nlp_bert_docs_free(&d);
}

static uint64_t pairs_hash(const nlp_pairs *p)
{
    uint64_t h = 1469598103934665603ull ^ p->n;
    for (size_t i = 0; i < p->src_off[p->n]; i++) h = (h ^ (uint32_t)p->src[i]) * 1099511628211ull;
    for (size_t i = 0; i <= p->n; i++) h = (h ^ p->src_off[i]) * 1099511628211ull;
    for (size_t i = 0; i < p->tgt_off[p->n]; i++) h = (h ^ (uint32_t)p->tgt[i]) * 1099511628211ull;
    for (size_t i = 0; i <= p->n; i++) h = (h ^ p->tgt_off[i]) * 1099511628211ull;
    return h;
}

static void test_span_pairs(void)
{
    nlp_bert_docs d;
    random_docs(&d, 400, 50, 7);
    nlp_denoise_opts o = span_opts(48);
    nlp_denoise dn;
    CHECK_EQ_INT(nlp_denoise_init(&dn, &d, &o, 11), 0);
    CHECK_EQ_INT(nlp_denoise_epoch(&dn, 1), 0);
    const nlp_pairs *p = &dn.pairs;
    CHECK(p->n == dn.n);
    int fits = 1, order = 1, back = 1, noise = 1;
    size_t noisy = 0, total = 0;
    for (size_t i = 0; i < p->n; i++) {
        const int32_t *s = p->src + p->src_off[i], *t = p->tgt + p->tgt_off[i];
        const size_t ns = p->src_off[i + 1] - p->src_off[i], nt = p->tgt_off[i + 1] - p->tgt_off[i];
        const nlp_denoise_piece *pc = &dn.piece[i];
        const size_t n = pc->b - pc->a;
        size_t k, sp;
        nlp_noise_t5_counts(n, 0.15, 3, &k, &sp);
        fits &= ns + 1 <= 48 && nt + 1 <= 48 && ns == n - k + sp && nt == k + sp + 1;
        /* the input's sentinels are S0, S1, ... in order; the target's too,
         * and it ends with the next one */
        int32_t want = SENT0;
        for (size_t j = 0; j < ns; j++)
            if (s[j] >= SENT0) order &= s[j] == want++;
        int32_t want_t = SENT0;
        for (size_t j = 0; j < nt; j++)
            if (t[j] >= SENT0) order &= t[j] == want_t++;
        order &= t[0] == SENT0 && t[nt - 1] == want && want_t == want + 1;
        /* each sentinel of the input replaced by its run of the target
         * gives the piece back */
        size_t at = 0, ti = 0;
        const int32_t *orig = d.ids + pc->a;
        for (size_t j = 0; j < ns && back; j++) {
            if (s[j] < SENT0) {
                back &= at < n && orig[at++] == s[j];
                continue;
            }
            back &= ti < nt && t[ti] == s[j];
            for (ti++; ti < nt && t[ti] < SENT0; ti++) back &= at < n && orig[at++] == t[ti];
        }
        back &= at == n;
        noisy += k, total += n;
        noise &= k >= 1;
    }
    CHECK(fits);
    CHECK(order);
    CHECK(back);
    CHECK(noise);
    CHECK(fabs((double)noisy / (double)total - 0.15) < 0.01);
    /* a function of (seed, epoch): another object, another thread count,
     * the same; another epoch or seed, others; an example alone is its
     * pair of the epoch */
    const uint64_t h1 = pairs_hash(p);
    nlp_denoise other;
    o.threads = 4;
    CHECK_EQ_INT(nlp_denoise_init(&other, &d, &o, 11), 0);
    CHECK_EQ_INT(nlp_denoise_epoch(&other, 1), 0);
    CHECK(pairs_hash(&other.pairs) == h1);
    CHECK_EQ_INT(nlp_denoise_epoch(&other, 2), 0);
    const uint64_t h2 = pairs_hash(&other.pairs);
    CHECK(h2 != h1);
    /* pieces of two noise spans or more have many masks: most change (one
     * span is always at the end, as in T5) */
    size_t changed = 0, longer = 0;
    for (size_t i = 0; i < p->n; i++) {
        const size_t ns = p->src_off[i + 1] - p->src_off[i];
        size_t k, sp;
        nlp_noise_t5_counts(dn.piece[i].b - dn.piece[i].a, 0.15, 3, &k, &sp);
        if (sp < 2) continue;
        longer++;
        changed += ns != other.pairs.src_off[i + 1] - other.pairs.src_off[i] ||
                   memcmp(p->src + p->src_off[i], other.pairs.src + other.pairs.src_off[i], ns * sizeof *p->src) != 0;
    }
    CHECK(longer > 100 && changed > longer * 9 / 10);
    if (changed <= longer * 9 / 10) printf("    %zu of %zu changed\n", changed, longer);
    nlp_ids a = {0}, b = {0};
    CHECK_EQ_INT(nlp_denoise_example(&dn, 17, 2, &a, &b), 0);
    const nlp_pairs *q = &other.pairs;
    CHECK(a.n == q->src_off[18] - q->src_off[17] && memcmp(a.v, q->src + q->src_off[17], a.n * sizeof *a.v) == 0);
    CHECK(b.n == q->tgt_off[18] - q->tgt_off[17] && memcmp(b.v, q->tgt + q->tgt_off[17], b.n * sizeof *b.v) == 0);
    CHECK_EQ_INT(nlp_denoise_epoch(&other, 1), 0);
    CHECK(pairs_hash(&other.pairs) == h1);
    nlp_denoise_free(&other);
    CHECK_EQ_INT(nlp_denoise_init(&other, &d, &o, 12), 0);
    CHECK_EQ_INT(nlp_denoise_epoch(&other, 1), 0);
    CHECK(pairs_hash(&other.pairs) != h1);
    nlp_denoise_free(&other);
    free(a.v), free(b.v);
    nlp_denoise_free(&dn);
    nlp_bert_docs_free(&d);
}

static void test_bart_pairs(void)
{
    nlp_bert_docs d;
    random_docs(&d, 400, 30, 9);
    nlp_denoise_opts o = bart_opts(64);
    o.permute = 0;
    nlp_denoise dn;
    CHECK_EQ_INT(nlp_denoise_init(&dn, &d, &o, 3), 0);
    CHECK_EQ_INT(nlp_denoise_epoch(&dn, 1), 0);
    const nlp_pairs *p = &dn.pairs;
    /* no permutation: the target is the piece; the input's other tokens
     * are the piece's n - ceil(0.3 n) kept ones, in order */
    int target = 1, kept = 1, fits = 1;
    for (size_t i = 0; i < p->n; i++) {
        const nlp_denoise_piece *pc = &dn.piece[i];
        const size_t n = pc->b - pc->a, ns = p->src_off[i + 1] - p->src_off[i], nt = p->tgt_off[i + 1] - p->tgt_off[i];
        const int32_t *s = p->src + p->src_off[i], *orig = d.ids + pc->a;
        target &= nt == n && memcmp(p->tgt + p->tgt_off[i], orig, n * sizeof *orig) == 0;
        fits &= ns + 1 <= 64 && nt + 1 <= 64;
        size_t at = 0, other = 0;
        for (size_t j = 0; j < ns; j++) {
            if (s[j] == MASK) continue;
            other++;
            while (at < n && orig[at] != s[j]) at++;
            kept &= at < n;
            at++;
        }
        kept &= other == n - (size_t)ceil((double)n * 0.3);
    }
    CHECK(target);
    CHECK(kept);
    CHECK(fits);
    nlp_denoise_free(&dn);

    /* permutation alone (ratio 0): the input is the piece's sentences in
     * some order, often another */
    o.permute = 1, o.ratio = 0;
    CHECK_EQ_INT(nlp_denoise_init(&dn, &d, &o, 3), 0);
    CHECK_EQ_INT(nlp_denoise_epoch(&dn, 1), 0);
    int perm = 1;
    size_t moved = 0, multi = 0;
    for (size_t i = 0; i < p->n; i++) {
        const nlp_denoise_piece *pc = &dn.piece[i];
        const size_t n = pc->b - pc->a;
        const int32_t *s = p->src + p->src_off[i];
        perm &= p->src_off[i + 1] - p->src_off[i] == n;
        /* each sentence of the piece is somewhere in the input, whole, and
         * together they cover it */
        size_t covered = 0;
        for (size_t q = pc->s0; q < pc->s1; q++) {
            const size_t a = d.sent[q] > pc->a ? d.sent[q] : pc->a, b = d.sent[q + 1] < pc->b ? d.sent[q + 1] : pc->b;
            int found = 0;
            for (size_t j = 0; j + (b - a) <= n && !found; j++)
                found = memcmp(s + j, d.ids + a, (b - a) * sizeof *s) == 0;
            perm &= found;
            covered += b - a;
        }
        perm &= covered == n;
        if (pc->s1 - pc->s0 >= 2) {
            multi++;
            moved += memcmp(s, d.ids + pc->a, n * sizeof *s) != 0;
        }
    }
    CHECK(perm);
    CHECK(multi > 50 && moved > multi / 3);
    nlp_denoise_free(&dn);

    /* tiny spans (lambda 0.01: most draws 0, each inserting a mask): the
     * inputs outgrow the side, are drawn again, and cut after 64 draws;
     * they still fit */
    o = bart_opts(24), o.lambda = 0.01, o.ratio = 0.5;
    CHECK_EQ_INT(nlp_denoise_init(&dn, &d, &o, 3), 0);
    CHECK_EQ_INT(nlp_denoise_epoch(&dn, 1), 0);
    fits = 1;
    for (size_t i = 0; i < p->n; i++) fits &= p->src_off[i + 1] - p->src_off[i] + 1 <= 24;
    CHECK(fits);
    CHECK(dn.cut_inputs > 0 && dn.redrawn >= 63 * dn.cut_inputs);
    nlp_denoise_free(&dn);
    nlp_bert_docs_free(&d);
}

static uint64_t batch_hash(const nlp_batch *b)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)b->B * 31 ^ (uint64_t)b->S * 7 ^ (uint64_t)b->T;
    for (size_t i = 0; i < (size_t)b->B * b->S; i++) h = (h ^ (uint32_t)b->src[i]) * 1099511628211ull;
    for (size_t i = 0; i < (size_t)b->B * b->T; i++) h = (h ^ (uint32_t)b->tgt_out[i]) * 1099511628211ull;
    return h;
}

/* The translation task with the refresh hook: each epoch trains on that
 * epoch's pairs, every pair once; a task restored from a saved state (a
 * resumed run: a new nlp_denoise at epoch 0) draws the same batches. */
static void test_task(void)
{
    nlp_bert_docs d;
    random_docs(&d, 120, 20, 21);
    nlp_denoise_opts o = span_opts(40);
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_TRANSFORMER) == 0);
    cfg.pad_id = PAD, cfg.bos_id = BOS, cfg.eos_id = EOS;
    nlp_denoise a, b;
    CHECK_EQ_INT(nlp_denoise_init(&a, &d, &o, 5), 0);
    CHECK_EQ_INT(nlp_denoise_init(&b, &d, &o, 5), 0);
    CHECK_EQ_INT(nlp_denoise_epoch(&a, 1), 0);
    nlp_mt_task ta, tb;
    nlp_task ka, kb;
    CHECK_EQ_INT(nlp_mt_task_init(&ta, &ka, &a.pairs, NULL, &cfg, 300, 5), 0);
    nlp_mt_task_refresh(&ta, &ka, nlp_denoise_refresh, &a);
    CHECK(strcmp(ka.eval_names[2], "acc") == 0);
    enum { K = 120 };
    uint64_t hist[K], st[4] = {0};
    uint64_t seen_epoch[K];
    size_t rows_in_epoch[8] = {0};
    int ok = 1;
    for (int k = 0; k < K; k++) {
        nlp_batch x;
        CHECK(ka.next_batch(ka.ctx, NULL, &x) == 0);
        hist[k] = batch_hash(&x);
        seen_epoch[k] = ta.epoch;
        ok &= a.epoch == ta.epoch; /* the pairs are the epoch's */
        if (ta.epoch < 8) rows_in_epoch[ta.epoch] += (size_t)x.B;
        if (k == 53) ka.get_state(ka.ctx, st);
    }
    CHECK(ok);
    CHECK(seen_epoch[K - 1] >= 4); /* several epochs */
    for (uint64_t e = 1; e < seen_epoch[K - 1] && e < 8; e++) CHECK_EQ_INT((int)rows_in_epoch[e], (int)a.n);
    CHECK(st[0] >= 2);
    /* resumed: b starts with no pairs; set_state makes the epoch's */
    CHECK_EQ_INT(nlp_denoise_epoch(&b, 1), 0);
    CHECK_EQ_INT(nlp_mt_task_init(&tb, &kb, &b.pairs, NULL, &cfg, 300, 5), 0);
    nlp_mt_task_refresh(&tb, &kb, nlp_denoise_refresh, &b);
    CHECK_EQ_INT(kb.set_state(kb.ctx, st), 0);
    CHECK(b.epoch == st[0]);
    int same = 1;
    for (int k = 54; k < K; k++) {
        nlp_batch x;
        CHECK(kb.next_batch(kb.ctx, NULL, &x) == 0);
        same &= hist[k] == batch_hash(&x);
    }
    CHECK(same);
    nlp_mt_task_free(&ta), nlp_mt_task_free(&tb);
    nlp_denoise_free(&a), nlp_denoise_free(&b);
    nlp_bert_docs_free(&d);
}

/* Validation's accuracy: the share of target tokens (EOS included) that are
 * the argmax of the logits, against the same figure from the cached
 * decoder (another code path: encode once, then all target positions). */
static void test_accuracy(void)
{
    nlp_bert_docs d;
    random_docs(&d, 30, 12, 31);
    nlp_denoise_opts o = bart_opts(32);
    nlp_model_config cfg;
    CHECK(nlp_model_config_preset(&cfg, "tiny", NLP_ARCH_TRANSFORMER) == 0);
    cfg.vocab_size = cfg.src_vocab_size = 160;
    cfg.pad_id = PAD, cfg.bos_id = BOS, cfg.eos_id = EOS;
    nlp_model *m;
    CHECK_EQ_INT(nlp_model_new(&m, &cfg, 3), 0);
    nlp_model_set_training(m, 0);
    nlp_denoise dn;
    CHECK_EQ_INT(nlp_denoise_init(&dn, &d, &o, 1), 0);
    CHECK_EQ_INT(nlp_denoise_epoch(&dn, 1), 0);
    nlp_mt_task t;
    nlp_task task;
    CHECK_EQ_INT(nlp_mt_task_init(&t, &task, &dn.pairs, &dn.pairs, &cfg, 400, 1), 0);
    nlp_mt_task_refresh(&t, &task, nlp_denoise_refresh, &dn);
    nlp_eval ev;
    CHECK_EQ_INT(task.evaluate(task.ctx, m, &ev), 0);
    const nlp_pairs *p = &dn.pairs;
    double right = 0, total = 0;
    nlp_cache *c;
    CHECK_EQ_INT(nlp_cache_new(&c, m, 1, 40), 0);
    for (size_t i = 0; i < p->n; i++) {
        const size_t ns = p->src_off[i + 1] - p->src_off[i], nt = p->tgt_off[i + 1] - p->tgt_off[i];
        int32_t src[40], tin[40], tout[40];
        memcpy(src, p->src + p->src_off[i], ns * sizeof *src);
        src[ns] = EOS;
        tin[0] = BOS;
        memcpy(tin + 1, p->tgt + p->tgt_off[i], nt * sizeof *tin);
        memcpy(tout, p->tgt + p->tgt_off[i], nt * sizeof *tout);
        tout[nt] = EOS;
        nlp_batch b = {.B = 1, .S = (int)ns + 1, .T = (int)nt + 1, .src = src, .tgt_in = tin};
        nlp_cache_reset(c);
        CHECK_EQ_INT(nlp_model_encode(m, &b, c), 0);
        CHECK_EQ_INT(nlp_model_decode(m, &b, c), 0);
        int rows, V;
        const float *lg = nlp_model_logits(m, &rows, &V);
        for (size_t q = 0; q <= nt; q++) {
            const float *x = lg + q * (size_t)V;
            int best = 0;
            for (int v = 1; v < V; v++)
                if (x[v] > x[best]) best = v;
            right += best == tout[q], total++;
        }
    }
    CHECK(total > 0);
    CHECK(right > 0);
    CHECK_NEAR(ev.v[2], right / total, 1.5 / total);
    CHECK(ev.v[0] > 0 && fabs(ev.v[1] - exp(ev.v[0])) < 1e-6 * ev.v[1]);
    /* the translation task without the hook: no accuracy */
    nlp_mt_task t2;
    nlp_task task2;
    CHECK_EQ_INT(nlp_mt_task_init(&t2, &task2, &dn.pairs, &dn.pairs, &cfg, 400, 1), 0);
    nlp_eval ev2;
    CHECK_EQ_INT(task2.evaluate(task2.ctx, m, &ev2), 0);
    CHECK(isnan(ev2.v[2]) && ev2.v[0] == ev.v[0]);
    CHECK(strcmp(task2.eval_names[2], "bleu") == 0);
    nlp_cache_free(c);
    nlp_mt_task_free(&t), nlp_mt_task_free(&t2);
    nlp_model_free(m);
    nlp_denoise_free(&dn);
    nlp_bert_docs_free(&d);
}

int main(int argc, char **argv)
{
    TEST_INIT(argc, argv);
    RUN(test_max_piece);
    RUN(test_pieces);
    RUN(test_span_pairs);
    RUN(test_bart_pairs);
    RUN(test_task);
    RUN(test_accuracy);
    return TEST_END();
}
