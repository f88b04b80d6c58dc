"""LLM serving's hybrid batch: one prefill chunk beside many decode requests, as our two
attention kernels (``kernels/attention/``: ``prefill.cu``, ``decode.cu``), their launches
and their work.

A batch of chunked-prefill serving holds one chunk of a long prompt (compute-bound
attention: many query tokens against their causal context) and many sequences that each
add one token (memory-bound attention: one query against a long KV cache). Both kernels
are grouped-query and causal, fp16 or bf16, head dimension 64 or 128; the decode kernel
splits each sequence's keys over CTAs and combines them in the same launch.

Everything here but ``make_*`` runs without a GPU: shapes, grids, the decode split, the
work (FLOPs, bytes) each kernel must do, and a NumPy reference of both attentions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..launch import KernelLaunch, Output
from ..spec import Dim3, KernelSpec

KERNELS = Path(__file__).resolve().parent / "kernels" / "attention"
PREFILL_FILE, DECODE_FILE = KERNELS / "prefill.cu", KERNELS / "decode.cu"
BLOCK = 128
"""Both kernels run 128 threads (4 warps) per CTA."""
PREFILL_ROWS = 64
"""Query rows per prefill CTA."""
MIN_KEYS_PER_SPLIT = 256
"""A decode split reads at least this many keys (fewer: the combination costs more than it spreads)."""

DType = Literal["float16", "bfloat16"]
_C_TYPES = {"float16": "__half", "bfloat16": "__nv_bfloat16"}


@dataclass(frozen=True)
class Heads:
    """The model's attention heads (Llama-3-8B: 32 query heads, 8 KV heads of 128)."""

    heads: int = 32
    kv_heads: int = 8
    head_dim: int = 128
    dtype: DType = "float16"

    def __post_init__(self) -> None:
        if self.heads % self.kv_heads:
            raise ValueError(f"{self.heads} query heads do not split into {self.kv_heads} KV-head groups")
        if self.head_dim not in (64, 128):
            raise ValueError(f"head dimension {self.head_dim}: the kernels take 64 or 128")
        if self.dtype not in _C_TYPES:
            raise ValueError(f"dtype {self.dtype}: the kernels take {', '.join(_C_TYPES)}")

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    @property
    def c_type(self) -> str:
        return _C_TYPES[self.dtype]

    @property
    def scale(self) -> float:
        return 1.0 / math.sqrt(self.head_dim)

    @property
    def element_bytes(self) -> int:
        return 2


def prefill_spec(heads: Heads) -> KernelSpec:
    return KernelSpec(PREFILL_FILE, "attn::prefill_attention", Dim3(BLOCK), template_args=(heads.c_type, str(heads.head_dim)))


def decode_spec(heads: Heads) -> KernelSpec:
    return KernelSpec(DECODE_FILE, "attn::decode_attention", Dim3(BLOCK),
                      template_args=(heads.c_type, str(heads.head_dim), str(heads.group)))


