"""transform/static_shared.py: static shared variables keep a 16-byte alignment when fused."""
from __future__ import annotations

from hfuse.transform.static_shared import with_aligned_shared


def test_static_shared_arrays_get_16_byte_alignment():
    text = "__device__ void f() { __shared__ float a[64]; static __shared__ int b; __shared__ double c[3]; }"
    out = with_aligned_shared(text)
    assert out.count("__shared__ __align__(16)") == 3


def test_a_larger_alignment_is_left_alone_and_a_smaller_one_raised():
    text = ("__device__ void f() { __shared__ __align__(32) float a[64]; __shared__ alignas(16) float b[4];\n"
            "  __shared__ __align__(8) float c[2]; }")
    out = with_aligned_shared(text)
    assert "__shared__ __align__(32) float a[64]" in out and "__shared__ alignas(16) float b[4]" in out
    assert "__shared__ __align__(16) __align__(8) float c[2]" in out  # the largest alignment wins


def test_dynamic_shared_memory_and_other_code_are_untouched():
    text = "__global__ void k(float* p) { extern __shared__ float dyn[]; float x[4]; p[0] = dyn[0] + x[0]; }"
    assert with_aligned_shared(text) == text


def test_file_scope_shared_variables_too():
    assert with_aligned_shared("__shared__ float tile[256];") == "__shared__ __align__(16) float tile[256];"
