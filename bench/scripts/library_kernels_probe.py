"""Kernels of a public library's headers, read as the user's own code (``-I``), each fused
with the trivial partner in both orders and compiled with nvcc and as ``hfuse tune``
compiles it. The library is not in the repository (its code is not ours): give the folder
of its headers. For FlashInfer (``pip download --no-deps flashinfer-python==0.2.5``, the
headers under ``include/`` of the sdist, or ``flashinfer/data/include`` of a 0.5 wheel)::

    python bench/scripts/library_kernels_probe.py --include DIR --cases flashinfer-0.2.5 \\
        --out bench/results/cpu/library_kernels_flashinfer_0.2.5.json

A case is a header, a kernel with its template arguments and a block; the driver file
includes the header (and defines the activation functions a case names).
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests")]

from toolchain import compile_nvcc, compile_nvrtc  # noqa: E402

from hfuse.api import device_source, fuse  # noqa: E402
from hfuse.errors import HFuseError  # noqa: E402
from hfuse.frontend.options import CompileOptions  # noqa: E402
from hfuse.runtime.compile import toolchain_for  # noqa: E402
from hfuse.spec import Dim3, KernelSpec  # noqa: E402
from hfuse.toolkit import cuda_include_dirs  # noqa: E402

PARTNER = KernelSpec(ROOT / "tests" / "corpus" / "styles" / "partner.cu", "axpy", Dim3(96))
DRIVER_HELPERS = """
__device__ __forceinline__ float silu(const float& x) { return x / (1.0f + __expf(-x)); }
__device__ __forceinline__ float gelu_tanh(const float& x) {
  return 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}
