"""``hfuse fuse``: write one fused kernel from CUDA sources (CPU only)."""
from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..errors import HFuseError, Location
from ..frontend.parse import read_source_file
from ..frontend.options import LANGUAGE_SWITCHES, CompileOptions
from ..partition import WHOLE_BLOCK_BARRIER
from .flags import add_compile_commands_flag, add_compile_flags, add_layout_flag, layout_from, options_from_flags


def run_fuse(args: argparse.Namespace, console: Console) -> int:
    from ..api import fuse
    from ..config import FuseRequest, load_config, parse_kernel_option
    from ..registers import RegisterCap

    if args.config:
        request = load_config(args.config)
    else:
        files = [Path(f) for f in args.files]
        sources = {f: read_source_file(f) for f in files}
        if not args.kernel:
            raise HFuseError("name the kernels to fuse with --kernel NAME:BLOCK (twice or more), or pass --config FILE")
        options = options_from_flags(args)
        kernels_in = _kernels_in(files, sources, options)  # (read once, where a name needs it)
        request = FuseRequest([parse_kernel_option(k, files, sources, kernels_in) for k in args.kernel])
    request.options = options_from_flags(args, request.options)
    layout, notes = layout_from(args)
    if args.compile_commands:
        from .build_commands import BuildCommands, with_build_flags

        request.kernels, request.options, built = with_build_flags(
            request.kernels, request.options, BuildCommands.load(args.compile_commands), args)
        notes = [*built, *notes]
    for note in [*request.notes, *notes]:
        console.print(f"[yellow]{escape(note)}[/]")
    if layout is not None:
        request.layout = layout
    if args.min_blocks or args.max_registers:
        request.register_cap = RegisterCap(min_blocks=args.min_blocks, max_registers=args.max_registers)
    if args.name:
        request.name = args.name
    if args.barrier:
        request.barrier_form = args.barrier
    output = Path(args.output) if args.output else request.output
    if output is None:
        raise HFuseError("say where to write the fused kernel with -o FILE.cu (or 'output:' in the config)")
    inputs = {k.file.resolve() for k in request.kernels} | ({Path(args.config).resolve()} if args.config else set())
    if output.resolve() in inputs:
        raise HFuseError("the output would overwrite an input file; hfuse never modifies its inputs", Location(output))
    start = time.perf_counter()
    fused = fuse(
        request.kernels,
        layout=request.layout,
        register_cap=request.register_cap,
        name=request.name,
        barrier_form=request.barrier_form,
        options=request.options,
    )
    elapsed = time.perf_counter() - start
    fused.write(output)
    console.print(f"[bold]{fused.name}[/]: {fused.layout.spec} fusion, block of {fused.block.x} threads, "
                  f"{'register cap ' + fused.register_cap.label if fused.register_cap else 'no register cap'}")
    for p in fused.parts:
        barrier = ("no barriers" if p.barrier_id is None else "the block's own barrier"
                   if p.barrier_id == WHOLE_BLOCK_BARRIER else f"barrier {p.barrier_id} over {p.size} threads")
        console.print(f"  part {p.index}: {p.spec.instance:<28} threads [{p.offset}, {p.offset + p.size})  block {p.block}  {barrier}")
    for note in fused.notes:
        console.print(f"[yellow]{escape(note)}[/]")
    console.print(f"wrote {output} in {elapsed * 1000:.0f} ms")
    status = _compile_check(fused, request.options, console) if args.check else 0
    if args.verify or args.verify_inputs:
        status = max(status, _verify(fused, request, args, console))
    return status


def _kernels_in(files: list[Path], sources: dict[Path, str], options: CompileOptions):
    """The kernels each file defines once preprocessed with ``options`` (in a header it
    includes, or by a macro), read once when first asked: ``parse_kernel_option``'s last
    resort, and its error's list."""
    from ..frontend.extract import load_source

    @functools.cache
    def kernels_in() -> dict[Path, list[str]]:
        found: dict[Path, list[str]] = {}
        for file in files:
            try:
                found[file] = list(load_source(file, sources[file], options).kernels)
            except HFuseError:
                continue  # fuse() reports what is wrong with this file
        return found
    return kernels_in


def _verify(fused, request, args: argparse.Namespace, console: Console) -> int:
    """``--verify``: run the fused kernel beside the originals on the GPU; 1 if an output differs."""
    from ..runtime.device import require_gpu
    from ..tuning.verify import GeneratedInputs, verify

    require_gpu()
    launches = None
    if args.verify_inputs:
        from ..batch.inputs import function_of

        launches = function_of(args.verify_inputs, Path.cwd(), Location(args.verify_inputs)).launches()
        launches = [l.with_block(k.block) for l, k in zip(launches, request.kernels)]
    found = verify(request.kernels, fused.fusion, launches, options=request.options,
                   inputs=GeneratedInputs(args.verify_size, args.verify_seed), barrier_form=request.barrier_form,
                   name=request.name, expected_source=fused.source)
    result = found.result
    if found.verified:
        console.print(f"[green]verified[/]: every output equals the original kernels' bit for bit, on {found.inputs} "
                      f"inputs ({result.registers} registers, {result.occupancy or 0:.0%} occupancy)")
        return 0
    console.print(f"[bold red]not verified[/] on {found.inputs} inputs ({result.failure}): {escape(result.error or '')}")
    return 1


