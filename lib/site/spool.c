/* toposcope — the job spool and its status.yaml (see toposcope/spool.h). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "toposcope/spool.h"
#include "toposcope/textout.h"
#include "util/ydoc.h"

/* ---- the directory ---- */

int ts_spool_parent(const char *spool, const char *node, char *out, size_t max, ts_error *err)
{
    size_t o = 0;
    for (const char *p = spool; *p; p++) {
        const char *piece = p;
        size_t n = 1;
        if (p[0] == '%' && p[1] == 'n') {
            piece = node;
            n = strlen(node);
            p++;
        }
        if (o + n >= max)
            return ts_fail(err, TS_EINPUT, "spool '%s' with %%n = '%s' is longer than %zu bytes",
                           spool, node, max - 1);
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = '\0';
    return TS_OK;
}

int ts_spool_job_ok(const char *job)
{
    return job && job[0] >= '0' && job[0] <= '9' && strlen(job) < 32 &&
           strspn(job, "0123456789_.") == strlen(job);
}

/* The job's user may read (a directory: and enter) what fd names, nobody else but its owner:
 * a POSIX ACL with the user's entry and nothing for the group or others. A file system without
 * ACLs gets the group's read bit instead (the job's primary group shares it, as before ACLs).
 * When the writer is the job's user (a root job, step mode) or the user is unknown (uid -1),
 * the group gid shares it as before (0750, 0640); uid and gid -1: the writer's alone. */
static int grant_job_user(int fd, uid_t uid, gid_t gid, int dir)
{
    if (uid == (uid_t)-1 || uid == geteuid()) {
        if (gid == (gid_t)-1)
            return 0;
        return fchown(fd, geteuid(), gid) == 0 && fchmod(fd, dir ? 0750 : 0640) == 0 ? 0 : -1;
    }
    enum { USER_OBJ = 0x01, USER = 0x02, GROUP_OBJ = 0x04, MASK = 0x10, OTHER = 0x20 };
    const uint16_t own = dir ? 7 : 6, user = dir ? 5 : 4;
    const uint32_t none = UINT32_MAX;   /* ACL_UNDEFINED_ID */
    /* the kernel's xattr form (linux/posix_acl_xattr.h): little-endian, entries by tag */
    struct { uint16_t tag, perm; uint32_t id; } e[5] = {
        {htole16(USER_OBJ), htole16(own), htole32(none)},
        {htole16(USER), htole16(user), htole32((uint32_t)uid)},
        {htole16(GROUP_OBJ), 0, htole32(none)},
        {htole16(MASK), htole16(user), htole32(none)},
        {htole16(OTHER), 0, htole32(none)},
    };
    uint8_t acl[4 + sizeof e];
    uint32_t version = htole32(2);
    memcpy(acl, &version, 4);
    memcpy(acl + 4, e, sizeof e);
    if (fchown(fd, geteuid(), gid) != 0)
        return -1;
    if (fsetxattr(fd, "system.posix_acl_access", acl, sizeof acl, 0) == 0)
        return 0;
    if (errno != EOPNOTSUPP && errno != ENOTSUP)
        return -1;
    return fchmod(fd, dir ? 0750 : 0640);
}

/* An opened directory must be the caller's own: someone else's would let them read or swap
 * the job's files. */
static int own_dir(int fd, const char *what, const char *name, ts_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ts_fail(err, TS_ESYS, "cannot stat %s%s: %s", what, name, strerror(e));
    }
    if (st.st_uid != geteuid()) {
        close(fd);
        return ts_fail(err, TS_EINPUT, "%s%s belongs to uid %u, not to uid %u: remove it or "
                       "choose another directory", what, name, (unsigned)st.st_uid,
                       (unsigned)geteuid());
    }
    return fd;
}

/* PATH and the directories above it, as `mkdir -p` would (0755, like /var/spool): with %n in
 * the spool setting, each node's parent is new the first time. */
