/* toposcope — the fast method: top-down splitting of the fabric into subtrees, every subtree
 * measured only from inside, all subtrees of one depth side by side in the same rounds.
 *
 * A region is the set of nodes below one switch s, not yet split. Pairs of a region either
 * stay inside one child of s ("near") or cross s ("far"); far pairs are the longest, and the
 * region's split is the partition of its nodes into the connected groups of near pairs.
 * Rounds plan pairs between fragments (groups known so far) that are not yet known to be
 * separate, so a region of c children resolves in about c rounds, and all regions of one
 * depth run in the same rounds: the whole tree takes about the sum of the fan-outs along a
 * root-to-leaf path, every round with every node busy.
 *
 * Why it survives interference: concurrent pairs that share a link inflate each other's RTT,
 * and inflation only ever adds. A region's pairs use only the region's links, so regions of
 * one depth never disturb each other. Inside a region every node is busy (nodes without a
 * useful test pair up anyway), so most pairs of a round are far and load the uplinks of the
 * children of s heavily and alike from round to round: far pairs are inflated the most, which
 * widens the near/far gap instead of blurring it. The gap is found without a fixed epsilon:
 * among the cuts of the region's sorted RTTs that are *consistent* (no pair above the cut joins
 * two nodes already connected by pairs below it, checked for all cuts at once with a Kruskal
 * pass), the one with the largest relative gap wins, provided that gap exceeds GAP_MIN; when
 * none does, the region is a star (every node its own child).
 *
 * Costs: adaptive planning needs a gather/scatter step (charged 2 ceil(log2 N) round trips), so
 * one step plans a batch of rounds, the later ones assuming the earlier tests come out separate.
 * That holds while most tests separate; once fragments are big, tests join often and a stale
 * plan wastes them, so batches shrink to BATCH_LATE rounds (see batch_rounds). Pairs measured at
 * one depth inside a child region are kept as evidence there. Below the top, members without a
 * test pad first with unmeasured pairs inside their own fragment: the next depth needs every
 * pair inside a child anyway (a star is proven by all its pairs), so these cost nothing there.
 * They are deferred: they take no part in this region's cut (thousands of near pairs would
 * stretch the near class's tail into the gap) and count from the next depth on. Regions of at
 * most REST_MAX_NODES nodes below the top do not pad otherwise (a few pairs a round load their
 * links too little to matter; mostly they are leaves proving a star). Decisions use each pair's
 * minimum of a few samples (jitter and outliers only add): two in the top region, where loaded far
 * pairs sit ~4x above near ones and a round costs its far pairs' samples, three below. All samples
 * of a near pair can still land in the jitter's tail, and four rules keep such a pair from
 * deciding anything on its own: a cut may keep a few violations (CUT_OUTLIERS); a pair alone
 * inside a gap is a straggler, neither near nor far (STRAGGLERS); one far pair separates two
 * fragments only inside the region's far band, outside it OUTSIDE_BAND_TRUSTED are needed; and a
 * separation resting on one pair gets a second opinion, from the padding pairs or, when nothing
 * else is left to test, from a test of its own (recheck_weak). A far class of a single pair is
 * never trusted, nor one made only of evidence carried from above (fewer samples, another load),
 * nor a cut that joins all of a region's nodes. Carried evidence takes no part in choosing the
 * cut either: its near pairs, taken with fewer samples, reach further into the gap than the
 * region's own; it joins nodes where it lies within the region's own near class. A region ends
 * when no fragment pair is left untested; when random partners find none, every pair of its
 * fragments is checked before it does.
 *
 * Light rounds: near the end of the top region only a few fragment pairs are left to test,
 * and padding every member would make each of those rounds as costly as a full one. A round
 * with few tests is a light round instead: a fixed small number of pairs (one per LIGHT_SHARE
 * members), an eighth of them near references (two members of one fragment). Light rounds
 * load the fabric alike among themselves but not like heavy ones, so their pairs have a cut
 * of their own, which must keep the nodes heavy rounds joined together, and decide nothing
 * until they have one. A light near class cannot reach above the heavy one either: light rounds
 * load every link less. Tests may fill up to LIGHT_TESTS_SHARE of a light round; many of them
 * join late in a region, which makes such a round load the core less than the others, and the
 * cap keeps its far pairs from being taken for near ones. Regions under LIGHT_MIN_PAIRS light
 * pairs use heavy rounds only.
 *
 * Limits (see the bench): the near/far cut is a threshold, so it needs every child of a region
 * to sit at about the same depth below it, as in fat trees and other level-structured fabrics.
 * On irregular trees, whose branches differ in depth, a far pair through a shallow branch can
 * be as short as a near pair through deep ones; no consistent cut exists and the region falls
 * back to a tournament of its nodes, or a wrong cut merges levels. Such fabrics show up in the
 * tree (nodes at different depths, or an ambiguous region) and are measured again by the
 * additive method of fast_irregular.c. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/discover.h"
#include "method.h"
#include "fast_irregular.h"
#include "util/unionfind.h"
#include "toposcope/rng.h"
#include "toposcope/fast.h"

#define FLAT_MIN_LEAVES 8   /* a flat tree with this many leaf switches is checked (flat_tree) */
#define GROUP_MIN_ITEMS 3   /* the top region's children are grouped (group_top_children) ... */
#define GROUP_MAX_ITEMS 7   /* ... when it has this few: more are flat_tree's to check */
#define GROUP_PAIRS (GROUP_MAX_ITEMS * (GROUP_MAX_ITEMS - 1) / 2) /* ... pairs of them at most */
#define GAP_MIN 0.12        /* a level step is >= ~15% of the same-switch RTT in both profiles */
#define CUT_OUTLIERS 0.002  /* pairs above a cut that may join nodes it already connects */
#define STRAGGLERS 2        /* pairs that may sit inside a gap, neither near nor far, ... */
#define STRAGGLER_FAR_MIN 16 /* ... when at least this many far pairs show where the far class is */
#define STRAGGLER_GAIN 2.0  /* ... and the gap is this many times the best one without them, */
#define STRAGGLER_GAIN_ALONE 1.25 /* ... or, when no cut without stragglers exists, this many
                                   * times GAP_MIN: a far class whose lowest pairs ran under
                                   * little load sits only ~25% above the near one, and with
                                   * hundreds of near pairs the few in the jitter's tail leave
                                   * less than 1.5 GAP_MIN of that (seen in 256-node pods) */
#define FAR_QUANTILE 0.01   /* the far band is cut from this quantile of the far class ... */
#define FAR_CEIL 1.15       /* ... up to this factor above its top quantile */
#define OUTSIDE_BAND_TRUSTED 3 /* far pairs outside the band that separate two fragments */
#define GAP_NOISE 5.0       /* a gap must also exceed this many sd of the lowest class */
#define AMBIGUOUS_ROUNDS 24 /* rounds without a cut after which a big region stays merged */
#define AMBIGUOUS_MIN 48    /* ... "big": more nodes than a tournament would cost rounds */
#define PICK_TRIES 24       /* random partner fragments tried before a member pads */
#define SCAN_LIMIT 256      /* below this many open fragments, partners are searched in full */
#define SWEEP_FRAGS 512     /* below this many fragments, every untested pair is offered a test */
#define MAX_BATCH 8         /* rounds planned per gather/scatter step, at most */
#define BATCH_TOP 4         /* ... in the top region, where a test joins fragments 1 time in ~d */
#define BATCH_DEEP 8        /* ... below it in leaves and regions without a cut: tournaments */
#define BATCH_LATE 2        /* ... where tests join often (batch_rounds), */
#define LATE_MIN_NODES 32   /* ... below the top in regions of this many nodes or more: in a
                             * smaller one a stale plan wastes a few tests at most, and every
                             * extra step holds up all the regions of its depth */
#define LIGHT_SHARE 4      /* a light round has one pair per this many members (plan_round) */
#define LIGHT_TESTS_SHARE 0.7 /* ... and tests fill at most this share of it: the rest, near
                               * references and random pairs, keep its load like the others' */
#define LIGHT_MIN_PAIRS 128 /* ... and at least this many, or there are none */
#define LIGHT_TRIAL 4       /* light rounds a region tries before it needs their own cut */
#define SAMPLES_TOP 2       /* samples per pair in the top region, where far pairs are loaded most */
#define SAMPLES_TOP_MIN_NODES 256 /* ... in a top region of this many nodes: fewer load far
                                   * pairs too little to set them 4x apart, and real hosts'
                                   * scheduling delays need the third sample (testbed) */
#define SAMPLES_DEEP 3      /* ... and below it, where the levels are ~30% apart */
#define BIG_PARTNER_MIN_NODES 256 /* a top region this big pairs fragments with the biggest
                                   * partner (plan_round); in a smaller one, with few children,
                                   * such tests join so often that near pairs fill its rounds
                                   * and far pairs lose the load that sets them apart (at 128
                                   * nodes its cut moved in 6 of 100 seeds) */
#define RECHECK_MAX 3       /* batches of second opinions at the end of a region (recheck_weak) */
#define REST_MAX_NODES 8    /* below the top, members of a region this small without a test
                             * rest instead of padding (plan_round) */

typedef struct meas {
    int a, b;
    double d;
    int light;              /* measured in a light round (see plan_round) */
    int carried;            /* measured at a shallower depth, kept as evidence here */
    int deferred;           /* padding inside a fragment: evidence from the next depth on */
} meas;

typedef struct region {
    int vert;               /* the switch vertex of this subtree in the output tree */
    int rounds;
    int done;
    int ambiguous;          /* big, and no cut after AMBIGUOUS_ROUNDS: kept as one switch */
    double cut;             /* RTT between near and far pairs; NAN = star */
    double typical;         /* median RTT of the region's pairs (the star's level) */
    double near_top;        /* the largest RTT of the cut's near class (own pairs) */
    double far_lo[2], far_hi[2]; /* per round class: one far pair outside proves nothing */
    int light_cut;          /* the light rounds' pairs have a cut of their own */
    int rechecks;           /* rounds of second opinions at its end so far (recheck_weak) */
    int light_rounds;
} region;

