"""hfuse/registers.py: the register policy as a compiler input."""
from __future__ import annotations

import pytest

from hfuse.errors import HFuseError
from hfuse.registers import RegisterCap, WarpgroupRegisters, describe, kernel_attribute, part_budgets


def test_no_policy_still_bounds_the_kernel_by_its_block():
    # without it ptxas sizes registers as if any block could run: 128 x 1024 would not launch
    assert kernel_attribute(None, 1024) == "__launch_bounds__(1024)"
    assert "so that a block of 1024 threads can launch" in describe(None, 1024)


def test_caps_and_their_attributes():
    assert kernel_attribute(RegisterCap(min_blocks=2), 512) == "__launch_bounds__(512, 2)"
    assert kernel_attribute(RegisterCap(max_registers=64), 1024) == "__maxnreg__(64)"  # 64 x 1024 fits exactly


def test_a_register_maximum_the_block_cannot_have_is_refused():
    assert RegisterCap(max_registers=64).violation(1024) is None
    assert "needs 73,728 registers" in RegisterCap(max_registers=65).violation(1024)  # 72 per thread: allocated by 8
    with pytest.raises(HFuseError, match="register cap r96 cannot apply"):
        kernel_attribute(RegisterCap(max_registers=96), 704)


def test_part_budgets_follow_ptx_rules():
    policy = WarpgroupRegisters(min_blocks=1, budgets=(232, 40))
    assert part_budgets(policy, [256, 128], 384, warpgroups_of_their_own=True, layout="horizontal") == ((232, 40), 168)
    assert part_budgets(RegisterCap(min_blocks=2), [256, 128], 384, warpgroups_of_their_own=True, layout="h") is None
    with pytest.raises(HFuseError, match="vertical fusion does not give parts warpgroups"):
        part_budgets(policy, [256, 128], 256, warpgroups_of_their_own=False, layout="vertical")
    with pytest.raises(HFuseError, match="not whole warpgroups"):
        part_budgets(policy, [224, 160], 384, warpgroups_of_their_own=True, layout="horizontal")
