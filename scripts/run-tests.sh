#!/bin/sh
# Runs each Criterion suite from the repository root and sums the results;
# exits non-zero if any suite fails or a sanitizer reports.  The closing line is `N passed, N failed`.
set -u
passed=0 failed=0 skipped=0 status=0
for t in "$@"; do
    out=$("$t" --jobs 1 2>&1)
    rc=$?
    printf '%s\n' "$out" | grep -v '^\[----\] Criterion' | grep -E '\[(FAIL|SKIP)\]|Assertion|ERROR|runtime error' || true
    line=$(printf '%s\n' "$out" | grep 'Synthesis:' | tail -n 1)
    p=$(printf '%s' "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
    f=$(printf '%s' "$line" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
    c=$(printf '%s' "$line" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p')
    s=$(printf '%s' "$line" | sed -n 's/.*Skipped: \([0-9]*\).*/\1/p')
    # a sanitizer's report in a test's process fails the suite even where
    # Criterion counted the test as passed (a leak is reported at exit)
    if printf '%s\n' "$out" | grep -qE 'ERROR: (Leak|Address)Sanitizer|runtime error'; then
        echo "$t: sanitizer report"
        status=1
        failed=$((failed + 1))
    fi
    if [ -z "$line" ] || [ $rc -ne 0 ]; then
        echo "$t: suite failed (exit $rc)"
        status=1
        failed=$((failed + ${f:-1}))
    fi
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${c:-0}))
    [ -n "$line" ] && [ $rc -eq 0 ] && failed=$((failed + ${f:-0}))
    skipped=$((skipped + ${s:-0}))
    echo "$(basename "$t"): ${line#*Synthesis: }"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ] && [ $status -eq 0 ]