static int make_parents(const char *path)
{
    char buf[TS_SPOOL_PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int ts_spool_open(const char *parent, const char *job, uid_t uid, gid_t gid, ts_error *err)
{
    if (!ts_spool_job_ok(job))
        return ts_fail(err, TS_EINPUT, "job id '%s': wanted a digit first, then digits, '_' and '.'",
                       job ? job : "");
    /* the parent: created if missing, but (below) never a symlink */
    if (make_parents(parent) != 0)
        return ts_fail(err, TS_ESYS, "cannot create spool directory %s: %s (set spool in "
                       "toposcope.yaml)", parent, strerror(errno));
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return ts_fail(err, TS_ESYS, "cannot open spool directory %s: %s", parent,
                       strerror(errno));
    /* Someone else who may write in the parent could rename our job directory away and put
     * theirs in its place between our checks. */
    struct stat pst;
    if (fstat(pfd, &pst) != 0) {
        int e = errno;
        close(pfd);
        return ts_fail(err, TS_ESYS, "cannot stat %s: %s", parent, strerror(e));
    }
    if (pst.st_uid != geteuid() || (pst.st_mode & 022)) {
        close(pfd);
        return ts_fail(err, TS_EINPUT, "spool directory %s must belong to uid %u and be writable "
                       "by it alone (it is uid %u, mode %o): chown/chmod it, or set spool in "
                       "toposcope.yaml", parent, (unsigned)geteuid(), (unsigned)pst.st_uid,
                       (unsigned)(pst.st_mode & 07777));
    }
    if (mkdirat(pfd, job, 0700) != 0 && errno != EEXIST) {
        int e = errno;
        close(pfd);
        return ts_fail(err, TS_ESYS, "cannot create %s/%s: %s", parent, job, strerror(e));
    }
    int fd = openat(pfd, job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(pfd);
    if (fd < 0)
        return ts_fail(err, TS_ESYS, "cannot open %s/%s: %s", parent, job, strerror(e));
    char where[TS_SPOOL_PATH_MAX];
    snprintf(where, sizeof where, "%s/", parent);
    fd = own_dir(fd, where, job, err);
    if (fd < 0)
        return fd;
    if (fchmod(fd, 0700) != 0 || grant_job_user(fd, uid, gid, 1) != 0) {
        e = errno;
        close(fd);
        return ts_fail(err, TS_ESYS, "cannot give %s/%s to the job's user: %s", parent, job,
                       strerror(e));
    }
    return fd;
}

int ts_spool_open_dir(const char *dir, ts_error *err)
{
    if (mkdir(dir, 0750) != 0 && errno != EEXIST)
        return ts_fail(err, TS_ESYS, "cannot create %s: %s (choose another --out)", dir,
                       strerror(errno));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return ts_fail(err, TS_ESYS, "cannot open %s: %s (--out wants a directory, not a symlink)",
                       dir, strerror(errno));
    return own_dir(fd, "", dir, err);
}

int ts_spool_write(int dirfd, const char *name, const char *text, size_t len, uid_t uid,
                   gid_t gid, ts_error *err)
{
    int rc = ts_write_file_at(dirfd, name, text, len, 0600, err);
    if (rc != TS_OK || (uid == (uid_t)-1 && gid == (gid_t)-1))
        return rc;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || grant_job_user(fd, uid, gid, 0) != 0)
        rc = ts_fail(err, TS_ESYS, "cannot give %s to the job's user: %s", name, strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

int ts_spool_read(int dirfd, const char *name, size_t max, char **text, size_t *len,
                  ts_error *err)
{
    *text = NULL;
    *len = 0;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? TS_OK
                               : ts_fail(err, TS_ESYS, "cannot open %s: %s", name, strerror(errno));
    size_t cap = max < 8192 ? max : 8192, n = 0;
    char *b = malloc(cap + 1);
    int rc = b ? TS_OK : ts_fail(err, TS_ENOMEM, "out of memory");
    while (rc == TS_OK) {
        if (n == cap && cap >= max) {
            /* full: one byte more means the file is over the bound */
            char extra;
            ssize_t more = read(fd, &extra, 1);
            if (more > 0)
                rc = ts_fail(err, TS_ELIMIT, "%s is larger than %zu bytes", name, max);
            else if (more < 0)
                rc = ts_fail(err, TS_ESYS, "cannot read %s: %s", name, strerror(errno));
            break;
        }
        if (n == cap) {
            size_t ncap = cap * 2 < max ? cap * 2 : max;
            char *nb = realloc(b, ncap + 1);
            if (!nb) {
                rc = ts_fail(err, TS_ENOMEM, "out of memory");
                break;
            }
            b = nb;
            cap = ncap;
        }
        ssize_t got = read(fd, b + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            rc = ts_fail(err, TS_ESYS, "cannot read %s: %s", name, strerror(errno));
        else if (got == 0)
            break;
        else
            n += (size_t)got;
    }
    close(fd);
    if (rc != TS_OK) {
        free(b);
        return rc;
    }
    b[n] = '\0';
    *text = b;
    *len = n;
    return TS_OK;
}

int ts_spool_remove(const char *parent, const char *job, ts_error *err)
{
    if (!ts_spool_job_ok(job))
        return ts_fail(err, TS_EINPUT, "job id '%s': wanted a digit first, then digits, '_' and '.'", job ? job : "");
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return errno == ENOENT || errno == ENOTDIR ? TS_OK
                               : ts_fail(err, TS_ESYS, "cannot open %s: %s", parent, strerror(errno));
    /* the job's files first (the agents make no subdirectories there) */
    int fd = openat(pfd, job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlinkat(fd, e->d_name, 0);
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    int rc = TS_OK;
    if (unlinkat(pfd, job, AT_REMOVEDIR) != 0 && errno != ENOENT)
        rc = ts_fail(err, TS_ESYS, "cannot remove %s/%s: %s", parent, job, strerror(errno));
    close(pfd);
    return rc;
}

/* ---- status.yaml: writing ---- */

void ts_status_emit_head(FILE *f, const ts_status_head *h)
{
    fprintf(f, "# toposcope job status\njob: %s\n", h->job);
    if (h->mode)
        fprintf(f, "mode: %s\n", h->mode);
    fprintf(f, "status: %s\nreason: ", h->status);
    ts_emit_yaml_string(f, h->reason);
    fputc('\n', f);
    if (!h->leader)
        return;
    fprintf(f, "leader: ");
    ts_emit_yaml_string(f, h->leader);
    fprintf(f, "\nnodes: %d\nmeasured_nodes: %d\nunreachable: [", h->nodes, h->measured_nodes);
    for (int i = 0; i < h->nunreachable; i++) {
        fputs(i ? ", " : "", f);
        ts_emit_yaml_string(f, h->unreachable[i]);
    }
    fprintf(f, "]\nfallback_order: hostlist\n");
}

void ts_status_emit_placement(FILE *f, const char *outcome, const char *policy,
                              const char *reason, const ts_mpi_plan *mpi)
{
    static const ts_mpi_plan none;
    if (!mpi)
        mpi = &none;
    fprintf(f, "# placement in the prolog\nplacement: %s\nplacement_policy: ", outcome);
    ts_emit_yaml_string(f, policy ? policy : "");
    fprintf(f, "\nplacement_reason: ");
    ts_emit_yaml_string(f, reason);
    /* what the plugin tells the MPI launchers (toposcope/mpienv.h) */
    fprintf(f, "\nplacement_export_mca: %s\nplacement_hydra: %s\n", mpi->open_mpi ? "true" : "false",
            mpi->hydra ? "true" : "false");
    if (mpi->hydra_binding) {
        fprintf(f, "placement_hydra_binding: ");
        ts_emit_yaml_string(f, mpi->hydra_binding);
        fputc('\n', f);
    }
    fprintf(f, "placement_intel_mpi: %s\n", mpi->intel_mpi ? "true" : "false");
    if (mpi->intel_perhost > 0)
        fprintf(f, "placement_intel_perhost: %d\n", mpi->intel_perhost);
    if (mpi->intel_pin) {
        fprintf(f, "placement_intel_pin: ");
        ts_emit_yaml_string(f, mpi->intel_pin);
        fputc('\n', f);
    }
}

/* ---- status.yaml: reading ---- */

/* A scalar into out, cut to fit, control characters as spaces. */
static int take_text(const ts_ydoc *d, int map, const char *key, char *out, size_t max,
                     ts_error *err)
{
    out[0] = '\0';
    int v = ts_ydoc_get(d, map, key);
    if (v < 0)
        return TS_OK;
    if (d->v[v].type != TS_Y_SCALAR)
        return ts_ydoc_fail(d, v, err, "'%s' wants a string, not a %s", key,
                            ts_ydoc_type_name(&d->v[v]));
    size_t n = d->v[v].len < max - 1 ? d->v[v].len : max - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)d->v[v].text[i];
        out[i] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
    }
    out[n] = '\0';
    return TS_OK;
}

static int take_unreachable(const ts_ydoc *d, int map, ts_status *s, ts_error *err)
{
    int v = ts_ydoc_get(d, map, "unreachable");
    if (v < 0 || ts_ydoc_is_null(&d->v[v]))
        return TS_OK;
    if (d->v[v].type != TS_Y_SEQ)
        return ts_ydoc_fail(d, v, err, "'unreachable' wants a list of node names, not a %s",
                            ts_ydoc_type_name(&d->v[v]));
    s->unreachable = calloc((size_t)d->v[v].n + 1, sizeof *s->unreachable);
    if (!s->unreachable)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    for (int i = d->v[v].first; i >= 0; i = d->v[i].next) {
        char name[256];
        int rc = ts_ydoc_name(d, i, "unreachable", name, sizeof name, err);
        if (rc != TS_OK)
            return rc;
        if (!(s->unreachable[s->nunreachable] = strdup(name)))
            return ts_fail(err, TS_ENOMEM, "out of memory");
        s->nunreachable++;
    }
    return TS_OK;
}

/* A launcher's list as the prolog wrote it: prefix, then CPU numbers joined by ',' and (where
 * plus_ok) '+'. It goes into the job's environment, so anything else is refused. */
static int take_cpu_list(const ts_ydoc *d, int map, const char *key, const char *prefix,
                         int plus_ok, char **out, ts_error *err)
{
    int v = ts_ydoc_get(d, map, key);
    if (v < 0)
        return TS_OK;
    const ts_ynode *y = &d->v[v];
    size_t pre = strlen(prefix);
    int good = y->type == TS_Y_SCALAR && y->len > pre && strncmp(y->text, prefix, pre) == 0;
    for (size_t i = pre; good && i < y->len; i++)
        good = (y->text[i] >= '0' && y->text[i] <= '9') || y->text[i] == ',' ||
               (plus_ok && y->text[i] == '+');
    if (!good)
        return ts_ydoc_fail(d, v, err, "'%s' wants %sCPU numbers joined by ','%s", key,
                            pre ? "'user:' then " : "", plus_ok ? " and '+'" : "");
    if (!(*out = strndup(y->text, y->len)))
        return ts_fail(err, TS_ENOMEM, "out of memory");
    return TS_OK;
}

/* The launchers' plan; a key an older prolog did not write leaves that launcher off. */
static int take_mpi_plan(const ts_ydoc *d, int map, ts_mpi_plan *mpi, ts_error *err)
{
    const struct {
        const char *key;
        int *out;
    } flags[] = {
        {"placement_export_mca", &mpi->open_mpi},
        {"placement_hydra", &mpi->hydra},
        {"placement_intel_mpi", &mpi->intel_mpi},
    };
    int rc = TS_OK;
    for (size_t k = 0; rc == TS_OK && k < sizeof flags / sizeof flags[0]; k++) {
        int v = ts_ydoc_get(d, map, flags[k].key);
        if (v >= 0)
            rc = ts_ydoc_bool(d, v, flags[k].key, flags[k].out, err);
    }
    int per = ts_ydoc_get(d, map, "placement_intel_perhost");
    long perhost = 0;
    if (rc == TS_OK && per >= 0 &&
        (rc = ts_ydoc_int(d, per, "placement_intel_perhost", 1, 1L << 30, &perhost, err)) == TS_OK)
        mpi->intel_perhost = (int)perhost;
    if (rc == TS_OK)
        rc = take_cpu_list(d, map, "placement_hydra_binding", "user:", 1, &mpi->hydra_binding, err);
    if (rc == TS_OK)
        rc = take_cpu_list(d, map, "placement_intel_pin", "", 0, &mpi->intel_pin, err);
    return rc;
}

int ts_status_parse(ts_status *s, const char *text, size_t len, const char *src, ts_error *err)
{
    memset(s, 0, sizeof *s);
    /* one name per node at most, and a few dozen keys */
    const ts_ylimits lim = {.max_bytes = TS_STATUS_MAX_BYTES, .max_depth = 8, .max_nodes = 1 << 21};
    ts_ydoc d;
    int rc = ts_ydoc_parse(&d, text, len, src, &lim, err);
    if (rc != TS_OK)
        return rc;
    int root = d.root;
    if (root < 0 || d.v[root].type != TS_Y_MAP)
        rc = root < 0 ? ts_fail(err, TS_EINPUT, "%s: empty, wanted the job's status", src)
                      : ts_ydoc_fail(&d, root, err, "wanted a mapping of the job's status");
    if (rc == TS_OK)
        rc = take_text(&d, root, "status", s->status, sizeof s->status, err);
    if (rc == TS_OK && !s->status[0])
        rc = ts_ydoc_fail(&d, root, err, "no 'status'");
    if (rc == TS_OK)
        rc = take_text(&d, root, "reason", s->reason, sizeof s->reason, err);
    if (rc == TS_OK)
        rc = take_text(&d, root, "placement", s->placement, sizeof s->placement, err);
    if (rc == TS_OK)
        rc = take_text(&d, root, "placement_reason", s->placement_reason,
                       sizeof s->placement_reason, err);
    if (rc == TS_OK)
        rc = take_mpi_plan(&d, root, &s->mpi, err);
    if (rc == TS_OK)
        rc = take_unreachable(&d, root, s, err);
    s->leader_ms = NAN;
    int lms = ts_ydoc_get(&d, root, "leader_ms");
    if (rc == TS_OK && lms >= 0)
        rc = ts_ydoc_num(&d, lms, "leader_ms", 0, 1e9, &s->leader_ms, err);
    ts_ydoc_free(&d);
    if (rc != TS_OK)
        ts_status_free(s);
    else
        s->present = 1;
    return rc;
}

int ts_status_load(ts_status *s, const char *dir, ts_error *err)
{
    memset(s, 0, sizeof *s);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? TS_OK
                               : ts_fail(err, TS_ESYS, "cannot open %s: %s", dir, strerror(errno));
    char *text;
    size_t len;
    int rc = ts_spool_read(fd, "status.yaml", TS_STATUS_MAX_BYTES, &text, &len, err);
    close(fd);
    if (rc != TS_OK || !text)
        return rc;
    char src[TS_SPOOL_PATH_MAX];
    snprintf(src, sizeof src, "%s/status.yaml", dir);
    rc = ts_status_parse(s, text, len, src, err);
    free(text);
    return rc;
}

void ts_status_free(ts_status *s)
{
    for (int i = 0; i < s->nunreachable; i++)
        free(s->unreachable[i]);
    free(s->unreachable);
    ts_mpi_plan_free(&s->mpi);
    memset(s, 0, sizeof *s);
}
