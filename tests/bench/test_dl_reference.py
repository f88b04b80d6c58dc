"""CPU checks of the NumPy references of the deep-learning kernels (and of their
workload descriptions), each against an independent formulation."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hfuse.bench.reference import dl as R


# --------------------------------------------------------------------------- maxpool
def naive_maxpool(x, k, s, p, d):
    """Window by window, PyTorch's rule: strictly greater wins, a NaN always wins."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (R._pair(v) for v in (k, s, p, d))
    P, H, W = x.shape
    oh_n = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow_n = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    vals = np.empty((P, oh_n, ow_n), np.float32)
    idxs = np.empty((P, oh_n, ow_n), np.int64)
    for c, oh, ow in itertools.product(range(P), range(oh_n), range(ow_n)):
        best, best_i = -math.inf, None
        for i, j in itertools.product(range(kh), range(kw)):
            h, w = oh * sh - ph + i * dh, ow * sw - pw + j * dw
            if not (0 <= h < H and 0 <= w < W):
                continue
            if best_i is None:
                best_i = h * W + w
            v = float(x[c, h, w])
            if v > best or math.isnan(v):
                best, best_i = v, h * W + w
        vals[c, oh, ow], idxs[c, oh, ow] = best, best_i
    return vals, idxs


@pytest.mark.parametrize("shape,k,s,p,d", [
    ((2, 9, 11), 3, 2, 1, 1),
    ((1, 8, 8), 2, 2, 0, 1),
    ((3, 10, 7), (3, 2), (1, 2), (1, 1), (2, 1)),
    ((2, 12, 13), 3, 1, 1, 3),
])
def test_maxpool_matches_naive_loop(shape, k, s, p, d):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    x[0, 1, 1] = np.nan
    x[0, 4, 4] = x[0, 4, 5] = np.nan
    x[-1, 2:6, 2:6] = 0.75  # ties: the first position wins
    x[-1, :3, :3] = -np.inf
    vals, idxs = R.maxpool2d(x, k, s, p, d)
    nv, ni = naive_maxpool(x, k, s, p, d)
    np.testing.assert_array_equal(vals, nv)
    np.testing.assert_array_equal(idxs, ni)


def test_maxpool_indices_point_at_values():
    x = np.random.default_rng(2).standard_normal((3, 2, 15, 17)).astype(np.float32)
    vals, idxs = R.maxpool2d(x, 3, 2, 1)
    assert vals.shape == idxs.shape == (3, 2, 8, 9)
    flat = x.reshape(3, 2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idxs.reshape(3, 2, -1), -1).reshape(vals.shape), vals)


# --------------------------------------------------------------------------- batchnorm
def test_batchnorm_matches_numpy():
    x = (np.random.default_rng(3).standard_normal((5, 7, 33)) * 4 + 3).astype(np.float32)
    mean, var = R.batchnorm_stats(x)
    xd = x.astype(np.float64)
    np.testing.assert_allclose(mean, np.mean(xd, axis=(0, 2)), rtol=1e-12)
    np.testing.assert_allclose(var, np.var(xd, axis=(0, 2)), rtol=1e-12)
    # The biased variance of channel c is that of all its N * L values.
    np.testing.assert_allclose(var[2], np.var(xd[:, 2, :].ravel()), rtol=1e-12)


def test_batchnorm_welford_merge_formula():
    """The kernel's Chan merge of (n, mean, M2) equals the statistics of the union."""
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(13), rng.standard_normal(29) + 2

    def stats(v):
        return len(v), v.mean(), ((v - v.mean()) ** 2).sum()

    (na, ma, m2a), (nb, mb, m2b) = stats(a), stats(b)
    n = na + nb
    delta = mb - ma
    mean = ma + delta * nb / n
    m2 = m2a + m2b + delta * delta * na * nb / n
    n_u, mean_u, m2_u = stats(np.concatenate([a, b]))
    assert n == n_u and mean == pytest.approx(mean_u, rel=1e-12) and m2 == pytest.approx(m2_u, rel=1e-12)


