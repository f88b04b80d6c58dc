"""How long ``hfuse fuse`` takes on a PyTorch extension file, with PyTorch's real headers.

Run from the repository root, where torch is installed (its CUDA wheel needs no GPU):
``python bench/scripts/torch_fuse_speed.py``. Each run is a fresh ``hfuse fuse`` process
(Python's start included) on ``tests/corpus/styles/torch_ext.cu`` beside the corpus
partner, with ``-std=c++20`` as PyTorch's extension build compiles; the first run builds
Clang's precompiled headers unless the cache has them. Writes
``bench/results/cpu/torch_fuse_speed.json``.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STYLES = ROOT / "tests" / "corpus" / "styles"
RUNS = 5


def main() -> None:
    try:
        import importlib.metadata as metadata
        version = metadata.version("torch")
    except Exception:
        sys.exit("torch is not installed: nothing to measure")
    command = [sys.executable, "-m", "hfuse.cli", "fuse", "-std", "c++20",
               "-k", f"{STYLES / 'torch_ext.cu'}:silu_and_mul_kernel<float>:256",
               "-k", f"{STYLES / 'partner.cu'}:axpy:96", "-o", os.devnull]
    walls = []
    for _ in range(RUNS + 1):  # the first may build the precompiled headers
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit(done.stderr)
    result = {
        "what": "hfuse fuse of a PyTorch extension pair (torch_ext.cu + partner.cu), a fresh process each run",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": platform.machine(), "cores": os.cpu_count(), "python": platform.python_version()},
        "torch": version,
        "first_run_s": round(walls[0], 2),
        "runs": RUNS,
        "median_s": round(statistics.median(walls[1:]), 2),
        "max_s": round(max(walls[1:]), 2),
    }
    out = ROOT / "bench" / "results" / "cpu" / "torch_fuse_speed.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
