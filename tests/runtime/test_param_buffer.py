"""Arguments packed by the PTX parameter list, as ``cuLaunchKernel`` reads them (CPU only:
the slots are read back through ctypes)."""
from __future__ import annotations

import ctypes

import numpy as np

from hfuse.runtime.binary import PtxParam
from hfuse.runtime.param_buffer import ParamBuffer

PARAMS = [PtxParam("p", 8, ".u64"), PtxParam("n", 4, ".s32"), PtxParam("x", 4, ".f32"), PtxParam("q", 8, ".u64"),
          PtxParam("d", 8, ".f64"), PtxParam("h0", 4, ".u32"), PtxParam("h1", 4, ".u32")]
READ = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_float, ctypes.c_uint64, ctypes.c_double, ctypes.c_uint32,
        ctypes.c_uint32]


class FakeDeviceArray:
    """What CuPy's arrays offer: ``data.ptr``."""

    class data:  # noqa: N801
        ptr = 0xDEAD0000


def slots(pointer: int) -> list:
    addresses = (ctypes.c_void_p * len(PARAMS)).from_address(pointer)
    return [kind.from_address(a).value for kind, a in zip(READ, addresses)]


def test_each_slot_holds_its_argument_and_the_tail_is_written_once():
    buffer = ParamBuffer.for_params(PARAMS, tail=[np.uint32(7), np.uint32(9)])
    got = slots(buffer.pack([np.uint64(123), np.int32(-2), np.float32(1.5), FakeDeviceArray(), 0.25]))
    assert got == [123, (1 << 32) - 2, 1.5, 0xDEAD0000, 0.25, 7, 9]
    got = slots(buffer.pack([5, 3, 2.0, 6, np.float64(-1.0)]))  # a second call rewrites only the head
    assert got == [5, 3, 2.0, 6, -1.0, 7, 9]


def test_slots_are_aligned_to_their_width():
    buffer = ParamBuffer.for_params([PtxParam("a", 4, ".u32"), PtxParam("b", 8, ".u64")])
    first, second = (ctypes.c_void_p * 2).from_address(buffer.pack([1, 2]))
    assert second - first == 8 and second % 8 == 0


def test_narrow_words_and_half_bits():
    buffer = ParamBuffer.for_params([PtxParam("h", 2, ".b16"), PtxParam("c", 1, ".s8"), PtxParam("s", 2, ".u16")])
    h, c, s = (ctypes.c_void_p * 3).from_address(buffer.pack([np.float16(1.0), -1, np.uint16(513)]))
    assert ctypes.c_uint16.from_address(h).value == 0x3C00  # the bits of half 1.0, not the value 1
    assert ctypes.c_uint8.from_address(c).value == 0xFF and ctypes.c_uint16.from_address(s).value == 513


def test_parameters_it_cannot_pack_keep_cupys_path():
    assert ParamBuffer.for_params([PtxParam("s", 16, ".b8")]) is None  # a by-value struct
    assert ParamBuffer.for_params(None) is None
