/* fusegen profile: the overlap cost model's measurements into a target spec.
 *
 * Runs the GPU harness's profile mode (test_overlap --profile) on a machine
 * with two GPUs of the target: the peer-copy curve over the copy engine (one
 * way and both ways at once, 64 KB to 256 MB), the time of every GEMM the
 * given overlap specs' schedules run (each shape whole and split over its
 * world size), and a GEMM's slowdown while copies stream.  The fit and the
 * GEMM times replace the target spec's `interconnect:` block; every other
 * byte of the file stays. */
#ifndef FG_PROFILE_H
#define FG_PROFILE_H

/* `fusegen profile ...`; argv[0] is "profile".  0 on success, 1 on an error
 * (reported; the target spec is left as it was), 2 on bad usage. */
int fg_cmd_profile(int argc, char **argv);

#endif
