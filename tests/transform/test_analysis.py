import re
from pathlib import Path

import pytest

from hfuse.errors import HFuseError
from hfuse.frontend.extract import model_source
from hfuse.transform.analysis import check_kernel, close_over_calls


def _facts(text: str):
    source = model_source(Path("k.cu"), text)
    functions: dict = {}
    for f in source.functions:
        functions.setdefault(f.name, []).append(f)
    return source, close_over_calls(functions, set())


def test_context_and_barriers_propagate_through_calls():
    source, facts = _facts(
        "__device__ int lane() { return threadIdx.x & 31; }\n"
        "__device__ int wrap() { return lane() + 1; }\n"
        "__device__ void wait() { __syncthreads(); }\n"
        "__device__ int pure(int x) { return x + 1; }\n"
        "__global__ void k(int* p) { p[wrap()] = pure(1); wait(); }\n"
    )
    assert {"lane", "wrap", "wait", "k"} <= facts.needs_context
    assert "pure" not in facts.needs_context
    assert facts.has_barrier == {"wait", "k"}


def test_cooperative_group_block_sync_counts_as_a_barrier():
    _, facts = _facts(
        "__global__ void k(int* p) { auto b = cg::this_thread_block(); b.sync(); }\n"
        "__global__ void j(int* p) { cooperative_groups::this_thread_block().sync(); }\n"
        "__global__ void t(int* p) { auto w = cg::tiled_partition<32>(cg::this_thread_block()); w.sync(); }\n"
    )
    assert {"k", "j"} <= facts.has_barrier
    assert "t" not in facts.has_barrier  # a warp tile's sync is not a block barrier


def test_recursion_through_what_reads_the_block_is_refused_with_the_cycle():
    source, facts = _facts(
        "__device__ int f(int n);\n__device__ int g(int n) { return n ? f(n - 1) : threadIdx.x; }\n"
        "__device__ int f(int n) { return g(n); }\n__global__ void k(int* p) { p[0] = f(3); }\n"
    )
    with pytest.raises(HFuseError, match=r"recursion is not supported \((f -> g -> f|g -> f -> g)\)"):
        check_kernel(source.kernels["k"], facts)


def test_recursion_that_neither_reads_the_block_nor_synchronises_is_taken():
    # emitted as written and shared by the parts (once refused: flashinfer's vec_t<T>::cast_from
    # calling vec_t<U>'s, one name to hfuse)
    source, facts = _facts(
        "__device__ int f(int n);\n__device__ int g(int n) { return n ? f(n - 1) : 0; }\n"
        "__device__ int f(int n) { return g(n); }\n__global__ void k(int* p) { p[threadIdx.x] = f(3); }\n"
    )
    check_kernel(source.kernels["k"], facts)


def test_a_template_calling_another_instance_of_itself_is_no_recursion():
    # compile-time recursion ends in a specialisation: distinct functions, no call cycle at run time
    source, facts = _facts(
        "template <int N> struct Fact { __device__ static int get() { return N * Fact<N - 1>::get(); } };\n"
        "template <> struct Fact<0> { __device__ static int get() { return 1; } };\n"
        "template <int N> __device__ float sum(const float* p) { return p[N - 1] + sum<N - 1>(p); }\n"
        "template <> __device__ float sum<0>(const float* p) { return 0.f; }\n"
        "__global__ void k(float* p) { p[0] = sum<4>(p) + Fact<3>::get(); }\n"
    )
    check_kernel(source.kernels["k"], facts)


def test_a_template_calling_its_own_instance_is_recursion():
    source, facts = _facts(
        "template <typename T> __device__ T f(T n) { return n > 0 ? f<T>(n - 1) : T(threadIdx.x); }\n"
        "__global__ void k(float* p) { p[0] = f<float>(p[1]); }\n"
    )
    with pytest.raises(HFuseError, match=r"recursion is not supported \(f -> f\)"):
        check_kernel(source.kernels["k"], facts)


