"""How long ``hfuse fuse`` takes on a PyTorch extension file, with PyTorch's real headers,
and how long ``hfuse tune``'s compiles take where the fused file keeps them (nvcc: NVRTC
cannot read them).

Run from the repository root, where torch is installed (its CUDA wheel needs no GPU):
``python bench/scripts/torch_fuse_speed.py``. Each run is a fresh ``hfuse fuse`` process
(Python's start included) on ``tests/corpus/styles/torch_ext.cu`` beside the corpus
partner, with ``-std=c++20`` as PyTorch's extension build compiles; the first run builds
Clang's precompiled headers unless the cache has them. Then, for kernels of
``torch_aten.cu`` (whose code uses ATen's types), the compiler ``hfuse tune`` picks and the
time of one compile of the fused file and of the original. Writes
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
        "what": "hfuse fuse of a PyTorch extension pair (torch_ext.cu + partner.cu), a fresh process each run; "
                "hfuse tune's compiles of torch_aten.cu pairs (tune_compiles)",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": platform.machine(), "cores": os.cpu_count(), "python": platform.python_version()},
        "torch": version,
        "first_run_s": round(walls[0], 2),
        "runs": RUNS,
        "median_s": round(statistics.median(walls[1:]), 2),
        "max_s": round(max(walls[1:]), 2),
        "tune_compiles": tune_compiles(),
    }
    out = ROOT / "bench" / "results" / "cpu" / "torch_fuse_speed.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


def tune_compiles() -> list[dict]:
    """Per torch_aten.cu kernel beside the partner: hfuse fuse's time in this process, the
    compiler hfuse tune picks (and why), and one compile of the fused file and of the original."""
    from hfuse.api import device_source, fuse
    from hfuse.frontend.options import CompileOptions
    from hfuse.runtime.compile import Compiler, toolchain_for
    from hfuse.spec import KernelSpec

    options = CompileOptions.from_flags(std="c++20")
    partner = KernelSpec(STYLES / "partner.cu", "axpy", 96)
    found = []
    for name, args, block in (("my_ext::rms_norm_kernel", ("c10::BFloat16",), 128),
                              ("my_ext::gelu_kernel", ("at::BFloat16",), 128)):
        spec = KernelSpec(STYLES / "torch_aten.cu", name, block, template_args=args)
        start = time.perf_counter()
        fused = fuse([partner, spec], options=options)
        fuse_s = time.perf_counter() - start
        original = device_source(spec, options=options)
        toolchain, why = toolchain_for([fused.source])
        row = {"kernel": spec.instance, "layout": fused.layout.name, "fuse_s": round(fuse_s, 2),
               "toolchain": toolchain, "why": why}
        for label, source, expression in (("fused", fused.source, fused.name_expression),
                                          ("original", original.source, original.name_expression)):
            compiler = Compiler.for_sources(options, [source], arch="sm_90")
            start = time.perf_counter()
            binary = compiler.compile(source, [expression])
            row[f"{label}_compile_s"] = round(time.perf_counter() - start, 1)
            row[f"{label}_registers"] = binary.ptxas[binary.symbol(expression)].registers
        found.append(row)
    return found


if __name__ == "__main__":
    main()
