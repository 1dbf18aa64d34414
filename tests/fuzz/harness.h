/* harness.h: what the fuzz targets share: a scratch directory, and traceidx's own commands run
 * in-process (as a user runs them) with their standard output captured in a file.
 *
 * A target is LLVMFuzzerTestOneInput: under libFuzzer (`make fuzz`, clang) it is fuzzed; linked
 * with replay.c (any compiler) it runs once per file of a corpus, as ctest does. Either way a
 * broken property aborts, naming the property and the files that show it. */
#ifndef TDX_FUZZ_HARNESS_H
#define TDX_FUZZ_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The path of `name` in the process's scratch directory (made on first use, under $TMPDIR or
 * /tmp, removed at exit); the same pointer for the same name, valid until exit. */
const char *fz_path(const char *name);
/* Writes p[0..n) to path (aborting when it cannot: the harness's own trouble). */
void fz_write(const char *path, const uint8_t *p, size_t n);
/* The bytes of file path (malloc'd, *n of them), or NULL when it cannot be opened (aborting when
 * memory runs out). */
uint8_t *fz_read(const char *path, size_t *n);
/* Whether two files hold the same bytes (a missing file equals only another missing one). */
bool fz_same_file(const char *a, const char *b);
/* Removes a scratch file if it is there. */
void fz_remove(const char *path);

/* Runs `traceidx ARGS...` (ended by FZ_END, the command's name first) in-process with its
 * standard output in file `out` (NULL: discarded) and returns its exit status. */
#define FZ_END ((const char *)0)
int fz_cmd(const char *out, ...) __attribute__((sentinel));

/* Reports a broken property and aborts. */
void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
