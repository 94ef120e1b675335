/*
 * rng.c — xoshiro256** (Blackman and Vigna, public-domain algorithm),
 * written from its published description. See rng.h.
 */
#include "base/rng.h"

#include <math.h>

uint64_t nlp_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void nlp_rng_seed(nlp_rng *r, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < 4; i++) r->s[i] = nlp_splitmix64(&st);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t nlp_rng_u64(nlp_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

uint32_t nlp_rng_u32(nlp_rng *r) { return (uint32_t)(nlp_rng_u64(r) >> 32); }

uint64_t nlp_rng_below(nlp_rng *r, uint64_t n)
{
    /* Lemire's multiply-shift with rejection */
    uint64_t x = nlp_rng_u64(r);
    __uint128_t m = (__uint128_t)x * n;
    uint64_t lo = (uint64_t)m;
    if (lo < n) {
        uint64_t t = -n % n;
        /* a rejection happens with probability t / 2^64 < n / 2^64: 64 in a
         * row only in a generator stuck at zero (a corrupt saved state),
         * where the loop would never end; the draw is then biased, not hung */
        for (int tries = 0; lo < t && tries < 64; tries++) {
            x = nlp_rng_u64(r);
            m = (__uint128_t)x * n;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double nlp_rng_double(nlp_rng *r) { return (double)(nlp_rng_u64(r) >> 11) * 0x1.0p-53; }
float nlp_rng_float(nlp_rng *r) { return (float)(nlp_rng_u64(r) >> 40) * 0x1.0p-24f; }

double nlp_rng_normal(nlp_rng *r)
{
    double u1 = 1.0 - nlp_rng_double(r); /* (0, 1] so log is finite */
    double u2 = nlp_rng_double(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void nlp_rng_jump(nlp_rng *r)
{
    static const uint64_t J[] = {0x180ec6d33cfd0abaull, 0xd5a61266f0c9392cull, 0xa9582618e03fc9aaull,
                                 0x39abdc4529b1661cull};
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 64; b++) {
            if (J[i] & (1ull << b)) {
                s0 ^= r->s[0];
                s1 ^= r->s[1];
                s2 ^= r->s[2];
                s3 ^= r->s[3];
            }
            nlp_rng_u64(r);
        }
    r->s[0] = s0;
    r->s[1] = s1;
    r->s[2] = s2;
    r->s[3] = s3;
}

nlp_rng nlp_rng_split(const nlp_rng *r, uint64_t stream)
{
    uint64_t st = r->s[0] ^ rotl(r->s[1], 13) ^ rotl(r->s[2], 29) ^ rotl(r->s[3], 41) ^
                  (stream * 0xd1342543de82ef95ull);
    nlp_rng out;
    for (int i = 0; i < 4; i++) out.s[i] = nlp_splitmix64(&st);
    return out;
}
