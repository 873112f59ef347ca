/* libFuzzer target: the spec loader (YAML parse, the schema walk with
 * file:line:col errors, libcyaml, the semantic rules) on arbitrary bytes.
 * Whatever loads is also planned against a fixed target, so the planners'
 * arithmetic on spec values runs on hostile values too (a GEMM spec's shapes
 * through the overlap cost model as well). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plan.h"
#include "plan_overlap.h"
#include "spec.h"

/* specs/targets/h200.yaml, embedded at build time (fusegen embed) so the
 * target does not depend on the working folder. */
extern const unsigned char fg_image_h200_target[];
extern const size_t fg_image_h200_target_size;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fg_spec *target;
    fg_diag d;
    fg_diag_init(&d, NULL);
    if (!target) {
        target = fg_spec_load_text("h200.yaml", (const char *)fg_image_h200_target,
                                   fg_image_h200_target_size, &d);
        if (!target) {
            fprintf(stderr, "fuzz_spec: the embedded target does not load: %s\n", d.first);
            __builtin_trap();
        }
    }
    fg_spec *s = fg_spec_load_text("input.yaml", (const char *)data, size, &d);
    if (!s)
        return 0;
    if (s->kind != FG_SPEC_TARGET) {
        /* a quarter of the inputs (by size: deterministic) also plan every
         * tuning candidate, the enumeration `generate --candidates` runs */
        fg_plan_set set = {.candidates = size % 4 == 1};
        fg_plan_spec(s, target, &set, &d);
        fg_plan_free(&set);
    }
    if (s->kind == FG_SPEC_GEMM)
        for (unsigned i = 0; i < s->gemm->shapes_count; i++) {
            fg_overlap_prediction p;
            if (!fg_overlap_predict(s->gemm, &s->gemm->shapes[i], target->target, &p) &&
                !(p.us[p.chosen] >= 0))
                __builtin_trap();   /* a prediction is a time, never NaN or negative */
        }
    fg_spec_free(s);
    return 0;
}
