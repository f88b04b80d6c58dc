"""The fused file's includes (``hfuse.codegen.includes``): for every header of the table,
a tiny kernel using something from it, preceded by the planned include lines, compiles
with nvcc (``-arch=sm_90``, as the user's build) and with NVRTC (as ``hfuse tune``);
host-only headers are left out and listed, unknown ones are kept for nvcc only.

C and C++ spellings of one header (``<cstdint>``/``<stdint.h>``) share one kernel, so
the module runs 20 compiles per compiler (nvcc two at a time).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from hfuse.codegen.includes import CUB_FOR_NVRTC, IncludePlan, classify, header_name, plan_includes
from toolchain import CompileResult, compile_nvcc, compile_nvrtc, extra_include_dirs


@dataclass(frozen=True)
class Case:
    id: str
    headers: tuple[str, ...]
    body: str
    """The body of ``extern "C" __global__ void k(float* f, int* n)``."""
    prelude: str = ""
    """Device code between the includes and the kernel."""
    nvcc_flags: tuple[str, ...] = ()
    """What nvcc needs for the original too (libstdc++'s constexpr functions in device code)."""

    @property
    def include_lines(self) -> list[str]:
        return [f"#include <{h}>" for h in self.headers]

    def source(self) -> str:
        plan = plan_includes(self.include_lines)
        return "\n".join([*plan.lines, "", self.prelude, 'extern "C" __global__ void k(float* f, int* n) {',
                          self.body, "}", ""])


CASES = [
    Case("fp16_bf16", ("cuda_fp16.h", "cuda_bf16.h"),
         "__half h = __float2half(f[0]); __nv_bfloat16 b = __float2bfloat16(f[1]);\n"
         "f[2] = __half2float(__hadd(h, h)) + __bfloat162float(__hmul(b, b));"),
    Case("cooperative_groups", ("cooperative_groups.h", "cooperative_groups/reduce.h"),
         "cg::thread_block b = cg::this_thread_block(); b.sync();\n"
         "auto t = cg::tiled_partition<32>(b);\n"
         "f[b.thread_rank()] = cg::reduce(t, f[b.thread_rank()], cg::plus<float>()) + t.shfl_down(f[0], 1);",
         prelude="namespace cg = cooperative_groups;"),
    Case("cub_all", ("cub/cub.cuh",),
         "typedef cub::BlockReduce<float, 128> Reduce; typedef cub::BlockScan<int, 128> Scan;\n"
         "__shared__ typename Reduce::TempStorage rt; __shared__ typename Scan::TempStorage st;\n"
         "float s = Reduce(rt).Sum(f[threadIdx.x]); __syncthreads();\n"
         "int x; Scan(st).ExclusiveSum(n[threadIdx.x], x);\n"
         "__shared__ typename cub::WarpReduce<int>::TempStorage wt[4];\n"
         "n[threadIdx.x] = x + cub::WarpReduce<int>(wt[threadIdx.x / 32]).Sum(x); if (threadIdx.x == 0) f[0] = s;"),
    Case("cub_warp_block", ("cub/warp/warp_reduce.cuh", "cub/block/block_reduce.cuh"),
         "__shared__ typename cub::WarpReduce<int>::TempStorage wt[4];\n"
         "__shared__ typename cub::BlockReduce<float, 128>::TempStorage bt;\n"
         "n[threadIdx.x] = cub::WarpReduce<int>(wt[threadIdx.x / 32]).Sum(n[threadIdx.x]);\n"
         "float s = cub::BlockReduce<float, 128>(bt).Sum(f[threadIdx.x]); if (threadIdx.x == 0) f[0] = s;"),
    Case("mma", ("mma.h", "cuda_fp16.h"),
         "using namespace nvcuda;\n"
         "wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;\n"
         "wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;\n"
         "wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;\n"
         "wmma::fill_fragment(c, 0.0f); wmma::load_matrix_sync(a, (const half*)n, 16);\n"
         "wmma::load_matrix_sync(b, (const half*)n, 16); wmma::mma_sync(c, a, b, c);\n"
         "wmma::store_matrix_sync(f, c, 16, wmma::mem_row_major);"),
    Case("curand", ("curand_kernel.h",),
         "curandStatePhilox4_32_10_t s; curand_init(1234ULL, threadIdx.x, 0, &s);\n"
         "f[threadIdx.x] = curand_uniform(&s) + curand_normal(&s); n[threadIdx.x] = (int)curand(&s);"),
    Case("math_constants", ("math_constants.h",),
         "f[0] = CUDART_PI_F * f[1] + CUDART_SQRT_HALF_F; f[2] = CUDART_INF_F; f[3] = (float)CUDART_PI;"),
    Case("stdint", ("cstdint", "stdint.h"),
         "uint32_t a = (uint32_t)n[0]; std::uint64_t b = a; int64_t c = INT64_MAX;\n"
         "std::int8_t d = INT8_MIN; n[1] = (int)(a + b + (c & 1) + d + (UINT32_MAX & 1));"),
    Case("limits_macros", ("climits", "limits.h"),
         "n[0] = INT_MAX; n[1] = INT_MIN + CHAR_BIT; n[2] = (int)(UINT_MAX & 1u) + SHRT_MAX;"),
    Case("float_macros", ("cfloat", "float.h"),
         "f[0] = FLT_MAX; f[1] = FLT_MIN + FLT_EPSILON; f[2] = (float)(DBL_MAX > 1.0) + (float)DBL_EPSILON;\n"
         "n[0] = FLT_DIG + DBL_MANT_DIG + FLT_MAX_EXP;"),
    Case("math", ("cmath", "math.h"),
         "float x = f[threadIdx.x];\n"
         "f[0] = sqrtf(x) + std::sqrt(x) + std::abs(x) + fabsf(x) + std::fmax(x, 1.0f) + std::pow(x, 2.0f);\n"
         "f[1] = expf(x) + std::exp(x) + std::floor(x) + (float)M_PI + HUGE_VALF + INFINITY + NAN;\n"
         "n[0] = std::isnan(x) + isinf(x) + std::abs(-3) + (int)ceil(1.5); f[2] = with_std::f(x);",
         # ``using namespace std;`` must not make the built-in math ambiguous under NVRTC
         prelude="namespace with_std { using namespace std;\n"
                 "__device__ float f(float x) { return sqrt(x) + pow(x, 2.0f) + abs(-1) + floor(x) + fabs(x); } }"),
    Case("assert", ("cassert", "assert.h"),
         "assert(n[0] >= 0); f[0] = 1.0f;"),
    Case("type_traits", ("type_traits",),
         "f[0] = twice(f[1]); n[0] = twice(n[1]) + std::is_same<int, int>::value + std::is_integral_v<short>;\n"
         "using U = std::conditional_t<sizeof(long) == 8, long, int>; n[1] = (int)sizeof(U) "
         "+ (int)std::is_same_v<std::remove_cv_t<const int>, int> + std::integral_constant<int, 2>::value;",
         prelude="template <typename T> __device__ std::enable_if_t<std::is_floating_point<T>::value, T> twice(T x) "
                 "{ return x + x; }\n"
                 "template <typename T> __device__ typename std::enable_if<std::is_integral<T>::value, T>::type "
                 "twice(T x) { return 2 * x; }"),
    Case("numeric_limits", ("limits",),
         "f[0] = std::numeric_limits<float>::max() + std::numeric_limits<float>::lowest();\n"
         "f[1] = std::numeric_limits<float>::infinity(); n[0] = std::numeric_limits<int>::min() + "
         "std::numeric_limits<unsigned char>::digits;", nvcc_flags=("--expt-relaxed-constexpr",)),
    Case("utility", ("utility",),
         "int a = n[0], b = n[1]; auto p = std::make_pair(a, std::move(b));\n"
         "std::pair<int, float> q(p.first, f[0]); n[2] = p.second + q.first + pass(a); f[1] = q.second;",
         prelude="template <typename T> __device__ T pass(T&& x) { return std::forward<T>(x); }",
         nvcc_flags=("--expt-relaxed-constexpr",)),
    Case("containers_algorithm", ("array", "tuple", "functional", "algorithm"),
         "std::array<float, 2> a = {f[0], f[1]}; auto t = std::make_tuple(1, 2.f);\n"
         "int x = std::get<0>(t); f[2] = std::max(a[0], std::min(f[3], a[1])) + std::get<1>(t)\n"
         "    + std::clamp(f[4], 0.f, 1.f) + std::plus<float>()(f[5], 1.f) + with_std_min::f(f[6], f[7]);\n"
         "n[0] = std::max(n[1], 3) + x + (int)a.size() + with_std_min::g(n[2], n[3]);",
         # unqualified min/max under ``using namespace std;``: NVRTC's built-ins, not ambiguous
         prelude="namespace with_std_min { using namespace std;\n"
                 "__device__ float f(float a, float b) { return max(a, b) + min(a, b); }\n"
                 "__device__ int g(int a, int b) { return max(a, b) - min(a, b); } }",
         nvcc_flags=("--expt-relaxed-constexpr", "-std=c++17")),
    Case("printf", ("cstdio", "stdio.h"),
         'if (threadIdx.x == 0) printf("block %d: %f\\n", blockIdx.x, f[0]);'),
    Case("stddef_stdlib", ("cstddef", "stddef.h", "cstdlib", "stdlib.h"),
         "std::size_t s = sizeof(float); size_t t = s; std::ptrdiff_t d = &f[2] - &f[0];\n"
         "struct P { int a; float b; }; n[0] = (int)(t + d + offsetof(P, b)) + std::abs(-3) + abs(n[1]);\n"
         "int* heap = (int*)malloc(4 * sizeof(int)); heap[0] = 1; n[2] = heap[0]; free(heap);"),
    Case("toolkit_misc", ("cuda_fp8.h", "vector_types.h", "vector_functions.h", "device_launch_parameters.h",
                          "cuda_pipeline.h", "cuda/atomic", "nv/target", "cstring", "ctime"),
         "float4 v = make_float4(f[0], f[1], f[2], f[3]); __nv_fp8_e4m3 e(v.x); f[4] = float(e);\n"
         "cuda::atomic_ref<int, cuda::thread_scope_device> r(n[0]); r.fetch_add(1);\n"
         "memcpy(&f[5], &f[6], sizeof(float)); memset(&n[1], 0, sizeof(int)); n[2] = (int)clock();\n"
         "NV_IF_TARGET(NV_PROVIDES_SM_90, (n[3] = 90;), (n[3] = 0;))"),
    Case("toolkit_types", ("cuComplex.h", "cuda_fp4.h", "cuda_fp6.h", "cuda_pipeline_primitives.h",
                           "cuda_awbarrier_primitives.h"),
         # types NVRTC does not declare itself: a kernel using them could not be tuned
         "cuFloatComplex z = cuCmulf(make_cuFloatComplex(f[0], f[1]), make_cuFloatComplex(f[2], 0.f));\n"
         "f[3] = cuCabsf(z) + (float)cuCreal(cuCadd(make_cuDoubleComplex(f[4], 0.0), make_cuDoubleComplex(1.0, 0.0)));\n"
         "__nv_fp4_e2m1 q(f[5]); __nv_fp6_e3m2 r(f[6]); f[7] = float(q) + float(r);\n"
         "__shared__ float stage[32]; __pipeline_memcpy_async(&stage[threadIdx.x % 32], &f[threadIdx.x % 32], 4);\n"
         "__pipeline_commit(); __pipeline_wait_prior(0); f[8] = stage[0];"),
    Case("unknown", ("thrust/functional.h",),
         "n[0] = max(n[1], n[2]) + min(1, 2);"),
]
# Every header above in one file, each kernel body in its own block: the stand-ins and
# using-declarations must not clash with each other or with cub and cooperative groups.
CASES.append(Case(
    "everything", tuple(dict.fromkeys(h for c in CASES for h in c.headers)),
    "\n".join("{ " + c.body + " }" for c in CASES), prelude="\n".join(c.prelude for c in CASES if c.prelude),
    nvcc_flags=("--expt-relaxed-constexpr",)))
CASE_IDS = [c.id for c in CASES]


@pytest.fixture(scope="module")
def nvcc_results(tmp_path_factory) -> dict[str, CompileResult]:
    workdir = tmp_path_factory.mktemp("includes")
    flags = [f"-I{d}" for d in extra_include_dirs()]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda c: compile_nvcc(c.source(), flags=[*flags, *c.nvcc_flags], workdir=workdir,
                                                  filename=f"{c.id}.cu", check=False), CASES)
        return dict(zip(CASE_IDS, results))


