/* test_viewbuild.c: index/viewbuild.c: the string table's page budget stays within the build's
 * memory target (0.1 x trace + 64 MB) on small traces and keeps the larger traces' budgets. */
#include <criterion/criterion.h>

#include "index/viewbuild.h"

#define MiB ((uint64_t)1 << 20)

Test(viewbuild, string_budget_is_capped_on_small_traces) {
    /* 256 MiB: half the allowance (12.8 MiB) left too little for the rest; the allowance less
     * 20 MiB instead */
    uint64_t t = 256 * MiB;
    cr_assert_eq(tdx_viewbuild_str_budget(t), t / 10 - 20 * MiB);
    /* 1 GiB: half the allowance, as before */
    t = 1024 * MiB;
    cr_assert_eq(tdx_viewbuild_str_budget(t), t / 10 / 2);
    /* the bounds: 4 MiB for tiny traces, 128 MiB for huge ones */
    cr_assert_eq(tdx_viewbuild_str_budget(0), 4 * MiB);
    cr_assert_eq(tdx_viewbuild_str_budget(100 * MiB), 4 * MiB);
    cr_assert_eq(tdx_viewbuild_str_budget(4096 * MiB), 128 * MiB);
    cr_assert_eq(tdx_viewbuild_str_budget(UINT64_MAX), 128 * MiB);
}
