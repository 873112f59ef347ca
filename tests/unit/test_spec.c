/* Spec loading: every shipped spec loads with its published values; every
 * spec of the bad corpus fails with exactly the message and location its
 * first line expects, and loads nothing. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

static fg_spec *load_quiet(const char *path, fg_diag *d)
{
    fg_diag_init(d, NULL);
    return fg_spec_load(path, d);
}

Test(spec, llama_2_7b_values)
{
    fg_diag d;
    fg_spec *s = load_quiet("specs/models/llama-2-7b.yaml", &d);
    cr_assert_not_null(s, "%s", d.first);
    cr_assert_eq(s->kind, FG_SPEC_MODEL);
    cr_assert_str_eq(s->model->name, "llama-2-7b");
    cr_assert_eq(s->model->family, FG_FAMILY_LLAMA);
    cr_assert_eq(s->model->dtype, FG_DT_F16);
    cr_assert_eq(s->model->hidden, 4096);
    cr_assert_eq(s->model->attention->heads, 32);
    cr_assert_eq(s->model->attention->kv_heads, 32);
    cr_assert_eq(s->model->attention->head_dim, 128);
    cr_assert_eq(s->model->rope->layout, FG_ROPE_NEOX);
    cr_assert_null(s->model->rope->scaling);
    fg_spec_free(s);
}

Test(spec, deepseek_v2_lite_has_no_q_lora_and_yarn)
{
    fg_diag d;
    fg_spec *s = load_quiet("specs/models/deepseek-v2-lite.yaml", &d);
    cr_assert_not_null(s, "%s", d.first);
    const fg_mla *m = s->model->mla;
    cr_assert_not_null(m);
    cr_assert_eq(m->q_lora_rank, 0);
    cr_assert_eq(m->kv_lora_rank, 512);
    cr_assert_eq(m->qk_rope_head_dim, 64);
    cr_assert_eq(m->tensor_parallel, 1);
    cr_assert_eq(s->model->rope->scaling->type, FG_SCALING_YARN);
    cr_assert_float_eq(s->model->rope->scaling->factor, 40.0, 1e-12);
    fg_spec_free(s);
}

Test(spec, gemm_shapes_and_target)
{
    fg_diag d;
    fg_spec *g = load_quiet("specs/gemm/llama-2-70b-tp2.yaml", &d);
    cr_assert_not_null(g, "%s", d.first);
    cr_assert_eq(g->gemm->world_size, 2);
    cr_assert_geq(g->gemm->shapes_count, 10);
    cr_assert_str_eq(g->gemm->shapes[0].name, "qkv-m4096");
    cr_assert_eq(g->gemm->shapes[0].collective, FG_COLL_ALL_GATHER);
    cr_assert_eq(g->gemm->shapes[0].n, 5120);
    fg_spec_free(g);
    fg_spec *t = load_quiet("specs/targets/mi250.yaml", &d);
    cr_assert_not_null(t, "%s", d.first);
    cr_assert_eq(t->target->arch, FG_ARCH_GFX90A);
    cr_assert_eq(t->target->compute_units, 110);
    cr_assert_eq(t->target->warp_size, 64);
    fg_spec_free(t);
}

/* Calls fn(path) for every *.yaml under dir; returns how many. */
static int each_yaml(const char *dir, void (*fn)(const char *path))
{
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp, "cannot open %s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        fn(path);
        n++;
    }
    closedir(dp);
    return n;
}

static void expect_loads(const char *path)
{
    fg_diag d;
    fg_spec *s = load_quiet(path, &d);
    cr_expect_not_null(s, "%s did not load: %s", path, d.first);
    cr_expect_eq(d.errors, 0, "%s", path);
    fg_spec_free(s);
}

Test(spec, every_shipped_spec_loads)
{
    cr_assert_geq(each_yaml("specs/models", expect_loads), 8);
    cr_assert_geq(each_yaml("specs/gemm", expect_loads), 2);
    cr_assert_geq(each_yaml("specs/targets", expect_loads), 4);
    cr_assert_geq(each_yaml("specs/tuning", expect_loads), 1);
}

static void expect_exact_error(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char line[512] = "";
    cr_assert_not_null(fgets(line, sizeof line, f));
    fclose(f);
    const char *prefix = "# expect: ";
    cr_assert(strncmp(line, prefix, strlen(prefix)) == 0, "%s: first line must be '# expect: '",
              path);
    line[strcspn(line, "\n")] = '\0';
    char want[1024];
    snprintf(want, sizeof want, "%s:%s", path, line + strlen(prefix));

    fg_diag d;
    fg_spec *s = load_quiet(path, &d);
    cr_expect_null(s, "%s loaded but must fail", path);
    fg_spec_free(s);
    cr_expect_geq(d.errors, 1, "%s", path);
    cr_expect_str_eq(d.first, want, "%s:\n got  %s\n want %s", path, d.first, want);
}

Test(spec, bad_corpus_exact_messages)
{
    cr_assert_geq(each_yaml("tests/specs/bad", expect_exact_error), 20);
}

Test(spec, missing_file)
{
    fg_diag d;
    cr_assert_null(load_quiet("tests/specs/no-such-file.yaml", &d));
    cr_assert_str_eq(d.first, "tests/specs/no-such-file.yaml: error: cannot open: No such file "
                              "or directory");
}

