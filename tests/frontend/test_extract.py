from pathlib import Path

import pytest

from hfuse.errors import HFuseError
from hfuse.frontend.extract import model_source
from hfuse.frontend.program import Program

SOURCE = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__constant__ unsigned int table[4] = {1, 2, 3, 4};
struct Pair { int a, b; };
__device__ __forceinline__ float twice(float x) { return 2.f * x; }
template <typename T, int N>
__global__ void __launch_bounds__(256, 2) scale(T* __restrict__ a, const int n, Pair p) { a[0] = 1; }
extern "C" __global__ void plain(float* a) { }
extern __shared__ float dynamic_area[];
static void host_side() { }
"""


def test_model_finds_kernels_helpers_and_declarations():
    source = model_source(Path("k.cu"), SOURCE)
    kernels = source.kernels
    assert set(kernels) == {"scale", "plain"}
    scale = kernels["scale"]
    assert scale.template_params == ("T", "N")
    assert scale.launch_bounds == ("256", "2") and scale.max_threads() == 256
    assert [p.name for p in scale.params] == ["a", "n", "p"]
    assert scale.line == 6
    assert kernels["plain"].extern_c
    kinds = {f.name: f.kind for f in source.functions}
    assert kinds == {"twice": "device", "scale": "global", "plain": "global", "host_side": "host"}
    declared = {n for i in source.items for n in i.names}
    assert {"cg", "table", "Pair", "dynamic_area"} <= declared


def test_param_rename_keeps_qualifiers():
    scale = model_source(Path("k.cu"), SOURCE).kernels["scale"]
    assert scale.params[0].renamed("hf1_a") == "T* __restrict__ hf1_a"


def test_program_merges_identical_definitions_and_records_or_refuses_conflicts():
    a = model_source(Path("a.cu"), "__device__ int f(int x) { return x; }\n__global__ void ka(int* p) { p[0] = f(1); }\n")
    b = model_source(Path("b.cu"), "__device__ int f(int x) { return x; }\n__global__ void kb(int* p) { p[0] = f(2); }\n")
    program = Program.merge([a, b])
    assert len(program.functions["f"]) == 1 and not program.function_clashes
    # a function of one name defined differently: each file's is kept, for a copy per part
    c = model_source(Path("c.cu"), "__device__ int f(int x) { return -x; }\n__global__ void kc(int* p) { }\n")
    clash = Program.merge([a, c]).function_clashes["f"]
    assert [i.text for i in clash[Path("a.cu")]] == ["__device__ int f(int x) { return x; }"]
    assert [i.text for i in clash[Path("c.cu")]] == ["__device__ int f(int x) { return -x; }"]
    # a type of one name defined differently is refused
    d = model_source(Path("d.cu"), "struct S { int a; };\n__global__ void kd(S* p) { }\n")
    e = model_source(Path("e.cu"), "struct S { float b; };\n__global__ void ke(S* p) { }\n")
    with pytest.raises(HFuseError) as err:
        Program.merge([d, e])
    assert "'S'" in str(err.value) and "e.cu:1" in str(err.value) and "d.cu:1" in str(err.value)


def test_unknown_kernel_suggests_a_close_name():
    program = Program.merge([model_source(Path("k.cu"), SOURCE)])
    with pytest.raises(HFuseError) as err:
        program.kernel("scal", Path("k.cu"))
    assert "did you mean 'scale'" in str(err.value)
    with pytest.raises(HFuseError, match="device function, not a __global__ kernel"):
        program.kernel("twice", Path("k.cu"))
