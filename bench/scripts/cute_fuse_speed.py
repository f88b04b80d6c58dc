"""How long ``hfuse fuse`` takes on CuTe kernels (the style corpus's ``cute_gemm.cu``, on the
installed nvidia-cutlass package's headers given with ``-I``), and how much header code
Clang's walk follows for each.

Run from the repository root where the test extra is installed (nvidia-cutlass):
``python bench/scripts/cute_fuse_speed.py``. Each kernel is fused after the corpus partner in
a fresh process (Python's start included), three times after a first run that may build
Clang's precompiled headers; one more in-process run counts the header instances walked and
times Clang's parse and the walk. Writes ``bench/results/cpu/cute_fuse_speed.json``.
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
sys.path[:0] = [str(ROOT / "tests")]

from corpus.styles.manifest import CASES, HERE, cutlass_include  # noqa: E402

RUNS = 3


def _walk_counts(case) -> dict:
    """Header instances walked, and the seconds of Clang's parse and of the walk, in this process."""
    from hfuse.api import prepare
    from hfuse.frontend import clang, clang_walk
    from hfuse.spec import Dim3, KernelSpec

    seconds = {"parse": 0.0, "walk": 0.0}
    walked = [0]
    parse, uses = clang._parse, clang_walk.header_uses

    def timed_parse(*args, **kwargs):
        start = time.perf_counter()
        try:
            return parse(*args, **kwargs)
        finally:
            seconds["parse"] += time.perf_counter() - start

    def timed_uses(walker, *args, **kwargs):
        start = time.perf_counter()
        try:
            return uses(walker, *args, **kwargs)
        finally:
            seconds["walk"] += time.perf_counter() - start
            walked[0] = max(walked[0], walker.walked)

    clang._parse, clang.header_uses = timed_parse, timed_uses
    try:
        prepare([KernelSpec(HERE / "partner.cu", "axpy", Dim3(96)), case.spec()], options=case.options())
    finally:
        clang._parse, clang.header_uses = parse, uses
    return {"header_instances_walked": walked[0], "clang_parse_s": round(seconds["parse"], 2),
            "walk_s": round(seconds["walk"], 2)}


def main() -> None:
    if cutlass_include() is None:
        sys.exit("nvidia-cutlass is not installed: nothing to measure")
    results = []
    for case in (c for c in CASES if c.file == "cute_gemm.cu"):
        flags = ["-std", "c++17", "-I", str(cutlass_include())]
        command = [sys.executable, "-m", "hfuse.cli", "fuse", *flags, "-k", f"{HERE / 'partner.cu'}:axpy:96",
                   "-k", f"{HERE / case.file}:{case.kernel}:{case.block}", "-o", os.devnull]
        walls = []
        for _ in range(RUNS + 1):
            start = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True)
            walls.append(time.perf_counter() - start)
            if done.returncode != 0:
                sys.exit(f"{case.name}: hfuse fuse failed:\n{done.stderr}")
        layout = next((line.split(": ", 1)[1].split(" fusion")[0] for line in done.stderr.splitlines()
                       if "fusion, block of" in line), None)
        results.append({"kernel": case.kernel, "layout": layout, "first_s": round(walls[0], 2),
                        "median_s": round(statistics.median(walls[1:]), 2), **_walk_counts(case)})
        print(results[-1], flush=True)
    out = ROOT / "bench" / "results" / "cpu" / "cute_fuse_speed.json"
    out.write_text(json.dumps({
        "what": "hfuse fuse of the CuTe kernels of tests/corpus/styles/cute_gemm.cu after the corpus partner, "
                "CUTLASS from the nvidia-cutlass package given with -I; a fresh process per run (CPU)",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "python": platform.python_version()},
        "kernels": results}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