@pytest.fixture(scope="module")
def nvrtc_results() -> dict[str, CompileResult]:
    with ThreadPoolExecutor(max_workers=2) as pool:  # NVRTC releases the GIL
        return dict(zip(CASE_IDS, pool.map(lambda c: compile_nvrtc(c.source(), ["k"], check=False), CASES)))


@pytest.mark.nvcc
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_header_compiles_with_nvcc(nvcc_results, case):
    result = nvcc_results[case.id].check()
    assert result.kernel("k").registers > 0


@pytest.mark.nvrtc
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_header_compiles_with_nvrtc(nvrtc_results, case):
    result = nvrtc_results[case.id].check()
    assert result.lowered == {"k": "k"} and result.cubin[:4] == b"\x7fELF"


# --------------------------------------------------------------------------- the plan itself
HOST_ONLY = ["iostream", "chrono", "vector", "string", "cuda_runtime.h", "cuda.h", "helper_cuda.h",
             "helper_functions.h", "cuda_runtime_api.h", "curand.h", "cublas_v2.h", "sys/time.h", "unistd.h",
             "nvtx3/nvToolsExt.h", "fstream", "map", "thread"]


@pytest.mark.parametrize("header, kind", [
    *[(h, "keep") for h in ("cuda_fp16.h", "cuda_bf16.h", "cooperative_groups.h", "cooperative_groups/reduce.h",
                            "cub/warp/warp_reduce.cuh", "cub/block/block_reduce.cuh", "mma.h", "curand_kernel.h",
                            "math_constants.h", "cuda/std/cstdint", "sm_61_intrinsics.h", "cub/util_type.cuh")],
    ("cub/cub.cuh", "stand_in"), ("cub/util_allocator.cuh", "unknown"), ("cub/device/device_reduce.cuh", "unknown"),
    *[(h, "stand_in") for h in ("cstdint", "stdint.h", "climits", "limits.h", "cfloat", "float.h", "cmath", "math.h",
                               "cassert", "assert.h", "type_traits", "limits", "utility", "cstddef", "cstdlib", "array",
                               "tuple", "functional", "algorithm")],
    *[(h, "nvcc_only") for h in ("cstdio", "stdio.h", "cstring", "ctime")],
    *[(h, "drop") for h in HOST_ONLY],
    *[(h, "unknown") for h in ("numeric", "thrust/device_vector.h", "Eigen/Core", "omp_stuff.h")],
])
def test_classification(header, kind):
    assert classify(header) == kind


