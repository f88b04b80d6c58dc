"""A batch on this machine, on the CPU: real front end, generation and NVRTC compiles (on
a pool of processes), measurements from a recording. What a user relies on: every
request ends in a plan or a reported failure, a killed batch resumes without redoing
anything, and the caches hold up under many processes at once."""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hfuse.batch.manifest import read_manifest
from hfuse.batch.runner import run_batch
from hfuse.runtime.binary_cache import BinaryCache
from hfuse.runtime.compile import Compiler, CompileJob, run_nvrtc
from hfuse.runtime.compile_pool import ProcessCompilePool
from hfuse.tuning.recorded import RecordedBackend
from hfuse.tuning.tuner import TuneSettings, tune

from .conftest import recorded, recording

MANIFEST = """
name: cpu-batch
tune: {refine: false}
requests:
  - {name: fuse-me, launches: launches.py:make_launches, args: {first: scale, second: shift}}
  - {name: keep-apart, launches: launches.py:make_launches, args: {first: scale, second: square}}
  - {name: broken, launches: launches.py:make_launches, args: {first: broken}}
"""

RECORDING = recording({
    # fused, the reference horizontal fusion takes 1.5 ms against 1.96 ms on two streams
    "scale@4096+shift@4096": recorded(1.0, 2.0, {"naive": 1.5, "vertical": 2.1}),
    # nothing beats running them apart
    "scale@4096+square@4096": recorded(1.0, 2.0, {"naive": 2.5, "interblock": 2.2}),
})


def batch(project: Path, text: str = MANIFEST):
    path = project / "batch.yaml"
    path.write_text(text)
    return read_manifest(path)


def test_every_request_ends_in_a_plan_or_a_reported_failure(project):
    manifest = batch(project)
    backend = RecordedBackend(RECORDING)
    with ProcessCompilePool(processes=2) as pool:
        report = run_batch(manifest, backend=backend, runner=pool, progress=False)
    outcomes = {o.name: o for o in report.outcomes}
    assert [o.name for o in report.outcomes] == ["fuse-me", "keep-apart", "broken"]  # the manifest's order

    fused = outcomes["fuse-me"]
    assert fused.status == "fused" and fused.chosen == "naive" and fused.speedup == pytest.approx(1.96 / 1.5)
    assert fused.gpu == "NVIDIA H100 80GB HBM3" and Path(fused.fused_file).read_text().count("__global__") == 1
    plan = json.loads(Path(fused.plan_file).read_text())
    assert plan["decision"] == "fuse"
    # every candidate was generated and compiled; those the recording lacks never ran
    not_run = [c for c in plan["candidates"] if c["error"] == "not in the recording: not run"]
    assert len(not_run) == len(plan["candidates"]) - 2 and not any(c["verified"] for c in not_run)

    declined = outcomes["keep-apart"]
    assert declined.status == "declined" and declined.fused_file is None and Path(declined.plan_file).is_file()
    assert not (manifest.output / "keep-apart.cu").exists()

    broken = outcomes["broken"]
    assert broken.status == "failed" and "the inputs could not be made" in broken.error and broken.plan_file is None

    summary = json.loads((manifest.output / "batch.json").read_text())
    assert (summary["requests"], summary["fused"], summary["declined"], summary["failed"]) == (3, 1, 1, 1)
    assert summary["gpu"] == "NVIDIA H100 80GB HBM3" and summary["driver"] == "580.00" and summary["date"]
    # the compiles went through the pool into the batch's binary cache
    assert len(list((manifest.output / ".hfuse-cache" / "binaries").glob("*.cubin"))) >= 10


def test_a_batch_started_again_tunes_only_what_is_left(project):
    manifest = batch(project)
    first = run_batch(manifest, backend=RecordedBackend(RECORDING), runner=run_nvrtc, progress=False)
    again_backend = RecordedBackend(RECORDING)
    again = run_batch(manifest, backend=again_backend, runner=run_nvrtc, progress=False)
    assert again.resumed == 3 and again_backend.sessions == []  # nothing measured again
    assert [o.to_dict() for o in again.outcomes] == [o.to_dict() for o in first.outcomes]
    fresh_backend = RecordedBackend(RECORDING)
    run_batch(manifest, backend=fresh_backend, runner=run_nvrtc, progress=False, fresh=True, use_cache=False)
    assert len(fresh_backend.sessions) == 2  # the two whose inputs could be made


