"""What running candidates in a worker process costs: one pair tuned with and without
``isolate``, no cache, the same settings; wall time of each and the candidates' times.

    python bench/scripts/isolation_overhead.py bench/results/h100/isolation/overhead.json
"""
from __future__ import annotations

import datetime
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from hfuse.bench.workloads import registry
from hfuse.tuning.tuner import TuneSettings, tune

PAIR = ("maxpool", "upsample")


def main(target: str) -> int:
    work = registry()
    launches = [work[k].make(work[k].default_size, seed=1) for k in PAIR]
    settings = TuneSettings(neighbour_caps=False)
    rows = {}
    for isolate in (False, True, False, True):  # twice each, interleaved: the first run warms caches
        start = time.perf_counter()
        plan = tune(launches, replace(settings, isolate=isolate), use_cache=False, progress=False)
        wall = time.perf_counter() - start
        rows.setdefault("isolated" if isolate else "in_process", []).append({
            "wall_s": round(wall, 2), "candidates": len(plan.candidates), "chosen": plan.chosen,
            "chosen_ms": next((c.time_ms for c in plan.candidates if c.label == plan.chosen), None),
            "two_streams_ms": plan.baselines.two_streams.median_ms if plan.baselines.two_streams else None,
        })
        print(("isolated  " if isolate else "in process"), rows[("isolated" if isolate else "in_process")][-1])
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    data = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "gpu": smi,
            "pair": "+".join(PAIR), "sizes": "default", "settings": settings.to_dict(), "runs": rows}
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    Path(target).write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
