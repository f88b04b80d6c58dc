"""Preprocessing as nvcc's device pass: conditionals, user headers, kept includes, origins.

Each test is a small file written the way public CUDA suites write them, preprocessed
with the options nvcc would be given; it asserts what the compiler would see and where
each line came from.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.errors import HFuseError
from hfuse.frontend.options import CompileOptions
from hfuse.frontend.comments import restore_line_comments
from hfuse.frontend.preprocess import PreprocessedSource, kept_header_dirs, library_header_dirs, preprocess
from hfuse.toolkit import pytorch_include_dirs


def write(root: Path, files: dict[str, str]) -> Path:
    """Writes ``files`` under ``root``; returns the first one (the source)."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / next(iter(files))


def run(path: Path, options: CompileOptions = CompileOptions()) -> PreprocessedSource:
    return preprocess(path.read_text(), path, options)


def line_of(pre: PreprocessedSource, needle: str) -> int:
    """1-based line of ``pre.text`` holding ``needle`` (exactly one)."""
    hits = [i for i, line in enumerate(pre.text.split("\n"), start=1) if needle in line]
    assert len(hits) == 1, (needle, hits, pre.text)
    return hits[0]


# -- macros and line numbers ------------------------------------------------------------

KERNEL = """#include <cuda_runtime.h>
#define GRID_STRIDE(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
#define SQ(x) ((x) * (x))
__global__ void k(float* a, int n) {
#pragma unroll 4
  GRID_STRIDE(i, n) { a[i] = SQ(a[i]); }
}
"""


def test_macros_in_kernel_bodies_are_expanded_and_lines_keep_their_numbers():
    pre = preprocess(KERNEL, "k.cu")
    lines = pre.text.split("\n")
    assert lines[3].startswith("__global__ void k(")  # line 4 of the file is line 4 of the text
    assert lines[5].lstrip().startswith("for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n);")
    assert "((a[i]) * (a[i]))" in lines[5]
    assert "GRID_STRIDE" not in pre.text and "SQ(" not in pre.text and "#define" not in pre.text
    assert pre.origin(6) == (Path("k.cu"), 6)


def test_pragmas_and_toolkit_includes_pass_through():
    pre = preprocess(KERNEL, "k.cu")
    assert "#pragma unroll 4" in pre.text
    assert pre.text.split("\n")[0] == "#include <cuda_runtime.h>"
    assert pre.kept_includes == ("#include <cuda_runtime.h>",) and pre.headers == ()


def test_the_kept_preamble_holds_the_users_macros_each_kept_header_is_read_with(tmp_path):
    # CUB_WRAPPED_NAMESPACE moves CUB into mylib::cub: a compiler reading the kept headers
    # apart from the file (Clang's precompiled header) must read them with it
    source = write(tmp_path, {"k.cu": """#ifndef K_CU_
#define K_CU_
#include "config.h"
#include <cuda_runtime.h>
#undef CUB_WRAPPED_NAMESPACE
#define CUB_WRAPPED_NAMESPACE mylib
#define SQ(x) ((x) * (x))
#include <cub/cub.cuh>
#undef MY_NDEBUG
#include <cassert>
__global__ void k(float* a) { a[0] = SQ(a[0]); }
#endif
""", "config.h": "#pragma once\n#define MY_NDEBUG 1\n"})
    pre = run(source)
    assert pre.kept_includes == ("#include <cuda_runtime.h>", "#include <cub/cub.cuh>", "#include <cassert>")
    # include guards aside; a change before each header, in order
    assert pre.kept_preamble == ("#define MY_NDEBUG 1", "#include <cuda_runtime.h>",
                                 "#define CUB_WRAPPED_NAMESPACE mylib", "#define SQ(x) ((x) * (x))",
                                 "#include <cub/cub.cuh>", "#undef MY_NDEBUG", "#include <cassert>")


# -- conditionals -----------------------------------------------------------------------

def test_an_include_guarded_file_is_seen_whole(tmp_path):
    """Issue 1: the guard's macro is unknown at the top, so the whole file is taken."""
    src = write(tmp_path, {"stencil.cu": "#ifndef STENCIL_CU\n#define STENCIL_CU\n"
                                         "__global__ void stencil(float* a) { a[0] = 1.f; }\n#endif\n"})
    pre = run(src)
    assert line_of(pre, "__global__ void stencil") == 3
    assert "#ifndef" not in pre.text and "#endif" not in pre.text


