/*
 * denoise.h — the encoder-decoder pretrained on monolingual text: T5's span
 * corruption and BART's denoising (text infilling and sentence
 * permutation), as sentence pairs (mt.h) made afresh each epoch, which the
 * translation task batches and validates as it does parallel text.
 *
 * Documents are BERT's (bert.h: text with one document per line or blocks
 * of lines between blank lines, or token streams; split into sentences).
 * Each document is cut into pieces that fit the model: consecutive whole
 * sentences, as many as fit (greedily, in order), and a sentence too long
 * for a piece by itself cut into near-equal consecutive parts. A piece of
 * fewer than 2 tokens (a document of one token, say) is too short to
 * corrupt: it is skipped and counted. A piece of n tokens fits when its
 * corrupted input and its target, each with the EOS the batches add, are
 * at most max_len tokens:
 *
 *   span     input n - k + s + 1, target k + s + 2, for T5's k = round(n ·
 *            density) noise tokens in s = round(k / mean_span) spans
 *            (noise.h), which need s + 1 sentinels;
 *   denoise  target n + 1. The input, n - m + (mask tokens) + 1, is shorter
 *            but for many empty spans: an input that does not fit is
 *            drawn again (from the same generator, so still a function of
 *            the seed), and after 64 draws cut to fit.
 *
 * The pairs (no EOS or BOS, as nlp_pairs holds parallel text):
 *
 *   span     src  kept_0 <S0> kept_1 <S1> ... <Ss-1>
 *            tgt  <S0> noise_0 <S1> noise_1 ... <Ss-1> noise_s-1 <Ss>
 *   denoise  src  the piece's sentences shuffled (when permute is set and
 *                 it has two or more), then text infilling: spans of
 *                 Poisson(lambda) lengths covering ceil(n · ratio) tokens,
 *                 each replaced by one mask id (noise.h)
 *            tgt  the piece
 *
 * Epoch e's corruption of piece i draws from its own generator, split from
 * the seed, e and i (nlp_rng_split), so an epoch's pairs are a function of
 * (seed, e) alone, whatever the threads that make them: the translation
 * task's state (epoch, batches drawn) resumes them. Validation pieces are
 * corrupted once, with a fixed seed, the same at every evaluation.
 *
 * Memory: the pieces (32 bytes each) and one epoch's pairs in memory (4
 * bytes per token of each side and 24 per pair: about 2.3 times the
 * documents' 4 bytes a token for span, 3.6 for denoise), twice for a moment
 * while an epoch's pairs are made. The documents may be mapped (bert.h's
 * cache); their pages are let go after each epoch's pairs.
 */
#ifndef NLP_TRAIN_DENOISE_H
#define NLP_TRAIN_DENOISE_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "tok/encoding.h"
#include "train/bert.h"
#include "train/mt.h"

enum nlp_denoise_kind {
    NLP_DENOISE_SPAN = 1, /* T5's span corruption */
    NLP_DENOISE_BART = 2, /* BART's text infilling and sentence permutation */
};

typedef struct nlp_denoise_opts {
    int kind;                 /* enum nlp_denoise_kind */
    double density;           /* span: share of noise tokens, (0, 1) (T5: 0.15) */
    double mean_span;         /* span: mean noise span length, >= 1 (T5: 3) */
    const int32_t *sentinel;  /* span: the sentinel ids, <extra_id_0> first */
    size_t n_sentinel;        /* span: how many (>= 2) */
    double lambda;            /* denoise: Poisson mean of span lengths, (0, 100] (BART: 3) */
    double ratio;             /* denoise: share of tokens masked, [0, 1] (BART: 0.3) */
    int permute;              /* denoise: shuffle each piece's sentences */
    int32_t mask;             /* denoise: the mask id */
    int max_len;              /* per side, with EOS: the longest input and target */
    int threads;              /* making an epoch's pairs (<= 0: all CPUs) */
} nlp_denoise_opts;

/* A piece: tokens a .. b-1 of the documents' ids, within sentences s0 ..
 * s1-1 of document doc (a sentence that was cut: s1 = s0 + 1). */
typedef struct nlp_denoise_piece {
    size_t a, b, s0, s1;
} nlp_denoise_piece;

typedef struct nlp_denoise {
    nlp_denoise_opts o;
    const nlp_bert_docs *docs;
    nlp_denoise_piece *piece;
    size_t n;             /* pieces */
    size_t *doc;          /* [n]: the document of each piece */
    size_t max_piece;     /* the longest piece that fits max_len */
    uint64_t seed;
    /* what cutting did */
    size_t docs_cut;      /* documents cut into two pieces or more */
    size_t sents_cut;     /* sentences longer than a piece, cut inside */
    size_t skipped;       /* pieces of fewer than 2 tokens, skipped */
    size_t skipped_docs;  /* documents all of whose pieces were skipped */
    /* the pairs of epoch `epoch` (0: none made yet) */
    nlp_pairs pairs;
    uint64_t epoch;
    uint64_t redrawn;     /* denoise: inputs drawn again to fit, and cut after 64 draws */
    uint64_t cut_inputs;
} nlp_denoise;

/* The longest piece that fits o->max_len (see above), or 0 when not even 2
 * tokens do (or the options are out of range: the message says which). */
size_t nlp_denoise_max_piece(const nlp_denoise_opts *o);

/* Cuts the documents into pieces (d keeps docs and o->sentinel by
 * pointer). No pairs yet: nlp_denoise_epoch makes them. Errors: NLP_EINVAL
 * (options out of range, max_len too small for a piece of 2 tokens),
 * NLP_EDATA (no piece to corrupt: every document too short), NLP_ENOMEM. */
int nlp_denoise_init(nlp_denoise *d, const nlp_bert_docs *docs, const nlp_denoise_opts *o, uint64_t seed);
void nlp_denoise_free(nlp_denoise *d);

/* Makes d->pairs the corruptions of epoch e (>= 1) of every piece; nothing
 * to do when they are e's already. 0 or NLP_ENOMEM. */
int nlp_denoise_epoch(nlp_denoise *d, uint64_t e);

/* nlp_denoise_epoch for nlp_mt_task_refresh (ctx = the nlp_denoise). */
int nlp_denoise_refresh(void *ctx, uint64_t e);

/* Epoch e's corruption of piece i alone, appended to *src and *tgt (no
 * EOS): the pair nlp_denoise_epoch makes for it. 0 or NLP_ENOMEM. */
int nlp_denoise_example(nlp_denoise *d, size_t i, uint64_t e, nlp_ids *src, nlp_ids *tgt);

#endif
