"""Issue 23's measurements on a GPU: what isolation costs, and a batch of 100+ requests.

1. ``isolation``: each benchmark pair at its default sizes tuned three ways, twice each,
   interleaved, no cache: in this process; in a worker sent a copy of the inputs (what
   ``hfuse.tune(launches)`` does); in one worker kept for all pairs that makes its own
   inputs from the recipe (what ``hfuse tune CONFIG`` and a batch do). The ratio to
   in-process is the number the issue asks for (goal: 1.3x at most).
2. ``batch``: the 16 pairs at 7 sizes of their swept kernel (112 requests) tuned three
   ways: a loop of ``hfuse tune CONFIG`` commands, ``hfuse tune MANIFEST`` on this
   machine, and ``hfuse tune MANIFEST --ray`` on a Ray of this machine; wall time of each.

    python bench/scripts/batch_tuning.py OUT_DIR [--parts isolation,batch] [--pairs N] [--loop N]

Writes OUT_DIR/isolation.json and OUT_DIR/batch.json (GPU, driver, date) and prints a table.
Every step has a time limit of its own (``--step-timeout``): a stuck one is recorded as such.
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

from hfuse.batch.inputs import Workload, WorkloadInputs
from hfuse.bench.pairs import PAIRS
from hfuse.bench.workloads import registry
from hfuse.runtime.device import DeviceLimits
from hfuse.tuning.backends import InProcessBackend, IsolatedBackend
from hfuse.tuning.isolation import GpuWorker
from hfuse.tuning.tuner import TuneSettings, tune

SETTINGS = TuneSettings(neighbour_caps=False)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def isolation(out: Path, pairs: int) -> dict:
    rows = []
    with GpuWorker() as shared:
        ways = {"in_process": (InProcessBackend(), False), "isolated_copy": (IsolatedBackend(), False),
                "isolated_recipe": (IsolatedBackend(shared), True)}
        for pair in PAIRS[:pairs]:
            recipe = WorkloadInputs(tuple(Workload(k) for k in pair.kernels), seed=1)
            launches = recipe.launches()
            walls: dict[str, list[float]] = {w: [] for w in ways}
            for _ in range(2):
                for way, (backend, with_recipe) in ways.items():
                    start = time.perf_counter()
                    tune(launches, SETTINGS, use_cache=False, progress=False, backend=backend,
                         recipe=recipe if with_recipe else None)
                    walls[way].append(round(time.perf_counter() - start, 3))
            row = {"pair": pair.name, "walls_s": walls}
            base = statistics.median(walls["in_process"])
            row["ratio"] = {w: round(statistics.median(v) / base, 3) for w, v in walls.items()}
            rows.append(row)
            print(f"{pair.name:22} " + "  ".join(f"{w} {row['ratio'][w]:.2f}x" for w in ways), flush=True)
            del launches
    return {"pairs": rows, "settings": SETTINGS.to_dict(),
            "median_ratio": {w: statistics.median(r["ratio"][w] for r in rows) for w in rows[0]["ratio"]}}


def manifest_of(out: Path, sizes: int) -> Path:
    work = registry()
    requests = []
    for pair in PAIRS:
        swept = work[pair.swept]
        steps = swept.sweep[:: max(1, len(swept.sweep) // sizes)][:sizes]
        for size in steps:
            requests.append({"name": f"{pair.name.replace('+', '_')}-{size}",
                             "workloads": [{"kernel": k, "size": size} if k == pair.swept else {"kernel": k}
                                           for k in pair.kernels]})
    path = out / "manifest.yaml"
    path.write_text(yaml.safe_dump({"name": "issue23-batch", "output": str(out / "batch-local"), "seed": 1,
                                    "tune": {"neighbour_caps": False}, "requests": requests}, sort_keys=False))
    return path


def _timed(command: list[str], timeout: float) -> dict:
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        status = done.returncode
        tail = (done.stderr or "").strip().splitlines()[-3:]
    except subprocess.TimeoutExpired:
        status, tail = "timeout", []
    return {"wall_s": round(time.perf_counter() - start, 2), "status": status, "tail": tail}


def batch(out: Path, loop: int, timeout: float) -> dict:
    manifest = manifest_of(out, sizes=7)
    data = yaml.safe_load(manifest.read_text())
    requests = data["requests"]
    result: dict = {"requests": len(requests)}
    # a loop of single commands (each its own process, cache and worker), over the first `loop`
    configs = out / "single"
    configs.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    statuses = []
    for request in requests[:loop]:
        config = configs / f"{request['name']}.yaml"
        config.write_text(yaml.safe_dump({"name": request["name"], "workloads": request["workloads"], "seed": 1,
                                          "tune": data["tune"], "output": str(configs / "out")}))
        statuses.append(_timed([sys.executable, "-m", "hfuse.cli", "tune", str(config), "--no-cache"], timeout)["status"])
    loop_wall = time.perf_counter() - start
    result["loop"] = {"requests": len(statuses), "wall_s": round(loop_wall, 2), "failed": sum(s != 0 for s in statuses),
                      "per_request_s": round(loop_wall / max(1, len(statuses)), 2)}
    print("loop", result["loop"], flush=True)
    result["local"] = _timed([sys.executable, "-m", "hfuse.cli", "tune", str(manifest), "--fresh", "--no-cache"],
                             timeout * len(requests))
    print("local", result["local"], flush=True)
    result["ray"] = _timed([sys.executable, "-m", "hfuse.cli", "tune", str(manifest), "--fresh", "--no-cache", "--ray",
                            "-o", str(out / "batch-ray")], timeout * len(requests))
    print("ray", result["ray"], flush=True)
    for way in ("local", "ray"):
        summary = (out / f"batch-{way}" / "batch.json")
        if summary.is_file():
            s = json.loads(summary.read_text())
            result[way]["outcomes"] = {k: s[k] for k in ("fused", "declined", "failed", "wall_s")}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--parts", default="isolation,batch")
    parser.add_argument("--pairs", type=int, default=len(PAIRS), help="pairs in the isolation part")
    parser.add_argument("--loop", type=int, default=112, help="requests run as a loop of single commands")
    parser.add_argument("--step-timeout", type=float, default=300.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    limits = DeviceLimits.current()
    stamp = {"date": _now(), "gpu": limits.name, "driver": limits.driver_version}
    if "isolation" in args.parts:
        data = {**stamp, **isolation(args.out, args.pairs)}
        (args.out / "isolation.json").write_text(json.dumps(data, indent=1) + "\n")
        print("median ratio to in-process:", data["median_ratio"])
    if "batch" in args.parts:
        data = {**stamp, **batch(args.out, args.loop, args.step_timeout)}
        (args.out / "batch.json").write_text(json.dumps(data, indent=1) + "\n")
        per = data["loop"]["per_request_s"]
        print(f"{data['requests']} requests: loop {per:.2f} s each ({per * data['requests']:.0f} s for all), "
              f"local batch {data['local']['wall_s']} s, Ray {data['ray']['wall_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
