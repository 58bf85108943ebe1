/* toposcope report — suspect links across the epilog's records, topology.conf checked against
 * the measured leaf groups, the baseline the epilogs read, and a picture. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "slurm_nodes.h"
#include "toposcope/anomaly.h"
#include "toposcope/emit.h"
#include "toposcope/fabric.h"
#include "toposcope/flagindex.h"
#include "toposcope/record.h"
#include "toposcope/report.h"
#include "toposcope/reportprom.h"
#include "toposcope/reportsvg.h"
#include "toposcope/topoconf.h"
#include "toposcope/topoyaml.h"
#include "toposcope/textout.h"

static void report_usage(FILE *out)
{
    fprintf(out,
            "usage: toposcope report --records DIR [options]\n"
            "\n"
            "Rank suspect links across the jobs' link records (toposcope-epilog(8)): a link slow in\n"
            "many jobs while the other links of those jobs were fine ranks first.\n"
            "\n"
            "options:\n"
            "  --records DIR          the records directory (required)\n"
            "  --since AGE            only records younger than AGE: N followed by s, m, h, d or w (7d)\n"
            "  --topology FILE        the admin's topology.conf: name suspects by its switches (a node\n"
            "                         set no switch holds exactly: 'within' the smallest one holding\n"
            "                         it), list the nodes whose measured leaf switch differs from it,\n"
            "                         and draw its tree with --svg\n"
            "  --format FMT           table (default), yaml, json, or prometheus (the text exposition\n"
            "                         format: per-link flags, excess and evidence, records by status,\n"
            "                         the prolog's duration; for node_exporter's textfile collector)\n"
            "  --top N                suspects listed (default 20 in a table, all in the other formats)\n"
            "  --svg FILE             the tree (topology.conf, else the inferred one) with every suspect\n"
            "                         link (colour: evidence, width: excess), silent nodes, nodes\n"
            "                         measured elsewhere and a legend; healthy subtrees of large fabrics\n"
            "                         as boxes; FILE.png too when rsvg-convert or convert is installed\n"
            "  --update-baseline FILE write the per-link baseline the epilogs read (median, MAD of every\n"
            "                         record's unflagged estimates)\n"
            "  --write-topology FILE  write the tree inferred from the records (a leaf switch per set of\n"
            "                         nodes measured under one switch, a top switch per set of nodes that\n"
            "                         shared jobs) for Slurm: topology.conf, or topology.yaml (Slurm\n"
            "                         25.05+, a topology per fabric) when FILE ends in .yaml; written\n"
            "                         aside and renamed, never half; only nodes Slurm knows (--nodes, else\n"
            "                         scontrol show nodes -o), the others named and left out\n"
            "  --topology-format FMT  tree (default: topology/tree's switches) or block (topology/block:\n"
            "                         a BlockName= per leaf switch and BlockSizes=)\n"
            "  --nodes HOSTLIST       the nodes Slurm knows, for --write-topology (default: ask scontrol)\n"
            "  --scontrol PATH        the scontrol to ask (default: scontrol on PATH; stopped after %d s;\n"
            "                         when it cannot say, the names are written unchecked, with a warning)\n"
            "  --rebuild-index        rebuild DIR/.index, the flag index the epilogs' drain check reads,\n"
            "                         from every record read (merged with what epilogs add meanwhile)\n"
            "  -h, --help             this text\n"
            "\n"
            "Files in DIR that are not records (corrupt, truncated, foreign) are skipped with a warning\n"
            "naming them. exit status: 0 done, 1 failure, 2 bad options or input.\n", SLURM_NODES_TIMEOUT_S);
}

typedef struct report_options {
    const char *records, *topology, *format, *svg, *baseline_out, *topology_out;
    const char *nodes, *scontrol;    /* the nodes Slurm knows: the list given, else scontrol's */
    int block;                       /* --topology-format block */
    int rebuild_index;
    double since_s;              /* 0: every record */
    int top;                     /* -1: the format's default */
} report_options;

static int parse_age(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0) || !isfinite(v))
        return -1;
    double unit = 0;
    if (!strcmp(end, "s"))
        unit = 1;
    else if (!strcmp(end, "m"))
        unit = 60;
    else if (!strcmp(end, "h"))
        unit = 3600;
    else if (!strcmp(end, "d"))
        unit = 86400;
    else if (!strcmp(end, "w"))
        unit = 7 * 86400;
    if (!unit)
        return -1;
    *out = v * unit;
    return 0;
}