def test_a_primary_calling_its_own_name_beside_explicit_specialisations_is_no_recursion():
    # a conversion layer's primary is never instantiated: to<float>(h) runs a specialisation
    source, facts = _facts(
        "template <typename TO, typename FROM> __device__ TO to(FROM v) { return to(v); }\n"
        "template <> __device__ float to(__half v) { return __half2float(v); }\n"
        "template <> __device__ __half to(float v) { return __float2half(v); }\n"
        "__global__ void k(__half* p) { p[0] = to<__half>(to<float>(p[1]) * 2.f); }\n"
    )
    check_kernel(source.kernels["k"], facts)
    # without a specialisation, the same primary is a cycle the compiler would have to run
    source, facts = _facts("template <typename T> __device__ T f(T n) { return n > 0 ? f(n - 1) : T(threadIdx.x); }\n"
                           "__global__ void k(int* p) { p[0] = f(p[1]); }\n")
    with pytest.raises(HFuseError, match=r"recursion is not supported \(f -> f\)"):
        check_kernel(source.kernels["k"], facts)


def test_grid_sync_is_refused_at_its_line():
    source, facts = _facts("__global__ void k(int* p) {\n  p[0] = 1;\n  cg::this_grid().sync();\n}\n")
    with pytest.raises(HFuseError) as err:
        check_kernel(source.kernels["k"], facts)
    assert err.value.where.line == 3 and "grid-wide" in str(err.value)


def test_the_wait_of_a_blocks_split_barrier_is_a_barrier():
    # (hfuse_thread_block's barrier_wait is the part's named barrier: the part needs an id)
    source, facts = _facts("__global__ void k(float* p) {\n  auto b = cg::this_thread_block();\n"
                           "  auto t = b.barrier_arrive();\n  b.barrier_wait(std::move(t));\n}\n")
    assert facts.has_barrier == {"k"}


def test_grid_ranks_and_sizes_read_the_parts_grid_without_refusal():
    source, facts = _facts(
        "__device__ unsigned long long rank() { return cg::this_grid().thread_rank(); }\n"
        "__global__ void k(float* y, int n) {\n  auto grid = cg::this_grid();\n"
        "  for (unsigned long long i = rank(); i < n; i += grid.size()) y[i] = grid.block_rank();\n}\n")
    check_kernel(source.kernels["k"], facts)
    assert {"rank", "k"} <= facts.needs_context  # each part's copy takes its own grid
    assert not facts.has_barrier


@pytest.mark.parametrize("statement, use, wide", [
    ("auto g = cg::this_grid();\n  g.sync();", "g.sync()", True),
    ("cg::grid_group g = cg::this_grid();\n  cg::sync(g);", "cg::sync(g)", True),
    ("p[0] = 0;\n  if (cg::this_grid().is_valid()) p[0] = 1;", "cg::this_grid().is_valid()", True),
    ("auto g = cg::this_grid();\n  p[0] = g.barrier_arrive();", "g.barrier_arrive()", True),
    ("p[0] = 0;\n  use(cg::this_grid());", "use(cg::this_grid())", False),  # the grid handed on
    ("auto g = cg::this_grid();\n  auto h = g;", "g", False),  # copied: hfuse would not follow the copy
    ("p[0] = 0;\n  grid_alias g = cg::this_grid();", "cg::this_grid()", False),  # a type hfuse does not rewrite
])
def test_other_uses_of_the_grid_are_refused_at_their_line(statement, use, wide):
    source, facts = _facts(f"__device__ void use(cg::grid_group g) {{}}\n__global__ void k(int* p) {{\n  {statement}\n}}\n")
    with pytest.raises(HFuseError) as err:
        check_kernel(source.kernels["k"], facts)
    assert err.value.where.line == 4 and f"'{use}'" in str(err.value)
    assert ("grid-wide" in str(err.value)) == wide


