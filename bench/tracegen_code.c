/* tracegen_code.c: the synthetic Go program whose trace tracegen writes: a few thousand functions
 * in hundreds of files (Go's own packages plus a generated service and its dependencies), call
 * chains built from a layered call graph, and per-generation string and stack tables. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tracegen.h"

/* ---- memory helpers shared by all tracegen files ---- */

void tg_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tracegen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void *tg_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) tg_die("out of memory");
    return p;
}

void *tg_xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) tg_die("out of memory");
    return p;
}

void *tg_xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) tg_die("out of memory");
    return p;
}

void tg_bytes_reserve(tg_bytes *b, size_t extra) {
    if (b->n + extra <= b->cap) return;
    size_t c = b->cap ? b->cap : 4096;
    while (c < b->n + extra) c *= 2;
    b->v = tg_xrealloc(b->v, c);
    b->cap = c;
}

/* ---- string registry ---- */

static uint32_t str_add(tg_code *c, const char *txt, size_t len) {
    if (c->nstrs == c->capstrs) {
        c->capstrs = c->capstrs ? c->capstrs * 2 : 1024;
        c->strs = tg_xrealloc(c->strs, c->capstrs * sizeof *c->strs);
    }
    tg_strent *e = &c->strs[c->nstrs];
    memset(e, 0, sizeof *e);
    e->s = txt;
    e->len = (uint32_t)len;
    return c->nstrs++;
}

/* Copies a generated name into the pool; pool chunks are never freed or moved. */
static const char *pool_dup(tg_code *c, const char *txt, size_t len) {
    if (c->pooln + len + 1 > c->poolcap) {
        c->poolcap = 1 << 20;
        c->pool = tg_xmalloc(c->poolcap);
        c->pooln = 0;
    }
    char *p = c->pool + c->pooln;
    memcpy(p, txt, len);
    p[len] = 0;
    c->pooln += len + 1;
    return p;
}

static uint32_t str_fmt(tg_code *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static uint32_t str_fmt(tg_code *c, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof tmp) n = sizeof tmp - 1;
    return str_add(c, pool_dup(c, tmp, (size_t)n), (size_t)n);
}

/* The fixed strings, in enum tg_str order; block reasons are the runtime's own texts. */
static const char *const fixed_strings[S_NFIXED] = {
    "unspecified",
    "forever",
    "network",
    "select",
    "sync.(*Cond).Wait",
    "sync",
    "chan send",
    "chan receive",
    "GC mark assist wait for work",
    "GC background sweeper wait",
    "system goroutine wait",
    "preempted",
    "wait for debug call",
    "wait until GC ends",
    "sleep",
    "runtime.Gosched",
    "start trace",
    "GC sweep termination",
    "GC mark termination",
    "GC (dedicated)",
    "GC (fractional)",
    "GC (idle)",
    "http.request",
    "grpc.unary",
    "fanout",
    "batch.flush",
    "http.handler",
    "auth.check",
    "db.Query",
    "redis.Get",
    "grpc.Invoke",
    "json.Marshal",
    "worker.process",
    "fanout.part",
    "validate",
    "render",
    "route",
    "db",
    "cache",
    "user",
    "metrics",
    "retry",
};

/* ---- the program ---- */

typedef struct known_fn {
    const char *name, *file;
} known_fn;

#define GOROOT "/usr/local/go/src/"

/* Go's own functions that real traces show at the leaves and roots of stacks. The index of each
 * entry is used below through the F_* names. */
enum {
    F_GOPARK,
    F_GOPARKUNLOCK,
    F_CHANRECV,
    F_CHANRECV1,
    F_CHANRECV2,
    F_CHANSEND,
    F_CHANSEND1,
    F_SEND,
    F_GOREADY,
    F_READY,
    F_SELECTGO,
    F_NETPOLLBLOCK,
    F_POLLWAIT,
    F_PD_WAIT,
    F_PD_WAITREAD,
    F_PD_WAITWRITE,
    F_FD_READ,
    F_FD_WRITE,
    F_FD_ACCEPT,
    F_EINTRIO,
    F_POLL_ACCEPT,
    F_NETFD_READ,
    F_NETFD_WRITE,
    F_NETFD_ACCEPT,
    F_CONN_READ,
    F_CONN_WRITE,
    F_TCPL_ACCEPT,
    F_TCPL_ACCEPT2,
    F_BUFIO_FILL,
    F_BUFIO_PEEK,
    F_BUFIO_READSLICE,
    F_BUFIO_FLUSH,
    F_CONNREADER_READ,
    F_READREQUEST,
    F_CONN_SERVE,
    F_SERVER_SERVE,
    F_LISTENANDSERVE,
    F_SERVERHANDLER,
    F_HANDLERFUNC,
    F_SERVEMUX,
    F_FINISHREQUEST,
    F_TEXTPROTO_READLINE,
    F_TIME_SLEEP,
    F_SEMACQMUTEX,
    F_SEMACQ,
    F_SEMREL,
    F_NOTIFYWAIT,
    F_MUTEX_LOCKSLOW,
    F_MUTEX_LOCK,
    F_MUTEX_UNLOCKSLOW,
    F_MUTEX_UNLOCK,
    F_WG_WAIT,
    F_WG_ADD,
    F_WG_DONE,
    F_COND_WAIT,
    F_COND_SIGNAL,
    F_SEMACQ1,
    F_SEMREL1,
    F_MALLOCGC,
    F_NEWOBJECT,
    F_MAKESLICE,
    F_GROWSLICE,
    F_NEXTFREE,
    F_REFILL,
    F_CACHESPAN,
    F_SWEEP,
    F_GCSWEEPSPAN,
    F_ASSISTALLOC,
    F_ASSISTALLOC1,
    F_PARKASSIST,
    F_GCSTART,
    F_GCMARKDONE,
    F_BGMARKWORKER,
    F_STOPTHEWORLD,
    F_BGSWEEP,
    F_SCANOBJECT,
    F_GREYOBJECT,
    F_MEMMOVE,
    F_MEMCLR,
    F_MAPACCESS2,
    F_MAPASSIGN,
    F_CONCAT,
    F_SLICEBYTETOSTRING,
    F_SYSCALL6,
    F_SYS_SYSCALL,
    F_SYS_READ,
    F_SYS_READ2,
    F_SYS_WRITE,
    F_SYS_WRITE2,
    F_SYS_ACCEPT4,
    F_SYS_ACCEPT4B,
    F_SYS_PWRITE,
    F_SYS_PWRITE2,
    F_SYS_FSYNC,
    F_SYS_SETSOCKOPT,
    F_SYS_SETSOCKOPTINT,
    F_OS_WRITE,
    F_OS_WRITE2,
    F_OS_SYNC,
    F_OS_WRITEAT,
    F_JSON_MARSHAL,
    F_JSON_ENC_MARSHAL,
    F_JSON_REFLECT,
    F_JSON_STRUCT,
    F_JSON_DECODE,
    F_JSON_OBJECT,
    F_TLS_READ,
    F_TLS_READRECORD,
    F_SHA256_BLOCK,
    F_GCM_SEAL,
    F_DEFLATE,
    F_CTX_DONE,
    F_CTX_TIMEOUT,
    F_TRACE_NEWTASK,
    F_TRACE_STARTREGION,
    F_TRACE_WITHREGION,
    F_TRACE_REGIONEND,
    F_TRACE_LOG,
    F_TRACE_LOGF,
    F_TRACE_TASKEND,
    F_TRACE_START,
    F_STARTTRACE,
    F_PPROF_TRACE,
    F_GOMAXPROCS_EV,
    F_STARTTHEWORLD,
    F_MAIN_MAIN,
    F_MAIN_RUN,
    F_SIGNAL_LOOP,
    F_SCAVENGE,
    F_BGSCAVENGE,
    F_RUNTIME_MAIN,
    F_GOEXIT,
    F_NKNOWN
};

