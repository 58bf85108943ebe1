/* toposcope — toposcope.yaml and plugstack.conf arguments (see toposcope/siteconf.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/siteconf.h"
#include "util/ydoc.h"

static const char *const mode_names[] = {"opt-in", "always", "off", NULL};

enum { K_MODE, K_DEFAULT_POLICY, K_POLICY_DIR, K_BUDGET, K_PORT_BASE, K_PORT_SPAN, K_SPOOL,
       K_RECORDS, K_PROLOG, K_EPILOG, K_STRICT, K_LEVEL_STEP, K_COUNT };
static const char *const keys[] = {"mode", "default_policy", "policy_dir", "budget_ms",
                                   "port_base", "port_span", "spool", "records", "prolog",
                                   "epilog", "strict", "level_step_ns", NULL};

const char *ts_site_mode_name(ts_site_mode m)
{
    return m >= TS_MODE_OPT_IN && m <= TS_MODE_OFF ? mode_names[m] : "?";
}

void ts_siteconf_default(ts_siteconf *c, const char *prolog, const char *policy_dir)
{
    memset(c, 0, sizeof *c);
    c->mode = TS_MODE_OPT_IN;
    snprintf(c->default_policy, sizeof c->default_policy, "compact");
    snprintf(c->policy_dir, sizeof c->policy_dir, "%s", policy_dir ? policy_dir : "");
    c->budget_ms = 2000;
    c->port_base = 900;
    c->port_span = 100;
    snprintf(c->spool, sizeof c->spool, "/var/spool/toposcope");
    snprintf(c->records, sizeof c->records, "/var/lib/toposcope/records");
    snprintf(c->prolog, sizeof c->prolog, "%s", prolog ? prolog : "");
}

static char *text_field(ts_siteconf *c, int k)
{
    switch (k) {
    case K_DEFAULT_POLICY: return c->default_policy;
    case K_POLICY_DIR: return c->policy_dir;
    case K_SPOOL: return c->spool;
    case K_RECORDS: return c->records;
    case K_PROLOG: return c->prolog;
    case K_EPILOG: return c->epilog;
    default: return NULL;
    }
}

static long *number_field(ts_siteconf *c, int k, long *lo, long *hi)
{
    switch (k) {
    case K_BUDGET: *lo = 50, *hi = 600000; return &c->budget_ms;
    case K_PORT_BASE: *lo = 1, *hi = 65535; return &c->port_base;
    case K_PORT_SPAN: *lo = 1, *hi = 65535; return &c->port_span;
    case K_LEVEL_STEP: *lo = TS_LEVEL_STEP_NS_MIN, *hi = TS_LEVEL_STEP_NS_MAX; return &c->level_step_ns;
    default: return NULL;
    }
}

/* Paths and names: absolute paths for the files and directories, a policy name or file for
 * default_policy; no control characters anywhere. */
static const char *text_problem(int k, const char *v)
{
    if (!*v)
        return "must not be empty";
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return "must not hold control characters";
    if (k != K_DEFAULT_POLICY && v[0] != '/')
        return "must be an absolute path";
    return NULL;
}

static int port_range_check(const ts_siteconf *c, const char *src, ts_error *err)
{
    if (c->port_base + c->port_span - 1 > 65535)
        return ts_fail(err, TS_EINPUT, "%s: port_base %ld + port_span %ld - 1 passes port 65535",
                       src, c->port_base, c->port_span);
    return TS_OK;
}

