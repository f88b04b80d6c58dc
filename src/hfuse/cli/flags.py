"""Command-line flags shared by the subcommands: nvcc's preprocessing flags and the layout."""
from __future__ import annotations

import argparse

from ..errors import HFuseError
from ..frontend.options import KNOWN_STDS, LANGUAGE_SWITCHES, LANGUAGE_VALUED, NO_OPTIONS, CompileOptions
from ..layouts import LAYOUTS, Layout, layout_of


def add_compile_flags(parser: argparse.ArgumentParser, *, arch: bool = False) -> None:
    """nvcc's preprocessing flags, spelled as nvcc spells them (``-IDIR`` or ``-I DIR``).

    ``-include`` is an option of its own (argparse matches it exactly before trying
    ``-I`` with the attached value ``nclude``)."""
    group = parser.add_argument_group("compile options (as for nvcc; added to a config's 'compile:')")
    group.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                       help="search DIR for #include files (repeatable); headers found there are read and analysed "
                       "(but a folder inside an installed Python package is taken as -isystem)")
    group.add_argument("-isystem", dest="system_include_dirs", action="append", default=[], metavar="DIR",
                       help="an installed library's headers, searched after -I (repeatable): kept as #include lines, "
                       "read for their macros and declarations, never copied into the output (PyTorch's folders "
                       "are added by themselves when torch is installed)")
    group.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                       help="define a macro (repeatable; NAME alone is NAME=1)")
    group.add_argument("-U", dest="undefines", action="append", default=[], metavar="NAME",
                       help="undefine a macro, after every -D (repeatable)")
    group.add_argument("-include", dest="pre_includes", action="append", default=[], metavar="FILE",
                       help="read FILE before each source, as if its first line included it (repeatable)")
    group.add_argument("-std", dest="std", choices=KNOWN_STDS, help="language dialect (default c++17)")
    group.set_defaults(language_flags=[])
    for spelling, flag in LANGUAGE_SWITCHES.items():
        shown = spelling == flag
        group.add_argument(f"--{spelling}", f"-{spelling}", dest="language_flags", action="append_const",
                           const=f"--{flag}",
                           help=(_LANGUAGE_HELP.get(flag) if shown else argparse.SUPPRESS))
    for name in LANGUAGE_VALUED:
        group.add_argument(f"--{name}", f"-{name}", dest="language_flags", action="append",
                           type=_valued(name), metavar="true|false",
                           help=f"as nvcc's --{name}, for every compile of the originals and the fused file")
    if arch:
        group.add_argument("-arch", dest="arch", metavar="sm_XX",
                           help="the device pass that decides #if __CUDA_ARCH__ (default sm_90)")


_LANGUAGE_HELP = {
    "expt-relaxed-constexpr": "as nvcc's: device code may call constexpr host functions (std::max, "
                              "std::numeric_limits); given to every compile of the originals and the fused file",
    "extended-lambda": "as nvcc's (also --expt-extended-lambda): __device__ lambdas",
    "use_fast_math": "as nvcc's: fast math, for the originals and the fused file alike",
}


def _valued(name: str):
    def flag(value: str) -> str:
        if value not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"--{name} takes true or false, not '{value}'")
        return f"--{name}={value}"
    return flag


def options_from_flags(args: argparse.Namespace, base: CompileOptions = NO_OPTIONS) -> CompileOptions:
    """``base`` (a config's options) with the command line's flags on top."""
    return base.extended(args.include_dirs, args.defines, args.undefines, args.pre_includes, args.std,
                         getattr(args, "arch", None), args.system_include_dirs, args.language_flags)


def _layout_argument(text: str) -> Layout:
    try:
        return layout_of(text)
    except HFuseError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


STRATEGY_NOTE = "note: --strategy is the old name of --layout; it is read as --layout"


def add_layout_flag(parser: argparse.ArgumentParser) -> None:
    """``--layout LAYOUT``, and ``--strategy``, its old name, still read (``layout_from``)."""
    parser.add_argument("--layout", type=_layout_argument, metavar="LAYOUT",
                        help="how the kernels share the fused block or grid (default horizontal): "
                        + "; ".join(f"{name}: {layout.description}" for name, layout in LAYOUTS.items())
                        .replace("%", "%%"))  # argparse formats help with %: spatial's says "30%"
    parser.add_argument("--strategy", type=_layout_argument, help=argparse.SUPPRESS)


def layout_from(args: argparse.Namespace) -> tuple[Layout | None, list[str]]:
    """The layout the command line asks for (None: the config's or the default) and notes to show."""
    if args.layout is not None and args.strategy is not None:
        raise HFuseError("give --layout only (--strategy is its old name)")
    if args.strategy is not None:
        return args.strategy, [STRATEGY_NOTE]
    return args.layout, []
