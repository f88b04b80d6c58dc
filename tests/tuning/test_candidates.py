"""Candidate enumeration: counts, deduplication, granularity, fixed vs tunable, N = 3."""
from __future__ import annotations

import pytest

from hfuse.errors import HFuseError
from hfuse.spec import Dim3, KernelSpec
from hfuse.fusion import Fusion
from hfuse.layouts.partitions import even_split, partitions
from hfuse.tuning.candidates import Candidate, balance_grids, enumerate_candidates, refine_around, with_grids
from hfuse.registers import RegisterCap

from .test_regcap import VOLTA


def spec(name, block, tunable=True):
    return KernelSpec(file=f"{name}.cu", name=name, block=block, tunable=tunable)


def sizes(blocks):
    return tuple(b.size for b in blocks)


def test_paper_partitions_of_two():
    # d1 = 128, 256, 384 while d1 < 512.
    parts = partitions([spec("a", 256), spec("b", 256)])
    assert [sizes(p) for p in parts] == [(128, 384), (256, 256), (384, 128)]


def test_granularity():
    parts = partitions([spec("a", 256), spec("b", 256)], granularity=64)
    assert [sizes(p)[0] for p in parts] == [64, 128, 192, 256, 320, 384, 448]
    with pytest.raises(HFuseError):
        partitions([spec("a", 256), spec("b", 256)], granularity=48)


def test_candidates_without_registers_have_no_caps():
    cands = enumerate_candidates([spec("a", 256), spec("b", 256)])
    # naive (= 256+256, deduplicated with it), 128+384, 384+128, then the other layouts
    persistent = ["persistent:1:1", "persistent:2:2", "persistent:2:1", "persistent:1:2", "spatial:50"]
    assert [c.label for c in cands] == ["naive", "hfuse 128+384", "hfuse 384+128", "vertical", "interblock",
                                        "interleaved", "dynamic", "dynamic:2:1", "dynamic:1:2", *persistent]
    assert [c.layout.spec for c in cands[-11:]] == ["vertical", "interblock", "interleaved", "dynamic", "dynamic:2:1",
                                                    "dynamic:1:2", *persistent]
    assert cands[-1].blocks == (Dim3(256), Dim3(256)) and cands[-1].fused_threads == 256  # the largest part's block


def test_candidates_with_caps():
    cands = enumerate_candidates([spec("a", 256), spec("b", 256)], limits=VOLTA, kernel_registers=[32, 64])
    labels = [c.label for c in cands]
    # (128,384): b1 = 16, b2 = 65536/(384*64) = 2 -> b2; (256,256): b4; (384,128): min(5, 8, 4) = b4.
    assert labels == [
        "naive", "hfuse 128+384", "hfuse 128+384 cap=b2", "hfuse 256+256 cap=b4",
        "hfuse 384+128", "hfuse 384+128 cap=b4", "vertical", "interblock", "interleaved",
        "dynamic", "dynamic:2:1", "dynamic:1:2", "persistent:1:1", "persistent:2:2", "persistent:2:1", "persistent:1:2",
        "spatial:50",
    ]
    assert len({c.key for c in cands}) == len(cands)
    with_neighbours = enumerate_candidates(
        [spec("a", 256), spec("b", 256)], limits=VOLTA, kernel_registers=[32, 64], neighbours=True)
    assert "hfuse 256+256 cap=b3" in [c.label for c in with_neighbours]


def test_fixed_kernels_keep_their_blocks():
    specs = [spec("sha", 256, tunable=False), spec("pool", 256)]
    assert [sizes(p) for p in partitions(specs)] == [(256, 256)]
    assert [sizes(p) for p in partitions(specs, fused_threads=768)] == [(256, 512)]
    both_fixed = [spec("sha", 256, tunable=False), spec("blake", 128, tunable=False)]
    cands = enumerate_candidates(both_fixed)
    assert [(c.label, sizes(c.blocks)) for c in cands] == [("naive", (256, 128)), ("vertical", (256, 128)),
                                                           ("interblock", (256, 128)), ("interleaved", (256, 128)),
                                                               ("dynamic", (256, 128)), ("dynamic:2:1", (256, 128)),
                                                               ("dynamic:1:2", (256, 128))] + [
        (f"persistent:{a}:{b}", (256, 128)) for a, b in ((1, 1), (2, 2), (2, 1), (1, 2))] + [("spatial:50", (256, 128))]
    assert cands[0].fused_threads == 384 and cands[1].fused_threads == cands[2].fused_threads == 256


def test_tunable_2d_block_varies_y():
    parts = partitions([spec("im2col", "32x16"), spec("b", 256)], fused_threads=768)
    assert [p[0] for p in parts] == [Dim3(32, 4), Dim3(32, 8), Dim3(32, 12), Dim3(32, 16), Dim3(32, 20)]
    # 96x2: only 384 threads is a multiple of the 96-wide plane among 128, 256, 384.
    parts = partitions([spec("odd", "96x2"), spec("b", 256)])
    assert [p[0] for p in parts] == [Dim3(96, 4)]


