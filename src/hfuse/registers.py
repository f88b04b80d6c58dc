"""How a fused kernel's registers are bounded: a compiler input, like the layout.

A fused kernel holds, for every thread, the registers of its hungriest part. The policy
says how that is bounded:

* none: ``__launch_bounds__(D)`` only, so that a block of D threads can always launch
  (ptxas otherwise sizes registers as if any block could run, and a block of D threads at
  the heaviest part's count may exceed what a block may have);
* ``RegisterCap``: one cap for every thread, ``__launch_bounds__(D, b)`` or ``__maxnreg__(r)``;
* ``WarpgroupRegisters``: per-part budgets set with ``setmaxnreg`` on Hopper (sm_90a).

Each policy knows its CUDA attribute, its PTX rules and whether a block of D threads
can launch under it. Which policy to try is the tuner's question (``tune/regcap.py``:
the paper's cap model and its neighbours).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .errors import HFuseError

SM90_REGISTERS = 65536
"""Registers of an SM, and the most one block may have (every architecture since sm_50)."""
REGISTERS_PER_BLOCK = SM90_REGISTERS


def block_registers(per_thread: int, block_threads: int) -> int:
    """Registers a block of ``block_threads`` takes at ``per_thread``: allocated per warp,
    8 per thread at a time (61 registers take 64)."""
    return -(-per_thread // 8) * 8 * 32 * -(-block_threads // 32)


@dataclass(frozen=True)
class RegisterCap:
    """One of: at least ``min_blocks`` blocks per SM, or at most ``max_registers`` per thread."""

    min_blocks: int | None = None
    max_registers: int | None = None

    def __post_init__(self) -> None:
        for key in ("min_blocks", "max_registers"):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"RegisterCap({key}={value!r}) must be an integer")
        if (self.min_blocks is None) == (self.max_registers is None):
            raise ValueError("RegisterCap needs exactly one of min_blocks and max_registers")
        if self.min_blocks is not None and self.min_blocks < 1:
            raise ValueError(f"RegisterCap(min_blocks={self.min_blocks}) must be at least 1")
        if self.max_registers is not None and not 16 <= self.max_registers <= 255:
            raise ValueError(f"RegisterCap(max_registers={self.max_registers}) must be within 16..255")

    @property
    def label(self) -> str:
        """Short text for tables and candidate labels: ``b4`` or ``r64``."""
        return f"b{self.min_blocks}" if self.min_blocks is not None else f"r{self.max_registers}"

    def attribute(self, block_threads: int) -> str:
        """The CUDA attribute text that applies this cap to a kernel of ``block_threads``."""
        if self.min_blocks is not None:
            return f"__launch_bounds__({block_threads}, {self.min_blocks})"
        return f"__maxnreg__({self.max_registers})"  # nvcc refuses it together with __launch_bounds__

    def violation(self, block_threads: int, regs_per_block: int = SM90_REGISTERS) -> str | None:
        """Why a block of ``block_threads`` cannot launch under this cap (None when it can).
        ``__launch_bounds__`` makes ptxas fit the block; ``__maxnreg__`` alone does not, and
        the driver then refuses the launch ("too many resources requested")."""
        if self.max_registers is None:
            return None
        needed = block_registers(self.max_registers, block_threads)
        if needed <= regs_per_block:
            return None
        return (f"a block of {block_threads} threads at {self.max_registers} registers needs {needed:,} registers, "
                f"more than the {regs_per_block:,} a block may have")

    def to_dict(self) -> dict[str, Any]:
        return {"min_blocks": self.min_blocks, "max_registers": self.max_registers}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "RegisterCap | None":
        if not data:
            return None
        if not isinstance(data, dict) or set(data) - {"min_blocks", "max_registers"}:
            raise ValueError("a register cap is a mapping with one of min_blocks or max_registers, e.g. {min_blocks: 2}")
        return cls(min_blocks=data.get("min_blocks"), max_registers=data.get("max_registers"))


WARPGROUP = 128
"""Threads that execute ``setmaxnreg`` together (four warps)."""


def entry_registers(block_threads: int, min_blocks: int, regs_per_sm: int = SM90_REGISTERS) -> int:
    """The registers per thread a kernel has on entry under ``__launch_bounds__(block_threads,
    min_blocks)``: the SM's share per thread, at most 255, rounded down to a multiple of 8
    (``__launch_bounds__(384, 1)`` gives 168)."""
    return min(255, regs_per_sm // (min_blocks * block_threads)) // 8 * 8


@dataclass(frozen=True)
class WarpgroupRegisters:
    """Per-part register budgets on Hopper (sm_90a): each part's warpgroups set their own
    register count with ``setmaxnreg`` on entry, the latency-bound part raising it and the
    light part lowering it, in a block given ``min_blocks`` per SM.

    PTX's rules, which ``violation`` checks: the parts are whole warpgroups (multiples of
    128 threads, so each starts at a multiple of 128); budgets are 24..256 in multiples of
    8; the entry count must be known, which ``__launch_bounds__(d0, min_blocks)`` gives
    (ptxas otherwise ignores setmaxnreg with warning C7508); and the budgets may not add
    up to more than the block had on entry, or a ``.inc`` waits for ever for registers no
    warp frees."""

    min_blocks: int
    budgets: tuple[int, ...]
    """Registers per thread of each part, in part order."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "budgets", tuple(int(b) for b in self.budgets))
        if self.min_blocks < 1:
            raise ValueError(f"WarpgroupRegisters(min_blocks={self.min_blocks}) must be at least 1")
        bad = [b for b in self.budgets if not (24 <= b <= 256 and b % 8 == 0)]
        if bad:
            raise ValueError(f"setmaxnreg counts must be 24..256 in multiples of 8, not {bad}")

    @property
    def label(self) -> str:
        return "wg" + "/".join(str(b) for b in self.budgets) + f"@b{self.min_blocks}"

    def attribute(self, block_threads: int) -> str:
        return f"__launch_bounds__({block_threads}, {self.min_blocks})"

    def entry(self, block_threads: int, regs_per_sm: int = SM90_REGISTERS) -> int:
        return entry_registers(block_threads, self.min_blocks, regs_per_sm)

    def violation(self, part_sizes: Sequence[int], regs_per_sm: int = SM90_REGISTERS) -> str | None:
        """Why these budgets cannot apply to parts of these sizes (None when they can)."""
        if len(part_sizes) != len(self.budgets):
            return f"{len(self.budgets)} budgets for {len(part_sizes)} parts"
        if any(size % WARPGROUP for size in part_sizes):
            return f"parts of {list(part_sizes)} threads are not whole warpgroups (multiples of {WARPGROUP})"
        block = sum(part_sizes)
        entry = self.entry(block, regs_per_sm)
        if entry < 24:
            return f"{self.min_blocks} blocks of {block} threads leave {entry} registers per thread on entry"
        used = sum(size // WARPGROUP * b for size, b in zip(part_sizes, self.budgets))
        have = block // WARPGROUP * entry
        if used > have:
            return (f"the budgets need {used * WARPGROUP} registers per block but {self.min_blocks} blocks of "
                    f"{block} threads have {have * WARPGROUP} (a .inc would wait for ever)")
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"min_blocks": self.min_blocks, "budgets": list(self.budgets)}


