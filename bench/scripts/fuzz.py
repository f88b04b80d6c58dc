"""Differential fuzzing of the fuser: generated kernel sets fused with random candidates,
compiled, and (``--gpu``) compared bit for bit with the original kernels.

    python bench/scripts/fuzz.py --seeds 0:2000 --gpu --workers 16 --out bench/results/h100/fuzz

Writes ``summary.json`` (counts by outcome, seeds, feature coverage, refusal reasons,
every failure with its reduced reproducer) and one JSON line per case per worker.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
from pathlib import Path

from hfuse.testing.fuzz_run import run_many


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:100", help="FIRST:END (END excluded)")
    parser.add_argument("--gpu", action="store_true", help="verify on the GPU (default: generate and compile only)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=500.0, help="seconds for the whole run")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parents[2] / "tests" / "corpus" / "fuzz",
                        help="where reduced reproducers of failures are kept (default: tests/corpus/fuzz)")
    args = parser.parse_args()
    first, end = (int(v) for v in args.seeds.split(":"))
    summary = run_many(list(range(first, end)), gpu=args.gpu, workers=args.workers, out_dir=args.out,
                       timeout_s=args.timeout, corpus_dir=args.corpus)
    summary["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    if args.gpu:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip().split(", ")
        summary["gpu"], summary["driver"] = (gpu + ["", ""])[:2]
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k not in ("failures", "feature_coverage")}, indent=1))
    for failure in summary["failures"][:5]:
        print(failure["seed"], failure["outcome"], failure["candidate"], failure["detail"][:300])


if __name__ == "__main__":
    main()
