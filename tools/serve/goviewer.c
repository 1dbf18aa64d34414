/* goviewer.c: locating Go's trace viewer files in a Go installation (goviewer.h). */
#include "tools/serve/goviewer.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const subdirs[] = {
    "src/internal/trace/traceviewer/static", /* Go 1.22 and later */
    "src/cmd/trace/static",                  /* Go 1.19-1.21 */
    "misc/trace",                            /* older */
};

static bool has_viewer(const char *root, char *dir, size_t n) {
    for (size_t i = 0; i < sizeof subdirs / sizeof *subdirs; i++) {
        char a[4096], b[4096];
        snprintf(dir, n, "%s/%s", root, subdirs[i]);
        snprintf(a, sizeof a, "%s/trace_viewer_full.html", dir);
        snprintf(b, sizeof b, "%s/webcomponents.min.js", dir);
        if (access(a, R_OK) == 0 && access(b, R_OK) == 0) return true;
    }
    return false;
}

static void note(char *tried, size_t n, const char *root) {
    size_t used = strlen(tried);
    if (used + 1 < n) snprintf(tried + used, n - used, "%s%s", used ? ", " : "", root);
}

/* `go env GOROOT` when a go command is on PATH; "" otherwise. */
static void go_env_goroot(char *out, size_t n) {
    out[0] = 0;
    FILE *p = popen("go env GOROOT 2>/dev/null", "r");
    if (!p) return;
    if (!fgets(out, (int)n, p)) out[0] = 0;
    pclose(p);
    out[strcspn(out, "\n")] = 0;
}

bool srv_find_viewer(const char *goroot, char *dir, size_t dir_len, char *tried, size_t tried_len) {
    tried[0] = 0;
    if (!goroot || !*goroot) goroot = getenv("GOROOT");
    if (goroot && *goroot) {
        note(tried, tried_len, goroot);
        return has_viewer(goroot, dir, dir_len);
    }
    char root[4096];
    go_env_goroot(root, sizeof root);
    if (root[0]) {
        note(tried, tried_len, root);
        if (has_viewer(root, dir, dir_len)) return true;
    }
    /* where Go's tarball and Debian's golang-1.NN-go / -src packages put it, newest first */
    static const char *const fixed[] = {"/usr/local/go", "/usr/lib/go"};
    for (size_t i = 0; i < 2; i++) {
        note(tried, tried_len, fixed[i]);
        if (has_viewer(fixed[i], dir, dir_len)) return true;
    }
    static const char *const patterns[] = {"/usr/lib/go-1.*", "/usr/share/go-1.*"};
    for (size_t i = 0; i < 2; i++) {
        glob_t g;
        note(tried, tried_len, patterns[i]);
        if (glob(patterns[i], 0, NULL, &g) != 0) continue;
        bool found = false;
        /* versions sort as text (1.9 after 1.22); take the one with the longest name first */
        for (size_t k = g.gl_pathc; k-- > 0 && !found;)
            found = has_viewer(g.gl_pathv[k], dir, dir_len);
        globfree(&g);
        if (found) return true;
    }
    return false;
}
