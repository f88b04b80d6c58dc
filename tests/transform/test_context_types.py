"""Types whose member functions read the block (``context_types.py``): each part gets a copy
carrying the part's context in a member. An object the host made (a functor a
``multi_tensor_apply``-style kernel takes by value) has no such member: the fused kernel
takes it with the host's layout (a twin of the type without its member functions) and
converts it to the part's copy, member by member, where the part's body is called. What
cannot be converted (a pointer to such objects, one inside another type) is refused."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from hfuse.api import fuse
from hfuse.errors import HFuseError
from hfuse.frontend.options import CompileOptions
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C  # tests/corpus/cases.py
from toolchain import compile_nvcc

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

GATHER = """
template <typename T, int N>
struct alignas(16) Gather {
  static constexpr int kLanes = N;
  using value_type = T;
  const T* src[kLanes];
  int offset[kLanes], unused;
  float scale = 1.f;
  double bias;
  __device__ __forceinline__ value_type operator()(int lane) const {
    return src[lane % kLanes][offset[lane % kLanes] + threadIdx.x] * (T)scale + (T)bias;
  }
};
template <typename F, typename T>
__global__ void gather(F f, T* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = f(i);
}
template <typename F> struct Wrapper { F f; };
template <typename W> __global__ void wrapped(W w, float* out) { out[threadIdx.x] = w.f(0); }
template <typename... Fs> __global__ void packed(float* out, Fs... fs) { out[threadIdx.x] = (fs(0) + ...); }
struct Pure { __device__ float operator()(float v) const { return v * 2.f; } };
template <typename F> __global__ void map(F f, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = f(y[i]);
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


def _fuse(text: str, name: str, *targs: str):
    return fuse([KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", name, Dim3(128), targs)],
                sources={"k.cu": text})


def _call(source: str) -> str:
    return next(line.strip() for line in source.splitlines() if "__hf2" in line and line.strip().startswith("::"))


def test_a_host_made_object_is_taken_with_the_hosts_layout_and_converted_at_the_call():
    fused = _fuse(TABLE, "by_value")
    assert "Table__hf2_host hf2_t," in fused.source
    assert _call(fused.source) == "::by_value__hf2(Table__hf2(hf_ctx, hf2_t), hf2_x, hf2_y, hf_ctx);"
    twin = fused.source[fused.source.index("struct Table__hf2_host {"):]
    assert "at(" not in twin[: twin.index("};")]  # no member functions: the host's layout only
    assert "hf_ctx.threadIdx.x * stride" in fused.source


def test_a_functor_given_through_a_template_argument_is_converted():
    fused = _fuse(GATHER, "gather", "Gather<float, 3>", "float")
    assert "Gather__hf2_host<float, 3> hf2_f," in fused.source
    assert _call(fused.source).startswith("::gather__hf2<Gather__hf2<float, 3>, float>(Gather__hf2<float, 3>(hf_ctx, hf2_f)")
    copies = re.findall(r"memcpy\(\(void\*\)&(\w+), \(const void\*\)&hf_host\.\1", fused.source)
    assert copies == ["src", "offset", "unused", "scale", "bias"]  # every data member, not kLanes


@pytest.mark.nvcc
def test_the_twin_has_the_layout_of_the_users_type(tmp_path):
    fused = _fuse(GATHER, "gather", "Gather<float, 3>", "float")
    original = GATHER[: GATHER.index("template <typename F, typename T>")]
    checks = "\n".join(f"static_assert(offsetof(A, {m}) == offsetof(B, {m}), \"{m}\");"
                       for m in ("src", "offset", "unused", "scale", "bias"))
    source = (fused.source + "\n#include <cstddef>\n" + original
              + "using A = Gather<float, 3>;\nusing B = Gather__hf2_host<float, 3>;\n"
              + "static_assert(sizeof(A) == sizeof(B) && alignof(A) == alignof(B), \"size\");\n" + checks + "\n")
    compile_nvcc(source, workdir=tmp_path)


@pytest.mark.nvrtc
def test_and_compiles_under_nvrtc():
    from toolchain import compile_nvrtc

    for fused in (_fuse(GATHER, "gather", "Gather<float, 3>", "float"), _fuse(TABLE, "by_value")):
        compile_nvrtc(fused.source, [fused.name_expression])


def test_one_the_kernel_makes_gets_the_parts_context():
    fused = _fuse(TABLE, "made_here")
    assert "Table__hf2 t(hf_ctx);" in fused.source and "_host" not in fused.source


def test_a_functor_that_does_not_read_the_block_is_passed_as_it_is():
    fused = _fuse(GATHER, "map", "Pure")
    assert "Pure hf2_f" in fused.source and "_host" not in fused.source


@pytest.mark.parametrize("text, kernel, targs, why", [
    (TABLE, "by_pointer", (), "the host's objects behind this pointer do not have"),
    (GATHER, "wrapped", ("Wrapper<Gather<float, 2>>",), "it is inside 'Wrapper<Gather<float, 2>>'"),
    (GATHER, "packed", ("Gather<float, 2>",), "not in a pack"),
    (TABLE.replace("float scale;", "const float scale;"), "by_value", (), "const data member"),
    (TABLE.replace("struct Table {", "struct Base { int b; };\nstruct Table : Base {"), "by_value", (), "base classes"),
    (TABLE.replace("__device__ float at", "__device__ virtual float at"), "by_value", (), "virtual functions"),
    (TABLE.replace("int stride;", "union { int stride; float fstride; };"), "by_value", (), "unnamed member"),
])
def test_what_cannot_be_converted_is_refused_at_the_parameter(text, kernel, targs, why):
    with pytest.raises(HFuseError) as err:
        _fuse(text, kernel, *targs)
    assert "the host made" in err.value.message and why in err.value.message, err.value.message


@pytest.mark.nvcc
def test_a_class_with_private_members_is_converted_too(tmp_path):
    # (the twin's members were private to the part's copy: nvcc refused the conversion)
    text = ("class Scaler {\n public:\n  __device__ float operator()(float v) const { return v * scale_ + threadIdx.x; }\n"
            "  float scale_;\n private:\n  int pad_;\n};\n"
            "template <typename F> __global__ void map(F f, float* y) { y[threadIdx.x] = f(y[threadIdx.x]); }\n"
            "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n")
    fused = _fuse(text, "map", "Scaler")
    twin = fused.source[fused.source.index("struct Scaler__hf2_host {"):]
    assert "private" not in twin[: twin.index("};")]
    original = text[: text.index("template <typename F>")]
    checks = ("\n#include <cstddef>\n" + original + "static_assert(sizeof(Scaler) == sizeof(Scaler__hf2_host), \"size\");\n")
    compile_nvcc(fused.source + checks, workdir=tmp_path)


def test_an_elaborated_parameter_type_is_converted_by_its_name():
    fused = _fuse(TABLE.replace("by_value(Table t", "by_value(const struct Table t"), "by_value")
    assert "const struct Table__hf2_host hf2_t," in fused.source
    assert _call(fused.source).startswith("::by_value__hf2(Table__hf2(hf_ctx, hf2_t)")


MEMBERS = """
__device__ float plus_lane(float v) { return v + threadIdx.x; }
struct Tile {
  __device__ float swap(float* s, float v) const {
    s[threadIdx.x] = v;
    __syncthreads();
    return plus_lane(s[blockDim.x - 1 - threadIdx.x]);
  }
};
struct Raw {
  __device__ void sync() const { asm volatile("bar.sync 0;"); }
};
__global__ void tiled(float* y) { __shared__ float s[128]; Tile t; y[threadIdx.x] = t.swap(s, y[threadIdx.x]); }
__global__ void raw(float* y) { Raw r; y[threadIdx.x] = 1.f; r.sync(); }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
def test_what_a_types_member_functions_reach_is_the_kernels(tmp_path):
    # before: the member's __syncthreads() gave the part no barrier id (an internal error), and
    # the helper it calls was neither copied nor renamed (nvcc: undefined)
    fused = _fuse(MEMBERS, "tiled")
    assert fused.partition.parts[1].barrier_id == 1
    part = fused.source[fused.source.index("---- part 2"):]
    assert part.index("float plus_lane__hf2(") < part.index("struct Tile__hf2 {")  # seen by the member
    assert "hfuse_sync<1, 128>();" in part and "return plus_lane__hf2(hf_ctx, " in part
    assert "swap__hf2" not in part  # a member stays in its type's copy
    compile_nvcc(fused.source, workdir=tmp_path)


def test_what_a_member_function_does_that_hfuse_cannot_rewrite_keeps_the_block_whole():
    # before: the member's bar.sync 0 went into the fused kernel, waiting for every part's threads;
    # it is the block's own barrier only where a fused block runs one whole block of the kernel
    specs = [KernelSpec("k.cu", "other", Dim3(64)), KernelSpec("k.cu", "raw", Dim3(128))]
    with pytest.raises(HFuseError, match="inline PTX that synchronises the block by barrier id"):
        fuse(specs, sources={"k.cu": MEMBERS}, layout="horizontal")
    assert _fuse(MEMBERS, "raw").layout.keeps_block_whole


APEX_L2 = """
template <int n> struct TL { void* addresses[n][36]; int sizes[36]; unsigned char block_to_tensor[320]; int block_to_chunk[320]; };
template <typename T, typename U, typename... ArgTypes>
__global__ void multi_tensor_apply_kernel(int chunk_size, volatile int* noop_flag, T tl, U callable, ArgTypes... args) {
  callable(chunk_size, noop_flag, tl, args...);
}
__device__ float reduce_block_into_lanes(float* x, float val) {
  int tid = threadIdx.x;
  x[tid] = val;
  __syncthreads();
  for (int i = blockDim.x >> 1; i > 0; i >>= 1) { if (tid < i) x[tid] += x[tid + i]; __syncthreads(); }
  return x[0];
}
template <typename x_t>
struct L2NormFunctor {
  __device__ __forceinline__ void operator()(int chunk_size, volatile int* noop_gmem, TL<1>& tl, float* output) {
    int tensor_loc = tl.block_to_tensor[blockIdx.x];
    int chunk_idx = tl.block_to_chunk[blockIdx.x];
    int n = tl.sizes[tensor_loc] - chunk_idx * chunk_size;
    x_t* x = (x_t*)tl.addresses[0][tensor_loc] + chunk_idx * chunk_size;
    __shared__ float s_vals[512];
    float val = 0.f;
    for (int i = threadIdx.x; i < n && i < chunk_size; i += blockDim.x) { float v = x[i]; val += v * v; }
    float final = reduce_block_into_lanes(s_vals, val);
    if (threadIdx.x == 0) output[blockIdx.x] = final;
  }
};
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
def test_an_apex_style_functor_with_a_block_reduction(tmp_path):
    # the functor reaches the kernel only through its template argument U
    fused = _fuse(APEX_L2, "multi_tensor_apply_kernel", "TL<1>", "L2NormFunctor<float>", "float*")
    assert "L2NormFunctor__hf2_host<float> hf2_callable" in fused.source
    assert "reduce_block_into_lanes__hf2(hf_ctx, s_vals, val)" in fused.source and "hfuse_sync<1, 128>();" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


OUTSIDE = """
__device__ __forceinline__ int lane() { return threadIdx.x & 31; }
namespace lib {
struct W {
  int base;
  __device__ int lane() const;
  __device__ int f() const;
  __device__ int g() const;
};
__device__ int W::lane() const { return base * 2; }
__device__ int W::f() const { return lane() + 1; }
__device__ int W::g() const { return ::lane() + base; }
}
template <class T> struct V { T x; __device__ T sum() const; };
template <class T> __device__ T V<T>::sum() const { return x + lane(); }
struct Plain { int a; __device__ int twice() const; };
__device__ int Plain::twice() const { return 2 * a; }
__global__ void members_outside(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  lib::W w; w.base = i;
  V<int> v; v.x = 3;
  Plain p; p.a = i;
  if (i < n) out[i] = w.f() + w.g() + v.sum() + p.twice();
}
"""


@pytest.mark.nvcc
def test_members_defined_outside_their_class_travel_with_it(tmp_path):
    # once: no member defined outside its class reached the fused file (ptxas: unresolved
    # extern function); each is now the part's copy where its class is, and W::f's lane()
    # stays W's own member (C++ looks in the class first), while W::g's ::lane() is the part's copy
    partner = KernelSpec("k.cu", "other", Dim3(96))
    fused = fuse([partner, KernelSpec("k.cu", "members_outside", Dim3(128))],
                 sources={"k.cu": OUTSIDE + "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n"}).source
    assert "__device__ int W__hf2::f() const { return lane() + 1; }" in fused
    assert "__device__ int W__hf2::g() const { return ::lane__hf2(hf_ctx) + base; }" in fused
    assert "template <class T> __device__ T V__hf2<T>::sum() const { return x + lane__hf2(hf_ctx); }" in fused
    assert "__device__ int Plain::twice() const { return 2 * a; }" in fused and "Plain__hf2" not in fused
    compile_nvcc(fused, workdir=tmp_path)


INITIALISERS = """
__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31; }
struct Lane { unsigned lane = lane_id(); unsigned warp{threadIdx.x / 32}; static constexpr int kWarp = 32; };
template <int N> struct Slot { unsigned idx = blockIdx.x * N + threadIdx.x; float unused = 0.f; };
struct Plain { int a = 3; };
__global__ void initialised(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  Lane l;
  Slot<128> s;
  Plain p;
  if (i < n) out[i] = l.lane + l.warp * 100 + (int)s.idx * 1000 + p.a;
}
"""


@pytest.mark.nvcc
def test_default_member_initialisers_that_read_the_block_make_a_context_type(tmp_path):
    # once: Lane and Slot were shared as written, their initialisers reading the fused block's
    # threadIdx (a part at threads [96, 224) saw warp 3 for warp 0): it compiled, and was wrong
    partner = KernelSpec("k.cu", "other", Dim3(96))
    fused = fuse([partner, KernelSpec("k.cu", "initialised", Dim3(128))],
                 sources={"k.cu": INITIALISERS + "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n"}).source
    assert "unsigned lane = lane_id__hf2(hf_ctx); unsigned warp{hf_ctx.threadIdx.x / 32};" in fused
    assert "unsigned idx = hf_ctx.blockIdx.x * N + hf_ctx.threadIdx.x;" in fused
    assert "Lane__hf2 l(hf_ctx);" in fused and "Slot__hf2<128> s(hf_ctx);" in fused and "Plain p;" in fused
    # the part's view of the block is the first member, so it is set before any initialiser runs
    lane = fused[fused.index("struct Lane__hf2"):]
    assert lane.index("const hfuse_ctx& hf_ctx;") < lane.index("unsigned lane =")
    compile_nvcc(fused, workdir=tmp_path)


OTHER = "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n"

STATICS = """
#include <cuda_fp16.h>
struct Warp {
  static __device__ int lane();                                   // defined outside: only here 'static'
  static __device__ int warp() { return threadIdx.x / 32; }
  __device__ static int lane_in(int width) { return lane() % width; }  // an unqualified call of another
  static constexpr int kSize = 32;
};
__device__ int Warp::lane() { return threadIdx.x & 31; }

template <typename T, typename Enable = void> struct Loader;   // a traits family, one per type
template <typename T> struct Loader<T, typename std::enable_if<std::is_floating_point<T>::value>::type> {
  static __device__ float load(const T* p) { return static_cast<float>(p[threadIdx.x]); }
};
template <> struct Loader<__half, void> {
  static __device__ float load(const __half* p) { return __half2float(p[threadIdx.x]); }
};

__global__ void warp_ids(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Warp::lane() * 1000 + Warp::warp() * 10 + Warp::lane_in(8) + Warp::kSize * 0;
}

template <typename T>
__global__ void load_rows(const T* __restrict__ x, float* __restrict__ y, int n) {
  const int base = blockIdx.x * blockDim.x;
  if (base + threadIdx.x < n) y[base + threadIdx.x] = Loader<T>::load(x + base);
}
"""


@pytest.mark.nvcc
def test_static_members_that_read_the_block_take_the_parts_context(tmp_path):
    # once refused: a static member has no object to carry the part's view of the block, so
    # each part's copy of the type declares it with the context first and every call passes it
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "warp_ids", Dim3(128))]
    fused = fuse(specs, sources={"k.cu": "#include <type_traits>\n" + STATICS + OTHER}).source
    assert "static __device__ int lane(const hfuse_ctx& hf_ctx);" in fused
    assert "__device__ int Warp__hf2::lane(const hfuse_ctx& hf_ctx) { return hf_ctx.threadIdx.x & 31; }" in fused
    assert "__device__ static int lane_in(const hfuse_ctx& hf_ctx, int width) { return lane(hf_ctx) % width; }" in fused
    assert "Warp__hf2::lane(hf_ctx) * 1000 + Warp__hf2::warp(hf_ctx) * 10 + Warp__hf2::lane_in(hf_ctx, 8)" in fused
    compile_nvcc(fused, workdir=tmp_path)
    for args in (("float",), ("__half",)):
        specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "load_rows", Dim3(128), args)]
        fused = fuse(specs, sources={"k.cu": "#include <type_traits>\n" + STATICS + OTHER}).source
        assert "Loader__hf2<T>::load(hf_ctx, x + base)" in fused
        assert "static __device__ float load(const hfuse_ctx& hf_ctx, const __half* p)" in fused  # the family
        compile_nvcc(fused, workdir=tmp_path)


