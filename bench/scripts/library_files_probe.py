"""Kernels of a public library's ``.cu`` files, read with the flags its own build uses, each
fused with the trivial partner in both orders and compiled with nvcc and as ``hfuse tune``
compiles it (``library_kernels_probe.probe``). The library is not in the repository (its
code is not ours): give the folder of its sources, the ``csrc`` folder of its sdist
(DeepSpeed 0.15.4: ``pip download --no-deps --no-binary=:all: deepspeed==0.15.4``; vLLM
0.6.3: its sdist from PyPI's file host, as pip cannot build its metadata here). Their files
include PyTorch's headers: run it where torch is installed::

    python bench/scripts/library_files_probe.py --root DIR/csrc --cases deepspeed-0.15.4 \\
        --out bench/results/cpu/library_files_deepspeed_0.15.4.json

Every ``__global__`` of the files is a case: a kernel template with the template arguments
and block of its library's table (as the library's launchers instantiate it), any other at a
block of 128 (or the one given there); kernels of one name by the line they start on.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from library_kernels_probe import probe, summary  # noqa: E402

from hfuse.frontend.options import CompileOptions  # noqa: E402
from hfuse.spec import Dim3, KernelSpec  # noqa: E402
from hfuse.toolkit import cuda_include_dirs  # noqa: E402

SYM = "quantize::Type::Symmetric"
DEEPSPEED = {
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
    ("transformer/inference/csrc/transform.cu", "bias_add_transform_0213", 435): (("__half",), (32, 8)),
    ("transformer/inference/csrc/transform.cu", "bias_add_transform_0213_v2", 492): (("__half",), (32, 8)),
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
}
HALF, BF16, AUTO = "c10::Half", "c10::BFloat16", "vllm::Fp8KVCacheDataType::kAuto"
VLLM = {
    ("activation_kernels.cu", "act_and_mul_kernel", 13): ((HALF, f"vllm::silu_kernel<{HALF}>"), (256,)),
    ("activation_kernels.cu", "activation_kernel", 93): (("float", "vllm::gelu_new_kernel<float>"), (256,)),
    ("layernorm_kernels.cu", "rms_norm_kernel", 24): ((BF16,), (256,)),
    ("layernorm_kernels.cu", "fused_add_rms_norm_kernel", 207): ((HALF, "8"), (256,)),
    ("layernorm_kernels.cu", "fused_add_rms_norm_kernel", 260): (("float", "0"), (256,)),
    ("pos_encoding_kernels.cu", "rotary_embedding_kernel", 70): ((HALF, "true"), (128,)),
    ("pos_encoding_kernels.cu", "batched_rotary_embedding_kernel", 94): (("float", "false"), (128,)),
    ("cache_kernels.cu", "copy_blocks_kernel", 68): ((HALF,), (256,)),
    ("cache_kernels.cu", "reshape_and_cache_kernel", 152): ((HALF, HALF, AUTO), (256,)),
    ("cache_kernels.cu", "reshape_and_cache_flash_kernel", 206): ((BF16, BF16, AUTO), (256,)),
    ("cache_kernels.cu", "convert_fp8_kernel", 334): (("uint8_t", HALF, "vllm::Fp8KVCacheDataType::kFp8E4M3"),
                                                      (512,)),
    ("moe_align_block_size_kernels.cu", "moe_align_block_size_kernel", 22): (("int32_t",), (256,)),
    ("quantization/fp8/common.cu", "segmented_max_reduction", 68): ((HALF,), (1024,)),
    ("quantization/fp8/common.cu", "scaled_fp8_quant_kernel", 183): ((HALF,), (1024,)),
    ("quantization/fp8/common.cu", "dynamic_per_token_scaled_fp8_quant_kernel", 197): ((BF16,), (1024,)),
    ("quantization/compressed_tensors/int8_quant_kernels.cu", "static_scaled_int8_quant_kernel", 94):
        ((HALF, "float"), (1024,)),
    ("quantization/compressed_tensors/int8_quant_kernels.cu", "static_scaled_int8_azp_quant_kernel", 108):
        ((HALF, "float", "int32_t"), (1024,)),
    ("quantization/compressed_tensors/int8_quant_kernels.cu", "dynamic_scaled_int8_quant_kernel", 125):
        ((HALF, "float"), (1024,)),
    ("quantization/compressed_tensors/int8_quant_kernels.cu", "dynamic_scaled_int8_azp_quant_kernel", 158):
        (("float", "float", "int32_t"), (1024,)),
}


@dataclass(frozen=True)
class Library:
    """How a library's build reads its files, and the kernels it instantiates."""

    includes: tuple[str, ...]
    """Its include folders, relative to the root."""
    template_arguments: dict
    """(file, kernel, the line its definition starts on): (template arguments, block)."""
    files: tuple[str, ...] = ()
    """The files probed (all but ``skipped`` where empty)."""
    skipped: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    undefines: tuple[str, ...] = ()
    flags: tuple[str, ...] = ("--use_fast_math", "--expt-relaxed-constexpr")
    """PyTorch's extension builder adds --expt-relaxed-constexpr (``COMMON_NVCC_FLAGS``)."""


