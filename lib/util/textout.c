/* toposcope — text output shared by every writer: files replaced atomically in a directory,
 * YAML strings and environment lines that survive any content (see toposcope/textout.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "toposcope/textout.h"

/* All of data to fd; 0, or -1 with errno. */
static int write_all(int fd, const char *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        done += (size_t)w;
    }
    return 0;
}

int ts_write_file_at(int dirfd, const char *name, const char *data, size_t len, int mode,
                     ts_error *err)
{
    char tmp[256];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", name) >= sizeof tmp)
        return ts_fail(err, TS_EINPUT, "file name too long: %s", name);
    /* A stale NAME.tmp from a crashed run is ours to replace; O_EXCL then refuses anything that
     * appears in between, and O_NOFOLLOW refuses a symlink planted in its place. */
    unlinkat(dirfd, tmp, 0);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return ts_fail(err, TS_ESYS, "cannot create %s: %s", tmp, strerror(errno));
    if (write_all(fd, data, len) != 0) {
        int e = errno;
        close(fd);
        unlinkat(dirfd, tmp, 0);
        return ts_fail(err, TS_ESYS, "cannot write %s: %s", tmp, strerror(e));
    }
    /* the umask must not narrow or widen what the caller asked for */
    if (fchmod(fd, (mode_t)mode) != 0 || close(fd) != 0) {
        int e = errno;
        unlinkat(dirfd, tmp, 0);
        return ts_fail(err, TS_ESYS, "cannot finish %s: %s", tmp, strerror(e));
    }
    if (renameat(dirfd, tmp, dirfd, name) != 0) {
        int e = errno;
        unlinkat(dirfd, tmp, 0);
        return ts_fail(err, TS_ESYS, "cannot rename %s to %s: %s", tmp, name, strerror(e));
    }
    return TS_OK;
}

int ts_publish_file_at(int dirfd, const char *dirname, const char *tmp_prefix, const char *data,
                       size_t len, int mode, ts_publish_name_fn name, void *arg, char *final,
                       size_t final_max, ts_error *err)
{
    char tmp[256];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int fd = -1;
    /* private to this writer: the pid and the time in nanoseconds, and O_EXCL for the rest */
    for (int i = 0; i < 100 && fd < 0; i++) {
        if ((size_t)snprintf(tmp, sizeof tmp, "%s%ld-%lx", tmp_prefix, (long)getpid(),
                             (unsigned long)ts.tv_nsec + (unsigned long)i) >= sizeof tmp)
            return ts_fail(err, TS_EINPUT, "temporary name too long: %s", tmp_prefix);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST)
            return ts_fail(err, TS_ESYS, "cannot create %s/%s: %s", dirname, tmp, strerror(errno));
    }
    if (fd < 0)
        return ts_fail(err, TS_ESYS, "cannot create a temporary file %s* in %s", tmp_prefix, dirname);
    struct stat mine;
    if (write_all(fd, data, len) != 0 || fchmod(fd, (mode_t)mode) != 0 || fsync(fd) != 0 ||
        fstat(fd, &mine) != 0) {
        int e = errno;
        close(fd);
        unlinkat(dirfd, tmp, 0);
        return ts_fail(err, TS_ESYS, "cannot write %s/%s: %s", dirname, tmp, strerror(e));
    }
    int rc = TS_EEXIST, e = 0;
    for (int i = 0; rc == TS_EEXIST && name(i, arg, final, final_max) == 0; i++) {
        if (linkat(dirfd, tmp, dirfd, final, 0) == 0) {
            rc = TS_OK;
            break;
        }
        e = errno;
        /* over NFS a link whose reply was lost is retried and reports EEXIST: the name is ours
         * when it is our file */
        struct stat there;
        if (e == EEXIST && fstatat(dirfd, final, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
            there.st_dev == mine.st_dev && there.st_ino == mine.st_ino)
            rc = TS_OK;
        else if (e != EEXIST)
            rc = ts_fail(err, TS_ESYS, "cannot link %s/%s to %s: %s", dirname, tmp, final, strerror(e));
    }
    close(fd);
    unlinkat(dirfd, tmp, 0);
    if (rc == TS_EEXIST)
        return ts_fail(err, TS_EEXIST, "%s: every name for the new file is taken (the last: %s)", dirname, final);
    if (rc == TS_OK && fsync(dirfd) != 0)
        return ts_fail(err, TS_ESYS, "cannot fsync %s: %s", dirname, strerror(errno));
    return rc;
}

void ts_emit_yaml_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void ts_emit_env_line(FILE *out, const char *key, const char *value)
{
    int plain = *value != '\0';
    for (const char *c = value; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./,:+=@%-", *c))
            plain = 0;
    if (plain) {
        fprintf(out, "%s=%s\n", key, value);
        return;
    }
    fprintf(out, "%s='", key);
    for (const char *c = value; *c; c++)
        fputs(*c == '\'' ? "'\\''" : (char[2]){ *c, 0 }, out);
    fputs("'\n", out);
}
