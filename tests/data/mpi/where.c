/* Where an MPI rank runs, one line per rank: "rank=R host=H cpus=A,B" (the CPUs of its affinity
 * mask, as sched_getaffinity gives them). Built with any MPI's mpicc; tests/testbed-mpich.t
 * holds the lines against the job's rankfile and hints.yaml. */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    cpu_set_t set;
    CPU_ZERO(&set);
    char cpus[4096] = "";
    size_t used = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE && used + 16 < sizeof cpus; c++)
            if (CPU_ISSET(c, &set))
                used += (size_t)snprintf(cpus + used, sizeof cpus - used, "%s%d", used ? "," : "", c);
    printf("rank=%d host=%s cpus=%s\n", rank, host, cpus[0] ? cpus : "?");
    fflush(stdout);
    /* every rank has printed before any leaves: mpiexec sees all lines */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
