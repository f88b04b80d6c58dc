"""The ``hfuse`` command: a thin layer over the Python API."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from .errors import HFuseError, Location
from .files import read_text_file
from .frontend.options import KNOWN_STDS, NO_OPTIONS, CompileOptions
from .layouts import LAYOUTS, Layout, layout_of


def add_compile_flags(parser: argparse.ArgumentParser, *, arch: bool = False) -> None:
    """nvcc's preprocessing flags, spelled as nvcc spells them (``-IDIR`` or ``-I DIR``).

    ``-include`` is an option of its own (argparse matches it exactly before trying
    ``-I`` with the attached value ``nclude``)."""
    group = parser.add_argument_group("compile options (as for nvcc; added to a config's 'compile:')")
    group.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                       help="search DIR for #include files (repeatable); headers found there are read and analysed")
    group.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                       help="define a macro (repeatable; NAME alone is NAME=1)")
    group.add_argument("-U", dest="undefines", action="append", default=[], metavar="NAME",
                       help="undefine a macro, after every -D (repeatable)")
    group.add_argument("-include", dest="pre_includes", action="append", default=[], metavar="FILE",
                       help="read FILE before each source, as if its first line included it (repeatable)")
    group.add_argument("-std", dest="std", choices=KNOWN_STDS, help="language dialect (default c++17)")
    if arch:
        group.add_argument("-arch", dest="arch", metavar="sm_XX",
                           help="the device pass that decides #if __CUDA_ARCH__ (default sm_90)")


def options_from_flags(args: argparse.Namespace, base: CompileOptions = NO_OPTIONS) -> CompileOptions:
    """``base`` (a config's options) with the command line's flags on top."""
    return base.extended(args.include_dirs, args.defines, args.undefines, args.pre_includes, args.std,
                         getattr(args, "arch", None))


def _fuse(args: argparse.Namespace, console: Console) -> int:
    from .api import fuse
    from .config import FuseRequest, load_config, parse_kernel_option
    from .tune.regcap import RegisterCap

    if args.config:
        request = load_config(args.config)
    else:
        files = [Path(f) for f in args.files]
        sources = {f: read_text_file(f) for f in files}
        if not args.kernel:
            raise HFuseError("name the kernels to fuse with --kernel NAME:BLOCK (twice or more), or pass --config FILE")
        request = FuseRequest([parse_kernel_option(k, files, sources) for k in args.kernel])
    request.options = options_from_flags(args, request.options)
    if args.strategy:
        request.layout = args.strategy
    if args.min_blocks or args.max_registers:
        request.register_cap = RegisterCap(min_blocks=args.min_blocks, max_registers=args.max_registers)
    if args.name:
        request.name = args.name
    if args.barrier:
        request.barrier_form = args.barrier
    output = Path(args.output) if args.output else request.output
    if output is None:
        raise HFuseError("say where to write the fused kernel with -o FILE.cu (or 'output:' in the config)")
    inputs = {k.file.resolve() for k in request.kernels}
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
        barrier = f"barrier {p.barrier_id} over {p.size} threads" if p.barrier_id else "no barriers"
        console.print(f"  part {p.index}: {p.spec.instance:<28} threads [{p.offset}, {p.offset + p.size})  block {p.block}  {barrier}")
    console.print(f"wrote {output} in {elapsed * 1000:.0f} ms")
    if args.check:
        return _compile_check(fused, request.options, console)
    return 0


def _compile_check(fused, options: CompileOptions, console: Console) -> int:
    """``--check``: compile the fused file with nvcc and say whether it can launch at its block."""
    from .runtime.launchable import launch_check
    from .runtime.ptxas import find_resources, nvcc_resources
    from .tune.regcap import WarpgroupRegisters

    arch = options.arch
    if isinstance(fused.register_cap, WarpgroupRegisters) and not arch.endswith("a"):
        arch += "a"  # setmaxnreg is sm_90a only
    resources = nvcc_resources(fused.source, arch=arch, options=options.compiler_flags(std=False, pre_includes=False))
    found = find_resources(resources, fused.name)
    if found is None:
        raise HFuseError(f"nvcc compiled the fused file but reported nothing for '{fused.name}'")
    check = launch_check(fused.name, fused.block.size, found)
    console.print(f"checked with nvcc -arch={arch}: {check.describe()}")
    for problem in check.problems:
        console.print(f"[bold red]error:[/] {escape(problem)}")
    return 1 if check.problems else 0


def _layout_argument(text: str) -> Layout:
    try:
        return layout_of(text)
    except HFuseError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hfuse", description="Horizontal fusion of independent CUDA kernels.")
    sub = parser.add_subparsers(dest="command", required=True)
    fuse = sub.add_parser("fuse", help="write one horizontally (or vertically) fused kernel from CUDA sources (CPU only)",
                          description="Fuse two or more __global__ kernels into one. Input files are never modified.")
    fuse.add_argument("files", nargs="*", help=".cu files holding the kernels")
    fuse.add_argument("-k", "--kernel", action="append", metavar="SPEC",
                      help="a kernel and its block: NAME:256, NAME:32x16, 'NAME<float, 4>:128' or FILE:NAME:256; in fused order")
    fuse.add_argument("-c", "--config", help="YAML or TOML file describing the kernels (instead of FILES and --kernel)")
    fuse.add_argument("-o", "--output", help="the fused .cu file to write")
    fuse.add_argument("--strategy", type=_layout_argument, metavar="LAYOUT",
                      help="the layout (default horizontal): " + "; ".join(f"{name}: {layout.description}"
                                                                       for name, layout in LAYOUTS.items()))
    cap = fuse.add_mutually_exclusive_group()
    cap.add_argument("--min-blocks", type=int, help="register cap: __launch_bounds__(D, MIN_BLOCKS)")
    cap.add_argument("--max-registers", type=int, help="register cap: __maxnreg__(R)")
    fuse.add_argument("--name", help="name of the fused kernel (default: <k1>_<k2>__hfused)")
    fuse.add_argument("--barrier", choices=["barrier", "bar"], help="PTX barrier form: barrier.sync (default, non-aligned) or bar.sync")
    fuse.add_argument("--check", action="store_true",
                      help="compile the fused file with nvcc (no GPU needed) and report registers x block, spills and "
                           "static shared memory against what a block may have; exit 1 if it could not launch")
    add_compile_flags(fuse, arch=True)
    fuse.set_defaults(run=_fuse)
    from .tune.command import add_check_parser, add_tune_parser

    add_tune_parser(sub)
    add_check_parser(sub)
    try:
        from .bench.command import add_bench_parser
    except ImportError:  # the benchmark suite is optional at import time
        pass
    else:
        add_bench_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        return args.run(args, console)
    except HFuseError as exc:
        console.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