IFDEF_KERNEL = """#ifdef USE_K
__global__ void k(float* a) { a[0] = K_SCALE; }
#else
void host_only() {}
#endif
"""


def test_a_kernel_under_ifdef_needs_its_macro_as_with_nvcc():
    without = preprocess(IFDEF_KERNEL, "k.cu")
    assert "__global__" not in without.text and "host_only" in without.text
    with_d = preprocess(IFDEF_KERNEL, "k.cu", CompileOptions(defines=["USE_K", "K_SCALE=2.5f"]))
    assert "a[0] = 2.5f;" in with_d.text and "host_only" not in with_d.text
    assert with_d.origin(line_of(with_d, "__global__")) == (Path("k.cu"), 2)


def test_undefine_comes_after_every_define():
    pre = preprocess(IFDEF_KERNEL, "k.cu", CompileOptions(defines=["USE_K"], undefines=["USE_K"]))
    assert "__global__" not in pre.text and "host_only" in pre.text


def test_unknown_macros_in_if_are_zero_and_undefined():
    text = "#if UNKNOWN_FLAG || defined(UNKNOWN_TOO)\nint yes;\n#else\nint no;\n#endif\n"
    pre = preprocess(text, "k.cu")
    assert "int no;" in pre.text and "int yes;" not in pre.text


ARCH_KERNEL = """__global__ void k(float* a) {
#if __CUDA_ARCH__ >= 800
  a[0] = 800;
#else
  a[0] = 0;
#endif
}
"""


@pytest.mark.parametrize("arch, expected", [("sm_90", "a[0] = 800;"), ("sm_80", "a[0] = 800;"), ("sm_70", "a[0] = 0;")])
def test_cuda_arch_is_the_device_pass_of_the_target(arch, expected):
    pre = preprocess(ARCH_KERNEL, "k.cu", CompileOptions(arch=arch))
    assert expected in pre.text and "#if" not in pre.text


@pytest.mark.parametrize("arch, defined", [("sm_90", ()), ("sm_90a", ("FEAT", "SPECIFIC", "FAMILY")),
                                            ("sm_100f", ("FAMILY",))])
def test_an_arch_specific_target_defines_its_feature_macros_as_nvcc_does(arch, defined):
    # once: #ifdef __CUDA_ARCH_FEAT_SM90_ALL went the sm_90 way for -arch sm_90a
    number = arch[3:].rstrip("af")
    text = (f"#ifdef __CUDA_ARCH_FEAT_SM{number}_ALL\nint FEAT;\n#endif\n"
            f"#if __CUDA_ARCH_SPECIFIC__ == {number}0\nint SPECIFIC;\n#endif\n"
            f"#if __CUDA_ARCH_FAMILY_SPECIFIC__ == {number}0\nint FAMILY;\n#endif\n")
    text_out = preprocess(text, "k.cu", CompileOptions(arch=arch)).text
    assert [w for w in ("FEAT", "SPECIFIC", "FAMILY") if f"int {w};" in text_out] == list(defined)


@pytest.mark.parametrize("text, depends_on", [
    ("#ifdef __CUDA_ARCH__\nint device;\n#endif\n", ()),  # the device pass, on every GPU alike
    ("#if defined(__CUDA_ARCH__) && !defined(X)\nint device;\n#endif\n", ()),
    ("// needs __CUDA_ARCH__ >= 800\nint a;\n", ()),
    ("#if __CUDA_ARCH__ >= 800\nint fast;\n#endif\n", ("__CUDA_ARCH__",)),
    ("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700\nint old;\n#endif\n", ("__CUDA_ARCH__",)),
    ("int arch = __CUDA_ARCH__;\n", ("__CUDA_ARCH__",)),  # expanded into the code
    ("#ifdef __CUDA_ARCH_FEAT_SM90_ALL\nint wgmma;\n#endif\n", ("__CUDA_ARCH_FEAT_SM90_ALL",)),
])
def test_what_the_text_decides_on_the_architecture_is_known(text, depends_on):
    assert preprocess(text, "k.cu").arch_macros == depends_on


