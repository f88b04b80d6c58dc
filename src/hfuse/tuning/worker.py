"""The worker process of ``isolation.WorkerMeasurer``: ``python -m hfuse.tuning.worker FD PARENT_PID``.

It reads requests from the socket ``FD`` (pickled ``(method, inputs, argument)``), keeps
one ``Measurer`` per input set (``("setup", inputs, WorkerSetup)`` uploads one,
``("release", inputs, None)`` drops it), and answers ``("phase", step)`` before each wait
on the GPU, then ``("done", value)``, ``("last", value)`` when it exits after answering
(its CUDA context is lost), or ``("error", exception)``.
It exits when told to stop, when the socket closes, when its CUDA context is lost, or
when the process ``PARENT_PID`` is gone (a hung kernel would otherwise hold the GPU).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from ..errors import HFuseError

_METHODS = ("unfused", "co_resident", "measure", "run_once")


def _exit_when_orphaned(parent_pid: int) -> None:
    def watch() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                os._exit(3)
            except PermissionError:
                pass

    threading.Thread(target=watch, name="hfuse-orphan-watch", daemon=True).start()


def _sendable(exc: BaseException) -> BaseException:
    """``exc`` if it pickles, else an ``HFuseError`` with its text."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return HFuseError(f"{type(exc).__name__}: {exc}")


def serve(connection: Connection) -> int:
    """Serves requests until told to stop; each input set (``setup``) has a ``Measurer`` of
    its own, and all share one compiler, so a module loaded for one request stays loaded
    for the next."""
    from ..runtime.compile import Compiler
    from ..runtime.transfer import inputs_from_recipe, load_image
    from .isolation import WorkerSetup
    from .measure import Measurer

    measurers: dict[str, Measurer] = {}
    compiler: Compiler | None = None
    while True:
        try:
            method, inputs, argument = connection.recv()
        except (EOFError, OSError):
            return 0
        if method == "setup" and isinstance(argument, WorkerSetup):
            try:
                if compiler is None:
                    from ..runtime.device import require_gpu

                    require_gpu().cuda.Device(argument.settings.limits.device_index).use()
                    compiler = Compiler(limits=argument.settings.limits)  # loads cubins; compiling is the tuner's
                arrays = (inputs_from_recipe(argument.recipe, argument.layout) if argument.recipe is not None
                          else load_image(argument.image))
                measurers[inputs] = Measurer(arrays, [arrays[r.index] for r in argument.outputs], argument.settings,
                                             phase=lambda step: connection.send(("phase", step)), compiler=compiler)
            except BaseException as exc:
                connection.send(("error", _sendable(exc)))
                return 1
            connection.send(("done", None))
            continue
        if method == "release":
            measurers.pop(inputs, None)
            connection.send(("done", None))
            continue
        if method not in _METHODS or inputs not in measurers:
            return 0
        measurer = measurers[inputs]
        try:
            value: Any = getattr(measurer, method)(argument)
        except BaseException as exc:
            connection.send(("error", _sendable(exc)))
        else:
            connection.send(("last" if measurer.broken else "done", value))
        if measurer.broken:
            return 1


def main(argv: list[str] | None = None) -> int:
    fd, parent_pid = (int(v) for v in (argv if argv is not None else sys.argv[1:]))
    _exit_when_orphaned(parent_pid)
    return serve(Connection(fd))


if __name__ == "__main__":
    sys.exit(main())
