/*
 * embed.h — embedding lookups (token, learned position, segment) and the
 * sinusoidal position table, forward and backward.
 *
 * Ids are assumed valid (0 <= id < rows of the table): the model checks its
 * inputs once and reports bad ids with their position. The backward passes
 * scatter-add into the table one column block per thread, visiting rows in
 * order, so repeated ids sum in a fixed order whatever the thread count.
 *
 * Not here: the embedding scale of a model (the caller passes it).
 */
#ifndef NLP_NN_EMBED_H
#define NLP_NN_EMBED_H

#include <stddef.h>
#include <stdint.h>

/* y[i, :] = scale·table[ids[i], :] (+ y[i, :] when accumulate), i < N; C columns. */
void nlp_embed_forward(float *y, const float *table, const int32_t *ids, int N, int C, float scale, int accumulate);

/* dtable[ids[i], :] += scale·dy[i, :]. */
void nlp_embed_backward(float *dtable, const float *dy, const int32_t *ids, int N, int C, float scale);

/* y[b, t, :] += pos[offset + t, :] for b < B, t < T. */
void nlp_pos_forward(float *y, const float *pos, int B, int T, int C, int offset);

/* dpos[offset + t, :] += Σ_b dy[b, t, :]. */
void nlp_pos_backward(float *dpos, const float *dy, int B, int T, int C, int offset);

/* The Vaswani table: pe[p, 2i] = sin(p·w_i), pe[p, 2i+1] = cos(p·w_i) with
 * w_i = exp(2i · (−ln 10000 / C)) computed in fp32 as the reference does;
 * P rows, C columns (C even). */
void nlp_sinusoid_table(float *pe, int P, int C);

#endif
