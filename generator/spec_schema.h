/* libcyaml schemas of the spec format (spec_schema.c) and the enum names
 * they define.  Only spec.c needs the schemas themselves. */
#ifndef FG_SPEC_SCHEMA_H
#define FG_SPEC_SCHEMA_H

#include <cyaml/cyaml.h>

#include "spec.h"

#define FG_MAX_BATCH_SIZES 16
#define FG_MAX_GEMM_SHAPES 64
#define FG_MAX_TUNING_ENTRIES 4096

extern const cyaml_schema_value_t fg_spec_schema;
extern const cyaml_strval_t fg_dtype_strings[];
extern const unsigned fg_dtype_strings_count;
extern const cyaml_strval_t fg_arch_strings[];
extern const unsigned fg_arch_strings_count;

const char *fg_enum_string(const cyaml_strval_t *strings, unsigned count, int value);

#endif
