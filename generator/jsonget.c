#include "jsonget.h"

#include <math.h>

json_object *fg_json_get(json_object *o, const char *key)
{
    json_object *v = NULL;
    return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

const char *fg_json_str(json_object *o, const char *key)
{
    json_object *v = fg_json_get(o, key);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

double fg_json_num(json_object *o, const char *key)
{
    json_object *v = fg_json_get(o, key);
    return v && (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int))
               ? json_object_get_double(v)
               : NAN;
}

long long fg_json_int(json_object *o, const char *key)
{
    json_object *v = fg_json_get(o, key);
    return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
}

bool fg_json_true(json_object *o, const char *key)
{
    json_object *v = fg_json_get(o, key);
    return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}