def test_a_name_both_static_and_not_among_its_members_is_refused():
    source = """struct Idx {
  static __device__ int tid(int k) { return threadIdx.x + k; }
  __device__ int tid() const { return threadIdx.x; }
};
__global__ void k_both(int* out) { Idx i; out[threadIdx.x] = Idx::tid(1) + i.tid(); }
""" + OTHER
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k_both", Dim3(128))]
    with pytest.raises(HFuseError, match="'tid' of 'Idx' .* overloaded as a static and a non-static member"):
        fuse(specs, sources={"k.cu": source})


TRAITS = """struct Lane {
  float scale;
  static __device__ int id() { return threadIdx.x & 31; }
};
template <class Op> __global__ void host_op(float* y, Op op) { y[threadIdx.x] = op.scale + Op::id(); }

template <typename T> struct RowTraits {
  static constexpr int kRows = 4;
  static __device__ void run(const T* x, T* y, int n) {  // the kernel's body, as xformers' traits write it
    const int i = (blockIdx.x * blockDim.x + threadIdx.x) * kRows;
    for (int r = 0; r < kRows; ++r)
      if (i + r < n) y[i + r] = x[i + r] * T(2);
  }
};
template <typename KT, typename T> __global__ void traits_kernel(const T* x, T* y, int n) { KT::run(x, y, n); }

template <typename T> struct Nested {
  struct Params { const T* x; T* y; __device__ int index() const { return threadIdx.x; } };
  static __device__ void run(Params p) { p.y[p.index()] = p.x[p.index()]; }
};
template <typename KT> __global__ void nested_kernel(typename KT::Params p) { KT::run(p); }
"""


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel, args, call", [
    ("host_op", ("Lane",), "op.scale + Op::id(hf_ctx)"),
    ("traits_kernel", ("RowTraits<float>", "float"), "KT::run(hf_ctx, x, y, n)")])
