"""Two kernels that read ``__constant__``/``__device__`` tables, one of them named alike in
both files (``coeffs``), with NumPy references: shared by the symbol tests in tests/tuning."""
from __future__ import annotations

import numpy as np

SCALE_CU = r"""
__constant__ unsigned coeffs[16];
__global__ void scale(const unsigned* x, unsigned* y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
    y[i] = x[i] * coeffs[i & 15] + coeffs[(i >> 4) & 15];
}
"""

MIXER_CU = r"""
__constant__ unsigned coeffs[16];
namespace lut { __constant__ unsigned table[64]; }
namespace mix { __device__ unsigned salt[4]; }
__global__ void mixer(const unsigned* s, unsigned* out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
    out[i] = ((s[i] ^ lut::table[s[i] & 63]) * coeffs[i & 15]) + mix::salt[i & 3];
}
"""


def tables(seed: int = 0) -> tuple[dict, dict]:
    """Random symbol data for ``scale`` and ``mixer``."""
    rng = np.random.default_rng(seed)
    return ({"coeffs": rng.integers(0, 1 << 32, 16, dtype=np.uint32)},
            {"coeffs": rng.integers(0, 1 << 32, 16, dtype=np.uint32),
             "lut::table": rng.integers(0, 1 << 32, 64, dtype=np.uint32),
             "mix::salt": rng.integers(0, 1 << 32, 4, dtype=np.uint32)})


def scale_reference(x: np.ndarray, symbols: dict) -> np.ndarray:
    c = symbols["coeffs"]
    i = np.arange(x.size)
    return (x * c[i & 15] + c[(i >> 4) & 15]).astype(np.uint32)


def mixer_reference(s: np.ndarray, symbols: dict) -> np.ndarray:
    c, t, salt = symbols["coeffs"], symbols["lut::table"], symbols["mix::salt"]
    i = np.arange(s.size)
    return (((s ^ t[s & 63]) * c[i & 15]) + salt[i & 3]).astype(np.uint32)