def test_header_name():
    assert header_name("#include <stdio.h>") == "stdio.h"
    assert header_name('  #  include "cuda_runtime.h"  // for cudaMalloc') == "cuda_runtime.h"
    assert header_name("#include< cub/cub.cuh >") == "cub/cub.cuh"
    assert header_name("#include HEADER") is None


def test_host_headers_are_dropped_and_listed():
    lines = [f"#include <{h}>" for h in HOST_ONLY]
    plan = plan_includes(lines + ['#include "helper_cuda.h"'])
    assert plan == IncludePlan((), tuple(lines), ())


def test_half_types_reached_through_a_dropped_library_header_are_included_in_its_stead():
    # once: __nv_bfloat16 came by way of cublas_v2.h only, and the fused file did not know it
    plan = plan_includes(["#include <cublas_v2.h>", "#include <cstdint>"], uses=frozenset({"__nv_bfloat16", "y"}))
    assert plan.dropped == ("#include <cublas_v2.h>",)
    assert plan.lines[:2] == ("#include <cuda_fp16.h>", "#include <cuda_bf16.h>")
    # kept once where the file includes them itself, and not at all where nothing uses them
    plan = plan_includes(["#include <cuda_bf16.h>", "#include <nccl.h>"], uses=frozenset({"__half"}))
    assert plan.lines == ("#include <cuda_bf16.h>", "#include <cuda_fp16.h>")
    assert plan_includes(["#include <cublas_v2.h>"], uses=frozenset({"float"})).lines == ()


