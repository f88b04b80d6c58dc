"""What became of one request of a batch, and the batch's journal of them.

The journal (``batch-journal.jsonl`` in the batch's output) gets one line per finished
request as it finishes; a batch started again over the same output skips the requests
it lists (by ``TuneRequest.identity``: a request edited in the manifest is tuned again).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from ..files import append_line

Status = Literal["fused", "declined", "failed"]


@dataclass(frozen=True)
class Outcome:
    name: str
    identity: str
    status: Status
    seconds: float
    """Wall time of this request (0 when its plan came from the cache)."""
    speedup: float | None = None
    """The chosen fusion over the fastest unfused way (fused), or the best candidate's (declined)."""
    chosen: str | None = None
    fastest_unfused: str | None = None
    candidates: int = 0
    error: str | None = None
    """Why it failed (a kernel that hangs alone, inputs that could not be made, ...)."""
    gpu: str = ""
    """The GPU it was measured on (with a Ray cluster, requests may land on different ones)."""
    driver: str = ""
    plan_file: str | None = None
    fused_file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Outcome":
        return cls(**data)


class BatchJournal:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    def read(self) -> dict[str, Outcome]:
        """Finished requests by identity (a line cut short by a kill is ignored)."""
        out: dict[str, Outcome] = {}
        try:
            lines = self.path.read_text().splitlines()
        except OSError:
            return out
        for line in lines:
            try:
                outcome = Outcome.from_dict(json.loads(line))
            except (ValueError, TypeError):
                continue
            out[outcome.identity] = outcome
        return out

    def add(self, outcome: Outcome) -> None:
        append_line(self.path, json.dumps(outcome.to_dict(), separators=(",", ":")))

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
