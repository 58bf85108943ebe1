/* toposcope — the fast method: the switch tree top-down, one level of switches at a time, every
 * decision taken on round trips freed of their hosts' offsets and against the noise measured in
 * the same rounds.
 *
 * A region is the set of nodes below one switch s, not yet split. Its pairs either stay inside
 * one child of s ("near") or cross s ("far"). All regions of one depth are measured side by
 * side in the same rounds (a region's pairs use only its own links, so regions never disturb
 * each other), every node busy in every round so that each round loads the fabric alike. One
 * depth runs as a loop of four named steps until every region is decided:
 *
 *  1. measure   a batch of rounds per gather/scatter step (plan_region): tests between
 *               fragments (groups of nodes known to be near) not yet known to be apart, the
 *               other members padded with random partners; a region without a level gap yet
 *               runs a round-robin tournament when small (every pair, the proof of a star) or
 *               random pairs when big. Each pair's estimate is the minimum of its samples: the
 *               noise of a round trip is one-sided (a tight lower tail, a long upper one).
 *               A depth of big regions whose first batch shows that one sample per pair would
 *               have read as the minimum did takes one from then on (one_sample_will_do).
 *  2. offsets   (fit_offsets) every host's offset, fitted on all pairs whose class is known
 *               (offsets.c): real hosts differ by more than a level step, so raw round trips
 *               cannot be compared; residuals v - off[a] - off[b] can.
 *  3. level gap (find_level_gap) the region's residuals in order; a cut between near and far
 *               is consistent when no far pair joins nodes that near pairs already connect
 *               (checked for all cuts at once with a Kruskal pass). Its margin is the gap
 *               between the classes in noise standard deviations, the noise being the far
 *               class's own spread (interquartile, so outliers do not widen it). The widest
 *               consistent margin is the region's cut when chance is below FALSE_SPLIT.
 *  4. decide    (decide_region) near pairs join fragments; far pairs inside the far class's
 *               band mark their fragments apart (a pair far above the band is an outlier, not
 *               evidence). A region is split when every pair of its fragments is known apart,
 *               a star when a full tournament shows no gap and its pairs fit a star; a small
 *               region whose pairs do not fit one, with no gap either, is split by the blocks
 *               its children make in the whole matrix, found on one half of its measurements
 *               and tested on the other (partition_look, blocks.c); unresolved when a big region
 *               shows none even after its samples per pair were doubled up to SAMPLES_MAX, or
 *               under a deadline as far as its time allows (sequential testing: more samples
 *               only where the noise needs them).
 * Each split keeps its margin (rep->tol_us: the smallest); an unresolved region is one switch
 * over all its nodes (a coarser but true tree) and is reported, so the result is partial.
 *
 * Why load helps and cannot mislead: concurrent pairs that share a link inflate each other, and
 * inflation only adds. A region's far pairs load the uplinks of its children alike from round to
 * round, which widens the near/far gap; the noise of that load is part of the far class's spread
 * and so of the margin's denominator.
 *
 * Limits: the cut is a threshold, so every child of a region must sit at about the same depth
 * below it (fat trees, level-structured fabrics). Trees that are not so show up as nodes at
 * different depths or unresolved regions and are measured again by fast_irregular.c; where
 * that tree is a guess, its splits are tested (confirm_guess, confirm.c) and those that do
 * not stand are contracted. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/discover.h"
#include "method.h"
#include "confirm.h"
#include "blocks.h"
#include "fast_irregular.h"
#include "offsets.h"
#include "util/prefetch.h"
#include "util/unionfind.h"
#include "toposcope/rng.h"
#include "toposcope/fast.h"

#define FALSE_SPLIT 1e-6     /* chance that a region's widest gap is taken for a level */
#define EDGE_PAIRS 16        /* pairs on each side of a gap its density is taken over, ... */
#define EDGE_MIN 8           /* ... at least this many above it, and 3 below (so a region of
                              * 5 nodes or fewer, or a child of 2, is not told from chance) */
#define TOLD_MIN_NODES 6     /* ... the fewest nodes of a region more samples can split */
#define SAMPLES_FIRST 3      /* samples per pair; their minimum is the pair's estimate ... */
#define SAMPLES_MAX 48       /* ... doubled up to this while a big region shows no gap (the
                              * defaults of e->samples_first, e->samples_max); under a deadline
                              * on to TS_SAMPLES_MAX while the time allows (may_double) */
#define DOUBLING_SHARE 0.5   /* a doubling past SAMPLES_MAX must fit in this share of the time
                              * left: the rest is for the depths below and the link stage */
#define BATCH 8              /* rounds planned per gather/scatter step (measure_batch) */
#define BATCH_PROOF 16       /* ... the most when they end the tournaments' proofs (batch_rounds) */
#define BIG_ROUNDS 8         /* rounds a big region without a gap is measured before it is
                              * judged (its first batch: judged at 16 rounds, the top regions
                              * of 20 irregular trees, handed to the additive method, came
                              * out with 59 switches missing instead of 36), ... */
#define BIG_ROUNDS_UNSURE 24 /* ... and while a look's gap was suggestive, before its samples
                              * double (settle_region) */
#define SILENT_PAIRS 2       /* a node none answered in this many pairs, and never any other,
                              * is left out: one pair's losses in a row (3 at 20 % loss on one
                              * link, both ways: 1 pair in 20) blame both its nodes alike */
#define STAR_PROOF_MAX 64    /* a region this small runs a full tournament to prove a star */
#define CUT_OUTLIERS 0.002   /* share of far pairs that may join connected nodes: near pairs
                              * whose samples all fell in the jitter's upper tail ... */
#define STRAGGLERS 2         /* ... or that sit inside the gap, neither near nor far */
#define SCAN_LIMIT 64        /* partner fragments a test is looked for among, at most ... */
#define FRAG_SEARCH 256      /* ... at random, then through every fragment once this few */
#define FRAG_MATRIX 1024     /* fragments whose pairs' states a batch copies into a matrix
                              * (frag_members): 1 MB, against a set of tens of megabytes */
#define CUT_CANDIDATES 8     /* widest consistent gaps whose margins are computed */
#define OFFSET_SWEEPS 3      /* Gauss-Seidel sweeps of the offset fit per decision ... */
#define CARRIED_SWEEPS 2     /* ... and when it carries on from the last batch's (decide_depth) */
#define FIT_PASSES 2         /* offsets and cuts fitted in turn this many times per step
                              * (one for a big region with a cut: decide_depth) ... */
#define CARRY_SHARE 0.25     /* ... once a batch adds no more than this share of its pairs */
#define LOF_Z 3.1            /* a star's lack of fit is significant beyond this z (1e-3) */
#define LOF_TRIM 0.05        /* share of the largest deviations its mean squares leave out */
#define LOF_LOGVAR 2.32      /* n x the variance of the log of such a mean square of n normal
                              * deviations (2 untrimmed; 5.44 for a median's, the scale the
                              * test used first: its z scores spread 1.5-1.6 times too wide) */
#define FLAT_MIN_LEAVES 8    /* a flat tree with this many leaf switches is checked (flat_tree) */
#define STAR_POWER 0.90      /* a star stands once a hidden level of the step that matters ... */
#define STAR_STEP_SHARE 0.5  /* ... (this share of the smallest step split above it) would have
                              * failed it with this probability (star_resolution) */
#define LEVEL_STEP_FLOOR_US 0.4 /* the least one level adds to a round trip on any real
                              * fabric: four traversals of the fastest published switch hop
                              * (InfiniBand HDR/NDR, ~0.1 us; Ethernet's are 0.25-0.85 us),
                              * unless the site says its own (least_level_step_us) */
#define CONFIRM_NOISE_PAIRS 8 /* pairs measured twice the noise of a guess's test needs */
#define CONFIRM_SETS 16      /* counts of samples per pair a guess's test weighs, at most */
#define CONFIRM_LOOKS 6      /* half tournament cycles a guess may measure again to stand:
                              * each pair ~4.5 times in all, its evidence ~1.7 times the
                              * first's */
#define STAR_CHILD 3         /* the children a hidden level is assumed to make: the smallest
                              * the gap test tells from chance (EDGE_MIN) */
#define PARTITION_CYCLES 6   /* tournament cycles a small region whose blocks stand as a level
                              * measures at one sample count, its nodes not yet told apart,
                              * before its samples double (partition_look); and a star whose
                              * test more cycles would power (settle_star) */

enum { OPEN, SPLIT, STAR, UNRESOLVED };

typedef struct meas {
    int a, b;
    int reg;                /* the region whose rounds measured it */
    int k;                  /* samples per pair it was taken with */
    int round;              /* the round that took it (F->rounds_stored, from 1) */
    double v;               /* the minimum of its samples, us */
    float top, single;      /* taken with 3 samples: the largest, and one of the three as a
                             * single sample would have read (NAN otherwise: one_sample_will_do) */
} meas;

/* What level_lack_of_fit measured besides its z score: what its power depends on. */
typedef struct star_fit {
    double pure;            /* one measurement's noise (robust sd), us */
    double se;              /* the z score's standard error (its log variance ratio's) */
    double wbar;            /* measurements behind a pair's mean, on the deviations' scale */
    int nmem;               /* the region's nodes it fitted */
    int child;              /* the children a hidden level would make (hidden_child) */
    double pairs, reps;     /* pairs fitted, and the degrees of freedom of the pure error */
} star_fit;

/* The last star resolution's bisection (star_resolution), in noise units: it depends on the
 * star's node count and standard error alone, and a depth's stars are mostly alike in both
 * (leaf switches of one size, each after a full tournament), so it is worked out again only
 * when they change. Each bisection is ~50 steps of 60 erfc evaluations: for the 512 leaf
 * switches of 8192 nodes, ~4 % of the method's CPU. */
typedef struct resolution_memo {
    int nmem, child;        /* nmem 0: none yet */
    double se;
    double noise_units;     /* the step star_power_margin clears, in noise units */
} resolution_memo;

typedef struct region {
    int vert;               /* the switch vertex of this subtree in the output tree */
    int state;
    int nmem;               /* live members at the last planning step */
    int rounds;             /* rounds at the current samples per pair */
    int tour;               /* tournament rounds run (a region without a gap) */
    int has_cut;
    double far_lo, far_hi;  /* residual band of the far class, as the last decision found it */
    int opinions;           /* ... and the far pairs that keep two fragments apart (2 or 3:
                             * far_opinions_needed) */
    double margin;          /* pairs one class would have put into its widest gap (gap_margin) */
    double threshold;       /* ... and the margin that is significant */
    double best_share;      /* the largest share of its threshold a look at the current
                             * samples per pair found (a big region without a gap) */
    double lof_z;           /* a small region without a gap: its lack of fit as a star */
    int blocks_seen;        /* ... and the blocks of its last partition look stood as a level,
                             * nothing against them (partition_look) */
    star_fit fit;           /* ... and what its power depends on: the step it sees with
                             * probability STAR_POWER (star_resolution), worked out only for a
                             * region that settles as a star (settle_star) */
    double scale_us;        /* the smallest step of the splits above it (INFINITY: none) */
    double spread_us;       /* its residuals' spread (robust sd), as the last decision found it */
    double noise_sum;       /* the current stage's estimates' own sd (the sampler's interval
                             * over z), summed over its measurements: what more samples shrink */
    long noise_n;
    int unpowered;          /* a star whose resolution stayed coarser than its scale */
    double step_us;         /* a split one: its far class's median over its near class's */
    double group_z;         /* a split one: how far its children look grouped (group_children) */
    double vary_z;          /* ... and how far its pairs of children differ (child_pairs_vary) */
    int ungrouped;          /* split, but its children may group below it: unresolved */
    int one_pass;           /* this batch takes one decision pass (classify_batch) */
    int grouped;            /* split, and its children group below it (F->grp) */
    double gap_us;          /* ... and in us */
    double level;           /* median round trip of its class, for the tree's lengths */
    long nfrag, nsep;       /* fragments, and fragment pairs known apart */
} region;

/* A set of unordered pairs of ids (open addressing). A key's top bit is free (ids are ints,
 * never negative) for a mark its user gives it: PAIR_APART in F->far. */
typedef struct pairset {
    uint64_t *key;
    size_t cap, used;
} pairset;

#define PAIR_MARK ((uint64_t)1 << 63)
#define PAIR_APART PAIR_MARK    /* in F->far: enough far pairs, the fragments are apart */

typedef struct fast {
    ts_probe_engine *e;
    ts_utree *t;
    ts_error *err;
    ts_rng rng;
    int n;
    int k;                  /* samples per pair at the current depth */
    int kfirst, kmax;       /* ... at first, and the most doubling takes it to ... */
    int kchosen;            /* the caller chose the samples (no single-sample stage) */
    int one_sample_depth;   /* the last depth took one sample per pair (take_one_sample) */
    int lone_children;      /* nodes the last depth's splits hung alone from their switch:
                             * the job holds one node of a switch (doubt_floor_stars) */
    int kdeadline;          /* ... or, under a deadline, while its time allows (may_double) */
    double stage_start_us;  /* when the depth started at the current samples per pair */
    double round_us;        /* what a round of the last batch took (control step included) ... */
    int round_k;            /* ... at this many samples per pair */
    ts_estimator est;       /* the pairs' estimate: the minimum unless the caller chose */
    double ci_z;            /* the normal quantile of the samplers' intervals */
    int *reg;               /* node -> region, -1 when placed or unreachable */
    unsigned char *dead;
    unsigned char *silent;  /* a node's pairs that got no answer, while it has had none */
    int *count;             /* answered pairs per node */
    region *R;
    int nreg, capreg;
    meas *M;                /* every measurement, all depths (the offsets use them all) */
    ts_offset_obs *obs;     /* ... each as an equation of the offset fit: its class is the
                             * region, or -1 (near, stale, outlier); kept beside F->M, as the
                             * fit reads it, rather than copied for every fit */
    long nm, capm;
    int rounds_stored;      /* rounds whose measurements are in F->M */
    double *off;            /* host offsets, us */
    double *weight;         /* ... the weight of the equations behind each */
    double *prior, *prior_w; /* ... and both as the earlier depths left them */
    ts_offset_work offset_work; /* the fit's buffers, kept from fit to fit */
    unsigned char *two_level; /* per region: its decision takes a second look, on ... */
    int cap_two_level;
    double *off_two;        /* ... these offsets, its class fitted on two levels (fit_offsets) */
    ts_offset_work two_level_work;
    long two_level_first;   /* the fit's equations, F->obs[first, nm), and sweeps; ... */
    int two_level_sweeps, two_level_fitted; /* ... fitted once a pass, when first wanted */
    int depth;              /* depths done */
    long depth_first_meas;  /* the current depth's measurements are F->M[this, nm) */
    int *uf;                /* fragments: union-find over nodes */
    int *local;             /* node -> its position in its region (level_lack_of_fit), or its
                             * pairs in a class less those above the band (decide_region) */
    int *grp;               /* fragment root -> its group's (group_children), union-find */
    pairset far;            /* fragment pairs (by root) with a far pair, measured or planned,
                             * this step; marked PAIR_APART once known apart (add_separation) */
    pairset seconded;       /* ... of them, those with a second far pair */
    int *apart;             /* fragment root -> how many fragments F->far has it apart from */
    int *ambiguous;         /* a node of each unresolved region, for the report */
    int nambiguous, capambiguous;
    unsigned char *grouping_only;  /* per ambiguous switch: only its children's grouping in doubt */
    int *unresolved_of;     /* per node: the unresolved region holding it (its outermost), or -1 */
    ts_split_set own_splits; /* fast's own splits, where the guess only refines its tree: none
                              * of them may be contracted unmarked (confirm_guess) */
    double min_gap_us;      /* the narrowest gap of an accepted split */
    double noise_us;        /* the widest spacing at the edge of a gap a split stood on */
    double star_res_us;     /* the coarsest resolution of a star (star_resolution) */
    double least_step_us;   /* the least a level of this fabric adds (settle_star) */
    int nunpowered;         /* stars without the power to see the step that matters ... */
    double unpowered_us;    /* ... and the coarsest of their resolutions */
    resolution_memo resolution;
} fast;

/* Two arrays that grow together (the addresses of the caller's pointers, of any element
 * types: read and written with memcpy), to cap elements each, their contents kept. 0, or -1
 * when out of memory (each then as it was, or already grown). */
static int grow_both(void *pa, size_t size_a, void *pb, size_t size_b, long cap)
{
    void *arr[2], *at[2] = {pa, pb};
    size_t size[2] = {size_a, size_b};
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        memcpy(&arr[i], at[i], sizeof arr[i]);
        void *grown = realloc(arr[i], size[i] * (size_t)cap);
        if (grown)
            memcpy(at[i], &grown, sizeof grown);
        else
            rc = -1;
    }
    return rc;
}

/* ---- pair sets ---- */

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

/* Where key k's search starts. */
static size_t pair_home(const pairset *s, uint64_t k)
{
    uint64_t h = k;
    h = (h ^ h >> 30) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ h >> 27) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return (size_t)h & (s->cap - 1);
}

/* Asks the cache for the pair's slot ahead of its look-up (ts_prefetch). */
static void pairset_prefetch(const pairset *s, int a, int b)
{
    ts_prefetch(&s->key[pair_home(s, pair_key(a, b))], 1);
}

/* The slot of key k (unmarked): its own, or the empty one where it would go. */
static size_t pair_slot(const pairset *s, uint64_t k)
{
    size_t i = pair_home(s, k);
    while (s->key[i] && (s->key[i] & ~PAIR_MARK) != k)
        i = (i + 1) & (s->cap - 1);
    return i;
}

/* The pair's slot, room made first for it to be added: its key (with its mark) when the set
 * holds it, else empty (0), for the caller to fill in with pairset_fill. One look-up serves
 * both the question and the addition. NULL when out of memory. */
static uint64_t *pairset_slot(pairset *s, int a, int b)
{
    if (2 * (s->used + 1) > s->cap) {
        /* twice the size, half full: the big regions' sets run to megabytes, and every
         * look-up is a cache miss the more likely the bigger the table */
        pairset bigger;
        if (pairset_init(&bigger, s->used + 1))
            return NULL;
        for (size_t i = 0; i < s->cap; i++)
            if (s->key[i])
                bigger.key[pair_slot(&bigger, s->key[i] & ~PAIR_MARK)] = s->key[i];
        bigger.used = s->used;
        free(s->key);
        *s = bigger;
    }
    return &s->key[pair_slot(s, pair_key(a, b))];
}

/* The pair's key (with its mark) when the set holds it, else 0; the set unchanged. */
static uint64_t pairset_peek(const pairset *s, int a, int b)
{
    return s->key[pair_slot(s, pair_key(a, b))];
}

/* The pair into the empty slot pairset_slot gave. */
static void pairset_fill(pairset *s, uint64_t *slot, int a, int b)
{
    *slot = pair_key(a, b);
    s->used++;
}

/* 1 when the pair is new, 0 when it was there, -1 when out of memory. */
static int pairset_add(pairset *s, int a, int b)
{
    uint64_t *slot = pairset_slot(s, a, b);
    if (!slot)
        return -1;
    if (*slot)
        return 0;
    pairset_fill(s, slot, a, b);
    return 1;
}

/* Empties the set, sized for about as many pairs as it held: the fragment pairs of a region
 * run to hundreds of thousands while its fragments are many and to a few hundred once they
 * have joined, and a table sized for the many makes every later look-up a cache miss (and
 * every clearing a memset of megabytes). Returns 0, or -1 when out of memory. */
static int pairset_clear(pairset *s)
{
    size_t want = s->used;
    if (s->cap > 64 && 8 * (2 * want + 16) < s->cap) {
        pairset smaller;
        if (pairset_init(&smaller, want))
            return -1;
        free(s->key);
        *s = smaller;
        return 0;
    }
    memset(s->key, 0, sizeof *s->key * s->cap);
    s->used = 0;
    return 0;
}

/* What the far pairs between two fragments have shown so far (add_separation). */
enum { UNSEEN, ONCE, APART };

/* One more far pair between fragments fa and fb: they are apart from the opinions-th on (2
 * or 3: far_opinions_needed). All samples of a near pair can fall in the jitter's upper tail,
 * so one pair alone never keeps two fragments apart. A far pair that opens nothing (opens 0)
 * counts only as a later one: it leaves fragments without a first UNSEEN. Returns what the
 * pair of fragments had shown before this one (ONCE: they are apart now; APART: nothing
 * changed; UNSEEN otherwise), or -1 when out of memory. */
static int separate(fast *F, int fa, int fb, int opens, int opinions)
{
    uint64_t *slot = pairset_slot(&F->far, fa, fb);
    if (!slot)
        return -1;
    if (!*slot) {
        if (opens)
            pairset_fill(&F->far, slot, fa, fb);
        return UNSEEN;
    }
    if (*slot & PAIR_APART)
        return APART;
    int second = opinions > 2 ? pairset_add(&F->seconded, fa, fb) : 0;
    if (second < 0)
        return -1;
    if (second)
        return UNSEEN;
    slot = pairset_slot(&F->far, fa, fb);
    *slot |= PAIR_APART;
    F->apart[fa]++, F->apart[fb]++;
    return ONCE;
}

/* A planned test between fragments fa and fb, counted as a far pair for the batch's later
 * rounds (plan_tests), as any far pair that opens one. */
static int add_separation(fast *F, int fa, int fb, int opinions)
{
    return separate(F, fa, fb, 1, opinions);
}

/* No fragment pairs known apart, nor with one far pair. Returns TS_OK or TS_ENOMEM. */
static int clear_separations(fast *F)
{
    memset(F->apart, 0, sizeof(int) * (size_t)F->n);
    return pairset_clear(&F->far) || pairset_clear(&F->seconded) ? TS_ENOMEM : TS_OK;
}

/* ---- regions of one depth ---- */

static int new_region(fast *F, int vert, double scale_us)
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
    r->state = OPEN;
    r->level = NAN;
    r->fit = (star_fit){NAN, NAN, NAN, 0, STAR_CHILD, 0, 0};
    r->scale_us = scale_us;
    r->opinions = 3;
    return F->nreg++;
}

/* A measurement in a depth's index: the region it measured (from the depth's first), its pair
 * (pair_key) and where it is in F->M. */
typedef struct indexed_meas {
    uint64_t key;
    long j;
    int reg;
    int a, b;               /* F->M[j]'s pair and round trip, copied: the index is read in */
    double v;               /* pair order, F->M would be read at random */
} indexed_meas;

/* The current depth's measurements at the current samples per pair in (region, pair, position)
 * order: region first + r's are at[start[r], start[r + 1]). Every decision reads a region's
 * measurements grouped by pair; a batch only adds to them, so each batch's are merged in
 * (update_region_index) rather than the region's all sorted again. */
