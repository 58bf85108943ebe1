/* toposcope probe — the node agents as a user's job step: one task per node under
 * `srun --mpi=pmix`, rendezvous through PMIx instead of the prolog's UDP HELLO. */
#include <arpa/inet.h>
#include <getopt.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pmix.h>
#include "toposcope/hostlist.h"
#include "agent.h"
#include "cred.h"
#include "options.h"

#define PROG "toposcope probe"
#define KEY_NODE "toposcope.node"      /* every rank: "NAME IPV4 WORKER-PORT" */
#define KEY_LEADER "toposcope.leader"  /* rank 0: the leader's port */
#define KEY_CRED "toposcope.cred."     /* rank 0, + rank K: the credential for rank K */
#define NAME_MAX_LEN 255

static void usage(FILE *out)
{
    fprintf(out,
            "usage: srun --mpi=pmix -N<n> --ntasks-per-node=1 toposcope probe --out DIR [options]\n"
            "\n"
            "Measure the network between the nodes of a job step, as a user: one task per node.\n"
            "Every task binds a UDP socket and publishes its address through PMIx; rank 0 leads,\n"
            "hands the others a session key in a MUNGE credential only the job's user can decode,\n"
            "runs the probe plan, infers the switch tree and per-link latencies, and writes DIR\n"
            "(made if missing) on its node: topology.conf, tree.yaml, links.yaml, pairs.yaml (the\n"
            "link stage's measured pairs) and status.yaml (status measured, partial or fallback,\n"
            "and why). Each task finishes within the budget plus %d ms once the tasks have met;\n"
            "a task that has not met the others within the budget gives up (exit 1, the reason\n"
            "on stderr), and rank 0 still writes the fallback result for the step's nodes\n"
            "(SLURM_STEP_NODELIST, one node per task) in hostlist order.\n"
            "\n"
            "options:\n"
            "  --out DIR            where rank 0 writes the files\n"
            AGENT_COMMON_OPTIONS_HELP
            "  -v, --verbose        say what happens, on stderr\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 the files were written (even with status fallback) or, on the other\n"
            "ranks, the node took part; 1 they could not be; 2 bad options or no PMIx job.\n",
            AGENT_GRACE_MS);
}

typedef struct pmix_rdv {
    pmix_proc_t me;
    uint32_t size;
    const char *name;              /* this node */
    struct sockaddr_in addr;       /* its IPv4 address */
    struct timespec start;         /* when the task started (CLOCK_MONOTONIC) */
    double fence_s;                /* the exchange ends this long after start, done or not */
    char **names;                  /* filled by the exchange */
    struct sockaddr_in *addrs;
    char *cred;                    /* this rank's */
    int stuck;                     /* the exchange never ended: PMIx must not be finalized */
} pmix_rdv;

static int put_string(const char *key, const char *text, char *why, size_t whylen)
{
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_STRING;
    v.data.string = (char *)text;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    if (rc != PMIX_SUCCESS) {
        snprintf(why, whylen, "PMIx_Put %s: %s", key, PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

/* rank's string under key, malloc'd */
static char *get_string(const pmix_rdv *r, uint32_t rank, const char *key, char *why, size_t whylen)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, r->me.nspace, rank);
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(&p, key, NULL, 0, &v);
    char *s = NULL;
    if (rc == PMIX_SUCCESS && v && v->type == PMIX_STRING && v->data.string)
        s = strdup(v->data.string);
    else
        snprintf(why, whylen, "PMIx_Get %s of rank %u: %s", key, rank,
                 rc == PMIX_SUCCESS ? "not a string" : PMIx_Error_string(rc));
    if (v)
        PMIX_VALUE_RELEASE(v);
    return s;
}

static int parse_port(const char *s, uint16_t *port)
{
    unsigned long v;
    if (agent_parse_uint(s, 65535, &v) || v == 0)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

/* "NAME IPV4 PORT" from a peer: bounded, and names as Slurm writes them. */
static int parse_node(const char *text, char **name, struct sockaddr_in *addr)
{
    char n[NAME_MAX_LEN + 1], ip[INET_ADDRSTRLEN], port[8], extra;
    if (strlen(text) > NAME_MAX_LEN + INET_ADDRSTRLEN + 8 ||
        sscanf(text, "%255s %15s %7s %c", n, ip, port, &extra) != 3)
        return -1;
    for (const char *p = n; *p; p++)
        if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') ||
              *p == '-' || *p == '.' || *p == '_'))
            return -1;
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    uint16_t po;
    if (inet_pton(AF_INET, ip, &addr->sin_addr) != 1 || parse_port(port, &po) != 0)
        return -1;
    addr->sin_port = htons(po);
    *name = strdup(n);
    return *name ? 0 : -1;
}