def test_a_static_member_called_through_the_kernels_template_parameter_takes_the_parts_context(
        kernel, args, call, tmp_path):
    # once refused: KT::run(x, y, n) in the part would have called a copy of the type whose run
    # reads the fused block; the instance binds KT to the part's copy, whose run takes the context
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", kernel, Dim3(128), args)]
    fused = fuse(specs, sources={"k.cu": TRAITS + OTHER})
    assert fused.layout.name == "horizontal" and call in fused.source
    assert f"{args[0].split('<')[0]}__hf2" in fused.source.split("__global__")[-1]  # (the instance names the copy)
    compile_nvcc(fused.source, workdir=tmp_path)


INDIRECT = """template <typename K, typename T> __device__ void call_it(const T* x, T* y, int n) { K::run(x, y, n); }
template <typename KT, typename T> __global__ void indirect(const T* x, T* y, int n) { call_it<KT>(x, y, n); }
template <typename KT, typename T> __global__ void aliased(const T* x, T* y, int n) { using K = KT; K::run(x, y, n); }
template <typename KT, typename T> __global__ void object_call(const T* x, T* y, int n) { KT k; k.run(x, y, n); }
"""


@pytest.mark.parametrize("kernel", ["indirect", "aliased", "object_call"])
def test_a_bound_parameter_whose_static_member_reads_the_block_used_otherwise_is_refused(kernel):
    # the part's copy of RowTraits takes the context in run(); a call of it through another
    # template, an alias or an object would not pass it (the fused file did not compile)
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", kernel, Dim3(128), ("RowTraits<float>", "float"))]
    with pytest.raises(HFuseError, match="template parameter 'KT' is bound to a type whose static member 'run' reads"):
        fuse(specs, sources={"k.cu": TRAITS + INDIRECT + OTHER})