typedef struct region_index {
    indexed_meas *at, *spare;   /* the index, and the buffer the next merge writes */
    long n, cap;
    long *start;
    long upto;              /* F->M[0, upto) have been looked at */
    int first, k;           /* the depth (its first region) and samples per pair indexed */
} region_index;

/* A buffer the decisions reuse from batch to batch: a big region's arrays run to megabytes,
 * and allocating them afresh in every decision was paid again in page faults. */
typedef struct scratch {
    void *p;
    size_t size;
} scratch;

/* The buffer, at least size bytes (its contents are not kept), or NULL when out of memory. */
static void *scratch_get(scratch *s, size_t size)
{
    if (size > s->size) {
        /* with room to grow: a depth's regions grow batch by batch; grown by realloc, which
         * moves a block of megabytes by remapping its pages, where a fresh one (free, then
         * malloc) had every page faulted in again (8192 nodes: 85600 page faults a run, 65100
         * with these and the offset fit's buffer, offsets.c, grown so) */
        size_t room = size + size / 2;
        void *p = realloc(s->p, room);
        if (!p)
            return NULL;
        s->p = p;
        s->size = room;
    }
    return s->p;
}

typedef struct walk {
    int first, last;        /* regions [first, last) are the current depth */
    int *rstart;            /* region first + r's live nodes: order[rstart[r], rstart[r + 1]) */
    int *order;
    int *scratch;           /* 3 n ints: group_by_region, plan_tests (freel, fragment ids) */
    ts_pair *pairs;         /* a batch: round b's pairs from pairs + b * stride */
    size_t stride;
    int nb;                 /* rounds in this batch (batch_rounds) */
    int np[BATCH_PROOF];
    ts_pair_stats *st;
    region_index ix;        /* this depth's measurements by region and pair */
    scratch pairs_by_resid, sort_keys, sort_tmp, sort_out, gap, join_ints, join_seams,
            index_fresh;    /* (region_residuals, sort_pair_resid, find_level_gap,
                             * sort_fresh) */
} walk;

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

/* ---- step 1: measure ---- */

static void add_pair(walk *W, int b, int x, int y)
{
    W->pairs[(size_t)b * W->stride + (size_t)W->np[b]++] = (ts_pair){x, y};
}

/* Round t of the circle-method tournament of mem[0..nmem-1]: after nmem - 1 rounds (nmem
 * when odd) every pair has met once. */
static void tournament_round(walk *W, int b, const int *mem, int nmem, int t)
{
    int slots = nmem + (nmem & 1), cycle = slots - 1;
    t %= cycle;
    for (int i = 0; i < slots / 2; i++) {
        /* slot 0 stays, the others turn by one position a round */
        int p = i == 0 ? 0 : 1 + (i - 1 + t) % cycle;
        int q = 1 + (slots - 2 - i + t) % cycle;
        if (p < nmem && q < nmem)
            add_pair(W, b, mem[p], mem[q]);
    }
}

/* Tournament rounds after which a small region is proven a star (or its children shown not
 * to group): one cycle, every pair once, and half a cycle more, every other pair twice for
 * the pure error (level_lack_of_fit). */
static int tournament_proof(int nmem)
{
    int cycle = nmem + (nmem & 1) - 1;
    return cycle + (cycle + 1) / 2;
}

/* Random pairs of the members in free[0..nfree-1]. */
static void pad_random(fast *F, walk *W, int b, int *freel, int nfree)
{
    ts_rng_shuffle_int(&F->rng, freel, nfree);
    for (int i = 0; i + 1 < nfree; i += 2)
        add_pair(W, b, freel[i], freel[i + 1]);
}

/* A region's fragments, for plan_tests' search through them once they are few. What the far
 * pairs have shown of two fragments (UNSEEN, ONCE or APART: separate) is copied from F->far
 * into shown, a dense matrix of the few, once a batch (its tests then update it: frags_tested):
 * the search asks it some 300 times a member (64 random partners, then every fragment), and
 * each question to F->far, a set of megabytes, was a cache miss (8192 nodes: 32 of the 42
 * million questions a run, a fifth of its CPU). index[x] is the matrix's row of root x.
 * Each round's free members by fragment, in the order the round's shuffle meets them:
 * fragment f (root[f]) holds positions pos[start[f] .. start[f + 1]) of freel, the first not
 * yet taken at or after next[f]. */
typedef struct frag_members {
    int nfrag;
    const int *index;
    unsigned char *shown;   /* nfrag x nfrag, by index */
    int *order;             /* a row's fragment in the round's order (scratch) */
    int *root, *start, *next, *pos;
} frag_members;

static void frag_members_free(frag_members *G)
{
    free(G->shown);
    free(G->order);
    free(G->root);
    free(G->start);
    free(G->next);
    free(G->pos);
}

/* What F->far holds of fragments fa and fb: UNSEEN, ONCE (a far pair) or APART. */
static int far_shown(const fast *F, int fa, int fb)
{
    uint64_t seen = pairset_peek(&F->far, fa, fb);
    return !seen ? UNSEEN : seen & PAIR_APART ? APART : ONCE;
}

/* What fragments fa and fb (roots) have shown: from G's matrix, or F->far without one. */
static int frags_shown(const fast *F, const frag_members *G, int fa, int fb)
{
    if (!G->shown)
        return far_shown(F, fa, fb);
    return G->shown[(size_t)G->index[fa] * (size_t)G->nfrag + (size_t)G->index[fb]];
}

/* A test planned between fragments fa and fb changed what they have shown: G's copy follows. */
static void frags_tested(const fast *F, frag_members *G, int fa, int fb)
{
    if (!G->shown)
        return;
    size_t i = (size_t)G->index[fa], j = (size_t)G->index[fb], nf = (size_t)G->nfrag;
    G->shown[i * nf + j] = G->shown[j * nf + i] = (unsigned char)far_shown(F, fa, fb);
}

/* G for a batch of the region's members mem[0..nmem-1] in nfrag fragments; idx is scratch of
 * F->n ints, G's index while G lives. TS_OK or TS_ENOMEM. */
static int frag_members_build(const fast *F, const int *mem, int nmem, int nfrag, int *idx,
                              frag_members *G)
{
    *G = (frag_members){0, idx, malloc((size_t)nfrag * (size_t)nfrag),
                        malloc(sizeof(int) * (size_t)nfrag), malloc(sizeof(int) * (size_t)nfrag),
                        malloc(sizeof(int) * ((size_t)nfrag + 1)),
                        malloc(sizeof(int) * (size_t)nfrag), malloc(sizeof(int) * (size_t)nmem)};
    if (!G->shown || !G->order || !G->root || !G->start || !G->next || !G->pos)
        return TS_ENOMEM;
    int *roots = G->root;   /* (by row here: root is the round's, filled by frag_members_round) */
    for (int i = 0; i < nmem; i++)
        idx[ts_uf_find(F->uf, mem[i])] = -1;
    for (int i = 0; i < nmem; i++) {
        int r = ts_uf_find(F->uf, mem[i]);
        if (idx[r] < 0) {
            if (G->nfrag == nfrag)
                return TS_EINPUT;   /* (cannot be: the fragments were counted) */
            idx[r] = G->nfrag;
            roots[G->nfrag++] = r;
        }
    }
    size_t nf = (size_t)G->nfrag;
    for (size_t f = 0; f < nf; f++) {
        G->shown[f * nf + f] = UNSEEN;
        for (size_t g = f + 1; g < nf; g++)
            G->shown[f * nf + g] = G->shown[g * nf + f] = (unsigned char)far_shown(F, roots[f], roots[g]);
    }
    return TS_OK;
}

/* G's fragments in the order the round's members meet them (frag[i]: member i's fragment, in
 * the round's order), and their members' positions. */
static void frag_members_round(frag_members *G, const int *frag, int nmem)
{
    int nf = 0;
    for (int f = 0; f < G->nfrag; f++)
        G->order[f] = -1;
    memset(G->start, 0, sizeof(int) * ((size_t)G->nfrag + 1));
    for (int i = 0; i < nmem; i++) {
        int r = frag[i], row = G->index[r];
        if (G->order[row] < 0) {
            G->order[row] = nf;
            G->root[nf++] = r;
        }
        G->start[G->order[row] + 1]++;
    }
    for (int f = 0; f < nf; f++)
        G->next[f] = G->start[f + 1] += G->start[f];
    for (int i = nmem - 1; i >= 0; i--)
        G->pos[--G->next[G->order[G->index[frag[i]]]]] = i;
}

/* A free member of a fragment fx has no far pair with, looking through every fragment from a
 * random one: its position in freel, or -1. */
static int untested_member(fast *F, frag_members *G, int fx, const int *taken)
{
    int first = (int)ts_rng_below(&F->rng, (uint64_t)G->nfrag);
    for (int t = 0, f = first; t < G->nfrag; t++, f = f + 1 < G->nfrag ? f + 1 : 0) {
        if (G->root[f] == fx || frags_shown(F, G, fx, G->root[f]) != UNSEEN)
            continue;
        while (G->next[f] < G->start[f + 1] && taken[G->pos[G->next[f]]])
            G->next[f]++;
        if (G->next[f] < G->start[f + 1])
            return G->pos[G->next[f]];
    }
    return -1;
}

/* One round of tests of a region with a cut: members of fragments not known apart meet, the
 * planned tests counting as apart for the batch's later rounds; the rest pad. A member meets
 * a fragment its own has no far pair with first, one with a single far pair (whose test would
 * only second it) when there is no such: only an untested pair can join two fragments, and
 * the far opinions that keep fragments apart matter once the fragments are few (1024 nodes
 * over kernel UDP: 7 % less probing time, 128 nodes: 15 %). The search looks at SCAN_LIMIT
 * random members, and once the fragments are no more than FRAG_SEARCH, through every
 * fragment: by then most pairs of fragments are apart, and a random search missed the few
 * untested ones (at the top of 1024 nodes, from 156 fragments on, 2-128 tests a round where
 * 512 could run, and four batches more). */
static int plan_tests(fast *F, walk *W, int b, const int *mem, int nmem, int nfrag, int opinions,
                      int *freel, frag_members *G)
{
    memcpy(freel, mem, sizeof(int) * (size_t)nmem);
    ts_rng_shuffle_int(&F->rng, freel, nmem);
    int *taken = calloc((size_t)nmem, sizeof(int));
    /* each member's fragment, found once a round, and with G its row of G's matrix: the scans
     * below read them for every candidate, and a find per candidate (its stores of the path it
     * halves) was a third of the planning */
    int *frag = malloc(sizeof(int) * 2 * (size_t)nmem), *row = frag ? frag + nmem : NULL;
    int rc = taken && frag ? TS_OK : TS_ENOMEM;
    for (int i = 0; i < nmem && rc == TS_OK; i++) {
        frag[i] = ts_uf_find(F->uf, freel[i]);
        row[i] = G->shown ? G->index[frag[i]] : -1;
    }
    int search = G->shown && nfrag <= FRAG_SEARCH;
    if (search && rc == TS_OK)
        frag_members_round(G, frag, nmem);
    for (int i = 0; i < nmem && rc == TS_OK; i++) {
        int x = freel[i];
        if (taken[i])
            continue;
        int fx = frag[i];
        const unsigned char *shown_x = G->shown ? G->shown + (size_t)row[i] * (size_t)G->nfrag : NULL;
        int tries = nmem < SCAN_LIMIT ? nmem : SCAN_LIMIT;
        int start = (int)ts_rng_below(&F->rng, (uint64_t)nmem);
        if (F->apart[fx] >= nfrag - 1)
            continue;           /* apart from every other fragment: no test would be new */
        taken[i] = 1;           /* (x is not its own partner) */
        /* (the scan wraps around by a comparison: a division per candidate was most of it) */
        int pick = -1, second = -1;
        for (int t = 0, j = start; t < tries; t++, j = j + 1 < nmem ? j + 1 : 0) {
            if (taken[j])
                continue;
            int fy = frag[j];
            if (fy == fx)
                continue;
            int shown = shown_x ? shown_x[row[j]] : far_shown(F, fx, fy);
            if (shown == UNSEEN) {
                pick = j;
                break;
            }
            if (second < 0 && shown == ONCE)
                second = j;
        }
        if (pick < 0 && search)
            pick = untested_member(F, G, fx, taken);
        if (pick < 0)
            pick = second;
        if (pick < 0) {
            taken[i] = 0;
            continue;
        }
        int fy = frag[pick];
        if (add_separation(F, fx, fy, opinions) < 0) {
            rc = TS_ENOMEM;
            break;
        }
        frags_tested(F, G, fx, fy);
        add_pair(W, b, x, freel[pick]);
        taken[pick] = 1;
    }
    if (rc == TS_OK) {
        int npad = 0;
        for (int i = 0; i < nmem; i++)
            if (!taken[i])
                freel[npad++] = freel[i];
        pad_random(F, W, b, freel, npad);
    }
    free(taken);
    free(frag);
    return rc;
}

static int plan_region(fast *F, walk *W, int r, int *active)
{
    region *R = &F->R[W->first + r];
    const int *mem = W->order + W->rstart[r];
    int nmem = W->rstart[r + 1] - W->rstart[r];
    R->nmem = nmem;
    if (R->state != OPEN)
        return TS_OK;
    if (nmem <= 2) {            /* two nodes below one switch: nothing to split */
        R->state = STAR;
        return TS_OK;
    }
    *active = 1;
    int *freel = W->scratch + F->n, rc = TS_OK;
    frag_members G = {0};       /* (the search through every fragment once they are few) */
    if (R->has_cut && nmem > SCAN_LIMIT && R->nfrag <= FRAG_MATRIX)
        rc = frag_members_build(F, mem, nmem, (int)R->nfrag, W->scratch + 2 * F->n, &G);
    for (int b = 0; b < W->nb && rc == TS_OK; b++) {
        if (R->has_cut) {
            rc = plan_tests(F, W, b, mem, nmem, (int)R->nfrag, R->opinions, freel, &G);
            if (rc != TS_OK)
                break;
        } else if (nmem <= STAR_PROOF_MAX) {
            tournament_round(W, b, mem, nmem, R->tour++);
        } else {
            memcpy(freel, mem, sizeof(int) * (size_t)nmem);
            pad_random(F, W, b, freel, nmem);
        }
        R->rounds++;
    }
    frag_members_free(&G);
    return rc;
}

static int store_round(fast *F, const ts_pair_stats *st, int np)
{
    F->rounds_stored++;
    if (F->nm + np > F->capm) {
        long cap = F->capm ? F->capm * 2 : 4096;
        while (cap < F->nm + np)
            cap *= 2;
        if (grow_both(&F->M, sizeof *F->M, &F->obs, sizeof *F->obs, cap))
            return TS_ENOMEM;
        F->capm = cap;
    }
    for (int i = 0; i < np; i++) {
        if (st[i].samples == 0) {
            /* a node that never answered anyone is left out of the tree */
            if (st[i].flags & TS_PAIR_UNREACHABLE) {
                int ends[2] = {st[i].a, st[i].b};
                for (int e = 0; e < 2; e++)
                    if (F->count[ends[e]] == 0 && ++F->silent[ends[e]] >= SILENT_PAIRS)
                        F->dead[ends[e]] = 1;
            }
            continue;
        }
        F->count[st[i].a]++;
        F->count[st[i].b]++;
        double v = ts_pair_estimate(&st[i], F->est);
        region *R = &F->R[F->reg[st[i].a]];
        if (isfinite(st[i].ci_us)) {
            R->noise_sum += st[i].ci_us / F->ci_z;
            R->noise_n++;
        }
        F->M[F->nm] = (meas){st[i].a, st[i].b, F->reg[st[i].a], F->k, F->rounds_stored, v,
                             NAN, NAN};
        if (st[i].samples == 3 && F->k == 3 && F->est == TS_ESTIMATE_MIN) {
            /* a stage of 3 (SAMPLES_FIRST) holds every sample: the least, the median and
             * the rest of their sum */
            double three[3] = {st[i].min_us, st[i].median_us,
                               3 * st[i].mean_us - st[i].min_us - st[i].median_us};
            uint64_t h = pair_key(st[i].a, st[i].b) * 0x9e3779b97f4a7c15ULL +
                         (uint64_t)F->rounds_stored;
            F->M[F->nm].top = (float)three[2];
            F->M[F->nm].single = (float)three[(h >> 33) % 3];
        } else if (st[i].samples == 1 && F->k == 1 && F->est == TS_ESTIMATE_MIN) {
            F->M[F->nm].top = F->M[F->nm].single = (float)v;   /* (pilot_one_sample) */
        }
        F->obs[F->nm++] = (ts_offset_obs){st[i].a, st[i].b, F->reg[st[i].a], v};
    }
    return TS_OK;
}

/* One batch: a gather/scatter step that plans BATCH rounds (or a tournament's proof:
 * batch_rounds), and the rounds. The step crosses
 * the fabric twice per level of the control tree, so it costs several rounds' time (1024
 * nodes over kernel UDP: 1.6 ms against 0.2-0.6 ms a round). With 4 rounds a batch, half of
 * 1024 nodes' probing time went in steps; with 8, every row of the bench's fat trees took
 * less time (medians, 128 nodes over IPoIB 0.067 s to 0.056, 300 runs; 1024 over kernel UDP
 * 0.085 to 0.065, over IPoIB 0.22 to 0.17); 16 cost the 128-node rows over kernel UDP and
 * RDMA again (0.028 s to 0.030, 0.0020 to 0.0031): a decision waits for its batch's end. A
 * batch's size chosen from the measured costs instead (twice the step's time in rounds) did
 * no better than 8: its sizes changed from batch to batch, and with them where a tournament's
 * looks fell. */
static int measure_batch(fast *F, walk *W)
{
    ts_stop_rule rule = F->e->rule;
    rule.min_samples = rule.max_samples = F->k;
    rule.estimator = F->est;
    double t0 = ts_probe_now(F->e);
    int rc = ts_probe_control(F->e, F->err), rounds = 0;
    for (int b = 0; b < W->nb && rc == TS_OK; b++) {
        if (W->np[b] == 0)
            continue;
        rc = ts_probe_round_rule(F->e, W->pairs + (size_t)b * W->stride, W->np[b], &rule, W->st,
                                 F->err);
        if (rc == TS_OK)
            rc = store_round(F, W->st, W->np[b]);
        rounds++;
    }
    if (rounds > 0) {
        F->round_us = (ts_probe_now(F->e) - t0) / rounds;
        F->round_k = F->k;
    }
    return rc;
}

/* ---- step 2: offsets ---- */

/* The offsets on this depth's measurements (from index first on in F->M), the fit of the
 * earlier depths carried as a prior (F->prior, F->prior_w; none at the top): a depth refits
 * only what it measured, not every pair since the start. The fit starts from the last one's
 * offsets and runs the given number of Gauss-Seidel sweeps (decide_depth).
 * A big region whose class holds pairs of its children among its own (no cut yet, or a pass
 * that classifies a batch's new pairs) is fitted a second time, its class on two levels
 * (offsets.c), into F->off_two: at the top of two pods of 64 nodes, or of four, the one-level
 * fit takes each node's share of near pairs into its offset, and the region was never cut
 * (over RDMA too). Its decision takes the better of the two looks (decide_region). Small
 * regions keep the one-level fit alone: their tournaments measure every pair, and where a pod
 * of 16 nodes has its level step in the hosts' spread, the two-level fit takes the hosts for
 * levels. */
static int fit_offsets(fast *F, long first, int sweeps, int classifying)
{
    F->two_level_first = first;
    F->two_level_sweeps = sweeps;
    F->two_level_fitted = 0;
    if (F->nreg > F->cap_two_level) {
        unsigned char *t = realloc(F->two_level, (size_t)F->capreg);
        if (!t)
            return TS_ENOMEM;
        F->two_level = t;
        F->cap_two_level = F->capreg;
    }
    for (int r = 0; r < F->nreg; r++) {
        const region *R = &F->R[r];
        F->two_level[r] = R->state == OPEN && R->nmem > STAR_PROOF_MAX &&
                          (!R->has_cut || (classifying && !R->one_pass));
    }
    if (ts_fit_host_offsets_work(F->n, F->obs + first, F->nm - first, F->nreg, F->off, NULL,
                                 sweeps, F->depth > 0 ? F->prior : NULL, F->prior_w,
                                 F->weight, &F->offset_work) != 0)
        return TS_ENOMEM;
    return TS_OK;
}

/* The two-level fit of this pass (fit_offsets), the first time a region's second look wants
 * it: where every first look stands (a big region's gap at once, most batches) it costs
 * nothing. Returns TS_OK or TS_ENOMEM. */
static int fit_two_level_offsets(fast *F)
{
    if (F->two_level_fitted)
        return TS_OK;
    F->two_level_work.two_level = F->two_level;
    long first = F->two_level_first;
    if (ts_fit_host_offsets_work(F->n, F->obs + first, F->nm - first, F->nreg, F->off_two, NULL,
                                 F->two_level_sweeps, F->depth > 0 ? F->prior : NULL,
                                 F->prior_w, NULL, &F->two_level_work) != 0)
        return TS_ENOMEM;
    F->two_level_fitted = 1;
    return TS_OK;
}

/* ---- step 3: the level gap ---- */

typedef struct pair_resid {
    double r;               /* the mean residual of the pair's measurements */
    long j;                 /* index into F->M of its first measurement */
    uint32_t first, n;      /* its measurements in the region's index (region_residuals) */
    int a, b;               /* the pair (as in F->M: the decisions read them in residual order) */
} pair_resid;

static int cmp_pair_resid(const void *x, const void *y)
{
    const pair_resid *a = x, *b = y;
    return a->r < b->r ? -1 : a->r > b->r ? 1 : (a->j > b->j) - (a->j < b->j);
}

/* A double's bits as an unsigned integer in the double's order (-0 as 0). */
static uint64_t order_bits(double r)
{
    uint64_t u;
    if (r == 0)
        r = 0;
    memcpy(&u, &r, sizeof u);
    return u >> 63 ? ~u : u | (uint64_t)1 << 63;
}

#define RUN_INSERTION_MAX 16 /* runs of equal sort keys this short are sorted by insertion */

/* x[0..n-1] in cmp_pair_resid's order (a total one: each pair has its own j, so any sort
 * gives the same order). The runs sort_pair_resid leaves are mostly of two or three pairs,
 * for which a qsort call cost more than the sort; insertion sorts them. */
