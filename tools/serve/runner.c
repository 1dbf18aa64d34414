/* runner.c: the server's commands as bounded, cancellable child processes (runner.h). */
#include "tools/serve/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void srv_pool_init(srv_pool *p, int max_running, int max_waiting, int wait_ms) {
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    p->max_running = max_running;
    p->max_waiting = max_waiting;
    p->wait_ms = wait_ms;
}

void srv_pool_destroy(srv_pool *p) {
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
}

int srv_pool_acquire(srv_pool *p) {
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    if (p->running >= p->max_running) {
        if (p->waiting >= p->max_waiting) {
            rc = -1;
        } else {
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += p->wait_ms / 1000;
            until.tv_nsec += (long)(p->wait_ms % 1000) * 1000000L;
            if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
            p->waiting++;
            while (p->running >= p->max_running && rc == 0)
                if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT &&
                    p->running >= p->max_running)
                    rc = -1;
            p->waiting--;
        }
    }
    if (rc == 0) p->running++;
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void srv_pool_release(srv_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->running--;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int srv_child_start(srv_child *c, const char *exe, char *const *argv, double timeout_s) {
    memset(c, 0, sizeof *c);
    c->out = c->err = -1;
    int o[2], e[2];
    if (pipe2(o, O_CLOEXEC)) return -1;
    if (pipe2(e, O_CLOEXEC)) {
        int saved = errno;
        close(o[0]), close(o[1]);
        errno = saved;
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, o[1], 1);
    posix_spawn_file_actions_adddup2(&fa, e[1], 2);
    /* the server ignores SIGPIPE; a child must die of a closed pipe as a command line's would */
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    posix_spawnattr_setsigdefault(&at, &def);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    int rc = posix_spawn(&c->pid, exe, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(o[1]), close(e[1]);
    if (rc) {
        close(o[0]), close(e[0]);
        errno = rc;
        return -1;
    }
    c->out = o[0], c->err = e[0];
    c->deadline = mono_now() + timeout_s;
    return 0;
}

/* Takes what stderr has: the first SRV_STDERR_MAX bytes are kept, the rest read and dropped. */
static void drain_err(srv_child *c) {
    char tmp[4096];
    ssize_t n = read(c->err, tmp, sizeof tmp);
    if (n <= 0) {
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) close(c->err), c->err = -1;
        return;
    }
    size_t keep = SRV_STDERR_MAX - c->errlen;
    if (keep > (size_t)n) keep = (size_t)n;
    memcpy(c->errtext + c->errlen, tmp, keep);
    c->errlen += keep;
    c->errtext[c->errlen] = 0;
}

ssize_t srv_child_read(srv_child *c, void *buf, size_t n) {
    for (;;) {
        if (c->out < 0) return 0;
        struct pollfd p[2] = {{.fd = c->out, .events = POLLIN}, {.fd = c->err, .events = POLLIN}};
        double left = c->deadline - mono_now();
        if (left <= 0) {
            srv_child_finish(c, true);
            return -1;
        }
        int ms = left > 60 ? 60000 : (int)(left * 1000) + 1;
        int r = poll(p, c->err >= 0 ? 2 : 1, ms);
        if (r < 0 && errno != EINTR) return -1;
        if (r <= 0) continue;
        if (c->err >= 0 && p[1].revents) drain_err(c);
        if (p[0].revents) {
            ssize_t got = read(c->out, buf, n);
            if (got > 0) return got;
            if (got == 0) {
                close(c->out), c->out = -1;
                /* the rest of stderr, for the error page, while it is still being written */
                while (c->err >= 0 && mono_now() < c->deadline) {
                    struct pollfd q = {.fd = c->err, .events = POLLIN};
                    if (poll(&q, 1, 1000) > 0) drain_err(c);
                }
                return 0;
            }
            if (errno != EINTR && errno != EAGAIN) return -1;
        }
    }
}

int srv_child_finish(srv_child *c, bool kill_it) {
    if (!c->reaped && c->pid > 0) {
        if (kill_it) kill(c->pid, SIGKILL);
        while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR) {
        }
        c->reaped = true;
    }
    if (c->out >= 0) close(c->out), c->out = -1;
    if (c->err >= 0) close(c->err), c->err = -1;
    if (!c->reaped) return -1;
    return WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1;
}