static const known_fn known[F_NKNOWN] = {
    {"runtime.gopark", "runtime/proc.go"},
    {"runtime.goparkunlock", "runtime/proc.go"},
    {"runtime.chanrecv", "runtime/chan.go"},
    {"runtime.chanrecv1", "runtime/chan.go"},
    {"runtime.chanrecv2", "runtime/chan.go"},
    {"runtime.chansend", "runtime/chan.go"},
    {"runtime.chansend1", "runtime/chan.go"},
    {"runtime.send", "runtime/chan.go"},
    {"runtime.goready", "runtime/proc.go"},
    {"runtime.ready", "runtime/proc.go"},
    {"runtime.selectgo", "runtime/select.go"},
    {"runtime.netpollblock", "runtime/netpoll.go"},
    {"internal/poll.runtime_pollWait", "runtime/netpoll.go"},
    {"internal/poll.(*pollDesc).wait", "internal/poll/fd_poll_runtime.go"},
    {"internal/poll.(*pollDesc).waitRead", "internal/poll/fd_poll_runtime.go"},
    {"internal/poll.(*pollDesc).waitWrite", "internal/poll/fd_poll_runtime.go"},
    {"internal/poll.(*FD).Read", "internal/poll/fd_unix.go"},
    {"internal/poll.(*FD).Write", "internal/poll/fd_unix.go"},
    {"internal/poll.(*FD).Accept", "internal/poll/fd_unix.go"},
    {"internal/poll.ignoringEINTRIO", "internal/poll/fd_unix.go"},
    {"internal/poll.accept", "internal/poll/sock_cloexec.go"},
    {"net.(*netFD).Read", "net/fd_posix.go"},
    {"net.(*netFD).Write", "net/fd_posix.go"},
    {"net.(*netFD).accept", "net/fd_unix.go"},
    {"net.(*conn).Read", "net/net.go"},
    {"net.(*conn).Write", "net/net.go"},
    {"net.(*TCPListener).accept", "net/tcpsock_posix.go"},
    {"net.(*TCPListener).Accept", "net/tcpsock.go"},
    {"bufio.(*Reader).fill", "bufio/bufio.go"},
    {"bufio.(*Reader).Peek", "bufio/bufio.go"},
    {"bufio.(*Reader).ReadSlice", "bufio/bufio.go"},
    {"bufio.(*Writer).Flush", "bufio/bufio.go"},
    {"net/http.(*connReader).Read", "net/http/server.go"},
    {"net/http.(*conn).readRequest", "net/http/server.go"},
    {"net/http.(*conn).serve", "net/http/server.go"},
    {"net/http.(*Server).Serve", "net/http/server.go"},
    {"net/http.(*Server).ListenAndServe", "net/http/server.go"},
    {"net/http.serverHandler.ServeHTTP", "net/http/server.go"},
    {"net/http.HandlerFunc.ServeHTTP", "net/http/server.go"},
    {"net/http.(*ServeMux).ServeHTTP", "net/http/server.go"},
    {"net/http.(*response).finishRequest", "net/http/server.go"},
    {"net/textproto.(*Reader).ReadLine", "net/textproto/reader.go"},
    {"time.Sleep", "runtime/time.go"},
    {"sync.runtime_SemacquireMutex", "runtime/sema.go"},
    {"sync.runtime_Semacquire", "runtime/sema.go"},
    {"sync.runtime_Semrelease", "runtime/sema.go"},
    {"sync.runtime_notifyListWait", "runtime/sema.go"},
    {"sync.(*Mutex).lockSlow", "sync/mutex.go"},
    {"sync.(*Mutex).Lock", "sync/mutex.go"},
    {"sync.(*Mutex).unlockSlow", "sync/mutex.go"},
    {"sync.(*Mutex).Unlock", "sync/mutex.go"},
    {"sync.(*WaitGroup).Wait", "sync/waitgroup.go"},
    {"sync.(*WaitGroup).Add", "sync/waitgroup.go"},
    {"sync.(*WaitGroup).Done", "sync/waitgroup.go"},
    {"sync.(*Cond).Wait", "sync/cond.go"},
    {"sync.(*Cond).Signal", "sync/cond.go"},
    {"runtime.semacquire1", "runtime/sema.go"},
    {"runtime.semrelease1", "runtime/sema.go"},
    {"runtime.mallocgc", "runtime/malloc.go"},
    {"runtime.newobject", "runtime/malloc.go"},
    {"runtime.makeslice", "runtime/slice.go"},
    {"runtime.growslice", "runtime/slice.go"},
    {"runtime.(*mcache).nextFree", "runtime/malloc.go"},
    {"runtime.(*mcache).refill", "runtime/mcache.go"},
    {"runtime.(*mcentral).cacheSpan", "runtime/mcentral.go"},
    {"runtime.(*sweepLocked).sweep", "runtime/mgcsweep.go"},
    {"runtime.traceLocker.GCSweepSpan", "runtime/traceruntime.go"},
    {"runtime.gcAssistAlloc", "runtime/mgcmark.go"},
    {"runtime.gcAssistAlloc1", "runtime/mgcmark.go"},
    {"runtime.gcParkAssist", "runtime/mgcmark.go"},
    {"runtime.gcStart", "runtime/mgc.go"},
    {"runtime.gcMarkDone", "runtime/mgc.go"},
    {"runtime.gcBgMarkWorker", "runtime/mgc.go"},
    {"runtime.stopTheWorldWithSema", "runtime/proc.go"},
    {"runtime.bgsweep", "runtime/mgcsweep.go"},
    {"runtime.scanobject", "runtime/mgcmark.go"},
    {"runtime.greyobject", "runtime/mgcmark.go"},
    {"runtime.memmove", "runtime/memmove_amd64.s"},
    {"runtime.memclrNoHeapPointers", "runtime/memclr_amd64.s"},
    {"runtime.mapaccess2_faststr", "runtime/map_faststr.go"},
    {"runtime.mapassign_faststr", "runtime/map_faststr.go"},
    {"runtime.concatstrings", "runtime/string.go"},
    {"runtime.slicebytetostring", "runtime/string.go"},
    {"internal/runtime/syscall.Syscall6", "internal/runtime/syscall/syscall_linux.go"},
    {"syscall.Syscall", "syscall/syscall_linux.go"},
    {"syscall.read", "syscall/zsyscall_linux_amd64.go"},
    {"syscall.Read", "syscall/syscall_unix.go"},
    {"syscall.write", "syscall/zsyscall_linux_amd64.go"},
    {"syscall.Write", "syscall/syscall_unix.go"},
    {"syscall.accept4", "syscall/zsyscall_linux_amd64.go"},
    {"syscall.Accept4", "syscall/syscall_linux.go"},
    {"syscall.pwrite", "syscall/zsyscall_linux_amd64.go"},
    {"syscall.Pwrite", "syscall/syscall_unix.go"},
    {"syscall.Fsync", "syscall/zsyscall_linux_amd64.go"},
    {"syscall.setsockopt", "syscall/zsyscall_linux_amd64.go"},
    {"syscall.SetsockoptInt", "syscall/syscall_unix.go"},
    {"os.(*File).Write", "os/file.go"},
    {"os.(*File).write", "os/file_posix.go"},
    {"os.(*File).Sync", "os/file_posix.go"},
    {"os.(*File).WriteAt", "os/file.go"},
    {"encoding/json.Marshal", "encoding/json/encode.go"},
    {"encoding/json.(*encodeState).marshal", "encoding/json/encode.go"},
    {"encoding/json.(*encodeState).reflectValue", "encoding/json/encode.go"},
    {"encoding/json.structEncoder.encode", "encoding/json/encode.go"},
    {"encoding/json.(*Decoder).Decode", "encoding/json/stream.go"},
    {"encoding/json.(*decodeState).object", "encoding/json/decode.go"},
    {"crypto/tls.(*Conn).Read", "crypto/tls/conn.go"},
    {"crypto/tls.(*Conn).readRecordOrCCS", "crypto/tls/conn.go"},
    {"crypto/sha256.block", "crypto/sha256/sha256block_amd64.s"},
    {"crypto/internal/fips140/aes/gcm.seal", "crypto/internal/fips140/aes/gcm/gcm_asm.go"},
    {"compress/flate.(*compressor).deflate", "compress/flate/deflate.go"},
    {"context.(*cancelCtx).Done", "context/context.go"},
    {"context.WithTimeout", "context/context.go"},
    {"runtime/trace.NewTask", "runtime/trace/annotation.go"},
    {"runtime/trace.StartRegion", "runtime/trace/annotation.go"},
    {"runtime/trace.WithRegion", "runtime/trace/annotation.go"},
    {"runtime/trace.(*Region).End", "runtime/trace/annotation.go"},
    {"runtime/trace.Log", "runtime/trace/annotation.go"},
    {"runtime/trace.Logf", "runtime/trace/annotation.go"},
    {"runtime/trace.(*Task).End", "runtime/trace/annotation.go"},
    {"runtime/trace.Start", "runtime/trace/trace.go"},
    {"runtime.StartTrace", "runtime/trace.go"},
    {"net/http/pprof.Trace", "net/http/pprof/pprof.go"},
    {"runtime.traceLocker.Gomaxprocs", "runtime/traceruntime.go"},
    {"runtime.startTheWorld", "runtime/proc.go"},
    {"main.main", "/src/orders/cmd/orders/main.go"},
    {"main.run", "/src/orders/cmd/orders/main.go"},
    {"os/signal.loop", "os/signal/signal_unix.go"},
    {"runtime.(*scavengerState).run", "runtime/mgcscavenge.go"},
    {"runtime.bgscavenge", "runtime/mgcscavenge.go"},
    {"runtime.main", "runtime/proc.go"},
    {"runtime.goexit", "runtime/asm_amd64.s"},
};

