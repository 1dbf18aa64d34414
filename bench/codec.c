/* codec.c: measures the event-block codec on the blocks of an index: decode and re-encode speed
 * (ns/event, slowest block), the re-encoded size per stream, and that every block round trips.
 * Also times random access to the STRINGS table. Prints a human summary and one JSON line. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "index/format/evcodec.h"
#include "index/format/format.h"
#include "index/format/reader.h"

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Field by field: the decoder fills every field, but struct padding is not part of an event. */
static int ev_eq(const tdx_event *a, const tdx_event *b) {
    return a->time == b->time && a->m == b->m && a->p == b->p && a->g == b->g &&
           !memcmp(a->args, b->args, sizeof a->args) && a->stack == b->stack &&
           a->tstack == b->tstack && a->str[0] == b->str[0] && a->str[1] == b->str[1] &&
           a->type == b->type && a->kind == b->kind && a->res_kind == b->res_kind &&
           a->from == b->from && a->to == b->to && a->has_clock == b->has_clock &&
           a->has_tstack == b->has_tstack && a->res == b->res && a->sync_nsec == b->sync_nsec;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: codec INDEX [--reps N] [--blocks N]\n\n"
            "Decodes every event block of INDEX (best of N runs per block, default 3), encodes it\n"
            "again and checks the round trip; prints ns/event for both, the slowest block decode,\n"
            "the re-encoded size per stream, and string-table load and lookup times.\n");
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int reps = 3;
    size_t maxblocks = SIZE_MAX;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--blocks") && i + 1 < argc)
            maxblocks = (size_t)atoll(argv[++i]);
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return usage(stdout), 0;
        else if (!path)
            path = argv[i];
        else
            return usage(stderr), 2;
    }
    if (!path || reps < 1) return usage(stderr), 2;
    tdx_index ix;
    tdx_err err = {0};
    double t0 = now_sec();
    if (tdx_index_open(&ix, path, &err)) {
        fprintf(stderr, "codec: %s: %s\n", path, err.msg);
        return 1;
    }
    double t_open = now_sec() - t0;
    tdx_event *a = malloc(TDX_EVBLOCK_EVENTS * sizeof *a),
              *b = malloc(TDX_EVBLOCK_EVENTS * sizeof *b);
    tdx_evenc enc;
    tdx_evenc_init(&enc);
    tdx_evdec *dec = tdx_evdec_new(); /* kept across blocks, as queries and builds keep theirs */
    tdx_buf out = {0};
    int rc = 1; /* until the report is out */
    if (!a || !b || !dec) {
        fprintf(stderr, "codec: out of memory\n");
        goto done;
    }
    uint64_t nev = 0, oldbytes = 0, newbytes = 0;
    double tdec = 0, tenc = 0, worst = 0;
    int bad = 0;
    size_t nb = ix.nblocks < maxblocks ? ix.nblocks : maxblocks;
    for (size_t bi = 0; bi < nb && !bad; bi++) {
        const uint8_t *d = ix.evdir + bi * D_SIZE;
        const uint8_t *p = ix.data + ix.sec[TDX_SEC_EVENTS].off + tdx_rd64(d + D_OFFSET);
        uint32_t len = tdx_rd32(d + D_LENGTH), n = tdx_rd32(d + D_NEVENTS);
        double best = 1e9;
        for (int r = 0; r < reps; r++) {
            double s = now_sec();
            if (tdx_evdec_block(dec, p, len, n, a)) {
                fprintf(stderr, "codec: block %zu does not decode\n", bi);
                goto done;
            }
            s = now_sec() - s;
            if (s < best) best = s;
        }
        tdec += best;
        if (best > worst) worst = best;
        best = 1e9;
        enc.stats = 0;
        for (int r = 0; r < reps; r++) {
            out.n = 0;
            double s = now_sec();
            if (tdx_evenc_block(&enc, a, n, &out)) {
                fprintf(stderr, "codec: out of memory\n");
                goto done;
            }
            s = now_sec() - s;
            if (s < best) best = s;
        }
        tenc += best;
        /* Once more with the per-field statistics on (not timed). */
        enc.stats = 1;
        out.n = 0;
        if (tdx_evenc_block(&enc, a, n, &out)) {
            fprintf(stderr, "codec: out of memory\n");
            goto done;
        }
        if (tdx_evdec_block(dec, out.v, out.n, n, b)) {
            fprintf(stderr, "codec: block %zu: the re-encoded block does not decode\n", bi);
            bad = 1;
        }
        for (uint32_t i = 0; i < n && !bad; i++)
            if (!ev_eq(&a[i], &b[i])) {
                fprintf(stderr, "codec: block %zu event %u differs after a round trip\n", bi, i);
                bad = 1;
            }
        nev += n;
        oldbytes += len;
        newbytes += out.n;
    }
    /* String table: random lookups by id, as queries do. */
    uint64_t ns = ix.tabs.strings.n, sum = 0, x = 88172645463325252ull;
    double tl = now_sec();
    for (int i = 0; i < 1000000 && ns; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const tdx_str str = tdx_gen_str(&ix.tabs, (uint32_t)(x % ns)), *s = &str;
        sum += s->n + (s->n ? s->p[0] : 0);
    }
    tl = now_sec() - tl;
    uint64_t trace = ix.trace_size;
    printf("blocks %zu  events %" PRIu64 "  trace %" PRIu64 " bytes\n", nb, nev, trace);
    printf("EVENTS in index   %12" PRIu64 "  %.4fx trace  %.3f B/event\n", oldbytes,
           (double)oldbytes / (double)trace, (double)oldbytes / (double)nev);
    printf("EVENTS re-encoded %12" PRIu64 "  %.4fx trace  %.3f B/event\n", newbytes,
           (double)newbytes / (double)trace, (double)newbytes / (double)nev);
    printf("decode %.1f ns/event (slowest block %.3f ms)  encode %.1f ns/event\n",
           tdec * 1e9 / (double)nev, worst * 1e3, tenc * 1e9 / (double)nev);
    double tot = 0;
    for (int f = 0; f < TDX_EF_COUNT; f++) tot += enc.stat[f];
    for (int f = 0; f < TDX_EF_COUNT && tot > 0; f++)
        printf("  %-8s %12.0f bytes  %5.1f%%  %.3f B/event  %.2f bits/event\n",
               tdx_evcodec_field_name(f), enc.stat[f] / 8, 100.0 * enc.stat[f] / tot,
               enc.stat[f] / 8 / (double)nev, enc.stat[f] / (double)nev);
    printf("open %.1f ms (%" PRIu64 " strings)  string lookup %.1f ns (checksum %" PRIu64 ")\n",
           t_open * 1e3, ns, tl * 1e9 / 1e6, sum & 0xff);
    printf("{\"events\": %" PRIu64 ", \"old_bytes\": %" PRIu64 ", \"new_bytes\": %" PRIu64
           ", \"decode_ns\": %.2f, \"encode_ns\": %.2f, \"worst_block_ms\": %.4f, \"open_ms\": "
           "%.2f, \"ok\": %s}\n",
           nev, oldbytes, newbytes, tdec * 1e9 / (double)nev, tenc * 1e9 / (double)nev, worst * 1e3,
           t_open * 1e3, bad ? "false" : "true");
    rc = bad;
done:
    tdx_vec_free(&out);
    tdx_evenc_free(&enc);
    tdx_evdec_free(dec);
    free(a);
    free(b);
    tdx_index_close(&ix);
    return rc;
}
