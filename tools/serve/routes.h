/* routes.h: what `traceidx serve` answers at each URL: go tool trace's paths and parameters, each
 * turned into a page, an embedded asset, Go's viewer files, or the traceidx command whose output it
 * is. */
#ifndef TDX_SERVE_ROUTES_H
#define TDX_SERVE_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

/* The longest parameter value a request may carry, and the most parameters. */
#define SRV_PARAM_MAX 4096
#define SRV_PARAMS_MAX 32
/* The most arguments a route's command takes. */
#define SRV_ARGV_MAX 24

typedef enum srv_route_kind {
    SRV_NOT_FOUND, /* no such route: 404 */
    SRV_BAD,       /* a route, but its parameters are malformed: 400 with `error` */
    SRV_PAGE,      /* an embedded page: `asset` names it */
    SRV_ASSET,     /* /assets/NAME: `asset` names it */
    SRV_VIEWER,    /* a file of Go's trace viewer: `asset` is its name in the viewer folder */
    SRV_COMMAND,   /* a traceidx command's output: argv, with its media type */
} srv_route_kind;

typedef struct srv_route {
    srv_route_kind kind;
    const char *asset;
    const char *type;     /* SRV_COMMAND: the media type of its output */
    const char *download; /* SRV_COMMAND: a file name to offer (Content-Disposition), or NULL */
    /* SRV_COMMAND: the arguments after the program: argv[0] is the command, and the one NULL among
     * the first argc is where the caller puts the index; strings point into the request's values
     * or into `buf`. */
    const char *argv[SRV_ARGV_MAX + 1];
    int argc;
    char buf[256];
    char error[160]; /* SRV_BAD: what is wrong, for the 400 page */
} srv_route;

/* A request's parameter NAME (its first value), or NULL when absent. */
typedef const char *(*srv_param_fn)(void *ctx, const char *name);

/* Resolves PATH (decoded, without the query) with its parameters. `viewer` says whether Go's
 * viewer was found (/trace's page depends on it). */
void srv_route_resolve(const char *path, srv_param_fn param, void *pctx, bool viewer, srv_route *r);

#endif