/* Modules of the generated service and its dependencies, with the layer their packages sit in
 * (0 = entry points, higher = deeper in call chains). */
typedef struct modspec {
    const char *path, *version; /* version NULL: the service itself, under /src/orders */
    const char *pkgs;           /* space-separated package dirs */
    uint8_t layer;
} modspec;

static const modspec modules[] = {
    {"github.com/acme/orders", NULL,
     "internal/api internal/api/middleware internal/api/v1 internal/api/v2 internal/grpcapi", 0},
    {"github.com/acme/orders", NULL,
     "internal/orders internal/inventory internal/pricing internal/auth internal/billing "
     "internal/shipping internal/notify internal/search internal/catalog internal/users",
     1},
    {"github.com/acme/orders", NULL,
     "internal/store internal/store/pg internal/store/redis internal/cache internal/events "
     "internal/metrics internal/featureflags internal/audit",
     2},
    {"github.com/acme/platform", "v1.42.3",
     "httpx retry ratelimit circuit tracing logging config authz idgen", 2},
    {"github.com/go-chi/chi/v5", "v5.1.0", ". middleware", 1},
    {"google.golang.org/grpc", "v1.64.0",
     ". internal/transport balancer/roundrobin credentials encoding/proto metadata status "
     "internal/grpcsync",
     3},
    {"github.com/jackc/pgx/v5", "v5.6.0", ". pgconn pgtype pgproto3 internal/iobufpool stdlib", 3},
    {"github.com/redis/go-redis/v9", "v9.5.3", ". internal/pool internal/proto internal/hashtag",
     3},
    {"go.uber.org/zap", "v1.27.0", ". zapcore internal/bufferpool buffer", 4},
    {"github.com/prometheus/client_golang", "v1.19.1", "prometheus prometheus/promhttp", 4},
    {"go.opentelemetry.io/otel/sdk", "v1.27.0", "trace resource internal/env", 4},
    {"google.golang.org/protobuf", "v1.34.2",
     "proto internal/impl encoding/protowire reflect/protoreflect internal/order", 5},
    {"github.com/klauspost/compress", "v1.17.9", "zstd s2 internal/snapref", 5},
    {"golang.org/x/net", "v0.26.0", "http2 http2/hpack idna", 4},
    {"github.com/segmentio/kafka-go", "v0.4.47", ". protocol compress", 3},
    {"github.com/aws/aws-sdk-go-v2/service/s3", "v1.55.1", ". internal/customizations", 3},
    {"github.com/json-iterator/go", "v1.1.12", ".", 5},
    {"github.com/google/uuid", "v1.6.0", ".", 5},
};

