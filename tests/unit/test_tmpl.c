/* Templates: strict placeholders, #line directives back to the template. */
#include <criterion/criterion.h>
#include <string.h>

#include "tmpl.h"

static int render(const char *text, const fg_tmpl_value *v, size_t n, fg_strbuf *out, fg_diag *d)
{
    fg_diag_init(d, NULL);
    return fg_tmpl_render_text("templates/t.in", text, v, n, out, d);
}

Test(tmpl, substitutes_and_marks_lines)
{
    fg_tmpl_value v[] = {{"NAME", "k1"}, {"N", "42"}};
    fg_strbuf out = {0};
    fg_diag d;
    cr_assert_eq(render("void {{NAME}}() {\n  int a = {{N}} + {{N}};\n}\n", v, 2, &out, &d), 0,
                 "%s", d.first);
    cr_assert_str_eq(fg_sb_str(&out),
                     "#line 1 \"templates/t.in\"\nvoid k1() {\n  int a = 42 + 42;\n}\n");
    fg_sb_free(&out);
}

Test(tmpl, unknown_placeholder_is_an_error_with_location)
{
    fg_tmpl_value v[] = {{"NAME", "k1"}};
    fg_strbuf out = {0};
    fg_diag d;
    cr_assert_neq(render("void {{NAME}}()\n  {{MISSING}};\n", v, 1, &out, &d), 0);
    cr_assert_str_eq(d.first, "templates/t.in:2:3: error: no value for placeholder {{MISSING}}");
    cr_assert_eq(out.len, 0, "nothing is appended on error");
    fg_sb_free(&out);   /* (a failed render keeps the buffer's room) */
}

Test(tmpl, unused_value_is_an_error)
{
    fg_tmpl_value v[] = {{"NAME", "k1"}, {"EXTRA", "1"}};
    fg_strbuf out = {0};
    fg_diag d;
    cr_assert_neq(render("void {{NAME}}();\n", v, 2, &out, &d), 0);
    cr_assert_str_eq(d.first, "templates/t.in: error: value 'EXTRA' is not used by the template");
    fg_sb_free(&out);   /* (a failed render keeps the buffer's room) */
}

Test(tmpl, malformed_placeholder)
{
    fg_strbuf out = {0};
    fg_diag d;
    cr_assert_neq(render("a {{lower}} b\n", NULL, 0, &out, &d), 0);
    cr_assert_str_eq(d.first, "templates/t.in:1:3: error: malformed placeholder; expected "
                              "{{NAME}} with NAME in [A-Z0-9_]");
    fg_sb_free(&out);   /* (a failed render keeps the buffer's room) */
}

Test(tmpl, multi_line_value_resyncs_line_numbers)
{
    fg_tmpl_value v[] = {{"BODY", "x();\ny();\n"}, {"N", "7"}};
    fg_strbuf out = {0};
    fg_diag d;
    cr_assert_eq(render("begin\n    {{BODY}}\nend {{N}}\n", v, 2, &out, &d), 0, "%s", d.first);
    cr_assert_str_eq(fg_sb_str(&out), "#line 1 \"templates/t.in\"\nbegin\n    x();\ny();\n"
                                      "#line 3 \"templates/t.in\"\nend 7\n");
    fg_sb_free(&out);
}

Test(tmpl, multi_line_value_must_stand_alone)
{
    fg_tmpl_value v[] = {{"BODY", "x();\ny();"}};
    fg_strbuf out = {0};
    fg_diag d;
    cr_assert_neq(render("int a; {{BODY}}\n", v, 1, &out, &d), 0);
    cr_assert_str_eq(d.first, "templates/t.in:1:8: error: placeholder {{BODY}} takes several "
                              "lines and must stand alone on its line");
    fg_sb_free(&out);   /* (a failed render keeps the buffer's room) */
}

