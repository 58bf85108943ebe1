/* toposcope place — merge the switch tree with each node's hwloc tree, place ranks by a policy,
 * and write the rankfile, hostfile, machinefile, hints and pictures. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"
#include "toposcope/emit.h"
#include "toposcope/groups.h"
#include "toposcope/hier.h"
#include "toposcope/hostlist.h"
#include "toposcope/hwtree.h"
#include "toposcope/jobplace.h"
#include "toposcope/model.h"
#include "toposcope/mpiplan.h"
#include "toposcope/place.h"
#include "toposcope/policy.h"
#include "toposcope/treeyaml.h"
#include "toposcope/topoconf.h"

extern char **environ;

static void place_usage(FILE *out)
{
    fprintf(out,
            "usage: toposcope place --tree FILE --policy NAME|FILE --out DIR [options]\n"
            "\n"
            "Merge the switch tree with the hwloc tree of every node, place ranks by a policy and\n"
            "write what a job needs to use the placement.\n"
            "\n"
            "options:\n"
            "  --tree FILE          the switch tree: tree.yaml as written by 'toposcope sim', or a\n"
            "                       Slurm topology.conf when FILE ends in .conf (required)\n"
            "  --hwloc-xml FILE     one hwloc XML topology for every node (lstopo --of xml)\n"
            "  --hwloc-dir DIR      DIR/NODE.xml for every node (identical files are read once)\n"
            "                       without either: this machine's topology for every node\n"
            "  --cpuset LIST        PUs the job may use on every node, e.g. 0-15,32-47 (on top of the\n"
            "                       allowed cpuset the topology records)\n"
            "  --policy NAME|FILE   compact, spread, block, measure-only, another NAME.yaml in the\n"
            "                       policy directories, or a policy file (doc/policy.md) (required)\n"
            "  --ranks N            ranks to place (default: every slot the nodes offer)\n"
            "  --cpus-per-rank C    cores per rank (default: the policy's)\n"
            "  --out DIR            output directory, created if needed (required)\n"
            "  --profile NAME       latency model for the LogP estimates: ideal-ethernet (default;\n"
            "                       old name ethernet), ideal-infiniband (infiniband), ethernet-udp,\n"
            "                       ipoib-udp or rdma (doc/params.md)\n"
            "  --params FILE        YAML latency parameters on top of the profile (doc/params.md)\n"
            "  --env-rank R         the rank hints.env describes (default 0)\n"
            "  --no-svg             do not run Graphviz for tree.svg\n"
            "  -h, --help           this text\n"
            "\n"
            "writes DIR/rankfile (Open MPI: rank R=HOST slot=P:C or P:C-D), DIR/hostfile (one host\n"
            "per rank), DIR/machinefile (HOST:COUNT), DIR/hints.yaml (levels with LogP estimates,\n"
            "per rank its group and leadership at every level), DIR/hints.env (one rank's\n"
            "environment), DIR/topology.conf (the tree in Slurm syntax), DIR/tree.txt, DIR/tree.dot\n"
            "and, when Graphviz dot is on PATH and the picture small enough, DIR/tree.svg.\n"
            "measure-only writes no rankfile, hostfile or machinefile. Nothing is written unless\n"
            "everything checked out; files appear together (written aside, then renamed).\n"
            "Policy names are looked up in $TOPOSCOPE_POLICY_DIR, /etc/toposcope/policies and\n"
            "the source tree's policies/.\n"
            "exit status: 0 done, 1 failure, 2 bad input (the message names FILE:LINE:COLUMN)\n");
}

typedef struct place_options {
    const char *tree, *hwloc_xml, *hwloc_dir, *cpuset, *policy, *out, *profile, *params;
    int ranks, cpus_per_rank, env_rank, svg;
} place_options;

static int parse_int_option(const char *name, const char *arg, long lo, long hi, int *out)
{
    uint64_t v;
    if (cli_parse_u64(arg, &v) != 0 || (long)v < lo || v > (uint64_t)hi) {
        cli_error("place", "%s must be an integer from %ld to %ld, not '%s'", name, lo, hi, arg);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_options(int argc, char **argv, place_options *o)
{
    enum { O_TREE = 256, O_XML, O_DIR, O_CPUSET, O_POLICY, O_RANKS, O_CPR, O_OUT, O_PROFILE,
           O_PARAMS, O_ENV_RANK, O_NO_SVG };
    static const struct option longopts[] = {
        { "tree", required_argument, 0, O_TREE },
        { "hwloc-xml", required_argument, 0, O_XML },
        { "hwloc-dir", required_argument, 0, O_DIR },
        { "cpuset", required_argument, 0, O_CPUSET },
        { "policy", required_argument, 0, O_POLICY },
        { "ranks", required_argument, 0, O_RANKS },
        { "cpus-per-rank", required_argument, 0, O_CPR },
        { "out", required_argument, 0, O_OUT },
        { "profile", required_argument, 0, O_PROFILE },
        { "params", required_argument, 0, O_PARAMS },
        { "env-rank", required_argument, 0, O_ENV_RANK },
        { "no-svg", no_argument, 0, O_NO_SVG },
        { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    memset(o, 0, sizeof *o);
    o->profile = "ethernet";
    o->svg = 1;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_TREE: o->tree = optarg; break;
        case O_XML: o->hwloc_xml = optarg; break;
        case O_DIR: o->hwloc_dir = optarg; break;
        case O_CPUSET: o->cpuset = optarg; break;
        case O_POLICY: o->policy = optarg; break;
        case O_OUT: o->out = optarg; break;
        case O_PROFILE: o->profile = optarg; break;
        case O_PARAMS: o->params = optarg; break;
        case O_NO_SVG: o->svg = 0; break;
        case O_RANKS:
            if (parse_int_option("--ranks", optarg, 1, TS_PLACE_MAX_RANKS, &o->ranks))
                return CLI_USAGE;
            break;
        case O_CPR:
            if (parse_int_option("--cpus-per-rank", optarg, 1, TS_POLICY_MAX_CPUS_PER_RANK,
                                 &o->cpus_per_rank))
                return CLI_USAGE;
            break;
        case O_ENV_RANK:
            if (parse_int_option("--env-rank", optarg, 0, TS_PLACE_MAX_RANKS, &o->env_rank))
                return CLI_USAGE;
            break;
        case 'h':
            place_usage(stdout);
            return -1;
        default:
            place_usage(stderr);
            return CLI_USAGE;
        }
    }
    if (optind < argc) {
        cli_error("place", "unexpected argument '%s'", argv[optind]);
        return CLI_USAGE;
    }
    if (!o->tree || !o->policy || !o->out) {
        cli_error("place", "--tree, --policy and --out are required (see --help)");
        return CLI_USAGE;
    }
    if (o->hwloc_xml && o->hwloc_dir) {
        cli_error("place", "give --hwloc-xml or --hwloc-dir, not both");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Exit status for a library error: the user's input (2) or the tool (1). */
