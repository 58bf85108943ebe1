/* spank_toposcope — the SPANK plugin: `sbatch/salloc/srun --topo-aware[=POLICY]`.
 *
 * Thin on purpose: it reads its settings (plugstack.conf arguments over toposcope.yaml), and
 *   the option  (sbatch, salloc, srun) refuses a POLICY name no policy directory holds: the one
 *                                    failure it ever causes, the user's, before the job exists;
 *   job_prolog  (every node, root)   runs toposcope-prolog with a hard deadline;
 *   task_init   (every task, user)   exports TOPOSCOPE_* and the MPI launchers' variables from
 *                                    the job's spool directory;
 *   job_epilog  (every node, root)   removes the job's spool directory.
 * Every hook returns 0: Slurm 23.11 fails a step on most SPANK errors, 25.05 takes any non-zero
 * return for one, a failing prolog drains its node, and a measurement that went wrong must cost
 * neither a job nor a node (the job runs with a fallback placement and TOPOSCOPE_STATUS says why).
 * Jobs without the option (and mode opt-in) cost one option lookup per hook: no fork, no file
 * access. See spank-toposcope(8). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>
#include "toposcope/hints_read.h"
#include "toposcope/hostlist.h"
#include "toposcope/mpienv.h"
#include "toposcope/policy.h"
#include "toposcope/siteconf.h"
#include "toposcope/spool.h"
#include "toposcope/userfile.h"

SPANK_PLUGIN(toposcope, 1);

/* Slurm 25.05 lets a plugin say that a failure of its init fails the job rather than draining
 * the node. Its value is an enum member, invisible to #ifdef, so mk/spank.mk compiles a probe
 * against the headers and defines TOPOSCOPE_SPANK_JOB_FAILURE where they have it. */
#ifdef TOPOSCOPE_SPANK_JOB_FAILURE
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

#ifndef TOPOSCOPE_LIBEXECDIR
#define TOPOSCOPE_LIBEXECDIR "/usr/local/libexec/toposcope"
#endif
#ifndef TOPOSCOPE_DATADIR
#define TOPOSCOPE_DATADIR "/usr/local/share/toposcope"
#endif
#define DEFAULT_CONF "/etc/toposcope/toposcope.yaml"
/* Past the budget the agent needs up to 150 ms for its fallback files (prolog/agent.h); the
 * plugin kills it 30 ms after that, so the prolog as a whole stays within budget + 200 ms. */
#define KILL_GRACE_MS 180
#define STDERR_KEEP 1024
#define EPILOG_BUDGET_MS 5000
#define POLICY_READ_MS 500      /* reading the job's policy file as the user */
#define REAP_MS 10               /* waiting for a killed agent to go */
/* the spool parent (spool with %n expanded), the job's directory in it, a file in that */
#define PARENT_MAX (TS_SITECONF_PATH_MAX + 512)
#define DIR_MAX (PARENT_MAX + 16)
#define FILE_MAX (DIR_MAX + 32)

/* Per-process state: a SPANK plugin is loaded afresh in every process that uses it. */
static ts_siteconf conf;
static char conf_path[TS_SITECONF_PATH_MAX] = DEFAULT_CONF;
static int conf_given, mode_given, conf_loaded;
static char plugstack_args[64][TS_SITECONF_PATH_MAX + 32];
static int nplugstack_args;
static int opt_seen;                 /* the option was given (local/allocator/remote callback) */
static char opt_value[TS_SITECONF_PATH_MAX];

static int policy_known(const char *name);

/* Where the job is submitted (remote 0) a mistaken POLICY name is refused: an option callback's
 * failure stops sbatch, salloc or srun in every Slurm release, optional plugin or required, so
 * it costs that job alone, before any node works for it. On the nodes (remote 1) it never
 * fails: the prolog records a policy it cannot find, and the job runs. */
static int opt_cb(int val, const char *optarg, int remote)
{
    opt_seen = 1;
    snprintf(opt_value, sizeof opt_value, "%s", optarg ? optarg : "");
    return remote || policy_known(opt_value) ? 0 : -1;
}

static struct spank_option topo_option = {
    "topo-aware", "[POLICY]",
    "measure the network between the job's nodes and place its ranks by POLICY (a policy "
    "name or file; default: the site's); see TOPOSCOPE_* in the job",
    2, 0, opt_cb,
};

