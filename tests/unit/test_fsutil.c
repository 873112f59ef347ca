/* Write-if-changed: atomic replacement, untouched when equal. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/fg-fsutil-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static int entries(const char *path)
{
    DIR *dp = opendir(path);
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));)
        n += e->d_name[0] != '.';
    closedir(dp);
    return n;
}

TestSuite(fsutil, .init = make_dir, .fini = remove_dir);

Test(fsutil, writes_only_when_changed)
{
    char path[128];
    snprintf(path, sizeof path, "%s/a.txt", dir);
    fg_diag d;
    fg_diag_init(&d, NULL);
    bool changed;
    cr_assert_eq(fg_write_if_changed(path, "one\n", 4, &changed, &d), 0);
    cr_assert(changed);
    struct stat st1, st2;
    cr_assert_eq(stat(path, &st1), 0);
    usleep(20000);
    cr_assert_eq(fg_write_if_changed(path, "one\n", 4, &changed, &d), 0);
    cr_assert_not(changed);
    cr_assert_eq(stat(path, &st2), 0);
    cr_assert_eq(st1.st_mtim.tv_sec, st2.st_mtim.tv_sec);
    cr_assert_eq(st1.st_mtim.tv_nsec, st2.st_mtim.tv_nsec, "an equal write keeps the mtime");
    cr_assert_eq(st1.st_ino, st2.st_ino);

    cr_assert_eq(fg_write_if_changed(path, "two\n", 4, &changed, &d), 0);
    cr_assert(changed);
    size_t len;
    char *got = fg_read_all(path, &len);
    cr_assert_str_eq(got, "two\n");
    free(got);
    cr_assert_eq(entries(dir), 1, "no temporary file is left behind");
    cr_assert_eq(stat(path, &st2), 0);
    cr_assert_eq(st2.st_mode & 0777, 0644);
}

Test(fsutil, failure_reports_and_leaves_nothing)
{
    char path[128];
    snprintf(path, sizeof path, "%s/missing/a.txt", dir);
    fg_diag d;
    fg_diag_init(&d, NULL);
    cr_assert_neq(fg_write_if_changed(path, "x", 1, NULL, &d), 0);
    cr_assert_eq(d.errors, 1);
    cr_assert(strstr(d.first, "cannot create a temporary file beside it"), "%s", d.first);
    cr_assert_eq(entries(dir), 0);
}

Test(fsutil, mkdirs_nested)
{
    char path[128];
    snprintf(path, sizeof path, "%s/a/b/c", dir);
    fg_diag d;
    fg_diag_init(&d, NULL);
    cr_assert_eq(fg_mkdirs(path, &d), 0);
    cr_assert_eq(fg_mkdirs(path, &d), 0, "existing folders are fine");
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
}
