"""GPU twin of test_fuse_styles.py: each kernel of the style corpus, fused after the trivial
partner (at thread offset 96, or in the layout ``hfuse fuse`` picks), computes bit for bit
what it computes alone, on fresh random inputs.

The originals are compiled from ``hfuse.api.device_source`` (as ``hfuse tune`` compiles
them) and run alone; the fused kernel runs on identical fresh inputs. Floating-point
atomics get integer-valued inputs, so their sums do not depend on the order. Kernels
that take a struct by value (functors, parameter blocks, tensor lists) are left to a
harness that packs structs (CuPy's kernel arguments are arrays and scalars).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.spec import Dim3, KernelSpec

from corpus.styles.manifest import CASES, HERE
from gpu_harness import Launch, cdiv, differences

pytestmark = pytest.mark.gpu

N = 1 << 15
ROWS, COLS = 96, 256


def _f32(rng, cp, n=N, integers=False):
    values = rng.integers(-8, 8, n).astype(np.float32) if integers else rng.standard_normal(n, dtype=np.float32)
    return cp.asarray(values)


def _f64(rng, cp, n=N):
    return cp.asarray(rng.standard_normal(n))


def _f16(rng, cp, n=N):
    return cp.asarray(rng.standard_normal(n).astype(np.float16))


def _bf16(rng, cp, n=N):
    # bfloat16 as the upper half of float32 (CuPy has no bfloat16 dtype)
    return cp.asarray((rng.standard_normal(n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16))


def _i32(rng, cp, n=N, low=-1000, high=1000):
    return cp.asarray(rng.integers(low, high, n, dtype=np.int32))


def _zeros(cp, n=N, dtype=np.float32):
    return cp.zeros(n, dtype=dtype)


def _flat(block: Dim3, n: int = N, per_thread: int = 1) -> Dim3:
    return Dim3(cdiv(n, block.size * per_thread))


Maker = Callable[[np.random.Generator, Any, Dim3], Launch]

MAKERS: dict[str, Maker] = {
    # elementwise.cu
    "ew::sum_n_kernel<float, float, float>": lambda rng, cp, b: Launch(
        [_zeros(cp), np.int32(N), _f32(rng, cp), _f32(rng, cp)], _flat(b), 0, (0,)),
    "ew::sum_n_kernel<float, int, float, double>": lambda rng, cp, b: Launch(
        [_zeros(cp), np.int32(N), _i32(rng, cp), _f32(rng, cp), _f64(rng, cp)], _flat(b), 0, (0,)),
    "ew::cast_kernel<int, float>": lambda rng, cp, b: Launch([_i32(rng, cp), _zeros(cp), np.int32(N)], Dim3(40), 0, (1,)),
    # packed.cu
    "mul_half_vec<8>": lambda rng, cp, b: Launch([_f16(rng, cp), _f16(rng, cp), _zeros(cp, N, np.float16), np.int32(N)],
                                                 _flat(b, N, 8), 0, (2,)),
    "mul_half_vec<4>": lambda rng, cp, b: Launch([_f16(rng, cp), _f16(rng, cp), _zeros(cp, N, np.float16), np.int32(N)],
                                                 _flat(b, N, 4), 0, (2,)),
    "add_half2": lambda rng, cp, b: Launch([_f16(rng, cp), _f16(rng, cp), _zeros(cp, N, np.float16), np.int32(N // 2)],
                                           _flat(b, N // 2), 0, (2,)),
    "bf16x2_fma": lambda rng, cp, b: Launch([_bf16(rng, cp), _bf16(rng, cp), _bf16(rng, cp), np.int32(N // 2)],
                                            _flat(b, N // 2), 0, (2,)),
    "float4_copy": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N // 4)], Dim3(30), 0, (1,)),
    "widen_bf16": lambda rng, cp, b: Launch([_bf16(rng, cp), _zeros(cp), np.int32(N)], _flat(b, N, 2), 0, (1,)),
    # quant.cu (one warp per row)
    "quantize_rows<Rounding::kTowardZero>": lambda rng, cp, b: Launch(
        [_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS * COLS, np.int8), _zeros(cp, ROWS), np.int32(ROWS), np.int32(COLS)],
        Dim3(cdiv(ROWS * 32, b.size)), 0, (1, 2)),
    "dequantize_groups": lambda rng, cp, b: Launch(
        [cp.asarray(rng.integers(-127, 128, N, dtype=np.int8)), _f16(rng, cp, N // 64), _zeros(cp), np.int32(N)],
        _flat(b), 0, (2,)),
    "unpack_int4": lambda rng, cp, b: Launch(
        [cp.asarray(rng.integers(0, 256, N // 2, dtype=np.uint8)), _zeros(cp, N, np.int8), np.int32(N // 2)],
        _flat(b, N // 2), 0, (1,)),
    # norms.cu (one block, or one tile, per row)
    "norms::rms_norm<float, 256>": lambda rng, cp, b: Launch(
        [_f32(rng, cp, ROWS * COLS), _f32(rng, cp, COLS), _zeros(cp, ROWS * COLS), np.int32(COLS), np.float32(1e-6)],
        Dim3(ROWS), 0, (2,)),
    "norms::rms_norm<__half, 128>": lambda rng, cp, b: Launch(
        [_f16(rng, cp, ROWS * COLS), _f16(rng, cp, COLS), _zeros(cp, ROWS * COLS, np.float16), np.int32(COLS),
         np.float32(1e-6)], Dim3(ROWS), 0, (2,)),
    "norms::rms_norm<float, 512>": lambda rng, cp, b: Launch(
        [_f32(rng, cp, ROWS * COLS), _f32(rng, cp, COLS), _zeros(cp, ROWS * COLS), np.int32(COLS), np.float32(1e-6)],
        Dim3(ROWS), 0, (2,)),
    "norms::layer_norm_tiles<32>": lambda rng, cp, b: Launch(
        [_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS * COLS), np.int32(ROWS), np.int32(COLS)],
        Dim3(cdiv(ROWS, b.size // 32)), 0, (1,)),
    "norms::layer_norm_tiles<16>": lambda rng, cp, b: Launch(
        [_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS * COLS), np.int32(ROWS), np.int32(COLS)],
        Dim3(cdiv(ROWS, b.size // 16)), 0, (1,)),
    "norms::row_sums_configured<norms::RowConfig>": lambda rng, cp, b: Launch(
        [_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS), np.int32(ROWS), np.int32(COLS)], Dim3(cdiv(ROWS, 4)), 0, (1,)),
    "norms::row_max_pow2": lambda rng, cp, b: Launch(
        [_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS), np.int32(ROWS), np.int32(COLS)], Dim3(cdiv(ROWS, b.size // 16)),
        0, (1,)),
    # norms.cu: grid-stride loops over cg::this_grid() (a 2-D grid of fewer blocks than the data asks)
    "norms::scale_grid_stride<__half>": lambda rng, cp, b: Launch(
        [_f16(rng, cp), _zeros(cp, N, np.float16), np.float32(0.5), np.uint64(N)], Dim3(20), 0, (1,)),
    "norms::scale_grid_stride<float>": lambda rng, cp, b: Launch(
        [_f32(rng, cp), _zeros(cp), np.float32(-2.0), np.uint64(N)], Dim3(7, 3), 0, (1,)),
    "norms::block_partials": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp, 24), np.int32(N)], Dim3(4, 6), 0,
                                                       (1,)),
    "norms::tile_places": lambda rng, cp, b: Launch([_zeros(cp, 40 * 128, np.int32)], Dim3(40), 0, (0,)),
    "norms::reverse_split_barrier": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)], _flat(b), 0, (1,)),
    "norms::row_sum_squares": lambda rng, cp, b: Launch([_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS), np.int32(COLS)],
                                                        Dim3(ROWS), 0, (1,)),
    # traits.cu
    "chunk_sums<__half>": lambda rng, cp, b: Launch([_f16(rng, cp), _zeros(cp, N // 8), np.int32(N), np.int32(8)],
                                                    _flat(b, N // 8), 0, (1,)),
    "chunk_sums<int>": lambda rng, cp, b: Launch([_i32(rng, cp), _zeros(cp, N // 8, np.int64), np.int32(N), np.int32(8)],
                                                 _flat(b, N // 8), 0, (1,)),
    # explicit specialisations: <float, 4> and <int, 1> run theirs, <double> the primary
    "fill_pattern<float, 4>": lambda rng, cp, b: Launch([_f32(rng, cp), np.int32(N)], _flat(b, N, 4), 0, (0,)),
    "fill_pattern<int, 1>": lambda rng, cp, b: Launch([_i32(rng, cp), np.int32(N)], _flat(b), 0, (0,)),
    "fill_pattern<double>": lambda rng, cp, b: Launch([_f64(rng, cp), np.int32(N)], _flat(b), 0, (0,)),
    # rope.cu: 64 tokens, 8 query heads, 2 KV heads, head size 64, full rotary dimension
    "rotary_embedding_kernel<float, true>": lambda rng, cp, b: _rope(rng, cp, np.float32),
    "rotary_embedding_kernel<__half, false>": lambda rng, cp, b: _rope(rng, cp, np.float16),
    "build_cos_sin<128>": lambda rng, cp, b: Launch([_zeros(cp, 512 * 128), np.int32(512), np.float32(10000.0)],
                                                    Dim3(512), 0, (0,)),
    # optim.cu
    "optim::clip_grad": lambda rng, cp, b: Launch([_f32(rng, cp), np.int32(N), np.float32(0.5)], _flat(b), 0, (0,)),
    # gemv.cu
    "gemv_warp_per_row<4, 128>": lambda rng, cp, b: Launch(
        [_f32(rng, cp, ROWS * COLS), _f32(rng, cp, COLS), _zeros(cp, ROWS), np.int32(ROWS), np.int32(COLS)],
        Dim3(cdiv(ROWS, 4)), 0, (2,)),
    "gemv_warp_per_row<8, 256>": lambda rng, cp, b: Launch(
        [_f32(rng, cp, ROWS * COLS), _f32(rng, cp, COLS), _zeros(cp, ROWS), np.int32(ROWS), np.int32(COLS)],
        Dim3(cdiv(ROWS, 8)), 0, (2,)),
    "gemv_bf16_splitk<4>": lambda rng, cp, b: Launch(
        [_bf16(rng, cp, ROWS * COLS), _f32(rng, cp, COLS), _zeros(cp, 4 * ROWS), np.int32(ROWS), np.int32(COLS)],
        Dim3(cdiv(ROWS, b.y), 4), 0, (2,)),
    "gemv_bf16_splitk<2>": lambda rng, cp, b: Launch(
        [_bf16(rng, cp, ROWS * COLS), _f32(rng, cp, COLS), _zeros(cp, 2 * ROWS), np.int32(ROWS), np.int32(COLS)],
        Dim3(cdiv(ROWS, b.y), 2), 0, (2,)),
    "reduce_splits": lambda rng, cp, b: Launch([_f32(rng, cp, 4 * ROWS), _zeros(cp, ROWS), np.int32(ROWS), np.int32(4)],
                                               _flat(b, ROWS), 0, (1,)),
    # cub_style.cu
    "kernels::row_softmax<256>": lambda rng, cp, b: Launch(
        [_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS * COLS), np.int32(COLS)], Dim3(ROWS), 0, (1,)),
    "kernels::warp_dot": lambda rng, cp, b: Launch([_f32(rng, cp), _f32(rng, cp), _zeros(cp, 4 * (N // 128)), np.int32(N)],
                                                   _flat(b), 0, (2,)),
    # macros.cu
    "leaky_relu_kernel": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.float32(0.1), np.int64(N)], Dim3(50), 0,
                                                   (1,)),
    "square_kernel": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int64(N)], Dim3(50), 0, (1,)),
    "softplus_kernel": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int64(N)], Dim3(50), 0, (1,)),
    "gelu_tanh_kernel": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int64(N)], Dim3(20), 0, (1,)),
    "masked_fill_kernel": lambda rng, cp, b: Launch(
        [_f32(rng, cp), cp.asarray(rng.integers(0, 2, N, dtype=np.uint8)), np.float32(-1.0), np.int32(N)], _flat(b), 0,
        (0,)),
    # reductions.cu
    "reduce_sum<float, 256>": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp, N // 512), np.uint32(N)],
                                                        Dim3(N // 512), 256 * 4, (1,)),
    "reduce_sum<int, 128>": lambda rng, cp, b: Launch([_i32(rng, cp), _zeros(cp, N // 256, np.int32), np.uint32(N)],
                                                      Dim3(N // 256), 128 * 4, (1,)),
    "histogram_smem": lambda rng, cp, b: Launch(
        [cp.asarray(rng.integers(0, 256, N, dtype=np.uint8)), _zeros(cp, 100, np.uint32), np.int32(N), np.int32(100)],
        Dim3(24), 100 * 4, (1,)),
    "argmax_rows": lambda rng, cp, b: Launch([_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS, np.int32), np.int32(ROWS),
                                              np.int32(COLS)], Dim3(cdiv(ROWS * 32, b.size)), 0, (1,)),
    "block_sums<128>": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp, N // 128), np.int32(N)], Dim3(N // 128), 0,
                                                 (1,)),
    "block_sums<512>": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp, N // 512), np.int32(N)], Dim3(N // 512), 0,
                                                 (1,)),
    # embedding.cu
    "embedding_gather<float, int64_t>": lambda rng, cp, b: Launch(
        [cp.asarray(rng.integers(0, 500, 300, dtype=np.int64)), _f32(rng, cp, 500 * 64), _zeros(cp, 300 * 64),
         np.int64(300), np.int64(64), np.int64(3)], Dim3(300), 0, (2,)),
    "embedding_gather<__half, int32_t>": lambda rng, cp, b: Launch(
        [cp.asarray(rng.integers(0, 500, 300, dtype=np.int32)), _f16(rng, cp, 500 * 64), _zeros(cp, 300 * 64, np.float16),
         np.int64(300), np.int64(64), np.int32(3)], Dim3(300), 0, (2,)),
    "embedding_backward_atomic": lambda rng, cp, b: Launch(
        [cp.asarray(rng.integers(0, 50, 400, dtype=np.int64)), _f32(rng, cp, 400 * 64, integers=True),
         _zeros(cp, 50 * 64), np.int64(400), np.int32(64)], Dim3(cdiv(400, b.y)), 0, (2,)),
    "one_hot": lambda rng, cp, b: Launch([_i32(rng, cp, 1000, 0, 10), _zeros(cp, 10_000), np.int32(1000), np.int32(10)],
                                         _flat(b, 10_000), 0, (1,)),
    "dequant_fp8_rows": lambda rng, cp, b: Launch(
        [cp.asarray(rng.integers(0, 0x78, ROWS * COLS, dtype=np.uint8)), _f32(rng, cp, ROWS),
         _zeros(cp, ROWS * COLS, np.float16), np.int32(ROWS), np.int32(COLS)], Dim3(cdiv(COLS, b.x), ROWS), 0, (2,)),
    # conv.cu: 64 channels (gridDim.y), 1000 steps
    "causal_conv1d_fwd<4, float, float>": lambda rng, cp, b: Launch(
        [_f32(rng, cp, 1000 * 64), _f32(rng, cp, 64 * 4), _f32(rng, cp, 64), _zeros(cp, 1000 * 64), np.int32(1000),
         np.bool_(True)], Dim3(4, 64), 0, (3,)),
    "causal_conv1d_fwd<3, __nv_bfloat16, float>": lambda rng, cp, b: Launch(
        [_bf16(rng, cp, 1000 * 64), _f32(rng, cp, 64 * 3), _f32(rng, cp, 64), _zeros(cp, 1000 * 64, np.uint16),
         np.int32(1000), np.bool_(False)], Dim3(2, 64), 0, (3,)),
    "conv_state_update<4>": lambda rng, cp, b: Launch([_f32(rng, cp, 3 * 4096), _f32(rng, cp, 4096), np.int32(4096)],
                                                      _flat(b, 4096), 0, (0,)),
    # lambdas.cu
    "scale_any<__half>": lambda rng, cp, b: Launch([_f16(rng, cp), _zeros(cp), np.float32(0.5), np.int32(N)], _flat(b), 0,
                                                   (1,)),
    "scale_any<float>": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.float32(0.5), np.int32(N)], _flat(b), 0,
                                                  (1,)),
    "local_lambda": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)], _flat(b), 0, (1,)),
    "capture_free_index": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)], _flat(b), 0, (1,)),
    "lambda_dynamic_stage": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)], _flat(b),
                                                      4 * b.size, (1,)),
    # classes.cu
    "crtp_kernel": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)], _flat(b), 0, (1,)),
    "hash_mask<8>": lambda rng, cp, b: Launch([_i32(rng, cp, N, 0, 1 << 30), _zeros(cp, N, np.uint32), np.int32(N)],
                                              _flat(b), 0, (1,)),
    "hash_mask<12>": lambda rng, cp, b: Launch([_i32(rng, cp, N, 0, 1 << 30), _zeros(cp, N, np.uint32), np.int32(N)],
                                               _flat(b), 0, (1,)),
    "complex_mac": lambda rng, cp, b: Launch([_f32(rng, cp, 2 * N), _f32(rng, cp, 2 * N), _f32(rng, cp, 2 * N),
                                              np.int32(N)], _flat(b), 0, (2,)),
    # scan.cu
    "block_inclusive_scan<256, int>": lambda rng, cp, b: Launch([_i32(rng, cp), _zeros(cp, N, np.int32), np.int32(N)],
                                                                Dim3(N // 256), 0, (1,)),
    "block_inclusive_scan<128, float>": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)],
                                                                  Dim3(N // 128), 0, (1,)),
    "count_positive": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp, N // b.size, np.int32), np.int32(N)],
                                                _flat(b), 0, (1,)),
    "stream_compact_flags": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp, N // 32, np.uint32), np.int32(N)],
                                                      _flat(b), 0, (1,)),
    # vec_t.cu
    "relu_half2": lambda rng, cp, b: Launch([_f16(rng, cp), np.int32(N // 2)], _flat(b, N // 2), 0, (0,)),
    "strided_copy<float>": lambda rng, cp, b: Launch([_f32(rng, cp, 2 * N), _zeros(cp), np.int32(N), np.int32(2)],
                                                     _flat(b), 0, (1,)),
    "strided_copy<double2>": lambda rng, cp, b: Launch([_f64(rng, cp, 2 * N), _zeros(cp, N, np.float64), np.int32(N // 2),
                                                        np.int32(1)], _flat(b, N // 2), 0, (1,)),
    # moe.cu: one warp per token
    "topk_gating<64, 2>": lambda rng, cp, b: Launch([_f32(rng, cp, 256 * 64), _zeros(cp, 256 * 2),
                                                     _zeros(cp, 256 * 2, np.int32), np.int32(256)],
                                                    Dim3(cdiv(256, b.size // 32)), 0, (1, 2)),
    "topk_gating<128, 8>": lambda rng, cp, b: Launch([_f32(rng, cp, 256 * 128), _zeros(cp, 256 * 8),
                                                      _zeros(cp, 256 * 8, np.int32), np.int32(256)],
                                                     Dim3(cdiv(256, b.size // 32)), 0, (1, 2)),
    "count_and_offsets": lambda rng, cp, b: Launch([_i32(rng, cp, N, 0, 64), _zeros(cp, 64, np.int32),
                                                    _zeros(cp, 64, np.int32), np.int32(N), np.int32(64)], Dim3(1),
                                                   64 * 4, (1, 2)),
    # paged.cu: 64 tokens, 4 heads, blocks of 16 slots
    "reshape_and_cache<__half, 128>": lambda rng, cp, b: _paged(rng, cp, np.float16, 128),
    "reshape_and_cache<float, 64>": lambda rng, cp, b: _paged(rng, cp, np.float32, 64),
    "gather_cached_kv<128>": lambda rng, cp, b: Launch(
        [_f16(rng, cp, 32 * 4 * 16 * 128), cp.asarray(rng.permutation(32).astype(np.int32)),
         _zeros(cp, 2 * 64 * 4 * 128, np.float16), np.int32(64), np.int32(4), np.int32(16), np.int32(16)],
        Dim3(64, 2), 0, (2,)),
    "annotated_lambdas<float>": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)], _flat(b), 0, (1,)),
    # 6 sequences of up to 4 partitions of 256 tokens: the partitions past a sequence's end leave early
    "paged_scores_v2<64, 16, 128, 256>": lambda rng, cp, b: Launch(
        [_zeros(cp, 6 * 4), _f16(rng, cp, 6 * 64), _f16(rng, cp, 384 * 16 * 64),
         cp.asarray(rng.permutation(384).astype(np.int32)), _i32(rng, cp, 6, 1, 1024), np.int32(64),
         np.float32(0.125)], Dim3(1, 6, 4), 0, (0,)),
    # libcudacxx.cu (texture_gather needs a texture object: not here)
    "array_minmax<4>": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)], _flat(b), 0, (1,)),
    "atomic_ref_count": lambda rng, cp, b: Launch([_i32(rng, cp, N, 0, 50), _zeros(cp, 50, np.int32), np.int32(N)],
                                                  _flat(b), 0, (1,)),
    "warp_reduce_intrinsics": lambda rng, cp, b: Launch(
        [_i32(rng, cp, N, 0, 1000), _zeros(cp, N // 32, np.uint32), _zeros(cp, N, np.uint32), np.int32(N)], _flat(b), 0,
        (1, 2)),
    "checked_scale": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.float32(3.0), np.int32(N)], _flat(b), 0,
                                               (1,)),
    "split_floats": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp, N, np.uint32), np.int32(N)], _flat(b), 0, (1,)),
    "barrier_object_reverse": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)], _flat(b), 0, (1,)),
    # async_copy.cu: n stops 37 short of the arrays, so the last block's tile is short and its
    # last warp leaves before the waits (and one more block of async_tile_reverse leaves whole)
    "async_tile_reverse": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N - 37)],
                                                    Dim3(cdiv(N, 128) + 1), 0, (1,)),
    "barrier_copy_scale": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.float32(1.5), np.int32(N - 37)],
                                                    _flat(b), 0, (1,)),
    "staged::pair_sums": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N - 37)],
                                                   Dim3(cdiv(N - 37, 256)), 0, (1,)),
    "staged::rotate_tile": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N - 37)], _flat(b), 0, (1,)),
    # 64 blocks of 4 tiles each through a two-stage pipeline
    "pipeline_sum": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp, 64 * 128), np.int32(4)], Dim3(64), 0, (1,)),
    # launch_macros.cu
    "ops::fill_ints": lambda rng, cp, b: Launch([_zeros(cp, N, np.int32), np.int32(7), np.int32(N)], _flat(b), 0, (0,)),
    "ops::unrolled_add<4>": lambda rng, cp, b: Launch([_f32(rng, cp), _f32(rng, cp), np.int32(N)], _flat(b, N, 4), 0,
                                                      (1,)),
    # block_library.cu: a kept header's block reduction, in whole blocks of the kernel's own size
    "rms_scale<float>": lambda rng, cp, b: Launch([_zeros(cp, ROWS * COLS), _f32(rng, cp, ROWS * COLS), np.int32(COLS)],
                                                  Dim3(ROWS), 0, (0,)),
    "rms_scale<__half>": lambda rng, cp, b: Launch([_zeros(cp, ROWS * COLS, np.float16), _f16(rng, cp, ROWS * COLS),
                                                    np.int32(COLS)], Dim3(ROWS), 0, (0,)),
    "row_sums": lambda rng, cp, b: Launch([_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS), np.int32(COLS)], Dim3(ROWS), 0,
                                          (1,)),
    "warp_totals<float>": lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp, N // 32), np.int32(N)], _flat(b), 0, (1,)),
    # functor_apply.cu: a functor of one float is passed as one (the same 4 bytes of parameters)
    "chunk_apply<AddChunk, float*, int>": lambda rng, cp, b: Launch(
        [np.int32(1000), np.float32(0.75), _f32(rng, cp), np.int32(N)], Dim3(cdiv(N, 1000)), 0, (2,)),
    "chunk_apply<blocklib::ScaleChunk, float*, int>": lambda rng, cp, b: Launch(
        [np.int32(1000), np.float32(1.25), _f32(rng, cp), np.int32(N)], Dim3(cdiv(N, 1000)), 0, (2,)),
    "act_kernel<float, blocklib::lane_bias>": lambda rng, cp, b: Launch([_zeros(cp), _f32(rng, cp), np.int32(N)],
                                                                        _flat(b), 0, (0,)),
    # torch_ext.cu
    "silu_and_mul_kernel<float>": lambda rng, cp, b: Launch([_f32(rng, cp, 64 * 2 * 512), _zeros(cp, 64 * 512),
                                                             np.int32(512)], Dim3(64), 0, (1,)),
    "bias_add_kernel<double>": lambda rng, cp, b: Launch([_f64(rng, cp), _f64(rng, cp, 128), np.int64(N), np.int64(128)],
                                                         _flat(b), 0, (0,)),
}


def _add_rms_norm(rng, cp, dtype) -> Launch:
    # x and residual both written: the packed overload writes the sum to residual, the norm to x
    x, residual = (cp.asarray(rng.standard_normal(ROWS * COLS).astype(dtype)) for _ in range(2))
    weight = cp.asarray(rng.standard_normal(COLS).astype(dtype))
    return Launch([x, residual, weight, np.float32(1e-6), np.int32(COLS)], Dim3(ROWS), 0, (0, 1))


# cub_style.cu: blockwise quantisation, one block of kBlock values each (the last one partial)
MAKERS["kernels::quantize_blockwise<1024, 4, 1>"] = lambda rng, cp, b: Launch(
    [_f32(rng, cp, N - 100), _zeros(cp, cdiv(N, 1024)), _zeros(cp, N // 2, np.uint8), np.int32(N - 100)],
    Dim3(cdiv(N - 100, 1024)), 0, (1, 2))
MAKERS["kernels::quantize_blockwise<512, 4, 0>"] = lambda rng, cp, b: Launch(
    [_f32(rng, cp, N - 100), _zeros(cp, cdiv(N, 512)), _zeros(cp, N, np.uint8), np.int32(N - 100)],
    Dim3(cdiv(N - 100, 512)), 0, (1, 2))
MAKERS["row_squares<float>"] = lambda rng, cp, b: Launch(
    [_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS), np.int32(COLS)], Dim3(ROWS), 0, (1,))
# overloads.cu: kernel templates of one name, the overload chosen by SFINAE
MAKERS["serve::add_rms_norm<__half, 8, 128>"] = lambda rng, cp, b: _add_rms_norm(rng, cp, np.float16)
MAKERS["serve::add_rms_norm<__half, 1, 64>"] = lambda rng, cp, b: _add_rms_norm(rng, cp, np.float16)
MAKERS["serve::add_rms_norm<float, 1, 256>"] = lambda rng, cp, b: _add_rms_norm(rng, cp, np.float32)
MAKERS["serve::scale_rows<float, 4>"] = lambda rng, cp, b: Launch(
    [_f32(rng, cp), _zeros(cp), np.float32(0.75), np.int32(N)], _flat(b, N, 4), 0, (1,))
MAKERS["serve::scale_rows<__half, 1>"] = lambda rng, cp, b: Launch(
    [_f16(rng, cp), _zeros(cp, N, np.float16), np.float32(0.75), np.int32(N)], _flat(b), 0, (1,))
# cute_gemm.cu: 128 x 256 scaled in 32 x 64 tiles; C (128 x 128) = A (128 x 64) B^T in 64 x 64 tiles
MAKERS["tiled_scale<32, 64>"] = lambda rng, cp, b: Launch(
    [_f32(rng, cp, 128 * 256), _zeros(cp, 128 * 256), np.int32(128), np.int32(256), np.float32(1.5)], Dim3(4, 4), 0, (1,))
MAKERS["simt_gemm<SimtTraits<64, 64, 8>>"] = lambda rng, cp, b: Launch(
    [_f32(rng, cp, 128 * 64), _f32(rng, cp, 128 * 64), _zeros(cp, 128 * 128), np.int32(128), np.int32(128),
     np.int32(64)], Dim3(2, 2), (64 + 64) * 8 * 4, (2,))
MAKERS["tensor_core_gemm<TensorCoreTraits<64, 64, 32, 4>>"] = lambda rng, cp, b: Launch(
    [_f16(rng, cp, 128 * 64), _f16(rng, cp, 128 * 64), _zeros(cp, 128 * 128), np.int32(128), np.int32(128),
     np.int32(64)], Dim3(2, 2), (64 + 64) * 32 * 2, (2,))
MAKERS["quantize_rows<>"] = MAKERS["quantize_rows<Rounding::kNearest>"] = MAKERS["quantize_rows<Rounding::kTowardZero>"]


def _softmax(rng, cp, cols: int, rows_per_warp: int, make: Callable, dtype: Any) -> Launch:
    # 64 rows, 0/1 masks; a block is four warps (32 x 4), each taking rows_per_warp rows
    rows = 64
    return Launch([cp.zeros(rows * cols, dtype=dtype), make(rng, cp, rows * cols),
                   cp.asarray(rng.integers(0, 2, rows * cols, dtype=np.uint8)), np.float32(0.5), np.int32(rows),
                   np.int32(cols), np.int32(1)], Dim3(rows // (4 * rows_per_warp)), 0, (0,))


# warp_softmax.cu, block_reduce_static.cu, modern_cxx.cu, cg_queries.cu, implicit_std.cu
MAKERS["scaled_masked_softmax_warp_forward<half, half, float, 7>"] = lambda rng, cp, b: _softmax(
    rng, cp, 128, 2, _f16, np.float16)
MAKERS["scaled_masked_softmax_warp_forward<__nv_bfloat16, __nv_bfloat16, float, 9>"] = lambda rng, cp, b: _softmax(
    rng, cp, 512, 1, _bf16, np.uint16)
MAKERS["fastertransformer::generalLayerNorm<float>"] = lambda rng, cp, b: Launch(
    [_f32(rng, cp, ROWS * COLS), _f32(rng, cp, COLS), _f32(rng, cp, COLS), _zeros(cp, ROWS * COLS), np.float32(1e-5),
     np.int32(ROWS), np.int32(COLS)], Dim3(ROWS), 0, (3,))
MAKERS["fastertransformer::rmsNormV2<half, 4>"] = lambda rng, cp, b: Launch(
    [_f16(rng, cp, ROWS * 512), _f16(rng, cp, 512), _zeros(cp, ROWS * 512, np.float16), np.float32(1e-5),
     np.int32(512)], Dim3(ROWS), 0, (2,))
MAKERS["fastertransformer::rmsNormV2<__nv_bfloat16, 2>"] = lambda rng, cp, b: Launch(
    [_bf16(rng, cp, ROWS * 192), _bf16(rng, cp, 192), _zeros(cp, ROWS * 192, np.uint16), np.float32(1e-5),
     np.int32(192)], Dim3(ROWS), 0, (2,))
MAKERS["vec_copy<float>"] = lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)], _flat(b, N, 4), 0, (1,))
MAKERS["vec_copy<__half>"] = lambda rng, cp, b: Launch(
    [_f16(rng, cp), _zeros(cp, N, np.float16), np.int32(N)], _flat(b, N, 8), 0, (1,))
MAKERS["arr_reduce<float>"] = lambda rng, cp, b: Launch(  # integer values: float atomics sum exactly
    [_f32(rng, cp, integers=True), _zeros(cp, 1), np.int32(N)], Dim3(40), 0, (1,))
MAKERS.update({name: (lambda rng, cp, b: Launch([_zeros(cp), np.int32(N)], _flat(b), 0, (0,)))
               for name in ("cg_index", "cg_grid_rank", "cg_grid_index", "cg_sync_block")})
MAKERS["softish"] = lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp), np.int32(N)], _flat(b), 0, (1,))
MAKERS["cg_tile_meta"] = lambda rng, cp, b: Launch([_f32(rng, cp), np.int32(N)], _flat(b), 0, (0,))
MAKERS["cg_coalesced"] = lambda rng, cp, b: Launch([_zeros(cp, N, np.int32), np.int32(N)], _flat(b), 0, (0,))
MAKERS["limits_offsets"] = lambda rng, cp, b: Launch(
    [_i32(rng, cp), _zeros(cp, N, np.int32), np.int32(N)], _flat(b), 0, (1,))


def _quantize_rows(rng, cp, make: Callable, per_load: int, unroll: int, block: Dim3) -> Launch:
    rows, cols = 32, unroll * block.size * per_load  # (each thread's accesses cover its row)
    return Launch([cp.zeros(rows * cols, dtype=np.int8), _zeros(cp, rows), make(rng, cp, rows * cols), np.int32(cols)],
                  Dim3(rows), 0, (0, 1))


def _residual(rng, cp, make: Callable, per_access: int, block: Dim3) -> Launch:
    return Launch([make(rng, cp), make(rng, cp), np.int32(N)], _flat(block, N, per_access), 0, (0,))


# deduced_specialisations.cu
def _layer_norm_rows(rng, cp, make, block: Dim3) -> Launch:
    return Launch([_zeros(cp, ROWS * COLS, np.float16 if make is _f16 else np.float32), make(rng, cp, ROWS * COLS),
                   _f32(rng, cp, COLS), _f32(rng, cp, COLS), np.int32(COLS), np.float32(1e-5)], Dim3(ROWS), 0, (0,))


MAKERS["layer_norm_rows<float>"] = lambda rng, cp, b: _layer_norm_rows(rng, cp, _f32, b)
MAKERS["layer_norm_rows<__half>"] = lambda rng, cp, b: _layer_norm_rows(rng, cp, _f16, b)
MAKERS["row_exp_minus_max"] = lambda rng, cp, b: Launch([_zeros(cp, ROWS * COLS), _f32(rng, cp, ROWS * COLS),
                                                         np.int32(COLS)], Dim3(ROWS), 0, (0,))
MAKERS["quantize_int8_rows<__half, 2>"] = lambda rng, cp, b: _quantize_rows(rng, cp, _f16, 8, 2, b)
MAKERS["quantize_int8_rows<float, 4>"] = lambda rng, cp, b: _quantize_rows(rng, cp, _f32, 4, 4, b)
MAKERS["fused_residual_add<__half>"] = lambda rng, cp, b: _residual(rng, cp, _f16, 8, b)
MAKERS["fused_residual_add<float>"] = lambda rng, cp, b: _residual(rng, cp, _f32, 4, b)
MAKERS["fused_residual_add<__nv_bfloat16>"] = lambda rng, cp, b: _residual(rng, cp, _bf16, 8, b)



def _qk(rng, cp, head: int, block: Dim3) -> Launch:
    keys = 512  # one warp per key
    return Launch([_zeros(cp, keys), _f32(rng, cp, head), _f32(rng, cp, keys * head), np.int32(keys)],
                  Dim3(cdiv(keys, block.size // 32)), 0, (0,))


# vec_dtype.cu
MAKERS["attn::qk_dot_kernel<128, 4>"] = lambda rng, cp, b: _qk(rng, cp, 128, b)
MAKERS["attn::qk_dot_kernel<64, 2>"] = lambda rng, cp, b: _qk(rng, cp, 64, b)
MAKERS["attn::qk_dot_kernel<128, 1>"] = lambda rng, cp, b: _qk(rng, cp, 128, b)


def _paged(rng, cp, dtype, head: int) -> Launch:
    tokens, heads, slots = 64, 4, 16 * 8
    slot_mapping = rng.permutation(slots)[:tokens].astype(np.int64)
    slot_mapping[::9] = -1  # padding tokens are skipped
    key = cp.asarray(rng.standard_normal(tokens * heads * head).astype(dtype))
    value = cp.asarray(rng.standard_normal(tokens * heads * head).astype(dtype))
    cache = lambda: cp.zeros(slots * heads * head, dtype=dtype)  # noqa: E731
    return Launch([key, value, cache(), cache(), cp.asarray(slot_mapping), np.int32(heads * head), np.int32(heads * head),
                   np.int32(heads), np.int32(16)], Dim3(tokens), 0, (2, 3))


def _rope(rng, cp, dtype) -> Launch:
    tokens, heads, kv_heads, size = 64, 8, 2, 64
    query = cp.asarray(rng.standard_normal(tokens * heads * size).astype(dtype))
    key = cp.asarray(rng.standard_normal(tokens * kv_heads * size).astype(dtype))
    cache = cp.asarray(rng.standard_normal(128 * size).astype(dtype))
    positions = cp.asarray(rng.integers(0, 128, tokens, dtype=np.int64))
    return Launch([positions, query, key, cache, np.int32(size), np.int64(heads * size), np.int64(kv_heads * size),
                   np.int32(heads), np.int32(kv_heads), np.int32(size)], Dim3(tokens), 0, (1, 2))


def _blocks(rng, cp, n_blocks: int, quant_bytes: int, signed: bool) -> Any:
    """Quantised blocks as bytes: a half scale, then ``quant_bytes`` of packed values."""
    scales = rng.uniform(0.01, 0.1, n_blocks).astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
    quants = rng.integers(-128 if signed else 0, 128 if signed else 256, (n_blocks, quant_bytes))
    return cp.asarray(np.concatenate([scales, quants.astype(np.int8 if signed else np.uint8).view(np.uint8)], axis=1))


def _dequantize(rng, cp, qk: int, quant_bytes: int, signed: bool, block: Dim3) -> Launch:
    k = N  # values; each thread writes two
    return Launch([_blocks(rng, cp, k // qk, quant_bytes, signed), _zeros(cp, k), np.int64(k)],
                  Dim3(cdiv(k // 2, block.size)), 0, (1,))


def _mmvq(rng, cp, qk: int, quant_bytes: int, signed: bool, block: Dim3) -> Launch:
    rows, cols = 200, 1024
    return Launch([_blocks(rng, cp, rows * cols // qk, quant_bytes, signed), _f32(rng, cp, cols), _zeros(cp, rows),
                   np.int32(cols), np.int32(rows)], Dim3(cdiv(rows, block.y)), 0, (2,))


def _ggml_rms(rng, cp, rows_per_block: int) -> Launch:
    return Launch([_f32(rng, cp, ROWS * COLS), _zeros(cp, ROWS * COLS), np.int32(COLS), np.float32(1e-6)],
                  Dim3(ROWS // rows_per_block), 0, (1,))


# ggml_quant.cu
MAKERS["dequantize_block<QK4_0, QR4_0, dequantize_q4_0, float>"] = lambda rng, cp, b: _dequantize(rng, cp, 32, 16,
                                                                                                  False, b)
MAKERS["dequantize_block<QK8_0, QR8_0, dequantize_q8_0, float>"] = lambda rng, cp, b: _dequantize(rng, cp, 32, 32,
                                                                                                  True, b)
MAKERS["mul_mat_vec_q<QTYPE_Q4_0>"] = lambda rng, cp, b: _mmvq(rng, cp, 32, 16, False, b)
MAKERS["mul_mat_vec_q<QTYPE_Q8_0>"] = lambda rng, cp, b: _mmvq(rng, cp, 32, 32, True, b)
MAKERS["rms_norm_f32<32>"] = lambda rng, cp, b: _ggml_rms(rng, cp, 4)
MAKERS["rms_norm_f32<256>"] = lambda rng, cp, b: _ggml_rms(rng, cp, 1)


def _super_blocks(rng, cp) -> Launch:
    """Super-blocks of 140 bytes: d and dmin (halves), 8 scale bytes, 128 bytes of nibbles."""
    n_blocks = N // 256
    halves = rng.uniform(0.01, 0.1, (n_blocks, 2)).astype(np.float16).view(np.uint8).reshape(n_blocks, 4)
    rest = rng.integers(0, 256, (n_blocks, 136)).astype(np.uint8)
    return Launch([cp.asarray(np.concatenate([halves, rest], axis=1)), _zeros(cp, N)], Dim3(n_blocks), 0, (1,))


MAKERS["dequantize_block_q4_super<float>"] = lambda rng, cp, b: _super_blocks(rng, cp)


def _aten_rms(rng, cp, make) -> Launch:
    return Launch([make(rng, cp, ROWS * COLS), make(rng, cp, COLS), _zeros(cp, ROWS * COLS, make(rng, cp, 1).dtype),
                   np.int32(COLS), np.float32(1e-5)], Dim3(ROWS), 0, (2,))


def _aten_gelu(rng, cp, make, block: Dim3) -> Launch:
    return Launch([make(rng, cp), _zeros(cp, N, make(rng, cp, 1).dtype), np.int64(N)], _flat(block), 0, (1,))


# torch_aten.cu (my_ext::scale_rows_kernel takes PackedTensorAccessor32 structs by value)
MAKERS["my_ext::rms_norm_kernel<float>"] = lambda rng, cp, b: _aten_rms(rng, cp, _f32)
MAKERS["my_ext::rms_norm_kernel<c10::BFloat16>"] = lambda rng, cp, b: _aten_rms(rng, cp, _bf16)
MAKERS["my_ext::gelu_kernel<at::BFloat16>"] = lambda rng, cp, b: _aten_gelu(rng, cp, _bf16, b)
MAKERS["my_ext::gelu_kernel<double>"] = lambda rng, cp, b: _aten_gelu(rng, cp, _f64, b)


def _u8(rng, cp, n=N):
    return cp.asarray(rng.integers(0, 256, n, dtype=np.uint8))


def _quantize_blockwise(rng, cp, make, tile: int, packed: bool) -> Launch:
    return Launch([make(rng, cp), _zeros(cp, N // tile), _zeros(cp, N // 2 if packed else N, np.uint8), np.int32(N)],
                  Dim3(N // tile), 0, (1, 2))


def _dequantize_blockwise(rng, cp, dtype, group: int, packed: bool) -> Launch:
    codes = N // 2 if packed else N
    return Launch([_u8(rng, cp, codes), cp.abs(_f32(rng, cp, N // group)), _zeros(cp, N, dtype), np.int32(group),
                   np.int32(N)], Dim3(cdiv(codes, 512)), 0, (2,))


# blockwise_quant.cu (a grid-stride loop over tiles)
MAKERS["quantize_blockwise<half, 1024, 4, Linear8>"] = lambda rng, cp, b: _quantize_blockwise(rng, cp, _f16, 1024,
                                                                                               False)
MAKERS["quantize_blockwise<float, 256, 2, Table4>"] = lambda rng, cp, b: _quantize_blockwise(rng, cp, _f32, 256, True)
MAKERS["dequantize_blockwise<half, 512, 64, 8, Linear8>"] = lambda rng, cp, b: _dequantize_blockwise(
    rng, cp, np.float16, 512, False)
MAKERS["dequantize_blockwise<float, 512, 64, 8, Table4>"] = lambda rng, cp, b: _dequantize_blockwise(
    rng, cp, np.float32, 1024, True)


def _halves_as_words(rng, cp, words: int):
    return cp.asarray(rng.standard_normal(2 * words).astype(np.float16).view(np.uint32))


def _warp_mma(rng, cp, block: Dim3) -> Launch:
    tiles = 256
    lanes = tiles * 32
    return Launch([_halves_as_words(rng, cp, 4 * lanes), cp.asarray(rng.integers(0, 2**32, lanes, dtype=np.uint32)),
                   _zeros(cp, 4 * lanes), np.int32(tiles)], Dim3(cdiv(tiles, block.size // 32)), 0, (2,))


def _staged_unpack(rng, cp, block: Dim3) -> Launch:
    rows = 64
    words = rows * block.size * 4
    return Launch([_i32(rng, cp, words, -2**31, 2**31 - 1), _zeros(cp, words, np.int32), np.int32(rows)],
                  Dim3(rows), block.size * 16, (1,))


# asm_mma.cu
MAKERS["w4::warp_mma_w4<256>"] = _warp_mma
MAKERS["w4::warp_mma_w4<128>"] = _warp_mma
MAKERS["w4::staged_unpack<128>"] = _staged_unpack


def _act_and_mul(rng, cp, make, dtype) -> Launch:
    tokens, d = 64, 1000  # rows of 2 * d values, 16-byte aligned
    return Launch([_zeros(cp, tokens * d, dtype), make(rng, cp, tokens * 2 * d), np.int64(d)], Dim3(tokens), 0, (0,))


def _out_in_n(rng, cp, block: Dim3, *scalars, grid: Dim3 | None = None) -> Launch:
    return Launch([_zeros(cp), _f32(rng, cp), *scalars, np.int32(N)], grid or _flat(block), 0, (0,))


# modern_lib.cu (scale_by_params takes its parameter block by value)
MAKERS["kern::act_and_mul<half, kern::detail::Silu>"] = lambda rng, cp, b: _act_and_mul(rng, cp, _f16, np.float16)
MAKERS["kern::act_and_mul<__nv_bfloat16, kern::detail::GeluTanh>"] = lambda rng, cp, b: _act_and_mul(
    rng, cp, _bf16, np.uint16)
MAKERS["kern::top_byte_histogram"] = lambda rng, cp, b: Launch(
    [_f32(rng, cp), _zeros(cp, N, np.uint32), _zeros(cp, 256, np.int32), np.int32(N)], _flat(b), 0, (1, 2))
MAKERS["c_scale"] = lambda rng, cp, b: _out_in_n(rng, cp, b, np.float32(0.75))
MAKERS["static_relu"] = lambda rng, cp, b: _out_in_n(rng, cp, b, grid=Dim3(40))
MAKERS["anonymous_square"] = lambda rng, cp, b: _out_in_n(rng, cp, b)
MAKERS["capped_sin"] = lambda rng, cp, b: _out_in_n(rng, cp, b)
MAKERS["to_fp8"] = lambda rng, cp, b: Launch([_zeros(cp, N, np.uint8), _f32(rng, cp), np.float32(4.0), np.int32(N)],
                                             _flat(b), 0, (0,))
MAKERS["abs_max"] = lambda rng, cp, b: Launch([_f32(rng, cp), _zeros(cp, 1), np.int32(N)], Dim3(40), 0, (1,))


def _row_layernorm(rng, cp, block: Dim3) -> Launch:
    rows, width = ROWS, COLS
    return Launch([_zeros(cp, rows * width, np.uint16), _zeros(cp, rows), _zeros(cp, rows),
                   _bf16(rng, cp, rows * width), _bf16(rng, cp, width), _bf16(rng, cp, width), np.int32(rows),
                   np.int32(width)], Dim3(rows // block.y), (2 + block.y) * width * 2, (0, 1, 2))


def _adam_slices(rng, cp, make, block: Dim3) -> Launch:
    n, slices = N // 4, 4
    stride = np.int64(n)
    return Launch([make(rng, cp), _f32(rng, cp), make(rng, cp), _f32(rng, cp), cp.abs(_f32(rng, cp)), np.uint64(n),
                   stride, stride, stride, np.float32(1e-3), np.float32(0.9), np.float32(0.999), np.float32(0.5),
                   np.float32(0.25), np.float32(1e-8), np.float32(0.01), np.float32(1.0), np.uint32(1234)],
                  Dim3(cdiv(n, block.size), slices), 0, (0, 1, 3, 4))


# train_kernels.cu (softmax_xent takes a std::bool_constant by value); act_t is __nv_bfloat16
MAKERS["row_layernorm"] = _row_layernorm
MAKERS["adam_slices<act_t, act_t>"] = lambda rng, cp, b: _adam_slices(rng, cp, _bf16, b)
MAKERS["adam_slices<float, float>"] = lambda rng, cp, b: _adam_slices(rng, cp, _f32, b)
MAKERS["norm_squared"] = lambda rng, cp, b: Launch([_zeros(cp, 8 * 4), _bf16(rng, cp), np.uint64(N // 4),
                                                    np.int64(N // 4)], Dim3(8, 4), 0, (0,))
MAKERS["residual_add"] = lambda rng, cp, b: Launch([_zeros(cp, N, np.uint16), _bf16(rng, cp), _bf16(rng, cp)],
                                                   Dim3(N // (b.size * 8)), 0, (0,))


STRUCT_ARGUMENTS = {c.name for c in CASES} - {f"{c.file}:{c.kernel}" for c in CASES if c.kernel in MAKERS}
"""Kernels that take a struct (or a texture object) by value: not run here (see the module docstring)."""

PARTNER = KernelSpec(HERE / "partner.cu", "axpy", Dim3(96))


def _partner(rng, cp) -> Launch:
    return Launch([_f32(rng, cp), _f32(rng, cp), np.float32(1.5), np.int32(N)], Dim3(cdiv(N, 96)), 0, (1,))


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def test_every_kernel_without_struct_arguments_has_inputs():
    assert set(MAKERS) <= {c.kernel for c in CASES} and len(MAKERS) >= 70


@pytest.mark.parametrize("case", [c for c in CASES if c.kernel in MAKERS], ids=lambda c: c.name)
def test_fused_after_the_partner_equals_unfused(cp, case):
    if case.missing:
        pytest.skip(case.missing)
    spec = case.spec()
    fused = fuse([PARTNER, spec], options=case.options())
    assert fused.layout.name == case.layout
    makers = [_partner, lambda rng, cp: MAKERS[case.kernel](rng, cp, spec.block)]
    # compiled as hfuse tune compiles them: the case's flags (-std, -I, -isystem), and nvcc for
    # a file that keeps PyTorch's headers
    problems = differences(cp, [PARTNER, spec], makers, fused, [20261125, len(case.name)], options=case.options())
    assert not problems, f"{case.name}:\n  " + "\n  ".join(problems)
