/* toposcope hints for MPI programs: the calling rank's groups from its environment or from
 * hints.yaml, and communicators split by them. See toposcope/hints.h. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "toposcope/hints.h"
#include "toposcope/hints_read.h"

/* Per thread, so two threads calling into the helper never read each other's message. */
static _Thread_local char last_error[TOPOSCOPE_HINTS_ERROR_MAX];

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

const char *toposcope_error_message(void)
{
    return last_error;
}

/* The calling process's groups at every level, wherever they came from. */
typedef struct lookup {
    int nlevels;
    char level[TS_LEVELS_MAX][TS_LEVEL_NAME_MAX];
    int group[TS_LEVELS_MAX];
    int leader[TS_LEVELS_MAX];
    char origin[PATH_MAX];
} lookup;

enum { NOT_HERE = 1 };   /* from_env: the environment does not describe this process */

static int whole_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* The name hints.yaml uses for this host: Slurm's, else the host name up to its first dot. */
static void this_node(char *out, size_t max)
{
    const char *slurm = getenv("SLURMD_NODENAME");
    if (slurm && *slurm) {
        snprintf(out, max, "%s", slurm);
        return;
    }
    if (gethostname(out, max) != 0)
        out[0] = '\0';
    out[max - 1] = '\0';
    out[strcspn(out, ".")] = '\0';
}

static int parse_levels(lookup *lk, const char *list)
{
    const char *p = list;
    lk->nlevels = 0;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= TS_LEVEL_NAME_MAX || lk->nlevels == TS_LEVELS_MAX)
            return fail(MPI_ERR_OTHER, "TOPOSCOPE_LEVELS='%.200s' is not a list of level names", list);
        memcpy(lk->level[lk->nlevels], p, n);
        lk->level[lk->nlevels++][n] = '\0';
        p += n + (p[n] == ',');
    }
    if (lk->nlevels == 0)
        return fail(MPI_ERR_OTHER, "TOPOSCOPE_LEVELS is empty");
    return MPI_SUCCESS;
}

/* The environment a task of an srun step gets (SPANK plugin, `toposcope hints --exec`). It is
 * used only when it names this rank (or, for measure-only hints, this node) and this host:
 * a batch script that sourced hints.env hands rank 0's groups to every rank. */
static int from_env(lookup *lk, int rank, char *why, size_t whymax)
{
    const char *levels = getenv("TOPOSCOPE_LEVELS"), *node = getenv("TOPOSCOPE_NODE");
    const char *rank_s = getenv("TOPOSCOPE_RANK"), *index_s = getenv("TOPOSCOPE_NODE_INDEX");
    char host[2 * TS_HINTS_NODE_MAX + 32];
    long v;
    if (!levels) {
        snprintf(why, whymax, "TOPOSCOPE_LEVELS is not set");
        return NOT_HERE;
    }
    if (rank_s) {
        if (whole_int(rank_s, 0, INT_MAX, &v) != 0 || v != rank) {
            snprintf(why, whymax, "the environment describes rank %.20s, this is rank %d", rank_s, rank);
            return NOT_HERE;
        }
    } else if (!index_s) {
        snprintf(why, whymax, "TOPOSCOPE_RANK is not set");
        return NOT_HERE;
    }
    if (!node || !ts_hints_on_this_host(node, host, sizeof host)) {
        snprintf(why, whymax, "the environment describes host %.100s, this is %.200s",
                 node ? node : "(none)", host);
        return NOT_HERE;
    }
    int rc = parse_levels(lk, levels);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int l = 0; l < lk->nlevels; l++) {
        char key[64];
        const char *g, *ld;
        if (ts_hints_env_key(key, sizeof key, "GROUP", lk->level[l]) != 0)
            return fail(MPI_ERR_OTHER, "level name '%s' is too long", lk->level[l]);
        if (whole_int(g = getenv(key), 0, INT_MAX, &v) != 0)
            return fail(MPI_ERR_OTHER, "%s is %s%.40s%s: TOPOSCOPE_LEVELS lists '%s'", key,
                        g ? "'" : "not set", g ? g : "", g ? "', not a group id" : "", lk->level[l]);
        lk->group[l] = (int)v;
        ts_hints_env_key(key, sizeof key, "LEADER", lk->level[l]);
        if (whole_int(ld = getenv(key), 0, 1, &v) != 0)
            return fail(MPI_ERR_OTHER, "%s is %s%.40s%s", key, ld ? "'" : "not set", ld ? ld : "",
                        ld ? "', not 0 or 1" : "");
        lk->leader[l] = (int)v;
    }
    snprintf(lk->origin, sizeof lk->origin, "environment");
    return MPI_SUCCESS;
}

/* hints.yaml at $TOPOSCOPE_HINTS (mpirun jobs): this rank's entry, on this host, in a job of
 * this size. */
