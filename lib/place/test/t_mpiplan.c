/* What the MPI launchers are told of a placement: 2 nodes x 2 ranks on known cores under
 * compact and spread, with one PU per core and with two, and a block placement Intel MPI cannot
 * express: the Hydra host file, HYDRA_BINDING (by process of each host-file line),
 * I_MPI_PERHOST and I_MPI_PIN_PROCESSOR_LIST, the order srun starts Hydra's proxies in within a
 * Slurm job, what is left out and why, and the variables ts_mpi_env_each sets for Open MPI 4,
 * MPICH and Intel MPI (none for Open MPI 5, whose PRRTE variable breaks mpirun). */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "placeset.h"
#include "toposcope/emit.h"
#include "toposcope/mpiplan.h"

static const char *two_nodes = "SwitchName=s Nodes=n[1-2]\n";
static const char *two_leaves =
    "SwitchName=top Switches=leafa,leafb\nSwitchName=leafa Nodes=n[1-2]\nSwitchName=leafb Nodes=n[3-4]\n";

/* What emit writes for pl is want. */
static void emit_is(int (*emit)(const ts_placement *, FILE *), const ts_placement *pl,
                    const char *want, const char *what)
{
    char *text = emit_to_string(emit, pl);
    is_str(text, want, "%s", what);
    free(text);
}

/* "KEY=VALUE\n" per variable, in the order ts_mpi_env_each sets them */
static void collect(void *ctx, const char *key, const char *value)
{
    FILE *f = ctx;
    fprintf(f, "%s=%s\n", key, value);
}

static char *env_text(const ts_mpi_plan *plan, const ts_mpi_paths *paths)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ts_mpi_env_each(plan, paths, collect, f);
    fclose(f);
    return buf;
}

static const ts_mpi_paths job_files = {"/j/rankfile", "/j/hostfile", "/j/hydra-hosts",
                                       "/j/lsf-affinity"};

/* The variables for plan and paths hold the text has and not the text lacks (NULL: no check). */
static void env_check(const ts_mpi_plan *plan, const ts_mpi_paths *paths, const char *has,
                      const char *lacks, const char *what)
{
    char *env = env_text(plan, paths);
    if (!ok((!has || strstr(env, has)) && (!lacks || !strstr(env, lacks)), "%s", what))
        diag("  got \"%s\"", env);
    free(env);
}

/* A placement and what the launchers can be told of it. */
typedef struct planned {
    setup s;
    ts_mpi_plan plan;
    char note[512];
} planned;

/* Place nranks under p on the fabric's nodes of xml, every launcher on, and plan (slurm: the
 * job's nodes in Slurm's order, or NULL outside Slurm). */
static int plan_in(planned *t, const char *conf, const char *xml, ts_policy p, int nranks,
                   const ts_mpi_nodes *slurm)
{
    p.export_mca = p.hydra = p.intel_mpi = 1;
    run(&t->s, conf, xml, &p, nranks);
    ts_error err = {{0}};
    if (t->s.rc != TS_OK) {
        diag("placement: %s", t->s.err.text);
        return t->s.rc;
    }
    return ts_mpi_plan_make(&t->plan, &t->s.pl, &p, slurm, t->note, sizeof t->note, &err);
}

static int plan_for(planned *t, const char *conf, const char *xml, ts_policy p, int nranks)
{
    return plan_in(t, conf, xml, p, nranks, NULL);
}

static void plan_done(planned *t)
{
    ts_mpi_plan_free(&t->plan);
    done(&t->s);
}

static void test_compact_one_pu(void)
{
    planned t;
    ok(plan_for(&t, two_nodes, "1pack-4core.xml", policy(TS_PLACE_COMPACT, 0, 1, 1, 2), 4) == TS_OK,
       "compact, 2 ranks per node: 4 ranks on 2 nodes of 4 single-PU cores, planned");
    emit_is(ts_emit_hostfile, &t.s.pl, "n1\nn1\nn2\nn2\n", "compact fills n1 (ranks 0, 1), then n2 (ranks 2, 3)");
    emit_is(ts_emit_hydra_hosts, &t.s.pl, "n1:2\nn2:2\n", "Hydra host file: one line per run of ranks on a node");
    is_str(t.plan.hydra_binding, "user:0,1", "HYDRA_BINDING: process 0 of each line on PU 0, process 1 on PU 1");
    is_int(t.plan.intel_perhost, 2, "I_MPI_PERHOST=2: two consecutive ranks per host");
    is_str(t.plan.intel_pin, "0,1", "I_MPI_PIN_PROCESSOR_LIST: the k-th rank of a host on PU k");
    is_str(t.note, "", "nothing left out");
    char *env = env_text(&t.plan, &job_files);
    is_str(env,
           "OMPI_MCA_rmaps_rank_file_path=/j/rankfile\n"
           "LSB_AFFINITY_HOSTFILE=/j/lsf-affinity\n"
           "HYDRA_HOST_FILE=/j/hydra-hosts\n"
           "HYDRA_BINDING=user:0,1\n"
           "I_MPI_HYDRA_HOST_FILE=/j/hostfile\n"
           "I_MPI_PERHOST=2\n"
           "I_MPI_PIN_PROCESSOR_LIST=0,1\n",
           "the variables for Open MPI 4 and 5 (LSF's affinity file: PRRTE 3.0's own breaks mpirun), MPICH and Intel MPI");
    emit_is(ts_emit_lsf_affinity, &t.s.pl, "n1 0\nn1 1\nn2 0\nn2 1\n",
            "LSF affinity file: per rank its host and the OS number of its core's one PU");
    free(env);
    plan_done(&t);
}

