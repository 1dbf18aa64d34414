/* runner.h: runs the traceidx commands behind the server's data URLs as child processes of the
 * server's own binary: bounded in number (a queue, then "busy"), streamed, timed out, killed when
 * the client goes away. A query that crashes or runs out of memory takes only its child with it. */
#ifndef TDX_SERVE_RUNNER_H
#define TDX_SERVE_RUNNER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* At most `running` commands at once; up to `waiting` more wait for a turn, each at most
 * wait_ms; beyond that a request is refused as busy. */
typedef struct srv_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running, waiting;
    int max_running, max_waiting, wait_ms;
} srv_pool;

void srv_pool_init(srv_pool *p, int max_running, int max_waiting, int wait_ms);
void srv_pool_destroy(srv_pool *p);
/* 0 when the caller may run a command (release it after), -1 when the pool is busy. */
int srv_pool_acquire(srv_pool *p);
void srv_pool_release(srv_pool *p);

#define SRV_STDERR_MAX 4096

typedef struct srv_child {
    pid_t pid;
    int out, err;                     /* read ends of its stdout and stderr, -1 once closed */
    double deadline;                  /* monotonic seconds after which it is killed */
    char errtext[SRV_STDERR_MAX + 1]; /* the start of its stderr */
    size_t errlen;
    bool reaped;
    int status; /* waitpid's, once reaped */
} srv_child;

/* Starts EXE with ARGV (NULL-terminated) with stdin from /dev/null, its stdout and stderr piped
 * back; it is killed if still running after timeout_s. 0, or -1 with why (errno) set. */
int srv_child_start(srv_child *c, const char *exe, char *const *argv, double timeout_s);
/* Reads up to n bytes of its stdout, keeping the start of its stderr meanwhile: the count, 0 at
 * the end of its output, -1 when the deadline passed (the child is killed) or reading failed. */
ssize_t srv_child_read(srv_child *c, void *buf, size_t n);
/* Ends the child: killed first when `kill` (or while it still runs past its deadline), then
 * reaped; its pipes closed. Returns its exit code, or -1 when a signal ended it. */
int srv_child_finish(srv_child *c, bool kill);

#endif
