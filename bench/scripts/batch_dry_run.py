"""The batch machinery on the CPU: N requests tuned from a recording (no GPU; every
candidate is still generated and compiled with NVRTC), as a loop of single `hfuse tune`
commands, as one `hfuse tune MANIFEST` on this machine, and on a local Ray.

    python bench/scripts/batch_dry_run.py OUT.json [--requests 48] [--loop 12]

What it measures is the CPU side of tuning at scale: process start, imports, front end,
generation and NVRTC per request, and what a batch saves by sharing processes, pools and
the binary cache. The GPU side is bench/scripts/batch_tuning.py's.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from batch.conftest import KERNELS, LAUNCHES, recorded, recording  # noqa: E402

PAIRS = [("scale", "shift"), ("scale", "square"), ("shift", "square")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--loop", type=int, default=12, help="requests run as single commands (the rest extrapolated)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hfuse-dry-run-"))
    (root / "kernels.cu").write_text(KERNELS)
    (root / "launches.py").write_text(LAUNCHES)
    sizes = [1024 * (i + 1) for i in range(-(-args.requests // len(PAIRS)))]
    requests, record = [], {}
    for n in sizes:
        for first, second in PAIRS:
            if len(requests) == args.requests:
                break
            requests.append({"name": f"{first}_{second}-{n}", "launches": "launches.py:make_launches",
                             "args": {"first": first, "second": second, "n": n}})
            record[f"{first}@{n}+{second}@{n}"] = recorded(1.0, 2.0, {"naive": 1.5, "persistent:2:2": 1.4})
    recording_file = recording(record).save(root / "recording.json")
    manifest = root / "batch.yaml"
    manifest.write_text(yaml.safe_dump({"name": "dry-run", "tune": {"refine": False}, "requests": requests}))
    hfuse = [sys.executable, "-m", "hfuse.cli", "tune"]
    results: dict = {"requests": len(requests), "machine": platform.node(), "cpus": os.cpu_count(),
                     "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}

    start = time.perf_counter()
    for request in requests[: args.loop]:
        config = root / f"{request['name']}.yaml"
        config.write_text(yaml.safe_dump({"name": request["name"], "launches": request["launches"],
                                          "args": request["args"], "tune": {"refine": False}}))
        done = subprocess.run([*hfuse, str(config), "--recorded", str(recording_file), "-o", str(root / "single")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
    loop = time.perf_counter() - start
    results["loop"] = {"requests": args.loop, "wall_s": round(loop, 2), "per_request_s": round(loop / args.loop, 3)}
    print("loop", results["loop"], flush=True)

    for way, extra in (("local", []), ("ray", ["--ray"])):
        start = time.perf_counter()
        done = subprocess.run([*hfuse, str(manifest), "--recorded", str(recording_file), "--fresh", "-o",
                               str(root / way), *extra], capture_output=True, text=True)
        wall = time.perf_counter() - start
        summary = json.loads((root / way / "batch.json").read_text()) if (root / way / "batch.json").exists() else {}
        results[way] = {"wall_s": round(wall, 2), "per_request_s": round(wall / len(requests), 3),
                        "status": done.returncode, "fused": summary.get("fused"), "failed": summary.get("failed")}
        print(way, results[way], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