static int status_of(int rc)
{
    return rc == TS_EINPUT || rc == TS_ELIMIT || rc == TS_ESYS ? CLI_USAGE : CLI_FAIL;
}

/* ---- hwloc trees of the nodes ---- */

typedef struct hw_set {
    int n;                   /* distinct trees */
    ts_hwtree *tree;
    char **text;             /* the XML each came from, to tell identical files apart */
    size_t *len;
    const ts_hwtree **of_node;
} hw_set;

static void hw_set_free(hw_set *s)
{
    for (int i = 0; i < s->n; i++) {
        ts_hwtree_free(&s->tree[i]);
        free(s->text[i]);
    }
    free(s->tree);
    free(s->text);
    free(s->len);
    free(s->of_node);
}

static int read_whole(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
        if (n == cap) {
            if (cap >= TS_HWTREE_XML_MAX_BYTES)
                break;
            char *nb = realloc(b, cap * 2 + 1);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!b || bad) {
        free(b);
        errno = bad ? EIO : ENOMEM;
        return -1;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

static int load_hwloc(const place_options *o, const ts_fabric *f, hw_set *s)
{
    ts_error err;
    int nn = f->nnodes, rc;
    memset(s, 0, sizeof *s);
    s->tree = calloc((size_t)nn + 1, sizeof *s->tree);
    s->text = calloc((size_t)nn + 1, sizeof *s->text);
    s->len = calloc((size_t)nn + 1, sizeof *s->len);
    s->of_node = calloc((size_t)nn + 1, sizeof *s->of_node);
    if (!s->tree || !s->text || !s->len || !s->of_node) {
        cli_error("place", "out of memory");
        return CLI_FAIL;
    }
    if (!o->hwloc_dir) {
        rc = o->hwloc_xml ? ts_hwtree_load_xml(&s->tree[0], o->hwloc_xml, o->cpuset, &err)
                          : ts_hwtree_load_live(&s->tree[0], o->cpuset, &err);
        if (rc != TS_OK) {
            cli_error("place", "%s", err.text);
            return status_of(rc);
        }
        s->n = 1;
        for (int i = 0; i < nn; i++)
            s->of_node[i] = &s->tree[0];
        return CLI_OK;
    }
    for (int i = 0; i < nn; i++) {
        const char *name = f->v[f->node_vertex[i]].name;
        char path[PATH_MAX], *text;
        size_t len;
        snprintf(path, sizeof path, "%s/%s.xml", o->hwloc_dir, name);
        if (read_whole(path, &text, &len) != 0) {
            cli_error("place", "node '%s': cannot read %s: %s", name, path, strerror(errno));
            return CLI_USAGE;
        }
        int k;
        for (k = 0; k < s->n; k++)
            if (s->len[k] == len && !memcmp(s->text[k], text, len))
                break;
        if (k < s->n) {
            free(text);
        } else {
            rc = ts_hwtree_load_xml_buffer(&s->tree[k], text, len, path, o->cpuset, &err);
            if (rc != TS_OK) {
                free(text);
                cli_error("place", "node '%s': %s", name, err.text);
                return status_of(rc);
            }
            s->text[k] = text;
            s->len[k] = len;
            s->n++;
        }
        s->of_node[i] = &s->tree[k];
    }
    return CLI_OK;
}

/* ---- outputs: written aside, renamed together ---- */

enum { OUT_RANKFILE, OUT_HOSTFILE, OUT_MACHINEFILE, OUT_HYDRA, OUT_LSF, OUT_HINTS, OUT_ENV, OUT_TOPOCONF,
       OUT_TXT, OUT_DOT, OUT_SVG, OUT_COUNT };
static const char *const out_names[OUT_COUNT] = {
    "rankfile", "hostfile", "machinefile", TS_MPI_HYDRA_HOSTS_FILE, TS_MPI_LSF_AFFINITY_FILE,
    "hints.yaml", "hints.env", "topology.conf", "tree.txt", "tree.dot", "tree.svg" };

typedef struct outputs {
    const char *dir;
    char tmp[OUT_COUNT][PATH_MAX + 64];
    char final[OUT_COUNT][PATH_MAX + 64];
    int written[OUT_COUNT];
} outputs;

static FILE *out_open(outputs *w, int k)
{
    FILE *f = fopen(w->tmp[k], "w");
    if (!f)
        cli_error("place", "cannot write %s: %s", w->tmp[k], strerror(errno));
    else
        w->written[k] = 1;
    return f;
}

static int out_close(outputs *w, int k, FILE *f, int rc)
{
    int bad = rc != TS_OK || ferror(f);
    if (fclose(f) != 0)
        bad = 1;
    if (bad)
        cli_error("place", "error writing %s: %s", w->final[k], strerror(errno));
    return bad ? -1 : 0;
}

static void out_discard(outputs *w)
{
    for (int k = 0; k < OUT_COUNT; k++)
        if (w->written[k])
            unlink(w->tmp[k]);
}

static int find_on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, prog);
        if (n && access(buf, X_OK) == 0)
            return 1;
        path = end ? end + 1 : NULL;
    }
    return 0;
}

