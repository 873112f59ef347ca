/* File output that keeps Make honest: a file is replaced atomically (temp
 * file + rename) and only when its content changes, so an unchanged output
 * keeps its modification time. */
#ifndef FG_FSUTIL_H
#define FG_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

/* Writes `len` bytes to `path` unless it already holds exactly them.
 * *changed (may be NULL) tells whether the file was written. */
int fg_write_if_changed(const char *path, const char *data, size_t len, bool *changed,
                        fg_diag *d);

/* mkdir -p */
int fg_mkdirs(const char *path, fg_diag *d);

/* Where byte `offset` of `text` is, 1-based, for file:line:col messages
 * (counting stops at a NUL). */
void fg_line_col(const char *text, size_t offset, unsigned *line, unsigned *col);

/* Reads a whole file; NULL (and no message) if it cannot be read. */
char *fg_read_all(const char *path, size_t *len);

/* This program's path (/proc/self/exe) into buf; false if it cannot be read
 * or does not fit. */
bool fg_self_exe(char *buf, size_t size);

/* Runs argv (a program on PATH or a path) with its stdout and stderr
 * appended to `log`; its exit status, 128 + the signal, or -1. */
int fg_run_logged(char *const argv[], const char *log);
/* The same, calling tick(ctx) about twice a second while it runs and once
 * after it ends (progress reports). */
int fg_run_logged_progress(char *const argv[], const char *log, void (*tick)(void *ctx),
                           void *ctx);

#endif