static int parse_options(int argc, char **argv, report_options *o)
{
    enum { O_RECORDS = 256, O_SINCE, O_TOPOLOGY, O_FORMAT, O_TOP, O_SVG, O_BASELINE, O_WRITE_TOPO, O_REBUILD,
           O_TOPO_FORMAT, O_NODES, O_SCONTROL };
    static const struct option longopts[] = {
        {"records", required_argument, 0, O_RECORDS}, {"since", required_argument, 0, O_SINCE},
        {"topology", required_argument, 0, O_TOPOLOGY}, {"format", required_argument, 0, O_FORMAT},
        {"top", required_argument, 0, O_TOP}, {"svg", required_argument, 0, O_SVG},
        {"update-baseline", required_argument, 0, O_BASELINE},
        {"write-topology", required_argument, 0, O_WRITE_TOPO}, {"rebuild-index", no_argument, 0, O_REBUILD},
        {"topology-format", required_argument, 0, O_TOPO_FORMAT}, {"nodes", required_argument, 0, O_NODES},
        {"scontrol", required_argument, 0, O_SCONTROL},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->format = "table";
    o->scontrol = "scontrol";
    o->top = -1;
    int c;
    uint64_t u;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_RECORDS: o->records = optarg; break;
        case O_TOPOLOGY: o->topology = optarg; break;
        case O_SVG: o->svg = optarg; break;
        case O_BASELINE: o->baseline_out = optarg; break;
        case O_WRITE_TOPO: o->topology_out = optarg; break;
        case O_REBUILD: o->rebuild_index = 1; break;
        case O_NODES: o->nodes = optarg; break;
        case O_SCONTROL: o->scontrol = optarg; break;
        case O_TOPO_FORMAT:
            if (strcmp(optarg, "tree") && strcmp(optarg, "block")) {
                cli_error("report", "--topology-format wants tree or block, not '%s'", optarg);
                return CLI_USAGE;
            }
            o->block = !strcmp(optarg, "block");
            break;
        case O_FORMAT:
            if (strcmp(optarg, "table") && strcmp(optarg, "yaml") && strcmp(optarg, "json") &&
                strcmp(optarg, "prometheus")) {
                cli_error("report", "--format wants table, yaml, json or prometheus, not '%s'", optarg);
                return CLI_USAGE;
            }
            o->format = optarg;
            break;
        case O_SINCE:
            if (parse_age(optarg, &o->since_s)) {
                cli_error("report", "--since wants an age such as 30m, 12h, 7d or 2w, not '%s'", optarg);
                return CLI_USAGE;
            }
            break;
        case O_TOP:
            if (cli_parse_u64(optarg, &u) || u > 1000000) {
                cli_error("report", "--top wants a whole number, not '%s'", optarg);
                return CLI_USAGE;
            }
            o->top = (int)u;
            break;
        case 'h':
            report_usage(stdout);
            exit(CLI_OK);
        default:
            report_usage(stderr);
            return CLI_USAGE;
        }
    }
    if (optind < argc) {
        cli_error("report", "unexpected argument '%s'", argv[optind]);
        return CLI_USAGE;
    }
    if (!o->records) {
        cli_error("report", "--records DIR is required (see --help)");
        return CLI_USAGE;
    }
    if (!o->topology_out && (o->block || o->nodes)) {
        cli_error("report", "--topology-format and --nodes go with --write-topology FILE");
        return CLI_USAGE;
    }
    return CLI_OK;
}

static void warn_skipped(const char *path, const char *why, void *arg)
{
    (void)arg;
    cli_error("report", "warning: skipping %s: %s", path, why);
}

static int index_record(const ts_record *r, void *flags, ts_error *err)
{
    return ts_flag_index_add_record(flags, r, NULL, err);
}

/* Every record of the directory into the report (and its access-link flags into flags, when
 * not NULL); the others are named and skipped. *complete: every file of the directory was read. */