def test_unknown_headers_are_kept_for_nvcc_only():
    plan = plan_includes(["#include <thrust/device_vector.h>", "#include <cuda_fp16.h>", "#include <omp_stuff.h>"])
    assert plan.unknown == ("#include <thrust/device_vector.h>", "#include <omp_stuff.h>")
    assert plan.lines[0].startswith("#ifndef __CUDACC_RTC__") and plan.lines[1:3] == (
        "#include <thrust/device_vector.h>", "#endif")
    assert plan.lines[3] == "#include <cuda_fp16.h>"
    assert plan.lines[4].startswith("#ifndef __CUDACC_RTC__") and plan.lines[5:] == ("#include <omp_stuff.h>", "#endif")


def test_std_headers_swap_under_nvrtc_keep_order_and_dedupe():
    plan = plan_includes(["#include <iostream>", "#include <cstdint>", "#include<cstdint>", "#include <cuda_fp16.h>",
                          "#include <cmath>", "#include <cfloat>", "#include <cstdint>"])
    assert plan.dropped == ("#include <iostream>",) and plan.unknown == ()
    text = "\n".join(plan.lines)
    first, second = text.split("#include <cuda_fp16.h>")
    assert first.startswith("#ifdef __CUDACC_RTC__") and "#include <cuda/std/cstdint>" in first
    assert first.rstrip().endswith("#else\n#include <cstdint>\n#endif")
    assert "#include <cuda/std/cmath>" in second and "#include <cuda/std/cfloat>" in second
    assert second.rstrip().endswith("#else\n#include <cmath>\n#include <cfloat>\n#endif")
    # std's using-declarations come once, however many blocks need them
    assert text.count("using ::cuda::std::size_t;") == 1 and text.count("using ::sqrt;") == 1
    assert text.count("#define FLT_MAX ") == 1 and text.count("#define M_PI ") == 1
    assert "using namespace" not in text  # see the module docstring: it makes sqrt(x) ambiguous


