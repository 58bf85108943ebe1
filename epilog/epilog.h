/* toposcope-epilog — what its two files share: main.c (options, the record) and actions.c (the
 * flag index, drains, scontrol). */
#ifndef TOPOSCOPE_EPILOG_H
#define TOPOSCOPE_EPILOG_H

#include <limits.h>
#include <stdint.h>
#include "toposcope/anomaly.h"
#include "toposcope/policy.h"
#include "toposcope/record.h"

/* Shares of the budget, from the epilog's start: a missing index is rebuilt until REBUILD,
 * the index is published until INDEX; what is left is for scontrol, each call bounded by the
 * time that remains less END_MARGIN, so the alarm at the budget never has to fire. */
#define EPILOG_SHARE_REBUILD 0.4
#define EPILOG_SHARE_INDEX 0.6
#define EPILOG_END_MARGIN_S 0.05
/* --prometheus-dir: the records are read for the textfile until this share of the budget */
#define EPILOG_SHARE_PROMETHEUS 0.9

typedef struct epilog_config {
    const char *job, *nodes, *self, *user, *uid;
    char spool[PATH_MAX];
    const char *records, *baseline, *policy, *topology, *scontrol;
    const char *prometheus_dir;   /* refresh PROMETHEUS_DIR/toposcope.prom, NULL: no */
    double budget_ms;
    double t0;                    /* ts_flag_clock() at the start */
    int admin_comment;            /* append a summary to the job's AdminComment */
    int actions;                  /* 0: --no-actions, record and syslog only */
    int log_stderr;               /* syslog lines also on stderr (LOG_PERROR) */
    int drain_per_hour;
    int64_t now;                  /* --time: the record's time (tests), else time(2) */
} epilog_config;

void fail_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The budget's end, or the end of its first `share`, on ts_flag_clock(). */
double epilog_deadline(const epilog_config *c, double share);

/* After the record r is published: its access-link flags into the flag index (rebuilt from the
 * records when missing or corrupt), then, with actions on, the AdminComment and the policy's
 * drains decided on that index. */
void epilog_after_record(const epilog_config *c, const ts_policy *pol, const ts_record *r);

#endif
