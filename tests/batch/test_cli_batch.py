"""``hfuse tune`` with a manifest or a single config, measured from a recording (no GPU)."""
from __future__ import annotations

import json

from hfuse.cli import main

from .conftest import recorded, recording

RECORDING = recording({"scale@1024+shift@1024": recorded(1.0, 2.0, {"naive": 1.5})})


def test_a_single_config_tunes_from_a_recording(project, tmp_path, capsys):
    config = project / "pair.yaml"
    config.write_text("name: pair\nlaunches: launches.py:make_launches\nargs: {n: 1024}\ntune: {refine: false}\n")
    recording_file = RECORDING.save(tmp_path / "recording.json")
    assert main(["tune", str(config), "--recorded", str(recording_file), "-o", str(tmp_path / "out")]) == 0
    plan = json.loads((tmp_path / "out" / "pair-plan.json").read_text())
    assert plan["decision"] == "fuse" and plan["chosen"] == "naive"
    assert (tmp_path / "out" / "pair.cu").is_file()


def test_a_manifest_mistake_is_an_error_with_its_place(project, capsys):
    manifest = project / "batch.yaml"
    manifest.write_text("requests:\n  - {name: a, launches: launches.py:make_launches, sizes: [64]}\n")
    assert main(["tune", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "batch.yaml" in err and "'sizes' are for benchmark workloads" in err


def test_a_manifest_whose_request_fails_exits_with_1(project, tmp_path, capsys):
    manifest = project / "batch.yaml"
    manifest.write_text("tune: {refine: false}\nrequests:\n"
                        "  - {name: ok, launches: launches.py:make_launches, args: {n: 1024}}\n"
                        "  - {name: bad, launches: launches.py:make_launches, args: {first: broken}}\n")
    recording_file = RECORDING.save(tmp_path / "recording.json")
    assert main(["tune", str(manifest), "--recorded", str(recording_file), "--compile-processes", "1"]) == 1
    summary = json.loads((project / "batch-results" / "batch.json").read_text())
    assert [(o["name"], o["status"]) for o in summary["outcomes"]] == [("ok", "fused"), ("bad", "failed")]


def test_a_single_config_reads_its_kernels_with_their_builds_flags(project, tmp_path, capsys):
    kernels = project / "kernels.cu"
    kernels.write_text("#ifndef FROM_THE_BUILD\n#error the build defines FROM_THE_BUILD\n#endif\n" + kernels.read_text())
    (project / "compile_commands.json").write_text(json.dumps([
        {"directory": str(project), "file": "kernels.cu", "command": "nvcc -DFROM_THE_BUILD -O3 -c kernels.cu"}]))
    config = project / "pair.yaml"
    config.write_text("name: pair\nlaunches: launches.py:make_launches\nargs: {n: 1024}\ntune: {refine: false}\n")
    recording_file = RECORDING.save(tmp_path / "recording.json")
    without = ["tune", str(config), "--recorded", str(recording_file), "-o", str(tmp_path / "out")]
    assert main(without) == 2
    assert "the build defines FROM_THE_BUILD" in capsys.readouterr().err
    assert main([*without, "-p", str(project)]) == 0
    assert json.loads((tmp_path / "out" / "pair-plan.json").read_text())["decision"] == "fuse"


def test_a_manifests_requests_read_their_kernels_with_their_builds_flags(project, tmp_path, capsys):
    # once refused: "-p/--compile-commands is read for one tune config, not yet for a manifest"
    kernels = project / "kernels.cu"
    kernels.write_text("#ifndef FROM_THE_BUILD\n#error the build defines FROM_THE_BUILD\n#endif\n" + kernels.read_text())
    (project / "compile_commands.json").write_text(json.dumps([
        {"directory": str(project), "file": "kernels.cu", "command": "nvcc -DFROM_THE_BUILD -O3 -c kernels.cu"}]))
    manifest = project / "batch.yaml"
    manifest.write_text("tune: {refine: false}\nrequests:\n  - {name: pair, launches: launches.py:make_launches, "
                        "args: {n: 1024}}\n")
    recording_file = RECORDING.save(tmp_path / "recording.json")
    without = ["tune", str(manifest), "--recorded", str(recording_file), "--compile-processes", "1"]
    assert main(without) == 1  # the request fails, reported in the summary
    summary = json.loads((project / "batch-results" / "batch.json").read_text())
    assert "the build defines FROM_THE_BUILD" in summary["outcomes"][0]["error"]
    assert main([*without, "-p", str(project / "compile_commands.json")]) == 0
    summary = json.loads((project / "batch-results" / "batch.json").read_text())
    assert [(o["name"], o["status"]) for o in summary["outcomes"]] == [("pair", "fused")]
