/* toposcope.yaml and plugstack.conf arguments: the shipped sample, every key, and bad input
 * refused with FILE:LINE:COLUMN (file) or the argument (plugstack) while the settings stay. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "hwdata.h"
#include "toposcope/siteconf.h"

static int parse(ts_siteconf *c, const char *text, ts_error *err)
{
    return ts_siteconf_parse(c, text, strlen(text), "site.yaml", err);
}

static void test_sample(void)
{
    ts_siteconf c, d;
    ts_error err = {{0}};
    ts_siteconf_default(&c, "/p/toposcope-prolog", "/p/policies");
    d = c;
    ok(ts_siteconf_load(&c, test_repo("etc/toposcope.yaml"), &err) == TS_OK, "etc/toposcope.yaml loads %s", err.text);
    ok(!memcmp(&c, &d, sizeof c), "and, every key commented, changes nothing");
    ok(c.mode == TS_MODE_OPT_IN && c.budget_ms == 2000 && c.port_base == 900 && c.port_span == 100 &&
       !c.strict && !strcmp(c.default_policy, "compact") && !strcmp(c.spool, "/var/spool/toposcope") &&
       !strcmp(c.prolog, "/p/toposcope-prolog") && !strcmp(c.policy_dir, "/p/policies"),
       "defaults: opt-in, 2000 ms, ports 900+100, compact, /var/spool/toposcope");
}

static void test_keys(void)
{
    ts_siteconf c;
    ts_error err = {{0}};
    ts_siteconf_default(&c, NULL, NULL);
    ok(parse(&c, "mode: always\ndefault_policy: spread\npolicy_dir: /pol\nbudget_ms: 3000\n"
                 "port_base: 50000\nport_span: 10\nspool: /s/%n\nrecords: /r\nprolog: /bin/p\n"
                 "epilog: /bin/e\nstrict: true\nlevel_step_ns: 1600\n", &err) == TS_OK, "every key %s", err.text);
    ok(c.mode == TS_MODE_ALWAYS && !strcmp(c.default_policy, "spread") && !strcmp(c.policy_dir, "/pol") &&
       c.budget_ms == 3000 && c.port_base == 50000 && c.port_span == 10 && !strcmp(c.spool, "/s/%n") &&
       !strcmp(c.records, "/r") && !strcmp(c.prolog, "/bin/p") && !strcmp(c.epilog, "/bin/e") && c.strict &&
       c.level_step_ns == 1600,
       "all read");
    ok(ts_siteconf_set(&c, "budget_ms=700", &err) == TS_OK && c.budget_ms == 700, "budget_ms=700 overrides");
    ok(ts_siteconf_set(&c, "mode=off", &err) == TS_OK && c.mode == TS_MODE_OFF, "mode=off");
    ok(ts_siteconf_set(&c, "spool=/x/%n", &err) == TS_OK && !strcmp(c.spool, "/x/%n"), "spool=/x/%%n");
    ok(ts_siteconf_set(&c, "strict=false", &err) == TS_OK && !c.strict, "strict=false");
    ok(ts_siteconf_set(&c, "level_step_ns=800", &err) == TS_OK && c.level_step_ns == 800, "level_step_ns=800");
    ok(!strcmp(ts_site_mode_name(TS_MODE_OPT_IN), "opt-in"), "mode names");
}

static void test_bad(void)
{
    static const struct { const char *text, *want; } files[] = {
        {"budgt_ms: 5\n", "site.yaml:1:1: unknown key 'budgt_ms'"},
        {"budget_ms: 10\n", "site.yaml:1:12"},
        {"mode: sometimes\n", "site.yaml:1:7"},
        {"spool: relative/dir\n", "'spool' must be an absolute path"},
        {"strict: yes\n", "site.yaml:1:9"},
        {"port_base: 65000\nport_span: 1000\n", "passes port 65535"},
        {"- a list\n", "must be a mapping"},
        {"spool: [a]\n", "must be a scalar"},
        {"mode: [\n", "site.yaml:"},
        {"level_step_ns: 10\n", "site.yaml:1:16"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        ts_siteconf c, d;
        ts_error err = {{0}};
        ts_siteconf_default(&c, NULL, NULL);
        d = c;
        int rc = parse(&c, files[i].text, &err);
        ok(rc == TS_EINPUT && strstr(err.text, files[i].want) && !memcmp(&c, &d, sizeof c),
           "refused, settings unchanged: %s", err.text);
    }
    static const struct { const char *arg, *want; } args[] = {
        {"budget=5", "unknown argument 'budget=5'"},
        {"budget_ms", "wants a value"},
        {"budget_ms=abc", "budget_ms wants an integer from 50 to 600000"},
        {"mode=maybe", "mode wants opt-in, always or off"},
        {"strict=1", "strict wants true or false"},
        {"prolog=bin/p", "prolog must be an absolute path"},
        {"port_base=65500", "passes port 65535"},
        {"level_step_ns=0.4", "level_step_ns wants an integer from 50 to 10000000"},
    };
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        ts_siteconf c, d;
        ts_error err = {{0}};
        ts_siteconf_default(&c, NULL, NULL);
        d = c;
        int rc = ts_siteconf_set(&c, args[i].arg, &err);
        ok(rc == TS_EINPUT && strstr(err.text, args[i].want) && !memcmp(&c, &d, sizeof c),
           "'%s' refused: %s", args[i].arg, err.text);
    }
}

int main(void)
{
    test_sample();
    test_keys();
    test_bad();
    return done_testing();
}
