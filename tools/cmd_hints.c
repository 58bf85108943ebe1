/* toposcope hints — read hints.yaml back: check it, print one member's environment, or start a
 * task with it. The --exec form is what the SPANK plugin's task_init will do inside slurmstepd
 * (the same ts_hints_* calls, spank_setenv instead of setenv); until then it wraps the program
 * in `srun toposcope hints --exec PROG`. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "toposcope/emit.h"
#include "toposcope/hints_read.h"
#include "toposcope/textout.h"

static void hints_usage(FILE *out)
{
    fprintf(out,
            "usage: toposcope hints [--hints FILE] [--rank R | --node NAME] [--exec PROG [ARGS...]]\n"
            "\n"
            "Read the hints.yaml of 'toposcope place' back.\n"
            "\n"
            "  toposcope hints --hints FILE               check the whole file; print its levels\n"
            "                                             with their group counts and sizes\n"
            "  toposcope hints --hints FILE --rank R      print rank R's environment (as hints.env)\n"
            "  toposcope hints --hints FILE --node NAME   the same for a node of measure-only hints\n"
            "  toposcope hints [--hints FILE] --exec PROG [ARGS...]\n"
            "                                             run PROG with this task's TOPOSCOPE_*\n"
            "                                             environment, e.g. srun toposcope hints\n"
            "                                             --exec ./app\n"
            "\n"
            "options:\n"
            "  --hints FILE   hints.yaml (default: $TOPOSCOPE_HINTS)\n"
            "  --rank R       the rank (with --exec, default: $OMPI_COMM_WORLD_RANK, $PMIX_RANK or\n"
            "                 $SLURM_PROCID, the first that is set)\n"
            "  --node NAME    the node, for hints of measure-only (default with --exec: this host)\n"
            "  --exec PROG    the rest of the line is the program and its arguments; it runs only\n"
            "                 when the hints put this rank on this host ($SLURMD_NODENAME or the\n"
            "                 host name), so a task started elsewhere never gets another's groups\n"
            "  -h, --help     this text\n"
            "\n"
            "The environment: TOPOSCOPE_POLICY, TOPOSCOPE_HINTS, TOPOSCOPE_LEVELS, TOPOSCOPE_RANK\n"
            "(TOPOSCOPE_NODE_INDEX for a node), TOPOSCOPE_NODE, TOPOSCOPE_CPUS, and per level\n"
            "TOPOSCOPE_GROUP_<LEVEL> and TOPOSCOPE_LEADER_<LEVEL>.\n"
            "exit status: 0 done, 1 failure, 2 bad input (the message names FILE:LINE:COLUMN)\n");
}

/* The rank a launcher gave this task: Open MPI's own variable first, because inside mpirun's
 * daemons (started by srun) SLURM_PROCID is the daemon's, not the rank's. */
static const char *launcher_rank(const char **from)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", NULL };
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            *from = vars[i];
            return v;
        }
    }
    return NULL;
}

static void env_print(void *out, const char *key, const char *value)
{
    ts_emit_env_line(out, key, value);
}

static void env_set(void *bad, const char *key, const char *value)
{
    if (setenv(key, value, 1) != 0)
        *(int *)bad = 1;
}

/* Every level with its group count and the smallest and largest group. */
static void print_summary(const ts_hints *h, const char *path)
{
    printf("%s: version %d, policy %s, %d %s, %d levels\n", path, h->version,
           *h->policy ? h->policy : "(none)", h->nmembers, h->members_are_nodes ? "nodes" : "ranks",
           h->nlevels);
    for (int l = 0; l < h->nlevels; l++) {
        int ng = h->level[l].groups;
        int *size = calloc((size_t)ng, sizeof *size);
        if (!size)
            return;
        for (int m = 0; m < h->nmembers; m++)
            size[h->group[(size_t)m * h->nlevels + l]]++;
        int lo = INT_MAX, hi = 0;
        for (int g = 0; g < ng; g++) {
            lo = size[g] < lo ? size[g] : lo;
            hi = size[g] > hi ? size[g] : hi;
        }
        printf("  %-10s %7d groups of %d..%d %s\n", h->level[l].name, ng, ng ? lo : 0, hi,
               h->members_are_nodes ? "nodes" : "ranks");
        free(size);
    }
}

