"""``write_atomically``: whole files or none, directories made, nothing left over."""
from __future__ import annotations

import pytest

from hfuse.files import write_atomically


def test_writes_text_and_bytes_creating_the_directory(tmp_path):
    assert write_atomically(tmp_path / "a" / "b.txt", "text").read_text() == "text"
    assert write_atomically(tmp_path / "c.bin", b"\x00\x01").read_bytes() == b"\x00\x01"


def test_replaces_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "plan.json"
    target.write_text("old")
    write_atomically(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "plan.json"
    target.write_text("old")
    with pytest.raises(TypeError):
        write_atomically(target, 12)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]
