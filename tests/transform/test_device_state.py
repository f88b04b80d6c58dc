"""Which uses of a device variable may write it (``device_state.py``): two parts that
would use one written variable at once are refused; a table both only read is shared."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.api import fuse
from hfuse.errors import HFuseError
from hfuse.frontend.extract import model_source
from hfuse.frontend.resolve import Resolver
from hfuse.spec import Dim3, KernelSpec
from hfuse.transform.device_state import device_state_uses

VARIABLES = "__device__ unsigned count;\n__device__ float table[256];\nstruct S { int n; __device__ void bump(); };\n" \
            "__device__ S stats;\n__device__ float* where;\n"


def _uses(body: str) -> list[tuple[str, bool]]:
    source = model_source(Path("k.cu"), VARIABLES + f"__global__ void k(float* y, int i) {{\n  {body}\n}}\n")
    resolver = Resolver(declared={"count", "table", "stats", "where", "S"})
    found = device_state_uses([source.kernels["k"]], {"count": False, "table": True, "stats": False, "where": True},
                              resolver)
    return [(u.key, u.writes) for u in found]


@pytest.mark.parametrize("body, key", [
    ("count = 0;", "count"),
    ("table[i] = 1.f;", "table"),
    ("++count;", "count"),
    ("table[i]++;", "table"),
    ("atomicAdd(&count, 1u);", "count"),
    ("atomicAdd(&table[i], 1.f);", "table"),
    ("atomicAdd(table + i, 1.f);", "table"),
    ("fill(table, 4);", "table"),  # the array itself, to whoever may write through it
    ("float* p = table;", "table"),  # an alias
    ("stats.n += 2;", "stats"),
    ("stats.bump();", "stats"),
    ("*where = 1.f;", "where"),
    ("(table)[i] = 0.f;", "table"),
])
def test_writes(body, key):
    assert (key, True) in _uses(body)


@pytest.mark.parametrize("body, key", [
    ("y[i] = table[i] * 2.f;", "table"),
    ("y[i] = __ldg(&table[i]);", "table"),
    ("y[i] = expf(table[i & 255]);", "table"),
    ("if (count > 3) y[i] = 0.f;", "count"),
    ("y[table[0] > 0.f ? i : 0] = stats.n;", "table"),
    ("y[(int)count] = 1.f;", "count"),
    ("unsigned c = count + 1; y[i] = c;", "count"),  # a scalar's value
    ("y[i] = *where;", "where"),
])
def test_reads(body, key):
    assert _uses(body) and all(not writes for k, writes in _uses(body) if k == key)


def test_a_local_of_the_same_name_is_not_the_variable():
    assert _uses("unsigned count = 0; count = 3; y[i] = count;") == []


def test_a_local_hides_the_variable_only_in_its_own_scope():
    # the global is written after the block that declared a local of its name
    assert ("count", True) in _uses("{ unsigned count = 0; y[i] = count; }\n  count = 7u;")
    assert ("count", True) in _uses("count = 1u; unsigned count = 2; y[i] = count;")  # before the local


def test_a_parameter_hides_the_variable():
    source = model_source(Path("k.cu"), VARIABLES + "__device__ void f(unsigned* count) { count[0] = 1; }\n")
    found = device_state_uses([f for f in source.functions if f.name == "f"], {"count": False},
                              Resolver(declared={"count"}))
    assert found == []


COUNTERS = """__device__ unsigned int retired = 0;
__device__ float lut[256];
__global__ void last_block(const float* x, float* out) {
  if (threadIdx.x == 0 && atomicInc(&retired, gridDim.x) == gridDim.x - 1) { *out = x[0]; retired = 0; }
}
__global__ void lookup(const int* idx, float* y) { y[threadIdx.x] = lut[idx[threadIdx.x] & 255]; }
__global__ void peek(float* y) { y[threadIdx.x] = retired; }
"""


def test_a_kernel_that_writes_a_device_variable_is_not_fused_with_itself(tmp_path):
    path = tmp_path / "counters.cu"
    path.write_text(COUNTERS)
    with pytest.raises(HFuseError, match="both parts of 'last_block' use the device variable 'retired'") as err:
        fuse([KernelSpec(path, "last_block", Dim3(128)), KernelSpec(path, "last_block", Dim3(128))])
    assert err.value.where.line == 4
    with pytest.raises(HFuseError, match="'last_block' writes the device variable 'retired' .*'peek' reads it too"):
        fuse([KernelSpec(path, "peek", Dim3(128)), KernelSpec(path, "last_block", Dim3(128))])
    # a table both only read, or a kernel that does not touch the counter, fuses
    fuse([KernelSpec(path, "lookup", Dim3(128)), KernelSpec(path, "lookup", Dim3(128))])
    fuse([KernelSpec(path, "lookup", Dim3(128)), KernelSpec(path, "last_block", Dim3(128))])


def test_two_files_variables_of_one_name_are_one_per_part_and_fuse(tmp_path):
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text(COUNTERS)
    b.write_text(COUNTERS.replace("*out = x[0]", "*out = -x[0]"))
    fused = fuse([KernelSpec(a, "last_block", Dim3(128)), KernelSpec(b, "last_block", Dim3(128))])
    assert "retired__hf1" in fused.source and "retired__hf2" in fused.source


def test_a_shared_helpers_static_local_is_refused_for_two_parts(tmp_path):
    path = tmp_path / "tickets.cu"
    path.write_text("__device__ unsigned next_ticket() { static unsigned ticket = 0; return atomicAdd(&ticket, 1u); }\n"
                    "__global__ void take(unsigned* out) { out[threadIdx.x] = next_ticket(); }\n"
                    "__global__ void other(float* out) { static constexpr float k = 2.f; out[threadIdx.x] = k; }\n")
    with pytest.raises(HFuseError, match="'next_ticket' keeps a static variable 'ticket' that both 'take' and 'take'") as err:
        fuse([KernelSpec(path, "take", Dim3(128)), KernelSpec(path, "take", Dim3(128))])
    assert err.value.where.line == 1
    fuse([KernelSpec(path, "take", Dim3(128)), KernelSpec(path, "other", Dim3(128))])  # one user, constants


def test_the_device_variables_each_part_writes_are_named_for_verification():
    # verification compares them after the run as it does the arrays; a table only read is not among them
    source = """__device__ unsigned retired;
