"""The macros kept headers define, asked of the host compiler (``frontend/system_macros``).

The answer for a header set is kept on disk with every file the compiler read: a PyTorch
extension's headers take the compiler over a second per request, and the answer must
change the moment any header it came from does."""
from __future__ import annotations

import os
import subprocess

import pytest

from hfuse.frontend import system_macros

pytestmark = pytest.mark.skipif(system_macros._host_compiler() is None, reason="no host C++ compiler")


def _header(folder, value: int) -> None:
    (folder / "lib").mkdir(exist_ok=True)
    (folder / "lib" / "version.h").write_text(f"#define LIB_VERSION {value}\n")
    (folder / "lib" / "all.h").write_text('#include "version.h"\n#define LIB_READY 1\n')


def _ask(folder, cache):
    return system_macros._defines("#include <lib/all.h>\n", "c++17", (str(folder),), (), cache)


def test_an_answer_is_kept_and_given_again_without_the_compiler(tmp_path, monkeypatch):
    _header(tmp_path, 3)
    first = _ask(tmp_path, tmp_path / "cache")
    assert first["LIB_VERSION"] == "3" and first["LIB_READY"] == "1"

    def no_compiler(*args, **kwargs):
        raise AssertionError("the compiler was asked again")

    monkeypatch.setattr(subprocess, "run", no_compiler)
    assert _ask(tmp_path, tmp_path / "cache") == first


def test_a_header_it_read_that_changed_is_asked_again(tmp_path):
    # the header included by the one named: the compiler's list of files read, not the name given
    _header(tmp_path, 3)
    assert _ask(tmp_path, tmp_path / "cache")["LIB_VERSION"] == "3"
    _header(tmp_path, 41)
    stamp = os.stat(tmp_path / "lib" / "version.h").st_mtime_ns + 10**9
    os.utime(tmp_path / "lib" / "version.h", ns=(stamp, stamp))  # even within the clock's resolution
    assert _ask(tmp_path, tmp_path / "cache")["LIB_VERSION"] == "41"


def test_another_dialect_or_folder_is_another_answer(tmp_path):
    _header(tmp_path, 3)
    other = tmp_path / "other"
    other.mkdir()
    _header(other, 5)
    assert _ask(tmp_path, tmp_path / "cache")["LIB_VERSION"] == "3"
    assert _ask(other, tmp_path / "cache")["LIB_VERSION"] == "5"
    assert system_macros._defines("", "c++17", (), (), tmp_path / "cache")["__cplusplus"] == "201703L"
    assert system_macros._defines("", "c++20", (), (), tmp_path / "cache")["__cplusplus"] == "202002L"


def test_an_unwritable_cache_still_answers(tmp_path):
    _header(tmp_path, 3)
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the folder would go")
    assert _ask(tmp_path, blocked)["LIB_VERSION"] == "3"


def test_a_header_that_does_not_preprocess_is_no_answer(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "all.h").write_text("#error needs C++20\n")
    assert _ask(tmp_path, tmp_path / "cache") is None
    assert not (tmp_path / "cache").exists()


TABLE = {
    "NS": ("NS(x)", "x"),
    "HIP_NS": ("HIP_NS(x)", "::hipcub"),
    "UNLIKELY": ("UNLIKELY(e)", "(__builtin_expect(static_cast<bool>(e), 0))"),
    "CALLS": ("CALLS(e)", "lib::hint(e)"),
    "WARP": ("WARP", "32"),
    "AS_NAME": ("AS_NAME", "lib::name"),
}


@pytest.mark.parametrize("name, syntax", [("NS", True), ("HIP_NS", True), ("UNLIKELY", False), ("WARP", False),
                                          ("AS_NAME", False)])
def test_a_macro_taking_arguments_that_names_something_is_syntax(name, syntax):
    # namespace cub = ROCM_HIPCUB(at_cuda_detail::cub); parses only once ROCM_HIPCUB is expanded;
    # an object-like name (lib::name) parses as written and keeps its spelling
    assert system_macros.structural(TABLE, name) is syntax


@pytest.mark.parametrize("name, value", [("UNLIKELY", True), ("WARP", True), ("CALLS", False)])
def test_the_compilers_builtins_keep_a_macro_a_value(name, value):
    # C10_UNLIKELY is __builtin_expect(...): no function of a header's, so no macro nobody defines
    assert system_macros.pure_value(TABLE, name) is value
