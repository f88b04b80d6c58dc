"""Macros a file defines above its ``#include`` lines to configure the headers hfuse keeps
(``codegen/header_configuration.py``)."""
from __future__ import annotations

import pytest

from hfuse.api import device_source, fuse, prepare
from hfuse.errors import HFuseError
from hfuse.spec import KernelSpec

from toolchain import compile_nvcc

CHECKED = """#ifndef _CHECKED_CU_
#define _CHECKED_CU_
#define NDEBUG
#define BLOCK 128
#include <cassert>
#include <cuda_fp16.h>
#define _AFTER_THE_INCLUDES 1
__global__ void checked(float* o, const float* x, int n) {
  int t = blockIdx.x * BLOCK + threadIdx.x;
  assert(t < 0);
  if (t < n) o[t] = x[t] * 2.f;
}
#endif
"""
PARTNER = """#include <cuda_fp16.h>
__global__ void partner(float* o, int n) { int t = blockIdx.x * blockDim.x + threadIdx.x; if (t < n) o[t] = 1.f; }
"""
SOURCES = {"checked.cu": CHECKED, "partner.cu": PARTNER}
SPECS = [KernelSpec("checked.cu", "checked", 128), KernelSpec("partner.cu", "partner", 128)]


@pytest.mark.nvcc
def test_a_macro_defined_above_a_kept_include_configures_it_in_the_fused_file(tmp_path):
    # once dropped: the fused kernel's assert(t < 0) was active, and every thread trapped
    source = fuse(SPECS, sources=SOURCES).source
    define, include, undefine = (source.index(s) for s in ("#define NDEBUG", "#include <cassert>", "#undef NDEBUG"))
    assert define < include < undefine < source.index("hfuse_ctx")
    # a name headers do not consult (BLOCK), or one defined below the includes, stays the code's own
    assert "#define BLOCK" not in source and "_AFTER_THE_INCLUDES" not in source
    assert "_CHECKED_CU_" not in source  # (an include guard configures nothing)
    # compiled, the assert is gone, as from the file alone; without the definition it calls __assertfail
    for text, asserts in ((source, False), (source.replace("#define NDEBUG\n", ""), True)):
        folder = tmp_path / str(asserts)
        compile_nvcc(text, workdir=folder)
        assert (b"__assertfail" in next(folder.glob("*.cubin")).read_bytes()) == asserts


def test_and_the_unfused_kernel_is_configured_alike():
    # (its one input defined it, so its code saw it after the includes: it stays defined, as
    # in the fused file of inputs that all define it, where a header's macro may expand to it)
    original = device_source(KernelSpec("checked.cu", "checked", 128), sources=SOURCES).source
    assert original.index("#define NDEBUG") < original.index("#include <cassert>")
    assert "#undef NDEBUG" not in original
    both = fuse([SPECS[0], KernelSpec("checked.cu", "checked", 64)], sources=SOURCES).source
    assert "#define NDEBUG" in both and "#undef NDEBUG" not in both


def test_an_input_that_did_not_configure_the_headers_gets_a_note():
    notes = prepare(SPECS, sources=SOURCES).notes
    assert any("NDEBUG, which checked.cu defines above its #include lines" in n and "partner.cu did not" in n
               for n in notes)


def test_two_values_of_one_configuration_macro_are_refused():
    sources = {"a.cu": "#define __CUDA_NO_HALF_OPERATORS__ 1\n" + PARTNER.replace("partner", "ka"),
               "b.cu": "#define __CUDA_NO_HALF_OPERATORS__ 2\n" + PARTNER.replace("partner", "kb")}
    with pytest.raises(HFuseError, match=r"'__CUDA_NO_HALF_OPERATORS__' configures the headers this file includes "
                                         r"as '2', and a.cu \(a.cu:1\) as '1'") as err:
        fuse([KernelSpec("a.cu", "ka", 128), KernelSpec("b.cu", "kb", 128)], sources=sources)
    assert err.value.where.line == 1 and "define it alike" in err.value.hint


def test_an_empty_configuration_macro_is_no_include_guard_whatever_its_file_is_called():
    # (a guard is named after its file: a.cu's stem 'a' begins 'cuda...' no more than any name)
    sources = {"a.cu": "#define __CUDA_NO_HALF_OPERATORS__\n" + PARTNER.replace("partner", "ka"), **SOURCES}
    source = fuse([KernelSpec("a.cu", "ka", 128), SPECS[1]], sources=sources).source
    assert source.index("#define __CUDA_NO_HALF_OPERATORS__") < source.index("#include <cuda_fp16.h>")


@pytest.mark.nvcc
def test_a_macro_an_installed_librarys_header_consults_configures_it_whatever_its_name(tmp_path):
    # once dropped (its name is of no form headers consult): the fused file included the header
    # without it, and the kernel silently ran its other branch (y instead of 2 y)
    from hfuse.frontend.options import CompileOptions

    (tmp_path / "inc" / "mylib").mkdir(parents=True)
    (tmp_path / "inc" / "mylib" / "ops.cuh").write_text(
        "#pragma once\n__device__ inline float mylib_scale(float v) {\n#ifdef MYLIB_DOUBLE_IT\n  return 2.f * v;\n"
        "#else\n  return v;\n#endif\n}\n")
    sources = {"k.cu": "#define MYLIB_DOUBLE_IT 1\n#define MY_TILE 64\n#include <mylib/ops.cuh>\n"
                       "__global__ void k(float* y, int n) { int i = blockIdx.x * MY_TILE + threadIdx.x; "
                       "if (i < n) y[i] = mylib_scale(y[i]); }\n",
               "partner.cu": PARTNER}
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    source = fuse([KernelSpec("partner.cu", "partner", 128), KernelSpec("k.cu", "k", 64)], sources=sources,
                  options=options).source
    assert source.index("#define MYLIB_DOUBLE_IT 1") < source.index("#include <mylib/ops.cuh>")
    assert "#define MY_TILE" not in source  # (the library does not mention it: the code's own, expanded)
    compile_nvcc(source, workdir=tmp_path / "out", flags=["-isystem", str(tmp_path / "inc")])

