"""Kernel arguments packed into one buffer and launched through the driver.

CuPy's ``RawKernel.__call__`` inspects and boxes every argument on every launch, about a
microsecond each; a fused kernel has its parts' arguments plus four hidden words per
part, so that alone costs a fused call more than a raw launch of one original. For the
plan launchers' hot path we pack the arguments ourselves, by the PTX parameter list:
one ``struct.pack_into`` into a buffer whose slot addresses (``kernelParams`` of
``cuLaunchKernel``) are fixed once, with the constant tail (the hidden words) packed once.

Only parameters of plain PTX scalar types (``.u64``, ``.s32``, ``.f32``, ``.b16``, ...)
are packed here; a kernel with a by-value struct (``.align 16 .b8 p[16]``) keeps CuPy's
path (``ParamBuffer.for_params`` returns None). Integers may be given as Python ints
(the bits are the value's two's complement at the parameter's width), so a caller that
checked its values itself skips NumPy scalars.
"""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Sequence

import numpy as np

from .binary import PtxParam

_FORMATS = {".u64": "Q", ".s64": "Q", ".b64": "Q", ".u32": "I", ".s32": "I", ".b32": "I", ".f32": "f", ".f64": "d",
            ".u16": "H", ".s16": "H", ".b16": "H", ".u8": "B", ".s8": "B", ".b8": "B"}
_MASKS = {"Q": (1 << 64) - 1, "I": (1 << 32) - 1, "H": (1 << 16) - 1, "B": (1 << 8) - 1}
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _word(value: Any, mask: int) -> int:
    """An integer parameter's bits: a device array's address, a scalar's value (two's complement)."""
    if type(value) is int:
        return value & mask
    data = getattr(value, "data", None)
    ptr = getattr(data, "ptr", None)
    if ptr is not None:
        return int(ptr)
    if isinstance(value, np.floating):  # a float scalar given for a .b16/.b32/.b64 word (half): its bits
        return int(value.view(_BITS[value.itemsize]))
    return int(value) & mask


class ParamBuffer:
    """The packed parameters of one kernel: ``pointer`` is the ``kernelParams`` array."""

    def __init__(self, formats: Sequence[str], tail: Sequence[Any] = ()):
        self.formats = list(formats)
        offsets, size = [], 0
        for f in self.formats:
            width = struct.calcsize(f)
            size = (size + width - 1) // width * width
            offsets.append(size)
            size += width
        self._buffer = ctypes.create_string_buffer(max(size, 1))
        base = ctypes.addressof(self._buffer)
        self._slots = (ctypes.c_void_p * max(len(offsets), 1))(*[base + o for o in offsets])
        self.pointer = ctypes.addressof(self._slots)
        # one pack_into for the leading (per-call) parameters; the tail is written once
        self._head = len(self.formats) - len(tail)
        self._head_format = "=" + "".join(self._layout(0, self._head, offsets))
        self._masks = [_MASKS.get(f) for f in self.formats[: self._head]]
        if tail:
            struct.pack_into("=" + "".join(self._layout(self._head, len(self.formats), offsets)), self._buffer,
                             offsets[self._head], *self._values(tail, self.formats[self._head:]))

    def _layout(self, start: int, stop: int, offsets: list[int]) -> list[str]:
        """Formats with explicit padding between slots, from slot ``start`` to ``stop``."""
        out, at = [], offsets[start] if start < len(offsets) else 0
        for i in range(start, stop):
            if offsets[i] > at:
                out.append(f"{offsets[i] - at}x")
            out.append(self.formats[i])
            at = offsets[i] + struct.calcsize(self.formats[i])
        return out

    @staticmethod
    def _values(args: Sequence[Any], formats: Sequence[str]) -> list[Any]:
        return [_word(a, _MASKS[f]) if f in _MASKS else float(a) for a, f in zip(args, formats)]

    @staticmethod
    def packable(params: Sequence[PtxParam] | None) -> bool:
        """Whether every parameter is a plain scalar word this buffer packs."""
        return params is not None and all(p.ptx_type in _FORMATS and p.size == struct.calcsize(_FORMATS[p.ptx_type])
                                          for p in params)

    @classmethod
    def for_params(cls, params: Sequence[PtxParam] | None, tail: Sequence[Any] = ()) -> "ParamBuffer | None":
        """A buffer for these PTX parameters, or None where CuPy's path must be kept."""
        return cls([_FORMATS[p.ptx_type] for p in params], tail) if cls.packable(params) else None

    def pack(self, args: Sequence[Any]) -> int:
        """Writes the per-call arguments; returns ``kernelParams``. Not thread-safe: one
        buffer per launcher, and the driver copies the parameters at launch."""
        if len(args) != self._head:
            raise ValueError(f"the kernel takes {self._head} arguments before its fixed ones; {len(args)} given")
        values = [(a & m if type(a) is int else _word(a, m)) if m is not None else float(a)
                  for a, m in zip(args, self._masks)]
        struct.pack_into(self._head_format, self._buffer, 0, *values)
        return self.pointer
