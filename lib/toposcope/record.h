/* toposcope — the per-job link record the epilog writes and `toposcope report` reads.
 *
 *   toposcope_record: 1
 *   job: "4242"
 *   user: "alice"
 *   uid: 1000
 *   time: 1763700000            # seconds since the epoch, when the record was made
 *   status: measured            # the prolog's status: measured | partial | fallback
 *   prolog_s: 1.234             # optional: the prolog's leader, start to results sent
 *   nodes: "node[1-8]"
 *   tree: {switches: 3, depth: 2, leaf_groups: ["node[1-4]", "node[5-8]"]}
 *   links:
 *     - {link: "node1", kind: access, est_us: 200.1, lo_us: 199.8, hi_us: 200.4, samples: 96}
 *   anomalies:
 *     - {link: "node3", kind: access, reason: slow, expected_us: 200.0, observed_us: 401.0,
 *        excess_pct: 100.5, excess_us: 201.0, score: 40.2}
 *     - {link: "leaf2", kind: uplink, reason: loss, expected_us: 399.0, observed_us: 401.0,
 *        excess_pct: 0.5, excess_us: 2.0, loss_pct: 41.0, score: 535.8}
 *
 * Links are named as in toposcope/anomaly.h (node, admin switch or node set). The reader takes
 * untrusted input: bounded, no recursion, and every refusal names FILE:LINE:COLUMN. It streams:
 * beyond the record it fills, it holds one value of the file at a time (a list entry, or 'tree'),
 * not the whole file as a YAML tree. */
#ifndef TOPOSCOPE_RECORD_H
#define TOPOSCOPE_RECORD_H

#include <stdint.h>
#include <stdio.h>
#include "toposcope/anomaly.h"
#include "toposcope/error.h"

#define TS_RECORD_VERSION 1
#define TS_RECORD_MAX_BYTES (16u << 20)
#define TS_RECORD_MAX_LINKS (1 << 18)
#define TS_RECORD_MAX_GROUPS 65536
#define TS_RECORD_MAX_GROUP_HOSTS (1 << 18)   /* nodes in all leaf groups together */
#define TS_RECORD_TEXT_MAX 256

typedef struct ts_record {
    char job[TS_RECORD_TEXT_MAX];
    char user[TS_RECORD_TEXT_MAX];
    long uid;                        /* -1 unknown */
    int64_t time;
    char status[32];
    double prolog_s;                 /* NAN: unknown (not written) */
    char *nodes;                     /* hostlist, malloc'd */
    int switches, depth;
    int ngroups;
    char **leaf_groups;              /* hostlists, malloc'd */
    ts_link_obs_set links;
    ts_anomaly_list anomalies;
} ts_record;

void ts_record_init(ts_record *r);
void ts_record_free(ts_record *r);
/* Leaf groups and counts of a measured tree into r (nodes of each switch that has nodes). */
int ts_record_set_tree(ts_record *r, const ts_fabric *tree, ts_error *err);
int ts_record_write(const ts_record *r, FILE *out);
/* r is initialised here and left empty on error. */
int ts_record_parse(ts_record *r, const char *text, size_t len, const char *source, ts_error *err);
int ts_record_load(ts_record *r, const char *path, ts_error *err);

#endif
