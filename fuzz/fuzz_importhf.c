/* libFuzzer target: the Hugging Face config.json importer on arbitrary
 * bytes; a config it accepts must give YAML that the spec loader reads
 * without crashing (it may still reject it by the spec's range rules). */
#include <stddef.h>
#include <stdint.h>

#include "importhf.h"
#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fg_diag d;
    fg_diag_init(&d, NULL);
    fg_strbuf yaml = {0};
    if (fg_import_hf_text("config.json", (const char *)data, size, NULL, &yaml, &d) == 0) {
        fg_spec *s = fg_spec_load_text("imported.yaml", fg_sb_str(&yaml), yaml.len, &d);
        fg_spec_free(s);
    }
    fg_sb_free(&yaml);
    return 0;
}
