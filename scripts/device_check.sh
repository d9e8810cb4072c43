#!/usr/bin/env bash
# One accelerator session's checks and benchmarks, in the order that matters if time runs out: the CUDA tests,
# PrivGNN's |Q| = 1000 teachers on Computers, the DP-SGD step against the non-private one, DP-MLP fits (captured
# steps, eager steps, the machine's CPU), then a sample of the leaderboard refit on the device (scripts.device_sample).
# Logs and JSON go to $OUT (default ./device-out).
#
#   OUT=/tmp/out BENCH_DATA_ROOT=/path/to/datasets bash scripts/device_check.sh [COMMIT] [SAMPLE_SECONDS]
#
# SECTIONS picks sections (default: "device cuda privgnn dpsgd dpmlp sample"; also "whitebox": the pooled white-box
# audit of DP-MLP on Cora in this process and in worker processes, and "perfall": `bench perf all --device cuda`);
# SAMPLE_METHODS limits the sample.
#
# COMMIT is recorded in the sample's records (default: HEAD of this clean work tree). Wheels in ./.whl (packages the
# machine lacks, e.g. opacus and dp-accounting) are installed into /tmp/site first.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-./device-out}"
mkdir -p "$OUT"
commit="${1:-$(git rev-parse HEAD 2>/dev/null)}"  # without .git: the commit manifest names it (bench/gitless.py)
sample_seconds="${2:-180}"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || exit 1
    export PYTHONPATH="/tmp/site"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
step() { echo "== $1 ($(date +%T))"; }
sections="${SECTIONS:-device cuda privgnn dpsgd dpmlp sample}"
want() { [[ " $sections " == *" $1 "* ]]; }

if want device; then
step "device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import sys, torch, torch_geometric; print('python', sys.version.split()[0], 'torch', torch.__version__,
'torch-geometric', torch_geometric.__version__, 'cores', __import__('os').cpu_count())" | tee -a "$OUT/device.txt"
fi

if want cuda; then
step "CUDA tests"
timeout 180 python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_cuda.py tests/test_dpsgd_graph.py \
    2>&1 | tail -40 | tee "$OUT/cuda_tests.txt"
fi

if want privgnn; then
step "PrivGNN, |Q| = 1000 on Computers"
timeout 240 python3 -m bench perf privgnn --dataset computers --queries 1000 --teacher-batch 250 --device cuda \
    --rounds 1 --json > "$OUT/privgnn.json"
tail -c 1500 "$OUT/privgnn.json"
fi

if want dpsgd; then
step "DP-SGD step vs non-private step"
for f in 128 1433; do
    timeout 90 python3 -m bench --debug perf dpsgd --device cuda --features "$f" --no-vmap --json > "$OUT/dpsgd_$f.json" \
        2> "/tmp/dpsgd_$f.err" || { tail -n 30 "/tmp/dpsgd_$f.err"; echo "-- again with CUDA_LAUNCH_BLOCKING=1";
        CUDA_LAUNCH_BLOCKING=1 timeout 90 python3 -m bench --debug perf dpsgd --device cuda --features "$f" --no-vmap \
            --min-run-time 0.3 --rounds 2 2>&1 | tail -n 30; }
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: v for k, v in d.items() if 'ratio' in k
or k in ('seconds', 'features')})" "$OUT/dpsgd_$f.json"
done
fi

if want dpmlp; then
step "DP-MLP fits: captured steps and the machine's CPU (2 threads), then eager steps"
timeout 240 python3 -m bench perf fit --methods dp-mlp dp-mlp-feature --datasets facebook-wisconsin87 \
    physics --device cuda --reference cpu --reference-threads 2 --json > "$OUT/dpmlp_captured.json"
tail -c 1200 "$OUT/dpmlp_captured.json"; echo
BENCH_CUDA_GRAPHS=0 timeout 120 python3 -m bench perf fit --methods dp-mlp dp-mlp-feature --datasets \
    facebook-wisconsin87 physics --device cuda --reference none --json > "$OUT/dpmlp_eager.json"
tail -c 800 "$OUT/dpmlp_eager.json"; echo
fi

if want whitebox; then
step "white-box DP-SGD audit: dp-mlp, Cora random-75-10-15, epsilon 4, 8 runs x 1000 canaries"
for w in ${WHITEBOX_WORKERS:-1 4}; do
    timeout 200 python3 -m bench audit --level whitebox -m dp-mlp -d cora -s random-75-10-15 -e 4 --device cuda \
        --workers "$w" --no-track --no-progress --output "$OUT/whitebox_w$w.json" 2>&1 | tail -n 6
done
fi

if want perfall; then
step "bench perf all --device cuda"
timeout 400 python3 -m bench perf all --device cuda --timeout 150 --json > "$OUT/perf_all.json" 2> "$OUT/perf_all.err"
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))
for r in d['rows']: print(f\"{r['benchmark']:14s} {r['compared']:70s} {r['ratio']:7.2f}x ({r['better']} is better)\")
for f in d['failures']: print('FAILED', f)" "$OUT/perf_all.json"
fi

if want sample; then
step "leaderboard sample"
timeout $((sample_seconds + 150)) python3 -m scripts.device_sample --device cuda --out "$OUT/device_sample.jsonl" \
    --budget-seconds "$sample_seconds" --commit "$commit" ${SAMPLE_METHODS:+--methods $SAMPLE_METHODS} 2>&1 \
    | tail -200 > "$OUT/device_sample.log"
tail -n 40 "$OUT/device_sample.log"
fi
step "done"
