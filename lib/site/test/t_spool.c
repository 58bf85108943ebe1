/* The job spool (lib/site/spool.c): the directory's rules (made without following symlinks,
 * the caller's own, the job's group, 0750; files 0640), bounded reads, removal that never
 * follows a symlink, and status.yaml written by the head and placement emitters and read back,
 * including what an agent or a plugin may have put in it. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "tap.h"
#include "toposcope/spool.h"
#include "toposcope/userfile.h"

/* the job's user, and another user of the same primary group */
#define JOB_UID 65534
#define JOB_GID 65534
#define GROUP_MATE 65533

static char tmp[] = "/tmp/t_spool.XXXXXX";

static void test_parent(void)
{
    char out[64];
    ts_error err = {{0}};
    ok(ts_spool_parent("/var/spool/toposcope/%n", "cn01", out, sizeof out, &err) == TS_OK &&
           strcmp(out, "/var/spool/toposcope/cn01") == 0, "%%n becomes the node: %s", out);
    ok(ts_spool_parent("/s/%n/x/%n", "a", out, sizeof out, &err) == TS_OK &&
           strcmp(out, "/s/a/x/a") == 0, "every %%n: %s", out);
    ok(ts_spool_parent("/s/%x%", "a", out, sizeof out, &err) == TS_OK && strcmp(out, "/s/%x%") == 0,
       "other %% stay: %s", out);
    ok(ts_spool_parent("/s/%n", "a-very-long-node-name-that-does-not-fit", out, 16, &err) ==
           TS_EINPUT && strstr(err.text, "longer than 15 bytes"), "too long: %s", err.text);
}

