/* cmd_serve.c: `traceidx serve`: go tool trace's web UI, its URLs answered from the index (the HTTP
 * side is tools/serve/). Builds the index first when the trace has no fresh one. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "core/reader.h"
#include "tools/serve/goviewer.h"
#include "tools/serve/server.h"

extern char **environ;

static const char serve_help[] =
    "usage: traceidx serve TRACE|INDEX [--http ADDR] [--open] [--goroot DIR]\n"
    "                      [--max-queries N] [--queue N] [--timeout DUR] [-j N] [--log]\n"
    "                      [--quiet]\n"
    "\n"
    "go tool trace's web UI, answered from the index: the same URLs and parameters (/,\n"
    "/trace, /jsontrace, /goroutines, /goroutine, /usertasks, /usertask, /userregions,\n"
    "/userregion, /mmu, /io, /block, /syscall, /sched and the region profiles), each page\n"
    "drawn from what the matching command prints with --json. Given a TRACE without a\n"
    "fresh TRACE.tidx beside it, builds that first (as `traceidx build TRACE`). Prints the\n"
    "URL on the first line of stdout, then serves until interrupted.\n"
    "\n"
    "  --http ADDR       listen on ADDR, HOST:PORT (default 127.0.0.1:0, a free port on\n"
    "                    loopback; an empty HOST is loopback too: 0.0.0.0 or [::] listens\n"
    "                    on every interface, which shows the trace to the network)\n"
    "  --open            open the URL in the user's browser (xdg-open)\n"
    "  --goroot DIR      the Go installation whose timeline viewer /trace uses (default:\n"
    "                    $GOROOT, `go env GOROOT`, then /usr/local/go, /usr/lib/go*,\n"
    "                    /usr/share/go-*: Debian's golang-1.NN-src has it); without one,\n"
    "                    /trace offers Perfetto and the JSON instead\n"
    "  --max-queries N   commands answering requests at once (default: number of CPUs,\n"
    "                    at least 2); up to --queue N more wait (default 4 per query),\n"
    "                    then a request gets 503 Service Unavailable\n"
    "  --timeout DUR     the longest a request's command may run (default 10m)\n"
    "  -j N              threads for the build, when one is needed\n"
    "  --log             a line on stderr for each request\n"
    "  --quiet           no build progress\n"
    "\n"
    "Requests are checked before anything runs: only GET and HEAD; the Host header must\n"
    "name this server (localhost, an IP address or the --http host, with its port), so a\n"
    "web page elsewhere cannot reach it through DNS rebinding; only the known paths; at\n"
    "most 32 parameters of 4096 bytes each, each checked for its form. Each data request\n"
    "runs the traceidx command behind it as a child process (a crash or runaway stays in\n"
    "the child, a client that goes away kills it). Nothing is ever written. A damaged or\n"
    "stale index is reported on the page that asked, and the server goes on.\n";

/* Runs `traceidx build PATH` in a child, its progress on our terminal; its exit code. */
static int build_first(const char *exe, const char *path, int jobs, bool quiet) {
    char j[24];
    snprintf(j, sizeof j, "-j%d", jobs);
    char *argv[] = {"traceidx", "build", (char *)path, j, quiet ? "--quiet" : NULL, NULL};
    pid_t pid;
    /* its summary to stderr: serve's stdout starts with the URL, for scripts */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    int rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        fprintf(stderr, "traceidx serve: cannot run the build: %s\n", strerror(rc));
        return TDX_EXIT_FAIL;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : TDX_EXIT_FAIL;
}

/* Splits HOST:PORT, [V6]:PORT, :PORT or HOST into host (empty for none) and port ("0"). */
static int split_addr(const char *addr, char *host, size_t hn, char *port, size_t pn) {
    const char *p;
    if (addr[0] == '[') {
        const char *e = strchr(addr, ']');
        if (!e || (e[1] && e[1] != ':') || (size_t)(e - addr) > hn) return -1;
        memcpy(host, addr + 1, (size_t)(e - addr - 1));
        host[e - addr - 1] = 0;
        p = e[1] ? e + 2 : NULL;
    } else {
        const char *c = strrchr(addr, ':');
        size_t n = c ? (size_t)(c - addr) : strlen(addr);
        if (n >= hn || (c && strchr(addr, ':') != c)) return -1;
        memcpy(host, addr, n);
        host[n] = 0;
        p = c ? c + 1 : NULL;
    }
    uint64_t v = 0;
    if (p && (cli_parse_u64(p, &v) || v > 65535)) return -1;
    snprintf(port, pn, "%u", (unsigned)v);
    return 0;
}

/* A listening socket on host:port (loopback when host is empty); -1 after saying why. */
static int listen_on(const char *host, const char *port, uint16_t *bound, char *shown,
                     size_t shown_len) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res;
    int rc = getaddrinfo(*host ? host : "127.0.0.1", port, &hints, &res);
    if (rc) {
        fprintf(stderr, "traceidx serve: --http %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 64)) {
            err = errno;
            close(fd);
            fd = -1;
            continue;
        }
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        socklen_t sl = sizeof ss;
        char h[NI_MAXHOST], s[NI_MAXSERV];
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) ||
            getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, s, sizeof s,
                        NI_NUMERICHOST | NI_NUMERICSERV)) {
            err = errno;
            close(fd);
            fd = -1;
            continue;
        }
        *bound = (uint16_t)atoi(s);
        bool v6 = ss.ss_family == AF_INET6;
        bool any = !strcmp(h, "0.0.0.0") || !strcmp(h, "::");
        snprintf(shown, shown_len, "http://%s%s%s:%s/", v6 && !any ? "[" : "",
                 any ? "localhost" : h, v6 && !any ? "]" : "", s);
    }
    freeaddrinfo(res);
    if (fd < 0)
        fprintf(stderr, "traceidx serve: cannot listen on %s:%s: %s\n", *host ? host : "127.0.0.1",
                port, strerror(err));
    return fd;
}

