"""Symbol data for ``__constant__``/``__device__`` variables, on the CPU: validation, NVRTC
lowered names and cubin sizes, fused names, and the copy logic against a fake module.
The copies on a real GPU are in tests/tuning/test_symbols_gpu.py."""
from __future__ import annotations

import ctypes
import types
from pathlib import Path

import numpy as np
import pytest

import hfuse
import toolchain
from hfuse.errors import HFuseError
from hfuse.launch import KernelLaunch, Output, check_symbols, describe_symbol, symbol_bytes, symbol_nbytes
from hfuse.runtime import symbols as symbols_module
from hfuse.runtime.loaded import CompiledKernel
from hfuse.runtime.compile import Compiler
from hfuse.runtime.binary import LaunchError
from hfuse.runtime.symbols import (
    SymbolError,
    compile_with_symbols,
    cubin_symbol_sizes,
    cubin_variables,
    device_variables,
    failed_name_expressions,
    fused_symbol_names,
    fused_symbols,
    lowered_symbol,
    present_symbols,
    symbol_expressions,
    symbol_layout,
    symbols_digest,
    write_symbols,
)
from hfuse.spec import Dim3, KernelSpec

TABLES = r"""
__constant__ float table[16];
namespace ns { __constant__ int table[4]; namespace inner { __device__ double deep[3]; } }
namespace { __constant__ unsigned hidden[5]; }
__device__ int counter;
struct Params { int a; float b; };
__constant__ Params params;

__global__ void reader(float* out) {
  int i = threadIdx.x;
  out[i] = table[i % 16] + ns::table[i % 4] + (float)ns::inner::deep[i % 3] + hidden[i % 5] + counter + params.b;
}
"""


class FakeDeviceArray:
    """What hfuse reads from a CuPy array: data.ptr, dtype, shape, nbytes and get()."""

    def __init__(self, host: np.ndarray):
        self._host = np.asarray(host)
        self.data = types.SimpleNamespace(ptr=0xDEAD0000)
        self.dtype, self.shape, self.nbytes = self._host.dtype, self._host.shape, self._host.nbytes

    def get(self) -> np.ndarray:
        return self._host.copy()


@pytest.fixture(scope="module")
def nvrtc_compiler() -> Compiler:
    """NVRTC on the CPU; the tests using it carry the ``nvrtc`` marker (a failure in CI)."""
    return toolchain.nvrtc_compiler()


# -- validation -------------------------------------------------------------------------

def test_accepted_values_and_normalised_names():
    values = {
        "table": np.arange(16, dtype=np.float32),
        "::counter": np.int32(7),
        "ns::table": b"\x01\x00\x00\x00" * 4,
        "ns::inner::deep": bytearray(24),
        "mv": memoryview(np.zeros(3, np.float64)),
        "dev": FakeDeviceArray(np.ones(4, np.uint32)),
    }
    out = check_symbols(values, "k")
    assert list(out) == ["table", "counter", "ns::table", "ns::inner::deep", "mv", "dev"]
    assert out["table"] is values["table"]  # no copies of the data
    assert [symbol_nbytes(v) for v in out.values()] == [64, 4, 16, 24, 24, 16]
    assert symbol_bytes(out["counter"]) == np.int32(7).tobytes()
    assert symbol_bytes(out["dev"]) == np.ones(4, np.uint32).tobytes()
    assert describe_symbol(out["table"]) == {"dtype": "float32", "shape": [16], "bytes": 64}
    assert describe_symbol(out["counter"]) == {"dtype": "int32", "shape": [], "bytes": 4}
    assert describe_symbol(out["ns::table"]) == {"dtype": "bytes", "shape": [16], "bytes": 16}
    assert describe_symbol(out["dev"]) == {"dtype": "uint32", "shape": [4], "bytes": 16}
    assert check_symbols(None) == {} and check_symbols({}) == {}


def test_non_contiguous_array_is_copied_in_c_order():
    a = np.arange(12, dtype=np.int32).reshape(3, 4).T  # Fortran-ordered view
    assert symbol_bytes(a) == np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("value, words", [
    (1.5, "ambiguous"),
    (3, "ambiguous"),
    (True, "ambiguous"),
    ([1, 2, 3], "type list"),
    (np.array([None, 1], dtype=object), "not plain data"),
    (np.zeros(0, np.float32), "empty"),
    (b"", "empty"),
    ("text", "type str"),
])
def test_bad_values_are_refused_with_the_symbol_named(value, words):
    with pytest.raises(HFuseError) as info:
        check_symbols({"coeffs": value}, "my_kernel")
    assert words in str(info.value) and "coeffs" in str(info.value) and "my_kernel" in str(info.value)


