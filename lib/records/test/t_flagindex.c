/* The flag index: its file read and written back, every refusal naming FILE:LINE, the counting
 * the drain check does, its bounds, and its generations in a records directory (published with
 * link(2), a lost race reloaded, a missing or corrupt index rebuilt from the records). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tap.h"
#include "toposcope/flagindex.h"

static ts_flag_index *parse(const char *text, int *rc, ts_error *err)
{
    ts_flag_index *x = ts_flag_index_new();
    *rc = ts_flag_index_parse(x, text, strlen(text), "flags.7", err);
    return x;
}

static char *write_text(ts_flag_index *x)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    ts_flag_index_write(x, m);
    fclose(m);
    return buf;
}

static void test_read_write(void)
{
    ts_error err = {{0}};
    int rc;
    ts_flag_index *x = parse("# a comment\n\ntoposcope_flags 1\nsince 100\nswept 200\n"
                             "flag n2 1000 42 slow\n"
                             "flag n1 1500 43 unreachable\r\n"
                             "flag n1 1200 41 loss\n"
                             "flag n1 1100 43 slow\n", &rc, &err);
    ok(rc == TS_OK, "a flag index parses: %s", rc ? err.text : "");
    ok(ts_flag_index_since(x) == 100 && ts_flag_index_swept(x) == 200, "since 100, swept 200");
    ts_flag_count k;
    ts_flag_index_count(x, "n1", 0, 10000, &k);
    ok(k.jobs == 2 && k.unreachable == 1 && k.loss == 1 && k.slow == 0,
       "n1: 2 jobs (43 counts once, at its newest flag), 1 silent, 1 lossy (%d %d %d %d)", k.jobs, k.unreachable,
       k.loss, k.slow);
    ok(k.last == 1500 && !strcmp(k.last_job, "43"), "n1's last flag: job 43 at 1500 (%s %lld)", k.last_job,
       (long long)k.last);
    ts_flag_index_count(x, "n1", 1300, 1400, &k);
    ok(k.jobs == 0, "no n1 flag between 1300 and 1400");
    ts_flag_index_count(x, "n0", 0, 10000, &k);
    ok(k.jobs == 0 && k.last == 0, "a node never flagged: none");
    char *text = write_text(x);
    ok(strstr(text, "toposcope_flags 1\nsince 100\nswept 200\nflag n1 1200 41 loss\nflag n1 1500 43 unreachable\n"
                    "flag n2 1000 42 slow\n") != NULL,
       "written sorted by node and time, one line per node and job");
    ts_flag_index *y = ts_flag_index_new();
    ok(ts_flag_index_parse(y, text, strlen(text), "again", &err) == TS_OK && ts_flag_index_size(y) == 3,
       "and read back: 3 flags");
    char *text2 = write_text(y);
    ok(!strcmp(text, text2), "written again, the same text");
    free(text);
    free(text2);
    ts_flag_index_free(x);
    ts_flag_index_free(y);
}

static void test_refusals(void)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        { "", "flags.7: empty, not a flag index" },
        { "# only a comment\n", "flags.7: empty, not a flag index" },
        { "toposcope_record: 1\n", "flags.7:1: not a flag index: 'toposcope_flags 1' must come first" },
        { "toposcope_flags 2\nsince 0\n", "flags.7:1: flag index version '2': this reader knows version 1" },
        { "toposcope_flags 1\n", "flags.7: 'since' is missing" },
        { "toposcope_flags 1\nsince 0\nsince 0\n", "flags.7:3: 'since' given twice" },
        { "toposcope_flags 1\nsince -5\n", "flags.7:2: 'since' wants one time" },
        { "toposcope_flags 1\nsince 0\nflag n1 12 3\n", "flags.7:3: a flag is 'flag NODE TIME JOB KIND'" },
        { "toposcope_flags 1\nsince 0\nflag n1 12 3 slow extra\n", "flags.7:3: a flag is" },
        { "toposcope_flags 1\nsince 0\nflag n1 12 3 fast\n", "flags.7:3: a flag is 'flag NODE TIME JOB KIND', KIND slow" },
        { "toposcope_flags 1\nsince 0\nflag n1 1e9 3 slow\n", "flags.7:3: time '1e9' is not seconds since the epoch" },
        { "toposcope_flags 1\nsince 0\nflag n1 99999999999999 3 slow\n", "flags.7:3: time '99999999999999'" },
        { "toposcope_flags 1\nsince 0\nnodes n1\n", "flags.7:3: unknown line 'nodes' (expected flag, since or swept)" },
        { "toposcope_flags 1\nsince 0\nflag n\r1 1 2 slow\n", "flags.7:3: a node or job holds a control or non-ASCII" },
        { "toposcope_flags 1\nsince 0\nflag n1 1 2\x0b slow\n", "flags.7:3: a node or job holds a control or non-ASCII" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ts_error err = {{0}};
        int rc;
        ts_flag_index *x = parse(bad[i].text, &rc, &err);
        ok(rc != TS_OK && strstr(err.text, bad[i].want) && ts_flag_index_size(x) == 0,
           "refused: %s", err.text);
        ts_flag_index_free(x);
    }
    /* a NUL byte, a line too long, a token too long */
    ts_error err = {{0}};
    ts_flag_index *x = ts_flag_index_new();
    const char nul[] = "toposcope_flags 1\nsince 0\nflag n1\0 1 2 slow\n";
    ok(ts_flag_index_parse(x, nul, sizeof nul - 1, "flags.7", &err) == TS_EINPUT && strstr(err.text, "flags.7:3: a NUL"),
       "a NUL byte: %s", err.text);
    char *longline = malloc(4096);
    int o = snprintf(longline, 4096, "toposcope_flags 1\nsince 0\nflag ");
    memset(longline + o, 'n', 1100);
    strcpy(longline + o + 1100, " 1 2 slow\n");
    ok(ts_flag_index_parse(x, longline, strlen(longline), "flags.7", &err) == TS_EINPUT &&
           strstr(err.text, "flags.7:3: line longer than 1024 bytes"),
       "a line too long: %s", err.text);
    memset(longline + o, 'n', 300);
    strcpy(longline + o + 300, " 1 2 slow\n");
    ok(ts_flag_index_parse(x, longline, strlen(longline), "flags.7", &err) == TS_EINPUT &&
           strstr(err.text, "flags.7:3: a node or job longer than 255 bytes"),
       "a node too long: %s", err.text);
    free(longline);
    ok(ts_flag_index_add(x, "n 1", "5", 1, TS_ANOMALY_SLOW, &err) == TS_EINPUT &&
           ts_flag_index_add(x, "n1", "", 1, TS_ANOMALY_SLOW, &err) == TS_EINPUT && ts_flag_index_size(x) == 0,
       "a node or job with a space, or empty, is not added: %s", err.text);
    ts_flag_index_free(x);
}

