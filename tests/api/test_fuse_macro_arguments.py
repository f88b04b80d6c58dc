"""Template arguments written with the kernel file's macros (``-k 'dequantize_block<QK4_0,
QR4_0, dequantize_q4_0, float>'``, as inference engines name their instances): the fused
file keeps none of the user's macros, so the arguments are read as the compiler reads them,
with the macros of the kernel's own file. (Once: ``QK4_0`` undefined in the fused file.) The
user's code keeps its macros where hfuse proves them unchanged (``codegen/macros.py``), each
section defining what it uses: the launch of a part, hfuse's own code, never names one."""
from __future__ import annotations

import pytest

from hfuse.api import device_source, fuse, prepare
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C
from toolchain import compile_nvcc

HERE = C.CORPUS / "real_cpp" / "macro_args"
Q4 = KernelSpec(HERE / "dequant.cu", "dequantize_block", Dim3(128), ("QK4_0", "QR4_0", "dequantize_q4_0", "float"))
Q8 = KernelSpec(HERE / "dequant.cu", "dequantize_block", Dim3(64), ("QK8_0", "QR8_0", "dequantize_q8_0", "half"))
ROWS = KernelSpec(HERE / "scaled.cu", "shift_rows", Dim3(128), ("SCALE_SHIFT", "ROWS_PER_BLOCK(128)"))
OTHER = KernelSpec(HERE / "scaled_other.cu", "shift_left", Dim3(64), ("SCALE_SHIFT",))


def _launch_line(source: str, part: int) -> str:
    return next(line for line in source.splitlines() if f"__hf{part}<" in line and "hf_ctx);" in line)


@pytest.mark.nvcc
def test_a_kernel_named_with_its_files_macros_is_fused(tmp_path):
    fused = fuse([Q4, Q8])
    assert "dequantize_block__hf1<32, 2, dequantize_q4_0, float>" in _launch_line(fused.source, 1)
    assert "dequantize_block__hf2<32, 1, dequantize_q8_0, half>" in _launch_line(fused.source, 2)
    kernel = fused.source.split("// ---- fused kernel")[1]
    assert "QK4_0" not in kernel and "QK8_0" not in kernel
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_each_file_s_macro_is_its_own(tmp_path):
    # SCALE_SHIFT is 3 in one file and 5 in the other; a function-like macro is expanded too
    fused = fuse([ROWS, OTHER])
    assert "shift_rows__hf1<3, ((128) / 32)>" in _launch_line(fused.source, 1)
    assert "shift_left__hf2<5>" in _launch_line(fused.source, 2)
    compile_nvcc(fused.source, workdir=tmp_path)


def test_the_prepared_unit_takes_the_request_as_written():
    # the tuner prepares once and fuses every candidate with the specs the user gave
    unit = prepare([Q4, Q8])
    assert unit.matches([Q4.with_block(Dim3(256)), Q8])
    assert [k.spec.template_args for k in unit.kernels] == [("32", "2", "dequantize_q4_0", "float"),
                                                           ("32", "1", "dequantize_q8_0", "half")]
    fused = fuse([Q4, Q8], prepared=unit)
    assert fused.source == fuse([Q4, Q8]).source


@pytest.mark.nvrtc
@pytest.mark.parametrize("spec", [Q4, Q8, ROWS, OTHER], ids=lambda s: s.instance)
def test_the_unfused_kernel_the_tuner_compiles_names_the_values(spec):
    from toolchain import compile_nvrtc

    original = device_source(spec)
    assert not any(m in original.name_expression for m in ("QK", "QR", "SCALE_SHIFT", "ROWS_PER_BLOCK"))
    compile_nvrtc(original.source, [original.name_expression])


@pytest.mark.nvrtc
def test_and_the_fused_kernel_under_nvrtc():
    from toolchain import compile_nvrtc

    fused = fuse([Q4, ROWS])
    compile_nvrtc(fused.source, [fused.name_expression])