def test_a_class_nested_in_a_context_type_that_reads_the_block_is_refused():
    # Params::index would read the fused block: the part's copy of Nested carries the part's
    # context, which the objects of a class nested in it cannot reach
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "nested_kernel", Dim3(128), ("Nested<float>",))]
    with pytest.raises(HFuseError, match="'Params::index' reads the block .* 'Params' is a class nested in 'Nested'"):
        fuse(specs, sources={"k.cu": TRAITS + OTHER})


CRTP = """
template <class Derived> struct KernelBase {
  __device__ int tid() const { return static_cast<const Derived*>(this)->offset() + threadIdx.x; }
};
struct Shifted : public KernelBase<Shifted> {
  int shift;
  __device__ int offset() const { return shift; }
};
__global__ void crtp_k(int* y, int shift, int n) {
  Shifted s;
  s.shift = shift;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = s.tid();
}
"""


@pytest.mark.nvcc
def test_a_derived_type_gives_its_context_base_the_parts_view_of_the_block(tmp_path):
    # once: Shifted__hf2's constructor left KernelBase__hf2, which has only the context-taking
    # one, to a default constructor: nvcc failed
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "crtp_k", Dim3(128))],
                 sources={"k.cu": CRTP + OTHER}).source
    assert ("explicit Shifted__hf2(const hfuse_ctx& hf_part_ctx) : KernelBase__hf2<Shifted__hf2>(hf_part_ctx), "
            "hf_ctx(hf_part_ctx), shift() {}") in fused
    compile_nvcc(fused, workdir=tmp_path)


