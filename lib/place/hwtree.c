/* toposcope — the intra-node tree from hwloc (live machine or XML). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc.h>
#include "toposcope/hwtree.h"
#include "util/ydoc.h"

#define CPULIST_MAX_CHARS 4096
#define CPULIST_MAX_PU ((1 << 20) - 1)   /* bounds the bitmap a hostile list can ask for */

void ts_hwtree_init(ts_hwtree *t)
{
    memset(t, 0, sizeof *t);
}

void ts_hwtree_free(ts_hwtree *t)
{
    free(t->core);
    free(t->pus);
    ts_hwtree_init(t);
}

/* "0-7,16,18-19": PU os indices. Our own parser, so the largest index is bounded. */
static int parse_cpulist(const char *list, hwloc_bitmap_t set, const char *source, ts_error *err)
{
    size_t n = strnlen(list, CPULIST_MAX_CHARS + 1);
    if (n == 0 || n > CPULIST_MAX_CHARS)
        return ts_fail(err, TS_EINPUT, "%s: CPU list '%.64s' must have 1 to %d characters", source,
                       list, CPULIST_MAX_CHARS);
    const char *s = list;
    while (*s) {
        char *end;
        if (*s < '0' || *s > '9')
            goto bad;
        long lo = strtol(s, &end, 10), hi = lo;
        s = end;
        if (*s == '-') {
            s++;
            if (*s < '0' || *s > '9')
                goto bad;
            hi = strtol(s, &end, 10);
            s = end;
        }
        if (lo > hi || hi > CPULIST_MAX_PU)
            goto bad;
        hwloc_bitmap_set_range(set, (unsigned)lo, (int)hi);
        if (*s == ',' && s[1])
            s++;
        else if (*s)
            goto bad;
    }
    return TS_OK;
bad:
    return ts_fail(err, TS_EINPUT, "%s: bad CPU list '%.64s' at column %d: expected PU numbers "
                   "and ranges such as 0-7,16 (each at most %d)", source, list, (int)(s - list) + 1,
                   CPULIST_MAX_PU);
}

/* The NUMA node closest to a core: the smallest whose locality covers the core. */
static int core_numa(hwloc_topology_t topo, hwloc_obj_t core, hwloc_obj_t *numa_out)
{
    hwloc_obj_t best = NULL;
    int best_weight = INT_MAX;
    for (hwloc_obj_t nd = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, NULL); nd;
         nd = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nd)) {
        if (!nd->cpuset || !hwloc_bitmap_isincluded(core->cpuset, nd->cpuset))
            continue;
        int w = hwloc_bitmap_weight(nd->cpuset);
        if (w >= 0 && w < best_weight) {
            best = nd;
            best_weight = w;
        }
    }
    *numa_out = best;
    return best ? (int)best->logical_index : 0;
}

static int summarize(ts_hwtree *t, hwloc_topology_t topo, hwloc_const_bitmap_t usable,
                     const char *source, ts_error *err)
{
    hwloc_obj_type_t unit = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE
                                                                              : HWLOC_OBJ_PU;
    int ncores = hwloc_get_nbobjs_by_type(topo, unit);
    if (ncores <= 0)
        return ts_fail(err, TS_EINPUT, "%s: the topology has no cores", source);
    if (ncores > TS_HWTREE_MAX_CORES)
        return ts_fail(err, TS_ELIMIT, "%s: %d cores, more than %d", source, ncores,
                       TS_HWTREE_MAX_CORES);
    int npus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    t->core = calloc((size_t)ncores, sizeof *t->core);
    t->pus = malloc(sizeof(int) * (size_t)(npus > 0 ? npus : 1));
    int npkg = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    int *in_package = calloc((size_t)(npkg > 0 ? npkg : 1), sizeof(int));
    hwloc_bitmap_t pus = hwloc_bitmap_alloc();
    if (!t->core || !t->pus || !in_package || !pus) {
        free(in_package);
        hwloc_bitmap_free(pus);
        return ts_fail(err, TS_ENOMEM, "%s: out of memory", source);
    }
    t->ncores = ncores;
    t->npackages = npkg > 0 ? npkg : 1;
    t->nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    t->nl3 = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_L3CACHE);
    for (int i = 0; i < ncores; i++) {
        hwloc_obj_t obj = hwloc_get_obj_by_type(topo, unit, (unsigned)i);
        ts_hwcore *c = &t->core[i];
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj);
        hwloc_obj_t l3 = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_L3CACHE, obj);
        hwloc_obj_t numa;
        c->core = i;
        c->package = pkg ? (int)pkg->logical_index : 0;
        c->l3 = l3 ? (int)l3->logical_index : -1;
        c->numa = core_numa(topo, obj, &numa);
        if (c->package >= t->npackages)
            c->package = 0;
        c->core_in_package = in_package[c->package]++;
        if (l3 && numa && hwloc_bitmap_isincluded(numa->cpuset, l3->cpuset) &&
            !hwloc_bitmap_isequal(numa->cpuset, l3->cpuset))
            t->l3_above_numa = 1;
        hwloc_bitmap_and(pus, obj->cpuset, usable);
        c->first_pu = t->npus;
        for (int pu = hwloc_bitmap_first(pus); pu >= 0 && t->npus < npus;
             pu = hwloc_bitmap_next(pus, pu))
            t->pus[t->npus++] = pu;
        c->npus = t->npus - c->first_pu;
        c->usable = c->npus > 0;
        t->nusable += c->usable;
    }
    free(in_package);
    hwloc_bitmap_free(pus);
    if (t->nusable == 0)
        return ts_fail(err, TS_EINPUT, "%s: none of the %d cores may be used (the allowed CPUs and "
                       "the CPU list do not meet)", source, ncores);
    return TS_OK;
}

