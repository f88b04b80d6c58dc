"""A user's project as a batch sees it, on the CPU: a kernel file, a Python file that
makes the launches (NumPy arrays stand in for device arrays: nothing runs), and a
recording of measurements in place of a GPU."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.runtime.device import DeviceLimits
from hfuse.runtime.timing import Timing
from hfuse.tuning.plan import Baselines
from hfuse.tuning.recorded import RecordedRequest, RecordedRun, Recording

H100 = DeviceLimits(name="NVIDIA H100 80GB HBM3", compute_capability=(9, 0), sm_count=132, regs_per_sm=65536,
                    regs_per_block=65536, max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=233472,
                    smem_per_block_optin=232448, driver_version="580.00")

KERNELS = r"""
template <typename T> struct Twice { __device__ static T of(T v) { return v + v; } };

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = Twice<float>::of(x[i]);
}

__global__ void shift(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += 1.0f;
}

__global__ void square(float* z, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) z[i] *= z[i];
}
"""

LAUNCHES = r'''
import os
import time

import numpy as np

from hfuse import Dim3, KernelLaunch, KernelSpec, Output

HERE = os.path.dirname(os.path.abspath(__file__))


def make_launches(first="scale", second="shift", n=4096):
    """Two kernels of kernels.cu over n floats each (labelled with n: a recording finds them so)."""
    if os.environ.get("HFUSE_TEST_SLOW_REQUEST") == f"{first}+{second}@{n}":
        time.sleep(600)  # a request that takes long: the test kills the batch here
    if os.environ.get("HFUSE_TEST_DIE_ONCE") == f"{first}+{second}@{n}":
        marker = os.path.join(HERE, "died-once")
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(9)  # the process tuning it dies (a Ray actor, say)
    out = []
    for name in (first, second):
        if name == "broken":
            raise ValueError("the inputs could not be made")
        spec = KernelSpec(os.path.join(HERE, "kernels.cu"), name, Dim3(256))
        out.append(KernelLaunch(spec, [np.zeros(n, np.float32), np.int32(n)], [Output(0)],
                                grid=lambda b, n=n: Dim3((n + b.x - 1) // b.x), label=f"{name}@{n}"))
    return out
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "kernels.cu").write_text(KERNELS)
    (root / "launches.py").write_text(LAUNCHES)
    return root


def recorded(alone_ms: float, serial_ms: float, candidates: dict[str, float]) -> RecordedRequest:
    """Two kernels of ``alone_ms`` each, their unfused ways, and candidates' times by label."""
    timing = Timing.of
    return RecordedRequest(
        Baselines(alone={"a": timing([alone_ms]), "b": timing([alone_ms])}, serial=timing([serial_ms]),
                  two_streams=timing([serial_ms * 0.98]), graph=timing([serial_ms * 0.99])),
        {label: RecordedRun.timed(ms) for label, ms in candidates.items()})


def recording(requests: dict[str, RecordedRequest]) -> Recording:
    return Recording(H100, requests)