REDUCERS = """template <typename T, int WARPS> struct Reducer;
template <typename T> struct Reducer<T, 1> {  // one warp: shuffles only
  using Type = T;
  template <typename P> __device__ Reducer(const P& p, int lane) : lane_(lane), scale_(p.scale) {}
  __device__ T reduce(T v) {
    for (int it = 16; it > 0; it /= 2) v += __shfl_down_sync(0xffffffffu, v, it);
    return v * scale_;
  }
  int lane_;
  T scale_;
};
template <typename T, int WARPS> struct Reducer : public Reducer<T, 1> {  // then across the block's warps
  using Base = Reducer<T, 1>;
  using Type = T;
  template <typename P> __device__ Reducer(const P& p, int lane, T* smem) : Base(p, lane), smem_(smem) {}
  __device__ T reduce(T v) {
    v = Base::reduce(v);
    if (this->lane_ == 0) smem_[threadIdx.x / 32] = v;
    __syncthreads();
    T total = 0;
    for (int w = 0; w < WARPS; ++w) total += smem_[w];
    return total;
  }
  T* smem_;
};
struct ReduceParams { float scale; };
template <int W> struct NormTraits { enum { WARPS = W }; using Reducer = ::Reducer<float, W>; };
template <typename Ktraits> __global__ void block_sums(ReduceParams p, const float* x, float* out) {
  using reduce_t = typename Ktraits::Reducer::Type;  // (TE's norms: a member alias named as the type)
  __shared__ reduce_t smem[Ktraits::WARPS];
  typename Ktraits::Reducer reducer(p, threadIdx.x & 31, smem);
  const reduce_t total = reducer.reduce(x[blockIdx.x * blockDim.x + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}
"""


@pytest.mark.nvcc
def test_a_derived_reducer_making_its_base_through_an_alias_and_a_traits_alias_of_its_name_compile(tmp_path):
    # Transformer Engine's Reducer<T, 1, WARPS_M, WARPS_N> derives from Reducer<T, 1, WARPS_M, 1>,
    # made as Base(params, ...); its traits name it Ktraits::Reducer. Once: the copy's constructor
    # made the base twice (Reducer__hf2<T,1>(hf_part_ctx) and Base(p, lane), with no view), and
    # Ktraits::Reducer::Type became Ktraits::Reducer__hf2::Type (nvcc failed on both)
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "block_sums", Dim3(128), ("NormTraits<4>",))],
                 sources={"k.cu": REDUCERS + OTHER}).source
    assert ": hf_ctx(hf_part_ctx), Base(hf_part_ctx, p, lane), smem_(smem) {}" in fused
    assert "using reduce_t = typename Ktraits::Reducer::Type;" in fused
    compile_nvcc(fused, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_member_called_by_its_qualified_name_stays_the_member(tmp_path):
    # once: W::lane() became W__hf2::lane__hf2(hf_ctx), a member the part's copy does not have
    source = """struct W {
  int b;
  __device__ int lane() const { return (threadIdx.x & 31) + b; }
  __device__ int f() const { return W::lane() + this->lane(); }
};
__global__ void k_q(int* out) { W w; w.b = 1; out[threadIdx.x] = w.f(); }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k_q", Dim3(128))],
                 sources={"k.cu": source}).source
    assert "__device__ int f() const { return W__hf2::lane() + this->lane(); }" in fused
    compile_nvcc(fused, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_members_early_return_before_its_barrier_is_made_safe(tmp_path):
    # once: the member's 'if (i >= n) return;' stayed before the part's named barrier (a hang
    # where a warp's threads all return); it is made safe as a helper's is
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "member_return", Dim3(128))],
                 sources={"k.cu": MEMBER_RETURN + "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n"}).source
    op = fused[fused.index("struct Op__hf2"):fused.index("};", fused.index("struct Op__hf2"))]
    assert "if (hf_active && (i >= n)) hf_active = false;" in op and "return;" not in op
    compile_nvcc(fused, workdir=tmp_path)


MEMBER_RETURN = """struct Op {
  float* s;
  __device__ void operator()(float* out, int n) const {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x] = out[i];
    __syncthreads();
    out[i] = s[(threadIdx.x + 1) % 128];
  }
};
__global__ void member_return(float* out, int n) { __shared__ float s[128]; Op op; op.s = s; op(out, n); }
"""


MADE_OF_A_PARAMETER = """template <class T> struct Square { __device__ T operator()(T v) const { return v * v + threadIdx.x; } };
struct Shift {
  float by;
  __device__ explicit Shift(float b) : by(b) {}
  __device__ float operator()(float v) const { return v + by * (threadIdx.x & 1); }
};
template <class A, class B> struct Both { A a; B b; };
template <class Op>
__global__ void made(float* x) { Op op{}; x[threadIdx.x] = op(x[threadIdx.x]) + Op()(1.f); }
template <class Op>
__global__ void made_args(float* x) { Op op(2.f); auto o2 = Op{3.f}; x[threadIdx.x] = op(x[threadIdx.x]) + o2(1.f); }
template <class Op>
__global__ void measured(float* x) { x[threadIdx.x] = sizeof(Op); }
template <class W>
__global__ void wrapped_made(float* x) { W w{}; x[threadIdx.x] = w.a(1.f); }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel, args, made", [
    ("made", ("Square<float>",), ["Op op{hf_ctx};", "Op(hf_ctx)(1.f)"]),
    ("made_args", ("Shift",), ["Op op(hf_ctx, 2.f);", "auto o2 = Op{hf_ctx, 3.f};"]),
])
def test_objects_the_kernel_makes_of_a_template_parameter_get_the_parts_view(tmp_path, kernel, args, made):
    # once refused ("neither an object the kernel makes of a template parameter ..."): the
    # instance binds Op to a block-reading type, so the kernel's body makes the part's copy
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", kernel, Dim3(128), args)]
    fused = fuse(specs, sources={"k.cu": MADE_OF_A_PARAMETER}).source
    for text in made:
        assert text in fused, text
    assert f"::{kernel}__hf2<{args[0].replace('<', '__hf2<', 1) if '<' in args[0] else args[0] + '__hf2'}>(" in fused
    compile_nvcc(fused, workdir=tmp_path)


