"""``hfuse tune CONFIG``: tune a fusion on this GPU and write the plan and the winner.

The config names the kernels and how to make their inputs, either benchmark workloads::

    name: maxpool_hist
    workloads:
      - {kernel: maxpool, size: 320}    # size defaults to the workload's default
      - {kernel: hist}
    tune: {granularity: 128, refine: true}
    output: bench/results/h100

or a Python function of the user's that returns ``[KernelLaunch, ...]``::

    launches: my_inputs.py:make_launches
    compile: {include_dirs: [include], defines: [BLOCK=16], std: c++14}   # optional, as for nvcc

``-I/-D/-U/-include/-std`` on the command line add to (or override) ``compile:``.
"""
from __future__ import annotations

import argparse
import importlib.util
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console

from ..config import compile_options, read_config_file
from ..errors import HFuseError, Location
from ..files import writable_directory, write_output
from ..frontend.options import CompileOptions
from ..launch import KernelLaunch
from ..runtime.device import require_gpu
from ..runtime.sanitizer import TOOLS, Tool, verdict_of
from .flags import add_compile_flags, options_from_flags

_KEYS = {"name", "workloads", "launches", "tune", "output", "seed", "compile"}


def settings_from(data: dict[str, Any] | None, where: Location):
    """The ``tune:`` section as ``TuneSettings``."""
    from ..tuning.tuner import TuneSettings

    known = {f.name for f in fields(TuneSettings)}
    data = dict(data or {})
    unknown = set(data) - known
    if unknown:
        raise HFuseError(f"unknown tune settings: {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})", where)
    return TuneSettings(**data)


def _user_launches(spec: str, base: Path, where: Location) -> list[KernelLaunch]:
    path_text, _, func = spec.rpartition(":")
    path = base / path_text
    if not path_text or not func or not path.is_file():
        raise HFuseError(f"'launches: {spec}' must be FILE.py:FUNCTION of an existing file", where)
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)  # type: ignore[union-attr]
    launches = getattr(module, func, None)
    if launches is None:
        raise HFuseError(f"{path} has no function '{func}'", where)
    result = list(launches())
    if not all(isinstance(l, KernelLaunch) for l in result):
        raise HFuseError(f"{path}:{func} must return a list of hfuse.KernelLaunch", where)
    return result


def _workload_launches(entries: list[Any], seed: int, where: Location) -> list[KernelLaunch]:
    from ..bench.workloads import registry

    known = registry()
    out = []
    for entry in entries:
        entry = {"kernel": entry} if isinstance(entry, str) else dict(entry)
        name = entry.get("kernel")
        if name not in known:
            raise HFuseError(f"unknown benchmark workload '{name}' (known: {', '.join(known)})", where)
        workload = known[name]
        out.append(workload.make(int(entry.get("size", workload.default_size)), block=entry.get("block"), seed=seed))
    return out


@dataclass
class _Request:
    """A tune config read and its inputs made: what ``tune`` and ``check`` both start from."""

    data: dict[str, Any]
    settings: Any
    """``TuneSettings`` (the tuner is imported only when a tune runs)."""
    options: CompileOptions
    launches: list[KernelLaunch]
    name: str
    out_dir: Path


def _read_request(config: Path, output: Path | None, flags: argparse.Namespace | None) -> _Request:
    where = Location(config)
    data = read_config_file(config)
    unknown = set(data) - _KEYS
    if unknown:
        raise HFuseError(f"unknown keys in a tune config: {', '.join(sorted(unknown))} (known: {', '.join(sorted(_KEYS))})", where)
    settings = settings_from(data.get("tune"), where)
    options = tune_options(data, config, flags)
    require_gpu()  # before making inputs: a clear "no GPU" rather than an import error
    if "workloads" in data:
        launches = _workload_launches(data["workloads"], int(data.get("seed", 0)), where)
    elif "launches" in data:
        launches = _user_launches(str(data["launches"]), config.parent, where)
    else:
        raise HFuseError("a tune config needs 'workloads' (benchmark kernels) or 'launches: FILE.py:FUNCTION'", where)
    name = data.get("name") or "_".join(l.name for l in launches)
    return _Request(data, settings, options, launches, name, output or Path(data.get("output", ".")))