def _compile_check(fused, options: CompileOptions, console: Console) -> int:
    """``--check``: compile the fused file with nvcc and say whether it can launch at its block."""
    from ..registers import WarpgroupRegisters
    from ..runtime.launchable import launch_check
    from ..runtime.ptxas import NvccError, find_resources, nvcc_resources

    if fused.template_parameters:
        part = next(s.part for s in fused.signatures if s.template_header)
        spec = part.spec
        raise HFuseError(f"--check compiles the fused kernel, and {fused.name} is a template over "
                         f"{', '.join(fused.template_parameters)}: nvcc compiles no instance of it",
                         Location(spec.file, part.kernel.line, spec.name),
                         hint=f"give {spec.name}'s template arguments to check one instance: "
                              f"-k '{spec.name}<ARGS>:{spec.block}'")
    arch = options.arch
    if isinstance(fused.register_cap, WarpgroupRegisters) and not arch.endswith("a"):
        arch += "a"  # setmaxnreg is sm_90a only
    try:
        resources = nvcc_resources(fused.source, arch=arch, std=options.emitted_std,
                                   options=options.compiler_flags(std=False, pre_includes=False))
    except NvccError as failed:
        wanted = [flag for flag in LANGUAGE_SWITCHES.values() if f"--{flag}" in failed.log]
        if wanted:
            named = " ".join(f"--{flag}" for flag in dict.fromkeys(wanted))
            raise HFuseError(failed.message, hint=f"nvcc asks for {named}: if your build gives it nvcc, give it "
                             f"hfuse too (hfuse fuse ... {named})\n{failed.hint}") from None
        raise
    found = find_resources(resources, fused.name)
    if found is None:
        raise HFuseError(f"nvcc compiled the fused file but reported nothing for '{fused.name}'")
    check = launch_check(fused.name, fused.block.size, found)
    console.print(f"checked with nvcc -arch={arch}: {check.describe()}")
    for problem in check.problems:
        console.print(f"[bold red]error:[/] {escape(problem)}")
    return 1 if check.problems else 0


def add_fuse_parser(sub: argparse._SubParsersAction) -> None:
    fuse = sub.add_parser("fuse", help="write one horizontally (or vertically) fused kernel from CUDA sources (CPU only)",
                          description="Fuse two or more __global__ kernels into one. Input files are never modified.")
    fuse.add_argument("files", nargs="*", help=".cu files holding the kernels")
    fuse.add_argument("-k", "--kernel", action="append", metavar="SPEC",
                      help="a kernel and its block: NAME:256, NAME:32x16, 'NAME<float, 4>:128', FILE:NAME:256 or NAME@LINE:256 "
                           "(of kernels of one name, the one defined at LINE); in fused order")
    fuse.add_argument("-c", "--config", help="YAML or TOML file describing the kernels (instead of FILES and --kernel)")
    fuse.add_argument("-o", "--output", help="the fused .cu file to write")
    add_layout_flag(fuse)
    cap = fuse.add_mutually_exclusive_group()
    cap.add_argument("--min-blocks", type=int, help="register cap: __launch_bounds__(D, MIN_BLOCKS)")
    cap.add_argument("--max-registers", type=int, help="register cap: __maxnreg__(R)")
    fuse.add_argument("--name", help="name of the fused kernel (default: <k1>_<k2>__hfused)")
    fuse.add_argument("--barrier", choices=["barrier", "bar"], help="PTX barrier form: barrier.sync (default, non-aligned) or bar.sync")
    fuse.add_argument("--check", action="store_true",
                      help="compile the fused file with nvcc (no GPU needed) and report registers x block, spills and "
                           "static shared memory against what a block may have; exit 1 if it could not launch")
    verify = fuse.add_argument_group("verification on the GPU")
    verify.add_argument("--verify", action="store_true",
                        help="run the fused kernel and the originals once on generated inputs (arrays of SIZE x SIZE "
                             "random elements, integer parameters SIZE) and compare every output bit for bit; "
                             "exit 1 if one differs")
    verify.add_argument("--verify-size", type=int, default=256, metavar="SIZE", help="generated inputs' size (256)")
    verify.add_argument("--verify-seed", type=int, default=0, metavar="SEED")
    verify.add_argument("--verify-inputs", metavar="FILE.py:FUNCTION",
                        help="verify on your inputs instead: a function returning [hfuse.KernelLaunch, ...] in the "
                             "kernels' order")
    add_compile_flags(fuse, arch=True)
    add_compile_commands_flag(fuse)
    fuse.set_defaults(run=run_fuse)
