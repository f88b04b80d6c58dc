"""What a tuning run has measured so far, on disk, so that a killed run resumes.

A run of a few minutes, or a batch of hundreds, is killed now and then (Ctrl-C, a
machine taken back, a time limit). Each measurement is appended to a journal beside the
plan cache as soon as it is taken (one JSON line, flushed and synced): first the unfused
kernels' baselines and resources, then every candidate's result. A run of the same
request (same cache key: same sources, inputs, settings and GPU) reads the journal back
and measures only what is missing; when the plan is stored the journal is removed.

A line cut short by the kill is ignored. Two runs of the same request at once append to
the same journal; a candidate measured twice is read once (the first).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import append_line
from ..runtime.binary import KernelResources
from .plan import Baselines, CandidateResult


@dataclass
class Recorded:
    """A journal read back."""

    baselines: Baselines | None = None
    resources: tuple[KernelResources, ...] = ()
    results: dict[Any, CandidateResult] = field(default_factory=dict)
    """By candidate key (its fusion)."""


class RunJournal:
    """Append-only record of one request's measurements (``cache/partial/<key>.jsonl``)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def read(self) -> Recorded:
        recorded = Recorded()
        try:
            lines = self.path.read_text().splitlines()
        except OSError:
            return recorded
        for line in lines:
            try:
                entry = json.loads(line)
                if entry["kind"] == "unfused" and recorded.baselines is None:
                    recorded.baselines = Baselines.from_dict(entry["baselines"])
                    recorded.resources = tuple(KernelResources(**r) for r in entry["resources"])
                elif entry["kind"] == "candidate":
                    result = CandidateResult.from_dict(entry["result"])
                    recorded.results.setdefault(result.candidate.key, result)
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by the kill, or from another version
        return recorded

    def unfused(self, baselines: Baselines, resources: tuple[KernelResources, ...]) -> None:
        self._append({"kind": "unfused", "baselines": baselines.to_dict(), "resources": [r.to_dict() for r in resources]})

    def candidate(self, result: CandidateResult) -> None:
        self._append({"kind": "candidate", "result": result.to_dict()})

    def remove(self) -> None:
        try:
            self.path.unlink()
        except OSError:
            pass

    def _append(self, entry: dict[str, Any]) -> None:
        append_line(self.path, json.dumps(entry, separators=(",", ":"), default=str))
