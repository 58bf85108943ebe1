/* PMM's Figure 2 network (seed 000), shared by the link-plan tests. */
#ifndef TOPOSCOPE_TEST_FIGURE2_H
#define TOPOSCOPE_TEST_FIGURE2_H

#include "tap.h"
#include "toposcope/fabric.h"

/* Figure 2: r1 holds k1, k2, k5, k6 (links l1, l2, l7, l8) and, through l3, a switch r2 that
 * reaches r3 through l4; r3 holds k3, k4 (l5, l6). r2 has degree 2, so l3 and l4 always carry
 * the same traffic: only l3 + l4 can be known. */
/* l3 and l4 (may be NULL) get the vertices naming those links. */
static int build_figure2(ts_fabric *f, int *l3, int *l4)
{
    ts_error err = {{0}};
    ts_fabric_init(f);
    int r1 = ts_fabric_add_vertex(f, "r1", TS_SWITCH, &err);
    int r2 = ts_fabric_add_vertex(f, "r2", TS_SWITCH, &err);
    int r3 = ts_fabric_add_vertex(f, "r3", TS_SWITCH, &err);
    static const char *const on_r1[] = {"k1", "k2", "k5", "k6"}, *const on_r3[] = {"k3", "k4"};
    int rc = ts_fabric_attach(f, r1, r2, &err) | ts_fabric_attach(f, r2, r3, &err);
    for (int i = 0; i < 4; i++)
        rc |= ts_fabric_attach(f, r1, ts_fabric_add_vertex(f, on_r1[i], TS_NODE, &err), &err);
    for (int i = 0; i < 2; i++)
        rc |= ts_fabric_attach(f, r3, ts_fabric_add_vertex(f, on_r3[i], TS_NODE, &err), &err);
    rc |= ts_fabric_finalize(f, &err);
    if (l3)
        *l3 = r2;   /* a link is named by its lower end */
    if (l4)
        *l4 = r3;
    if (rc != TS_OK)
        diag("figure 2: %s", err.text);
    return rc;
}

#endif
