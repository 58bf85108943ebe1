/* toposcope agents — the job spool: its directory and files, status.yaml's wire counters, and
 * the fallback trees (hostlist order) for the nodes nobody measured. Kept in one file: a
 * library module will take their place. */
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
#include "toposcope/textout.h"

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

int spool_open(const agent_config *c, ts_error *err)
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

int spool_write(const agent_config *c, int dirfd, const char *name, const char *text,
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
