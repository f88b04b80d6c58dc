"""The worker process of ``isolation.WorkerMeasurer``: ``python -m hfuse.tuning.worker FD PARENT_PID``.

It reads requests from the socket ``FD`` (pickled ``(method, argument)`` pairs), serves
them with a ``Measurer`` on the inputs of its ``WorkerSetup``, and answers ``("phase",
step)`` before each wait on the GPU, then ``("done", value)`` or ``("error", exception)``.
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
    from ..runtime.transfer import load_image
    from .isolation import WorkerSetup
    from .measure import Measurer

    kind, setup = connection.recv()
    if kind != "setup" or not isinstance(setup, WorkerSetup):
        return 2
    try:
        from ..runtime.device import require_gpu

        require_gpu().cuda.Device(setup.settings.limits.device_index).use()
        arrays = load_image(setup.image)
        measurer = Measurer(arrays, [arrays[r.index] for r in setup.outputs], setup.settings,
                            phase=lambda step: connection.send(("phase", step)))
    except BaseException as exc:
        connection.send(("error", _sendable(exc)))
        return 1
    connection.send(("done", None))
    while True:
        try:
            method, argument = connection.recv()
        except (EOFError, OSError):
            return 0
        if method not in _METHODS:
            return 0
        try:
            value: Any = getattr(measurer, method)(argument)
        except BaseException as exc:
            connection.send(("error", _sendable(exc)))
        else:
            connection.send(("done", value))
        if measurer.broken:
            return 1


def main(argv: list[str] | None = None) -> int:
    fd, parent_pid = (int(v) for v in (argv if argv is not None else sys.argv[1:]))
    _exit_when_orphaned(parent_pid)
    return serve(Connection(fd))


if __name__ == "__main__":
    sys.exit(main())