/* A set of unordered fragment pairs (open addressing). */
typedef struct pairset {
    uint64_t *key;
    size_t cap, used;
} pairset;

typedef struct fast {
    ts_probe_engine *e;
    ts_utree *t;
    ts_error *err;
    ts_rng rng;
    int n;
    int *reg;               /* node -> region, -1 when placed or unreachable */
    unsigned char *dead;
    int nreg, capreg;
    region *R;
    meas *M;                /* measurements of the current depth */
    long nm, capm;
    int *uf;                /* union-find over nodes: the fragments of the current cut */
    int *kpar, *krank;      /* Kruskal forest (union by rank, no compression) */
    long *ktime;            /* edge index that linked a node to its parent */
    int *count;             /* answered pairs per node */
    int *ambiguous;         /* a node of each ambiguous region, for the report */
    int nambiguous, capambiguous;
    ts_stop_rule rule;
    double min_gap;         /* smallest relative gap accepted anywhere, for the report */
    double noise_floor_us;  /* the largest noise floor of a lowest class measured so far */
    ts_stop_rule rule_top;  /* the stopping rule of the top region's rounds */
    pairset deferred;       /* node pairs planned as padding inside a fragment, this depth */
} fast;

static int pairset_init(pairset *s, size_t want)
{
    size_t cap = 64;
    while (cap < 2 * want + 16)
        cap *= 2;
    s->key = calloc(cap, sizeof *s->key);
    s->cap = cap;
    s->used = 0;
    return s->key ? 0 : -1;
}

static uint64_t pair_key(int a, int b)
{
    uint32_t lo = (uint32_t)(a < b ? a : b), hi = (uint32_t)(a < b ? b : a);
    return ((uint64_t)hi << 32 | lo) + 1;     /* never 0: 0 marks an empty slot */
}

static size_t pair_slot(const pairset *s, uint64_t k)
{
    /* a full mix: the low bits of a plain product depend on the low bits of the key only,
     * and fragment pairs that share their smaller id then pile up in one probe chain */
    uint64_t h = k;
    h = (h ^ h >> 30) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ h >> 27) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    size_t i = (size_t)h & (s->cap - 1);
    while (s->key[i] && s->key[i] != k)
        i = (i + 1) & (s->cap - 1);
    return i;
}

static int pairset_has(const pairset *s, int a, int b)
{
    uint64_t k = pair_key(a, b);
    return s->key[pair_slot(s, k)] == k;
}

static int pairset_add(pairset *s, int a, int b)
{
    if (2 * (s->used + 1) > s->cap) {
        pairset bigger;
        if (pairset_init(&bigger, 2 * s->used + 2))
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->key[i])
                bigger.key[pair_slot(&bigger, s->key[i])] = s->key[i];
        bigger.used = s->used;
        free(s->key);
        *s = bigger;
    }
    uint64_t k = pair_key(a, b);
    size_t i = pair_slot(s, k);
    if (!s->key[i]) {
        s->key[i] = k;
        s->used++;
    }
    return 0;
}

/* Measurements in RTT order; equal RTTs in the order they were stored. */
static int meas_before(const meas *M, long x, long y)
{
    return M[x].d < M[y].d || (M[x].d == M[y].d && x < y);
}

static int cmp_meas_index(const void *x, const void *y, void *ctx)
{
    long a = *(const long *)x, b = *(const long *)y;
    return meas_before(ctx, a, b) ? -1 : meas_before(ctx, b, a);
}

/* The edge index at which a and b became connected in the Kruskal forest (LONG_MAX: never).
 * Link times grow towards the roots, so the endpoint with the earlier link climbs. */
static long connected_at(const fast *F, int a, int b)
{
    long when = -1;
    while (a != b) {
        if (F->ktime[a] <= F->ktime[b]) {
            if (F->kpar[a] == a)
                return LONG_MAX;
            when = F->ktime[a];
            a = F->kpar[a];
        } else {
            if (F->kpar[b] == b)
                return LONG_MAX;
            when = F->ktime[b];
            b = F->kpar[b];
        }
    }
    return when;
}

static int kfind(const fast *F, int x)
{
    while (F->kpar[x] != x)
        x = F->kpar[x];
    return x;
}

/* The index of a far class's FAR_QUANTILE quantile from its top (or bottom), for n pairs. */
static long far_quantile(long n)
{
    long q = (long)(FAR_QUANTILE * (double)n);
    if (q < 2)
        q = 2;
    if (q > n - 1)
        q = n - 1;
    return q;
}

/* The Kruskal pass over the class's m pairs in RTT order (the forest in F->kpar, F->krank and
 * F->ktime); merges[j + 1] counts the pairs up to j that joined two groups (merges[0] = 0). */
static void kruskal_merges(fast *F, const long *mi, long m, long *merges)
{
    for (long j = 0; j < m; j++) {
        int a = kfind(F, F->M[mi[j]].a), b = kfind(F, F->M[mi[j]].b);
        merges[j + 1] = merges[j] + (a != b);
        if (a == b)
            continue;
        if (F->krank[a] < F->krank[b]) {
            int tmp = a;
            a = b;
            b = tmp;
        }
        F->kpar[b] = a;
        F->ktime[b] = j;
        if (F->krank[a] == F->krank[b])
            F->krank[a]++;
    }
}

/* Under cut k (edges 0..k-1 near) an edge j >= k whose endpoints were connected before k
 * is a violation: a far pair inside one child. violations[k] counts them for every k at
 * once: edge j violates the cuts connected_at(j) < k <= j. A cut is consistent when its
 * violations are outliers: all samples of a near pair in the jitter's tail, rare but not
 * negligible over thousands of pairs taken with two samples. conn: edge -> when its endpoints
 * got connected. Sets the class's r->far_hi, above which no pair counts. */
static void count_violations(const fast *F, region *r, int light, const long *mi, long m,
                             long *violations, long *conn)
{
    /* A pair far above the top of the region's RTTs is an outlier whatever the cut: it is
     * neither a far pair nor a violation (nor, alone, a test: frags_build) */
    r->far_hi[light] = F->M[mi[m - 1 - far_quantile(m)]].d * FAR_CEIL;
    for (long j = 0; j < m; j++) {
        long c = connected_at(F, F->M[mi[j]].a, F->M[mi[j]].b);
        /* in the light class, two nodes the heavy rounds already joined are near: above
         * a light cut they count against it like any violation */
        if (light && ts_uf_find(F->uf, F->M[mi[j]].a) == ts_uf_find(F->uf, F->M[mi[j]].b))
            c = -1;
        conn[j] = c;
        if (c < j && F->M[mi[j]].d <= r->far_hi[light]) {
            violations[c + 1]++;
            violations[j + 1]--;
        }
    }
    for (long j = 1; j <= m; j++)
        violations[j] += violations[j - 1];
}

/* The noise a gap of the class must stand out of, in *floor_us. */
static int class_noise_floor(fast *F, int light, const long *mi, long m, double *floor_us)
{
    /* The spread of the lowest class (pairs within GAP_MIN of the smallest RTT) is the
     * noise a gap must stand out of: pendant and jitter differences between pairs of one
     * level, which in a star region could otherwise open a small gap by chance. */
    *floor_us = 0;
    long nlow = 0;
    while (nlow < m && F->M[mi[nlow]].d <= F->M[mi[0]].d * (1.0 + GAP_MIN))
        nlow++;
    if (nlow >= 5 && !light) {
        double *low = malloc(sizeof(double) * (size_t)nlow);
        if (!low)
            return TS_ENOMEM;
        for (long j = 0; j < nlow; j++)
            low[j] = F->M[mi[j]].d;
        double med = ts_median(low, (int)nlow);
        *floor_us = GAP_NOISE * 1.4826 * ts_mad(low, (int)nlow, med);
        free(low);
        if (*floor_us > F->noise_floor_us)
            F->noise_floor_us = *floor_us;
    } else if (!light) {
        /* too few pairs to see their own noise (a leaf of four nodes has six): pairs of one
         * level differ by as much everywhere, so the floor seen higher up holds here */
        *floor_us = F->noise_floor_us;
    }
    return TS_OK;
}

/* A cut of a class: edges below k near, edges from k + t on far, the t between them
 * stragglers; gap its relative gap. k = 0: no cut. */
typedef struct class_cut {
    long k, t;
    double gap;
} class_cut;

/* The consistent cut with the widest gap (see the header), from the Kruskal pass's merges,
 * the violations and the noise floor. */
static class_cut widest_consistent_cut(const fast *F, const region *r, int light, int nmem,
                                       const long *mi, long m, const long *merges,
                                       const long *violations, const long *conn, double floor_us)
{
    /* Cut k with t stragglers: edges below k are near, edges from k + t on are far, and the
     * t between them sit inside the gap (a near pair in the jitter's tail), so they are
     * neither. A far class of one pair is never trusted: all samples of a pair can land in
     * the tail. */
    long best = 0, best_t = 0;
    double best_gap = GAP_MIN;
    for (long t = 0; t <= STRAGGLERS; t++) {
        /* a straggler is taken out of the classes only when that opens a much wider gap */
        double need = t == 0 ? GAP_MIN
                      : best == 0 ? STRAGGLER_GAIN_ALONE * GAP_MIN : STRAGGLER_GAIN * best_gap;
        for (long k = 1; k + t < m - 1; k++) {
            double lo = F->M[mi[k - 1]].d, hi = F->M[mi[k + t]].d;
            if (!(lo > 0) || hi - lo < floor_us)
                continue;
            /* light rounds load every link less than heavy ones: their near pairs cannot lie
             * above the heavy near class */
            if (light && isfinite(r->cut) && lo > r->near_top)
                continue;
            double gap = hi / lo - 1.0;
            if (gap <= best_gap || gap <= need || (t > 0 && m - k - t < STRAGGLER_FAR_MIN) ||
                nmem - merges[k] < 2)
                continue;
            long bad = violations[k];
            for (long j = k; j < k + t; j++)
                bad -= conn[j] < k && F->M[mi[j]].d <= r->far_hi[light];
            if (bad <= (long)(CUT_OUTLIERS * (double)(m - k - t))) {
                best_gap = gap;
                best = k;
                best_t = t;
            }
        }
    }
    return (class_cut){best, best_t, best_gap};
}

