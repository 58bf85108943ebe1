/* toposcope — Slurm's CPUs per node of a job (lib/util/cpus_per_node.c). */
#ifndef TOPOSCOPE_CPUS_PER_NODE_H
#define TOPOSCOPE_CPUS_PER_NODE_H

#include "toposcope/error.h"

/* Slurm's CPUs per node of a job (SLURM_JOB_CPUS_PER_NODE), "2(x3),1", into counts[0..n) for
 * the job's n nodes. TS_EINPUT names the column when the text does not say exactly n counts of
 * 1..TS_CPUS_PER_NODE_MAX. */
#define TS_CPUS_PER_NODE_MAX 65536
int ts_cpus_per_node_parse(const char *text, int n, int *counts, ts_error *err);

#endif
