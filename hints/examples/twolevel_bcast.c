/* A two-level broadcast over toposcope's groups (Dichev's thesis §6.1, MPICH-G2 style): the root
 * broadcasts among the leaders of the groups at one level first, then every leader within its
 * own group, the groups in parallel. Traffic between groups (across switches) happens once per
 * group instead of once per rank.
 *
 *   mpirun --rankfile DIR/rankfile -x TOPOSCOPE_HINTS=DIR/hints.yaml twolevel_bcast [LEVEL [VALUE]]
 *   srun --mpi=pmix toposcope hints --exec twolevel_bcast [LEVEL [VALUE]]
 *
 * LEVEL defaults to leaf (the leaf switch), VALUE to 4242. Before the broadcast every rank prints,
 * for every level, its group, whether it leads it and the size of its communicator there, one
 * line each, so a test can hold them against hints.yaml:
 *   rank=R host=H level=L group=G leader=0|1 size=S
 * then "rank=R origin=environment|PATH", "rank=R host=H cpus=LIST" (the CPUs it may run on, to
 * hold against the cpus hints.yaml gives it) and, after the broadcast, "rank=R bcast=V ok|WRONG".
 * Rank 0 ends with a summary. Exit status 0 when every rank got VALUE, 1 otherwise, 2 when the
 * hints are missing or wrong (each rank prints why).
 *
 * With BYTES (twolevel_bcast LEVEL VALUE BYTES) it then times a broadcast of BYTES both ways,
 * two-level and MPI_Bcast over all ranks, each from a barrier to a barrier, median of 5:
 *   twolevel_bcast: BYTES bytes: two-level X ms, MPI_Bcast Y ms (median of 5) */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include "toposcope/hints.h"

/* The CPUs this process may run on as a list ("0-1,4"), the form hints.yaml uses. */
static void cpu_list(char *out, size_t max)
{
    cpu_set_t set;
    size_t used = 0;
    out[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        snprintf(out, max, "?");
        return;
    }
    for (int c = 0; c < CPU_SETSIZE && used < max; c++) {
        if (!CPU_ISSET(c, &set) || (c > 0 && CPU_ISSET(c - 1, &set)))
            continue;
        int last = c;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
            last++;
        int w = last > c ? snprintf(out + used, max - used, "%s%d-%d", used ? "," : "", c, last)
                         : snprintf(out + used, max - used, "%s%d", used ? "," : "", c);
        used += w > 0 ? (size_t)w : 0;
    }
}

static int report(int rank, const char *what, int rc)
{
    if (rc != MPI_SUCCESS)
        fprintf(stderr, "rank %d: %s: %s\n", rank, what, toposcope_error_message());
    return rc;
}

/* Every level: group, leadership and communicator size. The leader must be rank 0 of its
 * group's communicator (the split keeps world order and the leader is the lowest rank). */