Test(spec, enum_names_round_trip)
{
    cr_assert_str_eq(fg_dtype_name(FG_DT_BF16), "bf16");
    cr_assert_str_eq(fg_arch_name(FG_ARCH_GFX942), "gfx942");
    cr_assert_str_eq(fg_arch_tag(FG_ARCH_SM90A), "sm90a");
    cr_assert(fg_arch_is_amd(FG_ARCH_GFX90A));
    cr_assert_not(fg_arch_is_amd(FG_ARCH_SM90A));
    cr_assert_str_eq(fg_scaling_name(FG_SCALING_LLAMA3), "llama3");
    cr_assert_str_eq(fg_collective_name(FG_COLL_REDUCE_SCATTER), "reduce_scatter");
}

/* A tuning spec holds entries of every kind: the ring form's (as before
 * rmsnorm entries existed: no cache_x), RMSNorm's (threads, and cache_x
 * true or absent, which is false) and the MLA core's. */
Test(spec, tuning_entries_of_every_kind)
{
    static const char text[] =
        "schema_version: 1\ntuning:\n  target: h200\n  entries:\n"
        "    - family: decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_c2x2\n"
        "      threads: 512\n      stage_bytes: 20480\n      stages: 8\n      in_flight: 8\n"
        "      in_flight_wo: 4\n      tuned_us: 90\n      model_us: 100\n      worst_us: 120\n"
        "      candidates: 3\n      measured: \"x\"\n"
        "    - family: rmsnorm_sm90a_f16_h4096\n      threads: 256\n      cache_x: true\n"
        "      tuned_us: 20.5\n      model_us: 22\n      worst_us: 40\n      candidates: 32\n"
        "      measured: \"y\"\n"
        "    - family: rmsnorm_sm90a_bf16_h512\n      threads: 64\n"
        "      tuned_us: 3\n      model_us: 4\n      worst_us: 5\n      candidates: 4\n"
        "      measured: \"z\"\n"
        "    - family: mla_decode_sm90a_bf16_nh16_kv512_r64_s16384_p64_b16\n      threads: 256\n"
        "      heads_per_block: 16\n      stages: 4\n      cluster: 2\n      clusters: 2\n"
        "      tuned_us: 80\n      model_us: 86\n      worst_us: 120\n      candidates: 21\n"
        "      measured: \"w\"\n"
        "    - family: decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b16_grid\n      threads: 512\n"
        "      step_cols: 128\n      slices_qkv: 16\n      slices_o: 4\n      key_rounds: 6\n"
        "      tuned_us: 300\n      model_us: 310\n      worst_us: 400\n      candidates: 71\n"
        "      measured: \"v\"\n"
        "    - family: overlap_reduce_sm90a_bf16_w2\n      threads: 512\n      blocks_per_cu: 4\n"
        "      tuned_us: 40\n      model_us: 41\n      worst_us: 60\n      candidates: 23\n"
        "      measured: \"u\"\n";
    fg_diag d;
    fg_diag_init(&d, NULL);
    fg_spec *s = fg_spec_load_text("t.yaml", text, sizeof text - 1, &d);
    cr_assert_not_null(s, "%s", d.first);
    cr_assert_eq(s->kind, FG_SPEC_TUNING);
    cr_assert_eq(s->tuning->entries_count, 6);
    const fg_tuning_entry *ring = &s->tuning->entries[0], *rms = &s->tuning->entries[1],
                          *rms2 = &s->tuning->entries[2], *mla = &s->tuning->entries[3],
                          *grid = &s->tuning->entries[4], *reduce = &s->tuning->entries[5];
    cr_expect_eq(fg_tuning_kind_of(ring->family), FG_TUNE_RING);
    cr_expect_eq(ring->stage_bytes, 20480);
    cr_expect_eq(ring->in_flight_wo, 4);
    cr_expect_not(ring->cache_x);
    cr_expect_eq(fg_tuning_kind_of(rms->family), FG_TUNE_RMSNORM);
    cr_expect_eq(rms->threads, 256);
    cr_expect(rms->cache_x);
    cr_expect_eq(rms->stage_bytes, 0);
    cr_expect_eq(rms->stages, 0);
    cr_expect_eq(rms2->threads, 64);
    cr_expect_not(rms2->cache_x, "absent: x streamed");
    cr_expect_eq(fg_tuning_kind_of(mla->family), FG_TUNE_MLA);
    cr_expect_eq(mla->heads_per_block, 16);
    cr_expect_eq(mla->stages, 4);
    cr_expect_eq(mla->cluster, 2);
    cr_expect_eq(mla->clusters, 2);
    cr_expect_eq(fg_tuning_kind_of(grid->family), FG_TUNE_GRID);
    cr_expect_eq(grid->step_cols, 128);
    cr_expect_eq(grid->slices_qkv, 16);
    cr_expect_eq(grid->slices_o, 4);
    cr_expect_eq(grid->key_rounds, 6);
    cr_expect_eq(grid->stages, 0);
    cr_expect_eq(fg_tuning_kind_of(reduce->family), FG_TUNE_REDUCE);
    cr_expect_eq(reduce->threads, 512);
    cr_expect_eq(reduce->blocks_per_cu, 4);
    cr_expect_eq(grid->blocks_per_cu, 0);
    cr_expect_eq(fg_tuning_kind_of("decode_attn_grid"), FG_TUNE_RING, "no family part before");
    cr_expect_eq(fg_tuning_kind_of("overlap_reduce_sm90a_bf16_w2"), FG_TUNE_REDUCE);
    cr_expect_eq(fg_tuning_kind_of("rope_sm90a_f16_h4096"), FG_TUNE_NONE);
    fg_spec_free(s);
}