static const char *const type_words[] = {
    "Client",    "Conn",    "Pool",     "Server", "Handler",   "Store",    "Cache",     "Encoder",
    "Decoder",   "Reader",  "Writer",   "Batch",  "Tx",        "Stmt",     "Row",       "Codec",
    "Span",      "Tracer",  "Limiter",  "Router", "Registry",  "Counter",  "Histogram", "Session",
    "Stream",    "Frame",   "Buffer",   "Queue",  "Scheduler", "Resolver", "Balancer",  "Picker",
    "Transport", "Request", "Response", "Order",  "Item",      "Price",    "Account",   "Token",
    "Policy",    "Builder", "Service",  "Repo",   "Options",   "Watcher",  "Breaker",   "Meter",
};
static const char *const verb_words[] = {
    "Get",       "Put",       "Do",         "Exec",        "Query",     "QueryRow",   "Scan",
    "Send",      "Recv",      "Read",       "Write",       "Flush",     "Encode",     "Decode",
    "Marshal",   "Unmarshal", "Handle",     "ServeHTTP",   "Invoke",    "NewStream",  "Observe",
    "Inc",       "Add",       "Lookup",     "Resolve",     "Pick",      "Acquire",    "Release",
    "Begin",     "Commit",    "Rollback",   "Validate",    "Authorize", "Compute",    "Apply",
    "Load",      "Store",     "Update",     "Delete",      "List",      "Fetch",      "process",
    "handle",    "run",       "dispatch",   "encodeField", "parse",     "readFrame",  "writeFrame",
    "roundTrip", "withRetry", "checkLimit", "toProto",     "fromRow",   "buildQuery", "serialize",
    "finish",    "emit",      "record",     "snapshot",
};
static const char *const file_words[] = {
    "client",   "conn",   "pool",    "server",    "handler",  "store",    "cache",     "encode",
    "decode",   "reader", "writer",  "batch",     "tx",       "stmt",     "rows",      "codec",
    "span",     "tracer", "limiter", "router",    "registry", "metrics",  "session",   "stream",
    "frame",    "buffer", "queue",   "scheduler", "resolver", "balancer", "transport", "request",
    "response", "types",  "util",    "options",   "errors",   "config",   "helpers",   "service",
};
#define NELEM(a) (sizeof(a) / sizeof *(a))

/* Layer boundaries over tg_code.funcs of the generated part (funcs[first_app..]). */
static uint32_t first_app, layer_first[8], layer_n[8];

static uint32_t func_add(tg_sim *s, uint32_t name, uint32_t file, uint32_t line, uint8_t layer,
                         uint64_t *pc) {
    tg_code *c = &s->code;
    tg_func *f = &c->funcs[c->nfuncs];
    f->name = name;
    f->file = file;
    f->line = line;
    f->layer = layer;
    f->size = (uint16_t)tg_range(&s->rng, 96, 3000);
    f->nsites = (uint8_t)tg_range(&s->rng, 1, 8);
    f->entry = *pc;
    *pc += (f->size + 31u) & ~31u;
    return c->nfuncs++;
}

static void gen_app(tg_sim *s, uint64_t *pc) {
    tg_code *c = &s->code;
    first_app = c->nfuncs;
    /* Modules are processed layer by layer so that each layer is a contiguous range. */
    for (uint8_t layer = 0; layer < 6; layer++) {
        layer_first[layer] = c->nfuncs;
        for (size_t mi = 0; mi < NELEM(modules); mi++) {
            const modspec *md = &modules[mi];
            if (md->layer != layer) continue;
            const char *pk = md->pkgs;
            while (*pk) {
                while (*pk == ' ') pk++;
                const char *e = pk;
                while (*e && *e != ' ') e++;
                char pkg[128], imp[256], dir[384];
                int pl = (int)(e - pk);
                snprintf(pkg, sizeof pkg, "%.*s", pl, pk);
                if (!strcmp(pkg, "."))
                    snprintf(imp, sizeof imp, "%s", md->path);
                else
                    snprintf(imp, sizeof imp, "%s/%s", md->path, pkg);
                if (md->version)
                    snprintf(dir, sizeof dir, "/root/go/pkg/mod/%s@%s%s%s", md->path, md->version,
                             strcmp(pkg, ".") ? "/" : "", strcmp(pkg, ".") ? pkg : "");
                else
                    snprintf(dir, sizeof dir, "/src/orders%s", imp + strlen(md->path));
                int nfiles = (int)tg_range(&s->rng, 6, 24);
                uint32_t files[24] = {0};
                for (int i = 0; i < nfiles; i++) {
                    const char *w = file_words[tg_below(&s->rng, NELEM(file_words))];
                    if (i && tg_chance(&s->rng, TG_P(0.3)))
                        files[i] = str_fmt(c, "%s/%s_%s.go", dir, w,
                                           file_words[tg_below(&s->rng, NELEM(file_words))]);
                    else
                        files[i] = str_fmt(c, "%s/%s.go", dir, w);
                }
                int nfn = (int)tg_range(&s->rng, 25, 55);
                for (int i = 0; i < nfn; i++) {
                    const char *ty = type_words[tg_below(&s->rng, NELEM(type_words))];
                    const char *vb = verb_words[tg_below(&s->rng, NELEM(verb_words))];
                    uint32_t name;
                    switch (tg_below(&s->rng, 6)) {
                    case 0:
                        name = str_fmt(c, "%s.%s%s", imp, vb, ty);
                        break;
                    case 1:
                        name = str_fmt(c, "%s.%s.%s", imp, ty, vb);
                        break;
                    case 2:
                        name = str_fmt(c, "%s.(*%s).%s.func%u", imp, ty, vb,
                                       (unsigned)tg_range(&s->rng, 1, 4));
                        break;
                    default:
                        name = str_fmt(c, "%s.(*%s).%s", imp, ty, vb);
                        break;
                    }
                    /* one draw per statement: the order of a call's arguments is the
                     * compiler's (this is the order gcc took them in, so traces stay) */
                    uint32_t line = (uint32_t)tg_range(&s->rng, 20, 1800);
                    uint32_t file = files[tg_below(&s->rng, (uint32_t)nfiles)];
                    func_add(s, name, file, line, layer, pc);
                }
                pk = e;
            }
        }
        layer_n[layer] = c->nfuncs - layer_first[layer];
    }
}

