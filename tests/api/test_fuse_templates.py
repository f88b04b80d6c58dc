"""A kernel template fused without its template arguments: the fused kernel is a template
too, and everything the user reads says so (the header, the notes, ``--check``)."""
from __future__ import annotations

import pytest

from hfuse.api import fuse
from hfuse.cli import main
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C
from toolchain import compile_nvcc

VEC = C.CORPUS / "vec_scale.cu"
ROWS = """template <typename T, int N>
__global__ void scale_rows_with_a_long_name(T* out, const T* in, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(float(in[i]) * s * N);
}
"""


@pytest.fixture
def rows(tmp_path):
    path = tmp_path / "rows.cu"
    path.write_text(ROWS)
    return path


def test_the_fused_kernel_of_a_template_without_arguments_is_a_template_that_says_so(rows):
    fused = fuse([KernelSpec(rows, "scale_rows_with_a_long_name", Dim3(128)), KernelSpec(VEC, "vec_scale", Dim3(64))])
    assert fused.template_parameters == ("hf1_T", "hf1_N")
    said = "are templates (hf1_T, hf1_N for scale_rows_with_a_long_name's T, N)"
    assert any(said in note for note in fused.notes)
    assert said in " ".join(line.removeprefix("// ") for line in fused.source.splitlines())


def test_an_instance_given_makes_a_kernel_that_is_no_template(rows):
    fused = fuse([KernelSpec(rows, "scale_rows_with_a_long_name", Dim3(128), ("float", "2")),
                  KernelSpec(VEC, "vec_scale", Dim3(64))])
    assert fused.template_parameters == () and not any("templates" in note for note in fused.notes)
    # the header's table names the part whole, however long its name
    assert "// 1     scale_rows_with_a_long_name<float, 2>  [   0,  128)" in fused.source


@pytest.mark.nvcc
def test_the_fused_template_compiles_once_the_users_launch_instantiates_it(rows, tmp_path):
    fused = fuse([KernelSpec(rows, "scale_rows_with_a_long_name", Dim3(128)), KernelSpec(VEC, "vec_scale", Dim3(64))])
    launch = (f"\ncudaError_t go(float* out, const float* in, const float* x, float* y, int n) {{\n"
              f"  return {fused.name}_launch<float, 2>(dim3(4), out, in, 2.f, n, 0, dim3(8), x, y, 1.f, 0.f, n, 0, 0);\n}}\n")
    compile_nvcc(fused.source + launch, workdir=tmp_path)


@pytest.mark.nvcc
def test_check_of_a_fused_template_asks_for_its_arguments(rows, tmp_path, capsys):
    # once: "nvcc compiled the fused file but reported nothing": no instance was compiled
    args = ["fuse", str(rows), str(VEC), "-k", "scale_rows_with_a_long_name:128", "-k", "vec_scale:64",
            "-o", str(tmp_path / "f.cu"), "--check"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "is a template over hf1_T, hf1_N: nvcc compiles no instance of it" in err
    assert "-k 'scale_rows_with_a_long_name<ARGS>:128'" in err
    args[4] = "scale_rows_with_a_long_name<float, 2>:128"
    assert main(args) == 0 and "can launch" in capsys.readouterr().err
