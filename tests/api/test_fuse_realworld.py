"""The fusion compiler over the real-world corpus (``tests/corpus/realworld``), on the CPU.

Every pair of the corpus' kernels is fused, each file preprocessed with its own nvcc
flags (``KernelSpec.options``: two benchmark files built with different ``-DBLOCK_SIZE``);
each pair either fuses or is refused for a reason the corpus says it
must be (``REFUSED``: constructs hfuse cannot prove correct). A documented sample of the
fused pairs, a ring in which every kernel appears twice, once as each part, is compiled
with nvcc and with NVRTC. Input files are never modified.
"""
from __future__ import annotations

import hashlib
import itertools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from hfuse.api import FusedKernel, fuse
from hfuse.errors import HFuseError
from hfuse.frontend.options import CompileOptions, Define

from corpus.realworld import manifest as M
from toolchain import compile_nvcc, compile_nvrtc

KERNELS = list(M.KERNELS.values())
BY_KEY = {k.key: k for k in KERNELS}

REFUSED: dict[str, str] = {
    # construct tag -> what the refusal says: hfuse cannot see into these, so it refuses
}
WHOLE_BLOCK = {
    # construct tag -> what the note says: correct only as one whole block of its own, so
    # fused by a layout that runs one block of one kernel per fused block
    "cub_block": "CUB's block-wide",
}


def _refusal(kernel: M.RealKernel) -> str | None:
    return next((why for tag, why in REFUSED.items() if tag in kernel.constructs), None)


def _whole_block(kernel: M.RealKernel) -> str | None:
    return next((why for tag, why in WHOLE_BLOCK.items() if tag in kernel.constructs), None)


def own_options(kernel: M.RealKernel) -> CompileOptions:
    """The nvcc flags of the kernel's file, as its own options (each file keeps its -D)."""
    include_dirs = tuple((M.ROOT / f[2:]).resolve() for f in kernel.flags if f.startswith("-I"))
    defines = tuple(Define.parse(f[2:]) for f in kernel.flags if f.startswith("-D"))
    std = next((f[5:] for f in kernel.flags if f.startswith("-std=")), "c++17")
    return CompileOptions(include_dirs=include_dirs, defines=defines, std=std)


def request_options(*kernels: M.RealKernel) -> CompileOptions:
    """The fused file's dialect: the older one asked for (``register`` needs c++14)."""
    return CompileOptions(std=min(own_options(k).std for k in kernels))


def specs(*kernels: M.RealKernel) -> list:
    return [replace(k.spec(), options=own_options(k)) for k in kernels]


@dataclass
class Outcome:
    first: M.RealKernel
    second: M.RealKernel
    fused: FusedKernel | None = None
    error: HFuseError | None = None


def _fuse_pair(first: M.RealKernel, second: M.RealKernel) -> Outcome:
    outcome = Outcome(first, second)
    try:
        outcome.fused = fuse(specs(first, second), options=request_options(first, second))
    except HFuseError as err:
        outcome.error = err
    return outcome


def _hashes() -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(M.ROOT.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def outcomes() -> dict[tuple[str, str], Outcome]:
    before = _hashes()
    pairs = list(itertools.combinations(KERNELS, 2))
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: _fuse_pair(*p), pairs))
    assert _hashes() == before, "fusing modified a file of the corpus"
    return {(o.first.key, o.second.key): o for o in results}


def test_every_pair_fuses_or_is_refused_for_its_reason(outcomes):
    wrong = []
    for (a, b), outcome in outcomes.items():
        expected = _refusal(BY_KEY[a]) or _refusal(BY_KEY[b])
        if expected is None and outcome.error is not None:
            wrong.append(f"{a} + {b}: refused: {outcome.error}")
        elif expected is not None and (outcome.error is None or expected not in str(outcome.error)):
            wrong.append(f"{a} + {b}: expected a refusal mentioning {expected!r}, got {outcome.error or 'a fusion'}")
        elif expected is None and (whole := _whole_block(BY_KEY[a]) or _whole_block(BY_KEY[b])) is not None:
            fused = outcome.fused
            if not fused.layout.keeps_block_whole or not any(whole in note for note in fused.notes):
                wrong.append(f"{a} + {b}: expected a layout that keeps blocks whole, with a note on {whole!r}, "
                             f"got {fused.layout.spec} {fused.notes}")
    assert not wrong, f"{len(wrong)} of {len(outcomes)} pairs went wrong:\n" + "\n".join(wrong[:20])


def test_refusals_name_file_line_and_kernel(outcomes):
    for outcome in outcomes.values():
        if outcome.error is not None:
            where = outcome.error.where
            assert where.file is not None and where.line is not None and where.kernel, str(outcome.error)


def _ring() -> list[tuple[M.RealKernel, M.RealKernel]]:
    """Every fusable kernel twice: once as the first part, once as the second."""
    fusable = [k for k in KERNELS if _refusal(k) is None]
    return [(fusable[i], fusable[(i + 1) % len(fusable)]) for i in range(len(fusable))]


RING = _ring()


@pytest.fixture(scope="module")
def ring_fused() -> dict[str, tuple[FusedKernel, CompileOptions]]:
    out = {}
    for first, second in RING:
        options = request_options(first, second)
        out[f"{first.key}+{second.key}"] = (fuse(specs(first, second), options=options), options)
    return out


def _compile_flags(options: CompileOptions) -> list[str]:
    # the fused file has every header and macro inlined: only the dialect still matters
    return [f"-std={options.emitted_std}"]


@pytest.mark.nvcc
def test_ring_compiles_with_nvcc(ring_fused, tmp_path):
    def build(item):
        name, (fused, options) = item
        return name, compile_nvcc(fused.source, flags=_compile_flags(options), workdir=tmp_path / name, check=False)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(build, ring_fused.items()))
    failed = [f"{name}:\n{result.failure()}" for name, result in results if not result.ok]
    assert not failed, f"{len(failed)} of {len(results)} fused files do not compile with nvcc:\n" + "\n".join(failed[:3])


@pytest.mark.nvrtc
def test_ring_compiles_with_nvrtc(ring_fused):
    failed = []
    for name, (fused, options) in ring_fused.items():
        result = compile_nvrtc(fused.source, [fused.name_expression], flags=_compile_flags(options), check=False)
        if not result.ok:
            failed.append(f"{name}:\n{result.failure()}")
    assert not failed, f"{len(failed)} of {len(ring_fused)} fused files do not compile with NVRTC:\n" + "\n".join(failed[:3])
