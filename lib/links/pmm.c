/* toposcope — the PMM baseline (Liu et al., "An Efficient Method for Determining Full
 * Point-to-point Latency of Arbitrary Indirect HPC Networks", seed 000): a link plan for a
 * known tree.
 *
 * Step a: every node pair's path is a 0/1 row over the links (a link is named by its lower
 * vertex; the paper's rows hold 2 for a round trip, a scale that changes nothing).
 * Step b: a maximal linearly independent subset (the paper's MMSet) by Gaussian elimination
 * over the reals, row after row in pair order (1,2), (1,3), ..., (n-1,n): each row is reduced
 * against the rows kept so far and kept when something is left; its pivot is its largest
 * remaining entry (partial pivoting).  Rows are examined until the rank reaches the number of
 * links, a bound that needs no proof (there are no more columns); on a tree with a degree-2
 * switch (an aggregated link) the rank stays below it and all n(n-1)/2 rows are examined, as
 * in the paper.  The smaller bound, links minus one per link lost in a degree-2 chain, holds
 * on trees (t_pmm.c checks it) but stopping there would no longer be the method whose cost we
 * compare against.
 * Step c: the measuring path graph (two chosen paths are adjacent when they share a link, or
 * a node, which does one ping-pong at a time) coloured by Welch-Powell: vertices by degree,
 * largest first, each colour takes every vertex in that order not adjacent to one it has.
 * In pair order the first node lies on about n of the chosen paths, so
 * they form a clique and the plan needs about n - 1 rounds (Figure 2: 5, as in the paper's
 * Fig. 3); the paper's remedy, trying other row orders, is not part of the baseline.
 *
 * Cost: O(n^2 r) row reductions of O(m) each (r = rank <= m links), O(r^2) bits for the graph.
 * Measured (-O2, one core): 64 nodes 0.001 s, 128 nodes 0.005 s, 256 nodes 0.05 s, the
 * paper's 432-node fat tree 0.27 s; rows are sparse, so a reduction skips every basis row
 * whose pivot column the row does not touch. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/pmm.h"
#include "toposcope/links.h"

#define PMM_MAX_LINKS 20000     /* the dense basis is rank x links doubles */

typedef struct basis {
    int m, rank, cap;
    double *row;                /* rank rows of m entries, each reduced against the earlier */
    int *pivot;                 /* pivot column of each row */
} basis;

/* Reduce v against the basis; keep it if something is left. Returns 1 if kept, 0 if not, -1
 * when out of memory. */
static int basis_offer(basis *B, double *v, const int *cols, int ncols)
{
    for (int r = 0; r < B->rank; r++) {
        double c = v[B->pivot[r]];
        if (c == 0)
            continue;
        const double *br = B->row + (size_t)r * B->m;
        double f = c / br[B->pivot[r]];
        for (int j = 0; j < B->m; j++)
            v[j] -= f * br[j];
    }
    int piv = -1;
    double best = 1e-9 * ncols;   /* entries are small integers: anything this small is round-off */
    for (int j = 0; j < B->m; j++)
        if (fabs(v[j]) > best) {
            best = fabs(v[j]);
            piv = j;
        }
    if (piv < 0)
        return 0;
    if (B->rank == B->cap) {
        int cap = B->cap ? 2 * B->cap : 64;
        if (cap > B->m)
            cap = B->m;
        double *row = realloc(B->row, sizeof(double) * (size_t)cap * (size_t)B->m);
        int *pivot = realloc(B->pivot, sizeof(int) * (size_t)cap);
        if (row)
            B->row = row;
        if (pivot)
            B->pivot = pivot;
        if (!row || !pivot)
            return -1;
        B->cap = cap;
    }
    memcpy(B->row + (size_t)B->rank * B->m, v, sizeof(double) * (size_t)B->m);
    B->pivot[B->rank++] = piv;
    return 1;
}