@pytest.mark.parametrize("name", ["", "&table", "table[1]", "1table", "ns::", "ns:::x", "a b", "ns::&x", 3])
def test_bad_names_are_refused(name):
    with pytest.raises(HFuseError, match="not a C\\+\\+ name"):
        check_symbols({name: np.int32(1)})


def test_a_name_given_twice_and_a_non_mapping_are_refused():
    with pytest.raises(HFuseError, match="given twice"):
        check_symbols({"x": np.int32(1), "::x": np.int32(2)})
    with pytest.raises(HFuseError, match="mapping"):
        check_symbols([("x", np.int32(1))])


def test_kernel_launch_validates_and_keeps_symbols():
    spec = KernelSpec(Path("k.cu"), "k", 128)
    launch = KernelLaunch(spec, [], [Output(0)], grid=Dim3(1), symbols={"::coeffs": np.zeros(4, np.float32)})
    assert list(launch.symbols) == ["coeffs"]
    assert list(launch.with_block(256).symbols) == ["coeffs"]  # survives dataclasses.replace
    assert KernelLaunch(spec, [], [], grid=Dim3(1)).symbols == {}
    with pytest.raises(HFuseError, match="kernel 'lbl'.*ambiguous"):
        KernelLaunch(spec, [], [], grid=Dim3(1), label="lbl", symbols={"coeffs": 2.0})


# -- NVRTC: lowered names and sizes ------------------------------------------------------

@pytest.mark.nvrtc
def test_nvrtc_lowers_symbol_name_expressions(nvrtc_compiler):
    names = ["table", "ns::table", "ns::inner::deep", "counter", "params", "hidden"]
    b = nvrtc_compiler.compile(TABLES, ["reader", *symbol_expressions(names)])
    assert b.lowered["&table"] == "table"  # file scope: C++ does not mangle variables
    assert b.lowered["&ns::table"] == "_ZN2ns5tableE"
    assert b.lowered["&ns::inner::deep"] == "_ZN2ns5inner4deepE"
    assert b.lowered["&counter"] == "counter"
    assert "hidden" in b.lowered["&hidden"] and b.lowered["&hidden"].startswith("_ZN")  # anonymous namespace
    sizes = cubin_symbol_sizes(b.cubin)
    assert {lowered_symbol(b, n): sizes[lowered_symbol(b, n)] for n in names} == {
        "table": 64, "_ZN2ns5tableE": 16, "_ZN2ns5inner4deepE": 24, "counter": 4, "params": 8,
        b.lowered["&hidden"]: 20,
    }
    assert "reader" not in sizes and "_Z6readerPf" not in sizes  # functions are not variables


def test_lowered_symbol_without_an_expression():
    b = types.SimpleNamespace(lowered={"&ns::t": "_ZN2ns1tE"})
    assert lowered_symbol(b, "ns::t") == "_ZN2ns1tE" and lowered_symbol(b, "::ns::t") == "_ZN2ns1tE"
    assert lowered_symbol(b, "plain") == "plain"  # at file scope the name is the symbol
    assert lowered_symbol(b, "ns::other") is None


@pytest.mark.nvrtc
def test_unknown_symbols_are_named_with_the_kernel(nvrtc_compiler):
    with pytest.raises(SymbolError) as info:
        compile_with_symbols(nvrtc_compiler, TABLES, "reader", ["table", "nope", "ns::missing"], kernel="reader_launch")
    text = str(info.value)
    assert "'nope'" in text and "'ns::missing'" in text and "'table'" not in text.split("hint")[0]
    assert "reader_launch" in text
    # a fused source may lack a symbol nothing reads: compiled without it instead
    b = compile_with_symbols(nvrtc_compiler, TABLES, "reader", ["table", "nope"], kernel="f", optional=True)
    assert "&table" in b.lowered and "&nope" not in b.lowered
    assert present_symbols(b, {"table": 1, "nope": 2}) == {"table": 1}


def test_failed_name_expressions_parses_nvrtc_log():
    log = ('__nv_name_map(2): error: identifier "nope" is undefined\n  #pragma nv_mangled_name &nope\n'
           '                           ^\n\n__nv_name_map(3): error: name followed by "::" must be a class or '
           'namespace name\n  #pragma nv_mangled_name &a::x\n')
    assert failed_name_expressions(log) == {"&nope", "&a::x"}
    assert failed_name_expressions("") == set()


def test_cubin_symbol_sizes_refuses_what_is_not_a_cubin():
    with pytest.raises(ValueError):
        cubin_symbol_sizes(b"not an elf file at all, but long enough to have a header of sixty-four bytes")