static void test_directory(void)
{
    char parent[128], path[256];
    ts_error err = {{0}};
    snprintf(parent, sizeof parent, "%s/spool", tmp);
    int fd = ts_spool_open(parent, "42", JOB_UID, JOB_GID, &err);
    ok(fd >= 0, "the parent and the job's directory are made: %s", err.text);
    struct stat st = {0};
    snprintf(path, sizeof path, "%s/42", parent);
    int found = stat(path, &st) == 0;
    ok(found && (st.st_mode & 07007) == 0 && st.st_uid == geteuid(),
       "the job's directory is ours, nothing for others (mode %o)", (unsigned)(st.st_mode & 07777));
    ok(ts_spool_write(fd, "status.yaml", "status: measured\n", 17, JOB_UID, JOB_GID, &err) == TS_OK,
       "a file is written: %s", err.text);
    snprintf(path, sizeof path, "%s/42/status.yaml", parent);
    found = stat(path, &st) == 0;
    ok(found && (st.st_mode & 07007) == 0 && st.st_uid == geteuid(),
       "files are ours, nothing for others (mode %o)", (unsigned)(st.st_mode & 07777));
    /* who may read it: the job's user, not another user of its primary group */
    char *text;
    size_t len;
    ok(ts_read_user_file(path, JOB_UID, JOB_GID, 1024, 1000, &text, &len, &err) == TS_OK && text,
       "the job's user reads it: %s", err.text);
    free(text);
    /* (on a file system without POSIX ACLs the group shares it: the fallback, 0640) */
    int acl = getxattr(path, "system.posix_acl_access", NULL, 0) > 0;
    int mate = ts_read_user_file(path, GROUP_MATE, JOB_GID, 1024, 1000, &text, &len, &err);
    free(text);
    ok(acl ? mate == TS_EINPUT : mate == TS_OK && (st.st_mode & 07777) == 0640,
       "another user of the job's group does not (%s): %s", acl ? "ACL" : "no ACLs here, group 0640",
       err.text);
    ok(ts_spool_read(fd, "status.yaml", 1024, &text, &len, &err) == TS_OK && text && len == 17 &&
           strcmp(text, "status: measured\n") == 0, "and read back whole");
    free(text);
    ok(ts_spool_read(fd, "absent", 1024, &text, &len, &err) == TS_OK && !text && len == 0,
       "an absent file reads as none, without an error");
    ok(ts_spool_read(fd, "status.yaml", 8, &text, &len, &err) == TS_ELIMIT && !text &&
           strstr(err.text, "larger than 8 bytes"), "a bound is kept: %s", err.text);
    ok(symlinkat("/etc/passwd", fd, "linked") == 0 &&
           ts_spool_read(fd, "linked", 1 << 20, &text, &len, &err) == TS_ESYS && !text,
       "a symlink is not read through: %s", err.text);
    int again = ts_spool_open(parent, "42", JOB_UID, JOB_GID, &err);
    ok(again >= 0, "an existing job directory opens again");
    close(again);
    close(fd);

    /* a job directory that is a symlink, or not a job id, is refused */
    char victim[128];
    snprintf(victim, sizeof victim, "%s/victim", tmp);
    mkdir(victim, 0700);
    snprintf(path, sizeof path, "%s/7", parent);
    ok(symlink(victim, path) == 0 && ts_spool_open(parent, "7", JOB_UID, JOB_GID, &err) < 0,
       "a symlinked job directory is refused: %s", err.text);
    static const char *const bad[] = {"..", ".", "", "1/2", "../1", "x1", "1 2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ok(ts_spool_open(parent, bad[i], JOB_UID, JOB_GID, &err) == TS_EINPUT &&
               ts_spool_remove(parent, bad[i], &err) == TS_EINPUT,
           "job '%s' is refused: %s", bad[i], err.text);
    ok(ts_spool_job_ok("4242") && ts_spool_job_ok("43_2") && ts_spool_job_ok("43.1") &&
           !ts_spool_job_ok("._1") && !ts_spool_job_ok("_1") && !ts_spool_job_ok(NULL) &&
           !ts_spool_job_ok("1234567890123456789012345678901"  "2"),
       "a job id starts with a digit and is shorter than 32 bytes");
    char deep[128];
    snprintf(deep, sizeof deep, "%s/a/b/%s", tmp, "node7");
    fd = ts_spool_open(deep, "44", JOB_UID, JOB_GID, &err);
    ok(fd >= 0, "a parent several levels deep is made, as mkdir -p does: %s", err.text);
    if (fd >= 0)
        close(fd);
    char open_parent[128];
    snprintf(open_parent, sizeof open_parent, "%s/world", tmp);
    mkdir(open_parent, 0777);
    chmod(open_parent, 01777);
    ok(ts_spool_open(open_parent, "5", JOB_UID, JOB_GID, &err) == TS_EINPUT &&
           strstr(err.text, "writable by it alone"), "a parent others may write in is refused: %s",
       err.text);
    fd = ts_spool_open(parent, "43_2", JOB_UID, JOB_GID, &err);
    ok(fd >= 0, "an array task's id is a job id: %s", err.text);
    close(fd);

    /* removal: the files and the directory; the symlink's target stays */
    int vfd = open(victim, O_RDONLY | O_DIRECTORY);
    ok(ts_spool_write(vfd, "keep", "x", 1, (uid_t)-1, (gid_t)-1, &err) == TS_OK, "the victim holds a file");
    close(vfd);
    ok(ts_spool_remove(parent, "42", &err) == TS_OK, "the job's directory is removed: %s", err.text);
    snprintf(path, sizeof path, "%s/42", parent);
    ok(access(path, F_OK) != 0, "and is gone");
    ok(ts_spool_remove(parent, "42", &err) == TS_OK, "removing it again is no error");
    ts_spool_remove(parent, "7", &err);
    snprintf(path, sizeof path, "%s/keep", victim);
    ok(access(path, F_OK) == 0, "removal never follows a symlinked job directory");
    snprintf(path, sizeof path, "%s/nowhere", tmp);
    ok(ts_spool_remove(path, "1", &err) == TS_OK, "a missing parent is no error");
    ok(ts_spool_open_dir(victim, &err) >= 0, "--out: our own directory opens");
    snprintf(path, sizeof path, "%s/out-link", tmp);
    ok(symlink(victim, path) == 0 && ts_spool_open_dir(path, &err) == TS_ESYS,
       "--out: a symlink is refused: %s", err.text);
}

