/* evict.c: drops files from the page cache (fdatasync, then posix_fadvise DONTNEED) so that the
 * benchmark can time cold reads without root; reports how much of each file stays cached. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes of fd's pages still resident, from mincore over a read-only mapping. */
static long long resident(int fd, size_t n) {
    if (!n) return 0;
    void *p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return -1;
    long pg = sysconf(_SC_PAGESIZE);
    size_t pages = (n + (size_t)pg - 1) / (size_t)pg;
    unsigned char *vec = malloc(pages);
    long long in = -1;
    if (vec && !mincore(p, n, vec)) {
        in = 0;
        for (size_t i = 0; i < pages; i++) in += vec[i] & 1;
        in *= pg;
    }
    free(vec);
    munmap(p, n);
    return in;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: evict FILE...\n\nWrites back and drops each FILE from the page cache "
                "(posix_fadvise POSIX_FADV_DONTNEED)\nand prints how many bytes remain cached.\n");
        return argc < 2 ? 2 : 0;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st)) {
            fprintf(stderr, "evict: %s: %s\n", argv[i], strerror(errno));
            rc = 1;
            if (fd >= 0) close(fd);
            continue;
        }
        /* Dirty pages cannot be dropped: write them back first. */
        if (fdatasync(fd)) fprintf(stderr, "evict: fdatasync %s: %s\n", argv[i], strerror(errno));
        int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        if (e) {
            fprintf(stderr, "evict: posix_fadvise %s: %s\n", argv[i], strerror(e));
            rc = 1;
        }
        long long left = resident(fd, (size_t)st.st_size);
        printf("%s: %lld of %lld bytes still cached\n", argv[i], left, (long long)st.st_size);
        close(fd);
    }
    return rc;
}
