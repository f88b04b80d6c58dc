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
    args: {n: 4096}                    # its keyword arguments (optional)
    compile: {include_dirs: [include], defines: [BLOCK=16], std: c++14}   # optional, as for nvcc

``-I/-D/-U/-include/-std`` on the command line add to (or override) ``compile:``.

``hfuse tune MANIFEST``: a file with ``requests:`` is a batch (``hfuse.batch.manifest``):
every request is tuned, compiles on a pool of processes, measurements in one worker per
GPU, two requests at a time on each; a batch started again skips what it finished. With
``--ray`` it runs on Ray (``RAY_ADDRESS``, or a Ray of this machine).
"""
from __future__ import annotations

import argparse
import functools
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.markup import escape

from ..config import read_config_file
from ..errors import HFuseError
from ..files import writable_directory, write_output
from ..launch import KernelLaunch
from ..runtime.device import require_gpu
from ..runtime.sanitizer import TOOLS, Tool, verdict_of
from .flags import add_compile_commands_flag, add_compile_flags, options_from_flags


@dataclass
class _Request:
    """A single tune config read and its inputs made: what ``tune`` and ``check`` both start from."""

    request: Any
    """``batch.manifest.TuneRequest`` (the tuner is imported only when a tune runs)."""
    launches: list[KernelLaunch]
    name: str
    out_dir: Path
    notes: list[str]
    """What the user should know about how the inputs were read (``-p``)."""


def _read_request(config: Path, output: Path | None, flags: argparse.Namespace | None,
                  needs_gpu: bool = True) -> _Request:
    from ..batch.manifest import request_of_config

    data = read_config_file(config)
    request = request_of_config(data, config)
    if flags is not None:
        request = replace(request, options=options_from_flags(flags, request.options))
    if needs_gpu:
        require_gpu()  # before making inputs: a clear "no GPU" rather than an import error
    launches = request.inputs.launches()
    notes: list[str] = []
    if getattr(flags, "compile_commands", None):
        from .build_commands import BuildCommands, with_build_flags

        specs, options, notes = with_build_flags([l.kernel for l in launches], request.options,
                                                 BuildCommands.load(flags.compile_commands), flags)
        launches = [replace(launch, kernel=spec) for launch, spec in zip(launches, specs)]
        request = replace(request, options=options)
    name = request.name or "_".join(l.name for l in launches)
    return _Request(request, launches, name, output or Path(data.get("output", ".")), notes)


def _print_notes(notes: list[str], console: Console) -> None:
    for note in notes:
        console.print(f"[yellow]{escape(note)}[/]")


def _recorded_backend(path: Path | None) -> Any:
    if path is None:
        return None
    from ..tuning.recorded import RecordedBackend, Recording

    return RecordedBackend(Recording.load(path))


def run_tune(config: Path, output: Path | None, use_cache: bool, console: Console,
             flags: argparse.Namespace | None = None, sanitize: bool = False) -> int:
    """``flags``: parsed command-line compile flags, added to the config's ``compile:``."""
    from ..batch.manifest import is_manifest

    data = read_config_file(config)
    if is_manifest(data):
        return run_manifest(config, data, output, use_cache, console, flags)
    from ..tuning.report import plan_table
    from ..tuning.tuner import tune

    recorded = getattr(flags, "recorded", None)
    request = _read_request(config, output, flags, needs_gpu=recorded is None)
    out_dir, name = request.out_dir, request.name
    _print_notes(request.notes, console)
    start = time.perf_counter()
    writable_directory(out_dir)  # before minutes of tuning, not after
    plan = tune(request.launches, request.request.settings, cache_dir=out_dir / ".hfuse-cache", use_cache=use_cache,
                options=request.request.options, sanitize=sanitize, backend=_recorded_backend(recorded),
                recipe=request.request.inputs)
    elapsed = time.perf_counter() - start
    plan_path = plan.save(out_dir / f"{name}-plan.json")
    console.print(plan_table(plan), markup=False)
    if plan.should_fuse:
        write_output(out_dir / f"{name}.cu", plan.fused_source, "fused file",
                     inputs=[config, *(launch.kernel.file for launch in request.launches)])
        console.print(f"wrote {out_dir / (name + '.cu')}")
    console.print(f"wrote {plan_path} ({len(plan.candidates)} candidates, {elapsed:.1f} s)")
    return 0