@pytest.mark.parametrize("kernel, args, said", [
    ("measured", ("Shift",), "'measured' takes the size or alignment of its type parameter 'Op', and this kernel gives"),
    ("wrapped_made", ("Both<Square<float>, int>",), "template argument 'Both<Square<float>, int>' names 'Square'"),
])
def test_what_a_template_parameter_bound_to_such_a_type_cannot_do_is_refused(kernel, args, said):
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", kernel, Dim3(128), args)]
    with pytest.raises(HFuseError, match=re.escape(said)):
        fuse(specs, sources={"k.cu": MADE_OF_A_PARAMETER})


TEMPLATED_USES = """
template <class Derived>
struct Base {  // reads nothing of the block: no context type, no part's copy
  __device__ float run(float x) { return static_cast<Derived*>(this)->step(x); }
};
template <class F>
__device__ float call(F f, float x) { return f(x) + 1.f; }
template <class Op>
__device__ float apply(float x) { return Op::op(x) * 2.f; }
struct Stepper : Base<Stepper> { __device__ float step(float x) { return x * threadIdx.x; } };
struct LaneFn { __device__ float operator()(float x) const { return x + threadIdx.x; } };
struct LaneOp { static __device__ float op(float x) { return x + threadIdx.x; } };
__global__ void k_crtp(float* o) { Stepper s; o[threadIdx.x] = s.run(1.f); }
__global__ void k_temporary(float* o) { o[threadIdx.x] = call(LaneFn{}, 1.f); }
__global__ void k_static(float* o) { o[threadIdx.x] = apply<LaneOp>(1.f); }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
def test_a_base_that_only_names_the_copy_is_constructed_as_before(tmp_path):
    # once: Base<Stepper__hf2>(hf_part_ctx), as if Base were a context type too: nvcc failed
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k_crtp", Dim3(128))],
                 sources={"k.cu": TEMPLATED_USES}).source
    assert "struct Stepper__hf2 : Base<Stepper__hf2> {" in fused
    assert "explicit Stepper__hf2(const hfuse_ctx& hf_part_ctx) : hf_ctx(hf_part_ctx) {}" in fused
    compile_nvcc(fused, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_temporary_in_braces_is_given_the_parts_view(tmp_path):
    # LaneFn{}: once left as is, which the copy (its only constructor taking the context) refused
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k_temporary", Dim3(128))],
                 sources={"k.cu": TEMPLATED_USES}).source
    assert "call(LaneFn__hf2{hf_ctx}, 1.f)" in fused
    compile_nvcc(fused, workdir=tmp_path)
    with pytest.raises(HFuseError, match="initialised with values"):
        fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k_temporary", Dim3(128))],
             sources={"k.cu": TEMPLATED_USES.replace("call(LaneFn{}", "call(LaneFn{2.f}")})


def test_a_type_whose_static_member_reads_the_block_given_as_a_template_argument_is_refused():
    # apply<LaneOp> calls LaneOp::op(x) without the context the copy's op takes (once: nvcc failed)
    with pytest.raises(HFuseError, match=r"'LaneOp' is given as a template argument.*static member 'op'") as err:
        fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k_static", Dim3(128))],
             sources={"k.cu": TEMPLATED_USES})
    assert err.value.where.line == 15


CONSTRUCTORS = C.CORPUS / "trust" / "constructors.cu"


@pytest.mark.nvcc
def test_a_types_own_constructors_take_the_parts_view_of_the_block(tmp_path):
    # once refused: "'BlockReducer' declares its own constructor or destructor and a member
    # that reads the block"
    fused = fuse([KernelSpec(CONSTRUCTORS, "accum_rows", Dim3(96)), KernelSpec(CONSTRUCTORS, "row_sums", Dim3(256))])
    text = fused.source
    # each constructor takes the context first and sets the member before the user's members
    assert ("explicit BlockReducer__hf2(const hfuse_ctx& hf_part_ctx, T* smem) : hf_ctx(hf_part_ctx), smem_(smem), "
            "lane_(hf_ctx.threadIdx.x % 32)") in text
    assert "BlockReducer__hf2(const hfuse_ctx& hf_part_ctx, U* smem, int skip)" in text
    # a copy constructor copies its source's view; the destructor is left as it is
    assert "BlockReducer__hf2(const BlockReducer__hf2& other) : hf_ctx(other.hf_ctx), smem_(other.smem_)" in text
    assert "__device__ ~BlockReducer__hf2() {}" in text
    # the user's constructor without arguments is the context-taking one (no second of that signature)
    assert "Accum__hf1(const hfuse_ctx& hf_part_ctx) : hf_ctx(hf_part_ctx), total(0.f) {}" in text
    assert "explicit Accum__hf1(const hfuse_ctx& hf_part_ctx) : hf_ctx(hf_part_ctx) {}" not in text
    # every object is made with the part's view: declarations, braces, temporaries, auto
    for made in ("BlockReducer__hf2<float, 8> red(hf_ctx, scratch);", "BlockReducer__hf2<float, 8> copy = red;",
                 "auto second = BlockReducer__hf2<float, 8>(hf_ctx, scratch, 32);", "Accum__hf1 a(hf_ctx);",
                 "Accum__hf1 b{hf_ctx, 1.f};", "Accum__hf1 c(hf_ctx, 2.f);", "Accum__hf1(hf_ctx, 3.f).total",
                 "Accum__hf1{hf_ctx}.total"):
        assert made in text, made
    compile_nvcc(text, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_type_with_a_reference_member_set_by_its_constructor_gets_no_other(tmp_path):
    # CUB's shape by hand (TempStorage& storage): once nvcc refused the copy's extra
    # constructor taking the view alone, which left the reference unset
    fused = fuse([KernelSpec(CONSTRUCTORS, "accum_rows", Dim3(96)), KernelSpec(CONSTRUCTORS, "block_sums_ref", Dim3(256))])
    assert "explicit BlockSum__hf2(const hfuse_ctx& hf_part_ctx, TempStorage& s) : hf_ctx(hf_part_ctx), storage(s) {}" \
        in fused.source and "explicit BlockSum__hf2(const hfuse_ctx& hf_part_ctx) :" not in fused.source
    assert "BlockSum__hf2(hf_ctx, tmp).Sum(" in fused.source and "make_sum__hf2(hf_ctx, tmp).Sum(1.f)" in fused.source
    assert "{ return BlockSum__hf2(hf_ctx, storage); }" in fused.source  # (no early-exit region)
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.parametrize("constructor, outside, why", [
    ("__device__ Acc(float s);", "__device__ Acc::Acc(float s) : v(s) {}\n", "is defined outside the class"),
    ("__device__ Acc() : Acc(0.f) {}\n  __device__ Acc(float s) : v(s) {}", "", "delegates to another constructor"),
])
def test_a_constructor_hfuse_cannot_give_the_view_is_refused_saying_which(constructor, outside, why):
    source = ("struct Acc {\n  float v;\n  " + constructor + "\n  __device__ float lane() const { return v + threadIdx.x; }\n};\n"
              + outside + "__global__ void k(float* o) { Acc a(1.f); o[threadIdx.x] = a.lane(); }\n"
              "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n")
    with pytest.raises(HFuseError, match=rf"'Acc' has a member that reads the block .* its constructor \(line \d\) {why}"):
        fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k", Dim3(128))], sources={"k.cu": source})


_HOST_CHECK = r"""
#include <cstdio>
#define __device__
struct uint3 { unsigned x, y, z; };
uint3 threadIdx;
%(ctx)s
%(original)s
%(copies)s
#define SAME(a, b) (a.base == b.base && a.ld == b.ld && a.pad == b.pad && a.src == b.src && a.stride == b.stride \
                    && a.last == b.last)
