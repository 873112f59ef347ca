/* fg_parse_decimal: digits only, in range, and nothing written on a refusal. */
#include <criterion/criterion.h>
#include <string.h>

#include "decimal.h"

Test(decimal, accepts_digits_in_range)
{
    uint64_t v = 0;
    cr_assert(fg_parse_decimal("0", 1, 0, 10, &v) && v == 0);
    cr_assert(fg_parse_decimal("0042", 4, 1, 100, &v) && v == 42);
    cr_assert(fg_parse_decimal("4294967296", 10, 0, UINT64_MAX, &v) && v == 4294967296ull);
    cr_assert(fg_parse_decimal("9999999999999999999", 19, 0, UINT64_MAX, &v) &&
              v == 9999999999999999999ull);
    cr_assert(fg_parse_decimal("12abc", 2, 0, 99, &v) && v == 12, "only the n characters count");
}

Test(decimal, refuses_the_rest)
{
    const char *bad[] = {"", "-1", "+1", " 1", "1 ", "1e3", "0x10", "12345678901234567890"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        cr_assert_not(fg_parse_decimal(bad[i], strlen(bad[i]), 0, UINT64_MAX, &v), "'%s'", bad[i]);
        cr_assert_eq(v, 7, "'%s' wrote the output", bad[i]);
    }
    uint64_t v = 7;
    cr_assert_not(fg_parse_decimal("0", 1, 1, 10, &v), "below min");
    cr_assert_not(fg_parse_decimal("11", 2, 1, 10, &v), "above max");
    cr_assert_eq(v, 7);
}
