/* Policies: the shipped files, defaults, lookup by name, and every broken file refused with
 * FILE:LINE:COLUMN, the key and the allowed values. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "hwdata.h"
#include "toposcope/policy.h"

static const char *policy_dirs[2];

static void find_policies(void)
{
    policy_dirs[0] = test_repo("policies");
    policy_dirs[1] = NULL;
}

static void test_shipped(void)
{
    ts_policy p;
    ts_error err = {{0}};
    ok(ts_policy_load(&p, "compact", policy_dirs, &err) == TS_OK, "policies/compact.yaml loads %s", err.text);
    ok(p.kind == TS_PLACE_COMPACT && p.export_mca && p.cpus_per_rank == 1 && p.ranks_per_core == 1,
       "compact: kind, export_mca, one core per rank");
    ok(!strcmp(p.name, "compact"), "named compact");
    ok(!p.hydra && !p.intel_mpi, "compact: MPICH's and Intel MPI's variables off (they replace Slurm's node list)");
    ok(ts_policy_load(&p, "spread", policy_dirs, &err) == TS_OK && p.kind == TS_PLACE_SPREAD, "spread loads");
    ok(ts_policy_load(&p, "block", policy_dirs, &err) == TS_OK && p.kind == TS_PLACE_BLOCK && p.block_size == 8,
       "block loads with block_size 8");
    ok(ts_policy_load(&p, "measure-only", policy_dirs, &err) == TS_OK && p.kind == TS_PLACE_MEASURE_ONLY,
       "measure-only loads %s", err.text);
    ok(p.drain && p.drain_jobs == 3 && p.drain_hours == 24, "with drain after 3 jobs in 24 hours");
    is_num(p.anomaly_pct, 0, 0, "anomaly threshold 0%% (no floor)");
    is_num(p.anomaly_us, 0, 0, "and 0 us");
    is_num(p.time_budget_ms, 2000, 0, "time budget 2000 ms");

    is_int(ts_policy_load(&p, "nosuch", policy_dirs, &err), TS_EINPUT, "an unknown policy name is refused");
    ok(strstr(err.text, "no policy named 'nosuch'") && strstr(err.text, "policies"), "naming where it looked: %s", err.text);
    is_int(ts_policy_load(&p, "..", policy_dirs, &err), TS_EINPUT, "a name that could leave the directory is refused");
    is_int(ts_policy_load(&p, "a b", policy_dirs, &err), TS_EINPUT, "a name with a blank is refused");
    ok(strstr(err.text, "letters, digits") != NULL, "saying what a name may hold: %s", err.text);
    ok(ts_policy_load(&p, test_data("policy", "good-minimal.yaml"), policy_dirs, &err) == TS_OK, "a path loads as a file %s", err.text);

    /* what the SPANK plugin asks where a job is submitted: no file read, a name checked */
    char path[4096];
    ok(ts_policy_find_site("spread", policy_dirs, path, sizeof path, &err) == TS_OK &&
       strstr(path, "policies/spread.yaml") != NULL, "find_site: spread is %s", path);
    is_int(ts_policy_find_site("no-such-policy", policy_dirs, path, sizeof path, &err), TS_EINPUT,
           "find_site: an unknown name");
    ok(strstr(err.text, "no policy named 'no-such-policy' (looked for no-such-policy.yaml in:") != NULL,
       "says where it looked: %s", err.text);
    is_int(ts_policy_find_site("mine.yaml", policy_dirs, path, sizeof path, &err), TS_EINPUT,
           "find_site: a file name is no policy name");
    ok(strstr(err.text, "letters, digits") != NULL, "and says what a name may hold");
    ok(ts_policy_name_ok("block_8-a") && !ts_policy_name_ok("") && !ts_policy_name_ok("a/b") &&
       !ts_policy_name_ok("..") && !ts_policy_name_ok("x.yaml"), "name_ok: letters, digits, '-', '_' only");
}

