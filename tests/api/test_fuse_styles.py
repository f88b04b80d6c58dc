"""Other people's C++ (issue 20): the style corpus, each kernel fused with a trivial partner.

``tests/corpus/styles`` is written the way ML and HPC libraries write CUDA: functors and
template-template parameters, variadic packs, SFINAE parameters, specialisation families,
overloads, enums as template arguments, packed half2/bfloat162/float4 and aligned vector
structs, int8/int4/fp8 quantisation, cooperative-groups tiles of a template size, CUB
behind aliases, macros that stamp out kernels, kernels in a header a .cu instantiates,
CuTe GEMMs on the installed nvidia-cutlass package's headers, and PyTorch extension files. Each kernel is fused second (at thread offset 96) with
``partner.cu:axpy`` and first before it; the layout ``hfuse fuse`` picks must be the one
the manifest says, and the fused file must compile with nvcc and as ``hfuse tune``
compiles it: with NVRTC, or with nvcc where it keeps PyTorch's headers, which NVRTC cannot read.
"""
from __future__ import annotations

import pytest

from hfuse.api import fuse
from hfuse.spec import Dim3, KernelSpec
from hfuse.runtime.compile import Compiler, toolchain_for
from hfuse.toolkit import pytorch_include_dirs

from corpus.styles.manifest import CASES, HERE, Case, options_of
from toolchain import compile_nvcc, compile_nvrtc

PARTNER = KernelSpec(HERE / "partner.cu", "axpy", Dim3(96))
NEEDS_TORCH_FOR_NVCC = {"torch_ext.cu", "torch_aten.cu"}


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 60 and len({c.file for c in CASES}) >= 12


@pytest.fixture(scope="module")
def fused_second():
    return {}


def _fused(case: Case, cache: dict):
    if case.missing:
        pytest.skip(case.missing)
    if case.name not in cache:
        cache[case.name] = fuse([PARTNER, case.spec()], options=case.options())
    return cache[case.name]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fuses_with_a_trivial_partner_in_either_order(case, fused_second):
    fused = _fused(case, fused_second)
    assert fused.layout.name == case.layout
    if case.layout == "horizontal":
        assert fused.parts[1].offset == 96
    first = fuse([case.spec(), PARTNER], options=case.options())
    assert first.layout.name == case.layout and first.parts[0].spec.name == case.spec().name


NVCC_SAMPLE = tuple(c for i, c in enumerate(CASES)
                    if i == 0 or CASES[i - 1].file != c.file or i + 1 == len(CASES) or CASES[i + 1].file != c.file)
"""The first and the last kernel of each file (nvcc takes seconds a case; every case compiles
under NVRTC below, and bench/scripts/styles_corpus.py compiles them all with nvcc)."""


@pytest.mark.nvcc
@pytest.mark.parametrize("case", NVCC_SAMPLE, ids=lambda c: c.name)
def test_the_fused_file_compiles_with_nvcc(case, fused_second, tmp_path):
    flags = case.options().compiler_flags(pre_includes=False)
    if case.file in NEEDS_TORCH_FOR_NVCC:
        if not pytorch_include_dirs():
            pytest.skip("torch is not installed: nvcc cannot read torch/extension.h, which the output keeps for it")
        flags = [*flags, *(f"-I{d}" for d in pytorch_include_dirs())]
    compile_nvcc(_fused(case, fused_second).source, flags=flags, workdir=tmp_path)


def _compile_as_hfuse_tune_does(source: str, name: str, case: Case) -> None:
    """NVRTC, or nvcc where the source keeps PyTorch's headers (``toolchain_for``)."""
    toolchain, _ = toolchain_for([source], case.options())
    if toolchain == "nvrtc":
        compile_nvrtc(source, [name], flags=case.options().compiler_flags(std=False, pre_includes=False,
                                                                          compiler="nvrtc"))
        return
    assert case.file in NEEDS_TORCH_FOR_NVCC
    binary = Compiler.for_sources(case.options(), [source], arch="sm_90").compile(source, [name])
    assert not binary.missing_reports([name])


@pytest.mark.nvrtc
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_fused_file_compiles_as_hfuse_tune_compiles_it(case, fused_second):
    fused = _fused(case, fused_second)
    _compile_as_hfuse_tune_does(fused.source, fused.name_expression, case)


@pytest.mark.nvrtc
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_original_compiles_as_hfuse_tune_compiles_it(case):
    # the unfused kernel as hfuse tune and the GPU twins compile it (api.device_source)
    from hfuse.api import device_source

    if case.missing:
        pytest.skip(case.missing)
    original = device_source(case.spec(), options=case.options())
    _compile_as_hfuse_tune_does(original.source, original.name_expression, case)


FIRST_OF_EACH_FILE = tuple({c.file: c for c in reversed(CASES)}.values())


def test_a_sample_of_the_ordered_pairs_of_files_fuses():
    # two other people's files at once: their helpers, constants and types meet in one file.
    # Each file first beside five others and second beside five others (all the pairs:
    # bench/scripts/styles_corpus.py)
    n = len(FIRST_OF_EACH_FILE)
    sample = [(FIRST_OF_EACH_FILE[i], FIRST_OF_EACH_FILE[(i + k) % n]) for k in (1, 4, 9, 13, 20) for i in range(n)]
    assert {a.file for a, _ in sample} == {b.file for _, b in sample} == {c.file for c in FIRST_OF_EACH_FILE}
    for a, b in sample:
        if a.missing or b.missing:
            continue  # (a library the pair needs is not installed)
        fused = fuse([a.spec(), b.spec()], options=options_of(a, b))
        assert [p.spec.name for p in fused.parts] == [a.spec().name, b.spec().name]


KNOWN_BROKEN_PAIRS: dict[frozenset[str], str] = {}
"""Pairs whose fused file is known not to compile, and why: the test must keep failing
(strict), so a fix is noticed and the entry removed."""


COMPILED_PAIRS = [(a, FIRST_OF_EACH_FILE[(i + 7) % len(FIRST_OF_EACH_FILE)])
                  for i, a in enumerate(FIRST_OF_EACH_FILE)]
"""A fixed, stratified sample: each file once first and once second (nvcc takes seconds a
pair; bench/scripts/styles_corpus.py fuses them all)."""


@pytest.mark.nvcc
@pytest.mark.parametrize("pair", COMPILED_PAIRS, ids=lambda p: f"{p[0].name}+{p[1].name}")
def test_a_sample_of_the_pairs_compiles(pair, tmp_path, request):
    a, b = pair
    if a.missing or b.missing:
        pytest.skip(a.missing or b.missing)
    if (why := KNOWN_BROKEN_PAIRS.get(frozenset({a.file, b.file}))) is not None:
        request.applymarker(pytest.mark.xfail(strict=True, reason=why))
    options = options_of(a, b)
    flags = options.compiler_flags(pre_includes=False)
    if {a.file, b.file} & NEEDS_TORCH_FOR_NVCC:
        if not pytorch_include_dirs():
            pytest.skip("torch is not installed: nvcc cannot read torch/extension.h, which the output keeps for it")
        flags += [f"-I{d}" for d in pytorch_include_dirs()]
    compile_nvcc(fuse([a.spec(), b.spec()], options=options).source, flags=flags, workdir=tmp_path)