def test_a_killed_batch_resumes_where_it_stopped_and_loses_nothing(project, tmp_path):
    manifest = batch(project, MANIFEST.replace("  - {name: broken", "  - {name: slow, launches: launches.py:make_launches, "
                                                 "args: {first: shift, second: square}}\n  - {name: broken"))
    record = RECORDING.requests | recording({"shift@4096+square@4096": recorded(1.0, 2.0, {"naive": 1.0})}).requests
    recording_file = type(RECORDING)(RECORDING.limits, record).save(tmp_path / "recording.json")
    command = [sys.executable, "-m", "hfuse.cli", "tune", str(manifest.path), "--recorded", str(recording_file),
               "--concurrency", "1", "--compile-processes", "1"]
    env = {**os.environ, "HFUSE_TEST_SLOW_REQUEST": "shift+square@4096"}
    journal = manifest.output / "batch-journal.jsonl"
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while (not journal.exists() or len(journal.read_text().splitlines()) < 2) and time.monotonic() < deadline:
            assert process.poll() is None, process.stdout.read().decode()
            time.sleep(0.2)
        assert len(journal.read_text().splitlines()) == 2  # two done; the third sleeps in its inputs
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the whole batch, its compile processes too
        process.wait()
    finished = {name: (manifest.output / f"{name}-plan.json").stat().st_mtime_ns for name in ("fuse-me", "keep-apart")}

    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr  # 'broken' failed: the exit status says so
    assert "2 of 4 requests finished by an earlier run" in done.stderr
    summary = json.loads((manifest.output / "batch.json").read_text())
    assert [o["name"] for o in summary["outcomes"]] == ["fuse-me", "keep-apart", "slow", "broken"]
    assert [o["status"] for o in summary["outcomes"]] == ["fused", "declined", "fused", "failed"]
    assert summary["resumed"] == 2
    # the finished requests were not tuned (nor written) again
    assert {n: (manifest.output / f"{n}-plan.json").stat().st_mtime_ns for n in finished} == finished


class _Interrupted(RecordedBackend):
    """Measures ``budget`` candidates, then the process is 'killed' (Ctrl-C)."""

    def __init__(self, recording, budget: int):
        super().__init__(recording)
        self.budget = budget

    def open(self, inputs):
        context = super().open(inputs)
        backend = self

        class Guard:
            def __enter__(self):
                measurer = context.__enter__()
                measure = measurer.measure

                def limited(request):
                    if len(measurer.measured) >= backend.budget:
                        raise KeyboardInterrupt
                    return measure(request)

                measurer.measure = limited
                return measurer

            def __exit__(self, *exc):
                return context.__exit__(*exc)

        return Guard()


def test_a_request_cut_off_mid_search_measures_only_what_is_missing(project, tmp_path):
    sys.path.insert(0, str(project))
    try:
        from launches import make_launches
    finally:
        sys.path.remove(str(project))
    settings = TuneSettings(refine=False)
    cache = tmp_path / "cache"
    cut = _Interrupted(RECORDING, budget=3)
    with pytest.raises(KeyboardInterrupt):
        tune(make_launches(), settings, cache_dir=cache, progress=False, backend=cut, runner=run_nvrtc)
    first_labels = cut.sessions[0].measured
    assert len(first_labels) == 3 and len(list((cache / "partial").glob("*.jsonl"))) == 1

    resumed = RecordedBackend(RECORDING)
    plan = tune(make_launches(), settings, cache_dir=cache, progress=False, backend=resumed, runner=run_nvrtc)
    again = resumed.sessions[0].measured
    assert not set(again) & set(first_labels)  # nothing measured twice
    clean = RecordedBackend(RECORDING)
    reference = tune(make_launches(), settings, use_cache=False, progress=False, backend=clean, runner=run_nvrtc)
    assert sorted(first_labels + again) == sorted(clean.sessions[0].measured)
    assert (plan.decision, plan.chosen, plan.fused_source) == (reference.decision, reference.chosen,
                                                              reference.fused_source)
    assert [r.label for r in plan.candidates] == [r.label for r in reference.candidates]
    assert not list((cache / "partial").glob("*.jsonl"))  # the plan is stored: the journal is gone


HEAVY = "__global__ void heavy(float* x) {\n  float v = x[threadIdx.x];\n" + "\n".join(
    f"  v = sinf(v * 1.0{i % 97}f + {i}.5f) * x[(threadIdx.x + {i}) & 255];" for i in range(200)) \
    + "\n  x[threadIdx.x] = v;\n}\n"


