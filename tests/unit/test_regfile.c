/* test_regfile.c: core/regfile.h: a regular file opens and its head reads; a missing path gives
 * its errno; a directory and a FIFO with no writer are refused at once, without blocking. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/regfile.h"

static char g_dir[64];

static void make_dir(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tdx-regfile-XXXXXX");
    cr_assert_not_null(mkdtemp(g_dir));
}

static void remove_dir(void) {
    char p[128];
    static const char *const names[] = {"file", "short", "fifo"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", g_dir, names[i]);
        unlink(p);
    }
    rmdir(g_dir);
}

static void path_of(char *p, size_t cap, const char *name) {
    snprintf(p, cap, "%s/%s", g_dir, name);
}

static void write_file(const char *name, const char *text) {
    char p[128];
    path_of(p, sizeof p, name);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    cr_assert_eq(fclose(f), 0);
}

Test(regfile, regular_file_opens_and_reads) {
    make_dir();
    write_file("file", "0123456789");
    write_file("short", "abc");
    char p[128], buf[8];
    path_of(p, sizeof p, "file");
    cr_expect_eq(tdx_read_head(p, buf, sizeof buf), 8);
    cr_expect_eq(memcmp(buf, "01234567", 8), 0);
    path_of(p, sizeof p, "short");
    cr_expect_eq(tdx_read_head(p, buf, sizeof buf), 3, "a shorter file gives what it has");
    struct stat st;
    tdx_err err;
    int fd = tdx_open_regular(p, &st, &err);
    cr_assert_geq(fd, 0, "%s", err.msg);
    cr_expect_eq(st.st_size, 3);
    char c[4] = {0};
    cr_expect_eq(read(fd, c, 4), 3, "the descriptor reads (and blocks) as usual");
    close(fd);
    remove_dir();
}

Test(regfile, missing_path_gives_its_errno) {
    make_dir();
    char p[128], buf[8];
    path_of(p, sizeof p, "missing");
    cr_expect_eq(tdx_read_head(p, buf, sizeof buf), -ENOENT);
    struct stat st;
    tdx_err err;
    cr_expect_eq(tdx_open_regular(p, &st, &err), -1);
    cr_expect(strstr(err.msg, "cannot open") != NULL, "%s", err.msg);
    remove_dir();
}

Test(regfile, directory_and_fifo_are_refused_without_blocking) {
    alarm(20); /* a blocking open would hang here: SIGALRM ends the test as a crash instead */
    make_dir();
    char p[128], buf[8];
    path_of(p, sizeof p, "fifo");
    cr_assert_eq(mkfifo(p, 0600), 0);
    const char *paths[2] = {g_dir, p};
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(tdx_read_head(paths[i], buf, sizeof buf), 0, "%s", paths[i]);
        struct stat st;
        tdx_err err;
        cr_expect_eq(tdx_open_regular(paths[i], &st, &err), -1, "%s", paths[i]);
        cr_expect(strstr(err.msg, "not a regular file") != NULL, "%s", err.msg);
    }
    remove_dir();
}
