"""NumPy references of the five deep-learning benchmark kernels (``bench/kernels/*.cu``).

Each function computes what the matching CUDA kernel computes, with the same index
arithmetic (float32 where the kernel decides an index with float32 arithmetic, so the
choice of neighbour or bin is the same) and float64 accumulation where rounding only
changes the last bits. Vectorised over the data; the loops are over kernel windows.
"""
from __future__ import annotations

import numpy as np


def conv_output_size(size: int, kernel: int, stride: int = 1, pad: int = 0, dilation: int = 1) -> int:
    """Output length of a pooling/convolution window sweep (floor mode, as PyTorch)."""
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (int(v), int(v)) if np.isscalar(v) else (int(v[0]), int(v[1]))


# --------------------------------------------------------------------------- maxpool
def maxpool2d(x: np.ndarray, kernel, stride=None, padding=0, dilation=1) -> tuple[np.ndarray, np.ndarray]:
    """2-D max pooling of ``x`` (..., H, W): (values float32, argmax int64).

    The argmax is the flat index h * W + w within the input plane. Padded positions
    never win; ties keep the first position in row-major window order; a NaN wins
    (the last NaN in window order), as in PyTorch's kernel.
    """
    x = np.asarray(x, dtype=np.float32)
    kh, kw = _pair(kernel)
    sh, sw = _pair(stride if stride is not None else kernel)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    H, W = x.shape[-2:]
    oh_n = conv_output_size(H, kh, sh, ph, dh)
    ow_n = conv_output_size(W, kw, sw, pw, dw)
    lead = x.shape[:-2]

    oh = np.arange(oh_n)[:, None]
    ow = np.arange(ow_n)[None, :]
    h0 = oh * sh - ph
    w0 = ow * sw - pw
    # First in-image position of each window (the kernel's starting index).
    h_first = np.where(h0 < 0, h0 + (-h0 + dh - 1) // dh * dh, h0)
    w_first = np.where(w0 < 0, w0 + (-w0 + dw - 1) // dw * dw, w0)

    best = np.full(lead + (oh_n, ow_n), -np.inf, dtype=np.float32)
    best_idx = np.broadcast_to((h_first * W + w_first).astype(np.int64), best.shape).copy()
    for i in range(kh):
        h = h0 + i * dh
        for j in range(kw):
            w = w0 + j * dw
            valid = (h >= 0) & (h < H) & (w >= 0) & (w < W)  # (oh_n, ow_n)
            hc = np.clip(h, 0, H - 1)
            wc = np.clip(w, 0, W - 1)
            v = x[..., hc, wc]  # (..., oh_n, ow_n)
            take = valid & ((v > best) | np.isnan(v))
            best = np.where(take, v, best)
            best_idx = np.where(take, (h * W + w).astype(np.int64), best_idx)
    return best, best_idx


# --------------------------------------------------------------------------- batchnorm
def batchnorm_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and biased variance of ``x`` (N, C, L), in float64 (two-pass)."""
    x = np.asarray(x, dtype=np.float64)
    count = x.shape[0] * x.shape[2]
    mean = x.sum(axis=(0, 2)) / count
    var = ((x - mean[None, :, None]) ** 2).sum(axis=(0, 2)) / count
    return mean, var


# --------------------------------------------------------------------------- upsample
def _source_indices(in_size: int, out_size: int, align_corners: bool):
    """(first neighbour, step to the second (0 or 1), weight of the second), float32 math."""
    f32 = np.float32
    if align_corners:
        scale = f32(in_size - 1) / f32(out_size - 1) if out_size > 1 else f32(0)
        src = f32(scale) * np.arange(out_size, dtype=np.float32)
    else:
        scale = f32(in_size) / f32(out_size)
        src = f32(scale) * (np.arange(out_size, dtype=np.float32) + f32(0.5)) - f32(0.5)
        src = np.where(src < 0, f32(0), src).astype(np.float32)
    i0 = src.astype(np.int64)  # truncation == floor for src >= 0
    step = (i0 < in_size - 1).astype(np.int64)
    lam = (src - i0.astype(np.float32)).astype(np.float32)
    return i0, step, lam


def upsample_bilinear2d(x: np.ndarray, out_h: int, out_w: int, align_corners: bool) -> np.ndarray:
    """Bilinear upsampling of ``x`` (..., H, W) to (..., out_h, out_w), PyTorch's formulas.

    Source indices and weights in float32 (as the kernel and PyTorch compute them); the
    weighted sum in float64, returned as float32.
    """
    x = np.asarray(x, dtype=np.float32)
    H, W = x.shape[-2:]
    h0, hs, hl = _source_indices(H, out_h, align_corners)
    w0, ws, wl = _source_indices(W, out_w, align_corners)
    xd = x.astype(np.float64)
    hl = hl.astype(np.float64)[:, None]
    wl = wl.astype(np.float64)[None, :]
    r0 = xd[..., h0, :]
    r1 = xd[..., h0 + hs, :]
    top = (1 - wl) * r0[..., :, w0] + wl * r0[..., :, w0 + ws]
    bottom = (1 - wl) * r1[..., :, w0] + wl * r1[..., :, w0 + ws]
    return ((1 - hl) * top + hl * bottom).astype(np.float32)


# --------------------------------------------------------------------------- im2col
def im2col(img: np.ndarray, kernel, padding=0, stride=1, dilation=1) -> np.ndarray:
    """Columns (C * kh * kw, out_h * out_w) of an image (C, H, W), Caffe / F.unfold layout."""
    img = np.asarray(img, dtype=np.float32)
    kh, kw = _pair(kernel)
    ph, pw = _pair(padding)
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    C, H, W = img.shape
    oh = conv_output_size(H, kh, sh, ph, dh)
    ow = conv_output_size(W, kw, sw, pw, dw)
    padded = np.zeros((C, H + 2 * ph, W + 2 * pw), dtype=np.float32)
    padded[:, ph:ph + H, pw:pw + W] = img
    cols = np.empty((C, kh, kw, oh, ow), dtype=np.float32)
    for i in range(kh):
        for j in range(kw):
            y = i * dh
            x = j * dw
            cols[:, i, j] = padded[:, y:y + sh * (oh - 1) + 1:sh, x:x + sw * (ow - 1) + 1:sw]
    return cols.reshape(C * kh * kw, oh * ow)


# --------------------------------------------------------------------------- hist
def histc_bins(x: np.ndarray, nbins: int, min_value: float, max_value: float) -> np.ndarray:
    """The bin of each value (-1 where ignored), with the kernel's float32 arithmetic."""
    x = np.asarray(x, dtype=np.float32).ravel()
    lo = np.float32(min_value)
    hi = np.float32(max_value)
    inside = (x >= lo) & (x <= hi)
    with np.errstate(invalid="ignore", over="ignore"):
        b = ((x - lo) * np.float32(nbins)) / (hi - lo)
    b = np.where(inside, b, 0).astype(np.int64)
    b = np.where(b == nbins, nbins - 1, b)
    return np.where(inside, b, -1)


def histc(x: np.ndarray, nbins: int, min_value: float, max_value: float) -> np.ndarray:
    """Counts (int64, nbins) of torch.histc: values outside [min, max] are ignored."""
    b = histc_bins(x, nbins, min_value, max_value)
    return np.bincount(b[b >= 0], minlength=nbins).astype(np.int64)
