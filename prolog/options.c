/* toposcope agents — the options toposcope-prolog and toposcope probe share. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "options.h"
#include "toposcope/siteconf.h"

int agent_parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v > max || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int bad(const char *prog, const char *what, const char *arg)
{
    fprintf(stderr, "%s: %s, not '%s' (see --help)\n", prog, what, arg);
    return 2;
}

int agent_common_option(agent_config *c, const char *prog, int opt, const char *arg)
{
    unsigned long v;
    switch (opt) {
    case AGENT_OPT_BUDGET:
        if (agent_parse_uint(arg, 3600000, &v) || v < 50)
            return bad(prog, "--budget-ms wants milliseconds, 50 to 3600000", arg);
        c->budget_ms = (double)v;
        return 1;
    case AGENT_OPT_METHOD:
        if (ts_method_parse(arg, &c->method) != TS_OK)
            return bad(prog, "--method wants fast, allpairs or shirai", arg);
        return 1;
    case AGENT_OPT_PTIMEOUT:
        if (agent_parse_uint(arg, 10000, &v) || v < 1)
            return bad(prog, "--probe-timeout-ms wants 1..10000", arg);
        c->probe_timeout_us = (double)v * 1e3;
        return 1;
    case AGENT_OPT_MAXS:
        if (agent_parse_uint(arg, TS_SAMPLES_MAX, &v) || (int)v < c->rule.min_samples)
            return bad(prog, "--max-samples wants a count from the minimum (3) to 256", arg);
        c->rule.max_samples = (int)v;
        return 1;
    case AGENT_OPT_LEVEL_STEP:
        if (agent_parse_uint(arg, TS_LEVEL_STEP_NS_MAX, &v) || v < TS_LEVEL_STEP_NS_MIN)
            return bad(prog, "--level-step-ns wants nanoseconds, " TS_LEVEL_STEP_NS_RANGE_TEXT, arg);
        c->level_step_ns = (double)v;
        return 1;
    case AGENT_OPT_NOPIN:
        c->pin_cpu = 0;
        return 1;
    default:
        return 0;
    }
}

int agent_resolve(const char *prog, const char *name, struct sockaddr_in *out)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *res = NULL;
    int rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc != 0 || !res) {
        fprintf(stderr, "%s: node %s has no IPv4 address (%s): add it to /etc/hosts or DNS\n", prog,
                name, gai_strerror(rc));
        return -1;
    }
    memcpy(out, res->ai_addr, sizeof *out);
    out->sin_port = 0;
    freeaddrinfo(res);
    return 0;
}