@pytest.mark.parametrize("text, line, what", [
    ("__global__ void __cluster_dims__(2, 1, 1) k(float* x) {\n  x[threadIdx.x] = 0.f;\n}\n", 1,
     "__cluster_dims__(2, 1, 1)"),
    ("template <int C>\n__global__ void __cluster_dims__(C, 1, 1) k(float* x) {\n  x[0] = 0.f;\n}\n", 1,
     "__cluster_dims__(C, 1, 1)"),
    ("__global__ void k(float* x) {\n  auto c = cg::this_cluster();\n  c.sync();\n}\n", 2, "'this_cluster'"),
    ("__global__ void k(unsigned* x) {\n  unsigned r;\n  asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));"
     "\n  x[0] = r;\n}\n", 3, "inline PTX"),
    ("__global__ void k(float* x) {\n  asm volatile(\"barrier.cluster.arrive;\" ::: \"memory\");\n}\n", 2, "inline PTX"),
])
def test_thread_block_clusters_are_refused_at_their_line(text, line, what):
    """No layout keeps a kernel's clusters: its blocks share a fused block or grid with another kernel's."""
    source, facts = _facts(text)
    with pytest.raises(HFuseError, match="thread block clusters") as err:
        check_kernel(source.kernels["k"], facts)
    assert err.value.where.line == line and what in str(err.value)


@pytest.mark.parametrize("ptx", ["membar.gl;",
                                 "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                                 "[%0], [%1, {%2, %3}], [%4];"])
def test_a_fence_or_a_tma_copy_into_the_blocks_own_shared_memory_is_no_cluster(ptx):
    source, facts = _facts(f"__global__ void k(float* x) {{\n  asm volatile(\"{ptx}\" ::: \"memory\");\n}}\n")
    check_kernel(source.kernels["k"], facts)


ADL = """
template <class X> __device__ int weight(X x) { return threadIdx.x; }
namespace c { struct T { int v; }; __device__ int weight(T t) { return t.v * 100; } }
__global__ void k(int* z) {
  c::T t{2};
  z[threadIdx.x] = CALL;
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


def _fuse_adl(call: str, text: str = ADL):
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    return fuse([KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "k", Dim3(128))],
                sources={"k.cu": text.replace("CALL", call)})


def test_a_call_argument_dependent_lookup_may_send_elsewhere_is_refused():
    # (hfuse does not know the arguments' types: weight(t.v), an int, is refused too)
    # once fused: C++ picks c::weight(T) (an exact match found through t's namespace), hfuse
    # sent the call to its copy of the template, which read the thread index: silently wrong
    with pytest.raises(HFuseError) as err:
        _fuse_adl("weight(t)")
    assert "may also find c::weight by argument-dependent lookup" in err.value.message
    assert err.value.where.line == 6 and "::weight(...)" in err.value.hint


@pytest.mark.parametrize("call, copied", [
    ("::weight(t)", True),  # qualified: no argument-dependent lookup
    ("c::weight(t)", False),
])
def test_a_call_only_ordinary_lookup_reaches_is_fused(call, copied):
    fused = _fuse_adl(call)
    assert ("weight__hf2(hf_ctx" in fused.source) == copied


def test_a_namespace_without_types_is_no_place_for_argument_dependent_lookup():
    text = ADL.replace("struct T { int v; };", "typedef int T;").replace("(T t) { return t.v * 100; }",
                                                                         "(T t) { return t * 100; }")
    assert "weight__hf2(hf_ctx, t)" in _fuse_adl("weight(t)", text).source


SHADOW = """
__device__ int lane(int x) { return threadIdx.x + x; }
__global__ void k(int* z, int n) {
  if (n > 0) {
    auto lane = [](int x) { return x * 10; };
    z[threadIdx.x] = lane(3);
  }
  z[threadIdx.x + n] = lane(4);
}
template <class F> __global__ void given(F lane, int* z) { z[threadIdx.x] = lane(5); }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


def test_a_local_lambda_hides_the_helper_of_its_name_where_it_is_declared():
    # once fused: lane(3) called the part's copy of the file-scope lane (threadIdx.x + 3), not
    # the lambda (30): silently wrong
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "k", Dim3(128))]
    source = fuse(specs, sources={"k.cu": SHADOW}).source
    assert "z[hf_ctx.threadIdx.x] = lane(3);" in source  # the lambda
    assert "lane__hf2(hf_ctx, 4)" in source  # outside its block: the helper


def test_a_parameter_hides_the_helper_of_its_name():
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "given", Dim3(128), ("int (*)(int)",))]
    source = fuse(specs, sources={"k.cu": SHADOW}).source
    assert "z[hf_ctx.threadIdx.x] = lane(5);" in source and "lane__hf2" not in source