static void test_compact_two_pus(void)
{
    planned t;
    ok(plan_for(&t, two_nodes, "2pack-2numa-8core-ht.xml", policy(TS_PLACE_COMPACT, 0, 1, 1, 2), 4) == TS_OK,
       "compact, 2 ranks per node: 4 ranks on 2 nodes of 2-PU cores, planned");
    is_str(t.plan.hydra_binding, "user:0+1,2+3", "HYDRA_BINDING: a core's two PUs joined by '+'");
    emit_is(ts_emit_lsf_affinity, &t.s.pl, "n1 0,1\nn1 2,3\nn2 0,1\nn2 2,3\n",
            "LSF affinity file: a core's two PUs, one by one");
    is_int(t.plan.intel_perhost, 2, "I_MPI_PERHOST=2");
    ok(t.plan.intel_pin == NULL, "no I_MPI_PIN_PROCESSOR_LIST: it pins a rank to one CPU");
    ok(strstr(t.note, "I_MPI_PIN_PROCESSOR_LIST left out: rank 0 has CPUs 0+1") != NULL, "the note says why: %s", t.note);
    env_check(&t.plan, &job_files, "I_MPI_HYDRA_HOST_FILE=/j/hostfile\nI_MPI_PERHOST=2\n", "I_MPI_PIN_PROCESSOR_LIST",
              "Intel MPI gets its host file and ranks per host, no pin list");
    plan_done(&t);
}

static void test_spread(void)
{
    planned t;
    ok(plan_for(&t, two_nodes, "1pack-4core.xml", policy(TS_PLACE_SPREAD, 0, 1, 1, 0), 4) == TS_OK,
       "spread: 4 ranks on 2 nodes of 4 single-PU cores, planned");
    emit_is(ts_emit_hydra_hosts, &t.s.pl, "n1:1\nn2:1\nn1:1\nn2:1\n", "Hydra host file: ranks alternate, one line each");
    ok(t.plan.hydra_binding == NULL, "no HYDRA_BINDING: ranks 0 and 2 are each process 0 of a line, on PUs 0 and 1");
    ok(strstr(t.note, "HYDRA_BINDING left out: ranks 0 (n1) and 2 (n1) are each process 0 of their Hydra "
                    "host-file line but have CPUs 0 and 1") != NULL, "the note names both ranks: %s", t.note);
    ok(strstr(t.note, "n1 is on several lines of the Hydra host file (again from rank 2)") != NULL,
       "and that MPICH will take n1's lines for separate nodes");
    is_int(t.plan.intel_perhost, 1, "Intel MPI can deal it: I_MPI_PERHOST=1 over n1, n2");
    is_str(t.plan.intel_pin, "0,1", "its pin list is per host: ranks 0, 2 of n1 (and 1, 3 of n2) on PUs 0, 1");
    env_check(&t.plan, &job_files, "HYDRA_HOST_FILE=/j/hydra-hosts\n", "HYDRA_BINDING",
              "MPICH still gets the host file, without a binding");
    plan_done(&t);
}

static void test_block_not_for_intel(void)
{
    planned t;
    ok(plan_for(&t, two_leaves, "1pack-4core.xml", policy(TS_PLACE_BLOCK, 3, 1, 1, 0), 9) == TS_OK,
       "block of 3: 9 ranks on two leaves of 2 nodes, planned");
    emit_is(ts_emit_hostfile, &t.s.pl, "n1\nn1\nn1\nn3\nn3\nn3\nn1\nn2\nn2\n", "blocks: n1 0-2, n3 3-5, then n1 6 and n2 7-8");
    is_int(t.plan.intel_perhost, 0, "no I_MPI_PERHOST deals that");
    ok(t.plan.intel_pin == NULL, "nor a pin list");
    ok(strstr(t.note, "Intel MPI's variables left out: rank 6 is on n1, where I_MPI_PERHOST=3 over the hosts in "
                    "the order of their first rank would put it on n2") != NULL, "the note says where it breaks: %s", t.note);
    env_check(&t.plan, &job_files, NULL, "I_MPI_", "Intel MPI gets nothing rather than a wrong placement");
    emit_is(ts_emit_hydra_hosts, &t.s.pl, "n1:3\nn3:3\nn1:1\nn2:2\n", "the Hydra host file keeps the rank order");
    plan_done(&t);
}

