"""Compile options as one value: the language flags a build gives nvcc, and how each
compiler is told them."""
from __future__ import annotations

import pytest

from hfuse.errors import HFuseError
from hfuse.frontend.options import CompileOptions


def test_language_flags_are_read_in_any_of_nvccs_spellings_and_kept_once():
    options = CompileOptions(language_flags=("-expt-relaxed-constexpr", "--expt-extended-lambda", "-use_fast_math",
                                             "-ftz=true", "--expt-relaxed-constexpr"))
    assert options.language_flags == ("--expt-relaxed-constexpr", "--extended-lambda", "--use_fast_math", "--ftz=true")


def test_each_compiler_is_told_the_language_flags_as_it_spells_them():
    options = CompileOptions(language_flags=("--expt-relaxed-constexpr", "--extended-lambda", "--fmad=false"))
    assert options.compiler_flags(std=False)[-3:] == ["--expt-relaxed-constexpr", "--extended-lambda", "--fmad=false"]
    # NVRTC 13 knows neither spelling and needs neither: hfuse's NVRTC compiles take
    # -default-device, and the lambdas hfuse emits carry no execution space
    assert options.compiler_flags(std=False, compiler="nvrtc") == ["--fmad=false"]
    assert options.compiler_flags(std=False, compiler="clang") == []


def test_language_flags_travel_in_options_data_and_on_top_of_a_config():
    options = CompileOptions(language_flags=("--use_fast_math",))
    assert CompileOptions.from_dict(options.to_dict()) == options
    assert "language_flags" not in CompileOptions().to_dict()  # old cache keys stay as they were
    assert options.extended(language_flags=["-expt-relaxed-constexpr"]).language_flags == (
        "--use_fast_math", "--expt-relaxed-constexpr")


@pytest.mark.parametrize("flag", ["--fast", "--ftz", "--ftz=yes", "-O3"])
def test_a_flag_hfuse_does_not_know_is_refused_with_the_ones_it_does(flag):
    with pytest.raises(HFuseError) as err:
        CompileOptions(language_flags=(flag,))
    assert flag in err.value.message and "--expt-relaxed-constexpr" in (err.value.hint or "")


def test_pytorchs_folders_which_hfuse_reads_unasked_reach_nvcc_too(tmp_path, monkeypatch):
    # once: hfuse fuse read <torch/all.h> from PyTorch's folders, and --check's nvcc did not
    # find it ("fatal error: torch/all.h: No such file or directory")
    import hfuse.frontend.options as options_module
    from hfuse.frontend.options import CompileOptions

    torch_include = tmp_path / "torch" / "include"
    torch_include.mkdir(parents=True)
    pip_cuda = tmp_path / "nvidia" / "cu13" / "include"
    monkeypatch.setattr(options_module, "pytorch_include_dirs", lambda: (torch_include,))
    monkeypatch.setattr(options_module, "pip_cuda_library_dirs", lambda: (pip_cuda,))
    flags = CompileOptions().compiler_flags()
    # the CUDA libraries' headers of a pip-installed torch (cusparse.h) after them, for nvcc only
    assert flags[-4:] == ["-isystem", str(torch_include), "-isystem", str(pip_cuda)]
    assert "-isystem" in CompileOptions().compiler_flags(compiler="clang")
    assert str(pip_cuda) not in CompileOptions().compiler_flags(compiler="clang")  # (Clang has its own list)
    assert str(torch_include) not in " ".join(CompileOptions().compiler_flags(compiler="nvrtc"))  # (host headers)
    given = CompileOptions.from_flags(system_include_dirs=[str(torch_include)]).compiler_flags()
    assert given == ["-std=c++17", f"-I{torch_include}", "-isystem", str(pip_cuda)]  # once, as the user gave it