@pytest.mark.nvrtc
def test_symbol_layout_checks_names_and_sizes(nvrtc_compiler):
    b = compile_with_symbols(nvrtc_compiler, TABLES, "reader", ["table", "ns::table", "counter"], kernel="reader")
    layout = symbol_layout(b, {"table": np.zeros(16, np.float32), "ns::table": np.zeros(4, np.int32),
                               "counter": np.int32(1)}, "reader")
    assert layout == [("counter", "counter", 4), ("ns::table", "_ZN2ns5tableE", 16), ("table", "table", 64)]
    with pytest.raises(SymbolError, match=r"'table' is 64 bytes, but its data is 60 bytes \(float32, shape \(15,\)\)"):
        symbol_layout(b, {"table": np.zeros(15, np.float32)}, "reader")
    with pytest.raises(SymbolError, match="no __constant__ or __device__ variable 'other'.*kernel 'reader'|"
                                          "kernel 'reader'.*no __constant__ or __device__ variable 'other'"):
        symbol_layout(b, {"other": np.int32(0)}, "reader")
    with pytest.raises(SymbolError, match="name expression '&ns::inner::deep'"):
        symbol_layout(b, {"ns::inner::deep": np.zeros(3)}, "reader")  # not compiled with its expression


# -- fused names -------------------------------------------------------------------------

FUSED_TEXT = """
// header: coeffs_unused is mentioned only in this comment
__constant__ float coeffs__hf1[16];
__constant__ float coeffs__hf2[16];
namespace lut { __constant__ unsigned table[64]; }
__device__ int counter;
/* counter_b only in a comment */
"""


def test_fused_names_follow_the_renames_and_drop_what_the_source_lacks():
    renames = ({"coeffs": "coeffs__hf1"}, {"coeffs": "coeffs__hf2"})
    per_part = [["coeffs", "counter", "coeffs_unused"], ["coeffs", "::lut::table", "counter_b"]]
    names = fused_symbol_names(renames, per_part, FUSED_TEXT)
    assert names == {"coeffs__hf1": [(0, "coeffs")], "counter": [(0, "counter")],
                     "coeffs__hf2": [(1, "coeffs")], "lut::table": [(1, "lut::table")]}
    assert fused_symbol_names((), [["a"], ["a", "b"]]) == {"a": [(0, "a"), (1, "a")], "b": [(1, "b")]}


def test_fused_symbols_union_and_conflicts():
    a, b = np.arange(16, dtype=np.float32), np.ones(16, np.float32)
    renames = ({"coeffs": "coeffs__hf1"}, {"coeffs": "coeffs__hf2"})
    data = fused_symbols(renames, [{"coeffs": a, "counter": np.int32(3)}, {"coeffs": b}], ["ka", "kb"], FUSED_TEXT)
    assert data["coeffs__hf1"] is a and data["coeffs__hf2"] is b and data["counter"] == 3
    # one shared (unrenamed) symbol: the same bytes are fine, different bytes are not
    same = fused_symbols((), [{"counter": np.int32(3)}, {"counter": np.array(3, np.int32)}], ["ka", "kb"])
    assert list(same) == ["counter"]
    with pytest.raises(SymbolError, match="'ka' and 'kb' give different data for symbol 'counter'"):
        fused_symbols((), [{"counter": np.int32(3)}, {"counter": np.int32(4)}], ["ka", "kb"])


def test_digest_depends_on_names_and_contents_only():
    x = np.arange(4, dtype=np.int32)
    assert symbols_digest({"t": x}) == symbols_digest({"t": x.copy()}) == symbols_digest({"t": x.tobytes()})
    assert symbols_digest({"t": x}) != symbols_digest({"u": x})
    assert symbols_digest({"t": x}) != symbols_digest({"t": x + 1})


from tuning.symbol_kernels import MIXER_CU as B_CU, SCALE_CU as A_CU  # noqa: E402  (the same two files)



