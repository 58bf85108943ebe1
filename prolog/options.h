/* toposcope agents — what toposcope-prolog and toposcope probe parse alike. */
#ifndef TOPOSCOPE_AGENT_OPTIONS_H
#define TOPOSCOPE_AGENT_OPTIONS_H

#include <netinet/in.h>
#include "agent.h"

/* getopt_long values of the options both programs take (above any single-letter option) */
enum {
    AGENT_OPT_BUDGET = 320,
    AGENT_OPT_METHOD,
    AGENT_OPT_PTIMEOUT,
    AGENT_OPT_MAXS,
    AGENT_OPT_NOPIN,
    AGENT_OPT_LEVEL_STEP,
};

/* "--budget-ms" and the others, for a program's longopts table */
#define AGENT_COMMON_OPTIONS_HELP                                                                \
    "  --budget-ms MS       the whole agent's time budget (default 5000)\n"                       \
    "  --method NAME        discovery method: fast (default), allpairs or shirai\n"              \
    "  --probe-timeout-ms MS  a probe unanswered this long is lost (default 10)\n"               \
    "  --max-samples N      most round trips per pair (default 32)\n"                             \
    "  --no-pin             do not pin the agent to one CPU while probing\n"                     \
    "  --level-step-ns NS   the least one switch level of this fabric adds to a round trip\n"     \
    "                       (default 400, the least of any real fabric's: a job on one switch\n" \
    "                       is measured once a level this large would have shown)\n"

int agent_parse_uint(const char *s, unsigned long max, unsigned long *out);

/* Take one of the common options into c: 1 taken, 0 not a common option, 2 bad (said on
 * stderr, prefixed with prog). */
int agent_common_option(agent_config *c, const char *prog, int opt, const char *arg);

/* NAME's IPv4 address (port 0); -1 after saying on stderr how to fix it. */
int agent_resolve(const char *prog, const char *name, struct sockaddr_in *out);

#endif
