/* toposcope — text output shared by every writer: files replaced atomically in a directory,
 * YAML strings and environment lines that survive any content (see toposcope/textout.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "toposcope/textout.h"

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
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlinkat(dirfd, tmp, 0);
            return ts_fail(err, TS_ESYS, "cannot write %s: %s", tmp, strerror(e));
        }
        done += (size_t)w;
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
