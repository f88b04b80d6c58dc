"""GPU checks of the five deep-learning kernels: each, launched on its small workload
at two sizes and two block shapes, matches the NumPy reference (exactly for integer
outputs and data movement, to float rounding otherwise) and, where PyTorch has the
operator and is installed, PyTorch on the GPU."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.bench.reference import dl as R
from hfuse.bench.workloads import dl as W
from hfuse.launch import KernelLaunch
from hfuse.spec import Dim3

pytestmark = pytest.mark.gpu

BLOCKS_1D = (128, 512)
BLOCKS_BN = ((32, 8), (32, 16))

_FUNCTIONS: dict[tuple[str, str], object] = {}


@pytest.fixture(scope="module")
def cupy():
    return pytest.importorskip("cupy")


def _function(cp, file: str, name: str):
    """The kernel ``name`` of a packaged file, compiled with NVRTC through CuPy.

    The kernels are C++ (mangled names), hence ``name_expressions``. CuPy adds the
    device's own ``-arch`` (sm_90 on an H100) itself.
    """
    key = (file, name)
    if key not in _FUNCTIONS:
        source = W.kernel_file(file).read_text()
        module = cp.RawModule(code=source, options=("-std=c++17",), name_expressions=(name,))
        _FUNCTIONS[key] = module.get_function(name)
    return _FUNCTIONS[key]


def _run(cp, file: str, name: str, grid, block, args, smem: int = 0) -> None:
    fn = _function(cp, file, name)
    fn(Dim3.of(grid).as_tuple(), Dim3.of(block).as_tuple(), tuple(args), shared_mem=int(smem))
    cp.cuda.Device().synchronize()


def _launch(cp, kl: KernelLaunch) -> None:
    block = kl.kernel.block
    _run(cp, kl.kernel.file.name, kl.kernel.name, kl.grid_for(block), block, kl.args, kl.smem_for(block))


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


def _cuda_tensor(torch, host: np.ndarray):
    return torch.from_numpy(np.ascontiguousarray(host)).cuda()


def _ints(args, first: int, last: int) -> list[int]:
    return [int(a) for a in args[first:last + 1]]


# --------------------------------------------------------------------------- workloads
def test_grid_of_grid_stride_kernels_follows_sm_count(cupy):
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    assert W._stride_grid(False) == Dim3(sms * W.GRID_BLOCKS_PER_SM)


# --------------------------------------------------------------------------- maxpool
def _maxpool_check(cp, kl: KernelLaunch):
    x, out, idx = kl.args[:3]
    nc, H, Wd, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw = _ints(kl.args, 3, 15)
    host = cp.asnumpy(x)
    rv, ri = R.maxpool2d(host.reshape(nc, H, Wd), (kh, kw), (sh, sw), (ph, pw), (dh, dw))
    got_v = cp.asnumpy(out).reshape(nc, oh, ow)
    got_i = cp.asnumpy(idx).reshape(nc, oh, ow)
    np.testing.assert_array_equal(got_v, rv)
    np.testing.assert_array_equal(got_i, ri)
    return host, got_v, got_i, (kh, kw, sh, sw, ph, pw, dh, dw)


@pytest.mark.parametrize("block", BLOCKS_1D)
@pytest.mark.parametrize("size", W.MAXPOOL_TEST_SIZES)
def test_maxpool_matches_reference(cupy, size, block):
    kl = W.make_maxpool(size, block=block, seed=size, small=True)
    _launch(cupy, kl)
    _maxpool_check(cupy, kl)


def test_maxpool_params_nan_and_grids(cupy):
    cp = cupy
    rng = np.random.default_rng(0)
    nc, H, Wd = 3, 21, 17
    host = rng.standard_normal((nc, H, Wd)).astype(np.float32)
    host[0, 3, 4] = np.nan
    host[1, 6, 6] = host[1, 6, 7] = np.nan
    host[2, 5:9, 5:9] = 0.5
    host[2, :4, :4] = -np.inf
    for (kh, kw, sh, sw, ph, pw, dh, dw) in [(3, 3, 2, 2, 1, 1, 1, 1), (3, 2, 1, 2, 1, 0, 2, 1), (2, 2, 2, 2, 0, 0, 1, 1)]:
        oh = R.conv_output_size(H, kh, sh, ph, dh)
        ow = R.conv_output_size(Wd, kw, sw, pw, dw)
        x = cp.asarray(host)
        rv, ri = R.maxpool2d(host, (kh, kw), (sh, sw), (ph, pw), (dh, dw))
        for grid, block in [(1, 32), (7, 96), (64, 256)]:
            out = cp.empty((nc, oh, ow), dtype=cp.float32)
            idx = cp.empty((nc, oh, ow), dtype=cp.int64)
            args = [x, out, idx] + [np.int32(v) for v in (nc, H, Wd, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw)]
            _run(cp, "maxpool.cu", "maxpool2d_forward", grid, block, args)
            np.testing.assert_array_equal(cp.asnumpy(out), rv)
            np.testing.assert_array_equal(cp.asnumpy(idx), ri)


@pytest.mark.parametrize("size", W.MAXPOOL_TEST_SIZES)
def test_maxpool_matches_torch(cupy, size):
    torch = _torch()
    kl = W.make_maxpool(size, block=256, seed=7, small=True)
    _launch(cupy, kl)
    host, got_v, got_i, (kh, kw, sh, sw, ph, pw, dh, dw) = _maxpool_check(cupy, kl)
    tv, ti = torch.nn.functional.max_pool2d(
        _cuda_tensor(torch, host), (kh, kw), stride=(sh, sw), padding=(ph, pw), dilation=(dh, dw),
        return_indices=True)
    np.testing.assert_array_equal(got_v, tv.cpu().numpy().reshape(got_v.shape))
    np.testing.assert_array_equal(got_i, ti.cpu().numpy().reshape(got_i.shape))


# --------------------------------------------------------------------------- batchnorm
def _batchnorm_check(cp, kl: KernelLaunch):
    x, mean, var = kl.args[:3]
    host = cp.asnumpy(x)
    rm, rv = R.batchnorm_stats(host)
    got_m, got_v = cp.asnumpy(mean), cp.asnumpy(var)
    np.testing.assert_allclose(got_m, rm, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(got_v, rv, rtol=2e-5, atol=2e-6)
    return host, got_m, got_v


@pytest.mark.parametrize("block", BLOCKS_BN)
@pytest.mark.parametrize("size", W.BATCHNORM_TEST_SIZES)
def test_batchnorm_matches_reference_and_is_deterministic(cupy, size, block):
    kl = W.make_batchnorm(size, block=block, seed=size, small=True)
    assert kl.grid_for(kl.kernel.block) == Dim3(W.BATCHNORM_SMALL_C)
    _launch(cupy, kl)
    _, m1, v1 = _batchnorm_check(cupy, kl)
    kl.args[1].fill(0)
    kl.args[2].fill(0)
    _launch(cupy, kl)
    assert np.array_equal(cupy.asnumpy(kl.args[1]), m1) and np.array_equal(cupy.asnumpy(kl.args[2]), v1)


@pytest.mark.parametrize("block", [(64, 4), (32, 1), (96, 2), (32, 32), (1024, 1)])
def test_batchnorm_any_block_shape(cupy, block):
    kl = W.make_batchnorm(77, block=block, seed=3, small=True)
    _launch(cupy, kl)
    _batchnorm_check(cupy, kl)


@pytest.mark.parametrize("size", W.BATCHNORM_TEST_SIZES)
def test_batchnorm_matches_torch(cupy, size):
    torch = _torch()
    kl = W.make_batchnorm(size, seed=11, small=True)
    _launch(cupy, kl)
    host, got_m, got_v = _batchnorm_check(cupy, kl)
    tv, tm = torch.var_mean(_cuda_tensor(torch, host), dim=(0, 2), correction=0)
    np.testing.assert_allclose(got_m, tm.cpu().numpy(), rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(got_v, tv.cpu().numpy(), rtol=2e-5, atol=2e-6)


# --------------------------------------------------------------------------- upsample
def _upsample_check(cp, kl: KernelLaunch):
    x, out = kl.args[:2]
    nc, ih, iw, oh, ow, align = _ints(kl.args, 2, 7)
    host = cp.asnumpy(x).reshape(nc, ih, iw)
    got = cp.asnumpy(out).reshape(nc, oh, ow)
    # nvcc contracts the source-index arithmetic into an FMA, so a weight may differ from
    # NumPy's float32 by one ulp of the source coordinate (seen: 2.7e-6 on values ~1).
    np.testing.assert_allclose(got, R.upsample_bilinear2d(host, oh, ow, bool(align)), rtol=1e-5, atol=1e-5)
    return host, got, bool(align)


@pytest.mark.parametrize("block", BLOCKS_1D)
@pytest.mark.parametrize("size", W.UPSAMPLE_TEST_SIZES)
def test_upsample_matches_reference(cupy, size, block):
    kl = W.make_upsample(size, block=block, seed=size, small=True)
    _launch(cupy, kl)
    _upsample_check(cupy, kl)


def _upsample_direct(cp, host, oh, ow, align, grid=5, block=128):
    nc, ih, iw = host.shape
    out = cp.empty((nc, oh, ow), dtype=cp.float32)
    args = [cp.asarray(host), out] + [np.int32(v) for v in (nc, ih, iw, oh, ow, int(align))]
    _run(cp, "upsample.cu", "upsample_bilinear2d", grid, block, args)
    return cp.asnumpy(out)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("in_hw,out_hw", [((5, 7), (11, 16)), ((8, 8), (8, 8)), ((9, 13), (4, 5)), ((6, 4), (1, 1)), ((17, 3), (40, 9))])
def test_upsample_both_align_modes(cupy, align, in_hw, out_hw):
    host = np.random.default_rng(1).standard_normal((3,) + in_hw).astype(np.float32)
    got = _upsample_direct(cupy, host, *out_hw, align)
    np.testing.assert_allclose(got, R.upsample_bilinear2d(host, *out_hw, align), rtol=1e-5, atol=1e-5)
    if in_hw == out_hw:
        np.testing.assert_array_equal(got, host)
    if align and out_hw[0] > 1 and out_hw[1] > 1:
        # scale * (out - 1) is in - 1 up to float rounding: corners equal to ~1 ulp.
        corners = ([0, 0, -1, -1], [0, -1, 0, -1])
        np.testing.assert_allclose(got[:, corners[0], corners[1]], host[:, corners[0], corners[1]], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", W.UPSAMPLE_TEST_SIZES)
def test_upsample_matches_torch(cupy, size, align):
    torch = _torch()
    host = np.random.default_rng(size).standard_normal((1, size) + W.UPSAMPLE_SMALL_IN_HW).astype(np.float32)
    oh, ow = W.UPSAMPLE_SMALL_OUT_HW
    got = _upsample_direct(cupy, host[0], oh, ow, align)
    ref = torch.nn.functional.interpolate(_cuda_tensor(torch, host), size=(oh, ow), mode="bilinear",
                                          align_corners=align)
    np.testing.assert_allclose(got, ref.cpu().numpy()[0], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- im2col
def _im2col_check(cp, kl: KernelLaunch):
    img, cols = kl.args[:2]
    C, H, Wd, kh, kw, ph, pw, sh, sw, dh, dw, oh, ow = _ints(kl.args, 2, 14)
    host = cp.asnumpy(img).reshape(C, H, Wd)
    got = cp.asnumpy(cols)
    assert got.shape == (C * kh * kw, oh * ow)
    np.testing.assert_array_equal(got, R.im2col(host, (kh, kw), (ph, pw), (sh, sw), (dh, dw)))
    return host, got, (kh, kw, ph, pw, sh, sw, dh, dw)


@pytest.mark.parametrize("block", BLOCKS_1D)
@pytest.mark.parametrize("size", W.IM2COL_TEST_SIZES)
def test_im2col_matches_reference(cupy, size, block):
    kl = W.make_im2col(size, block=block, seed=size, small=True)
    _launch(cupy, kl)
    _im2col_check(cupy, kl)


@pytest.mark.parametrize("params", [(3, 2, 1, 0, 2, 1, 1, 2), (5, 5, 2, 2, 3, 3, 2, 2), (1, 1, 0, 0, 1, 1, 1, 1)])
def test_im2col_params(cupy, params):
    cp = cupy
    kh, kw, ph, pw, sh, sw, dh, dw = params
    C, H, Wd = 2, 19, 23
    host = np.random.default_rng(2).standard_normal((C, H, Wd)).astype(np.float32)
    oh, ow = R.conv_output_size(H, kh, sh, ph, dh), R.conv_output_size(Wd, kw, sw, pw, dw)
    cols = cp.full((C * kh * kw, oh * ow), 7.0, dtype=cp.float32)
    args = [cp.asarray(host), cols] + [np.int32(v) for v in (C, H, Wd, kh, kw, ph, pw, sh, sw, dh, dw, oh, ow)]
    _run(cp, "im2col.cu", "im2col", 3, 64, args)
    np.testing.assert_array_equal(cp.asnumpy(cols), R.im2col(host, (kh, kw), (ph, pw), (sh, sw), (dh, dw)))


@pytest.mark.parametrize("size", W.IM2COL_TEST_SIZES)
def test_im2col_matches_torch_unfold(cupy, size):
    torch = _torch()
    kl = W.make_im2col(size, seed=5, small=True)
    _launch(cupy, kl)
    host, got, (kh, kw, ph, pw, sh, sw, dh, dw) = _im2col_check(cupy, kl)
    ref = torch.nn.functional.unfold(_cuda_tensor(torch, host[None]), (kh, kw), dilation=(dh, dw),
                                     padding=(ph, pw), stride=(sh, sw))
    np.testing.assert_array_equal(got, ref.cpu().numpy()[0])


# --------------------------------------------------------------------------- hist
def _hist_check(cp, kl: KernelLaunch):
    data, counts = kl.args[:2]
    n, nbins = int(kl.args[2]), int(kl.args[3])
    lo, hi = float(kl.args[4]), float(kl.args[5])
    host = cp.asnumpy(data)
    assert host.size == n
    got = cp.asnumpy(counts).astype(np.int64)
    np.testing.assert_array_equal(got, R.histc(host, nbins, lo, hi))
    return host, got, (nbins, lo, hi)


@pytest.mark.parametrize("block", BLOCKS_1D)
@pytest.mark.parametrize("size", W.HIST_TEST_SIZES)
def test_hist_matches_reference(cupy, size, block):
    kl = W.make_hist(size, block=block, seed=size, small=True)
    assert kl.smem_for(kl.kernel.block) == W.HIST_SMALL_NBINS * 4
    _launch(cupy, kl)
    _hist_check(cupy, kl)


def test_hist_edges_and_grids(cupy):
    cp = cupy
    host = np.random.default_rng(3).uniform(-0.5, 1.5, 50_001).astype(np.float32)
    host[:8] = [0.0, 1.0, 1.0, np.nan, np.inf, -np.inf, np.nextafter(np.float32(1), np.float32(2)), 0.5]
    nbins, lo, hi = 37, 0.0, 1.0
    ref = R.histc(host, nbins, lo, hi)
    x = cp.asarray(host)
    for grid, block in [(1, 32), (5, 256), (300, 1024)]:
        counts = cp.zeros(nbins, dtype=cp.uint32)
        args = [x, counts, np.int64(host.size), np.int32(nbins), np.float32(lo), np.float32(hi)]
        _run(cp, "hist.cu", "histogram", grid, block, args, smem=nbins * 4)
        np.testing.assert_array_equal(cp.asnumpy(counts).astype(np.int64), ref)


@pytest.mark.parametrize("size", W.HIST_TEST_SIZES)
def test_hist_matches_torch_histc(cupy, size):
    torch = _torch()
    kl = W.make_hist(size, seed=13, small=True)
    _launch(cupy, kl)
    host, got, (nbins, lo, hi) = _hist_check(cupy, kl)
    ref = torch.histc(_cuda_tensor(torch, host), bins=nbins, min=lo, max=hi).cpu().numpy().astype(np.int64)
    # Same values, same bins; a value within an ulp of a bin edge may land on the other
    # side if PyTorch orders the bin arithmetic differently.
    assert got.sum() == ref.sum()
    assert np.abs(got - ref).sum() <= 2 + size // 100_000
