/* toposcope testbed — the latency fabric emulator.
 *
 * One process owns one TAP device per node (plus one "ctl" port for the root namespace, attached
 * at the root switch with a zero-delay link) and forwards Ethernet frames between them like a
 * learning switch, holding every frame back by the one-way delay of its path through the tree of
 * the same topology.conf + params YAML the simulator reads (lib/ parses and realizes both, so
 * the emulator and the simulator agree on what a fabric file means). Loss and dead nodes come
 * from the same model; faults (--inject syntax) can be added and cleared while running through a
 * control socket, so a test can degrade a link between two jobs.
 *
 * Rates: where the params give links a rate (bandwidth_mbps), each direction of such a link is a
 * FIFO that serialises frames at that rate, store-and-forward, with a queue of --queue-kb that
 * marks (ECN) or drops early at random over its upper two thirds and drops when full. A frame's whole journey is booked when it enters: at each link of its path it
 * starts when both it and the link are free, so flows that share an uplink share its rate, as
 * on an oversubscribed fat tree. (Booking on entry orders a link's queue by arrival at the
 * fabric, not at that link; for flows of one direction through the same uplink that is the
 * same order.)
 *
 * Timing: frames wait in a binary heap ordered by due time. The loop sleeps in epoll with a
 * timerfd armed a little before the earliest due time (timer slack set to 1 ns), then polls
 * without sleeping for the last --spin-us, because a wake-up from sleep on a busy 2-core machine
 * is late by tens of microseconds while the delays it must represent are a few hundred. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/model.h"
#include "toposcope/rng.h"
#include "toposcope/topoconf.h"

#define MAX_FAULTS 256
#define MAX_PATH_LINKS 256
#define FRAME_MAX 65536
#define MAC_SLOTS 8192             /* power of two */
#define CTL_CLIENTS 8
#define CTL_LINE_MAX 1024
#define READ_BURST 64              /* frames read from one port before looking at the clock again */
#define TAG_TIMER 0xffffffffu
#define TAG_LISTEN 0xfffffffeu
#define TAG_CLIENT 0x80000000u
#define RED_FROM 0.33             /* queue fill where random early drops begin ... */
#define RED_MAX_P 0.1              /* ... rising to this probability when it is full */
#define WIRE_OVERHEAD_BYTES 24     /* preamble 8, inter-frame gap 12, FCS 4: TAP frames have none */

typedef struct port {
    int fd;
    int vertex;                    /* the node's vertex, or the root for the ctl port */
    char ifname[IFNAMSIZ];
    uint64_t rx, tx, drop_loss, drop_dead, drop_full, drop_queue, drop_early, ecn_marked;
} port;

typedef struct frame {
    uint64_t due_ns;
    uint64_t seq;                  /* ties keep arrival order */
    int out;
    int len;
    unsigned char data[];
} frame;

typedef struct mac_entry {
    unsigned char mac[6];
    int port;                      /* -1 = empty */
} mac_entry;

typedef struct ctl_client {
    int fd;
    int len;
    char buf[CTL_LINE_MAX];
} ctl_client;

typedef struct emu {
    ts_fabric f;
    ts_model_params p;
    ts_model m;
    int have_model;
    uint64_t seed;
    ts_fault faults[MAX_FAULTS];
    int nfaults, ninitial;         /* the first ninitial came from the command line */
    double jitter_us;              /* mean of an exponential per-frame extra delay */

    int nports;
    port *ports;
    double *pair_us;               /* nports x nports one-way delay */
    double *pair_loss;
    unsigned char *pair_dead;
    uint64_t *pair_last_due;       /* keeps each direction FIFO when jitter is on */

    /* rates: per vertex, when its uplink is next free going up and coming down */
    int shaped;                    /* some link has a rate */
    uint64_t *free_up_ns, *free_down_ns;
    uint64_t queue_bytes;          /* a link direction's tail-drop queue */

    mac_entry mac[MAC_SLOTS];

    frame **heap;
    int nheap, capheap;
    uint64_t seq;
    ts_rng rng;

    int epfd, tfd, lfd;
    ctl_client clients[CTL_CLIENTS];
    uint64_t spin_ns;
    uint64_t armed_ns;             /* when the timerfd is set to fire, 0 = disarmed */

    /* accuracy: how late frames left compared with their due time */
    uint64_t sent, late_sum_ns, late_max_ns, late_over_10us, late_over_50us;
    struct timespec stats_since;
    struct rusage ru_since;
} emu;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the model: fabric + params + faults -> per-port-pair delay, loss, dead ---- */

static int node_port_vertex(const emu *e, int p)
{
    return e->ports[p].vertex;
}

static double path_us(const emu *e, const ts_model *m, int va, int vb, double *loss, int *dead)
{
    int links[MAX_PATH_LINKS];
    double us = 0, keep = 1;
    *dead = 0;
    if (va == vb) {
        *loss = 0;
        return 0;
    }
    int n = ts_fabric_path_links(&e->f, va, vb, links, MAX_PATH_LINKS);
    if (n > MAX_PATH_LINKS)
        n = MAX_PATH_LINKS;
    for (int i = 0; i < n; i++) {
        int x = links[i];
        if (!isnan(m->link_us[x]))
            us += m->link_us[x];
        if (m->link_loss && !isnan(m->link_loss[x]))
            keep *= 1 - m->link_loss[x];
        if (m->dead && m->dead[x])
            *dead = 1;
    }
    if (m->dead && (m->dead[va] || m->dead[vb]))
        *dead = 1;
    *loss = 1 - keep;
    return us;
}

/* Realize the model with the current faults and recompute the pair tables. On error the old
 * model stays in force. */