static int exchange_body(pmix_rdv *r, agent_exchange *x, char *why, size_t whylen)
{
    char text[NAME_MAX_LEN + 64], ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &r->addr.sin_addr, ip, sizeof ip);
    snprintf(text, sizeof text, "%s %s %u", r->name, ip, x->worker_port);
    if (put_string(KEY_NODE, text, why, whylen) != 0)
        return -1;
    if (r->me.rank == 0) {
        snprintf(text, sizeof text, "%u", x->leader_port);
        if (put_string(KEY_LEADER, text, why, whylen) != 0)
            return -1;
        for (uint32_t k = 0; k < r->size; k++) {
            /* a key of its own size (not text's): GCC 14 (Debian 13) bounds put_string's
             * message by the buffer the key is in, and -Werror=format-truncation fails on it */
            char key[sizeof KEY_CRED + 10];
            snprintf(key, sizeof key, KEY_CRED "%u", k);
            if (put_string(key, x->creds[k], why, whylen) != 0)
                return -1;
        }
    }
    pmix_status_t rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        snprintf(why, whylen, "PMIx_Commit: %s", PMIx_Error_string(rc));
        return -1;
    }
    /* every rank's address in one collective; bounded, so a task that never starts cannot
     * hold the others past their budget */
    pmix_info_t info[2];
    bool collect = true;
    int timeout = (int)ceil(r->fence_s);
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, r->me.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Fence(&all, 1, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS) {
        snprintf(why, whylen, "PMIx_Fence: %s (did every task start? one per node: --ntasks-per-node=1)",
                 PMIx_Error_string(rc));
        return -1;
    }
    r->names = calloc(r->size, sizeof(char *));
    r->addrs = calloc(r->size, sizeof *r->addrs);
    if (!r->names || !r->addrs) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    /* The leader needs every node's name and address; another rank only the leader's and
     * its own (its rounds name their partners' addresses, and only the leader's node writes
     * files): three PMIx_Get calls each instead of one per node. With one per node, 16 tasks
     * sharing one loaded CPU (the testbed, 2026-11-28) took 1.0-1.3 s to meet, the last task
     * 0.4 s after the first; with three, 0.15-0.4 s. The other nodes' entries are their
     * ranks, never written anywhere (only rank 0 writes files). */
    for (uint32_t k = 0; k < r->size; k++) {
        if (r->me.rank != 0 && k != 0 && k != r->me.rank) {
            char placeholder[24];
            snprintf(placeholder, sizeof placeholder, "rank%u", k);
            if (!(r->names[k] = strdup(placeholder))) {
                snprintf(why, whylen, "out of memory");
                return -1;
            }
            continue;
        }
        char *s = get_string(r, k, KEY_NODE, why, whylen);
        if (!s)
            return -1;
        int bad = parse_node(s, &r->names[k], &r->addrs[k]);
        free(s);
        if (bad) {
            snprintf(why, whylen, "rank %u published a malformed address", k);
            return -1;
        }
        for (uint32_t j = 0; j < k && r->me.rank == 0; j++)
            if (strcmp(r->names[j], r->names[k]) == 0) {
                snprintf(why, whylen, "ranks %u and %u both run on %s: run one task per node "
                         "(srun --ntasks-per-node=1)", j, k, r->names[k]);
                return -1;
            }
    }
    char *s = get_string(r, 0, KEY_LEADER, why, whylen);
    if (!s)
        return -1;
    uint16_t po;
    int bad = parse_port(s, &po);
    free(s);
    if (bad) {
        snprintf(why, whylen, "rank 0 published a malformed leader port");
        return -1;
    }
    snprintf(text, sizeof text, KEY_CRED "%u", r->me.rank);
    if (!(r->cred = get_string(r, 0, text, why, whylen)))
        return -1;
    x->names = r->names;
    x->addrs = r->addrs;
    x->leader = r->addrs[0];
    x->leader.sin_port = htons(po);
    x->cred = r->cred;
    return 0;
}

