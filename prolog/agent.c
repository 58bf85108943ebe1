/* toposcope agents — the worker role every node runs, the leader's coordinator, the UDP probe
 * transport the leader hands to the engine, and the job spool. See agent.h for the time line. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>
#include "agent.h"
#include "toposcope/emit.h"
#include "toposcope/fabric.h"
#include "toposcope/hostlist.h"
#include "toposcope/measure.h"
#include "toposcope/topoconf.h"
#include "toposcope/textout.h"

/* Shares of the budget B: the leader admits agents until RDV_SHARE * B, ends measuring at
 * MEASURE_SHARE * B and distribution at DIST_SHARE * B, so workers (which started within a few
 * milliseconds of the leader) have the files before they give up at B. */
#define RDV_SHARE 0.20
#define RDV_AFTER_MEET 0.10        /* step mode: admission lasts this share of B after the exchange */
#define RDV_MAX_SHARE 0.50         /* ... but never past this share */
#define MEASURE_SHARE 0.85
#define DIST_SHARE 0.95
#define HELLO_EVERY_MS 20          /* worker retries before it holds the key */
#define JOIN_EVERY_MS 30
#define RESEND_MS 20               /* leader: ROUND, SYNC, FILE retransmissions */
#define DEAD_AFTER_SENDS 6         /* unanswered retransmissions after which an agent is dead */
#define SPIN_EARLY_US 60           /* busy-poll from this long before the expected reply ... */
#define SPIN_LATE_US 120           /* ... until this long after it, sleep outside that window */
#define LINGER_MS 60               /* a worker stays this long after DONE to re-acknowledge */

enum { F_TOPOLOGY, F_TREE, F_LINKS, F_STATUS, NFILES };
static const char *const file_names[NFILES] = {"topology.conf", "tree.yaml", "links.yaml",
                                               "status.yaml"};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

void agent_config_default(agent_config *c)
{
    memset(c, 0, sizeof *c);
    c->port_base = 47000;
    c->port_span = 1000;
    c->port_candidates = 4;
    c->budget_ms = 5000;
    ts_stop_rule_default(&c->rule);
    c->probe_timeout_us = 10000;
    c->method = TS_METHOD_FAST;
    c->spool_parent = "/var/spool/toposcope";
    c->job_uid = 0;
    c->job_gid = 0;
    c->pin_cpu = 1;
    c->mode = "prolog";
    c->step = AGENT_NO_STEP;
    c->write_out = 1;
}

uint16_t agent_port_candidate(const agent_config *c, int k)
{
    return (uint16_t)(c->port_base + (int)(((uint64_t)c->job + (uint64_t)k) % (uint64_t)c->port_span));
}

static void say(const agent_config *c, const char *fmt, va_list ap)
{
    /* step mode learns the names in the exchange: before it, the rank stands for the node */
    if (c->names)
        fprintf(stderr, "toposcope-%s[%s]: ", c->rdv.exchange ? "probe" : "prolog", c->names[c->self]);
    else
        fprintf(stderr, "toposcope-probe[rank %d]: ", c->self);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void vlog(const agent_config *c, const char *fmt, ...) TS_PRINTF(2, 3);
static void vlog(const agent_config *c, const char *fmt, ...)
{
    if (!c->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    say(c, fmt, ap);
    va_end(ap);
}

static void agent_err(const agent_config *c, const char *fmt, ...) TS_PRINTF(2, 3);
static void agent_err(const agent_config *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(c, fmt, ap);
    va_end(ap);
}

/* ---- sockets ---- */

static int udp_socket(uint16_t port, ts_error *err)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ts_fail(err, TS_ESYS, "socket: %s", strerror(errno));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        return ts_fail(err, e == EADDRINUSE ? TS_ELIMIT : TS_ESYS, "bind port %u: %s", port,
                       strerror(e));
    }
    return fd;
}

static void send_to(int fd, const uint8_t *buf, size_t n, const struct sockaddr_in *to)
{
    /* UDP: a full socket buffer or an unreachable peer loses this datagram, and the protocol
     * retransmits whatever matters, so errors are not fatal here. */
    if (n)
        (void)sendto(fd, buf, n, 0, (const struct sockaddr *)to, sizeof *to);
}

/* Wait until a datagram arrives or until `until` (µs, monotonic); returns its size, 0 at the
 * time limit. */
static ssize_t recv_until(int fd, double until, uint8_t *buf, size_t cap, struct sockaddr_in *from)
{
    for (;;) {
        socklen_t fl = sizeof *from;
        ssize_t n = recvfrom(fd, buf, cap, 0, (struct sockaddr *)from, &fl);
        if (n >= 0)
            return n == 0 ? -1 : n;   /* an empty datagram is still a datagram: count it short */
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        double left = until - now_us();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        struct timespec ts = {.tv_sec = (time_t)(left / 1e6),
                              .tv_nsec = (long)fmod(left * 1e3, 1e9)};
        ppoll(&p, 1, &ts, NULL);
    }
}

/* ---- spool ---- */

/* The job's directory under the spool parent: created by us, never through a symlink, owned by
 * root (the agent's euid) with the job's group, 0750, so the job's user (through its primary
 * group) reads it and nobody else does. */
static int out_dir_open(const agent_config *c, ts_error *err)
{
    /* step mode: the user's own directory, made if missing; an existing one keeps its mode */
    if (mkdir(c->out_dir, 0750) != 0 && errno != EEXIST)
        return ts_fail(err, TS_ESYS, "cannot create %s: %s (choose another --out)", c->out_dir,
                       strerror(errno));
    int fd = open(c->out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return ts_fail(err, TS_ESYS, "cannot open %s: %s (--out wants a directory, not a symlink)",
                       c->out_dir, strerror(e));
    }
    if (st.st_uid != geteuid()) {
        close(fd);
        return ts_fail(err, TS_EINPUT, "%s belongs to uid %u, not to you: choose another --out",
                       c->out_dir, (unsigned)st.st_uid);
    }
    return fd;
}

