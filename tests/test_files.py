"""``write_atomically``: whole files or none, directories made, nothing left over."""
from __future__ import annotations

import pytest

from hfuse.errors import HFuseError
from hfuse.files import read_text_file, write_atomically


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


def test_read_text_file_drops_a_bom_and_names_a_header_where_it_was_included(tmp_path):
    from hfuse.errors import Location
    from hfuse.files import read_text_file

    (tmp_path / "a.cuh").write_bytes(b"\xef\xbb\xbf#define X 1\n")
    assert read_text_file(tmp_path / "a.cuh") == "#define X 1\n"
    (tmp_path / "b.cuh").write_bytes(b"\x00")
    with pytest.raises(HFuseError) as info:
        read_text_file(tmp_path / "b.cuh", "header", Location(tmp_path / "k.cu", 3))
    assert str(info.value).startswith(f"{tmp_path / 'k.cu'}:3: the header {tmp_path / 'b.cuh'} is binary")


def test_write_output_refuses_a_directory_and_an_impossible_place(tmp_path):
    from hfuse.files import write_output

    with pytest.raises(HFuseError, match="is a directory"):
        write_output(tmp_path, "x")
    (tmp_path / "file").write_text("keep")
    with pytest.raises(HFuseError, match="cannot write the output"):
        write_output(tmp_path / "file" / "out.cu", "x")
    assert (tmp_path / "file").read_text() == "keep"


def test_a_file_that_is_not_utf8_is_read_as_latin1_only_where_the_check_allows(tmp_path):
    path = tmp_path / "old.cu"
    path.write_bytes(b"// caf\xe9\nint a;\n")
    with pytest.raises(HFuseError, match=r"not UTF-8 text \(byte 0xe9 at offset 6, line 1\)"):
        read_text_file(path)  # no check: refused
    assert read_text_file(path, legacy=lambda text: None) == "// caf\u00e9\nint a;\n"
    with pytest.raises(HFuseError, match=r"byte 0x69 at offset 8, line 2, outside a comment"):
        read_text_file(path, legacy=lambda text: 8)
