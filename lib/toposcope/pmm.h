/* toposcope — the PMM baseline (lib/links/pmm.c; Liu et al., seed 000): a link plan for a known
 * tree, chosen by Gaussian elimination over all node paths. */
#ifndef TOPOSCOPE_PMM_H
#define TOPOSCOPE_PMM_H

#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/links.h"

/* PMM (seed 000): Gaussian elimination over all n(n-1)/2 node paths of `tree`, then
 * Welch-Powell colouring of the chosen paths' conflict graph. */
int ts_link_plan_pmm(const ts_fabric *tree, ts_link_plan *out, ts_error *err);

#endif