/* ---- settings ---- */

static void apply_args(int log)
{
    ts_error err;
    for (int i = 0; i < nplugstack_args; i++)
        if (ts_siteconf_set(&conf, plugstack_args[i], &err) != TS_OK && log)
            slurm_error("toposcope: plugstack.conf: %s; ignored", err.text);
}

/* toposcope.yaml under the plugstack arguments; read when a hook needs it, not in init, so a
 * job without the option touches no file. */
static void load_conf(void)
{
    if (conf_loaded)
        return;
    conf_loaded = 1;
    ts_error err;
    if ((conf_given || access(conf_path, F_OK) == 0) &&
        ts_siteconf_load(&conf, conf_path, &err) != TS_OK)
        slurm_error("toposcope: %s; using the built-in settings and plugstack.conf", err.text);
    apply_args(0);
}

/* The directories a policy NAME is looked up in: the prolog's --policy-dir, then the system's. */
static void policy_dirs(const char *dirs[3])
{
    dirs[0] = conf.policy_dir[0] ? conf.policy_dir : "/etc/toposcope/policies";
    dirs[1] = conf.policy_dir[0] ? "/etc/toposcope/policies" : NULL;
    dirs[2] = NULL;
}

/* Whether --topo-aware=VALUE may go on, judged where the job is submitted. Refused, with a
 * message to the user: a NAME that cannot be one, or that no policy directory here holds. Let
 * through: no value (the site's default), a path (the prolog reads it with the user's rights),
 * and any name on a host that has none of the policy directories (it cannot judge). */
static int policy_known(const char *value)
{
    load_conf();
    if (!value[0] || strchr(value, '/') || conf.mode == TS_MODE_OFF)
        return 1;
    const char *dirs[3];
    policy_dirs(dirs);
    int any_dir = 0;
    struct stat st;
    for (int k = 0; dirs[k]; k++)
        any_dir |= stat(dirs[k], &st) == 0 && S_ISDIR(st.st_mode);
    if (!any_dir && ts_policy_name_ok(value))
        return 1;
    char path[TS_SITECONF_PATH_MAX + 80];
    ts_error err = {{0}};
    if (ts_policy_find_site(value, dirs, path, sizeof path, &err) == TS_OK)
        return 1;
    slurm_error("toposcope: --topo-aware=%s: %s; the shipped ones are compact, spread, block and "
                "measure-only", value, err.text);
    return 0;
}

/* Defaults, then the plugstack arguments. Slurm calls slurm_spank_init in the allocator, local,
 * remote and slurmd contexts but not before job_prolog/job_epilog, so every hook makes sure. */
static int configured;

static void configure(int ac, char **av, int log)
{
    if (configured)
        return;
    configured = 1;
    ts_siteconf_default(&conf, TOPOSCOPE_LIBEXECDIR "/toposcope-prolog",
                        TOPOSCOPE_DATADIR "/policies");
    snprintf(conf.epilog, sizeof conf.epilog, "%s", TOPOSCOPE_LIBEXECDIR "/toposcope-epilog");
    for (int i = 0; i < ac; i++) {
        if (strncmp(av[i], "conf=", 5) == 0) {
            snprintf(conf_path, sizeof conf_path, "%s", av[i] + 5);
            conf_given = 1;
            continue;
        }
        ts_error err;
        /* checked now, so a typo is logged (by slurmd and each prolog) and then ignored */
        if (ts_siteconf_set(&conf, av[i], &err) != TS_OK) {
            if (log)
                slurm_error("toposcope: plugstack.conf: %s; ignored", err.text);
            continue;
        }
        if (strncmp(av[i], "mode=", 5) == 0)
            mode_given = 1;
        if (nplugstack_args < (int)(sizeof plugstack_args / sizeof plugstack_args[0]))
            snprintf(plugstack_args[nplugstack_args++], sizeof plugstack_args[0], "%s", av[i]);
    }
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context();
    configure(ac, av, ctx == S_CTX_SLURMD);
    if (spank_option_register(sp, &topo_option) != ESPANK_SUCCESS && ctx != S_CTX_SLURMD &&
        ctx != S_CTX_JOB_SCRIPT)
        slurm_error("toposcope: cannot register --topo-aware");
    return 0;
}

