/* test_idset.c: core/idset.h against a plain sorted list of the same ids. */
#include <criterion/criterion.h>

#include <stdlib.h>

#include "core/idset.h"
#include "xorshift.h"

static uint64_t rng = 0x2545f4914f6cdd1dULL;
static uint64_t rnd(void) {
    return xorshift64(&rng);
}

/* Ids near the first one (the bitmap), far beyond it, and negative ones (the hash). */
static int64_t draw(int64_t first) {
    uint64_t r = rnd();
    switch (r % 8) {
    case 0:
        return -(int64_t)(r >> 40) - 1;
    case 1:
        return first + (int64_t)TDX_IDSET_DENSE + (int64_t)(r >> 44);
    case 2:
        return (int64_t)(r >> 1);
    default:
        return first + (int64_t)((r >> 8) % 5000);
    }
}

static void against_reference(int64_t first) {
    enum { N = 5000 };
    static int64_t ids[N];
    static bool in[N];
    tdx_idset s = {0};
    int added;
    cr_assert_eq(tdx_idset_add(&s, first, &added), 0);
    cr_assert_eq(added, 1);
    for (size_t i = 0; i < N; i++) {
        ids[i] = draw(first);
        in[i] = false;
    }
    ids[0] = first;
    in[0] = true;
    for (int round = 0; round < 3; round++) {
        for (size_t i = 1; i < N; i++) {
            bool want_new = true;
            for (size_t j = 0; j < N && want_new; j++) want_new = !(in[j] && ids[j] == ids[i]);
            if (rnd() % 3 == 0) {
                tdx_idset_del(&s, ids[i]);
                for (size_t j = 0; j < N; j++)
                    if (ids[j] == ids[i]) in[j] = false;
                cr_assert(!tdx_idset_has(&s, ids[i]), "id %lld still there after del",
                          (long long)ids[i]);
                continue;
            }
            cr_assert_eq(tdx_idset_add(&s, ids[i], &added), 0);
            cr_assert_eq(added, want_new, "id %lld: added %d, want %d", (long long)ids[i], added,
                         want_new);
            in[i] = true;
        }
        for (size_t i = 0; i < N; i++) {
            bool want = false;
            for (size_t j = 0; j < N && !want; j++) want = in[j] && ids[j] == ids[i];
            cr_assert_eq(tdx_idset_has(&s, ids[i]), want, "id %lld", (long long)ids[i]);
        }
    }
    cr_assert(!tdx_idset_has(&s, first + 6000)); /* never added, inside the window */
    tdx_idset_free(&s);
    cr_assert(!tdx_idset_has(&s, first));
}

Test(idset, ids_from_one) {
    against_reference(1);
}

/* A first id far from zero moves the window there. */
Test(idset, ids_from_far) {
    against_reference((int64_t)1 << 40);
}

/* The first id negative: everything goes through the hash until a non-negative id sets the
 * window. */
Test(idset, first_id_negative) {
    against_reference(-5);
}
