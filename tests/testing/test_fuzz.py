"""The differential fuzzer's CPU mode (what CI runs): generated kernels are deterministic,
cover every construct, fuse with random candidates and compile with NVRTC; nvcc compiles
the generated originals; failing cases shrink to small reproducers."""
from __future__ import annotations

import pytest

from hfuse.testing.fuzz import STEP_KINDS, FuzzCase, generate, reduce_case
from hfuse.testing.fuzz_run import FAILURES, CaseResult, check_case, keep_reproducer

from toolchain import compile_nvcc, nvrtc_compiler

SEEDS = range(40)


def test_a_seed_always_gives_the_same_kernels():
    assert generate(7).sources() == generate(7).sources() and generate(7) == generate(7)
    assert generate(7).sources() != generate(8).sources()


def test_every_construct_is_generated():
    seen = set().union(*(generate(seed).features for seed in range(300)))
    assert set(STEP_KINDS) <= seen
    assert {"grid_stride", "template", "namespace", "partial_warp_block", "block_2d", "block_3d",
            "2_kernels", "3_kernels", "4_kernels"} <= seen


@pytest.mark.nvrtc
def test_cpu_mode_fuses_and_compiles_with_nvrtc():
    compiler = nvrtc_compiler()
    results = [check_case(generate(seed), compiler, gpu=False) for seed in SEEDS]
    failures = [(r.seed, r.outcome, r.detail[:300]) for r in results if r.outcome in FAILURES]
    assert not failures
    refused = [r for r in results if r.outcome == "refused"]
    # refusals are allowed only for the documented limits (see the README)
    assert all("vertical fusion" in r.detail or "early return" in r.detail or "through a pointer" in r.detail
               for r in refused), \
        [r.detail for r in refused]
    assert sum(r.outcome == "compiled" for r in results) >= 0.9 * len(results)


@pytest.mark.nvcc
def test_generated_originals_compile_with_nvcc(tmp_path):
    case = generate(11)
    for name, text in case.sources().items():
        compile_nvcc(text, workdir=tmp_path, filename=name)  # check=True: a failure raises with nvcc's log


def test_reduction_keeps_what_fails_and_drops_the_rest():
    case = next(generate(s) for s in range(100) if len(generate(s).kernels) == 4
                and any(st.kind == "vote" for k in generate(s).kernels for st in k.steps))

    def has_vote(c: FuzzCase) -> bool:
        return any(st.kind == "vote" for k in c.kernels for st in k.steps)

    small = reduce_case(case, has_vote)
    assert has_vote(small) and len(small.kernels) == 2
    assert sum(len(k.steps) for k in small.kernels) == 1  # only the vote is left
    assert all(not (k.template or k.namespace or k.grid_stride) and k.grid.size == 1 for k in small.kernels)


def test_reproducers_are_kept_with_how_they_were_fused(tmp_path):
    case = generate(3)
    folder = keep_reproducer(case, CaseResult(3, "mismatch", "", [], detail="fz0: 4 of 96 elements differ"), tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == sorted([*case.sources(), "case.txt"])
    assert "mismatch" in (folder / "case.txt").read_text()
