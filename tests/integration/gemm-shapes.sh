#!/bin/sh
# scripts/gemm-shapes.sh: the sweep specs' shapes as test_overlap's
# --bench-shapes list, and a refusal (exit 1, nothing on stdout) for a shape
# entry it cannot read.
set -u
cd "$(dirname "$0")/../.." || exit 1
fail() { echo "gemm-shapes test: FAILED: $*"; exit 1; }
fit=$(scripts/gemm-shapes.sh bench/sweeps/overlap-tp2-fit.yaml) || fail "the fit sweep"
[ "$(echo "$fit" | tr ',' '\n' | wc -l)" -eq 56 ] || fail "expected 56 fit shapes"
case $fit in
    l3-8b-qkv-m512:all_gather:512x3072x4096,*) ;;
    *) fail "first fit shape: ${fit%%,*}" ;;
esac
echo "$fit" | tr ',' '\n' | grep -q '^l2-70b-fc2-m32768:reduce_scatter:32768x8192x14336$' ||
    fail "the last reduce-scatter shape is missing"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
printf 'gemm:\n  shapes:\n    - {name: x, collective: bogus, m: 1, n: 2, k: 3}\n' > "$tmp/bad.yaml"
if out=$(scripts/gemm-shapes.sh "$tmp/bad.yaml" 2>/dev/null); then fail "a bad entry was read"; fi
[ -z "$out" ] || fail "output for a bad entry: $out"
echo "gemm-shapes test: ok"
