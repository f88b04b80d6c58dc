"""Running generated cases (``fuzz``): fuse with a random candidate, compile, and on a GPU
compare with the original kernels bit for bit.

Each case's candidate is drawn from its ``choice``: the kernels' order, horizontal or
vertical, a register cap (none, ``__launch_bounds__`` minimum blocks, or a register
maximum) and the barrier form. ``check_case`` says what happened: ``refused`` (an
``HFuseError``: hfuse cannot prove the fusion correct, with its message), ``compiled``
(CPU mode), ``verified``, ``mismatch``, ``compile_error`` or ``launch_error``. Only the
last three are failures of hfuse; ``run_many`` reduces each to a small reproducer.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..api import fuse
from ..errors import HFuseError
from ..layouts import HORIZONTAL, INTERBLOCK, INTERLEAVED, VERTICAL, Dynamic, Layout
from ..spec import KernelSpec
from ..registers import RegisterCap
from .fuzz import FuzzCase, KernelRecipe, reduce_case

FAILURES = ("mismatch", "compile_error", "launch_error")


@dataclass(frozen=True)
class FusionChoice:
    """How a case is fused (the tuner's ``Candidate`` has no kernel order or barrier form)."""

    order: tuple[int, ...]
    layout: Layout
    register_cap: RegisterCap | None
    barrier_form: str

    def describe(self) -> str:
        cap = self.register_cap.label if self.register_cap else "none"
        return f"order {list(self.order)}, {self.layout.spec}, cap {cap}, {self.barrier_form}"


def choice_of(case: FuzzCase) -> FusionChoice:
    rng = random.Random(case.choice)
    order = list(range(len(case.kernels)))
    rng.shuffle(order)
    cap = rng.choice([None, None, RegisterCap(min_blocks=rng.randint(1, 4)),
                      RegisterCap(max_registers=rng.choice((32, 48, 64, 96, 128)))])
    layouts = (HORIZONTAL, HORIZONTAL, HORIZONTAL, VERTICAL, INTERLEAVED, Dynamic((2, 1) if len(order) == 2 else ()))
    if any(k.whole_block for k in case.kernels):  # only the layouts that keep a block whole take it
        layouts = (INTERBLOCK, INTERLEAVED, Dynamic((2, 1) if len(order) == 2 else ()))
    return FusionChoice(tuple(order), rng.choice(layouts), cap,
                     rng.choice(("barrier", "bar")))


@dataclass
class CaseResult:
    seed: int
    outcome: str
    candidate: str
    features: list[str]
    detail: str = ""
    seconds: float = 0.0
    reduced: str = ""
    """For a failure: the reduced case's description and sources."""


def spec_of(k: KernelRecipe) -> KernelSpec:
    return KernelSpec(k.file, k.qualified, k.block, k.template_args)


def fuse_case(case: FuzzCase, candidate: FusionChoice) -> tuple[Any, list[KernelRecipe]]:
    """The fused kernel, and the kernels in its order."""
    kernels = [case.kernels[i] for i in candidate.order]
    return fuse([spec_of(k) for k in kernels], layout=candidate.layout,
                register_cap=candidate.register_cap, barrier_form=candidate.barrier_form,  # type: ignore[arg-type]
                sources=case.sources()), kernels


def check_case(case: FuzzCase, compiler: Any, *, gpu: bool) -> CaseResult:
    """Fuse, compile and (``gpu``) verify one case."""
    from ..runtime.binary import CompileError, LaunchError

    start = time.perf_counter()
    candidate = choice_of(case)
    result = CaseResult(case.seed, "", candidate.describe(), sorted(case.features))
    try:
        fused, kernels = fuse_case(case, candidate)
    except HFuseError as err:
        result.outcome, result.detail = "refused", str(err).splitlines()[0]
        return _timed(result, start)
    try:
        binary = compiler.compile(fused.source, [fused.name_expression])
        if not gpu:
            result.outcome = "compiled"
            return _timed(result, start)
        problems = _verify(kernels, fused, binary, compiler, case.seed)
        result.outcome, result.detail = ("mismatch", "; ".join(problems[:3])) if problems else ("verified", "")
    except CompileError as err:
        result.outcome, result.detail = "compile_error", (err.message + "\n" + err.log)[:2000]
    except LaunchError as err:
        result.outcome, result.detail = "launch_error", str(err)[:2000]
    return _timed(result, start)


def _timed(result: CaseResult, start: float) -> CaseResult:
    result.seconds = round(time.perf_counter() - start, 3)
    return result


def _inputs(kernel: KernelRecipe, rng: np.random.Generator, cupy: Any) -> list[Any]:
    scratch = max(kernel.threads, 1)
    return [cupy.asarray(rng.integers(0, 1 << 32, kernel.n, dtype=np.uint32)),
            cupy.asarray(rng.integers(0, 1 << 32, kernel.n, dtype=np.uint32)),  # out: garbage, not zeros
            cupy.asarray(rng.integers(0, 1 << 32, scratch, dtype=np.uint32)),
            np.int32(kernel.n), np.int32(scratch)]


def _verify(kernels: list[KernelRecipe], fused: Any, binary: Any, compiler: Any, seed: int) -> list[str]:
    """Runs the originals alone and the fused kernel on copies of the same inputs; the
    differences in ``out`` and ``scratch``, per kernel."""
    import cupy

    from ..api import device_source

    rng = np.random.default_rng(seed)
    inputs = [_inputs(k, rng, cupy) for k in kernels]
    expected = []
    for k, args in zip(kernels, inputs):
        alone = device_source(spec_of(k), sources={k.file: k.render()})
        kernel = compiler.get(alone.source, alone.name_expression)
        copies = [a.copy() if isinstance(a, cupy.ndarray) else a for a in args]
        kernel.launch(k.grid, k.block, copies, k.dynamic_smem)
        expected.append((copies[1], copies[2]))
    loaded = compiler.load(binary, fused.name_expression)
    packed = fused.pack([list(a) for a in inputs], [k.grid for k in kernels], [k.dynamic_smem for k in kernels])
    loaded.launch(packed.grid, packed.block, packed.args, packed.shared_mem)
    cupy.cuda.Device().synchronize()
    problems = []
    for k, args, (out, scratch) in zip(kernels, inputs, expected):
        for what, got, want in (("out", args[1], out), ("scratch", args[2], scratch)):
            differ = int(cupy.count_nonzero(got != want))
            if differ:
                problems.append(f"{k.qualified}: {differ} of {got.size} elements of {what} differ")
    return problems




# -- many cases: worker processes, reduction, summary ------------------------------

def keep_reproducer(case: FuzzCase, result: CaseResult, corpus_dir: Path) -> Path:
    """Writes a reduced failing case into ``corpus_dir/seed<N>/``: its files and a
    ``case.txt`` saying how it was fused and what went wrong."""
    folder = corpus_dir / f"seed{case.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in case.sources().items():
        (folder / name).write_text(text)
    (folder / "case.txt").write_text(f"{case.describe()}\ncandidate: {choice_of(case).describe()}\n"
                                     f"outcome: {result.outcome}\n{result.detail}\n")
    return folder


def _worker(seeds: list[int], gpu: bool, out: str, reduce_failures: bool, corpus_dir: str | None = None) -> None:
    """Checks ``seeds`` one by one, appending a JSON line per case to ``out``; before each
    case it writes ``out + '.current'`` so a hang can be attributed to its seed."""
    import json
    from dataclasses import asdict

    from ..runtime.compile import Compiler
    from .fuzz import generate

    compiler = Compiler(None if gpu else "sm_90")
    current = Path(out + ".current")
    with open(out, "a") as log:
        for seed in seeds:
            current.write_text(str(seed))
            case = generate(seed)
            result = check_case(case, compiler, gpu=gpu)
            if result.outcome in FAILURES and reduce_failures:
                small = reduce_case(case, lambda c: check_case(c, compiler, gpu=gpu).outcome in FAILURES)
                result.reduced = small.describe() + "\n" + "\n".join(f"// {f}\n{t}" for f, t in small.sources().items())
                if corpus_dir is not None:
                    keep_reproducer(small, result, Path(corpus_dir))
            log.write(json.dumps(asdict(result)) + "\n")
            log.flush()
    current.unlink(missing_ok=True)


def run_many(seeds: Sequence[int], *, gpu: bool, workers: int, out_dir: str | Path, timeout_s: float,
             reduce_failures: bool = True, corpus_dir: str | Path | None = None) -> dict[str, Any]:
    """Checks every seed on ``workers`` processes (each its own CUDA context on a GPU) and
    returns the summary: counts by outcome, feature coverage, failures with reproducers
    (also written under ``corpus_dir``, when given), and the seeds of any case still
    running at ``timeout_s`` (a hang)."""
    import json
    import multiprocessing as mp

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("spawn")  # a fresh CUDA context per worker
    logs = [out_dir / f"worker{i}.jsonl" for i in range(workers)]
    for log in logs:
        log.unlink(missing_ok=True)
    keep = str(corpus_dir) if corpus_dir is not None else None
    procs = [ctx.Process(target=_worker, args=(list(seeds[i::workers]), gpu, str(log), reduce_failures, keep))
             for i, log in enumerate(logs)]
    start = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join(max(0.0, timeout_s - (time.perf_counter() - start)))
    hung = []
    for p, log in zip(procs, logs):
        if p.is_alive():
            p.kill()
            marker = Path(str(log) + ".current")
            if marker.exists():
                hung.append(int(marker.read_text()))
    results = [json.loads(line) for log in logs if log.exists() for line in log.read_text().splitlines()]
    outcomes: dict[str, int] = {}
    coverage: dict[str, int] = {}
    for r in results:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
        if r["outcome"] in ("verified", "compiled"):
            for f in r["features"]:
                coverage[f] = coverage.get(f, 0) + 1
    refusals: dict[str, int] = {}
    for r in results:
        if r["outcome"] == "refused":
            reason = r["detail"].split(": ", 1)[-1][:120]
            refusals[reason] = refusals.get(reason, 0) + 1
    return {
        "mode": "gpu" if gpu else "cpu",
        "seeds": [min(seeds), max(seeds)] if seeds else [],
        "cases": len(seeds), "finished": len(results), "hung_seeds": sorted(hung),
        "seconds": round(time.perf_counter() - start, 1), "outcomes": outcomes,
        "feature_coverage": dict(sorted(coverage.items())), "refusal_reasons": refusals,
        "failures": [r for r in results if r["outcome"] in FAILURES],
    }