static int show_levels(int rank, const char *host)
{
    char levels[1024];
    int n, rc = report(rank, "toposcope_levels", toposcope_levels(levels, sizeof levels, &n));
    if (rc != MPI_SUCCESS)
        return rc;
    for (char *level = strtok(levels, ","); level; level = strtok(NULL, ",")) {
        int group, leader, size, me;
        MPI_Comm c;
        if ((rc = report(rank, level, toposcope_group(level, &group, &leader))) != MPI_SUCCESS ||
            (rc = report(rank, level, toposcope_comm_split(MPI_COMM_WORLD, level, &c))) != MPI_SUCCESS)
            return rc;
        MPI_Comm_size(c, &size);
        MPI_Comm_rank(c, &me);
        printf("rank=%d host=%s level=%s group=%d leader=%d size=%d\n", rank, host, level, group,
               leader, size);
        if (leader != (me == 0)) {
            fprintf(stderr, "rank %d: leader flag %d at %s but rank %d in its group\n", rank,
                    leader, level, me);
            rc = MPI_ERR_OTHER;
        }
        MPI_Comm_free(&c);
    }
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Milliseconds of one broadcast of buf, barrier to barrier: two-level when group is given
 * (the leaders first, then every group), else MPI_Bcast over MPI_COMM_WORLD. */
static double timed_bcast(char *buf, int bytes, MPI_Comm leaders, MPI_Comm group)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (group == MPI_COMM_NULL) {
        MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    } else {
        if (leaders != MPI_COMM_NULL)
            MPI_Bcast(buf, bytes, MPI_BYTE, 0, leaders);
        MPI_Bcast(buf, bytes, MPI_BYTE, 0, group);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return (MPI_Wtime() - t0) * 1e3;
}

static void time_both(int rank, int bytes, MPI_Comm leaders, MPI_Comm group)
{
    enum { REPS = 5 };
    char *buf = calloc((size_t)bytes, 1);
    double two[REPS], flat[REPS];
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < REPS; i++) {   /* interleaved, so a drift in load favours neither */
        two[i] = timed_bcast(buf, bytes, leaders, group);
        flat[i] = timed_bcast(buf, bytes, MPI_COMM_NULL, MPI_COMM_NULL);
    }
    qsort(two, REPS, sizeof *two, cmp_double);
    qsort(flat, REPS, sizeof *flat, cmp_double);
    if (rank == 0)
        printf("twolevel_bcast: %d bytes: two-level %.1f ms, MPI_Bcast %.1f ms (median of %d)\n",
               bytes, two[REPS / 2], flat[REPS / 2], REPS);
    free(buf);
}

int main(int argc, char **argv)
{
    const char *level = argc > 1 ? argv[1] : "leaf";
    long want = argc > 2 ? strtol(argv[2], NULL, 10) : 4242;
    long bytes = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
    if (bytes < 0 || bytes > (1L << 30)) {
        fprintf(stderr, "twolevel_bcast: BYTES must be 0 .. 2^30\n");
        return 2;
    }
    int rank, nranks;
    char host[256], origin[4096];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "?");
    host[sizeof host - 1] = '\0';

    int rc = show_levels(rank, host);
    if (rc == MPI_SUCCESS)
        rc = report(rank, "toposcope_hints_origin", toposcope_hints_origin(origin, sizeof origin));
    if (rc == MPI_SUCCESS)
        printf("rank=%d origin=%s\n", rank, origin);
    char cpus[1024];
    cpu_list(cpus, sizeof cpus);
    printf("rank=%d host=%s cpus=%s\n", rank, host, cpus);
    MPI_Comm group = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
    int gid = 0, leader = 0;
    if (rc == MPI_SUCCESS)
        rc = report(rank, level, toposcope_group(level, &gid, &leader));
    /* collective: every rank gets here, also one whose lookup failed, so none waits forever */
    int rc_split = report(rank, level, toposcope_comm_split(MPI_COMM_WORLD, level, &group));
    if (rc != MPI_SUCCESS || rc_split != MPI_SUCCESS) {
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_split(MPI_COMM_WORLD, leader ? 0 : MPI_UNDEFINED, rank, &leaders);

    /* rank 0 leads its group at every level, so it is rank 0 among the leaders */
    long value = rank == 0 ? want : -1;
    double t0 = MPI_Wtime();
    if (leaders != MPI_COMM_NULL)
        MPI_Bcast(&value, 1, MPI_LONG, 0, leaders);
    MPI_Bcast(&value, 1, MPI_LONG, 0, group);
    double us = (MPI_Wtime() - t0) * 1e6;
    printf("rank=%d bcast=%ld %s\n", rank, value, value == want ? "ok" : "WRONG");
    fflush(stdout);

    int wrong = value != want, nwrong = 0, ngroups = 0;
    MPI_Allreduce(&wrong, &nwrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&leader, &ngroups, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("twolevel_bcast: level %s, %d groups, %d of %d ranks got %ld (%.0f us at rank 0)\n",
               level, ngroups, nranks - nwrong, nranks, want, us);
    if (bytes > 0)
        time_both(rank, (int)bytes, leaders, group);
    if (leaders != MPI_COMM_NULL)
        MPI_Comm_free(&leaders);
    MPI_Comm_free(&group);
    MPI_Finalize();
    return nwrong ? 1 : 0;
}
