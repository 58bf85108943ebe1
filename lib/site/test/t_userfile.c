/* A file a job names, read with the job user's rights (lib/site/userfile.c): run as root (as
 * the plugin is), reading as nobody. A FIFO does not hang, a symlink is not followed, a file
 * only root may read stays unread, a large file is refused, and no message carries the
 * file's content. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "tap.h"
#include "toposcope/userfile.h"

#define NOBODY 65534
#define SECRET "aws_secret_access_key: AKIA-never-echoed"

static char tmp[] = "/tmp/t_userfile.XXXXXX";

static void put(const char *name, const char *text, mode_t mode, uid_t owner)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    if (chmod(path, mode) != 0 || chown(path, owner, owner) != 0)
        diag("cannot set up %s", path);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* read PATH (under tmp) as nobody; the result code, and the message in err */
static int read_as_nobody(const char *name, size_t max, char **text, size_t *len, ts_error *err)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return ts_read_user_file(path, NOBODY, NOBODY, max, 1000, text, len, err);
}

int main(void)
{
    if (!ok(geteuid() == 0, "runs as root, as the plugin does (make check runs as root)"))
        return done_testing();
    if (!mkdtemp(tmp) || chmod(tmp, 0755) != 0) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    put("mine.yaml", "name: mine\nkind: compact\n", 0600, NOBODY);
    put("roots.yaml", SECRET "\n", 0600, 0);
    char big[5000];
    memset(big, '#', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    put("big.yaml", big, 0644, NOBODY);
    char path[128], target[128];
    snprintf(target, sizeof target, "%s/roots.yaml", tmp);
    snprintf(path, sizeof path, "%s/link.yaml", tmp);
    if (symlink(target, path) != 0)
        diag("symlink failed");
    snprintf(path, sizeof path, "%s/fifo.yaml", tmp);
    if (mkfifo(path, 0666) != 0)
        diag("mkfifo failed");

    char *text;
    size_t len;
    ts_error err = {{0}};
    ok(read_as_nobody("mine.yaml", 4096, &text, &len, &err) == TS_OK && text &&
           strcmp(text, "name: mine\nkind: compact\n") == 0 && len == strlen(text),
       "the user's own file is read whole: %s", err.text);
    free(text);

    ok(read_as_nobody("roots.yaml", 4096, &text, &len, &err) == TS_EINPUT && !text &&
           strstr(err.text, "may not read"), "a file only root may read stays unread: %s", err.text);
    ok(!strstr(err.text, "AKIA"), "and its content is not in the message");

    ok(read_as_nobody("link.yaml", 4096, &text, &len, &err) == TS_EINPUT && !text &&
           strstr(err.text, "symbolic link") && !strstr(err.text, "AKIA"),
       "a symlink is not followed: %s", err.text);

    double t0 = now_ms();
    int rc = read_as_nobody("fifo.yaml", 4096, &text, &len, &err);
    double took = now_ms() - t0;
    ok(rc == TS_EINPUT && !text && strstr(err.text, "not a regular file"),
       "a FIFO is refused: %s", err.text);
    ok(took < 500, "without waiting for a writer (%.0f ms)", took);

    ok(read_as_nobody("big.yaml", 4096, &text, &len, &err) == TS_EINPUT && !text &&
           strstr(err.text, "larger than 4096 bytes"), "a file over the bound is refused: %s", err.text);
    ok(read_as_nobody("none.yaml", 4096, &text, &len, &err) == TS_EINPUT &&
           strstr(err.text, "no such file"), "a missing file: %s", err.text);
    ok(ts_read_user_file("/dev/zero", NOBODY, NOBODY, 4096, 1000, &text, &len, &err) == TS_EINPUT &&
           strstr(err.text, "not a regular file"), "a device is refused: %s", err.text);
    ok(ts_read_user_file(target, 0, 0, 4096, 1000, &text, &len, &err) == TS_OK && text &&
           strstr(text, "AKIA"), "root's job reads root's file (its own rights)");
    free(text);

    snprintf(path, sizeof path, "rm -rf %s", tmp);
    if (system(path) != 0)
        diag("could not remove %s", tmp);
    return done_testing();
}
