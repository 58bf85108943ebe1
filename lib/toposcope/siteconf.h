/* toposcope — the site configuration, toposcope.yaml (toposcope.yaml(5), etc/toposcope.yaml).
 *
 * The SPANK plugin's settings, as one flat mapping; the same names serve as plugstack.conf
 * arguments ("budget_ms=3000"), which override the file. Every key is optional:
 *
 *   mode: opt-in            # opt-in | always | off
 *   default_policy: compact # --topo-aware without a value
 *   policy_dir: DIR         # policy NAMEs are looked up here, then /etc/toposcope/policies
 *   budget_ms: 2000         # the prolog's measurement budget (50 .. 600000)
 *   port_base: 900          # the leader's port range: port_base .. port_base + port_span - 1
 *   port_span: 100          # (privileged: no user can take or answer from them)
 *   spool: /var/spool/toposcope   # %n: the node's name
 *   records: /var/lib/toposcope/records
 *   prolog: PATH            # toposcope-prolog
 *   epilog: PATH            # toposcope-epilog (issue G); absent: the epilog only cleans up
 *   strict: false           # accepted, no effect: a failed measurement never fails the prolog
 *   level_step_ns: 1600     # the least one switch level of this fabric adds to a round trip;
 *                           # absent: 400, the least of any real fabric's (toposcope.yaml(5))
 *
 * Parsing is bounded (TS_SITECONF_MAX_BYTES) and every message names FILE:LINE:COLUMN. */
#ifndef TOPOSCOPE_SITECONF_H
#define TOPOSCOPE_SITECONF_H

#include "toposcope/error.h"
#include "toposcope/policy.h"

#define TS_SITECONF_MAX_BYTES (64 * 1024)
#define TS_SITECONF_PATH_MAX 1024
/* level_step_ns, the site's least level step (ts_probe_engine.least_level_step_us), wherever it
 * is set (toposcope.yaml, --level-step-ns): from a fraction of the fastest switch hop to an
 * emulated link of milliseconds */
#define TS_LEVEL_STEP_NS_MIN 50
#define TS_LEVEL_STEP_NS_MAX 10000000
#define TS_LEVEL_STEP_NS_RANGE_TEXT "50 to 10000000"

typedef enum ts_site_mode { TS_MODE_OPT_IN = 0, TS_MODE_ALWAYS, TS_MODE_OFF } ts_site_mode;

typedef struct ts_siteconf {
    ts_site_mode mode;
    char default_policy[TS_SITECONF_PATH_MAX];
    char policy_dir[TS_SITECONF_PATH_MAX];
    long budget_ms, port_base, port_span;
    char spool[TS_SITECONF_PATH_MAX];
    char records[TS_SITECONF_PATH_MAX];
    char prolog[TS_SITECONF_PATH_MAX];
    char epilog[TS_SITECONF_PATH_MAX];
    int strict;
    long level_step_ns;        /* 0: not set, the prolog's built-in */
} ts_siteconf;

/* Built-in defaults; dirs of the installation (prolog path, policy dir) come from the caller. */
void ts_siteconf_default(ts_siteconf *c, const char *prolog, const char *policy_dir);
/* Parse toposcope.yaml text into c (keys absent keep their value). */
int ts_siteconf_parse(ts_siteconf *c, const char *text, size_t len, const char *src, ts_error *err);
int ts_siteconf_load(ts_siteconf *c, const char *path, ts_error *err);
/* One "key=value" setting (a plugstack.conf argument). TS_EINPUT for an unknown key or a bad
 * value, with a message naming it and what is allowed. */
int ts_siteconf_set(ts_siteconf *c, const char *arg, ts_error *err);
const char *ts_site_mode_name(ts_site_mode m);

#endif
