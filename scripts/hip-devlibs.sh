#!/bin/sh
# hip-devlibs.sh DIR
#
# Makes DIR a ROCm device-library folder that clang-19 accepts for gfx942 as
# well as gfx90a: Debian's rocm-device-libs (ROCm 5.2) has no
# oclc_isa_version_942.bc, so DIR holds links to every shipped bitcode file
# plus a 942 file made from the 940 one (only the ISA version constant differs).
# Use it as `clang++-19 -x hip --rocm-path=/usr --rocm-device-lib-path=DIR ...`.
#
# The folder is built in DIR.tmp.XXXXXX (unique, so parallel make jobs do not
# collide) and renamed into place, so a half-built DIR is never seen; running
# it again when DIR is complete does nothing.
# Environment: FG_BITCODE_DIR (default /usr/lib/x86_64-linux-gnu/amdgcn/bitcode),
# LLVM_DIS, LLVM_AS (default llvm-dis-19, llvm-as-19).
set -eu

usage() {
    echo "usage: $0 DIR" >&2
    echo "  makes DIR a folder of ROCm device bitcode usable for gfx942 and gfx90a" >&2
    exit 2
}

die() {
    echo "hip-devlibs.sh: error: $*" >&2
    exit 1
}

[ $# -eq 1 ] || usage
case $1 in -h|--help) usage ;; esac

dir=${1%/}
[ -n "$dir" ] || usage
src=${FG_BITCODE_DIR:-/usr/lib/x86_64-linux-gnu/amdgcn/bitcode}
dis=${LLVM_DIS:-llvm-dis-19}
as=${LLVM_AS:-llvm-as-19}
isa942=oclc_isa_version_942.bc

[ -f "$src/oclc_isa_version_940.bc" ] ||
    die "no ROCm device bitcode in $src (install rocm-device-libs, or set FG_BITCODE_DIR)"
command -v "$dis" >/dev/null 2>&1 || die "$dis not found (install llvm-19, or set LLVM_DIS)"
command -v "$as" >/dev/null 2>&1 || die "$as not found (install llvm-19, or set LLVM_AS)"

# Complete already: every shipped file is linked and the 942 file exists.
is_complete() {
    [ -d "$dir" ] && [ ! -L "$dir" ] && [ -s "$dir/$isa942" ] || return 1
    for f in "$src"/*.bc; do
        [ -e "$dir/${f##*/}" ] || return 1
    done
}
if is_complete; then
    exit 0
fi

mkdir -p "$(dirname "$dir")"
tmp=$(mktemp -d "$dir.tmp.XXXXXX") || die "cannot create a temporary folder next to $dir"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM   # leave through the EXIT trap, which cleans up

for f in "$src"/*.bc; do
    ln -s "$f" "$tmp/${f##*/}"
done

# 9400 -> 9402 is the whole difference between the 940 and 942 ISA files.
# The pipeline's status is that of llvm-as, so check the text first: a
# failing llvm-dis or a sed that matched nothing must not go unnoticed.
ll=$("$dis" "$src/oclc_isa_version_940.bc" -o -) || die "$dis failed on oclc_isa_version_940.bc"
case $ll in
    *"i32 9400"*) ;;
    *) die "oclc_isa_version_940.bc has no 'i32 9400' constant; cannot derive $isa942" ;;
esac
printf '%s\n' "$ll" | sed 's/i32 9400/i32 9402/' | "$as" -o "$tmp/$isa942" ||
    die "$as failed making $isa942"

# A stale DIR (from an older bitcode set) is replaced whole; the new folder
# appears under its name in one rename.  mv -T refuses to move into an
# existing folder: if a parallel run got there first, its result is as good.
if [ -e "$dir" ] || [ -L "$dir" ]; then
    is_complete || rm -rf "$dir"
fi
mv -T "$tmp" "$dir" 2>/dev/null || is_complete || die "cannot rename $tmp to $dir"
