"""Workloads of the five deep-learning benchmark kernels (Maxpool, Batchnorm, Upsample,
Im2Col, Hist): fresh random device inputs and a ``KernelLaunch`` for each.

Shapes follow the paper's sweeps (``docs/benchmarks.md``), scaled so that each kernel
alone takes about 2 ms on an H100 (estimated at ~3 TB/s of memory traffic; the lead
calibrates on the GPU: change the ``*_DEFAULT`` / ``*_SWEEP`` constants below).

Argument order of each kernel (the tests and the reference comparison rely on it):

- maxpool2d_forward(input, output, indices, nc, H, W, out_h, out_w, kh, kw, sh, sw,
  ph, pw, dh, dw)                                             outputs 1 (values), 2 (argmax)
- batchnorm_collect_statistics(input, mean, var, N, C, L)     outputs 1, 2
- upsample_bilinear2d(input, output, nc, in_h, in_w, out_h, out_w, align_corners)  output 1
- im2col(image, columns, C, H, W, kh, kw, ph, pw, sh, sw, dh, dw, out_h, out_w)   output 1
- histogram(data, counts, n, nbins, min, max)                 output 1 (uint32, zeroed)

CuPy is imported inside ``make`` only, so this module imports without a GPU.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from ...launch import KernelLaunch, Output
from ...spec import Dim3, KernelSpec
from ..reference.dl import conv_output_size
from .base import Workload

# Default sizes were calibrated (H200, 2026-11-22) so that each kernel alone runs about
# 2 ms; on an H100 they run 1.9-2.2 ms (bench/results/h100/kernels.json).
# Grid of the grid-stride kernels: this many blocks per SM (the artifact used a fixed
# 10000 blocks; a multiple of the SM count keeps the waves even).
GRID_BLOCKS_PER_SM = 16
# Grid of the grid-stride kernels with small=True: few blocks, so each thread loops.
SMALL_GRID = 4

# Maxpool: input (1, C, 2560, 1000), k=3, s=2, p=1 (the paper's runs); size = C.
# Traffic per channel ~10.2 MB read + 7.7 MB written (values + int64 argmax).
MAXPOOL_HW = (2560, 1000)
MAXPOOL_SMALL_HW = (37, 29)
MAXPOOL_KERNEL, MAXPOOL_STRIDE, MAXPOOL_PAD, MAXPOOL_DILATION = 3, 2, 1, 1
MAXPOOL_DEFAULT = 256
MAXPOOL_SWEEP = (64, 96, 128, 192, 256, 384, 512, 768, 1024)
MAXPOOL_TEST_SIZES = (3, 8)
MAXPOOL_BLOCK = Dim3(256)

# Batchnorm: input (N, C, L) = (128, 10000, L); one block per channel; size = L.
# Traffic 4 * N * C * L bytes read (5.2 GB at L = 1024).
BATCHNORM_N, BATCHNORM_C = 128, 10000
BATCHNORM_SMALL_N, BATCHNORM_SMALL_C = 6, 12
BATCHNORM_DEFAULT = 896
BATCHNORM_SWEEP = (224, 320, 448, 640, 896, 1280, 1792, 2560, 3584)
BATCHNORM_TEST_SIZES = (50, 300)
BATCHNORM_BLOCK = Dim3(32, 16)

# Upsample: input (1, C, 512, 512) -> output (1, C, 2048, 2048), bilinear; size = C.
# Traffic per channel ~16.8 MB written + 1 MB read.
UPSAMPLE_IN_HW = (512, 512)
UPSAMPLE_OUT_HW = (2048, 2048)
UPSAMPLE_SMALL_IN_HW = (19, 23)
UPSAMPLE_SMALL_OUT_HW = (40, 53)
UPSAMPLE_ALIGN_CORNERS = False
UPSAMPLE_DEFAULT = 112
UPSAMPLE_SWEEP = (28, 42, 56, 84, 112, 168, 224, 336, 448)
UPSAMPLE_TEST_SIZES = (3, 8)
UPSAMPLE_BLOCK = Dim3(512)

# Im2Col: image (16, H, 2048), 3x3 kernel, pad 1, stride 1, dilation 1; size = H.
# Traffic: columns 4 * 16 * 9 * H * 2048 bytes written (4.8 GB at H = 4096) + image read.
IM2COL_C, IM2COL_W = 16, 2048
IM2COL_SMALL_C, IM2COL_SMALL_W = 3, 21
IM2COL_KERNEL, IM2COL_PAD, IM2COL_STRIDE, IM2COL_DILATION = 3, 1, 1, 1
IM2COL_DEFAULT = 3584
IM2COL_SWEEP = (896, 1344, 1792, 2688, 3584, 5376, 7168, 10752, 14336)
IM2COL_TEST_SIZES = (17, 40)
IM2COL_BLOCK = Dim3(512)

# Hist: n float32 values ~ N(0.5, 0.25^2), 256 bins over [0, 1] (about 4.6% of the
# values fall outside and are ignored); size = n. Memory traffic alone is 4n bytes
# (1.3 ms at n = 1e9); the shared atomics may make it slower: calibrate.
HIST_NBINS = 256
HIST_SMALL_NBINS = 50
HIST_MIN, HIST_MAX = 0.0, 1.0
HIST_DEFAULT = 1_000_000_000
HIST_SWEEP = (250_000_000, 375_000_000, 500_000_000, 750_000_000, 1_000_000_000,
              1_500_000_000, 2_000_000_000, 3_000_000_000, 4_000_000_000)
HIST_TEST_SIZES = (10_000, 1_000_003)
HIST_BLOCK = Dim3(512)


def kernel_file(name: str) -> Path:
    """Path of a packaged benchmark kernel file (e.g. ``maxpool.cu``)."""
    try:
        path = Path(str(files("hfuse.bench.kernels") / name))
        if path.is_file():
            return path
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "kernels" / name


def _stride_grid(small: bool) -> Dim3:
    if small:
        return Dim3(SMALL_GRID)
    import cupy

    sms = int(cupy.cuda.Device().attributes["MultiProcessorCount"])
    return Dim3(sms * GRID_BLOCKS_PER_SM)


def _rng(seed: int) -> Any:
    import cupy

    return cupy.random.RandomState(seed)


def _spec(file: str, name: str, block, default: Dim3) -> KernelSpec:
    return KernelSpec(file=kernel_file(file), name=name,
                      block=Dim3.of(block) if block is not None else default, tunable=True)


# --------------------------------------------------------------------------- makers
def make_maxpool(size: int, *, block=None, seed: int = 0, small: bool = False) -> KernelLaunch:
    import cupy

    C = int(size)
    H, W = MAXPOOL_SMALL_HW if small else MAXPOOL_HW
    k, s, p, d = MAXPOOL_KERNEL, MAXPOOL_STRIDE, MAXPOOL_PAD, MAXPOOL_DILATION
    oh, ow = conv_output_size(H, k, s, p, d), conv_output_size(W, k, s, p, d)
    x = _rng(seed).standard_normal((1, C, H, W), dtype=cupy.float32)
    out = cupy.empty((1, C, oh, ow), dtype=cupy.float32)
    idx = cupy.empty((1, C, oh, ow), dtype=cupy.int64)
    i32 = np.int32
    args = [x, out, idx, i32(C), i32(H), i32(W), i32(oh), i32(ow),
            i32(k), i32(k), i32(s), i32(s), i32(p), i32(p), i32(d), i32(d)]
    return KernelLaunch(kernel=_spec("maxpool.cu", "maxpool2d_forward", block, MAXPOOL_BLOCK),
                        args=args, outputs=[Output(1, "exact"), Output(2, "exact")],
                        grid=_stride_grid(small), grid_free=True, label="maxpool")


def make_batchnorm(size: int, *, block=None, seed: int = 0, small: bool = False) -> KernelLaunch:
    import cupy

    L = int(size)
    N, C = (BATCHNORM_SMALL_N, BATCHNORM_SMALL_C) if small else (BATCHNORM_N, BATCHNORM_C)
    x = _rng(seed).standard_normal((N, C, L), dtype=cupy.float32)
    x *= 2.0
    x += 1.0
    mean = cupy.empty(C, dtype=cupy.float32)
    var = cupy.empty(C, dtype=cupy.float32)
    args = [x, mean, var, np.int32(N), np.int32(C), np.int32(L)]
    return KernelLaunch(
        kernel=_spec("batchnorm.cu", "batchnorm_collect_statistics", block, BATCHNORM_BLOCK),
        args=args, outputs=[Output(1, "exact"), Output(2, "exact")],
        grid=lambda blk, _c=C: Dim3(_c), grid_free=False, label="batchnorm")


def make_upsample(size: int, *, block=None, seed: int = 0, small: bool = False) -> KernelLaunch:
    import cupy

    C = int(size)
    ih, iw = UPSAMPLE_SMALL_IN_HW if small else UPSAMPLE_IN_HW
    oh, ow = UPSAMPLE_SMALL_OUT_HW if small else UPSAMPLE_OUT_HW
    x = _rng(seed).standard_normal((1, C, ih, iw), dtype=cupy.float32)
    out = cupy.empty((1, C, oh, ow), dtype=cupy.float32)
    i32 = np.int32
    args = [x, out, i32(C), i32(ih), i32(iw), i32(oh), i32(ow), i32(int(UPSAMPLE_ALIGN_CORNERS))]
    return KernelLaunch(kernel=_spec("upsample.cu", "upsample_bilinear2d", block, UPSAMPLE_BLOCK),
                        args=args, outputs=[Output(1, "exact")],
                        grid=_stride_grid(small), grid_free=True, label="upsample")


def make_im2col(size: int, *, block=None, seed: int = 0, small: bool = False) -> KernelLaunch:
    import cupy

    H = int(size)
    C, W = (IM2COL_SMALL_C, IM2COL_SMALL_W) if small else (IM2COL_C, IM2COL_W)
    k, p, s, d = IM2COL_KERNEL, IM2COL_PAD, IM2COL_STRIDE, IM2COL_DILATION
    oh, ow = conv_output_size(H, k, s, p, d), conv_output_size(W, k, s, p, d)
    img = _rng(seed).standard_normal((C, H, W), dtype=cupy.float32)
    cols = cupy.empty((C * k * k, oh * ow), dtype=cupy.float32)
    i32 = np.int32
    args = [img, cols, i32(C), i32(H), i32(W), i32(k), i32(k), i32(p), i32(p),
            i32(s), i32(s), i32(d), i32(d), i32(oh), i32(ow)]
    return KernelLaunch(kernel=_spec("im2col.cu", "im2col", block, IM2COL_BLOCK),
                        args=args, outputs=[Output(1, "exact")],
                        grid=_stride_grid(small), grid_free=True, label="im2col")


def make_hist(size: int, *, block=None, seed: int = 0, small: bool = False) -> KernelLaunch:
    import cupy

    n = int(size)
    nbins = HIST_SMALL_NBINS if small else HIST_NBINS
    data = _rng(seed).standard_normal(n, dtype=cupy.float32)
    data *= 0.25
    data += 0.5
    counts = cupy.zeros(nbins, dtype=cupy.uint32)
    args = [data, counts, np.int64(n), np.int32(nbins), np.float32(HIST_MIN), np.float32(HIST_MAX)]
    return KernelLaunch(kernel=_spec("hist.cu", "histogram", block, HIST_BLOCK),
                        args=args, outputs=[Output(1, "exact")],
                        grid=_stride_grid(small), dynamic_smem=nbins * 4, grid_free=True,
                        label="hist")


WORKLOADS: dict[str, Workload] = {
    "maxpool": Workload(
        name="maxpool", make=make_maxpool, default_size=MAXPOOL_DEFAULT, sweep=MAXPOOL_SWEEP,
        default_block=MAXPOOL_BLOCK, tunable=True,
        size_meaning=f"channels C of the (1, C, {MAXPOOL_HW[0]}, {MAXPOOL_HW[1]}) input "
                     f"(kernel {MAXPOOL_KERNEL}, stride {MAXPOOL_STRIDE}, pad {MAXPOOL_PAD})",
        test_sizes=MAXPOOL_TEST_SIZES),
    "batchnorm": Workload(
        name="batchnorm", make=make_batchnorm, default_size=BATCHNORM_DEFAULT,
        sweep=BATCHNORM_SWEEP, default_block=BATCHNORM_BLOCK, tunable=True,
        size_meaning=f"length L of the ({BATCHNORM_N}, {BATCHNORM_C}, L) input "
                     "(one block per channel)",
        test_sizes=BATCHNORM_TEST_SIZES),
    "upsample": Workload(
        name="upsample", make=make_upsample, default_size=UPSAMPLE_DEFAULT,
        sweep=UPSAMPLE_SWEEP, default_block=UPSAMPLE_BLOCK, tunable=True,
        size_meaning=f"channels C of the (1, C, {UPSAMPLE_IN_HW[0]}, {UPSAMPLE_IN_HW[1]}) input, "
                     f"upsampled to {UPSAMPLE_OUT_HW[0]}x{UPSAMPLE_OUT_HW[1]}",
        test_sizes=UPSAMPLE_TEST_SIZES),
    "im2col": Workload(
        name="im2col", make=make_im2col, default_size=IM2COL_DEFAULT, sweep=IM2COL_SWEEP,
        default_block=IM2COL_BLOCK, tunable=True,
        size_meaning=f"height H of the ({IM2COL_C}, H, {IM2COL_W}) image "
                     f"({IM2COL_KERNEL}x{IM2COL_KERNEL} kernel, pad {IM2COL_PAD}, "
                     f"stride {IM2COL_STRIDE})",
        test_sizes=IM2COL_TEST_SIZES),
    "hist": Workload(
        name="hist", make=make_hist, default_size=HIST_DEFAULT, sweep=HIST_SWEEP,
        default_block=HIST_BLOCK, tunable=True,
        size_meaning=f"number of float32 values (histogram of {HIST_NBINS} bins over "
                     f"[{HIST_MIN}, {HIST_MAX}])",
        test_sizes=HIST_TEST_SIZES),
}
