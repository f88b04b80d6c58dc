"""``hfuse fuse --verify`` on a GPU: a fused file checked against its originals in one
command, on generated inputs or the user's."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse import Dim3, Fusion, KernelLaunch, KernelSpec, Output
from hfuse.cli import main
from hfuse.errors import HFuseError
from hfuse.tuning.verify import verify

pytestmark = pytest.mark.gpu

KERNELS = r"""
#include <cuda_fp16.h>
__global__ void scale(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
__global__ void block_sum(const int* __restrict__ v, int* __restrict__ sums, int n) {
  __shared__ int part[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < n ? v[i] : 0;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = part[0];
}
__global__ void dynamic_smem(float* out, int n) {
  extern __shared__ float scratch[];
  scratch[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x < n) out[threadIdx.x] = scratch[blockDim.x - 1 - threadIdx.x];
}
"""


@pytest.fixture
def kernels(tmp_path):
    path = tmp_path / "kernels.cu"
    path.write_text(KERNELS)
    return path


def test_hfuse_fuse_verify_on_generated_inputs(kernels, tmp_path, capsys):
    out = tmp_path / "fused.cu"
    status = main(["fuse", str(kernels), "-k", "scale:128", "-k", "block_sum:256", "-o", str(out), "--verify"])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "verified" in err and "generated (size 256, seed 0)" in err


def test_verify_on_the_users_inputs(kernels, cp):
    n = 1 << 16
    specs = [KernelSpec(kernels, "scale", Dim3(128)), KernelSpec(kernels, "block_sum", Dim3(256))]
    launches = [
        KernelLaunch(specs[0], [cp.random.rand(n, dtype=cp.float32), cp.zeros(n, cp.float32), np.int32(n)],
                     [Output(1)], grid=Dim3(n // 128)),
        KernelLaunch(specs[1], [cp.arange(n, dtype=cp.int32), cp.zeros(n // 256, cp.int32), np.int32(n)],
                     [Output(1)], grid=Dim3(n // 256)),
    ]
    found = verify(specs, Fusion((Dim3(128), Dim3(256))), launches)
    assert found.verified and found.inputs == "given" and found.result.time is None


def test_dynamic_shared_memory_needs_the_users_inputs(kernels, tmp_path, capsys):
    status = main(["fuse", str(kernels), "-k", "scale:128", "-k", "dynamic_smem:128", "-o",
                   str(tmp_path / "f.cu"), "--verify"])
    assert status == 2 and "uses dynamic shared memory" in capsys.readouterr().err


@pytest.fixture
def cp():
    import cupy

    return cupy


def test_an_unknown_parameter_type_is_refused_before_anything_runs(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text("struct P { float* x; int n; };\n__global__ void k(P p) { if (threadIdx.x < p.n) p.x[threadIdx.x] = 1; }\n"
                    "__global__ void j(float* y) { y[threadIdx.x] = 2; }\n")
    specs = [KernelSpec(path, "k", Dim3(128)), KernelSpec(path, "j", Dim3(128))]
    with pytest.raises(HFuseError, match="cannot generate an input for parameter 'P"):
        verify(specs, Fusion((Dim3(128), Dim3(128))))


# -- __device__ variables a kernel writes: compared after the run as the arrays are --------

COUNTERS = r"""
__device__ unsigned long long total;
__device__ unsigned blocks_done = 100;
__global__ void count_all(const int* __restrict__ v, int* __restrict__ seen, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { atomicAdd(&total, (unsigned long long)v[i]); seen[i] = 1; }
  if (threadIdx.x == 0) atomicAdd(&blocks_done, 1u);
}
"""


def test_a_device_variable_a_part_writes_is_compared_after_the_run(kernels, tmp_path, capsys):
    path = tmp_path / "counters.cu"
    path.write_text(COUNTERS)
    status = main(["fuse", str(kernels), str(path), "-k", "scale:128", "-k", "count_all:96", "-o",
                   str(tmp_path / "fused.cu"), "--verify"])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "verified" in err and "device variable" not in err  # compared, so no note says it is not


def test_device_variables_start_from_their_initial_contents_and_a_difference_is_named(cp):
    from hfuse.runtime.compile import Compiler
    from hfuse.runtime.execute import compare_outputs, run_once_on_device
    from hfuse.runtime.jobs import job_of, prepare_job
    from hfuse.runtime.symbols import symbol_expressions
    from hfuse.runtime.transfer import ArrayTable

    source = "__device__ unsigned hits = 5;\n__global__ void hit(unsigned* y) { atomicAdd(&hits, 1u); y[threadIdx.x] = 1u; }\n"
    compiler = Compiler()
    table, y = ArrayTable(), cp.zeros(64, cp.uint32)
    table.refs([y])

    def run(text: str) -> tuple:
        binary = compiler.compile(text, ["hit", *symbol_expressions(["hits"])])
        job = job_of("hit", binary, "hit", grid=Dim3(1), block=Dim3(64), shared_mem=0, args=[y], outputs=[Output(0)],
                     output_arrays=[y], table=table, variables=["hits"])
        launch = prepare_job(job, compiler, table.arrays)
        return launch, [run_once_on_device(launch) for _ in range(2)]

    launch, (first, second) = run(source)
    assert int(first[1].view(cp.uint32)[0]) == 5 + 64 == int(second[1].view(cp.uint32)[0])  # restored each run
    assert compare_outputs(first, second, launch.compared) == []
    _, (other, _) = run(source.replace("1u);", "2u);"))
    problems = compare_outputs(first, other, launch.compared)
    assert len(problems) == 1 and problems[0].startswith("device variable 'hits'")