@pytest.mark.parametrize("std, value", [("c++11", "201103L"), ("c++14", "201402L"), ("c++17", "201703L"), ("c++20", "202002L")])
def test_std_sets_cplusplus(std, value):
    text = "long v = __cplusplus;\n#if __cplusplus >= 201703L\nint modern;\n#else\nregister int old;\n#endif\n"
    pre = preprocess(text, "k.cu", CompileOptions(std=std))
    assert f"long v = {value};" in pre.text
    assert ("int modern;" in pre.text) == (std in ("c++17", "c++20"))


def test_nvcc_macros_are_predefined():
    text = "#if defined(__CUDACC__) && defined(__NVCC__) && __CUDACC_VER_MAJOR__ >= 13 && CUDART_VERSION >= 13000\nint nvcc;\n#endif\n"
    assert "int nvcc;" in preprocess(text, "k.cu").text


def test_error_stops_only_when_its_branch_is_taken():
    text = "#ifndef BLOCK\n#error define BLOCK (e.g. -DBLOCK=256)\n#endif\nint b = BLOCK;\n"
    assert "int b = 256;" in preprocess(text, "k.cu", CompileOptions(defines=["BLOCK=256"])).text
    with pytest.raises(HFuseError) as err:
        preprocess(text, "k.cu")
    assert err.value.where.file == Path("k.cu") and err.value.where.line == 2
    assert "#error define BLOCK" in str(err.value) and err.value.hint


# -- comments ---------------------------------------------------------------------------

def test_comments_never_leak_into_macros():
    """Issue 2: ``1 // comment`` as a macro body would comment out the rest of the line."""
    text = ("#define HALO 1 // halo width\n#define R 2 /* radius */\n#define ADD(a, b) ((a) + (b))\n"
            "int w = HALO + R; int x = 3;\n"
            "int y = ADD(w // the first\n, x);\n"  # a line comment inside an invocation's arguments
            "int z = 4; // code comments may stay\n")
    pre = preprocess(text, "k.cu")
    assert "int w = 1 + 2; int x = 3;" in pre.text
    y = pre.text[pre.text.index("int y"):pre.text.index("int z")]
    assert "x))" in y and "/*// the first */" in y  # a block comment now: it cannot swallow ", x)"
    assert "int z = 4;" in pre.text and "code comments may stay" in pre.text
    # the emitted file gives back a line comment that still ends its line, not the other
    restored = restore_line_comments(pre.text)
    assert "int z = 4; // code comments may stay\n" in restored and "(w /*// the first */) + (x))" in restored


# -- headers ----------------------------------------------------------------------------

UTIL = """#ifndef UTIL_CUH
#define UTIL_CUH
#define GRID_LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

__device__ inline float sq(float x) { return x * x; }
#endif
"""

USES_UTIL = """#include "util.cuh"
#include "util.cuh"
__global__ void k(float* a, int n) {
  GRID_LOOP(i, n) { a[i] = sq(a[i]); }
}
"""


def test_a_header_from_minus_I_is_inlined_with_origins_in_the_header(tmp_path):
    """Issues 3 and 4: the loop macro and the helper come from a header only -I reaches."""
    src = write(tmp_path, {"src/k.cu": USES_UTIL, "include/util.cuh": UTIL})
    header = (tmp_path / "include/util.cuh").resolve()
    with pytest.raises(HFuseError):
        run(src)  # without -I the header is nowhere
    pre = run(src, CompileOptions(include_dirs=[tmp_path / "include"]))
    helper = line_of(pre, "__device__ inline float sq")
    assert pre.origin(helper) == (header, 5)  # errors in the helper point into the header
    assert pre.origin(line_of(pre, "__global__ void k")) == (src, 3)
    assert "for (int i = blockIdx.x" in pre.text and "GRID_LOOP" not in pre.text
    assert pre.text.count("inline float sq") == 1  # the include guard holds on the second #include
    assert pre.headers == (header,)
    assert len(pre.origins) == len(pre.text.split("\n")) - 1  # one origin per line (text ends in a newline)


