/* toposcope — the tree inside one node, from hwloc: packages, NUMA domains, L3 caches, cores.
 *
 * A ts_hwtree is a flat, hwloc-free summary of a topology: every core with the logical indices
 * (hwloc's L#) of the package, NUMA node and L3 cache it belongs to, its index inside its
 * package (what Open MPI's rankfile means by slot=P:C), and the processing units (PU os indices)
 * the job may use on it. Cores are kept in hwloc's logical order, which is tree order.
 *
 * The restriction to the CPUs a job may use comes from the topology's own allowed cpuset (an
 * XML exported inside the job's cgroup records it; the live machine reports this process's) and,
 * on top, from an optional CPU list. A core is usable when at least one of its PUs is. Logical
 * indices stay those of the whole machine, so a partial allocation keeps the numbering a launcher
 * reading the same machine uses. */
#ifndef TOPOSCOPE_HWTREE_H
#define TOPOSCOPE_HWTREE_H

#include <stddef.h>
#include "toposcope/error.h"

#define TS_HWTREE_MAX_CORES 65536
#define TS_HWTREE_XML_MAX_BYTES (64u << 20)

typedef struct ts_hwcore {
    int package;      /* logical index of the package, 0 when the topology has none */
    int numa;         /* logical index of the nearest NUMA node, 0 when none */
    int l3;           /* logical index of the L3 cache, -1 when none */
    int core;         /* logical index of the core in the machine */
    int core_in_package;
    int usable;       /* at least one PU may be used */
    int first_pu, npus; /* usable PU os indices: pus[first_pu .. first_pu + npus) */
} ts_hwcore;

typedef struct ts_hwtree {
    int ncores;
    ts_hwcore *core;  /* machine order (logical index) */
    int nusable;
    int npackages, nnuma, nl3;
    int l3_above_numa;/* 1 when an L3 spans several NUMA nodes (the L3 level sits above NUMA) */
    int *pus;
    int npus;
} ts_hwtree;

void ts_hwtree_init(ts_hwtree *t);
void ts_hwtree_free(ts_hwtree *t);

/* cpulist (may be NULL): PU os indices the job may use, "0-7,16-23"; intersected with the
 * topology's allowed cpuset. `source` names the input in messages. */
int ts_hwtree_load_xml(ts_hwtree *t, const char *path, const char *cpulist, ts_error *err);
int ts_hwtree_load_xml_buffer(ts_hwtree *t, const char *xml, size_t len, const char *source,
                              const char *cpulist, ts_error *err);
int ts_hwtree_load_live(ts_hwtree *t, const char *cpulist, ts_error *err);

/* Copy of src into dst (fresh). */
int ts_hwtree_copy(ts_hwtree *dst, const ts_hwtree *src, ts_error *err);

/* Write "0-3,8" for the usable PUs of core c into buf (always NUL-terminated). */
void ts_hwtree_core_cpus(const ts_hwtree *t, int c, char *buf, size_t max);

#endif