RegisterPolicy = RegisterCap | WarpgroupRegisters
"""How a fused kernel's registers are bounded: one cap for every thread, or a budget per part."""


def register_policy_from_dict(data: dict[str, Any] | None) -> RegisterPolicy | None:
    if isinstance(data, dict) and "budgets" in data:
        return WarpgroupRegisters(min_blocks=int(data["min_blocks"]), budgets=tuple(data["budgets"]))
    return RegisterCap.from_dict(data)


def kernel_attribute(policy: RegisterPolicy | None, block_threads: int) -> str:
    """The attribute text the fused kernel gets under ``policy`` (None: bounded by its block).

    Raises ``HFuseError`` for a register maximum the block cannot have."""
    if policy is None:
        return f"__launch_bounds__({block_threads})"
    if isinstance(policy, RegisterCap) and (problem := policy.violation(block_threads)):
        raise HFuseError(f"register cap {policy.label} cannot apply: {problem}",
                         hint="lower the cap (--max-registers) or use --min-blocks N, which lets ptxas fit the block")
    return policy.attribute(block_threads)


def describe(policy: RegisterPolicy | None, block_threads: int) -> str:
    """The policy in words, for the fused file's header."""
    attribute = kernel_attribute(policy, block_threads)
    if isinstance(policy, WarpgroupRegisters):
        return f"{attribute} and per-part budgets {policy.label} set with setmaxnreg (sm_90a only)"
    if policy is None:
        return f"no register cap; {attribute} so that a block of {block_threads} threads can launch"
    return f"register cap {attribute}"


def part_budgets(policy: RegisterPolicy | None, part_sizes: Sequence[int], block_threads: int, *,
                 warpgroups_of_their_own: bool, layout: str) -> tuple[tuple[int, ...], int] | None:
    """Each part's registers and the entry count, for ``setmaxnreg`` on entry to each part
    (None: the policy is not per part). Raises ``HFuseError`` where the budgets cannot apply:
    the ``layout`` does not give parts warpgroups of their own, or PTX's rules forbid them."""
    if not isinstance(policy, WarpgroupRegisters):
        return None
    problem = (f"{layout} fusion does not give parts warpgroups of their own" if not warpgroups_of_their_own
               else policy.violation(part_sizes))
    if problem:
        raise HFuseError(f"per-part register budgets {policy.label} cannot apply: {problem}")
    return policy.budgets, policy.entry(block_threads)
