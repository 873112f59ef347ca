/* Instance names as the GPU tests read them (tests/gpu/names.c), and the
 * harness's line fit (tests/gpu/numerics.c), checked here because the tests
 * themselves need a GPU: --only takes whole names
 * (a block size is a prefix of others: t32 of t320 and t32c), and an
 * RMSNorm kernel file is read with its cached-x suffix. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "harness.h"

Test(harness_names, only_lists_whole_names)
{
    const char *list = "rmsnorm_sm90a_f16_h4096_t32,rmsnorm_sm90a_f16_h4096_t256c";
    cr_expect(fgh_name_listed(list, "rmsnorm_sm90a_f16_h4096_t32"));
    cr_expect(fgh_name_listed(list, "rmsnorm_sm90a_f16_h4096_t256c"));
    cr_expect_not(fgh_name_listed(list, "rmsnorm_sm90a_f16_h4096_t320"), "a longer name");
    cr_expect_not(fgh_name_listed(list, "rmsnorm_sm90a_f16_h4096_t32c"), "the cached twin");
    cr_expect_not(fgh_name_listed(list, "rmsnorm_sm90a_f16_h4096_t256"), "a prefix");
    cr_expect_not(fgh_name_listed(list, "rmsnorm_sm90a_f16_h4096_t3"));
    cr_expect_not(fgh_name_listed("", "rmsnorm_sm90a_f16_h4096_t32"));
    cr_expect(fgh_name_listed("a,,b,", "b"), "empty parts are skipped");
    cr_expect_not(fgh_name_listed("a,,b,", ""), "an empty name is never listed");
}

/* The MLA harness's --only: whole names alone where a part is one (a
 * planner's name begins its candidates' and c8x1 begins c8x14), else the
 * names containing the part. */
Test(harness_names, only_chooses_whole_names_else_parts)
{
    const char *names[] = {"mla_x_b1_g16_c8x1", "mla_x_b1_g16_c8x1_n3", "mla_x_b1_g16_c8x14_n4",
                           "mla_x_b1_g64_c2x2"};
    const size_t n = sizeof names / sizeof names[0];
    bool c[4];
    fgh_names_chosen("mla_x_b1_g16_c8x1", names, n, c);
    cr_expect(c[0]);
    cr_expect_not(c[1], "begun by the part");
    cr_expect_not(c[2]);
    fgh_names_chosen("mla_x_b1_g16_c8x1,mla_x_b1_g64_c2x2", names, n, c);
    cr_expect(c[3]);
    fgh_names_chosen("_g16_", names, n, c);
    cr_expect(c[0], "a part selects what contains it");
    cr_expect(c[2]);
    cr_expect_not(c[3]);
    fgh_names_chosen("c8x1", names, n, c);
    cr_expect(c[2], "c8x1 is no whole name: a part");
    fgh_names_chosen("", names, n, c);
    cr_expect_not(c[0], "an empty list selects nothing");
    fgh_names_chosen(",,", names, n, c);
    cr_expect_not(c[0]);
}

/* --only's parts that choose nothing are named (a part ending where a tuned
 * name's configuration begins still chooses it). */
Test(harness_names, only_names_parts_that_match_nothing)
{
    const char *names[] = {"grid_t512_k128q4o4u8_norm_det", "grid_t512_k128q4o4u8_norm", "ring_norm"};
    const size_t n = sizeof names / sizeof names[0];
    char out[64];
    cr_expect_eq(fgh_names_unmatched("grid_t512_,ring_norm", names, n, out, sizeof out), 0u);
    cr_expect_str_eq(out, "");
    cr_expect_eq(fgh_names_unmatched("grid_t512_norm_det,ring_norm,,x", names, n, out, sizeof out), 2u);
    cr_expect_str_eq(out, "grid_t512_norm_det,x");
    cr_expect_eq(fgh_names_unmatched("aaaa,bbbb", names, n, out, 6), 2u, "counted past the cut");
    cr_expect_str_eq(out, "aaaa,");
}

