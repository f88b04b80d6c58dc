"""What ptxas makes of a fused kernel's block bound with and without a block count.

Run from the repository root: ``python bench/scripts/launch_bounds_ptxas.py``. With no
register cap, ``hfuse fuse`` bounds the fused kernel by its block alone
(``__launch_bounds__(D)``, ``registers.kernel_attribute``) so that a block of D threads can
launch. ptxas reads a bound without a block count as room to aim at more than one block
per SM at some sizes, and spills to get there; ``__launch_bounds__(D, 1)`` asks for one.
This compiles a register-hungry kernel (a 96-float array kept live) and two fused kernels
of the style corpus at several D, both ways, and writes registers and spill bytes to
``bench/results/cpu/launch_bounds_ptxas.json``. Neither is right everywhere: at 576-704
threads the bound alone let ptxas spill 44-50 KB to reach two blocks; with a block count
of one, a GEMV part took 146 registers where 56 did without spilling. Which is faster is a
question for the device (the tuner times register caps there).
"""
from __future__ import annotations

import datetime
import json
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests")]

from corpus.styles.manifest import CASES, HERE  # noqa: E402

from hfuse.api import fuse  # noqa: E402
from hfuse.spec import Dim3, KernelSpec  # noqa: E402

HUNGRY = """
__global__ void BOUND hungry(const float* x, float* y) {
  float a[96];
#pragma unroll
  for (int i = 0; i < 96; ++i) a[i] = x[threadIdx.x + i * 1024];
  float s = 0;
#pragma unroll
  for (int j = 0; j < 96; ++j) {
    float t = 0;
#pragma unroll
    for (int i = 0; i < 96; ++i) t += a[i] * a[(i * 7 + j) % 96];
    s = s * t + 1.f;
  }
  y[threadIdx.x] = s;
}
"""
SIZES = (384, 448, 512, 576, 640, 704, 768, 896, 1024)
FUSED = ("norms.cu:norms::rms_norm<float, 512>", "gemv.cu:gemv_warp_per_row<8, 256>")


def _ptxas(source: str, workdir: Path) -> dict[str, int]:
    path = workdir / "k.cu"
    path.write_text(source)
    done = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-Xptxas", "-v", "-c", str(path), "-o",
                           str(workdir / "k.o")], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    # the last function reported is the kernel (the fused file has one __global__)
    registers = [int(r) for r in re.findall(r"Used (\d+) registers", done.stderr)][-1]
    spills = [int(s) for s in re.findall(r"(\d+) bytes spill stores", done.stderr)][-1]
    return {"registers": registers, "spill_store_bytes": spills}


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="hfuse-bounds-") as scratch:
        work = Path(scratch)
        for size in SIZES:
            for form in (f"__launch_bounds__({size})", f"__launch_bounds__({size}, 1)"):
                rows.append({"kernel": "hungry", "block": size, "bound": form,
                             **_ptxas(HUNGRY.replace("BOUND", form), work)})
        for name in FUSED:
            case = next(c for c in CASES if c.name == name)
            for width in (128, 256):  # the partner's block: the fused block is case + width threads
                other = KernelSpec(HERE / "partner.cu", "axpy", Dim3(width))
                fused = fuse([case.spec(), other], options=case.options())
                size = case.spec().block.size + width
                plain = f"__launch_bounds__({size})"
                assert plain in fused.source, plain
                for form in (plain, f"__launch_bounds__({size}, 1)"):
                    rows.append({"kernel": f"{name} + axpy:{width}", "block": size, "bound": form,
                                 **_ptxas(fused.source.replace(plain, form), work)})
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    out = ROOT / "bench" / "results" / "cpu" / "launch_bounds_ptxas.json"
    out.write_text(json.dumps({"date": datetime.date.today().isoformat(), "machine": platform.node(),
                               "nvcc": version, "arch": "sm_90", "rows": rows}, indent=1) + "\n")
    print(f"{'kernel':44} {'bound':30} {'regs':>5} {'spill B':>8}")
    for row in rows:
        print(f"{row['kernel']:44} {row['bound']:30} {row['registers']:5} {row['spill_store_bytes']:8}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
