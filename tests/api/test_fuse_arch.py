"""A fused file whose inputs decide something on the GPU architecture (``#if __CUDA_ARCH__ >=
800``, ``#ifdef __CUDA_ARCH_FEAT_SM90_ALL``) was preprocessed for one: compiled for another,
it would run code its originals would not run there. It says so and stops such a compile."""
from __future__ import annotations

import pytest

from hfuse.api import fuse
from hfuse.frontend.options import CompileOptions
from hfuse.spec import Dim3, KernelSpec

from toolchain import compile_nvcc

SOURCE = """
#include <cuda_fp16.h>
__global__ void scale_h(half* y, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if __CUDA_ARCH__ >= 800
  y[i] = __hmul(y[i], __float2half(s));
#else
  y[i] = __float2half(__half2float(y[i]) * s);
#endif
}
__global__ void wide(float* y) {
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
  y[threadIdx.x] = 1.f;
#else
  y[threadIdx.x] = 2.f;
#endif
}
"""
DEVICE_ONLY = "__global__ void plain(float* y) {\n#ifdef __CUDA_ARCH__\n  y[threadIdx.x] = 3.f;\n#endif\n}\n"


def _fuse(text: str, arch: str, *names: str):
    options = CompileOptions(arch=arch)
    return fuse([KernelSpec("k.cu", n, Dim3(128)) for n in names], sources={"k.cu": text}, options=options)


@pytest.mark.nvcc
@pytest.mark.parametrize("fused_for, compiled_for, compiles", [
    ("sm_90", "sm_90", True), ("sm_90", "sm_80", False), ("sm_80", "sm_80", True), ("sm_90", "sm_90a", False),
    ("sm_90a", "sm_90a", True), ("sm_90a", "sm_90", False),
])
def test_a_fused_file_compiles_only_for_the_architecture_it_was_decided_for(tmp_path, fused_for, compiled_for, compiles):
    fused = _fuse(SOURCE, fused_for, "scale_h", "wide")
    assert f"hfuse decided it for {fused_for}" in fused.source
    result = compile_nvcc(fused.source, arch=compiled_for, workdir=tmp_path, check=False)
    assert result.ok == compiles, result.log[-2000:]
    if not compiles:
        assert f"hfuse fused these kernels for {fused_for}" in result.log


def test_code_that_tells_only_the_device_pass_apart_compiles_anywhere():
    fused = _fuse(DEVICE_ONLY, "sm_90", "plain", "plain")
    assert "decided it for" not in fused.source and "#error" not in fused.source


FEATURE = """__global__ void feature(float* y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH_HAS_FEATURE__(SM90_ALL)
  y[threadIdx.x] = 1.f;
#else
  y[threadIdx.x] = 2.f;
#endif
}
"""


@pytest.mark.nvcc
@pytest.mark.parametrize("fused_for, compiled_for, compiles", [
    ("sm_90", "sm_90", True), ("sm_90", "sm_90a", False), ("sm_90a", "sm_90a", True), ("sm_90a", "sm_90", False)])
def test_code_asking_nvccs_feature_test_is_decided_as_nvcc_does(tmp_path, fused_for, compiled_for, compiles):
    # Transformer Engine's ptx.cuh: '#if __CUDA_ARCH_HAS_FEATURE__(SM90_ALL)'. nvcc defines the test in
    # every pass; hfuse did not, so it took the #else for sm_90a too, and its check stopped every
    # compile (it asked that __CUDA_ARCH_HAS_FEATURE__ be undefined)
    fused = _fuse(FEATURE, fused_for, "feature", "feature")
    assert ("y[hf_ctx.threadIdx.x] = 1.f;" in fused.source) == (fused_for == "sm_90a")
    result = compile_nvcc(fused.source, arch=compiled_for, workdir=tmp_path, check=False)
    assert result.ok == compiles, result.log[-2000:]
