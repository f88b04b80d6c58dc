"""Host cost of one call of hfuse's Python launch paths, against launching the unfused
kernels directly through CuPy (tiny problem sizes, so the host is the bottleneck).

    python bench/scripts/launch_overhead.py OUT.json

Paths: CuPy RawKernel launches of the two original kernels (the floor); launcher_for(plan)
with CuPy arrays; launcher_for(plan) with torch tensors (__cuda_array_interface__ views);
the hfuse.torch op called eagerly, and through torch's dispatcher (as torch.compile
calls it); the same op for a declined plan (the originals, the
fastest unfused way). Microseconds per call: wall time of many calls, then one sync.
"""
from __future__ import annotations

import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from torch_ops.example_inputs import make_args, make_kernels  # noqa: E402

from hfuse.api import device_source  # noqa: E402
from hfuse.frontend.options import CompileOptions  # noqa: E402
from hfuse.runtime.arrays import as_device_array  # noqa: E402
from hfuse.runtime.compile import Compiler  # noqa: E402
from hfuse.torch import fused_op, kernel_params  # noqa: E402
from hfuse.tuning.tuner import TuneSettings  # noqa: E402
from hfuse.tuning.launcher import launcher_for

TINY = dict(rows=1024, dim=32, bags=8, bag_len=4, n=1024, buckets=64)
SETTINGS = TuneSettings(caps=False, neighbour_caps=False, refine=False, balance_grids=False, warmup_ms=1, rep_ms=2,
                        min_gain=-100.0)


def per_call_us(fn, calls: int = 3000) -> float:
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main() -> None:
    out = Path(sys.argv[1])
    import cupy

    kernels = make_kernels()
    args = make_args(torch, 0, **TINY)
    fused = fused_op(kernels, args, settings=SETTINGS, use_cache=False)
    declined = fused_op(kernels, args, plan=_declined(fused.plan))
    params = kernel_params(kernels, CompileOptions())
    cupy_args = [[as_device_array(a) if p.kind == "tensor" else np.dtype(p.scalar).type(a) for a, p in zip(ka, ps)]
                 for ka, ps in zip(args, params)]
    compiler = Compiler()
    raws = [compiler.get(device_source(k.spec).source, device_source(k.spec).name_expression).raw for k in kernels]
    grids = [k.grid_for(a, k.spec.block).as_tuple() for k, a in zip(kernels, args)]
    blocks = [k.spec.block.as_tuple() for k in kernels]

    def raw_launch():
        for raw, g, b, a in zip(raws, grids, blocks, cupy_args):
            raw(g, b, tuple(a))

    run = launcher_for(fused.plan)
    mixed = [list(args[0][:4]) + cupy_args[0][4:], list(args[1][:2]) + cupy_args[1][2:]]
    results = {
        "raw_cupy_two_kernels_us": per_call_us(raw_launch),
        "plan_launcher_cupy_us": per_call_us(lambda: run(cupy_args)),
        "plan_launcher_torch_tensors_us": per_call_us(lambda: run(mixed)),
        "torch_op_fused_us": per_call_us(lambda: fused(*args)),
        "torch_op_fused_through_dispatcher_us": per_call_us(lambda: fused.op(*args[0], *args[1])),
        "torch_op_declined_us": per_call_us(lambda: declined(*args)),
        "torch_op_argument_checks_only_us": per_call_us(lambda: [c(a) for c, a in zip(fused._checks, args)]),
    }
    results["unfused_way_of_declined"] = declined.plan.unfused_way
    for name, value in results.items():
        print(f"{name:>34}: {value if isinstance(value, str) else f'{value:7.2f}'}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                               "cupy": cupy.__version__,
                               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                               "what": __doc__.split("\n\n")[0], "sizes": TINY, **results}, indent=1) + "\n")


def _declined(plan):
    from dataclasses import replace

    return replace(plan, decision="do_not_fuse", reason="unfused reference")


if __name__ == "__main__":
    main()