MEMBER = """
__device__ int lane(int x) { return threadIdx.x + x; }
struct W {
  int base;
  __device__ int lane(int x) const { return base + x MEMBER_READS; }
  __device__ int f() const { return lane(3); }
};
__global__ void k(int* z) {
  W w; w.base = 5;
  z[threadIdx.x] = w.f() + lane(1);
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
@pytest.mark.parametrize("member_reads", ["", "+ threadIdx.y"])
def test_a_member_hides_the_helper_of_its_name_in_its_class(member_reads, tmp_path):
    # once: W::f's lane(3) went to the part's copy of the file-scope lane, not W::lane
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec
    from toolchain import compile_nvcc

    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "k", Dim3(128))]
    source = fuse(specs, sources={"k.cu": MEMBER.replace("MEMBER_READS", member_reads)}).source
    assert "__device__ int f() const { return lane(3); }" in source
    assert "lane__hf2(hf_ctx, 1)" in source  # the kernel's own call: the file-scope helper
    assert ("struct W__hf2" in source) == bool(member_reads)  # a member reading the block: the part's copy
    compile_nvcc(source, workdir=tmp_path)


FUNCTION_VALUES = """
__device__ float lane_scale(float v) { return v * (threadIdx.x % 32); }
__device__ float twice(float v) { return v * 2.f; }
template <float (*F)(float)> __global__ void map(const float* x, float* y) { y[threadIdx.x] = F(x[threadIdx.x]); }
template <float (*F)(float)> __device__ float apply(float v) { return F(v); }
__device__ float call(float (*f)(float), float v) { return f(v); }
__global__ void k(const float* x, float* y) { USE; }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


def _fuse_values(use: str, *targs: str, name: str = "k"):
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    return fuse([KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", name, Dim3(128), targs)],
                sources={"k.cu": FUNCTION_VALUES.replace("USE", use)})


@pytest.mark.parametrize("use", [
    "y[threadIdx.x] = apply<lane_scale>(x[threadIdx.x])",
    "y[threadIdx.x] = call(lane_scale, x[threadIdx.x])",
    "float (*f)(float) = &lane_scale; y[threadIdx.x] = f(x[threadIdx.x])",
    # once: a branch of ?: was not taken for a value, and nvcc failed on the original's name
    "float (*f)(float) = x[0] > 0.f ? lane_scale : twice; y[threadIdx.x] = f(x[threadIdx.x])",
    "y[threadIdx.x] = call((lane_scale), x[threadIdx.x])",
])
def test_a_function_that_reads_the_block_used_as_a_value_is_refused(use):
    # (before: the fused file named the original, which hfuse had left out: nvcc failed)
    with pytest.raises(HFuseError, match="'lane_scale' reads the block and is used as a value"):
        _fuse_values(use)


def test_a_variable_holding_one_is_refused_where_it_is_defined():
    # '__device__ fn_t table[] = {twice, lane_scale};' called through table[i]: the call runs
    # the original, which reads the fused block (and was left out of the output: nvcc failed)
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    source = FUNCTION_VALUES.replace("USE", "y[threadIdx.x] = table[1](x[threadIdx.x])")
    source = source.replace("__global__ void k", "__device__ float (*table[2])(float) = {twice, lane_scale};\n"
                            "__global__ void k")
    with pytest.raises(HFuseError, match="'table' holds 'lane_scale', a function that reads the block") as err:
        fuse([KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "k", Dim3(128))], sources={"k.cu": source})
    assert err.value.where.line == 7  # the table's line


def test_as_an_instance_s_template_argument_too():
    with pytest.raises(HFuseError, match="template argument 'lane_scale' is a function that reads the block"):
        _fuse_values("", "lane_scale", name="map")


def test_one_that_does_not_read_the_block_is_a_value_like_any():
    assert "apply<twice>" in _fuse_values("y[threadIdx.x] = apply<twice>(x[threadIdx.x])").source
    assert "map__hf2<twice>" in _fuse_values("", "twice", name="map").source


