"""The hybrid batch's two attention kernels, on the CPU: their host-side arithmetic, the
NumPy references the GPU tests hold them to, and that hfuse fuses them in every layout
into files nvcc and NVRTC compile."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import hfuse
from hfuse.api import device_source
from hfuse.bench.attention import (Decode, Heads, Prefill, decode_spec, prefill_spec, reference_decode,
                                   reference_prefill)
from hfuse.layouts import LAYOUTS

LLAMA = Heads()  # 32 query heads, 8 KV heads of 128, fp16


def test_a_prefill_chunk_sees_its_causal_context():
    work = Prefill(chunk=5, context=12)
    brute = sum(1 for i in range(5) for key in range(12) if key <= 12 - 5 + i)
    assert work.visible_pairs() == brute == 5 * 7 + 15
    assert work.flops(LLAMA) == 4 * 128 * 32 * brute
    assert Prefill(chunk=4096, context=4096).grid(LLAMA) == hfuse.Dim3(64, 32)
    assert Prefill(chunk=100, context=100).grid(LLAMA) == hfuse.Dim3(2, 32)  # a ragged last tile
    with pytest.raises(ValueError):
        Prefill(chunk=10, context=5)


def test_decode_splits_fill_the_gpu_without_tiny_splits():
    # few sequences: split until the GPU has twice its SMs in CTAs, never below 256 keys a split
    assert Decode(batch=16, context=8192).splits(LLAMA, sm_count=132) == 3  # 16 x 8 pairs -> 264 CTAs
    assert Decode(batch=1, context=8192).splits(LLAMA, sm_count=132) == 32  # capped by 8192 / 256
    assert Decode(batch=1, context=300).splits(LLAMA, sm_count=132) == 2
    assert Decode(batch=256, context=2048).splits(LLAMA, sm_count=132) == 1  # enough CTAs already
    assert Decode(batch=16, context=8192).grid(LLAMA) == hfuse.Dim3(3, 8, 16)
    assert Decode(batch=2, context=10).bytes(LLAMA) == 2 * 128 * (2 * 2 * 10 * 8 + 2 * 2 * 32)


def test_heads_are_checked():
    assert Heads(heads=32, kv_heads=8).group == 4 and Heads(dtype="bfloat16").c_type == "__nv_bfloat16"
    for bad in (dict(heads=30, kv_heads=8), dict(head_dim=96), dict(dtype="float32")):
        with pytest.raises(ValueError):
            Heads(**bad)


def _naive_attention(q, k, v, visible, scale):
    out = np.zeros_like(q)
    for i in range(q.shape[0]):
        keys = [j for j in range(k.shape[0]) if visible(i, j)]
        s = np.array([q[i] @ k[j] for j in keys]) * scale
        w = np.exp(s - s.max())
        out[i] = (w / w.sum()) @ v[keys]
    return out


def test_the_references_are_causal_grouped_attention():
    heads = Heads(heads=4, kv_heads=2, head_dim=64)
    rng = np.random.default_rng(0)
    chunk, context = 3, 7
    q = rng.standard_normal((chunk, 4, 64)).astype(np.float32)
    k = rng.standard_normal((context, 2, 64)).astype(np.float32)
    v = rng.standard_normal((context, 2, 64)).astype(np.float32)
    got = reference_prefill(q, k, v, heads)
    for h in range(4):  # query head h reads KV head h // 2
        want = _naive_attention(q[:, h], k[:, h // 2], v[:, h // 2], lambda i, j: j <= context - chunk + i, heads.scale)
        np.testing.assert_allclose(got[:, h], want, rtol=1e-5, atol=1e-5)
    # one decode step is the prefill of the last token, sequence by sequence
    lengths = np.array([7, 4])
    caches = np.stack([k, np.concatenate([k[:4], np.zeros((3, 2, 64), np.float32)])])
    values = np.stack([v, np.concatenate([v[:4], np.zeros((3, 2, 64), np.float32)])])
    last = rng.standard_normal((2, 4, 64)).astype(np.float32)
    decoded = reference_decode(last, caches, values, lengths, heads)
    for b, n in enumerate(lengths):
        np.testing.assert_allclose(decoded[b], reference_prefill(last[b:b + 1], caches[b, :n], values[b, :n], heads)[0],
                                   rtol=1e-5, atol=1e-5)


COMBINATIONS = [Heads(), Heads(head_dim=64), Heads(dtype="bfloat16"), Heads(dtype="bfloat16", head_dim=64)]


@pytest.mark.nvcc
@pytest.mark.parametrize("heads", COMBINATIONS, ids=lambda h: f"{h.dtype}-{h.head_dim}")
def test_each_kernel_compiles_alone(tmp_path, heads):
    for spec in (prefill_spec(heads), decode_spec(heads)):
        source = device_source(spec)
        path = tmp_path / "alone.cu"
        path.write_text(source.source)
        done = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(path), "-o", str(tmp_path / "alone.o")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.nvcc
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_hfuse_fuses_prefill_and_decode_in_every_layout(tmp_path, layout):
    fused = hfuse.fuse([prefill_spec(LLAMA), decode_spec(LLAMA)], layout=layout)
    assert "mma.sync.aligned.m16n8k16" in fused.source and "#pragma unroll" in fused.source
    path = fused.write(tmp_path / "fused.cu")
    done = subprocess.run(["nvcc", "-arch=sm_90", "-c", str(path), "-o", str(tmp_path / "fused.o")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.nvrtc
@pytest.mark.parametrize("heads", COMBINATIONS[1:], ids=lambda h: f"{h.dtype}-{h.head_dim}")
def test_nvrtc_compiles_the_persistent_fusion_of_each_type_and_size(heads):
    from hfuse.runtime.compile import Compiler

    fused = hfuse.fuse([prefill_spec(heads), decode_spec(heads)], layout="persistent:2:2")
    binary = Compiler("sm_90").compile(fused.source, [fused.name_expression])
    assert not binary.missing_reports([fused.name_expression])


def test_the_two_kernels_are_workloads_a_manifest_can_name(tmp_path):
    from hfuse.batch.manifest import read_manifest
    from hfuse.bench.workloads import registry

    work = registry()
    assert not work["prefill"].tunable and not work["decode"].tunable  # both assume 128 threads
    assert work["prefill"].default_block == work["decode"].default_block == hfuse.Dim3(128)
    path = tmp_path / "hybrid.yaml"
    path.write_text("requests:\n  - {name: hybrid, workloads: [{kernel: prefill, size: 2048}, decode], sizes: [64]}\n")
    request = read_manifest(path).requests[0]
    assert [(w.kernel, w.size) for w in request.inputs.workloads] == [("prefill", 2048), ("decode", 64)]
    with pytest.raises(ValueError, match="128 threads"):
        work["prefill"].make(512, block=256)
