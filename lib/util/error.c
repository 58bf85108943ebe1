/* toposcope — error messages for the caller. */
#include <stdio.h>
#include "toposcope/error.h"

int ts_fail(ts_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
    return code;
}

void ts_error_clear(ts_error *err)
{
    if (err)
        err->text[0] = '\0';
}
