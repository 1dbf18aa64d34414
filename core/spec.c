/* spec.c: the v2 event type table (wire-format document, section 4). */
#include "spec.h"

#include <stdio.h>
#include <string.h>

#define NOS                                                                                        \
    { -1, -1 }
#define T(nm, n, ...)                                                                              \
    { .name = nm, .nargs = n, .timed = true, __VA_ARGS__ }

const tdx_evspec tdx_specs[TDX_EV_NTYPES] = {
    [TDX_EV_EVENT_BATCH] = {.name = "EventBatch",
                            .nargs = 4,
                            .stack_args = NOS,
                            .string_args = NOS,
                            .args = {"gen", "m", "time", "size"}},
    [TDX_EV_STACKS] = {.name = "Stacks", .stack_args = NOS, .string_args = NOS},
    [TDX_EV_STACK] = {.name = "Stack",
                      .nargs = 2,
                      .is_stack = true,
                      .stack_args = NOS,
                      .string_args = NOS,
                      .args = {"id", "nframes"}},
    [TDX_EV_STRINGS] = {.name = "Strings", .stack_args = NOS, .string_args = NOS},
    [TDX_EV_STRING] = {.name = "String",
                       .nargs = 1,
                       .has_data = true,
                       .stack_args = NOS,
                       .string_args = NOS,
                       .args = {"id"}},
    [TDX_EV_CPU_SAMPLES] = {.name = "CPUSamples", .stack_args = NOS, .string_args = NOS},
    /* The stack slot is listed as Go lists it (slot 3 counting the time as dt); see order.c. */
    [TDX_EV_CPU_SAMPLE] = {.name = "CPUSample",
                           .nargs = 5,
                           .stack_args = {3, -1},
                           .string_args = NOS,
                           .args = {"time", "m", "p", "g", "stack"}},
    [TDX_EV_FREQUENCY] =
        {.name = "Frequency", .nargs = 1, .stack_args = NOS, .string_args = NOS, .args = {"freq"}},
    [TDX_EV_PROCS_CHANGE] = T("ProcsChange", 3, .stack_args = {1, -1}, .string_args = NOS,
                              .args = {"dt", "procs_value", "stack"}),
    [TDX_EV_PROC_START] =
        T("ProcStart", 3, .stack_args = NOS, .string_args = NOS, .args = {"dt", "p", "p_seq"}),
    [TDX_EV_PROC_STOP] = T("ProcStop", 1, .stack_args = NOS, .string_args = NOS, .args = {"dt"}),
    [TDX_EV_PROC_STEAL] =
        T("ProcSteal", 4, .stack_args = NOS, .string_args = NOS, .args = {"dt", "p", "p_seq", "m"}),
    [TDX_EV_PROC_STATUS] =
        T("ProcStatus", 3, .stack_args = NOS, .string_args = NOS, .args = {"dt", "p", "pstatus"}),
    [TDX_EV_GO_CREATE] = T("GoCreate", 4, .stack_args = {2, 1}, .string_args = NOS,
                           .args = {"dt", "new_g", "new_stack", "stack"}),
    [TDX_EV_GO_CREATE_SYSCALL] =
        T("GoCreateSyscall", 2, .stack_args = NOS, .string_args = NOS, .args = {"dt", "new_g"}),
    [TDX_EV_GO_START] =
        T("GoStart", 3, .stack_args = NOS, .string_args = NOS, .args = {"dt", "g", "g_seq"}),
    [TDX_EV_GO_DESTROY] = T("GoDestroy", 1, .stack_args = NOS, .string_args = NOS, .args = {"dt"}),
    [TDX_EV_GO_DESTROY_SYSCALL] =
        T("GoDestroySyscall", 1, .stack_args = NOS, .string_args = NOS, .args = {"dt"}),
    [TDX_EV_GO_STOP] = T("GoStop", 3, .stack_args = {1, -1}, .string_args = {0, -1},
                         .args = {"dt", "reason_string", "stack"}),
    [TDX_EV_GO_BLOCK] = T("GoBlock", 3, .stack_args = {1, -1}, .string_args = {0, -1},
                          .args = {"dt", "reason_string", "stack"}),
    [TDX_EV_GO_UNBLOCK] = T("GoUnblock", 4, .stack_args = {2, -1}, .string_args = NOS,
                            .args = {"dt", "g", "g_seq", "stack"}),
    [TDX_EV_GO_SYSCALL_BEGIN] = T("GoSyscallBegin", 3, .stack_args = {1, -1}, .string_args = NOS,
                                  .args = {"dt", "p_seq", "stack"}),
    [TDX_EV_GO_SYSCALL_END] =
        T("GoSyscallEnd", 1, .stack_args = NOS, .string_args = NOS, .args = {"dt"}),
    [TDX_EV_GO_SYSCALL_END_BLOCKED] =
        T("GoSyscallEndBlocked", 1, .stack_args = NOS, .string_args = NOS, .args = {"dt"}),
    [TDX_EV_GO_STATUS] = T("GoStatus", 4, .stack_args = NOS, .string_args = NOS,
                           .args = {"dt", "g", "m", "gstatus"}),
    [TDX_EV_STW_BEGIN] = T("STWBegin", 3, .stack_args = {1, -1}, .string_args = {0, -1},
                           .args = {"dt", "kind_string", "stack"}),
    [TDX_EV_STW_END] = T("STWEnd", 1, .stack_args = NOS, .string_args = NOS, .args = {"dt"}),
    [TDX_EV_GC_ACTIVE] =
        T("GCActive", 2, .stack_args = NOS, .string_args = NOS, .args = {"dt", "gc_seq"}),
    [TDX_EV_GC_BEGIN] = T("GCBegin", 3, .stack_args = {1, -1}, .string_args = NOS,
                          .args = {"dt", "gc_seq", "stack"}),
    [TDX_EV_GC_END] =
        T("GCEnd", 2, .stack_args = NOS, .string_args = NOS, .args = {"dt", "gc_seq"}),
    [TDX_EV_GC_SWEEP_ACTIVE] =
        T("GCSweepActive", 2, .stack_args = NOS, .string_args = NOS, .args = {"dt", "p"}),
    [TDX_EV_GC_SWEEP_BEGIN] =
        T("GCSweepBegin", 2, .stack_args = {0, -1}, .string_args = NOS, .args = {"dt", "stack"}),
    [TDX_EV_GC_SWEEP_END] = T("GCSweepEnd", 3, .stack_args = NOS, .string_args = NOS,
                              .args = {"dt", "swept_value", "reclaimed_value"}),
    [TDX_EV_GC_MARK_ASSIST_ACTIVE] =
        T("GCMarkAssistActive", 2, .stack_args = NOS, .string_args = NOS, .args = {"dt", "g"}),
    [TDX_EV_GC_MARK_ASSIST_BEGIN] = T("GCMarkAssistBegin", 2, .stack_args = {0, -1},
                                      .string_args = NOS, .args = {"dt", "stack"}),
    [TDX_EV_GC_MARK_ASSIST_END] =
        T("GCMarkAssistEnd", 1, .stack_args = NOS, .string_args = NOS, .args = {"dt"}),
    [TDX_EV_HEAP_ALLOC] =
        T("HeapAlloc", 2, .stack_args = NOS, .string_args = NOS, .args = {"dt", "heapalloc_value"}),
    [TDX_EV_HEAP_GOAL] =
        T("HeapGoal", 2, .stack_args = NOS, .string_args = NOS, .args = {"dt", "heapgoal_value"}),
    [TDX_EV_GO_LABEL] =
        T("GoLabel", 2, .stack_args = NOS, .string_args = {0, -1}, .args = {"dt", "label_string"}),
    [TDX_EV_USER_TASK_BEGIN] = T("UserTaskBegin", 5, .stack_args = {3, -1}, .string_args = {2, -1},
                                 .args = {"dt", "task", "parent_task", "name_string", "stack"}),
    [TDX_EV_USER_TASK_END] = T("UserTaskEnd", 3, .stack_args = {1, -1}, .string_args = NOS,
                               .args = {"dt", "task", "stack"}),
    [TDX_EV_USER_REGION_BEGIN] =
        T("UserRegionBegin", 4, .stack_args = {2, -1}, .string_args = {1, -1},
          .args = {"dt", "task", "name_string", "stack"}),
    [TDX_EV_USER_REGION_END] = T("UserRegionEnd", 4, .stack_args = {2, -1}, .string_args = {1, -1},
                                 .args = {"dt", "task", "name_string", "stack"}),
    [TDX_EV_USER_LOG] = T("UserLog", 5, .stack_args = {3, -1}, .string_args = {1, 2},
                          .args = {"dt", "task", "key_string", "value_string", "stack"}),
    [TDX_EV_GO_SWITCH] =
        T("GoSwitch", 3, .stack_args = NOS, .string_args = NOS, .args = {"dt", "g", "g_seq"}),
    [TDX_EV_GO_SWITCH_DESTROY] = T("GoSwitchDestroy", 3, .stack_args = NOS, .string_args = NOS,
                                   .args = {"dt", "g", "g_seq"}),
    [TDX_EV_GO_CREATE_BLOCKED] = T("GoCreateBlocked", 4, .stack_args = {2, 1}, .string_args = NOS,
                                   .args = {"dt", "new_g", "new_stack", "stack"}),
    [TDX_EV_GO_STATUS_STACK] = T("GoStatusStack", 5, .stack_args = {3, -1}, .string_args = NOS,
                                 .args = {"dt", "g", "m", "gstatus", "stack"}),
    [TDX_EV_EXPERIMENTAL_BATCH] = {.name = "ExperimentalBatch",
                                   .nargs = 4,
                                   .has_data = true,
                                   .stack_args = NOS,
                                   .string_args = NOS,
                                   .args = {"exp", "gen", "m", "time"}},
    [TDX_EV_SYNC] = {.name = "Sync", .stack_args = NOS, .string_args = NOS},
    [TDX_EV_CLOCK_SNAPSHOT] = T("ClockSnapshot", 4, .stack_args = NOS, .string_args = NOS,
                                .args = {"dt", "mono", "sec", "nsec"}),
    [TDX_EV_END_OF_GENERATION] = {.name = "EndOfGeneration", .stack_args = NOS, .string_args = NOS},
    [TDX_EV_SPAN] = T("Span", 4, .experiment = 1, .stack_args = NOS, .string_args = NOS,
                      .args = {"dt", "id", "npages_value", "kindclass"}),
    [TDX_EV_SPAN_ALLOC] = T("SpanAlloc", 4, .experiment = 1, .stack_args = NOS, .string_args = NOS,
                            .args = {"dt", "id", "npages_value", "kindclass"}),
    [TDX_EV_SPAN_FREE] = T("SpanFree", 2, .experiment = 1, .stack_args = NOS, .string_args = NOS,
                           .args = {"dt", "id"}),
    [TDX_EV_HEAP_OBJECT] = T("HeapObject", 3, .experiment = 1, .stack_args = NOS,
                             .string_args = NOS, .args = {"dt", "id", "type"}),
    [TDX_EV_HEAP_OBJECT_ALLOC] = T("HeapObjectAlloc", 3, .experiment = 1, .stack_args = NOS,
                                   .string_args = NOS, .args = {"dt", "id", "type"}),
    [TDX_EV_HEAP_OBJECT_FREE] = T("HeapObjectFree", 2, .experiment = 1, .stack_args = NOS,
                                  .string_args = NOS, .args = {"dt", "id"}),
    [TDX_EV_GOROUTINE_STACK] = T("GoroutineStack", 3, .experiment = 1, .stack_args = NOS,
                                 .string_args = NOS, .args = {"dt", "id", "order"}),
    [TDX_EV_GOROUTINE_STACK_ALLOC] = T("GoroutineStackAlloc", 3, .experiment = 1, .stack_args = NOS,
                                       .string_args = NOS, .args = {"dt", "id", "order"}),
    [TDX_EV_GOROUTINE_STACK_FREE] = T("GoroutineStackFree", 2, .experiment = 1, .stack_args = NOS,
                                      .string_args = NOS, .args = {"dt", "id"}),
};

