/* toposcope agents — the leader's coordinator on the first node: the rendezvous (credentials
 * for HELLOs, admission of JOINs), the measurement over the UDP transport, the result files
 * and status.yaml, and their distribution to every admitted agent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include "agent_impl.h"
#include "toposcope/emit.h"
#include "toposcope/measure.h"
#include "toposcope/spool.h"
#include "toposcope/textout.h"

void leader_send(leader *L, int type, const void *payload, size_t len,
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

/* A credential holding the session key for this job, step and node (malloc'd), or NULL and why. */
char *leader_cred(leader *L, int node, char *why, size_t whylen)
{
    const agent_config *c = L->c;
    uint8_t pl[CRED_PAYLOAD];
    put_be32(pl, c->job);
    put_be32(pl + 4, c->step);
    put_be32(pl + 8, (uint32_t)node);
    memcpy(pl + 12, L->key, WIRE_KEY_BYTES);
    char *cred = c->keyx.encode(c->keyx.ctx, pl, sizeof pl, why, whylen);
    sodium_memzero(pl, sizeof pl);
    return cred;
}

/* The credentials, one per node, made CRED_THREADS at a time from the leader's start: one after
 * another, a large job's would eat its rendezvous. Each thread takes the nodes i with
 * i mod CRED_THREADS its own and publishes each credential with a release store of its state;
 * the HELLO handler answers only once the node's credential is ready (the worker asks again
 * every HELLO_EVERY_MS). */
typedef struct cred_maker {
    leader *L;
    int first;
} cred_maker;

static void *make_creds(void *arg)
{
    cred_maker *m = arg;
    leader *L = m->L;
    for (int i = m->first; i < L->c->nnodes; i += CRED_THREADS) {
        char why[160];
        L->cred[i] = leader_cred(L, i, why, sizeof why);
        if (!L->cred[i])
            agent_err(L->c, "%s", why);
        __atomic_store_n(&L->cred_state[i], L->cred[i] ? CRED_READY : CRED_FAILED,
                         __ATOMIC_RELEASE);
    }
    free(m);
    return NULL;
}

void leader_creds_start(leader *L)
{
    for (int k = 0; k < CRED_THREADS && k < L->c->nnodes; k++) {
        cred_maker *m = malloc(sizeof *m);
        if (!m)
            break;
        *m = (cred_maker){L, k};
        if (pthread_create(&L->cred_threads[L->ncred_threads], NULL, make_creds, m) != 0) {
            free(m);
            break;
        }
        L->ncred_threads++;
    }
    /* what no thread took (none could start) is made here */
    for (int k = L->ncred_threads; k < CRED_THREADS && k < L->c->nnodes; k++) {
        cred_maker *m = malloc(sizeof *m);
        if (m) {
            *m = (cred_maker){L, k};
            make_creds(m);
        }
    }
}

void leader_creds_wait(leader *L)
{
    for (int k = 0; k < L->ncred_threads; k++)
        pthread_join(L->cred_threads[k], NULL);
    L->ncred_threads = 0;
}

int leader_cred_ready(leader *L, int node)
{
    return __atomic_load_n(&L->cred_state[node], __ATOMIC_ACQUIRE) == CRED_READY;
}

/* Handle a datagram any phase may see: HELLO (answered with the node's credential while
 * admitting), JOIN. Returns 1 when handled. */
int leader_common(leader *L, const wire_hdr *h, const struct sockaddr_in *from, int admitting)
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
        if (!same_ip(from, &c->addrs[i])) {
            L->cnt.drop[WIRE_DROP_ADDRESS]++;
            return 1;
        }
        if (!admitting || c->rdv.exchange || L->joined[i]) {
            L->cnt.drop[WIRE_DROP_UNEXPECTED]++;
            return 1;
        }
        if (!leader_cred_ready(L, i))   /* not made yet (or MUNGE refused: said once) */
            return 1;
        uint8_t buf[WIRE_MAX_DATAGRAM];
        size_t n = wire_build(buf, NULL, WIRE_KEY, c->job, WIRE_LEADER, ++L->seq, L->cred[i],
                              strlen(L->cred[i]));
        send_to(L->fd, buf, n, from);
        return 1;
    }
    if (h->type == WIRE_JOIN) {
        /* The MAC says a key holder sent it; only the node's own address makes it the node's,
         * or a key holder elsewhere could stand between the leader and that node. */
        if (!same_ip(from, &c->addrs[i])) {
            L->cnt.drop[WIRE_DROP_ADDRESS]++;
            return 1;
        }
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

ssize_t leader_recv(leader *L, double until, uint8_t *buf, size_t cap, wire_hdr *h,
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

void leader_rendezvous(leader *L, double until)
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

/* ---- results ---- */

static int leader_status(leader *L, const ts_measure *m, int measured, const char *status,
                         const char *reason, const ts_probe_engine *e, FILE *f)
{
    const agent_config *c = L->c;
    char job[16];
    snprintf(job, sizeof job, "%u", c->job);
    char **unreachable = malloc(sizeof *unreachable * (size_t)c->nnodes);
    if (!unreachable)
        return -1;
    int nun = 0;
    for (int i = 0; i < c->nnodes; i++)
        if (!m || ts_fabric_find(&m->tree, c->names[i]) == TS_NONE)
            unreachable[nun++] = c->names[i];
    ts_status_head head = {.job = job, .mode = c->mode, .status = status, .reason = reason,
                           .leader = c->names[0], .nodes = c->nnodes, .measured_nodes = measured,
                           .unreachable = unreachable, .nunreachable = nun};
    ts_status_emit_head(f, &head);
    free(unreachable);
    fprintf(f, "budget_ms: %g\n", c->budget_ms);
    fprintf(f, "method: %s\n", ts_method_name(c->method));
    if (c->level_step_ns > 0)   /* the site's least level step (toposcope.yaml level_step_ns) */
        fprintf(f, "level_step_ns: %.0f\n", c->level_step_ns);
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
    return 0;
}

static int render_status(leader *L, const ts_measure *m, int measured, const char *status,
                         const char *reason, const ts_probe_engine *e, char **out)
{
    size_t len;
    FILE *f = open_memstream(out, &len);
    if (!f)
        return -1;
    int bad = leader_status(L, m, measured, status, reason, e, f);
    if (bad | ferror(f) | fclose(f)) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* Measure the joined nodes and render the four files. */
int leader_measure(leader *L, leader_result *R, ts_error *err)
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
        e.least_level_step_us = c->level_step_ns / 1e3;
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
        char doubt[TS_ERROR_TEXT_MAX];
        if (strcmp(ts_measure_verdict(&m, doubt, sizeof doubt), "measured") != 0 || e.partial) {
            status = "partial";
            snprintf(p, cap, "%s%s", p == reason ? "" : "; ",
                     doubt[0] ? doubt : "the budget ran out before the plan was complete");
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
void leader_distribute(leader *L, const leader_result *R, double until)
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