static void test_defaults(void)
{
    ts_policy p;
    ts_error err = {{0}};
    const char *text = "placement: {kind: spread}\n";
    ok(ts_policy_parse(&p, text, strlen(text), "dir/mine.yaml", &err) == TS_OK, "only placement.kind is required");
    ok(!strcmp(p.name, "mine"), "the name defaults to the file's (%s)", p.name);
    ok(p.ranks_per_node == 0 && p.ranks_per_core == 1 && p.cpus_per_rank == 1 && !p.export_mca && !p.drain,
       "placement defaults: no node limit, 1 rank per core, 1 core per rank, no MCA export, no drain");
    ok(!p.hydra && !p.intel_mpi, "no launcher but Open MPI's by default: hydra and intel_mpi off");
    is_num(p.anomaly_pct, 0, 0, "anomaly default 0%%");
    text = "name: wide\nplacement:\n  kind: compact\n  cpus_per_rank: 4\n  ranks_per_node: 8\nmpi: {export_mca: false}\n"
           "measure: {time_budget_ms: 500.5}\nanomaly: {threshold_pct: 10, threshold_us: 0}\ndrain: {jobs: 1, hours: 0.5}\n";
    ok(ts_policy_parse(&p, text, strlen(text), "wide.yaml", &err) == TS_OK, "every key at once %s", err.text);
    ok(p.cpus_per_rank == 4 && p.ranks_per_node == 8 && !p.export_mca && p.time_budget_ms == 500.5 &&
       p.anomaly_pct == 10 && p.anomaly_us == 0 && p.drain_jobs == 1 && p.drain_hours == 0.5, "all read back");
    ok(!strcmp(p.name, "wide"), "name: wins over the file name");
    text = "placement: {kind: block, block_size: 4}\nmpi: {hydra: true}\n";
    ok(ts_policy_parse(&p, text, strlen(text), "h.yaml", &err) == TS_OK && p.hydra && !p.intel_mpi && !p.export_mca,
       "mpi.hydra alone: MPICH on, the others stay off %s", err.text);
    text = "placement: {kind: spread}\nmpi:\n  export_mca: true\n  hydra: false\n  intel_mpi: true\n";
    ok(ts_policy_parse(&p, text, strlen(text), "i.yaml", &err) == TS_OK && p.export_mca && !p.hydra && p.intel_mpi,
       "mpi: export_mca, hydra: false and intel_mpi read back %s", err.text);
    text = "placement: {kind: measure-only}\nmpi: {export_mca: false, hydra: false, intel_mpi: false}\n";
    ok(ts_policy_parse(&p, text, strlen(text), "m.yaml", &err) == TS_OK, "measure-only takes every launcher off %s", err.text);
    text = "placement: {kind: compact, ranks_per_core: 2}\n";
    ok(ts_policy_parse(&p, text, strlen(text), "x.yaml", &err) == TS_OK && p.ranks_per_core == 2, "two ranks per core");
}

typedef struct bad_case {
    const char *file;        /* in tests/data/policy */
    const char *where;       /* FILE:LINE:COLUMN */
    const char *what[3];     /* pieces of the message */
} bad_case;

