/* toposcope agents — the job spool through lib/site/spool.c (toposcope/spool.h), status.yaml's
 * wire counters, and the fallback trees (hostlist order) for the nodes nobody measured. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent_impl.h"
#include "toposcope/measure.h"
#include "toposcope/topoconf.h"
#include "toposcope/spool.h"

/* ---- spool ---- */

/* The job's directory (lib/site/spool.c owns its rules), or step mode's --out directory. */
int spool_open(const agent_config *c, ts_error *err)
{
    if (c->out_dir)
        return ts_spool_open_dir(c->out_dir, err);
    char job[16];
    snprintf(job, sizeof job, "%u", c->job);
    return ts_spool_open(c->spool_parent, job, c->job_uid, c->job_gid, err);
}

int spool_write(const agent_config *c, int dirfd, const char *name, const char *text,
                ts_error *err)
{
    return ts_spool_write(dirfd, name, text, strlen(text), c->out_dir ? (uid_t)-1 : c->job_uid,
                          c->job_gid, err);
}

/* ---- status.yaml ---- */

void yaml_counters(FILE *f, const char *key, const wire_counters *w)
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
int tree_with_extra(const ts_fabric *base, char *const *extra, int nextra, const char *sw,
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

char *fabric_text(const ts_fabric *f, int yaml)
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