def test_quoted_headers_are_searched_beside_the_including_file_first(tmp_path):
    src = write(tmp_path, {"k.cu": '#include "lib/a.h"\nint k = A + B;\n',
                           "lib/a.h": '#pragma once\n#include "b.h"\n#define A 1\n',
                           "lib/b.h": "#define B 2\n", "b.h": "#define B 99\n"})
    pre = run(src)
    assert "int k = 1 + 2;" in pre.text  # lib/a.h's "b.h" is lib/b.h, not the one beside k.cu
    assert pre.headers == ((tmp_path / "lib/a.h").resolve(), (tmp_path / "lib/b.h").resolve())


def test_angle_includes_are_read_from_minus_I_only(tmp_path):
    src = write(tmp_path, {"k.cu": "#include <mylib/vec.h>\nVec v;\n", "inc/mylib/vec.h": "struct Vec { float x; };\n"})
    pre = run(src, CompileOptions(include_dirs=[tmp_path / "inc"]))
    assert "struct Vec { float x; };" in pre.text and pre.kept_includes == ()


def test_pragma_once(tmp_path):
    src = write(tmp_path, {"k.cu": '#include "h.cuh"\n#include "h.cuh"\n', "h.cuh": "#pragma once\n__device__ int one() { return 1; }\n"})
    pre = run(src)
    assert pre.text.count("int one()") == 1 and "#pragma" not in pre.text


def test_a_quoted_header_found_nowhere_names_the_include_line(tmp_path):
    src = write(tmp_path, {"k.cu": "// a kernel\n#include \"missing_helpers.h\"\n"})
    with pytest.raises(HFuseError) as err:
        run(src)
    assert err.value.where.file == src and err.value.where.line == 2
    assert "missing_helpers.h" in str(err.value) and "-I DIR" in err.value.hint


def test_toolkit_and_system_headers_stay_include_lines():
    text = ('#include <stdio.h>\n#include <cuda_fp16.h>\n#include "cuda_fp16.h"\n'
            "#include <cooperative_groups.h> // groups\n#include <stdio.h>\n__global__ void k() {}\n")
    pre = preprocess(text, "k.cu")
    assert pre.kept_includes == ("#include <stdio.h>", "#include <cuda_fp16.h>", '#include "cuda_fp16.h"',
                                 "#include <cooperative_groups.h>")
    assert pre.headers == ()  # none of them was read
    assert line_of(pre, "__global__") == 6


def test_a_toolkit_header_reached_through_minus_I_is_still_kept():
    toolkit = next(d for d in kept_header_dirs() if (d / "cuda_fp16.h").is_file())
    pre = preprocess("#include <cuda_fp16.h>\n", "k.cu", CompileOptions(include_dirs=[toolkit]))
    assert pre.kept_includes == ("#include <cuda_fp16.h>",) and pre.headers == ()


def test_has_include_uses_the_same_search(tmp_path):
    src = write(tmp_path, {"k.cu": "#if __has_include(<cuda_bf16.h>) && !__has_include(\"nope.h\") && defined(__has_include)\n"
                                   "int bf16;\n#endif\n"})
    assert "int bf16;" in run(src).text


@pytest.mark.parametrize("condition, taken", [
    ("defined(A) and not defined(B)", True),
    ("defined(B) or not defined(A)", False),
    ("(6 bitand 3) == 2 and (4 bitor 1) == 5 and (3 xor 1) == 2", True),
    ("compl 0 == -1 and 1 not_eq 2", True),
    ("A not_eq 1", False),
])
def test_operator_words_in_conditions(tmp_path, condition, taken):
    """C++'s ``and``/``or``/``not``... are operators in ``#if``, as nvcc reads them, never 0."""
    src = write(tmp_path, {"k.cu": f"#define A 1\n#if {condition}\nint taken;\n#else\nint other;\n#endif\n"})
    text = run(src).text
    assert ("int taken;" in text) == taken and ("int other;" in text) == (not taken)