/* The class's far band and, for a cut, its near pairs joined in F->uf (and the heavy class's
 * cut, near top and gap recorded). */
static void apply_cut(fast *F, region *r, int light, const long *mi, long m, class_cut c)
{
    /* The far band: a near pair whose samples all fell in the jitter's tail lands above the
     * cut, mostly in the gap below the far class or far above it. One such pair between two
     * fragments must not keep them apart for good, so a lone far pair outside the band does
     * not count as a test (frags_build); the pair is tested again with other members. */
    long best = c.k, farstart = c.k + c.t, q = far_quantile(m - farstart);
    if (best > 0) {
        r->far_lo[light] = fmax(F->M[mi[farstart + q]].d * (1.0 - GAP_MIN), F->M[mi[farstart]].d);
        if (!light) {
            r->cut = 0.5 * (F->M[mi[best - 1]].d + F->M[mi[farstart]].d);
            r->near_top = F->M[mi[best - 1]].d;
            if (c.gap < F->min_gap)
                F->min_gap = c.gap;
        }
        for (long j = 0; j < best; j++)
            ts_uf_union(F->uf, F->M[mi[j]].a, F->M[mi[j]].b);
    }
}

/* The cut of one class of a region's rounds (heavy or light, see plan_round): near pairs
 * join in F->uf. mi lists the class's measurements sorted by RTT (meas_before). Returns the
 * index of the first pair above the cut in *cut_at (0: no cut). */
static int cut_class(fast *F, region *r, int light, const int *mem, int nmem, const long *mi,
                     long m, long *cut_at)
{
    *cut_at = 0;
    for (int i = 0; i < nmem; i++) {
        int x = mem[i];
        F->kpar[x] = x;
        F->krank[x] = 0;
        F->ktime[x] = LONG_MAX;
    }
    r->far_lo[light] = light ? INFINITY : 0;
    r->far_hi[light] = INFINITY;
    if (m == 0)
        return TS_OK;
    /* merges[k]: edges below k that joined two groups; a cut that leaves one group splits
     * nothing (its far class would be outliers only) */
    long *merges = calloc((size_t)m + 1, sizeof(long));
    if (!merges)
        return TS_ENOMEM;
    kruskal_merges(F, mi, m, merges);
    long *violations = calloc((size_t)(2 * m + 1), sizeof(long));
    if (!violations) {
        free(merges);
        return TS_ENOMEM;
    }
    long *conn = violations + m + 1;    /* edge -> when its endpoints got connected */
    count_violations(F, r, light, mi, m, violations, conn);
    double floor_us;
    if (class_noise_floor(F, light, mi, m, &floor_us) != TS_OK) {
        free(violations);
        free(merges);
        return TS_ENOMEM;
    }
    class_cut c = widest_consistent_cut(F, r, light, nmem, mi, m, merges, violations, conn, floor_us);
    free(violations);
    free(merges);
    apply_cut(F, r, light, mi, m, c);
    *cut_at = c.k;
    return TS_OK;
}

/* Choose the region's cut (see the header) and leave its fragments in F->uf. Heavy and light
 * rounds load the fabric differently, so each class has its own cut, and the near pairs of
 * both join. A light class without a cut of its own decides nothing. The heavy cut is chosen
 * on the region's own pairs; carried ones join where they lie within its near class. mi lists
 * the region's measurements, the nheavy heavy ones first, each class sorted by RTT
 * (meas_before). */
static int choose_cut(fast *F, region *r, const int *mem, int nmem, const long *mi, long nheavy,
                      long m)
{
    for (int i = 0; i < nmem; i++)
        F->uf[mem[i]] = mem[i];
    r->cut = NAN;
    r->typical = NAN;
    r->light_cut = 0;
    long at = 0, nown = 0;
    long *own = calloc((size_t)nheavy + 1, sizeof(long));
    if (!own)
        return TS_ENOMEM;
    for (long j = 0; j < nheavy; j++)
        if (!F->M[mi[j]].carried)
            own[nown++] = mi[j];
    int rc = cut_class(F, r, 0, mem, nmem, own, nown, &at);
    free(own);
    if (nheavy > 0)     /* the star's level: carried pairs count here too */
        r->typical = F->M[mi[nheavy / 2]].d;
    /* evidence carried from above joins nodes within the region's own near class */
    if (rc == TS_OK && isfinite(r->cut))
        for (long j = 0; j < nheavy && F->M[mi[j]].d <= r->near_top; j++)
            if (F->M[mi[j]].carried)
                ts_uf_union(F->uf, F->M[mi[j]].a, F->M[mi[j]].b);
    if (rc == TS_OK)
        rc = cut_class(F, r, 1, mem, nmem, mi + nheavy, m - nheavy, &at);
    r->light_cut = at > 0;
    return rc;
}

/* The fragments of a region under its current cut, and the fragment pairs known (or, within
 * a batch of rounds, planned) to be separate. */
typedef struct frags {
    int nmem;
    const int *mem;
    int *fid;               /* member position -> fragment id */
    int nfrag;
    pairset sep;
    pairset weak;           /* separate on the word of one far pair: worth a second opinion */
    int rest;               /* no random padding: members without a test rest (REST_MAX_NODES) */
    int inside;             /* padding: unmeasured pairs inside fragments first (plan_round) */
    int has_cut;            /* the region's pairs have a cut: separations mean something */
    int recheck;            /* when nothing is left to test, second opinions are (recheck_weak) */
    int biggest;            /* partners: the biggest fragment, not the smallest (plan_round) */
    pairset measured;       /* node pairs with a measurement in the region (inside only) */
} frags;

static void frags_free(frags *g)
{
    free(g->fid);
    free(g->sep.key);
    free(g->weak.key);
    free(g->measured.key);
    memset(g, 0, sizeof *g);
}

/* Fragment pairs are separate when a pair between them came out inside the region's far band,
 * or OUTSIDE_BAND_TRUSTED pairs came out above the cut but outside the band (a distance
 * that keeps coming back is believed). seen counts both per fragment pair, in slots of a
 * table sized so that it never grows. inside: the round pads inside fragments (pad_inside),
 * which needs the node pairs already measured. */
static int frags_build(fast *F, frags *g, const region *r, const int *mem, int nmem, const long *mi,
                       long m, int inside, int *scratch)
{
    memset(g, 0, sizeof *g);
    g->mem = mem;
    g->nmem = nmem;
    g->inside = inside;
    g->fid = malloc(sizeof(int) * (size_t)(nmem + 1));
    if (!g->fid || pairset_init(&g->sep, (size_t)m + (size_t)nmem) || pairset_init(&g->weak, 16) ||
        pairset_init(&g->measured, inside ? (size_t)m + 1 : 1))
        return -1;
    for (long q = 0; inside && q < m; q++)
        if (pairset_add(&g->measured, F->M[mi[q]].a, F->M[mi[q]].b))
            return -1;
    int *byroot = scratch;     /* node -> fragment id of its root, -1 unset */
    for (int i = 0; i < nmem; i++)
        byroot[mem[i]] = -1;
    for (int i = 0; i < nmem; i++) {
        int rt = ts_uf_find(F->uf, mem[i]);
        if (byroot[rt] < 0)
            byroot[rt] = g->nfrag++;
        g->fid[i] = byroot[rt];
    }
    pairset seen;
    if (pairset_init(&seen, (size_t)m + 1))
        return -1;
    int *inband = calloc(seen.cap, sizeof(int));
    int *outside = calloc(seen.cap, sizeof(int));
    int rc = inband && outside ? 0 : -1;
    for (long q = 0; q < m && rc == 0; q++) {
        const meas *x = &F->M[mi[q]];
        int fa = byroot[ts_uf_find(F->uf, x->a)], fb = byroot[ts_uf_find(F->uf, x->b)];
        if (fa == fb)
            continue;
        uint64_t k = pair_key(fa, fb);
        size_t i = pair_slot(&seen, k);
        if (!seen.key[i]) {
            seen.key[i] = k;
            seen.used++;
        }
        if (x->light && !r->light_cut)
            continue;
        if (x->d >= r->far_lo[x->light] && x->d <= r->far_hi[x->light])
            inband[i]++;
        else
            outside[i]++;
    }
    for (size_t i = 0; i < seen.cap && rc == 0; i++) {
        if (!seen.key[i] || (inband[i] == 0 && outside[i] < OUTSIDE_BAND_TRUSTED))
            continue;
        uint64_t k = seen.key[i] - 1;
        int fa = (int)(k & 0xffffffffu), fb = (int)(k >> 32);
        rc = pairset_add(&g->sep, fa, fb);
        if (rc == 0 && inband[i] + outside[i] == 1)
            rc = pairset_add(&g->weak, fa, fb);
    }
    free(inband);
    free(outside);
    free(seen.key);
    return rc;
}

/* The free members (positions in freel[0, nfree)) grouped by fragment: those of fragment f
 * are list[start[f] .. start[f + 1]). The caller frees both arrays. */
static int free_by_fragment(const frags *g, const int *freel, int nfree, int **startp, int **listp)
{
    int *start = calloc((size_t)g->nfrag + 1, sizeof(int));
    int *list = malloc(sizeof(int) * (size_t)(nfree + 1));
    int *cur = malloc(sizeof(int) * (size_t)(g->nfrag + 1));
    if (!start || !list || !cur) {
        free(start);
        free(list);
        free(cur);
        return -1;
    }
    for (int i = 0; i < nfree; i++)
        start[g->fid[freel[i]] + 1]++;
    for (int f = 0; f < g->nfrag; f++)
        start[f + 1] += start[f];
    memcpy(cur, start, sizeof(int) * (size_t)g->nfrag);
    for (int i = 0; i < nfree; i++)
        list[cur[g->fid[freel[i]]]++] = freel[i];
    free(cur);
    *startp = start;
    *listp = list;
    return 0;
}

