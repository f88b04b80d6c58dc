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


def test_user_folders_are_searched_before_the_toolkits(tmp_path):
    """A library's own copy of a toolkit header given with -I (FlashInfer's newer CCCL, whose
    ``cuda::fast_mod_div`` CUDA 13.0's lacks) is the one NVRTC reads, as nvcc does: the
    toolkit's folders come after the user's."""
    (tmp_path / "cuda").mkdir()
    (tmp_path / "cuda" / "cmath").write_text("#pragma once\nnamespace cuda { template <class T> struct vendored_only "
                                             "{ T value; }; }\n")
    src = '#include <cuda/cmath>\nextern "C" __global__ void k(int* a) { cuda::vendored_only<int> v{1}; a[0] = v.value; }'
    assert nvrtc_compiler().compile(src, ["k"], options=(f"-I{tmp_path}",)).lowered["k"] == "k"


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


# -- the ptxas report: never a silent default --------------------------------------------
from dataclasses import replace as _replace  # noqa: E402

from hfuse.runtime.binary_cache import BinaryCache  # noqa: E402

KERNEL = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] *= 2.0f; }\n'


def _fresh(tmp_path=None) -> Compiler:
    return Compiler("sm_90", cache=BinaryCache(tmp_path) if tmp_path is not None else None)


def _without_log(binary):
    return _replace(binary, log="", ptxas={})


def test_every_kernel_compiled_has_its_report():
    compiler = _fresh()
    if not compiler._nvrtc_reports(compiler.options()):
        pytest.skip("this NVRTC writes no ptxas report at all (then spills are unknown for every kernel)")
    assert compiler.compile(KERNEL, ["k"]).missing_reports(["k"]) == []


def test_a_log_without_the_report_is_compiled_again_then_refused(monkeypatch):
    compiler = _fresh()
    if not compiler._nvrtc_reports(compiler.options()):
        pytest.skip("this NVRTC writes no ptxas report at all")
    real = compiler._run_nvrtc
    calls = []

    def once_empty(source, names, opts):
        calls.append(names)
        binary = real(source, names, opts)
        return _without_log(binary) if len(calls) == 1 else binary

    monkeypatch.setattr(compiler, "_run_nvrtc", once_empty)
    assert compiler.compile(KERNEL, ["k"]).missing_reports(["k"]) == [] and len(calls) == 2

    always = _fresh()
    always._reports = True
    monkeypatch.setattr(always, "_run_nvrtc", lambda s, n, o: _without_log(real(s, n, o)))
    with pytest.raises(CompileError, match="no ptxas report"):
        always.compile(KERNEL, ["k"])


def test_only_an_nvrtc_that_does_not_know_the_option_compiles_without_it(monkeypatch):
    compiler = _fresh()
    real = compiler._run_nvrtc

    def refused(source, names, opts):
        if "-Xptxas=-v" in opts:
            raise CompileError("NVRTC could not compile", "nvrtc error: unrecognized option -Xptxas=-v", opts)
        return real(source, names, opts)

    monkeypatch.setattr(compiler, "_run_nvrtc", refused)
    binary = compiler.compile(KERNEL, ["k"])
    assert "-Xptxas=-v" not in binary.options and compiler.verbose_ptxas is False

    other = _fresh()
    monkeypatch.setattr(other, "_run_nvrtc", lambda s, n, o: (_ for _ in ()).throw(
        CompileError("NVRTC could not compile", "ptxas fatal: out of memory (options -Xptxas=-v)", o)))
    with pytest.raises(CompileError):  # a failure that merely mentions the option is the compile's
        other.compile(KERNEL, ["k"])


def test_a_cached_entry_without_its_report_is_not_trusted(tmp_path, monkeypatch):
    compiler = _fresh(tmp_path)
    if not compiler._nvrtc_reports(compiler.options()):
        pytest.skip("this NVRTC writes no ptxas report at all")
    good = compiler.compile(KERNEL, ["k"])
    key = compiler.cache.key(KERNEL, compiler.options(), ["k"], compiler._nvrtc_version)
    compiler.cache.put(key, _without_log(good))  # as a torn or foreign writer might have left it
    again = _fresh(tmp_path)
    assert again.compile(KERNEL, ["k"]).missing_reports(["k"]) == []
    assert not again.cache.get(key).missing_reports(["k"])  # and the entry was written whole again


def _compile_many(directory: str) -> list[list[str]]:
    compiler = Compiler("sm_90", cache=BinaryCache(directory))
    sources = [KERNEL.replace("2.0f", f"{i}.0f") for i in range(6)]
    return [compiler.compile(s, ["k"]).missing_reports(["k"]) for s in sources]


def test_processes_sharing_one_cache_all_get_their_reports(tmp_path):
    """Several processes compiling the same sources into one cache directory at once (as
    ``pytest -n`` and batch tuning do): every binary carries its report."""
    import multiprocessing

    if not _fresh()._nvrtc_reports(_fresh().options()):
        pytest.skip("this NVRTC writes no ptxas report at all")
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        results = pool.map(_compile_many, [str(tmp_path)] * 3)
    assert all(missing == [] for per_process in results for missing in per_process)
