/* toposcope — the flag index beside the records (see toposcope/flagindex.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "toposcope/flagindex.h"
#include "toposcope/textout.h"
#include "util/grow.h"
#include "util/strpool.h"

#define MAX_TIME (1LL << 40)                /* as a record's time */
#define STALE_TMP_S 3600                    /* a writer's temporary file lives seconds at most */
#define MAX_RECORD_FILES 1000000            /* as toposcope report reads */
#define GENERATION_MAX 999999999999999LL
#define SUPERSEDED_S 60                     /* longer than any writer lists the index directory */

static const char *const kind_names[] = { "slow", "unreachable", "loss", NULL };

typedef struct entry {
    const char *node, *job;          /* in the names pool */
    int64_t t;
    ts_anomaly_kind kind;
} entry;

struct ts_flag_index {
    ts_strpool *names;
    entry *e;
    int n, cap;
    int sorted;                      /* by node, then time: one entry per node and job */
    int64_t since, swept;
};

ts_flag_index *ts_flag_index_new(void)
{
    ts_flag_index *x = calloc(1, sizeof *x);
    if (x && !(x->names = ts_strpool_new())) {
        free(x);
        return NULL;
    }
    if (x) {
        x->since = INT64_MAX;
        x->sorted = 1;
    }
    return x;
}

void ts_flag_index_free(ts_flag_index *x)
{
    if (!x)
        return;
    ts_strpool_free(x->names);
    free(x->e);
    free(x);
}

int ts_flag_index_size(const ts_flag_index *x)
{
    return x->n;
}

int64_t ts_flag_index_since(const ts_flag_index *x)
{
    return x->since;
}

void ts_flag_index_set_since(ts_flag_index *x, int64_t t)
{
    x->since = t;
}

int64_t ts_flag_index_swept(const ts_flag_index *x)
{
    return x->swept;
}

void ts_flag_index_set_swept(ts_flag_index *x, int64_t t)
{
    x->swept = t;
}

/* 1 to 255 printable ASCII characters without spaces: one word of a line */
static int token_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] <= ' ' || (unsigned char)s[n] >= 0x7f)
            return 0;
    return n > 0 && n < TS_FLAGS_TOKEN_MAX;
}

/* ---- order and bounds ---- */

static int cmp_node_job_newest(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    int c = strcmp(a->node, b->node);
    if (!c)
        c = strcmp(a->job, b->job);
    if (!c && a->t != b->t)
        c = a->t > b->t ? -1 : 1;
    return c;
}

static int cmp_node_time(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    int c = strcmp(a->node, b->node);
    if (!c && a->t != b->t)
        c = a->t < b->t ? -1 : 1;
    return c ? c : strcmp(a->job, b->job);
}

static int cmp_newest(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t > b->t ? -1 : 1;
    return cmp_node_time(pa, pb);
}

/* One entry per node and job (the newest), sorted by node and time. */
static void normalize(ts_flag_index *x)
{
    if (x->sorted)
        return;
    if (x->n > 1) {
        qsort(x->e, (size_t)x->n, sizeof *x->e, cmp_node_job_newest);
        int k = 0;
        for (int i = 0; i < x->n; i++)
            if (!k || x->e[i].node != x->e[k - 1].node || x->e[i].job != x->e[k - 1].job)
                x->e[k++] = x->e[i];
        x->n = k;
        qsort(x->e, (size_t)x->n, sizeof *x->e, cmp_node_time);
    }
    x->sorted = 1;
}

/* The newest TS_FLAGS_PER_NODE of each node, the newest TS_FLAGS_MAX_ENTRIES of all. */
static void cap_entries(ts_flag_index *x)
{
    normalize(x);
    int k = 0;
    for (int i = 0; i < x->n;) {
        int j = i;
        while (j < x->n && x->e[j].node == x->e[i].node)
            j++;
        for (int from = j - i > TS_FLAGS_PER_NODE ? j - TS_FLAGS_PER_NODE : i; from < j; from++)
            x->e[k++] = x->e[from];
        i = j;
    }
    x->n = k;
    if (x->n > TS_FLAGS_MAX_ENTRIES) {
        qsort(x->e, (size_t)x->n, sizeof *x->e, cmp_newest);
        x->n = TS_FLAGS_MAX_ENTRIES;
        qsort(x->e, (size_t)x->n, sizeof *x->e, cmp_node_time);
    }
}