static int apply_model(emu *e, ts_error *err)
{
    ts_model nm;
    memset(&nm, 0, sizeof nm);
    int rc = ts_model_realize(&nm, &e->f, &e->p, e->seed, e->faults, e->nfaults, err);
    if (rc != TS_OK)
        return rc;
    if (e->have_model)
        ts_model_free(&e->m);
    e->m = nm;
    e->have_model = 1;
    e->shaped = 0;
    for (int v = 0; v < e->f.nvert; v++)
        e->shaped |= e->m.link_mbps[v] > 0;
    for (int a = 0; a < e->nports; a++)
        for (int b = 0; b < e->nports; b++) {
            size_t k = (size_t)a * e->nports + b;
            int dead;
            double loss;
            e->pair_us[k] = path_us(e, &e->m, node_port_vertex(e, a), node_port_vertex(e, b),
                                    &loss, &dead);
            e->pair_loss[k] = loss;
            e->pair_dead[k] = (unsigned char)dead;
        }
    return TS_OK;
}

/* A slow host is the simulator's model of a node's own stack; on the testbed the node's real
 * stack plays that part, so accepting the fault would silently do nothing. */
static int emulated_fault(const ts_fault *ft, ts_error *err)
{
    if (ft->kind == TS_FAULT_SLOWHOST)
        return ts_fail(err, TS_EINPUT, "slowhost:%s is a simulator fault; the emulator delays links "
                       "(use degrade:%s:+USus for the node's access link)", ft->target, ft->target);
    return TS_OK;
}

/* ---- TAP ports ---- */

static int tap_open(const char *name, ts_error *err)
{
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return ts_fail(err, TS_ESYS, "/dev/net/tun: %s", strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        int saved = errno;
        close(fd);
        return ts_fail(err, TS_ESYS, "TUNSETIFF %s: %s", name, strerror(saved));
    }
    return fd;
}

/* ---- the frame heap ---- */

static int frame_before(const frame *a, const frame *b)
{
    return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static int heap_push(emu *e, frame *fr)
{
    if (e->nheap == e->capheap) {
        int cap = e->capheap ? e->capheap * 2 : 1024;
        frame **h = realloc(e->heap, sizeof *h * (size_t)cap);
        if (!h)
            return -1;
        e->heap = h;
        e->capheap = cap;
    }
    int i = e->nheap++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!frame_before(fr, e->heap[parent]))
            break;
        e->heap[i] = e->heap[parent];
        i = parent;
    }
    e->heap[i] = fr;
    return 0;
}

static frame *heap_pop(emu *e)
{
    frame *top = e->heap[0], *last = e->heap[--e->nheap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= e->nheap)
            break;
        if (c + 1 < e->nheap && frame_before(e->heap[c + 1], e->heap[c]))
            c++;
        if (!frame_before(e->heap[c], last))
            break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (e->nheap > 0)
        e->heap[i] = last;
    return top;
}

/* ---- switching ---- */

static size_t mac_hash(const unsigned char *mac)
{
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < 6; i++)
        h = (h ^ mac[i]) * 1099511628211ULL;
    return (size_t)h & (MAC_SLOTS - 1);
}

static void mac_learn(emu *e, const unsigned char *mac, int p)
{
    size_t h = mac_hash(mac);
    for (int probe = 0; probe < 16; probe++) {
        mac_entry *x = &e->mac[(h + probe) & (MAC_SLOTS - 1)];
        if (x->port < 0 || memcmp(x->mac, mac, 6) == 0) {
            memcpy(x->mac, mac, 6);
            x->port = p;
            return;
        }
    }
    /* a crowded neighbourhood: overwrite, the owner re-learns on its next frame */
    memcpy(e->mac[h].mac, mac, 6);
    e->mac[h].port = p;
}

static int mac_lookup(const emu *e, const unsigned char *mac)
{
    size_t h = mac_hash(mac);
    for (int probe = 0; probe < 16; probe++) {
        const mac_entry *x = &e->mac[(h + probe) & (MAC_SLOTS - 1)];
        if (x->port < 0)
            return -1;
        if (memcmp(x->mac, mac, 6) == 0)
            return x->port;
    }
    return -1;
}

/* One link direction crossed at time *t by a frame of `bytes` on the wire: it waits behind the
 * frames booked before it, is serialised at the link's rate, then flies for the link's delay.
 * Returns 0, -1 when the queue in front of it is full (the frame is dropped there), -2 when it
 * dropped the frame early. In the
 * queue's upper two thirds a frame is dropped or, if it can carry congestion marks (ecn_capable),
 * marked (*mark), with a probability rising with the fill: random early detection, as switches
 * with WRED and ECN do. Plain tail drop locks out the flows whose windows are small (they lose
 * the packets fast retransmit would need, wait for timeouts, and one flow keeps the link); early
 * drops share the link but still cost TCP a retransmission timeout (200 ms at least) now and
 * then, which decides alone how fast a 2 MB message crosses; a mark slows the sender the same
 * way without losing anything. */
static int cross_link(emu *e, int x, uint64_t *free_ns, int bytes, bool ecn_capable, bool *mark,
                      uint64_t *t)
{
    double mbps = e->m.link_mbps[x];
    if (mbps > 0) {
        uint64_t start = *t > *free_ns ? *t : *free_ns;
        double queued = (double)(start - *t) * mbps / 8000.0 / (double)e->queue_bytes;
        if (queued >= 1)
            return -1;
        if (queued > RED_FROM &&
            ts_rng_uniform(&e->rng) < RED_MAX_P * (queued - RED_FROM) / (1 - RED_FROM)) {
            if (!ecn_capable)
                return -2;
            *mark = true;
        }
        *free_ns = start + (uint64_t)llround((double)bytes * 8000.0 / mbps);
        *t = *free_ns;
    }
    if (!isnan(e->m.link_us[x]))
        *t += (uint64_t)llround(e->m.link_us[x] * 1000.0);
    return 0;
}

