/* libFuzzer target: the spec loader (YAML parse, the schema walk with
 * file:line:col errors, libcyaml, the semantic rules) on arbitrary bytes.
 * Whatever loads is also planned against two fixed targets, the H200 (the
 * cluster forms) and MI300X (the portable forms), so the planners'
 * arithmetic on spec values runs on hostile values too (a GEMM spec's shapes
 * through the overlap cost model as well). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plan.h"
#include "plan_overlap.h"
#include "spec.h"

/* specs/targets/h200.yaml and mi300x.yaml, embedded at build time (fusegen
 * embed) so the targets do not depend on the working folder. */
extern const unsigned char fg_image_h200_target[], fg_image_mi300x_target[];
extern const size_t fg_image_h200_target_size, fg_image_mi300x_target_size;

static fg_spec *embedded_target(const char *name, const unsigned char *text, size_t size)
{
    fg_diag d;
    fg_diag_init(&d, NULL);
    fg_spec *t = fg_spec_load_text(name, (const char *)text, size, &d);
    if (!t) {
        fprintf(stderr, "fuzz_spec: the embedded target %s does not load: %s\n", name, d.first);
        __builtin_trap();
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fg_spec *target, *amd;
    fg_diag d;
    fg_diag_init(&d, NULL);
    if (!target) {
        target = embedded_target("h200.yaml", fg_image_h200_target, fg_image_h200_target_size);
        amd = embedded_target("mi300x.yaml", fg_image_mi300x_target, fg_image_mi300x_target_size);
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
        fg_plan_set portable = {0};
        fg_plan_spec(s, amd, &portable, &d);
        fg_plan_free(&portable);
    }
    if (s->kind == FG_SPEC_GEMM)
        for (unsigned i = 0; i < s->gemm->shapes_count; i++) {
            fg_overlap_prediction p;
            if (fg_overlap_predict(s->gemm, &s->gemm->shapes[i], target->target, &p))
                continue;
            if (!(p.us[p.chosen] >= 0))
                __builtin_trap();   /* a prediction is a time, never NaN or negative */
            for (unsigned h = 0; h < p.hier_count; h++)   /* (lanes: NaN where not predicted) */
                if (!(p.hier_us[h] >= 0) || p.hier_lanes_us[h] < 0)
                    __builtin_trap();
        }
    fg_spec_free(s);
    return 0;
}