static int spool_open(const agent_config *c, ts_error *err)
{
    if (c->out_dir)
        return out_dir_open(c, err);
    char job[16];
    snprintf(job, sizeof job, "%u", c->job);
    /* the parent: created if missing (0755, like /var/spool), but never a symlink */
    if (mkdir(c->spool_parent, 0755) != 0 && errno != EEXIST)
        return ts_fail(err, TS_ESYS, "cannot create spool directory %s: %s (set --spool)",
                       c->spool_parent, strerror(errno));
    int pfd = open(c->spool_parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return ts_fail(err, TS_ESYS, "cannot open spool directory %s: %s", c->spool_parent,
                       strerror(errno));
    if (mkdirat(pfd, job, 0700) != 0 && errno != EEXIST) {
        int e = errno;
        close(pfd);
        return ts_fail(err, TS_ESYS, "cannot create %s/%s: %s", c->spool_parent, job, strerror(e));
    }
    int fd = openat(pfd, job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(pfd);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return ts_fail(err, TS_ESYS, "cannot open %s/%s: %s", c->spool_parent, job, strerror(e));
    }
    if (st.st_uid != geteuid()) {
        close(fd);
        return ts_fail(err, TS_EINPUT, "%s/%s exists and belongs to uid %u, not to this agent",
                       c->spool_parent, job, (unsigned)st.st_uid);
    }
    if (fchown(fd, geteuid(), c->job_gid) != 0 || fchmod(fd, 0750) != 0) {
        int e = errno;
        close(fd);
        return ts_fail(err, TS_ESYS, "cannot set owner/mode of %s/%s: %s", c->spool_parent, job,
                       strerror(e));
    }
    return fd;
}

static int spool_write(const agent_config *c, int dirfd, const char *name, const char *text,
                       ts_error *err)
{
    int rc = ts_write_file_at(dirfd, name, text, strlen(text), 0640, err);
    if (rc == TS_OK) {
        int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fchown(fd, geteuid(), c->job_gid) != 0)
            rc = ts_fail(err, TS_ESYS, "cannot set the group of %s: %s", name, strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    return rc;
}

/* ---- status.yaml ---- */

static void yaml_counters(FILE *f, const char *key, const wire_counters *w)
{
    fprintf(f, "%s: {received: %llu, accepted: %llu, dropped: %llu", key,
            (unsigned long long)w->received, (unsigned long long)w->accepted,
            (unsigned long long)wire_counters_dropped(w));
    for (int d = 0; d < WIRE_DROP_END; d++)
        fprintf(f, ", %s: %llu", wire_drop_name(d), (unsigned long long)w->drop[d]);
    fprintf(f, "}\n");
}

/* ---- fallback trees ---- */

/* `base` (may be NULL) plus the nodes in `extra` (hostlist order) under a switch named
 * `sw` hanging from base's root (or alone). The fallback order of a node nobody measured is
 * its place in the hostlist. */
static int tree_with_extra(const ts_fabric *base, char *const *extra, int nextra, const char *sw,
                           ts_fabric *out, ts_error *err)
{
    ts_fabric_init(out);
    int rc = TS_OK;
    if (base)
        for (int i = 0; i < base->nvert && rc >= 0; i++) {
            rc = ts_fabric_add_vertex(out, base->v[i].name, base->v[i].kind, err);
            if (rc >= 0)
                out->v[rc].link_us = base->v[i].link_us;
        }
    if (base)
        for (int i = 0; i < base->nvert && rc >= 0; i++)
            for (int ch = base->v[i].first_child; ch != TS_NONE && rc >= 0; ch = base->v[ch].next_sibling)
                rc = ts_fabric_attach(out, i, ch, err);
    if (rc >= 0 && nextra > 0) {
        int s = ts_fabric_add_vertex(out, sw, TS_SWITCH, err);
        rc = s;
        if (s >= 0 && base)
            rc = ts_fabric_attach(out, base->root, s, err);
        for (int i = 0; i < nextra && rc >= 0; i++) {
            int v = ts_fabric_add_vertex(out, extra[i], TS_NODE, err);
            rc = v < 0 ? v : ts_fabric_attach(out, s, v, err);
        }
    }
    if (rc >= 0)
        rc = ts_fabric_finalize(out, err);
    if (rc < 0) {
        ts_fabric_free(out);
        return rc;
    }
    return TS_OK;
}

static char *fabric_text(const ts_fabric *f, int yaml)
{
    char *s = NULL;
    size_t len;
    FILE *m = open_memstream(&s, &len);
    if (!m)
        return NULL;
    if (yaml)
        ts_fabric_write_yaml(f, m);
    else
        ts_fabric_write_topology_conf(f, m);
    if (ferror(m) | fclose(m)) {
        free(s);
        return NULL;
    }
    return s;
}

/* =============================== worker ====================================================== */

typedef struct worker {
    const agent_config *c;
    int fd;
    double t0, deadline;
    uint8_t key[WIRE_KEY_BYTES];
    wire_keys keys;
    int have_key, admitted;
    char leader_why[256];          /* why the leader was not usable, for the fallback reason */
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

static void worker_send(worker *w, int type, const void *payload, size_t len,
                        const struct sockaddr_in *to)
{
    uint8_t buf[WIRE_MAX_DATAGRAM];
    size_t n = wire_build(buf, w->have_key ? &w->keys : NULL, type, w->c->job, (uint16_t)w->c->self,
                          ++w->seq, payload, len);
    send_to(w->fd, buf, n, to);
}

static void worker_hello(worker *w)
{
    const agent_config *c = w->c;
    for (int k = 0; k < c->port_candidates; k++) {
        struct sockaddr_in to = c->addrs[0];
        to.sin_port = htons(agent_port_candidate(c, k));
        worker_send(w, WIRE_HELLO, NULL, 0, &to);
    }
}

static void worker_pin(worker *w)
{
    if (!w->c->pin_cpu || w->pinned)
        return;
    /* One CPU for the whole probing phase: the timestamps of a ping-pong then come from one
     * core's clock path and the scheduler does not migrate us mid-sample. Which one: the
     * allowed CPU at (node index mod allowed CPUs), so agents sharing a machine (several jobs
     * on a node, or an emulated cluster) spread instead of piling onto wherever they started. */
    if (sched_getaffinity(0, sizeof w->saved_cpus, &w->saved_cpus) != 0)
        return;
    int nallowed = CPU_COUNT(&w->saved_cpus), want = w->c->self % (nallowed ? nallowed : 1), cpu = -1;
    for (int i = 0, k = 0; i < CPU_SETSIZE && cpu < 0; i++)
        if (CPU_ISSET(i, &w->saved_cpus) && k++ == want)
            cpu = i;
    if (cpu < 0)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0)
        w->pinned = 1;
}

static void worker_unpin(worker *w)
{
    if (w->pinned)
        sched_setaffinity(0, sizeof w->saved_cpus, &w->saved_cpus);
    w->pinned = 0;
}

static void worker_reply_probe(worker *w, const uint8_t *payload, const wire_hdr *h,
                               const struct sockaddr_in *from)
{
    wire_probe p;
    if (wire_probe_decode(payload, h->length, &p) != 0) {
        w->cnt.drop[WIRE_DROP_PAYLOAD]++;
        return;
    }
    worker_send(w, WIRE_PROBE_REPLY, payload, h->length, from);
}

static int from_leader(const worker *w, const wire_hdr *h)
{
    return h->sender == WIRE_LEADER;
}

/* One ping-pong for ts_sample_pair: the round trip in µs or -1 when lost. */
static double worker_probe(void *ctx)
{
    worker *w = ctx;
    const agent_config *c = w->c;
    wire_probe p = {.round = w->round, .probe = ++w->probe_no};
    uint8_t pl[WIRE_PROBE_LEN], buf[WIRE_MAX_DATAGRAM];
    double t_send = now_us();
    p.t_send_ns = (uint64_t)(t_send * 1e3);
    wire_probe_encode(&p, pl);
    worker_send(w, WIRE_PROBE, pl, sizeof pl, &w->partner_addr);
    double give_up = t_send + w->timeout_us;
    for (;;) {
        double t = now_us();
        if (t >= give_up)
            return -1;
        double expect = isfinite(w->min_rtt_us) ? t_send + w->min_rtt_us : INFINITY;
        ssize_t n;
        struct sockaddr_in from;
        if (t >= expect - SPIN_EARLY_US && t <= expect + SPIN_LATE_US) {
            /* busy-poll: the reply is due now, and a wake-up from sleep would add tens of µs */
            socklen_t fl = sizeof from;
            n = recvfrom(w->fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
            if (n < 0)
                continue;
        } else {
            double until = isfinite(expect) && t < expect - SPIN_EARLY_US ? expect - SPIN_EARLY_US : give_up;
            n = recv_until(w->fd, until, buf, sizeof buf, &from);
            if (n == 0)
                continue;
        }
        double t_recv = now_us();
        wire_hdr h;
        const uint8_t *payload = wire_accept(buf, n < 0 ? 0 : (size_t)n, c->job, c->nnodes, &w->keys,
                                             w->win, &h, &w->cnt);
        if (!payload)
            continue;
        if (h.type == WIRE_PROBE_REPLY && h.sender == w->partner) {
            wire_probe r;
            if (wire_probe_decode(payload, h.length, &r) == 0 && r.round == w->round &&
                r.probe == w->probe_no) {
                double rtt = t_recv - t_send;
                if (!(rtt >= w->min_rtt_us))
                    w->min_rtt_us = rtt;
                return rtt;
            }
            w->cnt.drop[WIRE_DROP_UNEXPECTED]++;       /* a late reply to an earlier probe */
        } else if (h.type == WIRE_PROBE) {
            worker_reply_probe(w, payload, &h, &from);
        } else if (h.type == WIRE_ROUND && from_leader(w, &h)) {
            uint8_t ack[WIRE_U32_LEN];
            wire_u32_encode(w->round, ack);
            worker_send(w, WIRE_ROUND_ACK, ack, sizeof ack, &w->leader);
        } else {
            w->cnt.drop[WIRE_DROP_UNEXPECTED]++;
        }
    }
}

static void worker_round(worker *w, const uint8_t *payload, const wire_hdr *h)
{
    wire_round r;
    if (wire_round_decode(payload, h->length, &r) != 0 || r.partner == w->c->self ||
        r.partner >= w->c->nnodes) {
        w->cnt.drop[WIRE_DROP_PAYLOAD]++;
        return;
    }
    uint8_t ack[WIRE_U32_LEN];
    wire_u32_encode(r.round, ack);
    worker_send(w, WIRE_ROUND_ACK, ack, sizeof ack, &w->leader);
    if (w->have_result && w->result_round == r.round) {
        send_to(w->fd, w->result_msg, w->result_len, &w->leader);    /* the RESULT was lost */
        return;
    }
    w->round = r.round;
    w->partner = r.partner;
    memset(&w->partner_addr, 0, sizeof w->partner_addr);
    w->partner_addr.sin_family = AF_INET;
    w->partner_addr.sin_addr.s_addr = r.partner_addr;
    w->partner_addr.sin_port = htons(r.partner_port);
    w->timeout_us = r.timeout_us;
    w->min_rtt_us = INFINITY;
    /* never past this agent's own deadline, whatever the leader asked */
    double budget = fmin((double)r.budget_us, w->deadline - now_us());
    wire_result res = {.round = r.round};
    /* Pinned while this agent times its own ping-pongs, and only then: answering a partner's
     * probe times nothing, and an agent that stayed pinned would have to wait for its one CPU
     * to answer; where agents share CPUs (an emulated cluster) that wait lands in the round
     * trips of every pair it answers. */
    worker_pin(w);
    ts_sample_pair(&r.rule, worker_probe, w, (double)r.timeout_us, budget, w->c->self, r.partner,
                   &res.st);
    worker_unpin(w);
    uint8_t pl[WIRE_RESULT_LEN];
    wire_result_encode(&res, pl);
    w->result_len = wire_build(w->result_msg, &w->keys, WIRE_RESULT, w->c->job, (uint16_t)w->c->self,
                               ++w->seq, pl, sizeof pl);
    w->result_round = r.round;
    w->have_result = 1;
    send_to(w->fd, w->result_msg, w->result_len, &w->leader);
}

static int worker_file(worker *w, const uint8_t *payload, const wire_hdr *h)
{
    wire_file f;
    if (wire_file_decode(payload, h->length, &f) != 0 || (w->files_known && f.nfiles != w->nfiles) ||
        (w->file[f.file] && w->total[f.file] != f.total) || f.offset % WIRE_CHUNK != 0) {
        w->cnt.drop[WIRE_DROP_PAYLOAD]++;
        return 0;
    }
    w->nfiles = f.nfiles;
    w->files_known = 1;
    if (!w->file[f.file]) {
        uint32_t chunks = f.total / WIRE_CHUNK + 1;
        w->file[f.file] = calloc(1, (size_t)f.total + 1);
        w->got[f.file] = calloc(chunks, 1);
        if (!w->file[f.file] || !w->got[f.file])
            return -1;
        w->total[f.file] = f.total;
    }
    memcpy(w->file[f.file] + f.offset, f.data, f.len);
    w->got[f.file][f.offset / WIRE_CHUNK] = 1;
    for (int i = 0; i < w->nfiles; i++) {
        if (!w->file[i])
            return 0;
        for (uint32_t k = 0; k <= w->total[i] / WIRE_CHUNK; k++)
            if (!w->got[i][k] && (k * WIRE_CHUNK < w->total[i] || w->total[i] == 0))
                return 0;
    }
    return 1;
}

static char *own_status_section(const worker *w)
{
    char *s = NULL;
    size_t len;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    fprintf(f, "# this agent\nnode: ");
    ts_emit_yaml_string(f, w->c->names[w->c->self]);
    fprintf(f, "\nagent_ms: %.1f\n", (now_us() - w->t0) / 1e3);
    yaml_counters(f, "wire", &w->cnt);
    if (ferror(f) | fclose(f)) {
        free(s);
        return NULL;
    }
    return s;
}

static char *concat(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

/* Write the leader's files and this agent's part of status.yaml. */
static int worker_write(worker *w, ts_error *err)
{
    const agent_config *c = w->c;
    if (!c->write_out) {
        w->wrote = 1;
        return TS_OK;
    }
    int dirfd = spool_open(c, err);
    if (dirfd < 0)
        return dirfd;
    int rc = TS_OK;
    for (int i = 0; i < w->nfiles && rc == TS_OK; i++) {
        if (i == F_STATUS || w->total[i] == 0)
            continue;
        rc = spool_write(c, dirfd, file_names[i], w->file[i], err);
    }
    char *own = own_status_section(w);
    char *status = own && w->nfiles > F_STATUS ? concat(w->file[F_STATUS], own) : NULL;
    free(own);
    if (!status && rc == TS_OK)
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
    if (rc == TS_OK && w->defer_status)
        w->status_text = status, status = NULL;
    else if (rc == TS_OK)
        rc = spool_write(c, dirfd, "status.yaml", status, err);
    free(status);
    close(dirfd);
    w->wrote = rc == TS_OK;
    return rc;
}

/* No usable result from the leader: every node in hostlist order under one switch. */
static int worker_fallback(worker *w, const char *reason, ts_error *err)
{
    const agent_config *c = w->c;
    ts_fabric f;
    int rc = tree_with_extra(NULL, c->names, c->nnodes, "fallback", &f, err);
    if (rc != TS_OK)
        return rc;
    for (int i = 0; i < NFILES; i++) {
        free(w->file[i]);
        w->file[i] = NULL;
        w->total[i] = 0;
    }
    w->file[F_TOPOLOGY] = fabric_text(&f, 0);
    w->file[F_TREE] = fabric_text(&f, 1);
    ts_fabric_free(&f);
    char *s = NULL;
    size_t len;
    FILE *m = open_memstream(&s, &len);
    if (m) {
        fprintf(m, "# toposcope job status, written by the node agents\njob: %u\nmode: %s\n", c->job,
                c->mode);
        fprintf(m, "status: fallback\nreason: ");
        ts_emit_yaml_string(m, reason);
        fprintf(m, "\nleader: ");
        ts_emit_yaml_string(m, c->names[0]);
        fprintf(m, "\nnodes: %d\nmeasured_nodes: 0\nunreachable: [", c->nnodes);
        for (int i = 0; i < c->nnodes; i++) {
            fputs(i ? ", " : "", m);
            ts_emit_yaml_string(m, c->names[i]);
        }
        fprintf(m, "]\nfallback_order: hostlist\n");
        if (ferror(m) | fclose(m)) {
            free(s);
            s = NULL;
        }
    }
    w->file[F_STATUS] = s;
    if (!w->file[F_TOPOLOGY] || !w->file[F_TREE] || !s)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    w->nfiles = NFILES;
    for (int i = 0; i < NFILES; i++)
        w->total[i] = w->file[i] ? (uint32_t)strlen(w->file[i]) : 0;
    return worker_write(w, err);
}

/* The credential's payload: job and step (big-endian) and the session key. */
#define CRED_PAYLOAD (8 + WIRE_KEY_BYTES)

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Take the session key from the leader's credential, if the job's expected uid made it for
 * this job and step; otherwise say why in leader_why. */
static int worker_accept_cred(worker *w, const char *cred)
{
    const agent_config *c = w->c;
    uint8_t pl[64];
    size_t len = sizeof pl;
    uid_t uid;
    char why[160];
    if (c->keyx.decode(c->keyx.ctx, cred, pl, &len, &uid, why, sizeof why) != 0) {
        snprintf(w->leader_why, sizeof w->leader_why, "the leader's credential: %.160s", why);
        w->cnt.drop[WIRE_DROP_AUTH]++;
        return -1;
    }
    uint32_t job = len == CRED_PAYLOAD ? get_be32(pl) : 0, step = len == CRED_PAYLOAD ? get_be32(pl + 4) : 0;
    if (uid != c->keyx.expect_uid || len != CRED_PAYLOAD || job != c->job || step != c->step) {
        snprintf(w->leader_why, sizeof w->leader_why,
                 "the leader's credential was made by uid %u for job %u step %d (want uid %u, job %u step %d)",
                 (unsigned)uid, job, (int)step, (unsigned)c->keyx.expect_uid, c->job, (int)c->step);
        w->cnt.drop[WIRE_DROP_AUTH]++;
        sodium_memzero(pl, sizeof pl);
        return -1;
    }
    memcpy(w->key, pl + 8, WIRE_KEY_BYTES);
    sodium_memzero(pl, sizeof pl);
    wire_keys_derive(&w->keys, w->key);
    w->have_key = 1;
    return 0;
}

static int worker_take_key(worker *w, const uint8_t *payload, const wire_hdr *h)
{
    char cred[WIRE_CRED_MAX + 1];
    if (wire_key_decode(payload, h->length, cred, sizeof cred) != 0) {
        w->cnt.drop[WIRE_DROP_PAYLOAD]++;
        return -1;
    }
    return worker_accept_cred(w, cred);
}

/* The worker role; `deadline` is absolute (µs, monotonic). Returns 0 when the spool was
 * written. */
static int worker_run(worker *w)
{
    const agent_config *c = w->c;
    uint8_t buf[WIRE_MAX_DATAGRAM + 64];
    double next_hello = 0, next_join = 0;
    ts_error err;
    while (now_us() < w->deadline) {
        double t = now_us();
        if (!w->have_key && !c->rdv.exchange && t >= next_hello) {
            worker_hello(w);
            next_hello = t + HELLO_EVERY_MS * 1e3;
        }
        if (w->have_key && !w->admitted && t >= next_join) {
            worker_send(w, WIRE_JOIN, NULL, 0, &w->leader);
            next_join = t + JOIN_EVERY_MS * 1e3;
        }
        if (w->files_done && t >= w->done_at + LINGER_MS * 1e3)
            break;
        double until = fmin(w->deadline, w->have_key ? (w->admitted ? w->deadline : next_join) : next_hello);
        if (w->files_done)
            until = fmin(until, w->done_at + LINGER_MS * 1e3);
        struct sockaddr_in from;
        ssize_t n = recv_until(w->fd, until, buf, sizeof buf, &from);
        if (n == 0)
            continue;
        wire_hdr h;
        const uint8_t *payload = wire_accept(buf, n < 0 ? 0 : (size_t)n, c->job, c->nnodes,
                                             w->have_key ? &w->keys : NULL, w->win, &h, &w->cnt);
        if (!payload)
            continue;
        if (h.type == WIRE_KEY && h.sender == WIRE_LEADER && !w->have_key) {
            if (worker_take_key(w, payload, &h) == 0) {
                w->leader = from;
                next_join = 0;
                vlog(c, "holds the session key from %s:%u", inet_ntoa(from.sin_addr),
                     ntohs(from.sin_port));
            }
            continue;
        }
        if (!w->have_key || (h.sender == WIRE_LEADER && h.type == WIRE_KEY)) {
            w->cnt.drop[WIRE_DROP_UNEXPECTED]++;
            continue;
        }
        if (h.sender == WIRE_LEADER)
            w->admitted = 1;
        switch (h.type) {
        case WIRE_PROBE:
            worker_reply_probe(w, payload, &h, &from);
            break;
        case WIRE_ROUND:
            if (h.sender == WIRE_LEADER)
                worker_round(w, payload, &h);
            else
                w->cnt.drop[WIRE_DROP_UNEXPECTED]++;
            break;
        case WIRE_SYNC:
            if (h.sender == WIRE_LEADER && h.length == WIRE_U32_LEN)
                worker_send(w, WIRE_SYNC_ACK, payload, WIRE_U32_LEN, &w->leader);
            else
                w->cnt.drop[WIRE_DROP_UNEXPECTED]++;
            break;
        case WIRE_FILE:
            if (h.sender != WIRE_LEADER) {
                w->cnt.drop[WIRE_DROP_UNEXPECTED]++;
                break;
            }
            if (w->files_done) {
                worker_send(w, WIRE_DONE, NULL, 0, &w->leader);
                break;
            }
            int r = worker_file(w, payload, &h);
            if (r < 0)
                return 1;
            if (r == 1) {
                worker_unpin(w);
                if (worker_write(w, &err) != TS_OK) {
                    agent_err(c, "%s", err.text);
                    return 1;
                }
                w->files_done = 1;
                w->done_at = now_us();
                worker_send(w, WIRE_DONE, NULL, 0, &w->leader);
                vlog(c, "wrote the spool %.1f ms after start", (w->done_at - w->t0) / 1e3);
            }
            break;
        default:
            w->cnt.drop[WIRE_DROP_UNEXPECTED]++;
        }
    }
    worker_unpin(w);
    if (w->files_done)
        return 0;
    char reason[512];
    if (!w->have_key)
        snprintf(reason, sizeof reason, "the leader %s never answered%s%s", c->names[0],
                 w->leader_why[0] ? ": " : "", w->leader_why);
    else if (!w->admitted)
        snprintf(reason, sizeof reason, "the leader %s did not admit this node in time",
                 c->names[0]);
    else
        snprintf(reason, sizeof reason, "the leader %s stopped answering before sending the result",
                 c->names[0]);
    vlog(c, "fallback: %s", reason);
    if (!c->write_out)   /* step mode: the leader's node writes the files; say why this one has none */
        agent_err(c, "%s", reason);
    if (worker_fallback(w, reason, &err) != TS_OK) {
        agent_err(c, "%s", err.text);
        return 1;
    }
    return 0;
}

static int worker_init(worker *w, const agent_config *c, double t0, ts_error *err)
{
    memset(w, 0, sizeof *w);
    w->c = c;
    w->t0 = t0;
    w->deadline = t0 + c->budget_ms * 1e3;
    w->fd = -1;
    w->win = calloc((size_t)c->nnodes + 1, sizeof *w->win);
    if (!w->win)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    /* Any free port: the leader learns it from the HELLO's source; only the rendezvous port
     * has to be known in advance. */
    w->fd = udp_socket(0, err);
    return w->fd < 0 ? w->fd : TS_OK;
}

static void worker_free(worker *w)
{
    if (w->fd >= 0)
        close(w->fd);
    for (int i = 0; i < NFILES; i++) {
        free(w->file[i]);
        free(w->got[i]);
    }
    free(w->status_text);
    free(w->win);
    sodium_memzero(w->key, sizeof w->key);
    sodium_memzero(&w->keys, sizeof w->keys);
}

/* =============================== leader ====================================================== */

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
    int njoined;
    int *jnode;                    /* transport index -> node index */
    ts_transport tp;
    uint32_t round_no, sync_no;
    /* timings (ms since t0) */
    double t_rdv, t_measure_start, t_measure_end, t_dist_end;
} leader;

static void leader_send(leader *L, int type, const void *payload, size_t len,
                        const struct sockaddr_in *to)
{
    uint8_t buf[WIRE_MAX_DATAGRAM];
    size_t n = wire_build(buf, &L->keys, type, L->c->job, WIRE_LEADER, ++L->seq, payload, len);
    send_to(L->fd, buf, n, to);
}

static int same_ip(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return a->sin_addr.s_addr == b->sin_addr.s_addr;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A credential holding the session key for this job and step (malloc'd), or NULL and why. */
static char *leader_cred(leader *L, char *why, size_t whylen)
{
    const agent_config *c = L->c;
    uint8_t pl[CRED_PAYLOAD];
    put_be32(pl, c->job);
    put_be32(pl + 4, c->step);
    memcpy(pl + 8, L->key, WIRE_KEY_BYTES);
    char *cred = c->keyx.encode(c->keyx.ctx, pl, sizeof pl, why, whylen);
    sodium_memzero(pl, sizeof pl);
    return cred;
}

/* Handle a datagram any phase may see: HELLO (answered with the node's credential while
 * admitting), JOIN. Returns 1 when handled. */
static int leader_common(leader *L, const wire_hdr *h, const struct sockaddr_in *from, int admitting)
{
    const agent_config *c = L->c;
    if (h->sender == WIRE_LEADER) {
        L->cnt.drop[WIRE_DROP_UNEXPECTED]++;
        return 1;
    }
    int i = h->sender;
    if (h->type == WIRE_HELLO) {
        /* Only from the node's own address: a HELLO is unauthenticated, and answering it from
         * anywhere would make the leader a credential reflector. */
        if (!admitting || c->rdv.exchange || !same_ip(from, &c->addrs[i]) || L->joined[i]) {
            L->cnt.drop[WIRE_DROP_UNEXPECTED]++;
            return 1;
        }
        if (!L->cred[i]) {
            char why[160];
            L->cred[i] = leader_cred(L, why, sizeof why);
            if (!L->cred[i]) {
                agent_err(c, "%s", why);
                return 1;
            }
        }
        uint8_t buf[WIRE_MAX_DATAGRAM];
        size_t n = wire_build(buf, NULL, WIRE_KEY, c->job, WIRE_LEADER, ++L->seq, L->cred[i],
                              strlen(L->cred[i]));
        send_to(L->fd, buf, n, from);
        return 1;
    }
    if (h->type == WIRE_JOIN) {
        if (!L->joined[i] && admitting) {
            L->joined[i] = 1;
            L->addr[i] = *from;
            L->njoined++;
        } else if (!L->joined[i]) {
            L->cnt.drop[WIRE_DROP_UNEXPECTED]++;
        }
        return 1;
    }
    return 0;
}

static ssize_t leader_recv(leader *L, double until, uint8_t *buf, size_t cap, wire_hdr *h,
                           struct sockaddr_in *from, const uint8_t **payload)
{
    for (;;) {
        ssize_t n = recv_until(L->fd, until, buf, cap, from);
        if (n == 0) {
            if (now_us() >= until)
                return 0;
            continue;
        }
        *payload = wire_accept(buf, n < 0 ? 0 : (size_t)n, L->c->job, L->c->nnodes, &L->keys, L->win,
                               h, &L->cnt);
        if (*payload)
            return n;
    }
}

static void leader_rendezvous(leader *L, double until)
{
    uint8_t buf[WIRE_MAX_DATAGRAM + 64];
    while (L->njoined < L->c->nnodes) {
        wire_hdr h;
        struct sockaddr_in from;
        const uint8_t *p;
        if (leader_recv(L, until, buf, sizeof buf, &h, &from, &p) == 0)
            break;
        if (!leader_common(L, &h, &from, 1))
            L->cnt.drop[WIRE_DROP_UNEXPECTED]++;
    }
}

/* ---- the UDP transport (ts_transport_ops) ---- */

static double tp_now(ts_transport *t)
{
    leader *L = t->impl;
    return now_us() - L->t0;
}

typedef struct pair_state {
    int a, b;                      /* node indices */
    int acked, done, sends;
    double last_send;
} pair_state;

static void send_round(leader *L, pair_state *ps, const ts_stop_rule *rule, double deadline_abs)
{
    wire_round r = {.round = L->round_no, .partner = (uint16_t)ps->b,
                    .partner_addr = L->addr[ps->b].sin_addr.s_addr,
                    .partner_port = ntohs(L->addr[ps->b].sin_port), .rule = *rule,
                    .timeout_us = (uint32_t)L->c->probe_timeout_us};
    double left = deadline_abs - now_us() - 2000;    /* the RESULT's way back */
    r.budget_us = left > 0 ? (uint32_t)fmin(left, 4e9) : 0;
    uint8_t pl[WIRE_ROUND_LEN];
    wire_round_encode(&r, pl);
    leader_send(L, WIRE_ROUND, pl, sizeof pl, &L->addr[ps->a]);
    ps->sends++;
    ps->last_send = now_us();
}

static void unreachable_stats(ts_pair_stats *s, int a, int b)
{
    memset(s, 0, sizeof *s);
    s->a = a;
    s->b = b;
    s->flags = TS_PAIR_UNREACHABLE;
    s->min_us = s->median_us = s->mad_us = s->mean_us = s->est_us = s->ci_us = NAN;
}

static int tp_run_round(ts_transport *t, const ts_pair *pairs, int npairs, const ts_stop_rule *rule,
                        double deadline_us, ts_pair_stats *out, ts_error *err)
{
    leader *L = t->impl;
    double deadline_abs = L->t0 + deadline_us;
    pair_state *ps = calloc((size_t)(npairs ? npairs : 1), sizeof *ps);
    if (!ps)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    L->round_no++;
    int left = npairs;
    for (int i = 0; i < npairs; i++) {
        ps[i].a = L->jnode[pairs[i].a];
        ps[i].b = L->jnode[pairs[i].b];
        if (L->dead[ps[i].a] || L->dead[ps[i].b]) {
            unreachable_stats(&out[i], pairs[i].a, pairs[i].b);
            ps[i].done = 1;
            left--;
        } else {
            send_round(L, &ps[i], rule, deadline_abs);
        }
    }
    uint8_t buf[WIRE_MAX_DATAGRAM + 64];
    /* the initiators stop at the deadline themselves; their RESULTs get a little longer */
    double give_up = deadline_abs + 50e3;
    while (left > 0) {
        double t_now = now_us(), next = give_up;
        for (int i = 0; i < npairs; i++) {
            if (ps[i].done)
                continue;
            double every = (ps[i].acked ? 5 : 1) * RESEND_MS * 1e3;
            if (t_now >= ps[i].last_send + every) {
                if (ps[i].sends >= DEAD_AFTER_SENDS) {
                    /* the initiator neither acknowledged nor reported: it is gone */
                    L->dead[ps[i].a] = 1;
                    unreachable_stats(&out[i], pairs[i].a, pairs[i].b);
                    ps[i].done = 1;
                    left--;
                    continue;
                }
                send_round(L, &ps[i], rule, deadline_abs);
            }
            next = fmin(next, ps[i].last_send + every);
        }
        if (left == 0 || t_now >= give_up)
            break;
        wire_hdr h;
        struct sockaddr_in from;
        const uint8_t *p;
        if (leader_recv(L, next, buf, sizeof buf, &h, &from, &p) == 0)
            continue;
        if (leader_common(L, &h, &from, 0))
            continue;
        uint32_t rno;
        int i;
        for (i = 0; i < npairs && !(ps[i].a == h.sender && !ps[i].done); i++)
            ;
        if (h.type == WIRE_ROUND_ACK && wire_u32_decode(p, h.length, &rno) == 0 && rno == L->round_no &&
            i < npairs) {
            ps[i].acked = 1;
            ps[i].sends = 0;
        } else if (h.type == WIRE_RESULT && i < npairs) {
            wire_result r;
            if (wire_result_decode(p, h.length, &r) != 0) {
                L->cnt.drop[WIRE_DROP_PAYLOAD]++;
                continue;
            }
            if (r.round != L->round_no) {
                L->cnt.drop[WIRE_DROP_UNEXPECTED]++;
                continue;
            }
            out[i] = r.st;
            out[i].a = pairs[i].a;
            out[i].b = pairs[i].b;
            if (out[i].samples == 0) {
                out[i].min_us = out[i].median_us = out[i].mad_us = NAN;
                out[i].mean_us = out[i].est_us = out[i].ci_us = NAN;
            }
            ps[i].done = 1;
            left--;
        } else {
            L->cnt.drop[WIRE_DROP_UNEXPECTED]++;
        }
    }
    for (int i = 0; i < npairs; i++)
        if (!ps[i].done) {
            unreachable_stats(&out[i], pairs[i].a, pairs[i].b);
            out[i].flags = TS_PAIR_DEADLINE;
        }
    free(ps);
    return TS_OK;
}

/* A control step: every live agent answers a SYNC, so the leader knows who is still there
 * before it decides the next rounds. */
static int tp_control_step(ts_transport *t, double deadline_us, ts_error *err)
{
    leader *L = t->impl;
    double deadline_abs = L->t0 + deadline_us;
    L->sync_no++;
    int n = L->njoined;
    int *acked = calloc((size_t)n, sizeof(int)), *sends = calloc((size_t)n, sizeof(int));
    if (!acked || !sends) {
        free(acked);
        free(sends);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    uint8_t pl[WIRE_U32_LEN], buf[WIRE_MAX_DATAGRAM + 64];
    wire_u32_encode(L->sync_no, pl);
    int left = 0;
    for (int k = 0; k < n; k++)
        if (L->dead[L->jnode[k]])
            acked[k] = 1;
        else
            left++;
    double next = 0;
    int rc = TS_OK;
    while (left > 0) {
        double t_now = now_us();
        if (t_now >= deadline_abs) {
            rc = ts_fail(err, TS_ELIMIT, "the deadline passed during a control step");
            break;
        }
        if (t_now >= next) {
            for (int k = 0; k < n; k++) {
                if (acked[k])
                    continue;
                if (sends[k] >= DEAD_AFTER_SENDS) {
                    L->dead[L->jnode[k]] = 1;
                    acked[k] = 1;
                    left--;
                    continue;
                }
                leader_send(L, WIRE_SYNC, pl, sizeof pl, &L->addr[L->jnode[k]]);
                sends[k]++;
            }
            next = t_now + RESEND_MS * 1e3;
            continue;
        }
        wire_hdr h;
        struct sockaddr_in from;
        const uint8_t *p;
        if (leader_recv(L, fmin(next, deadline_abs), buf, sizeof buf, &h, &from, &p) == 0)
            continue;
        if (leader_common(L, &h, &from, 0))
            continue;
        uint32_t s;
        int k;
        for (k = 0; k < n && L->jnode[k] != h.sender; k++)
            ;
        if (h.type == WIRE_SYNC_ACK && wire_u32_decode(p, h.length, &s) == 0 && s == L->sync_no &&
            k < n && !acked[k]) {
            acked[k] = 1;
            left--;
        } else {
            L->cnt.drop[WIRE_DROP_UNEXPECTED]++;   /* late ACKs and RESULTs of earlier steps */
        }
    }
    free(acked);
    free(sends);
    return rc;
}

static const ts_transport_ops udp_ops = {
    .run_round = tp_run_round,
    .now_us = tp_now,
    .control_step = tp_control_step,
    .cpu_s = NULL,
};

/* ---- results ---- */

typedef struct leader_result {
    char *text[NFILES];
    /* pairs.yaml: the link stage's raw pairs, written on the leader's node only (it can be
     * a few hundred kB on a large job, too much to send every node for nothing) */
    char *pairs;
} leader_result;

static void leader_status(leader *L, const ts_measure *m, int measured, const char *status,
                          const char *reason, const ts_probe_engine *e, FILE *f)
{
    const agent_config *c = L->c;
    fprintf(f, "# toposcope job status, written by the node agents\njob: %u\nmode: %s\n", c->job, c->mode);
    fprintf(f, "status: %s\nreason: ", status);
    ts_emit_yaml_string(f, reason);
    fprintf(f, "\nleader: ");
    ts_emit_yaml_string(f, c->names[0]);
    fprintf(f, "\nnodes: %d\nmeasured_nodes: %d\nunreachable: [", c->nnodes, measured);
    int first = 1;
    for (int i = 0; i < c->nnodes; i++) {
        int in_tree = m && ts_fabric_find(&m->tree, c->names[i]) != TS_NONE;
        if (!in_tree) {
            fputs(first ? "" : ", ", f);
            ts_emit_yaml_string(f, c->names[i]);
            first = 0;
        }
    }
    fprintf(f, "]\nfallback_order: hostlist\n");
    fprintf(f, "budget_ms: %g\n", c->budget_ms);
    fprintf(f, "method: %s\n", ts_method_name(c->method));
    fprintf(f, "job_uid: %u\njob_gid: %u\n", (unsigned)c->job_uid, (unsigned)c->job_gid);
    fprintf(f, "# leader's clock, ms since it started\n");
    fprintf(f, "rendezvous_ms: %.1f\n", L->t_rdv);
    if (m) {
        double disc = (m->disc_end_us - m->disc_start_us) / 1e3;
        fprintf(f, "discovery_ms: %.1f\n", disc);
        fprintf(f, "link_plan_ms: %.3f\n", m->link_plan_us / 1e3);
        fprintf(f, "link_measure_ms: %.1f\n", (m->link_time_us - m->link_plan_us) / 1e3);
        fprintf(f, "measure_ms: %.1f\n", L->t_measure_end - L->t_measure_start);
        fprintf(f, "probes: %ld\nsamples: %ld\nlost: %ld\nrounds: %ld\ncontrol_steps: %ld\n",
                e->count.probes, e->count.samples, e->count.lost, e->count.rounds, e->count.control_steps);
        fprintf(f, "tree_partial: %s\n", e->partial ? "true" : "false");
    }
    fprintf(f, "results_sent_ms: %.1f\n", (now_us() - L->t0) / 1e3);
}

static int render_status(leader *L, const ts_measure *m, int measured, const char *status,
                         const char *reason, const ts_probe_engine *e, char **out)
{
    size_t len;
    FILE *f = open_memstream(out, &len);
    if (!f)
        return -1;
    leader_status(L, m, measured, status, reason, e, f);
    if (ferror(f) | fclose(f)) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* Measure the joined nodes and render the four files. */
static int leader_measure(leader *L, leader_result *R, ts_error *err)
{
    const agent_config *c = L->c;
    memset(R, 0, sizeof *R);
    L->jnode = malloc(sizeof(int) * (size_t)c->nnodes);
    char **jnames = malloc(sizeof(char *) * (size_t)c->nnodes);
    char **missing = malloc(sizeof(char *) * (size_t)c->nnodes);
    if (!L->jnode || !jnames || !missing) {
        free(jnames);
        free(missing);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    int nj = 0, nmiss = 0;
    for (int i = 0; i < c->nnodes; i++)
        if (L->joined[i]) {
            L->jnode[nj] = i;
            jnames[nj++] = c->names[i];
        }
    L->tp.ops = &udp_ops;
    L->tp.impl = L;
    L->tp.nnodes = nj;
    L->t_measure_start = (now_us() - L->t0) / 1e3;
    double budget_us = (MEASURE_SHARE * c->budget_ms - L->t_measure_start) * 1e3;
    ts_probe_engine e = {0};
    ts_measure m;
    int have_m = 0, rc = TS_OK;
    char reason[TS_ERROR_TEXT_MAX + 64] = "";
    const char *status = "measured";
    if (nj < 2) {
        status = "fallback";
        snprintf(reason, sizeof reason, "only %d of %d agents joined before the rendezvous ended", nj,
                 c->nnodes);
    } else if (budget_us <= 0) {
        status = "fallback";
        snprintf(reason, sizeof reason, "no budget left after the rendezvous");
    } else if ((rc = ts_probe_engine_init(&e, &L->tp, &c->rule, budget_us, err)) == TS_OK) {
        ts_measure_options mo;
        ts_measure_options_default(&mo);
        mo.method = c->method;
        mo.names = jnames;
        rc = ts_measure_run(&e, &mo, &m, err);
        have_m = 1;
        if (rc != TS_OK) {
            status = "fallback";
            snprintf(reason, sizeof reason, "measurement failed: %s", err->text);
            rc = TS_OK;
            ts_measure_free(&m);
            have_m = 0;
        }
    } else {
        rc = TS_OK;
        status = "fallback";
        snprintf(reason, sizeof reason, "%s", err->text);
    }
    L->t_measure_end = (now_us() - L->t0) / 1e3;
    int measured = 0;
    if (have_m) {
        for (int i = 0; i < c->nnodes; i++)
            if (ts_fabric_find(&m.tree, c->names[i]) != TS_NONE)
                measured++;
            else
                missing[nmiss++] = c->names[i];
        ts_measure_text t;
        ts_fabric aug;
        rc = ts_measure_render(&m, NULL, NULL, &t, err);
        if (rc == TS_OK && nmiss > 0) {
            /* the measured tree plus the unreachable nodes, in hostlist order */
            rc = tree_with_extra(&m.tree, missing, nmiss, "unreachable", &aug, err);
            if (rc == TS_OK) {
                free(t.topology_conf);
                free(t.tree_yaml);
                t.topology_conf = fabric_text(&aug, 0);
                t.tree_yaml = fabric_text(&aug, 1);
                ts_fabric_free(&aug);
            }
        }
        R->text[F_TOPOLOGY] = t.topology_conf;
        R->text[F_TREE] = t.tree_yaml;
        R->text[F_LINKS] = t.links_yaml;
        R->pairs = t.pairs_yaml;
        char *p = reason;
        size_t cap = sizeof reason;
        if (nmiss > 0) {
            status = "partial";
            int w = snprintf(p, cap, "%d of %d nodes unreachable (", nmiss, c->nnodes);
            for (int i = 0; i < nmiss && w > 0 && (size_t)w < cap; i++) {
                p += w;
                cap -= (size_t)w;
                w = snprintf(p, cap, "%s%s", i ? ", " : "", missing[i]);
            }
            if (w > 0 && (size_t)w < cap) {
                p += w;
                cap -= (size_t)w;
                w = snprintf(p, cap, "), placed after the others in hostlist order");
            }
            if (w > 0 && (size_t)w < cap) {
                p += w;
                cap -= (size_t)w;
            }
        }
        if (e.partial || (m.links_ran && m.links.partial)) {
            status = "partial";
            snprintf(p, cap, "%sthe budget ran out before the plan was complete",
                     p == reason ? "" : "; ");
        } else if (nmiss == 0) {
            snprintf(reason, sizeof reason, "every node measured; %ld of %ld probes lost",
                     e.count.lost, e.count.lost + e.count.samples);
        }
    } else {
        for (int i = 0; i < c->nnodes; i++)
            missing[nmiss++] = c->names[i];
        ts_fabric f;
        rc = tree_with_extra(NULL, missing, nmiss, "fallback", &f, err);
        if (rc == TS_OK) {
            R->text[F_TOPOLOGY] = fabric_text(&f, 0);
            R->text[F_TREE] = fabric_text(&f, 1);
            ts_fabric_free(&f);
        }
    }
    if (rc == TS_OK && render_status(L, have_m ? &m : NULL, measured, status, reason, &e,
                                     &R->text[F_STATUS]) != 0)
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
    if (rc == TS_OK && (!R->text[F_TOPOLOGY] || !R->text[F_TREE]))
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
    vlog(c, "%s: %s", status, reason);
    if (have_m)
        ts_measure_free(&m);
    if (e.db)
        ts_probe_engine_free(&e);
    free(jnames);
    free(missing);
    return rc;
}

/* Send every file to every admitted agent until each said DONE or the time is up. */
static void leader_distribute(leader *L, const leader_result *R, double until)
{
    const agent_config *c = L->c;
    int *done = calloc((size_t)c->nnodes, sizeof(int));
    if (!done)
        return;
    int left = 0;
    for (int i = 0; i < c->nnodes; i++)
        if (L->joined[i] && !L->dead[i])
            left++;
    uint8_t buf[WIRE_MAX_DATAGRAM + 64], pl[WIRE_FILE_HDR + WIRE_CHUNK];
    double next = 0;
    while (left > 0 && now_us() < until) {
        if (now_us() >= next) {
            for (int i = 0; i < c->nnodes; i++) {
                if (!L->joined[i] || L->dead[i] || done[i])
                    continue;
                for (int k = 0; k < NFILES; k++) {
                    const char *s = R->text[k] ? R->text[k] : "";
                    uint32_t total = (uint32_t)strlen(s), off = 0;
                    do {
                        wire_file f = {.file = (uint8_t)k, .nfiles = NFILES, .total = total, .offset = off,
                                       .len = (uint16_t)(total - off > WIRE_CHUNK ? WIRE_CHUNK : total - off),
                                       .data = (const uint8_t *)s + off};
                        size_t n = wire_file_encode(&f, pl);
                        leader_send(L, WIRE_FILE, pl, n, &L->addr[i]);
                        off += f.len;
                    } while (off < total);
                }
            }
            next = now_us() + 2 * RESEND_MS * 1e3;
        }
        wire_hdr h;
        struct sockaddr_in from;
        const uint8_t *p;
        if (leader_recv(L, fmin(next, until), buf, sizeof buf, &h, &from, &p) == 0)
            continue;
        if (leader_common(L, &h, &from, 0))
            continue;
        if (h.type == WIRE_DONE && h.sender < c->nnodes && !done[h.sender] && L->joined[h.sender]) {
            done[h.sender] = 1;
            left--;
        } else {
            L->cnt.drop[WIRE_DROP_UNEXPECTED]++;
        }
    }
    free(done);
}

/* =============================== the agent ================================================== */

static void *worker_thread(void *arg)
{
    worker *w = arg;
    intptr_t rc = worker_run(w);
    return (void *)rc;
}

static uint16_t bound_port(int fd)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    return getsockname(fd, (struct sockaddr *)&sa, &sl) == 0 ? ntohs(sa.sin_port) : 0;
}

static int leader_open(leader *L, ts_error *err)
{
    const agent_config *c = L->c;
    if (c->rdv.exchange) {
        /* step mode: any free port, the exchange tells the workers which */
        L->fd = udp_socket(0, err);
        L->port = L->fd >= 0 ? bound_port(L->fd) : 0;
        return L->fd >= 0 && L->port ? TS_OK : ts_fail(err, TS_ESYS, "cannot bind the leader's socket");
    }
    for (int k = 0; k < c->port_candidates; k++) {
        uint16_t port = agent_port_candidate(c, k);
        int fd = udp_socket(port, err);
        if (fd >= 0) {
            L->fd = fd;
            L->port = port;
            return TS_OK;
        }
        if (fd != TS_ELIMIT)
            return fd;
        /* busy (another job's leader on this node): the next candidate, as the workers do */
    }
    return ts_fail(err, TS_ELIMIT,
                   "ports %u.. (%d candidates) are all in use on this node; widen --port-span",
                   agent_port_candidate(c, 0), c->port_candidates);
}

static void leader_free(leader *L)
{
    if (L->cred)
        for (int i = 0; i < L->c->nnodes; i++)
            free(L->cred[i]);
    free(L->cred);
    free(L->win);
    free(L->addr);
    free(L->joined);
    free(L->dead);
    free(L->jnode);
    if (L->fd >= 0)
        close(L->fd);
    sodium_memzero(L->key, sizeof L->key);
    sodium_memzero(&L->keys, sizeof L->keys);
}

/* The leader node's status.yaml: what every agent got, this node's own section, and what
 * only the leader knows at the end (distribution time, its wire counters); and pairs.yaml. */
static int leader_write_own(leader *L, worker *w, const char *pairs, ts_error *err)
{
    char *s = NULL;
    size_t len;
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    fputs(w->status_text, f);
    fprintf(f, "# the leader\ndistribution_ms: %.1f\nleader_ms: %.1f\n",
            L->t_dist_end - L->t_measure_end, (now_us() - L->t0) / 1e3);
    yaml_counters(f, "leader_wire", &L->cnt);
    if (ferror(f) | fclose(f)) {
        free(s);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    int dirfd = spool_open(L->c, err);
    int rc = dirfd < 0 ? dirfd : spool_write(L->c, dirfd, "status.yaml", s, err);
    if (rc == TS_OK && pairs)
        rc = spool_write(L->c, dirfd, "pairs.yaml", pairs, err);
    if (dirfd >= 0)
        close(dirfd);
    free(s);
    return rc;
}

/* Step mode's rendezvous: the exchange (PMIx) carries this node's ports and, from the leader,
 * the credential; it brings back every node's name and worker address and the leader's. A
 * worker whose credential does not check out stays without the key and falls back at its
 * deadline, saying why; a failed exchange leaves nothing to run with. */
static int step_exchange(agent_config *c, leader *L, worker *w, ts_error *err)
{
    agent_exchange x;
    memset(&x, 0, sizeof x);
    char why[256] = "";
    char **creds = NULL;
    x.worker_port = bound_port(w->fd);
    int rc = 0;
    if (L) {
        x.leader_port = L->port;
        creds = calloc((size_t)c->nnodes, sizeof(char *));
        rc = creds ? 0 : -1;
        for (int i = 0; i < c->nnodes && rc == 0; i++)
            if (!(creds[i] = leader_cred(L, why, sizeof why)))
                rc = -1;
        x.creds = creds;
    }
    if (rc == 0)
        rc = c->rdv.exchange(c->rdv.ctx, &x, why, sizeof why);
    for (int i = 0; creds && i < c->nnodes; i++)
        free(creds[i]);
    free(creds);
    if (rc != 0)
        return ts_fail(err, TS_ESYS, "%s", why[0] ? why : "out of memory");
    c->names = x.names;
    c->addrs = x.addrs;
    w->leader = x.leader;
    if (worker_accept_cred(w, x.cred) != 0)
        agent_err(c, "%s", w->leader_why);
    return TS_OK;
}

static int run_leader(agent_config *c, double t0)
{
    leader L;
    memset(&L, 0, sizeof L);
    L.c = c;
    L.t0 = t0;
    L.fd = -1;
    ts_error err;
    worker w;
    leader_result R;
    memset(&R, 0, sizeof R);
    L.win = calloc((size_t)c->nnodes + 1, sizeof *L.win);
    L.addr = calloc((size_t)c->nnodes, sizeof *L.addr);
    L.joined = calloc((size_t)c->nnodes, sizeof(int));
    L.dead = calloc((size_t)c->nnodes, sizeof(int));
    L.cred = calloc((size_t)c->nnodes, sizeof(char *));
    if (!L.win || !L.addr || !L.joined || !L.dead || !L.cred) {
        fprintf(stderr, "toposcope-prolog: out of memory\n");
        leader_free(&L);
        return 1;
    }
    randombytes_buf(L.key, sizeof L.key);
    wire_keys_derive(&L.keys, L.key);
    int lead = leader_open(&L, &err) == TS_OK;
    if (!lead)   /* the workers fall back on their own when no leader answers; so does this node */
        agent_err(c, "%s", err.text);
    else
        vlog(c, "leads job %u on port %u", c->job, L.port);
    if (worker_init(&w, c, t0, &err) != TS_OK ||
        (c->rdv.exchange && step_exchange(c, lead ? &L : NULL, &w, &err) != TS_OK)) {
        agent_err(c, "%s", err.text);
        if (c->rdv.exchange && c->step_nodes && w.win) {
            /* the tasks never met: the step's nodes in hostlist order all the same, saying why */
            char why[sizeof err.text + 64];
            snprintf(why, sizeof why, "the tasks never met: %s", err.text);
            c->names = c->step_nodes;
            if (worker_fallback(&w, why, &err) != TS_OK)
                agent_err(c, "%s", err.text);
            else
                vlog(c, "wrote the fallback result for the %d nodes of the step", c->nnodes);
        }
        worker_free(&w);
        leader_free(&L);
        return 1;
    }
    w.defer_status = lead;
    /* Step mode: the tasks met at the PMIx exchange, which lasts until the last task of the
     * step has started; srun starts them spread over up to a second on a loaded machine, and
     * that spread must not eat the window the leader admits them in. Their JOINs come right
     * after the exchange, so admission lasts a share of the budget past it (capped). */
    double rdv_until = t0 + RDV_SHARE * c->budget_ms * 1e3;
    if (c->rdv.exchange)
        rdv_until = fmin(fmax(rdv_until, now_us() + RDV_AFTER_MEET * c->budget_ms * 1e3),
                         t0 + RDV_MAX_SHARE * c->budget_ms * 1e3);
    /* This node's own agent runs as a thread with its own socket, exactly like the other
     * workers: the coordinator never has to probe and coordinate at the same time. */
    pthread_t tid;
    if (pthread_create(&tid, NULL, worker_thread, &w) != 0) {
        agent_err(c, "cannot start a thread");
        worker_free(&w);
        leader_free(&L);
        return 1;
    }
    int ok = 1;
    if (lead) {
        leader_rendezvous(&L, rdv_until);
        L.t_rdv = (now_us() - t0) / 1e3;
        vlog(c, "%d of %d agents joined in %.1f ms", L.njoined, c->nnodes, L.t_rdv);
        if (leader_measure(&L, &R, &err) != TS_OK) {
            agent_err(c, "%s", err.text);
            ok = 0;
        } else {
            leader_distribute(&L, &R, t0 + DIST_SHARE * c->budget_ms * 1e3);
        }
        L.t_dist_end = (now_us() - t0) / 1e3;
    }
    void *wrc;
    pthread_join(tid, &wrc);
    if (wrc != NULL)
        ok = 0;
    if (ok && lead && w.status_text && leader_write_own(&L, &w, R.pairs, &err) != TS_OK) {
        agent_err(c, "%s", err.text);
        ok = 0;
    }
    for (int k = 0; k < NFILES; k++)
        free(R.text[k]);
    free(R.pairs);
    worker_free(&w);
    leader_free(&L);
    return ok ? 0 : 1;
}

int agent_run(const agent_config *conf)
{
    double t0 = now_us();
    agent_config run = *conf, *c = &run;   /* step mode: names and addresses come from the exchange */
    if (wire_init() != 0) {
        fprintf(stderr, "toposcope-prolog: libsodium did not initialise\n");
        return 1;
    }
    /* a peer that went away must not kill us through a write to a dead socket */
    signal(SIGPIPE, SIG_IGN);
    if (c->self == 0)
        return run_leader(c, t0);
    worker w;
    ts_error err;
    int rc = 1;
    if (worker_init(&w, c, t0, &err) != TS_OK ||
        (c->rdv.exchange && step_exchange(c, NULL, &w, &err) != TS_OK))
        agent_err(c, "%s", err.text);
    else
        rc = worker_run(&w);
    worker_free(&w);
    return rc;
}
