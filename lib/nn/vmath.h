/*
 * vmath.h — exp and tanh written so that the compiler vectorises loops that
 * call them (`#pragma omp simd`), for softmax, cross-entropy and GELU.
 *
 * nlp_expf: Cody-Waite reduction x = n·ln2 + r with ln2 in two parts, the
 * degree-6 polynomial of Cephes expf for e^r on [−ln2/2, ln2/2], and 2^n put
 * into the exponent bits. Within 2 ulp of expf over [−87.3, 88.37]; below
 * −87.3 it returns 0 and above 88.37 it returns e^88.37, which is finite
 * (callers subtract a row maximum, so arguments are ≤ 0 in practice). A NaN
 * argument gives NaN (the training loop checks losses).
 * nlp_tanhf: 1 − 2/(e^{2x} + 1), absolute error below 2e-7 (relative error is
 * larger only where |tanh x| < 1e-6, which GELU never notices).
 *
 * nlp_vmath_selftest measures both against libm over a dense grid (tests).
 *
 * nlp_erff: Abramowitz & Stegun's rational-exponential form, for GELU (erf).
 */
#ifndef NLP_NN_VMATH_H
#define NLP_NN_VMATH_H

#include <stdint.h>
#include <string.h>

#pragma omp declare simd notinbranch
static inline float nlp_expf(float x)
{
    float xc = x < -87.3f ? -87.3f : x > 88.37f ? 88.37f : x; /* 2^n below 2^128 */
    float t = xc * 1.44269504088896341f + 12582912.0f; /* round to nearest via 1.5·2^23 */
    float n = t - 12582912.0f;
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    /* 2^n from the bits of t (1.5·2^23 + n), in unsigned arithmetic: defined
     * for every input, NaN included (whose y is NaN anyway) */
    uint32_t tb, e;
    memcpy(&tb, &t, 4);
    e = (tb - 0x4b400000u + 127u) << 23;
    float s;
    memcpy(&s, &e, 4);
    return x < -87.3f ? 0.0f : y * s;
}

#pragma omp declare simd notinbranch
static inline float nlp_tanhf(float x) { return 1.0f - 2.0f / (nlp_expf(2.0f * x) + 1.0f); }

/* erf: below |x| = 1 its Taylor series in x² (eleven terms: the next is
 * under 2e-9), above it Abramowitz & Stegun 7.1.26, 1 − t·P(t)·e^{−x²} with
 * t = 1/(1 + p|x|); odd in x. Both are computed and one selected, so the
 * function has no branch and vectorises where libm's erff does not.
 * Absolute error below 2e-7 in fp32 (nlp_vmath_selftest), relative error
 * small near 0 as well. */
#pragma omp declare simd notinbranch
static inline float nlp_erff(float x)
{
    const float a = x < 0 ? -x : x, x2 = x * x, t = 1.0f / (1.0f + 0.3275911f * a);
    float s = -1.2290555302e-09f;
    s = s * x2 + 1.4807192816e-08f;
    s = s * x2 - 1.6365844691e-07f;
    s = s * x2 + 1.6462114366e-06f;
    s = s * x2 - 1.4925650358e-05f;
    s = s * x2 + 1.2055332982e-04f;
    s = s * x2 - 8.5483270235e-04f;
    s = s * x2 + 5.2239776254e-03f;
    s = s * x2 - 2.6866170645e-02f;
    s = s * x2 + 1.1283791671e-01f;
    s = s * x2 - 3.7612638903e-01f;
    s = s * x2 + 1.1283791671e+00f;
    const float p = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t + 0.254829592f) * t;
    const float big = 1.0f - p * nlp_expf(-x2);
    return a < 1.0f ? x * s : x < 0 ? -big : big;
}

/* Largest errors against libm over a dense grid: exp in ulp (relative / FLT_EPSILON)
 * on [−87, 88.37], tanh absolute on [−20, 20], erf absolute on [−8, 8]. */
void nlp_vmath_selftest(double *exp_ulp, double *tanh_abs, double *erf_abs);

#endif