/* The head and placement as the emitters write them, plus what the agents add between. */
static char *status_text(const ts_status_head *h, int placement)
{
    char *s = NULL;
    size_t len;
    FILE *f = open_memstream(&s, &len);
    ts_status_emit_head(f, h);
    fprintf(f, "budget_ms: 2000\nwire: {received: 10, accepted: 9, dropped: 1, bad_mac: 1}\n");
    ts_mpi_plan mpi = {.open_mpi = 1, .hydra = 1, .hydra_binding = "user:0+1,2+3", .intel_mpi = 1,
                       .intel_perhost = 2, .intel_pin = "0,2"};
    if (placement)
        ts_status_emit_placement(f, "placed", "compact", "ranks \"by\" the tree", &mpi);
    fclose(f);
    return s;
}

static void test_status(void)
{
    char *names[] = {"cn07", "cn\"x", "gpu[1]"};
    ts_status_head h = {.job = "12", .mode = "prolog", .status = "partial",
                        .reason = "deadline: \"2 of 3\" \\ rounds\n\x1b[31mred", .leader = "cn01",
                        .nodes = 8, .measured_nodes = 5, .unreachable = names, .nunreachable = 3};
    char *text = status_text(&h, 1);
    ts_status s;
    ts_error err = {{0}};
    ok(ts_status_parse(&s, text, strlen(text), "status.yaml", &err) == TS_OK, "the emitted status "
       "parses: %s", err.text);
    ok(s.present && strcmp(s.status, "partial") == 0, "status: %s", s.status);
    ok(strcmp(s.reason, "deadline: \"2 of 3\" \\ rounds  [31mred") == 0,
       "reason: quotes and backslashes kept, control characters as spaces: %s", s.reason);
    ok(s.nunreachable == 3 && strcmp(s.unreachable[0], "cn07") == 0 &&
           strcmp(s.unreachable[1], "cn\"x") == 0 && strcmp(s.unreachable[2], "gpu[1]") == 0,
       "the unreachable nodes, in order");
    ok(strcmp(s.placement, "placed") == 0 && strcmp(s.placement_reason, "ranks \"by\" the tree") == 0 &&
           s.mpi.open_mpi == 1, "the placement section");
    ok(s.mpi.hydra == 1 && s.mpi.hydra_binding && strcmp(s.mpi.hydra_binding, "user:0+1,2+3") == 0,
       "MPICH's switch and binding read back");
    ok(s.mpi.intel_mpi == 1 && s.mpi.intel_perhost == 2 && s.mpi.intel_pin && strcmp(s.mpi.intel_pin, "0,2") == 0,
       "Intel MPI's switch, ranks per host and pin list read back");
    ts_status_free(&s);
    ok(s.unreachable == NULL && s.nunreachable == 0 && !s.mpi.hydra_binding && !s.mpi.intel_pin, "freed and emptied");
    free(text);

    /* the plugin's fallback: the head alone, no placement */
    ts_status_head fb = {.job = "13", .status = "fallback", .reason = "toposcope-prolog was killed"};
    text = status_text(&fb, 0);
    ok(ts_status_parse(&s, text, strlen(text), "status.yaml", &err) == TS_OK &&
           strcmp(s.status, "fallback") == 0 && s.nunreachable == 0 && s.placement[0] == '\0' &&
           !s.mpi.open_mpi && !s.mpi.hydra && !s.mpi.intel_mpi, "a head without a leader, nor placement: %s", err.text);
    ts_status_free(&s);
    free(text);

    /* a status.yaml of an older prolog: export_mca alone, the launchers it never knew stay off */
    const char *old = "job: 9\nstatus: measured\nreason: \"\"\nplacement: placed\nplacement_policy: \"compact\"\n"
                      "placement_reason: \"16 ranks\"\nplacement_export_mca: true\n";
    ok(ts_status_parse(&s, old, strlen(old), "status.yaml", &err) == TS_OK && s.mpi.open_mpi && !s.mpi.hydra &&
           !s.mpi.intel_mpi && !s.mpi.hydra_binding && s.mpi.intel_perhost == 0 && !s.mpi.intel_pin,
       "an older status.yaml: Open MPI as before, MPICH and Intel MPI off %s", err.text);
    ts_status_free(&s);
    /* a plan whose binding does not fit: the switch on, no binding written */
    ts_mpi_plan unbound = {.hydra = 1};
    char *buf = NULL;
    size_t blen;
    FILE *f = open_memstream(&buf, &blen);
    fprintf(f, "status: measured\n");
    ts_status_emit_placement(f, "placed", "spread", "8 ranks", &unbound);
    fclose(f);
    ok(ts_status_parse(&s, buf, blen, "status.yaml", &err) == TS_OK && s.mpi.hydra && !s.mpi.hydra_binding &&
           !strstr(buf, "placement_hydra_binding") && !strstr(buf, "placement_intel_perhost"),
       "hydra on without a binding: no binding key, none read");
    ts_status_free(&s);
    free(buf);

    /* bad input: a message with the position, and an empty, freeable result */
    static const struct { const char *text, *want; } bad[] = {
        {"- a\n- b\n", "status.yaml:1:1"},
        {"status: [a\n", "status.yaml:"},
        {"reason: x\n", "no 'status'"},
        {"status: ok\nunreachable: cn1\n", "status.yaml:2:14: 'unreachable' wants a list"},
        {"status: ok\nunreachable: [{a: 1}]\n", "status.yaml:2:"},
        {"status: ok\nplacement_export_mca: maybe\n", "placement_export_mca"},
        {"status: ok\nplacement_hydra: 1\n", "status.yaml:2:18: 'placement_hydra' must be true or false"},
        {"status: ok\nplacement_hydra_binding: \"0,1\"\n", "status.yaml:2:26: 'placement_hydra_binding' wants 'user:' then"},
        {"status: ok\nplacement_hydra_binding: \"user:0;rm -rf /\"\n", "'placement_hydra_binding' wants"},
        {"status: ok\nplacement_intel_pin: \"0+1\"\n", "status.yaml:2:22: 'placement_intel_pin' wants CPU numbers joined by ','"},
        {"status: ok\nplacement_intel_perhost: 0\n", "'placement_intel_perhost' must be an integer from 1"},
        {"status: {a: 1}\n", "'status' wants a string"},
        {"", "empty"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&s, 0x5a, sizeof s);
        int rc = ts_status_parse(&s, bad[i].text, strlen(bad[i].text), "status.yaml", &err);
        ok(rc == TS_EINPUT && strstr(err.text, bad[i].want) && !s.present && !s.unreachable && !s.mpi.hydra_binding,
           "refused %zu: %s", i, err.text);
        ts_status_free(&s);
    }
    const char *more = "status: measured\nfuture_key: {x: [1, 2]}\nstatus_note: hi\n";
    ok(ts_status_parse(&s, more, strlen(more), "status.yaml", &err) == TS_OK &&
           strcmp(s.status, "measured") == 0, "keys it does not know are left alone");
    ts_status_free(&s);
    char *cut = malloc(2000);
    memcpy(cut, "status: ", 8);
    memset(cut + 8, 'x', 1990);
    cut[1998] = '\n';
    cut[1999] = '\0';
    ok(ts_status_parse(&s, cut, 1999, "status.yaml", &err) == TS_OK &&
           strlen(s.status) == sizeof s.status - 1, "a long value is cut to its buffer");
    ts_status_free(&s);
    free(cut);

    /* load: from a directory; absent is not an error */
    char dir[128];
    snprintf(dir, sizeof dir, "%s/loaded", tmp);
    mkdir(dir, 0700);
    ok(ts_status_load(&s, dir, &err) == TS_OK && !s.present, "no status.yaml: present = 0");
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    ts_spool_write(fd, "status.yaml", "status: measured\nunreachable: []\n", 33, (uid_t)-1, (gid_t)-1, &err);
    close(fd);
    ok(ts_status_load(&s, dir, &err) == TS_OK && s.present && strcmp(s.status, "measured") == 0 &&
           s.nunreachable == 0, "status.yaml loads from its directory");
    ts_status_free(&s);
    ok(ts_status_load(&s, "/nonexistent/dir", &err) == TS_OK && !s.present,
       "a missing directory: present = 0");
    ok(ts_status_load(&s, "/etc/passwd/11", &err) == TS_OK && !s.present,
       "a directory under a file (an unwritable spool): present = 0");
}

int main(void)
{
    if (!mkdtemp(tmp) || chmod(tmp, 0755) != 0) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    test_parent();
    test_directory();
    test_status();
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0)
        diag("could not remove %s", tmp);
    return done_testing();
}
