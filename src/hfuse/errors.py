"""The one exception type hfuse raises for bad input, with where it happened."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence


@dataclass
class Location:
    """A place in a user's source: file, 1-based line, and the kernel it belongs to."""

    file: str | Path | None = None
    line: int | None = None
    kernel: str | None = None

    def __str__(self) -> str:
        parts = []
        if self.file is not None:
            parts.append(f"{self.file}:{self.line}" if self.line else str(self.file))
        if self.kernel:
            parts.append(f"kernel '{self.kernel}'")
        return ", ".join(parts)


class HFuseError(Exception):
    """Input hfuse cannot handle. The message says where and what to do."""

    def __init__(self, message: str, where: Location | None = None, hint: str | None = None):
        self.message = message
        self.where = where or Location()
        self.hint = hint
        self.notes: tuple[str, ...] = ()
        """What hfuse found on the way that may say why (``note: ...``: Clang could not
        instantiate a kernel template, say), added by ``noted``."""
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}" if str(self.where) else self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        for note in getattr(self, "notes", ()):
            text += f"\n  {note}"
        return text

    def __reduce__(self) -> tuple:
        # Subclasses take other constructor arguments (a compiler log, ...): rebuild from
        # the fields, so that an error raised in a worker process arrives whole.
        return (_restore_error, (type(self), self.__dict__.copy()))


@contextmanager
def noted(notes: Sequence[str]) -> Iterator[None]:
    """An ``HFuseError`` raised inside carries ``notes`` (each once): a refusal whose cause hfuse
    noted earlier (Clang could not read an instance) says it where the user reads the error."""
    try:
        yield
    except HFuseError as exc:
        had = getattr(exc, "notes", ())
        exc.notes = (*had, *(n for n in notes if n not in had))
        raise


def _restore_error(cls: type[HFuseError], state: dict) -> HFuseError:
    error = cls.__new__(cls)
    error.__dict__.update(state)
    Exception.__init__(error, str(error))
    return error


class GPUUnavailableError(HFuseError):
    """No CUDA GPU (or no CuPy) where a GPU is needed."""
