"""A fused kernel under compute-sanitizer, judged against the original kernels.

For each tool, a worker process (``isolation``) runs under ``compute-sanitizer`` and runs
once, from the same initial inputs, each original kernel at its block shape in the fusion
and then the fused kernel. The log's findings are attributed by kernel symbol. A finding
in the fused kernel is *explained* when the originals show the same kind under the same
tool (for example a benign race the original kernel has too); anything else is a
*finding* that the fusion introduced, and the verdict says so.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

from ..errors import HFuseError
from ..runtime.jobs import LaunchJob
from ..runtime.sanitizer import TOOLS, SanitizerResult, Tool, find_sanitizer, judge, parse_log, sanitizer_command
from .isolation import TimeLimits, WorkerCrashed, WorkerMeasurer, WorkerSetup, WorkerTimeout
from .measure import MeasureRequest

SANITIZER_LIMITS = TimeLimits(run_floor_s=10.0, scale=100.0)
"""Kernels run 10-100x slower under a sanitizer (racecheck the slowest)."""


def _symbol(job: LaunchJob) -> str:
    return job.binary.symbol(job.name_expression)


def sanitize(request: MeasureRequest, setup: WorkerSetup, tools: Sequence[Tool] = TOOLS,
             limits: TimeLimits = SANITIZER_LIMITS, executable: str | None = None,
             log_dir: str | Path | None = None) -> list[SanitizerResult]:
    """Runs ``request``'s originals and fused kernel under each tool; one result per tool."""
    executable = executable or find_sanitizer()
    results = []
    for tool in tools:
        with tempfile.TemporaryDirectory(prefix=f"hfuse-{tool}-", dir=log_dir) as logs:
            log = Path(logs) / "worker-{worker}.log"
            errors: list[str] = []
            with WorkerMeasurer(setup, limits, prefix=sanitizer_command(tool, log, executable)) as worker:
                # one job at a time: a fault ends that worker, the next job gets a fresh one
                for job in [*request.references, request.fused]:
                    try:
                        worker.run_once([job])
                    except (WorkerTimeout, WorkerCrashed, HFuseError) as err:
                        errors.append(f"{job.name}: {str(err).splitlines()[0]}")
                        worker.close()
            text = "\n".join(p.read_text(errors="replace") for p in sorted(Path(logs).glob("worker-*.log")))
        results.append(judge(tool, parse_log(text, tool), _symbol(request.fused),
                             [_symbol(j) for j in request.references], errors))
    return results
