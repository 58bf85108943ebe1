/* toposcope — suspect links across many jobs' records (`toposcope report`).
 *
 * Network tomography on the records: a link gains evidence from every job that flagged it, each
 * job weighted by how many of its other links were fine (1 - the job's share of flagged links),
 * so a link that is slow in many jobs while its siblings in the same jobs are fine ranks above
 * links that only turn up in jobs where everything was slow (a loaded host, a bad run).
 * Ranking: evidence, then jobs flagged, then median excess. Memory grows with the distinct
 * link ids (a few dozen bytes and the id each, more for the flagged ones), not with records. */
#ifndef TOPOSCOPE_REPORT_H
#define TOPOSCOPE_REPORT_H

#include <stdint.h>
#include "toposcope/anomaly.h"
#include "toposcope/fabric.h"
#include "toposcope/record.h"

#define TS_REPORT_JOBS_KEPT 16       /* job ids listed per suspect link */

/* Its strings belong to the report: valid until ts_report_free. */
typedef struct ts_suspect {
    const char *id;
    int access;
    int seen;                        /* records that measured or flagged the link */
    int flagged;                     /* records that flagged it */
    int unreachable;                 /* of those, as a node that did not answer */
    double evidence;                 /* sum over flagging records of (1 - share flagged) */
    double median_excess_pct, median_excess_us;   /* over slow flags; NAN without */
    double max_score;
    int64_t first_seen, last_seen;   /* times of the flagging records */
    int njobs;
    const char *jobs[TS_REPORT_JOBS_KEPT];   /* the first njobs flagging jobs' ids */
    /* With an admin tree (ts_report_set_admin): how the records' ids name its links
     * (toposcope/anomaly.h). EXACT: id is the admin vertex's name, flags of every record that
     * named the same link, by its switch or by the job's nodes under it, added up; WITHIN: id
     * is the node set and `within` the smallest admin switch holding it. */
    int mapped;                      /* 1 when an admin tree was given */
    ts_link_match_kind match;
    const char *within;              /* WITHIN: that switch's name, else NULL */
} ts_suspect;

typedef struct ts_report ts_report;

ts_report *ts_report_new(void);
void ts_report_free(ts_report *r);
/* Name the suspects by the admin's tree (topology.conf): set before the first record; admin
 * must outlive r. The baseline keeps the records' own ids (the epilogs' names). */
int ts_report_set_admin(ts_report *r, const ts_fabric *admin, ts_error *err);
/* Add one record (its links feed the baseline too, minus the ones it flagged), in time linear
 * in its links and anomalies; the report keeps each distinct link id and job id once. */
int ts_report_add(ts_report *r, const ts_record *rec, ts_error *err);
/* The suspects, most suspect first (only links flagged at least once); valid until the next
 * call on r. */
int ts_report_suspects(ts_report *r, const ts_suspect **out, int *n, ts_error *err);
int ts_report_records(const ts_report *r);
/* A baseline from every record's unflagged links. */
int ts_report_baseline(const ts_report *r, ts_baseline *b, ts_error *err);

/* ---- a records directory ---- */

#define TS_REPORT_MAX_FILES 1000000

/* A file of the directory that is not a record (corrupt, truncated, foreign, not a regular
 * file): its path and why. */
typedef void (*ts_report_skip_fn)(const char *path, const char *why, void *arg);
/* Every record read, whatever its age (the flag index wants them all). */
typedef int (*ts_report_each_fn)(const ts_record *rec, void *arg, ts_error *err);

typedef struct ts_report_dir {
    const char *dir;
    int64_t now;
    double since_s;                  /* > 0: only records younger than this go into the report */
    double deadline;                 /* > 0: ts_flag_clock() seconds, no record is read after it */
    ts_report_skip_fn skip;          /* may be NULL */
    ts_report_each_fn each;          /* may be NULL */
    void *arg;
} ts_report_dir;

/* The records of o->dir into r, in name order (files whose names start with a dot are the
 * epilogs' own and passed over; at most TS_REPORT_MAX_FILES). *skipped counts the files that are
 * not records; *complete is 0 when the deadline or the file bound left some unread. TS_EINPUT
 * when the directory cannot be listed. */
int ts_report_add_dir(ts_report *r, const ts_report_dir *o, int *skipped, int *complete, ts_error *err);

/* What the records say beyond their links. */
#define TS_REPORT_QUANTILES 3
extern const double ts_report_quantiles[TS_REPORT_QUANTILES];   /* 0.5, 0.9, 0.99 */
typedef struct ts_report_totals {
    int records;
    int measured, partial, failed;   /* by the prolog's status; failed: fallback, missing,
                                      * unreadable or anything else */
    int prolog_n;                    /* records that carry the prolog's duration */
    double prolog_sum_s;
    double prolog_q_s[TS_REPORT_QUANTILES];   /* nearest rank; NAN without */
} ts_report_totals;

int ts_report_totals_get(const ts_report *r, ts_report_totals *t, ts_error *err);

/* ---- leaf groups against the admin's topology.conf ---- */

typedef struct ts_mismatch {
    char node[256];
    char admin_switch[256];          /* where topology.conf puts it ("" when it is not there) */
    char measured_with[256];         /* the admin switch most of its measured leaf mates are on */
    int jobs;                        /* records that saw it so */
    char last_job[TS_RECORD_TEXT_MAX];
} ts_mismatch;

/* Nodes whose measured leaf group is mostly on another admin leaf switch than topology.conf
 * says, most often seen first. */
int ts_report_mismatches(const ts_report *r, const ts_fabric *admin, ts_mismatch **out, int *n,
                         ts_error *err);
/* Leaf switches inferred from every record's leaf groups (nodes measured under one switch in
 * any job are one leaf), under one top switch per fabric (nodes that shared a job share a
 * fabric): "top" when there is one; top1, top2, ... below an implicit root when the records fall
 * into disjoint node sets, as topology.conf's parser reads parentless switches. Fabrics, leaves
 * and nodes are named and ordered by their first node in natural name order, so the same
 * records give the same tree in any order. */
int ts_report_inferred_tree(const ts_report *r, ts_fabric *out, ts_error *err);

#endif
