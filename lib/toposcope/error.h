/* toposcope — errors carried back to the caller, never printed from inside the library.
 *
 * Every fallible ts_* function takes a ts_error * (may be NULL) and fills it with a
 * human message that names the input and position, e.g.
 *   "topology.conf:12: switch 'leaf9' is referenced but never defined". */
#ifndef TOPOSCOPE_ERROR_H
#define TOPOSCOPE_ERROR_H

#include <stdarg.h>

#define TS_ERROR_TEXT_MAX 512

typedef struct ts_error {
    char text[TS_ERROR_TEXT_MAX];
} ts_error;

/* Status codes returned by library functions (0 = success). TS_EINPUT maps to exit status 2
 * in the command-line tools: the user's input is wrong, not the tool. */
enum {
    TS_OK = 0,
    TS_EINPUT = -2,   /* malformed or inconsistent input (file, option, YAML) */
    TS_ENOMEM = -3,   /* allocation failed */
    TS_ESYS = -4,     /* system call failed (errno in the message) */
    TS_ELIMIT = -5,   /* a bound was hit (size, count, time) */
    TS_EEXIST = -6,   /* a file to be created exists (another writer took the name) */
};

#if defined(__GNUC__)
#define TS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TS_PRINTF(a, b)
#endif

/* Fill err (if not NULL) and return code, so callers can write `return ts_fail(err, TS_EINPUT, ...)`. */
int ts_fail(ts_error *err, int code, const char *fmt, ...) TS_PRINTF(3, 4);
void ts_error_clear(ts_error *err);

#endif