static void sort_run(pair_resid *x, long n)
{
    if (n > RUN_INSERTION_MAX) {
        qsort(x, (size_t)n, sizeof *x, cmp_pair_resid);
        return;
    }
    for (long i = 1; i < n; i++) {
        pair_resid v = x[i];
        long p = i;
        for (; p > 0 && cmp_pair_resid(&x[p - 1], &v) > 0; p--)
            x[p] = x[p - 1];
        x[p] = v;
    }
}

typedef struct sort_key {
    uint32_t bits;          /* 32 bits of order_bits below those all share: the order, up to ties */
    uint32_t at;            /* the pair's place in the unsorted array */
} sort_key;

#define RADIX_BITS 11
#define RADIX_MIN 512       /* fewer pairs than this: qsort */

enum { RADIX_DIGITS = (32 + RADIX_BITS - 1) / RADIX_BITS, RADIX_BUCKETS = 1 << RADIX_BITS };

/* One more key's digits into the counts radix_sort passes over. */
static void radix_count(long (*count)[RADIX_BUCKETS], uint32_t bits)
{
    for (int d = 0; d < RADIX_DIGITS; d++)
        count[d][bits >> (d * RADIX_BITS) & (RADIX_BUCKETS - 1)]++;
}

/* key[0..n-1] in the order of their bits, keys alike in the order they came (stable): a
 * least-significant-digit radix sort, count holding their digits' counts (radix_count; it is
 * used up), tmp as many keys again. A digit every key shares is passed over (the sign and
 * exponent of residuals, mostly). Returns whichever of key and tmp holds the order. */
static sort_key *radix_sort(sort_key *key, sort_key *tmp, long n, long (*count)[RADIX_BUCKETS])
{
    for (int d = 0; d < RADIX_DIGITS; d++) {
        long *c = count[d], sum = 0;
        if (c[key[0].bits >> (d * RADIX_BITS) & (RADIX_BUCKETS - 1)] == n)
            continue;           /* every key has this digit alike */
        for (int b = 0; b < RADIX_BUCKETS; b++) {
            long here = c[b];
            c[b] = sum;
            sum += here;
        }
        for (long i = 0; i < n; i++)
            tmp[c[key[i].bits >> (d * RADIX_BITS) & (RADIX_BUCKETS - 1)]++] = key[i];
        sort_key *t = key;
        key = tmp;
        tmp = t;
    }
    return key;
}

/* Whether n elements are sorted by radix_sort: enough of them for it to pay (fewer: qsort),
 * and their positions within its 32 bits. */
static int radix_fits(long n)
{
    return n >= RADIX_MIN && n <= (long)UINT32_MAX;
}

/* A radix sort's buffers for n elements: the keys and their copy (W's scratch), their digits'
 * counts (zeroed, calloc'd: the caller frees them), and the elements' sorted copy (the
 * caller's scratch out, of elements of size bytes). */
typedef struct radix_buffers {
    sort_key *key, *tmp;
    long (*count)[RADIX_BUCKETS];
    void *sorted;
} radix_buffers;

/* Returns TS_OK, or TS_ENOMEM with nothing to free. */
static int radix_buffers_get(walk *W, long n, scratch *out, size_t size, radix_buffers *rb)
{
    rb->key = scratch_get(&W->sort_keys, sizeof *rb->key * (size_t)n);
    rb->tmp = scratch_get(&W->sort_tmp, sizeof *rb->tmp * (size_t)n);
    rb->sorted = scratch_get(out, size * (size_t)n);
    rb->count = rb->key && rb->tmp && rb->sorted ? calloc(RADIX_DIGITS, sizeof *rb->count) : NULL;
    return rb->count ? TS_OK : TS_ENOMEM;
}

/* The end of the run of keys alike in their bits that starts at key[i] (of n, sorted). */
static long run_end(const sort_key *key, long n, long i)
{
    long e = i + 1;
    while (e < n && key[e].bits == key[i].bits)
        e++;
    return e;
}

/* y[0..n-1] in cmp_pair_resid's order, into *sorted (y itself, or W->sort_out). Every
 * decision of every batch sorts its regions' pairs by residual, and the residuals move with
 * every offset fit, so the order is found afresh each time, in linear time (a comparison sort
 * of the big regions' hundreds of thousands of pairs was most of the method's time): a
 * least-significant-digit radix sort on 32 bits of the residuals' order, the highest that
 * differ among them (the sign and exponent are mostly the same for all: 3 passes over 8-byte
 * keys), then the pairs that share them put in the comparison's order. Returns TS_OK or
 * TS_ENOMEM. */
static int sort_pair_resid(walk *W, pair_resid *y, long n, pair_resid **sorted)
{
    *sorted = y;
    int nan = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (long i = 0; i < n && !nan; i++) {
        uint64_t bits = order_bits(y[i].r);
        lo = bits < lo ? bits : lo;
        hi = bits > hi ? bits : hi;
        nan = isnan(y[i].r);
    }
    int shared = 0;             /* leading bits all keys share, up to 32 */
    while (n > 0 && shared < 32 && !((lo ^ hi) >> (63 - shared) & 1))
        shared++;
    if (!radix_fits(n) || nan) {  /* (NaN has no place in the order) */
        qsort(y, (size_t)n, sizeof *y, cmp_pair_resid);
        return TS_OK;
    }
    radix_buffers rb;
    if (radix_buffers_get(W, n, &W->sort_out, sizeof *y, &rb) != TS_OK)
        return TS_ENOMEM;
    pair_resid *out = rb.sorted;
    for (long i = 0; i < n; i++) {
        rb.key[i] = (sort_key){(uint32_t)(order_bits(y[i].r) << shared >> 32), (uint32_t)i};
        radix_count(rb.count, rb.key[i].bits);
    }
    const sort_key *key = radix_sort(rb.key, rb.tmp, n, rb.count);
    free(rb.count);
    for (long i = 0; i < n; i++) {
        if (i + TS_PREFETCH_AHEAD < n)
            ts_prefetch(&y[key[i + TS_PREFETCH_AHEAD].at], 0);
        out[i] = y[key[i].at];
    }
    /* the runs of equal keys (residuals equal, or nearly) by the comparison */
    for (long i = 0, e; i < n; i = e)
        if ((e = run_end(key, n, i)) - i > 1)
            sort_run(out + i, e - i);
    *sorted = out;
    return TS_OK;
}

/* Kruskal forest over a small region's children (group_children): parent and rank by node. */
typedef struct forest {
    int *par, *rank;
} forest;

static int forest_root(const forest *K, int x)
{
    while (K->par[x] != x)
        x = K->par[x];
    return x;
}

/* When the pairs of a region's members became connected in the Kruskal pass over its pairs
 * in residual order. The components' member lists are concatenated as they join, the joining
 * edge's index kept at the seam; two members became connected at the highest seam between
 * them in the final order (the seams inside either list are older than the one that joined
 * the two, and later joins only add at the lists' ends). A sparse table of seam maxima answers
 * each pair in constant time, where climbing a union tree took a dozen steps at random. The
 * seams are 32 bits (a region's pairs are fewer than UINT32_MAX: region_residuals), which
 * halves the table its queries fall at random in (~0.4 MB for 8192 nodes, in L2). */
#define SEAM_NEVER UINT32_MAX   /* a seam never joined */

typedef struct join_order {
    int *uf, *head, *tail, *next, *pos;     /* per node */
    uint32_t *seam_after;                   /* per node: the seam after it in its list */
    uint32_t *seams;                        /* levels x nmem: seam maxima over 2^level seams */
    int nmem;
} join_order;

static int join_order_init(walk *W, join_order *J, int n, int nmem)
{
    int levels = 1;
    while ((1 << levels) < nmem)
        levels++;
    int *ints = scratch_get(&W->join_ints, sizeof(int) * 5 * (size_t)n);
    uint32_t *seams = scratch_get(&W->join_seams, sizeof(uint32_t) *
                                                      ((size_t)n + (size_t)levels * (size_t)nmem));
    if (!ints || !seams)
        return TS_ENOMEM;
    *J = (join_order){ints, ints + n, ints + 2 * n, ints + 3 * n, ints + 4 * n, seams, seams + n,
                      nmem};
    return TS_OK;
}

/* The pairs x[0..m-1] joined in order over the members mem[0..nmem-1]; merges[j + 1] counts
 * the joins among the first j + 1 pairs. Then the members in list order and the seam table. */
static void join_in_order(join_order *J, const int *mem, int nmem, const pair_resid *x, long m,
                          long *merges)
{
    for (int i = 0; i < nmem; i++) {
        int v = mem[i];
        J->uf[v] = J->head[v] = J->tail[v] = v;
        J->next[v] = -1;
        J->seam_after[v] = SEAM_NEVER;
    }
    for (long j = 0; j < m; j++) {
        int a = ts_uf_find(J->uf, x[j].a), b = ts_uf_find(J->uf, x[j].b);
        merges[j + 1] = merges[j] + (a != b);
        if (a == b)
            continue;
        J->next[J->tail[a]] = J->head[b];
        J->seam_after[J->tail[a]] = (uint32_t)j;
        int root = a < b ? a : b;
        J->uf[a < b ? b : a] = root;
        J->head[root] = J->head[a];
        J->tail[root] = J->tail[b];
    }
    /* the lists one after another (between two, a seam never joined) */
    uint32_t *level0 = J->seams;
    int p = 0;
    for (int i = 0; i < nmem; i++) {
        if (J->uf[mem[i]] != mem[i])
            continue;
        for (int v = J->head[mem[i]]; v >= 0; v = J->next[v]) {
            J->pos[v] = p;
            level0[p++] = J->seam_after[v];
        }
    }
    for (int lv = 1; (1 << lv) < nmem; lv++) {
        uint32_t *below = J->seams + (size_t)(lv - 1) * (size_t)nmem, *here = below + nmem;
        for (int i = 0; i + (1 << lv) <= nmem; i++)
            here[i] = below[i] > below[i + (1 << (lv - 1))] ? below[i] : below[i + (1 << (lv - 1))];
    }
}

/* The two entries of the seam table whose maximum is the seam at which a and b became
 * connected: of the level whose spans of 2^level seams cover their positions' distance. */
typedef struct seam_span {
    const uint32_t *left, *right;
} seam_span;

static inline seam_span seam_entries(const join_order *J, int a, int b)
{
    int lo = J->pos[a] < J->pos[b] ? J->pos[a] : J->pos[b];
    int hi = J->pos[a] < J->pos[b] ? J->pos[b] : J->pos[a];
    int lv = hi > lo ? 31 - __builtin_clz((unsigned)(hi - lo)) : 0;     /* floor(log2) */
    const uint32_t *row = J->seams + (size_t)lv * (size_t)J->nmem;
    return (seam_span){&row[lo], &row[hi - (1 << lv)]};
}

/* Asks the cache for the entries connected_at(J, a, b) reads (ts_prefetch): the table is
 * read at random, a pair at a time. */
static inline void prefetch_connected_at(const join_order *J, int a, int b)
{
    seam_span s = seam_entries(J, a, b);
    ts_prefetch(s.left, 0);
    ts_prefetch(s.right, 0);
}

/* The edge index at which a and b became connected (LONG_MAX: never). */
static inline long connected_at(const join_order *J, int a, int b)
{
    seam_span s = seam_entries(J, a, b);
    uint32_t seam = *s.left > *s.right ? *s.left : *s.right;
    return seam == SEAM_NEVER ? LONG_MAX : (long)seam;
}

typedef struct level_gap {
    long k;                 /* pairs [0, k) near, [k + t, m) far; 0: no consistent cut */
    long t;                 /* stragglers inside the gap */
    int significant;        /* the gap is too wide to be chance (gap_margin) */
    double margin;          /* pairs a single class would have put into the gap */
    double threshold;       /* the margin that is significant */
    double gap_us, far_lo, far_hi;
} level_gap;

/* The evidence of a gap between x[k - 1] (the near class's top) and x[k + t] (the far class's
 * bottom) with t stragglers inside it: a single class spaced as the two classes are at the
 * gap's edges (the mean spacing of the EDGE_PAIRS residuals on each side, averaged: under one
 * class the gap would sit in its tail, as sparse as the sparser side) would have put c pairs
 * into it. The spacings of a sample's order statistics are about exponential, so holding t
 * pairs or fewer where c were due has probability about exp(-c) c^t / t!, whatever the shape
 * of the noise further out; the margin is minus its logarithm. Both sides need EDGE_MIN - 1
 * spacings at least (fewer vary too much to stand for a density). */
static double gap_margin(const pair_resid *x, long k, long t, long m)
{
    long far = k + t;
    long qf = m - far - 1 < EDGE_PAIRS ? m - far - 1 : EDGE_PAIRS;
    long qn = k - 1 < EDGE_PAIRS ? k - 1 : EDGE_PAIRS;
    if (qf < EDGE_MIN || qn < 2)
        return 0;
    double g = x[far].r - x[k - 1].r;
    double spacing = 0.5 * ((x[far + qf].r - x[far].r) / (double)qf +
                            (x[k - 1].r - x[k - 1 - qn].r) / (double)qn);
    /* in a small region the edges hold few pairs: no denser than the region's pairs are on
     * average outside the gap */
    double rest = x[m - 1].r - x[0].r - g;
    if (m - 2 - t > 0 && rest / (double)(m - 2 - t) > spacing)
        spacing = rest / (double)(m - 2 - t);
    double c = g / (spacing + 1e-9);
    return c - (double)t * log(c > 1 ? c : 1) + lgamma((double)t + 1);
}

/* The widest consistent cut of x[0..m-1] (sorted) among the nmem members (see the header). */
static level_gap find_level_gap(const fast *F, walk *W, const int *mem, int nmem,
                                const pair_resid *x, long m)
{
    level_gap best = {0, 0, 0, 0, INFINITY, NAN, NAN, NAN};
    if (m < 3)
        return best;
    join_order J;
    long *merges = scratch_get(&W->gap, sizeof(long) * (size_t)(3 * m + 3)); /* merges, viol, conn */
    if (!merges || join_order_init(W, &J, F->n, nmem) != TS_OK)
        return best;
    memset(merges, 0, sizeof(long) * (size_t)(3 * m + 3));
    long *viol = merges + m + 1;
    join_in_order(&J, mem, nmem, x, m, merges);
    /* edge j violates every cut k with connected_at(j) < k <= j (a far pair inside a child) */
    long *conn = viol + m + 1;
    for (long j = 0; j < m; j++) {
        if (j + TS_PREFETCH_AHEAD < m)
            prefetch_connected_at(&J, x[j + TS_PREFETCH_AHEAD].a, x[j + TS_PREFETCH_AHEAD].b);
        long c = connected_at(&J, x[j].a, x[j].b);
        conn[j] = c;
        if (c < j) {
            viol[c + 1]++;
            viol[j + 1]--;
        }
    }
    for (long j = 1; j <= m; j++)
        viol[j] += viol[j - 1];
    /* Cut k with t stragglers: [0, k) near, [k + t, m) far, the t between them in the gap (a
     * near pair whose samples all fell in the jitter's tail), neither. For each t, the
     * CUT_CANDIDATES widest consistent gaps (found for every t in one pass over the cuts: the
     * arrays of a big region's pairs are megabytes, read once rather than once per t), then
     * their margins. */
    double threshold = log((double)m) - log(FALSE_SPLIT);
    long cands[STRAGGLERS + 1][CUT_CANDIDATES];
    int ncands[STRAGGLERS + 1] = {0};
    for (long k = 1; k < m - 1; k++) {
        if (nmem - merges[k] < 2)
            continue;
        long bad = viol[k];
        for (long t = 0; t <= STRAGGLERS && k + t < m - 1; t++) {
            if (t > 0)
                bad -= conn[k + t - 1] < k;
            if (bad > 1 + (long)(CUT_OUTLIERS * (double)(m - k - t)))
                continue;
            long *cand = cands[t];
            double g = x[k + t].r - x[k - 1].r;
            int at = ncands[t] < CUT_CANDIDATES ? ncands[t]++ : CUT_CANDIDATES;
            while (at > 0 && x[cand[at - 1] + t].r - x[cand[at - 1] - 1].r < g) {
                if (at < CUT_CANDIDATES)
                    cand[at] = cand[at - 1];
                at--;
            }
            if (at < CUT_CANDIDATES)
                cand[at] = k;
        }
    }
    for (long t = 0; t <= STRAGGLERS; t++) {
        const long *cand = cands[t];
        int nc = ncands[t];
        for (int c = 0; c < nc; c++) {
            long k = cand[c], f = k + t;
            double g = x[f].r - x[k - 1].r, margin = gap_margin(x, k, t, m);
            /* the region splits at its top level: of the significant gaps the highest (a
             * region of pods of leaves shows both levels; the pods come first), otherwise
             * the widest, for the report */
            int sig = margin >= threshold, best_sig = best.margin >= threshold;
            if (sig != best_sig ? !sig : sig ? f <= best.k + best.t : margin <= best.margin)
                continue;
            /* the far band ends at Tukey's far-out fence (upper quartile + 3 interquartile
             * ranges), widened by the gap: a pair beyond it is an outlier, not evidence */
            double q1 = x[f + (m - f) / 4].r, q3 = x[f + 3 * (m - f) / 4].r;
            best = (level_gap){k, t, 0, margin, 0, g, x[f].r, q3 + 3 * (q3 - q1) + g};
        }
    }
    /* significant: a chance gap so wide, at the widest of m places, has probability below
     * FALSE_SPLIT (the widest of m exponential spacings exceeds the mean by ~ln m) */
    best.threshold = threshold;
    best.significant = best.k > 0 && best.margin >= threshold;
    return best;
}

/* ---- step 4: decide ---- */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The mean square of x[0..n-1] with the LOF_TRIM share of the largest left out (the sum of
 * the rest over n): a testbed's stack or a real host now and then holds a round trip for tens
 * of us, which would swamp a plain mean square, while a median's scale wastes most of the
 * data (the variance of its log is 2.7 times a mean square's, this one's 1.16 times).
 * Overwrites x. */
static double trimmed_mean_square(double *x, long n)
{
    for (long i = 0; i < n; i++)
        x[i] = x[i] * x[i];
    long keep = n - (long)(LOF_TRIM * (double)n);
    if (keep < n)
        qsort(x, (size_t)n, sizeof *x, cmp_double);
    double sum = 0;
    for (long i = 0; i < keep; i++)
        sum += x[i];
    return sum / (double)n;
}

/* E[X^2; |X| <= t] for X normal with mean mu and sd 1. */
static double square_within(double mu, double t)
{
    double a = -t - mu, b = t - mu;
    double pa = exp(-0.5 * a * a) / sqrt(2 * M_PI), pb = exp(-0.5 * b * b) / sqrt(2 * M_PI);
    double mass = 0.5 * (erfc(-b / M_SQRT2) - erfc(-a / M_SQRT2));
    return (1 + mu * mu) * mass + 2 * mu * (pa - pb) + a * pa - b * pb;
}

/* What trimmed_mean_square expects of X, a pair's deviation from a star's fit in noise units
 * when a share p of the pairs sits s lower than the rest (a hidden level: its near pairs; the
 * offsets take the mean, so near pairs sit at -s (1 - p), far ones at s p), the noise standard
 * normal: E[X^2; |X| <= t], t leaving out the LOF_TRIM share. (p = s = 0: a star's.) */
static double trimmed_normal_square(double p, double s)
{
    double a = -s * (1 - p), b = s * p, lo = 0, hi = s + 10;
    for (int it = 0; it < 60; it++) {
        double t = 0.5 * (lo + hi);
        double out = p * 0.5 * (erfc((t - a) / M_SQRT2) + erfc((t + a) / M_SQRT2)) +
                     (1 - p) * 0.5 * (erfc((t - b) / M_SQRT2) + erfc((t + b) / M_SQRT2));
        if (out > LOF_TRIM)
            lo = t;
        else
            hi = t;
    }
    double t = 0.5 * (lo + hi);
    return p * square_within(a, t) + (1 - p) * square_within(b, t);
}

/* Whether the pairs of a region without a gap fit a star: each pair's mean against the model
 * mean = o[a] + o[b] (every host its own offset, fitted here, weighted by the pair's count of
 * measurements), with the noise measured by the pairs measured more than once (pure error:
 * each measurement against its pair's mean, cnt - 1 degrees of freedom a pair), both as
 * trimmed mean squares. Every measurement counts, so each cycle of a tournament adds power
 * (the test took a pair's first two alone before: over IPoIB a leaf of 8 stayed unpowered at
 * 3, 6 and 12 samples per pair and its depth doubled up to 24). A level hidden
 * in the noise leaves structure a star cannot fit. Mean squares, unlike medians' scales, have
 * the same expectation whatever the noise's shape: over kernel UDP's skewed noise the median
 * of a fit's deviations sat above the pure error's for a star (z scores centred at 0.7, not
 * 0); and the test's standard error is their log's (LOF_LOGVAR). Over the leaves of 1024
 * nodes (6 runs on each profile) the z scores of stars spread 0.94-1.00 around 0.1-0.25 and
 * 0-0.65 % passed LOF_Z; on medians' scales they spread 1.5-1.6 and 2.4-6.3 % did: a false
 * alarm doubles the samples of every leaf still open, and one at the last doubling leaves the
 * leaf unresolved (1024 nodes over IPoIB: 3 runs in 100 partial, 7-9 s). Returns
 * the lack of fit as a z score of the log variance ratio (NAN when it cannot be told); x lists
 * the region's measurements in pair order (region_residuals), pairs with a dead node left out
 * here. */