@pytest.mark.nvcc
def test_a_bodys_own_using_directive_and_declaration_are_followed(tmp_path):
    # before: neither b::idx nor d::lanes reached the fused file, and lanes() was not sent to
    # the part's copy of d::lanes, which reads the block
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec
    from toolchain import compile_nvcc

    text = ("namespace b { __device__ int idx() { return 7; } }\n"
            "namespace d { __device__ int lanes() { return threadIdx.x; } }\n"
            "__global__ void k(int* z) {\n  using namespace b;\n  using d::lanes;\n"
            "  z[threadIdx.x] = idx() + lanes();\n}\n"
            "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n")
    source = fuse([KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "k", Dim3(128))],
                  sources={"k.cu": text}).source
    assert "__device__ int idx() { return 7; }" in source
    assert "using d::lanes__hf2;" in source and "idx() + lanes__hf2(hf_ctx)" in source
    compile_nvcc(source, workdir=tmp_path)


def test_a_default_argument_that_reads_the_block_is_refused_at_its_line():
    # (before: the part's copy declared 'int t = hf_ctx.threadIdx.x', which nvcc rejects)
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    text = ("__device__ int lane(int t = threadIdx.x) { return t & 31; }\n"
            "__global__ void k(int* z) { z[threadIdx.x] = lane(); }\n"
            "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n")
    with pytest.raises(HFuseError, match="a default argument reads threadIdx") as err:
        fuse([KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "k", Dim3(128))], sources={"k.cu": text})
    assert err.value.where.line == 1