/* When a frame entering at t_in from vertex va reaches vb through the rate-limited links: up
 * from va to the common switch, then down to vb. Returns 0, or cross_link's code of the queue
 * that dropped it;
 * *mark tells whether a queue marked it congested instead. */
static int shaped_arrival(emu *e, int va, int vb, int len, bool ecn_capable, uint64_t t_in,
                          uint64_t *due, bool *mark)
{
    int down[MAX_PATH_LINKS], ndown = 0, bytes = len + WIRE_OVERHEAD_BYTES;
    int top = ts_fabric_lca(&e->f, va, vb);
    uint64_t t = t_in;
    int rc;
    for (int x = va; x != top; x = e->f.v[x].parent)
        if ((rc = cross_link(e, x, &e->free_up_ns[x], bytes, ecn_capable, mark, &t)) < 0)
            return rc;
    for (int x = vb; x != top && ndown < MAX_PATH_LINKS; x = e->f.v[x].parent)
        down[ndown++] = x;
    while (ndown > 0) {
        int x = down[--ndown];
        if ((rc = cross_link(e, x, &e->free_down_ns[x], bytes, ecn_capable, mark, &t)) < 0)
            return rc;
    }
    *due = t;
    return 0;
}

/* The ECN field of an IPv4 or IPv6 frame (RFC 3168): where it is, and whether the sender said
 * it understands marks (ECT(0) or ECT(1)). Returns the offset of the byte holding it, or -1. */
#define ECN_CE 3
static int ecn_offset(const unsigned char *data, int len, bool *ect)
{
    *ect = false;
    if (len < 14 + 20)
        return -1;
    unsigned type = (unsigned)data[12] << 8 | data[13];
    if (type == 0x0800 && (data[14] >> 4) == 4) {
        unsigned ecn = data[15] & 3;
        *ect = ecn == 1 || ecn == 2;
        return 15;
    }
    if (type == 0x86dd && len >= 14 + 40 && (data[14] >> 4) == 6) {
        unsigned ecn = (data[15] >> 4) & 3;
        *ect = ecn == 1 || ecn == 2;
        return 15;
    }
    return -1;
}

/* Set Congestion Experienced; IPv4's header checksum follows by RFC 1624's update. */
static void ecn_mark(unsigned char *data, int off)
{
    if ((data[14] >> 4) == 6) {
        data[off] |= ECN_CE << 4;
        return;
    }
    unsigned old_word = (unsigned)data[14] << 8 | data[15];
    data[off] |= ECN_CE;
    unsigned new_word = (unsigned)data[14] << 8 | data[15];
    unsigned sum = (unsigned)(~((unsigned)data[24] << 8 | data[25]) & 0xffff) +
                   (~old_word & 0xffff) + new_word;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = ~sum & 0xffff;
    data[24] = (unsigned char)(sum >> 8);
    data[25] = (unsigned char)sum;
}

static void enqueue(emu *e, int in, int out, const unsigned char *data, int len, uint64_t t_in)
{
    size_t k = (size_t)in * e->nports + out;
    port *po = &e->ports[out];
    if (e->pair_dead[k]) {
        po->drop_dead++;
        return;
    }
    if (e->pair_loss[k] > 0 && ts_rng_uniform(&e->rng) < e->pair_loss[k]) {
        po->drop_loss++;
        return;
    }
    uint64_t due = t_in + (uint64_t)llround(e->pair_us[k] * 1000.0);
    /* the ECN field matters only where a rate-limited queue may mark the frame */
    bool ect = false, mark = false;
    int ecn_at = e->shaped ? ecn_offset(data, len, &ect) : -1;
    int rc = e->shaped ? shaped_arrival(e, node_port_vertex(e, in), node_port_vertex(e, out),
                                        len, ect, t_in, &due, &mark)
                       : 0;
    if (rc < 0) {
        po->drop_queue++;
        po->drop_early += rc == -2;
        return;
    }
    if (e->jitter_us > 0)
        due += (uint64_t)llround(ts_rng_exponential(&e->rng, e->jitter_us) * 1000.0);
    /* Jitter must not reorder one direction of a pair: TCP would read reordering as loss. */
    if (due < e->pair_last_due[k])
        due = e->pair_last_due[k];
    e->pair_last_due[k] = due;
    frame *fr = malloc(sizeof *fr + (size_t)len);
    if (!fr) {
        po->drop_full++;
        return;
    }
    fr->due_ns = due;
    fr->seq = e->seq++;
    fr->out = out;
    fr->len = len;
    memcpy(fr->data, data, (size_t)len);
    if (mark) {
        ecn_mark(fr->data, ecn_at);
        po->ecn_marked++;
    }
    if (heap_push(e, fr) < 0) {
        free(fr);
        po->drop_full++;
    }
}

static void switch_frame(emu *e, int in, const unsigned char *data, int len, uint64_t t_in)
{
    if (len < 14)
        return;
    const unsigned char *dst = data, *src = data + 6;
    if (!(src[0] & 1))
        mac_learn(e, src, in);
    int out = (dst[0] & 1) ? -1 : mac_lookup(e, dst);
    if (out == in)
        return;
    if (out >= 0) {
        enqueue(e, in, out, data, len, t_in);
        return;
    }
    for (int p = 0; p < e->nports; p++)   /* broadcast, multicast or unknown: flood */
        if (p != in)
            enqueue(e, in, p, data, len, t_in);
}