# --------------------------------------------------------------------------- upsample
def naive_upsample(x, out_h, out_w, align):
    P, H, W = x.shape

    def src(dst, n_in, n_out):
        if align:
            return (n_in - 1) / (n_out - 1) * dst if n_out > 1 else 0.0
        return max((n_in / n_out) * (dst + 0.5) - 0.5, 0.0)

    out = np.empty((P, out_h, out_w))
    for c, oh, ow in itertools.product(range(P), range(out_h), range(out_w)):
        hr, wr = src(oh, H, out_h), src(ow, W, out_w)
        h0, w0 = int(hr), int(wr)
        h1, w1 = min(h0 + 1, H - 1), min(w0 + 1, W - 1)
        lh, lw = hr - h0, wr - w0
        out[c, oh, ow] = ((1 - lh) * ((1 - lw) * x[c, h0, w0] + lw * x[c, h0, w1])
                          + lh * ((1 - lw) * x[c, h1, w0] + lw * x[c, h1, w1]))
    return out


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("in_hw,out_hw", [((5, 7), (11, 16)), ((9, 4), (20, 9)), ((6, 6), (4, 3)), ((3, 5), (1, 1))])
def test_upsample_matches_naive_loop(align, in_hw, out_hw):
    x = np.random.default_rng(5).standard_normal((2,) + in_hw).astype(np.float32)
    got = R.upsample_bilinear2d(x, *out_hw, align)
    assert got.dtype == np.float32 and got.shape == (2,) + out_hw
    np.testing.assert_allclose(got, naive_upsample(x.astype(np.float64), *out_hw, align), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("align", [False, True])
def test_upsample_identity_when_sizes_equal(align):
    x = np.random.default_rng(6).standard_normal((3, 8, 13)).astype(np.float32)
    np.testing.assert_array_equal(R.upsample_bilinear2d(x, 8, 13, align), x)


def test_upsample_align_corners_keeps_corners_and_linear_functions():
    x = np.random.default_rng(7).standard_normal((2, 6, 9)).astype(np.float32)
    y = R.upsample_bilinear2d(x, 23, 31, True)
    for (a, b), (c, d) in zip([(0, 0), (0, -1), (-1, 0), (-1, -1)], [(0, 0), (0, -1), (-1, 0), (-1, -1)]):
        assert y[:, a, b].tolist() == x[:, c, d].tolist()
    # A linear function of (h, w) is reproduced at the source coordinates.
    hh, ww = np.meshgrid(np.arange(6), np.arange(9), indexing="ij")
    lin = (0.5 * hh - 0.25 * ww + 1).astype(np.float32)[None]
    up = R.upsample_bilinear2d(lin, 11, 17, True)
    sh, sw = np.meshgrid(np.arange(11) * 5 / 10, np.arange(17) * 8 / 16, indexing="ij")
    np.testing.assert_allclose(up[0], 0.5 * sh - 0.25 * sw + 1, atol=1e-5)


# --------------------------------------------------------------------------- im2col
def naive_im2col(img, k, p, s, d):
    (kh, kw), (ph, pw), (sh, sw), (dh, dw) = (R._pair(v) for v in (k, p, s, d))
    C, H, W = img.shape
    oh_n = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow_n = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    cols = np.zeros((C * kh * kw, oh_n * ow_n), np.float32)
    for c, i, j, oh, ow in itertools.product(range(C), range(kh), range(kw), range(oh_n), range(ow_n)):
        y, x = oh * sh - ph + i * dh, ow * sw - pw + j * dw
        if 0 <= y < H and 0 <= x < W:
            cols[(c * kh + i) * kw + j, oh * ow_n + ow] = img[c, y, x]
    return cols


@pytest.mark.parametrize("shape,k,p,s,d", [
    ((2, 7, 9), 3, 1, 1, 1),
    ((3, 10, 8), (3, 2), (1, 0), (2, 1), (1, 2)),
    ((1, 12, 11), 5, 2, 3, 2),
])
def test_im2col_matches_naive_loop(shape, k, p, s, d):
    img = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(R.im2col(img, k, p, s, d), naive_im2col(img, k, p, s, d))


def test_im2col_matmul_is_a_convolution():
    rng = np.random.default_rng(9)
    C, H, W, F, k, p, s, d = 3, 9, 11, 4, 3, 1, 2, 1
    img = rng.standard_normal((C, H, W))
    weight = rng.standard_normal((F, C, k, k))
    out_h, out_w = R.conv_output_size(H, k, s, p, d), R.conv_output_size(W, k, s, p, d)
    conv = (weight.reshape(F, -1) @ R.im2col(img.astype(np.float32), k, p, s, d).astype(np.float64)).reshape(F, out_h, out_w)
    padded = np.pad(img.astype(np.float32).astype(np.float64), ((0, 0), (p, p), (p, p)))
    direct = np.zeros((F, out_h, out_w))
    for f, oy, ox in itertools.product(range(F), range(out_h), range(out_w)):
        direct[f, oy, ox] = (weight[f] * padded[:, oy * s:oy * s + k, ox * s:ox * s + k]).sum()
    np.testing.assert_allclose(conv, direct, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- hist
def test_histc_on_exact_grid_matches_numpy_and_edge_rule():
    # Multiples of 1/64 are exact in float32: bin edges at k/8 are hit exactly.
    x = (np.arange(-16, 80) / 64).astype(np.float32)
    counts = R.histc(x, 8, 0.0, 1.0)
    ref, _ = np.histogram(x, bins=8, range=(0.0, 1.0))  # last bin closed, outside ignored
    np.testing.assert_array_equal(counts, ref)
    assert R.histc(np.array([1.0], np.float32), 8, 0, 1).tolist() == [0] * 7 + [1]
    assert R.histc(np.array([0.125], np.float32), 8, 0, 1)[1] == 1
    assert R.histc(np.array([np.nan, np.inf, -np.inf, -1e-8, 1.0000001], np.float32), 8, 0, 1).sum() == 0


def test_histc_random_close_to_numpy():
    x = np.random.default_rng(10).normal(0.5, 0.3, 100_000).astype(np.float32)
    counts = R.histc(x, 37, -0.1, 1.2)
    ref, _ = np.histogram(x, bins=37, range=(np.float32(-0.1), np.float32(1.2)))
    assert counts.sum() == ref.sum()
    assert np.abs(counts - ref).sum() <= 4  # only values within an ulp of an edge may move


# --------------------------------------------------------------------------- workloads
def test_dl_workloads_describe_themselves():
    from hfuse.bench.workloads import dl

    assert set(dl.WORKLOADS) == {"maxpool", "batchnorm", "upsample", "im2col", "hist"}
    for name, w in dl.WORKLOADS.items():
        assert w.name == name and w.tunable and w.size_meaning
        assert len(w.test_sizes) == 2 and len(w.sweep) >= 8
        assert min(w.sweep) <= w.default_size // 3 and max(w.sweep) >= 3 * w.default_size
        assert list(w.sweep) == sorted(w.sweep)
        assert w.default_block.size % 32 == 0
    assert dl.WORKLOADS["batchnorm"].default_block.as_tuple() == (32, 16, 1)
    for f in ("maxpool.cu", "batchnorm.cu", "upsample.cu", "im2col.cu", "hist.cu"):
        assert dl.kernel_file(f).is_file()
