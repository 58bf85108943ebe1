/* toposcope — Slurm hostlist expressions, without libslurm (lib/ must not depend on Slurm).
 *
 * "cn[001-003,007],gpu[1-2]x[a]" style: a comma-separated list of hosts, each host a
 * sequence of literal text and bracket groups; a bracket group is a comma list of numbers or
 * ranges "lo-hi". Zero padding is kept: the width of "001" applies to every number of its range.
 * Several bracket groups in one host expand as a cartesian product, left group outermost.
 * Expansion is bounded (TS_HOSTLIST_MAX_HOSTS) so hostile input cannot exhaust memory. */
#ifndef TOPOSCOPE_HOSTLIST_H
#define TOPOSCOPE_HOSTLIST_H

#include <stddef.h>
#include "toposcope/error.h"

#define TS_HOSTLIST_MAX_HOSTS 1000000
#define TS_HOSTNAME_MAX 255

typedef struct ts_hostlist {
    size_t count;
    char **hosts;   /* each malloc'd, in expansion order */
} ts_hostlist;

/* Expand expr (not necessarily NUL-terminated: len bytes) into list. On error returns
 * TS_EINPUT with a message naming the column, and list is left empty. */
int ts_hostlist_expand(const char *expr, size_t len, ts_hostlist *list, ts_error *err);
void ts_hostlist_free(ts_hostlist *list);

/* Compress names back into Slurm's bracket form, e.g. {cn001,cn002,cn004} -> "cn[001-002,004]".
 * Names are grouped by prefix and digit width, in the order given. Returns a malloc'd string. */
char *ts_hostlist_compress(char *const *names, size_t count);

/* Natural order: "cn2" < "cn10"; used to give nodes the order Slurm lists them in. */
int ts_hostname_cmp(const char *a, const char *b);

#endif
