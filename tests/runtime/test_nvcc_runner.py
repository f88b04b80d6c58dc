"""nvcc in place of NVRTC (``runtime.nvcc_runner``), for sources that keep PyTorch's headers.

NVRTC has no host C++ library, so a fused file that keeps ``<ATen/ATen.h>`` compiles with
nvcc only. These tests stand in a folder of their own for PyTorch's (a header that includes
``<string>`` and defines a type a kernel uses), so they need nvcc and not torch.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import hfuse.frontend.options as options_module
import hfuse.toolkit as toolkit
from hfuse.frontend.options import CompileOptions
from hfuse.runtime.binary import CompileError
from hfuse.runtime.binary_cache import BinaryCache
from hfuse.runtime.compile import CompileJob, Compiler, nvrtc_includes, run_compile_job, run_nvrtc, toolchain_for
from hfuse.runtime.nvcc_runner import with_name_pointers
from hfuse.runtime.symbols import SymbolError, compile_with_symbols

from toolchain import compile_nvrtc

KERNELS = r"""
namespace ns {
template <typename T, int N> __global__ void fill(T* p) { p[threadIdx.x] = T(N); }
__device__ int counter;
}
__constant__ float coeffs[4];
extern "C" __global__ void plain(int* p) { p[0] = 2; }
"""


@pytest.mark.nvcc
def test_each_name_expression_gets_its_symbol_from_the_ptx():
    compiler = Compiler("sm_90", toolchain="nvcc")
    names = ["ns::fill<float, 3>", "plain", "&coeffs", "&ns::counter"]
    binary = compiler.compile(KERNELS, names)
    # the template is instantiated by its name expression alone, as NVRTC instantiates it
    assert binary.lowered == {"ns::fill<float, 3>": "_ZN2ns4fillIfLi3EEEvPT_", "plain": "plain",
                              "&coeffs": "coeffs", "&ns::counter": "_ZN2ns7counterE"}
    assert not binary.missing_reports(names)  # ptxas's report of every kernel asked for
    assert binary.params("ns::fill<float, 3>")[0].size == 8
    assert "-default-device" not in compiler.options()  # an NVRTC option nvcc does not know


@pytest.mark.nvcc
def test_a_symbol_the_source_does_not_define_is_named_as_nvrtc_names_it():
    compiler = Compiler("sm_90", toolchain="nvcc")
    with pytest.raises(SymbolError, match="'missing'"):
        compile_with_symbols(compiler, KERNELS, "plain", ["missing"], kernel="plain")
    # a fused source leaves out what no part reads: compiled without that symbol instead
    binary = compile_with_symbols(compiler, KERNELS, "plain", ["missing", "coeffs"], kernel="plain", optional=True)
    assert binary.lowered["&coeffs"] == "coeffs" and "&missing" not in binary.lowered


@pytest.mark.nvcc
def test_a_source_error_is_nvccs_log():
    with pytest.raises(CompileError, match="nvcc could not compile") as failed:
        run_compile_job(CompileJob("__global__ void k() { undefined_name(); }", ("k",), ("-arch=sm_90",), "nvcc"))
    assert "undefined_name" in failed.value.log


@pytest.mark.parametrize("source", ["__global__ void k() {}", "__global__ void k() {}\n"])
def test_the_name_pointers_start_on_the_line_said(source):
    # nvcc's errors name lines: a failed name expression is found by its line
    text, first = with_name_pointers(source, ["k", "&v"])
    assert text.splitlines()[first - 1:] == ["__device__ void* hfuse_name_0 = (void*)(&k);",
                                             "__device__ void* hfuse_name_1 = (void*)(&v);"]


def test_nvrtc_is_never_handed_an_nvcc_job():
    with pytest.raises(ValueError, match="nvcc"):
        run_nvrtc(CompileJob("", (), (), "nvcc"))


def test_includes_that_nvrtc_reads_skip_the_blocks_hidden_from_it():
    source = ("#include <a.h>\n#ifndef __CUDACC_RTC__  // nvcc only\n#include <host.h>\n#endif\n"
              "#ifdef __CUDACC_RTC__\n#include <rtc.h>\n#else\n#include <not_rtc.h>\n#endif\n"
              "#if !defined(__CUDACC_RTC__)\n#if X\n#include <deep.h>\n#endif\n#else\n  #  include \"local.h\"\n#endif\n")
    assert nvrtc_includes(source) == ["a.h", "rtc.h", "local.h"]


@pytest.fixture
def fake_torch(tmp_path, monkeypatch) -> Path:
    """A folder standing for PyTorch's include folder: its header needs the host C++ library."""
    root = tmp_path / "torch_include"
    (root / "torch").mkdir(parents=True)
    (root / "torch" / "pair.h").write_text(
        "#pragma once\n#include <string>\nnamespace at { struct Pair { float a, b; }; "
        "inline std::string describe() { return \"pair\"; } }\n")
    monkeypatch.setattr(toolkit, "pytorch_include_dirs", lambda: (root,))
    monkeypatch.setattr(options_module, "pytorch_include_dirs", lambda: (root,))
    return root