int main() {
  float smem[4], x[4];
  hfuse_ctx ctx{};
  WarpTile t{smem}; WarpTile%(n)s t2{ctx, smem};
  WarpTile u = {smem, 7, 3, x}; WarpTile%(n)s u2 = {ctx, smem, 7, 3, x};
  WarpTile v{smem, 7, 3, x, 9, 8}; WarpTile%(n)s v2{ctx, smem, 7, 3, x, 9, 8};
  Pair<float> p{3.f}; Pair%(n)s<float> p2{ctx, 3.f};
  const bool same = SAME(t, t2) && SAME(u, u2) && SAME(v, v2) && p.a == p2.a && p.b == p2.b && &t2.hf_ctx == &ctx;
  std::printf(same ? "same\n" : "differ\n");
  return same ? 0 : 1;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a host C++ compiler (g++)")
def test_an_aggregates_copy_sets_its_members_as_initialisation_with_values_did(tmp_path):
    # WarpTile t{smem}: the copy's constructor for one value must leave ld = 33, stride{2} and
    # last = 1 to their default member initialisers and value-initialise pad and src, as C++
    # does for the original aggregate; compiled and run on the host, member by member
    fused = fuse([KernelSpec(CONSTRUCTORS, "accum_rows", Dim3(96)), KernelSpec(CONSTRUCTORS, "tile_rows", Dim3(256))])
    text, corpus = fused.source, CONSTRUCTORS.read_text()
    copies = [re.search(rf"(template <typename T>\n)?struct {name}__hf2 {{.*?\n}};\n", text, re.S).group(0)
              for name in ("WarpTile", "Pair")]
    assert "WarpTile__hf2 t{hf_ctx, smem};" in text and "Pair__hf2<float>{hf_ctx, 3.f}.mix()" in text
    program = _HOST_CHECK % {
        "ctx": re.search(r"struct hfuse_ctx \{.*?\n\};\n", text, re.S).group(0),
        "original": corpus[corpus.index("struct WarpTile {"):corpus.index("__global__ void tile_rows")],
        "copies": "\n".join(copies), "n": "__hf2"}
    (tmp_path / "check.cpp").write_text(program)
    subprocess.run(["g++", "-std=c++17", "-o", str(tmp_path / "check"), str(tmp_path / "check.cpp")], check=True,
                   capture_output=True, text=True)
    assert subprocess.run([str(tmp_path / "check")], capture_output=True, text=True).stdout == "same\n"


@pytest.mark.nvcc
def test_an_aggregate_initialised_with_values_compiles(tmp_path):
    fused = fuse([KernelSpec(CONSTRUCTORS, "accum_rows", Dim3(96)), KernelSpec(CONSTRUCTORS, "tile_rows", Dim3(256))])
    compile_nvcc(fused.source, workdir=tmp_path)


def test_designated_initialisers_of_an_aggregate_are_refused():
    source = ("struct W { float* b; int ld; __device__ float at() const { return b[threadIdx.x * ld]; } };\n"
              "__global__ void k(float* o) { W w{.b = o, .ld = 1}; o[threadIdx.x] = w.at(); }\n"
              "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n")
    with pytest.raises(HFuseError, match="initialised with values.*values in order"):
        fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k", Dim3(128))], sources={"k.cu": source},
             options=CompileOptions(std="c++20"))


