/* toposcope CLI — helpers shared by the subcommands. */
#ifndef TOPOSCOPE_CLI_H
#define TOPOSCOPE_CLI_H

#include <stdint.h>
#include <stdio.h>

/* Exit codes: 0 success, 1 failure, 2 the user's input is wrong (bad option, bad file). */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

int cmd_sim(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_place(int argc, char **argv);
int cmd_hints(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* Print "toposcope CMD: message" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parse a whole unsigned or floating number, rejecting trailing junk. */
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_double(const char *s, double *out);
/* Create a directory and its parents (mode 0755). */
int cli_mkdir_p(const char *path);
/* Open DIR/NAME for writing; on failure prints why and returns NULL. */
FILE *cli_open_out(const char *cmd, const char *dir, const char *name);
/* Close, reporting write errors; returns 0 or -1. */
int cli_close_out(const char *cmd, FILE *f, const char *dir, const char *name);
/* Where policy names are looked up: $TOPOSCOPE_POLICY_DIR, /etc/toposcope/policies,
 * PREFIX/share/toposcope/policies of an installed PREFIX/bin/toposcope, the source tree's
 * policies/ (dirs: room for CLI_POLICY_DIRS, NULL-terminated). */
#define CLI_POLICY_DIRS 5
void cli_policy_dirs(const char **dirs);

#endif
