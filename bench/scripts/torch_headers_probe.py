"""PyTorch's own kernel headers, fused as a user's ``.cu`` with a trivial partner (CPU).

Run from the repository root with PyTorch installed (in the same environment as hfuse):
``python bench/scripts/torch_headers_probe.py``. Each of ATen's kernel headers below is
copied into a scratch ``.cu`` after the includes a translation unit of PyTorch's gives it
first (the header alone does not compile), and each kernel instance is fused with an axpy
by ``hfuse fuse --check`` under PyTorch's own build flags (``-std=c++20
--expt-relaxed-constexpr --extended-lambda -DCUB_WRAPPED_NAMESPACE=at_cuda_detail``; the
CUDA libraries' headers of the ``nvidia`` wheels with ``-isystem`` where the toolkit lacks
them). Writes ``bench/results/cpu/torch_headers_probe.json`` (or ``--out FILE``): per instance,
fused and compiled, or the first line of hfuse's error, with the commit of the hfuse that
ran. PyTorch's files are read from the install, never copied into this repository. To
compare with an older hfuse: ``git worktree add /tmp/old COMMIT`` and run with
``PYTHONPATH=/tmp/old/src ... --out FILE``.
"""
from __future__ import annotations

import datetime
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

AXPY = "__global__ void axpy(float a, const float* x, float* y, int n) {\n" \
       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i] + y[i];\n}\n"
SCALE_FUNCTOR = """
namespace at::native {
namespace {
template <typename T>
struct ScaleFunctor {
  __device__ void operator()(int chunk_size, TensorListMetadata<1>& tl, float s) {
    const auto tensor_loc = tl.block_to_tensor[blockIdx.x];
    const auto chunk_idx = tl.block_to_chunk[blockIdx.x];
    auto n = tl.numel_for_tensor[tensor_loc];
    T* x = (T*)tl.addresses[0][tensor_loc] + chunk_idx * chunk_size;
    n -= chunk_idx * chunk_size;
    for (int64_t i = threadIdx.x; i < n && i < chunk_size; i += blockDim.x) x[i] = x[i] * s;
  }
};
}
}
"""
# (header under ATen/, includes before it, text after it, [(kernel, block)])
PROBES = [
    ("native/cuda/im2col.cuh", [], "", [("im2col_kernel<float>", "512"), ("col2im_kernel<float, float>", "512"),
                                        ("col2im_batched_kernel<at::Half>", "512")]),
    ("native/cuda/vol2col.cuh", [], "", [("vol2col_kernel<float>", "256"), ("vol2im_kernel<double, double>", "256")]),
    ("native/cuda/PersistentSoftmax.cuh", ["c10/util/Exception.h", "ATen/cuda/CUDAContext.h"], "",
     [("softmax_warp_forward<float, float, float, 8, false, false, 32>", "32x4"),
      ("softmax_warp_backward<at::Half, at::Half, float, 10, true, false, 32>", "32x4"),
      ("softmax_warp_forward<float, float, float, 4, false, true, 16>", "16x8")]),
    ("native/cuda/SortUtils.cuh", [], "",
     [("at::native::bitonicSortKVInPlace<2, -1, 16, 16, float, int64_t, at::native::LTOp<float, true>, unsigned int>",
       "16x16"),
      ("at::native::warpMergeSortKVInPlace<2, -1, 128, 4, float, int64_t, at::native::LTOp<float, true>, "
       "unsigned int, 32>", "32x4"),
      ("at::native::radixSortKVInPlace<2, -1, 128, 32, float, int64_t, unsigned int>", "128")]),
    ("native/cuda/ScanUtils.cuh", [], "",
     [("at::native::tensor_kernel_scan_innermost_dim_with_indices<float, std::greater_equal<float>>", "16x32"),
      ("at::native::tensor_kernel_scan_outer_dim_with_indices<float, std::greater_equal<float>>", "512"),
      ("at::native::tensor_kernel_scan_outer_dim<float, uint32_t, std::plus<float>>", "512"),
      ("at::native::tensor_kernel_scan_innermost_dim<float, std::plus<float>>", "16x32")]),
    ("native/cuda/Randperm.cuh", [], "", [("randperm_handle_duplicate_keys_kernel<int, float>", "512")]),
    ("native/cuda/TensorModeKernel.cuh", [], "", [("at::native::compute_mode<float, 1024>", "512")]),
    ("native/cuda/Normalization.cuh", ["ATen/native/Resize.h"], "",
     [("at::native::batch_norm_transform_input_kernel<float, float, float, true, int32_t>", "32x16"),
      ("at::native::batch_norm_collect_statistics_kernel<at::native::InvStd, float, float, float, int32_t>", "32x16"),
      ("at::native::batch_norm_backward_kernel<float, float, float, int32_t>", "32x16"),
      ("at::native::batch_norm_reduce_statistics_kernel<float, float, int32_t>", "512"),
      ("at::native::batch_norm_backward_reduce_kernel<float, float, float, int32_t>", "32x16"),
      ("at::native::batch_norm_backward_elemt_kernel<float, float, float, int32_t>", "32x16")]),
    ("native/cuda/MultiTensorApply.cuh", [], SCALE_FUNCTOR,
     [("at::native::multi_tensor_apply_kernel<at::native::TensorListMetadata<1>, at::native::ScaleFunctor<float>, "
       "float>", "512")]),
]
FLAGS = ["-std", "c++20", "--expt-relaxed-constexpr", "--extended-lambda", "-DCUB_WRAPPED_NAMESPACE=at_cuda_detail"]