static int read_records(const report_options *o, ts_report *rep, ts_flag_index *flags, int *skipped,
                        int *complete)
{
    ts_report_dir rd = { .dir = o->records, .now = (int64_t)time(NULL), .since_s = o->since_s,
                         .skip = warn_skipped, .each = flags ? index_record : NULL, .arg = flags };
    ts_error err;
    int rc = ts_report_add_dir(rep, &rd, skipped, complete, &err);
    if (rc != TS_OK)
        cli_error("report", "%s%s", rc == TS_EINPUT ? "--records " : "", err.text);
    else if (!*complete)
        cli_error("report", "warning: %s holds more than %d files: the rest are not read", o->records,
                  TS_REPORT_MAX_FILES);
    return rc == TS_OK ? CLI_OK : rc == TS_EINPUT ? CLI_USAGE : CLI_FAIL;
}

static const char *when(int64_t t, char *buf, size_t max)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(buf, max, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, max, "%lld", (long long)t);
    return buf;
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void num_or_null(FILE *out, double v)
{
    if (isfinite(v))
        fprintf(out, "%.3f", v);
    else
        fputs("null", out);
}

/* A suspect's name as the table shows it: with topology.conf, a node set that names none of
 * its links says where it lies. */
static void display_name(const ts_suspect *s, char *out, size_t max)
{
    if (s->mapped && s->match == TS_MATCH_WITHIN)
        snprintf(out, max, "%s (within %s)", s->id, s->within);
    else if (s->mapped && s->match == TS_MATCH_NONE)
        snprintf(out, max, "%s (not in topology.conf)", s->id);
    else
        snprintf(out, max, "%s", s->id);
}

static void print_table(FILE *out, const ts_suspect *s, int n, int top, int records, int skipped,
                        const ts_mismatch *mm, int nmm, int have_topo)
{
    char a[32], b[32], name[TS_LINK_ID_MAX + 300];
    int w = 24;
    for (int i = 0; i < n && i < top; i++) {
        display_name(&s[i], name, sizeof name);
        w = (int)strlen(name) > w ? (int)strlen(name) : w;
    }
    fprintf(out, "toposcope report: %d record%s read, %d skipped, %d link%s flagged at least once\n\n", records,
            records == 1 ? "" : "s", skipped, n, n == 1 ? "" : "s");
    if (n) {
        fprintf(out, "%-4s %-*s %-6s %9s %8s %10s %10s %-20s %-20s %s\n", "rank", w, "link", "kind",
                "flagged", "evidence", "excess_%", "excess_us", "first_seen", "last_seen", "jobs");
        for (int i = 0; i < n && i < top; i++) {
            char fl[32], pct[32], us[32];
            snprintf(fl, sizeof fl, "%d/%d", s[i].flagged, s[i].seen);
            if (s[i].unreachable == s[i].flagged) {
                snprintf(pct, sizeof pct, "silent");
                snprintf(us, sizeof us, "-");
            } else {
                /* a link flagged only for loss may have no latency excess */
                snprintf(pct, sizeof pct, isfinite(s[i].median_excess_pct) ? "%+.1f" : "-", s[i].median_excess_pct);
                snprintf(us, sizeof us, isfinite(s[i].median_excess_us) ? "%+.2f" : "-", s[i].median_excess_us);
            }
            display_name(&s[i], name, sizeof name);
            fprintf(out, "%-4d %-*s %-6s %9s %8.2f %10s %10s %-20s %-20s ", i + 1, w, name,
                    s[i].access ? "access" : "uplink", fl, s[i].evidence, pct, us,
                    when(s[i].first_seen, a, sizeof a), when(s[i].last_seen, b, sizeof b));
            for (int j = 0; j < s[i].njobs; j++)
                fprintf(out, "%s%s", j ? "," : "", s[i].jobs[j]);
            fprintf(out, "%s\n", s[i].flagged > s[i].njobs ? ",..." : "");
        }
    }
    if (have_topo) {
        fprintf(out, "\nnodes whose measured leaf switch differs from topology.conf: %d\n", nmm);
        for (int i = 0; i < nmm; i++)
            fprintf(out, "  %s: topology.conf says %s, measured with the nodes of %s (%d job%s, last %s)\n",
                    mm[i].node, mm[i].admin_switch[0] ? mm[i].admin_switch : "(absent)", mm[i].measured_with,
                    mm[i].jobs, mm[i].jobs == 1 ? "" : "s", mm[i].last_job);
    }
}

