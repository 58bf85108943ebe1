/* toposcope — union-find over node or group ids, for fast.c, fast_irregular.c and report.c
 * (private to lib/). uf[x] == x marks a root; callers set that for their ids first. */
#ifndef TOPOSCOPE_UNIONFIND_H
#define TOPOSCOPE_UNIONFIND_H

/* The root of x's set; every node on the way then points at its grandparent (path halving),
 * so a chain built by many unions gets short again after a few finds. */
static inline int ts_uf_find(int *uf, int x)
{
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}

/* Joins the sets of a and b under the smaller of their roots: the root of a set is then its
 * smallest id, whatever the order of the unions. */
static inline void ts_uf_union(int *uf, int a, int b)
{
    a = ts_uf_find(uf, a);
    b = ts_uf_find(uf, b);
    if (a != b)
        uf[a < b ? b : a] = a < b ? a : b;
}

#endif
