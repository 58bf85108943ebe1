/* libFuzzer target: the SPANK plugin's settings (toposcope.yaml, a plugstack.conf argument) and
 * the job's SLURM_JOB_CPUS_PER_NODE, all from the same bytes. A refusal leaves the settings as
 * they were; accepted settings are within the documented ranges; parsed CPU counts are too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/hostlist.h"
#include "toposcope/siteconf.h"
#include "toposcope/cpus_per_node.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const ts_siteconf *c)
{
    if (c->mode < TS_MODE_OPT_IN || c->mode > TS_MODE_OFF || c->budget_ms < 50 ||
        c->budget_ms > 600000 || c->port_base < 1 || c->port_span < 1 ||
        c->port_base + c->port_span - 1 > 65535 || (c->spool[0] != '/') ||
        !memchr(c->spool, '\0', sizeof c->spool) || !memchr(c->prolog, '\0', sizeof c->prolog))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_siteconf c, before;
    ts_error err;
    ts_siteconf_default(&c, "/p", "/d");
    before = c;
    if (ts_siteconf_parse(&c, (const char *)data, size, "fuzz.yaml", &err) != TS_OK) {
        if (memcmp(&c, &before, sizeof c) != 0 || strncmp(err.text, "fuzz.yaml", 9) != 0)
            abort();
    } else {
        check(&c);
    }
    if (size > 4096)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    before = c;
    if (ts_siteconf_set(&c, s, &err) != TS_OK) {
        if (memcmp(&c, &before, sizeof c) != 0)
            abort();
    } else {
        check(&c);
    }
    int counts[64];
    for (int n = 1; n <= 64; n *= 4)
        if (ts_cpus_per_node_parse(s, n, counts, &err) == TS_OK)
            for (int i = 0; i < n; i++)
                if (counts[i] < 1 || counts[i] > TS_CPUS_PER_NODE_MAX)
                    abort();
    free(s);
    return 0;
}
