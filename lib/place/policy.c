/* toposcope — policy files: schema check with positions, defaults, lookup by name. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include "toposcope/policy.h"
#include "util/ydoc.h"

static const char *const kind_names[] = { "compact", "spread", "block", "measure-only", NULL };

static const char *const top_keys[] = { "name", "description", "placement", "mpi", "measure",
                                        "anomaly", "drain", NULL };
static const char *const placement_keys[] = { "kind", "block_size", "ranks_per_node",
                                              "ranks_per_core", "cpus_per_rank", NULL };
static const char *const mpi_keys[] = { "export_mca", "hydra", "intel_mpi", NULL };
static const char *const measure_keys[] = { "time_budget_ms", NULL };
static const char *const anomaly_keys[] = { "threshold_pct", "threshold_us", NULL };
static const char *const drain_keys[] = { "jobs", "hours", NULL };

#define DESCRIPTION_MAX 1024

void ts_policy_default(ts_policy *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "default");
    p->kind = TS_PLACE_COMPACT;
    p->ranks_per_core = 1;
    p->cpus_per_rank = 1;
    p->time_budget_ms = 2000;
    /* no floor: a link is flagged on significance against the baseline's own spread alone */
    p->anomaly_pct = 0;
    p->anomaly_us = 0;
}

const char *ts_placement_kind_name(ts_placement_kind kind)
{
    return kind >= TS_PLACE_COMPACT && kind <= TS_PLACE_MEASURE_ONLY ? kind_names[kind] : "?";
}

typedef struct policy_reader {
    ts_ydoc doc;
    ts_error *err;
} policy_reader;

/* A section (placement, mpi, ...): a mapping whose keys are all allowed, or absent/null. */
static int section(policy_reader *r, const char *key, const char *const *keys, int *map)
{
    ts_ydoc *d = &r->doc;
    *map = ts_ydoc_get(d, d->root, key);
    if (*map < 0)
        return TS_OK;
    if (ts_ydoc_is_null(&d->v[*map])) {
        *map = -1;
        return TS_OK;
    }
    if (d->v[*map].type != TS_Y_MAP)
        return ts_ydoc_fail(d, *map, r->err, "'%s' must be a mapping, not %s", key,
                            ts_ydoc_type_name(&d->v[*map]));
    char where[64];
    snprintf(where, sizeof where, "'%s'", key);
    return ts_ydoc_check_keys(d, *map, keys, where, r->err);
}

static int get_int(policy_reader *r, int map, const char *key, long lo, long hi, int *out)
{
    int at = ts_ydoc_get(&r->doc, map, key);
    long v;
    if (at < 0)
        return TS_OK;
    int rc = ts_ydoc_int(&r->doc, at, key, lo, hi, &v, r->err);
    if (rc == TS_OK)
        *out = (int)v;
    return rc;
}

static int get_num(policy_reader *r, int map, const char *key, double lo, double hi, double *out)
{
    int at = ts_ydoc_get(&r->doc, map, key);
    return at < 0 ? TS_OK : ts_ydoc_num(&r->doc, at, key, lo, hi, out, r->err);
}

