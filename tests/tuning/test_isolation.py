"""The supervisor of the worker process, on the CPU: a scripted worker acts out hangs,
deaths and lost contexts, and the tuner's side must record each and go on."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from hfuse.errors import HFuseError
from hfuse.runtime.device import DeviceLimits
from hfuse.runtime.transfer import HostImage
from hfuse.spec import Dim3
from hfuse.fusion import Fusion
from hfuse.tuning.candidates import Candidate
from hfuse.tuning.isolation import GpuWorker, TimeLimits, WorkerMeasurer, WorkerSetup
from hfuse.tuning.measure import MeasureSettings

LIMITS = DeviceLimits(name="test GPU", compute_capability=(9, 0), sm_count=132, regs_per_sm=65536,
                      regs_per_block=65536, max_threads_per_sm=2048, max_blocks_per_sm=32,
                      smem_per_sm=233472, smem_per_block_optin=232448)
SETTINGS = MeasureSettings(LIMITS, warmup_ms=10, rep_ms=20)
FAST = TimeLimits(start_s=60, unfused_s=1.0, run_floor_s=1.0, run_factor=20.0)


@pytest.fixture
def measurer(tmp_path, monkeypatch):
    # the scripted worker first, then whatever this environment's packages need (hfuse's own deps)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(Path(__file__).parent / "workers"),
                                                               os.environ.get("PYTHONPATH", "")) if p))
    setup = WorkerSetup(HostImage(str(tmp_path), (), ()), (), SETTINGS)
    with WorkerMeasurer(setup, FAST, module="scripted_worker") as m:
        yield m


def request(label: str) -> SimpleNamespace:
    return SimpleNamespace(candidate=Candidate(Fusion((Dim3(128), Dim3(128))), label))


def pids(tmp_path: Path) -> list[int]:
    return [int(p) for p in (tmp_path / "pids").read_text().split()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie until reaped counts as gone
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def test_limits_follow_the_slowest_original_with_a_floor():
    limits = TimeLimits(run_factor=20, run_floor_s=2.0)
    assert limits.for_phase("verify", None, SETTINGS) == 2.0
    assert limits.for_phase("verify", 0.05, SETTINGS) == 2.0  # 20 x 0.05 ms is below the floor
    assert limits.for_phase("verify", 500.0, SETTINGS) == 10.0
    # timing: a few runs, then warm-up and repetitions, each bounded by the run limit
    assert limits.for_phase("time", 500.0, SETTINGS) == pytest.approx(16 * 10 + 2 * 0.03 + 2)
    assert TimeLimits(scale=100).for_phase("verify", None, SETTINGS) == 200.0


def test_a_verified_candidate_comes_back_whole(measurer):
    result = measurer.measure(request("ok"))
    assert result.verified and result.time.median_ms == 0.5 and result.failure is None


def test_a_hung_candidate_is_a_timeout_and_the_next_runs_in_a_fresh_worker(measurer, tmp_path):
    measurer.unfused(["k1", "k2"])
    assert measurer.slowest_ms == 2.0  # 20 x 2 ms is below the 1 s floor
    start = time.monotonic()
    hung = measurer.measure(request("hang"))
    assert hung.failure == "timeout" and not hung.verified and hung.time is None
    assert "verify" in hung.error and "1.0 s" in hung.error
    assert time.monotonic() - start < 30
    first = pids(tmp_path)[0]
    assert not alive(first)  # killed, not left holding the GPU
    assert measurer.measure(request("ok")).verified
    assert len(pids(tmp_path)) == 2 and measurer.workers_started == 2


def test_a_worker_that_dies_twice_is_a_crash_with_its_last_output(measurer, tmp_path):
    died = measurer.measure(request("die"))
    assert died.failure == "crashed" and "died in step 'verify'" in died.error
    assert measurer.measure(request("ok")).verified
    assert measurer.workers_started == 3  # the candidate, again in a fresh worker, then the next one


def test_a_worker_killed_once_mid_candidate_is_retried_and_nothing_is_lost(measurer, tmp_path):
    # something else killed the worker (out of memory, a user): the candidate is measured again
    again = measurer.measure(request("die-once"))
    assert again.verified and again.failure is None
    assert measurer.workers_started == 2
    assert (tmp_path / "setups").read_text().split() == ["inputs-1", "inputs-1"]  # the fresh worker got the inputs


def test_a_lost_context_ends_that_worker(measurer, tmp_path):
    lost = measurer.measure(request("fault"))
    assert lost.failure == "crashed" and lost.error == "illegal address"
    assert not alive(pids(tmp_path)[0])
    assert measurer.measure(request("ok")).verified
    assert measurer.workers_started == 2


def test_an_error_in_the_worker_arrives_as_the_same_error(measurer):
    with pytest.raises(HFuseError) as caught:
        measurer.measure(request("bad-input"))
    assert caught.value.message == "bad symbol data" and caught.value.hint == "fix it"
    assert measurer.measure(request("ok")).verified  # the worker is still usable
    assert measurer.workers_started == 1


def test_unfused_kernels_that_hang_are_the_users_error_said_plainly(measurer):
    with pytest.raises(HFuseError, match="the unfused kernels did not finish"):
        measurer.unfused(["hang"])


def test_ctrl_c_while_waiting_stops_the_worker(measurer, tmp_path):
    measurer.limits = TimeLimits(run_floor_s=600)
    # a real SIGINT, as the terminal sends: it interrupts the wait on the worker
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            measurer.measure(request("hang"))
            time.sleep(30)  # not reached: the interrupt arrives while the worker hangs
    finally:
        timer.cancel()
    measurer.close()
    deadline = time.monotonic() + 10
    while alive(pids(tmp_path)[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pids(tmp_path)[0])


def test_a_worker_gone_between_requests_is_replaced_before_the_next(measurer, tmp_path):
    assert measurer.measure(request("ok")).verified
    first = pids(tmp_path)[0]
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while measurer._worker.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert measurer.measure(request("ok")).verified
    assert measurer.workers_started == 2


@pytest.fixture
def scripted_path(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(Path(__file__).parent / "workers"),
                                                               os.environ.get("PYTHONPATH", "")) if p))


def test_one_worker_serves_many_sessions_each_with_its_own_inputs(tmp_path, scripted_path):
    # a batch: sessions (requests) come and go, the worker process stays, each set of
    # inputs is uploaded once and dropped when its session ends
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    with GpuWorker(module="scripted_worker") as gpu:
        a = WorkerMeasurer(WorkerSetup(HostImage(str(first), (), ()), (), SETTINGS), FAST, worker=gpu)
        b = WorkerMeasurer(WorkerSetup(HostImage(str(second), (), ()), (), SETTINGS), FAST, worker=gpu)
        assert a._call("inputs", None) == "inputs-1"
        assert b._call("inputs", None) == "inputs-2"
        assert a.measure(request("ok")).verified and b.measure(request("ok")).verified
        a.close()  # its inputs are dropped, the worker is kept for b
        assert b._call("inputs", None) == "inputs-2"
        assert gpu.workers_started == 1
        # a fault in b's candidate ends the worker; a session opened later starts a fresh one
        assert b.measure(request("fault")).failure == "crashed"
        c = WorkerMeasurer(WorkerSetup(HostImage(str(second), (), ()), (), SETTINGS), FAST, worker=gpu)
        assert c._call("inputs", None) == "inputs-3" and gpu.workers_started == 2
        assert b._call("inputs", None) == "inputs-2"  # uploaded again to the fresh worker
        b.close(), c.close()
    assert (first / "setups").read_text().split() == ["inputs-1", "inputs-2"]
    assert (second / "setups").read_text().split() == ["inputs-3", "inputs-2"]


def test_sessions_on_threads_take_turns_on_the_gpu(tmp_path, scripted_path):
    with GpuWorker(module="scripted_worker") as gpu:
        measurers = [WorkerMeasurer(WorkerSetup(HostImage(str(tmp_path), (), ()), (), SETTINGS), FAST, worker=gpu)
                     for _ in range(4)]
        answers: list[str] = []

        def session(m: WorkerMeasurer) -> None:
            for _ in range(5):
                answers.append(m._call("inputs", None))
                assert m.measure(request("ok")).verified

        threads = [threading.Thread(target=session, args=(m,)) for m in measurers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(set(answers)) == ["inputs-1", "inputs-2", "inputs-3", "inputs-4"] and len(answers) == 20
        assert gpu.workers_started == 1


def test_a_closed_worker_starts_again_on_the_next_call(tmp_path, scripted_path):
    # the sanitizer closes its worker after a fault and goes on with the next kernel
    measurer = WorkerMeasurer(WorkerSetup(HostImage(str(tmp_path), (), ()), (), SETTINGS), FAST,
                              module="scripted_worker")
    assert measurer.measure(request("ok")).verified
    measurer.close()
    assert measurer.measure(request("ok")).verified
    assert measurer.workers_started == 2
    measurer.close()


def test_inputs_with_a_recipe_are_made_in_the_worker_not_copied(tmp_path, scripted_path, monkeypatch):
    from hfuse.batch.inputs import FunctionInputs
    from hfuse.tuning import backends
    from hfuse.tuning.backends import IsolatedBackend, SessionInputs

    def no_copy(arrays):
        raise AssertionError("the inputs were copied")

    monkeypatch.setattr(backends, "save_image", no_copy)
    monkeypatch.setenv("HFUSE_SCRIPTED_DIR", str(tmp_path))
    arrays = [SimpleNamespace(data=SimpleNamespace(ptr=4096 * i), shape=(4,), strides=(4,), size=4,
                              dtype=np.dtype("f4"), nbytes=16) for i in (1, 2)]
    recipe = FunctionInputs(str(tmp_path / "make.py"), "make")
    with GpuWorker(module="scripted_worker") as gpu:
        inputs = SessionInputs("a+b", "key", arrays, (), SETTINGS, FAST, recipe=recipe)
        with IsolatedBackend(gpu).open(inputs) as measurer:
            assert measurer.measure(request("ok")).verified
    assert (tmp_path / "setups").read_text().split("\n")[0] == "inputs-1 recipe 2"


def test_a_resumed_run_sets_the_limits_from_the_baselines_it_recorded(measurer):
    from hfuse.runtime.timing import Timing
    from hfuse.tuning.plan import Baselines

    # the unfused kernels are not measured again: their recorded times set the run limits
    measurer.resume(Baselines(alone={"a": Timing.of([500.0]), "b": Timing.of([100.0])}))
    assert measurer.slowest_ms == 500.0
    assert measurer.limits.for_phase("verify", measurer.slowest_ms, SETTINGS) == 10.0


def test_shutting_the_worker_down_under_a_waiting_request_records_nothing(tmp_path, scripted_path):
    # Ctrl-C in a batch: the candidate under way neither timed out nor crashed
    from hfuse.tuning.isolation import WorkerShutDown

    gpu = GpuWorker(module="scripted_worker")
    measurer = WorkerMeasurer(WorkerSetup(HostImage(str(tmp_path), (), ()), (), SETTINGS),
                              TimeLimits(start_s=60, run_floor_s=600), worker=gpu)
    outcome: list = []

    def waiting() -> None:
        try:
            outcome.append(measurer.measure(request("hang")))
        except WorkerShutDown:
            outcome.append("shut down")

    thread = threading.Thread(target=waiting)
    thread.start()
    deadline = time.monotonic() + 30
    while not (tmp_path / "pids").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    gpu.shut_down()
    thread.join(timeout=30)
    assert outcome == ["shut down"]
    assert not alive(pids(tmp_path)[0])
    with pytest.raises(WorkerShutDown):
        measurer.measure(request("ok"))