def test_a_compile_process_killed_mid_compile_is_replaced_and_its_jobs_handed_out_again():
    job = CompileJob(HEAVY, ("heavy",), ("-arch=sm_90", "-Xptxas=-v"))
    with ProcessCompilePool(processes=1) as pool:
        results: list = []
        threads = [threading.Thread(target=lambda: results.append(pool(job))) for _ in range(2)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while not pool.worker_pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)  # started and importing or compiling: either way its jobs are lost with it
        for pid in pool.worker_pids():
            os.kill(pid, signal.SIGKILL)
        for t in threads:
            t.join(timeout=300)
        assert pool.restarts == 1
    assert len(results) == 2 and all(not r.missing_reports(["heavy"]) for r in results)
    assert results[0].cubin == results[1].cubin


def test_compiles_on_the_pool_equal_compiles_here():
    source = 'extern "C" __global__ void add(float* x, float y) { x[threadIdx.x] += y; }\n'
    with ProcessCompilePool(processes=2) as pool:
        there = Compiler("sm_90", runner=pool).compile(source, ["add"])
    here = Compiler("sm_90").compile(source, ["add"])
    assert there.cubin == here.cubin and there.ptxas == here.ptxas and there.lowered == here.lowered


def _tune_in_a_process(project: str, cache: str, queue) -> None:
    sys.path.insert(0, project)
    from launches import make_launches

    backend = RecordedBackend(RECORDING)
    plan = tune(make_launches(), TuneSettings(refine=False), cache_dir=cache, progress=False, backend=backend)
    queue.put((plan.decision, plan.chosen, plan.cache_key))


def test_many_processes_tuning_into_one_cache_at_once(project, tmp_path):
    cache = tmp_path / "shared-cache"
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    processes = [context.Process(target=_tune_in_a_process, args=(str(project), str(cache), queue)) for _ in range(4)]
    for p in processes:
        p.start()
    answers = [queue.get(timeout=300) for _ in processes]
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(set(answers)) == 1 and answers[0][:2] == ("fuse", "naive")
    plans = list(cache.glob("*.json"))
    assert [p.stem for p in plans] == [answers[0][2]]
    binaries = BinaryCache(cache / "binaries")
    entries = [p.stem for p in (cache / "binaries").glob("*.json")]
    assert entries and all(binaries.get(key) is not None for key in entries)
    leftovers = [p for p in cache.rglob("*") if p.name.endswith(".tmp")]
    assert not leftovers and not list((cache / "partial").glob("*.jsonl"))


class _Slow(RecordedBackend):
    """A recorded GPU that takes a while per request (so that the other lane gets work)."""

    def open(self, inputs):
        time.sleep(0.3)
        return super().open(inputs)


def test_requests_spread_over_one_lane_per_gpu(project):
    from hfuse.batch.runner import Lane

    manifest = batch(project, "tune: {refine: false}\nrequests:\n" + "".join(
        f"  - {{name: r{n}, launches: launches.py:make_launches, args: {{n: 4096}}}}\n" for n in range(6)))
    gpus = [_Slow(RECORDING), _Slow(RECORDING)]
    report = run_batch(manifest, lanes=[Lane(g) for g in gpus], runner=run_nvrtc, concurrency=1, progress=False,
                       use_cache=False)
    assert [o.status for o in report.outcomes] == ["fused"] * 6
    assert sorted(len(g.sessions) for g in gpus) != [0, 6] and sum(len(g.sessions) for g in gpus) == 6


def test_a_runs_plans_replay_to_the_same_decisions(project, tmp_path):
    # a GPU run's plans (here: made from a recording) become a recording keyed by their cache keys
    from hfuse.tuning.recorded import Recording

    sys.path.insert(0, str(project))
    try:
        from launches import make_launches
    finally:
        sys.path.remove(str(project))
    settings = TuneSettings(refine=False)
    first = tune(make_launches(), settings, cache_dir=tmp_path / "a", progress=False,
                 backend=RecordedBackend(RECORDING), runner=run_nvrtc)
    replay = Recording.from_plans(RECORDING.limits, [first])
    assert list(replay.requests) == [first.cache_key]
    again = tune(make_launches(), settings, cache_dir=tmp_path / "b", progress=False,
                 backend=RecordedBackend(Recording.load(replay.save(tmp_path / "replay.json"))), runner=run_nvrtc)
    assert (again.decision, again.chosen, again.speedup) == (first.decision, first.chosen, first.speedup)
    assert [(r.label, r.verified, r.time_ms) for r in again.candidates] == \
        [(r.label, r.verified, r.time_ms) for r in first.candidates]
