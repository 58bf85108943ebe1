/* toposcope CLI — the helpers every subcommand uses (cli.h): messages, numbers, output files,
 * where policies are looked up. Kept apart from main (toposcope.c), which only dispatches. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"

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

static char installed_policies[PATH_MAX + 32], tree_policies[PATH_MAX + 16];

/* Where a policy NAME is looked up: $TOPOSCOPE_POLICY_DIR, the site's /etc/toposcope/policies,
 * then beside the program: PREFIX/share/toposcope/policies for an installed PREFIX/bin/toposcope
 * (make install, the packages), the tree's policies/ for TREE/build/bin/toposcope. Both are
 * found from /proc/self/exe, so an installed copy needs no path compiled in. */
void cli_policy_dirs(const char **dirs)
{
    int n = 0;
    const char *env = getenv("TOPOSCOPE_POLICY_DIR");
    if (env && *env)
        dirs[n++] = env;
    dirs[n++] = "/etc/toposcope/policies";
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');          /* PREFIX/bin/toposcope -> PREFIX/bin */
        if (slash) {
            *slash = '\0';
            slash = strrchr(exe, '/');            /* -> PREFIX */
        }
        if (slash) {
            *slash = '\0';
            snprintf(installed_policies, sizeof installed_policies, "%s/share/toposcope/policies",
                     exe);
            dirs[n++] = installed_policies;
            slash = strrchr(exe, '/');            /* TREE/build -> TREE */
        }
        if (slash) {
            *slash = '\0';
            snprintf(tree_policies, sizeof tree_policies, "%s/policies", exe);
            dirs[n++] = tree_policies;
        }
    }
    dirs[n] = NULL;
}
