"""Kernel template instances written as ordinary code, for Clang to read
(``frontend/instance_copies.py``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.frontend import clang as clang_module
from hfuse.frontend.clang import read_meaning
from hfuse.frontend.extract import load_source
from hfuse.frontend.instance_copies import instance_copy
from hfuse.frontend.options import CompileOptions


def _kernel(tmp_path, text: str, name: str = "k", options: CompileOptions = CompileOptions()):
    path = tmp_path / "k.cu"
    path.write_text(text)
    source = load_source(path, options=options)
    return next(i.function for i in source.items if i.function is not None and i.function.name == name), source


def test_each_parameter_is_declared_as_the_instance_gives_it(tmp_path):
    kernel, _ = _kernel(tmp_path, """namespace ns {
template <typename T, int N, T (*F)(const T&), template <class> class Op, typename = void, bool B = (N > 2)>
__global__ void k(T* out) {
  out[threadIdx.x] = Op<T>{}(F(out[threadIdx.x])) * N;
}
}
""")
    copy = instance_copy(kernel, ["float", "4", "ns::twice", "ns::Neg"], 3)
    assert copy.startswith("namespace ns {\nnamespace hfuse_instance_3 {\n")
    assert "using T = float;\nconstexpr int N = 4;\nconstexpr T (*F)(const T&) = ns::twice;\n" in copy
    assert "template <class... hfuse_args> using Op = ns::Neg<hfuse_args...>;\n" in copy
    assert "constexpr bool B = (4 > 2);\n" in copy  # a default, its mention of N made the argument
    # the kernel's own line, and its body as written
    assert f'#line 3 "{tmp_path / "k.cu"}"\n__global__ void k(T* out) {{\n' in copy


def test_what_cannot_be_written_as_ordinary_code_is_not_copied(tmp_path):
    pack, _ = _kernel(tmp_path, "template <typename... Ts>\n__global__ void k(Ts... xs) {}\n")
    assert instance_copy(pack, ["int", "float"], 0) is None
    plain, _ = _kernel(tmp_path, "__global__ void k(float* y) {}\n")
    assert instance_copy(plain, [], 0) is None
    missing, _ = _kernel(tmp_path, "template <typename T, int N>\n__global__ void k(T* y) {}\n")
    assert instance_copy(missing, ["float"], 0) is None


POLICY_HEADER = """#pragma once
namespace lib2 {
struct Block1D {
  static __device__ int Tid() { return threadIdx.x; }
  static __device__ int Warps() { return blockDim.x / 32; }
};
template <typename T, typename B = Block1D>
__device__ T block_sum(T v, T* shared) {
  const int tid = B::Tid();
  if (tid % 32 == 0) shared[tid / 32] = v;
  T s = 0;
  for (int i = 0; i < B::Warps(); ++i) s += shared[i];
  return s;
}
}
"""

KERNEL = """#include <lib/red2.cuh>
#include <type_traits>
template <typename T>
__global__ void k(T* out, const T* in) {
  __shared__ T sh[32];
  T v = lib2::block_sum<T>(in[threadIdx.x], sh);
  CHECK
  out[threadIdx.x] = v;
}
"""


@pytest.mark.parametrize("check, exact", [
    ("", True),
    # compiles only as a template (the discarded branch of if constexpr): the copy is dropped
    ("if constexpr (!std::is_same_v<T, float>) { static_assert(sizeof(T) == 2); }", False),
])
def test_clang_reads_the_instance_where_its_copy_compiles(tmp_path, check, exact):
    # PyTorch's BlockReduceSum<acc_t>: in the template, B::Tid() names nothing, so the walk is
    # unknown (refused); in the instance's copy, Clang resolves it to Block1D::Tid
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "red2.cuh").write_text(POLICY_HEADER)
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    kernel, source = _kernel(tmp_path, KERNEL.replace("CHECK", check), options=options)
    meaning = read_meaning([Path(source.path)], options, kept_includes=source.kept_includes, cache=tmp_path,
                           instances=[instance_copy(kernel, ["float"], 0)])
    assert meaning.unavailable is None
    found = meaning.function(tmp_path / "k.cu", "k", 6)
    (use,) = [u for u in found.uses if u.qualified == "lib2::block_sum"]
    assert use.line == 6  # the kernel's own line, not the copy's
    if exact:
        assert not use.unknown and set(use.reads) == {"reads threadIdx", "reads blockDim"}
        assert meaning.instances_unread is None
    else:
        assert use.unknown and "static assertion failed" in meaning.instances_unread


def test_an_instance_that_does_not_compile_leaves_the_others_their_copies(tmp_path):
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "red2.cuh").write_text(POLICY_HEADER)
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    check = "if constexpr (!std::is_same_v<T, float>) { static_assert(sizeof(T) == 2); }"
    text = "#include <cuda_fp16.h>\n" + KERNEL.replace("CHECK", check)
    kernel, source = _kernel(tmp_path, text, options=options)
    meaning = read_meaning([Path(source.path)], options, kept_includes=source.kept_includes, cache=tmp_path,
                           instances=[instance_copy(kernel, ["float"], 0), instance_copy(kernel, ["__half"], 1)])
    assert "static assertion failed" in meaning.instances_unread  # k<float>'s copy
    (use,) = [u for u in meaning.function(tmp_path / "k.cu", "k", 7).uses if u.qualified == "lib2::block_sum"]
    assert not use.unknown and set(use.reads) == {"reads threadIdx", "reads blockDim"}  # k<__half>'s copy


REDUCER_HEADER = """#pragma once
namespace lib {
template <typename T>
struct Reducer {
  T* sh;
  __device__ explicit Reducer(T* s) : sh(s) {}
  __device__ T sum(T v) { sh[threadIdx.x] = v; __syncthreads(); return sh[0]; }
};
template <typename T>
__device__ Reducer<T> make_reducer(T* s) { return Reducer<T>(s); }
}
"""


@pytest.mark.parametrize("check, unknown", [
    ("", False),  # the copy compiles: Reducer<float>::sum is read
    ("if constexpr (!std::is_same_v<T, float>) { static_assert(sizeof(T) == 2); }", True),
])
def test_without_its_copy_a_member_call_on_a_headers_object_is_unknown(tmp_path, check, unknown):
    # read as a template, r.sum(v) names nothing: once fused horizontally where the copy failed
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "reducer.cuh").write_text(REDUCER_HEADER)
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    text = ("#include <lib/reducer.cuh>\n#include <type_traits>\ntemplate <typename T>\n"
            f"__global__ void k(T* out, const T* in) {{\n  {check}\n  __shared__ T sh[32];\n"
            "  auto r = lib::make_reducer(sh);\n  out[threadIdx.x] = r.sum(in[threadIdx.x]);\n}\n")
    kernel, source = _kernel(tmp_path, text, options=options)
    meaning = read_meaning([Path(source.path)], options, kept_includes=source.kept_includes, cache=tmp_path,
                           instances=[instance_copy(kernel, ["float"], 0)])
    uses = {(u.qualified, u.line): u for u in meaning.function(tmp_path / "k.cu", "k", 8).uses}
    if unknown:
        assert uses[("lib::make_reducer", 8)].unknown
    else:
        assert set(uses[("lib::Reducer::sum", 8)].reads) == {"reads threadIdx", "synchronises the block"}
        assert not any(u.unknown for u in uses.values())