LIBRARIES = {
    # op_builder/builder.py: C++20 on CUDA >= 12.5 (as torch 2.14's headers need), fast math, the half
    # operators on, bf16 on; include_paths of op_builder/*.py (each build its own and the common one;
    # their headers' names are distinct, so one list serves)
    "deepspeed-0.15.4": Library(
        ("includes", "transformer/inference/includes", "fp_quantizer/includes", "spatial/includes"), DEEPSPEED,
        skipped=("cpu/", "xpu/", "aio/", "gds/", "sparse_attention/", "deepspeed4science/"),  # (host, other
        # platforms, and the kernels built on CUTLASS, a library of its own)
        defines=("BF16_AVAILABLE",),
        undefines=("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__")),
    # cmake/utils.cmake: torch's COMMON_NVCC_FLAGS without the no-half defines (CUDA >= 12), -DENABLE_FP8;
    # its norms, rope, activations, KV cache, MoE alignment and quantisation files (attention and
    # the GEMMs are built on CUTLASS and Marlin)
    "vllm-0.6.3": Library(
        (".",), VLLM, files=tuple(dict.fromkeys(f for f, _, _ in VLLM)), defines=("ENABLE_FP8",),
        flags=("--expt-relaxed-constexpr",)),
}
_KERNEL = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?"
                     r"(?:std::enable_if_t<.*?>\s*)?(\w+)\s*\(", re.DOTALL)
"""(The SFINAE return type of vLLM's ``fused_add_rms_norm_kernel``: up to the first ``>`` a
name and ``(`` follow.)"""


def kernels(path: Path) -> list[tuple[str, int, bool]]:
    """(name, the line its definition starts on, whether it is a template) of each kernel; a
    prototype only where no definition of its name follows (its instances then are explicit
    specialisations, and it is the kernel asked for)."""
    text = path.read_text()
    found, prototypes = [], []
    for match in _KERNEL.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        header = re.search(r"template\s*<[^;{}]*>\s*$", text[max(0, match.start() - 400):match.start()])
        starts = line - header.group().count("\n") if header else line
        rest = re.search(r"[;{]", text[match.end():])
        declared_only = rest is not None and rest.group() == ";"
        (prototypes if declared_only else found).append(
            (match.group(1), starts, header is not None and "<>" not in "".join(header.group().split())))
    defined = {name for name, _, templated in found if templated}
    return sorted(found + [p for p in prototypes if p[0] not in defined], key=lambda k: k[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True, type=Path, help="the folder of the library's sources")
    parser.add_argument("--cases", required=True, choices=sorted(LIBRARIES))
    parser.add_argument("--only", nargs="*", default=(), help="files whose path holds one of these")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    library = LIBRARIES[args.cases]
    options = CompileOptions.from_flags(  # (PyTorch's headers are found by hfuse itself)
        include_dirs=[*(str(args.root / d) for d in library.includes), *cuda_include_dirs()], std="c++20",
        defines=list(library.defines), undefines=list(library.undefines), language_flags=list(library.flags))
    arguments = library.template_arguments
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(args.root.rglob("*.cu")):
            relative = str(path.relative_to(args.root))
            if any(s in relative for s in library.skipped) or (library.files and relative not in library.files) \
                    or (args.only and not any(o in relative for o in args.only)):
                continue
            for name, line, templated in kernels(path):
                row = {"kernel": f"{relative}:{name}@{line}"}
                if templated and (relative, name, line) not in arguments:
                    rows.append({**row, "fused": False, "refusal": "no template arguments in the script's table"})
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
