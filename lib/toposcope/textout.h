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

/* s as a double-quoted YAML scalar: '"' and '\\' escaped, control characters as \xNN. */
void ts_emit_yaml_string(FILE *out, const char *s);

/* "KEY=value\n", the value single-quoted when it holds anything a shell would read otherwise. */
void ts_emit_env_line(FILE *out, const char *key, const char *value);

#endif
