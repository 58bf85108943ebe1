/* toposcope agents — one agent per node of a job; the first node's agent also leads.
 *
 * Time line of one agent (t0 = its start, B = the budget):
 *   rendezvous   prolog mode: workers send HELLO to the leader's candidate ports until the
 *                leader answers with a MUNGE credential holding the session key; step mode: an
 *                exchange outside the agents (PMIx, step.c) hands every node the peers'
 *                addresses and the leader's credential. Then workers JOIN (MAC'd); the leader
 *                admits nodes until all joined or RDV_SHARE of B has passed;
 *   measurement  the leader runs ts_measure_run() over a UDP transport: per round it tells each
 *                initiator its partner, initiators ping-pong and report their pair statistics;
 *   distribution the leader sends every admitted agent the result files and waits for DONE;
 *   spool        every agent writes its job spool directory; an agent that heard nothing usable
 *                by t0 + B writes the fallback result (hostlist order) with the reason.
 * Whatever happens, an agent returns by t0 + B + AGENT_GRACE_MS. */
#ifndef TOPOSCOPE_AGENT_H
#define TOPOSCOPE_AGENT_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/types.h>
#include "toposcope/discover.h"
#include "toposcope/probe.h"
#include "wire.h"

#define AGENT_NO_STEP UINT32_MAX   /* prolog mode: the credential names the job only */
#define AGENT_GRACE_MS 150     /* past the budget: writing the fallback; the issue allows 200 */

/* How the session key reaches workers: MUNGE in prolog mode (cred.c); step mode may pass it
 * through PMIx instead. encode returns a malloc'd credential text. */
typedef struct agent_keyx {
    char *(*encode)(void *ctx, const uint8_t *payload, size_t len, char *why, size_t whylen);
    /* fills payload (at most *len bytes), *len, and the encoder's uid; 0 on success */
    int (*decode)(void *ctx, const char *cred, uint8_t *payload, size_t *len, uid_t *uid, char *why,
                  size_t whylen);
    void *ctx;
    uid_t expect_uid;          /* the only uid whose credential a worker accepts */
} agent_keyx;

/* Step mode's rendezvous: called on every node once its sockets are bound, before any
 * datagram. In: this node's worker port and, on the leader, the leader's port and one
 * credential per node (MUNGE refuses to decode a credential twice on one host, and nodes may
 * share a host). Out (on every node): each node's name and worker address (with its port) in
 * rank order, the leader's address and this node's credential. The arrays and strings belong
 * to the exchange's context and outlive agent_run. */
typedef struct agent_exchange {
    uint16_t worker_port;
    uint16_t leader_port;          /* leader only */
    char *const *creds;            /* leader only: nnodes credentials */
    char **names;                  /* out: nnodes names */
    struct sockaddr_in *addrs;     /* out: nnodes worker addresses */
    struct sockaddr_in leader;     /* out */
    const char *cred;              /* out: this node's credential */
} agent_exchange;

typedef struct agent_rendezvous {
    /* NULL: prolog mode (HELLO to the port derived from the job id, the key over UDP) */
    int (*exchange)(void *ctx, agent_exchange *x, char *why, size_t whylen);
    void *ctx;
} agent_rendezvous;

typedef struct agent_config {
    uint32_t job;
    uint32_t step;             /* step mode: the step id the credential names; prolog mode AGENT_NO_STEP */
    int nnodes;
    char **names;              /* hostlist order: names[0] leads (step mode: from the exchange) */
    int self;
    struct sockaddr_in *addrs; /* each node's IPv4 address (port ignored; step mode: from the exchange) */
    int port_base, port_span;
    int port_candidates;       /* leader ports tried in order (bounded by port_span) */
    double budget_ms;
    ts_stop_rule rule;
    double probe_timeout_us;
    ts_method method;
    const char *spool_parent;  /* the job's directory is spool_parent/<job> */
    const char *out_dir;       /* step mode: the files go here instead (made if missing) */
    int write_out;             /* write the files on this node (step mode: only the leader's) */
    uid_t job_uid;
    gid_t job_gid;
    int pin_cpu;               /* pin the agent to one CPU while probing */
    double level_step_ns;      /* the least a level of this fabric adds (0: the built-in) */
    const char *mode;          /* "prolog" or "step", recorded in status.yaml */
    double started_us;         /* when the budget began (agent_clock_us); 0: at agent_run, so
                                * what the caller did first (resolving names, reading the
                                * policy) counts against the budget when it sets this */
    char **step_nodes;         /* step mode: the step's nnodes nodes in hostlist order as the
                                * launcher names them (SLURM_STEP_NODELIST), NULL if unknown:
                                * when the tasks never meet, the leader writes the fallback
                                * result for them, so the files are there all the same */
    agent_keyx keyx;
    agent_rendezvous rdv;
    int verbose;
} agent_config;

void agent_config_default(agent_config *c);

/* Run this node's agent (and the leader when self == 0). Returns 0 when the spool directory
 * was written (with status measured, partial or fallback; step mode: or was not this node's to
 * write), 1 when not even that was possible, and in step mode when the tasks never met (the
 * leader still writes the fallback then when step_nodes names the nodes). */
int agent_run(const agent_config *c);
/* The clock the agents' deadlines use: monotonic, microseconds. */
double agent_clock_us(void);

/* The leader's rendezvous port candidates: port_base + (job + k) mod port_span. */
uint16_t agent_port_candidate(const agent_config *c, int k);

#endif
