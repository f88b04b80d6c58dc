"""Which file-scope names of one input another input's using-directive may make ambiguous
(``frontend/directive_names.py``), and what the fused file does with them: the defining
input's part gets them under a name of its own; the other input's code keeps meaning the
library's."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.api import fuse
from hfuse.frontend.extract import model_source
from hfuse.frontend.options import CompileOptions
from hfuse.frontend.program import Program
from hfuse.spec import KernelSpec

from toolchain import compile_nvcc, compile_nvrtc

VENDOR = """#pragma once
namespace vendor {
template <int M> struct Shape { static constexpr int size = M; };
}
"""
# a library's names through a directive: its Shape<4> is vendor::Shape
LIBRARY_USER = """#include <vendor/shapes.h>
using namespace vendor;
__global__ void sized(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = float(Shape<4>::size);
}
"""
# the user's own global Shape, in its kernel's body and parameters
OWN_SHAPE = """struct Shape { int m, n; };
__device__ int area(Shape s) { return s.m * s.n; }
__global__ void shaped(float* out, int n, Shape s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = float(area(s) + i);
}
"""


def _program(**files: str) -> Program:
    return Program.merge([model_source(Path(name), text) for name, text in files.items()])


def test_a_global_type_another_inputs_library_directive_may_bring_is_renamed_for_its_own_input():
    program = _program(**{"a.cu": OWN_SHAPE, "b.cu": LIBRARY_USER})
    assert program.exposed == {"Shape"} and set(program.clashing_symbols()["Shape"]) == {Path("a.cu")}


def test_a_name_only_the_kernels_parameters_of_its_input_name_is_renamed_too():
    # the fused kernel's signature stands after every directive
    library_user = LIBRARY_USER.replace("Shape<4>::size", "4")
    assert _program(**{"a.cu": OWN_SHAPE, "b.cu": library_user}).exposed == {"Shape"}
    in_body_only = OWN_SHAPE.replace(", Shape s)", ")").replace("area(s)", "area(Shape{2, 3})")
    assert _program(**{"a.cu": in_body_only, "b.cu": library_user}).exposed == frozenset()


def test_a_directive_of_the_users_own_namespace_is_left_to_directive_scope():
    # its members are known: a namespace without the name brings nothing; one with it is
    # the user's two definitions of one name, which directive_scope places or refuses
    own = LIBRARY_USER.replace("#include <vendor/shapes.h>\n", VENDOR.replace("#pragma once\n", ""))
    assert _program(**{"a.cu": OWN_SHAPE, "b.cu": own}).exposed == frozenset()
    without = LIBRARY_USER.replace("#include <vendor/shapes.h>\n", "namespace vendor { struct Other {}; }\n")
    assert _program(**{"a.cu": OWN_SHAPE, "b.cu": without.replace("Shape<4>::size", "4")}).exposed == frozenset()


@pytest.fixture
def library(tmp_path) -> CompileOptions:
    (tmp_path / "sys" / "vendor").mkdir(parents=True)
    (tmp_path / "sys" / "vendor" / "shapes.h").write_text(VENDOR)
    (tmp_path / "a.cu").write_text(OWN_SHAPE)
    (tmp_path / "b.cu").write_text(LIBRARY_USER)
    return CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "sys")])


@pytest.mark.nvcc
@pytest.mark.nvrtc
@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_the_fused_file_compiles_where_both_names_were_once_ambiguous(library, tmp_path, order):
    # once: nvcc refused the fused file ('"Shape" is ambiguous'), in the fused kernel's
    # parameters and in b.cu's Shape<4>
    kernels = {"a": KernelSpec(tmp_path / "a.cu", "shaped", 128), "b": KernelSpec(tmp_path / "b.cu", "sized", 128)}
    fused = fuse([kernels[k] for k in order], options=library)
    part = 1 + order.index("a")
    assert f"struct Shape__hf{part} {{ int m, n; }};" in fused.source and f"Shape__hf{part} hf{part}_s" in fused.source
    assert "Shape<4>::size" in fused.source  # b.cu's code still means vendor's
    compile_nvcc(fused.source, flags=["-arch=sm_90", *library.compiler_flags(std=False, pre_includes=False)],
                 workdir=tmp_path / "build")
    compile_nvrtc(fused.source, [fused.name_expression],
                  flags=library.compiler_flags(std=False, pre_includes=False, compiler="nvrtc"))


CONSTANT_ARGUMENT = """constexpr int kTile = 4;
template <int T>
__global__ void tiled(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = float(T);
}
"""


@pytest.mark.nvcc
def test_a_template_argument_names_the_parts_own_copy(tmp_path):
    # once silently wrong: the fused kernel, after vendor's directive, instantiated
    # tiled__hf1<kTile> with vendor::kTile (8) where tiled.cu meant its own kTile (4)
    (tmp_path / "sys" / "vendor").mkdir(parents=True)
    (tmp_path / "sys" / "vendor" / "tile.h").write_text("#pragma once\nnamespace vendor { constexpr int kTile = 8; }\n")
    (tmp_path / "tiled.cu").write_text(CONSTANT_ARGUMENT)
    (tmp_path / "b.cu").write_text("#include <vendor/tile.h>\nusing namespace vendor;\n"
                                   "__global__ void kb(float* o, int n) { if (threadIdx.x < n) o[threadIdx.x] = kTile; }\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "sys")])
    tiled = KernelSpec(tmp_path / "tiled.cu", "tiled", 128, template_args=("kTile",))
    for specs, part in (([tiled, KernelSpec(tmp_path / "b.cu", "kb", 128)], 1),
                        ([KernelSpec(tmp_path / "b.cu", "kb", 128), tiled], 2)):
        source = fuse(specs, options=options).source
        assert f"::tiled__hf{part}<kTile__hf{part}>(" in source and f"constexpr int kTile__hf{part} = 4;" in source
        compile_nvcc(source, flags=["-arch=sm_90", *options.compiler_flags(std=False, pre_includes=False)],
                     workdir=tmp_path / f"build{part}")


@pytest.mark.nvcc
def test_two_inputs_constants_of_one_name_as_template_arguments_are_each_parts_own(tmp_path):
    # (before: both renamed, and the fused kernel's tiled__hf1<kTile> named neither)
    (tmp_path / "a.cu").write_text(CONSTANT_ARGUMENT)
    (tmp_path / "b.cu").write_text(CONSTANT_ARGUMENT.replace("kTile = 4", "kTile = 8").replace("tiled", "tiled_b"))
    specs = [KernelSpec(tmp_path / "a.cu", "tiled", 128, template_args=("kTile",)),
             KernelSpec(tmp_path / "b.cu", "tiled_b", 128, template_args=("kTile",))]
    source = fuse(specs).source
    assert "::tiled__hf1<kTile__hf1>(" in source and "::tiled_b__hf2<kTile__hf2>(" in source
    compile_nvcc(source, flags=["-arch=sm_90"], workdir=tmp_path / "build")
