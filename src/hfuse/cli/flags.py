"""Command-line flags shared by the subcommands: nvcc's preprocessing flags and the layout."""
from __future__ import annotations

import argparse
import re

from ..errors import HFuseError
from ..frontend.options import KNOWN_STDS, LANGUAGE_SWITCHES, LANGUAGE_VALUED, NO_OPTIONS, CompileOptions
from ..layouts import LAYOUTS, Layout, layout_of


def add_compile_commands_flag(parser: argparse.ArgumentParser) -> None:
    """``-p PATH``: each input read with its own build's flags (``build_commands``)."""
    parser.add_argument("-p", "--compile-commands", metavar="PATH",
                        help="read each input file with the flags its own build compiles it with: the build's "
                             "compile_commands.json, or the build folder that holds it (CMake: "
                             "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON); flags given here are added to each file's; the "
                             "fused file is compiled with what the files' builds share")


def add_compile_flags(parser: argparse.ArgumentParser, *, arch: bool = False) -> None:
    """nvcc's preprocessing flags, spelled as nvcc spells them (``-IDIR`` or ``-I DIR``).

    ``-include`` is an option of its own (argparse matches it exactly before trying
    ``-I`` with the attached value ``nclude``)."""
    group = parser.add_argument_group("compile options (as for nvcc; added to a config's 'compile:')")
    group.add_argument("-I", "--include-path", dest="include_dirs", action="append", default=[], metavar="DIR",
                       help="search DIR for #include files (repeatable); headers found there are read and analysed "
                       "(but another project's folder is taken as -isystem: one inside an installed Python package, "
                       "in another git checkout than the inputs', or under third_party/, 3rdparty/, _deps/...)")
    group.add_argument("-isystem", "--system-include", dest="system_include_dirs", action="append", default=[],
                       metavar="DIR",
                       help="an installed library's headers, searched after -I (repeatable): kept as #include lines, "
                       "read for their macros and declarations, never copied into the output (PyTorch's folders "
                       "are added by themselves when torch is installed)")
    group.add_argument("-D", "--define-macro", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                       help="define a macro (repeatable; NAME alone is NAME=1)")
    group.add_argument("-U", "--undefine-macro", dest="undefines", action="append", default=[], metavar="NAME",
                       help="undefine a macro, after every -D (repeatable)")
    group.add_argument("-include", "--pre-include", dest="pre_includes", action="append", default=[], metavar="FILE",
                       help="read FILE before each source, as if its first line included it (repeatable)")
    group.add_argument("-std", "--std", dest="std", choices=KNOWN_STDS, help="language dialect (default c++17)")
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
        group.add_argument("-arch", "--gpu-architecture", dest="arch", metavar="sm_XX",
                           help="the device pass that decides #if __CUDA_ARCH__ (default sm_90); "
                           "-gencode arch=compute_XX,code=sm_XX says it too")
    _add_ignored_nvcc_flags(parser)


IGNORED_NVCC_FLAGS: dict[tuple[str, ...], bool] = {
    # optimisation, debugging and line information
    ("-O", "--optimize"): True, ("-g", "--debug"): False, ("-G", "--device-debug"): False,
    ("-lineinfo", "--generate-line-info"): False, ("--extra-device-vectorization",): False, ("-restrict",): False,
    ("-maxrregcount", "--maxrregcount"): True, ("--use-local-env",): False,
    # the host compiler, ptxas, the linkers, the fat binary
    ("-Xcompiler", "--compiler-options"): True, ("-ccbin", "--compiler-bindir"): True,
    ("-Xptxas", "--ptxas-options"): True, ("-Xlinker", "--linker-options"): True, ("-Xnvlink",): True,
    ("-Xfatbin",): True, ("-Xarchive",): True, ("-Xcudafe",): True, ("-forward-unknown-to-host-compiler",): False,
    ("-allow-unsupported-compiler", "--allow-unsupported-compiler"): False, ("-m64",): False,
    ("-cudart", "--cudart"): True, ("-split-compile", "--split-compile"): True,
    ("-fPIC",): False, ("-L",): True, ("-l",): True, ("-shared",): False,
    # what is built and how (hfuse builds its own)
    ("-c", "--compile"): False, ("-dc", "--device-c"): False, ("-dlink", "--device-link"): False,
    ("-rdc", "--relocatable-device-code"): True, ("-x",): True, ("-gencode", "--generate-code"): True,
    ("-code", "--gpu-code"): True, ("--threads", "-t"): True, ("--default-stream",): True,
    ("-keep",): False, ("-keep-dir",): True, ("-res-usage", "--resource-usage"): False, ("-src-in-ptx",): False,
    ("-MD",): False, ("-MMD",): False, ("-M",): False, ("-MF",): True, ("-MT",): True, ("-MP",): False,
    # warnings and diagnostics
    ("-w", "--disable-warnings"): False, ("-W",): True, ("-Werror",): True,
    ("-diag-suppress", "--diag-suppress"): True, ("-diag-warn", "--diag-warn"): True,
    ("-diag-error", "--diag-error"): True, ("--display-error-number",): False,
}
"""nvcc's flags that change how code is compiled, linked or reported, not what it means to
the device pass hfuse models: each (its spellings) and whether it takes a value. A build's
command line pasted whole is taken; they are named in a note and left out (``-gencode``'s
``code=sm_XX`` says the architecture, as ``-arch`` does)."""