int ts_siteconf_parse(ts_siteconf *c, const char *text, size_t len, const char *src, ts_error *err)
{
    ts_ydoc d;
    ts_ylimits lim = {TS_SITECONF_MAX_BYTES, 3, 256};
    src = src ? src : "<toposcope.yaml>";
    int rc = ts_ydoc_parse(&d, text, len, src, &lim, err);
    if (rc != TS_OK)
        return rc;
    ts_siteconf q = *c;
    if (d.root < 0)
        goto done;
    if (d.v[d.root].type != TS_Y_MAP) {
        rc = ts_ydoc_fail(&d, d.root, err, "toposcope.yaml must be a mapping of settings, not %s",
                          ts_ydoc_type_name(&d.v[d.root]));
        goto done;
    }
    if ((rc = ts_ydoc_check_keys(&d, d.root, keys, "the top level", err)) != TS_OK)
        goto done;
    for (int k = 0; k < K_COUNT && rc == TS_OK; k++) {
        int at = ts_ydoc_get(&d, d.root, keys[k]);
        if (at < 0 || ts_ydoc_is_null(&d.v[at]))
            continue;
        long lo, hi, *num = number_field(&q, k, &lo, &hi);
        char *txt = text_field(&q, k);
        if (num) {
            rc = ts_ydoc_int(&d, at, keys[k], lo, hi, num, err);
        } else if (k == K_MODE) {
            int m;
            if ((rc = ts_ydoc_choice(&d, at, keys[k], mode_names, &m, err)) == TS_OK)
                q.mode = (ts_site_mode)m;
        } else if (k == K_STRICT) {
            rc = ts_ydoc_bool(&d, at, keys[k], &q.strict, err);
        } else if (d.v[at].type != TS_Y_SCALAR) {
            rc = ts_ydoc_fail(&d, at, err, "'%s' must be a scalar, not %s", keys[k],
                              ts_ydoc_type_name(&d.v[at]));
        } else {
            const char *why = text_problem(k, d.v[at].text);
            if (!why && d.v[at].len >= TS_SITECONF_PATH_MAX)
                why = "is too long";
            if (why)
                rc = ts_ydoc_fail(&d, at, err, "'%s' %s", keys[k], why);
            else
                snprintf(txt, TS_SITECONF_PATH_MAX, "%s", d.v[at].text);
        }
    }
    if (rc == TS_OK)
        rc = port_range_check(&q, src, err);
done:
    if (rc == TS_OK)
        *c = q;
    ts_ydoc_free(&d);
    return rc;
}

int ts_siteconf_load(ts_siteconf *c, const char *path, ts_error *err)
{
    char *buf;
    size_t len;
    int rc = ts_ydoc_read_file(path, TS_SITECONF_MAX_BYTES, &buf, &len, err);
    if (rc != TS_OK)
        return rc;
    rc = ts_siteconf_parse(c, buf, len, path, err);
    free(buf);
    return rc;
}

int ts_siteconf_set(ts_siteconf *c, const char *arg, ts_error *err)
{
    const char *eq = strchr(arg, '=');
    size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
    int k;
    for (k = 0; k < K_COUNT; k++)
        if (strlen(keys[k]) == klen && strncmp(arg, keys[k], klen) == 0)
            break;
    if (k == K_COUNT)
        return ts_fail(err, TS_EINPUT, "unknown argument '%s' (known: conf, mode, default_policy, "
                       "policy_dir, budget_ms, port_base, port_span, spool, records, prolog, "
                       "epilog, strict, level_step_ns)", arg);
    if (!eq)
        return ts_fail(err, TS_EINPUT, "argument '%s' wants a value: %s=VALUE", arg, keys[k]);
    const char *v = eq + 1;
    ts_siteconf q = *c;
    long lo, hi, *num = number_field(&q, k, &lo, &hi);
    char *txt = text_field(&q, k);
    if (num) {
        char *end;
        long n = strtol(v, &end, 10);
        if (end == v || *end || n < lo || n > hi)
            return ts_fail(err, TS_EINPUT, "%s wants an integer from %ld to %ld, not '%s'",
                           keys[k], lo, hi, v);
        *num = n;
    } else if (k == K_MODE) {
        int m;
        for (m = 0; mode_names[m] && strcmp(mode_names[m], v) != 0; m++)
            ;
        if (!mode_names[m])
            return ts_fail(err, TS_EINPUT, "mode wants opt-in, always or off, not '%s'", v);
        q.mode = (ts_site_mode)m;
    } else if (k == K_STRICT) {
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return ts_fail(err, TS_EINPUT, "strict wants true or false, not '%s'", v);
        q.strict = v[0] == 't';
    } else {
        const char *why = text_problem(k, v);
        if (!why && strlen(v) >= TS_SITECONF_PATH_MAX)
            why = "is too long";
        if (why)
            return ts_fail(err, TS_EINPUT, "%s %s: '%s'", keys[k], why, v);
        snprintf(txt, TS_SITECONF_PATH_MAX, "%s", v);
    }
    int rc = port_range_check(&q, "plugstack.conf", err);
    if (rc == TS_OK)
        *c = q;
    return rc;
}