bool tdx_version_is_v2(int v) {
    return v == 22 || v == 23 || v == 25 || v == 26;
}
bool tdx_version_is_v1(int v) {
    return v == 11 || v == 19 || v == 21;
}

/* Highest type of the contiguous prefix the raw tooling of a version knows. */
static unsigned prefix_end(int version) {
    switch (version) {
    case 22:
        return 44;
    case 23:
        return 49;
    case 25:
        return 51;
    case 26:
        return 52;
    }
    return 0;
}

unsigned tdx_spec_count(int version) {
    if (version >= 26) return TDX_EV_NTYPES;
    return tdx_version_is_v2(version) ? prefix_end(version) + 1 : 0;
}

bool tdx_spec_in_version(int version, unsigned t) {
    if (t == 0 || t >= TDX_EV_NTYPES || !tdx_specs[t].name) return false;
    if (t <= prefix_end(version)) return true;
    return version >= 26 && t >= TDX_EV_SPAN;
}

const char *tdx_spec_version_name(int version, unsigned t, char *buf) {
    /* Go's parser names events from the version's table; version 26 knows every type. */
    bool known = t < TDX_EV_NTYPES && tdx_specs[t].name &&
                 (t <= prefix_end(version) || (version >= 26 && t >= TDX_EV_SPAN));
    if (known) return tdx_specs[t].name;
    snprintf(buf, 24, "Invalid(%u)", t);
    return buf;
}

int tdx_spec_lookup(int version, const char *name, unsigned len) {
    for (unsigned t = 1; t < TDX_EV_NTYPES; t++) {
        const char *n = tdx_specs[t].name;
        if (n && strlen(n) == len && memcmp(n, name, len) == 0 && tdx_spec_in_version(version, t))
            return (int)t;
    }
    return -1;
}
