/* toposcope — a file a job names, read with the job user's rights (see toposcope/userfile.h).
 *
 * The reader is a forked child: between fork and _exit it calls only system calls (the parent
 * may be a threaded slurmstepd, where anything taking a lock could deadlock), and it hands the
 * bytes back through a memfd the parent made, so the parent reads them only after the child
 * has exited and cannot be made to block on a pipe. Its exit status says what went wrong. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "toposcope/userfile.h"

enum {
    READ_OK = 0,
    READ_PRIVILEGES = 10,    /* could not become the user */
    READ_MISSING,
    READ_DENIED,
    READ_SYMLINK,
    READ_NOT_REGULAR,
    READ_TOO_LARGE,
    READ_IO,
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The child: become the user, open without following or blocking, copy at most max bytes. */
static int reader_child(const char *path, uid_t uid, gid_t gid, size_t max, int out)
{
    if (geteuid() == 0) {
        if (setgroups(1, &gid) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
            return READ_PRIVILEGES;
    } else if (geteuid() != uid) {
        return READ_PRIVILEGES;
    }
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return errno == ELOOP ? READ_SYMLINK
             : errno == ENOENT || errno == ENOTDIR ? READ_MISSING
             : errno == EACCES || errno == EPERM ? READ_DENIED : READ_IO;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return READ_IO;
    if (!S_ISREG(st.st_mode))
        return READ_NOT_REGULAR;
    if ((unsigned long long)st.st_size > max)
        return READ_TOO_LARGE;
    char buf[4096];
    size_t total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return READ_IO;
        if (n == 0)
            return READ_OK;
        total += (size_t)n;
        if (total > max)   /* it grew since fstat */
            return READ_TOO_LARGE;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return READ_IO;
            done += w;
        }
    }
}

/* Wait for the child until deadline (now_ms clock); past it, kill it. Its exit status, or -1
 * when it was killed. */
static int wait_reader(pid_t pid, double deadline)
{
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (r < 0 && errno != EINTR)
            return -1;
        if (now_ms() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        struct timespec pause = {0, 500 * 1000};
        nanosleep(&pause, NULL);
    }
}

static int reader_failure(int code, const char *path, size_t max, ts_error *err)
{
    switch (code) {
    case READ_PRIVILEGES:
        return ts_fail(err, TS_ESYS, "%s: cannot take the job user's rights to read it", path);
    case READ_MISSING:
        return ts_fail(err, TS_EINPUT, "%s: no such file (for the job's user)", path);
    case READ_DENIED:
        return ts_fail(err, TS_EINPUT, "%s: the job's user may not read it", path);
    case READ_SYMLINK:
        return ts_fail(err, TS_EINPUT, "%s: a symbolic link; name the file itself", path);
    case READ_NOT_REGULAR:
        return ts_fail(err, TS_EINPUT, "%s: not a regular file", path);
    case READ_TOO_LARGE:
        return ts_fail(err, TS_EINPUT, "%s: larger than %zu bytes", path, max);
    default:
        return ts_fail(err, TS_EINPUT, "%s: cannot be read", path);
    }
}

int ts_read_user_file(const char *path, uid_t uid, gid_t gid, size_t max, int timeout_ms,
                      char **text, size_t *len, ts_error *err)
{
    *text = NULL;
    *len = 0;
    double deadline = now_ms() + timeout_ms;
    int out = memfd_create("toposcope-user-file", MFD_CLOEXEC);
    if (out < 0)
        return ts_fail(err, TS_ESYS, "cannot read %s: memfd_create: %s", path, strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(out);
        return ts_fail(err, TS_ESYS, "cannot read %s: fork: %s", path, strerror(e));
    }
    if (pid == 0)
        _exit(reader_child(path, uid, gid, max, out));
    int code = wait_reader(pid, deadline);
    if (code != READ_OK) {
        close(out);
        return code < 0 ? ts_fail(err, TS_ELIMIT, "%s: not read within %d ms", path, timeout_ms)
                        : reader_failure(code, path, max, err);
    }
    struct stat st;
    char *buf = NULL;
    int rc = fstat(out, &st) == 0 && (size_t)st.st_size <= max && (buf = malloc((size_t)st.st_size + 1))
                 ? TS_OK : ts_fail(err, TS_ENOMEM, "cannot read %s: out of memory", path);
    size_t got = 0;
    while (rc == TS_OK && got < (size_t)st.st_size) {
        ssize_t n = pread(out, buf + got, (size_t)st.st_size - got, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            rc = ts_fail(err, TS_ESYS, "cannot read %s back: %s", path, n < 0 ? strerror(errno) : "short");
        else
            got += (size_t)n;
    }
    close(out);
    if (rc != TS_OK) {
        free(buf);
        return rc;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return TS_OK;
}