/* dot -Tsvg; a failure costs the picture, never the placement. */
static void render_svg(outputs *w)
{
    char *argv[] = { "dot", "-Tsvg", "-o", w->tmp[OUT_SVG], w->tmp[OUT_DOT], NULL };
    pid_t pid;
    int status;
    w->written[OUT_SVG] = 1;
    if (posix_spawnp(&pid, "dot", NULL, NULL, argv, environ) != 0 ||
        waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "toposcope place: note: dot could not draw tree.svg\n");
        unlink(w->tmp[OUT_SVG]);
        w->written[OUT_SVG] = 0;
    }
}

typedef struct placed {
    ts_fabric *tree;
    ts_hierarchy *h;
    ts_placement *pl;
    ts_groups *g;
    ts_policy *policy;
    const ts_mpi_plan *mpi;
} placed;

static int write_outputs(const place_options *o, outputs *w, const placed *P)
{
    int has_ranks = P->pl->nranks > 0;
    char dir[PATH_MAX];
    if (!realpath(o->out, dir)) {
        cli_error("place", "%s: %s", o->out, strerror(errno));
        return -1;
    }
    w->dir = o->out;
    for (int k = 0; k < OUT_COUNT; k++) {
        snprintf(w->final[k], sizeof w->final[k], "%s/%s", dir, out_names[k]);
        snprintf(w->tmp[k], sizeof w->tmp[k], "%s/.%s.tmp.%ld", dir, out_names[k], (long)getpid());
    }
    ts_emit_paths paths = { w->final[OUT_HINTS], has_ranks ? w->final[OUT_RANKFILE] : NULL,
                            has_ranks ? w->final[OUT_HOSTFILE] : NULL,
                            has_ranks ? w->final[OUT_MACHINEFILE] : NULL,
                            has_ranks && P->policy->hydra ? w->final[OUT_HYDRA] : NULL,
                            has_ranks && P->policy->export_mca ? w->final[OUT_LSF] : NULL };
    FILE *f;
    int env_member = o->env_rank < P->g->nmembers ? o->env_rank : 0;
#define WRITE(k, call)                                       \
    do {                                                     \
        if (!(f = out_open(w, k)) || out_close(w, k, f, (call)) != 0) \
            return -1;                                       \
    } while (0)
    if (has_ranks) {
        WRITE(OUT_RANKFILE, ts_emit_rankfile(P->pl, f));
        WRITE(OUT_HOSTFILE, ts_emit_hostfile(P->pl, f));
        WRITE(OUT_MACHINEFILE, ts_emit_machinefile(P->pl, f));
    }
    if (paths.hydra_hosts)
        WRITE(OUT_HYDRA, ts_emit_hydra_hosts(P->pl, f));
    if (paths.lsf_affinity)
        WRITE(OUT_LSF, ts_emit_lsf_affinity(P->pl, f));
    WRITE(OUT_HINTS, ts_emit_hints_yaml(P->h, P->pl, P->g, P->policy, f));
    WRITE(OUT_ENV, ts_emit_hints_env(P->h, P->pl, P->g, P->policy, &paths, P->mpi, env_member, f));
    WRITE(OUT_TOPOCONF, ts_fabric_write_topology_conf(P->tree, f));
    WRITE(OUT_TXT, ts_emit_tree_text(P->h, P->pl, f));
    WRITE(OUT_DOT, ts_emit_tree_dot(P->h, P->pl, f));
#undef WRITE
    if (o->svg && find_on_path("dot")) {
        /* the vertices tree.dot holds: everything, or the switches and nodes of a big tree */
        int drawn = P->h->nvert;
        if (drawn > TS_DOT_DETAIL_MAX)
            drawn = P->tree->nvert;
        if (drawn <= TS_DOT_DETAIL_MAX)
            render_svg(w);
        else
            fprintf(stderr, "toposcope place: note: tree.svg left out: %d vertices are more than "
                    "%d to lay out (tree.dot has them)\n", drawn, TS_DOT_DETAIL_MAX);
    }
    /* all written: rename together; remove what this run does not produce from an older one */
    for (int k = 0; k < OUT_COUNT; k++) {
        if (w->written[k]) {
            if (rename(w->tmp[k], w->final[k]) != 0) {
                cli_error("place", "cannot rename %s to %s: %s", w->tmp[k], w->final[k],
                          strerror(errno));
                return -1;
            }
            w->written[k] = 0;
        } else {
            unlink(w->final[k]);
        }
    }
    return 0;
}

