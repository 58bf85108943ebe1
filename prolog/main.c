/* toposcope-prolog — the node agent the job prolog runs on every node of a job. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <slurm/slurm.h>
#include "agent.h"
#include "cred.h"
#include "options.h"
#include "place_job.h"
#include "toposcope/place.h"
#include "toposcope/policy.h"

/* The placement's share of the budget, when there is a policy: it takes ~10-100 ms on 8-16
 * nodes (hwloc, the hierarchy, the rank map and five files), and 80 ms (up to 97) for 65 536
 * ranks on 1024 nodes (bench/place.sh, whose limit is 200). A tenth of a 1.5 s budget, 150 ms,
 * was less than that: on the testbed's 16 nodes, which share one CPU, every node ended its
 * placement 80-140 ms past the budget, 44 ms before the plugin's kill. */
#define PLACE_SHARE 0.20
#define PLACE_MAX_MS 300.0

static void usage(FILE *out)
{
    fprintf(out,
            "usage: toposcope-prolog --job ID --nodes HOSTLIST --self NAME [options]\n"
            "\n"
            "Measure the network between the nodes of a job: run this on every node of HOSTLIST at\n"
            "the same time (the job prolog does). The first node of HOSTLIST leads: it hands every\n"
            "agent a session key in a MUNGE credential, runs the probe plan over UDP, infers the\n"
            "switch tree and per-link latencies, and sends the result to every agent. Every agent\n"
            "writes SPOOL/ID/: topology.conf, tree.yaml, links.yaml and status.yaml (status\n"
            "measured, partial or fallback, and why). Whatever happens, each agent finishes within\n"
            "the budget plus %d ms.\n"
            "\n"
            "options:\n"
            "  --job ID             the Slurm job id (default: $SLURM_JOB_ID)\n"
            "  --nodes HOSTLIST     the job's nodes, Slurm's compressed form (default: $SLURM_NODELIST)\n"
            "  --self NAME          this node's name in HOSTLIST (default: $SLURMD_NODENAME)\n"
            "  --policy NAME|/FILE  place the job's ranks on the measured tree with this policy\n"
            "                       and write rankfile, hostfile, machinefile, hints.yaml and\n"
            "                       tree.txt beside it (status.yaml: placement, placement_reason);\n"
            "                       a policy that does not load costs the placement, never the\n"
            "                       measurement. A site NAME, or an absolute FILE an admin names\n"
            "  --policy-stdin NAME  the policy's YAML on stdin (a file the job named, read by the\n"
            "                       plugin with the user's rights); NAME is for messages\n"
            "  --policy-error TEXT  the plugin refused the job's policy: no placement, TEXT says why\n"
            "  --policy-dir DIR     where policy NAMEs are looked up first (then\n"
            "                       /etc/toposcope/policies)\n"
            "  --cpus-per-node LIST the job's CPUs per node, Slurm's form \"2(x3),1\" (default:\n"
            "                       $SLURM_JOB_CPUS_PER_NODE; neither: every CPU of a node)\n"
            "  --ntasks N           ranks to place (default: $SLURM_NTASKS, else every allocated CPU)\n"
            AGENT_COMMON_OPTIONS_HELP
            "  --port-base P        first port of the leader's range (default 900)\n"
            "  --port-span K        ports in the range (default 100): the leader listens on\n"
            "                       P + (ID mod K), or the next one when that is busy; keep the\n"
            "                       range below 1024, where no user can take or answer from it\n"
            "  --spool DIR          parent of the job's directory (default /var/spool/toposcope)\n"
            "  --budget-from US     the budget began at US, microseconds of CLOCK_MONOTONIC (the\n"
            "                       plugin passes the time it started this program; default: now)\n"
            "  --uid UID --gid GID  the job's user and group: the job directory and files are\n"
            "                       root's, readable by UID alone (POSIX ACL; without ACLs: by\n"
            "                       group GID)\n"
            "                       (default: $SLURM_JOB_UID, $SLURM_JOB_GID; without a gid, the\n"
            "                       user's primary group; neither: root)\n"
            "  -v, --verbose        say what happens, on stderr\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 the spool directory was written (even with status fallback),\n"
            "1 it could not be written, 2 bad options.\n",
            AGENT_GRACE_MS);
}

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "toposcope-prolog: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see --help)\n");
    return 2;
}

