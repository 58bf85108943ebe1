/* Slurm hostlist expressions: expansion, errors, compression round trips, natural order. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "toposcope/hostlist.h"
#include "toposcope/cpus_per_node.h"

/* Expand expr and compare with the space-separated expected names. */
static void expands_to(const char *expr, const char *want)
{
    ts_hostlist hl;
    ts_error err = { "" };
    int rc = ts_hostlist_expand(expr, strlen(expr), &hl, &err);
    if (!ok(rc == TS_OK, "'%s' expands", expr)) {
        diag("  error: %s", err.text);
        return;
    }
    char got[4096] = "";
    size_t at = 0;
    for (size_t i = 0; i < hl.count && at < sizeof got - 300; i++)
        at += (size_t)snprintf(got + at, sizeof got - at, "%s%s", i ? " " : "", hl.hosts[i]);
    if (!ok(strcmp(got, want) == 0, "'%s' -> %s", expr, want))
        diag("  got '%s'", got);
    ts_hostlist_free(&hl);
}

static void fails_with(const char *expr, size_t len, const char *want_text)
{
    ts_hostlist hl = { 99, (char **)&hl };
    ts_error err = { "" };
    int rc = ts_hostlist_expand(expr, len, &hl, &err);
    is_int(rc, TS_EINPUT, "'%.*s' is rejected", (int)(len > 40 ? 40 : len), expr);
    ok(hl.count == 0 && hl.hosts == NULL, "  and the list is left empty");
    if (!ok(strstr(err.text, want_text) != NULL, "  message says '%s'", want_text))
        diag("  got '%s'", err.text);
    ts_hostlist_free(&hl);
}

static void test_expand(void)
{
    expands_to("cn1", "cn1");
    expands_to("cn[001-003,007]", "cn001 cn002 cn003 cn007");
    expands_to("cn[8-10]", "cn8 cn9 cn10");
    expands_to("cn[098-101]", "cn098 cn099 cn100 cn101");
    expands_to("r[1-2]n[01-02]", "r1n01 r1n02 r2n01 r2n02");
    expands_to("a,b[1-2],c", "a b1 b2 c");
    expands_to("gpu[1-2]x[7]", "gpu1x7 gpu2x7");
    expands_to("[1-3]", "1 2 3");
    expands_to("n[0]", "n0");
    expands_to("n-[5-6]-e", "n-5-e n-6-e");
    expands_to("x[999999998-999999999]", "x999999998 x999999999");

    /* length is honoured: the expression need not end at a NUL */
    ts_hostlist hl;
    ts_error err = {{0}};
    const char buf[] = { 'n', '[', '1', '-', '2', ']', ',', 'z', 'z' };
    ok(ts_hostlist_expand(buf, 6, &hl, &err) == TS_OK && hl.count == 2 &&
           strcmp(hl.hosts[1], "n2") == 0, "only len bytes are read");
    ts_hostlist_free(&hl);

    /* a large but legal expansion */
    ok(ts_hostlist_expand("n[000000-999999]", 16, &hl, &err) == TS_OK && hl.count == TS_HOSTLIST_MAX_HOSTS &&
           strcmp(hl.hosts[TS_HOSTLIST_MAX_HOSTS - 1], "n999999") == 0, "one million hosts expand");
    ts_hostlist_free(&hl);
}

