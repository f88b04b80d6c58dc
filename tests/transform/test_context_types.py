"""Types whose member functions read the block (``context_types.py``): each part gets a copy
carrying the part's context in a member. An object of such a type that the host made (a
functor passed by value, a table of them behind a pointer) has no such member: refused,
at the parameter, rather than emitted as code that cannot compile."""
from __future__ import annotations

import pytest

from hfuse.api import fuse
from hfuse.errors import HFuseError
from hfuse.spec import Dim3, KernelSpec

TABLE = """
struct Table {
  float scale;
  int stride;
  __device__ float at(const float* x) const { return x[threadIdx.x * stride] * scale; }
};
__global__ void by_value(Table t, const float* x, float* y) { y[threadIdx.x] = t.at(x); }
__global__ void by_pointer(const Table* ts, const float* x, float* y) { y[threadIdx.x] = ts[blockIdx.x].at(x); }
__global__ void made_here(const float* x, float* y) { Table t; t.scale = 2.f; t.stride = 1; y[threadIdx.x] = t.at(x); }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""

FUNCTOR = """
template <typename T, int N> struct Chunks { T* ptr[N]; int n[N]; };
template <typename T, typename U, typename... Args>
__global__ void apply(T chunks, U op, Args... args) { op(chunks, args...); }
struct Scale {
  __device__ void operator()(Chunks<float, 2>& c, float s) {
    for (int i = threadIdx.x; i < c.n[blockIdx.x]; i += blockDim.x) c.ptr[blockIdx.x][i] *= s;
  }
};
struct Pure {
  __device__ float operator()(float v) const { return v * 2.f; }
};
template <typename F> __global__ void map(F f, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = f(y[i]);
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


def _fuse(text: str, name: str, *targs: str):
    return fuse([KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", name, Dim3(128), targs)],
                sources={"k.cu": text})


@pytest.mark.parametrize("kernel, param", [("by_value", "t"), ("by_pointer", "ts")])
def test_a_host_made_object_of_a_block_reading_type_is_refused(kernel, param):
    with pytest.raises(HFuseError) as err:
        _fuse(TABLE, kernel)
    assert f"parameter '{param}' is a 'Table' the host made" in err.value.message
    assert "(at, line 5)" in err.value.message and err.value.where.line == TABLE.count("\n", 0, TABLE.index(kernel)) + 1


def test_one_the_kernel_makes_gets_the_parts_context():
    fused = _fuse(TABLE, "made_here")
    assert "Table__hf2 t(hf_ctx);" in fused.source


def test_a_functor_given_through_a_template_argument_is_refused():
    with pytest.raises(HFuseError) as err:
        _fuse(FUNCTOR, "apply", "Chunks<float, 2>", "Scale", "float")
    assert "parameter 'op' is a 'Scale' the host made" in err.value.message and "operator()" in err.value.message


def test_a_functor_that_does_not_read_the_block_is_passed_as_it_is():
    fused = _fuse(FUNCTOR, "map", "Pure")
    assert "Pure hf2_f" in fused.source