def test_cub_umbrella_under_nvrtc():
    plan = plan_includes(["#include <cub/cub.cuh>"])
    assert plan.lines[0].startswith("#ifdef __CUDACC_RTC__")
    assert plan.lines[1:-3] == tuple(f"#include <{h}>" for h in CUB_FOR_NVRTC)
    assert plan.lines[-3:] == ("#else", "#include <cub/cub.cuh>", "#endif")
    assert not any("cub/device/" in h or "util_allocator" in h for h in CUB_FOR_NVRTC)


def test_every_case_header_is_planned_as_tested():
    """The compiled cases cover every header kind that reaches the fused file."""
    kinds = {classify(h) for c in CASES for h in c.headers}
    assert kinds == {"keep", "stand_in", "nvcc_only", "unknown"}


def test_fixed_width_integers_a_left_out_header_brought_are_given_to_nvrtc():
    # int64_t came with torch/extension.h under nvcc; NVRTC reads no such header
    plan = plan_includes(["#include <torch/extension.h>"], uses=frozenset({"int64_t"}))
    text = "\n".join(plan.lines)
    assert "#include <cuda/std/cstdint>" in text and text.index("#ifdef __CUDACC_RTC__") < text.index("cuda/std/cstdint")
    assert "cuda/std/cstdint" not in "\n".join(plan_includes(["#include <cstdint>"], uses=frozenset({"int64_t"})).lines
                                               ).split("#else")[1]  # a kept <cstdint> is enough: no second one
    assert "cstdint" not in "\n".join(plan_includes(["#include <cuda_fp16.h>"], uses=frozenset({"x"})).lines)


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_fixed_width_integers_a_dropped_host_header_brought_are_included_in_its_stead(tmp_path):
    # once: uint32_t of an asm-heavy kernel came by way of cuda.h only, and nvcc met it undeclared
    plan = plan_includes(["#include <cuda.h>", "#include <cuda_fp16.h>"], uses=frozenset({"uint32_t", "k"}))
    assert plan.dropped == ("#include <cuda.h>",)
    source = "\n".join(plan.lines) + "\nextern \"C\" __global__ void k(uint32_t* p) { *p = 1u; }\n"
    assert compile_nvcc(source, workdir=tmp_path).ok
    assert compile_nvrtc(source, ["k"]).ok
    # none where a kept line declares them, or where nothing was dropped or nothing uses them
    assert "#include <cstdint>" not in plan_includes(["#include <cuda.h>", "#include <stdint.h>"],
                                                     uses=frozenset({"uint32_t"})).lines
    assert "#include <cstdint>" not in plan_includes(["#include <cuda.h>"], uses=frozenset({"float"})).lines
    assert "#include <cstdint>" not in plan_includes(["#include <cuda_fp16.h>"], uses=frozenset({"uint32_t"})).lines


