/* toposcope agents — the entry: the configuration's defaults, the leader's port candidates,
 * the agent's messages and clock, and agent_run, which runs this node's worker and, on the
 * first node, the leader beside it (rendezvous, measurement, distribution, its own spool
 * files). The roles themselves: worker.c, leader.c, transport.c, spool.c. See agent.h for the
 * time line. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>
#include "agent_impl.h"

double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

void agent_config_default(agent_config *c)
{
    memset(c, 0, sizeof *c);
    c->port_base = 900;           /* privileged: no user can squat or answer from them */
    c->port_span = 100;
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

void vlog(const agent_config *c, const char *fmt, ...)
{
    if (!c->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    say(c, fmt, ap);
    va_end(ap);
}

void agent_err(const agent_config *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(c, fmt, ap);
    va_end(ap);
}

/* =============================== the agent ================================================== */

static void *worker_thread(void *arg)
{
    worker *w = arg;
    intptr_t rc = worker_run(w);
    return (void *)rc;
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
    leader_creds_wait(L);
    if (L->cred)
        for (int i = 0; i < L->c->nnodes; i++)
            free(L->cred[i]);
    free(L->cred);
    free(L->cred_state);
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
    x.worker_port = bound_port(w->fd);
    int rc = 0;
    if (L) {
        x.leader_port = L->port;
        leader_creds_wait(L);
        for (int i = 0; i < c->nnodes && rc == 0; i++)
            if (!leader_cred_ready(L, i)) {
                snprintf(why, sizeof why, "no credential for node %d (MUNGE: see above)", i);
                rc = -1;
            }
        x.creds = L->cred;
    }
    if (rc == 0)
        rc = c->rdv.exchange(c->rdv.ctx, &x, why, sizeof why);
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
    L.cred_state = calloc((size_t)c->nnodes, sizeof(int));
    if (!L.win || !L.addr || !L.joined || !L.dead || !L.cred || !L.cred_state) {
        fprintf(stderr, "toposcope-prolog: out of memory\n");
        leader_free(&L);
        return 1;
    }
    randombytes_buf(L.key, sizeof L.key);
    wire_keys_derive(&L.keys, L.key);
    int lead = leader_open(&L, &err) == TS_OK;
    if (lead)
        leader_creds_start(&L);
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

double agent_clock_us(void)
{
    return now_us();
}

int agent_run(const agent_config *conf)
{
    double t0 = conf->started_us > 0 ? conf->started_us : now_us();
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
