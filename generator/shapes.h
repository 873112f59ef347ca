/* fusegen shapes: the shapes of GEMM-overlap specs as test_overlap's
 * --bench-shapes list, read by the spec parser (not a second one). */
#ifndef FG_SHAPES_H
#define FG_SHAPES_H

int fg_cmd_shapes(int argc, char **argv);

#endif
