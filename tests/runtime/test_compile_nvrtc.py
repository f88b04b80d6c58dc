"""NVRTC compilation through CuPy. NVRTC needs no GPU, so these run wherever CuPy and
libnvrtc are installed (the ``nvrtc`` marker: skipped otherwise, a failure in CI); loading
and launching are in test_gpu_runtime."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from hfuse.runtime.binary import CompileError
from hfuse.runtime.compile import Compiler

from toolchain import nvrtc_compiler

from .test_ptxas import SOURCE

pytestmark = pytest.mark.nvrtc


@pytest.fixture(scope="module")
def compiler() -> Compiler:
    return nvrtc_compiler()


def test_compile_names_and_resources(compiler):
    b = compiler.compile(SOURCE, ["hist<float, 256>", "add"])
    assert b.lowered == {"hist<float, 256>": "_Z4histIfLi256EEvPKT_Pji", "add": "add"}
    assert b.cubin[:4] == b"\x7fELF"
    assert [p.size for p in b.params("hist<float, 256>")] == [8, 8, 4]
    if b.ptxas:
        assert b.ptxas["_Z4histIfLi256EEvPKT_Pji"].static_smem == 1024
    else:  # some NVRTC builds (seen: CUDA 13.2's on an H100) return no ptxas report at all
        assert "ptxas info" not in b.log  # absent from NVRTC's log, not lost by our parser
    assert compiler.compile(SOURCE, ["hist<float, 256>", "add"]) is b  # cached


def test_cooperative_groups_header_is_found(compiler):
    src = '#include <cooperative_groups.h>\nextern "C" __global__ void k(int* a) {\n' \
          '  auto b = cooperative_groups::this_thread_block(); b.sync(); a[b.thread_rank()] = 1; }'
    assert compiler.compile(src, ["k"]).lowered["k"] == "k"


def test_compile_error_carries_log(compiler):
    with pytest.raises(CompileError) as info:
        compiler.compile("__global__ void f() { int x = ; }", ["f"])
    assert "expected an expression" in info.value.log
    assert "expected an expression" in str(info.value)


def test_compile_from_threads(compiler):
    sources = [f'extern "C" __global__ void k{i}(float* a) {{ a[threadIdx.x] += {i}.0f; }}' for i in range(8)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        binaries = list(pool.map(lambda i: compiler.compile(sources[i], [f"k{i}"]), range(8)))
    assert [b.lowered[f"k{i}"] for i, b in enumerate(binaries)] == [f"k{i}" for i in range(8)]
    assert len({b.key for b in binaries}) == 8