def test_a_system_macro_that_is_syntax_is_expanded_and_a_value_keeps_its_spelling(tmp_path):
    write(tmp_path, {"sys/lib/m.h": "#pragma once\n#define LIB_LOOP(i, n) for (int i = threadIdx.x; i < (n); i += blockDim.x)\n"
                                    "#define LIB_WIDTH 32\n#define LIB_TID (threadIdx.x + LIB_WIDTH)\n"
                                    "#ifdef __CUDACC__\n#define LIB_HD __host__ __device__\n#else\n#define LIB_HD\n#endif\n"})
    src = write(tmp_path, {"k.cu": "#include <lib/m.h>\nLIB_HD inline int w() { return LIB_WIDTH; }\n"
                                   "__global__ void k(int* p, int n) { LIB_LOOP(j, n) p[j] = LIB_TID; }\n"})
    pre = run(src, CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "sys")]))
    assert "for (int j = threadIdx.x; j < (n); j += blockDim.x) p[j] = (threadIdx.x + LIB_WIDTH);" in pre.text
    assert "__host__ __device__ inline int w() { return LIB_WIDTH; }" in pre.text  # as nvcc's device pass reads it
    assert pre.kept_includes == ("#include <lib/m.h>",)
    assert pre.value_macros == (("LIB_WIDTH", "32"),)  # known, a value: never taken for an opaque macro


def test_a_system_macro_that_calls_a_function_is_no_plain_value(tmp_path):
    write(tmp_path, {"sys/lib/m.h": "#pragma once\n__device__ int lib_lane();\n#define LIB_LANE() lib_lane()\n"
                                    "#define LIB_DIV(a, b) (((a) + (b) - 1) / (b))\n"})
    src = write(tmp_path, {"k.cu": "#include <lib/m.h>\n__global__ void k(int* p) { p[LIB_LANE()] = LIB_DIV(7, 2); }\n"})
    pre = run(src, CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "sys")]))
    assert "p[LIB_LANE()] = LIB_DIV(7, 2);" in pre.text and pre.value_macros == (("LIB_DIV(a,b)", "(((a) + (b) - 1) / (b))"),)


def test_pre_include_is_read_first_from_the_working_folder(tmp_path, monkeypatch):
    src = write(tmp_path, {"src/k.cu": "__global__ void k(float* a) { a[0] = TILE; }\n",
                           "config/pre.h": "#define TILE 32\n__device__ int helper() { return TILE; }\n"})
    monkeypatch.chdir(tmp_path)
    pre = run(src, CompileOptions(pre_includes=["config/pre.h"]))
    assert "a[0] = 32;" in pre.text
    assert line_of(pre, "int helper()") < line_of(pre, "__global__")
    assert pre.origin(line_of(pre, "int helper()")) == ((tmp_path / "config/pre.h").resolve(), 2)
    with pytest.raises(HFuseError, match="cannot find the -include file"):
        run(src, CompileOptions(pre_includes=["nope.h"]))


# -- installed libraries' headers (-isystem, -I into an installed package, PyTorch's) --

def _library(root: Path) -> Path:
    (root / "lib" / "mylib").mkdir(parents=True)
    (root / "lib" / "mylib" / "api.h").write_text(
        "#pragma once\n#define MYLIB_VERSION 3\n__device__ inline int mylib_twice(int v) { return 2 * v; }\n")
    return root / "lib"


SOURCE_USING_LIBRARY = """#include <mylib/api.h>
#if MYLIB_VERSION >= 3
__global__ void k(int* o) { o[0] = mylib_twice(1); }
#else
#error "mylib too old"
#endif
"""


def test_an_isystem_header_is_kept_and_its_macros_decide_conditionals(tmp_path):
    library = _library(tmp_path)
    out = preprocess(SOURCE_USING_LIBRARY, tmp_path / "k.cu", CompileOptions(system_include_dirs=(library,)))
    assert out.kept_includes == ("#include <mylib/api.h>",) and out.headers == ()
    assert "__global__ void k" in out.text and "mylib_twice(int v)" not in out.text  # never copied


def test_the_same_folder_through_minus_I_is_the_users_and_read(tmp_path):
    library = _library(tmp_path)
    out = preprocess(SOURCE_USING_LIBRARY, tmp_path / "k.cu", CompileOptions(include_dirs=(library,)))
    assert out.kept_includes == () and "mylib_twice(int v)" in out.text


def test_minus_I_into_an_installed_package_is_taken_as_isystem(tmp_path):
    library = _library(tmp_path / "venv" / "site-packages" / "mylib_pkg")
    out = preprocess(SOURCE_USING_LIBRARY, tmp_path / "k.cu", CompileOptions(include_dirs=(library,)))
    assert out.kept_includes == ("#include <mylib/api.h>",) and "mylib_twice(int v)" not in out.text
    assert library.resolve() in library_header_dirs(CompileOptions(include_dirs=(library,)))


