#!/bin/sh
# The generator under valgrind (memcheck, leaks included) on what it is given
# in practice and on what it must refuse: generate and explain over every
# shipped spec and target, import-hf of every test config, and every bad
# spec.  Fails on the first valgrind error.
#   FUSEGEN=build/fusegen scripts/valgrind-generator.sh
set -u
cd "$(dirname "$0")/.." || exit 1
fusegen=${FUSEGEN:-build/fusegen}
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind-generator: valgrind is not installed (make deps installs it)"
    exit 1
fi
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
runs=0
vg() {
    runs=$((runs + 1))
    valgrind --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect,possible -q "$fusegen" "$@" \
        >/dev/null 2>"$out/log"
    if [ $? = 99 ]; then
        echo "valgrind-generator: FAILED: fusegen $*"
        cat "$out/log"
        exit 1
    fi
}
vg generate --out "$out/gen" specs/models/*.yaml specs/gemm/*.yaml specs/targets/*.yaml specs/tuning/*.yaml \
    tests/gpu/specs/*.yaml
vg explain specs/models/*.yaml specs/gemm/*.yaml specs/targets/*.yaml specs/tuning/*.yaml
for f in tests/data/hf/*.json; do vg import-hf "$f"; done
for f in tests/specs/bad/*.yaml; do vg list "$f" specs/targets/h200.yaml; done
echo "valgrind-generator: $runs runs of fusegen, no valgrind error"
