/* harness.c: the fuzz targets' scratch directory and in-process command runner. */
#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

#define FZ_MAXARGS 32

static char dir[PATH_MAX];

static void remove_dir(void) {
    DIR *d = opendir(dir);
    if (d) {
        char p[PATH_MAX + 256];
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

const char *fz_path(const char *name) {
    static struct {
        char name[32];
        char path[PATH_MAX + 64];
    } paths[32];
    static size_t npaths;
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/traceidx-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) fz_fail("cannot make a scratch directory %s", dir);
        atexit(remove_dir);
    }
    for (size_t i = 0; i < npaths; i++)
        if (!strcmp(paths[i].name, name)) return paths[i].path;
    if (npaths == sizeof paths / sizeof *paths || strlen(name) >= sizeof paths[0].name)
        fz_fail("scratch name %s: too many or too long", name);
    snprintf(paths[npaths].name, sizeof paths[0].name, "%s", name);
    snprintf(paths[npaths].path, sizeof paths[0].path, "%s/%s", dir, name);
    return paths[npaths++].path;
}

void fz_write(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f)) fz_fail("cannot write %s", path);
}

uint8_t *fz_read(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    uint8_t *b = malloc(cap);
    for (size_t got; b && (got = fread(b + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (!b) fz_fail("out of memory reading %s", path);
    *n = len;
    return b;
}

bool fz_same_file(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    uint8_t *pa = fz_read(a, &na), *pb = fz_read(b, &nb);
    bool same = (!pa && !pb) || (pa && pb && na == nb && memcmp(pa, pb, na) == 0);
    free(pa);
    free(pb);
    return same;
}

void fz_remove(const char *path) {
    unlink(path);
}

int fz_cmd(const char *out, ...) {
    char *argv[FZ_MAXARGS + 1];
    int argc = 0;
    va_list ap;
    va_start(ap, out);
    for (const char *a; (a = va_arg(ap, const char *));) {
        if (argc == FZ_MAXARGS) fz_fail("too many arguments");
        argv[argc] = strdup(a); /* commands may write into their arguments */
        if (!argv[argc++]) fz_fail("out of memory");
    }
    va_end(ap);
    argv[argc] = NULL;
    const cli_command *c = cli_find_command(argv[0]);
    if (!c) fz_fail("no command %s", argv[0]);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (saved < 0 || fd < 0 || dup2(fd, STDOUT_FILENO) < 0) fz_fail("cannot redirect stdout");
    close(fd);
    clearerr(stdout);
    int rc = c->run(argc, argv);
    /* as main does: output that did not reach the file is a failure */
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == TDX_EXIT_OK) rc = TDX_EXIT_FAIL;
    clearerr(stdout);
    if (dup2(saved, STDOUT_FILENO) < 0) fz_fail("cannot restore stdout");
    close(saved);
    for (int i = 0; i < argc; i++) free(argv[i]);
    return rc;
}

void fz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FUZZ PROPERTY BROKEN: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}
