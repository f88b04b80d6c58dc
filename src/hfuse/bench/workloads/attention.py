"""The hybrid serving batch's two attention kernels as workloads (``hfuse.bench.attention``),
so a tune config or a manifest can name them: ``workloads: [prefill, decode]``.

Llama-3-8B heads (32 query heads, 8 KV heads of 128), fp16. ``prefill``'s size is the
chunk's tokens (the whole prompt: context = chunk); ``decode``'s the number of sequences,
each with 8192 tokens cached. Both kernels assume 128 threads: their blocks are fixed.
"""
from __future__ import annotations

from ...launch import KernelLaunch
from ...spec import Dim3
from ..attention import BLOCK, Decode, Heads, Prefill, make_decode, make_prefill
from .base import Workload

DECODE_CONTEXT = 8192


def _fixed_block(block) -> None:
    if block is not None and Dim3.of(block) != Dim3(BLOCK):
        raise ValueError(f"the attention kernels run {BLOCK} threads a block, not {block}")


def make_prefill_workload(size: int, *, block=None, seed: int = 0, small: bool = False) -> KernelLaunch:
    _fixed_block(block)
    tokens = 256 if small else int(size)
    return make_prefill(Prefill(tokens, tokens), Heads(), seed=seed)


def make_decode_workload(size: int, *, block=None, seed: int = 0, small: bool = False) -> KernelLaunch:
    _fixed_block(block)
    return make_decode(Decode(4 if small else int(size), 512 if small else DECODE_CONTEXT), Heads(), seed=seed)


WORKLOADS: dict[str, Workload] = {
    "prefill": Workload(
        name="prefill", make=make_prefill_workload, default_size=4096, sweep=(512, 1024, 2048, 4096, 8192, 16384),
        default_block=Dim3(BLOCK), tunable=False,
        size_meaning="tokens of a prompt chunk (context = chunk; Llama-3-8B heads, fp16)", test_sizes=(128, 300)),
    "decode": Workload(
        name="decode", make=make_decode_workload, default_size=64, sweep=(16, 32, 64, 128, 256),
        default_block=Dim3(BLOCK), tunable=False,
        size_meaning=f"sequences of one new token, {DECODE_CONTEXT} tokens cached each (Llama-3-8B heads, fp16)",
        test_sizes=(4, 16)),
}
