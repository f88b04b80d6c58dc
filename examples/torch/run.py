"""A small PyTorch module with two custom CUDA kernels (kernels.cu), fused by hfuse.

    python examples/torch/run.py [--out results.json]

Tunes the pair on example tensors (the plan is cached: a second run costs no tuning),
checks the fused op against the kernels run unfused, bit for bit, then times a forward
pass four ways: unfused (the original kernels, the fastest unfused way the tuner
measured), fused eager, fused under torch.compile(fullgraph=True), and fused replayed
from a CUDA graph.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # the shared kernel description
from torch_ops.example_inputs import make_args, make_kernels  # noqa: E402

from hfuse.torch import fused_op  # noqa: E402
from hfuse.tuning.report import plan_table

SIZES = dict(rows=1 << 22, dim=64, bags=1 << 14, bag_len=64, n=1 << 22, buckets=1 << 20)


class Features(torch.nn.Module):
    """Bag embeddings and hashed buckets of a batch, by one op (fused or not)."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, bag_args, hash_args):
        self.op(bag_args, hash_args)
        return bag_args[3], hash_args[1]


def time_ms(fn, reps: int = 50) -> float:
    for _ in range(5):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the numbers as JSON here")
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()
    kernels = make_kernels(block=256)
    examples = make_args(torch, 0, **SIZES)
    print("tuning (cached after the first run)...", flush=True)
    fused = fused_op(kernels, examples, cache_dir=args.cache_dir, progress=True)
    unfused = fused_op(kernels, examples, plan=_declined(fused.plan))
    print(plan_table(fused.plan))

    batch = make_args(torch, 1, **SIZES)
    reference = make_args(torch, 1, **SIZES)
    Features(unfused)(*reference)
    Features(fused)(*batch)
    torch.cuda.synchronize()
    same = all(torch.equal(a.view(torch.int32) if a.dtype == torch.float32 else a, b.view(torch.int32)
                           if b.dtype == torch.float32 else b)
               for a, b in ((batch[0][3], reference[0][3]), (batch[1][1], reference[1][1])))
    print(f"fused outputs equal the unfused kernels' bit for bit: {same}")
    if not same:
        raise SystemExit("fused output differs")

    model, compiled = Features(fused), torch.compile(Features(fused), fullgraph=True)
    compiled(*batch)
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        model(*batch)
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph):
        model(*batch)
    times = {
        "unfused_eager_ms": time_ms(lambda: Features(unfused)(*batch)),
        "fused_eager_ms": time_ms(lambda: model(*batch)),
        "fused_compiled_ms": time_ms(lambda: compiled(*batch)),
        "fused_graph_ms": time_ms(graph.replay),
    }
    for name, ms in times.items():
        print(f"{name:>20}: {ms:8.3f} ms")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "sizes": SIZES, "plan": {"decision": fused.plan.decision, "chosen": fused.plan.chosen,
                                     "reason": fused.plan.reason, "unfused_way": fused.plan.unfused_way},
            "bit_equal": same, **times}, indent=1) + "\n")


def _declined(plan):
    """The same plan, told not to fuse: its launcher runs the original kernels."""
    from dataclasses import replace

    return replace(plan, decision="do_not_fuse", reason="unfused reference")


if __name__ == "__main__":
    main()
