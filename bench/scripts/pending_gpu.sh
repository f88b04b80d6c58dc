#!/usr/bin/env bash
# The GPU runs that CPU-only sessions left pending (issues 18-23), in steps that each fit a
# 10-minute device call; run them in this order on a lent H100, from the repository's root:
#   bash bench/scripts/pending_gpu.sh tests-api        # GPU twins of tests/api (corpus, styles, trust, new shapes...)
#   bash bench/scripts/pending_gpu.sh tests-transform  # transform, layouts, runtime and torch op twins
#   bash bench/scripts/pending_gpu.sh tests-tuning     # tuner, isolation, co-residency, bench (attention) twins
#   bash bench/scripts/pending_gpu.sh isolation        # issue 23: what isolating a tuning costs, per pair
#   bash bench/scripts/pending_gpu.sh batch            # issue 23: a 112-request batch three ways
#   bash bench/scripts/pending_gpu.sh hybrid           # issue 21: the hybrid serving batch's attention grid (--quick)
#   bash bench/scripts/pending_gpu.sh fuzz             # differential fuzzing verified on the GPU, seeds 0-1999
# Each step writes into $OUT (default /tmp/out): the GPU's name, driver and clocks, a JUnit file
# or the script's JSON, and the tail of its output; copy what is reported under bench/results/h100/.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
step=${1:-tests-api}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/nvidia-smi.csv" 2>&1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"

gpu_tests() {  # name, then the test files; a hung kernel stops at the suite's own 30 s guard
  local name=$1
  shift
  timeout 540 python3 -m pytest -q -p no:cacheprovider -m gpu "$@" --junitxml="$OUT/$name.xml" 2>&1 | tail -15 \
    | tee "$OUT/$name.txt"
}

case "$step" in
tests-api)
  gpu_tests api_gpu tests/api/*_gpu.py
  ;;
tests-transform)
  gpu_tests transform_gpu tests/transform/*_gpu.py tests/layouts/*_gpu.py tests/runtime/test_gpu_runtime.py \
    tests/torch_ops/*_gpu.py
  ;;
tests-tuning)
  gpu_tests tuning_gpu tests/tuning/*_gpu.py tests/bench/*_gpu.py
  ;;
isolation | batch)  # (each part has the script's own 300 s limit a step; the two do not fit one call together)
  timeout 560 python3 bench/scripts/batch_tuning.py "$OUT/$step" --parts "$step" 2>&1 | tail -30 | tee "$OUT/$step.txt"
  ;;
hybrid)
  timeout 560 python3 bench/scripts/hybrid_attention.py "$OUT/hybrid" --quick 2>&1 | tail -30 | tee "$OUT/hybrid.txt"
  ;;
fuzz)
  timeout 560 python3 bench/scripts/fuzz.py --seeds 0:2000 --gpu --timeout 480 --out "$OUT/fuzz" \
    --corpus "$OUT/fuzz/corpus" 2>&1 | tail -20 | tee "$OUT/fuzz.txt"
  ;;
*)
  echo "unknown step '$step': tests-api, tests-transform, tests-tuning, isolation, batch, hybrid or fuzz" >&2
  exit 2
  ;;
esac