def test_value_macros_of_an_unknown_header_are_defined_for_nvrtc():
    plan = plan_includes(["#include <fakelib/macros.h>"], value_macros=(("LIB_WIDTH", "32"), ("LIB_DIV(a,b)", "((a)/(b))")))
    text = "\n".join(plan.lines)
    assert "#ifndef LIB_WIDTH\n#define LIB_WIDTH 32\n#endif" in text and "#define LIB_DIV(a,b) ((a)/(b))" in text
    assert text.index("#ifdef __CUDACC_RTC__  // values") > text.index("#include <fakelib/macros.h>")
    # a header every compiler reads needs none
    assert plan_includes(["#include <cuda_fp16.h>"], value_macros=(("LIB_WIDTH", "32"),)).lines == ("#include <cuda_fp16.h>",)


def test_the_driver_header_stays_where_device_code_takes_a_tensor_map():
    lines = ["#include <cuda.h>", "#include <cuda/barrier>"]
    assert plan_includes(lines).dropped == ("#include <cuda.h>",)
    plan = plan_includes(lines, uses=frozenset({"CUtensorMap", "tmap"}))
    assert plan.dropped == () and "#include <cuda.h>" in plan.lines
    text = "\n".join(plan.lines)
    assert text.index("#ifndef __CUDACC_RTC__") < text.index("#include <cuda.h>")  # nvcc reads the driver's
    assert "typedef struct CUtensorMap_st { alignas(128) unsigned long long opaque[16]; } CUtensorMap;" in text


def test_an_installed_librarys_header_whose_device_code_is_used_is_kept_for_nvrtc_too(tmp_path):
    # once "unknown to hfuse: nvcc only": NVRTC then met blocklib::block_sum undeclared, and
    # hfuse tune could not compile the kernel at all
    from hfuse.codegen.includes import library_device_includes, plan_includes

    library = tmp_path / "include"
    (library / "blocklib" / "detail").mkdir(parents=True)
    (library / "blocklib" / "block_reduce.cuh").write_text('#include "detail/impl.cuh"\n')
    (library / "blocklib" / "detail" / "impl.cuh").write_text("\n")
    (library / "hostlib").mkdir()
    (library / "hostlib" / "log.h").write_text("\n")
    lines = ["#include <blocklib/block_reduce.cuh>", "#include <hostlib/log.h>", "#include <vector>",
             "#include <cuda_fp16.h>"]
    used = frozenset({str((library / "blocklib" / "detail" / "impl.cuh").resolve())})
    # (the library is the header's own folder, whatever it includes from there; another's host header
    # stays nvcc's; the C++ library's and the toolkit's are classified by name)
    assert library_device_includes(lines, [library], used) == {"#include <blocklib/block_reduce.cuh>"}
    (library / "flat.cuh").write_text("\n")
    flat = frozenset({str((library / "flat.cuh").resolve())})
    assert library_device_includes(["#include <flat.cuh>"], [library], flat) == {"#include <flat.cuh>"}
    assert library_device_includes(lines, [library], frozenset()) == frozenset()  # no device use: nvcc only
    plan = plan_includes(lines[:2], nvrtc_too=frozenset(lines[:1]))
    assert plan.lines[0] == "#include <blocklib/block_reduce.cuh>"  # for both compilers
    assert "#ifndef __CUDACC_RTC__  // unknown to hfuse: nvcc only" in plan.lines
    assert plan.lines[plan.lines.index("#ifndef __CUDACC_RTC__  // unknown to hfuse: nvcc only") + 1] == \
        "#include <hostlib/log.h>"


