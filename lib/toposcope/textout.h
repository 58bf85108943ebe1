/* toposcope — text output shared by every writer (lib/util/textout.c). */
#ifndef TOPOSCOPE_TEXTOUT_H
#define TOPOSCOPE_TEXTOUT_H

#include <stddef.h>
#include <stdio.h>
#include "toposcope/error.h"

/* Write one file atomically into dirfd: NAME.tmp created with O_EXCL | O_NOFOLLOW, written,
 * renamed over NAME, so a reader sees the old file or the whole new one. */
int ts_write_file_at(int dirfd, const char *name, const char *data, size_t len, int mode,
                     ts_error *err);

/* The i-th name to try for a new file into out (max bytes): 0, or -1 when there is none left. */
typedef int (*ts_publish_name_fn)(int i, void *arg, char *out, size_t max);
/* Publish data as a new file in dirfd without ever replacing one, so writers on many nodes
 * sharing a directory need no lock: a private temporary file (tmp_prefix, the pid, the time;
 * O_EXCL), written, given mode, fsynced, then hard-linked under the first name from `name` that
 * does not exist yet (link(2) fails rather than replace), the temporary removed and dirfd
 * fsynced. The name taken is left in final. TS_EEXIST when every name exists; dirname names the
 * directory in messages. */
int ts_publish_file_at(int dirfd, const char *dirname, const char *tmp_prefix, const char *data,
                       size_t len, int mode, ts_publish_name_fn name, void *arg, char *final,
                       size_t final_max, ts_error *err);

/* s as a double-quoted YAML scalar: '"' and '\\' escaped, control characters as \xNN. */
void ts_emit_yaml_string(FILE *out, const char *s);

/* "KEY=value\n", the value single-quoted when it holds anything a shell would read otherwise. */
void ts_emit_env_line(FILE *out, const char *key, const char *value);

#endif
