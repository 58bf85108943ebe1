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

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "toposcope %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int cli_mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    if (strlen(path) >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(buf, path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

FILE *cli_open_out(const char *cmd, const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        cli_error(cmd, "cannot write %s: %s", path, strerror(errno));
    return f;
}

int cli_close_out(const char *cmd, FILE *f, const char *dir, const char *name)
{
    int bad = ferror(f);
    if (fclose(f) != 0)
        bad = 1;
    if (bad) {
        cli_error(cmd, "error writing %s/%s: %s", dir, name, strerror(errno));
        return -1;
    }
    return 0;
}

static char exe_policies[PATH_MAX + 16];

void cli_policy_dirs(const char **dirs)
{
    int n = 0;
    const char *env = getenv("TOPOSCOPE_POLICY_DIR");
    if (env && *env)
        dirs[n++] = env;
    dirs[n++] = "/etc/toposcope/policies";
    /* build/bin/toposcope -> policies/ of the tree it was built in */
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        for (int up = 0; up < 3; up++) {
            char *slash = strrchr(exe, '/');
            if (!slash)
                break;
            *slash = '\0';
        }
        snprintf(exe_policies, sizeof exe_policies, "%s/policies", exe);
        dirs[n++] = exe_policies;
    }
    dirs[n] = NULL;
}