/* The exchange in a thread of its own, waited for until the budget ends. PMIX_TIMEOUT is only a
 * request: Slurm's PMIx server does not end a fence whose inter-node exchange broke (a direct
 * connection it refused, a stepd that died), and a PMIx_Get of a rank that has not published yet
 * waits for it; a blocking call would then hold the task until the job's time limit, far past the
 * budget every task promises to keep. On time the thread's results are taken over; if not, the
 * thread is left where it waits (its job and copies are never freed) and the task gives up. */
typedef struct exchange_job {
    pmix_rdv *r;
    agent_exchange x;              /* the thread's own: inputs copied, outputs taken over */
    char **creds;                  /* copies of the leader's credentials */
    int ncreds;
    char why[256];
    int rc, done;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} exchange_job;

static void *exchange_thread(void *arg)
{
    exchange_job *j = arg;
    int rc = exchange_body(j->r, &j->x, j->why, sizeof j->why);
    pthread_mutex_lock(&j->lock);
    j->rc = rc;
    j->done = 1;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->lock);
    return NULL;
}

static void exchange_job_free(exchange_job *j)
{
    for (int k = 0; k < j->ncreds; k++)
        free(j->creds[k]);
    free(j->creds);
    pthread_cond_destroy(&j->cond);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

static int pmix_exchange(void *ctx, agent_exchange *x, char *why, size_t whylen)
{
    pmix_rdv *r = ctx;
    exchange_job *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    j->r = r;
    j->x = *x;
    pthread_mutex_init(&j->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (x->creds) {
        j->creds = calloc(r->size, sizeof(char *));
        j->ncreds = j->creds ? (int)r->size : 0;
        for (int k = 0; k < j->ncreds; k++)
            if (!(j->creds[k] = strdup(x->creds[k]))) {
                exchange_job_free(j);
                snprintf(why, whylen, "out of memory");
                return -1;
            }
        if (!j->creds) {
            exchange_job_free(j);
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        j->x.creds = j->creds;
    }
    pthread_t tid;
    if (pthread_create(&tid, NULL, exchange_thread, j) != 0) {
        exchange_job_free(j);
        snprintf(why, whylen, "cannot start a thread for the PMIx exchange");
        return -1;
    }
    struct timespec until = r->start;
    double whole = floor(r->fence_s);
    until.tv_sec += (time_t)whole;
    until.tv_nsec += (long)((r->fence_s - whole) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&j->lock);
    int e = 0;
    while (!j->done && e != ETIMEDOUT)
        e = pthread_cond_timedwait(&j->cond, &j->lock, &until);
    int done = j->done;
    pthread_mutex_unlock(&j->lock);
    if (!done) {
        r->stuck = 1;
        pthread_detach(tid);
        snprintf(why, whylen, "the PMIx exchange (fence and lookups) did not complete within "
                 "%.1f s of the start: did every task start? the step's PMIx server (Slurm's "
                 "mpi/pmix plugin) logs why in the nodes' slurmd logs", r->fence_s);
        return -1;
    }
    pthread_join(tid, NULL);
    int rc = j->rc;
    x->names = j->x.names;
    x->addrs = j->x.addrs;
    x->leader = j->x.leader;
    x->cred = j->x.cred;
    if (rc != 0)
        snprintf(why, whylen, "%s", j->why);
    exchange_job_free(j);
    return rc;
}

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static int get_job_size(const pmix_proc_t *me, uint32_t *size)
{
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, me->nspace, PMIX_RANK_WILDCARD);
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v);
    int ok = rc == PMIX_SUCCESS && v && v->type == PMIX_UINT32;
    if (ok)
        *size = v->data.uint32;
    if (v)
        PMIX_VALUE_RELEASE(v);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"out", required_argument, 0, 'o'},
        {"budget-ms", required_argument, 0, AGENT_OPT_BUDGET},
        {"method", required_argument, 0, AGENT_OPT_METHOD},
        {"probe-timeout-ms", required_argument, 0, AGENT_OPT_PTIMEOUT},
        {"max-samples", required_argument, 0, AGENT_OPT_MAXS}, {"no-pin", no_argument, 0, AGENT_OPT_NOPIN},
        {"level-step-ns", required_argument, 0, AGENT_OPT_LEVEL_STEP},
        {"verbose", no_argument, 0, 'v'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    agent_config c;
    agent_config_default(&c);
    c.mode = "step";
    const char *out = NULL;
    int opt;
    while ((opt = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
        int taken = agent_common_option(&c, PROG, opt, optarg);
        if (taken == 2)
            return 2;
        if (taken)
            continue;
        switch (opt) {
        case 'o': out = optarg; break;
        case 'v': c.verbose = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, PROG ": unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    if (!out) {
        fprintf(stderr, PROG ": --out DIR is required (see --help)\n");
        return 2;
    }
    pmix_rdv r;
    memset(&r, 0, sizeof r);
    clock_gettime(CLOCK_MONOTONIC, &r.start);
    pmix_status_t rc = PMIx_Init(&r.me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, PROG ": PMIx_Init: %s: run it as a job step, srun --mpi=pmix -N<n> "
                "--ntasks-per-node=1 toposcope probe --out DIR\n", PMIx_Error_string(rc));
        return 2;
    }
    int status = 2;
    if (get_job_size(&r.me, &r.size) != 0 || r.size < 1 || r.size > WIRE_MAX_NODES ||
        r.me.rank >= r.size) {
        fprintf(stderr, PROG ": PMIx gives no job size of 1 to %d tasks\n", WIRE_MAX_NODES);
        goto done;
    }
    /* The job and step the credential names: Slurm's ids under srun; under another PMIx
     * launcher, the namespace stands for the job. */
    const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
    unsigned long v;
    c.job = job && agent_parse_uint(job, UINT32_MAX, &v) == 0 ? (uint32_t)v : fnv1a(r.me.nspace);
    c.step = step && agent_parse_uint(step, UINT32_MAX, &v) == 0 ? (uint32_t)v : 0;
    char host[NAME_MAX_LEN + 1] = "";
    r.name = getenv("SLURMD_NODENAME");
    if (!r.name || !*r.name) {
        gethostname(host, sizeof host - 1);
        r.name = host;
    }
    if (strlen(r.name) > NAME_MAX_LEN || agent_resolve(PROG, r.name, &r.addr) != 0)
        goto done;
    /* the whole budget for meeting at most: a task that gives up then still writes its
     * fallback within the grace the budget promises */
    r.fence_s = c.budget_ms / 1e3;
    c.nnodes = (int)r.size;
    c.self = (int)r.me.rank;
    c.out_dir = out;
    c.write_out = c.self == 0;
    c.job_uid = getuid();
    c.job_gid = getgid();
    /* the credential: decodable only by this user, and accepted only when this user made it */
    cred_munge_keyx(&c.keyx, getuid());
    c.rdv.exchange = pmix_exchange;
    c.rdv.ctx = &r;
    /* one task per node: the step's node list, when it names as many nodes as there are
     * tasks, is what the fallback result lists if the tasks never meet */
    ts_hostlist step_nodes = {0, NULL};
    const char *nodelist = getenv("SLURM_STEP_NODELIST");
    ts_error herr;
    if (c.write_out && nodelist &&
        ts_hostlist_expand(nodelist, strlen(nodelist), &step_nodes, &herr) == TS_OK &&
        step_nodes.count == r.size)
        c.step_nodes = step_nodes.hosts;
    status = agent_run(&c);
    ts_hostlist_free(&step_nodes);
done:
    if (r.stuck) {
        /* PMIx_Finalize would wait for the exchange that never ended: leave without it (the
         * files and status are written; the step's PMIx server cleans up after the task) */
        fflush(NULL);
        _exit(status);
    }
    PMIx_Finalize(NULL, 0);
    if (r.names)
        for (uint32_t k = 0; k < r.size; k++)
            free(r.names[k]);
    free(r.names);
    free(r.addrs);
    free(r.cred);
    return status;
}
