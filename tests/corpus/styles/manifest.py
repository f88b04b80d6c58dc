"""The kernels of the style corpus: other people's C++ (issue 20), each fused with the
trivial partner ``partner.cu:axpy`` by ``tests/api/test_fuse_styles.py``.

``layout`` is what ``hfuse fuse`` must choose without being told (``interblock`` where a
kernel must run whole blocks of its own)."""
from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path

from hfuse.frontend.options import CompileOptions
from hfuse.spec import Dim3, KernelSpec
from hfuse.toolkit import pytorch_include_dirs

HERE = Path(__file__).resolve().parent
CUTLASS = "-I<cutlass>"
"""A case's flag: ``-I`` to CUTLASS's headers where the nvidia-cutlass package installed them."""
TORCH = "<torch>"
"""A case's flag: the file needs the installed torch's headers (hfuse finds them itself)."""


def cutlass_include() -> Path | None:
    """CUTLASS's ``include`` folder in the installed nvidia-cutlass package (site-packages:
    another project's, which hfuse keeps as ``#include`` lines), or None."""
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    include = Path(list(spec.submodule_search_locations)[0]) / "source" / "include"
    return include if (include / "cute" / "tensor.hpp").is_file() else None


@dataclass(frozen=True)
class Case:
    file: str
    kernel: str
    """``name`` or ``name<args>`` (top-level commas split the arguments)."""
    block: str | int
    layout: str = "horizontal"
    flags: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return f"{self.file}:{self.kernel}"

    def spec(self) -> KernelSpec:
        m = re.match(r"([\w:]+)(?:<(.*)>)?$", self.kernel)
        args = tuple(_split(m.group(2))) if m.group(2) else ()
        return KernelSpec(HERE / self.file, m.group(1), Dim3.of(self.block), args)

    def options(self) -> CompileOptions:
        return options_of(self)

    @property
    def missing(self) -> str | None:
        """Why the case cannot be built here (a library it needs is not installed), or None."""
        if CUTLASS in self.flags and cutlass_include() is None:
            return "nvidia-cutlass is not installed (pip install -e '.[test]' installs it)"
        if TORCH in self.flags and not pytorch_include_dirs():
            return "torch is not installed: its headers are what this file's kernels are written against"
        return None


def options_of(*cases: Case) -> CompileOptions:
    """The build flags of the cases' files together (a pair of files is compiled as one)."""
    flags = [f for case in cases for f in case.flags]
    std = max((f.removeprefix("-std=") for f in flags if f.startswith("-std=")), default=None)
    libraries = list(dict.fromkeys(str(HERE / f.removeprefix("-isystem=")) for f in flags if f.startswith("-isystem=")))
    includes = [str(cutlass_include()) if f == CUTLASS else f[2:] for f in flags if f.startswith("-I")]
    return CompileOptions.from_flags(include_dirs=includes, std=std,
                                     system_include_dirs=libraries,
                                     language_flags=[f for f in flags if not f.startswith(("-I", "-std=", "-isystem="))
                                                     and f != TORCH])


def _split(text: str) -> list[str]:
    out, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "<(" 
        depth -= ch in ">)"
        if ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += ch
    return out + [current.strip()]


