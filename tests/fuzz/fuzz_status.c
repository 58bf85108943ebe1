/* libFuzzer target: status.yaml as the plugin's task_init and the epilog read it (lib/site/
 * spool.c). A refusal names the file and leaves an empty result; an accepted one holds
 * NUL-terminated strings without control characters (they go into the job's environment) and
 * exactly nunreachable names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/spool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    if (n == max)
        abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_status s;
    ts_error err;
    if (ts_status_parse(&s, (const char *)data, size, "status.yaml", &err) != TS_OK) {
        if (s.present || s.unreachable || s.nunreachable || strncmp(err.text, "status.yaml", 11) != 0)
            abort();
        return 0;
    }
    if (!s.present || !s.status[0])
        abort();
    check_text(s.status, sizeof s.status);
    check_text(s.reason, sizeof s.reason);
    check_text(s.placement, sizeof s.placement);
    check_text(s.placement_reason, sizeof s.placement_reason);
    for (int i = 0; i < s.nunreachable; i++)
        if (!s.unreachable[i] || !s.unreachable[i][0])
            abort();
    ts_status_free(&s);
    return 0;
}