/* A handle on libslurm's hostlist. Slurm 23.11 made hostlist_t the struct itself (the calls
 * take hostlist_t *); before, hostlist_t was the pointer. One build per Slurm release, so the
 * release's own version macro decides. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
typedef hostlist_t *slurm_hostlist_handle;
#else
typedef hostlist_t slurm_hostlist_handle;
#endif

/* Slurm's compressed hostlist, expanded with libslurm's own hostlist code, so the agents agree
 * with slurmd on the order (the leader is the first). */
static int expand_nodes(const char *list, char ***names, int *n)
{
    slurm_hostlist_handle hl = slurm_hostlist_create(list);
    if (!hl)
        return -1;
    int count = slurm_hostlist_count(hl);
    if (count <= 0 || count > WIRE_MAX_NODES) {
        slurm_hostlist_destroy(hl);
        return -1;
    }
    *names = calloc((size_t)count, sizeof(char *));
    char *h;
    int i = 0;
    while (*names && i < count && (h = slurm_hostlist_shift(hl))) {
        (*names)[i++] = strdup(h);
        free(h);
    }
    slurm_hostlist_destroy(hl);
    *n = i;
    return *names && i == count ? 0 : -1;
}

/* The job's policy, read once. As root, the agent reads only what the site put there: a NAME
 * from the policy directories, or a file an admin named with an absolute path. A file the job
 * named was read by the plugin with the user's rights and comes on stdin (--policy-stdin NAME,
 * NAME for messages), or the plugin's reason for refusing it comes as --policy-error. */
static int load_policy(const char *policy, int from_stdin, const char *refused,
                       const char *const *dirs, ts_policy *p, ts_error *err)
{
    if (refused)
        return ts_fail(err, TS_EINPUT, "%s", refused);
    if (!from_stdin)
        return policy[0] == '/' ? ts_policy_load_file(p, policy, err)
                                : ts_policy_load_site(p, policy, dirs, err);
    char *text = malloc(TS_POLICY_MAX_BYTES + 1);
    size_t len = 0;
    ssize_t n = 1;
    while (text && len <= TS_POLICY_MAX_BYTES && n > 0) {
        n = read(STDIN_FILENO, text + len, TS_POLICY_MAX_BYTES + 1 - len);
        if (n > 0)
            len += (size_t)n;
        else if (n < 0 && errno == EINTR)
            n = 1;
    }
    int rc = !text ? ts_fail(err, TS_ENOMEM, "out of memory")
           : n < 0 ? ts_fail(err, TS_ESYS, "%s: cannot read it from stdin: %s", policy, strerror(errno))
           : len > TS_POLICY_MAX_BYTES ? ts_fail(err, TS_EINPUT, "%s: larger than %d bytes", policy,
                                                 TS_POLICY_MAX_BYTES)
           : ts_policy_parse(p, text, len, policy, err);
    free(text);
    return rc;
}

