"""A class's __host__-only members are kept from NVRTC, which compiles no host function."""
from __future__ import annotations

import pytest

from hfuse.transform.host_members import GUARD, without_host_members

FASTDIV = """struct fastdiv {
  unsigned d, m;
  __host__ __device__ fastdiv() : d(1), m(0) {}
  __host__ fastdiv(unsigned d) : d(d), m(0xffffffffu / d) {
    m += 1;
  }  // the host computes the magic number
  __host__ static fastdiv make(unsigned d);
  template <typename T> __host__ T as() const { return T(d); }
  __host__ constexpr unsigned divisor() const { return d; }
  __device__ unsigned div(unsigned n) const { return __umulhi(n, m); }
};
"""


def test_host_only_members_go_under_the_guard_and_the_others_stay():
    text = without_host_members(FASTDIV)
    assert text.count(GUARD) == 3  # the constructor, the static declaration, the member template
    assert GUARD + "  __host__ fastdiv(unsigned d) : d(d), m(0xffffffffu / d) {\n    m += 1;\n  }\n#endif" in text
    assert GUARD + "  template <typename T> __host__ T as() const { return T(d); }\n#endif" in text
    assert "#endif  // the host computes the magic number" in text  # (the rest of its line follows)
    assert "  __host__ __device__ constexpr unsigned divisor()" in text  # (device code may call it)
    for kept in ("  __host__ __device__ fastdiv() : d(1), m(0) {}\n", "  __device__ unsigned div("):
        assert kept in text and GUARD + kept not in text


def test_free_functions_and_host_device_ones_are_not_touched():
    text = "__host__ void launch(int n) { }\n__host__ __device__ int twice(int x) { return 2 * x; }\n"
    assert without_host_members(text) == text


@pytest.mark.nvrtc
@pytest.mark.nvcc
def test_the_guarded_class_compiles_under_nvrtc_and_nvcc(tmp_path):
    from toolchain import compile_nvcc, compile_nvrtc

    source = without_host_members(FASTDIV) + (
        'extern "C" __global__ void k(unsigned* x, fastdiv f) { x[threadIdx.x] = f.div(x[threadIdx.x]); }\n')
    compile_nvrtc(source, ["k"])
    compile_nvcc(source + "fastdiv fastdiv::make(unsigned d) { return fastdiv(d); }\n", workdir=tmp_path)


def test_the_members_kept_from_nvrtc_are_named_with_their_class():
    # their definitions outside the class go under the same guard (codegen/emit._usable_on_device)
    from hfuse.transform.host_members import host_only_members

    assert host_only_members(FASTDIV) == {("fastdiv", "fastdiv"), ("fastdiv", "make"), ("fastdiv", "as")}