static void print_structured(FILE *out, int json, const ts_suspect *s, int n, int top, int records,
                             int skipped, const ts_mismatch *mm, int nmm)
{
    char a[32];
    if (json)
        fprintf(out, "{\"records\": %d, \"skipped\": %d, \"suspects\": [", records, skipped);
    else
        fprintf(out, "# toposcope report\nrecords: %d\nskipped: %d\nsuspects:%s\n", records, skipped,
                n && top ? "" : " []");
    for (int i = 0; i < n && i < top; i++) {
        if (json)
            fprintf(out, "%s\n  {\"rank\": %d, \"link\": ", i ? "," : "", i + 1);
        else
            fprintf(out, "  - {rank: %d, link: ", i + 1);
        json ? json_string(out, s[i].id) : ts_emit_yaml_string(out, s[i].id);
        const char *q = json ? "\"" : "";
        fprintf(out, ", %skind%s: %s%s%s", q, q, q, s[i].access ? "access" : "uplink", q);
        fprintf(out, ", %sflagged%s: %d, %sseen%s: %d, %sunreachable%s: %d, %sevidence%s: %.3f", q, q, s[i].flagged,
                q, q, s[i].seen, q, q, s[i].unreachable, q, q, s[i].evidence);
        fprintf(out, ", %smedian_excess_pct%s: ", q, q);
        num_or_null(out, s[i].median_excess_pct);
        fprintf(out, ", %smedian_excess_us%s: ", q, q);
        num_or_null(out, s[i].median_excess_us);
        if (s[i].mapped) {
            static const char *const match[] = { "none", "exact", "within" };
            fprintf(out, ", %stopology%s: %s%s%s", q, q, q, match[s[i].match], q);
            if (s[i].within) {
                fprintf(out, ", %swithin%s: ", q, q);
                json ? json_string(out, s[i].within) : ts_emit_yaml_string(out, s[i].within);
            }
        }
        fprintf(out, ", %smax_score%s: %.3f", q, q, s[i].max_score);
        fprintf(out, ", %sfirst_seen%s: \"%s\"", q, q, when(s[i].first_seen, a, sizeof a));
        fprintf(out, ", %slast_seen%s: \"%s\"", q, q, when(s[i].last_seen, a, sizeof a));
        fprintf(out, ", %sjobs%s: [", q, q);
        for (int j = 0; j < s[i].njobs; j++) {
            fputs(j ? ", " : "", out);
            json ? json_string(out, s[i].jobs[j]) : ts_emit_yaml_string(out, s[i].jobs[j]);
        }
        fprintf(out, "]}%s", json ? "" : "\n");
    }
    if (json)
        fprintf(out, "%s], \"mismatches\": [", n && top ? "\n" : "");
    else
        fprintf(out, "mismatches:%s\n", nmm ? "" : " []");
    for (int i = 0; i < nmm; i++) {
        const char *q = json ? "\"" : "";
        fprintf(out, json ? "%s\n  {" : "%s  - {", json && i ? "," : "");
        fprintf(out, "%snode%s: ", q, q);
        json ? json_string(out, mm[i].node) : ts_emit_yaml_string(out, mm[i].node);
        fprintf(out, ", %stopology_conf%s: ", q, q);
        json ? json_string(out, mm[i].admin_switch) : ts_emit_yaml_string(out, mm[i].admin_switch);
        fprintf(out, ", %smeasured_with%s: ", q, q);
        json ? json_string(out, mm[i].measured_with) : ts_emit_yaml_string(out, mm[i].measured_with);
        fprintf(out, ", %sjobs%s: %d}%s", q, q, mm[i].jobs, json ? "" : "\n");
    }
    if (json)
        fprintf(out, "%s]}\n", nmm ? "\n" : "");
}

/* ---- the picture ---- */

/* The first of names found as an executable in PATH, into path; NULL when none is. */
static const char *find_program(const char *const *names, char *path, size_t max)
{
    const char *env = getenv("PATH");
    for (int i = 0; names[i]; i++) {
        for (const char *p = env ? env : ""; *p;) {
            size_t L = strcspn(p, ":");
            if (L && (size_t)snprintf(path, max, "%.*s/%s", (int)L, p, names[i]) < max && access(path, X_OK) == 0)
                return names[i];
            p += L + (p[L] == ':');
        }
    }
    return NULL;
}

/* Run argv[0] (a path) with its output thrown away; its exit status, or -1. A converter that
 * hangs is stopped after `limit` seconds. */