static void read_port(emu *e, int p, unsigned char *buf)
{
    for (int i = 0; i < READ_BURST; i++) {
        ssize_t n = read(e->ports[p].fd, buf, FRAME_MAX);
        if (n <= 0)
            return;
        e->ports[p].rx++;
        switch_frame(e, p, buf, (int)n, now_ns());
    }
}

static void send_due(emu *e)
{
    while (e->nheap > 0) {
        uint64_t t = now_ns();
        if (e->heap[0]->due_ns > t)
            return;
        frame *fr = heap_pop(e);
        port *po = &e->ports[fr->out];
        if (write(po->fd, fr->data, (size_t)fr->len) == fr->len)
            po->tx++;
        else
            po->drop_full++;
        uint64_t late = t - fr->due_ns;
        e->sent++;
        e->late_sum_ns += late;
        if (late > e->late_max_ns)
            e->late_max_ns = late;
        if (late > 10000)
            e->late_over_10us++;
        if (late > 50000)
            e->late_over_50us++;
        free(fr);
    }
}

/* ---- control socket: one text command per connection, one reply ---- */

static void reset_stats(emu *e)
{
    e->sent = e->late_sum_ns = e->late_max_ns = e->late_over_10us = e->late_over_50us = 0;
    for (int p = 0; p < e->nports; p++) {
        port *po = &e->ports[p];
        po->rx = po->tx = po->drop_loss = po->drop_dead = po->drop_full = po->drop_queue =
            po->drop_early = po->ecn_marked = 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &e->stats_since);
    getrusage(RUSAGE_SELF, &e->ru_since);
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static const char *port_name(const emu *e, int p)
{
    int v = e->ports[p].vertex;
    return e->f.v[v].kind == TS_NODE ? e->f.v[v].name : "ctl";
}

static int port_by_name(const emu *e, const char *name)
{
    for (int p = 0; p < e->nports; p++)
        if (strcmp(name, port_name(e, p)) == 0)
            return p;
    return -1;
}

static void ctl_execute(emu *e, char *line, FILE *out)
{
    char *cmd = strtok(line, " \t\r\n");
    char *arg = strtok(NULL, " \t\r\n");
    char *arg2 = strtok(NULL, " \t\r\n");
    ts_error err;
    ts_error_clear(&err);
    if (!cmd) {
        fprintf(out, "error: empty command\n");
    } else if (strcmp(cmd, "inject") == 0) {
        if (!arg) {
            fprintf(out, "error: inject needs a fault, e.g. degrade:node3:+100%%\n");
            return;
        }
        if (e->nfaults >= MAX_FAULTS) {
            fprintf(out, "error: at most %d faults\n", MAX_FAULTS);
            return;
        }
        if (ts_fault_parse(arg, &e->faults[e->nfaults], &err) != TS_OK ||
            emulated_fault(&e->faults[e->nfaults], &err) != TS_OK) {
            fprintf(out, "error: %s\n", err.text);
            return;
        }
        e->nfaults++;
        if (apply_model(e, &err) != TS_OK) {
            e->nfaults--;
            fprintf(out, "error: %s\n", err.text);
            return;
        }
        fprintf(out, "ok\n");
    } else if (strcmp(cmd, "clear") == 0) {
        int saved = e->nfaults;
        e->nfaults = e->ninitial;
        if (apply_model(e, &err) != TS_OK) {
            e->nfaults = saved;
            fprintf(out, "error: %s\n", err.text);
            return;
        }
        fprintf(out, "ok\n");
    } else if (strcmp(cmd, "faults") == 0) {
        fprintf(out, "ok\n");
        for (int i = 0; i < e->nfaults; i++)
            fprintf(out, "%s %d %s %g\n", i < e->ninitial ? "startup" : "runtime",
                    (int)e->faults[i].kind, e->faults[i].target, e->faults[i].value);
    } else if (strcmp(cmd, "jitter") == 0) {
        double v = arg ? strtod(arg, NULL) : -1;
        if (!(v >= 0 && v < 1e6)) {
            fprintf(out, "error: jitter needs a mean in microseconds\n");
            return;
        }
        e->jitter_us = v;
        fprintf(out, "ok\n");
    } else if (strcmp(cmd, "links") == 0) {
        fprintf(out, "ok\n");
        for (int v = 0; v < e->f.nvert; v++)
            if (v != e->f.root)
                fprintf(out, "%s %.3f %.6f %d %g\n", e->f.v[v].name, e->m.link_us[v],
                        e->m.link_loss ? e->m.link_loss[v] : 0.0, e->m.dead ? e->m.dead[v] : 0,
                        e->m.link_mbps[v]);
    } else if (strcmp(cmd, "delay") == 0) {
        int a = arg ? port_by_name(e, arg) : -1, b = arg2 ? port_by_name(e, arg2) : -1;
        if (a < 0 || b < 0) {
            fprintf(out, "error: delay needs two port names (nodes or ctl)\n");
            return;
        }
        size_t k = (size_t)a * e->nports + b;
        fprintf(out, "ok\n%.3f %.6f %d\n", e->pair_us[k], e->pair_loss[k], e->pair_dead[k]);
    } else if (strcmp(cmd, "stats") == 0) {
        struct timespec t;
        struct rusage ru;
        clock_gettime(CLOCK_MONOTONIC, &t);
        getrusage(RUSAGE_SELF, &ru);
        double wall = (double)(t.tv_sec - e->stats_since.tv_sec) +
                      (double)(t.tv_nsec - e->stats_since.tv_nsec) / 1e9;
        double cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime) - tv_s(e->ru_since.ru_utime) -
                     tv_s(e->ru_since.ru_stime);
        fprintf(out, "ok\nwall_s %.3f\ncpu_s %.3f\ncpu_pct %.1f\nframes_sent %" PRIu64 "\n"
                     "late_mean_us %.2f\nlate_max_us %.2f\nlate_over_10us %" PRIu64 "\n"
                     "late_over_50us %" PRIu64 "\nqueued %d\n",
                wall, cpu, wall > 0 ? 100.0 * cpu / wall : 0.0, e->sent,
                e->sent ? (double)e->late_sum_ns / (double)e->sent / 1000.0 : 0.0,
                (double)e->late_max_ns / 1000.0, e->late_over_10us, e->late_over_50us, e->nheap);
        for (int p = 0; p < e->nports; p++) {
            const port *po = &e->ports[p];
            fprintf(out, "port %s %s rx %" PRIu64 " tx %" PRIu64 " drop_loss %" PRIu64
                         " drop_dead %" PRIu64 " drop_full %" PRIu64 " drop_queue %" PRIu64
                         " drop_early %" PRIu64 " ecn_marked %" PRIu64 "\n",
                    port_name(e, p), po->ifname, po->rx, po->tx, po->drop_loss, po->drop_dead,
                    po->drop_full, po->drop_queue, po->drop_early, po->ecn_marked);
        }
    } else if (strcmp(cmd, "reset-stats") == 0) {
        reset_stats(e);
        fprintf(out, "ok\n");
    } else if (strcmp(cmd, "ports") == 0) {
        fprintf(out, "ok\n");
        for (int p = 0; p < e->nports; p++)
            fprintf(out, "%s %s\n", port_name(e, p), e->ports[p].ifname);
    } else {
        fprintf(out, "error: unknown command '%s' (inject SPEC, clear, faults, jitter US, links, "
                     "delay A B, stats, reset-stats, ports)\n", cmd);
    }
}

