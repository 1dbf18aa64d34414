/* server.c: requests in, answers out (server.h). Each connection has a thread of its own
 * (libmicrohttpd's thread-per-connection mode), so a command's output is streamed by reading its
 * pipe in that thread: a slow client slows only its own command, through the pipe's back-pressure.
 */
#include "tools/serve/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/cli.h"
#include "tools/serve/assets.h"
#include "tools/serve/routes.h"

struct srv_server {
    const srv_config *cfg;
    struct MHD_Daemon *d;
    srv_pool pool;
    pthread_mutex_t mu; /* guards pids and the index re-check */
    pid_t *pids;        /* the commands running, to kill at stop (max_running slots, 0 free) */
};

/* A command's output on its way to the client. */
typedef struct stream {
    srv_server *s;
    srv_child c;
    size_t slot;
    bool released;   /* its pool slot given back, as soon as the command ended */
    size_t len, off; /* the first chunk, read before the status was chosen */
    char first[65536];
} stream;

bool srv_host_allowed(const char *h, const char *named, uint16_t port) {
    if (!h || !*h) return false;
    char host[256];
    const char *rest;
    if (h[0] == '[') {
        const char *e = strchr(h, ']');
        if (!e || (size_t)(e - h - 1) >= sizeof host) return false;
        memcpy(host, h + 1, (size_t)(e - h - 1));
        host[e - h - 1] = 0;
        rest = e + 1;
    } else {
        const char *c = strchr(h, ':');
        size_t n = c ? (size_t)(c - h) : strlen(h);
        if (n >= sizeof host) return false;
        memcpy(host, h, n);
        host[n] = 0;
        rest = h + n;
    }
    if (!*rest) {
        if (port != 80) return false;
    } else {
        char *end;
        errno = 0;
        unsigned long p =
            rest[0] == ':' && rest[1] >= '0' && rest[1] <= '9' ? strtoul(rest + 1, &end, 10) : 0;
        if (!p || errno || *end || p != port) return false;
    }
    unsigned char a[16];
    if (h[0] == '[') return inet_pton(AF_INET6, host, a) == 1;
    if (inet_pton(AF_INET, host, a) == 1) return true;
    if (!strcasecmp(host, "localhost")) return true;
    return named && *named && !strcasecmp(host, named);
}

/* Our pages and answers: their own scripts and styles only (style attributes allowed: the pages
 * size bars and plots with them). */
#define CSP_PAGES                                                                                  \
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "                 \
    "frame-ancestors 'none'"
/* trace.html: the same, and data: scripts, which is how webcomponents.min.js (HTML imports) runs
 * the scripts of Go's trace_viewer_full.html; no inline script or eval even there. */
#define CSP_TIMELINE                                                                               \
    "default-src 'self'; script-src 'self' data:; img-src 'self' data:; "                          \
    "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"

static void headers(struct MHD_Response *r, const char *type, const char *csp) {
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    if (csp) MHD_add_response_header(r, "Content-Security-Policy", csp);
}

static void log_request(const srv_server *s, const char *method, const char *url, unsigned status) {
    if (s->cfg->log) fprintf(stderr, "traceidx serve: %s %s %u\n", method, url, status);
}

static enum MHD_Result queue_response(struct MHD_Connection *conn, unsigned status,
                                      struct MHD_Response *r) {
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result text(struct MHD_Connection *conn, unsigned status, const char *msg) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    headers(r, "text/plain; charset=utf-8", CSP_PAGES);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, "Allow", "GET, HEAD");
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE) MHD_add_response_header(r, "Retry-After", "1");
    return queue_response(conn, status, r);
}

static const srv_asset *find_asset(const char *name) {
    for (const srv_asset *a = srv_assets; a->name; a++)
        if (!strcmp(a->name, name)) return a;
    return NULL;
}

static enum MHD_Result asset(struct MHD_Connection *conn, const char *name, bool page) {
    const srv_asset *a = find_asset(name);
    if (!a) return text(conn, MHD_HTTP_NOT_FOUND, "traceidx serve: no such page\n");
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    headers(r, a->type, strcmp(name, "trace.html") ? CSP_PAGES : CSP_TIMELINE);
    if (!page) MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "max-age=300");
    return queue_response(conn, MHD_HTTP_OK, r);
}