/* Member position c is no longer free: it leaves freel (where[] maps positions to slots). */
static void take_free(int *freel, int *where, int *nfree, int c)
{
    int s = where[c], last = freel[--*nfree];
    freel[s] = last;
    where[last] = s;
    where[c] = -1;
}

/* Pairs the next free members of fragments fa and fb (start, list and cur from
 * free_by_fragment, cur advancing): the pair goes to out[*np] and both leave freel. Returns 0,
 * or -1 when either fragment has no free member left. */
static int pair_next_free(const frags *g, const int *start, const int *list, int *cur, int fa,
                          int fb, int *freel, int *where, int *nfree, ts_pair *out, int *np)
{
    if (cur[fa] >= start[fa + 1] || cur[fb] >= start[fb + 1])
        return -1;
    int x = list[cur[fa]++], u = list[cur[fb]++];
    out[*np].a = g->mem[x];
    out[*np].b = g->mem[u];
    (*np)++;
    take_free(freel, where, nfree, x);
    take_free(freel, where, nfree, u);
    return 0;
}

/* Plans one round of a region: members of fragments not yet known to be separate meet.
 * Members of big fragments choose first, and each takes the smallest fragment it may test
 * among the free members it looks at: a small fragment learns most from a big one (a far
 * answer rules out a whole chunk of a child), and big fragments are the ones with members
 * to spare. In a top region of BIG_PARTNER_MIN_NODES or more, each takes the biggest one
 * instead (g->biggest): fragments then grow fastest, as a join merges big chunks of a child
 * and a far answer separates them for good, and the region resolves in fewer rounds with
 * fewer tests. Planned fragment pairs join g->sep, so the next round of a batch tests other
 * ones. Members without a useful partner pair up anyway. Returns the number of pairs
 * written to out, -1 when out of memory; *tests gets the useful ones. */
/* Plans a test for every fragment pair not in g->sep, as far as free members last; see
 * plan_round. Fragments are visited in random order. */
static int sweep_untested(fast *F, frags *g, int *freel, int *where, int *nfree, ts_pair *out,
                          int *np)
{
    int nfrag = g->nfrag, *start, *list;
    if (free_by_fragment(g, freel, *nfree, &start, &list))
        return -1;
    int *cur = malloc(sizeof(int) * (size_t)(nfrag + 1));
    int *fo = malloc(sizeof(int) * (size_t)(nfrag + 1));
    if (!cur || !fo) {
        free(start);
        free(list);
        free(cur);
        free(fo);
        return -1;
    }
    memcpy(cur, start, sizeof(int) * (size_t)nfrag);
    for (int f = 0; f < nfrag; f++)
        fo[f] = f;
    ts_rng_shuffle_int(&F->rng, fo, nfrag);
    int rc = 0;
    for (int i = 0; i < nfrag && rc == 0; i++) {
        int fa = fo[i];
        for (int j = i + 1; j < nfrag && cur[fa] < start[fa + 1]; j++) {
            int fb = fo[j];
            if (cur[fb] >= start[fb + 1] || pairset_has(&g->sep, fa, fb))
                continue;
            if ((rc = pairset_add(&g->sep, fa, fb)) != 0)
                break;
            pair_next_free(g, start, list, cur, fa, fb, freel, where, nfree, out, np);
        }
    }
    free(start);
    free(list);
    free(cur);
    free(fo);
    return rc;
}

/* Plans a second test for every fragment pair separate on the word of one far pair (g->weak), as
 * far as free members last. A region with nothing else left to test would end on that one
 * pair, whose samples may all have fallen in the jitter's tail: its members were busy with
 * tests until then, so padding gave it no second opinion. */
static int recheck_weak(frags *g, int *freel, int *where, int *nfree, ts_pair *out, int *np)
{
    int *start, *list;
    if (free_by_fragment(g, freel, *nfree, &start, &list))
        return -1;
    int *cur = malloc(sizeof(int) * (size_t)(g->nfrag + 1));
    if (!cur) {
        free(start);
        free(list);
        return -1;
    }
    memcpy(cur, start, sizeof(int) * (size_t)g->nfrag);
    for (size_t k = 0; k < g->weak.cap; k++) {
        if (!g->weak.key[k])
            continue;
        uint64_t key = g->weak.key[k] - 1;
        pair_next_free(g, start, list, cur, (int)(key & 0xffffffffu), (int)(key >> 32), freel,
                       where, nfree, out, np);
    }
    free(start);
    free(list);
    free(cur);
    return 0;
}

/* Pads a light round up to `want` pairs: an eighth are near references (two members of one
 * fragment, near by what is known), so every light round shows the near level under its own
 * load; the rest pair up at random, with second opinions first as in a heavy round. Returns
 * the number of pairs added after out[np], -1 when out of memory. */
static int pad_light(fast *F, frags *g, const int *size, int *freel, int nfree, ts_pair *out,
                     int np, int want)
{
    unsigned char *taken = calloc((size_t)nfree + 1, 1);
    if (!taken)
        return -1;
    int added = 0, refs = want / 8;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < nfree && np + added < want; i++) {
            if (taken[i] || (pass == 0 && (refs <= 0 || size[g->fid[freel[i]]] < 2)))
                continue;
            int a = g->fid[freel[i]], u = -1;
            for (int t = 0; t < PICK_TRIES && u < 0; t++) {
                int j = (int)ts_rng_below(&F->rng, (uint64_t)nfree);
                if (j == i || taken[j])
                    continue;
                int b = g->fid[freel[j]];
                if (pass == 0 ? b == a : b != a && pairset_has(&g->weak, a, b))
                    u = j;
            }
            for (int j = i + 1; pass == 1 && u < 0 && j < nfree; j++)
                if (!taken[j])
                    u = j;
            if (u < 0)
                continue;
            taken[i] = taken[u] = 1;
            out[np + added].a = g->mem[freel[i]];
            out[np + added].b = g->mem[freel[u]];
            added++;
            refs -= pass == 0;
        }
    }
    free(taken);
    return added;
}

/* Pads a round below the top (g->inside): second opinions first, as in plan_round, then
 * unmeasured pairs inside one fragment, which the next depth needs anyway and which wait for it
 * (F->deferred), then, unless the region rests, random pairs. Returns the number of pairs added
 * after out[np], -1 when out of memory. */
static int pad_inside(fast *F, frags *g, const int *freel, int nfree, ts_pair *out, int np)
{
    int *start, *list;
    unsigned char *taken = calloc((size_t)g->nmem + 1, 1);     /* by member position */
    if (!taken || free_by_fragment(g, freel, nfree, &start, &list)) {
        free(taken);
        return -1;
    }
    int added = 0, rc = 0;
    /* a separation means something only where the region has a cut (in a star every pair is
     * "far" and rests on itself) */
    for (int i = 0; i < nfree && g->weak.used > 0 && g->has_cut; i++) {
        int x = freel[i], a = g->fid[x], u = -1;
        if (taken[x])
            continue;
        for (int t = 0; t < PICK_TRIES && u < 0; t++) {
            int c = freel[ts_rng_below(&F->rng, (uint64_t)nfree)];
            if (!taken[c] && g->fid[c] != a && pairset_has(&g->weak, a, g->fid[c]))
                u = c;
        }
        if (u < 0)
            continue;
        taken[x] = taken[u] = 1;
        out[np + added].a = g->mem[x];
        out[np + added].b = g->mem[u];
        added++;
    }
    for (int f = 0; f < g->nfrag && rc == 0; f++)
        for (int p = start[f]; p < start[f + 1] && rc == 0; p++) {
            int x = list[p];
            for (int q = p + 1; q < start[f + 1] && !taken[x]; q++) {
                int y = list[q], nx = g->mem[x], ny = g->mem[y];
                if (taken[y] || pairset_has(&g->measured, nx, ny) || pairset_has(&F->deferred, nx, ny))
                    continue;
                rc = pairset_add(&F->deferred, nx, ny);
                taken[x] = taken[y] = 1;
                out[np + added].a = nx;
                out[np + added].b = ny;
                added++;
            }
        }
    for (int i = 0, prev = -1; i < nfree && !g->rest; i++) {
        if (taken[freel[i]])
            continue;
        if (prev < 0) {
            prev = freel[i];
            continue;
        }
        out[np + added].a = g->mem[prev];
        out[np + added].b = g->mem[freel[i]];
        added++;
        prev = -1;
    }
    free(taken);
    free(start);
    free(list);
    return rc < 0 ? -1 : added;
}

/* light_pairs > 0: when the round has at most LIGHT_TESTS_SHARE of that many tests, it is a
 * light round of exactly light_pairs pairs (*light = 1) instead of a heavy one with every
 * member busy. */
