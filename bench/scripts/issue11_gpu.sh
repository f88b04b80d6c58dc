#!/usr/bin/env bash
# The GPU runs behind issue 11's closing note, in steps that each fit a 10-minute device call.
#   bash bench/scripts/issue11_gpu.sh tests    # GPU tests of the layouts and the tuner, quick bench of the Ethash pairs, bounds
#   bash bench/scripts/issue11_gpu.sh full A   # part A of the full 86-point run (B, C: the rest), resumable
#   bash bench/scripts/issue11_gpu.sh bounds   # unit utilisations of every kernel and size, bounds, plots
# Results land in bench/results/h100/ (full run) and bench/results/h100/layouts/ (quick), copied to $OUT.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
step=${1:-tests}
case "$step" in
tests)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/nvidia-smi.csv"
  timeout 200 python3 -m pytest -q -n 4 -p no:cacheprovider tests/api/test_fuse_gpu.py \
      --junitxml="$OUT/corpus_differential_gpu.xml" 2>&1 | tail -8
  timeout 150 python3 -m pytest -q -n 2 -p no:cacheprovider tests/tuning/test_tuner_gpu.py tests/tuning/test_coresident_gpu.py \
      --junitxml="$OUT/tune_gpu_tests.xml" 2>&1 | tail -8
  timeout 120 python3 -m hfuse.cli bench --quick --pairs Blake2B+Ethash,Blake256+Ethash,Ethash+SHA256 \
      --out bench/results/h100/layouts/dynamic --no-progress 2>&1 | tail -12
  timeout 90 python3 -m hfuse.cli bench --bounds-only --out bench/results/h100/layouts/dynamic 2>&1 | tail -8
  cp bench/results/h100/layouts/dynamic/results.json "$OUT/quick_results.json"
  cp bench/results/h100/layouts/dynamic/units.json "$OUT/quick_units.json" 2>/dev/null
  cp bench/results/h100/layouts/dynamic/report_numbers.md "$OUT/quick_report_numbers.md" 2>/dev/null
  ;;
full)
  part=${2:-A}
  case "$part" in
    A) pairs=crypto ;;
    B) pairs=Batchnorm+Upsample,Batchnorm+Hist,Batchnorm+Im2Col,Batchnorm+Maxpool,Hist+Im2Col ;;
    C) pairs=Hist+Maxpool,Hist+Upsample,Im2Col+Maxpool,Im2Col+Upsample,Maxpool+Upsample ;;
  esac
  budget=${TB:-480}  # seconds before no new point starts
  timeout $((budget + 80)) python3 -m hfuse.cli bench --pairs "$pairs" --points 5 --no-metrics --no-progress \
      --time-budget "$budget" 2>&1 | grep -v "^\s*$" | tail -60
  cp bench/results/h100/results.json "$OUT/results.json"
  tar czf "$OUT/plans_$part.tar.gz" bench/results/h100/plans/full__* 2>/dev/null
  ;;
bounds)
  timeout 360 python3 -m hfuse.cli bench --bounds-only --time-budget 300 2>&1 | tail -20
  cp bench/results/h100/results.json bench/results/h100/units.json "$OUT/"
  cp bench/results/h100/report_numbers.md bench/results/h100/figure7.png "$OUT/" 2>/dev/null
  timeout 200 python3 bench/scripts/ethash_limits.py 2>&1 | tail -20
  cp bench/results/h100/limits/ethash_limits.json "$OUT/" 2>/dev/null
  ;;
esac
