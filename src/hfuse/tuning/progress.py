"""Progress of a tuning run on the terminal (rich), or silence."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn


class Progress:
    """One bar per round of candidates, and a line per candidate that failed."""

    def __init__(self, enabled: bool = True, console: Console | None = None):
        self.enabled = enabled
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self._bar: RichProgress | None = None
        self._task: Any = None

    def __enter__(self) -> "Progress":
        if self.enabled:
            self._bar = RichProgress(
                TextColumn("[bold]tuning[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.description}"), console=self.console, transient=False,
            )
            self._bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    def note(self, text: str) -> None:
        if self.enabled:
            self.console.print(f"[dim]{escape(text)}[/]")

    def start(self, total: int) -> None:
        if self._bar is not None:
            self._task = self._bar.add_task("", total=total)

    def step(self, label: str) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=label)

    def result(self, result: Any) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task)
        if self.enabled and result.error:
            first = result.error.splitlines()[0]
            what = {"timeout": "[red]timed out[/]", "crashed": "[red]crashed[/]"}.get(result.failure or "", "[yellow]skipped[/]")
            self.console.print(f"  {what} {escape(result.label)}: {escape(first)}")