def test_a_toolkit_header_hfuse_does_not_know_whose_code_the_kernels_use_is_kept_for_nvrtc_too():
    # once hidden from NVRTC (thrust::complex undeclared); kept, hfuse tune sees it and compiles
    # with nvcc, since <thrust/complex.h> includes <cmath> (runtime.compile.toolchain_for)
    from hfuse.codegen.includes import library_device_includes
    from hfuse.toolkit import cuda_include_dirs

    header = next((Path(d) / "thrust" / "complex.h" for d in cuda_include_dirs(import_cupy=False)
                   if (Path(d) / "thrust" / "complex.h").is_file()), None)
    if header is None:
        pytest.skip("the toolkit has no thrust/complex.h")
    used = frozenset({str(header.resolve())})
    lines = ["#include <thrust/complex.h>", "#include <thrust/sort.h>", "#include <curand.h>"]
    # (the library is the header's folder, thrust/, as for an installed library's)
    assert library_device_includes(lines, [], used) == {"#include <thrust/complex.h>", "#include <thrust/sort.h>"}
    assert library_device_includes(lines, [], frozenset()) == frozenset()


IMPLICIT_STD = ("f[0] = std::exp(f[1]) + std::sqrt(std::abs(f[2])) + std::max(f[3], 0.f) + std::min(f[4], 1.f)\n"
                "    + std::numeric_limits<float>::epsilon() + (std::isnan(f[5]) ? 1.f : 0.f);\n"
                "n[0] = std::is_same_v<int, int> + std::pair<int, int>(n[1], 2).first + (int)sizeof(std::size_t)\n"
                "    + (INT_MAX > n[2]) + CHAR_BIT + (int)(UINT_MAX >> 31) + (int)offsetof(float2, y);\n"
                "ssize_t s = n[3]; u_int32_t u = 2u; f[6] = std::fmaxf(f[7], 0.f) + s + u;")


@pytest.mark.nvrtc
def test_std_names_nvcc_gives_without_an_include_are_given_to_nvrtc(tmp_path):
    # nvcc's implicit cuda_runtime.h brings the host's <cmath> and with it std::exp, std::max,
    # std::numeric_limits, std::is_same, std::pair, limits.h's INT_MAX, stddef.h's offsetof
    # and sys/types.h's ssize_t: a file may use them with no #include at all. NVRTC has none of them; hfuse tune could not compile such a kernel.
    uses = frozenset({"std::exp", "std::sqrt", "std::abs", "std::max", "std::min",
                      "std::numeric_limits<float>::epsilon", "std::isnan", "std::is_same_v", "std::pair", "std::size_t",
                      "INT_MAX", "CHAR_BIT", "UINT_MAX", "offsetof", "ssize_t", "u_int32_t", "std::fmaxf"})
    plan = plan_includes([], uses=uses)
    source = "\n".join([*plan.lines, 'extern "C" __global__ void k(float* f, int* n) {', IMPLICIT_STD, "}", ""])
    assert compile_nvrtc(source, ["k"], check=False).ok
    assert compile_nvcc(source, flags=["--expt-relaxed-constexpr", "-std=c++17"], workdir=tmp_path, check=False).ok
    text = "\n".join(plan.lines)
    assert text.startswith("#ifdef __CUDACC_RTC__") and text.count("#include <cuda/std/cmath>") == 1
    # a header the file includes already gave its names: not again
    kept = "\n".join(plan_includes(["#include <cmath>"], uses=frozenset({"std::exp"})).lines)
    assert kept.count("#include <cuda/std/cmath>") == 1 and kept.count("using ::exp;") == 1
    assert plan_includes([], uses=frozenset({"exp", "stdio"})).lines == ()  # unqualified: NVRTC's built-ins
    limits = "\n".join(plan_includes(["#include <climits>"], uses=frozenset({"INT_MAX"})).lines)
    assert limits.count("#include <cuda/std/climits>") == 1


