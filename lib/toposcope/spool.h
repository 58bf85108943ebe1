/* toposcope — the job spool and its status.yaml (lib/site/spool.c).
 *
 * Every node of a job that asked for toposcope gets a directory SPOOL/JOB (SPOOL is the site's
 * `spool` setting with %n = the node's name). The node agents (prolog/) create it and leave the
 * job's files there, status.yaml first among them; the plugin's task_init (spank/) reads
 * status.yaml for the job's environment; the epilog recorder (epilog/) reads it for the job's
 * record and removes the directory (the plugin removes what a missing recorder left). This
 * module is the one place that knows the directory's rules and status.yaml's format:
 *   - the directory is made and opened without following symlinks and belongs to the caller's
 *     euid (root in the prolog); the job's user alone may read it, through a POSIX ACL entry
 *     (directory 0700 + user:r-x, files 0600 + user:r--; on a file system without ACLs, the
 *     job's primary group instead: 0750 and 0640); files are replaced atomically;
 *   - status.yaml is one YAML mapping: a head every writer starts with (job, mode, status,
 *     reason, the leader, the nodes and those not measured), then sections the writers append
 *     (the leader's timings, each agent's counters, the placement); a reader takes the keys it
 *     knows and ignores the others, so a section can grow without breaking it.
 * Reading is bounded (TS_STATUS_MAX_BYTES) and every message names the file, line and column. */
#ifndef TOPOSCOPE_SPOOL_H
#define TOPOSCOPE_SPOOL_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include "toposcope/error.h"
#include "toposcope/mpienv.h"

#define TS_STATUS_MAX_BYTES (4u << 20)
#define TS_SPOOL_PATH_MAX 4096

/* A job id as Slurm prints it ("123", "123_4" for an array task): a digit, then digits, '_' and
 * '.', fewer than 32 bytes; never ".", "..", nor anything else that could name a path. */
int ts_spool_job_ok(const char *job);
/* SPOOL with every %n replaced by node, into out. TS_EINPUT when it does not fit in max. */
int ts_spool_parent(const char *spool, const char *node, char *out, size_t max, ts_error *err);

/* Create (if missing) and open PARENT/JOB: PARENT is made 0755 if missing (with the
 * directories above it, as mkdir -p does) and never followed
 * through a symlink, nor is JOB; PARENT must belong to the caller's euid and be writable by
 * it alone (or whoever else may write there could swap JOB); JOB must belong to the caller's
 * euid, and is given to the job's user uid (group gid; see above). job is a job id as Slurm prints it (digits, '_',
 * '.'; never a path). Returns the directory's fd, or an error code (< 0). */
int ts_spool_open(const char *parent, const char *job, uid_t uid, gid_t gid, ts_error *err);
/* A directory the caller names instead (toposcope probe --out): made 0750 if missing, an
 * existing one keeps its mode; it must be a directory of the caller's euid, not a symlink. */
int ts_spool_open_dir(const char *dir, ts_error *err);
/* NAME in the job's directory, written atomically (ts_write_file_at), readable by the job's
 * user uid (group gid) as above; uid and gid both -1: the caller's alone, 0600. */
int ts_spool_write(int dirfd, const char *name, const char *text, size_t len, uid_t uid,
                   gid_t gid, ts_error *err);
/* NAME read whole (at most max bytes) into *text (malloc'd, NUL-terminated); *text is NULL
 * and TS_OK returned when NAME does not exist. Never through a symlink. */
int ts_spool_read(int dirfd, const char *name, size_t max, char **text, size_t *len,
                  ts_error *err);
/* Remove PARENT/JOB and the files in it, never through a symlink; a directory that is not
 * there is no error. */
int ts_spool_remove(const char *parent, const char *job, ts_error *err);

/* ---- status.yaml ---- */

/* The head every writer of status.yaml starts with. */
typedef struct ts_status_head {
    const char *job;
    const char *mode;            /* "prolog", "step", ...; NULL: not written */
    const char *status;          /* measured | partial | fallback */
    const char *reason;
    const char *leader;          /* NULL: not written, nor is anything below */
    int nodes, measured_nodes;
    char *const *unreachable;    /* the job's nodes not in the tree, hostlist order */
    int nunreachable;
} ts_status_head;

void ts_status_emit_head(FILE *f, const ts_status_head *h);
/* The section the placement in the prolog appends: its outcome (placed | none | failed), the
 * policy, why, and what the plugin tells the MPI launchers (mpi NULL: nothing):
 *   placement_export_mca: BOOL, placement_hydra: BOOL, placement_hydra_binding: "user:...",
 *   placement_intel_mpi: BOOL, placement_intel_perhost: K, placement_intel_pin: "A,C"
 * (the strings and K only when the plan has them). A status.yaml from before a key existed
 * reads as that launcher off, so an older prolog's job gets what it got then. */
void ts_status_emit_placement(FILE *f, const char *outcome, const char *policy,
                              const char *reason, const ts_mpi_plan *mpi);

/* What the plugin and the epilog read back. Strings are cut to their buffers, control
 * characters become spaces (they go into environment variables and logs). */
typedef struct ts_status {
    int present;                 /* 0: the file does not exist (nothing else is set) */
    char status[32];
    char reason[1024];
    char placement[16];          /* "" when the prolog did not place */
    char placement_reason[1024];
    ts_mpi_plan mpi;             /* what the plugin tells the launchers (its strings malloc'd) */
    double leader_ms;            /* the leader's time from its start to the results sent (its
                                  * closing leader_ms): the prolog's duration; NAN unknown */
    int nunreachable;
    char **unreachable;
} ts_status;

/* s is initialised first; on error it is empty (and freeable). */
int ts_status_parse(ts_status *s, const char *text, size_t len, const char *src, ts_error *err);
/* DIR/status.yaml; absent (or DIR cannot exist: a file on its path): TS_OK, s->present = 0. */
int ts_status_load(ts_status *s, const char *dir, ts_error *err);
void ts_status_free(ts_status *s);

#endif