def run_tune(config: Path, output: Path | None, use_cache: bool, console: Console,
             flags: argparse.Namespace | None = None, sanitize: bool = False) -> int:
    """``flags``: parsed command-line compile flags, added to the config's ``compile:``."""
    from ..tuning.report import plan_table
    from ..tuning.tuner import tune

    request = _read_request(config, output, flags)
    out_dir, name = request.out_dir, request.name
    start = time.perf_counter()
    writable_directory(out_dir)  # before minutes of tuning, not after
    plan = tune(request.launches, request.settings, cache_dir=out_dir / ".hfuse-cache", use_cache=use_cache,
                options=request.options, sanitize=sanitize)
    elapsed = time.perf_counter() - start
    plan_path = plan.save(out_dir / f"{name}-plan.json")
    console.print(plan_table(plan), markup=False)
    if plan.should_fuse:
        write_output(out_dir / f"{name}.cu", plan.fused_source, "fused file")
        console.print(f"wrote {out_dir / (name + '.cu')}")
    console.print(f"wrote {plan_path} ({len(plan.candidates)} candidates, {elapsed:.1f} s)")
    return 0


def run_check(config: Path, plan_path: Path | None, output: Path | None, tools: Sequence[Tool], console: Console,
              flags: argparse.Namespace | None = None) -> int:
    """Runs a tuned plan's fused kernel under compute-sanitizer; 1 if the fusion added findings."""
    from ..tuning.plan import load_plan
    from ..tuning.tuner import check

    request = _read_request(config, output, flags)
    path = plan_path or request.out_dir / f"{request.name}-plan.json"
    if not path.is_file():
        raise HFuseError(f"no plan at {path}", hint="run 'hfuse tune' with this config first, or give --plan")
    plan = load_plan(path)
    plan.sanitizer = check(request.launches, plan, tools=tools, options=request.options)
    plan.save(path)
    for result in plan.sanitizer:
        console.print(f"{result.tool:10} {result.verdict:9} {result.note}", markup=False)
    console.print(f"wrote the verdicts into {path}")
    return 1 if verdict_of(plan.sanitizer) == "findings" else 0


def tune_options(data: dict[str, Any], config: Path, flags: argparse.Namespace | None) -> CompileOptions:
    """The config's ``compile:`` (paths relative to it) with the command line's flags on top."""
    options = compile_options(data.get("compile"), config)
    return options_from_flags(flags, options) if flags is not None else options


def add_tune_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("tune", help="profile partitions and register caps on the GPU, keep the fastest (or decline)",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="YAML or TOML tune config")
    parser.add_argument("-o", "--output", type=Path, help="directory for the plan JSON and the fused .cu")
    parser.add_argument("--no-cache", action="store_true", help="measure again even if an identical run is cached")
    add_compile_flags(parser)  # no -arch: the tuner's device pass is the GPU's

    parser.add_argument("--sanitize", action="store_true",
                        help="also run the chosen fused kernel under compute-sanitizer (as 'hfuse check')")

    def run(args: argparse.Namespace, console: Console) -> int:
        return run_tune(args.config, args.output, not args.no_cache, console, args, sanitize=args.sanitize)

    parser.set_defaults(run=run)


def add_check_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "check", help="run a tuned plan's fused kernel under compute-sanitizer, beside the original kernels",
        description="Runs the fused kernel of a plan (made by 'hfuse tune' from the same config) and the original "
        "kernels on the config's inputs under compute-sanitizer's memcheck, racecheck, synccheck and initcheck. "
        "A finding the originals show too is 'explained'; the exit status is 1 if the fused kernel has any other.")
    parser.add_argument("config", type=Path, help="the YAML or TOML tune config the plan was made from")
    parser.add_argument("--plan", type=Path, help="the plan JSON (default: OUTPUT/NAME-plan.json, as 'hfuse tune' writes it)")
    parser.add_argument("-o", "--output", type=Path, help="the directory 'hfuse tune' wrote to (default: the config's)")
    parser.add_argument("--tool", action="append", choices=TOOLS, help="one tool (repeatable; default: all four)")
    add_compile_flags(parser)

    def run(args: argparse.Namespace, console: Console) -> int:
        return run_check(args.config, args.plan, args.output, tuple(args.tool or TOOLS), console, args)

    parser.set_defaults(run=run)