static int read_placement(policy_reader *r, int map, ts_policy *p)
{
    ts_ydoc *d = &r->doc;
    int kind_at = ts_ydoc_get(d, map, "kind");
    if (kind_at < 0)
        return ts_ydoc_fail(d, map, r->err, "'placement' needs 'kind' (one of compact, spread, "
                            "block, measure-only)");
    int kind, rc;
    if ((rc = ts_ydoc_choice(d, kind_at, "kind", kind_names, &kind, r->err)))
        return rc;
    p->kind = (ts_placement_kind)kind;
    if ((rc = get_int(r, map, "block_size", 1, TS_POLICY_MAX_BLOCK, &p->block_size)) ||
        (rc = get_int(r, map, "ranks_per_node", 0, TS_POLICY_MAX_RANKS_PER_NODE,
                      &p->ranks_per_node)) ||
        (rc = get_int(r, map, "ranks_per_core", 1, TS_POLICY_MAX_RANKS_PER_CORE,
                      &p->ranks_per_core)) ||
        (rc = get_int(r, map, "cpus_per_rank", 1, TS_POLICY_MAX_CPUS_PER_RANK, &p->cpus_per_rank)))
        return rc;
    int block_at = ts_ydoc_get(d, map, "block_size");
    if (p->kind == TS_PLACE_BLOCK && block_at < 0)
        return ts_ydoc_fail(d, kind_at, r->err, "kind: block needs 'block_size' (an integer from 1 "
                            "to %d)", TS_POLICY_MAX_BLOCK);
    if (p->kind != TS_PLACE_BLOCK && block_at >= 0)
        return ts_ydoc_fail(d, block_at, r->err, "'block_size' only applies to kind: block (this "
                            "policy is %s)", kind_names[kind]);
    if (p->kind == TS_PLACE_MEASURE_ONLY) {
        static const char *const placing[] = { "ranks_per_node", "ranks_per_core", "cpus_per_rank",
                                               NULL };
        for (int k = 0; placing[k]; k++) {
            int at = ts_ydoc_get(d, map, placing[k]);
            if (at >= 0)
                return ts_ydoc_fail(d, at, r->err, "'%s' has no effect with kind: measure-only, "
                                    "which places no ranks (allowed there: kind)", placing[k]);
        }
    }
    if (p->ranks_per_core > 1 && p->cpus_per_rank > 1)
        return ts_ydoc_fail(d, ts_ydoc_get(d, map, "ranks_per_core"), r->err,
                            "'ranks_per_core: %d' shares a core between ranks and 'cpus_per_rank: "
                            "%d' gives a rank several cores; one of them must be 1",
                            p->ranks_per_core, p->cpus_per_rank);
    return TS_OK;
}

/* mpi: one switch per launcher. Each tells a launcher about the placement's files, so none
 * can be on with kind: measure-only, which writes none (read_placement has set the kind). */
static int read_mpi(policy_reader *r, int map, ts_policy *p)
{
    const struct {
        const char *key, *needs;
        int *out;
    } launchers[] = {
        {"export_mca", "a rankfile", &p->export_mca},
        {"hydra", "a Hydra host file", &p->hydra},
        {"intel_mpi", "a host file", &p->intel_mpi},
    };
    ts_ydoc *d = &r->doc;
    for (size_t k = 0; k < sizeof launchers / sizeof launchers[0]; k++) {
        int at = ts_ydoc_get(d, map, launchers[k].key), rc;
        if (at < 0)
            continue;
        if ((rc = ts_ydoc_bool(d, at, launchers[k].key, launchers[k].out, r->err)))
            return rc;
        if (*launchers[k].out && p->kind == TS_PLACE_MEASURE_ONLY)
            return ts_ydoc_fail(d, at, r->err, "'%s: true' needs %s, and kind: measure-only "
                                "writes none (allowed here: false)", launchers[k].key,
                                launchers[k].needs);
    }
    return TS_OK;
}

static int read_policy(policy_reader *r, ts_policy *p)
{
    ts_ydoc *d = &r->doc;
    if (d->root < 0 || d->v[d->root].type != TS_Y_MAP)
        return ts_ydoc_fail(d, d->root, r->err, "a policy is a mapping with the keys name, "
                            "description, placement, mpi, measure, anomaly, drain%s",
                            d->root < 0 ? " (the file is empty)" : "");
    int rc = ts_ydoc_check_keys(d, d->root, top_keys, "the top level", r->err);
    if (rc)
        return rc;
    int at = ts_ydoc_get(d, d->root, "name");
    if (at >= 0 && (rc = ts_ydoc_name(d, at, "name", p->name, sizeof p->name, r->err)))
        return rc;
    at = ts_ydoc_get(d, d->root, "description");
    char description[DESCRIPTION_MAX];
    if (at >= 0 && (rc = ts_ydoc_name(d, at, "description", description, sizeof description,
                                      r->err)))
        return rc;
    int placement, mpi, measure, anomaly, drain;
    if ((rc = section(r, "placement", placement_keys, &placement)) ||
        (rc = section(r, "mpi", mpi_keys, &mpi)) ||
        (rc = section(r, "measure", measure_keys, &measure)) ||
        (rc = section(r, "anomaly", anomaly_keys, &anomaly)) ||
        (rc = section(r, "drain", drain_keys, &drain)))
        return rc;
    if (placement < 0)
        return ts_ydoc_fail(d, d->root, r->err, "the policy needs 'placement' with 'kind' (one of "
                            "compact, spread, block, measure-only)");
    if ((rc = read_placement(r, placement, p)))
        return rc;
    if (mpi >= 0 && (rc = read_mpi(r, mpi, p)))
        return rc;
    if ((rc = get_num(r, measure, "time_budget_ms", 1, 600000, &p->time_budget_ms)) ||
        (rc = get_num(r, anomaly, "threshold_pct", 0, 10000, &p->anomaly_pct)) ||
        (rc = get_num(r, anomaly, "threshold_us", 0, 1e6, &p->anomaly_us)))
        return rc;
    if (drain >= 0) {
        if (ts_ydoc_get(d, drain, "jobs") < 0 || ts_ydoc_get(d, drain, "hours") < 0)
            return ts_ydoc_fail(d, drain, r->err, "'drain' needs both 'jobs' (1 to 1000) and "
                                "'hours' (0.1 to 8760)");
        p->drain = 1;
        if ((rc = get_int(r, drain, "jobs", 1, 1000, &p->drain_jobs)) ||
            (rc = get_num(r, drain, "hours", 0.1, 8760, &p->drain_hours)))
            return rc;
    }
    return TS_OK;
}

