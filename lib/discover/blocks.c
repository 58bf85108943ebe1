/* toposcope — a region's children as blocks of its whole matrix (blocks.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "blocks.h"

/* How far the pairs across the blocks lab[0..n-1] lie above those within, on distances D: the
 * difference of the classes' means over its standard error, on their pooled variance; -INFINITY
 * when a class has fewer than 2 pairs. */
static double separation(const double *D, int n, const int *lab)
{
    double sum[2] = {0, 0}, sq[2] = {0, 0};
    long cnt[2] = {0, 0};
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int across = lab[i] != lab[j];
            double v = D[i * n + j];
            sum[across] += v, sq[across] += v * v, cnt[across]++;
        }
    if (cnt[0] < 2 || cnt[1] < 2)
        return -INFINITY;
    double ss = 0;
    for (int k = 0; k < 2; k++)
        ss += sq[k] - sum[k] * sum[k] / (double)cnt[k];
    double s2 = ss / (double)(cnt[0] + cnt[1] - 2);
    if (!(s2 > 0))
        return -INFINITY;
    return (sum[1] / (double)cnt[1] - sum[0] / (double)cnt[0]) /
           sqrt(s2 / (double)cnt[0] + s2 / (double)cnt[1]);
}

int ts_linkage_partition(const double *D, int n, int min_block, int *lab)
{
    size_t nn = (size_t)n * (size_t)n;
    int *size = malloc(sizeof(int) * (size_t)n);
    int *cur = malloc(sizeof(int) * (size_t)n);     /* a node's block: its first node */
    double *L = malloc(sizeof(double) * nn);        /* the blocks' distances as they merge */
    if (!size || !cur || !L) {
        free(size), free(cur), free(L);
        return -1;
    }
    memcpy(L, D, sizeof(double) * nn);
    /* Average linkage down to two blocks. Of the partitions on the way, each of 2 blocks or more
     * whose every block holds min_block nodes, the one whose pairs across lie furthest above
     * those within (separation): the first such partition may split a child whose members'
     * first measurements fell apart (64 nodes in leaves of 8 over IPoIB: 2 pods of 16 at 3
     * samples per pair), a later one joins children. */
    int under = 0, c = n, best_c = 0;   /* blocks below min_block nodes; blocks */
    double best = -INFINITY;
    for (int i = 0; i < n; i++) {
        size[i] = 1, cur[i] = i;
        under += 1 < min_block;
    }
    while (c > 2) {
        int p = -1, q = -1;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; cur[i] == i && j < n; j++)
                if (cur[j] == j && (p < 0 || L[i * n + j] < L[p * n + q]))
                    p = i, q = j;
        /* the merged block's distance to each other one: the mean over their pairs
         * (Lance-Williams) */
        for (int k = 0; k < n; k++)
            if (cur[k] == k && k != p && k != q)
                L[p * n + k] = L[k * n + p] =
                    (size[p] * L[p * n + k] + size[q] * L[q * n + k]) / (size[p] + size[q]);
        under -= (size[p] < min_block) + (size[q] < min_block);
        size[p] += size[q];
        under += size[p] < min_block;
        c--;
        for (int i = 0; i < n; i++)
            if (cur[i] == q)
                cur[i] = p;
        double z = under == 0 ? separation(D, n, cur) : -INFINITY;
        if (z > best) {
            best = z, best_c = c;
            memcpy(lab, cur, sizeof(int) * (size_t)n);
        }
    }
    if (best_c >= 2) {
        for (int i = 0, b = 0; i < n; i++)  /* (size: a block's number from here on) */
            if (lab[i] == i)
                size[i] = b++;
        for (int i = 0; i < n; i++)
            lab[i] = size[lab[i]];
    }
    free(size), free(cur), free(L);
    return best_c;
}

/* Running sums of one class of held-out means. */
typedef struct moments {
    double sum, sq;
    long n;
} moments;

static void moments_add(moments *s, double v)
{
    s->sum += v;
    s->sq += v * v;
    s->n++;
}

static double moments_mean(const moments *s)
{
    return s->sum / (double)s->n;
}

/* The sum of squared deviations from the class's own mean. */
static double moments_ss(const moments *s)
{
    double d = s->sq - s->sum * s->sum / (double)s->n;
    return d > 0 ? d : 0;
}

/* A chi-square of dof degrees of freedom as a standard normal z (Wilson-Hilferty). */
static double chi_square_z(double chi2, int dof)
{
    double h = 2.0 / (9.0 * dof);
    return (cbrt(chi2 / dof) - (1 - h)) / sqrt(h);
}

/* The cells' means against their class's: the level of every pair of blocks above near (on
 * the pooled noise s2), and the spread of the cells' means within each class (grouping_z,
 * blocks_z). */
