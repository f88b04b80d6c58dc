"""The batch on a local Ray (``ray.init(num_cpus=2)``), on the CPU: NVRTC compiles as Ray
tasks, one tuning actor measuring from a recording (no GPU). Skipped where Ray is not
installed (it is an optional extra; the test extra brings it)."""
from __future__ import annotations

import functools
import os

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'hfuse[ray]')")

from hfuse.batch.manifest import read_manifest  # noqa: E402
from hfuse.batch.ray_runner import RayOptions, ray_outcomes  # noqa: E402
from hfuse.batch.runner import run_batch  # noqa: E402
from hfuse.cli import main  # noqa: E402
from hfuse.errors import HFuseError  # noqa: E402
from hfuse.runtime.compile import run_nvrtc  # noqa: E402
from hfuse.tuning.recorded import RecordedBackend, Recording  # noqa: E402

from .conftest import recorded, recording  # noqa: E402

DIES_ONCE = "scale+shift@2048"

RECORDING = recording({
    "scale@4096+shift@4096": recorded(1.0, 2.0, {"naive": 1.5}),
    "scale@4096+square@4096": recorded(1.0, 2.0, {"naive": 2.5}),
    "scale@2048+shift@2048": recorded(0.5, 1.0, {"vertical": 0.7}),
})

MANIFEST = """
name: ray-batch
tune: {refine: false}
requests:
  - {name: fuse-me, launches: launches.py:make_launches, args: {first: scale, second: shift}}
  - {name: keep-apart, launches: launches.py:make_launches, args: {first: scale, second: square}}
  - {name: actor-dies-once, launches: launches.py:make_launches, args: {first: scale, second: shift, n: 2048}}
"""


@pytest.fixture(scope="module")
def local_ray():
    os.environ["HFUSE_TEST_DIE_ONCE"] = DIES_ONCE  # the actors inherit the environment
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
    del os.environ["HFUSE_TEST_DIE_ONCE"]


# each actor's backend, made where the actor runs (the factory travels, so it is the
# library's class and the recording: a class of this test module is not importable there)
RECORDED = functools.partial(RecordedBackend, RECORDING)


def test_a_batch_on_ray_decides_as_on_this_machine_and_survives_a_lost_actor(local_ray, project):
    path = project / "batch.yaml"
    path.write_text(MANIFEST)
    manifest = read_manifest(path)
    options = RayOptions(actors=1, gpus_per_actor=0, concurrency=2)
    on_ray = run_batch(manifest, source=ray_outcomes(manifest.output / ".hfuse-cache", True, options, RECORDED),
                       progress=False, executor="ray")
    # the actor tuning 'actor-dies-once' died making its inputs; a new actor tuned it again
    assert (project / "died-once").exists()
    assert [(o.name, o.status, o.chosen) for o in on_ray.outcomes] == [
        ("fuse-me", "fused", "naive"), ("keep-apart", "declined", None), ("actor-dies-once", "fused", "vertical")]
    assert all(o.gpu == "NVIDIA H100 80GB HBM3" for o in on_ray.outcomes)
    assert (manifest.output / "fuse-me.cu").is_file()

    here = run_batch(manifest, backend=RecordedBackend(RECORDING), runner=run_nvrtc, progress=False, fresh=True,
                     use_cache=False)
    assert [(o.status, o.chosen, o.speedup) for o in here.outcomes] == \
        [(o.status, o.chosen, o.speedup) for o in on_ray.outcomes]


def test_hfuse_tune_with_ray_and_a_recording(local_ray, project, tmp_path, capsys):
    path = project / "batch.yaml"
    path.write_text(MANIFEST.replace("  - {name: actor-dies-once", "  # - {name: actor-dies-once"))
    recording_file = RECORDING.save(tmp_path / "recording.json")
    assert main(["tune", str(path), "--ray", "--recorded", str(recording_file)]) == 0
    err = capsys.readouterr().err
    assert "fuse-me" in err and "keep-apart" in err and "batch.json" in err


def test_an_actor_that_cannot_start_is_said_plainly(local_ray, project, tmp_path):
    path = project / "batch.yaml"
    path.write_text(MANIFEST)
    manifest = read_manifest(path)
    missing = functools.partial(Recording.load, tmp_path / "no-such-recording.json")  # fails in the actor
    options = RayOptions(actors=1, gpus_per_actor=0)
    with pytest.raises(HFuseError, match="a tuning actor could not start: .*no-such-recording.json"):
        run_batch(manifest, source=ray_outcomes(manifest.output / ".hfuse-cache", True, options, missing),
                  progress=False)
