/* toposcope — the flag index kept beside the records: per node, the recent jobs whose records
 * flagged its access link, so the epilog's drain check reads one small file instead of every
 * record (toposcope-epilog(8), FLAG INDEX).
 *
 * Format: text, one item a line, '#' starts a comment line; the first other line names it.
 *
 *   toposcope_flags 1
 *   since 0                  # every record written after this time (epoch s) is in; 0: all
 *   swept 1763700000         # when an epilog last removed stale temporary files
 *   flag n0033 1763700000 4242 slow        # NODE TIME JOB slow|loss|unreachable
 *
 * NODE and JOB are tokens: 1 to 255 printable ASCII characters without spaces. One entry per
 * node and job (a requeued job counts once, at its newest time), sorted by node and time; at
 * most TS_FLAGS_PER_NODE entries per node and TS_FLAGS_MAX_ENTRIES in all, none older than
 * TS_FLAGS_KEEP_S. The reader takes untrusted input: bounded, and every refusal names
 * FILE:LINE.
 *
 * On disk: RECORDS/.index/flags.G, G = 1, 2, ...; the highest G is the index. A writer loads it,
 * adds its entries and publishes G + 1 with link(2), which fails when another writer got there
 * first: then it loads that one and tries again. Epilogs on many nodes sharing the records
 * directory thus lose no entry and take no lock; older generations are removed by the winner.
 * An index that is missing or does not parse is rebuilt from the records. */
#ifndef TOPOSCOPE_FLAGINDEX_H
#define TOPOSCOPE_FLAGINDEX_H

#include <stdint.h>
#include <stdio.h>
#include "toposcope/anomaly.h"
#include "toposcope/error.h"
#include "toposcope/record.h"

#define TS_FLAGS_VERSION 1
#define TS_FLAGS_DIR ".index"                 /* in the records directory */
#define TS_FLAGS_MAX_BYTES (32u << 20)
#define TS_FLAGS_MAX_LINE 1024
#define TS_FLAGS_TOKEN_MAX 256               /* bytes of a node or job, NUL included */
#define TS_FLAGS_MAX_ENTRIES (1 << 18)
#define TS_FLAGS_PER_NODE 1000               /* the most jobs a drain rule can ask for */
#define TS_FLAGS_KEEP_S (8761LL * 3600)      /* the longest drain window (8760 h) and an hour */
#define TS_FLAGS_SKEW_S 300                  /* clocks of the nodes sharing a records directory
                                              * may differ this much: later is the future */

typedef struct ts_flag_index ts_flag_index;

ts_flag_index *ts_flag_index_new(void);
void ts_flag_index_free(ts_flag_index *x);
/* The entries, in all; since and swept (see above). A new index has since INT64_MAX (it covers
 * no record by itself) and swept 0. */
int ts_flag_index_size(const ts_flag_index *x);
int64_t ts_flag_index_since(const ts_flag_index *x);
void ts_flag_index_set_since(ts_flag_index *x, int64_t t);
int64_t ts_flag_index_swept(const ts_flag_index *x);
void ts_flag_index_set_swept(ts_flag_index *x, int64_t t);

/* Node `node` was flagged by job `job` at time t (kind: how). TS_EINPUT for a node or job that
 * is not a token; TS_ELIMIT past TS_FLAGS_MAX_ENTRIES entries before pruning. */
int ts_flag_index_add(ts_flag_index *x, const char *node, const char *job, int64_t t,
                      ts_anomaly_kind kind, ts_error *err);
/* Every access-link anomaly of r (drains are for access links only). Anomalies whose node or
 * job is not a token are left out and counted in *skipped (may be NULL). */
int ts_flag_index_add_record(ts_flag_index *x, const ts_record *r, int *skipped, ts_error *err);
/* 1 when x holds every access-link anomaly of r at r's time or later (adding r would change
 * nothing), else 0. */
int ts_flag_index_holds_record(ts_flag_index *x, const ts_record *r);
/* src's entries into x; since becomes the earlier of the two, swept the later. */
int ts_flag_index_merge(ts_flag_index *x, const ts_flag_index *src, ts_error *err);
/* Drop entries older than now - TS_FLAGS_KEEP_S or later than now + TS_FLAGS_SKEW_S, then the
 * oldest beyond TS_FLAGS_PER_NODE per node and TS_FLAGS_MAX_ENTRIES in all. */
void ts_flag_index_prune(ts_flag_index *x, int64_t now);

/* What the index says of one node between from and to (inclusive). */
typedef struct ts_flag_count {
    int jobs;                        /* distinct jobs */
    int slow, loss, unreachable;     /* of those, by the kind of their newest flag */
    int64_t last;                    /* the newest time, 0 without */
    char last_job[TS_FLAGS_TOKEN_MAX];
} ts_flag_count;

void ts_flag_index_count(ts_flag_index *x, const char *node, int64_t from, int64_t to,
                         ts_flag_count *out);

int ts_flag_index_write(ts_flag_index *x, FILE *out);
/* x must be new (empty); on error it is left empty. */
int ts_flag_index_parse(ts_flag_index *x, const char *text, size_t len, const char *source,
                        ts_error *err);

/* ---- in the records directory ---- */

/* How an update found the index it built on. */
typedef struct ts_flag_found {
    long long generation;            /* the newest flags.G, 0 when there was none */
    int missing;                     /* no index: rebuild it */
    int corrupt;                     /* the newest did not parse (why): rebuild it */
    char why[TS_ERROR_TEXT_MAX];
} ts_flag_found;

/* Called on every attempt of an update with the newest index as loaded (an empty one when it was
 * missing or corrupt, see found): add this writer's entries to x, rebuild it, sweep. Returns
 * TS_OK, TS_FLAGS_UNCHANGED when x needs no new generation (nothing is written then), or an
 * error, which ends the update. */
#define TS_FLAGS_UNCHANGED 1
typedef int (*ts_flag_prepare_fn)(ts_flag_index *x, const ts_flag_found *found, void *arg,
                                  ts_error *err);

typedef struct ts_flag_update {
    const char *records;             /* the records directory; RECORDS/.index is made if missing */
    int64_t now;                     /* prunes at this time */
    double deadline;                 /* CLOCK_MONOTONIC seconds: no new attempt after it */
    ts_flag_prepare_fn prepare;
    void *arg;
} ts_flag_update;

/* Load the newest index, prepare it, prune it and publish it as the next generation; on a lost
 * race load the winner's and try again, until the deadline. *out (caller frees) is the index
 * published, or on TS_EEXIST (every attempt lost) or TS_ESYS (not written) the last one
 * prepared, for a caller that still wants to decide on it; NULL on other errors. */
int ts_flag_index_update(const ts_flag_update *u, ts_flag_index **out, ts_flag_found *found,
                         ts_error *err);
/* The newest index, read only: TS_OK with *out NULL when there is none. */
int ts_flag_index_load(const char *records, ts_flag_index **out, ts_error *err);
/* Fill x from the records in RECORDS themselves, newest file first, until the deadline
 * (CLOCK_MONOTONIC seconds); records whose files are older than TS_FLAGS_KEEP_S are passed over,
 * and so are files that are not records. x's since tells how far it got: 0 when every record was
 * read, else the file time of the oldest one read (the time of the call when none was).
 * *read counts the records read (may be NULL). */
int ts_flag_index_rebuild(ts_flag_index *x, const char *records, double deadline, int *read,
                          ts_error *err);
/* CLOCK_MONOTONIC in seconds, the clock of the deadlines above. */
double ts_flag_clock(void);

#endif