static void test_errors(void)
{
    fails_with("cn[1-2", 6, "column 3: unterminated '['");
    fails_with("cn[1-[2]]", 9, "column 6: nested '['");
    fails_with("cn1-2]", 6, "column 6: ']' without a matching '['");
    fails_with("cn[]", 4, "column 3: empty bracket group");
    fails_with("cn[1,,2]", 8, "column 6: empty element");
    fails_with("cn[1,]", 6, "column 6: empty element");
    fails_with("cn[-2]", 6, "column 4: empty element");
    fails_with("cn[1-]", 6, "column 6: empty element");
    fails_with("cn[5-3]", 7, "column 4: range 5-3 has lo > hi");
    fails_with("cn[1-a]", 7, "column 6: 'a' in a range");
    fails_with("cn[1-2-3]", 9, "column 7: '-' in a range");
    fails_with("cn[1234567890]", 14, "column 4: number has more than 9 digits");
    fails_with("a,,b", 4, "column 3: empty host name");
    fails_with("a,", 2, "column 2: empty host name");
    fails_with(",a", 2, "column 1: empty host name");
    fails_with("", 0, "empty hostlist");
    fails_with("cn 1", 4, "column 3: whitespace");
    fails_with("cn[1,\t2]", 8, "column 6: whitespace");
    fails_with("cn\0x", 4, "column 3: NUL byte");
    fails_with("cn[1\0]", 6, "column 5: NUL byte");
    fails_with("n[1-1000],m[1-1000]x[1-1000]", 28, "expands to more than 1000000 hosts");
    fails_with("a[0-999999],b[0-1]", 18, "column 13: the list expands to more than 1000000 hosts");
    fails_with("n[0-999999999]", 14, "expands to more than");

    char longname[300];
    memset(longname, 'x', 256);
    fails_with(longname, 256, "column 1: hostname longer than 255");
    memcpy(longname + 250, "[1-100000]", 10);
    fails_with(longname, 260, "hostname longer than 255");
    ts_hostlist hl;
    ts_error err = {{0}};
    memset(longname, 'x', 255);
    ok(ts_hostlist_expand(longname, 255, &hl, &err) == TS_OK && strlen(hl.hosts[0]) == 255,
       "a 255-character name is fine");
    ts_hostlist_free(&hl);
}

static char *compress_expr(const char *expr)
{
    ts_hostlist hl;
    ts_error err = {{0}};
    if (ts_hostlist_expand(expr, strlen(expr), &hl, &err) != TS_OK)
        return NULL;
    char *s = ts_hostlist_compress(hl.hosts, hl.count);
    ts_hostlist_free(&hl);
    return s;
}

static void compresses_to(const char *expr, const char *want)
{
    char *got = compress_expr(expr);
    if (!ok(got && strcmp(got, want) == 0, "compress(expand('%s')) = '%s'", expr, want))
        diag("  got '%s'", got ? got : "(null)");
    free(got);
}

/* expand(compress(names)) gives the same names as a multiset (groups may move). */
static int same_multiset(char **a, size_t na, char **b, size_t nb)
{
    if (na != nb)
        return 0;
    char **sa = malloc(sizeof *sa * (na + 1)), **sb = malloc(sizeof *sb * (nb + 1));
    memcpy(sa, a, sizeof *sa * na);
    memcpy(sb, b, sizeof *sb * nb);
    for (size_t i = 0; i < na; i++)     /* insertion sort: small inputs */
        for (size_t j = i; j > 0 && strcmp(sa[j - 1], sa[j]) > 0; j--) {
            char *t = sa[j]; sa[j] = sa[j - 1]; sa[j - 1] = t;
        }
    for (size_t i = 0; i < nb; i++)
        for (size_t j = i; j > 0 && strcmp(sb[j - 1], sb[j]) > 0; j--) {
            char *t = sb[j]; sb[j] = sb[j - 1]; sb[j - 1] = t;
        }
    int same = 1;
    for (size_t i = 0; i < na && same; i++)
        same = strcmp(sa[i], sb[i]) == 0;
    free(sa);
    free(sb);
    return same;
}

