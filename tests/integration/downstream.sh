#!/bin/sh
# Downstream use, end to end and without a GPU:
#  1. examples/downstream builds from a copy of itself;
#  2. a second `make` runs nothing;
#  3. touching its spec reruns the generator and recompiles nothing;
#  4. changing a dimension recompiles only the kernel whose source changed;
#  5. `make install PREFIX=...` gives a fusegen that a plain program finds
#     through pkg-config, and the example builds against the installation.
# Prints `N passed, N failed` and exits non-zero on a failure.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/fg-downstream-XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() { # name, then a command that must succeed
    name=$1; shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name"; fi
}

cp -r "$root/examples/downstream" "$work/app"
rm -rf "$work/app/build"
mk() { make --no-print-directory -C "$work/app" FUSEGEN_ROOT="$root" "$@" 2>&1; }

out=$(mk)
check "first build compiles the kernel" sh -c 'printf "%s" "$1" | grep -q "nvcc.*rmsnorm_sm90a_f16_h1024"' _ "$out"
check "first build links the demo" test -x "$work/app/build/demo"
out=$(mk)
check "second make runs nothing" sh -c '! printf "%s" "$1" | grep -qE "fusegen generate|nvcc|cc "' _ "$out"

sleep 1
touch "$work/app/specs/tiny.yaml"
out=$(mk)
check "touched spec regenerates" sh -c 'printf "%s" "$1" | grep -q "fusegen.* generate"' _ "$out"
check "touched spec recompiles nothing" sh -c '! printf "%s" "$1" | grep -qE "nvcc|embed"' _ "$out"

sed -i 's/hidden: 1024/hidden: 2048/' "$work/app/specs/tiny.yaml"
out=$(mk)
check "new dim compiles the new kernel" sh -c 'printf "%s" "$1" | grep -q "nvcc.*rmsnorm_sm90a_f16_h2048"' _ "$out"
check "new dim compiles only that kernel" sh -c '[ "$(printf "%s" "$1" | grep -c "nvcc ")" -eq 1 ]' _ "$out"
check "the demo runs (or reports no device)" "$work/app/build/demo"

prefix="$work/prefix"
check "make install" sh -c 'make --no-print-directory -C "$1" install PREFIX="$2" >/dev/null 2>&1' _ "$root" "$prefix"
cat > "$work/pc.c" <<'C'
#include <fgrt.h>
#include <stdio.h>
int main(void) { printf("%s\n", fg_status_string(FG_ERR_NO_DEVICE)); return 0; }
C
check "pkg-config build" sh -c 'PKG_CONFIG_PATH="$1/lib/pkgconfig" cc -o "$2/pc" "$2/pc.c" $(PKG_CONFIG_PATH="$1/lib/pkgconfig" pkg-config --cflags --libs fusegen) && LD_LIBRARY_PATH="$1/lib" "$2/pc" >/dev/null' _ "$prefix" "$work"
cp -r "$root/examples/downstream" "$work/app2"
rm -rf "$work/app2/build"
check "example against the installation" sh -c 'make --no-print-directory -C "$1" FUSEGEN_PREFIX="$2" >/dev/null 2>&1 && "$1/build/demo" >/dev/null' _ "$work/app2" "$prefix"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
