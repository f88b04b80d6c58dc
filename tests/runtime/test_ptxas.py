"""ptxas -v parsing: recorded reports in each known format, and a real nvcc compile."""
from __future__ import annotations

import pytest

from hfuse.runtime.ptxas import find_resources, nvcc_resources, parse_ptxas

# nvcc 13.0 -arch=sm_90 -cubin -Xptxas -v (recorded).
NVCC_13 = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5spillPfi' for 'sm_90'
ptxas info    : Function properties for _Z5spillPfi
    832 bytes stack frame, 892 bytes spill stores, 1048 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 832 bytes cumulative stack size
ptxas info    : Compile time = 75.045 ms
ptxas info    : Compiling entry function '_Z4histIfLi256EEvPKT_Pji' for 'sm_90'
ptxas info    : Function properties for _Z4histIfLi256EEvPKT_Pji
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 13 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compile time = 3.163 ms
ptxas info    : Compiling entry function 'add' for 'sm_90'
ptxas info    : Function properties for add
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 1.086 ms
"""

# NVRTC 13 log with -Xptxas=-v (recorded): same lines, "ptxas ." prefix on the frame line.
NVRTC_13 = """\
ptxas info    : 5922 bytes gmem
ptxas info    : Compiling entry function '_Z5spillPfi' for 'sm_90'
ptxas info    : Function properties for _Z5spillPfi
ptxas         .     832 bytes stack frame, 892 bytes spill stores, 1048 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 832 bytes cumulative stack size
"""

# The CUDA 11/12 shape: cmem reported, no barrier count, a non-inlined device function.
NVCC_11 = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for _Z6helperi
    16 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function '_Z3addPfS_' for 'sm_70'
ptxas info    : Function properties for _Z3addPfS_
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 2048 bytes smem, 368 bytes cmem[0]
"""


def test_cuda13_report():
    r = parse_ptxas(NVCC_13, demangle=False)
    assert set(r) == {"_Z5spillPfi", "_Z4histIfLi256EEvPKT_Pji", "add"}
    s = r["_Z5spillPfi"]
    assert (s.registers, s.stack_frame, s.spill_stores, s.spill_loads) == (32, 832, 892, 1048)
    assert s.spills and s.entry and s.arch == "sm_90"
    h = r["_Z4histIfLi256EEvPKT_Pji"]
    assert (h.registers, h.barriers, h.static_smem, h.spills) == (13, 1, 1024, False)
    assert r["add"].registers == 10 and r["add"].static_smem == 0


def test_nvrtc_log():
    s = parse_ptxas(NVRTC_13, demangle=False)["_Z5spillPfi"]
    assert (s.registers, s.spill_stores, s.spill_loads) == (32, 892, 1048)


def test_cuda11_report():
    r = parse_ptxas(NVCC_11, demangle=False)
    add = r["_Z3addPfS_"]
    assert (add.registers, add.static_smem, add.cmem, add.barriers) == (8, 2048, 368, None)
    helper = r["_Z6helperi"]
    assert not helper.entry and helper.spill_stores == 4


def test_lookup_by_plain_name():
    r = parse_ptxas(NVCC_11, demangle=False)
    assert find_resources(r, "add").name == "_Z3addPfS_"
    assert find_resources(r, "_Z3addPfS_").registers == 8
    assert find_resources(r, "nope") is None


SOURCE = r"""
extern "C" __global__ void add(float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += b[i];
}
template <typename T, int N> __global__ void hist(const T* x, unsigned* h, int n) {
  __shared__ unsigned s[N];
  for (int i = threadIdx.x; i < N; i += blockDim.x) s[i] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&s[(int)x[i] % N], 1u);
  __syncthreads();
  for (int i = threadIdx.x; i < N; i += blockDim.x) atomicAdd(&h[i], s[i]);
}
template __global__ void hist<float, 256>(const float*, unsigned*, int);
"""


@pytest.mark.nvcc
def test_real_nvcc_compile():
    r = nvcc_resources(SOURCE, arch="sm_90")
    add = find_resources(r, "add")
    assert add is not None and 4 <= add.registers <= 64 and not add.spills
    hist = r["_Z4histIfLi256EEvPKT_Pji"]
    assert hist.static_smem == 1024 and hist.barriers == 1


@pytest.mark.nvcc
def test_real_nvcc_launch_bounds_lower_registers():
    # A register-hungry kernel compiled with and without a minimum-blocks bound.
    body = r"""
    {BOUNDS} __global__ void heavy(float* out, const float* in, int n) {
      float v[48];
      #pragma unroll
      for (int i = 0; i < 48; ++i) v[i] = in[(threadIdx.x + i * 97) % n];
      float acc = 0.f;
      for (int k = 0; k < n; ++k) {
        #pragma unroll
        for (int i = 0; i < 48; ++i) acc = fmaf(v[i], v[(i + k) % 48], acc);
      }
      out[threadIdx.x] = acc;
    }"""
    free = nvcc_resources(body.replace("{BOUNDS}", 'extern "C"'))["heavy"]
    capped = nvcc_resources(body.replace("{BOUNDS}", 'extern "C" __launch_bounds__(256, 8)'))["heavy"]
    assert capped.registers <= 32 < free.registers


@pytest.mark.nvcc
def test_nvcc_error_carries_log():
    from hfuse.runtime.ptxas import NvccError

    with pytest.raises(NvccError) as info:
        nvcc_resources("__global__ void broken( { }")
    assert "error" in info.value.log


@pytest.mark.nvcc
def test_parameters_a_kernel_cannot_have_are_named_as_such():
    # two multi_tensor_apply-style kernels of 16 KB of parameters each: one fused kernel takes both
    from hfuse.runtime.ptxas import NvccError

    source = ("struct Big { float v[4095]; };\n"
              "__global__ void both(Big a, Big b, float* o) { o[threadIdx.x] = a.v[threadIdx.x] + b.v[0]; }\n")
    with pytest.raises(NvccError, match=r"parameters take 32768 bytes, more than the 32764") as info:
        nvcc_resources(source)
    assert "pass a large struct through a pointer" in info.value.hint