__device__ float scale = 2.f;
__constant__ float taps[4];
namespace stats { __device__ unsigned long long seen[2]; }
__managed__ int flag;
__device__ void count_seen() { atomicAdd(&stats::seen[0], 1ull); }
__global__ void last_block(const float* a, float* out, int n) {
  if (threadIdx.x == 0 && atomicInc(&retired, gridDim.x) == gridDim.x - 1) out[0] = a[0] * scale + taps[0];
  count_seen();
}
__global__ void other(float* y) { y[threadIdx.x] = scale; if (threadIdx.x == 0) flag = 1; }
"""
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "last_block", Dim3(128))],
                 sources={"k.cu": source})
    assert fused.written_variables == ((), ("retired", "stats::seen"))  # the helper's write is the kernel's
    assert [n for n in fused.notes if "variable" in n] == [
        "note: other writes the __managed__ variable 'flag' (k.cu:11); hfuse's verification (--verify, hfuse tune) "
        "compares arrays and __device__ variables, not managed memory: check that one yourself"]


def test_a_written_variable_two_files_define_is_compared_under_each_parts_name():
    one = "__device__ unsigned done;\n__global__ void a(float* y) { y[threadIdx.x] = 1.f; atomicAdd(&done, 1u); }\n"
    two = "__device__ unsigned done;\n__global__ void b(float* y) { y[threadIdx.x] = 2.f; done = 7u; }\n"
    fused = fuse([KernelSpec("one.cu", "a", Dim3(64)), KernelSpec("two.cu", "b", Dim3(64))],
                 sources={"one.cu": one, "two.cu": two})
    assert fused.written_variables == (("done__hf1",), ("done__hf2",))
    assert "__device__ unsigned done__hf1;" in fused.source and "done__hf2 = 7u;" in fused.source
