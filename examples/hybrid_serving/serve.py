"""A serving-style loop over hybrid batches: each step runs one prefill chunk of a long
prompt beside one decode token for each of many sequences, as one hfuse.torch op (our two
attention kernels fused by hfuse tune), against the same kernels unfused.

    python examples/hybrid_serving/serve.py [--steps 16] [--chunk 1024] [--batch 64] [--out step_times.json]

The op is tuned once on the first step's tensors (cached: a second run costs no tuning);
every step then calls it with that step's tensors: the prompt's context grows by a chunk
and every decoding sequence by one token, so the grids change from step to step and the
op launches what the plan chose for each. The first step's outputs are checked against
the unfused kernels bit for bit.
"""
from __future__ import annotations

import argparse
import datetime
import json
from dataclasses import replace
from pathlib import Path

import torch

from hfuse.bench.attention import PREFILL_ROWS, Decode, Heads, decode_spec, prefill_spec
from hfuse.torch import TorchKernel, fused_op

HEADS = Heads()  # Llama-3-8B: 32 query heads, 8 KV heads of 128, fp16


def kernels(heads: Heads) -> list[TorchKernel]:
    prefill = TorchKernel(prefill_spec(heads), outputs=(3,),
                          grid=lambda a, b: (-(-int(a[4]) // PREFILL_ROWS), int(a[6]), 1))
    decode = TorchKernel(decode_spec(heads), outputs=(4, 5, 6, 7),
                         grid=lambda a, b: (int(a[11]), int(a[10]), int(a[0].shape[0])))
    return [prefill, decode]


class HybridBatch:
    """The tensors of one serving step, in preallocated buffers that grow step by step."""

    def __init__(self, heads: Heads, chunk: int, prompt: int, batch: int, start: int, sm_count: int):
        dtype = torch.float16 if heads.dtype == "float16" else torch.bfloat16
        d, dev = heads.head_dim, "cuda"
        self.heads, self.chunk, self.batch = heads, chunk, batch
        self.prompt_k = torch.randn(prompt, heads.kv_heads, d, device=dev, dtype=dtype)
        self.prompt_v = torch.randn_like(self.prompt_k)
        self.q = torch.randn(chunk, heads.heads, d, device=dev, dtype=dtype)
        self.o = torch.zeros_like(self.q)
        self.capacity = start + 64  # room for the decode steps
        self.cache_k = torch.randn(batch, self.capacity, heads.kv_heads, d, device=dev, dtype=dtype)
        self.cache_v = torch.randn_like(self.cache_k)
        self.dq = torch.randn(batch, heads.heads, d, device=dev, dtype=dtype)
        self.do = torch.zeros_like(self.dq)
        self.lengths = torch.full((batch,), start, device=dev, dtype=torch.int32)
        self.splits = Decode(batch, start).splits(heads, sm_count)
        g = heads.group
        self.partial_o = torch.zeros(batch, heads.kv_heads, self.splits, g, d, device=dev, dtype=torch.float32)
        self.partial_ml = torch.zeros(batch, heads.kv_heads, self.splits, g, 2, device=dev, dtype=torch.float32)
        self.arrivals = torch.zeros(batch * heads.kv_heads, device=dev, dtype=torch.int32)
        self.context = chunk

    def args(self) -> list[list]:
        h = self.heads
        k, v = self.prompt_k[: self.context], self.prompt_v[: self.context]
        prefill = [self.q, k, v, self.o, self.chunk, self.context, h.heads, h.kv_heads, h.scale]
        decode = [self.dq, self.cache_k, self.cache_v, self.lengths, self.do, self.partial_o, self.partial_ml,
                  self.arrivals, self.capacity, h.heads, h.kv_heads, self.splits, h.scale]
        return [prefill, decode]

    def advance(self) -> None:
        """The next step: the prompt's next chunk, one more token for every sequence."""
        self.context = min(self.context + self.chunk, self.prompt_k.shape[0])
        self.lengths += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--chunk", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--decode-context", type=int, default=8192)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    prompt = args.chunk * (args.steps + 1)
    fused_batch = HybridBatch(HEADS, args.chunk, prompt, args.batch, args.decode_context, sm_count)
    print("tuning on the first step's tensors (cached after the first run)...", flush=True)
    fused = fused_op(kernels(HEADS), fused_batch.args(), progress=True)
    unfused = fused_op(kernels(HEADS), fused_batch.args(),
                       plan=replace(fused.plan, decision="do_not_fuse", reason="unfused reference"))
    print(f"plan: {fused.plan.decision} ({fused.plan.chosen or fused.plan.reason})")

    torch.manual_seed(0)
    unfused_batch = HybridBatch(HEADS, args.chunk, prompt, args.batch, args.decode_context, sm_count)
    for a, b in zip(sum(fused_batch.args(), []), sum(unfused_batch.args(), [])):
        if isinstance(a, torch.Tensor):
            b.copy_(a)
    fused(*fused_batch.args())
    unfused(*unfused_batch.args())
    torch.cuda.synchronize()
    same = torch.equal(fused_batch.o, unfused_batch.o) and torch.equal(fused_batch.do, unfused_batch.do)
    print(f"step 1: fused outputs equal the unfused kernels' bit for bit: {same}")

    rows = []
    for step in range(args.steps):
        times = {}
        for name, op, batch in (("unfused", unfused, unfused_batch), ("fused", fused, fused_batch)):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            op(*batch.args())  # warm
            start.record()
            for _ in range(10):
                op(*batch.args())
            end.record()
            torch.cuda.synchronize()
            times[name] = start.elapsed_time(end) / 10
            batch.advance()
        rows.append({"step": step, "context": fused_batch.context, **{f"{k}_ms": v for k, v in times.items()},
                     "speedup": times["unfused"] / times["fused"]})
        print(f"step {step:3}: prefill context {rows[-1]['context']:6}  unfused {times['unfused']:.3f} ms  "
              f"fused {times['fused']:.3f} ms  ({rows[-1]['speedup']:.2f}x)", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "heads": vars(HEADS), "chunk": args.chunk, "batch": args.batch, "decode_context": args.decode_context,
            "plan": {"decision": fused.plan.decision, "chosen": fused.plan.chosen}, "bit_equal_first_step": same,
            "steps": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