int cmd_hints(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "hints", required_argument, NULL, 'f' }, { "rank", required_argument, NULL, 'r' },
        { "node", required_argument, NULL, 'n' },  { "exec", no_argument, NULL, 'x' },
        { "help", no_argument, NULL, 'h' },        { NULL, 0, NULL, 0 },
    };
    const char *path = getenv("TOPOSCOPE_HINTS"), *rank_arg = NULL, *node = NULL;
    const char *rank_from = "--rank";
    int exec = 0, c;
    /* '+': stop at the first non-option, so PROG's own options after --exec stay PROG's */
    while (!exec && (c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': path = optarg; break;
        case 'r': rank_arg = optarg; break;
        case 'n': node = optarg; break;
        case 'x': exec = 1; break;
        case 'h': hints_usage(stdout); return CLI_OK;
        default: hints_usage(stderr); return CLI_USAGE;
        }
    }
    if (!path || !*path) {
        cli_error("hints", "no hints file: give --hints FILE or set TOPOSCOPE_HINTS");
        return CLI_USAGE;
    }
    if (exec && optind >= argc) {
        cli_error("hints", "--exec needs a program to run");
        return CLI_USAGE;
    }
    if (!exec && optind < argc) {
        cli_error("hints", "unexpected argument '%s' (a program to run goes after --exec)", argv[optind]);
        return CLI_USAGE;
    }
    if (rank_arg && node) {
        cli_error("hints", "--rank and --node exclude each other");
        return CLI_USAGE;
    }
    char host[2 * TS_HINTS_NODE_MAX + 32];
    char here[TS_HINTS_NODE_MAX];
    if (exec && !rank_arg && !node) {
        rank_arg = launcher_rank(&rank_from);
        if (gethostname(here, sizeof here) != 0)
            here[0] = '\0';
        here[sizeof here - 1] = '\0';
        here[strcspn(here, ".")] = '\0';
        node = getenv("SLURMD_NODENAME") ? getenv("SLURMD_NODENAME") : here;
    }
    ts_hints_select sel = { -1, node };
    int select = rank_arg || node;
    if (rank_arg) {
        uint64_t v;
        if (cli_parse_u64(rank_arg, &v) != 0 || v >= INT_MAX) {
            cli_error("hints", "%s must be a rank (an integer from 0), not '%s'", rank_from, rank_arg);
            return CLI_USAGE;
        }
        sel.rank = (int)v;
    }
    ts_hints h;
    ts_error err;
    int rc = ts_hints_load(&h, path, select ? &sel : NULL, &err);
    if (rc != TS_OK) {
        cli_error("hints", "%s", err.text);
        return rc == TS_EINPUT || rc == TS_ELIMIT ? CLI_USAGE : CLI_FAIL;
    }
    if (!select) {
        print_summary(&h, path);
        ts_hints_free(&h);
        return CLI_OK;
    }
    ts_hints_env e;
    ts_hints_member_env(&h, 0, &e);
    char abspath[PATH_MAX];
    if (!realpath(path, abspath))
        snprintf(abspath, sizeof abspath, "%s", path);
    if (!exec) {
        ts_emit_env_line(stdout, "TOPOSCOPE_POLICY", h.policy);
        ts_emit_env_line(stdout, "TOPOSCOPE_HINTS", abspath);
        ts_hints_env_each(&e, env_print, stdout);
        ts_hints_free(&h);
        return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
    }
    if (!ts_hints_on_this_host(e.node, host, sizeof host)) {
        cli_error("hints", "%s puts %s %d on %s, but this task runs on %s: start the job with the "
                  "matching rankfile or hostfile (srun -m arbitrary)", path,
                  e.is_node ? "node" : "rank", e.index, e.node, host);
        ts_hints_free(&h);
        return CLI_FAIL;
    }
    int bad = 0;
    env_set(&bad, "TOPOSCOPE_POLICY", h.policy);
    env_set(&bad, "TOPOSCOPE_HINTS", abspath);
    ts_hints_env_each(&e, env_set, &bad);
    ts_hints_free(&h);
    if (bad) {
        cli_error("hints", "cannot set the environment: %s", strerror(errno));
        return CLI_FAIL;
    }
    execvp(argv[optind], argv + optind);
    cli_error("hints", "cannot run %s: %s", argv[optind], strerror(errno));
    return CLI_FAIL;
}
