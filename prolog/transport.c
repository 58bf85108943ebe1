/* toposcope agents — the UDP transport: the sockets every role uses, and the ts_transport_ops
 * the leader hands to the probe engine, which turn a round of pairs into ROUNDs to the
 * initiators and their RESULTs back, and a control step into a SYNC every live agent answers. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "agent_impl.h"

#define DEAD_AFTER_SENDS 6         /* unanswered retransmissions after which an agent is dead */

/* ---- sockets ---- */

int udp_socket(uint16_t port, ts_error *err)
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

void send_to(int fd, const uint8_t *buf, size_t n, const struct sockaddr_in *to)
{
    /* UDP: a full socket buffer or an unreachable peer loses this datagram, and the protocol
     * retransmits whatever matters, so errors are not fatal here. */
    if (n)
        (void)sendto(fd, buf, n, 0, (const struct sockaddr *)to, sizeof *to);
}

/* Wait until a datagram arrives or until `until` (µs, monotonic); returns its size, 0 at the
 * time limit. */
ssize_t recv_until(int fd, double until, uint8_t *buf, size_t cap, struct sockaddr_in *from)
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

uint16_t bound_port(int fd)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    return getsockname(fd, (struct sockaddr *)&sa, &sl) == 0 ? ntohs(sa.sin_port) : 0;
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

const ts_transport_ops udp_ops = {
    .run_round = tp_run_round,
    .now_us = tp_now,
    .control_step = tp_control_step,
    .cpu_s = NULL,
};
