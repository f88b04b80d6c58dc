"""Output comparison, argument checks and PTX parameter parsing (no GPU)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from hfuse.launch import Output
from hfuse.runtime.binary import PtxParam, parse_ptx_params
from hfuse.runtime.execute import ArgumentError, check_args, compare_outputs

PTX = """
.visible .entry _Z4histIfLi256EEvPKT_Pji(
	.param .u64 .ptr .global .align 4 _Z4histIfLi256EEvPKT_Pji_param_0,
	.param .u64 _Z4histIfLi256EEvPKT_Pji_param_1,
	.param .u32 _Z4histIfLi256EEvPKT_Pji_param_2
)
{
}
.visible .entry add(
	.param .u64 add_param_0,
	.param .align 4 .b8 add_param_1[12],
	.param .f64 add_param_2
)
"""


def test_parse_ptx_params():
    hist = parse_ptx_params(PTX, "_Z4histIfLi256EEvPKT_Pji")
    assert [p.size for p in hist] == [8, 8, 4]
    add = parse_ptx_params(PTX, "add")
    assert [p.size for p in add] == [8, 12, 8] and add[1].name == "add_param_1"
    assert parse_ptx_params(PTX, "missing") is None


class FakeDeviceArray:
    """Looks like a CuPy array to check_args (data.ptr and dtype)."""

    def __init__(self, dtype=np.float32):
        self.dtype = np.dtype(dtype)
        self.data = SimpleNamespace(ptr=0x1000)


def fake_kernel(*sizes):
    return SimpleNamespace(params=[PtxParam(f"p{i}", s, "") for i, s in enumerate(sizes)])


def test_check_args_accepts_matching():
    check_args("k", (FakeDeviceArray(), FakeDeviceArray(), np.int32(3)), fake_kernel(8, 8, 4))


def test_check_args_rejects_python_scalars():
    with pytest.raises(ArgumentError, match="np.int32"):
        check_args("k", (FakeDeviceArray(), 3), None)


def test_check_args_count_and_width():
    with pytest.raises(ArgumentError, match="takes 3 parameters but 2"):
        check_args("k", (FakeDeviceArray(), np.int32(1)), fake_kernel(8, 8, 4))
    with pytest.raises(ArgumentError, match="4 bytes wide") as info:
        check_args("k", (FakeDeviceArray(), FakeDeviceArray(), np.int64(3)), fake_kernel(8, 8, 4),
                   param_types=["float*", "float*", "int"])
    assert "(int)" in str(info.value) and "kernel 'k'" in str(info.value)


def test_compare_exact():
    a = np.array([1.0, -0.0, np.nan], dtype=np.float32)
    assert compare_outputs([a], [a.copy()], [Output(0)]) == []
    b = a.copy()
    b[1] = 0.0  # -0.0 and 0.0 differ bitwise
    problems = compare_outputs([a], [b], [Output(0)])
    assert len(problems) == 1 and "flat index 1" in problems[0]


def test_compare_unordered():
    a = np.array([5, 1, 3, 0], dtype=np.uint32)
    assert compare_outputs([a], [np.array([3, 5, 0, 1], dtype=np.uint32)], [Output(0, "unordered")]) == []
    assert compare_outputs([a], [np.array([3, 5, 0, 2], dtype=np.uint32)], [Output(0, "unordered")])


def test_compare_close():
    a = np.array([1.0, np.nan, 100.0])
    b = np.array([1.0 + 1e-7, np.nan, 100.00001])
    assert compare_outputs([a], [b], [Output(0, "close", rtol=1e-6, atol=0)]) == []
    assert compare_outputs([a], [b * 1.01], [Output(0, "close", rtol=1e-6)])


def test_compare_shape_and_count():
    a = np.zeros(4, np.float32)
    assert "shape/dtype" in compare_outputs([a], [np.zeros(4, np.float64)], [Output(0)])[0]
    assert "count" in compare_outputs([a], [], [Output(0)])[0]
    assert compare_outputs([np.zeros(0, np.float32)], [np.zeros(0, np.float32)], [Output(0)]) == []


def test_a_device_variable_is_compared_by_its_bytes_and_named():
    from hfuse.runtime.symbols import DeviceVariable

    variable = DeviceVariable("stats::hits", view=None, initial=None)
    before = np.frombuffer(np.uint32(69).tobytes(), np.uint8)
    assert compare_outputs([before], [before.copy()], [variable]) == []
    problems = compare_outputs([before], [np.frombuffer(np.uint32(133).tobytes(), np.uint8)], [variable])
    assert len(problems) == 1 and problems[0].startswith("device variable 'stats::hits' (bytes): 1 of 4 elements differ")


def test_a_fused_kernel_is_held_against_every_parts_outputs_then_every_parts_variables():
    from hfuse.tuning.measure import expected_of

    first, second = SimpleNamespace(outputs=(Output(1),)), SimpleNamespace(outputs=(Output(0), Output(2)))
    got = expected_of([(first, ["a1", "v1"]), (second, ["b0", "b2", "w1", "w2"])])
    assert got == ["a1", "b0", "b2", "v1", "w1", "w2"]