void tg_code_init(tg_sim *s) {
    tg_code *c = &s->code;
    for (int i = 0; i < S_NFIXED; i++) str_add(c, fixed_strings[i], strlen(fixed_strings[i]));
    c->funcs = tg_xcalloc(8192, sizeof *c->funcs);
    uint64_t pc = 0x401000;
    for (int i = 0; i < F_NKNOWN; i++) {
        uint32_t name = str_add(c, known[i].name, strlen(known[i].name));
        uint32_t file = known[i].file[0] == '/' ? str_add(c, known[i].file, strlen(known[i].file))
                                                : str_fmt(c, GOROOT "%s", known[i].file);
        func_add(s, name, file, (uint32_t)tg_range(&s->rng, 30, 1500), 9, &pc);
    }
    pc = (pc + 0xfffff) & ~(uint64_t)0xfffff;
    gen_app(s, &pc);
    if (c->nfuncs > 8192) tg_die("internal: too many functions");

    /* How many distinct stacks each (category, path) pair has: frequent ones more. */
    uint32_t total = 0;
    for (int k = 0; k < SK_NCAT; k++)
        for (int p = 0; p < PATH_NPATH; p++) {
            uint16_t n = 64; /* powers of two: tg_pick masks instead of dividing */
            switch (k) {
            case SK_CPU:
                n = 512;
                break;
            case SK_PREEMPT:
            case SK_SYS_READ:
            case SK_SYS_WRITE:
            case SK_CREATE:
                n = 256;
                break;
            case SK_NET_READ:
            case SK_NET_BACKEND:
            case SK_CHANRECV:
            case SK_UNBLOCK_CHAN:
            case SK_MUTEX:
            case SK_UNBLOCK_MUTEX:
            case SK_SELECT:
            case SK_REGION:
            case SK_REGIONEND:
            case SK_LOG:
            case SK_SWEEP:
            case SK_ASSIST:
                n = 128;
                break;
            case SK_STW_TRACE:
            case SK_PROCS:
            case SK_STW_TERM:
                n = 2;
                break;
            default:
                break;
            }
            if (p == PATH_RUNTIME || p == PATH_MAIN) n = n > 16 ? 16 : n;
            c->nvar[k][p] = n;
            c->voff[k][p] = total;
            total += n;
        }
    c->nvars = total;
    c->var = tg_xcalloc(total, sizeof *c->var);
    c->varki = tg_xmalloc(total * sizeof *c->varki);
    for (uint32_t i = 0; i < total; i++) c->varki[i] = -1;
    static const uint32_t starts[PATH_NPATH] = {F_CONN_SERVE,   0,          0, 0, 0, F_SERVER_SERVE,
                                                F_BGMARKWORKER, F_MAIN_MAIN};
    for (int p = 0; p < PATH_NPATH; p++) {
        uint32_t f = starts[p];
        if (!f) f = layer_first[1] + tg_below(&s->rng, layer_n[1] + layer_n[2]);
        c->start_func[p] = f;
    }
    c->stacks = NULL;
    /* One-frame stacks naming a new goroutine's start function (GoCreate's new_stack). */
    for (int p = 0; p < PATH_NPATH; p++) {
        if (c->nstacks == c->capstacks) {
            c->capstacks = c->capstacks ? c->capstacks * 2 : 4096;
            c->stacks = tg_xrealloc(c->stacks, c->capstacks * sizeof *c->stacks);
        }
        if (c->nframes + 1 > c->capframes) {
            c->capframes = c->capframes ? c->capframes * 2 : 65536;
            c->frames = tg_xrealloc(c->frames, c->capframes * sizeof *c->frames);
        }
        tg_func *f = &c->funcs[c->start_func[p]];
        c->frames[c->nframes] =
            (tg_site){.func = c->start_func[p], .line = f->line, .pc = f->entry};
        tg_stack *k = &c->stacks[c->nstacks];
        memset(k, 0, sizeof *k);
        k->first = c->nframes++;
        k->n = 1;
        c->newg_stack[p] = c->nstacks++;
    }
}

/* ---- stacks ---- */

static void stack_body(tg_code *c, tg_stack *k);

typedef struct fbuf {
    uint32_t f[160];
    int n;
} fbuf;

static void push(fbuf *b, uint32_t f) {
    if (b->n < 160) b->f[b->n++] = f;
}