static double level_lack_of_fit(fast *F, const int *mem, int nmem, const indexed_meas *x,
                                long m, star_fit *sf)
{
    *sf = (star_fit){NAN, NAN, NAN, nmem, STAR_CHILD, 0, 0};
    double *o = calloc((size_t)nmem, sizeof(double)), *pm = malloc(sizeof(double) * (size_t)(m + 1));
    int *pa = malloc(sizeof(int) * (size_t)(3 * m + 3));
    double *num = calloc((size_t)nmem, sizeof(double)), *den = calloc((size_t)nmem, sizeof(double));
    double *dev = malloc(sizeof(double) * (size_t)(m + 1));
    double z = NAN;
    if (!o || !pm || !pa || !num || !den || !dev)
        goto out;
    for (int i = 0; i < nmem; i++)
        F->local[mem[i]] = i;
    long P = 0, ndev = 0, Prep = 0;
    for (long j = 0; j < m;) {
        const meas *u = &F->M[x[j].j];
        long e = j + 1;
        while (e < m && x[e].key == x[j].key)
            e++;
        if (!F->dead[u->a] && !F->dead[u->b] && ts_uf_find(F->uf, u->a) != ts_uf_find(F->uf, u->b)) {
            /* (about the first: a pair measured alike every time deviates by exactly 0) */
            double sum = 0;
            for (long q = j; q < e; q++)
                sum += F->M[x[q].j].v - u->v;
            long cnt = e - j;
            double shift = sum / (double)cnt;
            pm[P] = u->v + shift;
            pa[3 * P] = F->local[u->a];
            pa[3 * P + 1] = F->local[u->b];
            pa[3 * P + 2] = (int)cnt;               /* measurements behind the mean */
            /* each measurement's deviation from its pair's mean, on one measurement's scale
             * (cnt - 1 degrees of freedom) */
            double scale = cnt > 1 ? sqrt((double)cnt / (double)(cnt - 1)) : 0;
            for (long q = j; q < e && cnt > 1; q++)
                dev[ndev++] = (F->M[x[q].j].v - u->v - shift) * scale;
            Prep += cnt - 1;
            P++;
        }
        j = e;
    }
    /* both scales as trimmed mean squares (trimmed_mean_square), on one measurement's scale */
    double pure_ms = Prep >= 2 ? trimmed_mean_square(dev, ndev) : 0;
    if (P <= nmem || Prep < 2 || !(pure_ms > 0))
        goto out;
    /* the fit: damped Jacobi sweeps (plain ones swing on a complete graph) */
    for (int sweep = 0; sweep < 40; sweep++) {
        memset(num, 0, sizeof(double) * (size_t)nmem);
        memset(den, 0, sizeof(double) * (size_t)nmem);
        for (long q = 0; q < P; q++) {
            int a = pa[3 * q], b = pa[3 * q + 1], w = pa[3 * q + 2];
            num[a] += w * (pm[q] - o[b]);
            num[b] += w * (pm[q] - o[a]);
            den[a] += w;
            den[b] += w;
        }
        for (int i = 0; i < nmem; i++)
            if (den[i] > 0)
                o[i] = 0.5 * (o[i] + num[i] / den[i]);
    }
    double rootw = 0;
    for (long q = 0; q < P; q++) {  /* on one measurement's scale */
        dev[q] = (pm[q] - o[pa[3 * q]] - o[pa[3 * q + 1]]) * sqrt((double)pa[3 * q + 2]);
        rootw += sqrt((double)pa[3 * q + 2]) / (double)P;
    }
    /* a fit's residuals are smaller than its errors by sqrt(dof / P) */
    double dof = (double)(P - nmem);
    double fit_ms = trimmed_mean_square(dev, P) * (double)P / dof;
    double ratio = fit_ms / pure_ms;
    *sf = (star_fit){sqrt(pure_ms / trimmed_normal_square(0, 0)),
                     sqrt(LOF_LOGVAR / dof + LOF_LOGVAR / (double)Prep), rootw * rootw, nmem,
                     STAR_CHILD, (double)P, (double)Prep};
    if (ratio > 0)
        z = log(ratio) / sf->se;
out:
    free(o);
    free(pm);
    free(pa);
    free(num);
    free(den);
    free(dev);
    return z;
}

/* How far the lack-of-fit test's log ratio clears what it needs for STAR_POWER, had the
 * region's nodes hung in children of sf->child below a level of s noise units (>= 0: seen). */
static double star_power_margin(const star_fit *sf, double s)
{
    int nmem = sf->nmem;
    double c = sf->child, rest = nmem % sf->child;
    double near = floor(nmem / c) * c * (c - 1) / 2 + rest * (rest - 1) / 2;
    double p = near / (0.5 * nmem * (nmem - 1));
    double need = (LOF_Z + ts_normal_quantile(STAR_POWER)) * sf->se;
    return log(trimmed_normal_square(p, s) / trimmed_normal_square(0, 0)) - need;
}

/* Whether the star's test would have seen a level of step_us with probability STAR_POWER:
 * star_resolution(sf) <= step_us, without working the resolution out. */
static int star_sees(const star_fit *sf, double step_us)
{
    if (sf->nmem < 2 * sf->child)
        return 1;    /* below the method's floor: the one tree it can report */
    if (!(sf->pure > 0) || !isfinite(sf->se) || !(sf->wbar > 0))
        return 0;
    return star_power_margin(sf, step_us * sqrt(sf->wbar) / sf->pure) >= 0;
}

/* Whether the star's test would see a level of step_us with probability STAR_POWER once every
 * pair had grow times the measurements it has (more cycles of its tournament at the same
 * samples per pair): the pure error's degrees of freedom grow with them, the fit's stay. */
static int star_would_see(const star_fit *sf, double step_us, double grow)
{
    star_fit more = *sf;
    double reps = (sf->pairs + sf->reps) * grow - sf->pairs;
    more.wbar = sf->wbar * grow;
    more.se = sqrt(LOF_LOGVAR / (sf->pairs - sf->nmem) + LOF_LOGVAR / reps);
    return reps > 0 && sf->pairs > sf->nmem && star_sees(&more, step_us);
}

/* A star's resolution: the level step, us, that level_lack_of_fit would have found with
 * probability STAR_POWER in these data, had the region's nodes hung below it in children of
 * STAR_CHILD (the least a gap shows; a level of bigger children shows more). Its z score is
 * about normal with the standard error sf->se around the log ratio of the fit's mean square
 * (trimmed_normal_square of the mixture above) to the noise's. A region
 * too small for two such children returns NAN (below the method's floor: EDGE_MIN); one whose
 * noise could not be measured, INFINITY. */
static double star_resolution(const star_fit *sf, resolution_memo *memo)
{
    if (sf->nmem < 2 * sf->child || sf->child < 2)
        return NAN;
    if (!(sf->pure > 0) || !isfinite(sf->se) || !(sf->wbar > 0))
        return INFINITY;
    if (sf->nmem != memo->nmem || sf->child != memo->child || sf->se != memo->se) {
        double lo = 0, hi = 1;
        while (star_power_margin(sf, hi) < 0 && hi < 1e6)
            hi *= 2;
        for (int it = 0; it < 50; it++) {
            double s = 0.5 * (lo + hi);
            if (star_power_margin(sf, s) < 0)
                lo = s;
            else
                hi = s;
        }
        *memo = (resolution_memo){sf->nmem, sf->child, sf->se, hi};
    }
    return memo->noise_units * sf->pure / sqrt(sf->wbar);
}

typedef struct keyed_resid {
    uint64_t key;           /* the pair of children (pair_key of their fragments' roots) */
    double r;
} keyed_resid;

