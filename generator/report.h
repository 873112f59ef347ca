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

int fg_cmd_report(int argc, char **argv);

#endif