/* The runtime frames at the leaf of a stack of category cat (leaf first). */
static void leaf_frames(tg_sim *s, int cat, fbuf *b) {
    tg_rng *r = &s->rng;
    switch (cat) {
    case SK_NET_READ:
    case SK_NET_BACKEND:
        push(b, F_GOPARK);
        push(b, F_NETPOLLBLOCK);
        push(b, F_POLLWAIT);
        push(b, F_PD_WAIT);
        push(b, F_PD_WAITREAD);
        push(b, F_FD_READ);
        push(b, F_NETFD_READ);
        push(b, F_CONN_READ);
        if (tg_chance(r, TG_P(0.4))) {
            push(b, F_TLS_READRECORD);
            push(b, F_TLS_READ);
        }
        if (cat == SK_NET_READ) {
            push(b, F_CONNREADER_READ);
            push(b, F_BUFIO_FILL);
            push(b, tg_chance(r, TG_P(0.5)) ? F_BUFIO_PEEK : F_BUFIO_READSLICE);
        } else {
            push(b, F_BUFIO_FILL);
        }
        break;
    case SK_NET_ACCEPT:
        push(b, F_GOPARK);
        push(b, F_NETPOLLBLOCK);
        push(b, F_POLLWAIT);
        push(b, F_PD_WAIT);
        push(b, F_PD_WAITREAD);
        push(b, F_FD_ACCEPT);
        push(b, F_NETFD_ACCEPT);
        push(b, F_TCPL_ACCEPT);
        push(b, F_TCPL_ACCEPT2);
        break;
    case SK_CHANRECV:
        push(b, F_GOPARK);
        push(b, F_CHANRECV);
        push(b, tg_chance(r, TG_P(0.5)) ? F_CHANRECV1 : F_CHANRECV2);
        break;
    case SK_CHANSEND:
        push(b, F_GOPARK);
        push(b, F_CHANSEND);
        push(b, F_CHANSEND1);
        break;
    case SK_SELECT:
        push(b, F_GOPARK);
        push(b, F_SELECTGO);
        break;
    case SK_MUTEX:
        push(b, F_GOPARK);
        push(b, F_GOPARKUNLOCK);
        push(b, F_SEMACQ1);
        push(b, F_SEMACQMUTEX);
        push(b, F_MUTEX_LOCKSLOW);
        push(b, F_MUTEX_LOCK);
        break;
    case SK_WAITGROUP:
        push(b, F_GOPARK);
        push(b, F_GOPARKUNLOCK);
        push(b, F_SEMACQ1);
        push(b, F_SEMACQ);
        push(b, F_WG_WAIT);
        break;
    case SK_COND:
        push(b, F_GOPARK);
        push(b, F_GOPARKUNLOCK);
        push(b, F_NOTIFYWAIT);
        push(b, F_COND_WAIT);
        break;
    case SK_SLEEP:
        push(b, F_TIME_SLEEP);
        break;
    case SK_ASSIST_WAIT:
        push(b, F_GOPARK);
        push(b, F_PARKASSIST);
        push(b, F_ASSISTALLOC);
        push(b, F_MALLOCGC);
        push(b, tg_chance(r, TG_P(0.5)) ? F_NEWOBJECT : F_MAKESLICE);
        break;
    case SK_UNBLOCK_CHAN:
        push(b, F_GOREADY);
        push(b, F_SEND);
        push(b, F_CHANSEND);
        push(b, F_CHANSEND1);
        break;
    case SK_UNBLOCK_MUTEX:
        push(b, F_READY);
        push(b, F_GOREADY);
        push(b, F_SEMREL1);
        push(b, F_SEMREL);
        push(b, F_MUTEX_UNLOCKSLOW);
        push(b, F_MUTEX_UNLOCK);
        break;
    case SK_UNBLOCK_WG:
        push(b, F_READY);
        push(b, F_GOREADY);
        push(b, F_SEMREL1);
        push(b, F_SEMREL);
        push(b, F_WG_ADD);
        push(b, F_WG_DONE);
        break;
    case SK_UNBLOCK_COND:
        push(b, F_READY);
        push(b, F_GOREADY);
        push(b, F_COND_SIGNAL);
        break;
    case SK_SYS_READ:
        push(b, F_SYSCALL6);
        push(b, F_SYS_SYSCALL);
        push(b, F_SYS_READ);
        push(b, F_SYS_READ2);
        push(b, F_EINTRIO);
        push(b, F_FD_READ);
        push(b, F_NETFD_READ);
        push(b, F_CONN_READ);
        if (tg_chance(r, TG_P(0.5))) {
            push(b, F_CONNREADER_READ);
            push(b, F_BUFIO_FILL);
        }
        break;
    case SK_SYS_WRITE:
        push(b, F_SYSCALL6);
        push(b, F_SYS_SYSCALL);
        push(b, F_SYS_WRITE);
        push(b, F_SYS_WRITE2);
        push(b, F_EINTRIO);
        push(b, F_FD_WRITE);
        push(b, F_NETFD_WRITE);
        push(b, F_CONN_WRITE);
        if (tg_chance(r, TG_P(0.6))) {
            push(b, F_BUFIO_FLUSH);
            push(b, F_FINISHREQUEST);
        }
        break;
    case SK_SYS_ACCEPT:
        push(b, F_SYSCALL6);
        push(b, F_SYS_SYSCALL);
        push(b, F_SYS_ACCEPT4);
        push(b, F_SYS_ACCEPT4B);
        push(b, F_POLL_ACCEPT);
        push(b, F_FD_ACCEPT);
        push(b, F_NETFD_ACCEPT);
        push(b, F_TCPL_ACCEPT);
        push(b, F_TCPL_ACCEPT2);
        break;
    case SK_SYS_PWRITE:
        push(b, F_SYSCALL6);
        push(b, F_SYS_SYSCALL);
        push(b, F_SYS_PWRITE);
        push(b, F_SYS_PWRITE2);
        push(b, F_EINTRIO);
        push(b, F_OS_WRITEAT);
        break;
    case SK_SYS_FSYNC:
        push(b, F_SYSCALL6);
        push(b, F_SYS_SYSCALL);
        push(b, F_SYS_FSYNC);
        push(b, F_OS_SYNC);
        break;
    case SK_SYS_MISC:
        push(b, F_SYSCALL6);
        push(b, F_SYS_SYSCALL);
        push(b, F_SYS_SETSOCKOPT);
        push(b, F_SYS_SETSOCKOPTINT);
        break;
    case SK_SWEEP:
        push(b, F_GCSWEEPSPAN);
        push(b, F_SWEEP);
        push(b, F_CACHESPAN);
        push(b, F_REFILL);
        push(b, F_NEXTFREE);
        push(b, F_MALLOCGC);
        push(b, tg_chance(r, TG_P(0.5)) ? F_NEWOBJECT : F_GROWSLICE);
        break;
    case SK_ASSIST:
        push(b, F_ASSISTALLOC);
        push(b, F_MALLOCGC);
        push(b, tg_chance(r, TG_P(0.5)) ? F_MAKESLICE : F_NEWOBJECT);
        break;
    case SK_GCSTART:
        push(b, F_GCSTART);
        push(b, F_MALLOCGC);
        push(b, F_NEWOBJECT);
        break;
    case SK_STW_GC:
        push(b, F_STOPTHEWORLD);
        push(b, F_GCSTART);
        push(b, F_MALLOCGC);
        push(b, F_MAKESLICE);
        break;
    case SK_STW_TERM:
        push(b, F_STOPTHEWORLD);
        push(b, F_GCMARKDONE);
        push(b, F_BGMARKWORKER);
        break;
    case SK_TASK:
        push(b, F_TRACE_NEWTASK);
        break;
    case SK_TASKEND:
        push(b, F_TRACE_TASKEND);
        break;
    case SK_REGION:
        push(b, F_TRACE_STARTREGION);
        if (tg_chance(r, TG_P(0.3))) push(b, F_TRACE_WITHREGION);
        break;
    case SK_REGIONEND:
        push(b, F_TRACE_REGIONEND);
        break;
    case SK_LOG:
        push(b, tg_chance(r, TG_P(0.5)) ? F_TRACE_LOG : F_TRACE_LOGF);
        break;
    case SK_CPU: {
        static const uint32_t leaves[] = {F_MEMMOVE,      F_MEMCLR,   F_MAPACCESS2,
                                          F_MAPASSIGN,    F_CONCAT,   F_SLICEBYTETOSTRING,
                                          F_SHA256_BLOCK, F_GCM_SEAL, F_DEFLATE,
                                          F_JSON_STRUCT,  F_MALLOCGC, F_SCANOBJECT};
        uint32_t lf = leaves[tg_below(r, NELEM(leaves))];
        if (tg_chance(r, TG_P(0.45))) push(b, lf); /* otherwise the leaf is app code */
        if (lf == F_JSON_STRUCT) {
            push(b, F_JSON_REFLECT);
            push(b, F_JSON_ENC_MARSHAL);
            push(b, F_JSON_MARSHAL);
        }
        break;
    }
    case SK_PROCS:
        push(b, F_GOMAXPROCS_EV);
        push(b, F_STARTTRACE);
        push(b, F_TRACE_START);
        break;
    case SK_STW_TRACE:
        push(b, F_STOPTHEWORLD);
        push(b, F_STARTTRACE);
        push(b, F_TRACE_START);
        break;
    case SK_PARK:
        push(b, F_GOPARK);
        break;
    case SK_GOSCHED:
    case SK_PREEMPT:
    default:
        break;
    }
}

