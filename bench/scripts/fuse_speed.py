"""How long ``hfuse.fuse`` takes on real files: every 10th pair of the real-world corpus.

Run from the repository root: ``python bench/scripts/fuse_speed.py``. Each pair is fused
from scratch (preprocessing with its files' own flags, parsing, analysis, generation), as
``hfuse fuse`` does for one request (Clang's answers are not reused between pairs; its
precompiled headers in the cache are, as between two ``hfuse fuse`` calls); writes
``bench/results/cpu/fuse_speed.json``, with the pairs that asked Clang on their own.
"""
from __future__ import annotations

import datetime
import itertools
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "api")]

from corpus.realworld import manifest as M  # noqa: E402
from test_fuse_realworld import _refusal, request_options, specs  # noqa: E402

from hfuse.api import fuse  # noqa: E402
from hfuse.frontend import clang  # noqa: E402


def main() -> None:
    kernels = [k for k in M.KERNELS.values() if _refusal(k) is None]
    pairs = list(itertools.combinations(kernels, 2))[::10]
    seconds, asked, unread = [], [], []
    for first, second in pairs:
        clang._read_once.cache_clear()
        start = time.perf_counter()
        fused = fuse(specs(first, second), options=request_options(first, second))
        unread += [note for note in fused.notes if "Clang" in note]
        seconds.append(time.perf_counter() - start)
        if clang._read_once.cache_info().misses:
            asked.append(seconds[-1])
    ms = sorted(1000 * s for s in seconds)
    clang_ms = sorted(1000 * s for s in asked)
    result = {
        "what": "hfuse.fuse of a pair of real-world corpus files, from file to fused source (CPU)",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "python": platform.python_version()},
        "pairs": len(ms),
        "median_ms": round(statistics.median(ms), 1),
        "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 1),
        "max_ms": round(ms[-1], 1),
        "pairs_asking_clang": len(clang_ms),
        "clang_pairs_median_ms": round(statistics.median(clang_ms), 1) if clang_ms else None,
        "clang_pairs_max_ms": round(clang_ms[-1], 1) if clang_ms else None,
        "clang_could_not_read": sorted(set(unread)),
    }
    out = ROOT / "bench" / "results" / "cpu" / "fuse_speed.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
