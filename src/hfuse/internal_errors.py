"""A bug of hfuse's reaches the user as an ``HFuseError`` naming the inputs, not as a traceback."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Sequence

from .errors import HFuseError, Location
from .frontend.options import NO_OPTIONS, CompileOptions
from .spec import KernelSpec


@contextmanager
def internal_errors_named(specs: Sequence[KernelSpec], options: CompileOptions = NO_OPTIONS):
    """A bug of hfuse's reaches the user as an ``HFuseError`` naming the inputs (``library_hint``: one of an -I header)."""
    try:
        yield
    except HFuseError as exc:
        raise options.library_hint(exc)
    except (ValueError, TypeError) as exc:
        if not _raised_by_hfuse(exc):
            raise
        _reraise_internal(exc, specs)
    except (KeyError, AttributeError, AssertionError, IndexError, RecursionError, UnicodeError) as exc:
        _reraise_internal(exc, specs)


def _raised_by_hfuse(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and "/hfuse/" in tb.tb_frame.f_code.co_filename.replace("\\", "/")


def _reraise_internal(exc: BaseException, specs: Sequence[KernelSpec]) -> None:
    names = ", ".join(f"{s.name} ({s.file})" for s in specs)
    raise HFuseError(
        f"internal error of hfuse while fusing {names}: {type(exc).__name__}: {exc}",
        Location(specs[0].file if specs else None, None, specs[0].name if specs else None),
        hint="this is a bug in hfuse, not in your code: please report it with the input files; "
        "until it is fixed, keep these kernels unfused",
    ) from exc
