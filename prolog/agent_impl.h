/* toposcope agents — private to the agent's files (agent.c, worker.c, leader.c, transport.c,
 * spool.c): the worker's and the leader's state, the timing they share, and every function one
 * of them calls in another. Only they include it; main.c and step.c see agent.h alone. */
#ifndef TOPOSCOPE_AGENT_IMPL_H
#define TOPOSCOPE_AGENT_IMPL_H

#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <sys/types.h>
#include <pthread.h>
#include "agent.h"
#include "toposcope/fabric.h"
#include "toposcope/probe.h"

/* Shares of the budget B: the leader admits agents until RDV_SHARE * B, ends measuring at
 * MEASURE_SHARE * B and distribution at DIST_SHARE * B, so workers (which started within a few
 * milliseconds of the leader) have the files before they give up at B. */
#define RDV_SHARE 0.20
#define RDV_AFTER_MEET 0.10        /* step mode: admission lasts this share of B after the exchange */
#define RDV_MAX_SHARE 0.50         /* ... but never past this share */
#define MEASURE_SHARE 0.85
#define DIST_SHARE 0.95
#define RESEND_MS 20               /* leader: ROUND, SYNC, FILE retransmissions */

enum { F_TOPOLOGY, F_TREE, F_LINKS, F_STATUS, NFILES };

/* Credentials are made this many at a time (MUNGE: a round trip to munged each). */
#define CRED_THREADS 4
enum { CRED_PENDING = 0, CRED_READY, CRED_FAILED };

/* The credential's payload: job, step and the node index it was made for (big-endian), and the
 * session key. The index binds a credential to one node: replayed to another, it is refused. */
#define CRED_PAYLOAD (12 + WIRE_KEY_BYTES)

typedef struct worker {
    const agent_config *c;
    int fd;
    double t0, deadline;
    uint8_t key[WIRE_KEY_BYTES];
    wire_keys keys;
    int have_key, admitted;
    char leader_why[256];          /* why the leader was not usable, for the fallback reason */
    double next_decode_us;         /* no credential decode before this (now_us clock) */
    wire_counters cnt;
    wire_window *win;              /* nnodes + 1 */
    uint64_t seq;
    struct sockaddr_in leader;     /* where the leader's messages come from */
    /* the current pair */
    uint32_t round, probe_no;
    int partner;
    struct sockaddr_in partner_addr;
    double min_rtt_us, timeout_us;
    int have_result;
    uint32_t result_round;
    uint8_t result_msg[WIRE_MAX_DATAGRAM];
    size_t result_len;
    /* files from the leader */
    char *file[NFILES];
    uint8_t *got[NFILES];          /* per chunk: received */
    uint32_t total[NFILES];
    int nfiles, files_known, files_done;
    double done_at;
    int pinned;
    cpu_set_t saved_cpus;
    /* the leader process writes status.yaml itself after distribution */
    int defer_status;
    char *status_text;
    int wrote;
} worker;

typedef struct leader {
    const agent_config *c;
    int fd;
    uint16_t port;
    double t0;
    uint8_t key[WIRE_KEY_BYTES];
    wire_keys keys;
    wire_counters cnt;
    wire_window *win;
    uint64_t seq;
    struct sockaddr_in *addr;      /* per node: its worker's socket */
    int *joined, *dead;
    char **cred;                   /* per node: the credential sent (a re-sent KEY reuses it) */
    int *cred_state;               /* per node: CRED_PENDING, CRED_READY or CRED_FAILED, set by
                                    * the encoder threads (atomic: read with acquire) */
    pthread_t cred_threads[CRED_THREADS];
    int ncred_threads;
    int njoined;
    int *jnode;                    /* transport index -> node index */
    ts_transport tp;
    uint32_t round_no, sync_no;
    /* timings (ms since t0) */
    double t_rdv, t_measure_start, t_measure_end, t_dist_end;
} leader;

typedef struct leader_result {
    char *text[NFILES];
    /* pairs.yaml: the link stage's raw pairs, written on the leader's node only (it can be
     * a few hundred kB on a large job, too much to send every node for nothing) */
    char *pairs;
} leader_result;

/* agent.c: the clock and the agent's messages */
double now_us(void);
void vlog(const agent_config *c, const char *fmt, ...) TS_PRINTF(2, 3);
void agent_err(const agent_config *c, const char *fmt, ...) TS_PRINTF(2, 3);

/* transport.c: the UDP sockets, and the transport the leader hands to the engine */
int udp_socket(uint16_t port, ts_error *err);
void send_to(int fd, const uint8_t *buf, size_t n, const struct sockaddr_in *to);
ssize_t recv_until(int fd, double until, uint8_t *buf, size_t cap, struct sockaddr_in *from);
uint16_t bound_port(int fd);
extern const ts_transport_ops udp_ops;

/* spool.c: the job's directory, status.yaml's counters and the fallback trees */
int spool_open(const agent_config *c, ts_error *err);
int spool_write(const agent_config *c, int dirfd, const char *name, const char *text,
                ts_error *err);
void yaml_counters(FILE *f, const char *key, const wire_counters *w);
int tree_with_extra(const ts_fabric *base, char *const *extra, int nextra, const char *sw,
                    ts_fabric *out, ts_error *err);
char *fabric_text(const ts_fabric *f, int yaml);

/* worker.c: the worker role */
int worker_init(worker *w, const agent_config *c, double t0, ts_error *err);
int worker_run(worker *w);
void worker_free(worker *w);
int worker_fallback(worker *w, const char *reason, ts_error *err);
int worker_accept_cred(worker *w, const char *cred);

/* leader.c: the leader's rendezvous, the datagrams every phase handles, and its results */
void leader_send(leader *L, int type, const void *payload, size_t len,
                 const struct sockaddr_in *to);
char *leader_cred(leader *L, int node, char *why, size_t whylen);
void leader_creds_start(leader *L);
void leader_creds_wait(leader *L);
int leader_cred_ready(leader *L, int node);
int leader_common(leader *L, const wire_hdr *h, const struct sockaddr_in *from, int admitting);
ssize_t leader_recv(leader *L, double until, uint8_t *buf, size_t cap, wire_hdr *h,
                    struct sockaddr_in *from, const uint8_t **payload);
void leader_rendezvous(leader *L, double until);
int leader_measure(leader *L, leader_result *R, ts_error *err);
void leader_distribute(leader *L, const leader_result *R, double until);

#endif
