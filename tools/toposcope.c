/* toposcope — command-line front-end over libtoposcope. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: toposcope COMMAND [OPTIONS]\n"
            "\n"
            "Make Slurm jobs aware of the network they landed on.\n"
            "\n"
            "commands:\n"
            "  sim     simulate a fabric, run a discovery method on it, write the inferred tree\n"
            "  gen     write a generated fabric (fat tree, regular or irregular tree) as topology.conf\n"
            "  place   merge the switch tree with each node's hwloc tree, place ranks by a policy,\n"
            "          write rankfile, hostfile, machinefile and hierarchy hints\n"
            "  hints   check a hints.yaml, print a rank's TOPOSCOPE_* environment, or run a task\n"
            "          with it (srun toposcope hints --exec PROG)\n"
            "  report  rank suspect links across the epilog's records, check topology.conf against\n"
            "          the measured leaf groups, rebuild the baseline the epilogs read\n"
            "  probe   measure the network between the nodes of a job step, as a user\n"
            "          (srun --mpi=pmix -N<n> --ntasks-per-node=1 toposcope probe --out DIR)\n"
            "\n"
            "Run 'toposcope COMMAND --help' for the options of a command.\n");
}

/* `toposcope probe` is the node agents as a job step: a program of its own next to this one
 * (build/bin/toposcope-probe), so this front-end needs neither PMIx nor MUNGE. */
static int run_probe(char **argv)
{
    char self[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        cli_error("probe", "cannot find this program's directory: %s", strerror(errno));
        return CLI_USAGE;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    snprintf(path, sizeof path, "%s/toposcope-probe", self);
    execv(path, argv);
    cli_error("probe", "cannot run %s: %s (it is built with the node agents: make prolog)", path,
              strerror(errno));
    return CLI_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(cmd, "sim"))
        return cmd_sim(argc - 1, argv + 1);
    if (!strcmp(cmd, "gen"))
        return cmd_gen(argc - 1, argv + 1);
    if (!strcmp(cmd, "place"))
        return cmd_place(argc - 1, argv + 1);
    if (!strcmp(cmd, "hints"))
        return cmd_hints(argc - 1, argv + 1);
    if (!strcmp(cmd, "report"))
        return cmd_report(argc - 1, argv + 1);
    if (!strcmp(cmd, "probe"))
        return run_probe(argv + 1);
    fprintf(stderr, "toposcope: unknown command '%s'\n", cmd);
    usage(stderr);
    return CLI_USAGE;
}
