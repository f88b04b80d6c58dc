"""Kernels of a public library's ``.cu`` files, read with the flags its own build uses, each
fused with the trivial partner in both orders and compiled with nvcc and as ``hfuse tune``
compiles it (``library_kernels_probe.probe``). The library is not in the repository (its
code is not ours): give the folder of its sources. For DeepSpeed 0.15.4 (``pip download
--no-deps --no-binary=:all: deepspeed==0.15.4``, the ``csrc`` folder of the sdist; its files
include PyTorch's headers: run it where torch is installed)::

    python bench/scripts/library_files_probe.py --root DIR/csrc --cases deepspeed-0.15.4 \\
        --out bench/results/cpu/library_files_deepspeed_0.15.4.json

Every ``__global__`` of the files is a case: a kernel template with the template arguments
and block of ``TEMPLATE_ARGUMENTS`` (as the library's launchers instantiate it), any other
at a block of 128 (or the one given there); kernels of one name by the line they start on.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from library_kernels_probe import probe, summary  # noqa: E402

from hfuse.frontend.options import CompileOptions  # noqa: E402
from hfuse.spec import Dim3, KernelSpec  # noqa: E402
from hfuse.toolkit import cuda_include_dirs  # noqa: E402

SYM = "quantize::Type::Symmetric"
TEMPLATE_ARGUMENTS = {"deepspeed-0.15.4": {
    # (file, kernel, the line its definition starts on): (template arguments, block)
    ("fp_quantizer/fp_quantize.cu", "apply_quantization", 61): (("__half", "4", "7", "8", "8", "3"), (256,)),
    ("fp_quantizer/fp_quantize.cu", "apply_dequantization", 223): (("__half", "3", "8", "3", "4"), (256,)),
    ("fp_quantizer/fp_quantize.cu", "apply_selective_dequantization", 400): (("__half", "3", "8", "3", "4"), (256,)),
    ("lamb/fused_lamb_cuda_kernel.cu", "lamb_cuda_kernel_part1", 194): (("float", "float", "512"), (512,)),
    ("lamb/fused_lamb_cuda_kernel.cu", "lamb_cuda_kernel_part2", 241): (("float", "float", "512"), (512,)),
    ("lamb/fused_lamb_cuda_kernel.cu", "lamb_cuda_kernel_part3", 260): (("float", "float"), (512,)),
    ("quantization/dequantize.cu", "dequantize_kernel", 11): (("__half", "8", SYM, "4", "512"), (512,)),
    ("quantization/quant_reduce.cu", "dequant_reduce", 20): (("8", "16", "4", SYM), (1024,)),
    ("quantization/quantize.cu", "cached_quantization", 17): (("8", SYM, "1", "4", "32", "256"), (256,)),
    ("quantization/swizzled_quantize.cu", "swizzled_quant_kernel", 20): (("8", "4", "512", SYM), (512,)),
    ("random_ltd/gather_scatter.cu", "gather_tokens_impl", 15): (("__half",), (256,)),
    ("random_ltd/gather_scatter.cu", "scatter_tokens_impl", 100): (("__half",), (256,)),
    ("random_ltd/slice_attn_masks.cu", "slice_gpt_mask_impl", 11): (("float",), (256,)),
    ("random_ltd/slice_attn_masks.cu", "slice_bert_mask_impl", 53): (("__half",), (256,)),
    ("random_ltd/token_sort.cu", "scan_sort", 27): (("2",), (1024,)),
    ("transformer/general_kernels.cu", "column_sum_reduce", 10): (("__half",), (32, 32)),
    ("transformer/inference/csrc/apply_rotary_pos_emb.cu", "apply_rotary_pos_half", 26): (("__half", "16", "16"), (256,)),
    ("transformer/inference/csrc/dequantize.cu", "dequantize_kernel", 14): (("__half",), (256,)),
    ("transformer/inference/csrc/dequantize.cu", "dequantize_kernel", 85): (("__half",), (256,)),
    ("transformer/inference/csrc/gelu.cu", "fused_bias_gelu", 29): (("__half",), (512,)),
    ("transformer/inference/csrc/gelu.cu", "fused_bias_add", 86): (("__nv_bfloat16",), (512,)),
    ("transformer/inference/csrc/gelu.cu", "fused_bias_residual", 185): (("__half",), (1024,)),
    ("transformer/inference/csrc/gelu.cu", "gptj_residual_add", 334): (("__half",), (1024,)),
    ("transformer/inference/csrc/gelu.cu", "moe_res_matmul", 428): (("__half",), (1024,)),
    ("transformer/inference/csrc/gelu.cu", "pad_data_kernel", 481): (("__half",), (32, 16)),
    ("transformer/inference/csrc/gelu.cu", "pad_head_seq_kernel", 532): (("__half",), (32, 16)),
    ("transformer/inference/csrc/gelu.cu", "fused_gate_activation", 611): (("__half", "true"), (256,)),
    ("transformer/inference/csrc/layer_norm.cu", "fused_ln", 31): (("__half", "2", "64", "256"), (64, 4)),
    ("transformer/inference/csrc/layer_norm.cu", "fused_residual_ln", 223): (("__half", "2", "64", "256", "true"),
                                                                             (64, 4)),
    ("transformer/inference/csrc/pointwise_ops.cu", "vector_add_kernel", 17): (("__half",), (512,)),
    ("transformer/inference/csrc/relu.cu", "fused_bias_relu", 19): (("__half",), (512,)),
    ("transformer/inference/csrc/rms_norm.cu", "rms_norm", 19): (("__half", "2", "64", "256"), (64, 4)),
    ("transformer/inference/csrc/rms_norm.cu", "pre_rms_norm", 84): (("__nv_bfloat16", "2", "64", "256"), (64, 4)),
    ("transformer/inference/csrc/softmax.cu", "attn_softmax_v2", 34): (("__half", "4"), (256,)),
    ("transformer/inference/csrc/softmax.cu", "attn_softmax_v2", 255): (("4",), (256,)),
    ("transformer/inference/csrc/transform.cu", "bias_add_transform_0213", 87): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "pad_add_transform_0213", 297): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "bias_add_transform_0213", 385): (("float",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "bias_add_transform_0213", 435): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "bias_add_transform_0213_v2", 492): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "transform4d_0213", 565): (("float",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "transform4d_0213", 606): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "transform4d_0213_v2", 640): (("__half",), (32, 8)),
    ("transformer/normalize_kernels.cu", "LayerNormBackward1", 627): (("float",), (32, 32)),
    ("transformer/normalize_kernels.cu", "LayerNormBackward1", 695): (("__half",), (32, 32)),
    ("transformer/normalize_kernels.cu", "LayerNormBackward1_fused_add", 1376): (("float",), (32, 32)),
    ("transformer/normalize_kernels.cu", "LayerNormBackward1_fused_add", 1439): (("__half",), (32, 32)),
    ("transformer/softmax_kernels.cu", "attn_softmax", 27): (("32", "4", "128"), (128,)),
    ("transformer/softmax_kernels.cu", "attn_softmax", 157): (("32", "4", "128"), (128,)),
    ("transformer/softmax_kernels.cu", "softmax_backward_kernel", 442): (("__half", "32", "4"), (128,)),
    ("transformer/softmax_kernels.cu", "softmax_backward_kernel_v2", 506): (("__half", "2"), (128,)),
    ("transformer/transform_kernels.cu", "Transpose_Kernel", 11): (("__half",), (32, 32)),
    ("transformer/transform_kernels.cu", "transform_0213", 60): (("__half",), (32, 8)),
    ("transformer/transform_kernels.cu", "bias_add_transform_0213", 165): (("__half",), (32, 8)),
    ("transformer/transform_kernels.cu", "transform4d_0213", 410): (("__half",), (32, 8)),
}}
SKIPPED = {"deepspeed-0.15.4": ("cpu/", "xpu/", "aio/", "gds/", "sparse_attention/", "deepspeed4science/")}
"""Host code, other platforms, and the kernels built on CUTLASS (a library of its own)."""
INCLUDES = {"deepspeed-0.15.4": ("includes", "transformer/inference/includes", "fp_quantizer/includes")}
"""The include folders of its builds (op_builder), relative to the root."""
_KERNEL = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(")


def kernels(path: Path) -> list[tuple[str, int, bool]]:
    """(name, the line its definition starts on, whether it is a template) of each kernel."""
    text = path.read_text()
    found = []
    for match in _KERNEL.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        header = re.search(r"template\s*<[^;{}]*>\s*$", text[max(0, match.start() - 400):match.start()])
        starts = line - header.group().count("\n") if header else line
        found.append((match.group(1), starts, header is not None and "<>" not in "".join(header.group().split())))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True, type=Path, help="the folder of the library's sources")
    parser.add_argument("--cases", required=True, choices=sorted(TEMPLATE_ARGUMENTS))
    parser.add_argument("--only", nargs="*", default=(), help="files whose path holds one of these")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    # DeepSpeed's build (op_builder/builder.py): C++20 on CUDA >= 12.5, fast math, the half
    # operators on, bf16 on; the toolkit's (and pip's) headers; PyTorch's found by hfuse itself
    options = CompileOptions.from_flags(
        include_dirs=[*(str(args.root / d) for d in INCLUDES[args.cases]), *cuda_include_dirs()], std="c++20",
        defines=["BF16_AVAILABLE"], language_flags=["--use_fast_math"],
        undefines=["__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__"])
    arguments = TEMPLATE_ARGUMENTS[args.cases]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(args.root.rglob("*.cu")):
            relative = str(path.relative_to(args.root))
            if any(s in relative for s in SKIPPED[args.cases]) or (args.only and not any(o in relative for o in args.only)):
                continue
            for name, line, templated in kernels(path):
                row = {"kernel": f"{relative}:{name}@{line}"}
                if templated and (relative, name, line) not in arguments:
                    rows.append({**row, "fused": False, "refusal": "no template arguments in TEMPLATE_ARGUMENTS"})
                    continue
                given, block = arguments.get((relative, name, line), ((), (128,)))
                spec = KernelSpec(path, name, Dim3(*block), given, line=line)
                rows += probe(spec, options, Path(tmp), {**row, "template_args": list(given)}, nvcc_once=True)
    result = summary(rows, cases=args.cases, root=str(args.root))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{result['fused_and_compiled_in_both_orders']}/{result['kernels']} kernels fused and compiled (nvcc and "
          f"NVRTC) in both orders; wrote {args.out}")


if __name__ == "__main__":
    main()