def test_three_kernels():
    specs = [spec("a", 256), spec("b", 256), spec("c", 256)]
    parts = partitions(specs)
    assert len(parts) == 10  # 6 units of 128 into 3 positive parts: C(5, 2)
    assert all(sum(sizes(p)) == 768 for p in parts)
    assert sizes(even_split(specs)) == (256, 256, 256)
    mixed = [spec("a", 256), spec("f", 128, tunable=False), spec("c", 256)]
    assert [sizes(p) for p in partitions(mixed)] == [(128, 128, 384), (256, 128, 256), (384, 128, 128)]
    # every layout is a candidate for three kernels too; dispatch ratios other than 1:1:1 only for pairs
    others = [c.label for c in enumerate_candidates(specs) if c.layout.name != "horizontal"]
    assert others == ["vertical", "interblock", "interleaved", "dynamic", "persistent"]  # a spatial split takes two


def test_too_large_or_misaligned():
    with pytest.raises(HFuseError, match="1024"):
        partitions([spec("a", 768), spec("b", 512)])
    with pytest.raises(HFuseError, match="multiple of 32"):
        partitions([spec("a", 256), spec("b", 256)], fused_threads=500)
    with pytest.raises(HFuseError):
        enumerate_candidates([spec("a", 256)])


def test_refine_around():
    specs = [spec("a", 256), spec("b", 256)]
    best = Candidate(Fusion((Dim3(256), Dim3(256)), registers=RegisterCap(min_blocks=4)))
    near = refine_around(best, specs)
    assert sorted(sizes(c.blocks) for c in near) == [(224, 288), (288, 224)]
    assert all(c.register_cap == best.register_cap for c in near)
    assert near[0].label.endswith("cap=b4")
    assert len(refine_around(best, specs, radius=2)) == 4
    fixed = [spec("a", 256, tunable=False), spec("b", 256)]
    assert refine_around(best, fixed) == []


def test_candidate_round_trip():
    c = with_grids(Candidate(Fusion((Dim3(32, 8), Dim3(256)), registers=RegisterCap(min_blocks=3))), [None, Dim3(100)])
    assert c.label == "hfuse 32x8+256 cap=b3 grid=-,100"
    assert Candidate.from_dict(c.to_dict()) == c


def test_balance_grids_matches_fixed_kernel():
    # The design notes' case: fixed 100 blocks vs grid-stride 670, both 2 ms alone.
    grids = balance_grids([2.0, 2.0], [Dim3(100), Dim3(670)], [Dim3(256), Dim3(256)], [False, True])
    assert grids == (None, Dim3(100))
    # Half the work -> half the blocks; more threads in the fused block -> fewer blocks.
    assert balance_grids([2.0, 1.0], [Dim3(100), Dim3(670)], [Dim3(256), Dim3(256)], [False, True])[1] == Dim3(50)
    assert balance_grids([2.0, 2.0], [Dim3(100), Dim3(670)], [Dim3(256), Dim3(512)], [False, True])[1] == Dim3(50)


def test_balance_grids_all_free_and_none_free():
    # Heaviest (2 ms, 256 threads) keeps the largest grid (670); the other gets half.
    grids = balance_grids([2.0, 1.0], [Dim3(100), Dim3(670)], [Dim3(256), Dim3(256)], [True, True])
    assert grids == (Dim3(670), Dim3(335))
    assert balance_grids([1.0, 1.0], [Dim3(8), Dim3(8)], [Dim3(256), Dim3(256)], [False, False]) == (None, None)
    # 2-D grids keep y: 100 blocks over a y-extent of 4 -> x = 25.
    assert balance_grids([2.0, 2.0], [Dim3(100), Dim3(10, 4)], [Dim3(256), Dim3(256)], [False, True])[1] == Dim3(25, 4)


def test_a_persistent_mix_the_registers_would_not_fit_is_also_tried_capped():
    # 200 registers x 256 threads: one block per SM; 2:2 wants four, 1:1 two
    cands = enumerate_candidates([spec("a", 256), spec("b", 256)], limits=VOLTA, kernel_registers=[200, 64])
    labels = [c.label for c in cands if c.layout.name == "persistent"]
    assert labels == ["persistent:1:1", "persistent:1:1 cap=b2", "persistent:2:2", "persistent:2:2 cap=b4",
                      "persistent:2:1", "persistent:2:1 cap=b3", "persistent:1:2", "persistent:1:2 cap=b3"]
    # registers that fit already: no cap
    light = enumerate_candidates([spec("a", 256), spec("b", 256)], limits=VOLTA, kernel_registers=[32, 32])
    assert [c.label for c in light if c.layout.name == "persistent" and c.register_cap is not None] == []
