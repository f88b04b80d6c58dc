"""Constructs of real CUDA files, fused and compiled with nvcc (CPU only).

Each case is a small file written the way public samples and libraries write CUDA:
kernels in namespaces, ``SharedMemory<T>`` wrappers, cooperative groups under other
names, host code beside the kernels, structs defined in two files, default arguments.
Each is fused with a plain partner kernel; the output must compile with nvcc and show the
rewrite the construct needs.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hfuse.api import fuse
from hfuse.errors import HFuseError
from hfuse.spec import KernelSpec

PARTNER = """#include <cstdio>
struct Point3 { float x, y, z; };
__global__ void partner(float* out, const Point3* p, int n) {
  __shared__ float s[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? p[i].x : 0.f;
  __syncthreads();
  if (i < n) out[i] = s[threadIdx.x ^ 1];
}
void print_usage() { printf("usage\\n"); }
"""

LIBRARY = """#include <cooperative_groups.h>
#include <iostream>
namespace g = cooperative_groups;
struct Point3 { float x, y, z; };
namespace mylib {
namespace detail {
template <typename T>
__device__ T block_sum(T v, T* s) {
  s[threadIdx.x] = v;
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  return s[0];
}
}  // namespace detail
struct Params { int n; float scale; };
__device__ float scale(float v) { return v; }  // a helper named like the kernel below
__global__ void scale(const float* in, float* out, Params p, int* partial = NULL) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < p.n ? in[i] * p.scale : 0.f;
  float t = detail::block_sum(v, s);
  if (threadIdx.x == 0) out[blockIdx.x] = t;
}
}  // namespace mylib

template <class T>
struct SharedMemory {
  __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }
  __device__ inline operator const T *() const { extern __shared__ int __smem[]; return (T *)__smem; }
};
template <>
struct SharedMemory<double> {
  __device__ inline operator double *() { extern __shared__ double __smem_d[]; return (double *)__smem_d; }
};