static int plan_round(fast *F, frags *g, ts_pair *out, int *tests, int light_pairs, int *light)
{
    *light = 0;
    int nmem = g->nmem;
    *tests = 0;
    if (nmem < 3 || g->nfrag < 2)
        return 0;   /* two nodes hang from the switch side by side */
    int *freel = malloc(sizeof(int) * (size_t)nmem * 2);
    if (!freel)
        return -1;
    int *where = freel + nmem;         /* member position -> index in freel, -1 when taken */
    for (int i = 0; i < nmem; i++)
        freel[i] = i;
    ts_rng_shuffle_int(&F->rng, freel, nmem);
    for (int i = 0; i < nmem; i++)
        where[freel[i]] = i;
    int nfree = nmem, np = 0;
    int *order = malloc(sizeof(int) * (size_t)nmem);
    int *size = calloc((size_t)g->nfrag, sizeof(int));
    int *bucket = calloc((size_t)nmem + 1, sizeof(int));
    if (!order || !size || !bucket) {
        free(order);
        free(size);
        free(bucket);
        free(freel);
        return -1;
    }
    /* members by fragment size, biggest first; a stable counting sort keeps the shuffle
     * within one size */
    for (int i = 0; i < nmem; i++)
        size[g->fid[i]]++;
    for (int i = 0; i < nmem; i++)
        bucket[nmem - size[g->fid[i]]]++;
    for (int i = 1; i <= nmem; i++)
        bucket[i] += bucket[i - 1];
    for (int i = nmem - 1; i >= 0; i--)
        order[--bucket[nmem - size[g->fid[freel[i]]]]] = freel[i];
    free(bucket);
    for (int oi = 0; oi < nmem; oi++) {
        int x = order[oi];
        if (where[x] < 0)
            continue;
        int a = g->fid[x], u = -1;
        int full = nfree - 1 <= SCAN_LIMIT;
        int off = full ? (int)ts_rng_below(&F->rng, (uint64_t)nfree) : 0;
        for (int t = 0; t < (full ? nfree : PICK_TRIES); t++) {
            int c = full ? freel[(off + t) % nfree] : freel[ts_rng_below(&F->rng, (uint64_t)nfree)];
            if (g->fid[c] == a ||
                (u >= 0 && (g->biggest ? size[g->fid[c]] <= size[g->fid[u]]
                                       : size[g->fid[c]] >= size[g->fid[u]])) ||
                pairset_has(&g->sep, a, g->fid[c]))
                continue;
            u = c;
            /* nothing is smaller than a singleton: the full scan stops at the first one it
             * may test (the random tries keep drawing, so the draws stay as they were) */
            if (full && !g->biggest && size[g->fid[u]] == 1)
                break;
        }
        if (u < 0)
            continue;
        if (pairset_add(&g->sep, a, g->fid[u])) {
            free(order);
            free(size);
            free(freel);
            return -1;
        }
        out[np].a = g->mem[x];
        out[np].b = g->mem[u];
        np++;
        take_free(freel, where, &nfree, x);
        take_free(freel, where, &nfree, u);
    }
    /* Random partners can miss the last untested fragment pairs of a big region (a singleton
     * among thousands of free members), and a round without tests ends the region: before
     * it does, every pair of fragments not known to be separate is offered its test. */
    int rc = 0;
    if (np == 0 && g->nfrag <= SWEEP_FRAGS)
        rc = sweep_untested(F, g, freel, where, &nfree, out, &np);
    if (rc == 0 && np == 0 && g->weak.used > 0 && g->has_cut && g->recheck) {
        rc = recheck_weak(g, freel, where, &nfree, out, &np);
        g->recheck = 0;     /* once a batch, RECHECK_MAX a region: where cuts keep moving (an
                             * irregular fabric) rechecks would go on, a step each */
    }
    {
        if (rc) {
            free(order);
            free(size);
            free(freel);
            return -1;
        }
    }
    *tests = np;
    if (np > 0 && light_pairs > 0 && np <= LIGHT_TESTS_SHARE * light_pairs) {
        int added = pad_light(F, g, size, freel, nfree, out, np, light_pairs);
        if (added < 0) {
            np = -1;
        } else {
            np += added;
            *light = 1;
        }
    } else if (np > 0 && g->inside) {
        int added = pad_inside(F, g, freel, nfree, out, np);
        np = added < 0 ? -1 : np + added;
    } else if (np > 0 && !g->rest) {
        /* Everyone else pairs up at random: an evenly loaded region, and near pairs inside
         * fragments double as a consistency check of the cut. A free member first looks for
         * a partner in a fragment that is separate from its own on the word of one far pair:
         * a second opinion, in case that pair's samples all fell in the jitter's tail. Such
         * pairs are far like most random ones, so the load stays the same. */
        for (int i = 0; i + 1 < nfree && g->weak.used > 0; i += 2) {
            int a = g->fid[freel[i]], u = -1;
            for (int t = 0; t < PICK_TRIES && u < 0; t++) {
                int j = i + 1 + (int)ts_rng_below(&F->rng, (uint64_t)(nfree - i - 1));
                if (g->fid[freel[j]] != a && pairset_has(&g->weak, a, g->fid[freel[j]]))
                    u = j;
            }
            if (u > i + 1) {    /* the partner moves next to it, to be paired below */
                int tmp = freel[i + 1];
                freel[i + 1] = freel[u];
                freel[u] = tmp;
            }
        }
        for (int i = 0; i + 1 < nfree; i += 2) {
            out[np].a = g->mem[freel[i]];
            out[np].b = g->mem[freel[i + 1]];
            np++;
        }
    }
    free(order);
    free(size);
    free(freel);
    return np;
}

/* Rounds planned in one step. The later rounds of a batch assume the earlier tests separate,
 * so the tests of fragments that joined meanwhile are wasted: few while most fragments are
 * single nodes, many once they are big. The top region plans BATCH_TOP rounds, and BATCH_LATE
 * once its fragments number at most half its members when it has BIG_PARTNER_MIN_NODES or more
 * (a smaller one ends within a few batches anyway). Below the top, regions of LATE_MIN_NODES
 * or more plan BATCH_LATE rounds, unless their first batch found no cut: then they are
 * tournaments of their nodes, with nothing to adapt to, like small regions (BATCH_DEEP). */
static int batch_rounds(const region *R, const frags *g, int top)
{
    if (top)
        return g->nmem >= BIG_PARTNER_MIN_NODES && 2 * g->nfrag <= g->nmem ? BATCH_LATE : BATCH_TOP;
    if (g->nmem < LATE_MIN_NODES || (R->rounds > 0 && !isfinite(R->cut)))
        return BATCH_DEEP;
    return BATCH_LATE;
}

static int new_region(fast *F, int vert)
{
    if (F->nreg == F->capreg) {
        int cap = F->capreg ? 2 * F->capreg : 16;
        region *r = realloc(F->R, sizeof *r * (size_t)cap);
        if (!r)
            return -1;
        F->R = r;
        F->capreg = cap;
    }
    region *r = &F->R[F->nreg];
    memset(r, 0, sizeof *r);
    r->vert = vert;
    r->cut = NAN;
    r->typical = NAN;
    return F->nreg++;
}

/* Half the RTT at which the region's switch joins its nodes: a rough height, so the tree has
 * plausible lengths for rooting; link latencies come from the link plan. */
static double region_height(const region *r)
{
    if (isfinite(r->cut))
        return 0.5 * r->cut;
    if (isfinite(r->typical))
        return 0.5 * r->typical;
    return 1.0;
}

