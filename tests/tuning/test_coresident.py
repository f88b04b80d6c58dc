"""The co-resident streams baseline: which k fit, the grids it launches, and the decision
and plan when it is the fastest unfused way."""
from __future__ import annotations

from hfuse.runtime.timing import Timing
from hfuse.spec import Dim3
from hfuse.fusion import Fusion
from hfuse.tuning.candidates import Candidate
from hfuse.tuning.coresident import co_resident_grids, resident_ks
from hfuse.tuning.decision import decide
from hfuse.tuning.plan import Baselines, CandidateResult


def _t(ms: float) -> Timing:
    return Timing.of([ms])


def test_k_blocks_of_every_kernel_must_fit_on_an_sm_together():
    # 8 blocks of either fit alone: 4 + 4 fill the SM; with 16 and 16, 8 + 8 do
    assert resident_ks([8, 8]) == [1, 2, 3, 4]
    assert resident_ks([16, 16]) == [1, 2, 3, 4, 6, 8]
    assert resident_ks([2, 16]) == [1]  # one block of the heavy kernel takes half an SM
    assert resident_ks([1, 4]) == []  # one block already fills the SM: no room to share
    assert resident_ks([0, 4]) == []


def test_grid_stride_kernels_are_cut_and_fixed_grids_kept():
    grids = [Dim3(1056), Dim3(100), Dim3(300, 2)]
    cut = co_resident_grids(grids, [True, False, True], sm_count=132, k=2)
    assert cut == [Dim3(264), Dim3(100), Dim3(132, 2)]  # 2 x 132 blocks, split over y for a 2-D grid
    # never more blocks than the kernel had
    assert co_resident_grids([Dim3(50)], [True], sm_count=132, k=4) == [Dim3(50)]


def test_the_decision_takes_co_resident_streams_as_the_reference_when_fastest():
    fused = CandidateResult(Candidate(Fusion((Dim3(256), Dim3(256)))), _t(0.90), verified=True)
    base = Baselines(two_streams=_t(1.10), serial=_t(1.20), graph=_t(1.05), co_resident=_t(0.92), co_resident_k=2,
                     co_resident_grids=[Dim3(264), Dim3(264)])
    assert base.fastest_way() == "co_resident"
    verdict = decide([fused], base, min_gain=0.05)
    assert verdict.decision == "do_not_fuse" and "both stay resident" in verdict.reason
    assert decide([fused], base, min_gain=0.01).decision == "fuse"


def test_baselines_keep_k_and_grids_through_json_data():
    base = Baselines(alone={"a": _t(1.0)}, co_resident=_t(0.5), co_resident_k=3, co_resident_grids=[Dim3(396), Dim3(7)])
    again = Baselines.from_dict(base.to_dict())
    assert again.co_resident.median_ms == 0.5 and again.co_resident_k == 3
    assert again.co_resident_grids == [Dim3(396), Dim3(7)]
    assert Baselines.from_dict({}).co_resident is None  # plans from before stay readable