BASES = """
#include <cuda/std/tuple>
__device__ __forceinline__ int lane() { return threadIdx.x & 31; }
namespace lib {
struct Root { int id; __device__ int lane() const { return id * 3; } };
struct Mid : Root {};
}
template <class T> struct Dep : T {
  __device__ int get() const { return lane() + 1; }
};
template <class T> struct NonDep : public lib::Mid {
  __device__ int get() const { return lane() + 2; }
};
struct Unseen : cuda::std::tuple<int> {
  __device__ int get() const { return lane() + 3; }
};
__global__ void dependent(int* z) { Dep<lib::Root> d; d.id = 1; z[threadIdx.x] = d.get(); }
__global__ void inherited(int* z) { NonDep<float> d; d.id = 1; z[threadIdx.x] = d.get(); }
__global__ void unseen(int* z) { Unseen u; z[threadIdx.x] = u.get(); }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


def _fuse_bases(kernel: str):
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    return fuse([KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", kernel, Dim3(128))],
                sources={"k.cu": BASES}).source


@pytest.mark.nvcc
def test_a_member_of_a_base_class_hides_the_helper_of_its_name(tmp_path):
    # once: NonDep::get's lane() (lib::Root::lane, two bases up) went to the part's copy of the
    # file-scope lane, which reads threadIdx: it compiled and computed something else
    from toolchain import compile_nvcc

    source = _fuse_bases("inherited")
    assert "__device__ int get() const { return lane() + 2; }" in source and "lane__hf2" not in source
    compile_nvcc(source, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_dependent_base_is_not_searched_as_cpp_does_not(tmp_path):
    # two-phase lookup: in Dep<T>, lane() is the file-scope function whatever T has
    from toolchain import compile_nvcc

    source = _fuse_bases("dependent")
    assert "return lane__hf2(hf_ctx) + 1;" in source
    compile_nvcc(source, workdir=tmp_path)


def test_a_base_no_input_defines_may_hide_the_helper_so_it_is_refused():
    with pytest.raises(HFuseError, match=r"derived from 'cuda::std::tuple<int>'.*") as caught:
        _fuse_bases("unseen")
    assert caught.value.where.line == 15 and "this->lane(...)" in caught.value.hint


def test_a_type_named_in_capitals_and_constructed_is_no_macro():
    # once: BR<128>(tmp) was refused as "'BR(...)' looks like a macro no -D defines"
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    source = """
#include <cub/cub.cuh>
template <int N> using BR = cub::BlockReduce<float, N>;
__global__ void k(const float* a, float* out) {
  __shared__ typename BR<128>::TempStorage tmp;
  float s = BR<128>(tmp).Sum(a[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""
    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "k", Dim3(128))]
    with pytest.raises(HFuseError, match=r"'BR' .* stands for CUB's block-wide 'cub::BlockReduce'"):
        fuse(specs, sources={"k.cu": source}, layout="horizontal")
    assert fuse(specs, sources={"k.cu": source}).layout.keeps_block_whole


CAPITAL_FUNCTION_PARAMETERS = """
__device__ float lane_scale(float v) { return v * (threadIdx.x % 32); }
__device__ float twice(const float& v) { return v * 2.f; }
template <typename T, T (*ACT_FN)(const T&)>
__device__ T act(const T& v) { return ACT_FN(v); }
template <typename T, T (*ACT_FN)(const T&)>
struct Act {
  __device__ T operator()(const T& v) const { return ACT_FN(v); }
};
template <typename T, T (*ACT_FN)(const T&)>
__global__ void act_kernel(const T* x, T* y) {
  y[threadIdx.x] = ACT_FN(x[threadIdx.x]) + act<T, ACT_FN>(x[threadIdx.x]) + Act<T, ACT_FN>{}(x[threadIdx.x]);
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
def test_a_template_parameter_named_in_capitals_and_called_is_no_macro(tmp_path):
    # once: vLLM's act_and_mul_kernel<scalar_t, ACT_FN> was refused as "'ACT_FN(...)' looks like
    # a macro that no -D defines", in the kernel, a function template and a class template's member
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec
    from toolchain import compile_nvcc

    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "act_kernel", Dim3(128), ("float", "twice"))]
    source = fuse(specs, sources={"k.cu": CAPITAL_FUNCTION_PARAMETERS}).source
    assert "ACT_FN(x[hf_ctx.threadIdx.x])" in source
    compile_nvcc(source, workdir=tmp_path)


def test_an_undefined_capital_name_called_is_still_taken_for_a_macro():
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    text = CAPITAL_FUNCTION_PARAMETERS.replace("{ return ACT_FN(v); }\ntemplate", "{ return ACT_GN(v); }\ntemplate")
    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "act_kernel", Dim3(128), ("float", "twice"))]
    with pytest.raises(HFuseError, match=r"'ACT_GN\(...\)' looks like a macro"):
        fuse(specs, sources={"k.cu": text})


CG_COLLECTIVES = """
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
namespace cg = cooperative_groups;
template <class Group> __device__ float first_of(Group g, const float* s) { g.sync(); return s[0] + g.thread_rank(); }
__global__ void staged(const float* in, float* out) {
  __shared__ float tile[128];
  cg::thread_block block = cg::this_thread_block();
  auto warp = cg::tiled_partition<32>(block);
  tile[block.thread_rank()] = in[blockIdx.x * 128 + block.thread_rank()];
  cg::sync(block);
  COLLECTIVE
  out[blockIdx.x * 128 + block.thread_rank()] = first_of(block, tile) + warp.thread_rank() + cg::group_size(block);
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.parametrize("collective, name", [
    ("cg::invoke_one(block, [&] { tile[0] = 0.f; });", "cg::invoke_one"),
    ("cg::invoke_one(cg::this_thread_block(), [&] { tile[0] = 0.f; });", "cg::invoke_one"),
])
def test_a_collective_of_the_cuda_headers_over_the_block_is_refused(collective, name):
    # what hfuse does not know to take a part's block as it takes the block stays refused
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "staged", Dim3(128))]
    with pytest.raises(HFuseError, match=rf"'{re.escape(name)}' is given the thread block") as caught:
        fuse(specs, sources={"k.cu": CG_COLLECTIVES.replace("COLLECTIVE", collective)})
    assert caught.value.where.line == 12


