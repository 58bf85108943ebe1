/* toposcope — a small, seedable random number generator (xoshiro256**).
 * No global state: every simulator, planner and test owns its own ts_rng. */
#ifndef TOPOSCOPE_RNG_H
#define TOPOSCOPE_RNG_H

#include <stdint.h>

typedef struct ts_rng {
    uint64_t s[4];
} ts_rng;

void ts_rng_seed(ts_rng *r, uint64_t seed);
/* Derive an independent stream from (seed, stream id); used so that hardware variation
 * (fabric seed) and run noise (run seed) never share draws. */
void ts_rng_seed_stream(ts_rng *r, uint64_t seed, uint64_t stream);
uint64_t ts_rng_u64(ts_rng *r);
double ts_rng_uniform(ts_rng *r);                 /* [0, 1) */
double ts_rng_range(ts_rng *r, double lo, double hi);
uint64_t ts_rng_below(ts_rng *r, uint64_t n);     /* [0, n), unbiased */
double ts_rng_normal(ts_rng *r);                  /* N(0, 1) */
double ts_rng_exponential(ts_rng *r, double mean);
void ts_rng_shuffle_int(ts_rng *r, int *a, int n);

#endif
