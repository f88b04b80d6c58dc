"""Bad input to the ``hfuse`` command: each case ends with exit status 2, one error line
(and at most a hint), no traceback, nothing written, and the inputs untouched."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hfuse.cli import main

GOOD = "__global__ void scale(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }\n"


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def _run(argv: list[str], folder: Path, capsys) -> str:
    """Runs ``hfuse`` in ``folder`` and checks the contract; returns the error line."""
    before = _snapshot(folder)
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines[0].startswith("error: ") and all(line.startswith("  hint: ") for line in lines[1:]), err
    assert _snapshot(folder) == before  # nothing written, nothing changed
    return lines[0]


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.cu").write_text(GOOD)
    return tmp_path


@pytest.mark.parametrize("name, content, message", [
    ("truncated.cu", GOOD[:60].encode(), "file ends before its body closes"),
    ("garbage.cu", bytes(range(256)) * 8, "is binary (it holds NUL bytes)"),
    ("latin1.cu", 'const char* where = "caf\xe9";\n'.encode("latin-1") + GOOD.encode(),
     "not UTF-8 text (byte 0xe9 at offset 24, line 1, outside a comment)"),
    ("empty.cu", b"", "kernels in this file: none"),
])
def test_broken_source_files(folder, capsys, name, content, message):
    (folder / name).write_bytes(content)
    before = _snapshot(folder)
    status = main(["fuse", name, "good.cu", "-k", f"{name}:scale:128", "-k", "good.cu:scale:128", "-o", "out.cu"])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err and _snapshot(folder) == before
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"error: {name}") and all(line.startswith("  hint: ") for line in lines[1:])
    assert message in err  # in the error, or (a truncated file) in its hint


def test_a_50_megabyte_file_is_refused_without_being_parsed(folder, capsys):
    with open(folder / "huge.cu", "wb") as f:
        f.write(GOOD.encode() * (50_000_000 // len(GOOD)))
    line = _run(["fuse", "huge.cu", "good.cu", "-k", "huge.cu:scale:128", "-k", "good.cu:scale:128", "-o", "o.cu"],
                folder, capsys)
    assert "is 50.0 MB; hfuse reads files of at most 16 MiB" in line


def test_missing_and_directory_inputs(folder, capsys):
    assert "cannot read the source file" in _run(["fuse", "nope.cu", "good.cu", "-k", "nope.cu:scale:128", "-k",
                                                  "good.cu:scale:128", "-o", "o.cu"], folder, capsys)
    (folder / "dir.cu").mkdir()
    assert "is a directory" in _run(["fuse", "dir.cu", "good.cu", "-k", "dir.cu:scale:128", "-k", "good.cu:scale:128",
                                     "-o", "o.cu"], folder, capsys)


@pytest.mark.parametrize("output, message", [
    ("good.cu/fused.cu", "cannot write the fused file"),  # a file where a directory should be
    (".", "is a directory"),
    ("good.cu", "would overwrite an input file"),
])
def test_unwritable_outputs(folder, capsys, output, message):
    (folder / "other.cu").write_text(GOOD.replace("scale", "twice"))
    line = _run(["fuse", "good.cu", "other.cu", "-k", "scale:128", "-k", "twice:128", "-o", output], folder, capsys)
    assert message in line


def test_a_header_an_input_includes_is_never_written(folder, capsys):
    # once: -o scale.h replaced the header good2.cu includes with the fused file
    (folder / "scale.h").write_text("#pragma once\n#define SCALE 2.f\n")
    (folder / "good2.cu").write_text('#include "scale.h"\n' + GOOD.replace("scale", "twice"))
    line = _run(["fuse", "good.cu", "good2.cu", "-k", "scale:128", "-k", "twice:128", "-o", "scale.h"], folder, capsys)
    assert "it is one of the files it was made from" in line
    assert (folder / "scale.h").read_text() == "#pragma once\n#define SCALE 2.f\n"


CONFIG_HEAD = "kernels:\n  - {file: good.cu, name: scale, block: 128}\n  - {file: two.cu, name: twice, block: 128}\n"


@pytest.mark.parametrize("config, message", [
    (CONFIG_HEAD + "output: o.cu\ncolour: red\n", "unknown config keys: colour"),
    ("kernels:\n  - {file: good.cu, name: scale, block: 128, colour: red}\n  - {file: two.cu, name: twice, block: 128}\n"
     "output: o.cu\n", "kernel #1 has unknown keys: colour"),
    (CONFIG_HEAD + "output: o.cu\ncompile: {defines: [A], optimise: 3}\n", "unknown compile options: optimise"),
    (CONFIG_HEAD + "output: o.cu\nregister_cap: {min_blocks: two}\n", "min_blocks='two') must be an integer"),
    (CONFIG_HEAD + "output: o.cu\nregister_cap: 4\n", "register cap is a mapping"),
    (CONFIG_HEAD + "output: [o.cu]\n", "'output' must be a string, not list"),
    (CONFIG_HEAD + "output: o.cu\nstrategy: diagonal\n", "'strategy': unknown layout 'diagonal' (known: horizontal, vertical"),
    (CONFIG_HEAD + "output: o.cu\nlayout: diagonal\n", "'layout': unknown layout 'diagonal' (known: horizontal, vertical"),
    (CONFIG_HEAD + "output: o.cu\nlayout: vertical\nstrategy: vertical\n", "give 'layout' only"),
    ("kernels:\n  - {file: good.cu, name: scale, block: big}\n  - {file: two.cu, name: twice, block: 128}\n"
     "output: o.cu\n", "block/grid dims 'big'"),
    ("kernels: {scale: 128}\noutput: o.cu\n", "needs a non-empty 'kernels' list"),
    ("- just\n- a list\n", "must be a mapping"),
    (": : :\n\t- [", "not valid YAML: expected <block end>"),
])
def test_bad_configs(folder, capsys, config, message):
    (folder / "two.cu").write_text(GOOD.replace("scale", "twice"))
    (folder / "hfuse.yaml").write_text(config)
    assert message in _run(["fuse", "--config", "hfuse.yaml"], folder, capsys)


def test_binary_config(folder, capsys):
    (folder / "hfuse.yaml").write_bytes(b"\x00\x01kernels")
    assert "config file is binary" in _run(["fuse", "--config", "hfuse.yaml"], folder, capsys)


def test_a_latin1_file_whose_other_bytes_are_in_comments_fuses_and_its_comments_are_written_as_utf8(folder, capsys):
    # older files carry an author's name or a unit in Latin-1 in their comments: nvcc takes
    # them, and so does hfuse; a byte outside a comment (a string literal) is refused above
    body = "__global__ void twice(float* a, int n) {  // fait \xe0 la main, 2 \xb5s\n" + GOOD.split("{", 1)[1]
    source = ("/* (c) 2009 Universit\xe4t */\n" + body).encode("latin-1")
    (folder / "old.cu").write_bytes(source)
    status = main(["fuse", "old.cu", "good.cu", "-k", "old.cu:twice:128", "-k", "good.cu:scale:128", "-o", "out.cu"])
    assert status == 0, capsys.readouterr().err
    assert (folder / "old.cu").read_bytes() == source  # never modified
    assert "// fait \u00e0 la main, 2 \u00b5s" in (folder / "out.cu").read_text(encoding="utf-8")