void ts_flag_index_prune(ts_flag_index *x, int64_t now)
{
    int k = 0;
    for (int i = 0; i < x->n; i++)
        if (x->e[i].t >= now - TS_FLAGS_KEEP_S && x->e[i].t <= now + TS_FLAGS_SKEW_S)
            x->e[k++] = x->e[i];
    x->n = k;
    cap_entries(x);
}

/* ---- adding ---- */

static int add_entry(ts_flag_index *x, const char *node, const char *job, int64_t t, ts_anomaly_kind kind,
                     ts_error *err)
{
    /* a long rebuild keeps its memory bounded: duplicates and the oldest go along the way */
    if (x->n >= 2 * TS_FLAGS_MAX_ENTRIES)
        cap_entries(x);
    if (ts_grow(&x->e, sizeof *x->e, &x->cap, x->n, 64))
        return ts_fail(err, TS_ENOMEM, "out of memory");
    int a = ts_strpool_intern(x->names, node), b = a < 0 ? -1 : ts_strpool_intern(x->names, job);
    if (b < 0)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    x->e[x->n++] = (entry){ ts_strpool_str(x->names, a), ts_strpool_str(x->names, b), t, kind };
    x->sorted = 0;
    return TS_OK;
}

int ts_flag_index_add(ts_flag_index *x, const char *node, const char *job, int64_t t,
                      ts_anomaly_kind kind, ts_error *err)
{
    if (!token_ok(node) || !token_ok(job))
        return ts_fail(err, TS_EINPUT, "flag index: node '%.64s' and job '%.64s' must be 1 to %d printable "
                       "characters without spaces", node, job, TS_FLAGS_TOKEN_MAX - 1);
    if (t < 0 || t > MAX_TIME || (unsigned)kind > TS_ANOMALY_LOSS)
        return ts_fail(err, TS_EINPUT, "flag index: time %lld or kind %d out of range", (long long)t, (int)kind);
    return add_entry(x, node, job, t, kind, err);
}

int ts_flag_index_add_record(ts_flag_index *x, const ts_record *r, int *skipped, ts_error *err)
{
    for (int i = 0; i < r->anomalies.n; i++) {
        const ts_anomaly *a = &r->anomalies.a[i];
        if (!a->access)
            continue;
        if (!token_ok(a->id) || !token_ok(r->job) || r->time < 0 || r->time > MAX_TIME) {
            if (skipped)
                (*skipped)++;
            continue;
        }
        int rc = add_entry(x, a->id, r->job, r->time, a->kind, err);
        if (rc)
            return rc;
    }
    return TS_OK;
}

int ts_flag_index_merge(ts_flag_index *x, const ts_flag_index *src, ts_error *err)
{
    for (int i = 0; i < src->n; i++) {
        const entry *e = &src->e[i];
        int rc = add_entry(x, e->node, e->job, e->t, e->kind, err);
        if (rc)
            return rc;
    }
    if (src->since < x->since)
        x->since = src->since;
    if (src->swept > x->swept)
        x->swept = src->swept;
    return TS_OK;
}