static void test_cells(const moments *cell, int c, double mn, double s2_near, long n_near,
                       double mf, double s2_far, double s2, ts_blocks_test *t)
{
    double chi_far = 0, chi_near = 0;
    t->apart_z = INFINITY;
    for (int p = 0; p < c; p++)
        for (int q = p; q < c; q++) {
            const moments *s = &cell[p * c + q];
            double mu = moments_mean(s);
            if (p == q) {
                chi_near += (double)s->n * (mu - mn) * (mu - mn) / s2_near;
                continue;
            }
            chi_far += (double)s->n * (mu - mf) * (mu - mf) / s2_far;
            double z = (mu - mn) / sqrt(s2 / (double)s->n + s2 / (double)n_near);
            if (z < t->apart_z)
                t->apart_z = z;
        }
    int npairs = c * (c - 1) / 2;
    t->grouping_z = npairs > 1 ? chi_square_z(chi_far, npairs - 1) : -INFINITY;
    t->blocks_z = chi_square_z(chi_near, c - 1);
}

/* Node by node: its pairs within its block against near (node_z), and against its pairs to
 * each other block (assign_z). byblock is scratch of c. */
static void test_nodes(const int *lab, int n, int c, const double *Bsum, const int *Bn,
                       double mn, double s2_near, double s2_far, moments *byblock,
                       ts_blocks_test *t)
{
    t->assign_z = INFINITY;
    t->node_z = -INFINITY;
    for (int i = 0; i < n; i++) {
        memset(byblock, 0, sizeof *byblock * (size_t)c);
        for (int j = 0; j < n; j++)
            if (j != i && Bn[i * n + j])
                moments_add(&byblock[lab[j]], Bsum[i * n + j] / Bn[i * n + j]);
        const moments *own = &byblock[lab[i]];
        if (own->n == 0)
            continue;
        double z = (moments_mean(own) - mn) / sqrt(s2_near / (double)own->n);
        if (z > t->node_z)
            t->node_z = z;
        for (int p = 0; p < c; p++) {
            if (p == lab[i] || byblock[p].n == 0)
                continue;
            z = (moments_mean(&byblock[p]) - moments_mean(own)) /
                sqrt(s2_far / (double)byblock[p].n + s2_near / (double)own->n);
            if (z < t->assign_z)
                t->assign_z = z;
        }
    }
}

int ts_test_partition(const int *lab, int n, int c, const double *Bsum, const int *Bn,
                      ts_blocks_test *t)
{
    moments *cell = calloc((size_t)c * (size_t)c, sizeof *cell);
    if (!cell)
        return -1;
    moments near = {0}, far = {0};
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!Bn[i * n + j])
                continue;
            double v = Bsum[i * n + j] / Bn[i * n + j];
            int p = lab[i] < lab[j] ? lab[i] : lab[j], q = lab[i] < lab[j] ? lab[j] : lab[i];
            moments_add(&cell[p * c + q], v);
            moments_add(p == q ? &near : &far, v);
        }
    double ss_near = 0, ss_far = 0;
    int tested = 1;
    for (int p = 0; p < c && tested; p++)
        for (int q = p; q < c && tested; q++) {
            tested = cell[p * c + q].n > 0;
            *(p == q ? &ss_near : &ss_far) += tested ? moments_ss(&cell[p * c + q]) : 0;
        }
    long dof_near = near.n - c, dof_far = far.n - (long)c * (c - 1) / 2;
    double s2_near = dof_near > 0 ? ss_near / (double)dof_near : 0;
    double s2_far = dof_far > 0 ? ss_far / (double)dof_far : 0;
    if (!tested || dof_near < 2 || dof_far < 2 || !(s2_near > 0) || !(s2_far > 0)) {
        free(cell);
        return 0;
    }
    double mn = moments_mean(&near), mf = moments_mean(&far);
    /* the level and the pairs of blocks on the noise pooled over both classes: on a class's
     * own, a near class that drew no high values has both a low mean and a low variance,
     * which under a star gave the level's z a tail 4 times the normal's at 3.09 (one-sided
     * noise, blocks of 16 nodes, t_blocks) */
    double s2 = (ss_near + ss_far) / (double)(dof_near + dof_far);
    t->step_us = mf - mn;
    t->level_z = (mf - mn) / sqrt(s2 / (double)near.n + s2 / (double)far.n);
    t->mixed_z = log(s2_near / s2_far) / sqrt(2.0 / (double)dof_near + 2.0 / (double)dof_far);
    test_cells(cell, c, mn, s2_near, near.n, mf, s2_far, s2, t);
    test_nodes(lab, n, c, Bsum, Bn, mn, s2_near, s2_far, cell, t);  /* (cell: scratch now) */
    free(cell);
    return 1;
}