/* Welch-Powell colouring of the chosen paths' conflict graph into rounds. */
static int colour_rounds(const ts_fabric *tree, const ts_pair *chosen, int **links, const int *nlinks,
                         int k, ts_link_plan *out, ts_error *err)
{
    size_t words = ((size_t)k + 63) / 64;
    uint64_t *adj = calloc((size_t)k * words, sizeof(uint64_t));
    int *deg = calloc((size_t)k, sizeof(int)), *order = malloc(sizeof(int) * (size_t)k);
    int *colour = malloc(sizeof(int) * (size_t)k);
    int *owner = malloc(sizeof(int) * (size_t)tree->nvert);
    int rc = TS_OK;
    if (!adj || !deg || !order || !colour || !owner) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory for the conflict graph of %d paths", k);
        goto out;
    }
    for (int i = 0; i < tree->nvert; i++)
        owner[i] = -1;
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++) {
            int conflict = chosen[i].a == chosen[j].a || chosen[i].a == chosen[j].b ||
                           chosen[i].b == chosen[j].a || chosen[i].b == chosen[j].b;
            /* links of path i marked with i, then looked up for path j */
            if (!conflict) {
                for (int x = 0; x < nlinks[i]; x++)
                    owner[links[i][x]] = i;
                for (int x = 0; x < nlinks[j] && !conflict; x++)
                    conflict = owner[links[j][x]] == i;
                for (int x = 0; x < nlinks[i]; x++)
                    owner[links[i][x]] = -1;
            }
            if (conflict) {
                adj[(size_t)i * words + (size_t)j / 64] |= 1ull << (j % 64);
                adj[(size_t)j * words + (size_t)i / 64] |= 1ull << (i % 64);
                deg[i]++;
                deg[j]++;
            }
        }
    /* largest degree first, ties by index (a stable insertion sort keeps it deterministic) */
    for (int i = 0; i < k; i++) {
        int v = i, p = i;
        while (p > 0 && deg[order[p - 1]] < deg[v]) {
            order[p] = order[p - 1];
            p--;
        }
        order[p] = v;
    }
    for (int i = 0; i < k; i++)
        colour[i] = -1;
    int ncol = 0, done = 0;
    while (done < k) {
        for (int oi = 0; oi < k; oi++) {
            int v = order[oi];
            if (colour[v] >= 0)
                continue;
            int clash = 0;
            for (int u = 0; u < k && !clash; u++)
                clash = colour[u] == ncol && (adj[(size_t)v * words + (size_t)u / 64] >> (u % 64) & 1);
            if (!clash) {
                colour[v] = ncol;
                done++;
            }
        }
        ncol++;
    }
    out->pairs = malloc(sizeof(ts_pair) * (size_t)(k ? k : 1));
    out->round_start = malloc(sizeof(int) * (size_t)(ncol + 1));
    if (!out->pairs || !out->round_start) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto out;
    }
    int np = 0;
    for (int c = 0; c < ncol; c++) {
        out->round_start[c] = np;
        for (int i = 0; i < k; i++)
            if (colour[i] == c)
                out->pairs[np++] = chosen[i];
    }
    out->round_start[ncol] = np;
    out->npairs = np;
    out->nrounds = ncol;
out:
    free(adj);
    free(deg);
    free(order);
    free(colour);
    free(owner);
    return rc;
}

int ts_link_plan_pmm(const ts_fabric *tree, ts_link_plan *out, ts_error *err)
{
    memset(out, 0, sizeof *out);
    if (tree->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "the tree is not finalized");
    int n = tree->nnodes;
    if (n < 2)
        return ts_fail(err, TS_EINPUT, "a link plan needs at least 2 nodes (got %d)", n);
    /* links: every vertex but the root, numbered densely */
    int m = tree->nvert - 1;
    if (m > PMM_MAX_LINKS)
        return ts_fail(err, TS_ELIMIT, "PMM's dense elimination is limited to %d links (tree has %d)",
                       PMM_MAX_LINKS, m);
    int *col = malloc(sizeof(int) * (size_t)tree->nvert);
    int *path = malloc(sizeof(int) * (size_t)tree->nvert);
    double *v = malloc(sizeof(double) * (size_t)m);
    basis B = {m, 0, 0, NULL, NULL};
    ts_pair *chosen = malloc(sizeof(ts_pair) * (size_t)m);
    int **plinks = calloc((size_t)m, sizeof(int *));
    int *nplinks = calloc((size_t)m, sizeof(int));
    int rc = TS_OK;
    if (!col || !path || !v || !chosen || !plinks || !nplinks) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory for %d links", m);
        goto out;
    }
    for (int i = 0, c = 0; i < tree->nvert; i++)
        col[i] = i == tree->root ? -1 : c++;
    for (int a = 0; a < n && rc == TS_OK && B.rank < m; a++)
        for (int b = a + 1; b < n && rc == TS_OK && B.rank < m; b++) {
            int len = ts_fabric_path_links(tree, tree->node_vertex[a], tree->node_vertex[b], path,
                                           tree->nvert);
            memset(v, 0, sizeof(double) * (size_t)m);
            for (int x = 0; x < len; x++)
                path[x] = col[path[x]];
            for (int x = 0; x < len; x++)
                v[path[x]] = 1;
            out->paths_examined++;
            int kept = basis_offer(&B, v, path, len);
            if (kept < 0) {
                rc = ts_fail(err, TS_ENOMEM, "out of memory for the elimination");
                break;
            }
            if (kept) {
                int r = B.rank - 1;
                chosen[r].a = a;
                chosen[r].b = b;
                plinks[r] = malloc(sizeof(int) * (size_t)(len ? len : 1));
                if (!plinks[r]) {
                    rc = ts_fail(err, TS_ENOMEM, "out of memory");
                    break;
                }
                memcpy(plinks[r], path, sizeof(int) * (size_t)len);
                nplinks[r] = len;
            }
        }
    if (rc == TS_OK) {
        out->rank = B.rank;
        rc = colour_rounds(tree, chosen, plinks, nplinks, B.rank, out, err);
    }
out:
    if (plinks)
        for (int i = 0; i < m; i++)
            free(plinks[i]);
    free(plinks);
    free(nplinks);
    free(chosen);
    free(col);
    free(path);
    free(v);
    free(B.row);
    free(B.pivot);
    if (rc != TS_OK)
        ts_link_plan_free(out);
    return rc;
}