/* The first entry of node (entries normalized), or x->n. */
static int first_of(const ts_flag_index *x, const char *node)
{
    int lo = 0, hi = x->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(x->e[mid].node, node) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int ts_flag_index_holds_record(ts_flag_index *x, const ts_record *r)
{
    normalize(x);
    for (int i = 0; i < r->anomalies.n; i++) {
        const ts_anomaly *a = &r->anomalies.a[i];
        if (!a->access || !token_ok(a->id) || !token_ok(r->job))
            continue;
        int held = 0;
        for (int k = first_of(x, a->id); k < x->n && !held && !strcmp(x->e[k].node, a->id); k++)
            held = !strcmp(x->e[k].job, r->job) && x->e[k].t >= r->time;
        if (!held)
            return 0;
    }
    return 1;
}

void ts_flag_index_count(ts_flag_index *x, const char *node, int64_t from, int64_t to,
                         ts_flag_count *out)
{
    memset(out, 0, sizeof *out);
    normalize(x);
    for (int i = first_of(x, node); i < x->n && !strcmp(x->e[i].node, node); i++) {
        const entry *e = &x->e[i];
        if (e->t < from || e->t > to)
            continue;
        out->jobs++;
        out->slow += e->kind == TS_ANOMALY_SLOW;
        out->loss += e->kind == TS_ANOMALY_LOSS;
        out->unreachable += e->kind == TS_ANOMALY_UNREACHABLE;
        if (e->t >= out->last) {
            out->last = e->t;
            snprintf(out->last_job, sizeof out->last_job, "%s", e->job);
        }
    }
}

/* ---- the file ---- */

static long long clamp_time(int64_t t)
{
    return t < 0 ? 0 : t > MAX_TIME ? MAX_TIME : (long long)t;
}

int ts_flag_index_write(ts_flag_index *x, FILE *out)
{
    normalize(x);
    fprintf(out, "# toposcope flag index: per node, the recent jobs whose records flagged its access link\n"
                 "# (toposcope-epilog(8)); each writer publishes a new whole file, none is edited in place\n");
    fprintf(out, "toposcope_flags %d\nsince %lld\nswept %lld\n", TS_FLAGS_VERSION, clamp_time(x->since),
            clamp_time(x->swept));
    for (int i = 0; i < x->n; i++)
        fprintf(out, "flag %s %lld %s %s\n", x->e[i].node, (long long)x->e[i].t, x->e[i].job,
                kind_names[x->e[i].kind]);
    return ferror(out) ? TS_ESYS : TS_OK;
}

/* A time: decimal digits only, at most MAX_TIME. */
static int parse_time(const char *s, int64_t *out)
{
    size_t n = strlen(s);
    if (!n || n > 13 || strspn(s, "0123456789") != n)
        return -1;
    long long v = strtoll(s, NULL, 10);
    if (v > MAX_TIME)
        return -1;
    *out = v;
    return 0;
}

/* Split line (NUL-terminated, written to) into at most max words; the count, max + 1 when
 * there are more. */
static int split(char *line, char **w, int max)
{
    int n = 0;
    for (char *p = line;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            return n;
        if (n == max)
            return max + 1;
        w[n++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (*p)
            *p++ = '\0';
    }
}

static int parse_lines(ts_flag_index *x, const char *text, size_t len, const char *src, ts_error *err)
{
    char line[TS_FLAGS_MAX_LINE + 1];
    int lineno = 0, have_head = 0, have_since = 0, have_swept = 0;
    size_t at = 0;
    while (at < len) {
        lineno++;
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
        if (n > TS_FLAGS_MAX_LINE)
            return ts_fail(err, TS_EINPUT, "%s:%d: line longer than %d bytes", src, lineno, TS_FLAGS_MAX_LINE);
        memcpy(line, text + at, n);
        line[n] = '\0';
        at = end + 1;
        if (strlen(line) != n)
            return ts_fail(err, TS_EINPUT, "%s:%d: a NUL byte: not a flag index", src, lineno);
        if (n && line[n - 1] == '\r')
            line[--n] = '\0';
        char *w[6];
        int nw = split(line, w, 5);
        if (nw == 0 || w[0][0] == '#')
            continue;
        if (!have_head) {
            int64_t v;
            if (strcmp(w[0], "toposcope_flags"))
                return ts_fail(err, TS_EINPUT, "%s:%d: not a flag index: 'toposcope_flags %d' must come first",
                               src, lineno, TS_FLAGS_VERSION);
            if (nw != 2 || parse_time(w[1], &v) || v != TS_FLAGS_VERSION)
                return ts_fail(err, TS_EINPUT, "%s:%d: flag index version '%s': this reader knows version %d",
                               src, lineno, nw > 1 ? w[1] : "", TS_FLAGS_VERSION);
            have_head = 1;
        } else if (!strcmp(w[0], "since") || !strcmp(w[0], "swept")) {
            int since = w[0][1] == 'i', *seen = since ? &have_since : &have_swept;
            int64_t v;
            if (*seen)
                return ts_fail(err, TS_EINPUT, "%s:%d: '%s' given twice", src, lineno, w[0]);
            if (nw != 2 || parse_time(w[1], &v))
                return ts_fail(err, TS_EINPUT, "%s:%d: '%s' wants one time in seconds since the epoch (0 to %lld)",
                               src, lineno, w[0], MAX_TIME);
            *seen = 1;
            *(since ? &x->since : &x->swept) = v;
        } else if (!strcmp(w[0], "flag")) {
            int64_t t;
            int kind = 0;
            while (nw == 5 && kind_names[kind] && strcmp(kind_names[kind], w[4]))
                kind++;
            if (nw != 5 || !kind_names[kind])
                return ts_fail(err, TS_EINPUT, "%s:%d: a flag is 'flag NODE TIME JOB KIND', KIND slow, unreachable "
                               "or loss", src, lineno);
            if (parse_time(w[2], &t))
                return ts_fail(err, TS_EINPUT, "%s:%d: time '%.32s' is not seconds since the epoch (0 to %lld)",
                               src, lineno, w[2], MAX_TIME);
            if (strlen(w[1]) >= TS_FLAGS_TOKEN_MAX || strlen(w[3]) >= TS_FLAGS_TOKEN_MAX)
                return ts_fail(err, TS_EINPUT, "%s:%d: a node or job longer than %d bytes", src, lineno,
                               TS_FLAGS_TOKEN_MAX - 1);
            if (!token_ok(w[1]) || !token_ok(w[3]))
                return ts_fail(err, TS_EINPUT, "%s:%d: a node or job holds a control or non-ASCII byte", src,
                               lineno);
            if (x->n >= TS_FLAGS_MAX_ENTRIES)
                return ts_fail(err, TS_ELIMIT, "%s:%d: more than %d flags", src, lineno, TS_FLAGS_MAX_ENTRIES);
            int rc = add_entry(x, w[1], w[3], t, (ts_anomaly_kind)kind, err);
            if (rc)
                return rc;
        } else {
            return ts_fail(err, TS_EINPUT, "%s:%d: unknown line '%.32s' (expected flag, since or swept)", src,
                           lineno, w[0]);
        }
    }
    if (!have_head)
        return ts_fail(err, TS_EINPUT, "%s: empty, not a flag index", src);
    if (!have_since)
        return ts_fail(err, TS_EINPUT, "%s: 'since' is missing", src);
    return TS_OK;
}

int ts_flag_index_parse(ts_flag_index *x, const char *text, size_t len, const char *source, ts_error *err)
{
    if (len > TS_FLAGS_MAX_BYTES)
        return ts_fail(err, TS_ELIMIT, "%s: larger than %u bytes", source, TS_FLAGS_MAX_BYTES);
    x->since = INT64_MAX;
    int rc = parse_lines(x, text, len, source, err);
    if (rc) {
        x->n = 0;
        x->sorted = 1;
        x->since = INT64_MAX;
        x->swept = 0;
    }
    return rc;
}

/* ---- in the records directory ---- */

double ts_flag_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* RECORDS/.index opened (made when create and missing), never through a symlink. */
static int open_index_dir(const char *records, int create, char *path, size_t max, ts_error *err)
{
    snprintf(path, max, "%s/%s", records, TS_FLAGS_DIR);
    int rfd = open(records, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0)
        return ts_fail(err, TS_ESYS, "records directory %s: %s", records, strerror(errno));
    if (create && mkdirat(rfd, TS_FLAGS_DIR, 0750) != 0 && errno != EEXIST) {
        int e = errno;
        close(rfd);
        return ts_fail(err, TS_ESYS, "cannot create %s: %s", path, strerror(e));
    }
    int fd = openat(rfd, TS_FLAGS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(rfd);
    if (fd < 0)
        return ts_fail(err, e == ENOENT ? TS_EEXIST : TS_ESYS, "%s: %s", path, strerror(e));
    return fd;
}

/* The generation a name holds (flags.G), 0 when it is no generation. */
static long long generation_of(const char *name)
{
    if (strncmp(name, "flags.", 6))
        return 0;
    size_t n = strlen(name + 6);
    if (!n || n > 15 || strspn(name + 6, "0123456789") != n || name[6] == '0')
        return 0;
    return strtoll(name + 6, NULL, 10);
}

/* A listing of dfd that leaves dfd open. The duplicate shares dfd's offset, which an earlier
 * listing left at the end: rewind it. */
static DIR *list_dir(int dfd)
{
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    if (d)
        rewinddir(d);
    return d;
}

static int cmp_generation(const void *pa, const void *pb)
{
    long long a = *(const long long *)pa, b = *(const long long *)pb;
    return (a > b) - (a < b);
}

static long long newest_generation(int dfd)
{
    DIR *d = list_dir(dfd);
    if (!d)
        return -1;
    long long best = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        long long g = generation_of(de->d_name);
        best = g > best ? g : best;
    }
    closedir(d);
    return best;
}

/* flags.G whole into *buf, its file left open in *fd (the caller closes it); TS_EEXIST when it
 * is gone (a newer writer removed it). */
static int read_generation(int dfd, const char *dirpath, long long g, int *fd, char **buf, size_t *len,
                           ts_error *err)
{
    char name[32];
    snprintf(name, sizeof name, "flags.%lld", g);
    *buf = NULL;
    /* O_NONBLOCK: a FIFO planted under the name must not hang the epilog (refused below) */
    if ((*fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
        return ts_fail(err, errno == ENOENT ? TS_EEXIST : TS_ESYS, "%s/%s: %s", dirpath, name, strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)TS_FLAGS_MAX_BYTES)
        return ts_fail(err, TS_EINPUT, "%s/%s: not a regular file of at most %u bytes", dirpath, name,
                       TS_FLAGS_MAX_BYTES);
    if (!(*buf = malloc((size_t)st.st_size + 1)))
        return ts_fail(err, TS_ENOMEM, "out of memory");
    *len = 0;
    while (*len < (size_t)st.st_size) {
        ssize_t r = read(*fd, *buf + *len, (size_t)st.st_size - *len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        *len += (size_t)r;
    }
    (*buf)[*len] = '\0';
    return TS_OK;
}

/* The newest generation into x (empty); found says what there was, *fd is its file, kept open
 * (-1 when missing) so that the writer can tell afterwards whether it was removed meanwhile.
 * TS_OK also when it is missing or corrupt (found tells); an error only when the directory
 * cannot be read. */
static int load_newest(int dfd, const char *dirpath, ts_flag_index *x, ts_flag_found *found, int *fd,
                       ts_error *err)
{
    *fd = -1;
    for (int tries = 0; tries < 10; tries++) {
        memset(found, 0, sizeof *found);
        long long g = newest_generation(dfd);
        if (g < 0)
            return ts_fail(err, TS_ESYS, "cannot read %s: %s", dirpath, strerror(errno));
        found->generation = g;
        if (g == 0) {
            found->missing = 1;
            return TS_OK;
        }
        char *buf = NULL, src[PATH_MAX + 32];
        size_t len = 0;
        snprintf(src, sizeof src, "%s/flags.%lld", dirpath, g);
        ts_error e2;
        int rc = read_generation(dfd, dirpath, g, fd, &buf, &len, &e2);
        if (rc == TS_OK)
            rc = ts_flag_index_parse(x, buf, len, src, &e2);
        free(buf);
        if (rc == TS_EEXIST)
            continue;                        /* replaced while we looked: look again */
        if (rc == TS_ENOMEM || rc == TS_ESYS) {
            if (*fd >= 0)
                close(*fd);
            *fd = -1;
            return ts_fail(err, rc, "%s", e2.text);
        }
        if (rc) {
            found->corrupt = 1;
            snprintf(found->why, sizeof found->why, "%s", e2.text);
        }
        return TS_OK;
    }
    return ts_fail(err, TS_ESYS, "%s: the newest flag index kept changing while it was read", dirpath);
}

int ts_flag_index_load(const char *records, ts_flag_index **out, ts_error *err)
{
    *out = NULL;
    char dirpath[PATH_MAX + 16];
    int dfd = open_index_dir(records, 0, dirpath, sizeof dirpath, err);
    if (dfd == TS_EEXIST)
        return TS_OK;
    if (dfd < 0)
        return dfd;
    ts_flag_index *x = ts_flag_index_new();
    ts_flag_found found;
    int fd = -1;
    int rc = x ? load_newest(dfd, dirpath, x, &found, &fd, err) : ts_fail(err, TS_ENOMEM, "out of memory");
    if (fd >= 0)
        close(fd);
    close(dfd);
    if (rc == TS_OK && found.corrupt)
        rc = ts_fail(err, TS_EINPUT, "%s", found.why);
    if (rc == TS_OK && !found.missing)
        *out = x;
    else
        ts_flag_index_free(x);
    return rc;
}

static int next_generation_name(int i, void *arg, char *out, size_t max)
{
    if (i > 0)
        return -1;                           /* one name only: a lost race is reloaded */
    snprintf(out, max, "flags.%lld", *(const long long *)arg);
    return 0;
}

/* After a publication: generations superseded by one at least SUPERSEDED_S older than the file
 * just published (ref, the file server's clock) go, lowest first, and stale temporary files.
 * So a generation that was the newest when a writer began listing the directory outlives that
 * listing (readdir may miss a file made or removed while it runs, never one there throughout),
 * and a name removed has every lower one removed before it: a writer whose base is gone by the
 * time it has published can tell (see publish) that its name may have been used before. */
static void remove_superseded(int dfd, time_t ref)
{
    DIR *d = list_dir(dfd);
    if (!d)
        return;
    long long *g = NULL, floor = 0;
    int n = 0, cap = 0;
    struct dirent *de;
    struct stat st;
    while ((de = readdir(d))) {
        long long k = generation_of(de->d_name);
        if (k > 0 && fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (st.st_mtime <= ref - SUPERSEDED_S && k > floor)
                floor = k;
            if (ts_grow(&g, sizeof *g, &cap, n, 16))
                break;
            g[n++] = k;
        } else if (!strncmp(de->d_name, ".tmp-", 5) && fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                   S_ISREG(st.st_mode) && st.st_mtime < ref - STALE_TMP_S) {
            unlinkat(dfd, de->d_name, 0);
        }
    }
    closedir(d);
    if (n > 1)
        qsort(g, (size_t)n, sizeof *g, cmp_generation);
    for (int i = 0; i < n && g[i] < floor; i++) {
        char name[32];
        snprintf(name, sizeof name, "flags.%lld", g[i]);
        unlinkat(dfd, name, 0);
    }
    free(g);
}

int ts_flag_index_update(const ts_flag_update *u, ts_flag_index **out, ts_flag_found *found, ts_error *err)
{
    *out = NULL;
    memset(found, 0, sizeof *found);
    char dirpath[PATH_MAX + 16];
    int dfd = open_index_dir(u->records, 1, dirpath, sizeof dirpath, err);
    if (dfd < 0)
        return dfd;
    int rc = TS_EEXIST, base = -1;
    for (int attempt = 0; rc == TS_EEXIST && (attempt == 0 || ts_flag_clock() < u->deadline); attempt++) {
        ts_flag_index_free(*out);
        if (!(*out = ts_flag_index_new())) {
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
            break;
        }
        ts_flag_index *x = *out;
        if (base >= 0)
            close(base);
        if ((rc = load_newest(dfd, dirpath, x, found, &base, err)))
            break;
        rc = u->prepare(x, found, u->arg, err);
        if (rc == TS_FLAGS_UNCHANGED && !found->missing && !found->corrupt) {
            rc = TS_OK;              /* nothing new: no generation */
            break;
        }
        if (rc < 0)
            break;
        /* an index begun now (nothing rebuilt) covers the records from now on */
        if (x->since == INT64_MAX)
            x->since = u->now;
        ts_flag_index_prune(x, u->now);
        char *text = NULL, final[64];
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (!m) {
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
            break;
        }
        int bad = ts_flag_index_write(x, m) != TS_OK;
        if ((fclose(m) != 0) | bad) {
            free(text);
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
            break;
        }
        long long next = found->generation + 1;
        if (next > GENERATION_MAX) {
            free(text);
            rc = ts_fail(err, TS_ELIMIT, "%s: generation %lld is the last: remove the directory, the epilogs "
                         "rebuild it", dirpath, found->generation);
            break;
        }
        rc = ts_publish_file_at(dfd, dirpath, ".tmp-flags-", text, len, 0640, next_generation_name, &next, final,
                                sizeof final, err);
        free(text);
        struct stat st;
        if (rc == TS_OK && base >= 0 && fstat(base, &st) == 0 && st.st_nlink == 0) {
            /* our base was removed while we prepared: a newer generation stood a while, and the
             * name we took had been used and removed before, so readers may have moved on past
             * it. Withdraw it and build on the newest. */
            unlinkat(dfd, final, 0);
            rc = TS_EEXIST;
        } else if (rc == TS_OK && fstatat(dfd, final, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            remove_superseded(dfd, st.st_mtime);
        }
    }
    if (base >= 0)
        close(base);
    close(dfd);
    if (rc != TS_OK && rc != TS_EEXIST && rc != TS_ESYS) {
        ts_flag_index_free(*out);
        *out = NULL;
    } else if (rc == TS_EEXIST) {
        rc = ts_fail(err, TS_EEXIST, "%s: other writers kept publishing first until the deadline", dirpath);
    }
    return rc;
}

/* ---- rebuilding from the records ---- */

typedef struct record_file {
    char *name;
    int64_t mtime;
} record_file;

static int cmp_newest_file(const void *pa, const void *pb)
{
    const record_file *a = pa, *b = pb;
    if (a->mtime != b->mtime)
        return a->mtime > b->mtime ? -1 : 1;
    return strcmp(a->name, b->name);
}

int ts_flag_index_rebuild(ts_flag_index *x, const char *records, double deadline, int *nread, ts_error *err)
{
    int read = 0;
    if (nread)
        *nread = 0;
    int64_t wall = (int64_t)time(NULL);
    int rfd = open(records, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
    if (!d) {
        int e = errno;
        if (rfd >= 0)
            close(rfd);
        return ts_fail(err, TS_ESYS, "records directory %s: %s", records, strerror(e));
    }
    record_file *f = NULL;
    int n = 0, cap = 0, rc = TS_OK, listed = 1;
    struct dirent *de;
    struct stat st;
    while ((de = readdir(d)) && n < MAX_RECORD_FILES) {
        size_t L = strlen(de->d_name);
        if (strncmp(de->d_name, "job-", 4) || L < 9 || strcmp(de->d_name + L - 5, ".yaml"))
            continue;
        if ((n & 255) == 0 && ts_flag_clock() > deadline) {
            listed = 0;                      /* a part of the list says nothing of what is newest */
            break;
        }
        if (fstatat(rfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_mtime < wall - TS_FLAGS_KEEP_S)
            continue;
        if (ts_grow(&f, sizeof *f, &cap, n, 1024)) {
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
            break;
        }
        if (!(f[n].name = strdup(de->d_name))) {
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
            break;
        }
        f[n++].mtime = st.st_mtime;
    }
    int64_t since = wall;
    if (rc == TS_OK && listed) {
        if (n > 1)
            qsort(f, (size_t)n, sizeof *f, cmp_newest_file);
        int i = 0;
        for (; i < n && rc == TS_OK && ts_flag_clock() < deadline; i++) {
            char path[PATH_MAX];
            ts_record r;
            ts_error e2;
            snprintf(path, sizeof path, "%s/%s", records, f[i].name);
            if (ts_record_load(&r, path, &e2) != TS_OK)
                continue;                    /* not a record: the report names it */
            rc = ts_flag_index_add_record(x, &r, NULL, err);
            ts_record_free(&r);
            read++;
            since = f[i].mtime;
        }
        if (i == n)
            since = 0;
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        free(f[i].name);
    free(f);
    x->since = since;
    if (nread)
        *nread = read;
    return rc;
}
