"""Fixtures of the tuner's CPU tests."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.runtime.compile import Compiler


class CPUCompiler(Compiler):
    """NVRTC for real, loading faked: records modules and what goes into them."""

    def __init__(self):
        super().__init__("sm_90")
        self.events: list = []

    def load(self, binary, name, *, instance=""):
        self.events.append(("load", instance))
        events = self.events

        class Kernel:
            def set_symbols(self, data, label=None, force=False):
                assert force  # a launcher always copies what it is given
                events.append(("set", instance, {k: bytes(np.asarray(v).tobytes()) for k, v in data.items()}))
                return list(data)

            def bind(self, grid, block, smem, tail=(), direct=False):
                kernel = self

                class Bound:
                    def __init__(self):
                        self.kernel = kernel

                    def __call__(self, args, stream=None):
                        events.append(("launch", instance, len(args) + len(tail)))

                return Bound()

        k = Kernel()
        k.binary = binary
        return k


@pytest.fixture
def cpu_compiler():
    cupy = pytest.importorskip("cupy")
    try:
        cupy.cuda.nvrtc.getVersion()
    except Exception as exc:
        pytest.skip(f"NVRTC is not loadable: {exc}")
    return CPUCompiler()
