"""A stand-in for ``hfuse.tuning.worker`` that needs no GPU: it speaks the same protocol and
acts out what a candidate's label says (``hang``, ``die``, ``fault``, ``bad-input``), so
the supervisor's handling of each can be tested on the CPU."""
from __future__ import annotations

import os
import sys
import time
from multiprocessing.connection import Connection

from hfuse.errors import HFuseError
from hfuse.runtime.timing import Timing
from hfuse.tuning.measure import UnfusedReport
from hfuse.tuning.plan import Baselines, CandidateResult


def main() -> int:
    connection = Connection(int(sys.argv[1]))
    kind, setup = connection.recv()
    marker = os.path.join(setup.image.directory, "pids")
    with open(marker, "a") as out:  # which worker processes ran, for the tests
        out.write(f"{os.getpid()}\n")
    connection.send(("done", None))
    while True:
        method, argument = connection.recv()
        if method == "stop":
            return 0
        if method == "unfused":
            connection.send(("phase", "unfused"))
            if any(job == "hang" for job in argument):
                time.sleep(3600)
            connection.send(("done", UnfusedReport(Baselines(alone={"a": Timing.of([1.0]), "b": Timing.of([2.0])}), ())))
            continue
        label = argument.candidate.label
        connection.send(("phase", "verify"))
        if label == "hang":
            time.sleep(3600)
        if label == "die":
            os._exit(9)
        if label == "bad-input":
            connection.send(("error", HFuseError("bad symbol data", hint="fix it")))
            continue
        if label == "fault":
            connection.send(("done", CandidateResult(argument.candidate, error="illegal address", failure="crashed")))
            return 1
        connection.send(("phase", "time"))
        connection.send(("done", CandidateResult(argument.candidate, verified=True, time=Timing.of([0.5]))))


if __name__ == "__main__":
    sys.exit(main())