typedef struct hw_input {
    const char *xml;     /* NULL: the live machine */
    size_t len;
} hw_input;

static int load(ts_hwtree *t, const hw_input *in, const char *source, const char *cpulist,
                ts_error *err)
{
    hwloc_topology_t topo;
    ts_hwtree_init(t);
    hwloc_bitmap_t usable = hwloc_bitmap_alloc();
    if (!usable)
        return ts_fail(err, TS_ENOMEM, "%s: out of memory", source);
    if (hwloc_topology_init(&topo) != 0) {
        hwloc_bitmap_free(usable);
        return ts_fail(err, TS_ENOMEM, "%s: cannot initialise hwloc", source);
    }
    /* keep disallowed PUs so logical indices are the whole machine's; restrict ourselves */
    hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(topo, HWLOC_OBJ_L1CACHE, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(topo, HWLOC_OBJ_L2CACHE, HWLOC_TYPE_FILTER_KEEP_NONE);
    int rc = TS_OK;
    if (in->xml && hwloc_topology_set_xmlbuffer(topo, in->xml, (int)in->len + 1) != 0)
        rc = ts_fail(err, TS_EINPUT, "%s: not a valid hwloc XML topology", source);
    else if (hwloc_topology_load(topo) != 0)
        rc = ts_fail(err, in->xml ? TS_EINPUT : TS_ESYS, "%s: hwloc cannot load the topology%s",
                     source, in->xml ? " (not a valid hwloc XML file?)" : "");
    if (rc == TS_OK) {
        hwloc_bitmap_copy(usable, hwloc_topology_get_allowed_cpuset(topo));
        if (cpulist) {
            hwloc_bitmap_t want = hwloc_bitmap_alloc();
            if (!want)
                rc = ts_fail(err, TS_ENOMEM, "%s: out of memory", source);
            else if ((rc = parse_cpulist(cpulist, want, "--cpuset", err)) == TS_OK)
                hwloc_bitmap_and(usable, usable, want);
            hwloc_bitmap_free(want);
        }
    }
    if (rc == TS_OK)
        rc = summarize(t, topo, usable, source, err);
    hwloc_bitmap_free(usable);
    hwloc_topology_destroy(topo);
    if (rc != TS_OK)
        ts_hwtree_free(t);
    return rc;
}

int ts_hwtree_load_xml_buffer(ts_hwtree *t, const char *xml, size_t len, const char *source,
                              const char *cpulist, ts_error *err)
{
    if (len > TS_HWTREE_XML_MAX_BYTES) {
        ts_hwtree_init(t);
        return ts_fail(err, TS_ELIMIT, "%s: larger than %u bytes", source, TS_HWTREE_XML_MAX_BYTES);
    }
    /* hwloc wants the terminating NUL inside the buffer it is given */
    char *copy = malloc(len + 1);
    if (!copy) {
        ts_hwtree_init(t);
        return ts_fail(err, TS_ENOMEM, "%s: out of memory", source);
    }
    memcpy(copy, xml, len);
    copy[len] = '\0';
    hw_input in = { copy, strlen(copy) };
    int rc = load(t, &in, source, cpulist, err);
    free(copy);
    return rc;
}

int ts_hwtree_load_xml(ts_hwtree *t, const char *path, const char *cpulist, ts_error *err)
{
    char *buf;
    size_t len;
    ts_hwtree_init(t);
    int rc = ts_ydoc_read_file(path, TS_HWTREE_XML_MAX_BYTES, &buf, &len, err);
    if (rc != TS_OK)
        return rc;
    hw_input in = { buf, strlen(buf) };
    rc = load(t, &in, path, cpulist, err);
    free(buf);
    return rc;
}

int ts_hwtree_load_live(ts_hwtree *t, const char *cpulist, ts_error *err)
{
    hw_input in = { NULL, 0 };
    return load(t, &in, "this machine", cpulist, err);
}

int ts_hwtree_copy(ts_hwtree *dst, const ts_hwtree *src, ts_error *err)
{
    *dst = *src;
    dst->core = malloc(sizeof *dst->core * (size_t)(src->ncores ? src->ncores : 1));
    dst->pus = malloc(sizeof(int) * (size_t)(src->npus ? src->npus : 1));
    if (!dst->core || !dst->pus) {
        ts_hwtree_free(dst);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    memcpy(dst->core, src->core, sizeof *dst->core * (size_t)src->ncores);
    memcpy(dst->pus, src->pus, sizeof(int) * (size_t)src->npus);
    return TS_OK;
}

void ts_hwtree_core_cpus(const ts_hwtree *t, int c, char *buf, size_t max)
{
    const ts_hwcore *core = &t->core[c];
    const int *p = t->pus + core->first_pu;
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < core->npus && used < max;) {
        int j = k;
        while (j + 1 < core->npus && p[j + 1] == p[j] + 1)
            j++;
        int w = j > k ? snprintf(buf + used, max - used, "%s%d-%d", used ? "," : "", p[k], p[j])
                      : snprintf(buf + used, max - used, "%s%d", used ? "," : "", p[k]);
        if (w < 0)
            break;
        used += (size_t)w;
        k = j + 1;
    }
}
