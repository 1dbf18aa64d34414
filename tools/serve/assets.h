/* assets.h: the web pages, scripts and styles of `traceidx serve`, embedded in the binary at build
 * time from tools/serve/assets/ (tools/serve/embed.cmake), so nothing is read or fetched to serve
 * them. */
#ifndef TDX_SERVE_ASSETS_H
#define TDX_SERVE_ASSETS_H

#include <stddef.h>

typedef struct srv_asset {
    const char *name; /* the file's name in tools/serve/assets/, served at /assets/NAME */
    const char *type; /* its media type, from its extension */
    const unsigned char *data;
    size_t len;
} srv_asset;

/* Every asset, ended by one whose name is NULL. */
extern const srv_asset srv_assets[];

#endif