/* Whether this job asked (or the site always measures), and with which policy. */
static int job_wants(spank_t sp, char *policy, size_t max)
{
    char *arg = NULL;
    int asked = opt_seen || spank_option_getopt(sp, &topo_option, &arg) == ESPANK_SUCCESS;
    if (asked && !opt_seen)
        snprintf(opt_value, sizeof opt_value, "%s", arg ? arg : "");
    if (!asked && mode_given && conf.mode != TS_MODE_ALWAYS)
        return 0;
    load_conf();
    if (conf.mode == TS_MODE_OFF || (!asked && conf.mode != TS_MODE_ALWAYS))
        return 0;
    snprintf(policy, max, "%s", asked && opt_value[0] ? opt_value : conf.default_policy);
    return 1;
}

/* spool with %n replaced by the node's name (lib/site/spool.c); -1, logged, when it is too long */
static int spool_parent(const char *node, char *out, size_t max)
{
    ts_error err = {{0}};
    if (ts_spool_parent(conf.spool, node, out, max, &err) == TS_OK)
        return 0;
    slurm_error("toposcope: %s (spool in %s)", err.text, conf_path);
    return -1;
}
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- job_prolog ---- */

/* Written when the agent left no status.yaml (killed, or it could not start), so the job's
 * tasks still learn why. Best effort: a spool that cannot be written is logged. */
