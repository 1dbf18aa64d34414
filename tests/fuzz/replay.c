/* replay.c: runs a fuzz target once over each file of a corpus, without libFuzzer (any compiler;
 * ctest's fuzz.* tests): FILE or DIR arguments, directories read in name order, not recursively.
 * With --mutate N, each file is also run as N mutants of it, the same ones every time (a few
 * bytes changed, or the file cut short), so that ctest fuzzes a little too. A broken property
 * aborts, as it would under the fuzzer. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

static uint64_t next_rand(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717u;
}

/* Mutant k of b[0..n) into m (n bytes at least): 1-4 bytes changed, or, one time in eight, the
 * file cut short. Its length. */
static size_t mutate(const char *path, unsigned k, const uint8_t *b, size_t n, uint8_t *m) {
    uint64_t s = 0x9e3779b97f4a7c15u * (k + 1);
    for (const char *c = strrchr(path, '/') ? strrchr(path, '/') + 1 : path; *c; c++)
        s = (s ^ (uint8_t)*c) * 1099511628211u;
    if (!s) s = 1;
    memcpy(m, b, n);
    if (n == 0) return 0;
    if (next_rand(&s) % 8 == 0) return (size_t)(next_rand(&s) % n);
    for (unsigned e = 1 + next_rand(&s) % 4; e > 0; e--) {
        size_t at = (size_t)(next_rand(&s) % n);
        switch (next_rand(&s) % 4) {
        case 0:
            m[at] ^= (uint8_t)(1u << next_rand(&s) % 8);
            break;
        case 1:
            m[at] = (uint8_t)next_rand(&s);
            break;
        case 2:
            m[at] = 0;
            break;
        default:
            m[at] = 0xff;
            break;
        }
    }
    return n;
}

static int one(const char *path, unsigned mutants) {
    size_t n;
    uint8_t *b = fz_read(path, &n);
    if (!b) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        return -1;
    }
    fprintf(stderr, "replay: %s\n", path);
    LLVMFuzzerTestOneInput(b, n);
    uint8_t *m = mutants ? malloc(n ? n : 1) : NULL;
    if (mutants && !m) {
        free(b);
        fprintf(stderr, "replay: out of memory\n");
        return -1;
    }
    for (unsigned k = 0; k < mutants; k++) {
        size_t mn = mutate(path, k, b, n, m);
        fprintf(stderr, "replay: %s, mutant %u\n", path, k);
        LLVMFuzzerTestOneInput(m, mn);
    }
    free(m);
    free(b);
    return 0;
}

int main(int argc, char **argv) {
    size_t files = 0;
    unsigned mutants = 0;
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "--mutate")) {
        mutants = (unsigned)strtoul(argv[2], NULL, 10);
        first = 3;
    }
    for (int i = first; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (one(argv[i], mutants)) return 2;
            files++;
            continue;
        }
        struct dirent **list;
        int n = scandir(argv[i], &list, NULL, alphasort);
        if (n < 0) return 2;
        for (int k = 0; k < n; k++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], list[k]->d_name);
            if (list[k]->d_name[0] != '.' && !stat(p, &st) && S_ISREG(st.st_mode)) {
                if (one(p, mutants)) return 2;
                files++;
            }
            free(list[k]);
        }
        free(list);
    }
    printf("replay: %zu input%s (%u mutants of each), every property held\n", files,
           files == 1 ? "" : "s", mutants);
    return files ? 0 : 2;
}
