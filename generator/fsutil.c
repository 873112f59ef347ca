#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

char *fg_read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int fg_write_if_changed(const char *path, const char *data, size_t len, bool *changed,
                        fg_diag *d)
{
    if (changed)
        *changed = false;
    size_t old_len;
    char *old = fg_read_all(path, &old_len);
    bool same = old && old_len == len && memcmp(old, data, len) == 0;
    free(old);
    if (same)
        return 0;

    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) {
        fg_error_at(d, path, 0, 0, "path too long");
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fg_error_at(d, path, 0, 0, "cannot create a temporary file beside it: %s",
                    strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fg_error_at(d, path, 0, 0, "cannot write: %s", strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    /* mkstemp creates 0600; outputs are ordinary files. */
    if (fchmod(fd, 0644) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        fg_error_at(d, path, 0, 0, "cannot replace: %s", strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (changed)
        *changed = true;
    return 0;
}

int fg_mkdirs(const char *path, fg_diag *d)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        fg_error_at(d, path, 0, 0, "path too long");
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
                fg_error_at(d, buf, 0, 0, "cannot create directory: %s", strerror(errno));
                return -1;
            }
            *p = c;
            if (c == '\0')
                break;
        }
    }
    return 0;
}

void fg_line_col(const char *text, size_t offset, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < offset && text[i]; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

bool fg_self_exe(char *buf, size_t size)
{
    const ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1)
        return false;
    buf[n] = '\0';
    return true;
}

/* Runs argv with its output appended to `log`; its exit status, or -1. */
int fg_run_logged(char *const argv[], const char *log)
{
    return fg_run_logged_progress(argv, log, NULL, NULL);
}

int fg_run_logged_progress(char *const argv[], const char *log, void (*tick)(void *ctx),
                           void *ctx)
{
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* the callers' errors point at the log: what went wrong goes there */
        const int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0) {
            dprintf(2, "cannot open %s: %s\n", log, strerror(errno));
            _exit(127);
        }
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
        execvp(argv[0], argv);
        dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    for (;;) {
        const pid_t r = waitpid(pid, &st, tick ? WNOHANG : 0);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;
        if (r == 0) {   /* still running: report, then look again in a moment */
            tick(ctx);
            usleep(500 * 1000);
        }
    }
    if (tick)
        tick(ctx);   /* what the last moment added */
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}