static enum MHD_Result viewer_file(srv_server *s, struct MHD_Connection *conn, const char *name) {
    if (!s->cfg->viewer)
        return text(conn, MHD_HTTP_NOT_FOUND,
                    "traceidx serve: no Go installation with the trace viewer was found\n");
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", s->cfg->viewer, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        return text(conn, MHD_HTTP_NOT_FOUND, "traceidx serve: the viewer file is gone\n");
    }
    struct MHD_Response *r = MHD_create_response_from_fd((size_t)st.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    headers(r, strstr(name, ".js") ? "text/javascript; charset=utf-8" : "text/html; charset=utf-8",
            NULL);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "max-age=300");
    return queue_response(conn, MHD_HTTP_OK, r);
}

static void forget_pid(srv_server *s, size_t slot) {
    pthread_mutex_lock(&s->mu);
    s->pids[slot] = 0;
    pthread_mutex_unlock(&s->mu);
}

/* Ends the command (killing it if it still runs) and gives its slot back, once. */
static void stream_end(stream *st) {
    if (st->released) return;
    forget_pid(st->s, st->slot); /* first: srv_stop must not kill a pid reaped and reused */
    srv_child_finish(&st->c, true);
    srv_pool_release(&st->s->pool);
    st->released = true;
}

static void stream_free(void *cls) {
    stream_end(cls);
    free(cls);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    stream *st = cls;
    if (st->off < st->len) {
        size_t n = st->len - st->off < max ? st->len - st->off : max;
        memcpy(buf, st->first + st->off, n);
        st->off += n;
        return (ssize_t)n;
    }
    ssize_t n = srv_child_read(&st->c, buf, max);
    if (n > 0) return n;
    /* a command that fails after its first bytes cannot change the status any more: the
     * connection is cut, so the client sees a broken transfer, never a short document */
    bool ok = n == 0 && srv_child_finish(&st->c, false) == 0;
    /* the slot is free before the client sees the end, so its next request finds it free */
    stream_end(st);
    return ok ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

/* Whether the index still opens and matches its trace: a command's exit 1 is then about what was
 * asked for (404), else about the index (500, with the command's words). */
static bool index_ok(srv_server *s) {
    pthread_mutex_lock(&s->mu);
    tdx_index ix;
    bool ok = cli_open_index(s->cfg->target, &ix, false) == 0;
    if (ok) tdx_index_close(&ix);
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static enum MHD_Result command_failed(srv_server *s, struct MHD_Connection *conn, stream *st,
                                      int code, bool timed_out) {
    unsigned status = timed_out   ? MHD_HTTP_SERVICE_UNAVAILABLE
                      : code == 2 ? MHD_HTTP_BAD_REQUEST
                      : code == 1
                          ? (index_ok(s) ? MHD_HTTP_NOT_FOUND : MHD_HTTP_INTERNAL_SERVER_ERROR)
                          : MHD_HTTP_INTERNAL_SERVER_ERROR;
    char msg[SRV_STDERR_MAX + 200];
    if (timed_out)
        snprintf(msg, sizeof msg, "traceidx serve: the command took longer than %.0f s\n",
                 s->cfg->timeout_s);
    else if (st->c.errlen)
        snprintf(msg, sizeof msg, "%s", st->c.errtext);
    else
        snprintf(msg, sizeof msg, "traceidx serve: the command failed (%s %d)\n",
                 code < 0 ? "signal" : "exit", code < 0 ? WTERMSIG(st->c.status) : code);
    return text(conn, status, msg);
}

static enum MHD_Result run(srv_server *s, struct MHD_Connection *conn, srv_route *rt,
                           unsigned *status) {
    if (srv_pool_acquire(&s->pool)) {
        *status = MHD_HTTP_SERVICE_UNAVAILABLE;
        return text(conn, *status, "traceidx serve: busy: too many requests at once; retry\n");
    }
    char *argv[SRV_ARGV_MAX + 2];
    argv[0] = "traceidx";
    for (int i = 0; i < rt->argc; i++)
        argv[i + 1] = (char *)(rt->argv[i] ? rt->argv[i] : s->cfg->target);
    argv[rt->argc + 1] = NULL;
    stream *st = calloc(1, sizeof *st);
    if (!st || srv_child_start(&st->c, s->cfg->exe, argv, s->cfg->timeout_s)) {
        free(st);
        srv_pool_release(&s->pool);
        *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        return text(conn, *status, "traceidx serve: cannot start the command\n");
    }
    st->s = s;
    pthread_mutex_lock(&s->mu);
    while (s->pids[st->slot]) st->slot++; /* the pool keeps a slot free for each running one */
    s->pids[st->slot] = st->c.pid;
    pthread_mutex_unlock(&s->mu);

    ssize_t n = srv_child_read(&st->c, st->first, sizeof st->first);
    if (n < 0 || (n == 0 && srv_child_finish(&st->c, false) != 0)) {
        forget_pid(s, st->slot);
        int code = srv_child_finish(&st->c, true);
        enum MHD_Result rc = command_failed(s, conn, st, code, n < 0 && st->c.errlen == 0);
        *status = 0; /* said by command_failed */
        srv_pool_release(&s->pool);
        free(st);
        return rc;
    }
    st->len = (size_t)n;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, stream_read, st, stream_free);
    if (!r) {
        stream_free(st);
        return MHD_NO;
    }
    headers(r, rt->type, CSP_PAGES);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (rt->download) {
        char cd[300];
        snprintf(cd, sizeof cd, "attachment; filename=\"%s\"", rt->download);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, cd);
    }
    *status = MHD_HTTP_OK;
    return queue_response(conn, MHD_HTTP_OK, r);
}

