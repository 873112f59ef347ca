#ifndef FG_EMBED_H
#define FG_EMBED_H

#include <stddef.h>

#include "strbuf.h"

/* C source defining fg_image_<name>[] and fg_image_<name>_size; -1 if the
 * name is not an instance name. */
int fg_embed_source(const char *name, const unsigned char *data, size_t len, fg_strbuf *sb);
int fg_cmd_embed(int argc, char **argv);

#endif
