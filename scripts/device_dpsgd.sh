#!/usr/bin/env bash
# The DP-SGD step against the non-private step on a GPU, like for like (eager / eager, captured / captured), for the
# benchmark's model and the GCN-sized one at 128 and 1,433 features: one JSON per run and a summary in $OUT. First,
# the engine's CUDA tests (the eager and captured steps on the device, bit for bit against the plain formula).
# About two minutes on an H100.
#
#   OUT=/tmp/out bash scripts/device_dpsgd.sh
#
# TESTS=0 skips the tests; BASELINE=REV adds `--baseline-rev REV` (needs the git history); DEVICE=cpu runs the
# benchmarks on the CPU.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-./device-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/dpsgd_device.txt" 2>&1 || true
if [ "${TESTS:-1}" != 0 ]; then
    echo "== CUDA tests of the DP-SGD engine ($(date +%T))"
    timeout 150 python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_dpsgd.py tests/test_cuda.py \
        -k "bit_for_bit or dpsgd or dp_optimizer or captured_step or replay" 2>&1 | tail -n 25 \
        | tee "$OUT/dpsgd_cuda_tests.txt"
fi
base=()
[ -n "${BASELINE:-}" ] && base=(--baseline-rev "$BASELINE")
for model in benchmark gcn; do
    for f in 128 1433; do
        name="dpsgd_${model}_$f"
        echo "== $name ($(date +%T))"
        timeout 150 python3 -m bench --debug perf dpsgd --device "${DEVICE:-cuda}" --model "$model" --features "$f" \
            --no-vmap --min-run-time 1 --rounds 5 ${base[@]+"${base[@]}"} --json > "$OUT/$name.json" 2> "$OUT/$name.err" \
            || { echo "failed:"; tail -n 20 "$OUT/$name.err"; continue; }
        python3 - "$OUT/$name.json" <<'PY' | tee -a "$OUT/dpsgd_summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))
ms = ", ".join(f"{k} {v * 1000:.3f} ms" for k, v in d["seconds"].items())
like = ", ".join(f"{k} {v:.2f}x" for k, v in d["like_for_like"].items())
print(f"{d['model']} {d['features']} features on {d['device']}: like for like {like} ({ms})")
PY
    done
done