/* Parameters are bounded in number and size, and may not hide a NUL (it would cut the value). */
typedef struct params_check {
    int count;
    const char *error;
} params_check;

static enum MHD_Result check_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size) {
    params_check *pc = cls;
    if (++pc->count > SRV_PARAMS_MAX)
        pc->error = "traceidx serve: too many parameters\n";
    else if (key_size > 64 || value_size > SRV_PARAM_MAX)
        pc->error = "traceidx serve: a parameter is too long\n";
    else if (strlen(key) != key_size || (value && strlen(value) != value_size))
        pc->error = "traceidx serve: a parameter holds a NUL byte\n";
    return pc->error ? MHD_NO : MHD_YES;
}

static const char *param(void *ctx, const char *name) {
    return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
    srv_server *s = cls;
    unsigned status = MHD_HTTP_OK;
    enum MHD_Result rc;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        rc = text(conn, status, "traceidx serve: only GET and HEAD\n");
    } else if (!srv_host_allowed(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host"),
                                 s->cfg->host, s->cfg->port)) {
        status = MHD_HTTP_FORBIDDEN;
        rc = text(conn, status,
                  "traceidx serve: the Host header does not name this server (use its URL)\n");
    } else {
        params_check pc = {0, NULL};
        MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, check_param, &pc);
        srv_route rt;
        if (pc.error) {
            status = strstr(pc.error, "long") ? MHD_HTTP_URI_TOO_LONG : MHD_HTTP_BAD_REQUEST;
            rc = text(conn, status, pc.error);
        } else {
            srv_route_resolve(url, param, conn, s->cfg->viewer != NULL, &rt);
            switch (rt.kind) {
            case SRV_NOT_FOUND:
                status = MHD_HTTP_NOT_FOUND;
                rc = text(conn, status, "traceidx serve: no such page\n");
                break;
            case SRV_BAD: {
                char msg[256];
                snprintf(msg, sizeof msg, "traceidx serve: %s\n", rt.error);
                status = MHD_HTTP_BAD_REQUEST;
                rc = text(conn, status, msg);
                break;
            }
            case SRV_PAGE:
            case SRV_ASSET:
                status = find_asset(rt.asset) ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND;
                rc = asset(conn, rt.asset, rt.kind == SRV_PAGE);
                break;
            case SRV_VIEWER:
                rc = viewer_file(s, conn, rt.asset);
                break;
            case SRV_COMMAND:
            default:
                rc = run(s, conn, &rt, &status);
                break;
            }
        }
    }
    if (status) log_request(s, method, url, status);
    return rc;
}

srv_server *srv_start(const srv_config *cfg, const char **why) {
    srv_server *s = calloc(1, sizeof *s);
    if (s) s->pids = calloc((size_t)cfg->max_running, sizeof *s->pids);
    if (!s || !s->pids) {
        if (s) free(s);
        *why = "out of memory";
        return NULL;
    }
    s->cfg = cfg;
    pthread_mutex_init(&s->mu, NULL);
    srv_pool_init(&s->pool, cfg->max_running, cfg->max_waiting, 30000);
    s->d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL,
        NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, cfg->listen_fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(cfg->max_running + cfg->max_waiting + 32), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)120, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536, MHD_OPTION_END);
    if (!s->d) {
        *why = "libmicrohttpd could not start";
        srv_pool_destroy(&s->pool);
        pthread_mutex_destroy(&s->mu);
        free(s->pids);
        free(s);
        return NULL;
    }
    return s;
}

void srv_stop(srv_server *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->cfg->max_running; i++)
        if (s->pids[i]) kill(s->pids[i], SIGKILL);
    pthread_mutex_unlock(&s->mu);
    MHD_stop_daemon(s->d);
    srv_pool_destroy(&s->pool);
    pthread_mutex_destroy(&s->mu);
    free(s->pids);
    free(s);
}