static int cmp_double_asc(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The top region's k children and the RTTs between them, by pair of children. */
typedef struct child_pairs {
    int k, npair;
    int px[GROUP_PAIRS], py[GROUP_PAIRS];   /* pair p joins children px[p] < py[p] */
    int *idx;               /* node -> its child, for a node of each; -1 for the others */
    long *pc;               /* pair p's RTTs: val[pc[p], pc[p + 1]) */
    long cnt;
    double *val, *dev;      /* the RTTs; their deviations from their pair's median */
    double *med;            /* pair p's median RTT */
    int *order;             /* the pairs by median */
} child_pairs;

static int child_pair_id(int x, int y)
{
    return x < y ? y * (y - 1) / 2 + x : x * (x - 1) / 2 + y;
}

/* The pair of children a measurement joins, -1 when it joins none or does not count. */
static int measured_child_pair(const fast *F, const child_pairs *C, const meas *M)
{
    if (M->light || M->carried || M->deferred || F->dead[M->a] || F->dead[M->b])
        return -1;
    int x = C->idx[ts_uf_find(F->uf, M->a)], y = C->idx[ts_uf_find(F->uf, M->b)];
    return x >= 0 && y >= 0 && x != y ? child_pair_id(x, y) : -1;
}

/* Counts the RTTs of every pair of children into C->pc and C->cnt; returns whether every
 * pair has some (then C->pc holds the ranges). */
static int count_child_pairs(const fast *F, child_pairs *C)
{
    for (long m = 0; m < F->nm; m++) {
        int p = measured_child_pair(F, C, &F->M[m]);
        if (p >= 0) {
            C->pc[p + 1]++;
            C->cnt++;
        }
    }
    for (int p = 0; p < C->npair; p++)
        if (C->pc[p + 1] == 0)
            return 0;
    for (int p = 0; p < C->npair; p++)
        C->pc[p + 1] += C->pc[p];
    return 1;
}

/* The RTTs of each pair of children into its range of C->val. */
static int collect_child_rtts(const fast *F, child_pairs *C)
{
    long *fill = malloc(sizeof(long) * (size_t)C->npair);
    if (!fill)
        return TS_ENOMEM;
    memcpy(fill, C->pc, sizeof(long) * (size_t)C->npair);
    for (long m = 0; m < F->nm; m++) {
        int p = measured_child_pair(F, C, &F->M[m]);
        if (p >= 0)
            C->val[fill[p]++] = F->M[m].d;
    }
    free(fill);
    return TS_OK;
}

/* Each pair's median and the pairs in their order; returns the spread of the RTTs around
 * their pair's median, robustly. */
static double child_pair_medians(child_pairs *C)
{
    for (int p = 0; p < C->npair; p++) {
        long lo = C->pc[p], c = C->pc[p + 1] - lo;
        qsort(C->val + lo, (size_t)c, sizeof(double), cmp_double_asc);
        C->med[p] = c % 2 ? C->val[lo + c / 2] : 0.5 * (C->val[lo + c / 2 - 1] + C->val[lo + c / 2]);
        for (long q = lo; q < lo + c; q++)
            C->dev[q] = fabs(C->val[q] - C->med[p]);
        C->order[p] = p;
    }
    qsort(C->dev, (size_t)C->cnt, sizeof(double), cmp_double_asc);
    double sd = 1.4826 * C->dev[C->cnt / 2];
    /* pairs of children by median, insertion sort (at most 21) */
    for (int i = 1; i < C->npair; i++)
        for (int j = i; j > 0 && C->med[C->order[j]] < C->med[C->order[j - 1]]; j--) {
            int t = C->order[j];
            C->order[j] = C->order[j - 1];
            C->order[j - 1] = t;
        }
    return sd;
}

/* The grouping of the children at the consistent threshold with the widest gap (see
 * group_top_children): each child's group in best_grp (a group is named by its first child),
 * the gap in *best_gap; returns the number of groups, 0 for none. */
static int best_child_grouping(const child_pairs *C, double sd, int *best_grp, double *best_gap)
{
    const int *order = C->order;
    int k = C->k, grp[GROUP_MAX_ITEMS], best_groups = 0;
    *best_gap = 0;
    for (int c = 1; c < C->npair; c++) {
        double lo = C->med[order[c - 1]], hi = C->med[order[c]];
        double gap = hi / lo - 1;
        /* the two medians' standard errors (a median of n values: 1.25 sd / sqrt(n)) */
        long nlo = C->pc[order[c - 1] + 1] - C->pc[order[c - 1]], nhi = C->pc[order[c] + 1] - C->pc[order[c]];
        double se = 1.2533 * sd * sqrt(1.0 / (double)nlo + 1.0 / (double)nhi);
        if (!(gap > GAP_MIN && hi - lo > GAP_NOISE * se && gap > *best_gap))
            continue;
        for (int j = 0; j < k; j++)
            grp[j] = j;
        for (int q = 0; q < c; q++) {       /* join the children of the pairs below */
            int gx = grp[C->px[order[q]]], gy = grp[C->py[order[q]]];
            for (int j = 0; j < k; j++)
                if (grp[j] == gy)
                    grp[j] = gx;
        }
        int consistent = 1;                 /* no pair above joins children of one group */
        for (int q = c; q < C->npair && consistent; q++)
            consistent = grp[C->px[order[q]]] != grp[C->py[order[q]]];
        int groups = 0;
        for (int j = 0; j < k; j++)
            groups += grp[j] == j;
        if (!consistent || groups < 2 || groups == k)
            continue;
        *best_gap = gap;
        best_groups = groups;
        memcpy(best_grp, grp, sizeof grp);
    }
    return best_groups;
}

/* Every group of two or more of the k children (grp) under a switch of its own below the top. */
static int add_group_switches(fast *F, int ri, const int *itemv, int k, const int *grp)
{
    double h = region_height(&F->R[ri]);
    for (int g = 0; g < k; g++) {
        int members = 0;
        for (int j = 0; j < k; j++)
            members += grp[j] == g;
        if (members < 2)
            continue;
        int v = ts_utree_add(F->t, F->R[ri].vert, 0.3 * h, TS_NONE);
        if (v < 0)
            return TS_ENOMEM;
        for (int j = 0; j < k; j++)
            if (grp[j] == g)
                F->t->parent[itemv[j]] = v;
    }
    return TS_OK;
}

/* The top region's cut is the largest relative gap among its RTTs, so where the levels below
 * the top are as far apart as the top is from them (the testbed's spine over two pods of two
 * leaves: 800, 1600 and 2400 us), it may cut at a lower level and return leaves as its
 * children, the pods lost. Its far pairs then tell: between children under one pod they sit a
 * level below those across pods. So the children (the fragments of the cut, single nodes
 * included) are grouped by the median RTT of each pair of them, with the same rule as a cut:
 * the consistent threshold with the largest relative gap, above GAP_MIN and GAP_NOISE standard
 * errors of the two medians (from the spread of the pairs around their medians); every group of
 * two or more becomes a switch. Only
 * heavy rounds' pairs count (one load), and only a few children (GROUP_MAX_ITEMS): with more,
 * a flat top is flat_tree's case, and its pairs of children are too many to all be measured. */
static int group_top_children(fast *F, int ri, const int *items, const int *itemv, int k)
{
    if (k < GROUP_MIN_ITEMS || k > GROUP_MAX_ITEMS)
        return TS_OK;
    child_pairs C;
    memset(&C, 0, sizeof C);
    C.k = k;
    C.npair = k * (k - 1) / 2;
    int rc = TS_OK;
    C.idx = malloc(sizeof(int) * (size_t)F->n);
    C.pc = calloc((size_t)C.npair + 1, sizeof(long));
    for (int y = 1, p = 0; y < k; y++)
        for (int x = 0; x < y; x++, p++) {
            C.px[p] = x;
            C.py[p] = y;
        }
    if (!C.idx || !C.pc) {
        rc = TS_ENOMEM;
        goto done;
    }
    for (int i = 0; i < F->n; i++)
        C.idx[i] = -1;
    for (int j = 0; j < k; j++)
        C.idx[items[j]] = j;
    if (!count_child_pairs(F, &C))
        goto done;              /* a pair of children never measured: nothing to go by */
    C.val = malloc(sizeof(double) * (size_t)C.cnt);
    C.dev = malloc(sizeof(double) * (size_t)C.cnt);
    C.med = malloc(sizeof(double) * (size_t)C.npair);
    C.order = malloc(sizeof(int) * (size_t)C.npair);
    if (!C.val || !C.dev || !C.med || !C.order || collect_child_rtts(F, &C) != TS_OK) {
        rc = TS_ENOMEM;
        goto done;
    }
    double sd = child_pair_medians(&C);
    double best_gap;
    int best_grp[GROUP_MAX_ITEMS];
    if (best_child_grouping(&C, sd, best_grp, &best_gap) == 0)
        goto done;
    rc = add_group_switches(F, ri, itemv, k, best_grp);
    if (rc == TS_OK && best_gap < F->min_gap)
        F->min_gap = best_gap;
done:
    free(C.idx);
    free(C.pc);
    free(C.val);
    free(C.dev);
    free(C.med);
    free(C.order);
    return rc;
}

/* A resolved region becomes a switch: single-node fragments hang from it, bigger fragments
 * become regions of the next depth under a new switch. */
static int emit_region(fast *F, int ri, const int *mem, int nmem, int *next_reg, int *scratch)
{
    int *newreg = scratch;
    int *size = scratch + F->n;
    /* the region's children: a node of each (its fragment's root) and the child's vertex */
    int *items = scratch + 2 * F->n, *itemv = scratch + 3 * F->n, nitems = 0;
    for (int i = 0; i < nmem; i++) {
        newreg[mem[i]] = -2;
        size[mem[i]] = 0;
    }
    for (int i = 0; i < nmem; i++)
        size[ts_uf_find(F->uf, mem[i])]++;
    double h = region_height(&F->R[ri]);
    for (int i = 0; i < nmem; i++) {
        int x = mem[i], rt = ts_uf_find(F->uf, x);
        if (F->count[x] == 0) {
            next_reg[x] = -1;   /* never measured (deadline): reported, not placed */
            continue;
        }
        if (size[rt] == 1 || nmem <= 2 || size[rt] == nmem) {
            /* (one fragment of all the nodes would be this region again: a star) */
            int v = ts_utree_add(F->t, F->R[ri].vert, h, x);
            if (v < 0)
                return TS_ENOMEM;
            if (size[rt] == 1) {
                items[nitems] = rt;
                itemv[nitems++] = v;
            }
            if (F->R[ri].ambiguous) {
                /* its first node names the switch in the report */
                F->R[ri].ambiguous = 0;
                if (F->nambiguous == F->capambiguous) {
                    int cap = F->capambiguous ? 2 * F->capambiguous : 8;
                    int *a = realloc(F->ambiguous, sizeof(int) * (size_t)cap);
                    if (!a)
                        return TS_ENOMEM;
                    F->ambiguous = a;
                    F->capambiguous = cap;
                }
                F->ambiguous[F->nambiguous++] = x;
            }
            next_reg[x] = -1;
            continue;
        }
        if (newreg[rt] == -2) {
            /* the child switch sits about one level below: its height is learnt next depth,
             * so it starts at a tenth of this one */
            int v = ts_utree_add(F->t, F->R[ri].vert, 0.1 * h, TS_NONE);
            if (v < 0)
                return TS_ENOMEM;
            int nr = new_region(F, v);
            if (nr < 0)
                return TS_ENOMEM;
            newreg[rt] = nr;
            items[nitems] = rt;
            itemv[nitems++] = v;
        }
        next_reg[x] = newreg[rt];
    }
    /* the top region alone: below it, regions share rounds and their far pairs' loads differ */
    return ri == 0 ? group_top_children(F, ri, items, itemv, nitems) : TS_OK;
}

static int store_round(fast *F, const ts_pair_stats *st, int np, int light)
{
    if (F->nm + np > F->capm) {
        long cap = F->capm ? F->capm * 2 : 4096;
        while (cap < F->nm + np)
            cap *= 2;
        meas *m = realloc(F->M, sizeof *m * (size_t)cap);
        if (!m)
            return TS_ENOMEM;
        F->M = m;
        F->capm = cap;
    }
    for (int i = 0; i < np; i++) {
        if (st[i].samples == 0) {
            /* a node that never answered anyone is left out of the tree */
            if (st[i].flags & TS_PAIR_UNREACHABLE) {
                if (F->count[st[i].a] == 0)
                    F->dead[st[i].a] = 1;
                if (F->count[st[i].b] == 0)
                    F->dead[st[i].b] = 1;
            }
            continue;
        }
        F->count[st[i].a]++;
        F->count[st[i].b]++;
        F->M[F->nm].a = st[i].a;
        F->M[F->nm].b = st[i].b;
        F->M[F->nm].light = light;
        F->M[F->nm].carried = 0;
        F->M[F->nm].deferred = pairset_has(&F->deferred, st[i].a, st[i].b);
        F->M[F->nm++].d = st[i].min_us;
    }
    return TS_OK;
}

/* This depth's measurements by region: region r's heavy ones in [start[r], light[r]) of mi,
 * its light ones in [light[r], start[r + 1]), each class in RTT order (meas_before). Kept
 * from step to step: the measurements stored since the last step are sorted on their own
 * and merged in, so a step costs the region's measurements once, not a sort of them all. */
typedef struct sorted_meas {
    long *mi, *spare;
    long cap;
    long *start, *light;
    long upto;              /* F->M[0, upto) are in mi */
} sorted_meas;

static void sorted_free(sorted_meas *S)
{
    free(S->mi);
    free(S->spare);
    free(S->start);
    free(S->light);
    memset(S, 0, sizeof *S);
}

/* Empty lists for the nr regions of a new depth. */
static int sorted_reset(sorted_meas *S, int nr)
{
    free(S->start);
    free(S->light);
    S->start = calloc((size_t)nr + 1, sizeof(long));
    S->light = calloc((size_t)nr + 1, sizeof(long));
    S->upto = 0;
    return S->start && S->light ? 0 : -1;
}

/* A measurement counts while both its nodes are alive (a node can die after some of its
 * pairs were stored: fast_run leaves those out from then on), and from the next depth on when
 * it was deferred padding (pad_inside). */
static int meas_live(const fast *F, long k)
{
    return !F->dead[F->M[k].a] && !F->dead[F->M[k].b] && !F->M[k].deferred;
}

/* Merges the sorted lists a and b into out, dropping pairs of dead nodes; returns the count. */
static long merge_live(const fast *F, long *out, const long *a, long na, const long *b, long nb)
{
    long i = 0, j = 0, o = 0;
    while (i < na || j < nb) {
        long k = j >= nb || (i < na && meas_before(F->M, a[i], b[j])) ? a[i++] : b[j++];
        if (meas_live(F, k))
            out[o++] = k;
    }
    return o;
}

/* Brings S up to F->nm for the nr regions from `first` on. */
static int sorted_update(fast *F, sorted_meas *S, int first, int nr)
{
    long from = S->upto, nnew = F->nm - from, total = S->start[nr];
    if (total + nnew > S->cap) {
        long cap = S->cap ? 2 * S->cap : 4096;
        while (cap < total + nnew)
            cap *= 2;
        long *a = realloc(S->mi, sizeof(long) * (size_t)cap);
        if (a)
            S->mi = a;
        long *b = realloc(S->spare, sizeof(long) * (size_t)cap);
        if (b)
            S->spare = b;
        if (!a || !b)
            return TS_ENOMEM;
        S->cap = cap;
    }
    /* the new ones by (region, class), each bucket sorted */
    long *bst = calloc((size_t)(2 * nr + 1), sizeof(long));
    long *cur = malloc(sizeof(long) * (size_t)(2 * nr + 1));
    long *nb = malloc(sizeof(long) * (size_t)(nnew + 1));
    if (!bst || !cur || !nb) {
        free(bst);
        free(cur);
        free(nb);
        return TS_ENOMEM;
    }
    for (long k = from; k < F->nm; k++)
        if (meas_live(F, k))
            bst[2 * (F->reg[F->M[k].a] - first) + F->M[k].light + 1]++;
    for (int c = 0; c < 2 * nr; c++)
        bst[c + 1] += bst[c];
    memcpy(cur, bst, sizeof(long) * (size_t)(2 * nr));
    for (long k = from; k < F->nm; k++)
        if (meas_live(F, k))
            nb[cur[2 * (F->reg[F->M[k].a] - first) + F->M[k].light]++] = k;
    for (int c = 0; c < 2 * nr; c++)
        if (bst[c + 1] - bst[c] > 1)
            qsort_r(nb + bst[c], (size_t)(bst[c + 1] - bst[c]), sizeof *nb, cmp_meas_index, F->M);
    long pos = 0;
    for (int r = 0; r < nr; r++) {
        long os = S->start[r], ol = S->light[r], oe = S->start[r + 1];
        S->start[r] = pos;
        pos += merge_live(F, S->spare + pos, S->mi + os, ol - os, nb + bst[2 * r],
                          bst[2 * r + 1] - bst[2 * r]);
        S->light[r] = pos;
        pos += merge_live(F, S->spare + pos, S->mi + ol, oe - ol, nb + bst[2 * r + 1],
                          bst[2 * r + 2] - bst[2 * r + 1]);
    }
    S->start[nr] = pos;
    long *t = S->mi;
    S->mi = S->spare;
    S->spare = t;
    S->upto = F->nm;
    free(bst);
    free(cur);
    free(nb);
    return TS_OK;
}

/* The walk down the tree, one depth at a time: the buffers of fast_run and its steps. */
typedef struct walk {
    int first, last;        /* regions [first, last) are the current depth */
    int *rstart;            /* region first + r's live nodes: order[rstart[r], rstart[r + 1]) */
    int *order;             /* nodes grouped by region */
    int *next_reg;          /* node -> its region at the next depth (emit_region) */
    int *scratch;           /* 6 n + 8 ints: group_by_region, frags_build, emit_region */
    sorted_meas S;
    ts_pair *pairs;         /* a batch: round b's pairs from pairs + b * stride */
    size_t stride;
    ts_pair_stats *st;      /* one round's answers */
} walk;

/* The live nodes of the current depth by region, in W->rstart and W->order. */
static void group_by_region(const fast *F, walk *W)
{
    int n = F->n, first = W->first, nr = W->last - W->first;
    memset(W->rstart, 0, sizeof(int) * (size_t)(nr + 1));
    for (int i = 0; i < n; i++)
        if (F->reg[i] >= first && !F->dead[i])
            W->rstart[F->reg[i] - first + 1]++;
    for (int r = 0; r < nr; r++)
        W->rstart[r + 1] += W->rstart[r];
    memcpy(W->scratch, W->rstart, sizeof(int) * (size_t)nr);
    for (int i = 0; i < n; i++)
        if (F->reg[i] >= first && !F->dead[i])
            W->order[W->scratch[F->reg[i] - first]++] = i;
}

/* Whether a region of nmem live nodes stops testing for good, its fragments as they are. */
static int region_exhausted(region *R, int nmem)
{
    /* a region needs about as many rounds as it has children, never more than
     * a tournament of its nodes: a safety net against cuts that keep moving */
    if (R->rounds > 2 * nmem ||
        (!isfinite(R->cut) && nmem > AMBIGUOUS_MIN && R->rounds >= AMBIGUOUS_ROUNDS)) {
        /* no consistent cut after many rounds in a big region: its children cannot
         * be told apart by threshold, so it stays one switch (ambiguous) rather
         * than a tournament of all its nodes */
        R->done = 1;
        R->ambiguous = !isfinite(R->cut);
        return 1;
    }
    return 0;
}

/* Pairs in each of the region's light rounds (plan_round), 0 for heavy rounds only. */
static int light_round_pairs(const region *R, int top, int nmem)
{
    /* light rounds only in the top region, the one region of its depth: below,
     * several regions share a round, and their rounds are cheap anyway */
    int light_pairs = top ? nmem / LIGHT_SHARE : 0;
    if (light_pairs < LIGHT_MIN_PAIRS)
        light_pairs = 0;    /* too few pairs to show their own near and far levels */
    /* light rounds that never find a cut of their own would decide nothing:
     * after a few, the region goes back to heavy rounds */
    if (!R->light_cut && R->light_rounds >= LIGHT_TRIAL)
        light_pairs = 0;
    return light_pairs;
}

/* Up to `batch` rounds of the region's tests, each appended to its round of the batch (np[b]
 * pairs so far, lightb[b] whether it is a light round); a region without a test is done. */
static int plan_batch(fast *F, walk *W, region *R, frags *g, int batch, int light_pairs, int *np,
                      int *lightb, int *active)
{
    for (int b = 0; b < batch; b++) {
        int tests = 0, light = 0;
        int got = plan_round(F, g, W->pairs + (size_t)b * W->stride + np[b], &tests, light_pairs,
                             &light);
        if (got < 0)
            return TS_ENOMEM;
        if (tests == 0) {
            if (b == 0)
                R->done = 1;
            break;
        }
        *active = 1;
        R->rounds++;
        np[b] += got;
        lightb[b] = light;
        R->light_rounds += light;
    }
    return TS_OK;
}

/* Region first + r of the walk: its cut from what it has measured, then its share of the
 * next batch of rounds, unless it is done. */
static int plan_region(fast *F, walk *W, int r, int *np, int *lightb, int *active)
{
    int top = W->first == 0;
    region *R = &F->R[W->first + r];
    const int *mem = W->order + W->rstart[r];
    int nmem = W->rstart[r + 1] - W->rstart[r];
    const long *mi = W->S.mi + W->S.start[r];
    long m = W->S.start[r + 1] - W->S.start[r];
    int rc = choose_cut(F, R, mem, nmem, mi, W->S.light[r] - W->S.start[r], m);
    if (rc != TS_OK || R->done || region_exhausted(R, nmem))
        return rc;
    frags g;
    /* below the top, padding pairs unmeasured nodes inside fragments (pad_inside) */
    if (frags_build(F, &g, R, mem, nmem, mi, m, !top, W->scratch)) {
        frags_free(&g);
        return TS_ENOMEM;
    }
    /* A region of a few nodes below the top has at most a few pairs a round, too
     * few on its links for their load to move its levels, and mostly it is a
     * leaf proving it is a star, one pair of its nodes after the other: members
     * without a test do not pad there. */
    g.rest = !top && nmem <= REST_MAX_NODES;
    g.has_cut = isfinite(R->cut);
    g.recheck = R->rechecks < RECHECK_MAX;
    g.biggest = top && nmem >= BIG_PARTNER_MIN_NODES;
    int batch = batch_rounds(R, &g, top);
    int light_pairs = light_round_pairs(R, top, nmem);
    rc = plan_batch(F, W, R, &g, batch, light_pairs, np, lightb, active);
    R->rechecks += R->rechecks < RECHECK_MAX && !g.recheck;
    frags_free(&g);
    return rc;
}

/* Measures the planned batch (np[b] pairs in round b) and stores what it found. */
static int measure_batch(fast *F, walk *W, const int *np, const int *lightb)
{
    /* one gather/scatter for the whole batch: the later rounds assume the earlier
     * tests came out separate, as most do */
    int rc = ts_probe_control(F->e, F->err);
    for (int b = 0; b < MAX_BATCH && rc == TS_OK && np[b] > 0; b++) {
        rc = ts_probe_round_rule(F->e, W->pairs + (size_t)b * W->stride, np[b],
                                 W->first == 0 && F->n >= SAMPLES_TOP_MIN_NODES ? &F->rule_top
                                                                                : &F->rule,
                                 W->st, F->err);
        if (rc == TS_OK)
            rc = store_round(F, W->st, np[b], lightb[b]);
    }
    return rc;
}

/* Batches of rounds for all the regions of the current depth until none has a test left. */
static int run_depth(fast *F, walk *W)
{
    int nr = W->last - W->first, rc = TS_OK, active = 1;
    while (active && rc == TS_OK) {
        /* group live nodes and this depth's measurements by region */
        group_by_region(F, W);
        if ((rc = sorted_update(F, &W->S, W->first, nr)) != TS_OK)
            break;
        int np[MAX_BATCH] = {0}, lightb[MAX_BATCH] = {0};
        active = 0;
        for (int r = 0; r < nr && rc == TS_OK; r++)
            rc = plan_region(F, W, r, np, lightb, &active);
        if (rc != TS_OK || !active)
            break;
        rc = measure_batch(F, W, np, lightb);
    }
    return rc;
}

/* The regions of the current depth into the tree, and each node into its region of the next
 * depth; with `limit`, the deadline came: returns TS_ELIMIT once done (or an error). */
static int emit_depth(fast *F, walk *W, int limit)
{
    int n = F->n, first = W->first, nr = W->last - W->first;
    int rc = limit ? TS_ELIMIT : TS_OK;
    /* emit every region of this depth with the fragments it has (on a deadline this
     * is the best partition so far and the walk stops) */
    for (int r = 0; r < nr && (rc == TS_OK || rc == TS_ELIMIT); r++) {
        const int *mem = W->order + W->rstart[r];
        int nmem = W->rstart[r + 1] - W->rstart[r];
        if (nmem == 0)
            continue;
        int e2 = emit_region(F, first + r, mem, nmem, W->next_reg, W->scratch);
        if (e2 != TS_OK)
            rc = e2;
    }
    if (rc != TS_OK && rc != TS_ELIMIT)
        return rc;
    for (int i = 0; i < n; i++)
        if (F->reg[i] >= first && !F->dead[i])
            F->reg[i] = W->next_reg[i];
    if (limit) {
        /* nodes of unresolved subtrees hang from their subtree's switch */
        for (int i = 0; i < n; i++)
            if (F->reg[i] >= W->last && !F->dead[i] && F->count[i] > 0 &&
                ts_utree_add(F->t, F->R[F->reg[i]].vert, 1.0, i) < 0)
                rc = TS_ENOMEM;
    }
    return rc;
}

/* Keeps the measurements of this depth that the next one can use (its regions are those from
 * `last` on) and forgets this depth's padding. */
static void carry_evidence(fast *F, int last)
{
    /* pairs measured at this depth inside one new region are evidence there too */
    long kept = 0;
    for (long k = 0; k < F->nm; k++) {
        int ra = F->reg[F->M[k].a], rb = F->reg[F->M[k].b];
        if (ra >= last && ra == rb && !F->dead[F->M[k].a] && !F->dead[F->M[k].b]) {
            F->M[kept] = F->M[k];
            F->M[kept].carried = 1;
            F->M[kept].deferred = 0;
            F->M[kept++].light = 0;     /* below, every round is a heavy one */
        }
    }
    F->nm = kept;
    F->deferred.used = 0;
    memset(F->deferred.key, 0, sizeof *F->deferred.key * F->deferred.cap);
}

static int fast_run(fast *F)
{
    int n = F->n, rc = TS_OK;
    walk W;
    memset(&W, 0, sizeof W);
    W.stride = (size_t)(n / 2 + 1);
    W.next_reg = malloc(sizeof(int) * (size_t)n);
    W.order = malloc(sizeof(int) * (size_t)n);
    W.scratch = malloc(sizeof(int) * (size_t)(6 * n + 8));
    W.pairs = malloc(sizeof *W.pairs * W.stride * MAX_BATCH);
    W.st = malloc(sizeof *W.st * W.stride);
    if (!W.next_reg || !W.order || !W.scratch || !W.pairs || !W.st) {
        rc = TS_ENOMEM;
        goto out;
    }
    int root = ts_utree_add(F->t, TS_NONE, 0, TS_NONE);
    if (root < 0 || new_region(F, root) < 0) {
        rc = TS_ENOMEM;
        goto out;
    }
    for (int i = 0; i < n; i++)
        F->reg[i] = 0;
    while (W.first < F->nreg && rc == TS_OK) {
        W.last = F->nreg;
        int nr = W.last - W.first;
        free(W.rstart);
        W.rstart = calloc((size_t)nr + 1, sizeof(int));
        if (!W.rstart || sorted_reset(&W.S, nr)) {
            rc = TS_ENOMEM;
            break;
        }
        rc = run_depth(F, &W);
        if (rc == TS_ELIMIT || rc == TS_OK) {
            rc = emit_depth(F, &W, rc == TS_ELIMIT);
            if (rc != TS_OK)
                break;
        }
        carry_evidence(F, W.last);
        W.first = W.last;
    }
out:
    free(W.next_reg);
    free(W.order);
    free(W.rstart);
    sorted_free(&W.S);
    free(W.scratch);
    free(W.pairs);
    free(W.st);
    return rc;
}

/* The top region split straight into leaf switches (every child of the root a switch whose
 * children are nodes, FLAT_MIN_LEAVES or more of them). A fabric really built so is
 * level-structured, but so is what the top cut makes of an irregular one when the only
 * consistent cut it finds is the lowest, contention-free class of same-leaf pairs: the
 * additive method tells them apart, at one round per pair of leaves. With fewer leaves its
 * matrix has too few quartets to tell its own noise (on the testbed's four leaves it made a
 * switch of two of them), and an irregular fabric cut down to so few leaves is unlikely. */
static int flat_tree(const fast *F)
{
    const ts_utree *t = F->t;
    int root = F->R[0].vert, switches = 0;
    for (int v = 0; v < t->nvert; v++) {
        if (t->parent[v] != root)
            continue;
        if (t->node[v] != TS_NONE)
            return 0;
        switches++;
        for (int u = 0; u < t->nvert; u++)
            if (t->parent[u] == v && t->node[u] == TS_NONE)
                return 0;
    }
    return switches >= FLAT_MIN_LEAVES;
}

int ts_discover_fast(ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep, ts_error *err)
{
    /* Two nodes: their one pair is the whole plan, and there is nothing to split (the top-down
     * cut wants three nodes to compare near with far), so it is the all-pairs plan. */
    if (e->tp->nnodes == 2)
        return ts_discover_allpairs(e, tree, rep, err);
    int rc0 = ts_method_begin("the fast method", e, tree, rep, err);
    if (rc0 != TS_OK)
        return rc0;
    int n = e->tp->nnodes;
    fast F;
    memset(&F, 0, sizeof F);
    F.e = e;
    F.t = tree;
    F.err = err;
    F.n = n;
    F.min_gap = INFINITY;
    ts_rng_seed_stream(&F.rng, ((uint64_t)n * 0x9e3779b97f4a7c15ULL) ^ (e->plan_seed * 0xbf58476d1ce4e5b9ULL),
                       0xfa57u);
    /* a few samples and their minimum: the decisions compare levels ~10x the jitter apart;
     * in the top region the loaded far pairs sit ~4x above the near ones, and the cost of a
     * round is its far pairs' samples, so two do there */
    F.rule = e->rule;
    F.rule.min_samples = F.rule.max_samples = SAMPLES_DEEP;
    F.rule_top = e->rule;
    F.rule_top.min_samples = F.rule_top.max_samples = SAMPLES_TOP;
    F.reg = malloc(sizeof(int) * (size_t)n);
    F.uf = malloc(sizeof(int) * (size_t)n);
    F.kpar = malloc(sizeof(int) * (size_t)n);
    F.krank = malloc(sizeof(int) * (size_t)n);
    F.ktime = malloc(sizeof(long) * (size_t)n);
    F.dead = calloc((size_t)n, 1);
    F.count = calloc((size_t)n, sizeof(int));
    int rc = F.reg && F.uf && F.kpar && F.krank && F.ktime && F.dead && F.count &&
                     pairset_init(&F.deferred, 1024) == 0 ? TS_OK : TS_ENOMEM;
    if (rc == TS_OK)
        rc = fast_run(&F);
    if (rc == TS_ELIMIT) {
        e->partial = 1;
        rc = TS_OK;
    }
    /* ---- not level-structured: hand the fabric to fast_irregular.c ---- */
    int irregular = 0;
    if (rc == TS_OK && !e->partial) {
        int lv = ts_irr_level_structured(tree);
        if (lv < 0)
            rc = TS_ENOMEM;
        else if (lv == 0 || F.nambiguous > 0 || flat_tree(&F)) {
            /* nodes at different depths, or a region without any cut: the threshold cuts
             * cannot be trusted there, so the tree comes from the additive method instead
             * (on failure fast's tree stays) */
            unsigned char *live = malloc((size_t)n);
            if (!live)
                rc = TS_ENOMEM;
            for (int i = 0; live && i < n; i++)
                live[i] = !F.dead[i] && F.count[i] > 0;
            if (live) {
                rc = ts_irr_discover(e, &F.rule, live, tree, &irregular, err);
                if (rc == TS_ELIMIT) {
                    e->partial = 1;
                    rc = TS_OK;
                }
            }
            free(live);
        }
    }
    /* ---- end of the hand-over ---- */
    if (rc == TS_OK) {
        int nun = 0;
        for (int i = 0; i < n; i++)
            nun += F.dead[i] || F.count[i] == 0;
        if (nun > 0) {
            rep->unmeasured = malloc(sizeof(int) * (size_t)nun);
            if (!rep->unmeasured)
                rc = TS_ENOMEM;
            else
                for (int i = 0; i < n; i++)
                    if (F.dead[i] || F.count[i] == 0)
                        rep->unmeasured[rep->nunmeasured++] = i;
        }
        if (!irregular) {
            rep->ambiguous = F.ambiguous;
            rep->nambiguous = F.nambiguous;
            F.ambiguous = NULL;
        }
        rep->tol_us = isfinite(F.min_gap) ? F.min_gap : 0;
        rep->reference = 0;
    }
    if (rc == TS_ENOMEM)
        rc = ts_fail(err, TS_ENOMEM, "out of memory for %d nodes", n);
    free(F.reg);
    free(F.uf);
    free(F.kpar);
    free(F.krank);
    free(F.ktime);
    free(F.dead);
    free(F.count);
    free(F.deferred.key);
    free(F.R);
    free(F.M);
    free(F.ambiguous);
    if (rc != TS_OK) {
        ts_utree_free(tree);
        ts_infer_report_free(rep);
    }
    return rc;
}
