/* toposcope-epilog — the job epilog's recorder (toposcope-epilog(8)).
 *
 * Runs on every node of a job when it ends. The job's leader (the first node of its hostlist)
 * reads what the prolog left in SPOOL/JOB (status.yaml, tree.yaml, links.yaml), compares every
 * link with the baseline, writes one record into the records directory (a temporary file,
 * fsync, then link(2) under its final name, which never replaces another record: concurrent
 * epilogs on a shared filesystem need no lock), logs one syslog line per anomaly, adds its
 * flagged access links to the flag index beside the records and applies the policy's actions
 * (actions.c). Every node then removes its own spool directory, the leader only after its
 * record is safe. Bounded by its own budget; a failure never fails the node. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include "epilog.h"
#include "toposcope/anomaly.h"
#include "toposcope/flagindex.h"
#include "toposcope/hostlist.h"
#include "toposcope/policy.h"
#include "toposcope/record.h"
#include "toposcope/report.h"
#include "toposcope/reportprom.h"
#include "toposcope/treeyaml.h"
#include "toposcope/spool.h"
#include "toposcope/textout.h"
#include "toposcope/topoconf.h"

#define DEFAULT_BUDGET_MS 5000
#define DRAIN_PER_HOUR_DEFAULT 1


static void usage(FILE *out)
{
    fprintf(out,
            "usage: toposcope-epilog [options]\n"
            "\n"
            "The job epilog's link recorder: on the job's first node, compare the prolog's per-link\n"
            "estimates (SPOOL/JOB/links.yaml) with the baseline, write one record into the records\n"
            "directory, log one syslog line per anomaly and apply the policy's actions; on every node\n"
            "remove the job's spool directory afterwards.\n"
            "\n"
            "options (Slurm's epilog environment gives the first four):\n"
            "  --job ID             the job ($SLURM_JOB_ID)\n"
            "  --nodes HOSTLIST     its nodes ($SLURM_JOB_NODELIST or $SLURM_NODELIST)\n"
            "  --self NODE          this node ($SLURMD_NODENAME, else the host name)\n"
            "  --uid UID --user NAME  the job's owner ($SLURM_JOB_UID, $SLURM_JOB_USER)\n"
            "  --spool DIR          parent of the job's spool directory, %%n = this node\n"
            "                       (default /var/spool/toposcope)\n"
            "  --records DIR        the records directory (default /var/lib/toposcope/records); its\n"
            "                       flag index, DIR/.index, is what the drain check reads\n"
            "  --baseline FILE      per-link baseline (toposcope report --update-baseline; default\n"
            "                       baseline.yaml beside the records directory, when it exists)\n"
            "  --policy NAME|FILE   anomaly thresholds and drain rule (default: the built-in defaults)\n"
            "  --topology FILE      the admin's topology.conf: uplinks are named by its switches\n"
            "  --admin-comment      append a summary of the anomalies to the job's AdminComment\n"
            "  --drain-per-hour N   at most N drains per hour from the whole records directory (default 1)\n"
            "  --no-actions         record and log only: no scontrol at all\n"
            "  --scontrol PATH      the scontrol to run (default: scontrol on PATH)\n"
            "  --budget-ms MS       hard time budget of the whole epilog (default 5000)\n"
            "  --budget-from US     the budget began at US, microseconds of CLOCK_MONOTONIC (the\n"
            "                       plugin passes the time it started this program; default: now)\n"
            "  --prometheus-dir DIR refresh DIR/toposcope.prom (node_exporter's textfile collector)\n"
            "                       with toposcope report --format prometheus over the records\n"
            "                       directory, when it can be read within the budget\n"
            "  --log-stderr         copy the syslog lines to stderr\n"
            "  --time T             the record's time in seconds since the epoch (default: now)\n"
            "  -h, --help           this text\n"
            "\n"
            "exit status: 0 done (with or without anomalies), 1 the record could not be written,\n"
            "2 bad options or input files (a bad --policy: the record is still written, with the\n"
            "default thresholds).\n");
}

void fail_msg(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "toposcope-epilog: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

double epilog_deadline(const epilog_config *c, double share)
{
    return c->t0 + share * c->budget_ms / 1000.0;
}

static void on_alarm(int sig)
{
    static const char msg[] = "toposcope-epilog: time budget exhausted, stopping (no record is half-written)\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing left to tell */
    }
    _exit(1);
}