VALUE_INITIALISED = """
struct Lane { __device__ int id() const { return threadIdx.x & 31; } };
struct Acc {
  float total;
  int count;
  Lane lane;
  int step = 3;
  __device__ void add(float v) { total += v * (lane.id() & 1) + step; ++count; }
};
__global__ void acc_k(const float* x, float* y, int n) {
  Acc a{};
  Acc b = Acc();
  auto c = Acc{};
  for (int i = threadIdx.x; i < n; i += blockDim.x) { a.add(x[i]); b.add(1.f); c.add(2.f); }
  y[blockIdx.x * blockDim.x + threadIdx.x] = a.total + b.total + c.total + a.count;
}
""" + OTHER


@pytest.mark.nvcc
def test_a_value_initialised_object_starts_from_zeros_and_a_member_of_a_copied_type_gets_the_view(tmp_path):
    # once silently wrong: Acc a{} value-initialises total and count (zeros), but the copy's
    # constructor, its own, left them indeterminate; and a Lane member was refused as "arrays"
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "acc_k", Dim3(128))],
                 sources={"k.cu": VALUE_INITIALISED}).source
    assert ("explicit Acc__hf2(const hfuse_ctx& hf_part_ctx) : hf_ctx(hf_part_ctx), total(), count(), "
            "lane(hf_part_ctx) {}") in fused  # (step keeps its '= 3')
    assert "Acc__hf2 a{hf_ctx};" in fused and "Acc__hf2 b = Acc__hf2(hf_ctx);" in fused
    compile_nvcc(fused, workdir=tmp_path)


UNCONSTRUCTED = """
struct Tile {
  float v[128];
  __device__ void put(float x) { v[threadIdx.x] = x; }
  __device__ float get() const { return v[(threadIdx.x + 1) % 128]; }
  struct Storage { float spare[4]; };
};
template <class S> __device__ S* carve(char* p) { return reinterpret_cast<S*>(p); }
__global__ void k(const float* x, float* y) {
  extern __shared__ char raw[];
  USE
  y[threadIdx.x] = x[threadIdx.x];
}
""" + OTHER


@pytest.mark.parametrize("use, why", [
    ("Tile* t = reinterpret_cast<Tile*>(raw); t->put(1.f);", "a value is reinterpret_cast to it"),
    ("Tile* t = (Tile*)raw; t->put(1.f);", "a value is cast to it"),
    ("auto& t = *static_cast<Tile*>((void*)raw); t.put(1.f);", "a value is static_cast to it"),
    ("__shared__ Tile t; t.put(1.f);", "an object of it is a __shared__ or __device__ variable"),
    ("y[0] = sizeof(Tile);", "its size or alignment is taken"),
    ("carve<Tile>(raw)->put(1.f);", "'carve' casts to its type parameter 'S'"),
])
def test_an_object_no_constructor_of_the_parts_copy_made_is_refused(use, why):
    # once silently wrong: memory cast to Tile (or a __shared__ Tile) was never constructed, so
    # the copy's view-of-the-block member was whatever the memory held, and sizeof(Tile) grew
    with pytest.raises(HFuseError, match=re.escape(why)):
        fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k", Dim3(128))],
             sources={"k.cu": UNCONSTRUCTED.replace("USE", use)})


def test_a_member_type_of_such_a_type_in_shared_memory_is_not_the_type():
    # __shared__ Tile::Storage s: a type of its own (no member reads the block), kept as written
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k", Dim3(128))],
                 sources={"k.cu": UNCONSTRUCTED.replace("USE", "__shared__ Tile::Storage s; Tile t; t.put(s.spare[0]);")})
    assert "Tile__hf2::Storage s;" in fused.source and "Tile__hf2 t(hf_ctx);" in fused.source


def test_a_name_followed_by_its_arguments_and_two_colons_is_a_scope():
    from hfuse.transform.context_types import names_a_scope

    def ends(text: str, name: str) -> int:
        return text.index(name) + len(name)

    assert names_a_scope("const typename Traits<128, float>::input_t*", ends("const typename Traits", "Traits"))
    assert names_a_scope("Traits :: input_t", 6)
    assert not names_a_scope("const Traits<128, float>& t", ends("const Traits", "Traits"))
    assert not names_a_scope("Vec<Traits> v", ends("Vec<Traits", "Traits"))  # (an argument of another template)
    assert not names_a_scope("Traits", 6)
