/*
 * relpos.h — T5's relative position bias (Raffel et al. 2020, §2.1): each
 * attention score gets a learned scalar per head that depends only on the
 * bucket of the key's offset from the query, j − i.
 *
 * Buckets (n = buckets, m = max-distance), as T5's
 * _relative_position_bucket: with d = i − j (how far back the key is),
 *   bidirectional (encoder): half the buckets for keys at or before the
 *     query, the other half (offset n/2) for keys after it; n ← n/2, d ← |d|;
 *   causal (decoder): d ← max(d, 0), all n buckets;
 * then d < n/2 is its own bucket (exact small offsets), larger d fall in
 * n/2 + ⌊ln(d / (n/2)) / ln(m / (n/2)) · (n − n/2)⌋ (logarithmic spacing up
 * to m), at most n − 1: every offset beyond m shares the last bucket. The
 * logarithm is taken in double precision.
 *
 * The table is [buckets, H] (T5's relative_attention_bias embedding); the
 * bias of a pass is [H, T, S] for queries at positions q0 .. q0+T−1 and keys
 * at 0 .. S−1, computed once and added to the scaled scores of every layer
 * of the stack (attn.h's bias).
 *
 * Not here: the attention itself (attn.h), which stacks use it (lib/model).
 */
#ifndef NLP_NN_RELPOS_H
#define NLP_NN_RELPOS_H

/* The bucket of a key at offset rel = key − query. */
int nlp_relpos_bucket(int rel, int bidirectional, int buckets, int max_distance);

/* bias[h, t, j] = table[bucket(j − (q0 + t)), h] for t < T, j < S. */
void nlp_relpos_forward(float *bias, const float *table, int H, int T, int S, int q0, int bidirectional, int buckets,
                        int max_distance);

/* dtable[bucket(j − t), h] += dbias[h, t, j] (queries from position 0). */
void nlp_relpos_backward(float *dtable, const float *dbias, int H, int T, int S, int bidirectional, int buckets,
                         int max_distance);

#endif
