/*
 * rope.h — rotary position embedding (Su et al. 2021, RoFormer): queries and
 * keys rotated by angles proportional to their absolute position, so that a
 * query·key product depends on the two positions only through their
 * difference.
 *
 * A head of D dimensions (D even) holds D/2 pairs; pair i turns by
 * p·θ^(−2i/D) at position p. Two layouts of the pairs are in use:
 *
 *   NLP_ROPE_HALF         pair i = (x[i], x[i + D/2]) — "rotate half": HF
 *                         LLaMA, GPT-NeoX; HF's LLaMA checkpoints are stored for it
 *   NLP_ROPE_INTERLEAVED  pair i = (x[2i], x[2i+1]) — the paper's, Meta's
 *                         original LLaMA code and GPT-J
 *
 * A model of one layout equals a model of the other whose q and k weight rows
 * are permuted within each head (HF's conversion script does exactly that).
 *
 * Angles are computed as HF computes them, in fp32: inv_freq_i =
 * 1/θ^(2i/D) rounded to fp32, angle = fp32(p · inv_freq_i); then cos and
 * sin of that angle, rounded to fp32. The rotation is
 *   (a, b) → (a·cos − b·sin, a·sin + b·cos)
 * and its transpose (−angle) is the backward pass.
 *
 * Not here: which tensors are rotated (lib/model), the KV cache.
 */
#ifndef NLP_NN_ROPE_H
#define NLP_NN_ROPE_H

enum nlp_rope_layout {
    NLP_ROPE_HALF = 0,
    NLP_ROPE_INTERLEAVED = 1,
};

/* The angles of positions p0 .. p0+T−1 for heads of D dimensions (D even):
 * cs[t·D + i] = cos, cs[t·D + D/2 + i] = sin of pair i at position p0 + t
 * (T·D floats). */
void nlp_rope_table(float *cs, int p0, int T, int D, double theta);

/* Rotates in place the H heads of D dimensions of B·T rows: row (b, t) at
 * x + b·bs + t·ld, head h at h·D within it, turned by the angles of the
 * table's row t (inverse: by their negatives, the backward pass). */
void nlp_rope_apply(float *x, int B, int T, long ld, long bs, int H, int D, const float *cs,
                    enum nlp_rope_layout layout, int inverse);

#endif
