/* fusegen report: a benchmark results file (bench/results/NAME.json, schema
 * fusegen-bench/1) as a markdown table and a gnuplot script that draws each
 * instance's achieved bandwidth against the measured ceilings and its
 * baseline (run in its own folder, it writes NAME.png there). */
#ifndef FG_REPORT_H
#define FG_REPORT_H

#include <json-c/json.h>

#include "diag.h"
#include "strbuf.h"

/* The markdown table and the gnuplot script (which writes png_name) of one
 * results document, its cases whose instance matches one of the shell globs
 * (all cases when nglobs is 0); `source` names it in messages and in the
 * text.  0, or -1 with the reason reported (nothing appended). */
int fg_report_render(json_object *doc, const char *source, const char *png_name,
                     const char *const *globs, size_t nglobs, fg_strbuf *md, fg_strbuf *gp,
                     fg_diag *d);

/* What every reader of a results file takes from one case of the rmsnorm or
 * decode harness (report's rows, tune's timings), whichever wrote it: the
 * instance ("instance"; "name" in decode files before it had one), the
 * point on the x axis (decode: cached tokens "S"; rmsnorm: "shape.rows"),
 * the kernel's timing ("time"; "us" in rmsnorm files before it was
 * renamed) and the first baseline's ("baseline_unfused_cublas", or
 * "baselines"[0] with its "time" or "us").  Missing parts are NULL or NaN. */
typedef struct fg_bench_case {
    const char *instance;
    double point;
    json_object *time, *baseline;   /* timings: median, min, max (us) */
    double median_us;               /* time's median */
} fg_bench_case;
void fg_bench_case_read(json_object *c, fg_bench_case *out);

int fg_cmd_report(int argc, char **argv);

#endif
