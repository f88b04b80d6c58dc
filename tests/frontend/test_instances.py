"""Kernel template instances named for Clang to instantiate, and read as instantiated
(``frontend/instances.py``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.frontend import clang as clang_module
from hfuse.frontend.clang import read_meaning
from hfuse.frontend.extract import load_source
from hfuse.frontend.instances import instance_reference
from hfuse.frontend.options import CompileOptions


def _kernel(tmp_path, text: str, name: str = "k", options: CompileOptions = CompileOptions()):
    path = tmp_path / "k.cu"
    path.write_text(text)
    source = load_source(path, options=options)
    return next(i.function for i in source.items if i.function is not None and i.function.name == name), source


def _clang():
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")


def test_an_instance_is_named_in_the_kernels_own_namespace(tmp_path):
    kernel, _ = _kernel(tmp_path, "namespace ns {\ntemplate <typename T, int N>\n__global__ void k(T* out) {}\n}\n")
    reference = instance_reference(kernel, ["float", "4"], 3)
    assert reference == ("namespace ns {\nnamespace hfuse_instance_3 { auto* const hfuse_kernel = &k<float, 4>; }\n"
                         "}  // namespace ns\n")
    plain, _ = _kernel(tmp_path, "__global__ void k(float* y) {}\n")
    assert instance_reference(plain, [], 0) is None
    assert instance_reference(kernel, [], 0) is None  # no arguments given: read as a template


def test_every_kind_of_parameter_is_instantiated_as_given(tmp_path):
    # a function, a template-template parameter, a default that names another parameter, a
    # parameter pack used in a fold expression and an if constexpr whose other branch would not
    # compile for the instance: Clang's instantiation has them all, the walk sees the calls resolved
    _clang()
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "ops.cuh").write_text(
        "#pragma once\nnamespace lib {\n__device__ inline float lane(const float& x) { return x + threadIdx.x; }\n"
        "template <class T> struct Id { __device__ T operator()(T x) const { return x; } };\n}\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    text = ("#include <lib/ops.cuh>\n#include <type_traits>\nnamespace ns {\n"
            "template <typename T, T (*F)(const T&), template <class> class Op, bool B = sizeof(T) == 4, class... Ts>\n"
            "__global__ void k(T* out, Ts... xs) {\n"
            "  if constexpr (!std::is_same_v<T, float>) { static_assert(sizeof(T) == 2); }\n"
            "  out[0] = Op<T>{}(F(out[0])) + (T(0) + ... + xs) + B;\n}\n}\n")
    kernel, source = _kernel(tmp_path, text, options=options)
    reference = instance_reference(kernel, ["float", "lib::lane", "lib::Id", "true", "float", "int"], 0)
    meaning = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path,
                           instances=[reference])
    assert meaning.unavailable is None and meaning.instances_unread is None
    uses = {u.qualified: u for u in meaning.function(tmp_path / "k.cu", "k", 5).uses}
    assert uses["lib::lane"].reads == ("reads threadIdx",) and uses["lib::lane"].line == 7
    assert not any(u.unknown for u in uses.values())


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
    # a branch of if constexpr the instance discards (once, as a copy in ordinary code, it failed)
    ("if constexpr (!std::is_same_v<T, float>) { static_assert(sizeof(T) == 2); }", True),
    # an instance the template's own assertion refuses: read as a template
    ("static_assert(sizeof(T) == 2);", False),
])
def test_clang_reads_the_instance_where_it_compiles(tmp_path, check, exact):
    # PyTorch's BlockReduceSum<acc_t>: in the template, B::Tid() names nothing, so the walk is
    # unknown (refused); in the instance, Clang resolves it to Block1D::Tid
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "red2.cuh").write_text(POLICY_HEADER)
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    kernel, source = _kernel(tmp_path, KERNEL.replace("CHECK", check), options=options)
    meaning = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path,
                           instances=[instance_reference(kernel, ["float"], 0)])
    assert meaning.unavailable is None
    found = meaning.function(tmp_path / "k.cu", "k", 6)
    (use,) = [u for u in found.uses if u.qualified == "lib2::block_sum"]
    assert use.line == 6  # the kernel's own line
    if exact:
        assert not use.unknown and set(use.reads) == {"reads threadIdx", "reads blockDim"}
        assert meaning.instances_unread is None
    else:
        assert use.unknown and "static assertion failed" in meaning.instances_unread


def test_an_instance_that_does_not_compile_leaves_the_others_theirs(tmp_path):
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "red2.cuh").write_text(POLICY_HEADER)
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    text = "#include <cuda_fp16.h>\n" + KERNEL.replace("CHECK", "static_assert(sizeof(T) == 2);")
    kernel, source = _kernel(tmp_path, text, options=options)
    meaning = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path,
                           instances=[instance_reference(kernel, ["float"], 0), instance_reference(kernel, ["__half"], 1)])
    assert "static assertion failed" in meaning.instances_unread  # k<float>'s
    (use,) = [u for u in meaning.function(tmp_path / "k.cu", "k", 7).uses if u.qualified == "lib2::block_sum"]
    assert not use.unknown and set(use.reads) == {"reads threadIdx", "reads blockDim"}  # k<__half>'s


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
    ("", False),  # the instance compiles: Reducer<float>::sum is read
    ("static_assert(sizeof(T) == 2);", True),
])
def test_without_its_instance_a_member_call_on_a_headers_object_is_unknown(tmp_path, check, unknown):
    # read as a template, r.sum(v) names nothing: once fused horizontally where the instance failed
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
    meaning = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path,
                           instances=[instance_reference(kernel, ["float"], 0)])
    uses = {(u.qualified, u.line): u for u in meaning.function(tmp_path / "k.cu", "k", 8).uses}
    if unknown:
        assert uses[("lib::make_reducer", 8)].unknown
    else:
        assert set(uses[("lib::Reducer::sum", 8)].reads) == {"reads threadIdx", "synchronises the block"}
        assert not any(u.unknown for u in uses.values())


FUNCTOR_HEADER = """#pragma once
namespace optlib {
template <typename T>
struct Scale {
  __device__ void operator()(int n, T* p, float a) { for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] *= a; }
};
}
"""


def test_a_kernel_templates_pack_reaches_what_its_functor_reads(tmp_path):
    # multi_tensor_apply<F, Args...> with an installed library's functor: read as a template,
    # f(n, args...) names nothing; the instance calls Scale<float>::operator()
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "optlib").mkdir(parents=True)
    (tmp_path / "inc" / "optlib" / "scale.cuh").write_text(FUNCTOR_HEADER)
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    text = ("#include <optlib/scale.cuh>\ntemplate <typename F, typename... Args>\n"
            "__global__ void k(int n, F f, Args... args) {\n  f(n, args...);\n}\n")
    kernel, source = _kernel(tmp_path, text, options=options)
    meaning = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path,
                           instances=[instance_reference(kernel, ["optlib::Scale<float>", "float*", "float"], 0)])
    assert meaning.instances_unread is None
    uses = {u.qualified: u for u in meaning.function(tmp_path / "k.cu", "k", 3).uses}
    assert set(uses["optlib::Scale::operator()"].reads) == {"reads threadIdx", "reads blockDim"}
    assert uses["optlib::Scale::operator()"].line == 4


def test_a_header_function_given_as_a_non_type_parameter_is_read_where_it_runs(tmp_path):
    # vLLM's act_kernel<T, ACT_FN>: in the instance, ACT_FN(x) calls actlib::lane_act; once
    # fused horizontally though it reads threadIdx
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "actlib").mkdir(parents=True)
    (tmp_path / "inc" / "actlib" / "act.cuh").write_text(
        "#pragma once\nnamespace actlib {\n"
        "__device__ inline float lane_act(const float& x) { return x * (threadIdx.x & 1); }\n}\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    text = ("#include <actlib/act.cuh>\ntemplate <typename T, T (*ACT_FN)(const T&)>\n"
            "__global__ void k(T* out, const T* in) {\n  out[threadIdx.x] = ACT_FN(in[threadIdx.x]);\n}\n")
    kernel, source = _kernel(tmp_path, text, options=options)
    meaning = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path,
                           instances=[instance_reference(kernel, ["float", "actlib::lane_act"], 0)])
    uses = {u.qualified: u for u in meaning.function(tmp_path / "k.cu", "k", 3).uses}
    assert uses["actlib::lane_act"].reads == ("reads threadIdx",)
    # read as a template (no instance), the call goes to whatever the instance gives
    meaning = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path / "t")
    (through,) = [u for u in meaning.function(tmp_path / "k.cu", "k", 3).uses if u.through]
    assert (through.through, through.line, through.unknown) == ("ACT_FN", 4, True)


@pytest.mark.parametrize("given", [True, False])
def test_a_helper_template_reached_from_a_template_read_as_written_is_read_as_written(tmp_path, given):
    # the last gap of issue 18's kind: r.sum(v) in the user's helper template, the kernel's instance
    # missing (no template arguments given); given, reduce<float>'s instance is read, r.sum(v) resolved
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "reducer.cuh").write_text(REDUCER_HEADER)
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    text = ("#include <lib/reducer.cuh>\ntemplate <typename T>\n__device__ T reduce(T* sh, T v) {\n"
            "  auto r = lib::make_reducer(sh);\n  return r.sum(v);\n}\n"
            "template <typename T, typename... Rest>\n__global__ void k(T* out, const T* in, Rest... rest) {\n"
            "  __shared__ T sh[256];\n  T extra = (T(0) + ... + rest);\n"
            "  out[threadIdx.x] = reduce(sh, in[threadIdx.x]) + extra;\n}\n")
    kernel, source = _kernel(tmp_path, text, options=options)
    reference = instance_reference(kernel, ["float", "float"] if given else [], 0)
    meaning = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path,
                           instances=[reference] if reference else [])
    uses = meaning.function(tmp_path / "k.cu", "k", 7).uses
    assert all(u.line == 11 for u in uses if u.qualified.startswith("lib::"))  # the helper's call
    if not given:
        assert any(u.unknown for u in uses if u.qualified == "lib::make_reducer")
    else:
        assert not any(u.unknown for u in uses)
        assert any(set(u.reads) == {"reads threadIdx", "synchronises the block"} for u in uses)


def test_an_operator_on_a_headers_object_in_a_template_read_as_written_is_unknown(tmp_path):
    # a + b of lib::Frag<T>: the operator+ that runs is found by argument-dependent lookup at
    # instantiation; in the template it names nothing (once fused as a template, silently wrong)
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "fraglib").mkdir(parents=True)
    (tmp_path / "inc" / "fraglib" / "frag.cuh").write_text(
        "#pragma once\nnamespace fraglib {\ntemplate <typename T> struct Frag { T v; };\ntemplate <typename T>\n"
        "__device__ Frag<T> operator+(Frag<T> a, Frag<T> b) { return Frag<T>{a.v + b.v + (T)threadIdx.x}; }\n}\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    text = ("#include <fraglib/frag.cuh>\ntemplate <typename T>\n__global__ void k(T* out, const T* in) {\n"
            "  fraglib::Frag<T> a{in[0]}, b{in[1]};\n  T x = in[2];\n  out[threadIdx.x] = (a + b).v + x * x;\n}\n")
    kernel, source = _kernel(tmp_path, text, options=options)
    written = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path)
    unknown = [u for u in written.function(tmp_path / "k.cu", "k", 2).uses if u.unknown]
    assert [(u.qualified, u.line) for u in unknown] == [("fraglib::Frag", 6)]  # not x * x: a T's own
    instance = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path / "i",
                            instances=[instance_reference(kernel, ["float"], 0)])
    uses = {u.qualified: u for u in instance.function(tmp_path / "k.cu", "k", 2).uses}
    assert uses["fraglib::operator+"].reads == ("reads threadIdx",) and not any(u.unknown for u in uses.values())


SPECIALISED_HEADER = """#pragma once
namespace speclib {
template <typename T> struct ops { static __device__ T apply(T x) { return x; } };
template <> struct ops<float> { static __device__ float apply(float x) { return x + threadIdx.x; } };
struct Lane { __device__ float get() const { return threadIdx.x; } };
template <typename T> struct traits { using type = Lane; };
}
"""


@pytest.mark.parametrize("body, name", [
    ("out[threadIdx.x] = speclib::ops<T>::apply(in[threadIdx.x]);", "speclib::ops"),  # a specialisation's member
    ("typename speclib::traits<T>::type v; out[threadIdx.x] = v.get();", "speclib::traits"),  # a member type's
])
def test_a_member_of_a_headers_class_template_of_a_parameter_is_unknown_in_a_template(tmp_path, body, name):
    # read as written, ops<T>::apply is the primary's (reading nothing), while ops<float>'s reads
    # threadIdx; traits<T>::type names no class at all
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "speclib").mkdir(parents=True)
    (tmp_path / "inc" / "speclib" / "ops.cuh").write_text(SPECIALISED_HEADER)
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    text = f"#include <speclib/ops.cuh>\ntemplate <typename T>\n__global__ void k(T* out, const T* in) {{\n  {body}\n}}\n"
    kernel, source = _kernel(tmp_path, text, options=options)
    written = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path)
    assert [(u.qualified, u.line) for u in written.function(tmp_path / "k.cu", "k", 3).uses if u.unknown] == [(name, 4)]
    instance = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path / "i",
                            instances=[instance_reference(kernel, ["float"], 0)])
    uses = instance.function(tmp_path / "k.cu", "k", 3).uses
    assert not any(u.unknown for u in uses) and any(u.reads == ("reads threadIdx",) for u in uses)


def test_a_headers_template_walked_as_written_is_cut_at_a_call_through_a_dependent_object(tmp_path):
    # lib::run(r, v) returns r.sum(v): walked as the header's template (the kernel's instance
    # missing), the call names nothing; once read as reading nothing
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    if isinstance(clang_module.clang_arguments(CompileOptions()), str):
        pytest.skip("Clang cannot read CUDA here")
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "reducer.cuh").write_text(
        REDUCER_HEADER + "namespace lib {\ntemplate <typename R, typename T>\n"
        "__device__ T run(R r, T v) { return r.sum(v); }\n}\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    text = ("#include <lib/reducer.cuh>\ntemplate <typename T>\n__global__ void k(T* out, T* sh, const T* in) {\n"
            "  out[threadIdx.x] = lib::run(lib::Reducer<T>(sh), in[threadIdx.x]);\n}\n")
    kernel, source = _kernel(tmp_path, text, options=options)
    written = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path)
    uses = {u.qualified: u for u in written.function(tmp_path / "k.cu", "k", 3).uses}
    assert uses["lib::run"].unknown
    instance = read_meaning([Path(source.path)], options, kept_preamble=source.kept_preamble, cache=tmp_path / "i",
                            instances=[instance_reference(kernel, ["float"], 0)])
    uses = {u.qualified: u for u in instance.function(tmp_path / "k.cu", "k", 3).uses}
    assert not uses["lib::run"].unknown
    assert set(uses["lib::run"].reads) == {"reads threadIdx", "synchronises the block"}
