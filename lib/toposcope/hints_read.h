/* toposcope — hints.yaml read back, and the TOPOSCOPE_* environment of one of its members.
 *
 * The readers of hints.yaml are every rank of an MPI job started by mpirun (through the hints
 * helper library, hints/) and, later, the SPANK plugin per task; a file of 65 536 ranks is ten
 * megabytes. So the reader streams: libyaml events for the outer structure, one entry at a time
 * through the bounded ydoc tree for its schema check, and it can keep just one member (a rank,
 * or a node of measure-only hints) and stop reading once that member is found. Memory is one
 * entry plus what is kept.
 *
 * Schema (version 2, as ts_emit_hints_yaml writes it; version 1 files, without a level's
 * logp.reason, read the same): top-level keys version (required, 1 or 2),
 * policy, kind, nranks, nnodes, cpus_per_rank, levels (required, before the members), and
 * exactly one of ranks or nodes. A level: {name, depth, groups, logp: {L_us, o_s_us, o_r_us,
 * g_us, pairs, source, reason}}, names of lowercase letters, digits and '_' (they become environment
 * variable names), depth equal to its position. A rank: {rank, node, slot, cpus, group, leader},
 * ranks in order from 0; a node: {node, group, leader}. group and leader have one entry per
 * level. Consistency checked while streaming: group ids are dense and numbered in the order of
 * their first member, the first member of a group is its leader and no other member is, and a
 * group at a level lies inside one group of the level above. Every message names
 * FILE:LINE:COLUMN. */
#ifndef TOPOSCOPE_HINTS_READ_H
#define TOPOSCOPE_HINTS_READ_H

#include <stdio.h>
#include "toposcope/error.h"
#include "toposcope/groups.h"
#include "toposcope/policy.h"

#define TS_HINTS_VERSION 2   /* 2: logp.reason; a reader of 1 refuses it by its version */
#define TS_HINTS_NODE_MAX 256        /* node names (host names are at most 255 bytes) */
#define TS_HINTS_MAX_BYTES (1UL << 30)
#define TS_HINTS_REASON_MAX 256

typedef struct ts_hints_level {
    char name[TS_LEVEL_NAME_MAX];
    int groups;
    double L_us, o_s_us, o_r_us, g_us;   /* NAN where the file says null */
    int pairs;
    char source[8];                      /* "tree", "model", "none" or "" */
    char reason[TS_HINTS_REASON_MAX];    /* why there is no estimate; "" when none is given */
} ts_hints_level;

typedef struct ts_hints_member {
    int index;                           /* the rank, or the node's position in 'nodes' */
    size_t node, slot, cpus;             /* offsets into ts_hints.text; slot, cpus "" for nodes */
} ts_hints_member;

typedef struct ts_hints {
    int version;
    char policy[TS_POLICY_NAME_MAX];
    char kind[16];
    int nranks, nnodes, cpus_per_rank;   /* -1 where the file leaves them out */
    int nlevels;
    ts_hints_level level[TS_LEVELS_MAX];
    int members_are_nodes;
    int nmembers;                        /* kept: all, or the one selected */
    ts_hints_member *member;
    int *group;                          /* nmembers x nlevels */
    unsigned char *leader;               /* nmembers x nlevels */
    char *text;                          /* the members' strings, NUL-separated */
    size_t text_len, text_cap;
} ts_hints;

/* Which member to keep: rank (files with ranks) or node (files with nodes; by name). With a
 * selection the reader stops after that member, so the rest of the file is not checked; a file
 * without it is refused ("rank 17 is not in FILE (16 ranks)"). */
typedef struct ts_hints_select {
    int rank;                            /* -1: none */
    const char *node;                    /* NULL: none */
} ts_hints_select;

/* sel NULL: keep every member. src names the input in messages. On failure *h is empty. */
int ts_hints_parse(ts_hints *h, const char *text, size_t len, const char *src,
                   const ts_hints_select *sel, ts_error *err);
int ts_hints_parse_file(ts_hints *h, FILE *in, const char *src, const ts_hints_select *sel,
                        ts_error *err);
/* Opens path; a missing file is TS_EINPUT ("PATH: No such file or directory"). */
int ts_hints_load(ts_hints *h, const char *path, const ts_hints_select *sel, ts_error *err);
void ts_hints_free(ts_hints *h);
/* A deep copy of src into dst (freed with ts_hints_free). */
int ts_hints_copy(ts_hints *dst, const ts_hints *src, ts_error *err);

/* ts_hints_load with a selection, kept for the process: every rank of an mpirun job asks for
 * its own entry once per level and per call of the hints helper, and reading up to rank 65 535
 * of a 65 536-rank file takes the better part of a second. The first lookup reads the file;
 * a later one for the same path and selection, while the file is the same (device, inode,
 * size, modification time), returns a copy of what was read, or the same refusal (bad input
 * only: a missing file, memory or I/O trouble are tried again). One entry, the last lookup;
 * safe to call from several threads. *h is the caller's (ts_hints_free). */
int ts_hints_lookup(ts_hints *h, const char *path, const ts_hints_select *sel, ts_error *err);
/* How many times ts_hints_lookup has read a file in this process (for tests and benchmarks). */
unsigned long ts_hints_lookup_reads(void);

/* Level index by name, or -1; "job,leaf,node" into buf. */
int ts_hints_level_index(const ts_hints *h, const char *name);
void ts_hints_level_list(const ts_hints *h, char *buf, size_t max);
const char *ts_hints_node(const ts_hints *h, int m);

/* Whether node (a Slurm node name from the hints) is the host this process runs on: equal to
 * $SLURMD_NODENAME where that is set (Slurm's name for the node, in every task of a job), else
 * to the host name up to its first dot. host gets the name compared, for messages. */
int ts_hints_on_this_host(const char *node, char *host, size_t max);

/* ---- the environment of one member ----
 * What a task of the job sees (hints.env writes it for one rank; `toposcope hints --exec` and
 * the SPANK plugin set it per task): TOPOSCOPE_LEVELS=job,leaf,..., TOPOSCOPE_RANK (or
 * TOPOSCOPE_NODE_INDEX for a node member), TOPOSCOPE_NODE, TOPOSCOPE_CPUS (ranks only), and per
 * level TOPOSCOPE_GROUP_<LEVEL> and TOPOSCOPE_LEADER_<LEVEL> (0 or 1), LEVEL in upper case. */
typedef struct ts_hints_env {
    int is_node;                         /* a node of measure-only hints */
    int index;                           /* rank or node index */
    const char *node, *cpus;             /* node NULL: no member, only the levels; cpus NULL
                                            for nodes */
    int nlevels;
    const char *level[TS_LEVELS_MAX];
    const int *group;                    /* nlevels */
    const unsigned char *leader;         /* nlevels */
} ts_hints_env;

typedef void (*ts_env_setter)(void *ctx, const char *key, const char *value);

/* Member m of h as an environment. */
void ts_hints_member_env(const ts_hints *h, int m, ts_hints_env *out);
/* Calls set(ctx, KEY, VALUE) for each variable, in the order above. */
void ts_hints_env_each(const ts_hints_env *e, ts_env_setter set, void *ctx);
/* "TOPOSCOPE_<WHAT>_<LEVEL>" (what: "GROUP" or "LEADER") into out; -1 when it does not fit. */
int ts_hints_env_key(char *out, size_t max, const char *what, const char *level);

#endif
