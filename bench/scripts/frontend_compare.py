"""Clang (libclang, CUDA device mode) against hfuse's tree-sitter front end, on our corpus.

For every CUDA file of the corpus (with its own nvcc flags) it measures, per file:
the time of each front end, the kernels each finds in the user's own files, and Clang's
errors (a file Clang parses without error is one whose meaning it can answer). It also
times Clang on a file that includes the heavy toolkit headers (all of CUB, cooperative
groups, fp16/bf16) and, when PyTorch is installed, on a PyTorch extension file.

    pip install libclang-ng   # a wheel with a bundled recent libclang
    python bench/scripts/frontend_compare.py --out bench/results/cpu/frontend_compare.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

HEAVY = """#include <cub/cub.cuh>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void heavy(const float* in, float* out) {
  using R = cub::BlockReduce<float, 128>;
  __shared__ R::TempStorage t;
  float s = R(t).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s + __half2float(__float2half(s));
}
"""

TORCH = """#include <torch/extension.h>
__global__ void scale(float* x, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }
"""


def clang_args(flags: list[str]) -> list[str]:
    """CUDA device mode with the toolkit's headers and the host C++ library (hfuse's own arguments)."""
    from hfuse.frontend.clang import clang_arguments
    from hfuse.frontend.options import CompileOptions

    arguments = clang_arguments(CompileOptions())
    if isinstance(arguments, str):
        raise SystemExit(arguments)
    return [*arguments, *flags]


def clang_parse(path: Path, flags: list[str], user_dirs: list[Path]):
    import clang.cindex as ci

    start = time.perf_counter()
    tu = ci.Index.create().parse(str(path), args=clang_args(flags))
    seconds = time.perf_counter() - start
    errors = [str(d) for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    mine = [str(path.parent.resolve())] + [str(d.resolve()) for d in user_dirs]
    kernels = set()
    for cursor in tu.cursor.walk_preorder():
        if cursor.kind not in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE) or not cursor.is_definition():
            continue
        file = cursor.location.file.name if cursor.location.file else ""
        if not any(str(Path(file).resolve()).startswith(d) for d in mine):
            continue
        if any(c.kind == ci.CursorKind.CUDAGLOBAL_ATTR for c in cursor.get_children()):
            kernels.add(cursor.spelling)
    return seconds, errors, kernels


def tree_sitter_parse(path: Path, flags: list[str]):
    from hfuse.frontend.extract import load_source
    from hfuse.frontend.options import CompileOptions, Define

    options = CompileOptions(include_dirs=tuple(Path(f[2:]) for f in flags if f.startswith("-I")),
                             defines=tuple(Define.parse(f[2:]) for f in flags if f.startswith("-D")))
    start = time.perf_counter()
    try:
        source = load_source(path, options=options)
    except Exception as exc:  # what the tree-sitter path refuses
        return time.perf_counter() - start, f"{type(exc).__name__}: {exc}".splitlines()[0][:200], set()
    return time.perf_counter() - start, "", {f.name for f in source.functions if f.kind == "global"}


def corpus() -> list[tuple[Path, list[str]]]:
    from corpus.realworld import manifest as M

    files: dict[Path, list[str]] = {}
    for path in sorted((ROOT / "tests" / "corpus").glob("*.cu")) + sorted((ROOT / "tests" / "corpus" / "trust").glob("*.cu")):
        files[path] = []
    for kernel in M.KERNELS.values():
        files.setdefault(kernel.path if hasattr(kernel, "path") else M.ROOT / kernel.file, kernel.nvcc_flags())
    return sorted(files.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = []
    for path, flags in corpus():
        user_dirs = [Path(f[2:]) for f in flags if f.startswith("-I")]
        c_time, c_errors, c_kernels = clang_parse(path, flags, user_dirs)
        t_time, t_error, t_kernels = tree_sitter_parse(path, flags)
        rows.append({"file": str(path.relative_to(ROOT)), "flags": flags,
                     "clang_ms": round(c_time * 1000, 1), "clang_errors": len(c_errors), "clang_first_error": c_errors[:1],
                     "clang_kernels": sorted(c_kernels), "tree_sitter_ms": round(t_time * 1000, 1),
                     "tree_sitter_error": t_error, "tree_sitter_kernels": sorted(t_kernels)})
        print(f"{path.name:36} clang {c_time * 1000:7.0f} ms {len(c_errors)} errors {len(c_kernels)} kernels | "
              f"tree-sitter {t_time * 1000:6.0f} ms {len(t_kernels)} kernels {t_error[:60]}", flush=True)
    heavy = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("heavy_toolkit_headers", HEAVY), ("torch_extension", TORCH)):
            if name == "torch_extension":
                try:
                    import torch.utils.cpp_extension as ext
                except ImportError:
                    heavy[name] = "PyTorch is not installed"
                    continue
                import sysconfig

                flags = [f"-isystem{d}" for d in [*ext.include_paths(), sysconfig.get_paths()["include"]]]
            else:
                flags = []
            path = Path(tmp) / f"{name}.cu"
            path.write_text(text)
            seconds, errors, kernels = clang_parse(path, flags, [])
            heavy[name] = {"clang_ms": round(seconds * 1000, 1), "errors": len(errors), "first_error": errors[:1],
                           "kernels": sorted(kernels)}
            print(name, heavy[name], flush=True)
    both = [r for r in rows if not r["tree_sitter_error"]]
    summary = {
        "files": len(rows),
        "clang_without_error": sum(1 for r in rows if r["clang_errors"] == 0),
        "tree_sitter_without_error": len(both),
        "clang_median_ms": statistics.median(r["clang_ms"] for r in rows),
        "clang_max_ms": max(r["clang_ms"] for r in rows),
        "tree_sitter_median_ms": statistics.median(r["tree_sitter_ms"] for r in rows),
        "tree_sitter_max_ms": max(r["tree_sitter_ms"] for r in rows),
        "same_kernels": sum(1 for r in both if set(r["clang_kernels"]) == set(r["tree_sitter_kernels"])),
        "kernels_only_clang_finds": sorted({(r["file"], k) for r in rows for k in set(r["clang_kernels"]) - set(r["tree_sitter_kernels"])}),
        "kernels_only_tree_sitter_finds": sorted({(r["file"], k) for r in rows for k in set(r["tree_sitter_kernels"]) - set(r["clang_kernels"])}),
    }
    import clang.cindex as ci

    data = {"what": __doc__.splitlines()[0], "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": platform.machine(), "python": platform.python_version(),
            "libclang": getattr(ci.conf, "lib", None) and str(ci.conf.lib._name), "summary": summary,
            "heavy_headers": heavy, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
