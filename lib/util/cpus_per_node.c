/* toposcope — SLURM_JOB_CPUS_PER_NODE ("2(x3),1") into one count per node (cpus_per_node.h). */
#include <errno.h>
#include <stdlib.h>
#include "toposcope/cpus_per_node.h"

int ts_cpus_per_node_parse(const char *text, int n, int *counts, ts_error *err)
{
    const char *p = text;
    int filled = 0;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 1 || v > TS_CPUS_PER_NODE_MAX || *p == '-' || *p == '+')
            return ts_fail(err, TS_EINPUT, "SLURM_JOB_CPUS_PER_NODE '%s', column %d: wanted a CPU "
                           "count of 1..%d", text, (int)(p - text) + 1, TS_CPUS_PER_NODE_MAX);
        long rep = 1;
        p = end;
        if (p[0] == '(' && p[1] == 'x') {
            const char *q = p + 2;
            errno = 0;
            rep = strtol(q, &end, 10);
            if (end == q || errno || rep < 1 || *q == '-' || *q == '+' || *end != ')')
                return ts_fail(err, TS_EINPUT, "SLURM_JOB_CPUS_PER_NODE '%s', column %d: wanted "
                               "'(xN)' with N >= 1", text, (int)(p - text) + 1);
            p = end + 1;
        }
        if (rep > n - filled)
            return ts_fail(err, TS_EINPUT, "SLURM_JOB_CPUS_PER_NODE '%s' names more than the "
                           "job's %d nodes", text, n);
        for (long k = 0; k < rep; k++)
            counts[filled++] = (int)v;
        if (*p == ',')
            p++;
        else if (*p)
            return ts_fail(err, TS_EINPUT, "SLURM_JOB_CPUS_PER_NODE '%s', column %d: wanted ',' "
                           "or the end", text, (int)(p - text) + 1);
    }
    if (filled != n)
        return ts_fail(err, TS_EINPUT, "SLURM_JOB_CPUS_PER_NODE '%s' names %d nodes, the job has %d",
                       text, filled, n);
    return TS_OK;
}
