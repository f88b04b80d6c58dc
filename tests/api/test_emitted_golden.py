"""The emitted text is pinned: every corpus configuration (every layout, with and without
a cap) and a ring of real-world pairs (each kernel three times as each part) give
exactly the file they gave when the golden hashes were written.

A restructuring of the compiler must not change one byte of what users get. A change
that is meant to change the output regenerates the hashes, and says why in its commit:

    HFUSE_UPDATE_GOLDEN=1 python -m pytest tests/api/test_emitted_golden.py
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from hfuse.api import fuse
from hfuse.errors import HFuseError

from corpus import cases as C
from corpus.realworld import manifest as M
from test_fuse_corpus import CONFIGS
from test_fuse_realworld import request_options, specs

GOLDEN = Path(__file__).resolve().parent / "data" / "emitted_golden.json"
UPDATE = os.environ.get("HFUSE_UPDATE_GOLDEN") == "1"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _emitted() -> dict[str, str]:
    out: dict[str, str] = {}
    for config in CONFIGS:
        fused = fuse(C.specs(config.group, config.blocks), layout=config.layout, register_cap=config.cap)
        out[f"corpus:{config.id}"] = _digest(fused.source)
    kernels = list(M.KERNELS.values())
    pairs = [(k, kernels[(i + step) % len(kernels)]) for step in (1, 2, 5) for i, k in enumerate(kernels)]
    for first, second in pairs:  # each kernel three times as each part, against varied partners
        try:
            fused = fuse(specs(first, second), options=request_options(first, second))
        except HFuseError as err:
            out[f"realworld:{first.key}+{second.key}"] = "refused: " + err.message.split(":")[0][:60]
            continue
        out[f"realworld:{first.key}+{second.key}"] = _digest(fused.source)
    return out


def test_emitted_text_is_unchanged():
    emitted = _emitted()
    if UPDATE:
        GOLDEN.write_text(json.dumps(emitted, indent=0, sort_keys=True) + "\n")
        pytest.skip(f"wrote {len(emitted)} golden hashes to {GOLDEN}")
    golden = json.loads(GOLDEN.read_text())
    changed = sorted(k for k in golden.keys() | emitted.keys() if golden.get(k) != emitted.get(k))
    assert not changed, f"{len(changed)} of {len(golden)} outputs changed, e.g. {changed[:5]}"
