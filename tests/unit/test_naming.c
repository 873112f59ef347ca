/* Instance naming: one grammar, valid symbols, long names shortened with a
 * stable hash. */
#include <criterion/criterion.h>
#include <string.h>

#include "instance.h"

Test(naming, grammar)
{
    char n[FG_NAME_MAX];
    cr_assert(fg_instance_name(n, "decode_attn", FG_ARCH_SM90A, "f16", "h4096_nh32_nkv32_hd128",
                               "c4"));
    cr_assert_str_eq(n, "decode_attn_sm90a_f16_h4096_nh32_nkv32_hd128_c4");
    cr_assert(fg_instance_name(n, "rmsnorm", FG_ARCH_GFX942, "bf16", "h2048", ""));
    cr_assert_str_eq(n, "rmsnorm_gfx942_bf16_h2048");
}

Test(naming, rejects_characters_outside_symbols)
{
    char n[FG_NAME_MAX];
    cr_assert_not(fg_instance_name(n, "rms-norm", FG_ARCH_SM90A, "f16", "h1", ""));
    cr_assert_not(fg_instance_name(n, "rmsnorm", FG_ARCH_SM90A, "f16", "h1/../x", ""));
    cr_assert_not(fg_instance_name(n, "Rmsnorm", FG_ARCH_SM90A, "f16", "h1", ""));
}

Test(naming, long_names_keep_prefix_and_hash)
{
    char dims[200], a[FG_NAME_MAX], b[FG_NAME_MAX], c[FG_NAME_MAX];
    memset(dims, 'x', sizeof dims - 1);
    dims[sizeof dims - 1] = '\0';
    cr_assert(fg_instance_name(a, "mla_decode", FG_ARCH_GFX942, "bf16", dims, "v1"));
    cr_assert(fg_instance_name(b, "mla_decode", FG_ARCH_GFX942, "bf16", dims, "v1"));
    cr_assert(fg_instance_name(c, "mla_decode", FG_ARCH_GFX942, "bf16", dims, "v2"));
    cr_assert_eq(strlen(a), FG_NAME_LIMIT);
    cr_assert_str_eq(a, b, "the hash must be stable");
    cr_assert_str_neq(a, c, "different full names must differ after shortening");
    cr_assert(strncmp(a, "mla_decode_gfx942_bf16_xxx", 26) == 0, "readable prefix kept: %s", a);
    const char *hash = a + FG_NAME_LIMIT - 8;
    cr_assert_eq(hash[-1], '_');
    for (int i = 0; i < 8; i++)
        cr_assert(strchr("0123456789abcdef", hash[i]), "hex hash: %s", a);
}

Test(naming, exactly_at_limit_is_kept_whole)
{
    char dims[FG_NAME_MAX], n[FG_NAME_MAX];
    /* "rmsnorm_sm90a_f16_" is 18 characters */
    memset(dims, 'y', FG_NAME_LIMIT - 18);
    dims[FG_NAME_LIMIT - 18] = '\0';
    cr_assert(fg_instance_name(n, "rmsnorm", FG_ARCH_SM90A, "f16", dims, ""));
    cr_assert_eq(strlen(n), FG_NAME_LIMIT);
    cr_assert_eq(n[FG_NAME_LIMIT - 1], 'y');
}