static int run_quietly(char *const *argv, int limit)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    for (int waited = 0; waitpid(pid, &st, WNOHANG) == 0; waited++) {
        if (waited >= limit * 20) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        usleep(50000);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* FILE.png beside FILE.svg (FILE.svg.png for another name), when rsvg-convert or ImageMagick's
 * convert is installed; said either way, never a failure of the report. */
static void write_png(const char *svg)
{
    static const char *const converters[] = { "rsvg-convert", "convert", NULL };
    char prog[PATH_MAX], png[PATH_MAX];
    size_t L = strlen(svg);
    if (L > 4 && !strcmp(svg + L - 4, ".svg"))
        snprintf(png, sizeof png, "%.*s.png", (int)(L - 4), svg);
    else
        snprintf(png, sizeof png, "%s.png", svg);
    const char *name = find_program(converters, prog, sizeof prog);
    if (!name) {
        cli_error("report", "note: no PNG beside %s: neither rsvg-convert (librsvg2-bin) nor convert "
                  "(imagemagick) is installed", svg);
        return;
    }
    char *rsvg[] = { prog, "-o", png, (char *)svg, NULL };
    char *magick[] = { prog, (char *)svg, png, NULL };
    struct stat st;
    unlink(png);
    int rc = run_quietly(!strcmp(name, "rsvg-convert") ? rsvg : magick, 60);
    if (rc == 0 && stat(png, &st) == 0 && st.st_size > 0)
        cli_error("report", "wrote %s (%s)", png, name);
    else
        cli_error("report", "warning: no PNG: %s %s failed (exit %d); the SVG is written", prog, svg, rc);
}

static int draw(const char *path, const ts_fabric *tree, const ts_suspect *s, int n, const ts_mismatch *mm,
                int nmm)
{
    ts_report_picture pic = { .tree = tree, .s = s, .n = n, .mm = mm, .nmm = nmm };
    ts_picture_drawn d;
    ts_error err;
    FILE *out = fopen(path, "w");
    if (!out) {
        cli_error("report", "cannot write %s: %s", path, strerror(errno));
        return CLI_FAIL;
    }
    int rc = ts_report_write_svg(&pic, out, &d, &err);
    if (fclose(out) != 0 || rc != TS_OK) {
        cli_error("report", "cannot write %s: %s", path, rc != TS_OK ? err.text : strerror(errno));
        return CLI_FAIL;
    }
    cli_error("report", "wrote %s: %d suspect link%s, %d within a switch, %d silent node%s, %d node%s measured "
              "elsewhere%s", path, d.links, d.links == 1 ? "" : "s", d.within, d.unreachable,
              d.unreachable == 1 ? "" : "s", d.mismatches, d.mismatches == 1 ? "" : "s",
              d.not_drawn ? "; suspects named by node sets are not drawn on the inferred tree (give --topology)" : "");
    write_png(path);
    return CLI_OK;
}

/* The rebuilt flags over whatever the index holds now: epilogs may have added to it meanwhile. */
static int merge_rebuilt(ts_flag_index *x, const ts_flag_found *found, void *arg, ts_error *err)
{
    if (found->corrupt)
        cli_error("report", "warning: replacing a flag index that does not parse: %s", found->why);
    return ts_flag_index_merge(x, arg, err);
}

static int rebuild_index(const report_options *o, ts_flag_index *rebuilt)
{
    ts_flag_update u = { .records = o->records, .now = (int64_t)time(NULL), .deadline = ts_flag_clock() + 60,
                         .prepare = merge_rebuilt, .arg = rebuilt };
    ts_flag_index *x = NULL;
    ts_flag_found found;
    ts_error err;
    int rc = ts_flag_index_update(&u, &x, &found, &err);
    if (rc == TS_OK)
        cli_error("report", "flag index %s/%s rebuilt from the records: %d flag%s of the last %lld h", o->records,
                  TS_FLAGS_DIR, ts_flag_index_size(x), ts_flag_index_size(x) == 1 ? "" : "s", TS_FLAGS_KEEP_S / 3600);
    else
        cli_error("report", "%s", err.text);
    ts_flag_index_free(x);
    return rc == TS_OK ? CLI_OK : CLI_FAIL;
}

/* Write path aside and rename it over the old one, so a reader (an epilog) never sees half. */
static int write_aside(const char *path, int (*fn)(const void *, FILE *, ts_error *), const void *arg)
{
    ts_error err = { "" };
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        cli_error("report", "cannot write %s: %s", tmp, strerror(errno));
        return CLI_FAIL;
    }
    int bad = fn(arg, f, &err) != TS_OK || ferror(f);
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        cli_error("report", "cannot write %s: %s", path, err.text[0] ? err.text : strerror(errno));
        unlink(tmp);
        return CLI_FAIL;
    }
    return CLI_OK;
}