static void open_browser(const char *url) {
    char *argv[] = {"xdg-open", (char *)url, NULL};
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 01, 0); /* O_WRONLY */
    int rc = posix_spawnp(&pid, "xdg-open", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        fprintf(stderr, "traceidx serve: --open: cannot run xdg-open (%s); open %s yourself\n",
                strerror(rc), url);
}

int cmd_serve(int argc, char **argv) {
    const char *path = NULL, *http = "127.0.0.1:0", *goroot = NULL;
    bool open = false, log = false, quiet = false;
    int jobs = tdx_ncpus(), jr;
    uint64_t max_q = 0, queue = UINT64_MAX; /* unset */
    int64_t timeout = 600 * (int64_t)1000000000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (cli_is_help(a)) {
            fputs(serve_help, stdout);
            return TDX_EXIT_OK;
        } else if (!strcmp(a, "--http")) {
            if (!more || !*argv[i + 1]) return cli_usage_error("serve", "--http needs HOST:PORT");
            http = argv[++i];
        } else if (!strcmp(a, "--goroot")) {
            if (!more) return cli_usage_error("serve", "--goroot needs a folder");
            goroot = argv[++i];
        } else if (!strcmp(a, "--max-queries") || !strcmp(a, "--queue")) {
            uint64_t v;
            if (!more || cli_parse_u64(argv[i + 1], &v) || v > 1024 || (!v && a[2] == 'm'))
                return cli_usage_error("serve", "%s needs a count (1-1024)", a);
            i++;
            *(a[2] == 'm' ? &max_q : &queue) = v;
        } else if (!strcmp(a, "--timeout")) {
            if (!more || cli_parse_duration(argv[i + 1], &timeout) || timeout <= 0)
                return cli_usage_error("serve", "--timeout needs a duration (30s, 10m)");
            i++;
        } else if ((jr = cli_jobs_arg(argc, argv, &i, &jobs)) != 0) {
            if (jr < 0) return cli_usage_error("serve", "-j needs a number from 1 to 1024");
        } else if (!strcmp(a, "--open")) {
            open = true;
        } else if (!strcmp(a, "--log")) {
            log = true;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("serve", "unknown option %s", a);
        } else if (!path) {
            path = a;
        } else {
            return cli_usage_error("serve", "one TRACE or INDEX");
        }
    }
    if (!path) return cli_usage_error("serve", "missing TRACE or INDEX");
    char host[256], port[16];
    if (split_addr(http, host, sizeof host, port, sizeof port))
        return cli_usage_error("serve", "--http %s: HOST:PORT, [IPV6]:PORT or :PORT", http);

    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "traceidx serve: cannot find its own program: %s\n", strerror(errno));
        return TDX_EXIT_FAIL;
    }
    exe[n] = 0;
    /* the commands see the same file whatever their working folder */
    char *target = realpath(path, NULL);
    if (!target) {
        fprintf(stderr, "traceidx: %s: %s\n", path, strerror(errno));
        return TDX_EXIT_FAIL;
    }
    tdx_index ix;
    if (!cli_is_index_file(target)) {
        if (cli_index_beside(target, &ix)) {
            tdx_index_close(&ix);
        } else {
            int rc = build_first(exe, target, jobs, quiet);
            if (rc) {
                free(target);
                return rc;
            }
        }
    }
    if (cli_open_index(target, &ix, false)) {
        free(target);
        return TDX_EXIT_FAIL;
    }
    tdx_index_close(&ix);

    char viewer[4200], tried[1024];
    bool has_viewer = srv_find_viewer(goroot, viewer, sizeof viewer, tried, sizeof tried);
    if (!has_viewer)
        fprintf(stderr,
                "traceidx serve: no Go trace viewer found (looked in %s): /trace offers Perfetto "
                "instead; install Go (Debian: golang-1.19-src) or give --goroot\n",
                tried);

    signal(SIGPIPE, SIG_IGN);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* before any thread starts, so all inherit it */

    srv_config cfg = {
        .exe = exe,
        .target = target,
        .viewer = has_viewer ? viewer : NULL,
        .host = host,
        .timeout_s = (double)timeout / 1e9,
        .log = log,
    };
    int ncpu = tdx_ncpus();
    cfg.max_running = max_q ? (int)max_q : ncpu > 2 ? ncpu : 2;
    cfg.max_waiting = queue != UINT64_MAX ? (int)queue : 4 * cfg.max_running;
    char url[1200];
    cfg.listen_fd = listen_on(host, port, &cfg.port, url, sizeof url);
    if (cfg.listen_fd < 0) {
        free(target);
        return TDX_EXIT_FAIL;
    }
    const char *why = NULL;
    srv_server *srv = srv_start(&cfg, &why);
    if (!srv) {
        fprintf(stderr, "traceidx serve: %s\n", why);
        close(cfg.listen_fd);
        free(target);
        return TDX_EXIT_FAIL;
    }
    printf("%s\n", url);
    fflush(stdout);
    if (!quiet)
        fprintf(stderr, "traceidx serve: %s at %s%s%s (Ctrl-C stops)\n", path, url,
                has_viewer ? ", Go's viewer from " : "", has_viewer ? viewer : "");
    if (open) open_browser(url);
    int sig = 0;
    sigwait(&stop, &sig);
    srv_stop(srv);
    free(target);
    return TDX_EXIT_OK;
}
