/* toposcope CLI — the node names Slurm knows, for the topology files the report writes
 * (tools/slurm_nodes.c). */
#ifndef TOPOSCOPE_SLURM_NODES_H
#define TOPOSCOPE_SLURM_NODES_H

#include <stddef.h>

#define SLURM_NODES_TIMEOUT_S 10

/* A sorted set of node names. */
typedef struct slurm_nodes {
    char **names;
    size_t n, cap;
} slurm_nodes;

enum { SLURM_NODES_OK = 0, SLURM_NODES_ABSENT = -1, SLURM_NODES_FAILED = -2 };

/* The NodeName= of every line `SCONTROL show nodes -o` prints, scontrol killed after timeout_s
 * seconds. ABSENT when scontrol cannot be run (not on PATH, not executable), FAILED when it
 * exits non-zero, times out, or lists no node; why (max bytes) says which. */
int slurm_nodes_from_scontrol(const char *scontrol, int timeout_s, slurm_nodes *s, char *why, size_t max);
/* The hosts of a Slurm hostlist; -1 with why when it does not expand. */
int slurm_nodes_from_hostlist(const char *expr, slurm_nodes *s, char *why, size_t max);
/* 1 when name is in s (a ts_fabric_keep_fn). */
int slurm_nodes_has(const char *name, void *s);
void slurm_nodes_free(slurm_nodes *s);

#endif