/* In a Slurm job srun starts proxy k on the job's k-th node: the lines must be those nodes. */
static void test_slurm_order(void)
{
    char *n12[] = {"n1", "n2"}, *n21[] = {"n2", "n1"};
    ts_mpi_nodes in_order = {n12, 2}, reversed = {n21, 2};
    planned t;
    ok(plan_in(&t, two_nodes, "1pack-4core.xml", policy(TS_PLACE_COMPACT, 0, 1, 1, 2), 4, &in_order) == TS_OK &&
       t.plan.hydra && t.plan.intel_mpi, "compact in a job on n[1-2]: MPICH and Intel MPI told");
    is_str(t.plan.hydra_binding, "user:0,1", "with the binding");
    is_str(t.note, "", "nothing left out");
    plan_done(&t);
    ok(plan_in(&t, two_nodes, "1pack-4core.xml", policy(TS_PLACE_COMPACT, 0, 1, 1, 2), 4, &reversed) == TS_OK &&
       !t.plan.hydra && !t.plan.hydra_binding && !t.plan.intel_mpi && t.plan.intel_perhost == 0,
       "a job whose Slurm order is n2, n1: neither MPICH nor Intel MPI told (srun would swap the nodes)");
    ok(strstr(t.note, "MPICH's variables left out: srun starts host-file line 1 on the job's node 1 in Slurm's "
                      "order (n2), and the placement needs n1 there") &&
       strstr(t.note, "Intel MPI's variables left out: srun starts host 1 on the job's node 1 in Slurm's order (n2)"),
       "the note says where: %s", t.note);
    char *env = env_text(&t.plan, &job_files);
    is_str(env, "OMPI_MCA_rmaps_rank_file_path=/j/rankfile\nLSB_AFFINITY_HOSTFILE=/j/lsf-affinity\n",
           "Open MPI, which reads the rankfile, is still told");
    free(env);
    plan_done(&t);
    ok(plan_in(&t, two_nodes, "1pack-4core.xml", policy(TS_PLACE_SPREAD, 0, 1, 1, 0), 4, &in_order) == TS_OK &&
       !t.plan.hydra && t.plan.intel_mpi && t.plan.intel_perhost == 1,
       "spread in a job on n[1-2]: MPICH not told (4 lines, 2 nodes), Intel MPI's round robin is");
    ok(strstr(t.note, "MPICH's variables left out: srun starts host-file line 3 on the job's node 3 in Slurm's "
                      "order (none), and the placement needs n1 there") != NULL, "the note says why: %s", t.note);
    plan_done(&t);
}

static void test_policy_switches(void)
{
    setup s;
    ts_mpi_plan plan;
    char note[512];
    ts_error err = {{0}};
    ts_policy p = policy(TS_PLACE_COMPACT, 0, 1, 1, 0);
    run(&s, two_nodes, "1pack-4core.xml", &p, 4);
    ok(ts_mpi_plan_make(&plan, &s.pl, &p, NULL, note, sizeof note, &err) == TS_OK && !plan.open_mpi &&
       !plan.hydra && !plan.intel_mpi && !plan.hydra_binding && !plan.intel_pin,
       "the default policy: no launcher");
    char *env = env_text(&plan, &job_files);
    is_str(env, "", "and no variable");
    free(env);
    p.export_mca = 1;
    ts_mpi_plan_make(&plan, &s.pl, &p, NULL, note, sizeof note, &err);
    env = env_text(&plan, &job_files);
    is_str(env, "OMPI_MCA_rmaps_rank_file_path=/j/rankfile\nLSB_AFFINITY_HOSTFILE=/j/lsf-affinity\n",
           "export_mca alone: Open MPI 4's and 5's variables only, never " TS_MPI_ENV_PRTE " (mpirun exits 251 on PRRTE 3.0)");
    free(env);
    p.hydra = 1;
    ts_mpi_plan_make(&plan, &s.pl, &p, NULL, note, sizeof note, &err);
    ts_mpi_paths no_hydra_file = {"/j/rankfile", "/j/hostfile", NULL, NULL};
    env_check(&plan, &no_hydra_file, NULL, "HYDRA_", "no Hydra host file written: no HYDRA_ variable");
    env_check(&plan, &no_hydra_file, NULL, "LSB_", "no LSF affinity file written: no LSB_ variable");
    ts_mpi_plan_free(&plan);
    done(&s);

    ts_policy m = policy(TS_PLACE_MEASURE_ONLY, 0, 1, 1, 0);
    run(&s, two_nodes, "1pack-4core.xml", &m, 0);
    m.hydra = 1;                          /* the parser refuses it; the plan never trusts that */
    ok(ts_mpi_plan_make(&plan, &s.pl, &m, NULL, note, sizeof note, &err) == TS_OK && !plan.hydra && !plan.open_mpi,
       "no ranks placed: nothing for any launcher");
    ts_mpi_plan_free(&plan);
    done(&s);
}

int main(void)
{
    test_compact_one_pu();
    test_compact_two_pus();
    test_spread();
    test_block_not_for_intel();
    test_slurm_order();
    test_policy_switches();
    return done_testing();
}
