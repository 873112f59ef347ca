/* Decimal numbers in text the generator reads (command-line options, the
 * compilers' resource reports): digits only, in a range. */
#ifndef FG_DECIMAL_H
#define FG_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The n characters at s as a decimal number from min to max: digits only (no
 * sign, blank or leading +), at most 19 of them.  false, and *out untouched,
 * otherwise. */
bool fg_parse_decimal(const char *s, size_t n, uint64_t min, uint64_t max, uint64_t *out);

#endif
