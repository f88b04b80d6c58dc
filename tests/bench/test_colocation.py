"""The co-location bound's arithmetic (issue 22): curves of a kernel's time by the SM
resources it gets, the best mix on shared SMs and the best split of the SMs, what limits
the pair, and the shared-memory padding that caps a kernel's blocks per SM."""
from __future__ import annotations

import math

import pytest

from hfuse.bench.bound import Bound
from hfuse.bench.colocation import (LATENCY, Curve, best_shared, best_split, fits_together, occupancy_padding,
                                    pair_bound)
from hfuse.runtime.device import DeviceLimits
from hfuse.runtime.occupancy import occupancy

H100 = DeviceLimits(name="H100", compute_capability=(9, 0), sm_count=132, regs_per_sm=65536, regs_per_block=65536,
                    max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=233472, smem_per_block_optin=232448,
                    reserved_smem_per_block=1024)


def test_a_curve_interpolates_and_is_pessimistic_below_what_was_measured():
    curve = Curve("stream", "sms", ((132, 1.0), (33, 1.0), (66, 1.0), (16, 2.0)))
    assert curve.points[0] == (16, 2.0) and curve.full == 1.0
    assert curve.at(24) == pytest.approx(2.0 - 1.0 * 8 / 17)  # between 16 and 33: linear
    assert curve.at(8) == pytest.approx(4.0)        # below 16: the work of 16 SMs on 8
    assert curve.at(200) == 1.0 and math.isinf(curve.at(0))
    assert curve.monotone() and not Curve("k", "sms", ((10, 1.0), (20, 1.5))).monotone()
    with pytest.raises(ValueError):
        Curve("k", "sms", ((0, 1.0),))


def test_splitting_the_sms_balances_the_kernels():
    # both scale perfectly: half each, twice as slow
    scaling = Curve("a", "sms", ((1, 132.0), (132, 1.0)))
    linear = Curve("b", "sms", tuple((s, 132.0 / s) for s in (1, 33, 66, 132)))
    split = best_split([linear, linear], 132)
    assert split.amounts == (66, 66) and split.ms == pytest.approx(2.0)
    # a memory kernel saturates DRAM from 26 SMs on: it needs only those
    memory = Curve("memory", "sms", ((13, 2.1), (26, 1.05), (132, 1.05)))
    compute = Curve("compute", "sms", tuple((s, 1.02 * 132 / s) for s in (26, 66, 106, 132)))
    best = best_split([memory, compute], 132)
    assert best.amounts[0] in range(20, 27) and best.ms < 1.3
    assert best_split([scaling, scaling], 1) is None


def test_sharing_every_sm_takes_the_best_mix_that_fits():
    half = Curve("a", "blocks_per_sm", ((1, 4.0), (2, 2.0), (4, 1.0)))
    best = best_shared([half, half], lambda mix: sum(mix) <= 4)
    assert best.amounts == (2, 2) and best.ms == 2.0
    # a kernel at full speed on one block per SM leaves the rest to the other
    light = Curve("compute", "blocks_per_sm", ((1, 1.0), (4, 1.0)))
    best = best_shared([light, half], lambda mix: sum(mix) <= 4)
    assert best.amounts == (1, 3) and best.ms == pytest.approx(max(1.0, 2.0 + (1.0 - 2.0) * 1 / 2))
    assert best_shared([half, half], lambda mix: False) is None


def test_the_pair_bound_says_what_limits_it():
    shared = best_shared([Curve("a", "blocks_per_sm", ((1, 2.0), (2, 1.0))),
                          Curve("b", "blocks_per_sm", ((1, 2.0), (2, 1.0)))], lambda mix: sum(mix) <= 3)
    assert shared.ms == 2.0
    # DRAM busy for 2.5 ms in all: no co-location beats it
    assert pair_bound(Bound(2.5, "dram"), shared, None).limit == "dram"
    # the units allow 1.2 ms, but each kernel needs more of an SM than a mix leaves it
    found = pair_bound(Bound(1.2, "alone"), shared, None)
    assert found.limit == LATENCY and found.ms == 2.0 and found.share == shared


def test_kernels_fit_together_by_warps_registers_and_shared_memory():
    light = fits_together(H100, [(32, 128, 0), (32, 128, 0)])
    assert light((8, 8)) and not light((9, 8))  # 64 warps an SM
    fits = fits_together(H100, [(64, 128, 0), (64, 128, 0)])
    assert fits((4, 4)) and not fits((5, 4))  # 64 registers x 2048 threads is twice an SM's
    heavy = fits_together(H100, [(255, 256, 0), (32, 128, 0)])
    assert fits((1, 1)) and not heavy((2, 1))  # 255 x 256 x 2 registers are more than an SM has
    smem = fits_together(H100, [(32, 128, 100 * 1024), (32, 128, 100 * 1024)])
    assert smem((1, 1)) and not smem((2, 1))


@pytest.mark.parametrize("blocks", [1, 2, 3, 4, 8])
def test_padding_caps_the_blocks_per_sm(blocks):
    padding = occupancy_padding(H100, 32, 128, 4096, 0, blocks)
    assert padding is not None
    assert occupancy(H100, 32, 128, 4096, padding).blocks_per_sm == blocks


def test_no_padding_where_the_kernel_fits_no_more_anyway():
    assert occupancy_padding(H100, 32, 128, 0, 0, 16) is None  # 16 blocks of 128 threads fill the SM's warps
    assert occupancy_padding(H100, 255, 256, 0, 0, 1) is None  # registers allow one already


def test_a_rows_colocation_columns_say_the_bound_its_limit_and_what_was_captured():
    from hfuse.bench.colocation import PairBound, Share, bound_fields

    found = PairBound(1.2, LATENCY, Share("shared", (2, 2), 1.2))
    fields = bound_fields(found, best_unfused_ms=2.0, tuned_ms=1.6)
    assert fields == {"colocation_bound_ms": 1.2, "colocation_limit": "latency", "colocation_share": "shared 2:2",
                      "captured_colocation": pytest.approx(0.5)}
    assert bound_fields(PairBound(2.5, "dram", None), 2.0, 1.9)["captured_colocation"] is None  # nothing to gain
