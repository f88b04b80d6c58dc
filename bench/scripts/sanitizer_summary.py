"""Merges the per-case verdicts of ``tests/tuning/test_sanitize_gpu.py`` into one file.

    HFUSE_SANITIZER_RESULTS=/tmp/san pytest tests/tuning/test_sanitize_gpu.py
    python bench/scripts/sanitizer_summary.py /tmp/san bench/results/h100/sanitizer/summary.json
"""
from __future__ import annotations

import datetime
import json
import sys
from collections import Counter
from pathlib import Path


def main(source: str, target: str) -> int:
    cases = [json.loads(p.read_text()) for p in sorted(Path(source).glob("*.json"))]
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        gpu = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        driver = cupy.cuda.runtime.driverGetVersion()
    except Exception:
        gpu, driver = "unknown", None
    import subprocess

    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:
        smi = ""
    try:
        version = subprocess.run(["compute-sanitizer", "--version"], capture_output=True, text=True,
                                 timeout=30).stdout.strip().splitlines()[-1]
    except Exception:
        version = ""
    summary = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": gpu, "cuda_driver_api": driver, "nvidia_smi": smi, "compute_sanitizer": version,
        "cases": len(cases),
        "verdicts": dict(Counter(c["verdict"] for c in cases)),
        "per_tool": {tool: dict(Counter(t["verdict"] for c in cases for t in c["tools"] if t["tool"] == tool))
                     for tool in ("memcheck", "racecheck", "synccheck", "initcheck")},
        "results": cases,
    }
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    Path(target).write_text(json.dumps(summary, indent=1) + "\n")
    print(f"{len(cases)} cases: {summary['verdicts']}; per tool: {summary['per_tool']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
