"""The test toolchain helper (``tests/toolchain.py``): results and failure messages."""
from __future__ import annotations

import pytest

from toolchain import compile_nvcc, compile_nvrtc

GOOD = 'extern "C" __global__ void add(float* a, float b) { a[threadIdx.x] += b; }\n'
BAD = "// line 1\n__global__ void f(int* o) {\n  int x = ;\n  o[0] = x;\n}\n"


@pytest.mark.nvcc
def test_nvcc_result_and_failure(tmp_path):
    result = compile_nvcc(GOOD, workdir=tmp_path)
    assert result.ok and result.cubin[:4] == b"\x7fELF" and result.registers["add"] > 0
    assert result.kernel("add").entry and "Used" in result.log
    with pytest.raises(AssertionError) as info:
        compile_nvcc(BAD, workdir=tmp_path, filename="bad.cu")
    message = str(info.value)
    assert "expected an expression" in message and "bad.cu" in message
    assert ">    3:   int x = ;" in message and "     2: __global__ void f(int* o) {" in message


@pytest.mark.nvrtc
def test_nvrtc_result_and_failure():
    result = compile_nvrtc(GOOD, ["add"])
    assert result.ok and result.lowered == {"add": "add"} and result.kernel("add").registers > 0
    failed = compile_nvrtc(BAD, ["f"], check=False)
    assert not failed.ok
    with pytest.raises(AssertionError) as info:
        failed.check()
    assert "expected an expression" in str(info.value) and ">    3:   int x = ;" in str(info.value)