Test(tmpl, shipped_templates_render)
{
    fg_tmpl_value cuda[] = {{"DTYPE", "F16"}};
    fg_tmpl_value hip[] = {{"DTYPE", "BF16"}, {"WAVE_SIZE", "64"}};
    fg_tmpl_value rms[] = {{"NAME", "k"}, {"HIDDEN", "4096"}, {"THREADS", "128"},
                           {"VECS", "512"}, {"ITEMS", "4"}, {"TAIL", "0"}, {"CACHE_X", "0"}};
    fg_strbuf out = {0};
    fg_diag d;
    fg_diag_init(&d, NULL);
    cr_assert_eq(fg_tmpl_render("templates", "prelude.cu.in", cuda, 1, &out, &d), 0, "%s",
                 d.first);
    cr_assert_eq(fg_tmpl_render("templates", "prelude.hip.in", hip, 2, &out, &d), 0, "%s",
                 d.first);
    cr_assert_eq(fg_tmpl_render("templates", "rmsnorm.in", rms, 7, &out, &d), 0, "%s", d.first);
    cr_assert(strstr(fg_sb_str(&out), "#line 1 \"templates/rmsnorm.in\""));
    cr_assert_null(strstr(fg_sb_str(&out), "{{"), "no placeholder left");
    fg_sb_free(&out);
}

/* The text of `name` in a fresh folder (made once per test). */
static void put(const char *dir, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static void unput(const char *dir, const char *const *names)
{
    char path[256];
    for (; *names; names++) {
        snprintf(path, sizeof path, "%s/%s", dir, *names);
        remove(path);
    }
    remove(dir);
}

/* {{> NAME}} alone on its line renders the partial there with the same
 * values (a value only the partial takes counts as used), #line naming the
 * partial, then back to the including template's numbering. */
Test(tmpl, partial_renders_in_place)
{
    char dir[] = "/tmp/fg-tmpl-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    put(dir, "main.in", "int a = {{N}};\n  {{> part.in}}\nint c;\n");
    put(dir, "part.in", "int b = {{M}};\n");
    fg_tmpl_value v[] = {{"N", "1"}, {"M", "2"}};
    fg_strbuf out = {0};
    fg_diag d;
    fg_diag_init(&d, NULL);
    cr_assert_eq(fg_tmpl_render(dir, "main.in", v, 2, &out, &d), 0, "%s", d.first);
    cr_assert_str_eq(fg_sb_str(&out), "#line 1 \"templates/main.in\"\nint a = 1;\n  \n"
                                      "#line 1 \"templates/part.in\"\nint b = 2;\n"
                                      "#line 3 \"templates/main.in\"\nint c;\n");
    fg_sb_free(&out);
    unput(dir, (const char *[]){"main.in", "part.in", NULL});
}

/* A partial that is missing, nested, not alone on its line, or given with no
 * template folder is an error with its location. */
Test(tmpl, partial_errors)
{
    char dir[] = "/tmp/fg-tmpl-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    put(dir, "missing.in", "x\n{{> nope.in}}\n");
    put(dir, "nested.in", "{{> inner.in}}\n");
    put(dir, "outer.in", "{{> nested.in}}\n");
    put(dir, "inline.in", "int a; {{> nested.in}}\n");
    fg_strbuf out = {0};
    fg_diag d;
    fg_diag_init(&d, NULL);
    cr_expect_neq(fg_tmpl_render(dir, "missing.in", NULL, 0, &out, &d), 0);
    cr_expect(strstr(d.first, "templates/missing.in:2:1: error: cannot read the partial"), "%s",
              d.first);
    fg_diag_init(&d, NULL);
    cr_expect_neq(fg_tmpl_render(dir, "outer.in", NULL, 0, &out, &d), 0);
    cr_expect(strstr(d.first, "templates/nested.in:1:1: error: a partial (inner.in) inside a "
                              "partial: one level only"), "%s", d.first);
    fg_diag_init(&d, NULL);
    cr_expect_neq(fg_tmpl_render(dir, "inline.in", NULL, 0, &out, &d), 0);
    cr_expect(strstr(d.first, "templates/inline.in:1:8: error: malformed partial"), "%s", d.first);
    cr_expect_neq(render("{{> x.in}}\n", NULL, 0, &out, &d), 0);
    cr_expect(strstr(d.first, "needs a template folder"), "%s", d.first);
    cr_expect_eq(out.len, 0, "nothing written");
    fg_sb_free(&out);
    unput(dir, (const char *[]){"missing.in", "nested.in", "outer.in", "inline.in", NULL});
}