static void test_broken(void)
{
    static const bad_case cases[] = {
        { "bad-unknown-key.yaml", "bad-unknown-key.yaml:3:3", { "unknown key 'pakc' in 'placement'", "allowed: kind, block_size, ranks_per_node, ranks_per_core, cpus_per_rank" } },
        { "bad-unknown-top.yaml", "bad-unknown-top.yaml:4:1", { "unknown key 'placment' in the top level", "allowed: name, description, placement, mpi, measure, anomaly, drain" } },
        { "bad-kind.yaml", "bad-kind.yaml:2:9", { "'kind' must be one of compact, spread, block, measure-only", "got 'compactt'" } },
        { "bad-no-kind.yaml", "bad-no-kind.yaml:2:3", { "needs 'kind'" } },
        { "bad-no-placement.yaml", "bad-no-placement.yaml:1:1", { "needs 'placement'" } },
        { "bad-cpus-type.yaml", "bad-cpus-type.yaml:3:18", { "'cpus_per_rank' must be an integer from 1 to 4096", "got 'two'" } },
        { "bad-cpus-range.yaml", "bad-cpus-range.yaml:3:18", { "'cpus_per_rank' must be an integer from 1 to 4096", "got '0'" } },
        { "bad-cpus-float.yaml", "bad-cpus-float.yaml:3:18", { "must be an integer", "got '1.5'" } },
        { "bad-rpn-negative.yaml", "bad-rpn-negative.yaml:3:19", { "'ranks_per_node' must be an integer from 0 to 65536", "got '-1'" } },
        { "bad-block-missing.yaml", "bad-block-missing.yaml:2:9", { "kind: block needs 'block_size'", "1 to 65536" } },
        { "bad-block-on-compact.yaml", "bad-block-on-compact.yaml:3:15", { "'block_size' only applies to kind: block" } },
        { "bad-block-zero.yaml", "bad-block-zero.yaml:3:15", { "'block_size' must be an integer from 1 to 65536", "got '0'" } },
        { "bad-export-type.yaml", "bad-export-type.yaml:4:15", { "'export_mca' must be true or false", "got 'yes'" } },
        { "bad-export-measure-only.yaml", "bad-export-measure-only.yaml:4:15", { "needs a rankfile", "allowed here: false" } },
        { "bad-hydra-type.yaml", "bad-hydra-type.yaml:4:10", { "'hydra' must be true or false", "got '1'" } },
        { "bad-intel-type.yaml", "bad-intel-type.yaml:5:14", { "'intel_mpi' must be true or false", "got 'true'" } },
        { "bad-hydra-measure-only.yaml", "bad-hydra-measure-only.yaml:4:10", { "'hydra: true' needs a Hydra host file", "allowed here: false" } },
        { "bad-mpi-key.yaml", "bad-mpi-key.yaml:5:3", { "unknown key 'mpich' in 'mpi'", "allowed: export_mca, hydra, intel_mpi" } },
        { "bad-measure-only-cpus.yaml", "bad-measure-only-cpus.yaml:3:18", { "'cpus_per_rank' has no effect with kind: measure-only", "allowed there: kind" } },
        { "bad-budget-range.yaml", "bad-budget-range.yaml:4:19", { "'time_budget_ms' must be a number from 1 to 600000", "got '0'" } },
        { "bad-pct-type.yaml", "bad-pct-type.yaml:4:18", { "'threshold_pct' must be a number from 0 to 10000", "got '25%'" } },
        { "bad-us-negative.yaml", "bad-us-negative.yaml:5:17", { "'threshold_us' must be a number from 0 to 1e+06", "got '-5'" } },
        { "bad-drain-half.yaml", "bad-drain-half.yaml:4:3", { "'drain' needs both 'jobs' (1 to 1000) and 'hours' (0.1 to 8760)" } },
        { "bad-drain-jobs.yaml", "bad-drain-jobs.yaml:4:9", { "'jobs' must be an integer from 1 to 1000", "got '0'" } },
        { "bad-drain-key.yaml", "bad-drain-key.yaml:6:3", { "unknown key 'days' in 'drain'", "allowed: jobs, hours" } },
        { "bad-section-type.yaml", "bad-section-type.yaml:3:10", { "'anomaly' must be a mapping, not a scalar" } },
        { "bad-duplicate.yaml", "bad-duplicate.yaml:4:3", { "key 'kind' given twice in 'placement' (first at line 2)" } },
        { "bad-rpc-and-cpus.yaml", "bad-rpc-and-cpus.yaml:3:19", { "one of them must be 1" } },
        { "bad-quoted-number.yaml", "bad-quoted-number.yaml:3:19", { "'ranks_per_node' must be an integer", "got '4'" } },
        { "bad-syntax.yaml", "bad-syntax.yaml:4:1", { "YAML syntax error" } },
        { "bad-alias.yaml", "bad-alias.yaml:", { "aliases" } },
        { "bad-empty.yaml", "bad-empty.yaml:1:1", { "a policy is a mapping", "the file is empty" } },
        { "bad-list.yaml", "bad-list.yaml:1:1", { "a policy is a mapping" } },
        { "bad-hex.yaml", "bad-hex.yaml:3:18", { "must be an integer", "got '0x2'" } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bad_case *c = &cases[i];
        ts_policy p, before;
        ts_error err = { "" };
        ts_policy_default(&p);
        p.block_size = 12345;           /* a marker: a refused file must not touch p */
        before = p;
        int rc = ts_policy_load_file(&p, test_data("policy", c->file), &err);
        const char *at = strstr(err.text, c->where);
        int all = rc == TS_EINPUT && at && (at == err.text || at[-1] == '/');
        for (int k = 0; k < 3 && c->what[k]; k++)
            all = all && strstr(err.text, c->what[k]) != NULL;
        if (!ok(all, "%s refused at %s: %s", c->file, c->where, c->what[0]))
            diag("  got rc %d: %s", rc, err.text);
        ok(!memcmp(&p, &before, sizeof p), "%s leaves the policy untouched", c->file);
    }
}

int main(void)
{
    find_policies();
    test_shipped();
    test_defaults();
    test_broken();
    return done_testing();
}