static void test_compress(void)
{
    compresses_to("cn[001-016,019]", "cn[001-016,019]");
    compresses_to("cn[8-10]", "cn[8-10]");
    compresses_to("cn[1-16]", "cn[1-16]");
    compresses_to("cn[01-16]", "cn[01-16]");
    compresses_to("cn[09],cn010", "cn[09,010]");
    compresses_to("cn3,cn1,cn2,cn7", "cn[1-3,7]");
    compresses_to("gpu1,cn1,gpu2,cn2", "gpu[1-2],cn[1-2]");
    compresses_to("r[1-2]n[01-02]", "r1n[01-02],r2n[01-02]");
    compresses_to("login,cn5,login", "login,login,cn5");
    compresses_to("n[1-3]a,n[4-5]b", "n[1-3]a,n[4-5]b");
    compresses_to("cn1,cn1", "cn[1,1]");
    compresses_to("cn12345678901", "cn12345678901");
    char *empty = ts_hostlist_compress(NULL, 0);
    ok(empty && strcmp(empty, "") == 0, "no names compress to an empty string");
    free(empty);

    /* round trips over pseudo-random name sets */
    unsigned seed = 12345;
    const char *prefixes[] = { "cn", "gpu", "r1n", "x", "node-" };
    for (int round = 0; round < 50; round++) {
        size_t n = 1 + (size_t)(round * 7 % 60);
        char **names = malloc(sizeof *names * n);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned r = seed >> 8;
            char buf[64];
            int width = (int)(r % 4);
            snprintf(buf, sizeof buf, "%s%0*u%s", prefixes[r % 5], width, (r >> 4) % 120, (r >> 12) % 7 ? "" : "b");
            names[i] = strdup(buf);
        }
        char *s = ts_hostlist_compress(names, n);
        ts_hostlist hl = { 0, NULL };
        ts_error err = { "" };
        int rc = s ? ts_hostlist_expand(s, strlen(s), &hl, &err) : -1;
        if (!ok(rc == TS_OK && same_multiset(names, n, hl.hosts, hl.count),
                "random round trip %d (%zu names)", round, n))
            diag("  compressed '%s': %s", s ? s : "(null)", err.text);
        ts_hostlist_free(&hl);
        free(s);
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
    }
}

static void test_order(void)
{
    ok(ts_hostname_cmp("cn2", "cn10") < 0, "cn2 < cn10");
    ok(ts_hostname_cmp("cn10", "cn2") > 0, "cn10 > cn2");
    ok(ts_hostname_cmp("cn02", "cn10") < 0, "cn02 < cn10");
    ok(ts_hostname_cmp("cn01", "cn1") != 0 && ts_hostname_cmp("cn01", "cn1") == -ts_hostname_cmp("cn1", "cn01"),
       "cn01 and cn1 differ, antisymmetrically");
    ok(ts_hostname_cmp("r2n1", "r10n0") < 0, "r2n1 < r10n0");
    ok(ts_hostname_cmp("a", "b") < 0, "a < b");
    ok(ts_hostname_cmp("cn", "cn1") < 0, "cn < cn1");
    is_int(ts_hostname_cmp("cn7", "cn7"), 0, "cn7 == cn7");
}

/* SLURM_JOB_CPUS_PER_NODE: "2(x3),1" gives 2 2 2 1; anything else names the column. */
static void test_cpus_per_node(void)
{
    int c[8];
    ts_error err = {{0}};
    ok(ts_cpus_per_node_parse("2(x3),1", 4, c, &err) == TS_OK && c[0] == 2 && c[2] == 2 && c[3] == 1,
       "2(x3),1 -> 2 2 2 1 %s", err.text);
    ok(ts_cpus_per_node_parse("16", 1, c, &err) == TS_OK && c[0] == 16, "16 -> 16");
    ok(ts_cpus_per_node_parse("1,2,3", 3, c, &err) == TS_OK && c[1] == 2, "1,2,3");
    static const struct { const char *text; int n; const char *want; } bad[] = {
        {"2(x3)", 4, "names 3 nodes, the job has 4"},
        {"2(x5)", 4, "more than the job's 4 nodes"},
        {"0", 1, "column 1"},
        {"2(x0)", 1, "column 2"},
        {"2,a", 2, "column 3"},
        {"2;1", 2, "column 2: wanted ','"},
        {"70000", 1, "1..65536"},
        {"", 1, "names 0 nodes"},
        {"-1", 1, "column 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ok(ts_cpus_per_node_parse(bad[i].text, bad[i].n, c, &err) == TS_EINPUT && strstr(err.text, bad[i].want),
           "'%s' refused: %s", bad[i].text, err.text);
}

int main(void)
{
    test_cpus_per_node();
    test_expand();
    test_errors();
    test_compress();
    test_order();
    return done_testing();
}