@dataclass(frozen=True)
class Prefill:
    """One chunk of ``chunk`` query tokens at the end of a ``context``-token prompt."""

    chunk: int
    context: int

    def __post_init__(self) -> None:
        if not 0 < self.chunk <= self.context:
            raise ValueError(f"a chunk of {self.chunk} tokens in a context of {self.context}")

    def grid(self, heads: Heads) -> Dim3:
        return Dim3(-(-self.chunk // PREFILL_ROWS), heads.heads)

    def visible_pairs(self) -> int:
        """(query, key) pairs the causal mask lets through: query i of the chunk sees
        ``context - chunk + i + 1`` keys."""
        before = self.context - self.chunk
        return self.chunk * before + self.chunk * (self.chunk + 1) // 2

    def flops(self, heads: Heads) -> int:
        """Two matrix products (Q K^T, P V) over the visible pairs, 2 FLOPs per multiply-add."""
        return 4 * heads.head_dim * heads.heads * self.visible_pairs()

    def bytes(self, heads: Heads) -> int:
        """Q and O once, K and V of the context once (what a perfect cache would read)."""
        e, d = heads.element_bytes, heads.head_dim
        return e * d * (2 * self.chunk * heads.heads + 2 * self.context * heads.kv_heads)


@dataclass(frozen=True)
class Decode:
    """``batch`` sequences adding one token each, every one with ``context`` tokens cached."""

    batch: int
    context: int

    def __post_init__(self) -> None:
        if self.batch <= 0 or self.context <= 0:
            raise ValueError(f"a decode batch of {self.batch} sequences of {self.context} tokens")

    def splits(self, heads: Heads, sm_count: int = 132) -> int:
        """How many CTAs share one sequence's keys: enough CTAs to fill the GPU twice, no
        split under ``MIN_KEYS_PER_SPLIT`` keys."""
        pairs = self.batch * heads.kv_heads
        wanted = -(-2 * sm_count // pairs)
        return max(1, min(wanted, -(-self.context // MIN_KEYS_PER_SPLIT)))

    def grid(self, heads: Heads, sm_count: int = 132) -> Dim3:
        return Dim3(self.splits(heads, sm_count), heads.kv_heads, self.batch)

    def bytes(self, heads: Heads) -> int:
        """The KV cache read once, the queries read and the outputs written."""
        e, d = heads.element_bytes, heads.head_dim
        return e * d * (2 * self.batch * self.context * heads.kv_heads + 2 * self.batch * heads.heads)

    def flops(self, heads: Heads) -> int:
        return 4 * heads.head_dim * heads.heads * self.batch * self.context


# -- references (NumPy, fp32) ----------------------------------------------------------
def reference_prefill(q: np.ndarray, k: np.ndarray, v: np.ndarray, heads: Heads) -> np.ndarray:
    """Causal GQA attention of a chunk: q [chunk, heads, d], k/v [context, kv_heads, d]."""
    chunk, context = q.shape[0], k.shape[0]
    kk = np.repeat(k.astype(np.float32), heads.group, axis=1)  # [context, heads, d]
    vv = np.repeat(v.astype(np.float32), heads.group, axis=1)
    scores = np.einsum("qhd,khd->hqk", q.astype(np.float32), kk) * heads.scale
    positions = np.arange(context - chunk, context)[:, None]
    scores = np.where(np.arange(context)[None, :] <= positions, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hqk,khd->qhd", weights, vv)


def reference_decode(q: np.ndarray, k_cache: np.ndarray, v_cache: np.ndarray, lengths: np.ndarray,
                     heads: Heads) -> np.ndarray:
    """One query per sequence: q [batch, heads, d], caches [batch, max_context, kv_heads, d]."""
    out = np.zeros(q.shape, np.float32)
    for b, length in enumerate(lengths):
        kk = np.repeat(k_cache[b, :length].astype(np.float32), heads.group, axis=1)  # [length, heads, d]
        vv = np.repeat(v_cache[b, :length].astype(np.float32), heads.group, axis=1)
        scores = np.einsum("hd,khd->hk", q[b].astype(np.float32), kk) * heads.scale
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        out[b] = np.einsum("hk,khd->hd", weights, vv)
    return out


# -- launches on a GPU ---------------------------------------------------------------
def _random(cupy: Any, rng: Any, shape: tuple[int, ...], heads: Heads) -> Any:
    values = rng.standard_normal(shape, dtype=cupy.float32)
    if heads.dtype == "float16":
        return values.astype(cupy.float16)
    # bfloat16 as its 16 bits: the upper half of the float32, rounded to nearest even
    bits = values.view(cupy.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(cupy.uint16)


def make_prefill(work: Prefill, heads: Heads = Heads(), *, seed: int = 0) -> KernelLaunch:
    import cupy

    rng = cupy.random.RandomState(seed)
    q = _random(cupy, rng, (work.chunk, heads.heads, heads.head_dim), heads)
    k = _random(cupy, rng, (work.context, heads.kv_heads, heads.head_dim), heads)
    v = _random(cupy, rng, (work.context, heads.kv_heads, heads.head_dim), heads)
    o = cupy.zeros_like(q)
    i32 = np.int32
    args = [q, k, v, o, i32(work.chunk), i32(work.context), i32(heads.heads), i32(heads.kv_heads),
            np.float32(heads.scale)]
    return KernelLaunch(prefill_spec(heads), args, [Output(3)], grid=work.grid(heads), label="prefill")


def make_decode(work: Decode, heads: Heads = Heads(), *, seed: int = 0, sm_count: int | None = None,
                lengths: np.ndarray | None = None) -> KernelLaunch:
    """``lengths``: each sequence's context (default: all ``work.context``, the cache's size)."""
    import cupy

    sm_count = sm_count or int(cupy.cuda.Device().attributes["MultiProcessorCount"])
    rng = cupy.random.RandomState(seed + 1)
    d, g = heads.head_dim, heads.group
    q = _random(cupy, rng, (work.batch, heads.heads, d), heads)
    k = _random(cupy, rng, (work.batch, work.context, heads.kv_heads, d), heads)
    v = _random(cupy, rng, (work.batch, work.context, heads.kv_heads, d), heads)
    length = cupy.asarray(lengths if lengths is not None else np.full(work.batch, work.context), dtype=cupy.int32)
    splits = work.splits(heads, sm_count)
    o = cupy.zeros_like(q)
    partial_o = cupy.zeros((work.batch, heads.kv_heads, splits, g, d), cupy.float32)
    partial_ml = cupy.zeros((work.batch, heads.kv_heads, splits, g, 2), cupy.float32)
    arrivals = cupy.zeros(work.batch * heads.kv_heads, cupy.uint32)
    i32 = np.int32
    args = [q, k, v, length, o, partial_o, partial_ml, arrivals, i32(work.context), i32(heads.heads),
            i32(heads.kv_heads), i32(splits), np.float32(heads.scale)]
    # the output, and the scratch a fused kernel must leave as the original does
    outputs = [Output(4), Output(5), Output(6), Output(7)]
    return KernelLaunch(decode_spec(heads), args, outputs, grid=Dim3(splits, heads.kv_heads, work.batch), label="decode")