int main(int argc, char **argv)
{
    enum { O_JOB = 256, O_NODES, O_SELF, O_POLICY, O_PBASE, O_PSPAN, O_SPOOL, O_UID, O_GID, O_PDIR,
           O_CPN, O_NTASKS, O_POLICY_STDIN, O_POLICY_ERROR, O_BUDGET_FROM };
    static const struct option longopts[] = {
        {"job", required_argument, 0, O_JOB}, {"nodes", required_argument, 0, O_NODES},
        {"self", required_argument, 0, O_SELF}, {"policy", required_argument, 0, O_POLICY},
        {"budget-ms", required_argument, 0, AGENT_OPT_BUDGET}, {"port-base", required_argument, 0, O_PBASE},
        {"port-span", required_argument, 0, O_PSPAN}, {"spool", required_argument, 0, O_SPOOL},
        {"uid", required_argument, 0, O_UID}, {"gid", required_argument, 0, O_GID},
        {"method", required_argument, 0, AGENT_OPT_METHOD},
        {"probe-timeout-ms", required_argument, 0, AGENT_OPT_PTIMEOUT},
        {"max-samples", required_argument, 0, AGENT_OPT_MAXS}, {"no-pin", no_argument, 0, AGENT_OPT_NOPIN},
        {"level-step-ns", required_argument, 0, AGENT_OPT_LEVEL_STEP},
        {"policy-dir", required_argument, 0, O_PDIR}, {"cpus-per-node", required_argument, 0, O_CPN},
        {"ntasks", required_argument, 0, O_NTASKS},
        {"policy-stdin", required_argument, 0, O_POLICY_STDIN},
        {"policy-error", required_argument, 0, O_POLICY_ERROR},
        {"budget-from", required_argument, 0, O_BUDGET_FROM},
        {"verbose", no_argument, 0, 'v'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    agent_config c;
    agent_config_default(&c);
    /* the budget runs from here: resolving the nodes and reading the policy count against it */
    c.started_us = agent_clock_us();
    const char *job = getenv("SLURM_JOB_ID"), *nodes = getenv("SLURM_NODELIST");
    const char *self = getenv("SLURMD_NODENAME"), *policy = NULL, *policy_error = NULL;
    int policy_stdin = 0;
    const char *uid_s = getenv("SLURM_JOB_UID"), *gid_s = getenv("SLURM_JOB_GID");
    const char *policy_dir = NULL, *cpus_per_node = getenv("SLURM_JOB_CPUS_PER_NODE");
    const char *ntasks_s = getenv("SLURM_NTASKS");
    int opt;
    unsigned long v;
    while ((opt = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
        int taken = agent_common_option(&c, "toposcope-prolog", opt, optarg);
        if (taken == 2)
            return 2;
        if (taken)
            continue;
        switch (opt) {
        case O_JOB: job = optarg; break;
        case O_NODES: nodes = optarg; break;
        case O_SELF: self = optarg; break;
        case O_POLICY: policy = optarg; policy_stdin = 0; break;
        case O_POLICY_STDIN: policy = optarg; policy_stdin = 1; break;
        case O_POLICY_ERROR: policy_error = optarg; break;
        case O_SPOOL: c.spool_parent = optarg; break;
        case O_UID: uid_s = optarg; break;
        case O_GID: gid_s = optarg; break;
        case O_PDIR: policy_dir = optarg; break;
        case O_CPN: cpus_per_node = optarg; break;
        case O_NTASKS: ntasks_s = optarg; break;
        case O_BUDGET_FROM:
            /* the plugin's clock when it started this program: starting it (fork, exec, the
             * loader) took tens of ms on a loaded node, and counted from here instead the
             * agent ran past the plugin's deadline and was killed before writing its files */
            if (agent_parse_uint(optarg, ULONG_MAX, &v) || (double)v > agent_clock_us() + 1e3)
                return bad("--budget-from wants the time the budget began, in microseconds of "
                           "CLOCK_MONOTONIC and not in the future, not '%s'", optarg);
            c.started_us = (double)v;
            break;
        case O_PBASE:
            if (agent_parse_uint(optarg, 65535, &v) || v < 1)
                return bad("--port-base wants a port 1..65535, not '%s'", optarg);
            c.port_base = (int)v;
            break;
        case O_PSPAN:
            if (agent_parse_uint(optarg, 65535, &v) || v < 1)
                return bad("--port-span wants a count of ports >= 1, not '%s'", optarg);
            c.port_span = (int)v;
            break;
        case 'v': c.verbose = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    if (!job || !nodes || !self)
        return bad("%s", "--job, --nodes and --self are required (or SLURM_JOB_ID, SLURM_NODELIST and SLURMD_NODENAME)");
    if (agent_parse_uint(job, UINT32_MAX, &v))
        return bad("--job wants a job id, not '%s'", job);
    c.job = (uint32_t)v;
    if (uid_s) {
        if (agent_parse_uint(uid_s, UINT32_MAX - 1, &v))
            return bad("--uid (or SLURM_JOB_UID) wants a numeric uid, not '%s'", uid_s);
        c.job_uid = (uid_t)v;
    }
    if (gid_s) {
        if (agent_parse_uint(gid_s, UINT32_MAX - 1, &v))
            return bad("--gid (or SLURM_JOB_GID) wants a numeric gid, not '%s'", gid_s);
        c.job_gid = (gid_t)v;
    } else if (uid_s) {
        /* the job directory is shared through the user's primary group */
        struct passwd *pw = getpwuid(c.job_uid);
        if (!pw)
            return bad("uid %s has no passwd entry: give its group with --gid", uid_s);
        c.job_gid = pw->pw_gid;
    }
    if (c.port_candidates > c.port_span)
        c.port_candidates = c.port_span;
    if ((long)c.port_base + c.port_span - 1 > 65535)
        return bad("%s", "--port-base + --port-span - 1 must stay at or below port 65535");
    /* A policy that does not load is reported in status.yaml after the measurement: the job
     * still gets its tree, and the other agents are not left waiting for this one. */
    const char *policy_dirs[] = {policy_dir ? policy_dir : "/etc/toposcope/policies",
                                 policy_dir ? "/etc/toposcope/policies" : NULL, NULL};
    ts_error policy_err = {{0}};
    ts_policy job_policy;
    const char *policy_problem = NULL;
    if (policy && load_policy(policy, policy_stdin, policy_error, policy_dirs, &job_policy,
                              &policy_err) != TS_OK) {
        fprintf(stderr, "toposcope-prolog: %s\n", policy_err.text);
        policy_problem = policy_err.text;
    }
    int ntasks = 0;
    if (ntasks_s && (agent_parse_uint(ntasks_s, TS_PLACE_MAX_RANKS, &v) || v < 1))
        return bad("--ntasks (or SLURM_NTASKS) wants a count of ranks, not '%s'", ntasks_s);
    if (ntasks_s)
        ntasks = (int)v;
    if (expand_nodes(nodes, &c.names, &c.nnodes) != 0)
        return bad("--nodes wants a Slurm hostlist of 1 to 4096 nodes, not '%s'", nodes);
    c.self = -1;
    for (int i = 0; i < c.nnodes; i++)
        if (strcmp(c.names[i], self) == 0)
            c.self = i;
    if (c.self < 0) {
        fprintf(stderr, "toposcope-prolog: --self %s is not in --nodes %s\n", self, nodes);
        return 2;
    }
    c.addrs = calloc((size_t)c.nnodes, sizeof *c.addrs);
    if (!c.addrs)
        return 1;
    for (int i = 0; i < c.nnodes; i++)
        if (agent_resolve("toposcope-prolog", c.names[i], &c.addrs[i]) != 0)
            return 2;
    cred_munge_keyx(&c.keyx, geteuid());
    /* The placement runs after the agents, inside the same budget (the plugin kills at its
     * end): the measurement leaves it a share. */
    double budget_ms = c.budget_ms;
    if (policy)
        c.budget_ms -= fmin(PLACE_SHARE * budget_ms, PLACE_MAX_MS);
    int rc = agent_run(&c);
    if (rc == 0 && policy) {
        place_job_request pr = {c.spool_parent, c.job, c.job_uid, c.job_gid, c.names, c.nnodes, policy,
                                policy_problem ? NULL : &job_policy, cpus_per_node, ntasks};
        ts_error err;
        if (!policy_problem && agent_clock_us() - c.started_us > budget_ms * 1e3)
            policy_problem = "no time was left for the placement within the budget";
        if (place_job_run(&pr, policy_problem, &err) != TS_OK && !policy_problem)
            fprintf(stderr, "toposcope-prolog[%s]: placement: %s\n", self, err.text);
    }
    for (int i = 0; i < c.nnodes; i++)
        free(c.names[i]);
    free(c.names);
    free(c.addrs);
    return rc;
}
