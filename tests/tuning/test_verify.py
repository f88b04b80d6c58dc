"""``hfuse fuse --verify`` on the CPU: how generated inputs are planned from the kernels'
parameters (and what is refused), and the check's plumbing with a recorded measurement."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse import Dim3, Fusion, KernelLaunch, KernelSpec, Output
from hfuse.cli import main
from hfuse.errors import HFuseError, Location
from hfuse.runtime.device import DeviceLimits
from hfuse.runtime.timing import Timing
from hfuse.tuning.plan import Baselines
from hfuse.tuning.recorded import RecordedBackend, RecordedRequest, RecordedRun, Recording
from hfuse.tuning.verify import plan_parameter, verify

WHERE = Location("k.cu", None, "k")


@pytest.mark.parametrize("declaration, name, dtype, lanes, pointer, output", [
    ("const float* __restrict__ x", "x", "f4", 1, True, False),
    ("float *out", "out", "f4", 1, True, True),
    ("int n", "n", "i4", 1, False, False),
    ("unsigned int count", "count", "u4", 1, False, False),
    ("const half2* v", "v", "f2", 2, True, False),
    ("__nv_bfloat16* y", "y", "bf16", 1, True, True),
    ("float4 *q", "q", "f4", 4, True, True),
    ("const std::int64_t* idx", "idx", "i8", 1, True, False),
    ("size_t n", "n", "u8", 1, False, False),
    ("double alpha", "alpha", "f8", 1, False, False),
    ("volatile int* flag", "flag", "i4", 1, True, True),
    ("float data[]", "data", "f4", 1, True, True),
])
def test_parameters_a_generator_can_fill(declaration, name, dtype, lanes, pointer, output):
    plan = plan_parameter(declaration, name, WHERE)
    assert (plan.dtype, plan.lanes, plan.pointer, plan.output) == (dtype, lanes, pointer, output)


@pytest.mark.parametrize("declaration, name", [
    ("Params p", "p"),                # a struct: what its fields mean is the user's
    ("float** rows", "rows"),         # a pointer to pointers
    ("const float& v", "v"),          # a reference
    ("T* data", "data"),              # a template type not given
    ("cudaTextureObject_t tex", "tex"),
])
def test_parameters_it_refuses_say_so_and_what_to_do(declaration, name):
    with pytest.raises(HFuseError) as caught:
        plan_parameter(declaration, name, WHERE)
    assert declaration in str(caught.value) and "your own inputs" in str(caught.value)


KERNELS = r"""
__global__ void scale(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void shift(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 1.0f; }
"""
H100 = DeviceLimits(name="NVIDIA H100 80GB HBM3", compute_capability=(9, 0), sm_count=132, regs_per_sm=65536,
                    regs_per_block=65536, max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=233472,
                    smem_per_block_optin=232448)


def _launches(path):
    return [KernelLaunch(KernelSpec(path, name, Dim3(128)), [np.zeros(1024, np.float32), np.int32(1024)], [Output(0)],
                         grid=Dim3(8), label=name) for name in ("scale", "shift")]


def test_the_check_runs_what_was_written_and_only_that(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(KERNELS)
    specs = [KernelSpec(path, n, Dim3(128)) for n in ("scale", "shift")]
    fusion = Fusion((Dim3(128), Dim3(128)))
    recording = Recording(H100, {"scale+shift": RecordedRequest(
        Baselines(alone={"scale": Timing.of([1.0]), "shift": Timing.of([1.0])}), {"verify": RecordedRun.timed(1.0)})})
    backend = RecordedBackend(recording)
    found = verify(specs, fusion, _launches(path), backend=backend)
    assert found.verified and found.result.time is None and found.inputs == "given"  # verified, not timed
    assert found.result.registers and backend.sessions[0].measured == ["verify"]
    with pytest.raises(HFuseError, match="is not what these kernels generate"):
        verify(specs, fusion, _launches(path), backend=RecordedBackend(recording), expected_source="// another file")


def test_verify_without_a_gpu_is_a_clear_error(tmp_path, capsys, monkeypatch):
    from hfuse.errors import GPUUnavailableError
    from hfuse.runtime import device

    def no_gpu():
        raise GPUUnavailableError("no CUDA GPU: this needs one")

    monkeypatch.setattr(device, "require_gpu", no_gpu)
    path = tmp_path / "k.cu"
    path.write_text(KERNELS)
    out = tmp_path / "fused.cu"
    status = main(["fuse", str(path), "-k", "scale:128", "-k", "shift:128", "-o", str(out), "--verify"])
    assert status == 2 and out.is_file()  # written first; the check says why it could not run
    assert "no CUDA GPU" in capsys.readouterr().err


def test_the_device_variables_parts_write_go_to_the_measurer_under_each_modules_names(tmp_path, monkeypatch):
    # the originals' and the fused module's names, compiled with their &name expressions, so
    # the measurer can find and compare them (two files' 'done': one per part, renamed)
    from hfuse.runtime.symbols import cubin_variables, lowered_symbol
    from hfuse.tuning.recorded import RecordedMeasurer

    one, two = tmp_path / "one.cu", tmp_path / "two.cu"
    one.write_text("__device__ unsigned done;\n"
                   "__global__ void scale(float* x, int n) { x[threadIdx.x] *= 2.f; atomicAdd(&done, 1u); }\n")
    two.write_text("__device__ unsigned done = 3;\nnamespace acc { __device__ unsigned long long total; }\n"
                   "__global__ void shift(float* y, int n) { y[threadIdx.x] += 1.f; done = n; acc::total += n; }\n")
    seen = []
    measure = RecordedMeasurer.measure
    monkeypatch.setattr(RecordedMeasurer, "measure", lambda self, request: seen.append(request) or measure(self, request))
    specs = [KernelSpec(one, "scale", Dim3(128)), KernelSpec(two, "shift", Dim3(128))]
    launches = [KernelLaunch(s, [np.zeros(1024, np.float32), np.int32(1024)], [Output(0)], grid=Dim3(8), label=s.name)
                for s in specs]
    recording = Recording(H100, {"scale+shift": RecordedRequest(
        Baselines(alone={"scale": Timing.of([1.0]), "shift": Timing.of([1.0])}), {"verify": RecordedRun.timed(1.0)})})
    verify(specs, Fusion((Dim3(128), Dim3(128))), launches, backend=RecordedBackend(recording))
    (request,) = seen
    assert [job.variables for job in request.references] == [("done",), ("done", "acc::total")]
    assert request.fused.variables == ("done__hf1", "done__hf2", "acc::total")
    lowered = [lowered_symbol(j.binary, v) for j in (*request.references, request.fused) for v in j.variables]
    assert lowered == ["done", "done", "_ZN3acc5totalE", "done__hf1", "done__hf2", "_ZN3acc5totalE"]
    assert set(lowered[3:]) <= set(cubin_variables(request.fused.binary.cubin))  # there to be read
    assert cubin_variables(request.references[1].binary.cubin)["done"].initial == (3).to_bytes(4, "little")
