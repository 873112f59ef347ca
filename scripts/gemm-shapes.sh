#!/bin/sh
# Prints the shapes of GEMM-overlap specs as test_overlap's --bench-shapes
# list, "NAME:all_gather|reduce_scatter:MxNxK,...", in file order:
#   build/gpu/test_overlap --bench --bench-shapes "$(scripts/gemm-shapes.sh bench/sweeps/overlap-tp2-fit.yaml)"
# It reads the one-line shape entries the committed specs use
# ("- {name: N, collective: C, m: M, n: N, k: K}") and fails on a shape entry
# written any other way; validate the spec with `fusegen explain` first.
set -eu
if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,7s/^# \{0,1\}//p' "$0"
    [ $# -eq 0 ] && exit 2 || exit 0
fi
awk '
/^[ \t]*-[ \t]*\{[ \t]*name:/ {
    line = $0
    gsub(/[ \t]/, "", line)
    if (line !~ /^-\{name:[a-z0-9._-]+,collective:(all_gather|reduce_scatter),m:[0-9]+,n:[0-9]+,k:[0-9]+\}$/) {
        printf "gemm-shapes: %s:%d: not a one-line shape entry: %s\n", FILENAME, FNR, $0 > "/dev/stderr"
        bad = 1
        exit 1
    }
    split(substr(line, 3, length(line) - 3), f, ",")
    for (i = 1; i <= 5; i++) sub(/^[a-z]+:/, "", f[i])
    out = out (out == "" ? "" : ",") f[1] ":" f[2] ":" f[3] "x" f[4] "x" f[5]
}
END {
    if (bad) exit 1
    if (out == "") { print "gemm-shapes: no shape entries" > "/dev/stderr"; exit 1 }
    print out
}' "$@"