@pytest.mark.nvcc
@pytest.mark.parametrize("collective", [
    "cg::memcpy_async(block, tile, in, sizeof(float) * 128); cg::wait(block);",
    "cg::memcpy_async(cg::this_thread_block(), tile, in, sizeof(float) * 64); cg::wait_prior<0>(block);",
    "cuda::memcpy_async(block, tile, in, cuda::aligned_size_t<16>(sizeof(float) * 128), *bar);",
])
def test_the_headers_async_copies_take_the_parts_block(tmp_path, collective):
    # once refused (nvcc failed deep inside cooperative_groups/memcpy_async.h on hfuse's thread
    # block): the copies spread over the group's thread_rank() and size() and wait with its
    # sync(), which the part's block has; cooperative groups is told it may take that type
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec
    from toolchain import compile_nvcc

    text = CG_COLLECTIVES.replace("COLLECTIVE", collective).replace(
        "#include <cooperative_groups/memcpy_async.h>",
        "#include <cooperative_groups/memcpy_async.h>\n#include <cuda/barrier>").replace(
        "float* out) {", "float* out, cuda::barrier<cuda::thread_scope_block>* bar) {")
    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "staged", Dim3(128))]
    source = fuse(specs, sources={"k.cu": text}).source
    copy = collective.split("(")[0]
    assert f"{copy}(block," in source or f"{copy}(hfuse_thread_block<1, 128>(hf_ctx)," in source
    assert "struct _async_copy_group_supported<hfuse_thread_block<ID, N>>" in source
    compile_nvcc(source, workdir=tmp_path)


def test_a_wait_for_the_blocks_copies_is_a_barrier_and_stays_one():
    # cg::wait(g) waits for this thread's copies, then meets the group: an early return before
    # it is made safe like one before g.sync(), and the wait itself is kept (not made a bare sync)
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    text = CG_COLLECTIVES.replace("COLLECTIVE", "cg::memcpy_async(block, tile, in, sizeof(float) * 128); cg::wait(block);")
    text = text.replace("  cg::thread_block block = cg::this_thread_block();\n",
                        "  cg::thread_block block = cg::this_thread_block();\n  if (in[blockIdx.x * 128 + threadIdx.x] < 0.f) return;\n")
    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "staged", Dim3(128))]
    source = fuse(specs, sources={"k.cu": text}).source
    part = source[source.index("staged__hf2("):source.index("// ---- fused kernel")]
    assert "hf_active = false" in part
    assert "\n  cg::wait(block);\n" in part  # every thread still in the part meets the others there


@pytest.mark.nvcc
def test_the_block_given_to_a_helper_tiles_group_functions_and_cg_sync_are_the_parts(tmp_path):
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec
    from toolchain import compile_nvcc

    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "staged", Dim3(128))]
    source = fuse(specs, sources={"k.cu": CG_COLLECTIVES.replace("COLLECTIVE", "")}).source
    assert "first_of__hf2" not in source  # a generic helper takes the part's block as it is
    compile_nvcc(source, workdir=tmp_path)


def test_a_kernels_own_setmaxnreg_is_refused():
    # a warp-specialised kernel's register moves assume its own launch and warpgroups; fused,
    # setmaxnreg.inc may wait forever for registers the other parts hold
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    source = """
__global__ void specialised(float* y) {
  if (threadIdx.x >= 128) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\\n" ::: "memory");
  y[threadIdx.x] = 1.f;
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""
    specs = [KernelSpec("k.cu", "other", Dim3(128)), KernelSpec("k.cu", "specialised", Dim3(256))]
    for layout in ("horizontal", "interblock"):
        with pytest.raises(HFuseError, match=r"sets its warpgroup's registers \(setmaxnreg\)") as caught:
            fuse(specs, sources={"k.cu": source}, layout=layout)
        assert caught.value.where.line == 3


def test_warpgroup_ptx_runs_only_where_the_part_starts_the_block():
    # wgmma's warpgroups are four warps whose first is a multiple of four: a part behind 96
    # threads of another would have run them on warps 3-6
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    source = """
__global__ void mma(float* out) {
  asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
  out[blockIdx.x * 128 + threadIdx.x] = 0.f;
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "mma", Dim3(128))]
    with pytest.raises(HFuseError, match=r"runs on warpgroups \(wgmma\)") as caught:
        fuse(specs, sources={"k.cu": source}, layout="horizontal")
    assert caught.value.where.line == 3
    assert fuse(specs, sources={"k.cu": source}).layout.keeps_block_whole