"""

ROPE = "flashinfer/pos_enc.cuh"
CASES = {
    "flashinfer-0.2.5": [
        ("flashinfer/norm.cuh", "flashinfer::norm::RMSNormKernel", ("8", "half"), (32, 4)),
        ("flashinfer/norm.cuh", "flashinfer::norm::FusedAddRMSNormKernel", ("8", "nv_bfloat16"), (32, 4)),
        ("flashinfer/activation.cuh", "flashinfer::activation::act_and_mul_kernel", ("half", "silu"), (256,)),
        ("flashinfer/activation.cuh", "flashinfer::activation::act_and_mul_kernel", ("nv_bfloat16", "gelu_tanh"),
         (256,)),
        ("flashinfer/quantization.cuh", "flashinfer::quantization::PackBitsKernel",
         ("flashinfer::quantization::BitOrder::kLittle",), (256,)),
        ("flashinfer/quantization.cuh", "flashinfer::quantization::SegmentPackBitsKernel",
         ("flashinfer::quantization::BitOrder::kBig", "int32_t"), (256,)),
        (ROPE, "flashinfer::BatchQKApplyRotaryPosIdsKernel", ("false", "128", "8", "16", "half", "int32_t"), (16, 8)),
        (ROPE, "flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel",
         ("true", "128", "8", "16", "nv_bfloat16", "int64_t"), (16, 8)),
        (ROPE, "flashinfer::BatchQKApplyRotaryKernel", ("false", "64", "4", "16", "half", "int32_t"), (16, 8)),
        ("flashinfer/page.cuh", "flashinfer::AppendPagedKVCacheDecodeKernel", ("128", "8", "half", "int32_t"), (16, 4)),
        ("flashinfer/page.cuh", "flashinfer::AppendPagedKVCacheKernel", ("128", "8", "nv_bfloat16", "int32_t"),
         (16, 4)),
        ("flashinfer/page.cuh", "flashinfer::BlockSparseIndicesToVectorSparseOffsetsKernel", ("int32_t",), (128,)),
        ("flashinfer/attention/cascade.cuh", "flashinfer::MergeStateKernel", ("8", "half", "half"), (16, 4)),
        ("flashinfer/attention/cascade.cuh", "flashinfer::MergeStateInPlaceKernel", ("4", "float"), (32, 4)),
        ("flashinfer/attention/cascade.cuh", "flashinfer::AttentionSumKernel", ("8", "nv_bfloat16", "nv_bfloat16"),
         (16, 8)),
        ("flashinfer/attention/cascade.cuh", "flashinfer::MergeStatesKernel", ("8", "half", "half"), (16, 4)),
        ("flashinfer/attention/cascade.cuh", "flashinfer::MergeStatesLargeNumIndexSetsKernel",
         ("8", "16", "8", "4", "half", "half"), (16, 8)),
        ("flashinfer/attention/cascade.cuh", "flashinfer::PersistentVariableLengthMergeStatesKernel",
         ("8", "16", "8", "4", "half", "half", "int32_t"), (16, 8)),
    ],
    "flashinfer-0.5.3": [
        ("flashinfer/activation.cuh", "flashinfer::activation::act_and_mul_kernel", ("half", "silu"), (256,)),
        (ROPE, "flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheHeadParallelismKernel",
         ("false", "128", "8", "16", "half", "int32_t"), (16, 8)),
        (ROPE, "flashinfer::RopeQuantizeKernel", ("false", "8", "16", "half", "int32_t", "__nv_fp8_e4m3"), (16, 8)),
        ("flashinfer/page.cuh", "flashinfer::AppendPagedKVCacheKernel", ("128", "8", "half", "int32_t"), (16, 4)),
        ("flashinfer/quantization.cuh", "flashinfer::quantization::PackBitsKernel",
         ("flashinfer::quantization::BitOrder::kLittle",), (256,)),
        ("flashinfer/sampling.cuh", "flashinfer::sampling::OnlineSoftmaxFusedKernel", ("1024", "4", "float", "true"),
         (1024,)),
        ("flashinfer/sampling.cuh", "flashinfer::sampling::TopPRenormProbKernel",
         ("1024", "cub::BLOCK_REDUCE_WARP_REDUCTIONS", "4", "float"), (1024,)),
        ("flashinfer/sampling.cuh", "flashinfer::sampling::TopKMaskLogitsKernel",
         ("512", "cub::BLOCK_REDUCE_WARP_REDUCTIONS", "4", "float", "int"), (512,)),
    ],
}


def emitted_flags(options: CompileOptions) -> list[str]:
    """nvcc's flags for hfuse's output: the user's, at the dialect hfuse emits (at least C++17,
    which a C++14 build's fused file says it needs: LightSeq's)."""
    return [*options.compiler_flags(std=False, pre_includes=False), f"-std={options.emitted_std}"]


def probe(spec: KernelSpec, options: CompileOptions, workdir: Path, row: dict, nvcc_once: bool = False) -> list[dict]:
    """``spec`` fused with the trivial partner in both orders (stopping at a refusal), each
    fused file compiled with nvcc and as ``hfuse tune`` compiles it: a row per order.
    ``nvcc_once``: nvcc compiles the first order only where NVRTC compiles both (files that
    read PyTorch's headers take nvcc 10-20 s). Where a fused file does not compile, the
    original is compiled the same way (``original_compiles``)."""
    rows = []
    for order in ((PARTNER, spec), (spec, PARTNER)):
        out = {**row, "position": "first" if order[0] is spec else "second"}
        start = time.perf_counter()
        try:
            fused = fuse(list(order), options=options)
        except HFuseError as exc:
            out.update(fused=False, refusal=str(exc).splitlines()[0][:300])
            rows.append(out)
            print(f"{out['kernel']}: refused: {out['refusal']}", flush=True)
            break
        out.update(fused=True, layout=fused.layout.name, fuse_ms=round(1000 * (time.perf_counter() - start)))
        toolchain, _ = toolchain_for([fused.source], options)
        if not (nvcc_once and rows and toolchain == "nvrtc"):  # (nvcc is then the only compile of this order)
            nvcc = compile_nvcc(fused.source, flags=emitted_flags(options), workdir=workdir,
                                check=False)
            out["nvcc"] = nvcc.ok
        if toolchain == "nvrtc":
            nvrtc = compile_nvrtc(fused.source, [fused.name_expression], check=False,
                                  flags=options.compiler_flags(std=False, pre_includes=False, compiler="nvrtc"))
            out["nvrtc"] = nvrtc.ok
        if (out.get("nvcc") is False or out.get("nvrtc") is False) and "original_compiles" not in row:
            # does the kernel compile unfused, as hfuse tune compiles it? (a library written for an
            # older toolkit may not: vLLM 0.6.3's cub::Sum, gone in CCCL 3)
            original = device_source(spec, options=options)
            # (nvcc instantiates a kernel template where host code takes the instance's address)
            instance = f"\nvoid* hfuse_probe_instance() {{ return (void*)&{original.name_expression}; }}\n"
            compiled = (compile_nvcc(original.source + instance, flags=emitted_flags(options),
                                     workdir=workdir, check=False) if out.get("nvcc") is False else
                        compile_nvrtc(original.source, [original.name_expression], check=False,
                                      flags=options.compiler_flags(std=False, pre_includes=False, compiler="nvrtc")))
            row["original_compiles"] = out["original_compiles"] = compiled.ok
        rows.append(out)
        print(f"{out['kernel']} ({out['position']}): {out['layout']}, {out['fuse_ms']} ms, nvcc "
              f"{ {True: 'ok', False: 'FAILED'}.get(out.get('nvcc'), 'not run')}, NVRTC {out.get('nvrtc', 'not used')}",
              flush=True)
    return rows


def summary(rows: list[dict], **about) -> dict:
    """The rows with how many kernels fused and compiled (nvcc and NVRTC) in both orders."""
    kernels = {r["kernel"] for r in rows if "not_probed" not in r}  # (no instance known to the script)
    failed = {r["kernel"] for r in rows if not r.get("fused") or r.get("nvcc") is False or r.get("nvrtc") is False}
    ok = {k for k in kernels if k not in failed and sum(1 for r in rows if r["kernel"] == k) == 2}
    unfused_too = {r["kernel"] for r in rows if r.get("original_compiles") is False}
    return {**about, "kernels": len(kernels), "not_probed": sum(1 for r in rows if "not_probed" in r),
            "fused_and_compiled_in_both_orders": len(ok),
            "failing_where_the_original_does_not_compile_either": len(unfused_too),
            "date": datetime.date.today().isoformat(), "host": platform.node(), "python": platform.python_version(),
            "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--include", required=True, type=Path, help="the folder of the library's headers")
    parser.add_argument("--cases", required=True, choices=sorted(CASES))
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    # the toolkit's and pip's CUDA headers (cuRAND) as the library's build finds them
    options = CompileOptions.from_flags(include_dirs=[str(args.include), *cuda_include_dirs()], std="c++17",
                                        language_flags=["--expt-relaxed-constexpr"])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for header, kernel, template_args, block in CASES[args.cases]:
            driver = Path(tmp) / f"{Path(header).stem}_driver.cu"
            driver.write_text(f"#include <{header}>\n{DRIVER_HELPERS}")
            spec = KernelSpec(driver, kernel, Dim3(*block), template_args)
            rows += probe(spec, options, Path(tmp), {"kernel": f"{kernel}<{', '.join(template_args)}>", "header": header})
    result = summary(rows, cases=args.cases, include=str(args.include))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{result['fused_and_compiled_in_both_orders']}/{result['kernels']} kernels fused and compiled (nvcc and "
          f"NVRTC) in both orders; wrote {args.out}")


if __name__ == "__main__":
    main()
