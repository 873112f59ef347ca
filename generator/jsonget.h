/* Reading json-c documents without repeating the checks: each accessor
 * gives NULL, NaN or -1 where the key is missing or holds another type. */
#ifndef FG_JSONGET_H
#define FG_JSONGET_H

#include <json-c/json.h>
#include <stdbool.h>

json_object *fg_json_get(json_object *o, const char *key);   /* o may be NULL */
const char *fg_json_str(json_object *o, const char *key);
double fg_json_num(json_object *o, const char *key);         /* int or double */
long long fg_json_int(json_object *o, const char *key);      /* int only */
bool fg_json_true(json_object *o, const char *key);          /* a boolean true */

#endif
