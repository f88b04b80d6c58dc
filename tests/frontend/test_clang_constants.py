"""Constant expressions only a C++ compiler evaluates, asked of Clang (``clang_constants.py``)."""
from __future__ import annotations

import pytest

from hfuse.frontend import clang as clang_module
from hfuse.frontend.clang_constants import ConstantQuestion, ask_clang
from hfuse.frontend.options import CompileOptions

pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
if isinstance(clang_module.clang_arguments(CompileOptions()), str):
    pytest.skip(f"Clang cannot read CUDA here: {clang_module.clang_arguments(CompileOptions())}",
                allow_module_level=True)

SOURCE = """#include <cuda_fp16.h>
constexpr int kFileTile = 16;
enum { kEnumTile = 8 };
struct Cfg { static constexpr int kTile = 4; };
template <int N> struct Pow2 { static constexpr int value = 2 * Pow2<N - 1>::value; };
template <> struct Pow2<0> { static constexpr int value = 1; };
namespace lib { constexpr int kTile = 2; namespace { constexpr int kHidden = 3; } }
#ifdef __CUDA_ARCH__
constexpr int kDevice = 1;
#else
constexpr int kDevice = 2;
#endif
"""


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(SOURCE)
    return path


@pytest.mark.parametrize("expression, scope, value", [
    ("kFileTile", (), 16),
    ("kEnumTile * 2", (), 16),
    ("Cfg::kTile", (), 4),
    ("Pow2<5>::value", (), 32),
    ("sizeof(__half2) * 4", (), 16),
    ("kTile", ("lib",), 2),  # looked up in the kernel's namespace
    ("kHidden", ("lib", ""), 3),
    ("kDevice", (), 1),  # the device pass's view, as nvcc compiles the kernel
    ("kNothing", (), None),
    ("float", (), None),
])
def test_each_question_is_answered_or_none(source, tmp_path, expression, scope, value):
    answers = ask_clang([ConstantQuestion(source, scope, expression)], CompileOptions(), ["#include <cuda_fp16.h>"],
                        cache=tmp_path / "cache")
    assert answers == (value,)


def test_one_parse_answers_many_and_a_wrong_one_spoils_none(source, tmp_path):
    questions = [ConstantQuestion(source, (), e) for e in ("kFileTile", "kNothing + 1", "Cfg::kTile")]
    assert ask_clang(questions, CompileOptions(), cache=tmp_path / "cache") == (16, None, 4)


def test_the_users_unsaved_text_is_read(source, tmp_path):
    sources = {str(source): SOURCE.replace("kFileTile = 16", "kFileTile = 64")}
    assert ask_clang([ConstantQuestion(source, (), "kFileTile")], CompileOptions(), sources=sources,
                     cache=tmp_path / "cache") == (64,)


def test_without_clang_nothing_is_known(source, tmp_path, monkeypatch):
    monkeypatch.setattr(clang_module, "cindex", lambda: (None, "libclang is not usable here (ImportError: no)"))
    assert ask_clang([ConstantQuestion(source, (), "kFileTile + 0")], CompileOptions(), cache=tmp_path / "c") == (None,)