def main() -> None:
    out = Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else \
        ROOT / "bench" / "results" / "cpu" / "torch_headers_probe.json"
    import hfuse

    try:
        import torch  # noqa: F401 (only its location)
    except ImportError:
        sys.exit("PyTorch is not installed here: nothing to probe")
    site = Path(torch.__file__).resolve().parents[1]
    aten = site / "torch" / "include" / "ATen"
    flags = list(FLAGS)
    if (libraries := site / "nvidia" / "cu13" / "include").is_dir():
        flags += ["-isystem", str(libraries)]  # cuSPARSE, cuBLAS, cuRAND headers a bare toolkit may lack
    rows = []
    with tempfile.TemporaryDirectory(prefix="hfuse-torch-") as scratch:
        work = Path(scratch)
        (work / "axpy.cu").write_text(AXPY)
        for header, before, after, kernels in PROBES:
            source = work / (Path(header).stem + ".cu")
            source.write_text("".join(f"#include <{h}>\n" for h in before) + (aten / header).read_text() + after)
            for kernel, block in kernels:
                done = subprocess.run(
                    [sys.executable, "-m", "hfuse.cli", "fuse", str(source), str(work / "axpy.cu"), "-k",
                     f"{kernel}:{block}", "-k", "axpy:128", *flags, "-o", str(work / "fused.cu"), "--check"],
                    capture_output=True, text=True, timeout=900)
                lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
                error = next((line for line in lines if line.startswith("error:")), None)
                rows.append({"header": header, "kernel": kernel, "block": block,
                             "fused_and_compiled": done.returncode == 0 and error is None,
                             "layout": next((line.split(": ")[1].split(" fusion")[0] for line in lines
                                             if "fusion, block of" in line), None),
                             "error": error})
                print(f"{'ok ' if rows[-1]['fused_and_compiled'] else 'NO '} {kernel[:70]:70} "
                      f"{(error or '')[:90]}", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(hfuse.__file__).parent).stdout.strip()  # (the hfuse that ran)
    out.write_text(json.dumps({"date": datetime.date.today().isoformat(), "commit": commit,
                               "machine": platform.node(), "torch": torch.__version__, "flags": flags,
                               "instances": len(rows), "fused_and_compiled": sum(r["fused_and_compiled"] for r in rows),
                               "rows": rows}, indent=1) + "\n")
    print(f"{sum(r['fused_and_compiled'] for r in rows)} of {len(rows)} fused and compiled; wrote {out}")


if __name__ == "__main__":
    main()