static void ctl_close(emu *e, int i)
{
    epoll_ctl(e->epfd, EPOLL_CTL_DEL, e->clients[i].fd, NULL);
    close(e->clients[i].fd);
    e->clients[i].fd = -1;
}

static void ctl_accept(emu *e)
{
    int fd = accept4(e->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    for (int i = 0; i < CTL_CLIENTS; i++)
        if (e->clients[i].fd < 0) {
            e->clients[i].fd = fd;
            e->clients[i].len = 0;
            struct epoll_event ev = {.events = EPOLLIN, .data.u32 = TAG_CLIENT | (uint32_t)i};
            if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
                ctl_close(e, i);
            return;
        }
    close(fd);   /* too many at once: the client sees EOF and retries */
}

static void ctl_read(emu *e, int i)
{
    ctl_client *c = &e->clients[i];
    ssize_t n = read(c->fd, c->buf + c->len, (size_t)(CTL_LINE_MAX - 1 - c->len));
    if (n <= 0) {
        ctl_close(e, i);
        return;
    }
    c->len += (int)n;
    c->buf[c->len] = 0;
    if (!strchr(c->buf, '\n') && c->len < CTL_LINE_MAX - 1)
        return;
    char *reply = NULL;
    size_t rlen = 0;
    FILE *out = open_memstream(&reply, &rlen);
    if (out) {
        ctl_execute(e, c->buf, out);
        fclose(out);
        /* replies are a few KiB and the socket buffer is larger: a short blocking write is
         * acceptable, and a peer that stopped reading gets what fits. */
        int fl = fcntl(c->fd, F_GETFL);
        fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
        struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
        setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (write(c->fd, reply, rlen) < 0) {
            /* the client went away; nothing to tell it */
        }
        free(reply);
    }
    ctl_close(e, i);
}

static int ctl_listen(const char *path, ts_error *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return ts_fail(err, TS_EINPUT, "control socket path too long: %s", path);
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ts_fail(err, TS_ESYS, "socket: %s", strerror(errno));
    unlink(path);
    mode_t old = umask(077);   /* only root may change the fabric */
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc < 0 || listen(fd, 8) < 0) {
        int saved = errno;
        close(fd);
        return ts_fail(err, TS_ESYS, "%s: %s", path, strerror(saved));
    }
    return fd;
}

/* ---- the client side of the control socket ---- */

static int ctl_client_main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: toposcope-fabemu ctl SOCKET COMMAND [ARGS...]\n");
        return 2;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(argv[0]) >= sizeof sa.sun_path) {
        fprintf(stderr, "toposcope-fabemu: socket path too long\n");
        return 2;
    }
    strcpy(sa.sun_path, argv[0]);
    char line[CTL_LINE_MAX];
    size_t len = 0;
    for (int i = 1; i < argc; i++) {
        int n = snprintf(line + len, sizeof line - len, "%s%s", i > 1 ? " " : "", argv[i]);
        if (n < 0 || (size_t)n >= sizeof line - len - 1) {
            fprintf(stderr, "toposcope-fabemu: command too long\n");
            return 2;
        }
        len += (size_t)n;
    }
    line[len++] = '\n';
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = 5, .tv_usec = 0};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        fprintf(stderr, "toposcope-fabemu: %s: %s\n", argv[0], strerror(errno));
        return 1;
    }
    if (write(fd, line, len) != (ssize_t)len) {
        fprintf(stderr, "toposcope-fabemu: write: %s\n", strerror(errno));
        return 1;
    }
    char buf[4096];
    ssize_t n;
    int first = 1, status = 1;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        if (first)
            status = (n >= 2 && memcmp(buf, "ok", 2) == 0) ? 0 : 1;
        first = 0;
        fwrite(buf, 1, (size_t)n, status ? stderr : stdout);
    }
    close(fd);
    return status;
}

