/* toposcope-epilog's work after the record is safe: the flag index, the AdminComment and drains.
 *
 * The drain check reads RECORDS/.index (lib/records/flagindex.c), never the records: its time
 * grows with the flags of the last year, not with the records directory. Drains follow NHC's
 * conventions: the reason starts with "toposcope:", a node that already has a reason (another
 * tool's, an admin's, or an earlier toposcope drain) is left as it is, and one job's evidence
 * never drains a node. Every scontrol call is bounded by what is left of the budget. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include "epilog.h"
#include "toposcope/flagindex.h"

#define SWEEP_EVERY_S 3600            /* stale temporary files are looked for this often */
#define STALE_TMP_S 3600              /* older than any epilog's budget (at most 600 s) */
#define SCONTROL_OUT_MAX 65536
#define MARKS_MAX 100000
#define DRAIN_JOBS_FLOOR 2            /* one job's evidence never drains a node */

/* ---- scontrol ---- */

/* Run the scontrol with args, its output into out (at most max - 1 bytes, NUL-terminated; NULL:
 * to /dev/null), killed when it outlives the budget. 0 when it ran and exited 0. */
static int run_scontrol(const epilog_config *c, char *const args[], char *out, size_t max)
{
    int pfd[2] = { -1, -1 };
    if (out && pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        if (out) {
            close(pfd[0]);
            close(pfd[1]);
        }
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0)
            dup2(null, 0);
        dup2(out ? pfd[1] : null, 1);
        execvp(c->scontrol, args);
        _exit(127);
    }
    size_t got = 0;
    double end = epilog_deadline(c, 1) - EPILOG_END_MARGIN_S;
    if (out) {
        close(pfd[1]);
        for (;;) {
            int ms = (int)((end - ts_flag_clock()) * 1000);
            struct pollfd p = { pfd[0], POLLIN, 0 };
            if (ms <= 0 || poll(&p, 1, ms) == 0)
                break;                       /* out of time: killed below */
            char buf[4096];
            ssize_t r = read(pfd[0], buf, sizeof buf);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            size_t keep = got + (size_t)r < max ? (size_t)r : max - 1 - got;
            memcpy(out + got, buf, keep);
            got += keep;
        }
        close(pfd[0]);
        out[got] = '\0';
    }
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -1;
        if (ts_flag_clock() >= end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            syslog(LOG_ERR, "job=%s %s %s killed: it outlived the epilog's budget", c->job, c->scontrol, args[1]);
            return -1;
        }
        nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The job's AdminComment gets a short summary (scontrol replaces the comment, so what Slurm
 * already has is not kept: Slurm gives the epilog no cheap way to read it back). */
static void admin_comment(const epilog_config *c, const ts_anomaly_list *l)
{
    char text[1024];
    int o = snprintf(text, sizeof text, "AdminComment=toposcope: %d slow link%s:", l->n, l->n == 1 ? "" : "s");
    for (int i = 0; i < l->n && i < 5 && o > 0 && (size_t)o < sizeof text; i++)
        o += snprintf(text + o, sizeof text - (size_t)o, " %.100s%s", l->a[i].id, i + 1 < l->n && i < 4 ? "," : "");
    char jobarg[96];
    snprintf(jobarg, sizeof jobarg, "JobId=%s", c->job);
    char *args[] = { (char *)c->scontrol, "update", jobarg, text, NULL };
    if (run_scontrol(c, args, NULL, 0) != 0)
        syslog(LOG_WARNING, "job=%s admin_comment failed (%s)", c->job, c->scontrol);
}

/* The node's current reason from `scontrol show node` (its "Reason=TEXT [user@time]" line) into
 * reason, "" when it has none. -1 when scontrol cannot say: then nothing is drained. */