/* "dir/compact.yaml" -> "compact" */
static void name_from_source(char *out, size_t max, const char *source)
{
    const char *base = strrchr(source, '/');
    base = base ? base + 1 : source;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".yaml"))
        n -= 5;
    if (n >= max)
        n = max - 1;
    memcpy(out, base, n);
    out[n] = '\0';
}

int ts_policy_parse(ts_policy *p, const char *text, size_t len, const char *source, ts_error *err)
{
    policy_reader r = { .err = err };
    ts_ylimits lim = { TS_POLICY_MAX_BYTES, 4, 512 };
    const char *src = source ? source : "<policy>";
    int rc = ts_ydoc_parse(&r.doc, text, len, src, &lim, err);
    if (rc != TS_OK)
        return rc;
    ts_policy q;
    ts_policy_default(&q);
    name_from_source(q.name, sizeof q.name, src);
    rc = read_policy(&r, &q);
    ts_ydoc_free(&r.doc);
    if (rc == TS_OK)
        *p = q;
    return rc;
}

int ts_policy_load_file(ts_policy *p, const char *path, ts_error *err)
{
    char *buf;
    size_t len;
    int rc = ts_ydoc_read_file(path, TS_POLICY_MAX_BYTES, &buf, &len, err);
    if (rc != TS_OK)
        return rc;
    rc = ts_policy_parse(p, buf, len, path, err);
    free(buf);
    return rc;
}

/* A policy name can come from a job's --topo-aware=NAME, so it must not reach outside the policy
 * directories: letters, digits, '-' and '_' only. */
int ts_policy_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= TS_POLICY_NAME_MAX)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_'))
            return 0;
    return 1;
}

int ts_policy_load(ts_policy *p, const char *name_or_file, const char *const *dirs, ts_error *err)
{
    size_t n = strlen(name_or_file);
    if (strchr(name_or_file, '/') || (n > 5 && !strcmp(name_or_file + n - 5, ".yaml")))
        return ts_policy_load_file(p, name_or_file, err);
    return ts_policy_load_site(p, name_or_file, dirs, err);
}

int ts_policy_find_site(const char *name, const char *const *dirs, char *path, size_t max,
                        ts_error *err)
{
    if (!ts_policy_name_ok(name))
        return ts_fail(err, TS_EINPUT, "policy name '%.64s' must be 1 to %d letters, digits, '-' "
                       "or '_' (or give a file path)", name, TS_POLICY_NAME_MAX - 1);
    char searched[1024] = "";
    size_t used = 0;
    for (int k = 0; dirs && dirs[k]; k++) {
        snprintf(path, max, "%s/%s.yaml", dirs[k], name);
        if (access(path, F_OK) == 0)
            return TS_OK;
        int w = snprintf(searched + used, sizeof searched - used, "%s%s", used ? ", " : "", dirs[k]);
        if (w > 0 && (size_t)w < sizeof searched - used)
            used += (size_t)w;
    }
    return ts_fail(err, TS_EINPUT, "no policy named '%s' (looked for %s.yaml in: %s)", name, name,
                   used ? searched : "no directory");
}

int ts_policy_load_site(ts_policy *p, const char *name, const char *const *dirs, ts_error *err)
{
    char path[4096];
    int rc = ts_policy_find_site(name, dirs, path, sizeof path, err);
    return rc == TS_OK ? ts_policy_load_file(p, path, err) : rc;
}
