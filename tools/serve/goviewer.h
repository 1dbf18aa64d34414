/* goviewer.h: finds go tool trace's own timeline viewer (catapult's trace_viewer_full.html and
 * webcomponents.min.js) in the user's Go installation, to serve at /trace; never copied here. */
#ifndef TDX_SERVE_GOVIEWER_H
#define TDX_SERVE_GOVIEWER_H

#include <stdbool.h>
#include <stddef.h>

/* The folder holding both viewer files, looked for under the Go root `goroot` when it is given
 * (and nowhere else), else under $GOROOT when set (and nowhere else), else `go env GOROOT`, else
 * the places Go and Debian's golang packages install to. In each root the folders of Go 1.22+
 * (src/internal/trace/traceviewer/static), Go 1.19-1.21 (src/cmd/trace/static) and older
 * (misc/trace) are tried. Writes the folder to dir and returns true, or returns false with
 * `tried` saying where it looked. */
bool srv_find_viewer(const char *goroot, char *dir, size_t dir_len, char *tried, size_t tried_len);

#endif
