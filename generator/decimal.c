#include "decimal.h"

bool fg_parse_decimal(const char *s, size_t n, uint64_t min, uint64_t max, uint64_t *out)
{
    if (n == 0 || n > 19)   /* 19 digits always fit in 64 bits */
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v < min || v > max)
        return false;
    *out = v;
    return true;
}