/* The frames below the app chain for goroutines running code path `path` (leaf first). */
static void root_frames(tg_sim *s, int path, int cat, fbuf *b) {
    tg_code *c = &s->code;
    switch (path) {
    case PATH_HANDLER:
        push(b, F_HANDLERFUNC);
        if (tg_chance(&s->rng, TG_P(0.7))) push(b, F_SERVEMUX);
        push(b, F_SERVERHANDLER);
        push(b, F_CONN_SERVE);
        break;
    case PATH_ACCEPT:
        push(b, F_SERVER_SERVE);
        push(b, F_LISTENANDSERVE);
        push(b, F_MAIN_RUN);
        break;
    case PATH_MAIN:
        push(b, F_MAIN_MAIN);
        push(b, F_RUNTIME_MAIN);
        break;
    case PATH_RUNTIME:
        /* Runtime goroutines: the mark workers, the background sweeper, the scavenger. */
        if (cat == SK_SWEEP || cat == SK_GOSCHED)
            push(b, F_BGSWEEP);
        else if (cat == SK_SLEEP) {
            push(b, F_SCAVENGE);
            push(b, F_BGSCAVENGE);
        } else
            push(b, F_BGMARKWORKER);
        break;
    default:
        push(b, c->start_func[path]);
        break;
    }
}

static uint32_t app_func(tg_sim *s, uint8_t layer) {
    if (layer > 5) layer = 5;
    while (layer_n[layer] == 0) layer = (uint8_t)((layer + 1) % 6);
    return layer_first[layer] + tg_below(&s->rng, layer_n[layer]);
}

/* The call site of `caller` that calls `callee`: fixed per pair, so that a PC always has the same
 * function, file and line (Go's reader keeps the first frame it sees for a PC). */
static tg_site site_of(const tg_code *c, uint32_t caller, uint32_t callee) {
    const tg_func *f = &c->funcs[caller];
    uint32_t k = (uint32_t)((caller * 2654435761u) ^ (callee * 40503u)) % f->nsites;
    uint32_t off = (uint32_t)(f->size * (k + 1) / (f->nsites + 1u)) & ~1u;
    return (tg_site){.func = caller, .line = f->line + 3 + k * 5, .pc = f->entry + off + 5};
}

uint32_t tg_stack_build(tg_sim *s, int cat, int path, uint32_t variant) {
    tg_code *c = &s->code;
    /* Each (cat, path, variant) is built from its own random stream, so a stack does not depend
     * on when it was first needed. */
    tg_rng saved = s->rng;
    s->rng.s = 0x9e3779b97f4a7c15ull * (1 + (uint64_t)cat * 1000003u + (uint64_t)path * 7919u +
                                        (uint64_t)variant * 104729u) ^
               s->seed;
    fbuf leaf = {.n = 0}, app = {.n = 0}, root = {.n = 0};
    leaf_frames(s, cat, &leaf);
    root_frames(s, path, cat, &root);
    if (path != PATH_RUNTIME) {
        /* A chain from an entry point down through deeper layers (built root first). */
        int want = (int)tg_range(&s->rng, 3, 34);
        if (cat == SK_CPU) want = (int)tg_range(&s->rng, 4, 30);
        int room = 40 - leaf.n - root.n;
        if (want > room) want = room;
        if (want + leaf.n + root.n < 5) want = 5 - leaf.n - root.n;
        uint8_t layer = path == PATH_HANDLER ? 0 : 1;
        for (int i = 0; i < want; i++) {
            push(&app, app_func(s, layer));
            if (tg_chance(&s->rng, TG_P(0.45)) && layer < 5) layer++;
        }
    } else if (cat == SK_CPU || cat == SK_PREEMPT) {
        push(&app, F_SCANOBJECT);
        push(&app, F_GREYOBJECT);
    }
    if (leaf.n + app.n + root.n == 0) push(&app, F_GOEXIT);
    /* Leaf first: leaf frames, app chain reversed (deepest first), root frames. */
    uint32_t all[160];
    int n = 0;
    for (int i = 0; i < leaf.n; i++) all[n++] = leaf.f[i];
    for (int i = app.n - 1; i >= 0; i--) all[n++] = app.f[i];
    for (int i = 0; i < root.n; i++) all[n++] = root.f[i];
    if (c->nframes + (uint32_t)n > c->capframes) {
        while (c->nframes + (uint32_t)n > c->capframes) c->capframes = c->capframes * 2;
        c->frames = tg_xrealloc(c->frames, c->capframes * sizeof *c->frames);
    }
    if (c->nstacks == c->capstacks) {
        c->capstacks *= 2;
        c->stacks = tg_xrealloc(c->stacks, c->capstacks * sizeof *c->stacks);
    }
    tg_stack *k = &c->stacks[c->nstacks];
    memset(k, 0, sizeof *k);
    k->first = c->nframes;
    k->n = (uint32_t)n;
    for (int i = 0; i < n; i++) {
        /* Frame i is in function all[i], at the site calling all[i-1] (the leaf: any site). */
        uint32_t callee = i ? all[i - 1] : 0x7fff;
        c->frames[c->nframes++] = site_of(c, all[i], callee);
    }
    c->varki[c->voff[cat][path] + variant] = (int32_t)c->nstacks;
    s->rng = saved;
    if (c->strblob.n) stack_body(c, k);
    return c->nstacks++;
}

/* ---- per-generation tables ---- */

static void cut_push(size_t **v, size_t *n, size_t *cap, size_t off) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *v = tg_xrealloc(*v, *cap * sizeof **v);
    }
    (*v)[(*n)++] = off;
}

/* Reserves room for an entry of at most `max` bytes in a table, starting a new batch first if
 * the entry might not fit in the current one (payload <= 64 KiB including the marker byte). */
static uint8_t *table_room(tg_bytes *t, size_t *last, size_t **cut, size_t *ncut, size_t *capcut,
                           size_t max) {
    if (t->n - *last + max > TG_MAXPAY - 1) {
        cut_push(cut, ncut, capcut, t->n);
        *last = t->n;
    }
    tg_bytes_reserve(t, max);
    return t->v + t->n;
}

