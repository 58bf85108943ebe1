/* toposcope — a region's children as blocks of its whole matrix of round trips (private to
 * lib/; fast.c's partition look).
 *
 * Where a level's step is about the noise of one pair's estimate, the near and far classes'
 * tails overlap: no threshold on single pairs separates them (the gap test of fast.c is never
 * significant), while the blocks the children make stand out of the whole matrix, each pair of
 * blocks and each node by the mean of many pairs. The blocks are found on one half of the
 * measurements and tested on the other (sample splitting): the test does not see the choice,
 * so that its statistics have their plain null distributions. */
#ifndef TOPOSCOPE_BLOCKS_H
#define TOPOSCOPE_BLOCKS_H

/* The children's blocks on average linkage's way up (the two blocks of least mean distance
 * merge): of the partitions into 2 blocks or more whose every block holds min_block nodes or
 * more, the one whose pairs across lie furthest above its pairs within, in standard errors of
 * the difference of their means. Returns its count of blocks, with lab[i] the block of node i,
 * 0..count-1; 0 when there is no such partition, -1 when out of memory. D is the n x n matrix
 * of distances (every pair's, symmetric). */
int ts_linkage_partition(const double *D, int n, int min_block, int *lab);

/* What a partition's held-out measurements say, each in standard errors (z). */
typedef struct ts_blocks_test {
    /* for the blocks */
    double level_z;         /* the pairs across blocks (far) above those within (near) */
    double apart_z;         /* the least a pair of blocks' pairs lie above near */
    double assign_z;        /* the least a node's pairs to another block lie above its pairs
                             * to its own */
    /* against them (chi-square z's and a variance ratio's) */
    double grouping_z;      /* pairs of blocks on levels of their own: blocks that group, a
                             * level a flat split would hide */
    double blocks_z;        /* blocks on near levels of their own */
    double mixed_z;         /* pairs within blocks varying more than pairs across: blocks of
                             * two children */
    double node_z;          /* the most a node's pairs within its block lie above near: a node
                             * in a block not its own, or alone in its child */
    double step_us;         /* far's mean over near's */
} ts_blocks_test;

/* The test of the partition lab[0..n-1] into c blocks on the held-out measurements: pair
 * (i, j)'s held-out mean is Bsum[i * n + j] / Bn[i * n + j] (none where Bn is 0). Means are
 * compared on each class's noise pooled within its cells (a block, a pair of blocks), so that
 * levels that differ from cell to cell show in the cells' means, not in the noise. Returns 1
 * with *t filled, 0 when some block or pair of blocks has no held-out pair or a class too few
 * (no test), -1 when out of memory. */
int ts_test_partition(const int *lab, int n, int c, const double *Bsum, const int *Bn,
                      ts_blocks_test *t);

#endif
