/* Minimal TAP producer for toposcope's unit tests (read by prove). */
#ifndef TOPOSCOPE_TAP_H
#define TOPOSCOPE_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

static int tap_n, tap_failed;

static void tap_vok(int cond, const char *fmt, va_list ap)
{
    tap_n++;
    if (!cond)
        tap_failed++;
    printf("%sok %d - ", cond ? "" : "not ", tap_n);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
}

static inline int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int ok(int cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vok(cond, fmt, ap);
    va_end(ap);
    return cond;
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

#define is_int(got, want, ...) \
    (ok((long)(got) == (long)(want), __VA_ARGS__) ? 1 : (diag("  got %ld, want %ld", (long)(got), (long)(want)), 0))
#define is_num(got, want, tol, ...) \
    (ok(fabs((double)(got) - (double)(want)) <= (tol), __VA_ARGS__) ? 1 : \
     (diag("  got %g, want %g (tolerance %g)", (double)(got), (double)(want), (double)(tol)), 0))
/* Strings equal (NULL equal only to NULL); both shown when not. */
static inline int tap_same_str(const char *got, const char *want)
{
    return got && want ? strcmp(got, want) == 0 : got == want;
}
static inline void tap_str_diag(const char *got, const char *want)
{
    diag("  got  \"%s\"", got ? got : "(null)");
    diag("  want \"%s\"", want ? want : "(null)");
}
#define is_str(got, want, ...) \
    (ok(tap_same_str((got), (want)), __VA_ARGS__) ? 1 : (tap_str_diag((got), (want)), 0))

static inline int done_testing(void)
{
    printf("1..%d\n", tap_n);
    if (tap_n == 0) {
        printf("# no test ran\n");
        return 1;
    }
    return tap_failed ? 1 : 0;
}

#endif