class _Ignored(argparse.Action):
    """Keeps the flag as given (``-O3``, ``-Xcompiler -fPIC``), for the note."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if values is None or values == []:
            given = option_string
        else:
            given = f"{option_string}{values}" if option_string in ("-O", "-W", "-l", "-L") else f"{option_string} {values}"
        getattr(namespace, self.dest).append(given)


def _add_ignored_nvcc_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("nvcc flags taken and left out (code generation, debugging, warnings, "
                                      "the host compiler, linking: they do not change what the code means)")
    parser.set_defaults(ignored_nvcc_flags=[])
    taken = set(parser._option_string_actions)  # hfuse's own flags win (-c is --config)
    for spellings, takes_value in IGNORED_NVCC_FLAGS.items():
        if not (free := [s for s in spellings if s not in taken]):
            continue
        nargs = None if takes_value else 0
        group.add_argument(*free, dest="ignored_nvcc_flags", action=_Ignored, nargs=nargs,
                           metavar="VALUE", help=argparse.SUPPRESS)


PASSED_ON = frozenset({"-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xlinker",
                       "--linker-options", "-Xnvlink", "-Xfatbin", "-Xarchive", "-Xcudafe"})
"""nvcc's flags whose value is another tool's flag (``-Xcompiler -fPIC``)."""


def joined_nvcc_values(argv: list[str]) -> list[str]:
    """``argv`` with each flag of ``PASSED_ON`` joined to its value (``-Xcompiler=-fPIC``):
    argparse takes a value that starts with '-' for a flag of its own and refuses."""
    out: list[str] = []
    values = iter(argv)
    for given in values:
        value = next(values, None) if given in PASSED_ON else None
        out.append(given if value is None else f"{given}={value}")
    return out


def arch_of_gencode(values: list[str]) -> str | None:
    """The first ``code=sm_XX`` (or ``arch=compute_XX``) of ``-gencode`` values, as ``-arch`` gives it."""
    for value in values:
        found = re.search(r"code=\[?(sm_\d+[af]?)", value) or re.search(r"arch=compute_(\d+[af]?)", value)
        if found:
            return found.group(1) if found.group(1).startswith("sm_") else f"sm_{found.group(1)}"
    return None


def ignored_flag_notes(args: argparse.Namespace) -> list[str]:
    """The note that names the nvcc flags hfuse took and left out (none: no note)."""
    ignored = getattr(args, "ignored_nvcc_flags", [])
    if not ignored:
        return []
    return [f"note: nvcc flags left out (how code is compiled, not what it means): {' '.join(ignored)}"]


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
    arch = getattr(args, "arch", None)
    if arch is None and hasattr(args, "arch"):  # (tune has no -arch: the GPU's is the device pass)
        arch = arch_of_gencode([f.split(" ", 1)[1] for f in getattr(args, "ignored_nvcc_flags", [])
                                if f.startswith(("-gencode ", "--generate-code "))])
    return base.extended(args.include_dirs, args.defines, args.undefines, args.pre_includes, args.std,
                         arch, args.system_include_dirs, args.language_flags)


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
