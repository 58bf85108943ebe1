/* toposcope — a file a job names, read with the job user's rights (lib/site/userfile.c).
 *
 * The plugin runs as root, and a job may name a file (--topo-aware=PATH): read as root, it could
 * be any file root can read, a FIFO that never ends, or a symlink swapped in after a check. So
 * the file is read by a child process that has dropped to the job's uid and gid (no other
 * groups), opens it without following a final symlink and without blocking, takes only a
 * regular file of at most `max` bytes, and is killed at the deadline. Messages name the path
 * and what was wrong with it, never the file's content. */
#ifndef TOPOSCOPE_USERFILE_H
#define TOPOSCOPE_USERFILE_H

#include <stddef.h>
#include <sys/types.h>
#include "toposcope/error.h"

/* PATH's bytes into *text (malloc'd, NUL-terminated) and *len. TS_EINPUT: the file is not
 * there, not readable by the user, not a regular file, a symlink, or larger than max;
 * TS_ELIMIT: not read within timeout_ms; TS_ESYS: the reader could not be started. */
int ts_read_user_file(const char *path, uid_t uid, gid_t gid, size_t max, int timeout_ms,
                      char **text, size_t *len, ts_error *err);

#endif
