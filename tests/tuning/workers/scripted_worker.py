"""A stand-in for ``hfuse.tuning.worker`` that needs no GPU: it speaks the same protocol and
acts out what a candidate's label says (``hang``, ``die``, ``die-once``, ``fault``,
``bad-input``), so the supervisor's handling of each can be tested on the CPU. It answers
``inputs`` with the id of the input set a request came for, and records which input sets
it was given (``setups``) and which processes ran (``pids``) in the first set's directory."""
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
    directory = None
    loaded: set[str] = set()
    while True:
        method, inputs, argument = connection.recv()
        if method == "stop":
            return 0
        if method == "setup":
            if directory is None:
                # inputs made from a recipe come with no image: the test names a directory
                directory = argument.image.directory if argument.image else os.environ["HFUSE_SCRIPTED_DIR"]
                with open(os.path.join(directory, "pids"), "a") as out:
                    out.write(f"{os.getpid()}\n")
            with open(os.path.join(directory, "setups"), "a") as out:
                out.write(f"{inputs}\n" if argument.recipe is None else f"{inputs} recipe {len(argument.layout)}\n")
            loaded.add(inputs)
            connection.send(("done", None))
            continue
        if method == "release":
            loaded.discard(inputs)
            connection.send(("done", None))
            continue
        assert inputs in loaded, f"a request for {inputs}, which this worker was never given"
        if method == "inputs":
            connection.send(("done", inputs))
            continue
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
        if label == "die-once":
            marker = os.path.join(directory, "died-once")
            if not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(9)
        if label == "bad-input":
            connection.send(("error", HFuseError("bad symbol data", hint="fix it")))
            continue
        if label == "fault":
            connection.send(("last", CandidateResult(argument.candidate, error="illegal address", failure="crashed")))
            return 1
        connection.send(("phase", "time"))
        connection.send(("done", CandidateResult(argument.candidate, verified=True, time=Timing.of([0.5]))))


if __name__ == "__main__":
    sys.exit(main())