def test_isystem_travels_in_options_data_and_flags(tmp_path):
    options = CompileOptions(include_dirs=("inc",), system_include_dirs=("lib",))
    assert CompileOptions.from_dict(options.to_dict()) == options
    assert options.compiler_flags() == ["-std=c++17", "-Iinc", "-Ilib"]  # NVRTC has no -isystem
    assert options.resolved(tmp_path).system_include_dirs == (tmp_path / "lib",)
    assert CompileOptions().to_dict() == CompileOptions.from_dict(CompileOptions().to_dict()).to_dict()


@pytest.mark.skipif(not pytorch_include_dirs(), reason="torch is not installed")
def test_pytorch_headers_are_found_kept_and_read_for_macros_without_minus_I(tmp_path):
    source = ("#include <torch/extension.h>\n#if !defined(TORCH_VERSION_MAJOR) && !defined(PY_MAJOR_VERSION)\n"
              "#error no macros\n#endif\n#if PY_MAJOR_VERSION >= 3\n__global__ void k(float* o) { o[0] = 1.f; }\n"
              "#endif\n")
    out = preprocess(source, tmp_path / "ext.cu")
    assert out.kept_includes == ("#include <torch/extension.h>",) and "__global__ void k" in out.text


def test_an_unroll_count_written_with_a_macro_is_expanded():
    # once: '#pragma unroll UNROLL' passed through, and the fused file has no UNROLL
    text = "#define UNROLL 4\n#define TWICE(n) (2 * (n))\nvoid f() {\n#pragma unroll UNROLL\n  for (;;) {}\n" \
           "#pragma unroll TWICE(UNROLL)\n  for (;;) {}\n#pragma unroll\n  for (;;) {}\n}\n"
    lines = preprocess(text, "k.cu").text.splitlines()
    assert "#pragma unroll 4" in lines and "#pragma unroll (2 * (4))" in lines and "#pragma unroll" in lines


def test_the_pragma_operator_becomes_a_pragma_line_of_its_own():
    # CUTLASS_PRAGMA_UNROLL and its like: _Pragma("unroll") inside a statement did not parse
    text = ('#define LOOP _Pragma("unroll 2")\n\n'
            'void f() {\n  LOOP for (;;) {}\n  int a; LOOP\n  for (;;) {}\n}\n')
    pre = preprocess(text, "k.cu")
    lines = [line.strip() for line in pre.text.splitlines()]
    assert lines.count("#pragma unroll 2") == 2 and "for (;;) {}" in lines and "int a;" in lines
    assert "_Pragma" not in pre.text
    assert [pre.origin(i + 1)[1] for i, line in enumerate(lines) if line == "#pragma unroll 2"] == [4, 5]


def test_cuda_h_defines_cuda_version_as_the_toolkit_does():
    # once: '#if CUDA_VERSION < 12000 #error' fired after <cuda.h>, which the device pass does not read
    text = "#include <cuda.h>\n#if CUDA_VERSION < 12000\n#error too old\n#endif\nint ok;\n"
    assert "int ok;" in preprocess(text, "k.cu").text
    assert "int bad;" not in preprocess("#ifdef CUDA_VERSION\nint bad;\n#endif\n", "k.cu").text  # only with cuda.h


def test_a_computed_include_is_kept_as_the_name_its_macro_makes(tmp_path):
    # CUTLASS's `#include CUDA_STD_HEADER(cassert)`: kept verbatim, the fused file named a
    # macro it does not define before the line ("#include expects FILENAME")
    path = tmp_path / "k.cu"
    text = ("#define STD_HEADER(x) <x>\n#include STD_HEADER(cuda_fp16.h)\n#include STD_HEADER(cuda/std/limits)\n"
            "__global__ void k(__half* x) { x[threadIdx.x] = __float2half(1.f); }\n")
    pre = preprocess(text, path, CompileOptions())
    assert pre.kept_includes == ("#include <cuda_fp16.h>", "#include <cuda/std/limits>")
    assert pre.text.splitlines()[1:3] == ["#include <cuda_fp16.h>", "#include <cuda/std/limits>"]  # (at their lines)
