#!/bin/sh
# A generate run killed at any moment (SIGKILL: no cleanup) must never leave
# a truncated output under its final name, since Make would take it as up to
# date: every file present under its final name equals the complete run's.
# Kills land at 5%, 10%, ... of a run's length (then, if none landed while
# files were being written, halving the time between a kill that left
# nothing and one that left everything); after each kill that left a
# half-written folder, a rerun must complete it.
#   FUSEGEN=build/fusegen tests/integration/killed-generate.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
fusegen=${FUSEGEN:-build/fusegen}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
specs="specs/models/*.yaml specs/gemm/*.yaml specs/targets/*.yaml tests/gpu/specs/*.yaml"
# shellcheck disable=SC2086 # the globs expand to the spec files
"$fusegen" generate --out "$tmp/ref" $specs >/dev/null 2>&1 ||
    { echo "killed-generate: FAILED: the reference run"; exit 1; }
total=$(find "$tmp/ref" -type f | wc -l)
# the length of a whole run (into an empty folder), to spread the kills over it
t0=$(date +%s%N)
# shellcheck disable=SC2086
"$fusegen" generate --out "$tmp/timed" $specs >/dev/null 2>&1
run_us=$((($(date +%s%N) - t0) / 1000))
partial=0 checked=0 kills=0 rerun_checked=0
state=none   # what the last kill left: none, partial or all of the files
kill_at() {   # $1: percent of a run
    kill_after_us $((run_us * $1 / 100)) "$1% of a run"
}
kill_after_us() {   # $1: microseconds after the start; $2: how to name it
    us=$1 when=$2
    rm -rf "$tmp/out"
    # shellcheck disable=SC2086
    "$fusegen" generate --out "$tmp/out" $specs >/dev/null 2>&1 &
    pid=$!
    sleep "$(printf '%d.%06d' $((us / 1000000)) $((us % 1000000)))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    kills=$((kills + 1))
    n=0
    for f in "$tmp"/out/*; do
        [ -f "$f" ] || continue
        case $f in *.tmp.*) continue ;; esac   # mkstemp's names, never a target
        n=$((n + 1)) checked=$((checked + 1))
        if ! cmp -s "$f" "$tmp/ref/$(basename "$f")"; then
            echo "killed-generate: FAILED: $(basename "$f") differs from the complete run's" \
                 "after a kill at $when"
            exit 1
        fi
    done
    state=none
    [ "$n" -gt 0 ] && state=partial
    [ "$n" -ge "$total" ] && state=all
    if [ $state = partial ]; then
        partial=$((partial + 1))
        # a rerun over the half-written folder completes it
        # shellcheck disable=SC2086
        "$fusegen" generate --out "$tmp/out" $specs >/dev/null 2>&1 ||
            { echo "killed-generate: FAILED: the rerun after a kill at $when"; exit 1; }
        diff -r -x '*.tmp.*' "$tmp/ref" "$tmp/out" >/dev/null ||
            { echo "killed-generate: FAILED: the rerun after a kill at $when differs"; exit 1; }
        rerun_checked=$((rerun_checked + 1))
    fi
}
lo=0 hi=$((run_us * 2))   # a kill that left nothing, one that left every file
for pct in 5 10 15 20 25 30 35 40 45 50 55 60 65 70 75 80 85 90 95 100; do
    kill_at "$pct"
    [ $state = none ] && lo=$((run_us * pct / 100))
    [ $state = all ] && [ $((run_us * pct / 100)) -lt $hi ] && hi=$((run_us * pct / 100))
done
# The files are written at the end of a run, in a window that can fall
# between the steps above (a loaded machine also stretches a run): if no
# kill landed in it, halve the time between the last kill that left nothing
# and the first that left everything until one does.  Runs vary in length,
# so the sweep's outcomes need not be monotonic (a later kill may leave
# nothing where an earlier one left everything): then start from the
# widest window.
if [ "$lo" -ge "$hi" ]; then
    lo=0 hi=$((run_us * 2))
fi
# A window narrowed to 50 us with no kill in it (runs vary by more than
# that: the files' window moved) starts again from the sweep's.
tries=0 lo0=$lo hi0=$hi
while [ "$partial" = 0 ] && [ $tries -lt 40 ]; do
    [ $((hi - lo)) -gt 50 ] || { lo=$lo0 hi=$hi0; }
    mid=$(((lo + hi) / 2))
    kill_after_us $mid "$mid us"
    case $state in
        none) lo=$mid ;;
        all) hi=$mid ;;
    esac
    tries=$((tries + 1))
done
if [ "$partial" = 0 ]; then
    echo "killed-generate: FAILED: none of $kills kills landed while files were being written" \
         "(a run takes $run_us us); the test checked nothing"
    exit 1
fi
echo "killed-generate: $kills kills over a $run_us us run, $partial while files were being" \
     "written; $checked files left under their final names, all complete; $rerun_checked reruns" \
     "completed the output"