static int node_reason(const epilog_config *c, const char *node, char *reason, size_t max)
{
    char *out = malloc(SCONTROL_OUT_MAX);
    if (!out)
        return -1;
    char *args[] = { (char *)c->scontrol, "show", "node", (char *)node, NULL };
    int rc = run_scontrol(c, args, out, SCONTROL_OUT_MAX);
    reason[0] = '\0';
    for (char *line = out; rc == 0 && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        /* multi-line output puts it on a line of its own, one-line output (-o) after a space */
        char *at = strstr(line, "Reason=");
        if (at && (at == line || at[-1] == ' ')) {
            at += 7;
            char *by = strstr(at, " [");
            size_t n = by ? (size_t)(by - at) : strlen(at);
            if (!(n == 6 && !strncmp(at, "(null)", 6)) && !(n == 4 && !strncmp(at, "none", 4)))
                snprintf(reason, max, "%.*s", (int)n, at);
            break;
        }
        line = nl ? nl + 1 : NULL;
    }
    free(out);
    return rc;
}

/* ---- the flag index ---- */

/* Temporary files (".tmp-*") a stopped writer left in the records directory, once they are
 * older than any writer's budget. */
static void sweep_stale(const epilog_config *c)
{
    int dfd = open(c->records, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    time_t wall = time(NULL);
    double end = epilog_deadline(c, EPILOG_SHARE_INDEX);
    int removed = 0, n = 0;
    struct dirent *de;
    struct stat st;
    while ((de = readdir(d)) && ((++n & 1023) || ts_flag_clock() < end)) {
        if (strncmp(de->d_name, ".tmp-", 5) || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_mtime >= wall - STALE_TMP_S)
            continue;
        if (unlinkat(dfd, de->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    if (removed)
        syslog(LOG_NOTICE, "job=%s removed %d stale temporary file%s from %s", c->job, removed,
               removed == 1 ? "" : "s", c->records);
}

typedef struct prepare_arg {
    const epilog_config *c;
    const ts_record *r;
} prepare_arg;

static int prepare_index(ts_flag_index *x, const ts_flag_found *found, void *arg, ts_error *err)
{
    const prepare_arg *p = arg;
    const epilog_config *c = p->c;
    int changed = found->missing || found->corrupt;
    if (found->corrupt)
        syslog(LOG_ERR, "job=%s flag index unusable, rebuilt from the records: %s", c->job, found->why);
    if (changed) {
        int read = 0;
        int rc = ts_flag_index_rebuild(x, c->records, epilog_deadline(c, EPILOG_SHARE_REBUILD), &read, err);
        if (rc)
            return rc;
        if (ts_flag_index_since(x) > 0)
            syslog(LOG_WARNING, "job=%s flag index rebuilt from %d records before the time ran out: records "
                   "written before %lld are not in it (toposcope report --rebuild-index reads them all)",
                   c->job, read, (long long)ts_flag_index_since(x));
        else
            syslog(LOG_NOTICE, "job=%s flag index rebuilt from %d records", c->job, read);
    }
    /* already there (the rebuild read this record): no new generation for it */
    if (!ts_flag_index_holds_record(x, p->r)) {
        int rc = ts_flag_index_add_record(x, p->r, NULL, err);
        if (rc)
            return rc;
        changed = 1;
    }
    time_t wall = time(NULL);
    int64_t swept = ts_flag_index_swept(x);
    if (wall - swept >= SWEEP_EVERY_S || swept > wall + TS_FLAGS_SKEW_S) {
        sweep_stale(c);
        ts_flag_index_set_swept(x, wall);
        changed = 1;
    }
    return changed ? TS_OK : TS_FLAGS_UNCHANGED;
}

/* ---- drains ---- */

/* The drain marks in RECORDS/.index: drain-NODE-TIME, one per drain (created exclusively). */
typedef struct marks {
    int n, cap;
    char **node;
    int64_t *t;
    int dfd;
} marks;

static void marks_free(marks *m)
{
    for (int i = 0; i < m->n; i++)
        free(m->node[i]);
    free(m->node);
    free(m->t);
    if (m->dfd >= 0)
        close(m->dfd);
}

static int marks_add(marks *m, const char *node, size_t len, int64_t t)
{
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 32;
        char **nn = realloc(m->node, sizeof *nn * (size_t)cap);
        if (nn)
            m->node = nn;
        int64_t *tt = realloc(m->t, sizeof *tt * (size_t)cap);
        if (tt)
            m->t = tt;
        if (!nn || !tt)
            return -1;
        m->cap = cap;
    }
    if (!(m->node[m->n] = strndup(node, len)))
        return -1;
    m->t[m->n++] = t;
    return 0;
}

/* Every mark, once. Marks older than any drain window are removed; future-dated ones (beyond
 * the clock skew allowed) are ignored: they neither hold a drain back nor count. */
static int marks_load(const epilog_config *c, marks *m)
{
    memset(m, 0, sizeof *m);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s", c->records, TS_FLAGS_DIR);
    m->dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int fd = m->dfd >= 0 ? dup(m->dfd) : -1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d)) && m->n < MARKS_MAX) {
        const char *dash = strrchr(de->d_name, '-');
        if (strncmp(de->d_name, "drain-", 6) || dash <= de->d_name + 5 || !dash[1] ||
            strspn(dash + 1, "0123456789") != strlen(dash + 1) || strlen(dash + 1) > 13)
            continue;
        int64_t t = atoll(dash + 1);
        if (t < c->now - TS_FLAGS_KEEP_S) {
            unlinkat(m->dfd, de->d_name, 0);
        } else if (t > c->now + TS_FLAGS_SKEW_S) {
            syslog(LOG_WARNING, "job=%s ignoring %s/%s: dated %lld s in the future", c->job, path, de->d_name,
                   (long long)(t - c->now));
        } else if (marks_add(m, de->d_name + 6, (size_t)(dash - de->d_name - 6), t)) {
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    return 0;
}

/* The drain reason: what the index saw of the node, the latest job first among equals. */
static void drain_reason(char *out, size_t max, const ts_flag_count *k, const ts_policy *pol, const ts_anomaly *a,
                         const char *job)
{
    char last[64 + TS_RECORD_TEXT_MAX];
    if (a->kind == TS_ANOMALY_SLOW && isfinite(a->excess_pct))
        snprintf(last, sizeof last, "last: job %s, %+.0f%%", job, a->excess_pct);
    else
        snprintf(last, sizeof last, "last: job %s", job);
    const char *what[3] = { "access link slow", "node did not answer", "access link lost probes" };
    int by[3] = { k->slow, k->unreachable, k->loss }, kinds = (k->slow > 0) + (k->unreachable > 0) + (k->loss > 0);
    if (kinds == 1) {
        int w = k->slow ? 0 : k->unreachable ? 1 : 2;
        snprintf(out, max, "Reason=toposcope: %s in %d jobs within %g h (%s)", what[w], by[w], pol->drain_hours,
                 last);
        return;
    }
    /* mixed kinds: how many of the jobs saw each */
    snprintf(out, max, "Reason=toposcope: flagged in %d jobs within %g h: did not answer in %d, slow in %d, lost "
             "probes in %d (%s)", k->jobs, pol->drain_hours, k->unreachable, k->slow, k->loss, last);
}

static void maybe_drain(const epilog_config *c, const ts_policy *pol, const ts_record *r, ts_flag_index *x)
{
    int need = pol->drain_jobs > DRAIN_JOBS_FLOOR ? pol->drain_jobs : DRAIN_JOBS_FLOOR;
    int64_t from = c->now - (int64_t)ceil(pol->drain_hours * 3600), to = c->now + TS_FLAGS_SKEW_S;
    int64_t since = ts_flag_index_since(x);
    marks m = { .dfd = -1 };
    int have_marks = 0;
    for (int i = 0; i < r->anomalies.n; i++) {
        const ts_anomaly *a = &r->anomalies.a[i];
        /* a node is drained for its own access link only: an uplink's nodes did nothing wrong */
        if (!a->access)
            continue;
        ts_flag_count k;
        ts_flag_index_count(x, a->id, from, to, &k);
        if (k.jobs < need) {
            if (since > from)
                syslog(LOG_INFO, "job=%s link=%s flagged by %d job%s in %g h; the flag index holds the records "
                       "written since %lld only", c->job, a->id, k.jobs, k.jobs == 1 ? "" : "s", pol->drain_hours,
                       (long long)since);
            continue;
        }
        if (!have_marks && marks_load(c, &m) != 0) {
            syslog(LOG_ERR, "job=%s cannot read the drain marks in %s/%s: no drain", c->job, c->records, TS_FLAGS_DIR);
            break;
        }
        have_marks = 1;
        int recent = 0, same = 0;
        for (int j = 0; j < m.n; j++) {
            recent += m.t[j] > c->now - 3600;
            same += m.t[j] > from && !strcmp(m.node[j], a->id);
        }
        if (same || recent >= c->drain_per_hour) {
            syslog(LOG_WARNING, "job=%s link=%s flagged by %d jobs in %g h: drain held back by the rate limit",
                   c->job, a->id, k.jobs, pol->drain_hours);
            continue;
        }
        char reason[1024];
        if (node_reason(c, a->id, reason, sizeof reason) != 0) {
            syslog(LOG_ERR, "job=%s link=%s flagged by %d jobs in %g h: not drained, '%s show node' failed",
                   c->job, a->id, k.jobs, pol->drain_hours, c->scontrol);
            continue;
        }
        if (reason[0]) {
            /* NHC's rule: a reason another tool (or an admin) set is theirs to clear */
            syslog(LOG_WARNING, "job=%s link=%s flagged by %d jobs in %g h: not drained, the node already has "
                   "a reason: %s", c->job, a->id, k.jobs, pol->drain_hours, reason);
            continue;
        }
        char mark[64 + TS_LINK_ID_MAX];
        snprintf(mark, sizeof mark, "drain-%s-%lld", a->id, (long long)c->now);
        int fd = openat(m.dfd, mark, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
        if (fd < 0)
            continue;                    /* another epilog took this drain */
        close(fd);
        marks_add(&m, a->id, strlen(a->id), c->now);
        char nodearg[16 + TS_LINK_ID_MAX], text[1024];
        snprintf(nodearg, sizeof nodearg, "NodeName=%s", a->id);
        drain_reason(text, sizeof text, &k, pol, a, c->job);
        char *args[] = { (char *)c->scontrol, "update", nodearg, "State=DRAIN", text, NULL };
        int rc = run_scontrol(c, args, NULL, 0);
        syslog(rc == 0 ? LOG_WARNING : LOG_ERR, "job=%s link=%s %s: %s", c->job, a->id,
               rc == 0 ? "node drained" : "drain failed", text + 7);
    }
    marks_free(&m);
}

void epilog_after_record(const epilog_config *c, const ts_policy *pol, const ts_record *r)
{
    int access = 0;
    for (int i = 0; i < r->anomalies.n; i++)
        access |= r->anomalies.a[i].access;
    if (c->actions && c->admin_comment && r->anomalies.n)
        admin_comment(c, &r->anomalies);
    /* a job that flagged no access link has nothing for the index, and nothing to drain */
    if (!access)
        return;
    prepare_arg arg = { c, r };
    ts_flag_update u = { .records = c->records, .now = c->now, .deadline = epilog_deadline(c, EPILOG_SHARE_INDEX),
                         .prepare = prepare_index, .arg = &arg };
    ts_flag_index *x = NULL;
    ts_flag_found found;
    ts_error err = {{0}};
    int rc = ts_flag_index_update(&u, &x, &found, &err);
    if (rc != TS_OK)
        syslog(LOG_ERR, "job=%s flag index not updated: %s", c->job, err.text);
    if (x && c->actions && pol->drain)
        maybe_drain(c, pol, r, x);
    else if (!x && c->actions && pol->drain)
        syslog(LOG_ERR, "job=%s no flag index: no drain decided", c->job);
    ts_flag_index_free(x);
}
