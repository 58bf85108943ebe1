/* toposcope-prolog — the node agent the job prolog runs on every node of a job. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
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
#include "toposcope/policy.h"

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
            "  --policy FILE        placement policy (checked now, applied by the job's tools)\n"
            "  --budget-ms MS       the whole agent's time budget (default 5000)\n"
            "  --port-base P        first port of the leader's range (default 47000)\n"
            "  --port-span K        ports in the range (default 1000): the leader listens on\n"
            "                       P + (ID mod K), or the next one when that is busy\n"
            "  --spool DIR          parent of the job's directory (default /var/spool/toposcope)\n"
            "  --uid UID --gid GID  the job's user and group: the job directory is group GID, 0750\n"
            "                       (default: $SLURM_JOB_UID, $SLURM_JOB_GID; without a gid, the\n"
            "                       user's primary group; neither: root)\n"
            "  --method NAME        discovery method: fast (default), allpairs or shirai\n"
            "  --probe-timeout-ms MS  a probe unanswered this long is lost (default 10)\n"
            "  --max-samples N      most round trips per pair (default 32)\n"
            "  --no-pin             do not pin the agent to one CPU while probing\n"
            "  -v, --verbose        say what happens, on stderr\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 the spool directory was written (even with status fallback),\n"
            "1 it could not be written, 2 bad options.\n",
            AGENT_GRACE_MS);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v > max || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "toposcope-prolog: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see --help)\n");
    return 2;
}

/* Slurm's compressed hostlist, expanded with libslurm's own hostlist code, so the agents agree
 * with slurmd on the order (the leader is the first). */
static int expand_nodes(const char *list, char ***names, int *n)
{
    hostlist_t hl = slurm_hostlist_create(list);
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

static int resolve(const char *name, struct sockaddr_in *out)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *res = NULL;
    int rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc != 0 || !res) {
        fprintf(stderr, "toposcope-prolog: node %s has no IPv4 address (%s): add it to /etc/hosts or DNS\n",
                name, gai_strerror(rc));
        return -1;
    }
    memcpy(out, res->ai_addr, sizeof *out);
    freeaddrinfo(res);
    return 0;
}

int main(int argc, char **argv)
{
    enum { O_JOB = 256, O_NODES, O_SELF, O_POLICY, O_BUDGET, O_PBASE, O_PSPAN, O_SPOOL, O_UID, O_GID,
           O_METHOD, O_PTIMEOUT, O_MAXS, O_NOPIN };
    static const struct option longopts[] = {
        {"job", required_argument, 0, O_JOB}, {"nodes", required_argument, 0, O_NODES},
        {"self", required_argument, 0, O_SELF}, {"policy", required_argument, 0, O_POLICY},
        {"budget-ms", required_argument, 0, O_BUDGET}, {"port-base", required_argument, 0, O_PBASE},
        {"port-span", required_argument, 0, O_PSPAN}, {"spool", required_argument, 0, O_SPOOL},
        {"uid", required_argument, 0, O_UID}, {"gid", required_argument, 0, O_GID},
        {"method", required_argument, 0, O_METHOD}, {"probe-timeout-ms", required_argument, 0, O_PTIMEOUT},
        {"max-samples", required_argument, 0, O_MAXS}, {"no-pin", no_argument, 0, O_NOPIN},
        {"verbose", no_argument, 0, 'v'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    agent_config c;
    agent_config_default(&c);
    const char *job = getenv("SLURM_JOB_ID"), *nodes = getenv("SLURM_NODELIST");
    const char *self = getenv("SLURMD_NODENAME"), *policy = NULL;
    const char *uid_s = getenv("SLURM_JOB_UID"), *gid_s = getenv("SLURM_JOB_GID");
    int opt;
    unsigned long v;
    while ((opt = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
        switch (opt) {
        case O_JOB: job = optarg; break;
        case O_NODES: nodes = optarg; break;
        case O_SELF: self = optarg; break;
        case O_POLICY: policy = optarg; break;
        case O_SPOOL: c.spool_parent = optarg; break;
        case O_UID: uid_s = optarg; break;
        case O_GID: gid_s = optarg; break;
        case O_BUDGET:
            if (parse_uint(optarg, 3600000, &v) || v < 50)
                return bad("--budget-ms wants milliseconds, 50 to 3600000, not '%s'", optarg);
            c.budget_ms = (double)v;
            break;
        case O_PBASE:
            if (parse_uint(optarg, 65535, &v) || v < 1024)
                return bad("--port-base wants a port 1024..65535, not '%s'", optarg);
            c.port_base = (int)v;
            break;
        case O_PSPAN:
            if (parse_uint(optarg, 64511, &v) || v < 1)
                return bad("--port-span wants a count of ports >= 1, not '%s'", optarg);
            c.port_span = (int)v;
            break;
        case O_METHOD:
            if (ts_method_parse(optarg, &c.method) != TS_OK)
                return bad("--method wants fast, allpairs or shirai, not '%s'", optarg);
            break;
        case O_PTIMEOUT:
            if (parse_uint(optarg, 10000, &v) || v < 1)
                return bad("--probe-timeout-ms wants 1..10000, not '%s'", optarg);
            c.probe_timeout_us = (double)v * 1e3;
            break;
        case O_MAXS:
            if (parse_uint(optarg, TS_SAMPLES_MAX, &v) || (int)v < c.rule.min_samples)
                return bad("--max-samples wants a count from the minimum (3) to 256, not '%s'", optarg);
            c.rule.max_samples = (int)v;
            break;
        case O_NOPIN: c.pin_cpu = 0; break;
        case 'v': c.verbose = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    if (!job || !nodes || !self)
        return bad("%s", "--job, --nodes and --self are required (or SLURM_JOB_ID, SLURM_NODELIST and SLURMD_NODENAME)");
    if (parse_uint(job, UINT32_MAX, &v))
        return bad("--job wants a job id, not '%s'", job);
    c.job = (uint32_t)v;
    if (uid_s) {
        if (parse_uint(uid_s, UINT32_MAX - 1, &v))
            return bad("--uid (or SLURM_JOB_UID) wants a numeric uid, not '%s'", uid_s);
        c.job_uid = (uid_t)v;
    }
    if (gid_s) {
        if (parse_uint(gid_s, UINT32_MAX - 1, &v))
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
    if (policy) {
        ts_policy p;
        ts_error err;
        if (ts_policy_load_file(&p, policy, &err) != TS_OK) {
            fprintf(stderr, "toposcope-prolog: %s\n", err.text);
            return 2;
        }
    }
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
        if (resolve(c.names[i], &c.addrs[i]) != 0)
            return 2;
    cred_munge_keyx(&c.keyx, geteuid());
    int rc = agent_run(&c);
    for (int i = 0; i < c.nnodes; i++)
        free(c.names[i]);
    free(c.names);
    free(c.addrs);
    return rc;
}