static int put_baseline(const void *b, FILE *f, ts_error *err)
{
    (void)err;
    return ts_baseline_write(b, f);
}

/* ---- the inferred tree for Slurm ---- */

typedef struct topology_out {
    const ts_fabric *tree;
    int yaml, block;
} topology_out;

static int put_topology(const void *arg, FILE *f, ts_error *err)
{
    const topology_out *t = arg;
    fprintf(f, "# inferred by toposcope report from the jobs' measured leaf groups\n");
    if (t->yaml)
        return ts_fabric_write_topology_yaml(t->tree, t->block, f, err);
    return t->block ? ts_fabric_write_block_conf(t->tree, f, err) : ts_fabric_write_topology_conf(t->tree, f);
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

static int keep_any(const char *name, void *arg)
{
    (void)name;
    (void)arg;
    return 1;
}

/* The nodes Slurm knows into *known, and what they came from into source: 1 when they are known,
 * 0 when Slurm cannot say (said, and the tree goes out unchecked), -1 when --nodes is wrong. */
static int known_nodes(const report_options *o, slurm_nodes *known, char *source, size_t max)
{
    char why[TS_ERROR_TEXT_MAX + 64];
    if (o->nodes) {
        snprintf(source, max, "--nodes %s", o->nodes);
        if (slurm_nodes_from_hostlist(o->nodes, known, why, sizeof why) == 0)
            return 1;
        cli_error("report", "--nodes: %s", why);
        return -1;
    }
    snprintf(source, max, "%s show nodes -o", o->scontrol);
    int rc = slurm_nodes_from_scontrol(o->scontrol, SLURM_NODES_TIMEOUT_S, known, why, sizeof why);
    if (rc == SLURM_NODES_OK)
        return 1;
    cli_error("report", "%s: %s: the node names in %s are not checked against Slurm's (give --nodes HOSTLIST "
              "to check them)", rc == SLURM_NODES_ABSENT ? "note" : "warning", why, o->topology_out);
    return 0;
}

static int count_kind(const ts_fabric *f, ts_vertex_kind kind)
{
    int n = 0;
    for (int i = 0; i < f->nvert; i++)
        n += f->v[i].kind == kind && !f->v[i].implicit;
    return n;
}

/* The inferred tree, minus the nodes Slurm does not know and the switches they leave empty, to
 * o->topology_out in the format its name and --topology-format ask for. */
static int write_topology(const report_options *o, const ts_fabric *tree)
{
    slurm_nodes known = { 0 };
    char source[512];
    int checked = known_nodes(o, &known, source, sizeof source);
    if (checked < 0)
        return CLI_USAGE;
    ts_fabric pruned;
    ts_fabric_pruned dropped;
    ts_error err;
    int rc = ts_fabric_keep_nodes(&pruned, tree, checked ? slurm_nodes_has : keep_any, &known, &dropped, &err);
    slurm_nodes_free(&known);
    if (rc == TS_EINPUT && dropped.nodes == tree->nnodes) {
        cli_error("report", "%s not written: none of the %d nodes the records measured (%.300s%s) is known to Slurm "
                  "(%s): are the records from this cluster? Give its nodes with --nodes HOSTLIST", o->topology_out,
                  tree->nnodes, dropped.names, strlen(dropped.names) > 300 ? "..." : "", source);
        free(dropped.names);
        return CLI_USAGE;
    }
    if (dropped.nodes)
        cli_error("report", "warning: %d node%s Slurm does not know (%s) left out of %s: %.300s%s; %d switch%s "
                  "left without nodes with them", dropped.nodes, dropped.nodes == 1 ? "" : "s", source,
                  o->topology_out, dropped.names, strlen(dropped.names) > 300 ? "..." : "", dropped.switches,
                  dropped.switches == 1 ? "" : "es");
    free(dropped.names);
    if (rc != TS_OK) {
        cli_error("report", "%s not written: %s", o->topology_out, err.text);
        return CLI_FAIL;
    }
    topology_out t = { &pruned, ends_with(o->topology_out, ".yaml") || ends_with(o->topology_out, ".yml"), o->block };
    int tops[1], nfabrics = ts_fabric_tops(&pruned, tops, 1);
    rc = write_aside(o->topology_out, put_topology, &t);
    if (rc == CLI_OK)
        cli_error("report", "wrote %s (%s%s): %d node%s, %d switch%s, %d fabric%s", o->topology_out,
                  t.yaml ? "topology.yaml" : "topology.conf", t.block ? ", topology/block" : "", pruned.nnodes,
                  pruned.nnodes == 1 ? "" : "s", count_kind(&pruned, TS_SWITCH),
                  count_kind(&pruned, TS_SWITCH) == 1 ? "" : "es", nfabrics, nfabrics == 1 ? "" : "s");
    ts_fabric_free(&pruned);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    report_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != CLI_OK)
        return rc;
    ts_error err;
    ts_fabric admin, inferred;
    int have_admin = 0, have_inferred = 0, skipped = 0, nmm = 0, status = CLI_FAIL;
    ts_mismatch *mm = NULL;
    ts_flag_index *flags = NULL;
    ts_fabric_init(&admin);
    ts_fabric_init(&inferred);
    ts_report *rep = ts_report_new();
    if (!rep) {
        cli_error("report", "out of memory");
        return CLI_FAIL;
    }
    if (o.topology) {
        if (ts_fabric_load_topology_conf(&admin, o.topology, &err) != TS_OK) {
            cli_error("report", "%s", err.text);
            status = CLI_USAGE;
            goto out;
        }
        have_admin = 1;
        if (ts_report_set_admin(rep, &admin, &err) != TS_OK) {
            cli_error("report", "%s", err.text);
            goto out;
        }
    }
    if (o.rebuild_index && !(flags = ts_flag_index_new())) {
        cli_error("report", "out of memory");
        goto out;
    }
    int complete;
    if ((status = read_records(&o, rep, flags, &skipped, &complete)) != CLI_OK)
        goto out;
    /* every record read: nothing written before the rebuild is missing from it */
    if (flags && complete)
        ts_flag_index_set_since(flags, 0);
    if (flags && (status = rebuild_index(&o, flags)) != CLI_OK)
        goto out;
    status = CLI_FAIL;
    if (o.baseline_out) {
        ts_baseline b;
        if (ts_report_baseline(rep, &b, &err) != TS_OK) {
            cli_error("report", "%s", err.text);
            goto out;
        }
        rc = write_aside(o.baseline_out, put_baseline, &b);
        ts_baseline_free(&b);
        if (rc != CLI_OK)
            goto out;
    }
    const ts_suspect *s;
    int n;
    if (ts_report_suspects(rep, &s, &n, &err) != TS_OK ||
        (have_admin && ts_report_mismatches(rep, &admin, &mm, &nmm, &err) != TS_OK)) {
        cli_error("report", "%s", err.text);
        goto out;
    }
    if (o.topology_out || (o.svg && !have_admin)) {
        if (ts_report_inferred_tree(rep, &inferred, &err) != TS_OK) {
            cli_error("report", "%s", err.text);
            goto out;
        }
        have_inferred = 1;
        if (o.topology_out && (rc = write_topology(&o, &inferred)) != CLI_OK) {
            status = rc;
            goto out;
        }
    }
    if (o.svg && draw(o.svg, have_admin ? &admin : &inferred, s, n, mm, nmm) != CLI_OK)
        goto out;
    int top = o.top >= 0 ? o.top : !strcmp(o.format, "table") ? 20 : n;
    if (!strcmp(o.format, "prometheus")) {
        if (ts_report_write_prometheus(rep, o.top, skipped, stdout, &err) != TS_OK) {
            cli_error("report", "%s", err.text);
            goto out;
        }
    } else if (!strcmp(o.format, "table"))
        print_table(stdout, s, n, top, ts_report_records(rep), skipped, mm, nmm, have_admin);
    else
        print_structured(stdout, !strcmp(o.format, "json"), s, n, top, ts_report_records(rep), skipped, mm, nmm);
    status = fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
out:
    free(mm);
    ts_flag_index_free(flags);
    if (have_inferred)
        ts_fabric_free(&inferred);
    ts_fabric_free(&admin);
    ts_report_free(rep);
    return status;
}