@pytest.mark.nvcc
def test_a_data_member_functor_hides_the_helper_of_its_name(tmp_path):
    # once: S::get's lane(v) (the member functor) went to the part's copy of the file-scope
    # lane, which reads threadIdx: it compiled, and computed something else
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec
    from toolchain import compile_nvcc

    source = """
__device__ __forceinline__ int lane(int x) { return (threadIdx.x & 31) + x; }
struct AddK { int k; __device__ int operator()(int x) const { return x + k; } };
struct Base { AddK lane; };
struct S { AddK lane; __device__ int get(int v) const { return lane(v); } };
struct D : Base { __device__ int get(int v) const { return lane(v); } };
__global__ void k(int* out) { S s; s.lane.k = 5; D d; d.lane.k = 7; out[threadIdx.x] = s.get(1) + d.get(2) + lane(0); }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""
    fused = fuse([KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "k", Dim3(128))], sources={"k.cu": source})
    assert fused.source.count("__device__ int get(int v) const { return lane(v); }") == 2
    assert "+ lane__hf2(hf_ctx, 0);" in fused.source  # the kernel's own call: the file-scope helper
    compile_nvcc(fused.source, workdir=tmp_path)


FRIEND = """
__device__ __forceinline__ int lane(int x) { return (threadIdx.x & 31) + x; }
struct V {
  int x;
  __device__ operator int() const { return x; }
  friend __device__ int lane(V v) { return v.x * 2; }
};
__global__ void k(int* out) { V v; v.x = 3; out[threadIdx.x] = lane(v)CALL; }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


def test_a_hidden_friend_beside_a_block_reading_helper_of_its_name_is_refused():
    # once: lane(v) (C++: V's friend, by argument-dependent lookup) went to the part's copy of
    # the file-scope lane, through V's conversion to int: it compiled, and computed something else
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "k", Dim3(128))]
    with pytest.raises(HFuseError, match=r"the call of 'lane' may also find V::lane by argument-dependent lookup") as e:
        fuse(specs, sources={"k.cu": FRIEND.replace("CALL", " + lane(1)")})
    assert e.value.where.line == 8


@pytest.mark.nvcc
def test_a_hidden_friend_alone_is_shared_and_analysed(tmp_path):
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec
    from toolchain import compile_nvcc

    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "k", Dim3(128))]
    source = FRIEND.replace("CALL", "").replace("__device__ __forceinline__ int lane(int x) "
                                                "{ return (threadIdx.x & 31) + x; }\n", "")
    fused = fuse(specs, sources={"k.cu": source}).source
    assert "friend __device__ int lane(V v) { return v.x * 2; }" in fused and "out[hf_ctx.threadIdx.x] = lane(v);" in fused
    compile_nvcc(fused, workdir=tmp_path)
    # a friend that reads the block is seen, and refused: no object carries the part's view to it
    with pytest.raises(HFuseError, match="'lane', a friend defined in 'V', reads the block") as e:
        fuse(specs, sources={"k.cu": source.replace("v.x * 2", "v.x + threadIdx.x")})
    assert e.value.where.line == 5


def test_calls_through_a_template_type_parameter_are_recorded():
    # what runs is the type an instance gives F: seen only where the template arguments are given
    _, facts = _facts(
        "template <typename F, int N, typename T, float (*ACT)(float), class... Args>\n"
        "__global__ void k(F f, const F& g, F* h, T x, lib::Vec<T> v, Args... args) {\n"
        "  f(N, args...);\n  g.apply(x);\n  h->apply(x);\n  F::reset();\n"
        "  v.load();\n  x.sum();\n  other(x);\n  ACT(1.f);\n  F made;\n  made(1);\n  T kept = x;\n  kept.get();\n}\n"
    )
    (k,) = facts.facts["k"]
    assert k.parameter_calls == [("F", 3), ("F", 4), ("F", 5), ("F", 6), ("T", 8), ("ACT", 10), ("F", 12),
                                 ("T", 14)]
    _, plain = _facts("__global__ void j(float* p) { p[0] = 1.f; }\n")
    assert plain.facts["j"][0].parameter_calls == []
