"""Issue 21 on a GPU: prefill and decode attention of a hybrid serving batch, fused by
``hfuse tune`` (as a batch: one request per grid point), against every unfused way and
PyTorch's SDPA.

    python bench/scripts/hybrid_attention.py OUT_DIR [--quick] [--dtype float16]

1. ``kernels``: each kernel alone against SDPA (flash backend for prefill) and the H100's
   peaks: prefill TFLOP/s at 4K-16K tokens, decode GB/s at 8K-16K contexts.
2. ``grid``: prefill chunks 512-16K (context = chunk, and chunk 512 at the end of 8K)
   beside decode batches 16-256 at contexts 2K-16K (Llama-3-8B heads; at most 8.6 GB of KV
   cache a point), each point a tuning
   request (``hfuse.batch``); from its plan: prefill alone, decode alone, serial, two
   streams, graph, co-resident streams, the tuned fusion, the ideal max(t1, t2); and SDPA
   serial and on two streams.
3. OUT_DIR/kernels.json, grid.json, speedup.png, and a table on the terminal.

The requests' inputs are made by ``launches`` below (the recipe travels to the tuning
worker, nothing is copied).
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

from hfuse.bench.attention import Decode, Heads, Prefill, make_decode, make_prefill

H100_DENSE_FP16_TFLOPS = 989.0
"""H100 SXM's dense fp16/bf16 tensor throughput (with fp32 accumulation)."""
H100_DRAM_GBPS = 3350.0


def launches(chunk: int, context: int, batch: int, decode_context: int, dtype: str = "float16",
             head_dim: int = 128) -> list:
    """The grid point's two launches (a tuning request's recipe)."""
    heads = Heads(dtype=dtype, head_dim=head_dim)
    return [make_prefill(Prefill(chunk, context), heads, seed=1), make_decode(Decode(batch, decode_context), heads, seed=2)]


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _time(cupy, fn, reps: int = 20) -> float:
    """Median milliseconds of ``fn`` (CUDA events, after a warm-up)."""
    fn()
    cupy.cuda.Device().synchronize()
    samples = []
    for _ in range(reps):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end))
    return statistics.median(samples)


def _runner(cupy, launch):
    from hfuse.api import device_source

    source = device_source(launch.kernel)
    kernel = cupy.RawModule(code=source.source, options=("-std=c++17",),
                            name_expressions=(source.name_expression,)).get_function(source.name_expression)
    grid, block = launch.grid_for().as_tuple(), launch.kernel.block.as_tuple()
    return lambda: kernel(grid, block, tuple(launch.args))


def _sdpa(torch, heads: Heads, prefill: Prefill | None, decode: Decode | None):
    """SDPA calls for the same attentions ([batch, heads, tokens, d], KV repeated for the groups)."""
    dtype = torch.float16 if heads.dtype == "float16" else torch.bfloat16
    calls = []
    if prefill is not None:
        q = torch.randn(1, heads.heads, prefill.chunk, heads.head_dim, device="cuda", dtype=dtype)
        k = torch.randn(1, heads.heads, prefill.context, heads.head_dim, device="cuda", dtype=dtype)
        v = torch.randn_like(k)
        # the chunk's queries are the last positions: a bottom-right causal mask
        offset = prefill.context - prefill.chunk
        mask = None if offset == 0 else (torch.arange(prefill.context, device="cuda")[None, :]
                                         <= torch.arange(offset, prefill.context, device="cuda")[:, None])
        calls.append(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                                              is_causal=mask is None))
    if decode is not None:
        # grouped-query SDPA where this PyTorch has it (the KV cache once, not once per query head)
        gqa = "enable_gqa" in torch.nn.functional.scaled_dot_product_attention.__doc__
        kv_heads = heads.kv_heads if gqa else heads.heads
        q = torch.randn(decode.batch, heads.heads, 1, heads.head_dim, device="cuda", dtype=dtype)
        k = torch.randn(decode.batch, kv_heads, decode.context, heads.head_dim, device="cuda", dtype=dtype)
        v = torch.randn_like(k)
        extra = {"enable_gqa": True} if gqa else {}
        calls.append(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, **extra))
    return calls


def _torch_ms(torch, fn, reps: int = 20) -> float:
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def sdpa_pair(torch, heads: Heads, prefill: Prefill, decode: Decode) -> dict:
    """PyTorch's SDPA for the point's two attentions: one after the other, and on two streams."""
    calls = _sdpa(torch, heads, prefill, decode)
    streams = [torch.cuda.Stream() for _ in calls]

    def serial() -> None:
        for call in calls:
            call()

    def two_streams() -> None:
        main = torch.cuda.current_stream()
        for call, stream in zip(calls, streams):
            stream.wait_stream(main)
            with torch.cuda.stream(stream):
                call()
        for stream in streams:
            main.wait_stream(stream)

    return {"sdpa_serial_ms": _torch_ms(torch, serial), "sdpa_two_streams_ms": _torch_ms(torch, two_streams)}


def kernels_part(cupy, torch, heads: Heads, quick: bool) -> dict:
    rows = []
    for tokens in ([4096] if quick else [4096, 8192, 16384]):
        work = Prefill(tokens, tokens)
        ours = _time(cupy, _runner(cupy, make_prefill(work, heads)))
        row = {"kernel": "prefill", "tokens": tokens, "ms": ours, "tflops": work.flops(heads) / ours / 1e9,
               "of_peak": work.flops(heads) / ours / 1e9 / H100_DENSE_FP16_TFLOPS}
        if torch is not None:
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
                sdpa = _time(cupy, _sdpa(torch, heads, work, None)[0])
            row.update(sdpa_ms=sdpa, of_sdpa=sdpa / ours)
        rows.append(row)
        print(row, flush=True)
    for batch, context in ([(32, 8192)] if quick else [(16, 8192), (64, 8192), (32, 16384), (128, 16384)]):
        work = Decode(batch, context)
        ours = _time(cupy, _runner(cupy, make_decode(work, heads)))
        row = {"kernel": "decode", "batch": batch, "context": context, "ms": ours,
               "gbps": work.bytes(heads) / ours / 1e6, "of_peak": work.bytes(heads) / ours / 1e6 / H100_DRAM_GBPS}
        if torch is not None:
            row["sdpa_ms"] = _time(cupy, _sdpa(torch, heads, None, work)[0])
        rows.append(row)
        print(row, flush=True)
    return {"rows": rows}