/* ---- the event loop ---- */

static void arm_timer(emu *e, uint64_t at_ns)
{
    if (at_ns == e->armed_ns)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = (time_t)(at_ns / 1000000000u);
    its.it_value.tv_nsec = (long)(at_ns % 1000000000u);
    timerfd_settime(e->tfd, TFD_TIMER_ABSTIME, &its, NULL);
    e->armed_ns = at_ns;
}

static void run(emu *e)
{
    unsigned char *buf = malloc(FRAME_MAX);
    struct epoll_event evs[64];
    if (!buf)
        return;
    while (!stop_requested) {
        send_due(e);
        int timeout = -1;
        if (e->nheap > 0) {
            uint64_t due = e->heap[0]->due_ns, t = now_ns();
            if (due > t + e->spin_ns)
                arm_timer(e, due - e->spin_ns);
            else
                timeout = 0;   /* close to the due time: poll instead of sleeping */
        }
        int n = epoll_wait(e->epfd, evs, 64, timeout);
        for (int i = 0; i < n; i++) {
            uint32_t tag = evs[i].data.u32;
            if (tag == TAG_TIMER) {
                uint64_t expirations;
                if (read(e->tfd, &expirations, sizeof expirations) < 0) {
                    /* already drained */
                }
                e->armed_ns = 0;
            } else if (tag == TAG_LISTEN) {
                ctl_accept(e);
            } else if (tag & TAG_CLIENT) {
                ctl_read(e, (int)(tag & ~TAG_CLIENT));
            } else {
                read_port(e, (int)tag, buf);
            }
        }
    }
    free(buf);
}

/* ---- set-up ---- */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: toposcope-fabemu --fabric topology.conf [--params params.yaml] [options]\n"
            "       toposcope-fabemu --list-nodes --fabric topology.conf\n"
            "       toposcope-fabemu ctl SOCKET COMMAND [ARGS...]\n"
            "options:\n"
            "  --profile NAME     latency profile before the params file (default ethernet)\n"
            "  --fabric-seed N    seed of the per-link variation, as in toposcope sim (default 0)\n"
            "  --inject SPEC      fault at start-up (degrade:LINK:+30%%, degrade:LINK:+5us,\n"
            "                     loss:LINK:20%%, dead:NODE); repeatable\n"
            "  --jitter-us US     mean of an exponential extra delay per frame (default 0)\n"
            "  --queue-kb KB      queue of each direction of a rate-limited link: ECN marks or early\n"
            "                     drops from a third full, drops when full (default 1024)\n"
            "  --tap-prefix P     TAP names: P0..P(n-1) for the nodes in order, P-ctl (default tsb)\n"
            "  --no-ctl-port      no zero-delay port at the root switch for the root namespace\n"
            "  --ctl SOCKET       control socket (commands: inject, clear, faults, jitter, links,\n"
            "                     delay, stats, reset-stats, ports)\n"
            "  --spin-us US       poll instead of sleeping this long before a due time (default 50)\n"
            "  --rt PRIO          run with SCHED_FIFO priority PRIO (0 = normal scheduling)\n"
            "  --cpu N            run on CPU N only (default: wherever the scheduler puts it)\n"
            "  --pm-qos           hold /dev/cpu_dma_latency at 0 while running (machine-wide)\n"
            "  --keep-awake CPUS  keep CPUS (e.g. 0,1 or 0-3) out of their idle state while running:\n"
            "                     one spinning process of the idle scheduling class on each\n");
}

/* Where the kernel has no cpuidle driver, as in a virtual machine's guest (Firecracker's, say),
 * an idle CPU halts whatever /dev/cpu_dma_latency asks, and every wake-up of a halted virtual
 * CPU is a VM exit of tens of microseconds: measured on such a guest, 8 nodes at 200 us per
 * link, a same-leaf round trip (800 us through the fabric) took 930-970 us at the median and
 * 970-1600 us at the 90th percentile; with both CPUs kept awake 858-884 and 874-907. A process
 * of the SCHED_IDLE class spinning on each CPU keeps it running: any other process that wakes
 * there preempts it at once, and it dies with the emulator (PR_SET_PDEATHSIG). Forked before
 * the emulator opens anything, so it holds no TAP device or socket. */
static int parse_cpu_list(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    while (*s) {
        char *end;
        long lo = strtol(s, &end, 10), hi = lo;
        if (end == s || lo < 0 || lo >= CPU_SETSIZE)
            return -1;
        if (*end == '-') {
            s = end + 1;
            hi = strtol(s, &end, 10);
            if (end == s || hi < lo || hi >= CPU_SETSIZE)
                return -1;
        }
        if (*end != ',' && *end != '\0')
            return -1;
        s = *end ? end + 1 : end;
        for (long cpu = lo; cpu <= hi; cpu++)
            CPU_SET((int)cpu, set);
    }
    return CPU_COUNT(set) > 0 ? 0 : -1;
}

static void keep_awake(const cpu_set_t *cpus)
{
    pid_t parent = getpid();
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, cpus) || fork() != 0)
            continue;   /* a failed fork costs accuracy, not correctness */
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent)
            _exit(0);
        prctl(PR_SET_NAME, "fabemu-awake", 0, 0, 0);
        int devnull = open("/dev/null", O_RDWR);
        for (int fd = 0; fd < 3 && devnull >= 0; fd++)
            dup2(devnull, fd);
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        struct sched_param sp = {.sched_priority = 0};
        if (sched_setaffinity(0, sizeof one, &one) < 0 || sched_setscheduler(0, SCHED_IDLE, &sp) < 0)
            _exit(1);
        for (;;)
            __asm__ __volatile__("" ::: "memory");
    }
}