@pytest.mark.nvrtc
def test_fused_kernel_symbols_compile_and_lay_out(nvrtc_compiler):
    """The whole CPU side for a real fusion: the front end's renames, the union under fused
    names, NVRTC's lowered names for them, and the sizes the copies will be checked against."""
    specs = [KernelSpec(Path("a.cu"), "scale", 128), KernelSpec(Path("b.cu"), "mixer", 128)]
    fused = hfuse.fuse(specs, sources={"a.cu": A_CU, "b.cu": B_CU})
    assert len(fused.symbol_names) == 2
    assert fused.symbol_names[0]["coeffs"] != fused.symbol_names[1]["coeffs"]
    per_part = [{"coeffs": np.arange(16, dtype=np.uint32)},
                {"coeffs": np.arange(16, 32, dtype=np.uint32), "lut::table": np.zeros(64, np.uint32),
                 "mix::salt": np.ones(4, np.uint32)}]
    data = fused_symbols(fused.symbol_names, per_part, ["scale", "mixer"], fused.source)
    assert set(data) == {fused.symbol_names[0]["coeffs"], fused.symbol_names[1]["coeffs"], "lut::table", "mix::salt"}
    names = fused_symbol_names(fused.symbol_names, [list(p) for p in per_part], fused.source)
    b = compile_with_symbols(nvrtc_compiler, fused.source, fused.name_expression, names, kernel=fused.name,
                             optional=True)
    assert present_symbols(b, data) == data
    layout = {name: (lowered, size) for name, lowered, size in symbol_layout(b, data, fused.name)}
    assert layout["lut::table"] == ("_ZN3lut5tableE", 256) and layout["mix::salt"] == ("_ZN3mix4saltE", 16)
    assert all(size == 64 for name, (_, size) in layout.items() if "coeffs" in name)


# -- the copies, against a fake CuPy -----------------------------------------------------

class FakePointer:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def copy_from_host(self, ptr, size):
        assert isinstance(ptr, int)
        self.log.append(("copy", self.name, ctypes.string_at(ptr, size)))


class FakeModule:
    def __init__(self, log):
        self.log = log

    def get_global(self, name):
        return FakePointer(self.log, name)


@pytest.fixture
def fake_gpu(monkeypatch):
    log: list = []
    device = types.SimpleNamespace(synchronize=lambda: log.append(("sync",)))
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=lambda: device))
    import hfuse.runtime.device as device_module

    monkeypatch.setattr(device_module, "require_gpu", lambda: fake)
    return log


def test_write_symbols_copies_exact_bytes_once(nvrtc_compiler, fake_gpu):
    b = compile_with_symbols(nvrtc_compiler, TABLES, "reader", ["table", "ns::table"], kernel="reader")
    module, written = FakeModule(fake_gpu), {}
    t, n = np.arange(16, dtype=np.float32), FakeDeviceArray(np.array([1, 2, 3, 4], np.int32))
    copied = write_symbols(module, b, {"table": t, "ns::table": n}, "reader", written)
    assert copied == ["ns::table", "table"]
    assert fake_gpu == [("sync",), ("copy", "_ZN2ns5tableE", n.get().tobytes()), ("copy", "table", t.tobytes()),
                        ("sync",)]
    fake_gpu.clear()
    assert write_symbols(module, b, {"table": t.copy(), "ns::table": n}, "reader", written) == []  # unchanged
    assert fake_gpu == []
    t2 = t + 1
    assert write_symbols(module, b, {"table": t2}, "reader", written) == ["table"]
    assert fake_gpu == [("sync",), ("copy", "table", t2.tobytes()), ("sync",)]
    fake_gpu.clear()
    assert write_symbols(module, b, {"table": t2}, "reader", written, force=True) == ["table"]  # copied anyway
    assert fake_gpu == [("sync",), ("copy", "table", t2.tobytes()), ("sync",)]


def test_write_symbols_checks_everything_before_copying(nvrtc_compiler, fake_gpu):
    b = compile_with_symbols(nvrtc_compiler, TABLES, "reader", ["table", "counter"], kernel="reader")
    with pytest.raises(SymbolError, match="'counter' is 4 bytes"):
        write_symbols(FakeModule(fake_gpu), b, {"table": np.zeros(16, np.float32), "counter": np.int64(1)},
                      "reader", {})
    assert fake_gpu == []


def _fake_raw():
    return types.SimpleNamespace(num_regs=8, local_size_bytes=0, shared_size_bytes=0, const_size_bytes=64,
                                 max_threads_per_block=1024, binary_version=90)


def test_compiled_kernel_set_symbols(nvrtc_compiler, fake_gpu):
    b = compile_with_symbols(nvrtc_compiler, TABLES, "reader", ["table"], kernel="reader")
    shared: dict = {}
    k1 = CompiledKernel("reader", "_Z6readerPf", _fake_raw(), b, 48 * 1024, module=FakeModule(fake_gpu),
                        symbols_written=shared)
    k2 = CompiledKernel("reader", "_Z6readerPf", _fake_raw(), b, 48 * 1024, module=FakeModule(fake_gpu),
                        symbols_written=shared)
    assert k1.set_symbols({"::table": np.zeros(16, np.float32)}) == ["table"]
    assert k2.set_symbols({"table": np.zeros(16, np.float32)}) == []  # one module, one record
    assert k1.set_symbols({}) == []
    with pytest.raises(HFuseError, match="ambiguous"):
        k1.set_symbols({"table": 1.0})
    bare = CompiledKernel("reader", "_Z6readerPf", _fake_raw(), b, 48 * 1024)
    with pytest.raises(LaunchError, match="without its module"):
        bare.set_symbols({"table": np.zeros(16, np.float32)})