Test(harness_names, rmsnorm_files)
{
    fgh_rmsnorm_file f;
    cr_assert(fgh_rmsnorm_parse("rmsnorm_sm90a_f16_h4096_t128.cubin", &f));
    cr_expect_str_eq(f.name, "rmsnorm_sm90a_f16_h4096_t128");
    cr_expect_str_eq(f.arch, "sm90a");
    cr_expect_eq(f.dt, FGH_F16);
    cr_expect_eq(f.hidden, 4096);
    cr_expect_eq(f.threads, 128);
    cr_expect_not(f.cache_x);
    cr_assert(fgh_rmsnorm_parse("rmsnorm_sm90a_bf16_h7168_t256c.cubin", &f));
    cr_expect_str_eq(f.name, "rmsnorm_sm90a_bf16_h7168_t256c");
    cr_expect_eq(f.dt, FGH_BF16);
    cr_expect_eq(f.hidden, 7168);
    cr_expect_eq(f.threads, 256);
    cr_expect(f.cache_x);
    const char *other[] = {
        "rmsnorm_sm90a_f16_h4096_t128.cubin.log", "rmsnorm_sm90a_f16_h4096_t128.cu",
        "rmsnorm_sm90a_f16_h4096_t128x.cubin",    "rmsnorm_sm90a_f16_h4096_t128cc.cubin",
        "rmsnorm_sm90a_f32_h4096_t128.cubin",     "rmsnorm_sm90a_f16_h4096.cubin",
        "rmsnorm_sm90a_f16_h-4096_t128.cubin",    "decode_attn_sm90a_f16_h4096_nh32.cubin",
        ".cubin",                                 "rmsnorm_gfx942_f16_h4096_t128.co",
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        cr_expect_not(fgh_rmsnorm_parse(other[i], &f), "%s", other[i]);
}

/* The harness's least-squares line (test_mla_decode's T0 + bytes / BW,
 * test_overlap's copy-engine fit): exact on a line, points below the floor
 * and non-finite times left out, NaN where no line can be fitted. */
Test(harness_names, fit_line)
{
    const double bytes[] = {1e3, 1e6, 4e6, 16e6, 64e6};
    double us[5];
    for (int i = 0; i < 5; i++)
        us[i] = 7.5 + bytes[i] / (2500.0 * 1e3);   /* 7.5 us + bytes / 2500 GB/s */
    double t0, bw;
    cr_assert(fgh_fit_line(bytes, us, 5, 0, &t0, &bw));
    cr_expect_float_eq(t0, 7.5, 1e-9);
    cr_expect_float_eq(bw, 2500.0, 1e-6);
    us[0] = 1e9;   /* below the floor: ignored */
    us[4] = NAN;   /* not finite: ignored */
    cr_assert(fgh_fit_line(bytes, us, 5, 1e6, &t0, &bw));
    cr_expect_float_eq(t0, 7.5, 1e-9);
    cr_expect_float_eq(bw, 2500.0, 1e-6);
    cr_expect_not(fgh_fit_line(bytes, us, 5, 5e6, &t0, &bw), "one point above the floor");
    cr_expect(isnan(t0) && isnan(bw));
    const double flat[] = {3, 3, 3};
    cr_expect_not(fgh_fit_line(bytes, flat, 3, 0, &t0, &bw), "no positive slope");
    /* over every point, with their count (the benchmarks' fits) */
    us[0] = 7.5 + bytes[0] / (2500.0 * 1e3), us[4] = 7.5 + bytes[4] / (2500.0 * 1e3);
    const fgh_fit f = fgh_fit_points(bytes, us, 5);
    cr_expect(f.points == 5);
    cr_expect_float_eq(f.t0_us, 7.5, 1e-9);
    cr_expect_float_eq(f.bw_gbps, 2500.0, 1e-6);
    const fgh_fit one = fgh_fit_points(bytes, us, 1);
    cr_expect(one.points == 1 && isnan(one.t0_us) && isnan(one.bw_gbps), "one point: no fit");
}

/* The options every GPU test takes: each consumed with its value, the test's
 * own left to it, a missing value refused. */
Test(harness_names, common_args)
{
    char *argv[] = {"t",      "--kernels", "k",    "--smallest", "--seed", "0x10", "--only",
                    "a,b",    "--bench",   "--no-baseline", "--quick", "--verbose", "--json",
                    "j.json", "--commit",  "c1",   "--manifest", "m.json", "--json"};
    const int argc = sizeof argv / sizeof argv[0];
    fgh_args a;
    fgh_args_init(&a);
    cr_expect(a.baseline && !a.bench && !a.seed_set);
    int i = 1;
    cr_expect(fgh_common_arg(&a, argc, argv, &i) && i == 2 && !strcmp(a.kernels, "k"));
    i = 3;
    cr_expect_not(fgh_common_arg(&a, argc, argv, &i), "a test's own option");
    cr_expect_eq(i, 3);
    for (i = 4; i < argc - 1; i++)
        cr_expect(fgh_common_arg(&a, argc, argv, &i), "%s", argv[i]);
    cr_expect(a.seed_set && a.seed == 16);
    cr_expect_str_eq(a.only, "a,b");
    cr_expect(a.bench && !a.baseline && a.quick && a.verbose);
    cr_expect_str_eq(a.json, "j.json");
    cr_expect_str_eq(a.commit, "c1");
    cr_expect_str_eq(a.manifest, "m.json");
    i = argc - 1;
    cr_expect_not(fgh_common_arg(&a, argc, argv, &i), "--json without its value");
}