def run_manifest(path: Path, data: dict[str, Any], output: Path | None, use_cache: bool, console: Console,
                 flags: argparse.Namespace | None) -> int:
    """A batch; exit status 1 when a request failed."""
    from ..batch.manifest import manifest_of
    from ..batch.runner import run_batch, summary_table

    manifest = manifest_of(data, path)
    if flags is not None:
        manifest = replace(manifest, requests=tuple(replace(r, options=options_from_flags(flags, r.options))
                                                    for r in manifest.requests))
    if getattr(flags, "compile_commands", None):
        from .build_commands import BuildCommands

        # (every file's: a request's kernel files are known only where its launches are made)
        build = BuildCommands.load(flags.compile_commands).file_options(flags)
        manifest = replace(manifest, requests=tuple(replace(r, build=build) for r in manifest.requests))
    if output is not None:
        manifest = replace(manifest, output=output)
    recorded = _recorded_backend(getattr(flags, "recorded", None))
    concurrency = getattr(flags, "concurrency", 2)
    source = None
    use_ray = (getattr(flags, "ray", False) or bool(getattr(flags, "ray_address", None))
               or bool(os.environ.get("RAY_ADDRESS")))
    if use_ray:
        from ..batch.ray_runner import RayOptions, ray_outcomes
        from ..tuning.recorded import RecordedBackend

        options = RayOptions(address=getattr(flags, "ray_address", None), concurrency=concurrency)
        if recorded is not None:  # no GPU needed: one actor measures from the recording
            options.actors, options.gpus_per_actor = 1, 0.0
            # the actor makes its own backend from the recording (a picklable factory)
            source = ray_outcomes(manifest.output / ".hfuse-cache", use_cache, options,
                                  make_backend=functools.partial(RecordedBackend, recorded.recording))
        else:
            source = ray_outcomes(manifest.output / ".hfuse-cache", use_cache, options)
    elif recorded is None:
        require_gpu()
    runner = None
    if not use_ray and getattr(flags, "compile_processes", None):
        from ..runtime.compile_pool import ProcessCompilePool

        runner = ProcessCompilePool(processes=flags.compile_processes)
    report = run_batch(manifest, source=source, backend=recorded, runner=runner, use_cache=use_cache,
                       concurrency=concurrency, fresh=getattr(flags, "fresh", False), console=console,
                       executor="ray" if use_ray else "local")
    console.print(summary_table(report))
    console.print(f"wrote {manifest.output / 'batch.json'} and a plan per request in {manifest.output}")
    return 1 if any(o.status == "failed" for o in report.outcomes) else 0


def run_check(config: Path, plan_path: Path | None, output: Path | None, tools: Sequence[Tool], console: Console,
              flags: argparse.Namespace | None = None) -> int:
    """Runs a tuned plan's fused kernel under compute-sanitizer; 1 if the fusion added findings."""
    from ..tuning.plan import load_plan
    from ..tuning.tuner import check

    request = _read_request(config, output, flags)
    _print_notes(request.notes, console)
    path = plan_path or request.out_dir / f"{request.name}-plan.json"
    if not path.is_file():
        raise HFuseError(f"no plan at {path}", hint="run 'hfuse tune' with this config first, or give --plan")
    plan = load_plan(path)
    plan.sanitizer = check(request.launches, plan, tools=tools, options=request.request.options)
    plan.save(path)
    for result in plan.sanitizer:
        console.print(f"{result.tool:10} {result.verdict:9} {result.note}", markup=False)
    console.print(f"wrote the verdicts into {path}")
    return 1 if verdict_of(plan.sanitizer) == "findings" else 0


def add_tune_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("tune", help="profile partitions and register caps on the GPU, keep the fastest (or decline)",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", type=Path, help="YAML or TOML tune config")
    parser.add_argument("-o", "--output", type=Path, help="directory for the plan JSON and the fused .cu")
    parser.add_argument("--no-cache", action="store_true", help="measure again even if an identical run is cached")
    add_compile_flags(parser)  # no -arch: the tuner's device pass is the GPU's
    add_compile_commands_flag(parser)

    parser.add_argument("--sanitize", action="store_true",
                        help="also run the chosen fused kernel under compute-sanitizer (as 'hfuse check')")
    batch = parser.add_argument_group("a manifest (a file with 'requests:')")
    batch.add_argument("--concurrency", type=int, default=2, metavar="N",
                       help="requests tuned at a time per GPU (default 2: one compiles while another measures)")
    batch.add_argument("--compile-processes", type=int, metavar="N", help="NVRTC processes (default: one per CPU)")
    batch.add_argument("--fresh", action="store_true", help="forget what an earlier run of the batch finished")
    batch.add_argument("--ray", action="store_true",
                       help="run on Ray: compiles as tasks, one actor per GPU (also when RAY_ADDRESS is set)")
    batch.add_argument("--ray-address", metavar="ADDR", help="run on the Ray cluster at ADDR (implies --ray)")
    parser.add_argument("--recorded", type=Path, metavar="FILE",
                        help="take measurements from a recording (tuning.recorded) instead of a GPU: dry runs, tests")

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
    add_compile_commands_flag(parser)

    def run(args: argparse.Namespace, console: Console) -> int:
        return run_check(args.config, args.plan, args.output, tuple(args.tool or TOOLS), console, args)

    parser.set_defaults(run=run)