static void test_bounds(void)
{
    ts_error err = {{0}};
    ts_flag_index *x = ts_flag_index_new();
    int64_t now = 1000000000;
    char job[16];
    for (int j = 0; j < TS_FLAGS_PER_NODE + 50; j++) {
        snprintf(job, sizeof job, "%d", j);
        ts_flag_index_add(x, "busy", job, now - 1000 + j % 900, TS_ANOMALY_SLOW, &err);
    }
    ts_flag_index_add(x, "old", "1", now - TS_FLAGS_KEEP_S - 1, TS_ANOMALY_SLOW, &err);
    ts_flag_index_add(x, "kept", "1", now - TS_FLAGS_KEEP_S + 1, TS_ANOMALY_SLOW, &err);
    ts_flag_index_add(x, "future", "1", now + TS_FLAGS_SKEW_S + 1, TS_ANOMALY_SLOW, &err);
    ts_flag_index_add(x, "soon", "1", now + TS_FLAGS_SKEW_S, TS_ANOMALY_SLOW, &err);
    ts_flag_index_prune(x, now);
    ts_flag_count k;
    ts_flag_index_count(x, "busy", 0, now, &k);
    ok(k.jobs == TS_FLAGS_PER_NODE, "a node keeps its newest %d flags (%d)", TS_FLAGS_PER_NODE, k.jobs);
    ts_flag_index_count(x, "old", 0, 2 * now, &k);
    ok(k.jobs == 0, "a flag older than the longest window goes");
    ts_flag_index_count(x, "kept", 0, 2 * now, &k);
    ok(k.jobs == 1, "one just inside it stays");
    ts_flag_index_count(x, "future", 0, 2 * now, &k);
    ok(k.jobs == 0, "a flag from beyond the clock skew goes");
    ts_flag_index_count(x, "soon", 0, 2 * now, &k);
    ok(k.jobs == 1, "one within the skew stays");
    ts_flag_index_free(x);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void write_record(const char *dir, const char *job, long t, const char *node, const char *reason)
{
    char name[64], text[1024];
    snprintf(name, sizeof name, "job-%s.yaml", job);
    snprintf(text, sizeof text,
             "toposcope_record: 1\njob: \"%s\"\ntime: %ld\nlinks: []\nanomalies:\n"
             "  - {link: \"%s\", kind: access, reason: %s, score: 9}\n"
             "  - {link: \"{n[1-4]}\", kind: uplink, reason: slow, score: 8}\n", job, t, node, reason);
    write_file(dir, name, text);
}

typedef struct adding {
    const char *node, *job;
    int64_t t;
    int calls, saw_missing, saw_corrupt;
} adding;

static int add_one(ts_flag_index *x, const ts_flag_found *found, void *arg, ts_error *err)
{
    adding *a = arg;
    a->calls++;
    a->saw_missing |= found->missing;
    a->saw_corrupt |= found->corrupt;
    return ts_flag_index_add(x, a->node, a->job, a->t, TS_ANOMALY_SLOW, err);
}

typedef struct racing {
    adding a;
    const char *index;
} racing;

/* The first time, another writer publishes the next generation behind our back. */
static int race_once(ts_flag_index *x, const ts_flag_found *found, void *arg, ts_error *err)
{
    racing *r = arg;
    if (r->a.calls == 0) {
        char name[32];
        snprintf(name, sizeof name, "flags.%lld", found->generation + 1);
        write_file(r->index, name, "toposcope_flags 1\nsince 5\nswept 0\nflag n9 1700000000 77 slow\n");
    }
    return add_one(x, found, &r->a, err);
}

/* Every generation's file made `seconds` older. */
static void age_all(const char *index, int seconds)
{
    char path[600];
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= seconds;
    t[1] = t[0];
    for (int g = 1; g < 400; g++) {
        snprintf(path, sizeof path, "%s/flags.%d", index, g);
        utimensat(AT_FDCWD, path, t, 0);
    }
}

/* The first time: flags.G+1 and flags.G+2 appear, then G and G+1 are removed (by their
 * generation numbers, lowest first, as a remover does). */
static int moved_on_once(ts_flag_index *x, const ts_flag_found *found, void *arg, ts_error *err)
{
    racing *r = arg;
    if (r->a.calls == 0) {
        char name[32], path[600];
        long long g = found->generation;
        snprintf(name, sizeof name, "flags.%lld", g + 1);
        write_file(r->index, name, "toposcope_flags 1\nsince 5\nflag n8 1700000000 78 slow\n");
        snprintf(name, sizeof name, "flags.%lld", g + 2);
        write_file(r->index, name, "toposcope_flags 1\nsince 5\nflag n8 1700000000 78 slow\n");
        for (long long k = g; k <= g + 1; k++) {
            snprintf(path, sizeof path, "%s/flags.%lld", r->index, k);
            unlink(path);
        }
    }
    return add_one(x, found, &r->a, err);
}

static int count_generations(const char *index)
{
    int n = 0;
    char path[600];
    for (int g = 1; g < 400; g++) {
        snprintf(path, sizeof path, "%s/flags.%d", index, g);
        n += access(path, F_OK) == 0;
    }
    return n;
}

static void test_directory(void)
{
    char dir[] = "/tmp/t_flagindex.XXXXXX", index[600], cmd[700];
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        exit(1);
    }
    snprintf(index, sizeof index, "%s/%s", dir, TS_FLAGS_DIR);
    long now = 1700000000;
    write_record(dir, "1", now - 100, "n1", "slow");
    write_record(dir, "2", now - 50, "n1", "unreachable");
    write_record(dir, "3", now - 10, "n2", "loss");
    write_file(dir, "job-9.yaml", "not a record\n");

    ts_error err = {{0}};
    ts_flag_index *x = NULL;
    ok(ts_flag_index_load(dir, &x, &err) == TS_OK && x == NULL, "no index yet: none, no error");

    ts_flag_index *r = ts_flag_index_new();
    int read = 0;
    int rrc = ts_flag_index_rebuild(r, dir, ts_flag_clock() + 30, &read, &err);
    ok(rrc == TS_OK && read == 3,
       "rebuilt from the 3 records, the foreign file passed over (%d)", read);
    ts_flag_count k;
    ts_flag_index_count(r, "n1", 0, now, &k);
    ok(k.jobs == 2 && k.unreachable == 1 && ts_flag_index_since(r) == 0, "n1 twice, one silent; every record read");
    ts_flag_index_count(r, "{n[1-4]}", 0, now, &k);
    ok(k.jobs == 0, "uplinks are not in the index");
    ts_flag_index_free(r);
    r = ts_flag_index_new();
    ok(ts_flag_index_rebuild(r, dir, ts_flag_clock() - 1, &read, &err) == TS_OK && read == 0 &&
           ts_flag_index_since(r) > now,
       "no time to rebuild: nothing read, and since says so");
    ts_flag_index_free(r);

    adding a = { "n3", "4", now, 0, 0, 0 };
    ts_flag_update u = { dir, now, ts_flag_clock() + 30, add_one, &a };
    ts_flag_found found;
    int urc = ts_flag_index_update(&u, &x, &found, &err);
    ok(urc == TS_OK && x && a.saw_missing && found.generation == 0, "an update with no index finds it missing: %s",
       urc ? err.text : "");
    ts_flag_index_free(x);
    snprintf(cmd, sizeof cmd, "%s/flags.1", index);
    ok(access(cmd, F_OK) == 0, "and publishes flags.1");

    a = (adding){ "n3", "5", now + 1, 0, 0, 0 };
    ts_flag_index_update(&u, &x, &found, &err);
    ts_flag_index_free(x);
    ok(found.generation == 1 && count_generations(index) == 2,
       "the next is flags.2; flags.1 stays until flags.2 has stood a minute");
    ts_flag_index_load(dir, &x, &err);
    ts_flag_index_count(x, "n3", 0, 2 * now, &k);
    ok(x && k.jobs == 2, "both writers' flags are in it (%d)", k.jobs);
    ts_flag_index_free(x);

    /* another writer publishes flags.3 while we prepare ours on flags.2: link(2) refuses ours,
     * we load theirs, prepare again and publish flags.4 */
    racing rc3 = { { "n3", "6", now + 2, 0, 0, 0 }, index };
    ts_flag_update ur = { dir, now, ts_flag_clock() + 30, race_once, &rc3 };
    urc = ts_flag_index_update(&ur, &x, &found, &err);
    ok(urc == TS_OK && rc3.a.calls == 2 && found.generation == 3,
       "a lost race: prepared twice, published on flags.3 (%d calls, generation %lld)", rc3.a.calls,
       found.generation);
    ts_flag_index_free(x);
    ts_flag_index_load(dir, &x, &err);
    ts_flag_count k9, k3;
    ts_flag_index_count(x, "n9", 0, 2 * now, &k9);
    ts_flag_index_count(x, "n3", 0, 2 * now, &k3);
    ok(k9.jobs == 1 && k3.jobs == 1 && ts_flag_index_since(x) == 5,
       "the winner's flag and since kept, and ours added (n3's earlier ones left with flags.2: %d)", k3.jobs);
    ts_flag_index_free(x);

    /* while we prepare on flags.4, others publish flags.5 and flags.6 and a remover takes 4 and
     * 5: the name flags.5 is free again, but readers have moved on to 6. Our link succeeds, our
     * base is gone: the update withdraws flags.5 and publishes flags.7 on 6. */
    racing moved = { { "n3", "6b", now + 2, 0, 0, 0 }, index };
    ts_flag_update um = { dir, now, ts_flag_clock() + 30, moved_on_once, &moved };
    urc = ts_flag_index_update(&um, &x, &found, &err);
    ts_flag_index_free(x);
    snprintf(cmd, sizeof cmd, "%s/flags.5", index);
    int five = access(cmd, F_OK) == 0;
    ts_flag_index_load(dir, &x, &err);
    ts_flag_index_count(x, "n8", 0, 2 * now, &k9);
    ts_flag_index_count(x, "n3", 0, 2 * now, &k3);
    ok(urc == TS_OK && moved.a.calls == 2 && found.generation == 6 && !five && k9.jobs == 1 && k3.jobs >= 1,
       "a name reused behind our back is withdrawn and the update built on the newest (%d calls, base %lld)",
       moved.a.calls, found.generation);
    ts_flag_index_free(x);

    /* a corrupt newest generation: the update is told, rebuilds, and publishes above it */
    write_file(index, "flags.9", "toposcope_flags 1\nsince 0\nflag broken\n");
    ok(ts_flag_index_load(dir, &x, &err) == TS_EINPUT && strstr(err.text, "flags.9:3: a flag is"),
       "a reader names the corrupt file and line: %s", err.text);
    a = (adding){ "n3", "7", now + 3, 0, 0, 0 };
    ts_flag_index_update(&u, &x, &found, &err);
    ok(a.saw_corrupt && found.generation == 9 && strstr(found.why, "flags.9:3:"),
       "an update sees it corrupt: %s", found.why);
    ts_flag_index_free(x);
    snprintf(cmd, sizeof cmd, "%s/flags.10", index);
    ok(access(cmd, F_OK) == 0, "flags.10 is published above it");
    age_all(index, 120);
    a = (adding){ "n3", "8", now + 4, 0, 0, 0 };
    ts_flag_index_update(&u, &x, &found, &err);
    ts_flag_index_free(x);
    ok(count_generations(index) == 2 && access(cmd, F_OK) == 0,
       "once flags.10 has stood a minute, the next publication removes everything below it (%d left)",
       count_generations(index));

    /* many writers at once, no lock: every one's flag survives */
    enum { WRITERS = 8, EACH = 10 };
    for (int w = 0; w < WRITERS; w++) {
        if (fork() == 0) {
            for (int i = 0; i < EACH; i++) {
                char node[16], job[16];
                snprintf(node, sizeof node, "w%d", w);
                snprintf(job, sizeof job, "%d", 1000 + i);
                adding b = { node, job, now + 10, 0, 0, 0 };
                ts_flag_update v = { dir, now + 10, ts_flag_clock() + 60, add_one, &b };
                ts_flag_index *y = NULL;
                ts_flag_found f2;
                ts_error e2;
                if (ts_flag_index_update(&v, &y, &f2, &e2) != TS_OK)
                    _exit(1);
                ts_flag_index_free(y);
            }
            _exit(0);
        }
    }
    int failed = 0, st;
    while (wait(&st) > 0)
        failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    ts_flag_index_load(dir, &x, &err);
    int all = 1;
    for (int w = 0; w < WRITERS && x; w++) {
        char node[16];
        snprintf(node, sizeof node, "w%d", w);
        ts_flag_index_count(x, node, 0, 2 * now, &k);
        if (k.jobs != EACH)
            diag("%s: %d flags of %d", node, k.jobs, EACH);
        all &= k.jobs == EACH;
    }
    ok(!failed && x && all, "%d writers x %d updates at once: every flag is in the index", WRITERS, EACH);
    ts_flag_index_free(x);
    age_all(index, 120);
    a = (adding){ "n3", "9", now + 5, 0, 0, 0 };
    ts_flag_index_update(&u, &x, &found, &err);
    ts_flag_index_free(x);
    ok(count_generations(index) == 2, "and after them, two generations left (%d)", count_generations(index));

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
}

int main(void)
{
    test_read_write();
    test_refusals();
    test_bounds();
    test_directory();
    return done_testing();
}
