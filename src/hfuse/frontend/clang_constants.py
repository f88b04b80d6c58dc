"""Integer constant expressions of the user's code that only a C++ compiler can evaluate.

hfuse's own evaluator (``constant.py``) knows literals, operators, template arguments and
the constants a function declares from those. Kernels as libraries write them also use a
file-scope ``constexpr``, an enumerator, a static member of a traits struct, a template
metafunction or a ``sizeof`` (``tiled_partition<Cfg::kTile>``, ``__launch_bounds__(kWarps
* 32)``): those are asked of Clang here. Each question becomes one declaration appended to
the file, in the namespace of the code it comes from,
``constexpr long long __hfuse_constant_3 = static_cast<long long>(EXPR);``, and Clang (CUDA
device mode, the user's flags, the kept headers precompiled) evaluates each. One parse per
file answers every question of a request; an expression Clang cannot evaluate is None,
and so is every answer where Clang is not usable: the caller then refuses as before.
"""
from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..files import default_cache_dir
from . import clang
from .clang_pch import precompiled_preamble
from .model import Scope, namespace_wrap
from .options import CompileOptions

_PROBE = "__hfuse_constant_"
_EVAL_INT = 1
"""``CXEval_Int`` of libclang's ``CXEvalResultKind``."""


@dataclass(frozen=True)
class ConstantQuestion:
    """An integer constant expression of ``file``, looked up in namespace ``scope``, its
    template parameters and local constants already replaced by what they stand for."""

    file: Path
    scope: Scope
    expression: str


def ask_clang(questions: Sequence[ConstantQuestion], options: CompileOptions, kept_preamble: Sequence[str] = (),
              sources: Mapping[str, str] | None = None, cache: Path | None = None) -> tuple[int | None, ...]:
    """Each question's value (None where Clang cannot tell), in order."""
    if not questions:
        return ()
    if clang.cindex()[0] is None:  # asked each time, so that no answer cached here outlives libclang
        return tuple(None for _ in questions)
    texts = []
    files = tuple(dict.fromkeys(q.file for q in questions))
    for path in files:
        given = (sources or {}).get(str(path))
        try:
            texts.append(given if given is not None else Path(path).read_text(errors="replace"))
        except OSError:
            texts.append("")
    answers = _ask_once(tuple(questions), options, tuple(kept_preamble), tuple(zip(files, texts)),
                        str(cache or default_cache_dir()))
    return answers


@functools.lru_cache(maxsize=256)
def _ask_once(questions: tuple[ConstantQuestion, ...], options: CompileOptions, kept_preamble: tuple[str, ...],
              texts: tuple[tuple[Path, str], ...], cache: str) -> tuple[int | None, ...]:
    ci, _ = clang.cindex()
    arguments = clang.clang_arguments(options) if ci is not None else "no libclang"
    if ci is None or isinstance(arguments, str):
        return tuple(None for _ in questions)
    evaluate = _evaluator(ci)
    preamble = precompiled_preamble(ci, arguments, kept_preamble, Path(cache)).flags
    answers: dict[int, int | None] = {}
    for path, text in texts:
        mine = [(i, q) for i, q in enumerate(questions) if q.file == path]
        probes = "".join("\n" + namespace_wrap(q.scope, f"constexpr long long {_PROBE}{i} = "
                                                        f"static_cast<long long>({q.expression});") for i, q in mine)
        try:
            unit = ci.Index.create().parse(str(path), args=arguments + preamble + options.pre_include_flags(),
                                           unsaved_files=[(str(path), text + "\n" + probes + "\n")])
        except ci.TranslationUnitLoadError:
            continue
        for cursor in _probes(unit.cursor, ci, str(path)):
            answers[int(cursor.spelling[len(_PROBE):])] = evaluate(cursor)
    return tuple(answers.get(i) for i in range(len(questions)))


def _probes(parent, ci, path: str):
    """The probe declarations of ``path`` (in its namespaces), skipping every header's."""
    for cursor in parent.get_children():
        if cursor.location.file is None or cursor.location.file.name != path:
            continue
        if cursor.kind == ci.CursorKind.NAMESPACE:
            yield from _probes(cursor, ci, path)
        elif cursor.kind == ci.CursorKind.VAR_DECL and cursor.spelling.startswith(_PROBE):
            yield cursor


def _evaluator(ci):
    """libclang's ``clang_Cursor_Evaluate`` as a function of a cursor: its integer value or None."""
    lib = ci.conf.lib
    lib.clang_Cursor_Evaluate.argtypes, lib.clang_Cursor_Evaluate.restype = [ci.Cursor], ctypes.c_void_p
    lib.clang_EvalResult_getKind.argtypes, lib.clang_EvalResult_getKind.restype = [ctypes.c_void_p], ctypes.c_int
    lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
    lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
    lib.clang_EvalResult_dispose.argtypes, lib.clang_EvalResult_dispose.restype = [ctypes.c_void_p], None

    def value(cursor) -> int | None:
        result = lib.clang_Cursor_Evaluate(cursor)
        if not result:
            return None
        try:
            return int(lib.clang_EvalResult_getAsLongLong(result)) if lib.clang_EvalResult_getKind(result) == _EVAL_INT \
                else None
        finally:
            lib.clang_EvalResult_dispose(result)

    return value
