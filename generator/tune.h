/* fusegen tune: from compiled tuning candidates to a tuning spec.
 *
 * `make candidates` generates every configuration that plans (generate
 * --candidates) and compiles them through the resource gate, whose manifest
 * marks the candidates and the ones discarded for spilling.  `fusegen tune`
 * times the survivors of each instance family with the GPU test harness
 * (test_decode_attn --bench --quick), checks the fastest against the
 * reference (the harness without --bench), and writes the fastest that
 * passed into the target's tuning spec (specs/tuning/<target>.yaml), merged
 * with the entries of other families already there. */
#ifndef FG_TUNE_H
#define FG_TUNE_H

/* `fusegen tune ...`; argv[0] is "tune".  0 on success, 1 on an error
 * (reported; the tuning spec is left as it was), 2 on bad usage. */
int fg_cmd_tune(int argc, char **argv);

#endif
