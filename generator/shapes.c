/* fusegen shapes GEMM_SPEC...: prints "NAME:COLLECTIVE:MxNxK,..." over the
 * specs' shapes in file order, the list test_overlap --bench-shapes takes.
 * Every spec is loaded and checked first; nothing is printed on an error. */
#include "shapes.h"

#include <stdio.h>
#include <string.h>

#include "diag.h"
#include "spec.h"
#include "strbuf.h"

static const char usage[] =
    "usage: fusegen shapes GEMM_SPEC...\n"
    "\n"
    "Prints the shapes of GEMM-overlap specs on one line, in file order, as\n"
    "test_overlap's --bench-shapes list: NAME:all_gather|reduce_scatter:MxNxK,...\n"
    "  build/gpu/test_overlap --bench --bench-shapes \"$(fusegen shapes bench/sweeps/overlap-tp2-fit.yaml)\"\n"
    "\n"
    "options:\n"
    "  -h, --help   this text\n";

int fg_cmd_shapes(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "fusegen shapes: unknown option '%s'\n\n%s", argv[i], usage);
            return 2;
        }
    fg_diag d;
    fg_diag_init(&d, stderr);
    fg_strbuf list = {0};
    for (int i = 1; i < argc && !d.errors; i++) {
        fg_spec *s = fg_spec_load_gemm(argv[i], &d);
        for (unsigned k = 0; s && k < s->gemm->shapes_count; k++) {
            const fg_gemm_shape *sh = &s->gemm->shapes[k];
            fg_sb_printf(&list, "%s%s:%s:%ux%ux%u", list.len ? "," : "", sh->name,
                         fg_collective_name(sh->collective), sh->m, sh->n, sh->k);
        }
        fg_spec_free(s);
    }
    if (!d.errors && !list.len)
        fg_error(&d, "shapes: the specs have no shapes");
    if (!d.errors)
        printf("%s\n", fg_sb_str(&list));
    fg_sb_free(&list);
    return d.errors ? 1 : 0;
}