static int parse_number(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

static int parse_options(int argc, char **argv, epilog_config *c)
{
    enum { O_JOB = 256, O_NODES, O_SELF, O_UID, O_USER, O_SPOOL, O_RECORDS, O_BASELINE, O_POLICY,
           O_TOPOLOGY, O_COMMENT, O_DRAIN_RATE, O_NO_ACTIONS, O_SCONTROL, O_BUDGET, O_LOG_STDERR, O_TIME,
           O_PROMETHEUS, O_BUDGET_FROM };
    static const struct option longopts[] = {
        {"job", required_argument, 0, O_JOB}, {"nodes", required_argument, 0, O_NODES},
        {"self", required_argument, 0, O_SELF}, {"uid", required_argument, 0, O_UID},
        {"user", required_argument, 0, O_USER}, {"spool", required_argument, 0, O_SPOOL},
        {"records", required_argument, 0, O_RECORDS}, {"baseline", required_argument, 0, O_BASELINE},
        {"policy", required_argument, 0, O_POLICY}, {"topology", required_argument, 0, O_TOPOLOGY},
        {"admin-comment", no_argument, 0, O_COMMENT}, {"drain-per-hour", required_argument, 0, O_DRAIN_RATE},
        {"no-actions", no_argument, 0, O_NO_ACTIONS}, {"scontrol", required_argument, 0, O_SCONTROL},
        {"budget-ms", required_argument, 0, O_BUDGET}, {"budget-from", required_argument, 0, O_BUDGET_FROM},
        {"log-stderr", no_argument, 0, O_LOG_STDERR},
        {"time", required_argument, 0, O_TIME}, {"prometheus-dir", required_argument, 0, O_PROMETHEUS},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    const char *spool = "/var/spool/toposcope";
    memset(c, 0, sizeof *c);
    c->job = getenv("SLURM_JOB_ID");
    c->nodes = getenv("SLURM_JOB_NODELIST");
    if (!c->nodes)
        c->nodes = getenv("SLURM_NODELIST");
    c->self = getenv("SLURMD_NODENAME");
    c->uid = getenv("SLURM_JOB_UID");
    c->user = getenv("SLURM_JOB_USER");
    c->records = "/var/lib/toposcope/records";
    c->scontrol = "scontrol";
    c->budget_ms = DEFAULT_BUDGET_MS;
    c->actions = 1;
    c->drain_per_hour = DRAIN_PER_HOUR_DEFAULT;
    c->now = -1;
    int opt;
    double x;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case O_JOB: c->job = optarg; break;
        case O_NODES: c->nodes = optarg; break;
        case O_SELF: c->self = optarg; break;
        case O_UID: c->uid = optarg; break;
        case O_USER: c->user = optarg; break;
        case O_SPOOL: spool = optarg; break;
        case O_RECORDS: c->records = optarg; break;
        case O_BASELINE: c->baseline = optarg; break;
        case O_POLICY: c->policy = optarg; break;
        case O_TOPOLOGY: c->topology = optarg; break;
        case O_COMMENT: c->admin_comment = 1; break;
        case O_NO_ACTIONS: c->actions = 0; break;
        case O_SCONTROL: c->scontrol = optarg; break;
        case O_PROMETHEUS: c->prometheus_dir = optarg; break;
        case O_LOG_STDERR: c->log_stderr = 1; break;
        case O_DRAIN_RATE:
            if (parse_number(optarg, 0, 1000000, &x) || x != floor(x)) {
                fail_msg("--drain-per-hour wants a whole number, not '%s'", optarg);
                return 2;
            }
            c->drain_per_hour = (int)x;
            break;
        case O_BUDGET:
            if (parse_number(optarg, 1, 600000, &x)) {
                fail_msg("--budget-ms wants 1 .. 600000 milliseconds, not '%s'", optarg);
                return 2;
            }
            c->budget_ms = x;
            break;
        case O_BUDGET_FROM:
            /* the plugin's clock when it started this program, so that starting it counts
             * against the budget as it does for the plugin's kill */
            if (parse_number(optarg, 0, 1e18, &x) || x / 1e6 > ts_flag_clock() + 1e-3) {
                fail_msg("--budget-from wants the time the budget began, in microseconds of "
                         "CLOCK_MONOTONIC and not in the future, not '%s'", optarg);
                return 2;
            }
            c->t0 = x / 1e6;
            break;
        case O_TIME:
            if (parse_number(optarg, 0, 1e12, &x)) {
                fail_msg("--time wants seconds since the epoch, not '%s'", optarg);
                return 2;
            }
            c->now = (int64_t)x;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fail_msg("unexpected argument '%s'", argv[optind]);
        return 2;
    }
    static char host[256];
    if (!c->self && gethostname(host, sizeof host - 1) == 0)
        c->self = host;
    /* the job id names the spool directory and the record: never ".", "..", nor a path */
    if (!ts_spool_job_ok(c->job)) {
        fail_msg("--job (or SLURM_JOB_ID) wants a job id (a digit first, then digits, '_' and '.'; "
                 "fewer than 32 bytes), not '%s'", c->job ? c->job : "");
        return 2;
    }
    if (!c->nodes || !*c->nodes) {
        fail_msg("--nodes (or SLURM_JOB_NODELIST) is required");
        return 2;
    }
    /* %n: this node's name, for spool directories on a shared filesystem */
    ts_error err = {{0}};
    if (ts_spool_parent(spool, c->self ? c->self : "", c->spool, sizeof c->spool, &err) != TS_OK) {
        fail_msg("--spool: %s", err.text);
        return 2;
    }
    if (c->now < 0)
        c->now = (int64_t)time(NULL);
    return 0;
}

/* ---- the spool ---- */

static int spool_path(const epilog_config *c, const char *name, char *out, size_t max)
{
    int n = snprintf(out, max, "%s/%s/%s", c->spool, c->job, name);
    return n >= 0 && (size_t)n < max ? 0 : -1;
}

/* status.yaml (lib/site/spool.c): the job's status and the nodes that did not answer. A missing
 * or unreadable file is part of the record ("missing", "unreadable"), not a reason to lose it. */
static void read_status(const epilog_config *c, ts_record *r, ts_status *st)
{
    char dir[PATH_MAX + 80];
    snprintf(dir, sizeof dir, "%s/%s", c->spool, c->job);
    ts_error err = {{0}};
    if (ts_status_load(st, dir, &err) != TS_OK) {
        syslog(LOG_ERR, "job=%s status.yaml unusable: %s", c->job, err.text);
        snprintf(r->status, sizeof r->status, "unreadable");
    } else {
        snprintf(r->status, sizeof r->status, "%s", st->present ? st->status : "missing");
        if (st->present && isfinite(st->leader_ms))
            r->prolog_s = st->leader_ms / 1e3;
    }
}

/* ---- the record file ---- */

/* job-JOB.yaml, then job-JOB.1.yaml, ... for a requeued job's next records. */
static int record_name(int i, void *arg, char *out, size_t max)
{
    const char *job = arg;
    if (i >= 1000)
        return -1;
    if (i == 0)
        snprintf(out, max, "job-%s.yaml", job);
    else
        snprintf(out, max, "job-%s.%d.yaml", job, i);
    return 0;
}

/* Write the record as RECORDS/job-JOB.yaml (job-JOB.N.yaml when a requeued job already has one)
 * through ts_publish_file_at: a private temporary file (.tmp-JOB-...), fsync, link(2) to the
 * final name, which never replaces another record. Returns 0 and the final name. */
static int record_publish(const epilog_config *c, const char *data, size_t len, char *final, size_t max)
{
    int dfd = open(c->records, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        fail_msg("records directory %s: %s", c->records, strerror(errno));
        return -1;
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, ".tmp-%s-", c->job);
    ts_error err;
    int rc = ts_publish_file_at(dfd, c->records, prefix, data, len, 0640, record_name, (void *)c->job, final, max,
                                &err);
    close(dfd);
    if (rc != TS_OK)
        fail_msg("cannot write a record into %s: %s", c->records, err.text);
    return rc == TS_OK ? 0 : -1;
}

/* ---- the node_exporter textfile ---- */

/* PROMETHEUS_DIR/toposcope.prom from every record of the directory, as `toposcope report
 * --format prometheus` prints it (its counters count the records, so they grow with them),
 * replaced atomically. A directory too large to read within the budget leaves the old file:
 * counters from a part of the records would go backwards. */
static void refresh_prometheus(const epilog_config *c, const ts_fabric *admin)
{
    ts_error err = {{0}};
    ts_report *rep = ts_report_new();
    ts_report_dir rd = { .dir = c->records, .now = c->now, .deadline = epilog_deadline(c, EPILOG_SHARE_PROMETHEUS) };
    char *text = NULL;
    size_t len = 0;
    int skipped = 0, complete = 0, dfd = -1, rc = rep ? TS_OK : ts_fail(&err, TS_ENOMEM, "out of memory");
    if (rc == TS_OK && admin)
        rc = ts_report_set_admin(rep, admin, &err);
    if (rc == TS_OK)
        rc = ts_report_add_dir(rep, &rd, &skipped, &complete, &err);
    if (rc == TS_OK && !complete) {
        syslog(LOG_WARNING, "job=%s %s/toposcope.prom not refreshed: the records of %s were not all read within "
               "the budget (run toposcope report --format prometheus instead)", c->job, c->prometheus_dir, c->records);
        goto out;
    }
    FILE *m = rc == TS_OK ? open_memstream(&text, &len) : NULL;
    if (rc == TS_OK && !m)
        rc = ts_fail(&err, TS_ENOMEM, "out of memory");
    if (m) {
        rc = ts_report_write_prometheus(rep, -1, skipped, m, &err);
        if ((ferror(m) | fclose(m)) && rc == TS_OK)
            rc = ts_fail(&err, TS_ENOMEM, "out of memory");
    }
    if (rc == TS_OK && (dfd = open(c->prometheus_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        rc = ts_fail(&err, TS_ESYS, "%s: %s", c->prometheus_dir, strerror(errno));
    if (rc == TS_OK)
        rc = ts_write_file_at(dfd, "toposcope.prom", text, len, 0644, &err);
    if (rc != TS_OK)
        syslog(LOG_ERR, "job=%s %s/toposcope.prom not refreshed: %s", c->job, c->prometheus_dir, err.text);
out:
    if (dfd >= 0)
        close(dfd);
    free(text);
    ts_report_free(rep);
}

/* ---- the leader's work ---- */

/* Where the link `id` is in topology.conf, for its syslog line: "" when the id is its name
 * already, else " switch=NAME" (named by the job's nodes on its other side), " within=NAME"
 * (no switch holds exactly its nodes: the smallest one holding them) or " topology=none". */
static void topology_note(const ts_link_matcher *m, const ts_fabric *admin, const char *id, char *out,
                          size_t max)
{
    ts_link_match mt = m ? ts_link_match_id(m, id) : (ts_link_match){ TS_MATCH_NONE, TS_NONE };
    if (!m || (mt.kind == TS_MATCH_EXACT && !strcmp(admin->v[mt.vertex].name, id)))
        snprintf(out, max, "%s", "");
    else if (mt.kind == TS_MATCH_EXACT)
        snprintf(out, max, " switch=%s", admin->v[mt.vertex].name);
    else if (mt.kind == TS_MATCH_WITHIN)
        snprintf(out, max, " within=%s", admin->v[mt.vertex].name);
    else
        snprintf(out, max, " topology=none");
}

/* One syslog line per anomaly of the published record `final`. */
static void log_anomalies(const epilog_config *c, const ts_record *r, const ts_fabric *admin, const char *final)
{
    ts_link_matcher *m = NULL;
    ts_error err;
    if (admin && (ts_link_matcher_new(admin, &m, &err) != TS_OK ||
                  ts_link_matcher_set_job(m, r->leaf_groups, r->ngroups, &err) != TS_OK)) {
        syslog(LOG_ERR, "job=%s links not matched to topology.conf: %s", c->job, err.text);
        ts_link_matcher_free(m);
        m = NULL;
    }
    for (int i = 0; i < r->anomalies.n; i++) {
        const ts_anomaly *a = &r->anomalies.a[i];
        char note[TS_HOSTNAME_MAX + 32];
        topology_note(m, admin, a->id, note, sizeof note);
        if (a->kind == TS_ANOMALY_LOSS)
            syslog(LOG_WARNING, "job=%s link=%s%s excess=loss %.0f%% of its probes (observed %.2f us) record=%s",
                   c->job, a->id, note, a->loss_pct, a->observed_us, final);
        else if (a->kind == TS_ANOMALY_UNREACHABLE)
            syslog(LOG_WARNING, "job=%s link=%s%s excess=unreachable (node did not answer) record=%s", c->job,
                   a->id, note, final);
        else
            syslog(LOG_WARNING, "job=%s link=%s%s excess=%+.1f%% (%+.2f us: expected %.2f us, observed %.2f us) "
                   "score=%.1f record=%s", c->job, a->id, note, a->excess_pct, a->excess_us, a->expected_us,
                   a->observed_us, a->score, final);
    }
    ts_link_matcher_free(m);
}

static int leader_record(const epilog_config *c)
{
    ts_error err;
    ts_policy pol;
    ts_baseline base;
    ts_fabric admin, tree;
    ts_record r;
    ts_status st = {0};
    int have_admin = 0, have_tree = 0, status = 2, bad_policy = 0;
    ts_policy_default(&pol);
    ts_baseline_init(&base);
    ts_fabric_init(&admin);
    ts_fabric_init(&tree);
    ts_record_init(&r);

    if (c->policy) {
        const char *env = getenv("TOPOSCOPE_POLICY_DIR");
        const char *dirs[] = { env && *env ? env : "/etc/toposcope/policies", "/etc/toposcope/policies", NULL };
        /* A policy that does not load costs its thresholds and drain rule, never the record:
         * the job is recorded with the default thresholds (which drain nothing), and the exit
         * status says the input was bad. */
        if (ts_policy_load(&pol, c->policy, dirs, &err) != TS_OK) {
            fail_msg("%s; recording with the default thresholds (no drain)", err.text);
            ts_policy_default(&pol);
            bad_policy = 1;
        }
    }
    /* default: baseline.yaml beside the records directory (/var/lib/toposcope/baseline.yaml for
     * the default records), so a site that moves its records keeps its baseline with them */
    const char *bpath = c->baseline;
    char beside[PATH_MAX];
    if (!bpath) {
        snprintf(beside, sizeof beside, "%s", c->records);
        size_t L = strlen(beside);
        while (L > 1 && beside[L - 1] == '/')
            beside[--L] = '\0';
        char *slash = strrchr(beside, '/');
        if (slash) {
            snprintf(slash + 1, sizeof beside - (size_t)(slash + 1 - beside), "baseline.yaml");
            if (access(beside, R_OK) == 0)
                bpath = beside;
        }
    }
    if (bpath && ts_baseline_load(&base, bpath, &err) != TS_OK) {
        /* a broken baseline costs the comparison, not the record */
        syslog(LOG_ERR, "job=%s baseline unusable: %s", c->job, err.text);
        ts_baseline_init(&base);
    }
    if (c->topology) {
        if (ts_fabric_load_topology_conf(&admin, c->topology, &err) != TS_OK) {
            syslog(LOG_ERR, "job=%s topology.conf unusable: %s", c->job, err.text);
            ts_fabric_free(&admin);
            ts_fabric_init(&admin);
        } else {
            have_admin = 1;
        }
    }
    status = 1;
    snprintf(r.job, sizeof r.job, "%s", c->job);
    if (c->user)
        snprintf(r.user, sizeof r.user, "%s", c->user);
    if (c->uid) {
        char *end;
        long u = strtol(c->uid, &end, 10);
        if (*c->uid && !*end && u >= 0) {
            r.uid = u;
            struct passwd *pw = c->user ? NULL : getpwuid((uid_t)u);
            if (pw)
                snprintf(r.user, sizeof r.user, "%s", pw->pw_name);
        }
    }
    r.time = c->now;
    if (!(r.nodes = strdup(c->nodes)))
        goto out;
    read_status(c, &r, &st);

    char tpath[PATH_MAX + 32], lpath[PATH_MAX + 32];
    if (spool_path(c, "tree.yaml", tpath, sizeof tpath) || spool_path(c, "links.yaml", lpath, sizeof lpath))
        goto out;
    if (access(tpath, R_OK) == 0 && ts_fabric_load_tree_yaml(&tree, tpath, &err) == TS_OK) {
        have_tree = 1;
        if (ts_record_set_tree(&r, &tree, &err) != TS_OK)
            goto out;
    }
    if (have_tree && access(lpath, R_OK) == 0 &&
        ts_link_obs_load_run(tpath, lpath, have_admin ? &admin : NULL, &r.links, &err) != TS_OK) {
        syslog(LOG_ERR, "job=%s links.yaml unusable: %s", c->job, err.text);
        ts_link_obs_set_free(&r.links);
    }
    ts_detect_options dopt;
    ts_detect_options_default(&dopt);
    dopt.threshold_pct = pol.anomaly_pct;
    dopt.threshold_us = pol.anomaly_us;
    if (ts_anomaly_detect(&r.links, &base, &dopt, &r.anomalies, &err) != TS_OK)
        goto out;
    /* A node is unreachable only when the leader ran and it did not answer. A fallback status
     * means the leader itself failed (rendezvous, its port, munged) and lists every node; a
     * missing or unreadable status.yaml says nothing about any node. The record's status shows
     * the measurement failed; no node is blamed for it. */
    if (!strcmp(r.status, "measured") || !strcmp(r.status, "partial")) {
        for (int i = 0; i < st.nunreachable; i++)
            if (ts_anomaly_add_unreachable(&r.anomalies, st.unreachable[i], &base, &err) != TS_OK)
                goto out;
    } else if (st.present) {
        syslog(LOG_NOTICE, "job=%s measurement status=%s (%s): no node recorded unreachable", c->job, r.status,
               st.reason[0] ? st.reason : "no reason given");
    }
    ts_anomaly_sort(&r.anomalies);

    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        goto out;
    ts_record_write(&r, m);
    if (ferror(m) | fclose(m)) {
        free(text);
        goto out;
    }
    char final[128];
    int pub = record_publish(c, text, len, final, sizeof final);
    free(text);
    if (pub != 0)
        goto out;
    log_anomalies(c, &r, have_admin ? &admin : NULL, final);
    /* the record is safe: the flag index, the AdminComment and drains can only add to it */
    epilog_after_record(c, &pol, &r);
    if (c->prometheus_dir)
        refresh_prometheus(c, have_admin ? &admin : NULL);
    status = bad_policy ? 2 : 0;
out:
    ts_status_free(&st);
    ts_record_free(&r);
    ts_fabric_free(&tree);
    ts_fabric_free(&admin);
    ts_baseline_free(&base);
    return status;
}

int main(int argc, char **argv)
{
    epilog_config c;
    double t0 = ts_flag_clock();
    int rc = parse_options(argc, argv, &c);
    if (rc)
        return rc;
    if (!(c.t0 > 0))
        c.t0 = t0;
    /* the hard stop, to the millisecond, at t0 + budget (what is left of it now; at least a
     * millisecond, so a budget already spent stops at once); the steps keep within shares of
     * it on their own */
    signal(SIGALRM, on_alarm);
    double left_ms = fmax(c.budget_ms - (ts_flag_clock() - c.t0) * 1e3, 1);
    struct itimerval budget = { { 0, 0 }, { (time_t)(left_ms / 1000),
                                            (suseconds_t)fmod(left_ms, 1000.0) * 1000 } };
    setitimer(ITIMER_REAL, &budget, NULL);
    openlog("toposcope", LOG_PID | (c.log_stderr ? LOG_PERROR : 0), LOG_DAEMON);

    ts_hostlist hl;
    ts_error err;
    int hrc = ts_hostlist_expand(c.nodes, strlen(c.nodes), &hl, &err);
    if (hrc != TS_OK || hl.count == 0) {
        /* a refused list is left empty, so its count cannot say why: the return code does */
        fail_msg("--nodes %s: %s", c.nodes, hrc != TS_OK ? err.text : "no nodes");
        return 2;
    }
    int leader = c.self && !strcmp(hl.hosts[0], c.self);
    ts_hostlist_free(&hl);
    if (leader)
        rc = leader_record(&c);
    /* the leader's spool goes only once its record is safe; a failed record keeps the evidence */
    if (rc == 0 && ts_spool_remove(c.spool, c.job, &err) != TS_OK)
        fail_msg("%s", err.text);
    closelog();
    return rc;
}
