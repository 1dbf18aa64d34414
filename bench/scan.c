/* scan.c: the raw-read ceiling for the benchmark: maps a file and hashes every byte with XXH3,
 * which is about the least work any reader must do per byte. Prints one JSON line. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(argc == 2 ? stdout : stderr,
                "usage: scan FILE\n\nMaps FILE, hashes it with XXH3-64 and prints\n"
                "{\"bytes\": N, \"seconds\": S, \"mbps\": MB/s, \"xxh3\": \"hex\"}.\n");
        return argc == 2 ? 0 : 2;
    }
    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "scan: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    struct stat st;
    if (fstat(fd, &st)) {
        fprintf(stderr, "scan: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    size_t n = (size_t)st.st_size;
    double t0 = now_sec();
    XXH64_hash_t h = XXH3_64bits(NULL, 0);
    if (n) {
        void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "scan: mmap %s: %s\n", argv[1], strerror(errno));
            return 1;
        }
        /* The same access pattern a sequential reader gets: read-ahead, no random faults. */
        madvise(p, n, MADV_SEQUENTIAL);
        h = XXH3_64bits(p, n);
        munmap(p, n);
    }
    double dt = now_sec() - t0;
    close(fd);
    printf("{\"bytes\": %zu, \"seconds\": %.6f, \"mbps\": %.1f, \"xxh3\": \"%016" PRIx64 "\"}\n", n,
           dt, dt > 0 ? (double)n / dt / 1e6 : 0.0, (uint64_t)h);
    return 0;
}
