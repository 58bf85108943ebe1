/* toposcope — xoshiro256** seeded through splitmix64; independent streams per purpose. */
#include <math.h>
#include "toposcope/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void ts_rng_seed(ts_rng *r, uint64_t seed)
{
    ts_rng_seed_stream(r, seed, 0);
}

void ts_rng_seed_stream(ts_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t ts_rng_u64(ts_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double ts_rng_uniform(ts_rng *r)
{
    return (double)(ts_rng_u64(r) >> 11) * 0x1.0p-53;
}

double ts_rng_range(ts_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ts_rng_uniform(r);
}

uint64_t ts_rng_below(ts_rng *r, uint64_t n)
{
    if (n == 0)
        return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = ts_rng_u64(r);
    while (x >= limit);
    return x % n;
}

double ts_rng_normal(ts_rng *r)
{
    /* Box-Muller; one value per call keeps the stream simple to reason about. */
    double u1 = ts_rng_uniform(r), u2 = ts_rng_uniform(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double ts_rng_exponential(ts_rng *r, double mean)
{
    double u = ts_rng_uniform(r);
    return -mean * log1p(-u);
}

void ts_rng_shuffle_int(ts_rng *r, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)ts_rng_below(r, (uint64_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}