static int cmp_keyed_resid(const void *x, const void *y)
{
    const keyed_resid *a = x, *b = y;
    return a->key < b->key ? -1 : a->key > b->key;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The first of key[0..n) (sorted) not below k, or n. */
static long first_not_below(const uint64_t *key, long n, uint64_t k)
{
    long lo = 0, hi = n;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (key[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* How many of key[0..n) (sorted) equal k (k below UINT64_MAX). */
static long count_key(const uint64_t *key, long n, uint64_t k)
{
    return first_not_below(key, n, k + 1) - first_not_below(key, n, k);
}

static int cmp_int(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

typedef struct loaded_meas {
    int a, b;               /* the nodes' positions in the region (sorted members) */
    double v;               /* the round trip */
    double load;            /* the flows beside it on its children's uplinks */
} loaded_meas;

/* A split region's far pairs freed of their hosts' offsets and of their rounds' load
 * (load_free_far_pairs): one residual per node pair, and what the fit spent on them. */
typedef struct load_free {
    pair_resid *pairs;      /* malloc'd */
    long n;
    long fitted;            /* the joint fit's parameters besides the level: the offsets of
                             * the nodes it fitted, and the slope */
} load_free;

#define LOAD_FIT_SWEEPS 100       /* the joint fit's sweeps at most (load_free_far_pairs) ... */
#define LOAD_FIT_TOLERANCE_US 1e-4 /* ... ended once no offset moves by more: far below any
                                    * noise, a numerical bound only */

/* The far pairs of a split region (y[far..np) of its pairs y[0..np), x its index), each the
 * mean of its measurements freed of their hosts' offsets and of the load they met, in *lf
 * (pairs inside one child and outliers above the band left out).
 *
 * Why: the rounds do not load every pair of children alike (once some are known apart the
 * plan tests the others; a round of the tournament pairs children its own way), and a round
 * trip grows with the flows beside it on the uplinks it crosses: the other pairs of its round
 * with one end in either of its children (a pair inside one child uses none). The offsets,
 * fitted without that load, took up each node's mean share of it, and what is left sets
 * pairs of children apart by more than a level (4 leaves of 16 nodes, 1 us per flow: two
 * pairs of children 7 us below the other four, grouped into a switch the fabric does not
 * have). So the region's far measurements are fitted again, jointly: a round trip is its two
 * hosts' offsets plus one level plus a slope times its load (least squares, by alternating
 * updates from the offsets fitted before), which is what the children's pairs are compared
 * on when the level is one (a star's far pairs); a level between the children shows as
 * before, in the means of the pairs of children. */
static int load_free_far_pairs(fast *F, const indexed_meas *x, const pair_resid *y, long np,
                               long far, double far_hi, const int *mem, int nmem, load_free *lf)
{
    long nk = 0, nm = 0;
    for (long i = 0; i < np; i++)
        if (ts_uf_find(F->uf, y[i].a) != ts_uf_find(F->uf, y[i].b)) {
            nk += 2 * (long)y[i].n;
            nm += i >= far && y[i].r <= far_hi ? (long)y[i].n : 0;
        }
    uint64_t *key = malloc(sizeof *key * (size_t)(nk + 1));
    loaded_meas *lm = malloc(sizeof *lm * (size_t)(nm + 1));
    int *pos = malloc(sizeof *pos * (size_t)(nmem + 1));
    double *off = malloc(sizeof *off * (size_t)(nmem + 1));
    long *cnt = malloc(sizeof *cnt * (size_t)(nmem + 1));
    pair_resid *z = malloc(sizeof *z * (size_t)(np - far + 1));
    if (!key || !lm || !pos || !off || !cnt || !z) {
        free(key), free(lm), free(pos), free(off), free(cnt), free(z);
        return TS_ENOMEM;
    }
    /* 1. the crossing measurements of every round, by (round, child) */
    nk = 0;
    for (long i = 0; i < np; i++) {
        uint64_t ra = (uint64_t)ts_uf_find(F->uf, y[i].a), rb = (uint64_t)ts_uf_find(F->uf, y[i].b);
        if (ra == rb)
            continue;
        for (uint32_t e = 0; e < y[i].n; e++) {
            uint64_t round = (uint64_t)F->M[x[y[i].first + e].j].round << 32;
            key[nk++] = round | ra;
            key[nk++] = round | rb;
        }
    }
    qsort(key, (size_t)nk, sizeof *key, cmp_u64);
    /* 2. each far measurement's load */
    memcpy(pos, mem, sizeof *pos * (size_t)nmem);
    qsort(pos, (size_t)nmem, sizeof *pos, cmp_int);
    nm = 0;
    for (long i = far; i < np; i++) {
        uint64_t ra = (uint64_t)ts_uf_find(F->uf, y[i].a), rb = (uint64_t)ts_uf_find(F->uf, y[i].b);
        if (ra == rb || y[i].r > far_hi)
            continue;
        int a = (int)((int *)bsearch(&y[i].a, pos, (size_t)nmem, sizeof *pos, cmp_int) - pos);
        int b = (int)((int *)bsearch(&y[i].b, pos, (size_t)nmem, sizeof *pos, cmp_int) - pos);
        for (uint32_t e = 0; e < y[i].n; e++) {
            const meas *q = &F->M[x[y[i].first + e].j];
            uint64_t round = (uint64_t)q->round << 32;
            lm[nm++] = (loaded_meas){a, b, q->v,
                                     (double)(count_key(key, nk, round | ra) +
                                              count_key(key, nk, round | rb) - 2)};
        }
    }
    /* 3. offsets, level and slope, jointly: Gauss-Seidel over the nodes (each node's
     * measurements through adj, CSR), the level and slope refitted between sweeps */
    for (int p = 0; p <= nmem; p++)
        cnt[p] = 0;
    for (long j = 0; j < nm; j++)
        cnt[lm[j].a + 1]++, cnt[lm[j].b + 1]++;
    for (int p = 0; p < nmem; p++)
        cnt[p + 1] += cnt[p];
    long *adj = malloc(sizeof *adj * (size_t)(2 * nm + 1));
    long *fill = malloc(sizeof *fill * (size_t)(nmem + 1));
    if (!adj || !fill) {
        free(adj), free(fill), free(key), free(lm), free(pos), free(off), free(cnt), free(z);
        return TS_ENOMEM;
    }
    memcpy(fill, cnt, sizeof *fill * (size_t)nmem);
    for (long j = 0; j < nm; j++)
        adj[fill[lm[j].a]++] = j, adj[fill[lm[j].b]++] = j;
    double level = 0, slope = 0;
    for (int p = 0; p < nmem; p++)
        off[p] = F->off[pos[p]];
    for (int it = 0; it < LOAD_FIT_SWEEPS && nm > 0; it++) {
        double su = 0, sl = 0, sll = 0, sul = 0;
        for (long j = 0; j < nm; j++) {
            double u = lm[j].v - off[lm[j].a] - off[lm[j].b];
            su += u, sl += lm[j].load, sll += lm[j].load * lm[j].load, sul += u * lm[j].load;
        }
        double varl = sll - sl * sl / (double)nm;
        slope = varl > 1e-9 ? (sul - su * sl / (double)nm) / varl : 0;
        level = (su - slope * sl) / (double)nm;
        double moved = 0;
        for (int p = 0; p < nmem; p++) {
            if (cnt[p + 1] == cnt[p])
                continue;
            double sum = 0;
            for (long t = cnt[p]; t < cnt[p + 1]; t++) {
                const loaded_meas *q = &lm[adj[t]];
                sum += q->v - off[q->a == p ? q->b : q->a] - level - slope * q->load;
            }
            double o = sum / (double)(cnt[p + 1] - cnt[p]);
            moved = fmax(moved, fabs(o - off[p]));
            off[p] = o;
        }
        if (moved < LOAD_FIT_TOLERANCE_US)
            break;
    }
    /* 4. each far pair's mean, freed of all three */
    long nz = 0, j = 0;
    for (long i = far; i < np; i++) {
        if (ts_uf_find(F->uf, y[i].a) == ts_uf_find(F->uf, y[i].b) || y[i].r > far_hi)
            continue;
        double sum = 0;
        for (uint32_t e = 0; e < y[i].n; e++, j++)
            sum += lm[j].v - off[lm[j].a] - off[lm[j].b] - level - slope * lm[j].load;
        z[nz] = y[i];
        z[nz++].r = sum / (double)y[i].n;
    }
    long fitted = 1;
    for (int p = 0; p < nmem; p++)
        fitted += cnt[p + 1] > cnt[p];
    free(adj), free(fill), free(key), free(lm), free(pos), free(off), free(cnt);
    *lf = (load_free){z, nz, fitted};
    return TS_OK;
}

typedef struct child_pair {
    int ra, rb;             /* the two children (their fragments' roots) */
    double mean;            /* the mean far residual of their node pairs */
    double n;               /* how many node pairs */
    double se;              /* the mean's standard error (group_children) */
} child_pair;

/* A split region's load-free far pairs (lf, load_free_far_pairs) by pair of children: their
 * means and counts in *cpp (*ncp of them, malloc'd), how many node pairs in *npairs, their
 * squared deviations from their own pair of children's mean in *within and its degrees of
 * freedom in *dof: the node pairs less the means, and less the joint fit's offsets and slope
 * but for one offset per child (a child's offsets all shifted one way and its pairs' means the
 * other fit alike). Returns TS_OK or TS_ENOMEM. */
static int collect_child_pairs(fast *F, const load_free *lf, child_pair **cpp, long *ncp,
                               long *npairs, double *within, double *dof)
{
    const pair_resid *y = lf->pairs;
    long n = lf->n;
    keyed_resid *g = malloc(sizeof *g * (size_t)(n + 1));
    child_pair *cp = malloc(sizeof *cp * (size_t)(n + 1));
    if (!g || !cp) {
        free(g);
        free(cp);
        return TS_ENOMEM;
    }
    long N = 0, G = 0;
    for (long i = 0; i < n; i++)
        g[N++] = (keyed_resid){pair_key(ts_uf_find(F->uf, y[i].a), ts_uf_find(F->uf, y[i].b)), y[i].r};
    qsort(g, (size_t)N, sizeof *g, cmp_keyed_resid);
    *within = 0;
    for (long i = 0; i < N;) {
        long e = i;
        double sum = 0;
        while (e < N && g[e].key == g[i].key)
            sum += g[e++].r;
        double gm = sum / (double)(e - i);
        for (long k = i; k < e; k++)
            *within += (g[k].r - gm) * (g[k].r - gm);
        uint64_t key = g[i].key - 1;
        cp[G++] = (child_pair){(int)(key & 0xffffffffu), (int)(key >> 32), gm, (double)(e - i), 0};
        i = e;
    }
    /* the children: every root of a pair of children, counted once */
    int *child = (int *)g;   /* (g's room suffices: 2 G ints in N keyed_resid) */
    long C = 0;
    for (long i = 0; i < G; i++)
        child[C++] = cp[i].ra, child[C++] = cp[i].rb;
    qsort(child, (size_t)C, sizeof *child, cmp_int);
    long children = 0;
    for (long i = 0; i < C; i++)
        children += i == 0 || child[i] != child[i - 1];
    free(g);
    *cpp = cp;
    *ncp = G;
    *npairs = N;
    *dof = (double)(N - G) - (double)(lf->fitted > children ? lf->fitted - children : 0);
    return TS_OK;
}

/* Whether the pairs of children of a split small region differ beyond the spread of the node
 * pairs within one pair of children (one-way analysis of variance): children that form a star
 * under the switch have far pairs alike whichever two they join. Returns the variance ratio's
 * log as a z score (NAN when it cannot be told). A region whose children neither group
 * significantly (group_children) nor look alike here stays unresolved: a level between them
 * may hide in the noise. */
static double child_pairs_vary(fast *F, const load_free *lf)
{
    child_pair *cp;
    long G, N;
    double within, dof;
    if (collect_child_pairs(F, lf, &cp, &G, &N, &within, &dof) != TS_OK)
        return NAN;
    double mean = 0, between = 0;
    for (long i = 0; i < G; i++)
        mean += cp[i].n * cp[i].mean;
    mean /= N > 0 ? (double)N : 1;
    for (long i = 0; i < G; i++)
        between += cp[i].n * (cp[i].mean - mean) * (cp[i].mean - mean);
    free(cp);
    if (G < 3 || dof < 2 || !(within > 0))
        return NAN;
    double d1 = (double)(G - 1), d2 = dof, ratio = (between / d1) / (within / d2);
    return ratio > 0 ? log(ratio) / sqrt(2 / d1 + 2 / d2) : NAN;
}

static int cmp_child_pair(const void *x, const void *y)
{
    const child_pair *a = x, *b = y;
    return a->mean < b->mean ? -1 : a->mean > b->mean;
}

/* Whether a split small region's children group below its switch: a level between them whose
 * gap was not significant among single pairs (its pairs spread with the rounds' load) shows
 * among pairs of children, each the mean of all its node pairs. The children pairs in order of
 * their means; a cut is consistent when no pair above it joins children that pairs below it
 * already group (the Kruskal pass of find_level_gap, on children); its margin is the step at
 * the cut in standard errors (the node pairs' spread within a pair of children, pooled). The
 * widest consistent one groups the children (F->grp, on their roots) when its margin beats
 * chance among the cuts tried (a Gaussian tail at FALSE_SPLIT). Returns the margin (NAN when
 * there is too little to tell), *grouped 1 when it is significant. */
static double group_children(fast *F, forest *K, const load_free *lf, int *grouped)
{
    *grouped = 0;
    child_pair *cp = NULL;
    long G = 0, N = 0;
    double within = 0, dof = 0, best = NAN;
    if (collect_child_pairs(F, lf, &cp, &G, &N, &within, &dof) != TS_OK)
        return NAN;
    if (G < 3 || dof < 2 || !(within > 0))
        goto out;
    double pooled = within / dof;
    for (long i = 0; i < G; i++)
        cp[i].se = sqrt(pooled / cp[i].n);
    qsort(cp, (size_t)G, sizeof *cp, cmp_child_pair);
    /* Kruskal over the children: cut k is consistent when no pair from k on joins children
     * the pairs below k connect, and it leaves two groups at least */
    for (long i = 0; i < G; i++) {
        K->par[cp[i].ra] = cp[i].ra;
        K->par[cp[i].rb] = cp[i].rb;
        K->rank[cp[i].ra] = K->rank[cp[i].rb] = 0;
    }
    long bestk = 0, groups = 0;
    for (long i = 0; i < G; i++)
        groups += K->par[cp[i].ra] == cp[i].ra && K->rank[cp[i].ra]++ == 0;
    for (long i = 0; i < G; i++)
        groups += K->par[cp[i].rb] == cp[i].rb && K->rank[cp[i].rb]++ == 0;
    for (long i = 0; i < G; i++)
        K->rank[cp[i].ra] = K->rank[cp[i].rb] = 0;
    for (long k = 1; k < G; k++) {
        int a = forest_root(K, cp[k - 1].ra), b = forest_root(K, cp[k - 1].rb);
        if (a != b) {
            K->par[b] = a;
            groups--;
        }
        int consistent = groups >= 2;
        for (long j = k; j < G && consistent; j++)
            consistent = forest_root(K, cp[j].ra) != forest_root(K, cp[j].rb);
        if (!consistent)
            continue;
        double t = (cp[k].mean - cp[k - 1].mean) /
                   sqrt(cp[k].se * cp[k].se + cp[k - 1].se * cp[k - 1].se);
        if (!(t <= best)) {
            best = t;
            bestk = k;
        }
    }
    /* significant: beyond a Gaussian tail of FALSE_SPLIT spread over the cuts tried */
    if (bestk > 0 && best >= sqrt(2 * log((double)G / FALSE_SPLIT))) {
        *grouped = 1;
        for (long i = 0; i < G; i++)
            F->grp[cp[i].ra] = cp[i].ra, F->grp[cp[i].rb] = cp[i].rb;
        for (long i = 0; i < bestk; i++)
            ts_uf_union(F->grp, cp[i].ra, cp[i].rb);
    }
out:
    free(cp);
    return best;
}

/* The region's measurements at the current samples per pair are its index's, grouped by pair
 * (*atp, *mp of them); one residual per pair, their mean, in residual order (y; y[i].first is
 * the position in *atp of the pair's first measurement, y[i].n their count, a pair with a
 * node that died left out): the gap is looked for among pairs, a pair measured twice
 * (tournaments) counting once. The residuals are summed straight from the index: a copy of
 * every measurement's was written and read again for each decision. */
static int region_residuals(fast *F, walk *W, int r, const indexed_meas **atp, long *mp,
                            pair_resid **yp, long *np)
{
    const indexed_meas *at = W->ix.at + W->ix.start[r];
    long n = 0, cnt = W->ix.start[r + 1] - W->ix.start[r];
    pair_resid *y = scratch_get(&W->pairs_by_resid, sizeof *y * (size_t)(cnt + 1));
    if (!y)
        return TS_ENOMEM;
    if (cnt > (long)UINT32_MAX)
        return TS_ENOMEM;       /* (positions are 32 bits: billions of pairs in one region) */
    for (long j = 0, e; j < cnt; j = e) {
        double sum = 0;
        for (e = j; e < cnt && at[e].key == at[j].key; e++)
            sum += at[e].v - F->off[at[e].a] - F->off[at[e].b];
        if (F->dead[at[j].a] || F->dead[at[j].b])
            continue;
        /* (most pairs are measured once: x / 1 is x, without a division) */
        double mean = e - j == 1 ? sum : sum / (double)(e - j);
        y[n++] = (pair_resid){mean, at[j].j, (uint32_t)j, (uint32_t)(e - j),
                              at[j].a, at[j].b};
    }
    pair_resid *sorted;
    if (sort_pair_resid(W, y, n, &sorted) != TS_OK)
        return TS_ENOMEM;
    if (sorted != y) {          /* the sort's buffer holds them now: it becomes the pairs' */
        scratch t = W->pairs_by_resid;
        W->pairs_by_resid = W->sort_out;
        W->sort_out = t;
        y = sorted;
    }
    *atp = at;
    *mp = cnt;
    *yp = y;
    *np = n;
    return TS_OK;
}

/* Below what residual one near pair joins two fragments alone, whatever its rank in the near
 * class (join_fragments): where a far pair cannot fall, the far class y[f..n-1] (sorted, m
 * pairs) being what it has shown. Its lowest pair sits d = median - lowest below its median.
 * Were its lower tail exponential, of scale b, the lowest of m would sit about b ln(m/2) down,
 * one pair would fall (1 + c) d down with probability about (m/2)^-(1+c) / 2, and any of the m
 * with about (m/2)^-c: c = ln(1 / FALSE_SPLIT) / ln(m/2) keeps that below FALSE_SPLIT. The
 * lower tail of a far pair's residual is the offsets' error and the rounds' differing load (the
 * one-sided noise of a minimum hardly reaches below it): about normal, or bounded by the
 * lightest round, both lighter than exponential. At the top of 1024 nodes the far class lies
 * some 100 us above the near (the load of the region's far pairs on the uplinks) and every near
 * pair is far below the bound; one level down, at a few us, the bound is below most of them
 * (the rule above it decides). With c fixed at 1 instead, 2 runs in 100 put a node in the
 * wrong leaf (1024 nodes, kernel UDP: a far pair of a light round). */
static double alone_below(const pair_resid *y, long f, long n)
{
    long m = n - f;
    if (m < 6)                          /* ln(m/2) > 1: a tail's scale wants a few pairs */
        return -INFINITY;
    double lowest = y[f].r, median = y[f + m / 2].r;
    double c = log(1 / FALSE_SPLIT) / log(0.5 * (double)m);
    return lowest - c * (median - lowest);
}

/* The near pairs y[0..k-1] join fragments. As one far pair never keeps two fragments apart
 * (add_separation), one near pair in the upper half of the near class, just below the gap,
 * never joins them alone unless it lies below alone (alone_below): a far pair whose samples
 * all fell low against its hosts' offsets, or in a round of light load, would otherwise put a
 * node into the wrong child for good (the child's own tournament cannot tell a node that
 * hangs elsewhere from a slow host). Such fragments join when a second near measurement links
 * them (a pair measured twice counts twice), repeated as they grow. */
static int join_fragments(fast *F, const pair_resid *y, long k, double alone)
{
    pairset once;
    if (pairset_init(&once, (size_t)k + 1))
        return TS_ENOMEM;
    for (int joined = 1; joined;) {
        joined = 0;
        if (pairset_clear(&once)) {
            free(once.key);
            return TS_ENOMEM;
        }
        for (long i = 0; i < k; i++) {
            int fa = ts_uf_find(F->uf, y[i].a), fb = ts_uf_find(F->uf, y[i].b);
            if (fa == fb)
                continue;
            if (y[i].n < 2 && i > k / 2 && !(y[i].r <= alone)) {
                int first = pairset_add(&once, fa, fb);
                if (first < 0) {
                    free(once.key);
                    return TS_ENOMEM;
                }
                if (first)
                    continue;
            }
            ts_uf_union(F->uf, fa, fb);
            joined = 1;
        }
    }
    free(once.key);
    return TS_OK;
}

/* How many far pairs keep two fragments apart: two where the level step (the far class's
 * median over the near class's) is wider than the far class's whole band (its lowest pair to
 * far_hi, beyond which a pair is an outlier, no opinion), three where it is not. What the
 * jitter does to a far pair it does to a near one: where the band is the wider, a near pair
 * reads in it as readily as a far pair reads a step above its median, inside it. At the top of
 * a big job the far class lies some 100 us above the near (the load of its own far pairs) and
 * two suffice: three there cost 8192 nodes 29 % more probing time. A level down, where the
 * load adds little to a far pair (1024 nodes, kernel UDP, 0.02 us per flow), the step is a
 * few us: a node's few pairs with its own leaf all read high and two far opinions set it apart
 * under its pod switch, reported measured, 4 runs in 50 before the first had to lie in the
 * upper half (separate). Looking instead for a far pair a step above the median (its tail, so
 * a few pairs decide) left 1 run in 100 so, and 1 in 240 with the planner's choices varied;
 * with the band, none in 510. y[0..n-1] sorted, near below k, far from f. */
static int far_opinions_needed(const pair_resid *y, long n, long k, long f, double far_hi)
{
    if (k < 1 || f >= n)
        return 3;
    double step = y[f + (n - f) / 2].r - y[k / 2].r;
    return step > far_hi - y[f].r ? 2 : 3;
}

/* Where the one-level look *g does not stand at half the false-split rate, the level gap of
 * region r on the two-level fit's offsets (fit_two_level_offsets), at the other half
 * (Bonferroni over the two looks): the look with the larger share of its threshold is kept,
 * with its residuals (*x, *m, *y, *np) and, for the second, its offsets copied into F->off for
 * the region's nodes. A region's pairs hold only its own nodes, so its residuals move with
 * its own offsets alone. Returns TS_OK or TS_ENOMEM. */
static int second_look(fast *F, walk *W, int r, level_gap *g, const indexed_meas **x, long *m,
                       pair_resid **y, long *np)
{
    g->significant = g->significant && g->margin >= g->threshold + log(2.0);
    if (g->significant)
        return TS_OK;
    const int *mem = W->order + W->rstart[r];
    int nmem = W->rstart[r + 1] - W->rstart[r];
    int rc = fit_two_level_offsets(F);
    if (rc != TS_OK)
        return rc;
    double *one_level = F->off;
    F->off = F->off_two;
    rc = region_residuals(F, W, r, x, m, y, np);
    level_gap two = rc == TS_OK ? find_level_gap(F, W, mem, nmem, *y, *np) : *g;
    F->off = one_level;
    if (rc != TS_OK)
        return rc;
    two.significant = two.significant && two.margin >= two.threshold + log(2.0);
    if (two.margin / two.threshold > g->margin / g->threshold) {
        for (int i = 0; i < nmem; i++)
            F->off[mem[i]] = F->off_two[mem[i]];
        *g = two;
    } else if ((rc = region_residuals(F, W, r, x, m, y, np)) != TS_OK) {
        return rc;
    }
    return TS_OK;
}

/* ---- a small region's blocks, on the whole matrix ---- */

/* The region's halves for candidate `found`: D[i * nmem + j] the residual of each pair's
 * found-th measurement (0: its first), its last when it has no more (found on), Bsum and Bn
 * the sum and count of its others' (tested on). 0 when a pair has none yet. */
static int split_halves(const fast *F, const int *mem, int nmem, const indexed_meas *x, long m,
                        int found, double *D, double *Bsum, int *Bn)
{
    size_t nn = (size_t)nmem * (size_t)nmem;
    for (size_t e = 0; e < nn; e++)
        D[e] = NAN, Bsum[e] = 0, Bn[e] = 0;
    for (int i = 0; i < nmem; i++)
        F->local[mem[i]] = i;
    /* x is in pair order, each pair's measurements in the order they were taken */
    for (long j = 0, e; j < m; j = e) {
        int a = F->local[x[j].a], b = F->local[x[j].b];
        for (e = j + 1; e < m && x[e].key == x[j].key; e++)
            ;
        long f = j + found < e ? j + found : e - 1;
        for (long q = j; q < e; q++) {
            double r = x[q].v - F->off[x[q].a] - F->off[x[q].b];
            if (q == f) {
                D[a * nmem + b] = D[b * nmem + a] = r;
            } else {
                Bsum[a * nmem + b] += r, Bn[a * nmem + b]++;
                Bsum[b * nmem + a] += r, Bn[b * nmem + a]++;
            }
        }
    }
    for (int i = 0; i < nmem; i++)
        for (int j = i + 1; j < nmem; j++)
            if (isnan(D[i * nmem + j]))
                return 0;
    return 1;
}

/* Whether the c blocks of region R's look stand (*t, blocks.h), and R->blocks_seen: their
 * level stood with nothing against them, so that more measurements at the same samples may
 * tell the nodes. The level and each pair of blocks at FALSE_SPLIT, over the looks a region
 * may take (every batch from its tournament proof to PARTITION_CYCLES cycles, at each sample
 * count, each of PARTITION_CYCLES candidates) and over its pairs of blocks: they tell a split
 * from a star and from blocks of one child. A node's assignment at LOF_Z: a node in a wrong
 * block has its pairs to its own block above its pairs to its true one by a step, not by
 * chance, so its assign_z lies a step's z below 0, not at it. The signs against the blocks
 * at LOF_Z (node_z, the most of nmem nodes', at LOF_Z's chance over them). */
static int blocks_stand(const fast *F, region *R, int nmem, int c, const ts_blocks_test *t)
{
    int cycle = nmem + (nmem & 1) - 1, stages = 1;
    for (int k = F->kfirst; k < F->kmax; k *= 2)
        stages++;
    double looks = PARTITION_CYCLES * stages *
                   (ceil((double)(PARTITION_CYCLES * cycle - tournament_proof(nmem)) / BATCH) + 1);
    double z_level = -ts_normal_quantile(FALSE_SPLIT / looks);
    double z_apart = -ts_normal_quantile(FALSE_SPLIT / looks / (c * (c - 1) / 2));
    double z_node = -ts_normal_quantile(0.5 * erfc(LOF_Z / sqrt(2.0)) / nmem);
    R->blocks_seen = t->level_z >= z_level && t->grouping_z <= LOF_Z && t->blocks_z <= LOF_Z &&
                     t->mixed_z <= LOF_Z && t->node_z <= z_node;
    int stand = R->blocks_seen && t->apart_z >= z_apart && t->assign_z >= LOF_Z;
    if (stand)
        R->threshold = z_level;
    return stand;
}

/* A small region whose tournament shows a level (its pairs do not fit a star) but no gap: its
 * classes' tails overlap, so that no cut on single pairs is significant, while the blocks its
 * children make stand out of the whole matrix (blocks.h; IPoIB, a pod of 16 nodes in leaves of
 * 4: the step about 2.5 times the noise of the minimum of 3, and no gap up to 48 samples per
 * pair, in every run). The blocks: average linkage on one measurement of each pair, its
 * partition furthest apart of those whose blocks all hold STAR_CHILD nodes (the gap test's
 * floor: a child of 2 is not told from chance; ts_linkage_partition); tested on the pairs'
 * other measurements, they stand as the region's
 * children (blocks_stand), or R->blocks_seen says whether more measurements at the same
 * samples may tell them. *split: they stood. Returns TS_OK or TS_ENOMEM.
 * The measurement found on is each pair's first, then (where those blocks do not stand) its
 * second, and so on, up to PARTITION_CYCLES candidates, a pair's last where it has fewer: the
 * blocks of one measurement put a node in a wrong block now and then (16 nodes in leaves of
 * 4, 2.5 sd: 141 of 2000 partitions in t_blocks), and a region whose only candidate did never
 * stood at those samples; its depth doubled them for all its regions (128 nodes over IPoIB:
 * half the runs, at their pods). */
static int partition_look(fast *F, region *R, const int *mem, int nmem, const indexed_meas *x,
                          long m, int *split)
{
    *split = 0;
    R->blocks_seen = 0;
    if (nmem < 2 * STAR_CHILD)
        return TS_OK;
    for (int i = 0; i < nmem; i++)
        if (F->dead[mem[i]])
            return TS_OK;
    size_t nn = (size_t)nmem * (size_t)nmem;
    double *D = malloc(sizeof(double) * nn), *Bsum = calloc(nn, sizeof(double));
    int *Bn = calloc(nn, sizeof(int)), *lab = malloc(sizeof(int) * (size_t)nmem);
    int rc = D && Bsum && Bn && lab ? TS_OK : TS_ENOMEM, c = 0, stand = 0, seen = 0;
    ts_blocks_test t;
    /* candidate f: the blocks of each pair's f-th measurement, tested on its others */
    for (int f = 0; rc == TS_OK && !stand && f < PARTITION_CYCLES; f++) {
        int tested = 0;
        if (!split_halves(F, mem, nmem, x, m, f, D, Bsum, Bn))
            break;
        if ((c = ts_linkage_partition(D, nmem, STAR_CHILD, lab)) >= 2)
            tested = ts_test_partition(lab, nmem, c, Bsum, Bn, &t);
        if (c < 0 || tested < 0)
            rc = TS_ENOMEM;
        else if (tested > 0) {
            stand = blocks_stand(F, R, nmem, c, &t);
            seen |= R->blocks_seen;
        }
    }
    R->blocks_seen = seen;
    if (rc == TS_OK && stand) {
        /* the blocks are the fragments, every pair of them apart */
        for (int i = 0; i < nmem; i++)
            F->uf[mem[i]] = mem[i];
        for (int i = 0; i < nmem; i++)
            for (int j = i + 1; j < nmem; j++)
                if (lab[i] == lab[j])
                    ts_uf_union(F->uf, mem[i], mem[j]);
        R->has_cut = 1;
        R->nfrag = c;
        R->nsep = (long)c * (c - 1) / 2;
        R->margin = t.level_z;
        R->gap_us = R->step_us = t.step_us;
        R->grouped = 0;
        R->group_z = R->vary_z = NAN;
        *split = 1;
    }
    free(D);
    free(Bsum);
    free(Bn);
    free(lab);
    return rc;
}

static int decide_region(fast *F, walk *W, int r, forest *K, int last_pass)
{
    region *R = &F->R[W->first + r];
    const int *mem = W->order + W->rstart[r];
    int nmem = W->rstart[r + 1] - W->rstart[r], ri = W->first + r;
    if (R->state != OPEN || (!last_pass && R->one_pass))
        return TS_OK;
    const indexed_meas *x;
    pair_resid *y;
    long m, np;
    if (region_residuals(F, W, r, &x, &m, &y, &np) != TS_OK)
        return TS_ENOMEM;     /* (y is W's scratch) */
    level_gap g = find_level_gap(F, W, mem, nmem, y, np);
    /* how near significance the one-level look came: whether more samples may help
     * (settle_region) is judged on it alone, as before the second look */
    double share = g.margin / g.threshold;
    if (F->two_level[ri] && second_look(F, W, r, &g, &x, &m, &y, &np) != TS_OK)
        return TS_ENOMEM;
    /* a region in its first tournament looks at its pairs once a batch: each look before
     * every pair has met spends a share of FALSE_SPLIT (Bonferroni over the looks) */
    int cycle = nmem + (nmem & 1) - 1;
    if (!R->has_cut && nmem <= STAR_PROOF_MAX && R->tour < cycle)
        g.significant = g.significant &&
                        g.margin >= g.threshold + log((double)(cycle + BATCH - 1) / BATCH);
    for (int i = 0; i < nmem; i++)
        F->uf[mem[i]] = mem[i];
    R->has_cut = g.significant;
    R->far_lo = g.far_lo;
    R->far_hi = g.far_hi;
    R->margin = g.margin;
    R->threshold = g.threshold;
    if (share > R->best_share)
        R->best_share = share;
    R->gap_us = g.gap_us;
    R->spread_us = np >= 4 ? (y[3 * np / 4].r - y[np / 4].r) / 1.349 : NAN;
    /* Only a significant gap classifies: near pairs join fragments and leave the offset fit
     * (their class is a child's), far ones inside the band stay in it as this region's class,
     * stragglers and outliers leave it. Without one, every pair is this region's class. A node
     * most of whose pairs lie above the band has an offset the fit got wrong, not outlier
     * pairs: its pairs stay in the fit, which moves its offset back. (Out of it, only the
     * node's pairs that fell low stayed in, and they held the offset where it was: at 1024
     * nodes, 0.02 us per flow, a host 3 us slow fitted 4 us fast at a stage's first batch kept
     * the top from settling for 4000 rounds, its pairs no opinion either way: with the
     * planner's choices varied, 2 runs in 240 so, and 2 more a wrong tree reported measured.) */
    if (g.significant) {
        for (int i = 0; i < nmem; i++)
            F->local[mem[i]] = 0;   /* (pairs in a class less pairs above the band) */
        for (long i = 0; i < np; i++)
            if (i < g.k || i >= g.k + g.t) {
                int in = i < g.k || y[i].r <= g.far_hi ? 1 : -1;
                F->local[y[i].a] += in;
                F->local[y[i].b] += in;
            }
    }
    for (long i = 0; i < np; i++) {
        if (i + TS_PREFETCH_AHEAD < np)
            ts_prefetch(&F->obs[y[i + TS_PREFETCH_AHEAD].j], 1);
        int cls = !g.significant        ? ri
                  : i < g.k + g.t       ? -1
                  : y[i].r <= g.far_hi ? ri
                  : F->local[y[i].a] > 0 && F->local[y[i].b] > 0 ? -1 : ri;
        F->obs[y[i].j].cls = cls;   /* (the first; x has the others, when measured again) */
        for (long e = (long)y[i].first + 1; e < (long)y[i].first + (long)y[i].n; e++)
            F->obs[x[e].j].cls = cls;
    }
    R->level = np > 0 ? F->M[y[g.k + g.t + (np - g.k - g.t) / 2].j].v : NAN;
    if (R->has_cut && g.gap_us / g.margin > F->noise_us)
        F->noise_us = g.gap_us / g.margin;
    /* A pass before the last classifies the pairs for the next offset fit, no more: the last
     * pass finds a big region's fragments and separations afresh. (A small region's tests of
     * its children keep what each pass found, so it takes every step every pass.) */
    if (!last_pass && nmem > STAR_PROOF_MAX)
        return TS_OK;
    if (R->has_cut && join_fragments(F, y, g.k, alone_below(y, g.k + g.t, np)) != TS_OK)
        return TS_ENOMEM;
    /* fragments and the fragment pairs known apart; the fragments are final for this decision,
     * so every member now points straight at its fragment's root, which the far pairs below
     * read in one load each */
    R->nfrag = 0;
    for (int i = 0; i < nmem; i++) {
        F->uf[mem[i]] = ts_uf_find(F->uf, mem[i]);
        R->nfrag += F->uf[mem[i]] == mem[i];
    }
    R->nsep = 0;
    long f = g.k + g.t;
    double far_mid = np > f ? y[f + (np - f) / 2].r : INFINITY;
    double cut = g.k > 0 ? 0.5 * (y[g.k - 1].r + g.far_lo) : g.far_lo;   /* the gap's middle */
    R->opinions = far_opinions_needed(y, np, g.k, f, g.far_hi);
    int rc = TS_OK;
    /* Far opinions, each measurement on its own: one in the upper half of the far class (at or
     * above its median) opens a pair of fragments, one in the lower half, just above the gap,
     * only seconds it (the mirror of join_fragments' rule for near pairs). A pair measured
     * more than once is a second opinion of itself: its highest and its lowest measurement,
     * whichever rounds took them. (Its first two, before: where the far pairs are alike, all
     * eight of one pair of leaves' of two nodes fell in the lower half in about 1 job in 100
     * (1 in 256 per pair of leaves), and however often the rounds measured them again the pair
     * never opened: the testbed's 8-node step, partial, in about 1 run in 16.) Where one of
     * its measurements lay on the near side of the cut (the gap's middle), even with their mean
     * in the far class, it is no opinion: the jitter mostly adds, so the low one is the
     * likelier true. (Not below the far class's lowest mean: a small region's tournament measures its
     * pairs again and again, their means lie close together, and half of a far pair's
     * measurements fall below the lowest. Such pairs never gave an opinion, and in 8 runs of 40
     * a job of four leaves of two nodes kept its top open until it was left unresolved.)
     * The upper half's opinions come first (pass 0). Where the load adds little to a far pair (1024 nodes, kernel UDP, a flow
     * penalty of 0.02 us instead of 0.5), two far opinions just above the gap, from near pairs
     * of a node whose samples fell high, set it apart from its own leaf: 4 runs in 50 reported
     * such a tree measured; with this rule none did, at 5-17 % more probing time on the
     * bench's fabrics. Counting a pair with one near measurement as one far opinion left run
     * 30 there measured and wrong (that pair opened, a far pair just above the gap seconded). */
    for (int pass = 0; pass < 2 && R->has_cut; pass++)
        for (long i = f; i < np && rc == TS_OK; i++) {
            if (i + TS_PREFETCH_AHEAD < np) {
                const pair_resid *ahead = &y[i + TS_PREFETCH_AHEAD];
                pairset_prefetch(&F->far, F->uf[ahead->a], F->uf[ahead->b]);
            }
            int fa = F->uf[y[i].a], fb = F->uf[y[i].b];
            if (fa == fb || y[i].r > g.far_hi)
                continue;
            /* a fragment already apart from every other one has this pair apart in F->far: no
             * look-up (most far pairs, once the fragments are few) */
            if (F->apart[fa] >= R->nfrag - 1 || F->apart[fb] >= R->nfrag - 1)
                continue;
            /* its highest and its lowest measurement's residuals (a pair measured once: its
             * own), whichever rounds took them */
            double res[2] = {y[i].r, y[i].r};
            for (long e = 0; y[i].n > 1 && e < (long)y[i].n; e++) {
                double v = F->M[x[y[i].first + e].j].v - F->off[y[i].a] - F->off[y[i].b];
                res[0] = e == 0 || v > res[0] ? v : res[0];
                res[1] = e == 0 || v < res[1] ? v : res[1];
            }
            if (res[1] < cut)
                continue;           /* on the near side of the cut: no opinion (above) */
            for (long e = 0; e < y[i].n && e < 2 && rc == TS_OK; e++) {
                if ((res[e] >= far_mid) != (pass == 0))
                    continue;
                int seen = separate(F, fa, fb, pass == 0, R->opinions);
                if (seen < 0)
                    rc = TS_ENOMEM;
                else
                    R->nsep += seen == ONCE;
            }
        }
    /* a small region, once its tournament has measured half its pairs twice: do the pairs
     * between its fragments fit one level? (a star's pairs, or the far class whose children
     * might group into switches of their own) */
    R->lof_z = R->group_z = NAN;
    R->fit = (star_fit){NAN, NAN, NAN, nmem, STAR_CHILD, 0, 0};
    if (rc == TS_OK && !R->has_cut && nmem <= STAR_PROOF_MAX && R->tour >= tournament_proof(nmem))
        R->lof_z = level_lack_of_fit(F, mem, nmem, x, m, &R->fit);
    /* a level the star does not fit, without a gap: the blocks it makes, on the whole matrix */
    if (last_pass)
        R->blocks_seen = 0;
    if (rc == TS_OK && last_pass && R->lof_z > LOF_Z) {
        int split;
        if (partition_look(F, R, mem, nmem, x, m, &split) != TS_OK)
            return TS_ENOMEM;
        if (split)
            return TS_OK;
    }
    /* a split's step: its far class's median residual over its near class's (the scale a
     * star below it must resolve) */
    if (R->has_cut)
        R->step_us = y[g.k + g.t + (np - g.k - g.t) / 2].r - y[g.k / 2].r;
    /* (small regions only: in a big one the rounds' load, shared by the pairs of one round,
     * set pairs of children apart by more than the pairs within them vary; the comparison
     * free of it, load_free_far_pairs, was measured on small regions only) */
    R->grouped = 0;
    if (rc == TS_OK && R->has_cut && R->nfrag >= 3 && nmem <= STAR_PROOF_MAX) {
        load_free lf;
        if (load_free_far_pairs(F, x, y, np, g.k + g.t, g.far_hi, mem, nmem, &lf) != TS_OK)
            return TS_ENOMEM;
        R->group_z = group_children(F, K, &lf, &R->grouped);
        R->vary_z = R->grouped ? NAN : child_pairs_vary(F, &lf);
        free(lf.pairs);
    }
    return rc;
}

/* Whether region R's depth may be measured again with twice the samples per pair for it: up
 * to F->kmax always; past it only under a deadline, for a region big enough that its gap can
 * be told from chance at all (no number of samples splits a smaller one: its time is better
 * left to the additive method, hand_over_irregular), and while the doubled stage fits in
 * DOUBLING_SHARE of the time left. It runs the same rounds with twice the samples each, so it
 * is predicted at twice the time the current stage has taken.
 *
 * The doubled stage draws every sample afresh. Topping up instead (a pair measured again
 * taking only the samples it lacks, its minimum the least of old and new: half the cost) was
 * tried and lost accuracy (1024 nodes, IPoIB: 55 of 60 seeds exact and 47 measured, against 59
 * and 58): a depth doubles because its data were inconclusive, and a minimum keeps the low
 * draws that made them so. */
static int may_double(const fast *F, const region *R)
{
    if (F->k < F->kmax)
        return 1;
    if (F->k >= F->kdeadline || R->nmem < TOLD_MIN_NODES)
        return 0;
    double left = ts_probe_remaining_us(F->e), stage = ts_probe_now(F->e) - F->stage_start_us;
    return isfinite(left) && 2 * stage <= DOUBLING_SHARE * left;
}

/* The children a level hidden in region R would make, for the power of its star test. Under a
 * split a region of fewer than 2 STAR_CHILD nodes is below the method's floor (the gap test
 * tells no child of 2 from chance: EDGE_MIN) and stands as the one tree the method can report:
 * a level above it was found and the fabric's levels are built alike. A job's top region has
 * nothing above it: a job of 4 or 5 nodes may sit on two leaves of 2, and its star stands only
 * with the power to see that; one of 3 never (with every host's own delay unknown, any three
 * round trips fit a star: the result is partial). Two nodes make only one tree. */
static int hidden_child(const region *R)
{
    if (isfinite(R->scale_us) || R->nmem >= 2 * STAR_CHILD || R->nmem <= 2)
        return STAR_CHILD;
    return R->nmem / 2;
}

/* A small region whose tournaments show no level: a star only once the data could have shown
 * one that matters. Not finding a level is no proof of its absence; the star's resolution
 * (star_resolution) must be STAR_STEP_SHARE of the smallest step split above it in the same
 * job or finer: the fabric's own scale, as its levels are built of like links. The top region
 * has no split above it and nothing in its data gives a level's size: there the step that
 * matters is the least this fabric's level adds: the site's word (least_step_us) or the least
 * any real fabric's adds (LEVEL_STEP_FLOOR_US). Until then the region's tournament goes on at
 * the same samples where PARTITION_CYCLES cycles of it would power the test (star_would_see):
 * a stage started over with twice the samples drops every measurement taken so far, and a
 * round of twice the samples costs 1.5-1.8 times as much (1024 nodes over IPoIB: 0.097 s to
 * 0.061, medians of 100 runs); otherwise it is measured again with twice the samples. A star
 * still too coarse at F->kmax stands, but unpowered: the result is partial, with the
 * resolution as what could not be excluded. */
static void settle_star(fast *F, region *R, int *escalate)
{
    double matters = isfinite(R->scale_us) ? STAR_STEP_SHARE * R->scale_us : F->least_step_us;
    R->fit.child = hidden_child(R);
    int powered = star_sees(&R->fit, matters);
    if (!powered && R->fit.child >= 2) {
        int most = PARTITION_CYCLES * (R->nmem + (R->nmem & 1) - 1);
        if (R->tour < most && star_would_see(&R->fit, matters, (double)most / R->tour))
            return;     /* more cycles at the same samples will do */
        if (may_double(F, R)) {
            *escalate = 1;
            return;
        }
    }
    /* (worked out once: the region settles) */
    double res = star_resolution(&R->fit, &F->resolution);
    R->state = STAR;
    R->unpowered = !powered;
    F->nunpowered += !powered;
    if (!isnan(res)) {      /* (NAN: no level could show, hidden_child) */
        if (!(res <= F->star_res_us))
            F->star_res_us = res;
        if (!powered && !(res <= F->unpowered_us))
            F->unpowered_us = res;
    }
}

/* The region's state after its decision: split, a star, unresolved or still open. */
static void settle_region(fast *F, region *R, int *escalate)
{
    if (R->state != OPEN)
        return;
    if (R->has_cut) {
        int apart = R->nfrag >= 2 && R->nsep == R->nfrag * (R->nfrag - 1) / 2;
        /* children that group below the switch (a level whose gap is not significant yet
         * above a lower one that is) show in the far class: more samples, or unresolved */
        int ungrouped = !R->grouped && (R->group_z > 0.5 * sqrt(2 * log(1 / FALSE_SPLIT)) ||
                                        R->vary_z > LOF_Z);
        if (apart && ungrouped && may_double(F, R)) {
            *escalate = 1;
        } else if (apart) {
            R->state = SPLIT;
            R->ungrouped = ungrouped;
            if (R->gap_us < F->min_gap_us)
                F->min_gap_us = R->gap_us;
        } else if (R->rounds > 4 * R->nmem + 64) {
            R->state = UNRESOLVED;      /* tests that never settle: no trustworthy cut */
        }
        return;
    }
    /* Without a significant gap. A small region is a star once two full tournaments show no
     * gap and its pairs fit a star (level_lack_of_fit). Otherwise the region's pairs are
     * measured again with twice the samples, up to SAMPLES_MAX (sequential testing; past it
     * under a deadline, may_double), and a region still unsure there is unresolved. A big
     * region is unsure while its gap is
     * suggestive (half-way to significant) or while the samples' own noise makes its spread:
     * the estimates' sd (the sampler's interval over z) at least half its residuals' robust
     * sd. More samples shrink the noise; they do not shrink a spread its branches make, whose
     * depths differ (fast_irregular.c takes such a region, unresolved). The two lie far apart:
     * 1024 nodes over kernel UDP without a flow penalty, where a level hides in the noise of
     * the minimum of three, the noise is 1.0-1.2 times the spread (every run unresolved after
     * 12 rounds before; exact with the doubling); the irregular trees' top regions, 0.005-0.01
     * times (their levels show, at depths that differ).
     * Suggestive is the best look of the stage's, not the last: where a batch holds few pairs
     * the margin wanders from look to look, and a gap suggested once is measured on, up to
     * BIG_ROUNDS_UNSURE rounds at the same samples (more pairs cost less than a stage started
     * over with twice the samples). At the top of 128 nodes (8 pods of 16, the rounds' load
     * different with every shuffle of the node names) the first significant look came at the
     * 4th batch in 44 % of runs over kernel UDP and 49 % over RDMA; judged on the 3rd batch's
     * margin alone, one shuffle's every RDMA run ended unresolved (handed to the additive
     * method, partial), others doubled their samples (a median of 0.10 s against 0.04). 10
     * shuffles, 10 runs each, kernel UDP and RDMA: measured and exact 184 and 194 of 200
     * before, 200 and 200 now; the planner's choices varied (10 plans, 5 runs): 45 and 45 of
     * 50 before, 48 and 50 now. The 1024-node top finds its gap at once and is not affected;
     * of 14 irregular trees two take longer (0.8 s to 1.6, 0.2 to 2.0), one of them no
     * longer exact (partial before and now). */
    int small = R->nmem <= STAR_PROOF_MAX;
    int seen = small ? R->tour >= tournament_proof(R->nmem) : R->rounds >= BIG_ROUNDS;
    if (!seen)
        return;
    int unsure = small ? R->lof_z > LOF_Z : R->best_share >= 0.5;
    if (!small && unsure && R->rounds < BIG_ROUNDS_UNSURE)
        return;
    /* blocks seen on the whole matrix, not yet told apart node by node, or a star's lack of
     * fit without blocks: the tournament goes on at the same samples, whose every cycle adds a
     * held-out measurement to each pair, and the star test weighs them all (a stage started
     * over with twice the samples drops them). 1024 nodes over kernel UDP: one of the 128
     * leaves of 8 or another showed a lack of fit at z 3.3-3.6 in about half the runs (of
     * every leaf's tests, LOF_Z's 1e-3 each, one now and then), and its depth doubled, 0.057 s
     * where the others took 0.048; with more cycles the fit stood, 0.051 s. Not in a region
     * too small for any count of samples to split (TOLD_MIN_NODES): there the cycles only
     * delay its doubling towards unresolved (the testbed's 8 nodes two to a leaf, pods of
     * four: 4.3 s of probing without a budget became 5.1, and the prolog's 5 s budget ran out
     * before the plan was complete). */
    if (small && (R->blocks_seen || (unsure && R->nmem >= TOLD_MIN_NODES)) &&
        R->tour < PARTITION_CYCLES * (R->nmem + (R->nmem & 1) - 1))
        return;
    double noise = R->noise_n > 0 ? R->noise_sum / (double)R->noise_n : NAN;
    /* (false when either is NAN; single samples have no noise of their own, the sampler's
     * interval needs two: a big region that lost its cut in a single-sample stage, or never
     * had one in a pilot's batch, is measured again with the first count, not unresolved) */
    int noisy = !small && (2 * noise >= R->spread_us || F->k < F->kfirst);
    if (!unsure && small)
        settle_star(F, R, escalate);
    else if ((unsure || noisy) && may_double(F, R))
        *escalate = 1;
    else
        R->state = UNRESOLVED;
}

static int cmp_indexed_meas(const void *x, const void *y)
{
    const indexed_meas *a = x, *b = y;
    if (a->reg != b->reg)
        return a->reg < b->reg ? -1 : 1;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->j > b->j) - (a->j < b->j);
}

/* A batch's measurements add[0..n-1] (of nr regions, over nnodes nodes), in position order,
 * into cmp_indexed_meas's (region, pair, position) order at *sorted (add itself, or
 * W->index_fresh): a radix sort on 32 bits of (region, pair), which keeps positions in order
 * among equals; where 32 bits cannot hold all of (region, pair), the runs alike in them by
 * the comparison (rare: a batch has few pairs so close). qsort's comparisons of every batch
 * were ~2 % of the method's CPU at 8192 nodes. Returns TS_OK or TS_ENOMEM. */
static int sort_fresh(walk *W, indexed_meas *add, long n, int nr, int nnodes,
                      const indexed_meas **sorted)
{
    *sorted = add;
    int node_bits = 0, region_bits = 0;
    while ((1L << node_bits) < nnodes)
        node_bits++;
    while ((1L << region_bits) < nr)
        region_bits++;
    int bits = region_bits + 2 * node_bits, dropped = bits > 32 ? bits - 32 : 0;
    radix_buffers rb;
    if (!radix_fits(n) || bits > 64) {
        qsort(add, (size_t)n, sizeof *add, cmp_indexed_meas);
        return TS_OK;
    }
    if (radix_buffers_get(W, n, &W->index_fresh, sizeof *add, &rb) != TS_OK)
        return TS_ENOMEM;
    indexed_meas *out = rb.sorted;
    for (long i = 0; i < n; i++) {
        /* the pair as pair_key orders it: its higher node, then its lower */
        uint64_t lo = (uint64_t)(add[i].a < add[i].b ? add[i].a : add[i].b);
        uint64_t hi = (uint64_t)(add[i].a < add[i].b ? add[i].b : add[i].a);
        uint64_t whole = (uint64_t)add[i].reg << 2 * node_bits | hi << node_bits | lo;
        rb.key[i] = (sort_key){(uint32_t)(whole >> dropped), (uint32_t)i};
        radix_count(rb.count, rb.key[i].bits);
    }
    const sort_key *key = radix_sort(rb.key, rb.tmp, n, rb.count);
    free(rb.count);
    for (long i = 0; i < n; i++)
        out[i] = add[key[i].at];
    for (long i = 0, e; dropped > 0 && i < n; i = e)
        if ((e = run_end(key, n, i)) - i > 1)
            qsort(out + i, (size_t)(e - i), sizeof *out, cmp_indexed_meas);
    *sorted = out;
    return TS_OK;
}

/* Brings W->ix up to the measurements taken since it was last brought up: they are sorted
 * among themselves (one batch) and merged in. A new depth, or samples per pair doubled (the
 * depth's measurements so far no longer count), starts it afresh. */
static int update_region_index(const fast *F, walk *W)
{
    region_index *ix = &W->ix;
    int nr = W->last - W->first;
    if (!ix->start || ix->first != W->first || ix->k != F->k) {
        free(ix->start);
        ix->start = calloc((size_t)nr + 1, sizeof(long));
        if (!ix->start)
            return TS_ENOMEM;
        ix->n = 0;
        ix->upto = F->depth_first_meas;
        ix->first = W->first;
        ix->k = F->k;
    }
    long fresh = 0;
    for (long j = ix->upto; j < F->nm; j++)
        fresh += F->M[j].reg >= W->first && F->M[j].reg < W->last && F->M[j].k == F->k;
    if (ix->n + fresh > ix->cap) {
        long cap = 2 * (ix->n + fresh) + 1024;
        if (grow_both(&ix->at, sizeof *ix->at, &ix->spare, sizeof *ix->spare, cap))
            return TS_ENOMEM;
        ix->cap = cap;
    }
    /* the fresh ones at the spare's end, sorted (there, or into W->index_fresh), then merged
     * with the index from the spare's start (the merge never overtakes them: it has written
     * fewer than it has read) */
    indexed_meas *batch = ix->spare + ix->cap - fresh;
    const indexed_meas *add;
    long a = 0;
    for (long j = ix->upto; j < F->nm; j++) {
        const meas *q = &F->M[j];
        if (q->reg >= W->first && q->reg < W->last && q->k == F->k)
            batch[a++] = (indexed_meas){pair_key(q->a, q->b), j, q->reg - W->first, q->a, q->b,
                                        q->v};
    }
    if (sort_fresh(W, batch, fresh, nr, F->n, &add) != TS_OK)
        return TS_ENOMEM;
    /* each region's end moves up by the fresh measurements of the regions up to it (counted
     * in the batch, not again over the whole index) */
    a = 0;
    for (int r = 0; r < nr; r++) {
        while (a < fresh && add[a].reg == r)
            a++;
        ix->start[r + 1] += a;
    }
    long i = 0, o = 0;
    a = 0;
    while (i < ix->n || a < fresh) {
        if (a == fresh || (i < ix->n && cmp_indexed_meas(&ix->at[i], &add[a]) < 0))
            ix->spare[o++] = ix->at[i++];
        else
            ix->spare[o++] = add[a++];
    }
    indexed_meas *t = ix->at;
    ix->at = ix->spare;
    ix->spare = t;
    ix->n = o;
    ix->upto = F->nm;
    return TS_OK;
}

/* Which regions take one decision pass this batch, not FIT_PASSES (R->one_pass). The pass
 * before the last only classifies the pairs for the next offset fit. A big region whose last
 * decision found a cut has its pairs classified already but for the batch's new ones; once
 * those are a small share of its pairs (CARRY_SHARE: the batch can move no more of the fit's
 * classes than that), classify_batch puts them into classes by the band that cut left (on the
 * offsets of the last fit, a batch's measurements fewer than the next), and the region's
 * residuals are sorted and searched once a batch rather than twice, the offsets fitted once:
 * a big region's hundreds of thousands of pairs made the second pass most of the method's
 * time. A region's first batches after its cut, when the batch still adds a large share,
 * keep both passes, and so does a small region (a tournament, the tests of its children), a
 * batch there adding a large share of its pairs. Then the measurements F->M[batch_first, nm)
 * of the regions of one pass, and of the small regions with a cut, go into their class by the
 * band of the last decision: inside the far class's band they are the region's class, below
 * it near (a child's) or in the gap, above it outliers; the latter leave the fit as the
 * decision would have them leave. A small region's tournament measures its pairs again, so
 * that band was drawn on the same pairs; left in the region's class, as store_round puts
 * them, a new near pair pulled its two nodes' offsets down by a level in the first pass's fit
 * (leaves of two nodes have one near pair each): that pass saw no cut, the second fitted near
 * and far pairs as one class, and the children's pairs grouped into a switch the fabric does
 * not have, reported measured (1 to 4 in 20 steps of 8 nodes on the testbed, 0 of 24 since).
 * A big region's first batches after its cut draw mostly new pairs, on offsets still rough:
 * its first pass classifies them afresh (by the band, 1 of 4 IPoIB runs on 1024 nodes lost its
 * cut and ended partial). From the fifth batch of a depth on (a quarter) one pass does: with a
 * tenth, the top of 8192 nodes took both passes for ten batches of its twelve, 26 % more of
 * the method's instructions than with a quarter, for the same trees and probing time (8192
 * nodes, 10 runs; 1024 and 128 nodes, 100 runs a profile: the same exact counts, the same
 * probing time but for 6 runs in 100 at 1024 nodes over kernel UDP that took one batch more,
 * 3 ms; the bench's shuffled 128-node trees over kernel UDP, a median 6 % longer).
 * Returns 1 when some open region still takes both passes, 0 if none does, -1 when out of
 * memory. */
static int classify_batch(fast *F, const walk *W, long batch_first)
{
    int nr = W->last - W->first, two_passes = 0;
    long *fresh = calloc((size_t)nr + 1, sizeof(long));
    if (!fresh)
        return -1;
    for (long j = batch_first; j < F->nm; j++)
        if (F->M[j].reg >= W->first && F->M[j].reg < W->last && F->M[j].k == F->k)
            fresh[F->M[j].reg - W->first]++;
    for (int r = 0; r < nr; r++) {
        region *R = &F->R[W->first + r];
        long earlier = W->ix.start[r + 1] - W->ix.start[r] - fresh[r];
        R->one_pass = R->state == OPEN && R->has_cut && R->nmem > STAR_PROOF_MAX &&
                      (double)fresh[r] <= CARRY_SHARE * (double)earlier;
        two_passes |= R->state == OPEN && !R->one_pass;
    }
    free(fresh);
    for (long j = batch_first; j < F->nm; j++) {
        const meas *q = &F->M[j];
        if (q->reg < W->first || q->reg >= W->last)
            continue;
        const region *R = &F->R[q->reg];
        if (!R->one_pass && !(R->has_cut && R->nmem <= STAR_PROOF_MAX))
            continue;
        double x = q->v - F->off[q->a] - F->off[q->b];
        F->obs[j].cls = x >= R->far_lo && x <= R->far_hi ? q->reg : -1;
    }
    return two_passes;
}

/* A pilot's single samples, x[0..m-1] sorted, the near class first: the largest of three
 * samples per near pair that one_sample_will_do reads stands for the tail a stage of single
 * samples reaches, three times the batch's near samples. Single samples alone show only the
 * batch's own: the near class's top is put where three times its samples would reach, their
 * noise taken to be the far pairs' (the same hosts' stacks; the top's load adds its own
 * spread to theirs, so the reach errs long): the far class's deviation from its median at
 * the quantile of one sample in three times the near ones, above the near median. Whether
 * the gap stays significant so. (Without it, 1024 nodes under the idealised Ethernet profile,
 * whose 1 % of round trips 20-200 us late fill the gap as single samples accumulate, kept
 * single samples on a first batch's margin of 65, lost the cut at the fourth batch, 17, and
 * started over with three samples: 0.106 s where 0.086 took three from the start.) */
static int singles_reach(pair_resid *x, long near, long m, double need)
{
    long nfar = m - near;
    if (near < 2 || nfar < 1)
        return 0;
    long q = (long)((double)nfar * (1 - 1 / (3.0 * (double)near)));
    q = q < nfar ? q : nfar - 1;
    double top = x[near / 2].r + x[near + q].r - x[near + nfar / 2].r;
    if (!(top < x[near].r))
        return 0;
    if (top > x[near - 1].r)
        x[near - 1].r = top;
    return gap_margin(x, near, 0, m) >= need;
}

/* Whether single samples would have read this depth's first batch as its minima of 3 did:
 * every open region big and cut, and its gap significant still with each near pair read at
 * the largest of its three samples (meas.top; a far pair's samples lie above its minimum:
 * the far class's floor stays). A single-sample stage holds many more near pairs than one
 * batch: the largest of three samples per pair stands for the tail they reach. Where the load
 * of the region's own far pairs lifts its far class far above the noise (the top of 1024
 * nodes: some 100 us over kernel UDP and IPoIB, against a near pair's tail of 20-30 us), a
 * round of one sample per pair costs a third of one of three (its slowest pair's three round
 * trips). A pilot's batch, taken with one sample (pilot_one_sample), is read as it is, each
 * single sample its own largest, and its near class's top where three times its samples
 * would reach (singles_reach). Returns 1, 0, or -1 when out of memory. */
static int one_sample_will_do(const fast *F, const walk *W, long batch_first)
{
    int nr = W->last - W->first, open = 0, will = 1;
    pair_resid *x = malloc(sizeof *x * (size_t)(F->nm - batch_first + 1));
    if (!x)
        return -1;
    for (int r = 0; r < nr && will; r++) {
        const region *R = &F->R[W->first + r];
        if (R->state != OPEN)
            continue;
        open++;
        if (!R->has_cut || R->nmem <= STAR_PROOF_MAX) {
            will = 0;
            break;
        }
        long m = 0, near = 0;
        double near_top = -INFINITY, far_low = INFINITY;
        for (long j = batch_first; j < F->nm && will; j++) {
            const meas *q = &F->M[j];
            if (q->reg != W->first + r || q->k != F->k)
                continue;
            if (isnan(q->top)) {
                will = 0;
                break;
            }
            double off = F->off[q->a] + F->off[q->b], v = q->v - off;
            if (v > R->far_lo - R->gap_us && v < R->far_lo)
                continue;       /* a straggler in the gap: neither class */
            if (v < R->far_lo) {
                v = q->top - off;
                near++;
                near_top = v > near_top ? v : near_top;
            } else {
                far_low = v < far_low ? v : far_low;
            }
            x[m++].r = v;
        }
        if (!will || near < 2 || !(near_top < far_low)) {
            will = 0;
            break;
        }
        qsort(x, (size_t)m, sizeof *x, cmp_pair_resid);
        double need = log((double)m) - log(FALSE_SPLIT);
        will = gap_margin(x, near, 0, m) >= need;
        if (will && F->k == 1)
            will = singles_reach(x, near, m, need);
    }
    free(x);
    return will && open > 0;
}

/* The depth's measurements so far read as single samples (meas.single), and its next
 * batches take one sample per pair. */
static void take_one_sample(fast *F, const walk *W)
{
    for (long j = F->depth_first_meas; j < F->nm; j++) {
        meas *q = &F->M[j];
        if (q->reg < W->first || q->reg >= W->last || q->k != F->k || isnan(q->single))
            continue;
        q->v = F->obs[j].v = q->single;
        q->k = 1;
    }
    F->k = 1;
    F->one_sample_depth = 1;
}

/* The depth's open regions start over with more samples per pair: twice as many, or the first
 * count after single samples. The depth's pairs so far were taken with fewer samples: their
 * minima sit higher, so they leave the cuts and the fit. */
static void start_over(fast *F, const walk *W)
{
    for (long j = 0; j < F->nm; j++)
        if (F->M[j].reg >= W->first && F->R[F->M[j].reg].state == OPEN)
            F->obs[j].cls = -1, F->M[j].k = -F->M[j].k;
    for (int r = 0; r < W->last - W->first; r++) {
        region *R = &F->R[W->first + r];
        if (R->state == OPEN) {
            R->rounds = R->tour = R->has_cut = R->blocks_seen = 0;
            R->best_share = 0;
            R->noise_sum = 0;
            R->noise_n = 0;
        }
    }
    /* From single samples back to the first count, the offsets they fitted forgotten, both
     * fits' (each host's took its own draws: a fit carried on from them fell short). The
     * two-level fit's too: carried from the singles of the top's first batch of 128 nodes
     * over IPoIB (run_depth), the next batch, of 3 samples, found no cut in 9 of 59 runs,
     * against 0-2 of 60 where the depth began with 3; with it forgotten, 5 of 59. */
    if (F->k < F->kfirst)
        for (int i = 0; i < F->n; i++)
            if (F->reg[i] >= W->first && F->R[F->reg[i]].state == OPEN)
                F->off[i] = F->off_two[i] = F->depth > 0 ? F->prior[i] : 0;
    int most = F->k < F->kmax ? F->kmax : F->kdeadline;
    int next = F->k < F->kfirst ? F->kfirst : 2 * F->k;
    F->k = next < most ? next : most;
    F->stage_start_us = ts_probe_now(F->e);
}

static int decide_depth(fast *F, walk *W, long batch_first)
{
    int nr = W->last - W->first, rc = TS_OK, escalate = 0;
    forest K = {malloc(sizeof(int) * (size_t)F->n), malloc(sizeof(int) * (size_t)F->n)};
    if (!K.par || !K.rank)
        rc = TS_ENOMEM;
    if (rc == TS_OK)
        rc = update_region_index(F, W);
    /* the pass that only classifies is needed while some region has no cut to classify by */
    int two_passes = rc == TS_OK ? classify_batch(F, W, batch_first) : 1;
    if (two_passes < 0)
        rc = TS_ENOMEM;
    int first_pass = two_passes ? 0 : FIT_PASSES - 1;
    for (int pass = first_pass; pass < FIT_PASSES && rc == TS_OK; pass++) {
        /* A batch of one pass refits offsets the last batch fitted already on every
         * equation but this batch's, and the sweeps carry on from batch to batch as the
         * measurements come (an incremental fit, warm-started): the first sweep moves each
         * offset by what its new equations say, the second by that move's echo through its
         * partners (each sweep shrinks the moves about sevenfold on 1024 and 8192 nodes,
         * ethernet and IPoIB noise alike), leaving what a third would move far below the
         * noise. One sweep alone left enough of the echo to cost IPoIB's decisions rounds
         * (the 1024-node median 5 % more probing time, some runs half as much again). A batch
         * with a region still without a cut (a depth's first batches, a region starting over
         * with more samples) refits from further off: all OFFSET_SWEEPS. */
        rc = fit_offsets(F, F->depth_first_meas, first_pass ? CARRIED_SWEEPS : OFFSET_SWEEPS,
                         pass < FIT_PASSES - 1);
        if (rc == TS_OK)
            rc = clear_separations(F);
        for (int r = 0; r < nr && rc == TS_OK; r++)
            rc = decide_region(F, W, r, &K, pass == FIT_PASSES - 1);
    }
    for (int r = 0; r < nr && rc == TS_OK; r++) {
        region *R = &F->R[W->first + r];
        if (R->state != OPEN)
            continue;
        settle_region(F, R, &escalate);
        /* A region decided leaves the offset fit: its nodes keep the offsets this batch fitted
         * (F->offset_work.keep_unfitted), which further sweeps over the same equations would
         * only polish, and the depth's later batches refit only the regions still measured.
         * (A depth's regions share no equations: each is a fit of its own, but for the
         * shrinkage, one equation of the noisiest class still in the fit.) */
        if (R->state != OPEN)
            for (long e = W->ix.start[r]; e < W->ix.start[r + 1]; e++)
                F->obs[W->ix.at[e].j].cls = -1;
    }
    if (escalate && rc == TS_OK)
        start_over(F, W);
    free(K.par);
    free(K.rank);
    return rc;
}

/* The rounds of the next batch: BATCH, or, where every open region of the depth is in its
 * first tournament, no cut yet, and a tournament's whole proof (tournament_proof) fits in
 * BATCH_PROOF rounds, the rounds to the end of the proofs: such a region decides nothing
 * before its proof (settle_region), and a batch's gather/scatter step costs several rounds'
 * time. The leaves of 8 of 1024 nodes, proven in 11 rounds, took two batches of 8: over
 * kernel UDP 6.7 ms where one of 11 takes 4.0 (1.3 of them the step). Not where a proof
 * takes more than one batch: the pods of 16 of a 128-node fat tree over RDMA, proven in 23
 * rounds, whose gap lies near its threshold under one shuffle of the names, took a second
 * batch of 15 rounds in place of two of 8, one look fewer, and were exact in 19 of 30 runs
 * where they had been in 24. Nor at a job's top: a job of 8 nodes drawn at random from the
 * 128-node fat tree (the bench's scheduler jobs, IPoIB, draw 18), four of them in one pod and
 * four in three others, took its 11 rounds in one batch and reported the other four as a
 * pod of their own, measured; with looks at 8 and 16 rounds it is partial, as before. */
static int batch_rounds(const fast *F, const walk *W)
{
    int rounds = BATCH;
    if (F->depth == 0)
        return BATCH;
    for (int r = 0; r < W->last - W->first; r++) {
        const region *R = &F->R[W->first + r];
        int nmem = W->rstart[r + 1] - W->rstart[r];     /* (R->nmem: once planned) */
        if (R->state != OPEN || nmem <= 2)
            continue;
        int proof = tournament_proof(nmem);
        if (R->has_cut || nmem > STAR_PROOF_MAX || proof > BATCH_PROOF)
            return BATCH;
        rounds = proof - R->tour > rounds ? proof - R->tour : rounds;
    }
    return rounds;
}

/* Whether the depth's first batch takes one sample per pair: at the top of a job too big for a
 * tournament (one_sample_will_do's regions), unless the caller chose the samples. There the
 * far pairs all cross the top switch and load its links, which lifts the far class far above
 * a near pair's noise, and a round of three samples costs most: its slowest pair's three
 * round trips under that load (1024 nodes over kernel UDP: 650 us a round, 225 with one
 * sample). The batch itself shows whether single samples will do (one_sample_will_do on
 * them); where they will not, the depth starts over with the first count, a batch of single
 * samples lost (the top of 128 nodes over IPoIB: 1.4 ms). Below the top a region's far pairs
 * cross its own switch alone, and its first batch takes the first count (run_depth). */
static int pilot_one_sample(const fast *F)
{
    return F->depth == 0 && !F->kchosen && F->est == TS_ESTIMATE_MIN && F->n > STAR_PROOF_MAX;
}

/* Batches of rounds for all the regions of the current depth until each is decided. F->far
 * holds the separations the last decision found; planning adds its tests to them. A depth's
 * first batch may show that one sample per pair will do for the rest of it: taken with one
 * (pilot_one_sample), or with the first count (3), its near pairs read at the largest of
 * their three (take_one_sample). */
static int run_depth(fast *F, walk *W)
{
    int rc = TS_OK, pilot = pilot_one_sample(F);
    F->k = pilot ? 1 : F->kfirst;
    F->stage_start_us = ts_probe_now(F->e);
    F->depth_first_meas = F->nm;
    if (F->depth > 0) {
        memcpy(F->prior, F->off, sizeof(double) * (size_t)F->n);
        memcpy(F->prior_w, F->weight, sizeof(double) * (size_t)F->n);
        /* offsets fitted on single samples took each host's own draws: no prior for the
         * depth below (carried, a pod's cut never stood, up to 48 samples per pair: 3 of 300
         * runs of the bench's shuffled 128-node fat trees partial, the whole tree unresolved) */
        if (F->one_sample_depth)
            memset(F->prior_w, 0, sizeof(double) * (size_t)F->n);
        F->one_sample_depth = 0;
    }
    if ((rc = clear_separations(F)) != TS_OK)
        return rc;
    for (int first_batch = 1;;) {
        group_by_region(F, W);
        int active = 0, nr = W->last - W->first;
        memset(W->np, 0, sizeof W->np);
        W->nb = batch_rounds(F, W);
        for (int r = 0; r < nr && rc == TS_OK; r++)
            rc = plan_region(F, W, r, &active);
        if (rc != TS_OK || !active)
            return rc;
        long batch_first = F->nm;
        if ((rc = measure_batch(F, W)) != TS_OK)
            return rc;
        group_by_region(F, W);
        if ((rc = decide_depth(F, W, batch_first)) != TS_OK)
            return rc;
        if (first_batch && pilot && F->k == 1) {
            int will = one_sample_will_do(F, W, batch_first);
            if (will < 0)
                return TS_ENOMEM;
            if (will)
                F->one_sample_depth = 1;
            else
                start_over(F, W);
        } else if (first_batch && !pilot && !F->kchosen && F->k == F->kfirst) {
            int will = one_sample_will_do(F, W, batch_first);
            if (will < 0)
                return TS_ENOMEM;
            if (will)
                take_one_sample(F, W);
        }
        first_batch = 0;
    }
}

/* ---- the tree ---- */

/* A switch unresolved, named by a node hanging from it (grouping_only: the switch over the
 * nodes whose unresolved_of names it, and only how its children group is in doubt). */
static int note_doubt(fast *F, int node, int grouping_only)
{
    if (F->nambiguous == F->capambiguous) {
        int cap = F->capambiguous ? 2 * F->capambiguous : 8;
        int *a = realloc(F->ambiguous, sizeof(int) * (size_t)cap);
        if (a)
            F->ambiguous = a;
        unsigned char *g = realloc(F->grouping_only, (size_t)cap);
        if (g)
            F->grouping_only = g;
        if (!a || !g)
            return TS_ENOMEM;
        F->capambiguous = cap;
    }
    F->grouping_only[F->nambiguous] = (unsigned char)grouping_only;
    F->ambiguous[F->nambiguous++] = node;
    return TS_OK;
}

static int note_unresolved(fast *F, int node)
{
    return note_doubt(F, node, 0);
}

/* Half the round trip at which the region's switch joins its nodes: a rough height, so the
 * tree has plausible lengths for rooting; link latencies come from the link plan. */
static double region_height(const region *R)
{
    return isfinite(R->level) ? 0.5 * R->level : 1.0;
}

/* The region into the tree: a split one's fragments become child regions (a fragment of one
 * node hangs from the switch itself), any other region's nodes hang from its switch. */
static int emit_region(fast *F, int ri, const int *mem, int nmem, int *next_reg, int *child)
{
    /* (new_region below may move F->R: what this needs of the region is read first) */
    const region *R = &F->R[ri];
    double h = region_height(R);
    int split = R->state == SPLIT, grouped = split && R->grouped, vert = R->vert;
    double scale = split && R->step_us < R->scale_us ? R->step_us : R->scale_us;
    if ((R->state == UNRESOLVED || R->ungrouped) && nmem > 0) {
        if (note_unresolved(F, mem[0]) != TS_OK)
            return TS_ENOMEM;
        for (int i = 0; i < nmem; i++)
            if (F->unresolved_of[mem[i]] < 0)
                F->unresolved_of[mem[i]] = F->nambiguous - 1;
    }
    if (R->state == OPEN)
        F->e->partial = 1;
    R = NULL;
    int *size = child + F->n, *gsw = child + 2 * F->n;
    for (int i = 0; i < nmem; i++)
        size[mem[i]] = 0, child[mem[i]] = -1, gsw[mem[i]] = -1;
    for (int i = 0; i < nmem; i++)
        size[ts_uf_find(F->uf, mem[i])]++;
    for (int i = 0; i < nmem; i++) {
        int x = mem[i], rt = ts_uf_find(F->uf, x);
        next_reg[x] = -1;
        if (F->count[x] == 0)
            continue;           /* never measured (deadline): reported, not placed */
        /* a child of a grouped split hangs from its group's switch, half a level below */
        int parent = vert;
        if (grouped) {
            int gr = ts_uf_find(F->grp, rt);
            if (gsw[gr] < 0 && (gsw[gr] = ts_utree_add(F->t, vert, 0.5 * h, TS_NONE)) < 0)
                return TS_ENOMEM;
            parent = gsw[gr];
        }
        if (!split || size[rt] == 1) {
            if (ts_utree_add(F->t, parent, h, x) < 0)
                return TS_ENOMEM;
            F->lone_children += split;
            continue;
        }
        if (child[rt] < 0) {
            /* the child switch sits about one level below: its height is learnt next depth */
            int v = ts_utree_add(F->t, parent, 0.1 * h, TS_NONE);
            int nr = v < 0 ? -1 : new_region(F, v, scale);
            if (nr < 0)
                return TS_ENOMEM;
            child[rt] = nr;
        }
        next_reg[x] = child[rt];
    }
    return TS_OK;
}

static int emit_depth(fast *F, walk *W, int *next_reg)
{
    int nr = W->last - W->first, rc = TS_OK;
    group_by_region(F, W);
    int *child = malloc(sizeof(int) * (size_t)(3 * F->n));
    if (!child)
        return TS_ENOMEM;
    F->lone_children = 0;
    for (int r = 0; r < nr && rc == TS_OK; r++)
        rc = emit_region(F, W->first + r, W->order + W->rstart[r], W->rstart[r + 1] - W->rstart[r],
                         next_reg, child);
    free(child);
    for (int i = 0; i < F->n; i++)
        if (F->reg[i] >= W->first && !F->dead[i])
            F->reg[i] = next_reg[i];
    return rc;
}

/* A region below the method's floor (3 to 2 STAR_CHILD - 1 nodes, under a split) stands as a
 * star because the fabric's levels are built alike (hidden_child), and the job fills them:
 * every child of the splits above holds as many of its nodes, as the leaves of a fat tree
 * allocated whole do, and none is a star's neighbour that split. Otherwise the job holds only
 * some nodes of each switch, and a small region, whose test cannot see a level, may hide one:
 * a scheduler's job holds two or three nodes of a pod here, five of the next there, two of
 * them on one leaf. Jobs drawn from the 128-node fat tree, 32 nodes: five such pods taken for
 * stars over kernel UDP, beside a pod that split; seven over IPoIB, of 4 and 5 nodes beside a
 * node alone in its pod, none split (10 leaves of two missed, measured). Its star stays,
 * unpowered: the result is partial. */
static void doubt_floor_stars(fast *F, int first, int last)
{
    int filled = F->lone_children == 0;
    for (int r = first; r < last && filled; r++)
        filled = F->R[r].state != SPLIT && F->R[r].nmem == F->R[first].nmem;
    for (int r = first; r < last && !filled; r++) {
        region *R = &F->R[r];
        if (R->state == STAR && !R->unpowered && R->nmem >= 3 && R->nmem < 2 * STAR_CHILD) {
            R->unpowered = 1;
            F->nunpowered++;
        }
    }
}

static int fast_run(fast *F)
{
    int n = F->n, rc = TS_OK;
    walk W;
    memset(&W, 0, sizeof W);
    W.stride = (size_t)(n / 2 + 1);
    int *next_reg = malloc(sizeof(int) * (size_t)n);
    W.order = malloc(sizeof(int) * (size_t)n);
    W.scratch = malloc(sizeof(int) * (size_t)(3 * n + 8));
    W.pairs = malloc(sizeof *W.pairs * W.stride * BATCH_PROOF);
    W.st = malloc(sizeof *W.st * W.stride);
    if (!next_reg || !W.order || !W.scratch || !W.pairs || !W.st) {
        rc = TS_ENOMEM;
        goto out;
    }
    int root = ts_utree_add(F->t, TS_NONE, 0, TS_NONE);
    if (root < 0 || new_region(F, root, INFINITY) < 0) {
        rc = TS_ENOMEM;
        goto out;
    }
    for (int i = 0; i < n; i++)
        F->reg[i] = 0;
    while (W.first < F->nreg && rc == TS_OK) {
        W.last = F->nreg;
        free(W.rstart);
        W.rstart = calloc((size_t)(W.last - W.first) + 1, sizeof(int));
        if (!W.rstart) {
            rc = TS_ENOMEM;
            break;
        }
        rc = run_depth(F, &W);
        if (rc == TS_ELIMIT) {
            /* the deadline: the regions decided so far are split, the open ones stay one
             * switch each (partial), and the walk stops */
            int e2 = emit_depth(F, &W, next_reg);
            rc = e2 == TS_OK ? TS_ELIMIT : e2;
            if (rc == TS_ELIMIT)
                for (int i = 0; i < n; i++)
                    if (F->reg[i] >= W.last && !F->dead[i] && F->count[i] > 0 &&
                        ts_utree_add(F->t, F->R[F->reg[i]].vert, 1.0, i) < 0)
                        rc = TS_ENOMEM;
            break;
        }
        if (rc == TS_OK) {
            doubt_floor_stars(F, W.first, W.last);
            rc = emit_depth(F, &W, next_reg);
        }
        W.first = W.last;
        F->depth++;
    }
out:
    scratch *buffers[] = {&W.pairs_by_resid, &W.sort_keys, &W.sort_tmp,   &W.sort_out,
                          &W.gap,            &W.join_ints, &W.join_seams, &W.index_fresh};
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++)
        free(buffers[i]->p);
    free(W.ix.at);
    free(W.ix.spare);
    free(W.ix.start);
    free(next_reg);
    free(W.order);
    free(W.rstart);
    free(W.scratch);
    free(W.pairs);
    free(W.st);
    return rc;
}

/* The top region split straight into leaf switches (every child of the root a switch whose
 * children are nodes, FLAT_MIN_LEAVES or more of them). A fabric really built so is
 * level-structured, but so is what the top cut makes of an irregular one when the only
 * consistent cut it finds is the lowest, contention-free class of same-leaf pairs: the
 * additive method tells them apart, at one round per pair of leaves. */
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

/* Not level-structured (nodes at different depths, an unresolved region, a flat tree): the
 * threshold cuts cannot be trusted there, so the tree comes from the additive method of
 * fast_irregular.c instead; on failure fast's own tree stays. */
/* Every node's leaf group in t: the vertex of its parent switch (-1: not in the tree). */
static void leaf_groups(const ts_utree *t, int n, int *group)
{
    for (int i = 0; i < n; i++)
        group[i] = -1;
    for (int v = 0; v < t->nvert; v++)
        if (t->node[v] != TS_NONE && t->node[v] < n)
            group[t->node[v]] = t->parent[v];
}

/* Whether a and b group the live nodes alike (one-to-one between their group ids); when not,
 * *node is one of the nodes where they differ. Returns -1 when out of memory. */
static int same_partition(const int *a, const int *b, int n, const unsigned char *live, int *node)
{
    int top = 0;
    for (int i = 0; i < n; i++)
        top = a[i] > top ? a[i] : b[i] > top ? b[i] : top;
    int *ab = malloc(sizeof(int) * 2 * ((size_t)top + 1)), *ba = ab ? ab + top + 1 : NULL;
    if (!ab)
        return -1;
    for (int i = 0; i < 2 * (top + 1); i++)
        ab[i] = -2;
    int same = 1;
    for (int i = 0; i < n && same; i++) {
        if (!live[i])
            continue;
        if (a[i] < 0 || b[i] < 0) {
            if ((a[i] < 0) != (b[i] < 0))
                same = 0, *node = i;
            continue;
        }
        if ((ab[a[i]] != -2 && ab[a[i]] != b[i]) || (ba[b[i]] != -2 && ba[b[i]] != a[i]))
            same = 0, *node = i;
        ab[a[i]] = b[i];
        ba[b[i]] = a[i];
    }
    free(ab);
    return same;
}

/* Where the additive method's tree disagrees with fast's flat one (every region resolved,
 * leaf switches straight under the top): the doubt where it lies (ts_flat_doubts), noted as
 * unresolved regions: one per leaf in doubt (its switch and what it holds), and one over the
 * leaves left whole whose grouping under the top is in doubt (the top switch alone:
 * grouping_only). Before, any disagreement left the whole tree in doubt: over IPoIB, 16 pods
 * of 4 leaves of 2 nodes (each pod a star, its leaves below what the gap test tells from
 * chance), whose guess put half the nodes straight under the top, compared no link at all;
 * now the pods' 128 links to their nodes are compared, not their uplinks. */
static int locate_doubts(fast *F, const ts_utree *flat, const ts_utree *guess, const unsigned char *live)
{
    int *leaf = malloc(sizeof(int) * (size_t)F->n), *slot = malloc(sizeof(int) * (size_t)flat->nvert);
    unsigned char *doubt = malloc((size_t)flat->nvert);
    ts_flat_doubt d = {0, 0};
    int rc = leaf && slot && doubt ? ts_flat_doubts(flat, guess, live, F->n, leaf, doubt, &d) : TS_ENOMEM;
    int seen = rc == TS_OK && (d.whole || d.top);
    for (int v = 0; rc == TS_OK && v < flat->nvert; v++) {
        slot[v] = -1;
        seen |= doubt[v];
    }
    /* a disagreement no group shows (a switch of the guess over a single node): everywhere */
    d.whole |= rc == TS_OK && !seen;
    int top_slot = -1;
    for (int i = 0; rc == TS_OK && i < F->n; i++) {
        if (leaf[i] < 0 || F->unresolved_of[i] >= 0)
            continue;
        int in_leaf = doubt[leaf[i]];
        int *region_of = d.whole ? &top_slot : in_leaf ? &slot[leaf[i]] : d.top ? &top_slot : NULL;
        if (!region_of)
            continue;
        if (*region_of < 0 && (rc = note_doubt(F, i, !d.whole && !in_leaf)) == TS_OK)
            *region_of = F->nambiguous - 1;
        F->unresolved_of[i] = *region_of;
    }
    free(leaf);
    free(slot);
    free(doubt);
    return rc;
}

static int hand_over_irregular(fast *F, int *replaced)
{
    *replaced = 0;
    int lv = ts_irr_level_structured(F->t, F->unresolved_of);
    if (lv < 0)
        return TS_ENOMEM;
    if (lv == 1 && F->nambiguous == 0 && !flat_tree(F))
        return TS_OK;
    unsigned char *live = malloc((size_t)F->n);
    if (!live)
        return TS_ENOMEM;
    for (int i = 0; i < F->n; i++)
        live[i] = !F->dead[i] && F->count[i] > 0;
    /* fast's own leaf groups, to compare with the additive method's (below) */
    int *before = malloc(sizeof(int) * (size_t)F->n);
    if (!before) {
        free(live);
        return TS_ENOMEM;
    }
    leaf_groups(F->t, F->n, before);
    ts_stop_rule rule = F->e->rule;
    rule.min_samples = rule.max_samples = F->k;
    rule.estimator = F->est;
    int resolved = F->nambiguous == 0;
    /* fast's own splits where it resolved every region: the guess may add none (below) */
    ts_split_set fast_splits = {NULL, 0};
    if (resolved && ts_split_set_of(F->t, &fast_splits) != TS_OK) {
        free(before);
        free(live);
        return TS_ENOMEM;
    }
    /* On a fabric of levels with regions fast left unresolved, its own splits are significant
     * and stand: the additive method's tree adds only the splits that fit them, which fall in
     * those regions. Elsewhere (nodes at different depths: fast's splits are not to be
     * trusted) the additive method's tree replaces fast's whole. */
    ts_utree own;
    ts_utree_init(&own);
    int rc = lv == 1 && ts_utree_copy(&own, F->t) != TS_OK ? TS_ENOMEM : TS_OK;
    if (rc == TS_OK)
        rc = ts_irr_discover(F->e, &rule, live, F->t, replaced, F->err);
    if (rc == TS_ELIMIT) {
        F->e->partial = 1;
        rc = TS_OK;
    }
    int refined = 0, located = 0;
    if (rc == TS_OK && *replaced && !resolved && own.nvert > 0)
        rc = ts_split_set_of(&own, &F->own_splits);
    if (rc == TS_OK && *replaced && !resolved && own.nvert > 0) {
        int added, r2 = ts_utree_refine(&own, F->t, F->n, &added);
        if (r2 == TS_OK) {
            ts_utree_free(F->t);
            *F->t = own;
            ts_utree_init(&own);
            refined = 1;
        } else if (r2 == TS_ENOMEM) {
            rc = r2;
        }
    }
    /* Fast resolved every region, yet its tree has nodes at different depths (on a fabric of
     * levels, a mistake; in a job, nodes alone in their pods) or came straight to leaf switches
     * (flat_tree): the additive method's tree stands as measured only if it has fast's splits,
     * no more, no fewer. Fast found no level between those leaves (a small region's
     * also tested for groups of them: group_children); the guess's additive fit, one round
     * per pair of leaves, now and then groups two or three of them under a switch that is not
     * there (8 leaves of 2-4 nodes over RDMA: 5 wrong trees in 240 runs, measured; a job of 8
     * nodes over RDMA, its three pods of 2 apart from its two nodes alone in theirs: 1 in 30,
     * when only a flat tree was held to fast's splits), and now and then leaves a leaf switch
     * out, its nodes under the top switch, a leaf group still (8 leaves of 16 nodes over
     * kernel UDP: 4 wrong trees in 60 runs, measured, when only more splits were). Where the
     * two disagree, neither is trusted and the result is partial, the doubt where the two
     * differ (locate_doubts); the tree is fast's flat one,
     * every split of it significant (the guess's, contracted where fast's round trips do not
     * confirm it, grouped 8 leaves of 8 nodes over kernel UDP into groups of no leaf, leaf ARI
     * 0.45, in 17 of 30 runs). */
    if (rc == TS_OK && *replaced && resolved) {
        int *after = malloc(sizeof(int) * (size_t)F->n);
        ts_split_set guess_splits = {NULL, 0};
        if (!after || ts_split_set_of(F->t, &guess_splits) != TS_OK)
            rc = TS_ENOMEM;
        else {
            leaf_groups(F->t, F->n, after);
            int node = -1, same = same_partition(before, after, F->n, live, &node);
            /* (the same leaf groups, and yet a split more is a level, one fewer a leaf switch
             * left out: its nodes hang from its parent, a leaf group still) */
            if (same > 0 && (ts_split_set_missing(&fast_splits, &guess_splits) > 0 ||
                             ts_split_set_missing(&guess_splits, &fast_splits) > 0))
                for (int i = 0; i < F->n && same > 0; i++)
                    if (live[i])
                        same = 0, node = i;
            if (same < 0)
                rc = TS_ENOMEM;
            else if (!same && lv == 1)      /* fast's tree stays, its doubts where they lie */
                rc = locate_doubts(F, &own, F->t, live), located = 1;
            else if (!same)
                rc = note_unresolved(F, node);
            if (rc == TS_OK && !same && lv == 1) {
                ts_utree_free(F->t);
                *F->t = own;
                ts_utree_init(&own);
            }
        }
        free(after);
        ts_split_set_free(&guess_splits);
    }
    ts_utree_free(&own);
    ts_split_set_free(&fast_splits);
    /* a guess that replaced fast's tree where it left something unresolved is uncertain
     * everywhere: one region of every node */
    if (rc == TS_OK && *replaced && !refined && !located && F->nambiguous > 0)
        for (int i = 0; i < F->n; i++)
            F->unresolved_of[i] = live[i] ? 0 : -1;
    free(before);
    free(live);
    return rc;
}

/* ---- a guessed tree confirmed ---- */

/* The sets fast's round trips fall into: one per count of samples per pair (a minimum of more
 * samples sits lower), each compared with itself only. A stage given up for more samples
 * counts too: its round trips were inconclusive for a gap, not wrong. ks[0..*nk-1],
 * ascending, at most CONFIRM_SETS (the counts a depth takes are few: kfirst doubled, capped). */
static void confirm_sets(const fast *F, int *ks, int *nk)
{
    *nk = 0;
    for (int k = 0, next; *nk < CONFIRM_SETS; k = next) {
        next = 0;
        for (long j = 0; j < F->nm; j++) {
            int kj = abs(F->M[j].k);
            if (kj > k && (next == 0 || kj < next))
                next = kj;
        }
        if (next == 0)
            break;
        ks[(*nk)++] = next;
    }
}

static int cmp_confirm_meas(const void *x, const void *y)
{
    const ts_confirm_meas *a = x, *b = y;
    if (a->set != b->set)
        return a->set < b->set ? -1 : 1;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

/* fast's round trips, offsets off, by set and pair (*mp, *nmp: malloc'd), and each set's noise
 * (sigma[s]; NAN: too few pairs measured twice in it). */
static int confirm_data(const fast *F, const int *ks, int nk, ts_confirm_meas **mp, long *nmp,
                        double *sigma)
{
    long nm = 0;
    ts_confirm_meas *m = malloc(sizeof *m * (size_t)(F->nm + 1));
    if (!m)
        return TS_ENOMEM;
    for (long j = 0; j < F->nm; j++) {
        const meas *u = &F->M[j];
        int set = 0;
        while (set < nk && ks[set] != abs(u->k))
            set++;
        if (set == nk || F->dead[u->a] || F->dead[u->b])
            continue;
        int a = u->a < u->b ? u->a : u->b, b = u->a < u->b ? u->b : u->a;
        m[nm++] = (ts_confirm_meas){a, b, set, u->v - F->off[a] - F->off[b]};
    }
    qsort(m, (size_t)nm, sizeof *m, cmp_confirm_meas);
    for (int s = 0; s < nk; s++)
        sigma[s] = ts_confirm_noise(m, nm, s, CONFIRM_NOISE_PAIRS);
    *mp = m;
    *nmp = nm;
    return TS_OK;
}

/* Rounds [first, first + rounds) of the full tournament of the live nodes at k samples per
 * pair, kept in F->M at that count. A node silent here stays in the tree: it answered
 * before. */
static int confirm_rounds(fast *F, walk *W, const int *live, int nlive, int k, int first,
                          int rounds)
{
    ts_stop_rule rule = F->e->rule;
    rule.min_samples = rule.max_samples = k;
    rule.estimator = F->est;
    int rc = TS_OK;
    for (int t = first; t < first + rounds && rc == TS_OK; t++, F->rounds_stored++) {
        W->np[0] = 0;
        tournament_round(W, 0, live, nlive, t);
        if (t == first)     /* a fixed schedule: one gather/scatter step plans it all */
            rc = ts_probe_control(F->e, F->err);
        if (rc == TS_OK)
            rc = ts_probe_round_rule(F->e, W->pairs, W->np[0], &rule, W->st, F->err);
        for (int i = 0; rc == TS_OK && i < W->np[0]; i++) {
            if (W->st[i].samples == 0)
                continue;
            if (F->nm == F->capm) {
                long cap = 2 * F->capm + 64;
                if (grow_both(&F->M, sizeof *F->M, &F->obs, sizeof *F->obs, cap))
                    return TS_ENOMEM;
                F->capm = cap;
            }
            F->obs[F->nm] = (ts_offset_obs){W->st[i].a, W->st[i].b, -1, 0};
            F->M[F->nm++] = (meas){W->st[i].a, W->st[i].b, 0, k, F->rounds_stored + 1,
                                   ts_pair_estimate(&W->st[i], F->est), NAN, NAN};
        }
    }
    return rc;
}

/* Confirm tests every split of the tree, fast's own too where the guess only refined it. A
 * split of fast's that it contracted leaves a coarser tree outside the unresolved regions,
 * where no switch is marked: which switch absorbed it is not tracked, so the whole tree is
 * then one region left unresolved (as when the guess replaces fast's tree), and no link of it
 * is held against a baseline. Contracting the guess's own splits, inside the regions, is what
 * confirm is for: those are marked already. */
static int mark_own_contractions(fast *F)
{
    if (F->own_splits.n == 0)
        return TS_OK;
    ts_split_set now;
    if (ts_split_set_of(F->t, &now) != TS_OK)
        return TS_ENOMEM;
    long lost = ts_split_set_missing(&F->own_splits, &now);
    ts_split_set_free(&now);
    if (lost > 0)
        for (int i = 0; i < F->n; i++)
            F->unresolved_of[i] = !F->dead[i] && F->count[i] > 0 ? 0 : -1;
    return TS_OK;
}

/* Where fast left switches unresolved, the additive method's tree stands in: a guess. Its
 * splits are tested on fast's own round trips (confirm.c) and those they do not confirm are
 * contracted, so the partial result is a coarser but true tree. A job of up to
 * STAR_PROOF_MAX nodes whose guess does not stand yet measures its full tournament again (at
 * the count it was measured at), half a cycle per look up to CONFIRM_LOOKS, each while it
 * fits in DOUBLING_SHARE of the time left, as a doubling does (the rest is the link stage's),
 * and only under a deadline (without one nothing bounds the cost of a guess that never
 * stands). Sequential testing: each look spends its share of FALSE_SPLIT. */
static int confirm_guess(fast *F)
{
    int ks[CONFIRM_SETS], nk, rc = TS_OK;
    double sigma[CONFIRM_SETS];
    confirm_sets(F, ks, &nk);
    if (nk == 0)
        return TS_OK;
    int k = ks[nk - 1];         /* a look measures at the highest count: the most precise */
    int *live = malloc(sizeof(int) * (size_t)F->n), nlive = 0;
    walk W;
    memset(&W, 0, sizeof W);
    W.stride = (size_t)(F->n / 2 + 1);
    W.pairs = malloc(sizeof *W.pairs * W.stride);
    W.st = malloc(sizeof *W.st * W.stride);
    if (!live || !W.pairs || !W.st)
        rc = TS_ENOMEM;
    for (int i = 0; rc == TS_OK && i < F->n; i++)
        if (!F->dead[i] && F->count[i] > 0)
            live[nlive++] = i;
    int looks = nlive <= STAR_PROOF_MAX ? CONFIRM_LOOKS : 0;
    int half = (nlive + (nlive & 1)) / 2;           /* rounds: half the circle method's cycle */
    double alpha = FALSE_SPLIT / (looks + 1), start = ts_probe_now(F->e);
    int deadline = 0;
    for (int look = 0; rc == TS_OK; look++) {
        ts_confirm_meas *m;
        long nm;
        int fails = 0;
        if ((rc = confirm_data(F, ks, nk, &m, &nm, sigma)) != TS_OK)
            break;
        rc = ts_confirm_splits(F->t, F->n, m, nm, sigma, nk, alpha, 0, &fails);
        /* a look is predicted at the mean of those measured, the first from the last batch's
         * rounds, scaled to k samples per pair */
        double spent = ts_probe_now(F->e) - start;
        double next = look > 0 ? spent / look
                               : F->round_us * k / (F->round_k > 0 ? F->round_k : k) * half;
        double left = ts_probe_remaining_us(F->e);
        int more = rc == TS_OK && fails && !deadline && look < looks && isfinite(left) &&
                   next <= DOUBLING_SHARE * left;
        if (rc == TS_OK && fails && !more) {
            rc = ts_confirm_splits(F->t, F->n, m, nm, sigma, nk, alpha, 1, &fails);
            if (rc == TS_OK && fails)
                rc = mark_own_contractions(F);
        }
        free(m);
        if (rc != TS_OK || !more)
            break;
        rc = confirm_rounds(F, &W, live, nlive, k, look * half, half);
        if (rc == TS_ELIMIT)    /* the deadline ends the looks: the tree is tested as it stands */
            rc = TS_OK, deadline = 1;
    }
    free(live);
    free(W.pairs);
    free(W.st);
    return rc;
}

static int report_outcome(fast *F, ts_infer_report *rep, int replaced)
{
    int n = F->n, nun = 0;
    for (int i = 0; i < n; i++)
        nun += F->dead[i] || F->count[i] == 0;
    if (nun > 0) {
        rep->unmeasured = malloc(sizeof(int) * (size_t)nun);
        if (!rep->unmeasured)
            return TS_ENOMEM;
        for (int i = 0; i < n; i++)
            if (F->dead[i] || F->count[i] == 0)
                rep->unmeasured[rep->nunmeasured++] = i;
    }
    /* The additive method's tree replaces fast's. Where fast left switches unresolved, that
     * tree is a guess there: its splits that fast's round trips do not confirm were contracted
     * (confirm_guess), and the unresolved switches stay reported (the result is partial): a
     * confirmed split is true, but a level the guess misses is not excluded. A tree it
     * replaced only because fast's nodes sat at different depths, every region resolved,
     * stands as measured; where fast's resolved tree was flat and the guess disagreed with it,
     * fast's tree stays, partial (hand_over_irregular). */
    rep->ambiguous = F->ambiguous;
    rep->nambiguous = F->nambiguous;
    F->ambiguous = NULL;
    rep->grouping_only = F->grouping_only;
    F->grouping_only = NULL;
    if (F->nambiguous > 0) {
        rep->unresolved_of = F->unresolved_of;
        F->unresolved_of = NULL;
    }
    rep->tol_us = isfinite(F->min_gap_us) ? F->min_gap_us : 0;
    rep->noise_us = F->noise_us;
    rep->star_resolution_us = F->star_res_us;
    rep->nunpowered = F->nunpowered;
    rep->unpowered_us = F->unpowered_us;
    rep->reference = 0;
    return TS_OK;
}

int ts_discover_fast(ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep, ts_error *err)
{
    /* Two nodes: their one pair is the whole plan, and there is nothing to split, so it is
     * the all-pairs plan. */
    if (e->tp->nnodes == 2)
        return ts_discover_allpairs(e, tree, rep, err);
    int rc = ts_method_begin("the fast method", e, tree, rep, err);
    if (rc != TS_OK)
        return rc;
    int n = e->tp->nnodes, replaced = 0;
    fast F;
    memset(&F, 0, sizeof F);
    F.e = e;
    F.t = tree;
    F.err = err;
    F.n = n;
    F.kfirst = e->samples_first > 0 ? e->samples_first : SAMPLES_FIRST;
    F.kmax = e->samples_max > 0 ? e->samples_max : SAMPLES_MAX;
    if (F.kmax < F.kfirst)
        F.kmax = F.kfirst;
    if (F.kmax > TS_SAMPLES_MAX)
        F.kmax = TS_SAMPLES_MAX;
    F.kdeadline = e->samples_max > 0 ? F.kmax : TS_SAMPLES_MAX;
    F.kchosen = e->samples_first > 0;
    F.k = F.kfirst;
    F.least_step_us = e->least_level_step_us > 0 ? e->least_level_step_us : LEVEL_STEP_FLOOR_US;
    F.est = e->estimator == TS_ESTIMATE_MEAN ? TS_ESTIMATE_MEAN : TS_ESTIMATE_MIN;
    F.ci_z = ts_normal_quantile(0.5 * (1 + e->rule.confidence));
    F.min_gap_us = INFINITY;
    F.offset_work.keep_unfitted = 1;
    F.two_level_work.keep_unfitted = 1;
    ts_rng_seed_stream(&F.rng, ((uint64_t)n * 0x9e3779b97f4a7c15ULL) ^ (e->plan_seed * 0xbf58476d1ce4e5b9ULL),
                       0xfa57u);
    F.reg = malloc(sizeof(int) * (size_t)n);
    F.uf = malloc(sizeof(int) * (size_t)n);
    F.local = malloc(sizeof(int) * (size_t)n);
    F.grp = malloc(sizeof(int) * (size_t)n);
    F.apart = calloc((size_t)n, sizeof(int));
    F.off = calloc((size_t)n, sizeof(double));
    F.off_two = calloc((size_t)n, sizeof(double));
    F.weight = calloc((size_t)n, sizeof(double));
    F.prior = calloc((size_t)n, sizeof(double));
    F.prior_w = calloc((size_t)n, sizeof(double));
    F.dead = calloc((size_t)n, 1);
    F.silent = calloc((size_t)n, 1);
    F.count = calloc((size_t)n, sizeof(int));
    F.unresolved_of = malloc(sizeof(int) * (size_t)n);
    rc = F.reg && F.uf && F.local && F.grp && F.apart && F.off && F.off_two && F.weight && F.prior &&
                 F.prior_w && F.dead && F.silent && F.count && F.unresolved_of &&
                 pairset_init(&F.far, 1024) == 0 && pairset_init(&F.seconded, 1024) == 0
             ? TS_OK : TS_ENOMEM;
    /* every node its own fragment until its region's cut joins some (a region the deadline
     * left unmeasured is emitted so too) */
    for (int i = 0; rc == TS_OK && i < n; i++)
        F.uf[i] = i, F.unresolved_of[i] = -1;
    if (rc == TS_OK)
        rc = fast_run(&F);
    if (rc == TS_ELIMIT) {
        e->partial = 1;
        rc = TS_OK;
    }
    if (rc == TS_OK && !e->partial)
        rc = hand_over_irregular(&F, &replaced);
    if (rc == TS_OK && replaced && F.nambiguous > 0)
        rc = confirm_guess(&F);
    if (rc == TS_OK)
        rc = report_outcome(&F, rep, replaced);
    if (rc == TS_ENOMEM)
        rc = ts_fail(err, TS_ENOMEM, "out of memory for %d nodes", n);
    free(F.reg);
    free(F.uf);
    free(F.local);
    free(F.grp);
    free(F.apart);
    free(F.off);
    free(F.weight);
    free(F.prior);
    free(F.prior_w);
    ts_offset_work_free(&F.offset_work);
    ts_offset_work_free(&F.two_level_work);
    free(F.two_level);
    free(F.off_two);
    free(F.dead);
    free(F.silent);
    free(F.count);
    free(F.far.key);
    free(F.seconded.key);
    free(F.R);
    free(F.M);
    free(F.obs);
    free(F.ambiguous);
    free(F.grouping_only);
    free(F.unresolved_of);
    ts_split_set_free(&F.own_splits);
    if (rc != TS_OK) {
        ts_utree_free(tree);
        ts_infer_report_free(rep);
    }
    return rc;
}
