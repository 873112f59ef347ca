#!/bin/sh
# The generator under valgrind (memcheck, leaks included) on what it is given
# in practice and on what it must refuse: generate and explain over every
# shipped spec and target, import-hf of every test config, every bad spec,
# report over the test results, shapes over the sweeps, and profile and tune (ring and RMSNorm
# families, then generate with the result) against stand-in
# harnesses (a GPU's part is not what is checked here).  Fails on the first
# valgrind error.
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
for f in tests/data/bench/*.json; do vg report -o "$out/report" "$f"; done
vg shapes bench/sweeps/*.yaml specs/gemm/*.yaml
vg shapes specs/targets/h200.yaml   # refused: not a GEMM spec
# profile: a stand-in for test_overlap --profile writing a fixed measurement
cat > "$out/prof.sh" <<'EOS'
#!/bin/sh
while [ $# -gt 0 ]; do case $1 in --json) json=$2; shift;; esac; shift; done
echo '{"gpu": {"name": "Stand-in"}, "fit": {"both_ways_latency_us": 9, "one_way_gbps": 380,
"both_ways_gbps_each": 350}, "gemm_slowdown": {"fraction": 0.01}, "call_overhead": {"us": 20},
"gemms": [{"m": 4096, "n": 5120, "k": 8192, "us": 420}]}' > "$json"
EOS
chmod +x "$out/prof.sh"
cp specs/targets/h200.yaml "$out/h200.yaml"
vg profile --target "$out/h200.yaml" --harness "$out/prof.sh" --work "$out/prof" specs/gemm/*.yaml
vg profile --target "$out/h200.yaml" --harness /bin/false --work "$out/prof" specs/gemm/*.yaml
# tune: a manifest of the planner's choice and one candidate of a ring family
# and of an RMSNorm family, stand-in harnesses (test_decode_attn's given,
# test_rmsnorm's found beside it) that time the candidates faster and pass
# every check
fam=decode_attn_sm90a_f16_h4096_nh32_hd128_s4096_b1_c2x2
inst() {   # NAME-SUFFIX CANDIDATE INFLIGHT
    printf '{"name": "%s_t512_ring%s_norm", "template": "decode_attn_ring.in", "targets": ["h200"],
 "tuning_family": "%s", %s "params": {"deterministic": 0, "threads": 512, "stage_bytes": 16384, "stages": 8,
 "inflight": %s, "inflight3": %s}, "resources": {"registers": 96}}' "$fam" "$1" "$fam" "$2" "$3" "$3"
}
rms=rmsnorm_sm90a_f16_h4096
rms_inst() {   # VARIANT CANDIDATE THREADS CACHE_X
    printf '{"name": "%s_t%s", "template": "rmsnorm.in", "targets": ["h200"], "tuning_family": "%s",
 %s "params": {"hidden": 4096, "threads": %s, "cache_x": %s}, "resources": {"registers": 40}}' \
        "$rms" "$1" "$rms" "$2" "$3" "$4"
}
printf '{"instances": [%s, %s, %s, %s]}\n' "$(inst '' '' 8)" "$(inst _k16n8f6 '"candidate": true,' 6)" \
    "$(rms_inst 128 '' 128 0)" "$(rms_inst 256c '"candidate": true,' 256 1)" > "$out/manifest.json"
cat > "$out/tune.sh" <<'EOS'
#!/bin/sh
json= only=
while [ $# -gt 0 ]; do case $1 in --json) json=$2; shift;; --only) only=$2; shift;; esac; shift; done
[ -z "$json" ] && exit 0
{ echo '{"gpu": {"name": "Stand-in"}, "cases": ['; sep=
  for n in $(echo "$only" | tr , ' '); do case $n in *k16n8f6*) t=40;; *) t=50;; esac
    printf '%s{"name": "%s", "instance": "%s", "S": 1024, "time": {"median": %s}}' "$sep" "$n" "$n" "$t"; sep=,; done
  echo ']}'; } > "$json"
EOS
cat > "$out/test_rmsnorm" <<'EOS'
#!/bin/sh
json= only=
while [ $# -gt 0 ]; do case $1 in --json) json=$2; shift;; --only) only=$2; shift;; esac; shift; done
[ -z "$json" ] && exit 0
{ echo '{"gpu": {"name": "Stand-in"}, "cases": ['; sep=
  for n in $(echo "$only" | tr , ' '); do case $n in *_t256c) t=2;; *) t=3;; esac
    printf '%s{"name": "%s/rows1", "instance": "%s", "shape": {"rows": 1, "hidden": 4096}, "time": {"median": %s}}' \
        "$sep" "$n" "$n" "$t"; sep=,; done
  echo ']}'; } > "$json"
EOS
chmod +x "$out/tune.sh" "$out/test_rmsnorm"
vg tune --manifest "$out/manifest.json" --harness "$out/tune.sh" --work "$out/tune" \
    --out "$out/tuning.yaml"
grep -q "family: $rms" "$out/tuning.yaml" 2>/dev/null || {
    echo "valgrind-generator: tune wrote no rmsnorm entry"; exit 1; }
vg generate --out "$out/tuned" specs/models/llama-2-7b.yaml specs/targets/h200.yaml "$out/tuning.yaml"
[ -s "$out/tuned/${rms}_t256c.cu" ] || {
    echo "valgrind-generator: generate did not take the rmsnorm entry"; exit 1; }
echo "valgrind-generator: $runs runs of fusegen, no valgrind error"
