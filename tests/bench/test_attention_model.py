"""The prefill kernel's arithmetic checked on the CPU, lane by lane.

``prefill.cu`` computes attention from register fragments of ``mma.sync.m16n8k16`` whose
layouts PTX documents (which lane holds which element of A, B and C). This model runs the
kernel's own index arithmetic for every lane of every warp in NumPy (the same loads, the
same masks, the same online softmax per quad, the scores' C fragments reused as P's A
fragments, the same stores), with ``mma`` done by gathering the documented fragments into
matrices; its output must be the reference attention. It catches an index or layout slip
in the kernel without a GPU (what it cannot catch is PTX not doing what its manual says).
"""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.bench.attention import Heads, reference_prefill

LANES = np.arange(32)
G, C = LANES // 4, LANES % 4


def a_position(r: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of A's register ``r``, half ``h``, in every lane."""
    return G + 8 * (r & 1), 2 * C + h + 8 * (r >> 1)


def b_position(r: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """k (row) and n (column) of B's register ``r``, half ``h``."""
    return 2 * C + h + 8 * r, G


def c_position(e: int) -> tuple[np.ndarray, np.ndarray]:
    return G + 8 * (e >> 1), 2 * C + (e & 1)


def mma(d: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """d [32, 4] += A [16, 16] @ B [16, 8], fragments a [32, 4, 2], b [32, 2, 2] (fp16 values)."""
    A, B = np.zeros((16, 16), np.float32), np.zeros((16, 8), np.float32)
    for r in range(4):
        for h in range(2):
            rows, cols = a_position(r, h)
            A[rows, cols] = a[:, r, h]
    for r in range(2):
        for h in range(2):
            ks, ns = b_position(r, h)
            B[ks, ns] = b[:, r, h]
    D = A @ B
    for e in range(4):
        rows, cols = c_position(e)
        d[:, e] += D[rows, cols]


def half(x):
    return np.asarray(x, np.float16).astype(np.float32)


def model_prefill(q, k, v, chunk, context, heads: Heads) -> np.ndarray:
    """The kernel, CTA by CTA and warp by warp (block 64 x 64, 4 warps of 16 rows)."""
    d_head, out = heads.head_dim, np.zeros(q.shape, np.float32)
    steps, dim_tiles, key_tiles = d_head // 16, d_head // 8, 8
    factor = heads.scale * 1.4426950408889634
    first_position = context - chunk
    for tile in range(-(-chunk // 64)):
        for head in range(heads.heads):
            kv_head = head // heads.group
            last_row = min(chunk - 1, tile * 64 + 63)
            keys = min(context, first_position + last_row + 1)
            for warp in range(4):
                row0 = tile * 64 + warp * 16
                qa = np.zeros((steps, 32, 4, 2), np.float32)
                for s in range(steps):
                    for r in range(4):
                        for h in range(2):
                            rows, cols = a_position(r, h)
                            rows = rows + row0
                            qa[s, :, r, h] = np.where(rows < chunk, q[np.minimum(rows, chunk - 1), head, s * 16 + cols], 0)
                m = np.full((32, 2), -np.inf, np.float32)
                l = np.zeros((32, 2), np.float32)
                acc = np.zeros((dim_tiles, 32, 4), np.float32)
                for kv0 in range(0, keys, 64):
                    rows = np.arange(64) + kv0
                    k_tile = np.where((rows < context)[:, None], k[np.minimum(rows, context - 1), kv_head], 0)
                    v_tile = np.where((rows < context)[:, None], v[np.minimum(rows, context - 1), kv_head], 0)
                    s_frag = np.zeros((key_tiles, 32, 4), np.float32)
                    for j in range(key_tiles):
                        for st in range(steps):
                            b = np.zeros((32, 2, 2), np.float32)
                            for r in range(2):
                                for h in range(2):
                                    ks, ns = b_position(r, h)
                                    b[:, r, h] = k_tile[j * 8 + ns, st * 16 + ks]
                            mma(s_frag[j], qa[st], b)
                    tile_max = m.copy()
                    for j in range(key_tiles):
                        for e in range(4):
                            key = kv0 + j * 8 + 2 * C + (e & 1)
                            position = first_position + row0 + G + (e >> 1) * 8
                            visible = (key <= position) & (key < context)
                            s_frag[j, :, e] = np.where(visible, s_frag[j, :, e] * factor, -np.inf)
                            tile_max[:, e >> 1] = np.maximum(tile_max[:, e >> 1], s_frag[j, :, e])
                    base = np.zeros((32, 2), np.float32)
                    for r in range(2):
                        quad = tile_max[:, r].reshape(8, 4).max(axis=1).repeat(4)  # shuffles within each quad
                        tile_max[:, r] = quad
                        base[:, r] = np.where(quad == -np.inf, 0, quad)
                        with np.errstate(invalid="ignore"):
                            alpha = np.exp2(m[:, r] - base[:, r])
                        m[:, r] = quad
                        l[:, r] *= alpha
                        acc[:, :, 2 * r] *= alpha
                        acc[:, :, 2 * r + 1] *= alpha
                    for j in range(key_tiles):
                        for e in range(4):
                            s_frag[j, :, e] = np.exp2(s_frag[j, :, e] - base[:, e >> 1])
                            l[:, e >> 1] += s_frag[j, :, e]
                    for t in range(4):
                        a = np.zeros((32, 4, 2), np.float32)
                        for r, (j, e0) in enumerate(((2 * t, 0), (2 * t, 2), (2 * t + 1, 0), (2 * t + 1, 2))):
                            a[:, r, 0], a[:, r, 1] = half(s_frag[j, :, e0]), half(s_frag[j, :, e0 + 1])
                        for dt in range(dim_tiles):
                            # the kernel's address: v_tile[(t*16 + 2c) * stride + dt*8 + g] and the rows +1, +8, +9
                            key0, dim = t * 16 + 2 * C, dt * 8 + G
                            b = np.stack([np.stack([v_tile[key0, dim], v_tile[key0 + 1, dim]], -1),
                                          np.stack([v_tile[key0 + 8, dim], v_tile[key0 + 9, dim]], -1)], 1)
                            mma(acc[dt], a, b)
                for r in range(2):
                    total = l[:, r].reshape(8, 4).sum(axis=1).repeat(4)
                    inverse = np.where(total > 0, 1 / np.where(total > 0, total, 1), 0)
                    rows = row0 + G + r * 8
                    for dt in range(dim_tiles):
                        for h in range(2):
                            valid = rows < chunk
                            out[rows[valid], head, dt * 8 + 2 * C[valid] + h] = half(acc[dt, valid, 2 * r + h] * inverse[valid])
    return out


@pytest.mark.parametrize("chunk, context", [(70, 70), (40, 130)])
def test_the_kernels_fragment_arithmetic_computes_attention(chunk, context):
    heads = Heads(heads=2, kv_heads=1, head_dim=32 * 2)
    rng = np.random.default_rng(1)
    q = half(rng.standard_normal((chunk, 2, 64)))
    k = half(rng.standard_normal((context, 1, 64)))
    v = half(rng.standard_normal((context, 1, 64)))
    got = model_prefill(q, k, v, chunk, context, heads)
    np.testing.assert_allclose(got, reference_prefill(q, k, v, heads), atol=1e-2, rtol=1e-2)


def model_decode(q, k_cache, v_cache, lengths, heads: Heads, splits: int) -> np.ndarray:
    """The decode kernel, CTA by CTA: warps of key slots (HEAD_DIM / 8 lanes a key), the
    butterfly that merges a warp's slots, the warps merged through shared memory, and the
    splits merged by the last one."""
    d, group = heads.head_dim, heads.group
    per_key = d // 8
    slots, step = 32 // per_key, 4 * (32 // per_key)
    factor = heads.scale * 1.4426950408889634
    out = np.zeros(q.shape, np.float32)

    def merge(a, b):
        (m1, l1, o1), (m2, l2, o2) = a, b
        top = np.maximum(m1, m2)
        w1 = np.where(m1 == -np.inf, 0, np.exp2(m1 - np.where(top == -np.inf, 0, top)))
        w2 = np.where(m2 == -np.inf, 0, np.exp2(m2 - np.where(top == -np.inf, 0, top)))
        return top, l1 * w1 + l2 * w2, o1 * w1[:, None] + o2 * w2[:, None]

    for sequence, length in enumerate(lengths):
        for kv_head in range(heads.kv_heads):
            query = q[sequence, kv_head * group:(kv_head + 1) * group] * factor  # [group, d]
            states = []
            per_split = -(-length // splits)
            for split in range(splits):
                begin, end = split * per_split, min(length, split * per_split + per_split)
                warps = []
                for warp in range(4):
                    slot_states = []
                    for slot in range(slots):
                        m, l, o = np.full(group, -np.inf), np.zeros(group), np.zeros((group, d))
                        for base in range(begin + warp * slots, end, step):
                            key = base + slot
                            if key >= end:
                                continue
                            score = query @ k_cache[sequence, key, kv_head]
                            top = np.maximum(m, score)
                            alpha = np.where(m == -np.inf, 0, np.exp2(m - top))
                            p = np.exp2(score - top)
                            m, l, o = top, l * alpha + p, o * alpha[:, None] + p[:, None] * v_cache[sequence, key, kv_head]
                        slot_states.append((m, l, o))
                    offset = 1  # the butterfly over slots: lanes per_key, 2 per_key, ... apart
                    while offset < slots:
                        slot_states = [merge(slot_states[s], slot_states[s ^ offset]) for s in range(slots)]
                        offset *= 2
                    warps.append(slot_states[0])
                state = warps[0]
                for other in warps[1:]:
                    state = merge(state, other)
                states.append(state)
            total = states[0]
            for other in states[1:]:
                total = merge(total, other)
            m, l, o = total
            out[sequence, kv_head * group:(kv_head + 1) * group] = np.where(l[:, None] > 0, o / np.where(l > 0, l, 1)[:, None], 0)
    return out


@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_the_decode_kernels_arithmetic_computes_attention(splits, head_dim):
    from hfuse.bench.attention import reference_decode

    heads = Heads(heads=4, kv_heads=2, head_dim=head_dim)
    rng = np.random.default_rng(2)
    lengths = np.array([1, 37, 200])
    q = half(rng.standard_normal((3, 4, head_dim)))
    k = half(rng.standard_normal((3, 200, 2, head_dim)))
    v = half(rng.standard_normal((3, 200, 2, head_dim)))
    got = model_decode(q, k, v, lengths, heads, splits)
    np.testing.assert_allclose(got, reference_decode(q, k, v, lengths, heads), atol=1e-4, rtol=1e-4)