CASES = (
    # elementwise.cuh through elementwise.cu: functors, template-template, variadic packs, SFINAE
    Case("elementwise.cu", "ew::unary_kernel<float, ew::Relu<float>>", 256),
    Case("elementwise.cu", "ew::unary_kernel<float, ew::Scale<float>, ew::Unrolled, 2>", 128),
    Case("elementwise.cu", "ew::sum_n_kernel<float, float, float>", 256),
    Case("elementwise.cu", "ew::sum_n_kernel<float, int, float, double>", 128),
    Case("elementwise.cu", "ew::cast_kernel<int, float>", 128),
    Case("elementwise.cu", "ew::scale_inplace", 256),
    # packed vector types
    Case("packed.cu", "mul_half_vec<8>", 128),
    Case("packed.cu", "mul_half_vec<4>", 64),
    Case("packed.cu", "add_half2", 256),
    Case("packed.cu", "bf16x2_fma", 256),
    Case("packed.cu", "float4_copy", 128),
    Case("packed.cu", "widen_bf16", 256),
    # int8/int4 quantisation
    Case("quant.cu", "quantize_rows<Rounding::kTowardZero>", 128),
    Case("quant.cu", "quantize_rows<>", 64),
    Case("quant.cu", "quantize_rows<Rounding::kNearest>", 256),
    Case("quant.cu", "dequantize_groups", 256),
    Case("quant.cu", "unpack_int4", 128),
    # norms: shared-memory block reduction, cooperative-groups tiles
    Case("norms.cu", "norms::rms_norm<float, 256>", 256),
    Case("norms.cu", "norms::rms_norm<__half, 128>", 128),
    Case("norms.cu", "norms::rms_norm<float, 512>", 512),
    Case("norms.cu", "norms::layer_norm_tiles<32>", 128),
    Case("norms.cu", "norms::layer_norm_tiles<16>", 64),
    Case("norms.cu", "norms::row_sums_configured<norms::RowConfig>", 64),
    Case("norms.cu", "norms::row_max_pow2", 128),
    Case("norms.cu", "norms::scale_grid_stride<__half>", 256),
    Case("norms.cu", "norms::scale_grid_stride<float>", 128),
    Case("norms.cu", "norms::block_partials", 256),
    Case("norms.cu", "norms::tile_places", 128),
    Case("norms.cu", "norms::reverse_split_barrier", 256),
    Case("norms.cu", "norms::row_sum_squares", "64x4"),
    Case("norms.cu", "norms::row_sum_squares", 96),
    Case("welford_norm.cu", "cuApplyLayerNorm<float, float, float>", "32x4"),
    Case("welford_norm.cu", "cuApplyLayerNorm<half, float>", "32x4"),
    # traits: SFINAE, if constexpr, specialisation families, overloads, enums
    Case("traits.cu", "power_kernel<float, kSquare>", 256),
    Case("traits.cu", "power_kernel<int, kCube>", 128),
    Case("traits.cu", "chunk_sums<__half>", 128),
    Case("traits.cu", "chunk_sums<int>", 64),
    Case("traits.cu", "scaled_copy", 256),
    Case("traits.cu", "fill_pattern<float, 4>", 128),
    Case("traits.cu", "fill_pattern<int, 1>", 128),
    Case("traits.cu", "fill_pattern<double>", 64),
    # rotary embeddings
    Case("rope.cu", "rotary_embedding_kernel<float, true>", 128),
    Case("rope.cu", "rotary_embedding_kernel<__half, false>", 256),
    Case("rope.cu", "build_cos_sin<128>", 64),
    # optimisers
    Case("optim.cu", "optim::multi_tensor_step<optim::Kind::Adam, 4>", 256),
    Case("optim.cu", "optim::multi_tensor_step<optim::Kind::SGD, 2>", 128),
    Case("optim.cu", "optim::multi_tensor_step<optim::Kind::Momentum, 4>", 128),
    Case("optim.cu", "optim::clip_grad", 256),
    # GEMV
    Case("gemv.cu", "gemv_warp_per_row<4, 128>", 128),
    Case("gemv.cu", "gemv_warp_per_row<8, 256>", 256),
    Case("gemv.cu", "gemv_bf16_splitk<4>", "32x4"),
    Case("gemv.cu", "gemv_bf16_splitk<2>", "64x2"),
    Case("gemv.cu", "reduce_splits", 128),
    # CUB
    Case("cub_style.cu", "kernels::row_softmax<256>", 256, layout="interblock"),
    Case("cub_style.cu", "kernels::warp_dot", 128),
    Case("cub_style.cu", "kernels::quantize_blockwise<1024, 4, 1>", 256, layout="interblock"),
    Case("cub_style.cu", "kernels::quantize_blockwise<512, 4, 0>", 128, layout="interblock"),
    # macro-heavy code: loop, inline and launch-bounds macros, kernels stamped by a macro
    Case("macros.cu", "leaky_relu_kernel", 256),
    Case("macros.cu", "square_kernel", 128),
    Case("macros.cu", "softplus_kernel", 256),
    Case("macros.cu", "gelu_tanh_kernel", 512),
    Case("macros.cu", "masked_fill_kernel", 128),
    # reductions: SharedMemory<T>, volatile-free warp tails, dynamic shared memory, struct shuffles
    Case("reductions.cu", "reduce_sum<float, 256>", 256),
    Case("reductions.cu", "reduce_sum<int, 128>", 128),
    Case("reductions.cu", "histogram_smem", 256),
    Case("reductions.cu", "argmax_rows", 128),
    Case("reductions.cu", "block_sums<128>", 128),
    Case("reductions.cu", "block_sums<512>", 512),
    # embeddings: 64-bit indices, padding index, atomics, fp8
    Case("embedding.cu", "embedding_gather<float, int64_t>", 128),
    Case("embedding.cu", "embedding_gather<__half, int32_t>", 64),
    Case("embedding.cu", "embedding_backward_atomic", "32x4"),
    Case("embedding.cu", "one_hot", 256),
    Case("embedding.cu", "dequant_fp8_rows", 128),
    # causal depthwise convolution
    Case("conv.cu", "causal_conv1d_fwd<4, float, float>", 128),
    Case("conv.cu", "causal_conv1d_fwd<3, __nv_bfloat16, float>", 256),
    Case("conv.cu", "conv_state_update<4>", 128),
    # lambdas, functors given to a generic kernel, constexpr functions, if constexpr on traits
    Case("lambdas.cu", "for_each_index<Saxpy>", 128),
    Case("lambdas.cu", "scale_any<__half>", 256),
    Case("lambdas.cu", "scale_any<float>", 128),
    Case("lambdas.cu", "saxpy_functor", 256),
    Case("lambdas.cu", "local_lambda", 128),
    Case("lambdas.cu", "capture_free_index", 128),
    Case("lambdas.cu", "lambda_dynamic_stage", 128),
    Case("lambdas.cu", "annotated_lambdas<float>", 128, flags=("--extended-lambda",)),
    # built for --expt-relaxed-constexpr: std::max and constexpr helpers without __device__
    Case("relaxed_constexpr.cu", "clamp_rows<__half, 8>", 128, flags=("--expt-relaxed-constexpr",)),
    Case("relaxed_constexpr.cu", "clamp_rows<float, 4>", 256, flags=("--expt-relaxed-constexpr",)),
    Case("relaxed_constexpr.cu", "row_warp_max<float>", 128, flags=("--expt-relaxed-constexpr",)),
    # classes: CRTP, static members, anonymous namespace, nested namespaces, operators
    Case("classes.cu", "crtp_kernel", 128),
    Case("classes.cu", "hash_mask<8>", 256),
    Case("classes.cu", "hash_mask<12>", 64),
    Case("classes.cu", "complex_mac", 128),
    # scans without CUB: shuffles, shared warp totals, ballots
    Case("scan.cu", "block_inclusive_scan<256, int>", 256),
    Case("scan.cu", "block_inclusive_scan<128, float>", 128),
    Case("scan.cu", "count_positive", 256),
    Case("scan.cu", "stream_compact_flags", 128),
    # a vector type with members, a fused residual RMSNorm, __grid_constant__, arch guards, default arguments
    Case("vec_t.cu", "fused_add_rmsnorm_kernel<8, __half>", 128),
    Case("vec_t.cu", "fused_add_rmsnorm_kernel<4, float>", 256),
    Case("vec_t.cu", "relu_half2", 256),
    Case("vec_t.cu", "strided_copy<float>", 128),
    Case("vec_t.cu", "strided_copy<double2>", 64),
    # mixture-of-experts routing
    Case("moe.cu", "topk_gating<64, 2>", 128),
    Case("moe.cu", "topk_gating<128, 8>", 256),
    Case("moe.cu", "count_and_offsets", 256),
    # paged KV caches
    Case("paged.cu", "reshape_and_cache<__half, 128>", 256),
    Case("paged.cu", "reshape_and_cache<float, 64>", 128),
    Case("paged.cu", "gather_cached_kv<128>", 128),
    Case("paged.cu", "paged_scores_v2<64, 16, 128, 256>", 128),
    # libcu++ in device code, warp reduction intrinsics, printf/assert, textures, unions, bitfields
    Case("libcudacxx.cu", "array_minmax<4>", 128),
    Case("libcudacxx.cu", "atomic_ref_count", 256),
    Case("libcudacxx.cu", "warp_reduce_intrinsics", 128),
    Case("libcudacxx.cu", "checked_scale", 256),
    Case("libcudacxx.cu", "texture_gather", 128),
    Case("libcudacxx.cu", "split_floats", 256),
    Case("libcudacxx.cu", "barrier_object_reverse", 128),
    # async copies into shared memory over the part's block (cooperative groups' and libcu++'s),
    # unqualified after a using directive, threads past the end leaving before the waits
    Case("async_copy.cu", "async_tile_reverse", 128),
    Case("async_copy.cu", "barrier_copy_scale", 128),
    Case("async_copy.cu", "staged::pair_sums", 128),
    Case("async_copy.cu", "staged::rotate_tile", 128),
    Case("async_copy.cu", "pipeline_sum", 128),
    # export macros, extern "C" in a namespace, launch bounds from macros, unroll counts from templates
    Case("launch_macros.cu", "ops::fill_ints", 256),
    Case("launch_macros.cu", "ops::unrolled_add<4>", 128),
    # a PyTorch extension file (no -I: PyTorch's folders are found when torch is installed)
    # an installed library's block reduction (-isystem): its B::tid()/B::warps() policy reads
    # threadIdx and blockDim where only the instance names them; whole blocks of the kernel's own size
    Case("block_library.cu", "rms_scale<float>", 256, "interblock", flags=("-isystem=include",)),
    Case("block_library.cu", "rms_scale<__half>", 128, "interblock", flags=("-isystem=include",)),
    Case("block_library.cu", "row_sums", 128, "interblock", flags=("-isystem=include",)),
    Case("block_library.cu", "warp_totals<float>", 256, flags=("-isystem=include",)),
    Case("block_library.cu", "row_squares<float>", 128, "interblock", flags=("-isystem=include",)),
    # a functor given with the kernel's trailing arguments (a parameter pack), the user's or an
    # installed library's (reading threadIdx and blockDim: whole blocks of the kernel's own size);
    # an installed activation given as a template argument (reading threadIdx: whole blocks)
    Case("functor_apply.cu", "chunk_apply<AddChunk, float*, int>", 128, flags=("-isystem=include",)),
    Case("functor_apply.cu", "chunk_apply<blocklib::ScaleChunk, float*, int>", 128, "interblock",
         flags=("-isystem=include",)),
    Case("functor_apply.cu", "act_kernel<float, blocklib::lane_bias>", 256, "interblock", flags=("-isystem=include",)),
    # kernel templates sharing a name, chosen by SFINAE (return type, defaulted parameter)
    Case("overloads.cu", "serve::add_rms_norm<__half, 8, 128>", 128),
    Case("overloads.cu", "serve::add_rms_norm<float, 1, 256>", 256),
    Case("overloads.cu", "serve::add_rms_norm<__half, 1, 64>", 64),
    Case("overloads.cu", "serve::scale_rows<float, 4>", 128),
    Case("overloads.cu", "serve::scale_rows<__half, 1>", 256),
    # CuTe from the installed nvidia-cutlass package, given with -I as FlashAttention gives its CUTLASS:
    # partitions of threadIdx.x, swizzled shared memory, SM80 MMA atoms and cp.async tiled copies
    Case("cute_gemm.cu", "tiled_scale<32, 64>", 256, flags=("-std=c++17", CUTLASS)),
    Case("cute_gemm.cu", "simt_gemm<SimtTraits<64, 64, 8>>", 256, flags=("-std=c++17", CUTLASS)),
    Case("cute_gemm.cu", "tensor_core_gemm<TensorCoreTraits<64, 64, 32, 4>>", 128, flags=("-std=c++17", CUTLASS)),
    # PyTorch's extension build compiles with -std=c++20 (the ATen of recent releases refuses anything older);
    # without torch installed, torch/extension.h is not found and nothing says what its kernels reach there
    Case("torch_ext.cu", "silu_and_mul_kernel<float>", 256, flags=("-std=c++20", TORCH)),
    Case("torch_ext.cu", "bias_add_kernel<double>", 128, flags=("-std=c++20", TORCH)),
    # ATen-adjacent extension code on the installed torch's headers: accessors as parameters, c10
    # scalar types, opmath types, ATen's BlockReduceSum (it reads threadIdx in PyTorch's header)
    Case("torch_aten.cu", "my_ext::scale_rows_kernel<at::Half>", 256, flags=("-std=c++20", TORCH)),
    Case("torch_aten.cu", "my_ext::rms_norm_kernel<float>", 256, layout="interblock", flags=("-std=c++20", TORCH)),
    Case("torch_aten.cu", "my_ext::rms_norm_kernel<c10::BFloat16>", 128, layout="interblock",
         flags=("-std=c++20", TORCH)),
    Case("torch_aten.cu", "my_ext::gelu_kernel<at::BFloat16>", 128, flags=("-std=c++20", TORCH)),
    Case("torch_aten.cu", "my_ext::gelu_kernel<double>", 256, flags=("-std=c++20", TORCH)),
    # a transformer library's scale-mask-softmax: one warp per row, a log2 template, copy specialisations
    Case("warp_softmax.cu", "scaled_masked_softmax_warp_forward<half, half, float, 7>", "32x4",
         flags=("--expt-relaxed-constexpr",)),
    Case("warp_softmax.cu", "scaled_masked_softmax_warp_forward<__nv_bfloat16, __nv_bfloat16, float, 9>", "32x4",
         flags=("--expt-relaxed-constexpr",)),
    # an inference library's block reductions: function-local static __shared__ in template helpers
    Case("block_reduce_static.cu", "fastertransformer::generalLayerNorm<float>", 256),
    Case("block_reduce_static.cu", "fastertransformer::rmsNormV2<half, 4>", 128),
    Case("block_reduce_static.cu", "fastertransformer::rmsNormV2<__nv_bfloat16, 2>", 96),
    # fold expressions, integer sequences, variable templates, __grid_constant__, cuda::std::array
    Case("modern_cxx.cu", "scale_params", 256),
    Case("modern_cxx.cu", "vec_copy<float>", 128),
    Case("modern_cxx.cu", "vec_copy<__half>", 64),
    Case("modern_cxx.cu", "arr_reduce<float>", 128),
    # cooperative groups asked for indices, ranks and sizes
    Case("cg_queries.cu", "cg_index", 128),
    Case("cg_queries.cu", "cg_grid_rank", 128),
    Case("cg_queries.cu", "cg_grid_index", 128),
    Case("cg_queries.cu", "cg_tile_meta", 128),
    Case("cg_queries.cu", "cg_coalesced", 128),
    Case("cg_queries.cu", "cg_sync_block", 256),
    # std::exp, INT_MAX, offsetof, ssize_t without an #include (nvcc's implicit headers)
    Case("implicit_std.cu", "softish", 128, flags=("--expt-relaxed-constexpr",)),
    Case("implicit_std.cu", "limits_offsets", 96, flags=("--expt-relaxed-constexpr",)),
    # deduced explicit specialisations beside a primary that calls its own name; access-size templates
    Case("deduced_specialisations.cu", "quantize_int8_rows<__half, 2>", 128),
    Case("deduced_specialisations.cu", "quantize_int8_rows<float, 4>", 256),
    Case("deduced_specialisations.cu", "fused_residual_add<__half>", 256),
    Case("deduced_specialisations.cu", "fused_residual_add<float>", 128),
    Case("deduced_specialisations.cu", "fused_residual_add<__nv_bfloat16>", 128),
    # block reductions whose primary template is only declared, each instance an explicit
    # specialisation that synchronises the block (each part's copy needs the primary declared)
    Case("reduce_family.cu", "layer_norm_rows<float>", 128),
    Case("reduce_family.cu", "layer_norm_rows<__half>", 256),
    Case("reduce_family.cu", "row_exp_minus_max", 128),
    # a vector layer's primaries in one header, their specialisations in another
    Case("vec_dtype.cu", "attn::qk_dot_kernel<128, 4>", 128),
    Case("vec_dtype.cu", "attn::qk_dot_kernel<64, 2>", 64),
    Case("vec_dtype.cu", "attn::qk_dot_kernel<128, 1>", 96),
    # a C-flavoured inference engine's quantised blocks: function pointers as template arguments,
    # a constexpr selector returning one, typedef'd anonymous structs, rows along threadIdx.y
    Case("ggml_quant.cu", "dequantize_block<QK4_0, QR4_0, dequantize_q4_0, float>", 256),
    Case("ggml_quant.cu", "dequantize_block<QK8_0, QR8_0, dequantize_q8_0, float>", 128),
    Case("ggml_quant.cu", "mul_mat_vec_q<QTYPE_Q4_0>", "32x4"),
    Case("ggml_quant.cu", "mul_mat_vec_q<QTYPE_Q8_0>", "32x2"),
    Case("ggml_quant.cu", "rms_norm_f32<32>", "32x4"),
    Case("ggml_quant.cu", "rms_norm_f32<256>", 256),
    Case("ggml_quant.cu", "dequantize_block_q4_super<float>", 32),
    # blockwise quantisation: CUB block load/store/reduce typedefs, an enum template argument,
    # explicit instantiations stamped out by a macro
    Case("blockwise_quant.cu", "quantize_blockwise<half, 1024, 4, Linear8>", 256, layout="interblock"),
    Case("blockwise_quant.cu", "quantize_blockwise<float, 256, 2, Table4>", 128, layout="interblock"),
    Case("blockwise_quant.cu", "dequantize_blockwise<half, 512, 64, 8, Linear8>", 64, layout="interblock"),
    Case("blockwise_quant.cu", "dequantize_blockwise<float, 512, 64, 8, Table4>", 64, layout="interblock"),
    # a variadic kernel template handing a chunk table and trailing arguments to a functor
    Case("multi_tensor.cu", "apply_chunks<ChunkTable<4>, AdamStep<float>, float, float, float, float, float, float, "
         "decay_mode_t, float>", 512),
    Case("multi_tensor.cu", "apply_chunks<ChunkTable<2>, ScaleStep<half, float>, float>", 256),
    # inline PTX helpers (cp.async, lop3, mma.sync), uint32_t by way of <cuda.h> only
    Case("asm_mma.cu", "w4::warp_mma_w4<256>", 256),
    Case("asm_mma.cu", "w4::warp_mma_w4<128>", 128),
    Case("asm_mma.cu", "w4::staged_unpack<128>", 128),
    # ns::Trait<T>::member, CRTP, if constexpr, folds, bit_cast, match/reduce, fp8, atomic_ref,
    # extern "C", static and anonymous kernels, __grid_constant__, __maxnreg__
    Case("modern_lib.cu", "kern::act_and_mul<half, kern::detail::Silu>", 256),
    Case("modern_lib.cu", "kern::act_and_mul<__nv_bfloat16, kern::detail::GeluTanh>", 128),
    Case("modern_lib.cu", "kern::top_byte_histogram", 128),
    Case("modern_lib.cu", "c_scale", 128),
    Case("modern_lib.cu", "static_relu", 256),
    Case("modern_lib.cu", "anonymous_square", 64),
    Case("modern_lib.cu", "scale_by_params", 128),
    Case("modern_lib.cu", "capped_sin", 128),
    Case("modern_lib.cu", "to_fp8", 256),
    Case("modern_lib.cu", "abs_max", 256),
    # a training program's kernels: 32 x rows blocks, a function pointer template argument of a
    # block reduction, all-default template parameters fused without arguments
    Case("train_kernels.cu", "row_layernorm", "32x4"),
    Case("train_kernels.cu", "adam_slices<act_t, act_t>", 512),
    Case("train_kernels.cu", "adam_slices<float, float>", 256),
    Case("train_kernels.cu", "softmax_xent", 512),
    Case("train_kernels.cu", "softmax_xent<false, true>", 256),
    Case("train_kernels.cu", "norm_squared", 512),
    Case("train_kernels.cu", "residual_add", 256),
)