@pytest.mark.nvrtc
def test_float_h_macros_a_left_out_host_header_brought_are_given_to_nvrtc():
    # once: mmcv's focal loss uses FLT_MIN, which PyTorch's headers bring (nvcc has no float.h
    # of its own); NVRTC leaves those headers out, so hfuse tune could not compile the kernel
    plan = plan_includes([], uses=frozenset({"FLT_MIN", "DBL_EPSILON"}))
    source = "\n".join([*plan.lines, 'extern "C" __global__ void k(float* f, double* d) {',
                        "f[0] = fmaxf(f[1], FLT_MIN); d[0] = DBL_EPSILON;", "}", ""])
    assert compile_nvrtc(source, ["k"], check=False).ok
    text = "\n".join(plan.lines)
    assert text.startswith("#ifdef __CUDACC_RTC__") and text.count("#define FLT_MIN ") == 1
    # the file's own <cfloat> gave them already: not twice
    kept = "\n".join(plan_includes(["#include <cfloat>"], uses=frozenset({"FLT_MIN"})).lines)
    assert kept.count("#define FLT_MIN ") == 1


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_the_function_object_bases_libstdcxx_keeps_are_given_to_nvrtc(tmp_path):
    # once: ColossalAI's 'struct CastFunctor : public std::unary_function<From, To>' (and its
    # binary functors' std::binary_function), gone from C++17 but kept by libstdc++'s
    # <functional>, compiled with nvcc only
    kernel = ["template <typename F, typename T> struct Cast : public std::unary_function<F, T> {",
              "  __device__ T operator()(F v) const { return static_cast<T>(v); } };",
              "template <typename T> struct Add : public std::binary_function<T, T, T> {",
              "  __device__ T operator()(T a, T b) const { return a + b; } };",
              'extern "C" __global__ void k(float* f, const int* i) {',
              "  Cast<int, float>::result_type v = Cast<int, float>()(i[0]); f[0] = Add<float>()(v, f[1]); }", ""]
    plan = plan_includes(["#include <functional>"], uses=frozenset({"std::unary_function", "std::binary_function"}))
    source = "\n".join([*plan.lines, *kernel])
    assert compile_nvrtc(source, ["k"], check=False).ok
    assert compile_nvcc(source, workdir=tmp_path, check=False).ok  # (nvcc: libstdc++'s own, the stand-in unseen)
    assert plan_includes(["#include <functional>"], uses=frozenset({"std::plus"})).lines == \
        plan_includes(["#include <functional>"], uses=frozenset({"std::plus", "unary_function"})).lines


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_std_memset_and_memcpy_are_given_to_nvrtc(tmp_path):
    # once: auto-gptq's std::memset(&res2, 0, sizeof(half2)) (<cstring> by way of torch's headers)
    # compiled with nvcc only: NVRTC declares ::memset and ::memcpy, not std's
    sources = []
    for kept in (["#include <cstring>"], ["#include <torch/extension.h>"]):
        plan = plan_includes(kept, uses=frozenset({"std::memset", "std::memcpy"}))
        sources.append("\n".join([*plan.lines, 'extern "C" __global__ void k(float* f) {',
                                  "  float z[2]; std::memset(z, 0, sizeof z); std::memcpy(f, z, sizeof z);", "}", ""]))
        assert compile_nvrtc(sources[-1], ["k"], check=False).ok
    assert compile_nvcc(sources[0], workdir=tmp_path, check=False).ok  # (nvcc: the <cstring> kept)
