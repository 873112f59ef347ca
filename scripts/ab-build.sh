#!/bin/sh
# Kernels of two revisions side by side, for an A/B timing on a GPU machine
# (which cannot run fusegen: it lacks libcyaml).  For each revision: a git
# worktree, its fusegen, its `generate` over the shipped model specs and the
# GPU test specs for TARGET (default h200; its tuning file where it has
# one, and EXTRA_SPECS, paths in that revision) restricted to FILTER, every
# instance compiled through that revision's resource gate (mk/kernels.mk: a
# spill fails the build); then
# only what tests/gpu/ab.sh takes is kept (cubins, their logs, the gated
# manifest.json, REVISION: the revision's short hash), in OUT/a and OUT/b.
#   [TARGET=h100] scripts/ab-build.sh REV_A REV_B FILTER [OUT]   OUT: build/ab
# e.g. scripts/ab-build.sh main ring-wo-resident 'decode_attn_*_ring_*'
set -eu
target=${TARGET:-h200}
if [ $# -lt 3 ]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
rev_a=$1 rev_b=$2 filter=$3
root=$(cd "$(dirname "$0")/.." && pwd)
out=${4:-$root/build/ab}
mkdir -p "$out"
out=$(cd "$out" && pwd)
for side in a b; do
    if [ "$side" = a ]; then rev=$rev_a; else rev=$rev_b; fi
    src=$out/src-$side
    git -C "$root" worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
    rm -rf "${out:?}/$side" "${out:?}/gen-$side"
    git -C "$root" worktree add --detach -f "$src" "$rev" >/dev/null
    echo "ab-build: $side = $rev ($(git -C "$src" log --format='%h %s' -1 | cut -c1-70))"
    make -s -C "$src" build/fusegen
    # shellcheck disable=SC2086 # EXTRA_SPECS: paths as words
    specs=$(cd "$src" && echo specs/models/*.yaml "specs/targets/$target.yaml" \
        $(ls "specs/tuning/$target.yaml" 2>/dev/null) tests/gpu/specs/*.yaml ${EXTRA_SPECS:-})
    (cd "$src" && make -s -j"$(nproc 2>/dev/null || echo 2)" -f mk/kernels.mk FUSEGEN=build/fusegen SPECS="$specs" \
        GEN_OUT="$out/gen-$side" KBUILD="$out/$side" LIST_OPTS="--filter '$filter'" all)
    rm -rf "${out:?}/gen-$side"
    # the revision, for the benchmarks' `commit` (tests/gpu/ab.sh passes it)
    git -C "$src" rev-parse --short HEAD >"$out/$side/REVISION"
    git -C "$root" worktree remove --force "$src"
    echo "ab-build: $side: $(ls "$out/$side"/*.cubin | wc -l) kernels in $out/$side"
done