def grid_points(quick: bool) -> list[dict]:
    prefills = [(512, 512), (2048, 2048), (4096, 4096), (512, 8192), (16384, 16384)]
    # at most 8.6 GB of KV cache a point: the tuner's process and its worker each hold one copy
    decodes = [(16, 2048), (64, 4096), (128, 8192), (256, 8192), (32, 16384)]
    if quick:
        prefills, decodes = prefills[:2], decodes[:2]
    return [{"chunk": c, "context": x, "batch": b, "decode_context": d} for c, x in prefills for b, d in decodes]


def grid_part(out: Path, heads: Heads, quick: bool, ray: bool, torch=None) -> dict:
    import yaml

    requests = [{"name": f"p{p['chunk']}x{p['context']}-d{p['batch']}x{p['decode_context']}",
                 "launches": f"{Path(__file__).resolve()}:launches",
                 "args": {**p, "dtype": heads.dtype, "head_dim": heads.head_dim}} for p in grid_points(quick)]
    manifest = out / "grid-manifest.yaml"
    manifest.write_text(yaml.safe_dump({"name": "hybrid-attention", "output": str(out / "plans"),
                                        "requests": requests}, sort_keys=False))
    from hfuse.batch.manifest import read_manifest
    from hfuse.batch.runner import run_batch

    start = time.perf_counter()
    read = read_manifest(manifest)
    source = None
    if ray:  # the same batch on a Ray of this machine: compiles as tasks, one tuning actor per GPU
        from hfuse.batch.ray_runner import RayOptions, ray_outcomes

        source = ray_outcomes(read.output / ".hfuse-cache", False, RayOptions())
    # one request at a time: two points' inputs at once could outgrow the GPU's memory
    report = run_batch(read, source=source, fresh=True, use_cache=False, concurrency=1,
                       executor="ray" if ray else "local")
    rows = []
    points = {r["name"]: r["args"] for r in requests}
    for outcome in report.outcomes:
        plan = json.loads(Path(outcome.plan_file).read_text()) if outcome.plan_file else None
        row = {"request": outcome.name, "status": outcome.status, "chosen": outcome.chosen}
        if torch is not None:
            p = points[outcome.name]
            row.update(sdpa_pair(torch, heads, Prefill(p["chunk"], p["context"]), Decode(p["batch"], p["decode_context"])))
        if plan:
            b = plan["baselines"]
            alone = [t["median_ms"] for t in b["alone"].values()]
            ways = {w: b[w]["median_ms"] for w in ("serial", "two_streams", "graph", "co_resident") if b.get(w)}
            best_way = min(ways, key=ways.get)
            fused = next((c["time"]["median_ms"] for c in plan["candidates"] if c["candidate"]["label"] == plan["chosen"]),
                         None) if plan["chosen"] else None
            row.update(prefill_ms=alone[0], decode_ms=alone[1], ideal_ms=max(alone), **{f"{w}_ms": t for w, t in ways.items()},
                       best_unfused=best_way, tuned_ms=fused if fused is not None else ways[best_way],
                       speedup=ways[best_way] / (fused if fused is not None else ways[best_way]))
        rows.append(row)
    return {"wall_s": time.perf_counter() - start, "rows": rows,
            "geomean_speedup": statistics.geometric_mean([r["speedup"] for r in rows if "speedup" in r] or [1.0])}


def plot(out: Path, grid: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in grid["rows"] if "speedup" in r]
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.bar(range(len(rows)), [r["speedup"] for r in rows])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)), [r["request"] for r in rows], rotation=90, fontsize=7)
    ax.set_ylabel("speedup over the best unfused way")
    fig.tight_layout()
    fig.savefig(out / "speedup.png", dpi=150)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    parser.add_argument("--parts", default="kernels,grid")
    parser.add_argument("--ray", action="store_true")
    args = parser.parse_args()
    import cupy

    try:
        import torch
    except ImportError:
        torch = None
    args.out.mkdir(parents=True, exist_ok=True)
    heads = Heads(dtype=args.dtype)
    props = cupy.cuda.runtime.getDeviceProperties(0)
    stamp = {"date": _now(), "gpu": props["name"].decode(), "driver": cupy.cuda.runtime.driverGetVersion(),
             "heads": vars(heads)}
    if "kernels" in args.parts:
        data = {**stamp, **kernels_part(cupy, torch, heads, args.quick)}
        (args.out / "kernels.json").write_text(json.dumps(data, indent=1) + "\n")
    if "grid" in args.parts:
        data = {**stamp, **grid_part(args.out, heads, args.quick, args.ray, torch)}
        (args.out / "grid.json").write_text(json.dumps(data, indent=1) + "\n")
        plot(args.out, data)
        for r in data["rows"]:
            print(f"{r['request']:28} {r['status']:9} {r.get('chosen') or '':22} {r.get('speedup', 0):.3f}x "
                  f"(best unfused {r.get('best_unfused', '')})")
        print(f"geomean speedup {data['geomean_speedup']:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