int cmd_place(int argc, char **argv)
{
    place_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != CLI_OK)
        return rc < 0 ? CLI_OK : rc;
    ts_error err;
    ts_policy policy;
    ts_fabric tree;
    ts_model_params params;
    hw_set hw = { 0 };
    ts_mpi_plan mpi = { 0 };
    ts_hostlist slurm_hosts = { 0 };
    ts_job_placement jp;
    memset(&jp, 0, sizeof jp);
    ts_hierarchy *h = &jp.hier;
    ts_placement *pl = &jp.placement;
    ts_groups *g = &jp.groups;
    outputs w;
    const char *dirs[CLI_POLICY_DIRS];
    int status = CLI_FAIL;
    ts_fabric_init(&tree);
    memset(&params, 0, sizeof params);
    memset(&w, 0, sizeof w);
    cli_policy_dirs(dirs);

    /* everything is read and checked before anything is written */
    if ((rc = ts_policy_load(&policy, o.policy, dirs, &err)) != TS_OK) {
        cli_error("place", "%s", err.text);
        return status_of(rc);
    }
    if ((rc = ts_model_params_profile(&params, o.profile, &err)) != TS_OK ||
        (o.params && (rc = ts_model_params_load_yaml(&params, o.params, &err)) != TS_OK)) {
        cli_error("place", "%s", err.text);
        status = status_of(rc);
        goto out;
    }
    if ((rc = ts_fabric_load_tree(&tree, o.tree, &err)) != TS_OK) {
        cli_error("place", "%s", err.text);
        status = status_of(rc);
        goto out;
    }
    if ((status = load_hwloc(&o, &tree, &hw)) != CLI_OK)
        goto out;
    status = CLI_FAIL;
    ts_place_options po = { o.ranks, o.cpus_per_rank };
    if ((rc = ts_place_job(&jp, &tree, hw.of_node, &policy, &po, &params, &err)) != TS_OK) {
        cli_error("place", "%s", err.text);
        status = status_of(rc);
        goto out;
    }
    if (policy.kind != TS_PLACE_MEASURE_ONLY && o.env_rank >= pl->nranks) {
        cli_error("place", "--env-rank %d: there are only %d ranks", o.env_rank, pl->nranks);
        status = CLI_USAGE;
        goto out;
    }
    if (cli_mkdir_p(o.out) != 0) {
        cli_error("place", "cannot create %s: %s", o.out, strerror(errno));
        goto out;
    }
    /* what the MPI launchers the policy names can be told of this placement, and what not; in
     * a Slurm job Hydra's proxies start by srun, in the job's node order */
    char note[1024];
    const char *job_nodes = getenv("SLURM_JOB_NODELIST");
    if (job_nodes && ts_hostlist_expand(job_nodes, strlen(job_nodes), &slurm_hosts, &err) != TS_OK) {
        cli_error("place", "SLURM_JOB_NODELIST: %s", err.text);
        goto out;
    }
    ts_mpi_nodes slurm_order = {job_nodes ? slurm_hosts.hosts : NULL, (int)slurm_hosts.count};
    if ((rc = ts_mpi_plan_make(&mpi, pl, &policy, &slurm_order, note, sizeof note, &err)) != TS_OK) {
        cli_error("place", "%s", err.text);
        goto out;
    }
    if (note[0])
        fprintf(stderr, "toposcope place: note: %s\n", note);
    placed P = { &tree, h, pl, g, &policy, &mpi };
    if (write_outputs(&o, &w, &P) != 0)
        goto out;
    if (pl->nranks > 0)
        printf("placed %d ranks on %d of %d nodes (policy %s, %s, %d slots) -> %s\n", pl->nranks,
               g->level[ts_groups_level(g, "node")].ngroups, h->nnodes, policy.name,
               ts_placement_kind_name(policy.kind), pl->capacity, o.out);
    else
        printf("hints for %d nodes (policy %s, no placement) -> %s\n", h->nnodes, policy.name, o.out);
    status = CLI_OK;
out:
    out_discard(&w);
    ts_mpi_plan_free(&mpi);
    ts_hostlist_free(&slurm_hosts);
    ts_job_placement_free(&jp);
    hw_set_free(&hw);
    ts_fabric_free(&tree);
    ts_model_params_free(&params);
    return status;
}