static int from_file(lookup *lk, int rank, int size, const char *why_not_env)
{
    const char *path = getenv("TOPOSCOPE_HINTS");
    if (!path || !*path)
        return fail(MPI_ERR_OTHER, "no hints for rank %d: %s, and TOPOSCOPE_HINTS (the hints.yaml "
                    "of toposcope place, for mpirun jobs) is not set", rank, why_not_env);
    FILE *in = fopen(path, "rb");
    if (!in)
        return fail(errno == ENOENT ? MPI_ERR_NO_SUCH_FILE : MPI_ERR_IO,
                    "%.300s (TOPOSCOPE_HINTS): %s", path, strerror(errno));
    fclose(in);
    char node[TS_HINTS_NODE_MAX], host[2 * TS_HINTS_NODE_MAX + 32];
    this_node(node, sizeof node);
    ts_hints_select sel = { rank, node };
    ts_hints h;
    ts_error err;
    /* every call of the helper comes here: the file is read once per process (ts_hints_lookup) */
    int rc = ts_hints_lookup(&h, path, &sel, &err);
    if (rc != TS_OK)
        return fail(rc == TS_ENOMEM ? MPI_ERR_NO_MEM : MPI_ERR_OTHER, "%s", err.text);
    if (!h.members_are_nodes && h.nranks >= 0 && h.nranks != size)
        rc = fail(MPI_ERR_OTHER, "%.300s describes %d ranks but MPI_COMM_WORLD has %d: the job was "
                  "not started for these hints", path, h.nranks, size);
    else if (!ts_hints_on_this_host(ts_hints_node(&h, 0), host, sizeof host))
        rc = fail(MPI_ERR_OTHER, "%.300s puts rank %d on %.100s, but it runs on %.200s: start "
                  "mpirun with the rankfile written next to it", path, rank, ts_hints_node(&h, 0), host);
    if (rc == MPI_SUCCESS) {
        lk->nlevels = h.nlevels;
        for (int l = 0; l < h.nlevels; l++) {
            memcpy(lk->level[l], h.level[l].name, TS_LEVEL_NAME_MAX);
            lk->group[l] = h.group[l];
            lk->leader[l] = h.leader[l];
        }
        snprintf(lk->origin, sizeof lk->origin, "%s", path);
    }
    ts_hints_free(&h);
    return rc;
}

static int find(lookup *lk)
{
    int init = 0, fin = 0, rank, size;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin)
        return fail(MPI_ERR_OTHER, "MPI is not initialized (call MPI_Init first) or already finalized");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char why[600];
    int rc = from_env(lk, rank, why, sizeof why);
    return rc == NOT_HERE ? from_file(lk, rank, size, why) : rc;
}

static void level_list(const lookup *lk, char *out, size_t max)
{
    size_t used = 0;
    out[0] = '\0';
    for (int l = 0; l < lk->nlevels && used < max; l++) {
        int w = snprintf(out + used, max - used, "%s%s", l ? "," : "", lk->level[l]);
        used += w > 0 ? (size_t)w : 0;
    }
}

int toposcope_group(const char *level, int *group, int *leader)
{
    if (!level || !group)
        return fail(MPI_ERR_ARG, "toposcope_group: level and group must not be NULL");
    lookup lk;
    int rc = find(&lk);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int l = 0; l < lk.nlevels; l++)
        if (!strcmp(lk.level[l], level)) {
            *group = lk.group[l];
            if (leader)
                *leader = lk.leader[l];
            return MPI_SUCCESS;
        }
    char list[TS_LEVELS_MAX * TS_LEVEL_NAME_MAX];
    level_list(&lk, list, sizeof list);
    return fail(MPI_ERR_ARG, "no level '%.40s' in the hints (%.200s); the levels are %s", level,
                lk.origin, list);
}

int toposcope_comm_split(MPI_Comm comm, const char *level, MPI_Comm *out)
{
    if (!out)
        return fail(MPI_ERR_ARG, "toposcope_comm_split: out must not be NULL");
    *out = MPI_COMM_NULL;
    int group = 0, me, first_bad;
    int rc = toposcope_group(level, &group, NULL);
    int rc_mpi = MPI_Comm_rank(comm, &me);
    if (rc_mpi != MPI_SUCCESS)
        return fail(rc_mpi, "toposcope_comm_split: MPI_Comm_rank failed on the communicator");
    /* Agree first: a rank without a group must not leave the others waiting in MPI_Comm_split. */
    int bad = rc == MPI_SUCCESS ? INT_MAX : me;
    rc_mpi = MPI_Allreduce(&bad, &first_bad, 1, MPI_INT, MPI_MIN, comm);
    if (rc_mpi != MPI_SUCCESS)
        return fail(rc_mpi, "toposcope_comm_split: MPI_Allreduce failed");
    if (rc != MPI_SUCCESS)
        return rc;
    if (first_bad != INT_MAX)
        return fail(MPI_ERR_OTHER, "rank %d of the communicator has no group at level '%.40s' "
                    "(its own error says why)", first_bad, level);
    rc_mpi = MPI_Comm_split(comm, group, me, out);
    if (rc_mpi != MPI_SUCCESS)
        return fail(rc_mpi, "toposcope_comm_split: MPI_Comm_split failed");
    return MPI_SUCCESS;
}

int toposcope_levels(char *names, int len, int *count)
{
    lookup lk;
    int rc = find(&lk);
    if (rc != MPI_SUCCESS)
        return rc;
    if (names && len > 0)
        level_list(&lk, names, (size_t)len);
    if (count)
        *count = lk.nlevels;
    return MPI_SUCCESS;
}

int toposcope_hints_origin(char *origin, int len)
{
    if (!origin || len <= 0)
        return fail(MPI_ERR_ARG, "toposcope_hints_origin: no buffer");
    lookup lk;
    int rc = find(&lk);
    if (rc == MPI_SUCCESS)
        snprintf(origin, (size_t)len, "%s", lk.origin);
    return rc;
}