static void write_fallback_status(const char *parent, uint32_t job, uid_t uid, gid_t gid,
                                  const char *why)
{
    char job_s[16];
    snprintf(job_s, sizeof job_s, "%u", job);
    ts_error err = {{0}};
    int fd = ts_spool_open(parent, job_s, uid, gid, &err);
    if (fd < 0) {
        slurm_error("toposcope: job %u: %s", job, err.text);
        return;
    }
    if (faccessat(fd, "status.yaml", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        close(fd);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc = f ? TS_OK : ts_fail(&err, TS_ENOMEM, "out of memory");
    if (f) {
        fprintf(f, "# written by the SPANK plugin: the agent left no status\n");
        ts_status_head head = {.job = job_s, .status = "fallback", .reason = why};
        ts_status_emit_head(f, &head);
        if (ferror(f) | fclose(f))
            rc = ts_fail(&err, TS_ENOMEM, "out of memory");
    }
    if (rc == TS_OK)
        rc = ts_spool_write(fd, "status.yaml", text, len, uid, gid, &err);
    if (rc != TS_OK)
        slurm_error("toposcope: job %u: cannot write %s/%s/status.yaml: %s", job, parent, job_s,
                    err.text);
    free(text);
    close(fd);
}
/* The agent's stderr, one line: newlines become "; ". */
static void one_line(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
    for (char *p = s; *p; p++)
        if (*p == '\n')
            *p = ';';
}

/* waitpid, but for at most ms: a process killed while stuck in the kernel (a hung file
 * system) may take its time to go, and the prolog must not wait for it. Left, it is reaped by
 * init once this process ends. */
static void reap_within(pid_t pid, int *status, double ms)
{
    double until = now_ms() + ms;
    while (waitpid(pid, status, WNOHANG) == 0 && now_ms() < until) {
        struct timespec pause = {0, 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/* Run argv with stdin and stdout on /dev/null, stderr kept (one line, at most STDERR_KEEP
 * bytes, in err); SIGKILL to its whole process group at `deadline` (now_ms() clock). Returns its
 * wait status, -1 when it could not be started. */
static int run_bounded(char *const argv[], int input, double deadline, char err[STDERR_KEEP + 1],
                       int *killed)
{
    int pipefd[2];
    *killed = 0;
    err[0] = '\0';
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);           /* one group, so the deadline kills every process of it */
        int devnull = open("/dev/null", O_RDWR);
        /* slurmd may start us with fd 0 closed, so the input can be fd 0 itself: dup2 would
         * then leave its close-on-exec flag set */
        if (input == 0)
            fcntl(0, F_SETFD, 0);
        else
            dup2(input >= 0 ? input : devnull, 0);
        dup2(devnull, 1);
        dup2(pipefd[1], 2);
        execv(argv[0], argv);
        dprintf(2, "cannot run %s: %s (set it in plugstack.conf or toposcope.yaml)", argv[0],
                strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    if (pid < 0) {
        close(pipefd[0]);
        return -1;
    }
    size_t errlen = 0;
    int status = 0, fd = pipefd[0];
    for (;;) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            break;
        double left = deadline - now_ms();
        if (left <= 0) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            reap_within(pid, &status, REAP_MS);
            *killed = 1;
            break;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int wait_ms = left < 5 ? 1 : 5;
        if (fd >= 0 && poll(&p, 1, wait_ms) > 0) {
            char chunk[512];
            ssize_t n = read(fd, chunk, sizeof chunk);
            if (n <= 0) {
                close(fd);
                fd = -1;
            } else if (errlen < STDERR_KEEP) {
                size_t take = (size_t)n < STDERR_KEEP - errlen ? (size_t)n : STDERR_KEEP - errlen;
                memcpy(err + errlen, chunk, take);
                errlen += take;
            }
        } else if (fd < 0) {
            poll(NULL, 0, wait_ms);
        }
    }
    if (fd >= 0) {
        fcntl(fd, F_SETFL, O_NONBLOCK);
        ssize_t n;
        while (errlen < STDERR_KEEP && (n = read(fd, err + errlen, STDERR_KEEP - errlen)) > 0)
            errlen += (size_t)n;
        close(fd);
    }
    err[errlen] = '\0';
    one_line(err);
    return status;
}

/* The job's policy FILE read with the user's rights (lib/site/userfile.c), within
 * POLICY_READ_MS, into a memfd for the agent's stdin: its fd, or -1 with the reason in
 * refused (which names the file and what was wrong, never its content). */
static int policy_as_user(const char *path, uid_t uid, gid_t gid, char refused[TS_ERROR_TEXT_MAX])
{
    char *text = NULL;
    size_t len = 0;
    ts_error err = {{0}};
    int fd = -1;
    if (ts_read_user_file(path, uid, gid, TS_POLICY_MAX_BYTES, POLICY_READ_MS, &text, &len,
                          &err) == TS_OK) {
        fd = memfd_create("toposcope-policy", MFD_CLOEXEC);
        if (fd < 0 || write(fd, text, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0) {
            snprintf(err.text, sizeof err.text, "%.300s: cannot hand it to the agent: %s", path,
                     strerror(errno));
            if (fd >= 0)
                close(fd);
            fd = -1;
        }
    }
    free(text);
    if (fd < 0)
        snprintf(refused, TS_ERROR_TEXT_MAX, "%s", err.text);
    return fd;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    char policy[TS_SITECONF_PATH_MAX];
    configure(ac, av, 1);
    if (!job_wants(sp, policy, sizeof policy))
        return 0;
    double t0 = now_ms();
    const char *job_s = getenv("SLURM_JOB_ID"), *nodes = getenv("SLURM_NODELIST");
    const char *self = getenv("SLURMD_NODENAME");
    uint32_t job = 0;
    if (!job_s || !nodes || !self || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) {
        slurm_error("toposcope: the job prolog has no SLURM_JOB_ID, SLURM_NODELIST or "
                    "SLURMD_NODENAME; not measuring (the job runs as usual)");
        return 0;
    }
    gid_t gid = 0;
    uid_t uid = 0;
    spank_get_item(sp, S_JOB_GID, &gid);
    spank_get_item(sp, S_JOB_UID, &uid);
    /* A file the job named is read here, with the user's rights, and handed to the agent as
     * bytes on its stdin: root never opens a path a user chose (a FIFO, a symlink swapped in, a
     * file only root may read). A site policy NAME goes as it is; the agent looks it up. */
    int policy_in = -1;
    char refused[TS_ERROR_TEXT_MAX] = "";
    if (strchr(policy, '/'))
        policy_in = policy_as_user(policy, uid, gid, refused);
    char parent[PARENT_MAX], budget[32], pbase[16], pspan[16], step_ns[32], from[32];
    if (spool_parent(self, parent, sizeof parent) != 0)
        return 0;
    snprintf(budget, sizeof budget, "%ld", conf.budget_ms);
    snprintf(pbase, sizeof pbase, "%ld", conf.port_base);
    snprintf(pspan, sizeof pspan, "%ld", conf.port_span);
    snprintf(step_ns, sizeof step_ns, "%ld", conf.level_step_ns);
    /* the agent's budget runs from t0, as the kill below does: starting it takes time too */
    snprintf(from, sizeof from, "%.0f", t0 * 1e3);
    char *argv[26] = {conf.prolog, "--job", (char *)job_s, "--nodes", (char *)nodes, "--self",
                      (char *)self, strchr(policy, '/') ? "--policy-stdin" : "--policy", policy,
                      "--policy-dir", conf.policy_dir, "--budget-ms", budget, "--budget-from", from,
                      "--port-base", pbase, "--port-span", pspan, "--spool", parent};
    int argc = 21;
    if (conf.level_step_ns > 0) {
        argv[argc++] = "--level-step-ns";
        argv[argc++] = step_ns;
    }
    if (refused[0]) {
        argv[argc++] = "--policy-error";
        argv[argc++] = refused;
    }
    argv[argc] = NULL;
    char errbuf[STDERR_KEEP + 1];
    int killed = 0, status = run_bounded(argv, policy_in, t0 + (double)conf.budget_ms + KILL_GRACE_MS,
                                         errbuf, &killed);
    if (policy_in >= 0)
        close(policy_in);
    if (status == -1) {
        slurm_error("toposcope: job %u on %s: cannot start %s (%m); not measuring", job, self,
                    argv[0]);
        return 0;
    }
    double took = now_ms() - t0;
    char why[STDERR_KEEP + 256];
    int failed = killed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (killed)
        snprintf(why, sizeof why, "toposcope-prolog did not finish within the budget of %ld ms + "
                 "%d ms and was killed", conf.budget_ms, KILL_GRACE_MS);
    else if (WIFSIGNALED(status))
        snprintf(why, sizeof why, "toposcope-prolog was killed by signal %d after %.0f ms",
                 WTERMSIG(status), took);
    else if (failed)
        snprintf(why, sizeof why, "toposcope-prolog failed (exit %d): %s", WEXITSTATUS(status),
                 errbuf[0] ? errbuf : "no message");
    else
        snprintf(why, sizeof why, "%s", errbuf);
    /* one line per job and node: the time on success, the reason otherwise */
    if (failed) {
        write_fallback_status(parent, job, uid, gid, why);
        slurm_error("toposcope: job %u on %s: %s; the job runs with a fallback placement "
                    "(prolog %.0f ms%s)", job, self, why, took,
                    conf.strict ? "; strict: true no longer fails the prolog, which drained the "
                    "node" : "");
    } else if (why[0]) {
        slurm_error("toposcope: job %u on %s: %s; the job runs (prolog %.0f ms)", job, self, why,
                    took);
    } else {
        slurm_info("toposcope: job %u on %s: prolog %.0f ms", job, self, took);
    }
    /* success whatever happened: a failing prolog drains the node and requeues the job */
    return 0;
}

/* ---- task_init: the environment ---- */

/* "a,b,c" cut at max (the nodes the agents could not measure, for TOPOSCOPE_UNREACHABLE) */
static void join_names(char *const *names, int n, char *out, size_t max)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < n && o + 1 < max; i++)
        o += (size_t)snprintf(out + o, max - o, "%s%s", i ? "," : "", names[i]);
}

static void set_env(void *ctx, const char *key, const char *value)
{
    if (spank_setenv((spank_t)ctx, key, value, 1) != ESPANK_SUCCESS)
        slurm_error("toposcope: cannot set %s in the task's environment", key);
}

/* The placement's files, and the variables that point the MPI launchers the policy names at
 * them (toposcope/mpienv.h: the plan comes from status.yaml). */
static void export_placement(spank_t sp, const char *dir, const ts_mpi_plan *mpi)
{
    static const char *const files[][2] = {{"TOPOSCOPE_RANKFILE", "rankfile"},
                                           {"TOPOSCOPE_HOSTFILE", "hostfile"},
                                           {"TOPOSCOPE_MACHINEFILE", "machinefile"},
                                           {"TOPOSCOPE_HINTS", "hints.yaml"}};
    char path[4][FILE_MAX], hydra_hosts[FILE_MAX], lsf_affinity[FILE_MAX];
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        snprintf(path[k], sizeof path[k], "%s/%s", dir, files[k][1]);
        set_env(sp, files[k][0], path[k]);
    }
    snprintf(hydra_hosts, sizeof hydra_hosts, "%s/%s", dir, TS_MPI_HYDRA_HOSTS_FILE);
    snprintf(lsf_affinity, sizeof lsf_affinity, "%s/%s", dir, TS_MPI_LSF_AFFINITY_FILE);
    ts_mpi_paths launch = {path[0], path[1], hydra_hosts, lsf_affinity};
    ts_mpi_env_each(mpi, &launch, set_env, sp);
}

/* This node's Slurm name: SLURMD_NODENAME in the job's environment, else its place in the
 * job's nodelist, else the host name. */
static void node_name(spank_t sp, char *out, size_t max)
{
    if (spank_getenv(sp, "SLURMD_NODENAME", out, (int)max) == ESPANK_SUCCESS && out[0])
        return;
    char list[8192];
    uint32_t nodeid;
    ts_hostlist hl = {0};
    ts_error err;
    if (spank_getenv(sp, "SLURM_JOB_NODELIST", list, sizeof list) == ESPANK_SUCCESS &&
        spank_get_item(sp, S_JOB_NODEID, &nodeid) == ESPANK_SUCCESS &&
        ts_hostlist_expand(list, strlen(list), &hl, &err) == TS_OK && nodeid < hl.count) {
        snprintf(out, max, "%s", hl.hosts[nodeid]);
        ts_hostlist_free(&hl);
        return;
    }
    ts_hostlist_free(&hl);
    if (gethostname(out, max) != 0)
        out[0] = '\0';
    out[max - 1] = '\0';
    char *dot = strchr(out, '.');
    if (dot)
        *dot = '\0';
}

/* The task's member of hints.yaml: its global rank when the placement put that rank on this
 * node (srun -m arbitrary with TOPOSCOPE_HOSTFILE, or mpirun with the rankfile), else the
 * local task id-th rank the placement put on this node, so the groups always describe where
 * the task really runs. -1 when the step does not fit the placement. */
static int task_member(const char *hints, const char *node, uint32_t global, uint32_t local,
                       ts_hints *h, ts_error *err)
{
    ts_hints_select sel = {(int)global, NULL};
    if (ts_hints_load(h, hints, &sel, err) == TS_OK) {
        if (h->nmembers == 1 && strcmp(ts_hints_node(h, 0), node) == 0)
            return 0;
        ts_hints_free(h);
    }
    if (ts_hints_load(h, hints, NULL, err) != TS_OK)
        return -1;
    uint32_t seen = 0;
    for (int m = 0; m < h->nmembers; m++)
        if (strcmp(ts_hints_node(h, m), node) == 0 && seen++ == local)
            return m;
    ts_hints_free(h);
    return -1;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    char policy[TS_SITECONF_PATH_MAX];
    configure(ac, av, 0);
    if (!spank_remote(sp) || !job_wants(sp, policy, sizeof policy))
        return 0;
    uint32_t job = 0, global = 0, local = 0, ntasks = 0, stepid = 0;
    spank_get_item(sp, S_JOB_ID, &job);
    char node[256], parent[PARENT_MAX], dir[DIR_MAX], path[FILE_MAX + 128];
    node_name(sp, node, sizeof node);
    if (spool_parent(node, parent, sizeof parent) != 0) {
        set_env(sp, "TOPOSCOPE_STATUS", "fallback");
        set_env(sp, "TOPOSCOPE_REASON", "the site's spool setting is too long (slurmd's log says more)");
        return 0;
    }
    snprintf(dir, sizeof dir, "%s/%u", parent, job);
    set_env(sp, "TOPOSCOPE_DIR", dir);
    ts_status s;
    ts_error err = {{0}};
    if (ts_status_load(&s, dir, &err) != TS_OK || !s.present) {
        set_env(sp, "TOPOSCOPE_STATUS", "fallback");
        snprintf(path, sizeof path, "no %s/status.yaml: the prolog could not write the job's "
                 "spool directory (slurmd's log says why)", dir);
        set_env(sp, "TOPOSCOPE_REASON", err.text[0] ? err.text : path);
        return 0;
    }
    set_env(sp, "TOPOSCOPE_STATUS", s.status);
    set_env(sp, "TOPOSCOPE_REASON", s.reason);
    if (s.nunreachable > 0) {
        char names[1024];
        join_names(s.unreachable, s.nunreachable, names, sizeof names);
        set_env(sp, "TOPOSCOPE_UNREACHABLE", names);
    }
    set_env(sp, "TOPOSCOPE_PLACEMENT", s.placement[0] ? s.placement : "none");
    if (s.placement_reason[0])
        set_env(sp, "TOPOSCOPE_PLACEMENT_REASON", s.placement_reason);
    int placed = strcmp(s.placement, "placed") == 0;
    if (placed)
        export_placement(sp, dir, &s.mpi);
    ts_status_free(&s);
    if (!placed)
        return 0;
    /* per-task groups: not for the batch script (no rank), nor for a step whose size is not
     * the placement's (mpirun's daemons, a one-task helper step) */
    spank_get_item(sp, S_JOB_STEPID, &stepid);
    if (stepid == SLURM_BATCH_SCRIPT ||
        spank_get_item(sp, S_TASK_GLOBAL_ID, &global) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS)
        return 0;
    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks);
    if (spank_get_item(sp, S_JOB_GLOBAL_TO_LOCAL_ID, global, &local) != ESPANK_SUCCESS)
        return 0;
    snprintf(path, sizeof path, "%s/hints.yaml", dir);
    ts_hints h;
    int m = task_member(path, node, global, local, &h, &err);
    if (m < 0)
        return 0;
    if (h.nranks == (int)ntasks) {
        ts_hints_env e;
        ts_hints_member_env(&h, m, &e);
        ts_hints_env_each(&e, set_env, sp);
    }
    ts_hints_free(&h);
    return 0;
}

/* ---- job_epilog ---- */

/* The job's directory and its files (lib/site/spool.c), logged when it stays. */
static void remove_job_dir(const char *parent, uint32_t job)
{
    char job_s[16];
    snprintf(job_s, sizeof job_s, "%u", job);
    ts_error err = {{0}};
    if (ts_spool_remove(parent, job_s, &err) != TS_OK)
        slurm_error("toposcope: job %u: %s", job, err.text);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    char policy[TS_SITECONF_PATH_MAX];
    configure(ac, av, 0);
    if (!job_wants(sp, policy, sizeof policy))
        return 0;
    uint32_t job = 0;
    const char *self = getenv("SLURMD_NODENAME");
    if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || !self)
        return 0;
    char parent[PARENT_MAX];
    if (spool_parent(self, parent, sizeof parent) != 0)
        return 0;
    /* toposcope-epilog records the job's link anomalies from the spool (and removes it); the
     * plugin removes whatever is left, so a failed or missing recorder never leaves a spool. */
    if (conf.epilog[0] && access(conf.epilog, X_OK) == 0) {
        char job_s[16], budget[32], from[32], err[STDERR_KEEP + 1];
        char policy_file[2 * TS_SITECONF_PATH_MAX + 8];
        double t0 = now_ms();
        snprintf(job_s, sizeof job_s, "%u", job);
        snprintf(budget, sizeof budget, "%d", EPILOG_BUDGET_MS);
        snprintf(from, sizeof from, "%.0f", t0 * 1e3);   /* its budget runs from t0, as the kill's */
        char *argv[18] = {conf.epilog, "--job", job_s, "--self", (char *)self, "--spool", parent,
                          "--records", conf.records, "--budget-ms", budget, "--budget-from", from};
        int n = 13;
        const char *nodes = getenv("SLURM_JOB_NODELIST") ? getenv("SLURM_JOB_NODELIST")
                                                        : getenv("SLURM_NODELIST");
        if (nodes) {
            argv[n++] = "--nodes";
            argv[n++] = (char *)nodes;
        }
        /* the anomaly thresholds of the job's policy, when it names one of the site's */
        snprintf(policy_file, sizeof policy_file, "%s/%s.yaml", conf.policy_dir, policy);
        if (!strchr(policy, '/') && access(policy_file, R_OK) == 0) {
            argv[n++] = "--policy";
            argv[n++] = policy_file;
        }
        argv[n] = NULL;
        int killed, status = run_bounded(argv, -1, t0 + EPILOG_BUDGET_MS + KILL_GRACE_MS, err, &killed);
        if (status == -1 || killed || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            slurm_error("toposcope: job %u on %s: toposcope-epilog %s%s%s", job, self,
                        killed ? "was killed at its deadline" : status == -1 ? "could not start" : "failed",
                        err[0] ? ": " : "", err);
    }
    remove_job_dir(parent, job);
    return 0;
}
