"""The hybrid batch's attention kernels on a GPU: each against the NumPy reference (and
PyTorch's scaled_dot_product_attention where PyTorch is installed) within fp16/bf16
tolerances, ragged lengths and grouped queries included; fused by hfuse, bit-equal to
the unfused kernels in every layout that matters here."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse import Fusion
from hfuse.api import device_source
from hfuse.bench.attention import (Decode, Heads, Prefill, decode_spec, make_decode, make_prefill, prefill_spec,
                                   reference_decode, reference_prefill)
from hfuse.layouts import layout_of
from hfuse.tuning.verify import verify

from gpu_harness import compiled, run

pytestmark = pytest.mark.gpu

SMALL = [Heads(heads=8, kv_heads=2, head_dim=128), Heads(heads=8, kv_heads=2, head_dim=64),
         Heads(heads=8, kv_heads=2, head_dim=128, dtype="bfloat16"), Heads(heads=8, kv_heads=2, head_dim=64,
                                                                          dtype="bfloat16")]
TOLERANCE = {"float16": 1e-2, "bfloat16": 4e-2}


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def host(cp, array, heads: Heads) -> np.ndarray:
    values = cp.asnumpy(array)
    if heads.dtype == "bfloat16":
        return (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(np.float32)


def launch(cp, l) -> None:
    source = device_source(l.kernel)
    run(cp, compiled(cp, source.source, source.name_expression), l.grid_for(), l.kernel.block, l.args, 0)


@pytest.mark.parametrize("heads", SMALL, ids=lambda h: f"{h.dtype}-{h.head_dim}")
@pytest.mark.parametrize("chunk, context", [(100, 100), (64, 300), (200, 1000)])
def test_prefill_matches_the_reference(cp, heads, chunk, context):
    l = make_prefill(Prefill(chunk, context), heads, seed=3)
    launch(cp, l)
    q, k, v, o = (host(cp, a, heads) for a in l.args[:4])
    want = reference_prefill(q, k, v, heads)
    np.testing.assert_allclose(o, want, atol=TOLERANCE[heads.dtype], rtol=TOLERANCE[heads.dtype])


@pytest.mark.parametrize("heads", SMALL, ids=lambda h: f"{h.dtype}-{h.head_dim}")
def test_decode_matches_the_reference_with_ragged_lengths(cp, heads):
    lengths = np.array([1, 17, 300, 1024, 777])
    l = make_decode(Decode(batch=5, context=1024), heads, seed=4, sm_count=132, lengths=lengths)
    assert int(l.args[11]) > 1  # several splits, combined in the launch
    for _ in range(2):  # the second launch finds the arrival counters back at zero
        launch(cp, l)
        q, k, v = (host(cp, a, heads) for a in l.args[:3])
        got = host(cp, l.args[4], heads)
        want = reference_decode(q, k, v, lengths, heads)
        np.testing.assert_allclose(got, want, atol=TOLERANCE[heads.dtype], rtol=TOLERANCE[heads.dtype])
        assert int(cp.asnumpy(l.args[7]).max()) == 0


def test_prefill_matches_pytorch_sdpa(cp):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    heads = Heads()
    l = make_prefill(Prefill(512, 512), heads, seed=5)
    launch(cp, l)
    q, k, v = (torch.as_tensor(a, device="cuda") for a in l.args[:3])
    # [tokens, heads, d] -> [1, heads, tokens, d], KV heads repeated for the groups
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(0, 1)[None], k.repeat_interleave(heads.group, 1).transpose(0, 1)[None],
        v.repeat_interleave(heads.group, 1).transpose(0, 1)[None], is_causal=True)[0].transpose(0, 1)
    got = torch.as_tensor(l.args[3], device="cuda")
    assert torch.allclose(got.float(), ref.float(), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("layout", ["horizontal", "persistent:2:2", "dynamic", "interblock", "vertical"])
def test_the_fused_kernel_is_bit_equal_to_the_unfused_ones(cp, layout):
    heads = Heads()
    launches = [make_prefill(Prefill(300, 2048), heads, seed=6), make_decode(Decode(16, 2048), heads, seed=7)]
    found = verify([prefill_spec(heads), decode_spec(heads)], Fusion((launches[0].kernel.block, launches[1].kernel.block),
                                                                     layout_of(layout)), launches)
    assert found.verified, found.result.error


def test_the_serving_example_runs_and_its_first_step_is_bit_equal(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "hybrid_serving" / "serve.py"
    out = tmp_path / "steps.json"
    done = subprocess.run([sys.executable, str(example), "--steps", "2", "--chunk", "128", "--batch", "4",
                           "--decode-context", "512", "--out", str(out)], capture_output=True, text=True, timeout=900,
                          env={**__import__("os").environ, "HFUSE_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    data = json.loads(out.read_text())
    assert data["bit_equal_first_step"] and len(data["steps"]) == 2
