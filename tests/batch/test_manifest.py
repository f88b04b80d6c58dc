"""Manifests: many tuning requests in one file, read into values; every mistake said with
the file, the request and what to write instead."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.batch.inputs import FunctionInputs, WorkloadInputs
from hfuse.batch.manifest import read_manifest
from hfuse.errors import HFuseError


def write(tmp_path: Path, text: str, name: str = "batch.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_manifest_expands_sizes_and_merges_settings_and_options(tmp_path, project):
    path = write(project, """
name: nightly
seed: 3
tune: {refine: false, granularity: 64}
compile: {std: c++17, defines: [A=1]}
requests:
  - name: pool
    workloads: [maxpool, {kernel: upsample, size: 64}]
    sizes: [128, 256]
    layouts: [horizontal, dynamic]
  - name: mine
    launches: launches.py:make_launches
    args: {n: 8192, first: scale}
    tune: {refine: true}
    compile: {defines: [B=2]}
""")
    manifest = read_manifest(path)
    assert manifest.name == "nightly" and manifest.output == project / "batch-results"
    assert [r.name for r in manifest.requests] == ["pool-128", "pool-256", "mine"]
    pool = manifest.requests[0]
    assert isinstance(pool.inputs, WorkloadInputs) and pool.inputs.seed == 3
    assert [(w.kernel, w.size) for w in pool.inputs.workloads] == [("maxpool", 128), ("upsample", 64)]
    assert pool.settings.layouts == ("horizontal", "dynamic") and pool.settings.granularity == 64
    assert not pool.settings.refine
    mine = manifest.requests[2]
    assert isinstance(mine.inputs, FunctionInputs)
    assert mine.inputs.path == str(project / "launches.py") and dict(mine.inputs.args) == {"n": 8192, "first": "scale"}
    assert mine.settings.refine and mine.settings.granularity == 64 and mine.settings.layouts is None
    assert [str(d) for d in mine.options.defines] == ["A=1", "B=2"] and mine.options.std == "c++17"


def test_identity_follows_what_the_request_says(tmp_path, project):
    text = """
requests:
  - {name: mine, launches: launches.py:make_launches, args: {n: N}}
"""
    first = read_manifest(write(project, text.replace("N", "4096"))).requests[0]
    same = read_manifest(write(project, text.replace("N", "4096"), "again.yaml")).requests[0]
    other = read_manifest(write(project, text.replace("N", "8192"), "other.yaml")).requests[0]
    assert first.identity() == same.identity() != other.identity()


def test_toml_manifests_too(tmp_path, project):
    path = write(project, """
[[requests]]
name = "mine"
launches = "launches.py:make_launches"
args = {n = 1024}
""", "batch.toml")
    assert [r.name for r in read_manifest(path).requests] == ["mine"]


@pytest.mark.parametrize("text, message", [
    ("requests: []\n", "'requests' must be a non-empty list"),
    ("request: [{name: a, workloads: [maxpool]}]\n", "unknown keys in a manifest: request"),
    ("requests: [{name: a}]\n", "needs 'workloads' (benchmark kernels) or 'launches"),
    ("requests: [{name: a, workloads: [maxpool], launches: launches.py:make_launches}]\n", "one of the two"),
    ("requests: [{name: a, workloads: [maxpol]}]\n", "unknown benchmark workload 'maxpol'"),
    ("requests: [{name: a, workloads: [maxpool], sizes: [0]}]\n", "must be a positive integer"),
    ("requests: [{name: a, workloads: [maxpool]}, {name: a, workloads: [hist]}]\n", "two requests are named 'a'"),
    ("requests: [{name: a, workloads: [maxpool], sizes: [64]}, {name: a-64, workloads: [hist]}]\n",
     "two requests are named 'a-64'"),
    ("requests: [{name: a, workloads: [maxpool], layouts: [horizontal, diagonal]}]\n", "unknown layouts"),
    ("requests: [{name: a, workloads: [maxpool], tune: {granularty: 64}}]\n", "unknown tune settings: granularty"),
    ("requests: [{name: a, workloads: [maxpool], colour: red}]\n", "unknown keys in request #1: colour"),
    ("requests: [{name: a/b, workloads: [maxpool]}]\n", "it names files"),
    ("requests: [{name: a, launches: launches.py:make_launches, sizes: [64]}]\n", "'sizes' are for benchmark workloads"),
    ("requests: [{name: a, launches: missing.py:make}]\n", "must be FILE.py:FUNCTION of an existing file"),
    ("requests: [{name: a, workloads: [maxpool], args: {n: 1}}]\n", "'args' are for a 'launches' function"),
    ("requests: [7]\n", "request #1 must be a mapping"),
])
def test_bad_manifests_say_where_and_what(tmp_path, project, text, message):
    path = write(project, text)
    with pytest.raises(HFuseError) as caught:
        read_manifest(path)
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_a_yaml_mistake_names_its_line(project):
    path = write(project, "requests:\n  - name: a\n    workloads: [maxpool\n")
    with pytest.raises(HFuseError) as caught:
        read_manifest(path)
    assert f"{path}:" in str(caught.value) and "not valid YAML" in str(caught.value)