USES_PAIR = """#include <torch/pair.h>
__global__ void sum_pairs(const at::Pair* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i].a + in[i].b;
}
"""


def test_a_kept_pytorch_header_asks_for_nvcc_and_says_why(fake_torch):
    toolchain, why = toolchain_for([USES_PAIR])
    assert toolchain == "nvcc" and "<torch/pair.h>" in why
    guarded = "#ifndef __CUDACC_RTC__\n#include <torch/pair.h>\n#endif\n__global__ void k() {}\n"
    assert toolchain_for([guarded]) == ("nvrtc", None)  # (hfuse guards a header no kernel needs)
    assert toolchain_for(["#include <cuda_fp16.h>\n"]) == ("nvrtc", None)


def test_device_code_naming_pytorchs_types_asks_for_nvcc(fake_torch):
    # vLLM's kernels instantiated for c10::Half: the header is kept from NVRTC, the type is not
    used = USES_PAIR.replace("#include <torch/pair.h>\n", "#ifndef __CUDACC_RTC__\n#include <torch/pair.h>\n#endif\n")
    toolchain, why = toolchain_for([used])
    assert toolchain == "nvcc" and "names PyTorch's at::Pair" in why
    # (a comment, and the C++ launch helper NVRTC never reads, name it harmlessly)
    helper = "// sums at::Pair values\n#ifndef __CUDACC_RTC__\n#include <torch/pair.h>\nvoid launch(at::Pair* p);\n#endif\n"
    assert toolchain_for([helper + "__global__ void k(float* x) { x[0] = 1.f; }\n"]) == ("nvrtc", None)


