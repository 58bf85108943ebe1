/* toposcope — per-host offsets of round trips (private to lib/).
 *
 * A round trip between nodes a and b is a's stack time + b's stack time + the fabric's time on
 * the path; on real clusters hosts differ by more than a switch level adds (BIOS power
 * settings, interrupt coalescing, NIC firmware). Decisions on raw round trips then see the
 * hosts, not the fabric. The fit below removes them: every used measurement is one equation
 * v = off[a] + off[b] + level[cls], where cls names a set of pairs known to cross the same
 * switch under the same load (the far pairs of one region). */
#ifndef TOPOSCOPE_OFFSETS_H
#define TOPOSCOPE_OFFSETS_H

typedef struct ts_offset_obs {
    int a, b;
    int cls;                /* its class, 0..ncls-1; negative: not used */
    double v;               /* the pair's round-trip estimate, us */
} ts_offset_obs;

/* Fit off[0..n-1] (in/out: the previous fit is the starting point) and level[0..ncls-1] (out;
 * NULL when only the offsets are wanted)
 * by robust least squares: Gauss-Seidel sweeps over nodes and classes, each equation counted
 * by its class's precision and weighted down (Huber) when its residual is far out for its
 * class, and every offset shrunk towards 0 as by a prior of the offsets' own spread (plus the
 * noisiest class's scale), so that a node with few pairs keeps a small offset.
 * Without a prior (NULL) the offsets are centred (mean 0). With one, prior[i] counts as
 * prior_w[i] more of equations saying off[i] = prior[i]: a fit of earlier measurements carried
 * on without refitting them. weight[i] (unless NULL) gets the weight behind off[i], the prior's
 * included. Returns 0, or -1 when out of memory. */
int ts_fit_host_offsets(int n, const ts_offset_obs *obs, long m, int ncls, double *off,
                        double *level, int sweeps, const double *prior, const double *prior_w,
                        double *weight);

/* The buffers a fit uses, kept from one fit to the next by a caller that fits again and again
 * (zeroed at first; ts_offset_work_free when done). */
typedef struct ts_offset_work {
    long *start, *fill;     /* per node */
    size_t nodes;
    void *eq;               /* the equations by node */
    size_t eqs;
    int keep_unfitted;      /* set by the caller: a node without a used equation keeps its
                             * offset and weight (an earlier fit of it, carried as fixed),
                             * where otherwise it gets its prior's (or 0) */
    const unsigned char *two_level; /* set by the caller, per class (NULL: none): a class of
                             * pairs on two levels, fitted as such (offsets.c) */
    double *lower, *upper;  /* (the two levels of such classes, carried from fit to fit) */
    int nlevels;
} ts_offset_work;

/* ts_fit_host_offsets in work's buffers. */
int ts_fit_host_offsets_work(int n, const ts_offset_obs *obs, long m, int ncls, double *off,
                             double *level, int sweeps, const double *prior,
                             const double *prior_w, double *weight, ts_offset_work *work);
void ts_offset_work_free(ts_offset_work *work);

#endif
