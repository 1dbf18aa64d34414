/* server.h: the HTTP side of `traceidx serve` (libmicrohttpd): checks every request (method, Host,
 * parameters), resolves its route and answers from embedded pages, Go's viewer or a command. */
#ifndef TDX_SERVE_SERVER_H
#define TDX_SERVE_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "tools/serve/runner.h"

typedef struct srv_config {
    const char *exe;    /* this program, run for each command (/proc/self/exe) */
    const char *target; /* the index, or the trace whose fresh index is beside it */
    const char *viewer; /* the folder of Go's viewer files, or NULL */
    const char *host;   /* the host --http named ("" for none), accepted in Host headers */
    int listen_fd;      /* bound and listening */
    uint16_t port;
    int max_running, max_waiting; /* commands at once, and waiting for a turn */
    double timeout_s;             /* a command's longest run */
    bool log;                     /* a line on stderr per request */
} srv_config;

typedef struct srv_server srv_server;

/* Starts answering on cfg->listen_fd (which the server then owns) on threads of its own; NULL with
 * *why set when libmicrohttpd refuses. cfg must outlive the server. */
srv_server *srv_start(const srv_config *cfg, const char **why);
/* Stops accepting, kills the commands running, and frees the server. */
void srv_stop(srv_server *s);

/* Whether a Host header's value names this server: its port, with a host that cannot be another
 * site's name (localhost, an IP literal) or the one --http named. Refusing the rest stops DNS
 * rebinding: a page from elsewhere whose name was pointed at 127.0.0.1. */
bool srv_host_allowed(const char *host_header, const char *named_host, uint16_t port);

#endif