static int load(emu *e, const char *fabric, const char *params, const char *profile, ts_error *err)
{
    int rc = ts_fabric_load_topology_conf(&e->f, fabric, err);
    if (rc != TS_OK)
        return rc;
    if (e->f.root == TS_NONE && (rc = ts_fabric_finalize(&e->f, err)) != TS_OK)
        return rc;
    if ((rc = ts_model_params_profile(&e->p, profile, err)) != TS_OK)
        return rc;
    if (params && (rc = ts_model_params_load_yaml(&e->p, params, err)) != TS_OK)
        return rc;
    return TS_OK;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "ctl") == 0)
        return ctl_client_main(argc - 2, argv + 2);

    static emu e;
    const char *fabric = NULL, *params = NULL, *profile = "ethernet", *ctl = NULL;
    const char *prefix = "tsb", *awake_cpus = NULL;
    int list_nodes = 0, ctl_port = 1, rt = 0, pm_qos = 0, cpu = -1;
    /* 1 MiB: 16 round trips' worth of a 500 Mbit/s link at the testbed's ~1 ms, as a data-centre
     * switch's few MB per 100 Gbit/s port are to its 10 us round trips. 256 KiB (29 jumbo
     * frames) overflowed whenever two 2 MB messages met: 8 % of hpcc's frames were dropped
     * and every node waited out ~60 retransmission timeouts per run. */
    double spin_us = 50, queue_kb = 1024;
    ts_error err;
    ts_error_clear(&err);
    e.seed = 0;
    enum { O_FABRIC = 256, O_PARAMS, O_PROFILE, O_SEED, O_INJECT, O_JITTER, O_PREFIX, O_NOCTL,
           O_CTL, O_SPIN, O_RT, O_CPU, O_PMQOS, O_LIST, O_QUEUE, O_AWAKE, O_HELP };
    static const struct option opts[] = {
        {"fabric", required_argument, 0, O_FABRIC},   {"params", required_argument, 0, O_PARAMS},
        {"profile", required_argument, 0, O_PROFILE}, {"fabric-seed", required_argument, 0, O_SEED},
        {"inject", required_argument, 0, O_INJECT},   {"jitter-us", required_argument, 0, O_JITTER},
        {"tap-prefix", required_argument, 0, O_PREFIX}, {"no-ctl-port", no_argument, 0, O_NOCTL},
        {"ctl", required_argument, 0, O_CTL},         {"spin-us", required_argument, 0, O_SPIN},
        {"rt", required_argument, 0, O_RT},           {"queue-kb", required_argument, 0, O_QUEUE},
        {"pm-qos", no_argument, 0, O_PMQOS},          {"list-nodes", no_argument, 0, O_LIST},
        {"cpu", required_argument, 0, O_CPU},         {"help", no_argument, 0, O_HELP},
        {"keep-awake", required_argument, 0, O_AWAKE},
        {0, 0, 0, 0}};
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_FABRIC: fabric = optarg; break;
        case O_PARAMS: params = optarg; break;
        case O_PROFILE: profile = optarg; break;
        case O_SEED: e.seed = strtoull(optarg, NULL, 0); break;
        case O_INJECT:
            if (e.nfaults >= MAX_FAULTS || ts_fault_parse(optarg, &e.faults[e.nfaults], &err) != TS_OK ||
                emulated_fault(&e.faults[e.nfaults], &err) != TS_OK) {
                fprintf(stderr, "toposcope-fabemu: --inject %s: %s\n", optarg,
                        err.text[0] ? err.text : "too many faults");
                return 2;
            }
            e.nfaults++;
            break;
        case O_JITTER: e.jitter_us = strtod(optarg, NULL); break;
        case O_PREFIX: prefix = optarg; break;
        case O_NOCTL: ctl_port = 0; break;
        case O_CTL: ctl = optarg; break;
        case O_SPIN: spin_us = strtod(optarg, NULL); break;
        case O_RT: rt = atoi(optarg); break;
        case O_CPU:
            cpu = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || cpu < 0 || cpu >= CPU_SETSIZE) {
                fprintf(stderr, "toposcope-fabemu: --cpu %s: give a CPU number (0 to %d)\n", optarg,
                        CPU_SETSIZE - 1);
                return 2;
            }
            break;
        case O_QUEUE: queue_kb = strtod(optarg, NULL); break;
        case O_PMQOS: pm_qos = 1; break;
        case O_AWAKE: awake_cpus = optarg; break;
        case O_LIST: list_nodes = 1; break;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!fabric || optind != argc || !(spin_us >= 0 && spin_us < 1e6) || !(e.jitter_us >= 0) ||
        !(queue_kb >= 2 && queue_kb <= 1048576) ||
        strlen(prefix) > 8) {
        usage(stderr);
        return 2;
    }
    ts_fabric_init(&e.f);
    if (load(&e, fabric, params, profile, &err) != TS_OK) {
        fprintf(stderr, "toposcope-fabemu: %s\n", err.text);
        return 2;
    }
    if (list_nodes) {
        for (int i = 0; i < e.f.nnodes; i++)
            printf("%s\n", e.f.v[e.f.node_vertex[i]].name);
        return 0;
    }
    cpu_set_t awake;
    if (awake_cpus && parse_cpu_list(awake_cpus, &awake) < 0) {
        fprintf(stderr, "toposcope-fabemu: --keep-awake %s: give CPUs as 0,1 or 0-3\n", awake_cpus);
        return 2;
    }
    if (awake_cpus)
        keep_awake(&awake);
    e.ninitial = e.nfaults;
    e.spin_ns = (uint64_t)(spin_us * 1000);
    e.queue_bytes = (uint64_t)(queue_kb * 1024);
    e.nports = e.f.nnodes + ctl_port;
    size_t np2 = (size_t)e.nports * (size_t)e.nports;
    e.ports = calloc((size_t)e.nports, sizeof *e.ports);
    e.pair_us = calloc(np2, sizeof *e.pair_us);
    e.pair_loss = calloc(np2, sizeof *e.pair_loss);
    e.pair_dead = calloc(np2, 1);
    e.pair_last_due = calloc(np2, sizeof *e.pair_last_due);
    e.free_up_ns = calloc((size_t)e.f.nvert, sizeof *e.free_up_ns);
    e.free_down_ns = calloc((size_t)e.f.nvert, sizeof *e.free_down_ns);
    if (!e.ports || !e.pair_us || !e.pair_loss || !e.pair_dead || !e.pair_last_due ||
        !e.free_up_ns || !e.free_down_ns) {
        fprintf(stderr, "toposcope-fabemu: out of memory\n");
        return 1;
    }
    for (int i = 0; i < MAC_SLOTS; i++)
        e.mac[i].port = -1;
    for (int i = 0; i < CTL_CLIENTS; i++)
        e.clients[i].fd = -1;
    ts_rng_seed_stream(&e.rng, e.seed, 0x7e57bedu);
    if (apply_model(&e, &err) != TS_OK) {
        fprintf(stderr, "toposcope-fabemu: %s\n", err.text);
        return 2;
    }

    e.epfd = epoll_create1(EPOLL_CLOEXEC);
    e.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (e.epfd < 0 || e.tfd < 0) {
        fprintf(stderr, "toposcope-fabemu: epoll/timerfd: %s\n", strerror(errno));
        return 1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = TAG_TIMER};
    epoll_ctl(e.epfd, EPOLL_CTL_ADD, e.tfd, &ev);
    for (int p = 0; p < e.nports; p++) {
        port *po = &e.ports[p];
        if (p < e.f.nnodes) {
            po->vertex = e.f.node_vertex[p];
            snprintf(po->ifname, sizeof po->ifname, "%s%d", prefix, p);
        } else {
            po->vertex = e.f.root;
            snprintf(po->ifname, sizeof po->ifname, "%s-ctl", prefix);
        }
        po->fd = tap_open(po->ifname, &err);
        if (po->fd < 0) {
            fprintf(stderr, "toposcope-fabemu: %s\n", err.text);
            return 1;
        }
        ev.data.u32 = (uint32_t)p;
        epoll_ctl(e.epfd, EPOLL_CTL_ADD, po->fd, &ev);
    }
    /* The pair table was computed before the ports knew their vertices. */
    if (apply_model(&e, &err) != TS_OK) {
        fprintf(stderr, "toposcope-fabemu: %s\n", err.text);
        return 2;
    }
    e.lfd = -1;
    if (ctl) {
        e.lfd = ctl_listen(ctl, &err);
        if (e.lfd < 0) {
            fprintf(stderr, "toposcope-fabemu: %s\n", err.text);
            return 1;
        }
        ev.data.u32 = TAG_LISTEN;
        epoll_ctl(e.epfd, EPOLL_CTL_ADD, e.lfd, &ev);
    }

    /* Sleep precision: the default 50 us timer slack would eat the accuracy budget. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0) {
        /* page faults only cost accuracy, not correctness */
    }
    /* A real switch does not share a CPU with the hosts: pinned, the emulator never takes the
     * CPU from ranks bound to another one, which otherwise happens for whole jobs at a time
     * (make bench-app's rings then run at two speeds, in both modes alike). */
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0)
            fprintf(stderr, "toposcope-fabemu: --cpu %d: %s (continuing)\n", cpu, strerror(errno));
    }
    if (rt > 0) {
        struct sched_param sp = {.sched_priority = rt};
        if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
            fprintf(stderr, "toposcope-fabemu: SCHED_FIFO %d: %s (continuing)\n", rt, strerror(errno));
    }
    /* Waking a halted CPU (a VM exit on virtual machines) costs tens of microseconds at every
     * hop: in the emulator, and in the node processes on both ends. A zero latency request
     * keeps idle CPUs polling; the kernel drops the request when this process exits. */
    int qos_fd = -1;
    if (pm_qos) {
        int32_t zero = 0;
        qos_fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
        if (qos_fd < 0 || write(qos_fd, &zero, sizeof zero) != (ssize_t)sizeof zero)
            fprintf(stderr, "toposcope-fabemu: /dev/cpu_dma_latency: %s (continuing)\n", strerror(errno));
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    reset_stats(&e);

    printf("toposcope-fabemu: %d nodes, %d ports (%s0..%s%d%s), control %s\n", e.f.nnodes,
           e.nports, prefix, prefix, e.f.nnodes - 1, ctl_port ? ", ctl" : "", ctl ? ctl : "none");
    fflush(stdout);
    run(&e);

    if (ctl)
        unlink(ctl);
    if (qos_fd >= 0)
        close(qos_fd);
    while (e.nheap > 0)
        free(heap_pop(&e));
    for (int p = 0; p < e.nports; p++)
        close(e.ports[p].fd);
    free(e.heap);
    free(e.ports);
    free(e.pair_us);
    free(e.pair_loss);
    free(e.pair_dead);
    free(e.pair_last_due);
    free(e.free_up_ns);
    free(e.free_down_ns);
    ts_model_free(&e.m);
    ts_model_params_free(&e.p);
    ts_fabric_free(&e.f);
    return 0;
}
