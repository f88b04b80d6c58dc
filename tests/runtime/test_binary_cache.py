"""Compiled binaries on disk: a second compiler (another run, another process) sharing the
directory gets the same binary without running NVRTC; anything NVRTC sees that differs,
or a damaged entry, compiles again."""
from __future__ import annotations

import pytest

from hfuse.runtime.binary_cache import BinaryCache
from hfuse.runtime.compile import Compiler

from .test_ptxas import SOURCE

pytestmark = pytest.mark.nvrtc
NAMES = ["hist<float, 256>", "add"]


class CountingCompiler(Compiler):
    """Counts the NVRTC runs, to tell a cache hit from a compile."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.nvrtc_runs = 0

    def _run_nvrtc(self, source, names, opts):
        self.nvrtc_runs += 1
        return super()._run_nvrtc(source, names, opts)


def test_second_compiler_reads_the_binary_instead_of_compiling(tmp_path):
    first = CountingCompiler("sm_90", cache=BinaryCache(tmp_path))
    compiled = first.compile(SOURCE, NAMES)
    second = CountingCompiler("sm_90", cache=BinaryCache(tmp_path))
    read = second.compile(SOURCE, NAMES)
    assert (first.nvrtc_runs, second.nvrtc_runs) == (1, 0)
    assert read.cubin == compiled.cubin and read.key == compiled.key
    assert read.lowered == compiled.lowered and read.ptx == compiled.ptx
    assert read.ptxas == compiled.ptxas  # resources parsed again from the stored log
    assert read.params("hist<float, 256>") == compiled.params("hist<float, 256>")


@pytest.mark.parametrize("change", ["source", "define", "arch", "names"])
def test_anything_nvrtc_sees_that_differs_compiles_again(tmp_path, change):
    CountingCompiler("sm_90", cache=BinaryCache(tmp_path)).compile(SOURCE, NAMES)
    compiler = CountingCompiler("sm_80" if change == "arch" else "sm_90", cache=BinaryCache(tmp_path),
                                options=("-DUNUSED=1",) if change == "define" else ())
    compiler.compile(SOURCE + "\n// edited\n" if change == "source" else SOURCE,
                     NAMES[:1] if change == "names" else NAMES)
    assert compiler.nvrtc_runs == 1


def test_damaged_cubin_is_compiled_again(tmp_path):
    CountingCompiler("sm_90", cache=BinaryCache(tmp_path)).compile(SOURCE, NAMES)
    (cubin,) = tmp_path.glob("*.cubin")
    cubin.write_bytes(cubin.read_bytes()[:100])  # a torn write, say
    again = CountingCompiler("sm_90", cache=BinaryCache(tmp_path))
    assert again.compile(SOURCE, NAMES).cubin[:4] == b"\x7fELF"
    assert again.nvrtc_runs == 1


def test_key_covers_the_nvrtc_version():
    key = BinaryCache.key
    assert key(SOURCE, ["-arch=sm_90"], NAMES, (13, 0)) != key(SOURCE, ["-arch=sm_90"], NAMES, (13, 1))
    assert key(SOURCE, ["-arch=sm_90"], NAMES, (13, 0)) == key(SOURCE, ["-arch=sm_90"], NAMES, (13, 0))