template <class T>
__global__ void reduce0(T *g_idata, T *g_odata, unsigned int n) {
  T *sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  __syncthreads();
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    if ((tid % (2 * s)) == 0) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

__global__ void tiles(int* out) {
  g::thread_block block = g::this_thread_block();
  auto tile = g::tiled_partition<32>(g::this_thread_block());
  int v = tile.thread_rank();
  __syncthreads();
  g::sync(block);
  cooperative_groups::thread_block same = cooperative_groups::this_thread_block();
  same.sync();
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

int main() { std::cout << "host" << std::endl; return 0; }
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    library, partner = tmp_path / "library.cu", tmp_path / "partner.cu"
    library.write_text(LIBRARY)
    partner.write_text(PARTNER)
    return library, partner


def _compile(source: str, tmp_path: Path) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    path = tmp_path / "fused.cu"
    path.write_text(source)
    result = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", str(path.with_suffix(".cubin")), str(path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def _part(source: str, index: int) -> str:
    start = source.index(f"// ---- part {index}:")
    end = source.find("// ---- ", start + 10)
    return source[start:end]


@pytest.mark.nvcc
def test_kernel_in_a_namespace_with_a_namespaced_helper(files, tmp_path):
    library, partner = files
    fused = fuse([KernelSpec(library, "mylib::scale", 256), KernelSpec(partner, "partner", 128)])
    part = _part(fused.source, 1)
    assert "namespace mylib {" in part and "namespace detail {" in part
    assert "block_sum__hf1(hf_ctx, v, s)" in part  # the call resolved to mylib::detail::block_sum
    assert "int* partial," in part and "= NULL" not in part.split("scale__hf1(")[1].split(")")[0]
    assert "::mylib::scale__hf1(" in fused.source and fused.name_expression.startswith("hfuse_fused::")
    assert "float scale(float v)" not in fused.source  # the unused same-named helper is left out
    _compile(fused.source, tmp_path)


@pytest.mark.nvcc
def test_host_code_is_left_out(files, tmp_path):
    library, partner = files
    fused = fuse([KernelSpec(library, "tiles", 128), KernelSpec(partner, "partner", 128)])
    header = fused.source.split("#include")[0]
    assert "main" in header and "print_usage" in header  # named in the header comment
    assert "int main(" not in fused.source and "print_usage()" not in fused.source.split("\n// ---- hfuse support")[1]
    assert fused.source.count("struct Point3") == 1
    _compile(fused.source, tmp_path)


@pytest.mark.nvcc
def test_shared_memory_wrapper_gets_each_parts_slice(files, tmp_path):
    library, partner = files
    fused = fuse([KernelSpec(partner, "partner", 128), KernelSpec(library, "reduce0", 256, ("float",))])
    part = _part(fused.source, 2)
    assert "struct SharedMemory__hf2 {" in part and "struct SharedMemory__hf2<double>" in part
    assert "reinterpret_cast<int (*)[]>(hf_ctx.dyn_smem)" in part and "extern __shared__" not in part
    assert "SharedMemory__hf2<T>(hf_ctx)" in part
    assert "operator T *() { extern __shared__" not in fused.source  # the original wrapper is not emitted
    _compile(fused.source, tmp_path)


@pytest.mark.nvcc
def test_cooperative_groups_under_an_alias_and_spelled_out(files, tmp_path):
    library, partner = files
    fused = fuse([KernelSpec(partner, "partner", 128), KernelSpec(library, "tiles", 128)])
    part = _part(fused.source, 2)
    assert "g::tiled_partition<32>(cooperative_groups::this_thread_block())" in part  # tiles cut from the real block
    assert "hfuse_thread_block<2, 128> block = hfuse_thread_block<2, 128>(hf_ctx)" in part
    assert "hfuse_thread_block<2, 128> same = hfuse_thread_block<2, 128>(hf_ctx)" in part
    assert "hfuse_group_sync(block)" in part and "__syncthreads" not in part
    _compile(fused.source, tmp_path)


def test_ambiguous_plain_name_asks_for_the_qualified_one(tmp_path):
    path = tmp_path / "two.cu"
    path.write_text("namespace a { __global__ void k(int* p) {} }\nnamespace b { __global__ void k(int* p) {} }\n"
                    "__global__ void z(int* p) {}\n")
    with pytest.raises(HFuseError, match=r"names 2 kernels: a::k, b::k"):
        fuse([KernelSpec(path, "k", 32), KernelSpec(path, "z", 32)])


@pytest.mark.parametrize("body, why", [
    ('asm volatile("bar.sync 0;");', "inline PTX"),
    ('unsigned w; asm("mov.u32 %0, %%warpid;" : "=r"(w));', "inline PTX"),  # the warp's place in the fused block
    ('unsigned b; asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(b));', "inline PTX"),  # the fused kernel's size
    # once fused as written: PTX 8's spelling of the block's barrier, the block's whole shared memory
    ('asm volatile("barrier.cta.sync 0;" ::: "memory");', "inline PTX"),
    ('asm volatile("bar.cta.arrive 1, 64;");', "inline PTX"),
    ('unsigned b; asm("mov.u32 %0, %%aggr_smem_size;" : "=r"(b));', "inline PTX"),
    # once fused: vertical fusion's next part, a persistent block's next blocks never ran for the thread
    ('if (threadIdx.x > 64) asm volatile("exit;");', "inline PTX that ends the thread"),
    ('asm volatile("{ .reg .pred q; setp.gt.u32 q, %0, 64; @q ret; }" :: "r"(threadIdx.x));', "ends the thread"),
    ("SYNC_ALL();", "looks like a macro"),
    ("typedef cub::BlockReduce<int, 128> R;", "CUB's block-wide"),
])
def test_what_hfuse_cannot_see_into_is_refused(tmp_path, body, why):
    path = tmp_path / "opaque.cu"
    path.write_text(f"__global__ void k(int* p) {{\n  {body}\n  p[threadIdx.x] = 0;\n}}\n__global__ void z(int* p) {{}}\n")
    with pytest.raises(HFuseError, match=re.escape(why)) as err:
        # horizontal fusion: CUB's block collectives fuse only where a block runs whole (test_fuse_trust.py)
        fuse([KernelSpec(path, "k", 128), KernelSpec(path, "z", 32)], layout="horizontal")
    assert f"{path}:2" in str(err.value)


@pytest.mark.parametrize("layout", ["horizontal", "vertical", "persistent:1:1"])
def test_a_helper_that_ends_the_thread_in_ptx_is_refused_in_every_layout(tmp_path, layout):
    path = tmp_path / "ends.cu"
    path.write_text("__device__ void stop_if(bool c) { if (c) asm volatile(\"exit;\"); }\n"
                    "__global__ void k(int* p, int n) {\n  stop_if(threadIdx.x >= n);\n  p[threadIdx.x] = 0;\n}\n"
                    "__global__ void z(int* p) { p[threadIdx.x] = 1; }\n")
    with pytest.raises(HFuseError, match="ends the thread") as err:
        fuse([KernelSpec(path, "k", 128), KernelSpec(path, "z", 128)], layout=layout)
    assert f"{path}:1" in str(err.value)


@pytest.mark.nvcc
def test_a_constant_table_both_files_define_becomes_one_per_part(tmp_path):
    table = "__constant__ float coeffs[4];\n__device__ float weigh(float v, int i) { return v * coeffs[i & 3]; }\n"
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text(table + "__global__ void ka(float* y) { y[threadIdx.x] = weigh(y[threadIdx.x], threadIdx.x); }\n")
    b.write_text(table + "__global__ void kb(float* y) { y[threadIdx.x] = coeffs[0] + weigh(1.f, threadIdx.x); }\n")
    fused = fuse([KernelSpec(a, "ka", 128), KernelSpec(b, "kb", 128)])
    assert fused.symbol_names == ({"coeffs": "coeffs__hf1"}, {"coeffs": "coeffs__hf2"})
    part1, part2 = _part(fused.source, 1), _part(fused.source, 2)
    assert "__constant__ float coeffs__hf1[4];" in part1 and "coeffs__hf2" not in part1
    assert "coeffs__hf2[0] + weigh__hf2(hf_ctx, 1.f" in part2  # the helper reads its part's copy
    assert re.search(r"\bcoeffs\[", fused.source) is None
    # the user's host code fills the table by name: the header and a note say the new names
    said = "coeffs is coeffs__hf1 (ka), coeffs__hf2 (kb). Fill and read those names from the host"
    assert said in fused.source.split("// ---- hfuse support")[0] and any(said in note for note in fused.notes)
    _compile(fused.source, tmp_path)


def test_a_constant_table_one_file_defines_keeps_its_name(files):
    library, partner = files
    fused = fuse([KernelSpec(library, "mylib::scale", 256), KernelSpec(partner, "partner", 128)])
    assert fused.symbol_names == ()


def test_an_internal_error_reaches_the_user_as_an_hfuse_error(files, monkeypatch):
    import hfuse.api

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(hfuse.api, "specialise_part", broken)
    library, partner = files
    with pytest.raises(HFuseError, match=r"internal error of hfuse while fusing tiles .*KeyError") as err:
        fuse([KernelSpec(library, "tiles", 128), KernelSpec(partner, "partner", 128)])
    assert "report it" in str(err.value)


@pytest.mark.nvcc
def test_device_source_of_a_sample_file_holds_only_the_kernels_side(files, tmp_path):
    from hfuse.api import device_source

    library, _ = files
    unfused = device_source(KernelSpec(library, "reduce0", 256, ("float",)))
    assert unfused.name_expression == "reduce0<float>"
    assert "int main(" not in unfused.source and "main" in unfused.source.split("\n\n")[0]
    assert "struct SharedMemory {" in unfused.source and "__global__ void reduce0(" in unfused.source
    assert "mylib" not in unfused.source and "tiles" not in unfused.source
    _compile(unfused.source, tmp_path)
    scale = device_source(KernelSpec(library, "mylib::scale", 256))
    assert scale.name_expression == "mylib::scale" and "namespace detail {" in scale.source
    _compile(scale.source, tmp_path)


def test_cli_selects_a_kernel_by_qualified_name(files, tmp_path):
    from hfuse.cli import main

    library, partner = files
    out = tmp_path / "out" / "fused.cu"
    assert main(["fuse", str(library), str(partner), "-k", "mylib::scale:256", "-k", "partner:128", "-o", str(out)]) == 0
    text = out.read_text()
    assert "// 1     mylib::scale" in text and "namespace hfuse_fused {" in text


@pytest.mark.nvcc
def test_early_return_before_a_barrier_spelled_through_an_alias_is_made_safe(tmp_path):
    path = tmp_path / "alias.cu"
    path.write_text("#include <cooperative_groups.h>\nnamespace g = cooperative_groups;\n"
                    "__global__ void k(int* p, int n) {\n  g::thread_block b = g::this_thread_block();\n"
                    "  __shared__ int s[128];\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i >= n) return;\n  s[threadIdx.x] = p[i];\n  g::sync(b);\n  p[i] = s[threadIdx.x ^ 1];\n}\n"
                    "__global__ void z(int* p) { p[threadIdx.x] = 0; }\n")
    fused = fuse([KernelSpec(path, "z", 128), KernelSpec(path, "k", 128)])
    part = _part(fused.source, 2)
    assert "hf_active" in part and "if (i >= n) return;" not in part  # the return became the flag
    _compile(fused.source, tmp_path)


def test_a_tiles_rank_among_tiles_counts_from_the_parts_first_thread(tmp_path):
    path = tmp_path / "tiles.cu"
    path.write_text("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
                    "__global__ void ranks(int* out) {\n  auto tile = cg::tiled_partition<16>(cg::this_thread_block());\n"
                    "  if (tile.thread_rank() == 0) out[tile.meta_group_rank()] = tile.meta_group_size();\n}\n"
                    "__global__ void other(int* out, cg::thread_block_tile<32> t) { out[t.meta_group_rank()] = 0; }\n"
                    "__global__ void z(int* p) { p[threadIdx.x] = 0; }\n")
    fused = fuse([KernelSpec(path, "z", 96), KernelSpec(path, "ranks", 120)])
    assert "out[(tile.meta_group_rank() - 6u)] = 8u;" in _part(fused.source, 2)  # 96 / 16 tiles before it; 120 / 16 -> 8
    with pytest.raises(HFuseError, match="meta_group_rank"):
        fuse([KernelSpec(path, "z", 96), KernelSpec(path, "other", 64)])


def test_a_call_through_a_pointer_is_refused_but_a_cast_is_not(tmp_path):
    path = tmp_path / "pointer.cu"
    path.write_text("typedef unsigned int u32;\n__device__ int lane() { return threadIdx.x & 31; }\n"
                    "__device__ int twice(int v) { return 2 * v; }\n"
                    "__global__ void cast(int* p, long long x) { p[0] = (u32)(x >> 32) + lane(); }\n"
                    "__global__ void indirect(int* p, int (*f)(int)) { p[0] = (*f)(p[1]); }\n"
                    "__global__ void z(int* p) { p[threadIdx.x] = 0; }\n"
                    "__device__ int pick() { int (*g)() = lane; return g(); }\n"  # lane's address is taken
                    "__device__ int lane_plus(int v) { return v + (threadIdx.x & 31); }\n"
                    "__device__ int pick_plus(int v) { int (*g)(int) = lane_plus; return g(v); }\n")  # and lane_plus's
    fuse([KernelSpec(path, "cast", 32), KernelSpec(path, "z", 32)])
    with pytest.raises(HFuseError, match=r"through a pointer, and some helpers it may hold \(taking 1 argument\) "
                                         r".*lane_plus") as err:
        fuse([KernelSpec(path, "indirect", 32), KernelSpec(path, "z", 32)])
    assert f"{path}:5" in str(err.value)


def test_a_call_through_a_pointer_runs_only_functions_of_as_many_parameters_as_it_passes(tmp_path):
    # ggml's mul_mat_vec_q calls vec_dot(vx, vy, kbx, kby) through a constexpr pointer while the
    # file takes the addresses of tile loaders of 5 parameters that read threadIdx: once refused.
    # No default argument fills a parameter in a call through a pointer, so f(p[1]) runs a
    # function of one parameter (or of a pack, or C's ...), never lane() or the loaders
    path = tmp_path / "arity.cu"
    loader = "__device__ void load(int* t, int i, int j, int k, int n) { t[threadIdx.x] = i + j + k + n; }\n"
    path.write_text("__device__ int lane() { return threadIdx.x & 31; }\n" + loader +
                    "__device__ int twice(int v) { return 2 * v; }\n"
                    "__device__ int pick(int* t) { int (*g)() = lane; void (*h)(int*, int, int, int, int) = load;\n"
                    "  h(t, 1, 2, 3, 4); return g(); }\n__device__ int (*d_twice)(int) = twice;\n"
                    "__global__ void indirect(int* p, int (*f)(int)) { p[0] = (*f)(p[1]); }\n"
                    "__global__ void z(int* p) { p[threadIdx.x] = 0; }\n")
    fused = fuse([KernelSpec(path, "indirect", 32), KernelSpec(path, "z", 32)])
    assert "p[0] = (*f)(p[1]);" in fused.source
    # nor, where its value is used, a void function of one parameter (a statement may call one)
    path.write_text(path.read_text() + "__device__ void mark(int v) { if (threadIdx.x == v) v = 0; }\n"
                    "__device__ void pick_mark() { void (*g)(int) = mark; g(1); }\n"
                    "__global__ void statement(int* p, void (*f)(int)) { f(p[1]); }\n")
    fuse([KernelSpec(path, "indirect", 32), KernelSpec(path, "z", 32)])
    with pytest.raises(HFuseError, match="through a pointer.*mark"):
        fuse([KernelSpec(path, "statement", 32), KernelSpec(path, "z", 32)])
    base = path.read_text()
    for taker in ("template <typename... A> __device__ int any(A... a) { return threadIdx.x; }\n"
                  "__device__ int pick_any() { int (*g)(int) = any<int>; return g(1); }\n",  # (an instance's address)
                  "__device__ int varargs(int n, ...) { return threadIdx.x; }\n"
                  "__device__ int pick_var() { int (*g)(int, ...) = varargs; return g(1); }\n"):
        path.write_text(base + taker)
        with pytest.raises(HFuseError, match="through a pointer"):
            fuse([KernelSpec(path, "indirect", 32), KernelSpec(path, "z", 32)])


POINTERS = """typedef float (*unary_op)(float);
using op_ref = float (&)(float);
__device__ float lane_scaled(float x) { return x * threadIdx.x; }
__device__ float twice(float x) { return 2.f * x; }
__device__ unary_op d_twice = twice;
__device__ unary_op d_lane = lane_scaled;  // the host may read this address and pass it on
struct Holder { unary_op f; };
struct Member { float (*f)(float); __device__ float run(float x) { return f(x); } };
__global__ void by_param(float* y, float (*op)(float)) { y[0] = op(y[0]); }
__global__ void by_alias(float* y, const unary_op op) { y[0] = op(y[0]); }
__global__ void by_local(float* y, unary_op op) { unary_op g = op; op_ref r = *op; y[0] = g(y[0]) + r(y[1]); }
__global__ void by_field(float* y, Holder h) { y[0] = h.f(y[0]); }
__global__ void by_member(float* y, Member m) { y[0] = m.run(y[0]); }
__global__ void by_lambda(float* y) { auto g = [](float v) { return v + 1.f; }; y[0] = g(y[0]); }
__device__ float (*d_raw)(float) = twice;
__global__ void by_global(float* y) { y[0] = d_twice(y[0]) + d_raw(y[1]); }  // the host may set either
__global__ void z(float* p) { p[threadIdx.x] = 0.f; }
"""


@pytest.mark.parametrize("kernel", ["by_param", "by_alias", "by_local", "by_field", "by_member", "by_global"])
def test_a_call_through_a_function_pointer_the_caller_gives_is_refused_where_a_helper_reads_the_block(
        tmp_path, kernel):
    # once fused: `op(x)` with `op` a parameter read as a call of a function named op; the caller's
    # pointer may hold lane_scaled (d_lane takes its address), which would read the fused block's threadIdx
    path = tmp_path / "pointers.cu"
    path.write_text(POINTERS)
    with pytest.raises(HFuseError, match="(through a pointer.*|'d_lane' holds )'?lane_scaled"):
        fuse([KernelSpec(path, "z", 32), KernelSpec(path, kernel, 32)])


def test_a_call_through_a_pointer_fuses_where_no_code_takes_the_address_of_a_helper_that_reads_the_block(tmp_path):
    # lane_scaled reads threadIdx, but nothing takes its address: no pointer can hold it
    path = tmp_path / "pointers.cu"
    path.write_text(POINTERS.replace("__device__ unary_op d_lane = lane_scaled;", ""))
    fused = fuse([KernelSpec(path, "z", 32), KernelSpec(path, "by_global", 32)])
    assert "d_twice(y[0]) + d_raw(y[1])" in fused.source


@pytest.mark.nvcc
def test_a_kernel_given_function_pointers_keeps_the_variables_that_hold_functions(tmp_path):
    # the caller's pointer must be one of the fused module's: the host reads d_twice from it
    path = tmp_path / "pointers.cu"
    path.write_text(POINTERS.replace("x * threadIdx.x", "x * 3.f"))
    fused = fuse([KernelSpec(path, "z", 32), KernelSpec(path, "by_param", 32)])
    assert "__device__ unary_op d_twice = twice;" in fused.source
    assert "__device__ float twice(float x)" in fused.source
    _compile(fused.source, tmp_path)
    lambda_only = fuse([KernelSpec(path, "z", 32), KernelSpec(path, "by_lambda", 32)])
    assert "d_twice" not in lambda_only.source
    path.write_text(POINTERS)
    fuse([KernelSpec(path, "z", 32), KernelSpec(path, "by_lambda", 32)])  # a lambda is seen: no pointer

@pytest.mark.nvcc
def test_example_config_fuses_two_files_built_with_different_defines(tmp_path):
    from hfuse.cli import main

    config = Path(__file__).resolve().parents[2] / "examples" / "realworld_pair.yaml"
    out = tmp_path / "fused.cu"
    assert main(["fuse", "--config", str(config), "-o", str(out)]) == 0
    text = out.read_text()
    assert "BLOCK_SIZE" not in text.split("// ---- part 1")[1]  # both expansions inlined, each with its own value
    _compile(text, tmp_path)