@pytest.mark.nvrtc
def test_an_installed_library_whose_headers_include_host_ones_asks_for_nvcc(tmp_path):
    # once: a library's <veclib/vec.cuh> including <cuda.h> went to NVRTC ("cannot open stdlib.h")
    lib = tmp_path / "site" / "veclib"
    lib.mkdir(parents=True)
    (lib / "vec.cuh").write_text('#pragma once\n#include <cuda_fp16.h>\n#include "detail.cuh"\n')
    (lib / "detail.cuh").write_text("#pragma once\n#include <cuda.h>\n")
    (lib / "guarded.cuh").write_text("#pragma once\n#ifndef __CUDACC_RTC__\n#include <iostream>\n#endif\n"
                                     "#include <cuda/std/cstdint>\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "site")])
    toolchain, why = toolchain_for(["#include <veclib/vec.cuh>\n"], options)
    assert toolchain == "nvcc" and "<veclib/vec.cuh>, which NVRTC cannot read: it cannot open <stdlib.h>" in why
    # what a library's conditions leave out is not asked for (CUTLASS's <ciso646> for MSVC)
    (lib / "msvc.cuh").write_text("#pragma once\n#if defined(_MSC_VER)\n#include <ciso646>\n#endif\n")
    assert toolchain_for(["#include <veclib/msvc.cuh>\n"], options) == ("nvrtc", None)
    assert toolchain_for(["#include <veclib/guarded.cuh>\n"], options) == ("nvrtc", None)
    assert toolchain_for(["#include <veclib/vec.cuh>\n"]) == ("nvrtc", None)  # (no library folders given)
    # a toolkit header hfuse does not know is followed too; those it knows are classified by name
    toolchain, why = toolchain_for(["#include <thrust/complex.h>\n"], options)
    assert toolchain == "nvcc" and "it cannot open <cmath>" in why
    assert toolchain_for(["#include <cuda_fp16.h>\n#include <cub/block/block_reduce.cuh>\n"], options) == \
        ("nvrtc", None)


@pytest.mark.nvrtc
def test_a_library_given_with_plain_include_flags_is_asked_of_nvrtc_too(tmp_path):
    # once (gsplat's bundled GLM, -I csrc/third_party/glm): the front end keeps <glm/...> as an
    # #include, but the tuner's options did not mark the folder as a library's, so its kernels
    # went to NVRTC, which cannot open GLM's <cassert>
    lib = tmp_path / "third_party" / "mathlib"
    (lib / "mathlib").mkdir(parents=True)
    (lib / "mathlib" / "vec.hpp").write_text("#pragma once\n#include <cassert>\nstruct vec3 { float x, y, z; };\n")
    options = CompileOptions.from_flags(include_dirs=[str(lib)])
    toolchain, why = toolchain_for(["#include <mathlib/vec.hpp>\n"], options)
    assert toolchain == "nvcc" and "<mathlib/vec.hpp>, which NVRTC cannot read: it cannot open <cassert>" in why
    # what the toolkit has and hfuse knows is still classified by its name alone
    assert toolchain_for(["#include <cuda_fp16.h>\n"], options) == ("nvrtc", None)


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_what_nvrtc_cannot_read_compiles_with_nvcc_through_the_same_compiler(fake_torch, tmp_path):
    options = CompileOptions.from_flags(std="c++17")
    failed = compile_nvrtc(USES_PAIR, ["sum_pairs"], flags=options.compiler_flags(std=False, pre_includes=False,
                                                                                  compiler="nvrtc"), check=False)
    assert not failed.ok  # NVRTC has no <string>, and no -isystem to PyTorch's folders either
    calls = []

    def counting(job: CompileJob):
        calls.append(job.toolchain)
        return run_compile_job(job)

    cache = BinaryCache(tmp_path / "binaries")
    compiler = Compiler.for_sources(options, [USES_PAIR], arch="sm_90", cache=cache, runner=counting)
    assert compiler.toolchain == "nvcc" and "-isystem" in compiler.options() and str(fake_torch) in compiler.options()
    binary = compiler.compile(USES_PAIR, ["sum_pairs"])
    assert binary.lowered["sum_pairs"].startswith("_Z9sum_pairs") and binary.ptxas[binary.symbol("sum_pairs")].registers
    # a second tuning run finds the binary in the cache, under nvcc's key
    again = Compiler.for_sources(options, [USES_PAIR], arch="sm_90", cache=cache, runner=counting)
    assert again.compile(USES_PAIR, ["sum_pairs"]).cubin == binary.cubin and calls == ["nvcc"]


@pytest.mark.nvcc
def test_verify_compiles_a_pytorch_extension_pair_with_nvcc(fake_torch, tmp_path, monkeypatch):
    # hfuse fuse --verify (and hfuse tune) run the originals and the fused kernel: with a
    # kept PyTorch header in the sources, every one of those compiles goes to nvcc
    import numpy as np

    import hfuse.frontend.preprocess as preprocess
    import hfuse.runtime.nvcc_runner as nvcc_runner
    from hfuse import Dim3, Fusion, KernelLaunch, KernelSpec, Output
    from hfuse.runtime.timing import Timing
    from hfuse.tuning.plan import Baselines
    from hfuse.tuning.recorded import RecordedBackend, RecordedRequest, RecordedRun, Recording
    from hfuse.tuning.verify import verify

    from tuning.test_verify import H100

    monkeypatch.setattr(preprocess, "pytorch_include_dirs", lambda: (fake_torch,))
    compiled = []
    real = nvcc_runner.run_nvcc
    monkeypatch.setattr(nvcc_runner, "run_nvcc", lambda job: compiled.append(job.names) or real(job))
    path = tmp_path / "ext.cu"
    path.write_text(USES_PAIR + "__global__ void shift(float* y, int n) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] += 1.0f;\n}\n")
    specs = [KernelSpec(path, "sum_pairs", Dim3(128)), KernelSpec(path, "shift", Dim3(128))]
    launches = [KernelLaunch(specs[0], [np.zeros(2048, np.float32), np.zeros(1024, np.float32), np.int32(1024)],
                             [Output(1)], grid=Dim3(8), label="sum_pairs"),
                KernelLaunch(specs[1], [np.zeros(1024, np.float32), np.int32(1024)], [Output(0)], grid=Dim3(8),
                             label="shift")]
    recording = Recording(H100, {"sum_pairs+shift": RecordedRequest(
        Baselines(alone={"sum_pairs": Timing.of([1.0]), "shift": Timing.of([1.0])}), {"verify": RecordedRun.timed(1.0)})})
    found = verify(specs, Fusion((Dim3(128), Dim3(128))), launches, backend=RecordedBackend(recording))
    assert found.verified and found.result.registers
    assert sorted(compiled) == [("shift",), ("sum_pairs",), ("sum_pairs_shift__hfused",)]
