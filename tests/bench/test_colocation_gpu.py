"""Blocks-per-SM curves measured on a GPU (issue 22): a kernel given more of each SM is
never slower, and a memory-streaming kernel needs many blocks per SM to hide its latency."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse import Dim3, KernelLaunch, KernelSpec, Output
from hfuse.bench.colocation import measure_blocks_curve, measure_sms_curve

pytestmark = pytest.mark.gpu

STREAM = r"""
__global__ void copy_scaled(const float4* __restrict__ x, float4* __restrict__ y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float4 v = x[i];
    y[i] = make_float4(2.f * v.x, 2.f * v.y, 2.f * v.z, 2.f * v.w);
  }
}
"""


def test_a_streaming_kernels_curve_is_monotone_and_needs_many_blocks(tmp_path):
    import cupy

    path = tmp_path / "stream.cu"
    path.write_text(STREAM)
    n = 1 << 24  # float4s: 256 MiB each way
    x, y = cupy.ones(n * 4, cupy.float32), cupy.zeros(n * 4, cupy.float32)
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    launch = KernelLaunch(KernelSpec(path, "copy_scaled", Dim3(128)), [x, y, np.int64(n)], [Output(1)],
                          grid=Dim3(sms * 16), grid_free=True)
    curve = measure_blocks_curve(launch, [1, 2, 4, 8], warmup_ms=10, rep_ms=40)
    assert [a for a, _ in curve.points] == [1, 2, 4, 8, 16]
    assert curve.monotone(), curve.points
    assert curve.at(1) > 1.5 * curve.full  # one block of 4 warps per SM cannot keep DRAM busy


def test_a_kernel_on_fewer_sms_is_never_faster(tmp_path):
    import cupy

    path = tmp_path / "stream.cu"
    path.write_text(STREAM)
    n = 1 << 22
    x, y = cupy.ones(n * 4, cupy.float32), cupy.zeros(n * 4, cupy.float32)
    launch = KernelLaunch(KernelSpec(path, "copy_scaled", Dim3(128)), [x, y, np.int64(n)], [Output(1)],
                          grid=Dim3(4096))
    curve = measure_sms_curve(launch, [10, 25, 50, 100], warmup_ms=10, rep_ms=40)
    assert len(curve.points) == 4, curve.points  # every share ran every block (outputs checked)
    assert curve.monotone(), curve.points
    assert curve.at(curve.points[0][0]) > curve.full  # a tenth of the SMs is slower than all of them


ARITH = r"""
__global__ void spin_fma(float* z, long long n, int iters) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float v = z[i];
    for (int k = 0; k < iters; ++k) v = v * 1.0001f + 0.5f;
    z[i] = v;
  }
}
"""


def test_a_memory_and_a_compute_kernel_have_a_bound_below_running_them_one_after_the_other(tmp_path):
    import cupy

    from hfuse.bench.colocation import colocation_bound

    (tmp_path / "stream.cu").write_text(STREAM)
    (tmp_path / "arith.cu").write_text(ARITH)
    n = 1 << 22
    x, y, z = cupy.ones(n * 4, cupy.float32), cupy.zeros(n * 4, cupy.float32), cupy.ones(n, cupy.float32)
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    launches = [
        KernelLaunch(KernelSpec(tmp_path / "stream.cu", "copy_scaled", Dim3(128)), [x, y, np.int64(n)], [Output(1)],
                     grid=Dim3(sms * 8), grid_free=True),
        KernelLaunch(KernelSpec(tmp_path / "arith.cu", "spin_fma", Dim3(128)), [z, np.int64(n), np.int32(256)],
                     [Output(0)], grid=Dim3(sms * 8), grid_free=True),
    ]
    found = colocation_bound(launches, blocks=(1, 2, 4), percents=(25, 50, 75))
    assert found.limit in ("latency", "alone") and found.ms > 0