def test_load_refuses_an_instance_that_is_not_a_file_name():
    with pytest.raises(ValueError, match="instance"):
        Compiler("sm_90").load(types.SimpleNamespace(key="k"), "k", instance="../x")


def test_load_with_symbols_uses_a_module_per_data(monkeypatch):
    calls = []

    class FakeCompiler:
        def load(self, binary, name, *, instance=""):
            calls.append(instance)
            return types.SimpleNamespace(set_symbols=lambda s, label=None: calls.append(("set", sorted(s), label)))

    x = np.arange(4, dtype=np.int32)
    symbols_module.load_with_symbols(FakeCompiler(), None, "k", {}, kernel="k")
    symbols_module.load_with_symbols(FakeCompiler(), None, "k", {"t": x}, kernel="lbl")
    symbols_module.load_with_symbols(FakeCompiler(), None, "k", {"t": x.copy()}, kernel="lbl")
    symbols_module.load_with_symbols(FakeCompiler(), None, "k", {"t": x + 1}, kernel="lbl")
    assert calls[0] == "" and calls[1] == calls[3] and calls[1] != calls[5] and calls[1].startswith("s")
    assert calls[2] == ("set", ["t"], "lbl")


# -- device variables a kernel writes: compared after a run from their initial contents ----

WRITTEN = r"""
__device__ int seven = 7;
__device__ unsigned retired;
__device__ float ramp[3] = {1.f, 2.f, 3.f};
namespace stats { __device__ double sums[2]; }
__global__ void bump(float* out) {
  atomicAdd(&retired, 1u); seven += 1; ramp[threadIdx.x % 3] *= 2.f; stats::sums[0] += out[0];
}
"""


def test_cubin_variables_hold_each_variables_initial_bytes(nvrtc_compiler):
    names = ["seven", "retired", "ramp", "stats::sums"]
    b = nvrtc_compiler.compile(WRITTEN, ["bump", *symbol_expressions(names)])
    found = cubin_variables(b.cubin)
    initial = {n: found[lowered_symbol(b, n)].initial for n in names}
    assert initial == {"seven": np.int32(7).tobytes(), "retired": bytes(4),
                       "ramp": np.array([1, 2, 3], np.float32).tobytes(), "stats::sums": bytes(16)}
    assert {n: found[lowered_symbol(b, n)].size for n in names} == {"seven": 4, "retired": 4, "ramp": 12,
                                                                    "stats::sums": 16}


class FakeCupy:
    """What ``device_variables`` asks of CuPy: a byte array over a module's global, and a copy."""

    uint8 = np.uint8

    @staticmethod
    def ndarray(shape, dtype, memptr):
        return ("view", memptr, shape)

    @staticmethod
    def asarray(host):
        return host.copy()


def test_device_variables_start_from_the_initialiser_or_the_data_given(nvrtc_compiler, monkeypatch):
    import hfuse.runtime.device as device_module

    monkeypatch.setattr(device_module, "require_gpu", lambda: FakeCupy)
    b = compile_with_symbols(nvrtc_compiler, WRITTEN, "bump", ["seven", "ramp", "stats::sums"], kernel="bump")
    module = types.SimpleNamespace(get_global=lambda lowered: f"ptr:{lowered}")
    given = {"ramp": np.array([9, 9, 9], np.float32)}
    seven, ramp, sums = device_variables(module, b, ["seven", "ramp", "stats::sums"], given, kernel="bump")
    assert (seven.name, seven.view) == ("seven", ("view", "ptr:seven", (4,)))
    assert seven.initial.tobytes() == np.int32(7).tobytes()
    assert ramp.initial.tobytes() == given["ramp"].tobytes()  # the user's symbol data is what it starts from
    assert sums.view == ("view", "ptr:_ZN5stats4sumsE", (16,))  # by its lowered name
    assert device_variables(module, b, [], {}, kernel="bump") == ()
    with pytest.raises(SymbolError, match="no __device__ variable 'stats::count' to compare"):
        device_variables(module, b, ["stats::count"], {}, kernel="bump")
