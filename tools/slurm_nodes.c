/* toposcope CLI — the node names Slurm knows: `scontrol show nodes -o` (one line per node,
 * "NodeName=NAME Arch=... "), or a hostlist the admin gives. Slurm refuses a whole topology file
 * that names a node it does not know, so the report writes only these. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "slurm_nodes.h"
#include "toposcope/hostlist.h"

/* Only the start of a line matters: NodeName= comes first. Longer lines are cut, not refused. */
#define LINE_KEEP 4096

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int add_name(slurm_nodes *s, const char *name, size_t len)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        char **t = realloc(s->names, sizeof *t * cap);
        if (!t)
            return -1;
        s->names = t;
        s->cap = cap;
    }
    if (!(s->names[s->n] = strndup(name, len)))
        return -1;
    s->n++;
    return 0;
}

/* One line of scontrol's output: its NodeName= value, if it has one. */
static int take_line(slurm_nodes *s, const char *line, size_t len)
{
    while (len && (*line == ' ' || *line == '\t'))
        line++, len--;
    static const char key[] = "NodeName=";
    if (len <= sizeof key - 1 || strncmp(line, key, sizeof key - 1))
        return 0;
    line += sizeof key - 1;
    len -= sizeof key - 1;
    size_t name = strcspn(line, " \t\r");
    name = name < len ? name : len;
    return name && name <= TS_HOSTNAME_MAX ? add_name(s, line, name) : 0;
}

/* scontrol's standard output, line by line, until it closes or the deadline passes. */
static int read_lines(int fd, double deadline, slurm_nodes *s, int *timed_out)
{
    char line[LINE_KEEP], buf[8192];
    size_t len = 0;
    for (;;) {
        int ms = (int)((deadline - now_s()) * 1000);
        struct pollfd p = { fd, POLLIN, 0 };
        if (ms <= 0 || poll(&p, 1, ms) == 0) {
            *timed_out = 1;
            return 0;
        }
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -1 : take_line(s, line, len);
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] == '\n') {
                if (take_line(s, line, len))
                    return -1;
                len = 0;
            } else if (len < sizeof line) {
                line[len++] = buf[i];
            }
        }
    }
}

static pid_t spawn(const char *scontrol, int out)
{
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 2);
        }
        dup2(out, 1);
        char *argv[] = { (char *)scontrol, "show", "nodes", "-o", NULL };
        execvp(scontrol, argv);
        _exit(127);
    }
    return pid;
}

/* Its exit status, 127 when it could not be run, -1 when killed at the deadline. */
static int reap(pid_t pid, double deadline)
{
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if ((w < 0 && errno != EINTR) || now_s() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
    }
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int slurm_nodes_from_scontrol(const char *scontrol, int timeout_s, slurm_nodes *s, char *why, size_t max)
{
    memset(s, 0, sizeof *s);
    int pfd[2];
    if (pipe(pfd) != 0) {
        snprintf(why, max, "pipe: %s", strerror(errno));
        return SLURM_NODES_FAILED;
    }
    double deadline = now_s() + timeout_s;
    pid_t pid = spawn(scontrol, pfd[1]);
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        snprintf(why, max, "fork: %s", strerror(errno));
        return SLURM_NODES_FAILED;
    }
    int timed_out = 0, rc = read_lines(pfd[0], deadline, s, &timed_out);
    close(pfd[0]);
    int status = reap(pid, deadline);
    if (status == 127 && !s->n) {
        snprintf(why, max, "%s cannot be run (not on PATH?)", scontrol);
        rc = SLURM_NODES_ABSENT;
    } else if (timed_out || status < 0) {
        snprintf(why, max, "%s show nodes -o was stopped after %d s", scontrol, timeout_s);
        rc = SLURM_NODES_FAILED;
    } else if (rc || status) {
        snprintf(why, max, rc ? "out of memory reading %s" : "%s show nodes -o exited with status %d", scontrol,
                 status);
        rc = SLURM_NODES_FAILED;
    } else if (!s->n) {
        snprintf(why, max, "%s show nodes -o listed no NodeName=", scontrol);
        rc = SLURM_NODES_FAILED;
    }
    if (rc != SLURM_NODES_OK)
        slurm_nodes_free(s);
    else
        qsort(s->names, s->n, sizeof *s->names, cmp_names);
    return rc;
}

int slurm_nodes_from_hostlist(const char *expr, slurm_nodes *s, char *why, size_t max)
{
    memset(s, 0, sizeof *s);
    ts_hostlist hl;
    ts_error err;
    if (ts_hostlist_expand(expr, strlen(expr), &hl, &err) != TS_OK) {
        snprintf(why, max, "%s", err.text);
        return -1;
    }
    s->names = hl.hosts;         /* taken over: the list's strings are malloc'd one by one */
    s->n = s->cap = hl.count;
    qsort(s->names, s->n, sizeof *s->names, cmp_names);
    return 0;
}

int slurm_nodes_has(const char *name, void *arg)
{
    const slurm_nodes *s = arg;
    return s->n && bsearch(&name, s->names, s->n, sizeof *s->names, cmp_names) != NULL;
}

void slurm_nodes_free(slurm_nodes *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    memset(s, 0, sizeof *s);
}
