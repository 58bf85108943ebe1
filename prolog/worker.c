/* toposcope agents — the worker role every node runs: it asks the leader for the session key
 * (or takes it from step mode's exchange), joins, times the ping-pongs of each round the leader
 * gives it, receives the result files and writes the spool, or the fallback result when the
 * leader never delivered. */
#include <arpa/inet.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include "agent_impl.h"
#include "toposcope/emit.h"
#include "toposcope/spool.h"
#include "toposcope/textout.h"

#define HELLO_EVERY_MS 20          /* worker retries before it holds the key */
#define JOIN_EVERY_MS 30
#define KEY_DECODE_EVERY_MS 5      /* at most one credential decode per this (a leader's KEY
                                    * comes once per HELLO, every HELLO_EVERY_MS) */
#define SPIN_EARLY_US 60           /* busy-poll from this long before the expected reply ... */
#define SPIN_LATE_US 120           /* ... until this long after it, sleep outside that window */
#define LINGER_MS 60               /* a worker stays this long after DONE to re-acknowledge */

static const char *const file_names[NFILES] = {"topology.conf", "tree.yaml", "links.yaml",
                                               "status.yaml"};

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
            if (n < 0) {
                /* Spin, but hand the CPU to whatever else is ready on it: where agents share
                 * CPUs (several jobs on a node, an emulated cluster) that is often the very
                 * agent whose reply this one waits for, or one that owes another prober a
                 * reply. Alone on its CPU, the call returns at once. */
                sched_yield();
                continue;
            }
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
int worker_fallback(worker *w, const char *reason, ts_error *err)
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
        char job[16];
        snprintf(job, sizeof job, "%u", c->job);
        /* No leader result, so nobody measured anybody: no node is "unreachable" (that is
         * evidence against a node, for the epilog); the measurement failed, and says why. */
        ts_status_head head = {.job = job, .mode = c->mode, .status = "fallback", .reason = reason,
                               .leader = c->names[0], .nodes = c->nnodes, .measured_nodes = 0,
                               .unreachable = NULL, .nunreachable = 0};
        ts_status_emit_head(m, &head);
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


static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Take the session key from the leader's credential, if the job's expected uid made it for
 * this job and step; otherwise say why in leader_why. */
int worker_accept_cred(worker *w, const char *cred)
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
    int whole = len == CRED_PAYLOAD;
    uint32_t job = whole ? get_be32(pl) : 0, step = whole ? get_be32(pl + 4) : 0;
    uint32_t node = whole ? get_be32(pl + 8) : UINT32_MAX;
    if (uid != c->keyx.expect_uid || !whole || job != c->job || step != c->step ||
        node != (uint32_t)c->self) {
        snprintf(w->leader_why, sizeof w->leader_why,
                 "the leader's credential was made by uid %u for job %u step %d node %d (want uid "
                 "%u, job %u step %d node %d)", (unsigned)uid, job, (int)step, (int)node,
                 (unsigned)c->keyx.expect_uid, c->job, (int)c->step, c->self);
        w->cnt.drop[WIRE_DROP_AUTH]++;
        sodium_memzero(pl, sizeof pl);
        return -1;
    }
    memcpy(w->key, pl + 12, WIRE_KEY_BYTES);
    sodium_memzero(pl, sizeof pl);
    wire_keys_derive(&w->keys, w->key);
    w->have_key = 1;
    return 0;
}

/* A KEY is worth a credential decode (MUNGE: a round trip to munged) only from the leader's
 * node, from one of the leader's ports, and not more often than a leader resends it: the
 * rest is someone else's, or a flood. */
static int key_sender_ok(worker *w, const struct sockaddr_in *from)
{
    const agent_config *c = w->c;
    int port_ok = 0;
    for (int k = 0; k < c->port_candidates && !port_ok; k++)
        port_ok = ntohs(from->sin_port) == agent_port_candidate(c, k);
    if (c->rdv.exchange || from->sin_addr.s_addr != c->addrs[0].sin_addr.s_addr || !port_ok) {
        w->cnt.drop[WIRE_DROP_ADDRESS]++;
        return 0;
    }
    double t = now_us();
    if (t < w->next_decode_us) {
        w->cnt.drop[WIRE_DROP_RATE]++;
        return 0;
    }
    w->next_decode_us = t + KEY_DECODE_EVERY_MS * 1e3;
    return 1;
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
int worker_run(worker *w)
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
            if (!key_sender_ok(w, &from))
                continue;
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
    /* step mode's exit status: a rank that writes nothing took part only once admitted */
    return !c->write_out && !w->admitted;
}

int worker_init(worker *w, const agent_config *c, double t0, ts_error *err)
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

void worker_free(worker *w)
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
