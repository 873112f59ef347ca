/* fusegen tune: from compiled tuning candidates to a tuning spec.
 *
 * `make candidates` generates every configuration that plans (generate
 * --candidates) and compiles them through the resource gate, whose manifest
 * marks the candidates and the ones discarded for spilling.  `fusegen tune`
 * times the survivors of each instance family with the GPU test harness of
 * its kind (the decode ring's with test_decode_attn, RMSNorm's with
 * test_rmsnorm; both run as HARNESS --only NAMES --bench --quick
 * --no-baseline), checks the fastest against the reference (the harness
 * with --only NAME alone), and writes the fastest that passed into the
 * target's tuning spec (specs/tuning/<target>.yaml), merged with the entries
 * of other families already there.  The kinds differ only in a table in
 * tune.c: the harness, the point their cases are timed at, and the
 * configuration's fields. */
#ifndef FG_TUNE_H
#define FG_TUNE_H

/* `fusegen tune ...`; argv[0] is "tune".  0 on success, 1 on an error
 * (reported; the tuning spec is left as it was), 2 on bad usage. */
int fg_cmd_tune(int argc, char **argv);

#endif
