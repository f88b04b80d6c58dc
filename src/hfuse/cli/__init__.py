"""The ``hfuse`` command: one home for the command line, a thin layer over the Python API.

One module per subcommand (``fuse``, ``tune`` and ``check``, ``bench``) and the flags they
share (``flags``). Each subcommand imports what it runs only when it runs, so ``hfuse
fuse`` never enters the tuner or the benchmark suite.
"""
from __future__ import annotations

import argparse
import logging
import sys

from rich.console import Console
from rich.markup import escape

from ..version import __version__
from ..errors import HFuseError
from .bench import add_bench_parser
from .flags import add_compile_flags, ignored_flag_notes, joined_nvcc_values, options_from_flags
from .fuse import add_fuse_parser
from .tune import add_check_parser, add_tune_parser

__all__ = ["add_compile_flags", "build_parser", "main", "options_from_flags"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hfuse", description="Horizontal fusion of independent CUDA kernels.")
    parser.add_argument("--version", action="version", version=f"hfuse {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_fuse_parser(sub)
    add_tune_parser(sub)
    add_check_parser(sub)
    add_bench_parser(sub)
    return parser


class _ConsoleLog(logging.Handler):
    """hfuse's progress messages (``logging``, logger ``hfuse``) on the command's console."""

    def __init__(self, console: Console) -> None:
        super().__init__(logging.INFO)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        self.console.print(f"[dim]{escape(record.getMessage())}[/]")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(joined_nvcc_values(sys.argv[1:] if argv is None else list(argv)))
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    log = logging.getLogger("hfuse")
    handler = _ConsoleLog(console)
    log.addHandler(handler)
    level, log.level = log.level, min(log.level or logging.INFO, logging.INFO)
    for note in ignored_flag_notes(args):
        console.print(f"[yellow]{escape(note)}[/]")
    try:
        return args.run(args, console)
    except HFuseError as exc:
        console.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


if __name__ == "__main__":
    sys.exit(main())
