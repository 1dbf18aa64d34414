/* vevser.c: viewer event records. */
#include "index/views/vevser.h"

#include <string.h>

#include "index/views/viewgen.h"

/* cname and cat values the generator uses (pointers to static strings): coded by position,
 * 1 and 2 for these, then 3.. for the task colours. */
static const char *const own_statics[] = {"Region", "user event"};
enum { NOWN = sizeof own_statics / sizeof *own_statics, NSTATIC = NOWN + TDX_NTASK_COLORS };

static const char *static_at(uint64_t i) {
    return i < NOWN ? own_statics[i] : tdx_task_colors[i - NOWN];
}

static uint64_t static_code(const char *s) {
    if (!s) return 0;
    for (uint64_t i = 0; i < NSTATIC; i++)
        if (!strcmp(s, static_at(i))) return i + 1;
    return 0; /* unknown: dropped (never happens with the generator's values) */
}

int tdx_vev_save(tdx_buf *b, const tdx_vev *ev) {
    int rc = tdx_buf_append(b, &ev->ph, 1);
    rc |= tdx_buf_uvarint(b, (uint64_t)ev->required | static_code(ev->cname) << 1 |
                                 static_code(ev->cat) << 6);
    rc |= tdx_ser_bytes(b, ev->name.p, ev->name.n) | tdx_ser_bytes(b, ev->scope.p, ev->scope.n);
    rc |= tdx_ser_i(b, ev->ts) | tdx_ser_i(b, ev->dur);
    rc |= tdx_buf_uvarint(b, ev->pid) | tdx_buf_uvarint(b, ev->tid) | tdx_buf_uvarint(b, ev->id);
    rc |= tdx_ser_i(b, ev->sf) | tdx_ser_i(b, ev->esf);
    rc |= tdx_buf_uvarint(b, ev->args.kind);
    if (ev->args.kind)
        rc |= tdx_buf_uvarint(b, ev->args.u[0]) | tdx_buf_uvarint(b, ev->args.u[1]) |
              tdx_buf_uvarint(b, ev->args.u[2]) | tdx_ser_bytes(b, ev->args.s.p, ev->args.s.n);
    return rc ? -1 : 0;
}

static tdx_str load_str(tdx_deser *d) {
    size_t n;
    const uint8_t *p = tdx_deser_bytes(d, &n);
    return (tdx_str){p, (uint32_t)n};
}

int tdx_vev_load(tdx_deser *d, tdx_vev *ev) {
    memset(ev, 0, sizeof *ev);
    if (d->p >= d->end) return -1;
    ev->ph = (char)*d->p++;
    uint64_t flags = tdx_deser_u(d);
    ev->required = flags & 1;
    uint64_t cn = (flags >> 1) & 31, ct = flags >> 6;
    if (cn > NSTATIC || ct > NSTATIC) return -1;
    ev->cname = cn ? static_at(cn - 1) : NULL;
    ev->cat = ct ? static_at(ct - 1) : NULL;
    ev->name = load_str(d);
    ev->scope = load_str(d);
    ev->ts = tdx_deser_i(d);
    ev->dur = tdx_deser_i(d);
    ev->pid = tdx_deser_u(d);
    ev->tid = tdx_deser_u(d);
    ev->id = tdx_deser_u(d);
    ev->sf = tdx_deser_i(d);
    ev->esf = tdx_deser_i(d);
    ev->args.kind = (uint8_t)tdx_deser_u(d);
    if (ev->args.kind) {
        for (int i = 0; i < 3; i++) ev->args.u[i] = tdx_deser_u(d);
        ev->args.s = load_str(d);
    }
    return d->bad ? -1 : 0;
}