static uint32_t str_entry(tg_sim *s, uint64_t gen, const char *txt, size_t len) {
    tg_gentab *tb = &s->tab[gen & 1];
    if (tb->gen != gen)
        tg_die("internal: string for generation %llu outside the window", (unsigned long long)gen);
    if (len > 1024) len = 1024;
    uint8_t *p = table_room(&tb->strings, &tb->str_last, &tb->str_cut, &tb->nstr_cut,
                            &tb->capstr_cut, len + 24);
    uint8_t *p0 = p;
    if (!tb->next_str) tb->next_str = s->code.nstrs;
    uint32_t id = ++tb->next_str;
    *p++ = TDX_EV_STRING;
    p = tg_uv(p, id);
    p = tg_uv(p, len);
    memcpy(p, txt, len);
    p += len;
    tb->strings.n += (size_t)(p - p0);
    return id;
}

uint32_t tg_str_fresh(tg_sim *s, uint64_t gen, const char *txt, size_t len) {
    return str_entry(s, gen, txt, len);
}

/* Adds catalog stack ki to generation gen's stack table; returns its ID there. */
static uint32_t stack_entry(tg_sim *s, uint64_t gen, uint32_t ki) {
    tg_code *c = &s->code;
    tg_gentab *tb = &s->tab[gen & 1];
    const tg_stack *k = &c->stacks[ki];
    for (uint32_t i = 0; i < k->sn; i++) {
        uint32_t si = c->stkstrs[k->sfirst + i];
        tb->strused[si >> 6] |= 1ull << (si & 63);
    }
    uint8_t *p = table_room(&tb->stacks, &tb->stk_last, &tb->stk_cut, &tb->nstk_cut,
                            &tb->capstk_cut, 24 + (size_t)k->blen);
    uint8_t *p0 = p;
    uint32_t id = ++tb->next_stk;
    *p++ = TDX_EV_STACK;
    p = tg_uv(p, id);
    p = tg_uv(p, k->n);
    memcpy(p, c->bodies.v + k->body, k->blen);
    p += k->blen;
    tb->stacks.n += (size_t)(p - p0);
    return id;
}

/* Encodes a stack's frames (pc, func, file, line) once (string IDs never change) and lists the
 * strings they name. */
static void stack_body(tg_code *c, tg_stack *k) {
    tg_bytes_reserve(&c->bodies, (size_t)k->n * 40);
    uint8_t *p = c->bodies.v + c->bodies.n, *p0 = p;
    if (c->nstkstrs + 2 * k->n > c->capstkstrs) {
        c->capstkstrs = (c->capstkstrs ? c->capstkstrs : 65536) * 2 + 2 * k->n;
        c->stkstrs = tg_xrealloc(c->stkstrs, c->capstkstrs * sizeof *c->stkstrs);
    }
    k->sfirst = c->nstkstrs;
    k->sn = 0;
    for (uint32_t i = 0; i < k->n; i++) {
        const tg_site *fr = &c->frames[k->first + i];
        const tg_func *f = &c->funcs[fr->func];
        p = tg_uv(p, fr->pc);
        p = tg_uv(p, f->name + 1);
        p = tg_uv(p, f->file + 1);
        p = tg_uv(p, fr->line);
        uint32_t two[2] = {f->name, f->file};
        for (int j = 0; j < 2; j++) {
            /* Deduplicate with a stamp per string: the stamp is this stack's body offset. */
            uint32_t stamp = (uint32_t)c->bodies.n + 1;
            if (c->strstamp[two[j]] != stamp) {
                c->strstamp[two[j]] = stamp;
                c->stkstrs[k->sfirst + k->sn++] = two[j];
            }
        }
    }
    c->nstkstrs += k->sn;
    k->body = (uint32_t)c->bodies.n;
    k->blen = (uint32_t)(p - p0);
    c->bodies.n += k->blen;
}

/* After the last registry string: pre-encodes every registry string's table entry. */
void tg_code_seal(tg_sim *s) {
    tg_code *c = &s->code;
    c->stroff = tg_xmalloc(((size_t)c->nstrs + 1) * sizeof *c->stroff);
    for (uint32_t i = 0; i < c->nstrs; i++) {
        const tg_strent *e = &c->strs[i];
        size_t len = e->len > 1024 ? 1024 : e->len;
        tg_bytes_reserve(&c->strblob, len + 24);
        uint8_t *p = c->strblob.v + c->strblob.n, *p0 = p;
        c->stroff[i] = (uint32_t)c->strblob.n;
        *p++ = TDX_EV_STRING;
        p = tg_uv(p, i + 1);
        p = tg_uv(p, len);
        memcpy(p, e->s, len);
        p += len;
        c->strblob.n += (size_t)(p - p0);
    }
    c->stroff[c->nstrs] = (uint32_t)c->strblob.n;
    c->strstamp = tg_xcalloc(c->nstrs, sizeof *c->strstamp);
    for (uint32_t i = 0; i < c->nstacks; i++) stack_body(c, &c->stacks[i]);
    for (int k = 0; k < 2; k++)
        s->tab[k].strused = tg_xcalloc(((size_t)c->nstrs + 63) / 64, sizeof(uint64_t));
}

uint32_t tg_stk_slow(tg_sim *s, uint64_t gen, uint32_t ki) {
    uint32_t id = stack_entry(s, gen, ki);
    tg_stack *k = &s->code.stacks[ki];
    k->gen[gen & 1] = gen;
    k->id[gen & 1] = id;
    return id;
}

uint32_t tg_vstk_slow(tg_sim *s, uint64_t gen, uint32_t vi) {
    tg_code *c = &s->code;
    if (c->varki[vi] < 0) {
        int cat = 0, path = 0;
        while (cat + 1 < SK_NCAT && c->voff[cat + 1][0] <= vi) cat++;
        while (path + 1 < PATH_NPATH && c->voff[cat][path + 1] <= vi) path++;
        tg_stack_build(s, cat, path, vi - c->voff[cat][path]);
    }
    uint32_t id = stack_entry(s, gen, (uint32_t)c->varki[vi]);
    if (id > 0xfffff) tg_die("internal: more than 2^20 stacks in one generation");
    c->var[vi].tag[gen & 1] = TG_VTAG(gen) | id;
    return id;
}

void tg_cpu_sample(tg_sim *s, uint64_t t, uint64_t tid, uint64_t p, uint64_t goid, uint32_t vi) {
    uint64_t gen = tg_gen_of(s, t);
    uint32_t stk = tg_vstk(s, gen, vi);
    tg_gentab *tb = &s->tab[gen & 1];
    uint8_t *q =
        table_room(&tb->cpu, &tb->cpu_last, &tb->cpu_cut, &tb->ncpu_cut, &tb->capcpu_cut, 64);
    uint8_t *q0 = q;
    *q++ = TDX_EV_CPU_SAMPLE;
    q = tg_uv(q, t);
    q = tg_uv(q, tid);
    q = tg_uv(q, p);
    q = tg_uv(q, goid);
    q = tg_uv(q, stk);
    tb->cpu.n += (size_t)(q - q0);
}
